"""The PLD route's composed vectors: the cut of their ends (_laws._Law.reach: Bennett's
and Hoeffding's bounds drop only mass truly below _DROP of the untruncated sum's law) and
the FFT merge's error bound (at every transform length it uses, not only powers of two).

Each bound is checked against exact values computed here: binomial tails in rationals, the
n-fold convolution of real leaves by direct (positive, so relatively accurate) sums, and
integer convolutions.
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dgauss import _pool
from dgauss.accounting import (
    Gaussian,
    Laplace,
    _convolution,
    _grids,
    _laws,
    _leaves,
    _pld_settings,
    _readouts,
    compose,
)


def _h(u):
    """Bennett's h(u) = (1 + u)·ln(1 + u) − u, at 50 digits."""
    with mpmath.workdps(50):
        u = mpmath.mpf(u)
        return (1 + u) * mpmath.log1p(u) - u


@pytest.mark.parametrize("u", [1e-12, 1e-7, 3e-3, 0.0099, 0.01, 0.3, 1.0, 7.5, 1e3, 1e9, 1e200])
def test_h_low_is_a_close_lower_bound(u):
    low = _laws._bennett_h_low(u)
    with mpmath.workdps(50):
        true = _h(u)
        assert low <= true
        assert low >= true * (1 - 1e-8)


def _binomial_upper_tail(n: int, p: Fraction, above: Fraction) -> Fraction:
    """P(S − np > above) for S ~ Binomial(n, p), exactly."""
    first = math.floor(n * p + above) + 1
    return sum(
        (math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(max(first, 0), n + 1)),
        Fraction(0),
    )


@pytest.mark.parametrize("n", [1, 3, 40, 500])
@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 20), Fraction(19, 20)])
@pytest.mark.parametrize("log_inv", [2.0, 12.0, _pld_settings._LOG_INV_DROP])
def test_bennett_reach_bounds_binomial_tails(n, p, log_inv):
    """Sums of n Bernoulli(p): the tail beyond the mean + Bennett's reach, on either side,
    holds at most e^{−log_inv}, exactly; and the reach is not looser than needed by more
    than Bennett's own slack (the tail beyond half of it is above the bound somewhere)."""
    var = float(n * p * (1 - p)) * (1 + 1e-12)
    bound = Fraction(math.exp(-log_inv))
    for upward, reach_of_one, q in ((True, 1 - p, p), (False, p, 1 - p)):
        # below the mean is above the mean of n Bernoulli(1 − p)
        t = _laws._bennett_reach(var, float(reach_of_one), log_inv)
        assert math.isfinite(t)
        assert _binomial_upper_tail(n, q, Fraction(t)) <= bound, (upward, t)


def _leaf_of(release, alpha=0.5, h=2.0**-9):
    coords = compose(release)._coords
    assert len(coords) == 1
    leaf = _leaves._leaf(coords[0], alpha, h, None)
    assert leaf is not None
    return leaf


# grids of a few hundred points a leaf, so that 200 of them convolve directly in a second
LEAVES = {
    "Gaussian 3": lambda: _leaf_of(Gaussian(3), h=2.0**-4),
    "Gaussian 40.7, Δ=2": lambda: _leaf_of(Gaussian("40.7", [2]), h=2.0**-5),
    "Gaussian 0.31": lambda: _leaf_of(Gaussian("0.31"), alpha=2.0, h=2.0**-3),
    "Laplace 2.3, Δ=3": lambda: _leaf_of(Laplace("2.3", 3)),
    "Laplace 0.4": lambda: _leaf_of(Laplace("0.4"), alpha=0.1, h=2.0**-5),
}


