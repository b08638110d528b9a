"""Output files: chunked .npy/.txt writers and atomic replacement, safe against signals."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

import gmpy2
import numpy as np

_INT64_MAX = (1 << 63) - 1


Write = Callable[[np.ndarray], None]


def _disk_error(exc: OSError, path: str) -> OSError:
    """A full disk (ENOSPC or EDQUOT) said plainly."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
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


def _write_bytes_of(f: IO, array: np.ndarray) -> None:
    """Append the bytes of the C-contiguous ``array`` to ``f`` through the file's own ``write``.

    Not ``ndarray.tofile`` (nor ``np.save``, which calls it): that writes through a
    duplicated C ``FILE*``, and a signal handler raising while it flushes ``f`` (SIGTERM,
    which the command line turns into an exception) came out of it as a TypeError that hid
    the signal (CPython 3.13, NumPy 2.4).  ``f.write`` retries an interrupted write and
    passes the handler's exception on unchanged.
    """
    f.write(array.reshape(-1).view(np.uint8))


def _write_npy_chunk(f: IO, chunk: np.ndarray) -> None:
    """Append ``chunk`` to ``f`` as little-endian int64 (the body of a ``.npy`` file)."""
    _write_bytes_of(f, np.ascontiguousarray(chunk, dtype="<i8"))


def _write_npy(f: IO, array: np.ndarray) -> None:
    """``np.save(f, array, allow_pickle=False)`` for an array of numbers, written through
    ``f.write`` (:func:`_write_bytes_of`); ``np.load`` reads back the same array."""
    if array.dtype.hasobject:
        raise ValueError("an array of Python objects cannot be saved as .npy")
    array = array if array.flags.c_contiguous else array.copy(order="C")
    np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(array))
    _write_bytes_of(f, array)


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


#: The signals held while a finished output is renamed into place (and its temporary file
#: created), so that what the command then reports about it is true.
_HELD = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Defer the Python handlers of SIGINT, SIGTERM and SIGHUP to the end of the block.

    A signal that arrives meanwhile is recorded, and its handler (KeyboardInterrupt, or the
    command line's :class:`~dgauss.cli._common.Terminated`) runs on leaving.  Blocking the
    signals with ``pthread_sigmask`` would not do: that holds them in the calling thread
    only, a signal sent to the process is then delivered to another thread, and Python runs
    the handler in the main thread all the same, at any point of the block.  A signal left
    at its default action, or ignored, is not touched; outside the main thread (where
    handlers cannot be set) nothing is held.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers: dict[int, Callable] = {}  # the held signal -> its handler
    arrived: list[tuple[int, Any]] = []

    def record(signum: int, frame: Any) -> None:
        arrived.append((signum, frame))

    for number in _HELD:
        handler = signal.getsignal(number)
        if callable(handler):
            handlers[number] = handler
            signal.signal(number, record)
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        for signum, frame in arrived:
            handlers[signum](signum, frame)


class Output:
    """Where a command's result goes: a temporary file beside ``path``, renamed over it on
    success; ``committed`` says whether that happened (for what an interrupted run reports).

    A failure, an interrupt (Ctrl-C) or SIGTERM/SIGHUP (turned into exceptions by the
    command line) before the rename removes the temporary file: an existing file at
    ``path`` is left as it was, and no partial or hidden file remains.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.committed = False
        self._temporary: str | None = None

    @contextlib.contextmanager
    def open(self, mode: str) -> Iterator[IO]:
        """The temporary file, open in ``mode``; renamed over ``path`` when the block ends
        without an exception."""
        try:
            with _signals_held():  # a signal now would leave the file unnamed to the cleanup
                fd, self._temporary = tempfile.mkstemp(
                    prefix=".dgauss-",
                    suffix=_suffix(self.path),
                    dir=os.path.dirname(os.path.abspath(self.path)),
                )
            encoding = None if "b" in mode else "ascii" if mode == "w-ascii" else "utf-8"
            with os.fdopen(fd, mode.replace("-ascii", ""), encoding=encoding) as f:
                yield f
            mask = os.umask(0)  # mkstemp made it 0600; give it the usual mode
            os.umask(mask)
            os.chmod(self._temporary, 0o666 & ~mask)
            with _signals_held():  # renamed and recorded as such, or neither
                os.replace(self._temporary, self.path)
                self.committed = True
        except BaseException as exc:
            if not self.committed and self._temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self._temporary)
            if isinstance(exc, OSError):
                raise _disk_error(exc, self.path) from None
            raise

    def fate(self) -> str:
        """What became of the output, for the message of an interrupted run."""
        return f"{self.path} was written" if self.committed else f"{self.path} was not written"


@contextlib.contextmanager
def _open_output(path: str | None, count: int, output: Output | None = None) -> Iterator[Write]:
    """A function writing one chunk to ``path`` (checked already), or discarding it.

    The chunks go to a temporary file beside ``path``, renamed over it only when the
    run completes (:class:`Output`, given as ``output`` to learn whether it was): a failed,
    interrupted or terminated run leaves an existing file untouched and no partial one (a
    ``.npy`` header would otherwise claim the full count).
    """
    if path is None:
        yield lambda chunk: None
        return
    output = output if output is not None else Output(path)
    if _suffix(path) == ".npy":
        with output.open("wb") as f:
            header = {"descr": "<i8", "fortran_order": False, "shape": (count,)}
            np.lib.format.write_array_header_1_0(f, header)
            yield lambda chunk: _write_npy_chunk(f, chunk)
    else:
        with output.open("w-ascii") as f:
            yield lambda chunk: f.writelines(line + "\n" for line in _decimal_lines(chunk))


def _decimal_lines(chunk: np.ndarray) -> list[str]:
    """The samples in decimal, one string each."""
    if chunk.dtype == np.int64:
        return [str(v) for v in chunk.tolist()]
    return [_digits(v) for v in chunk.tolist()]


def _digits(value: int) -> str:
    """``value`` in decimal; unlike ``str``, gmpy2 has no limit on the number of digits."""
    return gmpy2.mpz(value).digits()


def _atomic(path: str, mode: str, write: Callable, output: Output | None = None) -> None:
    """Write to a temporary file beside ``path``, then rename it over ``path`` (:class:`Output`,
    given as ``output`` to learn whether it was): a failure leaves an existing file as it
    was and no partial one."""
    with (output if output is not None else Output(path)).open(mode) as f:
        write(f)
