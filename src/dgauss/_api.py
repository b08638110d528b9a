"""The public sampling functions: the compiled core behind the shared driver
(:mod:`dgauss._driver`)."""

from __future__ import annotations

from dgauss import _core
from dgauss._chacha import ChaCha20
from dgauss._driver import LEAN_MAX, RNGLike, ShapeLike, lean, lean_job, lean_method, sample
from dgauss._kinds import BERNOULLI_EXP, DISCRETE_GAUSSIAN, DISCRETE_LAPLACE


def _is_chacha20(rng: object) -> bool:
    """Whether ``rng`` is a :class:`dgauss.ChaCha20` itself (no subclass): its small calls
    go the lean way, as the OS's do."""
    return type(rng) is ChaCha20


def _lean(kind, param, size, mu, rng=None):
    """A one-sample call, or one of up to LEAN_MAX samples (``size`` an int), drawn the lean
    way (:func:`dgauss._driver.lean`): the same samples the general way would draw, from
    the same OS stream, or (``rng`` a :class:`dgauss.ChaCha20`) from the same state of it;
    None when the call must go the general way."""
    if size is None:
        found = lean(kind, param, mu)
        if found is None:
            return None
        kind_, num, den, mu_value, method = found
        return _core.draw_one(kind_, num, den, mu_value, method, rng)
    if type(size) is not int or not 1 <= size <= LEAN_MAX:
        return None
    job = lean_job(kind, param, mu)
    if job is None:
        return None
    kind_, num, den, mu_value, first = job
    return _core.lean_array(kind_, num, den, mu_value, rng, size, lean_method(first, size))


def sample_gaussian(
    sigma2,
    size: ShapeLike = None,
    *,
    mu=0,
    rng: RNGLike = None,
    dtype=None,
    workers: int | None = None,
    method: str = "auto",
):
    r"""Draw from the discrete Gaussian :math:`\mathcal{N}_\mathbb{Z}(\mu, \sigma^2)`.

    .. math::
        P[X = x] = \frac{e^{-(x-\mu)^2 / 2\sigma^2}}
                        {\sum_{y \in \mathbb{Z}} e^{-(y-\mu)^2 / 2\sigma^2}}

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
        Threads to sample with: 1 the calling thread, -1 every core, n >= 1
        that many (as in ``scipy.fft``).  ``None`` (default) is 1, except that
        a batch of 131,072 samples or more from the OS uses two where the
        process has a second CPU and it is idle now (``/proc/loadavg``).
        Batches are split only when each thread gets at least 65,536 samples;
        the threads take slices of the batch as they finish the last, each
        with its own OS bit stream.  Needs ``rng=None``: a seeded generator is
        one sequential stream.
    method : {"auto", "inversion", "rejection"}, optional
        How the samples are drawn; every method is exact.  ``"inversion"``
        compares one lazily read uniform with a table of the exact thresholds
        :math:`P[|X - \mu| \ge x]`, then reads a sign bit: the fastest, for
        :math:`2^{-6} \le \sigma^2 \le 2^{100}` (the table is built once per
        ``sigma2``, in about 2 ms at most, and cached; from :math:`\sigma^2 = 2^{16}`
        on, *blocked inversion*: the table holds two thresholds per block of
        about :math:`\sigma/32` values, a value inside a block is read as raw
        bits; past :math:`2^{24}`, *enveloped inversion*: a block of :math:`2^k`
        values by the table, a value in it by raw bits, kept by an exact
        Bernoulli(:math:`e^{-\gamma}`) or drawn again; docs/contract.md, item 9).
        ``"rejection"`` runs the paper's Algorithm 3, for any ``sigma2``.
        ``"auto"`` (default) is ``"inversion"`` inside that range for a batch
        of at least a quarter as many samples as the table has words (about
        :math:`9.4\sigma`) beyond 1,024, and ``"rejection"`` otherwise: it
        depends on the parameters and ``size`` only, so a seeded call always
        gives the same samples.

    Returns
    -------
    int or numpy.ndarray
        One Python ``int`` when ``size`` is None, else an array of shape ``size`` (int64, or
        object holding exact Python ints; see ``dtype``).

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
    **Exactness.**  Both methods run on random bits with integer arithmetic
    only, and the output is distributed exactly as stated, with no floating
    point anywhere.  ``"rejection"`` is Algorithm 3 of Canonne, Kamath &
    Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020);
    ``"inversion"`` compares the uniform with threshold words proven by
    integer error bounds, and reads further digits, computed exactly, in the
    rare case (about :math:`2^{-64}` per sample) that 64 do not decide.
    Running time is random for both.

    Examples
    --------
    >>> import numpy as np, dgauss
    >>> x = dgauss.sample_gaussian(100, size=5, rng=np.random.default_rng(0))
    >>> x.dtype, x.shape
    (dtype('int64'), (5,))
    >>> type(dgauss.sample_gaussian("1e100"))
    <class 'int'>
    """
    lean_rng = rng is None or _is_chacha20(rng)  # the OS, or a ChaCha20 (kept jobs)
    if lean_rng and dtype is None and workers is None and method == "auto":
        found = _lean(DISCRETE_GAUSSIAN, sigma2, size, mu, rng)  # a small call, a seen σ²
        if found is not None:
            return found
    return sample(
        _core.fill,
        DISCRETE_GAUSSIAN,
        sigma2,
        size,
        mu,
        rng,
        dtype,
        workers,
        method,
        _core.os_threads,
    )


def sample_laplace(
    scale,
    size: ShapeLike = None,
    *,
    mu=0,
    rng: RNGLike = None,
    dtype=None,
    workers: int | None = None,
    method: str = "auto",
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
    method : {"auto", "inversion", "rejection"}, optional
        As in :func:`sample_gaussian`: ``"inversion"`` for
        :math:`2^{-6} \le t \le 2^{40}` (a table of every threshold below
        :math:`t = 2^{12}`, about 1.7 MiB there; from :math:`2^{12}` on *blocked
        inversion*, tables of 0.04-0.55 MiB; past :math:`2^{20}` *enveloped*:
        docs/contract.md, item 9),
        ``"rejection"`` the paper's Algorithm 2 for any ``scale``, ``"auto"``
        (default) inversion in that range for batches large enough to pay for the
        table (at least a quarter as many samples as it has words beyond 1,024:
        about :math:`44 t` below :math:`2^{12}`, 3,000-6,000 plus :math:`t/32` from
        there).
    dtype : {None, numpy.int64, object}, optional
        ``None`` gives ``int64`` when ``scale <= 2**40`` and ``|mu| <= 2**62``,
        otherwise an object array of exact Python ints.

    Returns
    -------
    int or numpy.ndarray
        One Python ``int`` when ``size`` is None, else an array of shape ``size`` (int64, or
        object holding exact Python ints; see ``dtype``).

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
    lean_rng = rng is None or _is_chacha20(rng)  # the OS, or a ChaCha20 (kept jobs)
    if lean_rng and dtype is None and workers is None and method == "auto":
        found = _lean(DISCRETE_LAPLACE, scale, size, mu, rng)  # a small call, a seen scale
        if found is not None:
            return found
    return sample(
        _core.fill, DISCRETE_LAPLACE, scale, size, mu, rng, dtype, workers, method, _core.os_threads
    )


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
        One Python ``bool`` when ``size`` is None, else a bool array of shape ``size``.

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
    return sample(
        _core.fill, BERNOULLI_EXP, gamma, size, 0, rng, None, workers, os_threads=_core.os_threads
    )
