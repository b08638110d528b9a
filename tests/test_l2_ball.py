"""A scalar Gaussian sensitivity Δ is an ℓ2 bound: δ must cover every integer vector of the ball.

By Theorem 15 the discrete Gaussian's δ depends on the difference vector, not only on its norm
(σ² = 10, ε = 4: (1, 1, 1, 1) has δ = 7.8e−11 where (2,) has 6.0e−11), so every δ, ε and
calibration for ``sensitivity=Δ`` must hold for the worst vector with ‖v‖₂ ≤ Δ, over any number
of coordinates.  The truth here is independent of dgauss: the ball is enumerated by brute force
in this file (every multiset, not only the maximal ones the library lists), each vector's δ
comes from the reference convolution (tests/_dp_reference.py) or, for δ down to 1e−300, from an
mpmath convolution written below, and the ball's δ is the largest.
"""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _dp_reference as R
import dgauss
from _compose_reference import composed_delta
from dgauss import GaussianMechanism
from dgauss import accounting as A
from dgauss.accounting import Gaussian, L2Ball, Laplace, compose


# ---- the ball, by brute force --------------------------------------------------------------
def ball(radius: int, coordinates: int | None = None) -> list[tuple[int, ...]]:
    """Every multiset of positive ints (sorted, largest first) with squares summing to at most
    radius² and at most ``coordinates`` entries: all of them, dominated or not."""
    limit = radius * radius if coordinates is None else coordinates
    out = []
    frontier = [()]
    while frontier:
        grown = []
        for v in frontier:
            out.append(v)
            if len(v) == limit:
                continue
            used = sum(x * x for x in v)
            top = v[-1] if v else radius
            grown += [v + (a,) for a in range(1, top + 1) if used + a * a <= radius * radius]
        frontier = grown
    return [v for v in out if v]


def dominated(v: tuple[int, ...], w: tuple[int, ...]) -> bool:
    """v is w with entries deleted or decreased (both sorted largest first)."""
    return len(v) <= len(w) and all(a <= b for a, b in zip(v, w, strict=False))


def truth(sigma2, eps, vectors, k=1):
    """(lo, hi) of the largest true δ over ``vectors`` (each answered k times)."""
    pairs = [R.gaussian_delta(R.Q(sigma2), R.Q(eps), tuple(v), k) for v in vectors]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


# ---- an independent δ for tiny values: W = Σ μ_j Y_j by convolution in mpmath ---------------
def exact_log_delta(sigma2, eps, mu, digits: int = 330) -> mpmath.mpf:
    """ln δ(ε) of the vector μ (Eq. 23): Z = (‖μ‖² + 2W)/(2s), every pmf kept down to
    10^−digits of its peak (mpf keeps relative precision, so a δ of 1e−300 is resolved)."""
    s = R.Q(sigma2)
    with mpmath.workdps(30):
        ms = mpmath.mpf(s.numerator) / s.denominator
        reach = int(math.isqrt(int(2 * s * digits * 2.31)) + 2)
        weights = [mpmath.exp(-mpmath.mpf(y * y) / (2 * ms)) for y in range(-reach, reach + 1)]
        theta = mpmath.fsum(weights)
        pmf = [w / theta for w in weights]
        dist = {0: mpmath.mpf(1)}
        for m in mu:
            new: dict[int, mpmath.mpf] = {}
            for w, p in dist.items():
                for i, q in enumerate(pmf):
                    key = w + m * (i - reach)
                    new[key] = new.get(key, 0) + p * q
            dist = new
        n2 = sum(m * m for m in mu)
        e = mpmath.mpf(R.Q(eps).numerator) / R.Q(eps).denominator
        terms = []
        for w, p in dist.items():
            z = (n2 + 2 * mpmath.mpf(w)) / (2 * ms)
            if z > e:
                terms.append(p * -mpmath.expm1(e - z))
        return mpmath.log(mpmath.fsum(terms))