def _convolution_power(v: np.ndarray, count: int) -> np.ndarray:
    """v convolved with itself count times, directly (sums of positive terms)."""
    result, base = np.ones(1), v
    while count:
        if count & 1:
            result = np.convolve(result, base)
        count >>= 1
        if count:
            base = np.convolve(base, base)
    return result


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_a_leaf_law_bounds_its_vector(name):
    """_leaf_law: the mean within its error, the variance and both reaches at least those
    of the vector's normalised law (computed exactly from the floats)."""
    leaf = LEAVES[name]()
    law = leaf.law
    v = [Fraction(x) for x in leaf.v]
    total = sum(v)
    mean = sum(Fraction(leaf.lo + i) * x for i, x in enumerate(v)) / total
    var = sum((Fraction(leaf.lo + i) - mean) ** 2 * x for i, x in enumerate(v)) / total
    assert abs(Fraction(law.mean) - mean) <= Fraction(law.mean_err)
    assert Fraction(law.var) >= var
    assert Fraction(law.above) >= leaf.lo + len(v) - 1 - mean
    assert Fraction(law.below) >= mean - leaf.lo


@pytest.mark.parametrize("name", sorted(LEAVES))
@pytest.mark.parametrize("count", [2, 30, 200])
def test_the_cut_drops_at_most_its_share_of_a_sum_of_leaves(name, count):
    """count copies of a real leaf convolved directly (sums of positive terms): beyond the
    law's mean ± reach lies at most _DROP of the whole on each side."""
    leaf = LEAVES[name]()
    law = leaf.law.times(count)
    v = _convolution_power(leaf.v / leaf.v.sum(), count)
    total = float(v.sum())
    index = leaf.lo * count + np.arange(len(v))
    top, bottom = law.mean + law.reach(True), law.mean - law.reach(False)
    above = float(v[index > top].sum())
    below = float(v[index < bottom].sum())
    # each float entry within a relative 2·log2(count)·len·u of the truth: margin 1 + 1e-6
    assert above <= _pld_settings._DROP * total * (1 + 1e-6)
    assert below <= _pld_settings._DROP * total * (1 + 1e-6)
    if count >= 30:  # the cut is inside the support (on a side): the check above has teeth
        assert index[0] < bottom or top < index[-1]


def test_bennett_cuts_long_compositions_shorter_than_hoeffding():
    """The reason for Bennett's bound: over 1000 Gaussian leaves it reaches a fraction of
    Hoeffding's t (which grows with the leaves' 28-standard-deviation supports)."""
    leaf = _leaf_of(Gaussian(10))
    law = leaf.law.times(1000)
    hoeffding = math.sqrt(law.width2 * _pld_settings._LOG_INV_DROP / 2)
    assert law.reach(True) < hoeffding / 5
    assert law.reach(False) < hoeffding / 5
    # and both are past what the composed law truly spreads: √(2·ln(1/_DROP)·variance)
    spread = math.sqrt(2 * _pld_settings._LOG_INV_DROP * law.var)
    assert law.reach(True) > spread


@pytest.mark.parametrize("var, b", [(0.0, 1.0), (1.0, 0.0), (math.inf, 1.0), (1.0, math.nan)])
def test_bennett_reach_is_infinite_without_a_variance_and_a_reach(var, b):
    assert _laws._bennett_reach(var, b, 10.0) == math.inf


@pytest.mark.parametrize("size", [2, 60, 64, 65, 700, 1000, 4097, 6250, 20_000])
def test_fft_length_is_the_smallest_5_smooth_length(size):
    got = _convolution._fft_length(size)
    assert got == next(m for m in range(size, 2 * size + 1) if _only_factors(m, (2, 3, 5)))


def _only_factors(m: int, primes) -> bool:
    for p in primes:
        while m % p == 0:
            m //= p
    return m == 1


