"""A hostile review of the ℓ2-ball accounting: adversarial cases against an independent truth.

The claim under test: for a Gaussian ``sensitivity=Δ`` (or ``L2Ball(Δ, coordinates=c)``), every
δ that dgauss returns bounds the true δ of *every* integer vector v with ‖v‖₂ ≤ Δ (at most c
nonzero entries), each of k queries moving its own vector; every ε certifies every such vector;
every calibrated σ² meets its target for every such vector.

The truth here is written from scratch in this file and shares no code with dgauss:

* the ball is enumerated by brute force (every multiset of positive ints whose squares sum to at
  most Δ²), and its maximal elements are found by pairwise comparison;
* the δ of a vector μ is E[(1 − e^{ε − L})₊] with L = (‖μ‖² + 2W)/(2σ²) and W = Σ μ_j Y_j, whose
  pmf is convolved in the *log domain* in numpy (every term kept as a logarithm, so 10^−800 is as
  precise as 10^−3: relative error ≈ 1e−13, checked below against the exact rational reference
  of tests/_dp_reference.py and against Theorem 7 summed in mpmath);
* a discrete Laplace coordinate contributes its privacy-loss atoms (the pmf of
  s = min(max(y, 0), a) under P), convolved with the Gaussian's loss.

A vector's δ is compared in logarithms: dgauss must never be below the truth by more than the
reference's own error (1e−10 in ln δ), and for the plain closed forms it must also find the worst
vector (within 1e−6 in ln δ).  The two defects this review found (separate identical ball
releases fell to zCDP; the CLI crashed describing a ball release) are fixed; their tests stay.
"""

from __future__ import annotations

import copy
import itertools
import math
import pickle
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import _dp_reference as R
import dgauss
from dgauss import accounting as A
from dgauss.accounting import Gaussian, L2Ball, Laplace, compose

F = Fraction
#: the reference's own error in ln δ (float64 log-domain sums over ≤ 10^6 terms)
SLACK = 1e-10


# ==========================================================================
# The independent truth
# ==========================================================================
def ball(radius: int, coordinates: int | None = None) -> list[tuple[int, ...]]:
    """Every nonzero multiset of positive ints (largest first) with squares summing to at most
    radius² and at most ``coordinates`` entries."""
    limit = radius * radius if coordinates is None else coordinates
    out: list[tuple[int, ...]] = []

    def grow(prefix: tuple[int, ...], room: int, top: int) -> None:
        if prefix:
            out.append(prefix)
        if len(prefix) == limit:
            return
        for a in range(1, top + 1):
            if a * a <= room:
                grow(prefix + (a,), room - a * a, a)

    grow((), radius * radius, radius)
    return out


def below(v: tuple[int, ...], w: tuple[int, ...]) -> bool:
    """v is w with entries deleted or lowered (both sorted largest first)."""
    return len(v) <= len(w) and all(a <= b for a, b in zip(v, w, strict=False))


def maximal(radius: int, coordinates: int | None = None) -> list[tuple[int, ...]]:
    """The elements of the ball that no other element lies above: pairwise, by brute force, for
    balls of up to 1000 elements; beyond, those that no single step (one more entry 1, or one
    entry up by 1) keeps in the ball (every w above v is reached from v by such steps)."""
    vs = ball(radius, coordinates)
    if len(vs) <= 1000:
        return [v for v in vs if not any(w != v and below(v, w) for w in vs)]
    inside = set(vs)

    def steps(v):
        yield tuple(sorted(v + (1,), reverse=True))
        for i in range(len(v)):
            yield tuple(sorted(v[:i] + (v[i] + 1,) + v[i + 1 :], reverse=True))

    return [v for v in vs if not any(w in inside for w in steps(v))]


def _logsumexp(x: np.ndarray) -> float:
    top = float(np.max(x)) if len(x) else -math.inf
    if not math.isfinite(top):
        return -math.inf
    return top + math.log(float(np.sum(np.exp(x - top))))


def _log_pmf(s: Fraction, cut: float) -> tuple[np.ndarray, int]:
    """ln P[Y = y] of N_Z(0, s) for |y| ≤ R (R where the pmf falls below e^−cut), and −R."""
    sf = float(s)
    reach = math.isqrt(int(2 * sf * cut)) + 2
    y = np.arange(-reach, reach + 1, dtype=float)
    wide = np.arange(-reach - 400, reach + 401, dtype=float)
    return -(y * y) / (2 * sf) - _logsumexp(-(wide * wide) / (2 * sf)), -reach