# ---- the library's list of worst vectors ---------------------------------------------------
@pytest.mark.parametrize("radius", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("coordinates", [None, 1, 2, 3])
def test_every_vector_of_the_ball_is_dominated_by_a_listed_one(radius, coordinates):
    listed = L2Ball(radius, coordinates).vectors()
    assert listed is not None
    everything = ball(radius, coordinates)
    for v in everything:
        assert any(dominated(v, w) for w in listed), (radius, coordinates, v)
    for w in listed:  # and each listed vector is in the ball
        assert w in everything


def test_the_listed_vectors_are_the_partitions_of_delta_squared_into_squares():
    # OEIS A001156 at Δ²: 1, 2, 4, 8, 19 ways for Δ = 1..5
    assert [len(L2Ball(d).vectors()) for d in range(1, 6)] == [1, 2, 4, 8, 19]
    assert L2Ball(2).vectors() == ((2,), (1, 1, 1, 1))
    assert L2Ball(7).vectors() is None  # 98 > MAX_NEIGHBOURS: the zCDP route answers


def test_one_coordinate_is_the_single_shift():
    # growing one coordinate never lowers δ (the optimal set is a half-line: docs), so one
    # coordinate moved by at most Δ is exactly (Δ,)
    for d in (1, 2, 7, 10**6):
        assert L2Ball(d, coordinates=1).vectors() == ((d,),)


# ---- δ over the ball against the brute-force truth ------------------------------------------
CASES = [  # σ², ε, Δ: where the vectors disagree, including the issue's
    (10, 4, 2),
    (Fraction(1, 2), 12, 2),  # the ×7.4 the review found
    (1, 2, 2),
    (3, 1, 3),
    (Fraction(5, 2), 6, 3),
    (20, 3, 3),
    (6, Fraction(1, 2), 4),
    (25, 2, 5),
    (Fraction(7, 4), 0, 2),
]


@pytest.mark.parametrize("sigma2, eps, radius", CASES)
def test_ball_delta_is_the_worst_vector(sigma2, eps, radius):
    lo, hi = truth(sigma2, eps, ball(radius))
    got = A.gaussian_delta(sigma2, eps, radius)
    assert mpmath.mpf(got) >= lo, (sigma2, eps, radius, got, lo)  # never below the truth
    assert mpmath.mpf(got) <= hi * (1 + mpmath.mpf("1e-6")) + 1e-300  # and the worst is found
    log_got = A.gaussian_delta(sigma2, eps, radius, log=True)
    assert log_got >= mpmath.log(lo)


def test_the_issue_examples_are_not_optimistic():
    four_ones = R.gaussian_delta(10, 4, (1, 1, 1, 1))[0]
    assert A.gaussian_delta(10, 4, 2) >= four_ones > A.gaussian_delta(10, 4, [2])
    assert A.gaussian_delta(3, 1, 3) >= R.gaussian_delta(3, 1, (2, 2, 1))[0]
    assert A.gaussian_delta(25, 2, 5) >= R.gaussian_delta(25, 2, (4, 3))[0]


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    sigma2=st.fractions(Fraction(1, 4), 30, max_denominator=8),
    eps=st.fractions(0, 10, max_denominator=4),
    radius=st.integers(2, 3),
)
def test_ball_delta_never_below_any_vector(sigma2, eps, radius):
    lo, _ = truth(sigma2, eps, ball(radius))
    assert mpmath.mpf(A.gaussian_delta(sigma2, eps, radius)) >= lo


@pytest.mark.parametrize(
    "sigma2, eps, radius",
    [(10, 40, 2), (Fraction(3, 2), 60, 2), (Fraction(3, 2), 40, 3)],
)
@pytest.mark.long
def test_ball_delta_down_to_1e_minus_300(sigma2, eps, radius):
    worst = max(exact_log_delta(sigma2, eps, v) for v in ball(radius))
    assert worst < mpmath.log(mpmath.mpf("1e-30"))  # a tiny δ, as meant
    got = A.gaussian_delta(sigma2, eps, radius, log=True)
    assert got >= worst - mpmath.mpf("1e-12")
    assert got <= worst + mpmath.mpf("1e-5")  # the worst vector, found


# ---- k queries: each may move a different vector -------------------------------------------
@pytest.mark.parametrize("sigma2, eps", [(10, 6), (Fraction(3, 2), 5), (4, 8)])
def test_k_queries_cover_mixed_vectors(sigma2, eps):
    mixed = [(2, 2), (2, 1, 1, 1, 1), (1,) * 8]
    lo, hi = truth(sigma2, eps, mixed)
    got = A.gaussian_delta(sigma2, eps, 2, k=2)
    assert mpmath.mpf(got) >= lo
    assert mpmath.mpf(got) <= hi * (1 + mpmath.mpf("1e-6")) + 1e-300


