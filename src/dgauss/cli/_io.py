"""Output files: chunked .npy/.txt writers and atomic replacement."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterator

import gmpy2
import numpy as np

_INT64_MAX = (1 << 63) - 1


Write = Callable[[np.ndarray], None]


def _disk_error(exc: OSError, path: str) -> OSError:
    """A full disk (ENOSPC, EDQUOT, or NumPy's "N requested and M written") said plainly."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT) or (
        exc.errno is None and "requested and" in str(exc)
    )
    return OSError(f"no space left on device writing {path}") if full else exc


def _write_npy_chunk(f, chunk: np.ndarray) -> None:
    chunk.astype("<i8", copy=False).tofile(f)


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


@contextlib.contextmanager
def _open_output(path: str | None, count: int) -> Iterator[Write]:
    """A function writing one chunk to ``path`` (checked already), or discarding it.

    The chunks go to a temporary file beside ``path``, renamed over it only when the
    run completes: a failed or interrupted run leaves an existing file untouched and
    no partial one (a ``.npy`` header would otherwise claim the full count).
    """
    if path is None:
        yield lambda chunk: None
        return
    fd, temporary = tempfile.mkstemp(
        prefix=".dgauss-", suffix=_suffix(path), dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        if _suffix(path) == ".npy":
            with os.fdopen(fd, "wb") as f:
                header = {"descr": "<i8", "fortran_order": False, "shape": (count,)}
                np.lib.format.write_array_header_1_0(f, header)
                yield lambda chunk: _write_npy_chunk(f, chunk)
        else:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                yield lambda chunk: f.writelines(line + "\n" for line in _decimal_lines(chunk))
        mask = os.umask(0)  # mkstemp made it 0600; give it the usual mode
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _disk_error(exc, path) from None
        raise


def _decimal_lines(chunk: np.ndarray) -> list[str]:
    """The samples in decimal, one string each."""
    if chunk.dtype == np.int64:
        return [str(v) for v in chunk.tolist()]
    return [_digits(v) for v in chunk.tolist()]


def _digits(value: int) -> str:
    """``value`` in decimal; unlike ``str``, gmpy2 has no limit on the number of digits."""
    return gmpy2.mpz(value).digits()


def _atomic(path: str, mode: str, write: Callable) -> None:
    """Write to a temporary file beside ``path``, then rename it over ``path``: a failure
    leaves an existing file as it was and no partial one."""
    fd, temporary = tempfile.mkstemp(
        prefix=".dgauss-", suffix=_suffix(path), dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _disk_error(exc, path) from None
        raise