def _log_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """c[i] = ln Σ_j e^{a[j] + b[i − j]}, every term in the log domain."""
    terms = (a[:, None] + b[None, :]).ravel()
    index = (np.arange(len(a))[:, None] + np.arange(len(b))[None, :]).ravel()
    top = np.full(len(a) + len(b) - 1, -np.inf)
    np.maximum.at(top, index, terms)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.bincount(index, weights=np.exp(terms - top[index]), minlength=len(top))
    with np.errstate(divide="ignore"):
        return np.where(total > 0, top + np.log(total), -np.inf)


def _trim(a: np.ndarray, offset: int, floor: float) -> tuple[np.ndarray, int]:
    keep = np.nonzero(a > floor)[0]
    return a[keep[0] : keep[-1] + 1], offset + int(keep[0])


def _iid_sum(s: Fraction, n: int, cut: float) -> tuple[np.ndarray, int]:
    """ln pmf of Y_1 + … + Y_n (iid N_Z(0, s)) by binary powering, and its offset."""
    base, base_off = _log_pmf(s, cut)
    out, off = np.array([0.0]), 0
    while n:
        if n & 1:
            out, off = _trim(_log_convolve(out, base), off + base_off, -cut - 60)
        n >>= 1
        if n:
            base, base_off = _trim(_log_convolve(base, base), 2 * base_off, -cut - 60)
    return out, off


def gaussian_loss(s, mu, cut: float = 800.0) -> tuple[np.ndarray, np.ndarray]:
    """(ln P, loss) over the support of W = Σ μ_j Y_j: the privacy loss of the vector μ is
    (‖μ‖² + 2W)/(2s) in distribution (W is symmetric)."""
    s = F(s)
    counts: dict[int, int] = {}
    for m in mu:
        if m:
            counts[abs(m)] = counts.get(abs(m), 0) + 1
    dist, off = np.array([0.0]), 0
    for m, n in sorted(counts.items()):
        part, part_off = _iid_sum(s, n, cut)
        spread = np.full((len(part) - 1) * m + 1, -np.inf)
        spread[::m] = part
        dist, off = _trim(_log_convolve(dist, spread), off + part_off * m, -cut - 60)
    w = np.arange(len(dist), dtype=float) + off
    norm2 = sum(m * m for m in mu)
    return dist, (norm2 + 2 * w) / (2 * float(s))


def laplace_atoms(t, a: int) -> list[tuple[float, float]]:
    """The privacy-loss atoms (loss, probability under P) of (Lap_Z(t), Lap_Z(t) + a)."""
    q = math.exp(-1 / float(F(t)))
    c = (1 - q) / (1 + q)
    atoms = [(a / float(F(t)), 1 / (1 + q))]
    atoms += [((a - 2 * j) / float(F(t)), c * q**j) for j in range(1, a)]
    return atoms + [(-a / float(F(t)), q**a / (1 + q))]


def log_delta(s, eps, mu, laplace=(), cut: float = 800.0) -> float:
    """ln δ(ε) of the Gaussian vector μ at σ² = s, composed with Laplace shifts (t, a)."""
    lp, z = gaussian_loss(s, mu, cut) if mu else (np.array([0.0]), np.array([0.0]))
    atoms = {0.0: 1.0}
    for t, a in laplace:
        grown: dict[float, float] = {}
        for l1, p1 in atoms.items():
            for l2, p2 in laplace_atoms(t, a):
                key = round(l1 + l2, 12)
                grown[key] = grown.get(key, 0.0) + p1 * p2
        atoms = grown
    e = float(F(eps))
    parts = []
    for loss, p in atoms.items():
        zz = z + loss
        pos = zz > e
        if pos.any():
            parts.append(lp[pos] + math.log(p) + np.log(-np.expm1(e - zz[pos])))
    return _logsumexp(np.concatenate(parts)) if parts else -math.inf


def worst(s, eps, vectors, laplace=(), cut: float = 800.0) -> tuple[float, tuple]:
    """(ln δ, vector) of the worst of ``vectors``."""
    return max((log_delta(s, eps, v, laplace, cut), v) for v in vectors)


