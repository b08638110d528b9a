"""The accounting's building blocks, each checked against an independent computation.

tests/test_accounting.py checks the public functions against the truth; these
tests pin the pieces that make them exact and fast: interval arithmetic,
the two ways of summing a tail (which must agree), the erfc asymptotic branch,
the lattice error bound of the k-fold reduction (against brute-force
convolution), and that Corollary 13's α search cannot make a bound optimistic.
"""

from fractions import Fraction as F

import mpmath
import pytest
from gmpy2 import mpfr

from dgauss._interval import Arith
from dgauss.accounting import _closed_forms as A
from dgauss.accounting import _gaussian_sums as gs
from dgauss.accounting import _lattice_bounds as lb

mpmath.mp.dps = 60


def mp(q):
    return mpmath.mpf(q.numerator) / q.denominator


def contains(interval, value, rel=0):
    """interval ∋ value, allowing the reference its own relative error ``rel``."""
    slack = abs(value) * rel
    return mpmath.mpf(interval.lo) <= value + slack and value - slack <= mpmath.mpf(interval.hi)


# ---------------------------------------------------------------- intervals
@pytest.mark.parametrize(
    "a, b", [(F(1, 3), F(-2, 7)), (F(10**30 + 1, 3), F(5, 10**20)), (F(-7, 2), F(-1, 9))]
)
def test_interval_operations_enclose_the_exact_result(a, b):
    ar = Arith(64)  # low precision, so rounding matters
    x, y = ar.q(a), ar.q(b)
    for got, exact in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x**3, a**3), (y**2, b**2)]:
        assert contains(got, mp(exact)), (got, exact)
        assert got.lo < got.hi or got.lo == got.hi == mpfr(exact)
    if b > 0:
        assert contains(x / y, mp(a / b))
    assert contains(ar.q(abs(a)).log(), mpmath.log(mp(abs(a))))
    assert contains(ar.q(b).exp(), mpmath.exp(mp(b)))
    assert contains(ar.q(b).expm1(), mpmath.expm1(mp(b)))
    assert contains(ar.q(abs(b)).erfc(), mpmath.erfc(mp(abs(b))))


# ------------------------------------------------------------------- tails
def direct_reference(s, m, eps=None, delta=1):
    """Σ_{y≥m} f(y)·w(y) in mpmath, summed until the terms are negligible."""
    s_ = mp(s)
    total, y = mpmath.mpf(0), m
    while True:
        term = mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * s_))
        if eps is not None:
            term *= -mpmath.expm1(mp(eps) - delta * (2 * mpmath.mpf(y) + delta) / (2 * s_))
        total += term
        if y > 0 and term < total * mpmath.mpf(10) ** -50:
            return total
        y += 1


@pytest.mark.parametrize(
    "s, m, eps, delta",
    [
        (F(2500), 10, None, 1),
        (F(2500), 60, F(1, 50), 1),
        (F(10**4), 3, F(1, 10**4), 1),
        (F(40000), 300, F(1, 100), 2),
        (F(20000), -30, F(1, 10**6), 1),
        (F(90000), 900, None, 1),
    ],
)
def test_euler_maclaurin_and_direct_summation_agree_with_the_definition(s, m, eps, delta):
    """Both methods enclose the true sum (the mpmath reference is good to ~1e−48), and their
    enclosures are narrow (2^−90), so an error in a derivative term or in rounding shows.
    (This test found gmpy2's unary minus rounding to 53 bits inside an interval.)"""
    ar = Arith(192)
    tail = gs._Tail(s, m, eps, delta, ar)
    truth = direct_reference(s, m, eps, delta)
    scale = mpmath.exp(mp(tail.shift))
    em, remainder = tail.euler_maclaurin()
    direct = tail.direct(200_000)
    assert direct is not None
    for enclosure in (em, direct):
        assert contains(enclosure, truth * scale, rel=mpmath.mpf(10) ** -45), (enclosure, truth)
        assert enclosure.rel_width() < mpfr(2) ** -90


