"""The oracle's inversion (dgauss._reference_inversion) against production's (dgauss._inversion).

The two compute the same thresholds by different means: production from integer bounds on
the series of dgauss._exact.exp_neg_floor, through recurrences (w_{k+1} = w_k r_k, products of
powers), the oracle by MPFR's correctly rounded exp and interval arithmetic.  Here every word
floor(2**p theta_x) the core can read (p = 64, and 128 for the steps past bit 64) is compared,
for parameters across every range, and the contract's geometry (dgauss._methods) is checked
against its inequalities, computed here in exact rationals and MPFR.  That the samplers built
on these thresholds read the same bits is the business of the same-bits tests
(tests/test_gaussian_inversion.py, test_*_blocked.py, test_enveloped.py), which now compare
the core with an oracle that shares none of its thresholds.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgauss import _inversion, _methods, reference
from dgauss import _reference_inversion as oracle
from dgauss._interval import Arith


def _oracle_words(family, p: int, count: int | None = None) -> list[int]:
    """floor(2**p theta_x) for x = 1, 2, ... up to the first 0 (or ``count`` of them)."""
    words, x = [], 1
    while count is None or x <= count:
        word = oracle.floor_word(family, x, p)
        if word == 0 and count is None:
            break
        words.append(word)
        x += 1
    return words


def _production_words(floors, count: int | None = None) -> list[int]:
    """The same from a production LaplaceFloors/GeometricFloors (words computed when asked)."""
    words, x = [], 1
    while count is None or x <= count:
        word = floors.word(x)
        if word == 0 and count is None:
            break
        words.append(word)
        x += 1
    return words


GAUSSIAN = [Fraction(1, 64), Fraction(1, 3), Fraction(7, 3), Fraction(100), Fraction(12345, 7)]
GAUSSIAN_BLOCKED = [Fraction(1 << 16), Fraction(196609, 3), Fraction(10**6), Fraction(1 << 24)]
LAPLACE = [Fraction(1, 64), Fraction(1, 3), Fraction(5), Fraction(1000, 7), Fraction(255)]
LAPLACE_BLOCKED = [Fraction(256), Fraction(1000), Fraction(12289, 3), Fraction(100000)]


@pytest.mark.parametrize("p", [64, 128])
@pytest.mark.parametrize("sigma2", GAUSSIAN, ids=str)
def test_gaussian_thresholds_agree(sigma2, p):
    """T_x = 2 S_x / (1 + 2 S_1), every word down to the first 0."""
    want = _inversion.gaussian_floors(sigma2, p).words
    got = _oracle_words(oracle.GaussianThresholds(oracle.gaussian_sums(sigma2), 2), p)
    assert got == want and want


@pytest.mark.parametrize("sigma2", GAUSSIAN_BLOCKED, ids=str)
def test_gaussian_blocked_thresholds_agree(sigma2):
    """The first step's theta (2 NB block words, then T_x past L NB) and four blocks'
    residual words rho_{b,u}; at p = 128, the first 40 of each."""
    blocks = _methods.gaussian_blocks(sigma2)
    want = _inversion.gaussian_floors(sigma2, 64, blocks=blocks).words
    assert _oracle_words(oracle.gaussian_stage(sigma2), 64) == want
    want = _inversion.gaussian_floors(sigma2, 128, blocks=blocks).words[:40]
    assert _oracle_words(oracle.gaussian_stage(sigma2), 128, 40) == want
    k, nb = blocks
    for b in sorted({0, 1, nb // 2, nb - 1}):
        want = _inversion.gaussian_residual_floors(sigma2, b, 64).words
        family = oracle.GaussianResidual(sigma2, k, b)
        assert _oracle_words(family, 64, family.count) == want, b
    want = _inversion.gaussian_residual_floors(sigma2, nb - 1, 128).words
    assert _oracle_words(oracle.GaussianResidual(sigma2, k, nb - 1), 128, len(want)) == want


@pytest.mark.parametrize("scale", LAPLACE, ids=str)
@pytest.mark.long
def test_laplace_thresholds_agree(scale):
    """T_x = 2 p**x / (1 + p), every word down to the first 0, at p = 64 and (the first 50)
    at 128."""
    want = _production_words(_inversion.LaplaceFloors(scale, 64))
    assert _oracle_words(oracle.LaplaceThresholds(scale), 64) == want  # none for 1/64
    want = _production_words(_inversion.LaplaceFloors(scale, 128), 50)
    assert _oracle_words(oracle.LaplaceThresholds(scale), 128, 50) == want and want[0] > 0


@pytest.mark.parametrize("scale", LAPLACE_BLOCKED, ids=str)
def test_laplace_blocked_thresholds_agree(scale):
    """The first step's theta_{2b+1} = T_{1+Lb}, theta_{2b+2} = T_{1+Lb+c} and the residual,
    at p = 64 (and the first 40 stage words and the residual at 128)."""
    blocks = _methods.laplace_blocks(scale)
    want = _production_words(_inversion.LaplaceFloors(scale, 64, blocks=blocks))
    assert _oracle_words(oracle.laplace_stage(scale), 64) == want
    want = _production_words(_inversion.LaplaceFloors(scale, 128, blocks=blocks), 40)
    assert _oracle_words(oracle.laplace_stage(scale), 128, 40) == want
    family = oracle.LaplaceResidual(scale, blocks)
    for p in (64, 128):
        assert _oracle_words(family, p, family.count) == _inversion.residual_floors(scale, p).words


@pytest.mark.parametrize(
    "gaussian, param",
    [(True, Fraction((1 << 24) + 1)), (True, Fraction(10**15, 7)), (True, Fraction(1 << 100))]
    + [(False, Fraction((1 << 20) + 1)), (False, Fraction(10**10, 3)), (False, Fraction(1 << 40))],
    ids=str,
)
def test_envelope_block_index_thresholds_agree(gaussian, param):
    """Enveloped inversion's P[B >= b]: the one-sided S'_b / (1 + S'_1), or exp(-b / t')."""
    k, family = oracle.envelope_stage(gaussian, param)
    env = _inversion.envelope(gaussian, param)
    assert k == env.k
    stage = env.stage_floors(64)
    want = stage.words if gaussian else _production_words(stage)
    assert _oracle_words(family, 64) == want and len(want) > 100
    stage = env.stage_floors(128)
    want = stage.words[:40] if gaussian else _production_words(stage, 40)
    assert _oracle_words(family, 128, 40) == want


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 1 << 40), st.integers(1, 1 << 20))
def test_gaussian_words_agree_on_any_small_sigma2(n, d):
    """Hypothesis: any sigma2 = n / d in [1/64, 64] (the first 40 words at p = 64)."""
    sigma2 = Fraction(n, d)
    if not Fraction(1, 64) <= sigma2 <= 64:
        sigma2 = Fraction(1, 64) + Fraction(n % (64 * d), d)
    want = _inversion.gaussian_floors(sigma2, 64).words[:40]
    got = _oracle_words(oracle.GaussianThresholds(oracle.gaussian_sums(sigma2), 2), 64, len(want))
    assert got == want


def test_a_wrong_threshold_is_seen(monkeypatch):
    """The comparison has power: the one-sided thresholds (weight 1) are not |X|'s (weight 2),
    and a term off by one part in 2**60 changes some word."""
    sigma2 = Fraction(7, 3)
    want = _inversion.gaussian_floors(sigma2, 64).words
    sums = oracle.gaussian_sums(sigma2)
    assert _oracle_words(oracle.GaussianThresholds(sums, 1), 64, len(want)) != want

    real = oracle.gaussian_weight

    def nudged_weight(sigma2, k, ar):
        return real(sigma2, k, ar) * (1 + Fraction(1, 2**60))

    monkeypatch.setattr(oracle, "gaussian_weight", nudged_weight)
    nudged = oracle.GaussianThresholds(oracle.GaussianSums(sigma2), 2)
    assert _oracle_words(nudged, 64, len(want)) != want


def test_the_rule_counts_thresholds_above_r():
    """The rule on a made-up family theta_x = 1 / (3 * 2**(x - 1)) (never dyadic): it reads R
    until R's interval [a, a + 1) / 2**j holds no threshold, and counts those above."""

    class Thirds(oracle._Family):
        def bounds(self, x, ar, depth):
            return ar.q(Fraction(1, 3 << (x - 1)))

    # 0.01011 = [11/32, 12/32): above 1/3 (0.0101... holds it up to j = 4): none above
    # 0.010100 = [20/64, 21/64): between 1/6 and 1/3: one above
    # 0.00100 = [4/32, 5/32): between 1/12 and 1/6 (0.001 and 0.0010 hold 1/6): two above
    for prefix, count in (([0, 1, 0, 1, 1], 0), ([0, 1, 0, 1, 0, 0], 1), ([0, 0, 1, 0, 0], 2)):
        bits = iter([*prefix, 1, 0])
        assert oracle.rule(lambda bits=bits: next(bits), Thirds()) == count, prefix
        assert list(bits) == [1, 0], prefix  # exactly the prefix was read


