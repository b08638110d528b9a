"""A program that is one ℓ2-ball release, past the list of its worst programs: ``compose`` and
the ``Accountant`` read the bound ``gaussian_delta`` uses over every concatenation (the
"ℓ2 ball" route), so one more query costs a few percent, not the jump to the zCDP route.

Every returned δ is checked against the truth computed here: ``log_delta`` of
tests/test_l2_ball_review.py (a log-domain convolution in NumPy) over the extremes and a sample
of the concatenations (tests/test_calibration_l2.py's ``_sample``), the exact rational
convolution of tests/_compose_reference.py on a short one, and, where the noise is too wide to
convolve, Theorem 7 summed in mpmath (tests/test_calibration_l2.py), which is the δ of a
concatenation with gcd g and S = ‖μ/g‖² to within a relative e^−300 at these σ².
"""

from __future__ import annotations

import functools
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest

from _compose_reference import composed_delta
from dgauss import Accountant
from dgauss import accounting as A
from dgauss.accounting import Gaussian, L2Ball, Laplace, compose
from dgauss.accounting._closed_forms import _cdp_log_delta
from test_calibration_l2 import _sample, _theorem7_log_delta, certified
from test_l2_ball_review import SLACK, ln, log_delta

F = Fraction

#: (Δ, k): k is the last query count whose worst programs are listed (≤ 32 of them)
ENDS = [(2, 31), (3, 3)]

#: The reference's pmfs are cut at e^−CUT: far below every δ checked here (≥ 10^−14).
CUT = 100.0


def test_the_ends_are_where_the_list_stops():
    for radius, k in ENDS:
        assert L2Ball(radius).neighbours(k) is not None
        assert L2Ball(radius).neighbours(k + 1) is None