@pytest.mark.parametrize("la, lb", [(65, 65), (300, 4000), (2047, 2050), (3000, 3001), (5000, 77)])
@pytest.mark.parametrize("shape", ["uniform", "gaussian", "sparse"])
def test_the_merge_convolution_is_within_its_error_bound(la, lb, shape):
    """Vectors of 20-bit integers scaled by 2^-20 (exact floats) have an exact integer
    convolution: every entry of _convolve's is within its bound of it, at transform lengths
    with factors 3 and 5 as well as 2."""
    rng = np.random.default_rng(la * 7919 + lb)

    def vector(n):
        if shape == "uniform":
            ints = rng.integers(0, 1 << 20, n)
        elif shape == "gaussian":
            x = np.arange(n) - n / 2
            ints = np.floor((1 << 20) * np.exp(-((x / (n / 8)) ** 2) / 2)).astype(np.int64)
        else:
            ints = rng.integers(0, 1 << 20, n) * (rng.random(n) < 0.05)
        return ints.astype(np.int64)

    ia, ib = vector(la), vector(lb)
    a, b = ia * 2.0**-20, ib * 2.0**-20
    for other, iother in ((b, ib), (None, ia)):
        got, per_unit = _convolution._convolve(a, other)
        truth = np.convolve(ia, iother) * 2.0**-40  # < 2^40·5000 < 2^53: exact in int64
        bound = per_unit * float(a.sum()) * float((a if other is None else b).sum())
        assert np.abs(got - truth).max() <= bound


@pytest.mark.parametrize(
    "sigma2",
    ["1", "1.9999", "2", "2.5", "71.41", "999.9", "123456789/1000", "1e12", "1e300", "2**999"],
)
def test_log_theta_is_a_close_lower_bound(sigma2):
    """ln Θ(σ²) (Θ = Σ_y e^{−y²/(2σ²)}), from Poisson's √(2πσ²) for σ² ≥ 2: never above
    the truth (the sum itself at 40 digits, or past σ² = 1000 Poisson's dual sum, whose
    k ≠ 0 terms are then below e^{−19000}), and within a few float roundings of it (each of
    the k coordinates of a Gaussian release adds the gap to its composed κ)."""
    s = Fraction(2**999) if sigma2 == "2**999" else Fraction(sigma2)
    with mpmath.workdps(40):
        sm = mpmath.mpf(s.numerator) / s.denominator
        if s < 1000:
            reach = int(40 * mpmath.sqrt(sm)) + 1  # beyond, the terms are below e^{-800}
            true = mpmath.log(
                mpmath.fsum(mpmath.exp(-(y * y) / (2 * sm)) for y in range(-reach, reach + 1))
            )
        else:
            true = mpmath.log(mpmath.sqrt(2 * mpmath.pi * sm))
        got = _leaves._log_theta(s)
        assert got <= true
        assert true - got <= 64 * _pld_settings._U * (abs(true) + 1)


def test_merges_on_every_core_give_the_same_bits(monkeypatch):
    """The PLD route's levels of merges run on several threads when they are long: the
    composed vector, its error bound and δ are the same bits as on one thread."""
    releases = [Gaussian(f"{40 + i}.{i}") for i in range(40)] + [Laplace("7.5", 2, k=30)]
    program = compose(*releases)
    alpha, h, _ = _grids._choose(program._coords, 1.0, None)
    threads_used = []
    real = _pool.map_ordered

    def spy(fn, items, threads):
        threads_used.append(threads)
        return real(fn, items, threads)

    monkeypatch.setattr(_pool, "map_ordered", spy)
    monkeypatch.setattr(_pool, "cores", lambda: 4)
    # every level with two merges or more
    monkeypatch.setattr(_convolution, "_PARALLEL_POINTS", 1000)
    many = _readouts._PLD(program._coords, alpha, h, None)
    assert max(threads_used) == 4  # some level was shared out
    monkeypatch.setattr(_pool, "cores", lambda: 1)
    one = _readouts._PLD(program._coords, alpha, h, None)
    assert many.root.lo == one.root.lo and many.root.err == one.root.err
    assert np.array_equal(many.root.v, one.root.v)
    assert many.log_delta(1.0) == one.log_delta(1.0)