# ---- calibration meets its target for every vector of the ball ------------------------------
@pytest.mark.parametrize(
    "eps, delta, radius",
    [(8, "1e-30", 2), (4, "1e-10", 2), (1, "1e-6", 3), (12, "1e-40", 2), (2, "1e-12", 4)],
)
@pytest.mark.long
def test_calibration_certifies_every_vector(eps, delta, radius):
    s = A.calibrate_gaussian(eps, delta, sensitivity=radius)
    _, hi = truth(s, eps, ball(radius))
    assert hi <= mpmath.mpf(delta), (eps, delta, radius, s, hi)


@pytest.mark.long
def test_calibration_down_to_1e_minus_300():
    s = A.calibrate_gaussian(20, "1e-300", sensitivity=2)
    for v in ball(2):
        assert exact_log_delta(s, 20, v) <= mpmath.log(mpmath.mpf("1e-300"))


def test_mechanism_from_the_issue_gives_what_it_promises():
    mech = GaussianMechanism(epsilon=4, delta="1e-10", sensitivity=2)
    _, hi = truth(mech.sigma2, 4, ball(2))
    assert hi <= mpmath.mpf("1e-10")
    assert mech.delta(4) >= R.gaussian_delta(mech.sigma2, 4, (1, 1, 1, 1))[0]


def test_epsilon_certifies_every_vector():
    for sigma2, delta, radius in [(10, "1e-10", 2), (Fraction(5, 2), "1e-4", 3)]:
        e = A.gaussian_epsilon(sigma2, delta, radius)
        _, hi = truth(sigma2, e, ball(radius))
        assert hi <= mpmath.mpf(delta)
        # the ball's δ is at least (Δ,)'s at every ε; both searches stop within 2^−36
        assert e >= A.gaussian_epsilon(sigma2, delta, [radius]) * (1 - 1e-10)


# ---- past the list: the zCDP route, valid for the whole ball ---------------------------------
def test_large_ball_falls_back_to_zcdp():
    for sigma2, eps, radius in [(100, 4, 7), (10**6, 1, 40)]:
        rho = Fraction(radius * radius, 2 * sigma2)
        assert A.gaussian_delta(sigma2, eps, radius) == A.cdp_delta(rho, eps)
    for v in [(1,) * 49, (6, 3, 2), (4, 4, 4, 1), (7,)]:
        assert A.gaussian_delta(30, 3, 7) >= R.gaussian_delta(30, 3, v)[0]


# ---- compositions, the Accountant -----------------------------------------------------------
@pytest.mark.parametrize("eps", [Fraction(1, 2), 2, 5])
def test_compose_takes_the_worst_vector(eps):
    program = compose(Gaussian(6, 2), Laplace(3))
    got = program.delta(eps, log=True)
    worst = max(
        composed_delta([("gaussian", 6, list(v), 1), ("laplace", 3, [1], 1)], eps, 60)[1]
        for v in ball(2)
    )
    assert mpmath.exp(got) >= worst * (1 - mpmath.mpf("1e-30"))
    assert program.epsilon("1e-6") >= compose(Gaussian(6, [2]), Laplace(3)).epsilon("1e-6")


def test_compose_of_a_large_ball_is_zcdp():
    program = compose(Gaussian(100, 9), Laplace(5))
    assert program.route(2) == "zCDP"
    assert program.delta(2) == A.cdp_delta(program.rho, 2)


def test_accountant_charges_the_worst_vector():
    from dgauss import Accountant

    # the ball's δ at σ² = 10, ε = 4 is (1, 1, 1, 1)'s 7.82e-11; (2,) alone gives 6.02e-11
    acc = Accountant(epsilon=4, delta="7e-11")
    with pytest.raises(Exception, match="budget"):
        acc.add_gaussian_noise([1, 2, 3, 4, 5], sigma2=10, sensitivity=2)
    acc2 = Accountant(epsilon=4, delta="7e-11")
    acc2.add_gaussian_noise([1, 2, 3, 4, 5], sigma2=10, sensitivity=[2])  # exactly (2,): fits
    # on fewer values the worst vector has fewer entries: one count moves by at most 2 is
    # exactly (2,), and three counts give (1, 1, 1) (δ below (1, 1, 1, 1)'s)
    Accountant(epsilon=4, delta="7e-11").add_gaussian_noise([7], sigma2=10, sensitivity=2)
    three = max(R.gaussian_delta(10, 4, v)[1] for v in ball(2, coordinates=3))
    acc3 = Accountant(epsilon=4, delta=float(three) * 1.001)
    acc3.add_gaussian_noise([1, 2, 3], sigma2=10, sensitivity=2)
    assert acc3.spent.delta(4) >= R.gaussian_delta(10, 4, (1, 1, 1))[0]


