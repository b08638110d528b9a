"""The public sampling functions, on top of the compiled core.

Both this module and :mod:`dgauss.reference` go through :func:`draw`, which
checks parameters once per call and hands a flat output array to a ``fill``
backend: ``dgauss._core.fill`` here, the pure-Python oracle there.  So the two
share every rule about inputs, dtypes and shapes, and differ only in the
samplers themselves.
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Union

import numpy as np

from dgauss import _core, _params

ShapeLike = Union[None, int, tuple[int, ...]]
RNGLike = Union[None, np.random.Generator, np.random.BitGenerator]
Fill = Callable[..., int]

BERNOULLI_EXP = _core.BERNOULLI_EXP
LAPLACE = _core.LAPLACE
GAUSSIAN = _core.GAUSSIAN
BERNOULLI = _core.BERNOULLI  # the primitives, for dgauss.testing
UNIFORM = _core.UNIFORM


#: Smallest share of a batch worth a thread of its own (thread start-up is ~50 us).
MIN_SLICE = 1 << 16
#: Each slice a thread takes is about 1/(GUIDE * threads) of what is left ("guided" scheduling):
#: large slices first, so that few are taken, then smaller and smaller ones, so that the
#: threads run out of work together even when one core is slower than the other.
GUIDE = 4
#: The last slices are this small.  A slice costs about 2 us (the GIL, a view of the output),
#: 2% of the time to draw this many in the fastest case (Bernoulli(exp(-7/3)), 25 ns each).
MIN_TAIL = 1 << 12
#: And no slice is larger than this (0.4 s at 10 M/s): on an error or Ctrl-C in one thread,
#: the others stop after their current slice.
MAX_SLICE = 1 << 22


class _Slices:
    """``next_slice`` for ``fill``: each call returns (start, stop) of the next untaken slice of
    [0, count), then None; safe to share between threads.  A slice is
    ceil(left / (GUIDE * threads)) long, but at least ``tail`` (or what is left) and at most
    MAX_SLICE.
    ``stop()`` hands out no more slices, so that one thread's error ends the batch soon."""

    def __init__(self, count: int, threads: int, tail: int = MIN_TAIL):
        self._start, self._count, self._parts, self._tail = 0, count, GUIDE * threads, tail
        self._lock = threading.Lock()

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


def _fill_slices(fill: Fill, slices: _Slices, args: tuple) -> int:
    """One thread's share of a batch: ``fill`` the slices it takes; on an error, stop the rest."""
    try:
        return fill(*args, slices)
    except BaseException:
        slices.stop()
        raise