# --------------------------------------------------------------------------------------------
# The contract's geometry (dgauss._methods), against its inequalities
# --------------------------------------------------------------------------------------------


def _floor_4_sigma(sigma2: Fraction) -> int:
    """floor(4 sigma): the largest m with m**2 <= 16 sigma2, found by bisection on rationals."""
    low, high = 0, 1
    while high * high <= 16 * sigma2:
        high *= 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if mid * mid <= 16 * sigma2 else (low, mid)
    return low


@settings(max_examples=200, deadline=None)
@given(st.integers(1 << 16, 1 << 60), st.integers(1, 1 << 30))
def test_gaussian_blocks_obey_the_contract(n, d):
    """L = 2**k the largest power of two with 1024 L**2 <= sigma2; NB = floor(floor(4 sigma)/L)."""
    sigma2 = Fraction(n, d)
    blocks = _methods.gaussian_blocks(sigma2)
    if sigma2 < _methods.GAUSSIAN_BLOCKED_MIN:
        assert blocks is None
        return
    k, nb = blocks
    assert 1024 * 4**k <= sigma2 < 1024 * 4 ** (k + 1)
    assert nb == _floor_4_sigma(sigma2) // 2**k


@settings(max_examples=200, deadline=None)
@given(st.integers(1 << 8, 1 << 45), st.integers(1, 1 << 25))
def test_laplace_blocks_obey_the_contract(n, d):
    """L = 2**k <= 2**14 the largest power of two with 32 L <= t or L (L - 1) <= t;
    c = L - ceil(L (L - 1)/t), 1 <= c < L; and 1 - p**c <= L p**(L - 1) (1 - p) (the residual's
    masses are not negative), in MPFR rounded against the claim."""
    scale = Fraction(n, d)
    blocks = _methods.laplace_blocks(scale)
    if scale < _methods.LAPLACE_BLOCKED_MIN:
        assert blocks is None
        return
    k, c = blocks

    def fits(big_l: int) -> bool:
        return 32 * big_l <= scale or big_l * (big_l - 1) <= scale

    assert k <= _methods.LAPLACE_BLOCK_MAX_K and fits(2**k)
    assert k == _methods.LAPLACE_BLOCK_MAX_K or not fits(2 ** (k + 1))
    big_l = 2**k
    assert c == big_l - math.ceil(Fraction(big_l * (big_l - 1)) / scale) and 1 <= c < big_l
    ar = Arith(200)
    left = 1 - oracle.exp_neg(Fraction(c) / scale, ar)
    right = big_l * oracle.exp_neg((big_l - 1) / scale, ar) * (1 - oracle.exp_neg(1 / scale, ar))
    assert left.hi <= right.lo