def test_euler_maclaurin_without_its_derivative_terms_misses_the_truth(monkeypatch):
    """A mutation check: with the Bernoulli terms zeroed, the enclosure excludes the true sum."""
    s, m = F(2500), 10
    truth = direct_reference(s, m) * mpmath.exp(mp(F(m * m, 2 * s)))
    monkeypatch.setattr(gs, "_bernoulli_over_factorial", lambda p: [F(0)] * (p // 2 + 1))
    em, _ = gs._Tail(s, m, None, 1, Arith(192)).euler_maclaurin()
    assert not contains(em, truth)


def test_gauss_tail_integral_asymptotic_branch_matches_erfc():
    """At the switch-over, the asymptotic series and MPFR's erfc give overlapping enclosures."""
    ar = Arith(160)
    s = F(1)
    a = 2897  # a²/(2s) just above 2^22
    assert F(a * a, 2) >= gs.ERFC_ASYMPTOTIC_Z2
    asymptotic = gs.log_gauss_tail_integral(a, s, ar)
    saved = gs.ERFC_ASYMPTOTIC_Z2
    try:
        gs.ERFC_ASYMPTOTIC_Z2 = F(10**12)
        direct = gs.log_gauss_tail_integral(a, s, ar)
        assert contains(
            direct,
            mpmath.log(
                mpmath.quad(lambda x: mpmath.exp(-x * x / 2 + a * a / 2), [a, a + 1, mpmath.inf])
            ),
            rel=1e-40,
        )
    finally:
        gs.ERFC_ASYMPTOTIC_Z2 = saved
    assert asymptotic.lo <= direct.hi and direct.lo <= asymptotic.hi
    assert asymptotic.abs_width() < mpfr(2) ** -100


# ------------------------------------------------------ lattice error bound
def ratio_spread(weights, s):
    """max/min over w of P[W = w]/e^{−w²/(2sS)}, W = Σ_j weights_j·Y_j for i.i.d. N_Z(0, s),
    S = Σ weights_j² (brute-force convolution in mpmath, |w| kept far from the truncation)."""
    s_ = mp(s)
    half = int(12 * mpmath.sqrt(s_)) + 6
    base = {y: mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * s_)) for y in range(-half, half + 1)}
    dist = {0: mpmath.mpf(1)}
    for b in weights:
        new = {}
        for w, pw in dist.items():
            for y, py in base.items():
                new[w + b * y] = new.get(w + b * y, 0) + pw * py
        dist = new
    S = sum(b * b for b in weights)
    ratios = [
        dist[w] / mpmath.exp(-(mpmath.mpf(w) ** 2) / (2 * S * s_)) for w in range(-half, half + 1)
    ]
    return max(ratios) / min(ratios)


def assert_bound_covers(error, spread):
    """(1 + R)/(1 − R) spread covered by the bound E, and E within 50× of what it covers."""
    assert error is not None and error < 0.5
    e = mpmath.mpf(error)
    assert spread <= (1 + e) / (1 - e)
    assert (spread - 1) * 50 >= e or e < mpmath.mpf(10) ** -40


@pytest.mark.parametrize(
    "n, s",
    [(2, F(1, 2)), (3, F(1, 2)), (2, F(1)), (4, F(3, 4)), (3, F(2)), (6, F(1)), (5, F(3, 2))],
)
def test_lattice_error_bound_covers_the_true_deviation(n, s):
    """P[S_n = w] ∝ e^{−w²/(2ns)}(1 + R(w)) with |R| ≤ E, so the ratio spread is ≤ (1+E)/(1−E)."""
    assert_bound_covers(lb.lattice_error_bound(n, s), ratio_spread((1,) * n, s))


def test_lattice_error_bound_is_zero_for_one_coordinate_and_tiny_for_large_sigma():
    assert lb.lattice_error_bound(1, F(1, 10)) == 0
    assert lb.lattice_error_bound(100, F(4)) < 1e-30
    assert lb.lattice_error_bound(10**6, F(2500)) < 1e-300


# ------------------------------------------------------------ Corollary 13
@pytest.mark.parametrize(
    "rho, eps", [(F(1, 2), F(1)), (F(1, 50), F(1)), (F(3), F(1, 10)), (F(1, 10**6), F(1, 100))]
)
def test_any_alpha_gives_an_upper_bound_and_the_chosen_one_is_the_best(rho, eps):
    """Eq. 18 at the searched α is the smallest of Eq. 18 over a fine grid of α (so the α
    search finds the infimum), and every grid value is ≥ the reported bound."""
    ar = Arith(128)
    reported = A._cdp_log_delta(rho, eps)
    u_star = A._cdp_u(rho, eps)
    for factor in (F(1, 2), F(9, 10), F(99, 100), F(101, 100), F(11, 10), F(2)):
        u = mpfr(u_star) * mpfr(factor, 64)
        g = A._g(ar.point(u), ar.q(rho), ar.q(eps))
        assert g.lo >= reported - mpfr(2) ** -40 * abs(reported)


@pytest.mark.parametrize(
    "weights, s",
    [((1, 2), F(1)), ((1, 2), F(3)), ((2, 3), F(2)), ((1, 1, 2), F(3, 2)), ((1, 3), F(4))],
)
def test_vector_lattice_error_bound_covers_the_true_deviation(weights, s):
    """The general bound (several magnitudes) against brute-force convolution, as above."""
    counts = {}
    for b in weights:
        counts[b] = counts.get(b, 0) + 1
    assert_bound_covers(lb.lattice_error_bound_vector(counts, s), ratio_spread(weights, s))