# ==========================================================================
# No cliff: delta, epsilon and the Accountant across the end of the list
# ==========================================================================
@functools.lru_cache(maxsize=64)
def _wide_truth(s: Fraction, radius: int, k: int, eps) -> float:
    """ln δ of the worst gcd class of k-fold concatenations at a wide σ² (Theorem 7)."""
    return max(
        _theorem7_log_delta(s * (k * radius * radius // (g * g)), eps, k * radius * radius // g)
        for g in range(1, radius + 1)
        if radius % g == 0
    )


@pytest.mark.parametrize("radius, k", ENDS)
def test_delta_past_the_list_is_the_truth_not_the_zcdp_route(radius, k):
    s = A.calibrate_gaussian(1, "1e-6", radius, k + 1)  # σ² = 2285 (Δ = 2), 642.6 (Δ = 3)
    for kk in (k, k + 1):
        program = compose(Gaussian(s, radius, k=kk))
        assert program.route(1) == "ℓ2 ball"
        # never above the closed form's answer for the same ball
        assert program.delta(1) <= A.gaussian_delta(s, 1, radius, kk)
    # past the list: an upper bound within 1% of the truth (the zCDP route read 4.4 times it
    # at Δ = 2, k = 32)
    got = compose(Gaussian(s, radius, k=k + 1)).delta(1, log=True)
    truth = _wide_truth(s, radius, k + 1, 1)
    assert truth - 1e-9 <= got <= truth + 0.01


@pytest.mark.parametrize("radius, k", ENDS)
def test_epsilon_grows_like_the_root_of_k_across_the_end(radius, k):
    s = A.calibrate_gaussian(1, "1e-6", radius, k + 1)
    before = compose(Gaussian(s, radius, k=k)).epsilon("1e-6")
    after = compose(Gaussian(s, radius, k=k + 1)).epsilon("1e-6")
    # ε grows about like √ρ ∝ √k: 1.017 at Δ = 2 (1.096 on the zCDP route), 1.167 at Δ = 3
    assert 1 < after / before < math.sqrt((k + 1) / k) * 1.02
    for kk, e in ((k, before), (k + 1, after)):
        assert e <= A.gaussian_epsilon(s, "1e-6", radius, kk) * (1 + 1e-12)
    # past the list, certified: the truth at the returned ε is within δ; and tight: 0.1%
    # below it, the single shift's class alone is not
    assert _wide_truth(s, radius, k + 1, after) <= ln("1e-6") + 1e-9
    assert _theorem7_log_delta(s * (k + 1), after / 1.001, (k + 1) * radius) > ln("1e-6")


@pytest.mark.parametrize("radius, k", ENDS)
def test_accountant_calibration_has_no_cliff(radius, k):
    before = Accountant(epsilon=1, delta="1e-6").calibrate_gaussian(radius, k)
    after = Accountant(epsilon=1, delta="1e-6").calibrate_gaussian(radius, k + 1)
    # σ² grows about like k: +3.2% at Δ = 2 (+18.7% on the zCDP route), 4/3 at Δ = 3
    assert 1 < after / before < F(k + 1, k) * F(102, 100)
    assert after == A.calibrate_gaussian(1, "1e-6", radius, k + 1)
    # certified by the truth; a grid step below (4 significant digits) it fails
    assert _wide_truth(after, radius, k + 1, 1) <= ln("1e-6") + 1e-9
    below = after - F(1, 10) if radius == 3 else after - 1
    assert _wide_truth(below, radius, k + 1, 1) > ln("1e-6") - 1e-3
    assert after < A.calibrate_gaussian(1, "1e-6", radius, k + 1, method="zcdp")


# ==========================================================================
# Narrow noise past the list: every answer above the truth of the concatenations
# ==========================================================================
@pytest.mark.parametrize("radius, k", [(2, 32), (3, 4)])
def test_narrow_noise_past_the_list_is_certified(radius, k):
    s = A.calibrate_gaussian(16, "1e-10", radius, k)  # 26.3 (Δ = 2), 7.415 (Δ = 3)
    program = compose(Gaussian(s, radius, k=k))
    assert program.route(16) == "ℓ2 ball"
    vectors = _sample(radius, k, random.Random(radius * 1000 + k), more=2)
    truth = max(log_delta(s, 16, v, cut=CUT) for v in vectors)
    got = program.delta(16, log=True)
    assert truth - SLACK <= got
    assert got <= math.log(A.gaussian_delta(s, 16, radius, k)) + 1e-12
    eps = program.epsilon("1e-10")
    assert program.delta(eps) <= 1e-10
    assert certified(s, eps, "1e-10", vectors)


def test_the_exact_reference_is_below_the_composed_delta():
    # (3,)·4 at σ² = 7.415: 4 coordinates, convolved with exact rational losses
    s = A.calibrate_gaussian(16, "1e-10", 3, 4)
    low, _ = composed_delta([("gaussian", s, (3,), 4)], 16)
    assert float(low) > 1e-12  # a δ worth comparing
    assert compose(Gaussian(s, 3, k=4)).delta(16) >= float(low)


def test_split_releases_of_one_ball_are_one_release():
    s = A.calibrate_gaussian(1, "1e-6", 2, 32)
    whole = compose(Gaussian(s, 2, k=32))
    split = compose(Gaussian(s, 2, k=20), Gaussian(s, L2Ball(2), k=12))
    assert split.delta(1) == whole.delta(1) and split.route(1) == "ℓ2 ball"
    assert split.epsilon("1e-6") == whole.epsilon("1e-6")


def test_a_ball_with_a_coordinates_limit_is_bounded_by_the_whole_ball():
    # L2Ball(2, coordinates=3): (2,) and (1, 1, 1), of different norms (no uniform bound of
    # its own); past the list the whole ball's bound holds, as every vector is in it
    limited = L2Ball(2, coordinates=3)
    assert limited.neighbours(32) is None
    s = A.calibrate_gaussian(16, "1e-10", 2, 32)
    program = compose(Gaussian(s, limited, k=32))
    got = program.delta(16, log=True)
    assert got <= compose(Gaussian(s, 2, k=32)).delta(16, log=True)
    assert got < math.log(A.gaussian_delta(s, 16, limited, 32))  # its zCDP route
    picks = [[(2,)] * 32, [(1, 1, 1)] * 32, [(2,)] * 16 + [(1, 1, 1)] * 16]
    vectors = [tuple(x for v in p for x in v) for p in picks]
    assert got >= max(log_delta(s, 16, v, cut=CUT) for v in vectors) - SLACK
    assert certified(s, program.epsilon("1e-10"), "1e-10", vectors)


def test_a_ball_past_the_list_with_a_laplace_release_composes_basically():
    # each release at its own bound (the Laplace at its pure ε = 0.02, the ball's uniform
    # bound at the rest), not the zCDP route of the whole
    s = A.calibrate_gaussian(16, "1e-10", 2, 32)
    program = compose(Gaussian(s, 2, k=32), Laplace(50))
    assert program.route(16) == "basic composition"
    got = program.delta(16, log=True)
    assert got <= math.log(A.gaussian_delta(s, F(16) - F(1, 50), 2, 32)) + 1e-12
    assert got < float(_cdp_log_delta(program.rho, F(16))) - 1  # the zCDP route, e times it
    vectors = _sample(2, 32, random.Random(32), more=1)
    truth = max(log_delta(s, 16, v, laplace=[(50, 1)], cut=CUT) for v in vectors)
    assert truth - SLACK <= got <= truth + 0.1  # within 10% (6% here)
    eps = program.epsilon("1e-10")
    assert program.delta(eps) <= 1e-10
    assert all(log_delta(s, eps, v, laplace=[(50, 1)], cut=CUT) <= ln("1e-10") for v in vectors)


def test_the_route_names_are_documented():
    s = A.calibrate_gaussian(1, "1e-6", 2, 32)
    names = {compose(Gaussian(s, 2, k=32)).route(1), compose(Gaussian(s, 2, k=1)).route(1)}
    doc = compose(Gaussian(1)).route.__doc__ or ""
    page = (Path(__file__).parents[1] / "docs" / "accounting.md").read_text(encoding="utf-8")
    names.add(compose(Gaussian(s, 2, k=32), Laplace(50)).route(16))
    for name in names | {"zCDP", "Theorem 15"}:
        assert f'"{name}"' in doc
    assert '"ℓ2 ball"' in page