# ---- the L2Ball object ----------------------------------------------------------------------
def test_l2ball_is_a_value():
    b = L2Ball(3, coordinates=2)
    assert b == L2Ball(3, 2) and hash(b) == hash(L2Ball(3, 2)) and b != L2Ball(3)
    assert L2Ball(3, coordinates=9) == L2Ball(3, coordinates=100)  # ≥ Δ² is no limit
    assert repr(b) == "L2Ball(3, coordinates=2)" and repr(L2Ball(4)) == "L2Ball(4)"
    assert pickle.loads(pickle.dumps(b)) == b and copy.deepcopy(b) == b
    with pytest.raises(AttributeError):
        b.radius = 4  # type: ignore[misc]
    assert A.gaussian_rho(8, b) == Fraction(9, 16)
    assert A.gaussian_delta(10, 4, L2Ball(2)) == A.gaussian_delta(10, 4, 2)


@pytest.mark.parametrize(
    "radius, coordinates, match",
    [
        (0, None, "radius"),
        (Fraction(3, 2), None, "radius"),
        (True, None, "radius"),
        (2, 0, "coordinates"),
        (2, "1/2", "coordinates"),
    ],
)
def test_l2ball_refuses_bad_input(radius, coordinates, match):
    with pytest.raises(ValueError, match=match):
        L2Ball(radius, coordinates)


# ---- the command line -----------------------------------------------------------------------
def test_cli_accounts_the_ball(capsys):
    from dgauss import cli

    assert cli.main(["account", "--sigma2", "10", "--sensitivity", "2"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  4 "))
    assert float(row.split()[1]) >= 7.818e-11  # (1, 1, 1, 1), not (2,)'s 6.018e-11
    assert cli.main(["account", "--gaussian", "10:2", "--laplace", "4"]) == 0
    assert "sensitivity 2 (l2: the ball's worst vector)" in capsys.readouterr().out


def test_accountant_after_other_releases_still_charges_the_worst_vector():
    # the Accountant keeps the PLD of its last composition to merge the next releases into; a
    # ball release must not be merged as one vector.  At ε = 8: (10, [2]) twice reads
    # 6.47e-19, (10, [2]) and the ball 2 at σ² = 10 8.31e-19; the first release alone needs
    # a composition (zCDP does not certify it), which keeps a PLD
    from dgauss import Accountant, PrivacyBudgetError

    for ball_release in (2, L2Ball(2), L2Ball(2, coordinates=4)):
        acc = Accountant(epsilon=8, delta="7.5e-19")
        acc.add_gaussian_noise([5], sigma2=10, sensitivity=[2])
        with pytest.raises(PrivacyBudgetError):
            acc.add_gaussian_noise([1, 2, 3, 4], sigma2=10, sensitivity=ball_release)
        acc.add_gaussian_noise([1, 2, 3, 4], sigma2=10, sensitivity=[2])


def test_accountant_ledger_keeps_the_ball():
    from dgauss import Accountant

    acc = Accountant(epsilon=10, delta="1e-6")
    five = [1, 2, 3, 4, 5]  # on five values the ball 2 is whole: (1, 1, 1, 1) fits in them
    acc.add_gaussian_noise(five, sigma2=100, sensitivity=[2])
    acc.add_gaussian_noise(five, sigma2=100, sensitivity=2)
    acc.add_gaussian_noise(five, sigma2=100, sensitivity=L2Ball(3, coordinates=2))
    text = acc.to_json()
    assert '"radius": 3' in text and '"coordinates": 2' in text
    back = Accountant.from_json(text)
    assert back.spent.delta(4) == acc.spent.delta(4)
    assert back.spent.delta(4) >= compose(
        Gaussian(100, [2]), Gaussian(100, [1, 1, 1, 1]), Gaussian(100, [2, 2])
    ).delta(4)
    with pytest.warns(dgauss.BudgetCopyWarning):  # the budget has some left
        assert pickle.loads(pickle.dumps(acc)).spent.delta(4) == acc.spent.delta(4)
