"""Calibration for an ℓ2-ball sensitivity: no cliff where the list of worst vectors ends, every
answer certified by a check written here, clear errors for sensitivities that are not ints.

The independent truth is ``log_delta`` of tests/test_l2_ball_review.py (a log-domain
convolution in NumPy, sharing no code with dgauss) over every concatenation of k maximal
vectors of the ball (enumerated there by brute force), and, where the noise is too wide to
convolve, Theorem 7 summed in mpmath here.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import accounting as A
from dgauss.accounting import L2Ball
from dgauss.accounting._closed_forms import _grid_step
from test_l2_ball_review import SLACK, k_tuples, ln, log_delta

F = Fraction


#: The reference's pmfs are cut at e^−CUT: far below every δ checked here (≥ 10^−14).
CUT = 100.0


def certified(s, eps, delta, vectors) -> bool:
    """Whether every vector's true δ at σ² = s is at most δ (the reference's slack aside)."""
    return all(log_delta(s, eps, v, cut=CUT) <= ln(delta) + SLACK for v in vectors)


def _sample(radius: int, k: int, rng: random.Random, more: int = 1) -> list[tuple[int, ...]]:
    """The extremes (all of the largest, all ones, and (Δ,) with ones) and ``more`` random
    concatenations of k maximal vectors."""
    one = L2Ball(radius).blocks()
    assert one is not None
    picks = [[one[0]] * k, [one[-1]] * k, [one[0]] + [one[-1]] * (k - 1)]
    picks += [[rng.choice(one) for _ in range(k)] for _ in range(more)]
    return [tuple(sorted((x for v in p for x in v), reverse=True)) for p in picks]


# ==========================================================================
# No cliff where the list of concatenations ends
# ==========================================================================
@pytest.mark.parametrize("radius, k", [(2, 31), (3, 3)])
@pytest.mark.parametrize("eps, delta", [(1, "1e-6"), (8, "1e-10")])
@pytest.mark.parametrize("safe", [False, True])
@pytest.mark.long
def test_one_more_query_costs_a_few_percent_across_the_end_of_the_list(radius, k, eps, delta, safe):
    assert L2Ball(radius).neighbours(k) is not None  # listed
    assert L2Ball(radius).neighbours(k + 1) is None  # past the list
    before = A.calibrate_gaussian(eps, delta, radius, k, round_up_safe=safe)
    after = A.calibrate_gaussian(eps, delta, radius, k + 1, round_up_safe=safe)
    # the variance of k queries grows about like k: one more costs about 1/k more
    assert 1 < after / before < F(k + 1, k) * F(105, 100)
    assert after / before < F(108, 100) or k < 10
    # never above the zCDP route's answer (the fallback before)
    assert after <= A.calibrate_gaussian(eps, delta, radius, k + 1, method="zcdp")


def _past_the_list(radius: int, k: int, vectors) -> None:
    for safe in (False, True):
        s = A.calibrate_gaussian(16, "1e-10", radius, k, round_up_safe=safe)
        assert certified(s, 16, "1e-10", vectors)
        if not safe:  # and tight: one grid step below, the worst vector fails (or nearly)
            below = _grid_step(s, up=False)
            assert max(log_delta(below, 16, v, cut=CUT) for v in vectors) > ln("1e-10") - 1e-3


@pytest.mark.parametrize("radius, k", [(2, 32), (3, 4)])
@pytest.mark.long
def test_past_the_list_the_extremes_and_a_sample_are_certified(radius, k):
    # small σ² (ε = 16): concatenations convolved exactly, in the test
    assert L2Ball(radius).neighbours(k) is None
    _past_the_list(radius, k, _sample(radius, k, random.Random(radius * 100 + k)))


@pytest.mark.slow
@pytest.mark.parametrize("radius, k", [(2, 32), (2, 40), (3, 4)])
def test_past_the_list_every_concatenation_is_certified(radius, k):
    vectors = k_tuples(radius, k)
    assert len(vectors) > 32
    _past_the_list(radius, k, vectors)


def _theorem7_log_delta(s: Fraction, eps, shift: int) -> float:
    """ln δ of one coordinate N_Z(0, s) shifted by ``shift``, summed straight in mpmath."""
    with mpmath.workdps(40):
        ms = mpmath.mpf(s.numerator) / s.denominator
        norm = mpmath.sqrt(2 * mpmath.pi * ms)  # Poisson: Θ = √(2πs)(1 + 2Σe^{−2π²su²})
        norm *= 1 + 2 * mpmath.nsum(lambda u: mpmath.exp(-2 * mpmath.pi**2 * ms * u * u), [1, 20])
        first = math.floor(float(F(eps) * s / shift - F(shift, 2))) + 1
        reach = int(12 * math.sqrt(float(s))) + 50  # the terms fall like e^{−(y − first)²/2s}
        total = mpmath.fsum(
            mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * ms))
            * -mpmath.expm1(eps - mpmath.mpf(shift * (shift + 2 * y)) / (2 * ms))
            for y in range(max(first, -reach), first + reach)
        )
        return float(mpmath.log(total / norm))


@pytest.mark.long
def test_wide_noise_past_the_list_is_certified_by_theorem_7():
    # σ² ≈ 2285 at k = 32: too wide to convolve 128 coordinates here.  By Poisson summation a
    # concatenation μ with gcd g is Theorem 7 at (σ²·S, g·S), S = ‖μ/g‖², up to a relative
    # E ≤ (number of lattice points) · e^{−2π²σ²/S} < e^{−300}: checked at both gcds.
    k, radius = 32, 2
    s = A.calibrate_gaussian(1, "1e-6", radius, k)
    for g in (1, 2):
        S = k * radius * radius // (g * g)
        assert _theorem7_log_delta(s * S, 1, g * S) <= ln("1e-6") + 1e-9
    below = _grid_step(s, up=False)
    assert _theorem7_log_delta(below * 4 * k, 1, 4 * k) > ln("1e-6") - 1e-3


# ==========================================================================
# Random targets, both answers, checked by the reference
# ==========================================================================
def _random_target(radius, k, eps, exponent, safe, seed) -> None:
    k = k if radius == 2 else min(k, 4)  # keep the reference's convolutions short
    delta = F(1, 10**exponent)
    s = A.calibrate_gaussian(eps, delta, radius, k, round_up_safe=safe)
    vectors = _sample(radius, k, random.Random(seed))
    assert certified(s, eps, delta, vectors)
    if safe:  # every grid σ² above gives the target too: sampled points up to the zCDP value
        top = A.calibrate_gaussian(eps, delta, radius, k, method="zcdp")
        rng = random.Random(seed)
        for _ in range(2):
            g = s
            for _ in range(rng.randrange(1, 40)):
                g = _grid_step(g, up=True)
            if g <= top:
                assert certified(g, eps, delta, vectors[:3])


TARGETS = dict(
    radius=st.integers(2, 5),
    k=st.integers(1, 40),
    eps=st.sampled_from([8, 12, 16]),
    exponent=st.integers(3, 14),
    safe=st.booleans(),
    seed=st.integers(0, 2**16),
)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TARGETS)
@pytest.mark.long
def test_random_targets_are_certified(radius, k, eps, exponent, safe, seed):
    _random_target(radius, k, eps, exponent, safe, seed)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TARGETS)
def test_random_targets_are_certified_more(radius, k, eps, exponent, safe, seed):
    _random_target(radius, k, eps, exponent, safe, seed)


# ==========================================================================
# Sensitivities that are not ints
# ==========================================================================
@pytest.mark.parametrize("bad", [bytearray(b"\x02"), b"\x02", memoryview(b"\x02\x01")])
def test_bytes_like_sensitivity_is_a_type_error_naming_it(bad):
    calls = [
        lambda: A.gaussian_delta(10, 1, bad),
        lambda: A.gaussian_epsilon(10, "1e-6", bad),
        lambda: A.gaussian_rho(10, bad),
        lambda: A.calibrate_gaussian(1, "1e-6", bad),
        lambda: A.calibrate_laplace(1, "1e-6", bad),
        lambda: A.laplace_delta(10, 1, bad),
        lambda: A.laplace_epsilon(10, bad),
        lambda: A.Gaussian(10, bad),
        lambda: A.Laplace(10, bad),
        lambda: dgauss.GaussianMechanism(sigma2=10, sensitivity=bad),
        lambda: dgauss.LaplaceMechanism(scale=10, sensitivity=bad),
        lambda: dgauss.Accountant(rho=1).add_gaussian_noise(
            np.array([1]), rho=0.1, sensitivity=bad
        ),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="sensitivity"):
            call()


def test_a_string_sensitivity_is_the_number_it_spells():
    assert A.calibrate_gaussian(1, "1e-6", "2") == A.calibrate_gaussian(1, "1e-6", 2)


def test_a_huge_sensitivity_is_calibrated_or_refused_clearly():
    big = 10**39  # was a ZeroDivisionError
    s = A.calibrate_gaussian(1, "1e-6", big)
    assert s == A.calibrate_gaussian(1, "1e-6", 1, method="zcdp") * big * big
    assert A.gaussian_delta(s, 1, big) <= 1e-6
    assert A.calibrate_gaussian(1, "1e-6", big, round_up_safe=True) == s
    with pytest.raises(ValueError, match=r"sensitivity is too large .*MAX_BITS"):
        A.calibrate_gaussian(1, "1e-6", 10**2500)


def test_the_grid_reaches_past_python_s_str_limit():
    from dgauss.accounting._closed_forms import _decimal_digits, _grid_up

    for digits in (1, 2, 3, 51, 4000, 4001, 4500):
        assert _decimal_digits(10 ** (digits - 1)) == digits
        assert _decimal_digits(10**digits - 1) == digits
    x = F(10**4500 + 1)  # 4501 digits: rounds up to 1001·10^4497
    assert _grid_up(x) == 1001 * F(10) ** 4497