def _integer_leaf(ints: np.ndarray, lo: int) -> _leaves._Node:
    """A node whose vector is exactly the integers ``ints`` (exact floats), κ = 0, no error."""
    v = ints.astype(np.float64)
    total = float(v.sum())
    return _leaves._Node(
        lo,
        v,
        0.0,
        0.0,
        -math.inf,
        _pld_settings._float_up(math.log(total)),
        _leaves._leaf_law(v, lo, 0.0),
    )


def _exact_product(ints_list, counts) -> list[int]:
    """Π_i (ints_i)^{∗k_i} exactly (Kronecker substitution: each vector packed into one
    integer with slots wide enough that no sum carries, multiplied in gmpy2)."""
    import gmpy2

    slot = (
        sum(
            k * (int(max(ints)).bit_length() + len(ints).bit_length())
            for ints, k in zip(ints_list, counts, strict=True)
        )
        + 2
    )
    result = gmpy2.mpz(1)
    for ints, k in zip(ints_list, counts, strict=True):
        packed = gmpy2.mpz(0)
        for x in reversed([int(x) for x in ints]):
            packed = (packed << slot) | x
        result *= packed**k
    mask = (1 << slot) - 1
    length = sum(k * (len(ints) - 1) for ints, k in zip(ints_list, counts, strict=True)) + 1
    return [int((result >> (slot * j)) & mask) for j in range(length)]


@pytest.mark.parametrize(
    "shapes, counts",
    [
        (("bell",), (2,)),
        (("bell",), (300,)),
        (("uniform", "bell"), (7, 5)),
        (("bell", "skew", "uniform"), (60, 90, 25)),
        (("sparse", "bell"), (1, 140)),
    ],
)
def test_the_product_in_one_transform_is_within_its_error_bound(shapes, counts):
    """_product (every leaf's spectrum raised to its count, multiplied, one inverse): on
    integer leaves, every entry of the node, read as (v ± err)·e^κ, holds the exact integer
    convolution (κ may lie above the true scale by at most the node's slack), and what its
    window leaves out is at most e^{dropped}·Π M̄ (M̄ here the leaves' exact sums)."""
    rng = np.random.default_rng(sum(counts))
    ints_list = []
    for shape in shapes:
        x = np.arange(41) - 20.0
        if shape == "bell":
            ints = np.floor(4095 * np.exp(-((x / 7) ** 2) / 2)).astype(np.int64) + 1
        elif shape == "skew":
            ints = np.floor(4095 * np.exp(-np.abs(x + 12) / 4)).astype(np.int64)
        elif shape == "uniform":
            ints = rng.integers(1, 1 << 12, 23)
        else:
            ints = rng.integers(0, 1 << 12, 37) * (rng.random(37) < 0.2)
            ints[0] = ints[-1] = 1
        ints_list.append(ints)
    leaves = [_integer_leaf(ints, -len(ints) // 3) for ints in ints_list]
    with np.errstate(all="ignore"):
        node = _convolution._product(leaves, list(counts))
    exact = _exact_product(ints_list, counts)
    first = sum(leaf.lo * k for leaf, k in zip(leaves, counts, strict=True))
    log_scale = mpmath.mpf(node.kappa)
    with mpmath.workdps(40):
        scale = mpmath.exp(-log_scale)
        for j, x in enumerate(node.v):
            truth = exact[node.lo - first + j] * scale
            assert truth <= mpmath.mpf(float(x)) + node.err
            assert truth * mpmath.exp(node.kappa_slack) >= mpmath.mpf(float(x)) - node.err
        outside = sum(exact[: node.lo - first]) + sum(exact[node.lo - first + len(node.v) :])
        total_mgf = mpmath.exp(mpmath.mpf(node.log_mgf))
        dropped = mpmath.exp(mpmath.mpf(node.dropped)) if node.dropped > -math.inf else 0
        assert outside <= dropped * total_mgf
    if sum(counts) >= 140:  # the window is cut inside the support: its bound has teeth
        assert len(node.v) < len(exact) and outside > 0
    # the bound is a useful one: within a millionth of the largest entry
    assert node.err < 1e-6