def draw(
    fill: Fill,
    kind: int,
    param: Fraction,
    size: ShapeLike,
    mu: int,
    rng: RNGLike,
    dtype: np.dtype | None,
    workers=None,
):
    """Validate ``size``, ``rng`` and ``workers``, allocate, fill, shape the result.

    ``param`` and ``mu`` are already exact; ``dtype`` is the resolved output
    dtype (bool for Bernoulli).  ``size=None`` returns one Python ``int``
    (``bool`` for Bernoulli).  With several workers the calling thread and
    ``workers - 1`` helpers take contiguous slices of the flat output as they finish
    the last (:class:`_Slices`), each thread with its own OS bit stream (``fill``
    releases the GIL).
    """
    shape = _params.shape(size)
    source = _params.bit_generator(rng)
    threads = _params.workers(workers, source)
    count = 1 if shape is None else math.prod(shape)
    try:
        out = np.empty(count, dtype=dtype)
    except ValueError:  # NumPy's "array is too big" / "Maximum allowed dimension exceeded"
        raise MemoryError(f"size {size!r} ({count} samples) is too large for memory") from None
    threads = max(1, min(threads, count // MIN_SLICE))
    if threads == 1:
        fill(kind, param.numerator, param.denominator, mu, source, out)
    else:
        # threads - 1 helpers, and the calling thread works too
        slices = _Slices(count, threads)
        args = (kind, param.numerator, param.denominator, mu, None, out)
        with concurrent.futures.ThreadPoolExecutor(threads - 1) as pool:
            helpers = [pool.submit(_fill_slices, fill, slices, args) for _ in range(threads - 1)]
            _fill_slices(fill, slices, args)
        for helper in helpers:
            helper.result()  # re-raises a helper's error
    if shape is None:
        return bool(out[0]) if dtype == np.bool_ else int(out[0])
    return out.reshape(shape)


def sample_gaussian(
    sigma2,
    size: ShapeLike = None,
    *,
    mu=0,
    rng: RNGLike = None,
    dtype=None,
    workers: int | None = None,
):
    r"""Draw from the discrete Gaussian :math:`\mathcal{N}_\mathbb{Z}(\mu, \sigma^2)`.

    .. math:: P[X = x] = \frac{e^{-(x-\mu)^2 / 2\sigma^2}}{\sum_{y \in \mathbb{Z}} e^{-(y-\mu)^2 / 2\sigma^2}}

    Parameters
    ----------
    sigma2 : rational
        The scale parameter :math:`\sigma^2 > 0` (not exactly the variance,
        which is slightly less; see the paper's Section 3).  An int,
        ``fractions.Fraction``, gmpy2 ``mpz``/``mpq``, ``decimal.Decimal``,
        ``str`` (``"1/3"``, ``"2.5"``, ``"1e100"``) or finite ``float``, taken
        at its exact value (a float at its exact binary value: ``0.1`` is
        ``3602879701896397/36028797018963968``).
    size : int or tuple of ints, optional
        Output shape.  ``None`` (default) returns a single Python ``int``.
    mu : integer, optional
        The centre, an integer of any size (default 0).
    rng : numpy.random.Generator or BitGenerator, optional
        ``None`` (default) reads the operating system's CSPRNG.  A NumPy
        generator makes the output reproducible; use it for tests and
        simulations only, never to protect real data.
    dtype : {None, numpy.int64, object}, optional
        ``None`` gives ``int64`` when ``sigma2 <= 2**100`` and
        ``|mu| <= 2**62`` (a sample then leaves int64 with probability below
        ``2**-1000000``), otherwise an object array of exact Python ints.
    workers : int, optional
        Threads to sample with: ``None`` or 1 (default) uses the calling
        thread, -1 every core, n >= 1 that many (as in ``scipy.fft``).
        Batches are split only when each thread gets at least 65,536 samples;
        the threads take slices of the batch as they finish the last, each
        with its own OS bit stream.  Needs ``rng=None``: a seeded generator is
        one sequential stream.

    Returns
    -------
    int or numpy.ndarray

    Raises
    ------
    TypeError, ValueError
        For a parameter outside the stated types or ranges.
    OverflowError
        If a sample does not fit ``dtype=numpy.int64``; nothing is wrapped.
    OSError
        If the operating system cannot supply randomness.

    Notes
    -----
    **Exactness.**  Algorithm 3 of Canonne, Kamath & Steinke, "The Discrete
    Gaussian for Differential Privacy" (NeurIPS 2020), run on random bits with
    integer arithmetic only: the output is distributed exactly as stated, with
    no floating point anywhere.  Running time is random (rejection sampling).

    Examples
    --------
    >>> import numpy as np, dgauss
    >>> x = dgauss.sample_gaussian(100, size=5, rng=np.random.default_rng(0))
    >>> x.dtype, x.shape
    (dtype('int64'), (5,))
    >>> type(dgauss.sample_gaussian("1e100"))
    <class 'int'>
    """
    return sample(_core.fill, GAUSSIAN, sigma2, size, mu, rng, dtype, workers)


def sample_laplace(
    scale,
    size: ShapeLike = None,
    *,
    mu=0,
    rng: RNGLike = None,
    dtype=None,
    workers: int | None = None,
):
    r"""Draw from the discrete Laplace :math:`\mathrm{Lap}_\mathbb{Z}(\mu, t)`.

    .. math:: P[X = x] = \frac{e^{1/t} - 1}{e^{1/t} + 1} \, e^{-|x-\mu|/t}

    Parameters
    ----------
    scale : rational
        The scale :math:`t > 0`, any rational (same accepted types as
        ``sigma2`` in :func:`sample_gaussian`).  The geometric mechanism with
        privacy parameter :math:`\varepsilon` uses ``scale = 1/epsilon``.
    size, mu, rng, workers
        As in :func:`sample_gaussian`.
    dtype : {None, numpy.int64, object}, optional
        ``None`` gives ``int64`` when ``scale <= 2**40`` and ``|mu| <= 2**62``,
        otherwise an object array of exact Python ints.

    Returns
    -------
    int or numpy.ndarray

    Notes
    -----
    **Exactness.**  Algorithm 2 of Canonne, Kamath & Steinke (2020) with
    ``scale = t/s`` in lowest terms: exact, integer arithmetic only.

    Examples
    --------
    >>> import numpy as np, dgauss
    >>> dgauss.sample_laplace("7/3", size=(2, 3), rng=np.random.default_rng(0)).shape
    (2, 3)
    """
    return sample(_core.fill, LAPLACE, scale, size, mu, rng, dtype, workers)


def sample_bernoulli_exp(
    gamma, size: ShapeLike = None, *, rng: RNGLike = None, workers: int | None = None
):
    r"""Draw from :math:`\mathrm{Bernoulli}(e^{-\gamma})`.

    Parameters
    ----------
    gamma : rational
        :math:`\gamma \ge 0`, same accepted types as ``sigma2`` in
        :func:`sample_gaussian`.
    size, rng, workers
        As in :func:`sample_gaussian`.

    Returns
    -------
    bool or numpy.ndarray of bool

    Notes
    -----
    **Exactness.**  Algorithm 1 of Canonne, Kamath & Steinke (2020): exact,
    integer arithmetic only.  ``gamma = 0`` always gives True.

    Examples
    --------
    >>> import dgauss
    >>> dgauss.sample_bernoulli_exp(0)
    True
    """
    return sample(_core.fill, BERNOULLI_EXP, gamma, size, 0, rng, None, workers)


def sample(fill: Fill, kind: int, param, size, mu, rng, dtype, workers=None):
    """Check the distribution's parameters, pick the dtype, then :func:`draw`."""
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
        )
    name = "sigma2" if kind == GAUSSIAN else "scale"
    value = _params.positive(param, name)
    mu = _params.integer(mu, "mu")
    safe = (_params.gaussian_int64_safe if kind == GAUSSIAN else _params.laplace_int64_safe)(
        value, mu
    )
    out_dtype = _params.result_dtype(dtype, safe)
    if size is None and dtype is None:
        out_dtype = np.dtype(object)  # a scalar is always an exact Python int
    return draw(fill, kind, value, size, mu, rng, out_dtype, workers)