def k_tuples(radius: int, k: int, coordinates: int | None = None) -> list[tuple[int, ...]]:
    """Every concatenation of k maximal vectors of the ball (one per query)."""
    return [
        tuple(x for v in pick for x in v)
        for pick in itertools.combinations_with_replacement(maximal(radius, coordinates), k)
    ]


def ln(x) -> float:
    x = F(x)
    return math.log(x.numerator) - math.log(x.denominator)


# ---- the reference checked against two others ------------------------------------------------
@pytest.mark.parametrize(
    "s, eps, mu",
    [
        (10, 4, (1, 1, 1, 1)),
        (F(1, 2), 12, (1, 1, 1, 1)),
        (8, 16, (3, 2, 2, 2, 2)),
        (3, 1, (2, 2, 1)),
        (F(5, 2), 6, (2, 1, 1, 1, 1, 1)),
        (2, 16, (1,) * 9),
    ],
)
def test_reference_agrees_with_the_exact_rational_convolution(s, eps, mu):
    lo, hi = R.gaussian_delta(R.Q(s), R.Q(eps), mu, 1)
    got = log_delta(s, eps, mu)
    assert abs(got - float(mpmath.log(lo))) < 1e-12 and hi - lo < lo * 1e-20


@pytest.mark.parametrize("s, eps, d", [(F(1, 4), 90, 2), (3, 60, 3), (F(3, 2), 200, 4)])
def test_reference_agrees_with_theorem_7_in_mpmath_at_tiny_delta(s, eps, d):
    # one coordinate: δ = Σ_y p(y)(1 − e^{ε − d(d + 2y)/2s})₊, summed straight in mpmath
    with mpmath.workdps(40):
        ms = mpmath.mpf(F(s).numerator) / F(s).denominator
        norm = mpmath.nsum(lambda y: mpmath.exp(-(y * y) / (2 * ms)), [-mpmath.inf, mpmath.inf])
        first = math.floor(float(F(eps) * F(s) / d - F(d, 2))) + 1
        total = mpmath.fsum(
            mpmath.exp(-(y * y) / (2 * ms))
            / norm
            * -mpmath.expm1(eps - mpmath.mpf(d * (d + 2 * y)) / (2 * ms))
            for y in range(first, first + 400)
        )
        truth = float(mpmath.log(total))
    assert truth < -100
    assert abs(log_delta(s, eps, (d,), cut=2000.0) - truth) < 1e-12 * abs(truth)


def test_reference_laplace_atoms_are_a_distribution_with_mean_exp_loss_one():
    for t, a in [(F(1, 3), 1), (2, 3), (7, 5)]:
        atoms = laplace_atoms(t, a)
        assert math.isclose(sum(p for _, p in atoms), 1, rel_tol=1e-14)
        assert math.isclose(sum(p * math.exp(-loss) for loss, p in atoms), 1, rel_tol=1e-12)


