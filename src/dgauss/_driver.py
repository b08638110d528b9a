"""The driver of every sampling call: check, allocate, fill, shape.

The public functions (:mod:`dgauss._api`) and the pure-Python oracle
(:mod:`dgauss.reference`) both go through :func:`sample`, which checks
parameters once per call and hands a flat output array to a ``fill`` backend:
``dgauss._core.fill`` there, ``dgauss.reference.fill`` here.  So the two share
every rule about inputs, dtypes and shapes, and differ only in the samplers.
This module does not import the compiled core: the oracle works without it.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dgauss import _methods, _params, _pool
from dgauss._kinds import BERNOULLI_EXP, DISCRETE_GAUSSIAN, DISCRETE_LAPLACE, Kind

ShapeLike = int | tuple[int, ...] | None
RNGLike = np.random.Generator | np.random.BitGenerator | None
Fill = Callable[..., int]


#: Smallest share of a batch worth a thread of its own (thread start-up is ~50 us).
MIN_SLICE = 1 << 16
#: Each slice a thread takes is about 1/(GUIDE * threads) of what is left ("guided" scheduling):
#: large slices first, so that few are taken, then smaller and smaller ones, so that the
#: threads run out of work together even when one core is slower than the other.
GUIDE = 4
#: The last slices are this small.  A slice costs about 2 us (the GIL, a view of the output),
#: 2% of the time to draw this many in the fastest case (Bernoulli(exp(-7/3)), 25 ns each).
MIN_TAIL = 1 << 12
#: And no slice is larger than this (0.4 s at 10 M/s).
MAX_SLICE = 1 << 22


class _Slices:
    """``next_slice`` for ``fill``: each call returns (start, stop) of the next untaken slice of
    [0, count), then None; safe to share between threads.  A slice is
    ceil(left / (GUIDE * threads)) long, but at least ``tail`` (or what is left) and at most
    MAX_SLICE.
    ``stop()`` hands out no more slices and sets ``stopped``, at which the threads end their
    current slices at their next stretch (``dgauss._core.fill``), so that one thread's error
    or Ctrl-C ends the batch within a fraction of a second."""

    def __init__(self, count: int, threads: int, tail: int = MIN_TAIL):
        self._start, self._count, self._parts, self._tail = 0, count, GUIDE * threads, tail
        self._lock = threading.Lock()
        self.stopped = False

    def __call__(self) -> tuple[int, int] | None:
        with self._lock:
            start, left = self._start, self._count - self._start
            if left == 0:
                return None
            self._start += min(left, MAX_SLICE, max(self._tail, -(-left // self._parts)))
            return start, self._start

    def stop(self) -> None:
        with self._lock:
            self._start = self._count
            self.stopped = True


def draw(
    fill: Fill,
    kind: int,
    param: Fraction,
    size: ShapeLike,
    mu: int,
    rng: RNGLike,
    dtype: np.dtype | None,
    workers=None,
    out: np.ndarray | None = None,
    method: str = "auto",
    os_threads: Callable[[int], int] | None = None,
):
    """Validate ``size``, ``rng`` and ``workers``, allocate, fill, shape the result.

    ``param`` and ``mu`` are already exact; ``dtype`` is the resolved output
    dtype (bool for Bernoulli).  ``size=None`` returns one Python ``int``
    (``bool`` for Bernoulli).  With several workers the calling thread and
    ``workers - 1`` helpers take contiguous slices of the flat output as they finish
    the last (:class:`_Slices`), each thread with its own OS bit stream (``fill``
    releases the GIL).  ``out``, a 1-D C-contiguous array of ``dtype`` with the
    right number of elements, is filled instead of a new array.  ``method``
    ("auto", "inversion" or "rejection"; :func:`dgauss._methods.resolve`) picks the
    discrete Gaussian's sampler.  ``os_threads``, given, is the threads a batch of that
    many samples from the OS runs on when ``workers`` is None (``dgauss._core.os_threads``:
    two where a second CPU is idle); without it such a batch runs on one.
    """
    shape = _params.shape(size)
    source = _params.bit_generator(rng)
    threads = _params.workers(workers, source)
    count = 1 if shape is None else math.prod(shape)
    if kind in (DISCRETE_GAUSSIAN, DISCRETE_LAPLACE):
        method = _methods.resolve(kind == DISCRETE_GAUSSIAN, param, method, count, source)
    if out is None:
        try:
            out = np.empty(count, dtype=dtype)
        except ValueError:  # NumPy's "array is too big" / "Maximum allowed dimension exceeded"
            raise MemoryError(f"size {size!r} ({count} samples) is too large for memory") from None
    if workers is None and source is None and os_threads is not None:
        threads = os_threads(count)
    threads = max(1, min(threads, count // MIN_SLICE))
    fill = functools.partial(fill, method=method)
    if threads == 1:
        fill(kind, param.numerator, param.denominator, mu, source, out)
    else:
        # threads - 1 helpers, and the calling thread works too
        slices = _Slices(count, threads)
        args = (kind, param.numerator, param.denominator, mu, None, out)
        _pool.share(lambda: fill(*args, slices), threads, slices.stop)
    if shape is None:
        return bool(out[0]) if dtype == np.bool_ else int(out[0])
    return out.reshape(shape)


def int64_safe(kind: Kind, param: Fraction, mu: int = 0) -> bool:
    """Whether the discrete Gaussian (param σ²) or Laplace (param t) centred at ``mu`` is drawn
    into int64 by default (else exact Python ints)."""
    if kind == DISCRETE_GAUSSIAN:
        return _params.gaussian_int64_safe(param, mu)
    return _params.laplace_int64_safe(param, mu)


#: Results kept (a repeated call skips the parsing: a few microseconds of a small call).
_CHECKED_MAX = 256
_checked_cache: dict = {}


def checked(kind: Kind, param, mu, dtype) -> tuple[Fraction, int, np.dtype]:
    """A discrete Gaussian's or Laplace's parameter (σ² or scale) and ``mu``, exact and
    checked by name, and the output dtype ``dtype`` resolves to.  Remembered for arguments
    of :data:`dgauss._params.EXACT_TYPES` (keyed on their types and exact values, never a
    float) and a ``dtype`` given as None, a type or a string."""
    key = None
    if (
        type(param) in _params.EXACT_TYPES
        and type(mu) in _params.EXACT_TYPES
        and (dtype is None or type(dtype) in (str, type))
    ):
        key = (kind, type(param), param, type(mu), mu, type(dtype), dtype)
        found = _checked_cache.get(key)
        if found is not None:
            return found
    value = _params.positive(param, "sigma2" if kind == DISCRETE_GAUSSIAN else "scale")
    mu_value = _params.integer(mu, "mu")
    found = value, mu_value, _params.result_dtype(dtype, int64_safe(kind, value, mu_value))
    if key is not None:
        if len(_checked_cache) >= _CHECKED_MAX:
            _checked_cache.clear()
        _checked_cache[key] = found
    return found


_lean_cache: dict = {}
_UNSEEN = object()

#: Most samples a call draws the lean way (beyond, what it saves is a small share).
LEAN_MAX = 1 << 16


def lean_job(kind: Kind, param, mu) -> tuple | None:
    """For calls from the OS with every other argument at its default: (kind, num, den, mu,
    first), the law's arguments of ``_core.draw_one``/``_core.fill`` and the smallest batch
    drawn by inversion (None: never), or None when such calls go the general way (the law
    is not drawn into int64, or an argument is not of :data:`dgauss._params.EXACT_TYPES`).
    Checks as :func:`checked` does; remembered on the arguments' types and exact values.
    The first call at a parameter gets "auto"'s rule (:func:`dgauss._methods.resolve`);
    every later one the job :func:`warmed`: a parameter drawn again is drawn by inversion
    at every batch size (its table is built once and kept; OS bits are never replayed, so
    which exact method draws them is the process's choice, unlike a seeded call's; the same
    holds of a :class:`dgauss.ChaCha20`, which has no seed)."""
    key = (kind, type(param), param, type(mu), mu)
    try:
        found = _lean_cache.get(key, _UNSEEN)  # (only exact types are ever kept)
    except TypeError:  # an unhashable argument: the general way says what is wrong
        return None
    if found is _UNSEEN:
        if type(param) not in _params.EXACT_TYPES or type(mu) not in _params.EXACT_TYPES:
            return None
        value, mu_value, dtype = checked(kind, param, mu, None)
        found = None  # (None: drawn into object arrays, the general way)
        if dtype == np.int64:
            first = _methods.inversion_from(kind == DISCRETE_GAUSSIAN, value)
            found = (int(kind), value.numerator, value.denominator, mu_value, first)
        if len(_lean_cache) >= _CHECKED_MAX:
            _lean_cache.clear()
        _lean_cache[key] = warmed(found)
    return found


def warmed(job: tuple | None) -> tuple | None:
    """A :func:`lean_job` for a parameter drawn before: by inversion from one sample on
    wherever inversion can draw it at all."""
    if job is None or job[4] is None or job[4] <= 1:
        return job
    return (*job[:4], 1)


def lean_method(first: int | None, count: int) -> str:
    """The method a batch of ``count`` takes, as :func:`dgauss._methods.resolve` picks it
    (``first`` from :func:`lean_job`)."""
    return "inversion" if first is not None and count >= first else "rejection"


def lean(kind: Kind, param, mu, count: int = 1) -> tuple | None:
    """For a call of ``count`` samples (1: a scalar) from the OS or a :class:`dgauss.ChaCha20`
    with every other argument at its default: the arguments of ``_core.draw_one`` or
    ``_core.fill`` (kind, num, den, mu, method), or None when the call goes the general way
    (:func:`lean_job`)."""
    found = lean_job(kind, param, mu)
    if found is None:
        return None
    kind_, num, den, mu_value, first = found
    return kind_, num, den, mu_value, lean_method(first, count)


def sample(
    fill: Fill,
    kind: Kind,
    param,
    size,
    mu,
    rng,
    dtype,
    workers=None,
    method="auto",
    os_threads: Callable[[int], int] | None = None,
):
    """Check the distribution's parameters, pick the dtype and the method, then :func:`draw`."""
    if kind == BERNOULLI_EXP:
        return draw(
            fill,
            kind,
            _params.nonnegative(param, "gamma"),
            size,
            0,
            rng,
            np.dtype(np.bool_),
            workers,
            os_threads=os_threads,
        )
    value, mu, out_dtype = checked(kind, param, mu, dtype)
    if size is None and dtype is None and rng is not None:
        # a scalar is an exact Python int either way; from a generator it is drawn as it
        # always was (into an object array), from the OS by the faster int64 path when safe
        out_dtype = np.dtype(object)
    return draw(
        fill, kind, value, size, mu, rng, out_dtype, workers, method=method, os_threads=os_threads
    )