@settings(max_examples=200, deadline=None)
@given(st.booleans(), st.integers(1, 1 << 110), st.integers(1, 1 << 20))
def test_envelope_blocks_obey_the_contract(gaussian, n, d):
    """inner = sigma2 / L**2 in [2**14, 2**16), or t / L in [2**6, 2**7); out of enveloped
    inversion's range, a ValueError."""
    param = Fraction(n, d)
    low = _methods.GAUSSIAN_BLOCKED_MAX if gaussian else _methods.LAPLACE_BLOCKED_MAX
    high = _methods.GAUSSIAN_INVERSION_MAX if gaussian else _methods.LAPLACE_INVERSION_MAX
    if not low < param <= high:
        with pytest.raises(ValueError, match="enveloped"):
            _methods.envelope_blocks(gaussian, param)
        return
    k, inner = _methods.envelope_blocks(gaussian, param)
    if gaussian:
        assert inner * 4**k == param and 2**14 <= inner < 2**16
    else:
        assert inner * 2**k == param and 2**6 <= inner < 2**7


# --------------------------------------------------------------------------------------------
# Every enclosure holds the truth (mpmath at 700 bits), with room between its ends
# --------------------------------------------------------------------------------------------

mpmath = pytest.importorskip("mpmath")


def _mp_exp_neg(y: Fraction):
    return mpmath.exp(-mpmath.mpf(y.numerator) / y.denominator)


def _mp_tails(sigma2: Fraction, weight_past: int = 0) -> list:
    """S_x = sum_{k >= x} w_k for x = 0, 1, ... at mpmath's precision (the terms past the last
    kept are below 2**-760, far under the enclosures' widths)."""
    terms, k = [mpmath.mpf(1)], 1
    while True:
        terms.append(_mp_exp_neg(Fraction(k * k) / (2 * sigma2)))
        if terms[-1] < mpmath.mpf(2) ** -760 and k > weight_past:
            break
        k += 1
    tails = [mpmath.mpf(0)] * (len(terms) + 1)
    for i in range(len(terms) - 1, -1, -1):
        tails[i] = tails[i + 1] + terms[i]
    return tails