# ==========================================================================
# The list of maximal vectors
# ==========================================================================
@pytest.mark.parametrize("coordinates", [None, 1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_the_list_is_exactly_the_maximal_elements(coordinates):
    for radius in range(1, 9):
        listed = L2Ball(radius, coordinates).vectors()
        if listed is None:  # too many: the zCDP route (checked below)
            assert len(maximal(radius, coordinates)) > 32
            continue
        assert sorted(listed) == sorted(maximal(radius, coordinates)), (radius, coordinates)


@pytest.mark.long
def test_the_list_for_two_to_four_coordinates_up_to_radius_20():
    for radius in range(9, 21):
        for coordinates in (2, 3, 4):
            listed = L2Ball(radius, coordinates).vectors()
            if listed is not None:
                assert sorted(listed) == sorted(maximal(radius, coordinates))


@pytest.mark.parametrize("radius, k", [(2, 2), (2, 3), (2, 5), (3, 2), (3, 3), (4, 1)])
def test_neighbours_lie_above_every_k_tuple_of_the_ball(radius, k):
    listed = L2Ball(radius).neighbours(k)
    assert listed is not None
    joined = [tuple(sorted(mu * copies, reverse=True)) for mu, copies in listed]
    vectors = ball(radius)
    for pick in itertools.combinations_with_replacement(vectors, k):
        v = tuple(sorted((x for w in pick for x in w), reverse=True))
        assert any(below(v, w) for w in joined), (radius, k, pick)


def test_coordinates_at_least_radius_squared_is_no_limit():
    for radius in (2, 3):
        assert L2Ball(radius, radius * radius).vectors() == L2Ball(radius).vectors()
        assert L2Ball(radius, radius * radius + 7).vectors() == L2Ball(radius).vectors()
    # one short of Δ² drops the all-ones vector, and (1,)*8 is then maximal
    assert (1,) * 9 not in L2Ball(3, 8).vectors() and (1,) * 8 in L2Ball(3, 8).vectors()


# ==========================================================================
# gaussian_delta over the ball
# ==========================================================================
#: σ², ε, Δ, coordinates: where a vector other than (Δ,) is the worst (found by the sweep)
BALL_CASES = [
    (F(1, 20), 0, 2, None),
    (F(1, 4), 40, 2, None),
    (F(1, 2), 12, 2, None),
    (10, 4, 2, None),
    (60, 2, 2, None),
    (F(1, 4), 20, 3, None),
    (F(1, 2), 60, 3, None),
    (F(3, 2), 20, 3, None),
    (3, 40, 3, None),
    (35, 16, 3, None),
    (F(5, 2), 6, 3, 2),
    (20, 24, 3, 2),
    (2, 16, 3, 3),
    (F(1, 2), 40, 4, None),
    (3, 20, 4, None),
    (10, 20, 4, None),
    (13, 32, 4, 3),
    (8, 16, 5, None),
    pytest.param(20, 32, 5, 2, marks=pytest.mark.slow),
    pytest.param(8, 32, 5, 3, marks=pytest.mark.slow),
    pytest.param(35, 24, 6, 2, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("s, eps, radius, coordinates", BALL_CASES)
def test_ball_delta_is_never_below_any_vector_and_finds_the_worst(s, eps, radius, coordinates):
    vectors = ball(radius, coordinates) if radius <= 3 else maximal(radius, coordinates)
    truth, _ = worst(s, eps, vectors)
    sens = radius if coordinates is None else L2Ball(radius, coordinates)
    got = A.gaussian_delta(s, eps, sens, log=True)
    assert got >= truth - SLACK
    assert got <= truth + 1e-6
    # and the float answer is an upper bound too
    assert A.gaussian_delta(s, eps, sens) >= math.exp(truth) * (1 - 1e-12)


@pytest.mark.parametrize(
    "s, eps, radius",
    [
        (F(1, 4), 130, 2),
        (F(1, 2), 130, 2),
        (1, 130, 2),
        (F(3, 2), 90, 2),
        (10, 40, 2),
        (F(1, 4), 130, 3),
        (1, 130, 3),
        (3, 90, 3),
        (10, 60, 3),
    ],
)
def test_ball_delta_far_below_the_float_range(s, eps, radius):
    truth, _ = worst(s, eps, maximal(radius), cut=3000.0)
    assert truth < -180  # e^−180 ≈ 1e−78 .. e^−2000
    got = A.gaussian_delta(s, eps, radius, log=True)
    assert got >= truth - 1e-12 * abs(truth)
    assert got <= truth + 1e-5 * abs(truth)


def test_epsilon_zero_and_negative():
    truth, _ = worst(F(7, 4), 0, ball(2))
    assert A.gaussian_delta(F(7, 4), 0, 2, log=True) >= truth - SLACK
    with pytest.raises(ValueError, match="eps"):
        A.gaussian_delta(10, -1, 2)


# ---- k queries, each moving its own vector ---------------------------------------------------
@pytest.mark.parametrize(
    "s, eps, radius, k",
    [
        (F(1, 4), 20, 2, 3),
        (1, 10, 2, 5),
        (2, 10, 2, 8),
        (5, 1, 2, 8),
        (20, 20, 2, 8),
        (F(1, 2), 6, 3, 2),
        (2, 12, 3, 2),
        (12, 20, 3, 2),
    ],
)
def test_k_queries_each_move_their_own_vector(s, eps, radius, k):
    truth, arg = worst(s, eps, k_tuples(radius, k))
    got = A.gaussian_delta(s, eps, radius, k, log=True)
    assert got >= truth - SLACK, arg
    assert got <= truth + 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("s, eps", [(F(1, 2), 20), (1, 4)])
def test_twenty_queries_of_radius_two(s, eps):  # 21 mixtures, up to 80 coordinates
    truth, _ = worst(s, eps, k_tuples(2, 20))
    assert A.gaussian_delta(s, eps, 2, 20, log=True) >= truth - SLACK


# ---- past the list: the uniform route (or zCDP) ----------------------------------------------
@pytest.mark.parametrize(
    "s, eps, radius, k, vectors",
    [
        (F(1, 2), 4, 6, 1, [(1,) * 36, (2,) * 9, (3, 3, 3, 3), (4, 4, 2), (6,), (5, 3, 1, 1)]),
        (3, 10, 6, 1, [(1,) * 36, (3, 3, 3, 2, 2, 1), (5, 3, 1, 1), (4, 4, 2), (6,)]),
        (10, 20, 2, 32, [(2,) * 32, (1,) * 128, (2,) * 16 + (1,) * 64]),
        (4, 8, 4, 2, [(4, 4), (1,) * 32, (2,) * 8, (3, 1, 1, 1, 1, 1, 1, 1) * 2]),
    ],
)
def test_past_the_list_the_bound_is_above_every_vector(s, eps, radius, k, vectors):
    assert L2Ball(radius).neighbours(k) is None
    got = A.gaussian_delta(s, eps, radius, k, log=True)
    assert got >= max(log_delta(s, eps, v) for v in vectors)
    # never above the zCDP route, which bounds every vector of the ball
    assert A.gaussian_delta(s, eps, radius, k) <= A.cdp_delta(F(k * radius * radius, 2 * s), eps)


# ==========================================================================
# ε and calibration: the target holds for every vector
# ==========================================================================
@pytest.mark.parametrize(
    "s, delta, radius, k",
    [
        (10, "1e-10", 2, 1),
        (F(1, 2), "1e-3", 2, 1),
        (2, "1e-11", 3, 1),
        (3, "1e-6", 2, 3),
        (F(5, 2), "1e-30", 3, 1),
        (1, "0.99", 2, 1),
        (F(1, 4), "0.5", 3, 1),
    ],
)
def test_gaussian_epsilon_certifies_every_vector(s, delta, radius, k):
    e = A.gaussian_epsilon(s, delta, radius, k)
    truth, arg = worst(s, F(e), k_tuples(radius, k))
    assert truth <= ln(delta) + SLACK, (e, arg)


CALIBRATIONS = [  # ε, δ, Δ, coordinates, k: large ε and tiny δ, where δ(σ²) is not monotone
    (8, "1e-30", 2, None, 1),
    (12, "1e-6", 2, None, 1),
    (20, "1e-12", 2, None, 1),
    (8, "1e-20", 2, None, 1),
    (30, "1e-100", 2, None, 1),
    (60, "1e-200", 2, None, 1),
    (16, "1e-11", 3, None, 1),
    (25, "1e-30", 3, None, 1),
    (6, "1e-9", 3, 2, 1),
    (6, "1e-8", 2, None, 3),
]


@pytest.mark.parametrize("eps, delta, radius, coordinates, k", CALIBRATIONS)
def test_calibrate_gaussian_certifies_every_vector(eps, delta, radius, coordinates, k):
    s = A.calibrate_gaussian(eps, delta, L2Ball(radius, coordinates), k)
    truth, arg = worst(s, eps, k_tuples(radius, k, coordinates))
    assert truth <= ln(delta) + SLACK, (s, arg)


@pytest.mark.slow
@pytest.mark.parametrize(
    "eps, delta, radius, coordinates, k",
    [
        (40, "1e-300", 3, None, 1),
        (16, "1e-17", 5, None, 1),
        (10, "1e-20", 3, None, 2),
        (1, "1e-6", 4, None, 1),
        (10, "1e-15", 4, 3, 1),
    ],
)
def test_calibrate_gaussian_certifies_every_vector_slow(eps, delta, radius, coordinates, k):
    s = A.calibrate_gaussian(eps, delta, L2Ball(radius, coordinates), k)
    truth, arg = worst(s, eps, k_tuples(radius, k, coordinates), cut=1500.0)
    assert truth <= ln(delta) + SLACK, (s, arg)


@pytest.mark.parametrize("eps, delta, radius", [(4, "1e-10", 2), (12, "1e-40", 2)])
def test_mechanism_and_accountant_calibrations_certify_every_vector(eps, delta, radius):
    mech = dgauss.GaussianMechanism(epsilon=eps, delta=delta, sensitivity=radius)
    acc = dgauss.Accountant(epsilon=eps, delta=delta)
    for s, k in [
        (mech.sigma2, 1),
        (acc.calibrate_gaussian(radius), 1),
        (acc.split(2, sensitivity=radius), 2),
    ]:
        truth, arg = worst(s, eps, k_tuples(radius, k))
        assert truth <= ln(delta) + SLACK, (s, k, arg)
    assert mech.delta(eps) >= math.exp(worst(mech.sigma2, eps, maximal(radius))[0]) * (1 - 1e-12)


# ==========================================================================
# Compositions
# ==========================================================================
def _programs():
    """(name, σ² → program, σ² → [(Gaussian vector, Laplace shifts)]) : the truth's cases."""
    b2, b3 = ball(2), maximal(3)
    return [
        (
            "ball 2 + Laplace 3",
            lambda s: compose(Gaussian(s, 2), Laplace(3)),
            lambda s: [(v, [(3, 1)]) for v in b2],
        ),
        (
            "ball 2 + Laplace(2, 2, k=2)",
            lambda s: compose(Gaussian(s, 2), Laplace(2, 2, k=2)),
            lambda s: [(v, [(2, 2), (2, 2)]) for v in b2],
        ),
        (
            "ball 3 + Laplace 5",
            lambda s: compose(Gaussian(s, 3), Laplace(5)),
            lambda s: [(v, [(5, 1)]) for v in b3],
        ),
        (
            "two balls, one σ²",
            lambda s: compose(Gaussian(s, 2), Gaussian(s, 2)),
            lambda s: [(v + w, []) for v, w in itertools.combinations_with_replacement(b2, 2)],
        ),
        (
            "ball + vector, one σ²",
            lambda s: compose(Gaussian(s, 2), Gaussian(s, [1, -1])),
            lambda s: [(v + (1, 1), []) for v in b2],
        ),
        (
            "L2Ball(3, 2) + Laplace 4",
            lambda s: compose(Gaussian(s, L2Ball(3, 2)), Laplace(4)),
            lambda s: [(v, [(4, 1)]) for v in ball(3, 2)],
        ),
    ]


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("s, eps", [(F(1, 2), 5), (1, F(1, 2)), (2, 10), (10, 2), (10, 16)])
def test_composed_delta_covers_every_vector(index, s, eps):
    name, make, cases = _programs()[index]
    truth, arg = max((log_delta(s, eps, mu, laps), mu) for mu, laps in cases(s))
    got = make(s).delta(eps, log=True)
    assert got >= truth - SLACK, (name, arg)
    assert got <= truth + 0.01  # the PLD route aims at 0.1%


def test_two_balls_of_different_variance():
    s, eps = 2, 5
    truth = -math.inf
    for v in ball(2):
        lp1, z1 = gaussian_loss(s, v)
        for w in ball(2):
            lp2, z2 = gaussian_loss(2 * s, w)
            lp = (lp1[:, None] + lp2[None, :]).ravel()
            z = (z1[:, None] + z2[None, :]).ravel()
            pos = z > eps
            truth = max(truth, _logsumexp(lp[pos] + np.log(-np.expm1(eps - z[pos]))))
    got = compose(Gaussian(s, 2), Gaussian(2 * s, 2)).delta(eps, log=True)
    assert truth - SLACK <= got <= truth + 0.01


@pytest.mark.parametrize(
    "s, t, radius, eps",
    [(1, 3, 2, 60), (F(1, 2), 2, 2, 80), (2, 5, 3, 70)],
)
def test_composed_delta_far_below_the_float_range(s, t, radius, eps):
    truth, _ = max((log_delta(s, eps, v, [(t, 1)], 3000.0), v) for v in maximal(radius))
    assert truth < -300
    got = compose(Gaussian(s, radius), Laplace(t)).delta(eps, log=True)
    assert got >= truth - 1e-12 * abs(truth)
    assert got <= truth + 1e-3


@pytest.mark.parametrize(
    "s, t, radius, delta",
    [
        (6, 3, 2, "1e-6"),
        (2, 4, 3, "1e-9"),
        (F(1, 2), 5, 2, "1e-3"),
        (10, 2, 2, "1e-30"),
        (1, 8, 2, "1e-100"),
    ],
)
def test_composed_epsilon_certifies_every_vector(s, t, radius, delta):
    e = compose(Gaussian(s, radius), Laplace(t)).epsilon(delta)
    truth, arg = max((log_delta(s, F(e), v, [(t, 1)], 1500.0), v) for v in maximal(radius))
    assert truth <= ln(delta) + SLACK, arg


# ==========================================================================
# The Accountant
# ==========================================================================
@pytest.mark.parametrize("s, t, eps, radius", [(10, 50, 4, 2), (1, 40, 8, 2), (2, 50, 16, 3)])
def test_accountant_after_a_laplace_charges_the_worst_vector(s, t, eps, radius):
    worst_ln, arg = max((log_delta(s, eps, v, [(t, 1)]), v) for v in maximal(radius))
    single = log_delta(s, eps, (radius,), [(t, 1)])
    assert worst_ln > single + 0.05 and arg != (radius,)
    budget = F(math.exp((worst_ln + single) / 2)).limit_denominator(10**40)

    def fresh():
        acc = dgauss.Accountant(epsilon=eps, delta=budget)
        acc.add_laplace_noise([0], scale=t)
        return acc

    with pytest.raises(dgauss.PrivacyBudgetError):  # the ball does not fit
        # on radius² values, so that the whole ball fits in them (the Accountant cuts a ball
        # to the values a release noises: on one value it is (Δ,))
        fresh().add_gaussian_noise([0] * radius**2, sigma2=s, sensitivity=radius)
    fresh().add_gaussian_noise([0], sigma2=s, sensitivity=[radius])  # (Δ,) alone does
    acc = fresh()
    s3 = acc.calibrate_gaussian(radius)
    truth, arg = max((log_delta(s3, eps, v, [(t, 1)]), v) for v in maximal(radius))
    assert truth <= ln(budget) + SLACK, (s3, arg)
    acc.add_gaussian_noise([0] * radius**2, sigma2=s3, sensitivity=radius)
    assert acc.spent.delta(eps) <= budget


def test_separate_identical_ball_releases_account_as_tightly_as_k_fold():
    # (fixed: compose groups identical ball releases into one k-fold release; before, six
    # Gaussian(10, 2) made 64 programs and fell to zCDP, ×3 looser)
    separate = compose(*[Gaussian(10, 2)] * 6)
    assert separate.delta(4) <= compose(Gaussian(10, 2, k=6)).delta(4) * (1 + 1e-6)


def test_separate_ball_releases_stay_sound_past_the_list():
    # whatever route answers, no program of six releases' vectors is above it
    program = compose(*[Gaussian(10, 2)] * 6)
    got = program.delta(4, log=True)
    truth, _ = worst(10, 4, k_tuples(2, 6))
    assert got >= truth


# ==========================================================================
# Objects and the command line
# ==========================================================================
def test_releases_with_a_ball_pickle_and_copy():
    for release in [Gaussian(10, 2), Gaussian(10, L2Ball(3, coordinates=2), k=3)]:
        twins = (pickle.loads(pickle.dumps(release)), copy.copy(release), copy.deepcopy(release))
        for twin in twins:
            assert twin == release and hash(twin) == hash(release)
            assert compose(twin).delta(4) == compose(release).delta(4)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dgauss", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_account_with_sensitivity_2_reports_the_ball():
    out = _cli("account", "--sigma2", "10", "--sensitivity", "2", "--eps", "4")
    assert out.returncode == 0, out.stderr
    assert "7.819e-11" in out.stdout  # (1, 1, 1, 1), not (2,)'s 6.018e-11


def test_cli_calibrate_with_sensitivity_3_certifies_every_vector():
    out = _cli("calibrate", "--eps", "6", "--delta", "1e-9", "--sensitivity", "3")
    assert out.returncode == 0, out.stderr
    s = A.calibrate_gaussian(6, "1e-9", 3)
    assert f"sigma2 = {float(s):.4g}" in out.stdout or f"sigma2 = {float(s)}" in out.stdout
    truth, _ = worst(s, 6, maximal(3))
    assert truth <= ln("1e-9") + SLACK


def test_cli_account_program_with_a_scalar_gaussian_sensitivity():
    # (fixed: cli/account.py _describe() called len() on an L2Ball)
    out = _cli("account", "--gaussian", "10:2", "--eps", "4")
    assert out.returncode == 0, out.stderr
    assert "7.819e-11" in out.stdout
