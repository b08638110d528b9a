"""Output files: chunked .npy/.txt writers and atomic replacement."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
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


#: Bytes of a .npy file's header (format 1.0, padded to 64; ours is one line of 128).
NPY_HEADER = 128


def _least_output_bytes(path: str, count: int) -> int:
    """The fewest bytes ``count`` samples take at ``path``: exactly, for a .npy of int64; for
    a .txt, two per sample (a digit and a newline), a bound below any real run."""
    return NPY_HEADER + 8 * count if _suffix(path) == ".npy" else 2 * count


def _check_free_space(path: str, count: int) -> None:
    """OSError, saying how much is needed and free, unless the output can fit beside ``path``
    (it is written to a temporary file there and renamed: an old file stays until then)."""
    folder = os.path.dirname(os.path.abspath(path))
    need, free = _least_output_bytes(path, count), shutil.disk_usage(folder).free
    if need > free:
        at_least = "" if _suffix(path) == ".npy" else "at least "
        raise OSError(
            f"{path} needs {at_least}{_size(need, up=True)} for {count:,} samples, but {folder} "
            f"has {_size(free, up=False)} free; write fewer samples or elsewhere"
        )


def _size(n: int, up: bool) -> str:
    """A byte count for people, its one decimal rounded ``up`` or down: '80.1 GB (80,000,000,128
    bytes)', so that a need never reads smaller, nor the free space larger, than it is."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            tenths = -(-n * 10 // scale) if up else n * 10 // scale
            return f"{tenths / 10:.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


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