def _holds(family, x: int, truth, prec: int = 128, depth: int = 128) -> None:
    bounds = family.enclose(x, prec, depth)
    lo, hi = mpmath.mpf(bounds.lo), mpmath.mpf(bounds.hi)
    assert lo < hi, (x, bounds)  # an enclosure, not a point
    assert lo <= truth <= hi, (x, bounds, truth)


@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(7, 3), Fraction(1000, 7)], ids=str)
@pytest.mark.parametrize("depth", [128, 256])
def test_gaussian_enclosures_hold(sigma2, depth):
    """T_x (weight 2 and the one-sided weight 1) at every x up to well past the cut, where the
    tail bound alone holds the truth."""
    with mpmath.workprec(700):
        tails = _mp_tails(sigma2)
        sums = oracle.GaussianSums(sigma2)
        for weight in (2, 1):
            family = oracle.GaussianThresholds(sums, weight)
            z = 1 + weight * tails[1]
            for x in range(1, len(tails) + 3):
                truth = weight * (tails[x] if x < len(tails) else 0) / z
                _holds(family, x, truth, depth=depth)


@pytest.mark.parametrize("sigma2", [Fraction(1 << 16), Fraction(196609, 3)], ids=str)
def test_gaussian_blocked_enclosures_hold(sigma2):
    """The first step's theta (both kinds, and past L NB) and a block's residual rho."""
    k, nb = _methods.gaussian_blocks(sigma2)
    big_l = 1 << k
    with mpmath.workprec(700):
        tails = _mp_tails(sigma2)
        z = 1 + 2 * tails[1]

        def t(x: int):
            return 2 * tails[x] / z

        stage = oracle.gaussian_stage(sigma2)
        for x in [1, 2, 3, 4, 2 * nb - 1, 2 * nb, 2 * nb + 1, 2 * nb + 2, 2 * nb + 500]:
            b, second = divmod(x - 1, 2)
            if b >= nb:
                truth = t(big_l * nb + x - 2 * nb)
            else:
                w = tails[big_l * (b + 1)] - tails[big_l * (b + 1) + 1]
                truth = t(1 + big_l * b) - (big_l * 2 * w / z if second else 0)
            _holds(stage, x, truth)
        for b in (0, nb - 1):
            y0, last = 1 + big_l * b, big_l * (b + 1)

            def w(y: int):
                return tails[y] - tails[y + 1]

            def n(u: int, y0=y0, last=last):
                return sum(w(y0 + v) - w(last) for v in range(u, big_l - 1))

            family = oracle.GaussianResidual(sigma2, k, b)
            for u in (1, 2, big_l // 2, big_l - 2):
                _holds(family, u, n(u) / n(0))


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(5), Fraction(1000), Fraction(10**5, 3)])
def test_laplace_enclosures_hold(scale):
    """T_x (or the blocked stage's theta) and, blocked, the residual's rho_u = F(u) / F(0)."""
    blocks = _methods.laplace_blocks(scale)
    with mpmath.workprec(700):
        p = _mp_exp_neg(1 / scale)
        stage = oracle.laplace_stage(scale)
        for x in (1, 2, 3, 17, int(30 * scale) + 5):
            y = x
            if blocks is not None:
                b, second = divmod(x - 1, 2)
                y = 1 + (b << blocks[0]) + (blocks[1] if second else 0)
            _holds(stage, x, 2 * p**y / (1 + p))
        if blocks is not None:
            k, c = blocks
            big_l = 1 << k
            family = oracle.LaplaceResidual(scale, blocks)

            def f(u: int):
                return big_l * (p**u - p**big_l) - (big_l - u) * (1 - p**c)

            for u in (1, 2, big_l // 2, big_l - 1):
                _holds(family, u, f(u) / f(0))
        geometric = oracle.Geometric(scale)
        for x in (1, 7, 100):
            _holds(geometric, x, p**x)


@pytest.mark.long
def test_the_oracle_draws_the_same_from_threads_at_once():
    """Threads drawing at once, at more parameters than the oracle remembers (its caches are
    evicted and rebuilt under them), draw what one thread draws alone."""
    params = [(True, Fraction(70000 + 997 * i, 3)) for i in range(6)]
    params += [(False, Fraction(300 + 41 * i, 7)) for i in range(6)]
    params += [(True, Fraction(1 << 30)), (False, Fraction(1 << 30))]

    def draw(case):
        (gaussian, param), seed = case
        sample = reference.sample_gaussian if gaussian else reference.sample_laplace
        return sample(param, 40, rng=np.random.PCG64(seed), method="inversion").tolist()

    cases = [(param, seed) for seed in range(3) for param in params]
    alone = [draw(case) for case in cases]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(draw, cases)) == alone
