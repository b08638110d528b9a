"""Exactness, checked rather than sampled: enumerate the random tapes of one draw.

Two levels, together covering every line that touches randomness:

* bit tapes, for the primitives uniform(m) and Bernoulli(n/d) (the only code
  that reads bits) and for Bernoulli(exp(-gamma)) as a whole;
* decision tapes, for Bernoulli(exp(-gamma)), the discrete Laplace and the
  discrete Gaussian: the primitives' outcomes with their exact probabilities,
  restarts merged (P = A / (1 - R)); bit-level enumeration of these would need
  2**60..2**130 tapes to reach the same resolution.

Each check passes only if, for every value, the enumerated bounds on the
sampler's probability contain the true probability (bounded with MPFR and
directed rounding) and the enumeration reached its target resolution.  Oracle
parity (test_parity.py) ties the two levels to the same bits.

Default budgets resolve every probability to within 1e-3 in seconds; the
`slow` tests go to 1e-6 for the Bernoulli sampler.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from gmpy2 import mpq

from dgauss import reference
from dgauss._kinds import Kind
from dgauss.testing import (
    DecisionTape,
    Exhausted,
    Restart,
    Tape,
    check,
    enumerate_bits,
    enumerate_decisions,
    enumerate_sampler,
    sampler,
)

BIG_GAMMA = Fraction(2**65 + 1, 2**64 + 3)  # above one word: Algorithm 1 on two words
HUGE_GAMMA = Fraction(2**130 + 1, 2**129 + 3)  # above two words: Algorithm 1 on GMP
GAMMAS = [0, Fraction(1, 3), 1, Fraction(7, 3), 12, BIG_GAMMA, HUGE_GAMMA]
SCALES = [1, Fraction(7, 3), 10]
BIG_SIGMA2 = Fraction(2**70 + 1, 2**69)  # d t = 2**70: the acceptance test runs on GMP
SIGMA2 = [Fraction(1, 2), 1, 2, 10, BIG_SIGMA2]


def assert_exact(name, param, *, oracle, target=1e-3, level=None, max_runs=2_000_000):
    enumeration = enumerate_sampler(
        name, param, oracle=oracle, target=target, level=level, max_runs=max_runs
    )
    result = check(enumeration, name, param)
    assert result.ok, result.report()
    return result


# ---- the primitives, on bit tapes ------------------------------------------------


@pytest.mark.parametrize(
    "p",
    [
        Fraction(1, 3),
        Fraction(2, 7),
        Fraction(1, 2),
        Fraction(5, 8),
        0,
        1,
        Fraction(2**64 + 1, 2**65 + 7),
        Fraction(2**69 + 3, 2**70),
        Fraction(3, 2**70),
    ],  # GMP, expansion ends
    ids=str,
)
def test_bernoulli_primitive(p, oracle):
    assert_exact("bernoulli", p, oracle=oracle, target=1e-9)


def test_bernoulli_on_gmp_stops_where_the_expansion_ends(fill):
    # p = 3/2^70 = 0.0^68 11: bits equal to all 70 digits leave remainder 0, so U >= p
    # is certain and nothing more is read (the tape holds no 71st bit).
    out = np.empty(1, dtype=np.bool_)
    assert fill(Kind.BERNOULLI, 3, 2**70, 0, Tape("0" * 68 + "11"), out) == 70 and not out[0]
    assert fill(Kind.BERNOULLI, 3, 2**70, 0, Tape("0" * 68 + "10"), out) == 70 and out[0]


@pytest.mark.parametrize("m", [1, 2, 3, 7, 64, 1000], ids=str)
def test_uniform_primitive(m, oracle):
    assert_exact("uniform", m, oracle=oracle, target=1e-3 if m > 64 else 1e-9)


# ---- Bernoulli(exp(-gamma)) --------------------------------------------------------


@pytest.mark.parametrize("gamma", GAMMAS, ids=str)
@pytest.mark.long
def test_bernoulli_exp_bits(gamma, oracle):
    if oracle and gamma == 12:
        pytest.skip("430k oracle runs: in the slow suite")
    assert_exact("bernoulli_exp", gamma, oracle=oracle, level="bits")


@pytest.mark.parametrize("gamma", GAMMAS, ids=str)
def test_bernoulli_exp_decisions(gamma, oracle):
    assert_exact("bernoulli_exp", gamma, oracle=oracle, level="decisions", target=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [0, Fraction(1, 3), 1, Fraction(7, 3)], ids=str)
def test_bernoulli_exp_bits_deep(gamma, oracle):
    if oracle and gamma == Fraction(7, 3):
        pytest.skip("5 million oracle runs")
    assert_exact("bernoulli_exp", gamma, oracle=oracle, level="bits", target=1e-6, max_runs=10**7)


@pytest.mark.slow
def test_bernoulli_exp_bits_oracle_gamma_12():
    assert_exact("bernoulli_exp", 12, oracle=True, level="bits")


# ---- the discrete Laplace and the discrete Gaussian, on decision tapes ------------


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_laplace(scale, oracle):
    assert_exact("laplace", scale, oracle=oracle)


@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_gaussian(sigma2, oracle):
    # the oracle's larger cases take ~10 s at 1e-3: 1e-2 here, 1e-3 in the slow suite
    target = 1e-2 if oracle and sigma2 not in (Fraction(1, 2), 2) else 1e-3
    assert_exact("gaussian", sigma2, oracle=oracle, target=target)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [1, 10, BIG_SIGMA2], ids=str)
def test_gaussian_oracle_deep(sigma2):
    assert_exact("gaussian", sigma2, oracle=True)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 2], ids=str)
def test_gaussian_core_deep(sigma2):
    assert_exact("gaussian", sigma2, oracle=False, target=1e-4, max_runs=10**7)


# ---- the checker can fail ------------------------------------------------------------


def test_checker_rejects_the_wrong_distribution():
    enumeration = enumerate_sampler("gaussian", 1, target=1e-3)
    assert check(enumeration, "gaussian", 1).ok
    assert not check(enumeration, "gaussian", Fraction(11, 10)).ok
    assert not check(enumeration, "laplace", 1).ok


def test_checker_rejects_a_laplace_that_counts_zero_twice():
    """Algorithm 2 without its (B = 1, Y = 0) rejection: zero gets twice its mass."""

    def buggy(source):
        bits = reference.open_stream(source)
        while True:
            u = reference.uniform(bits, 7)
            if not reference.bernoulli_exp(bits, Fraction(u, 7)):
                reference.restart(bits)
                continue
            y = (u + 7 * reference.geometric_exp1(bits)) // 3
            return -y if reference.fair_bit(bits) else y

    result = check(enumerate_decisions(buggy, target=1e-3), "laplace", Fraction(7, 3))
    assert not result.ok and 0 in [f[0] for f in result.failures]


def test_checker_rejects_a_bernoulli_that_rounds_up():
    """A lazy Bernoulli(p) that answers True when p's expansion ends: P[True] too large."""

    def buggy(source):
        bits = reference.open_stream(source)
        n, d = 5, 8
        r = n
        while r:
            r *= 2
            digit = r >= d
            r -= d * digit
            if bits.bit() != digit:
                return bool(digit)
        return True

    result = check(enumerate_bits(buggy, target=1e-6), "bernoulli", Fraction(5, 8))
    assert not result.ok


def test_checker_is_inconclusive_when_the_target_is_not_reached():
    enumeration = enumerate_sampler("gaussian", 10, target=1e-3, max_runs=50)
    result = check(enumeration, "gaussian", 10)
    assert not enumeration.complete and not result.ok and not result.failures
    assert "INCONCLUSIVE" in result.report()


def test_enumeration_masses_add_up():
    enumeration = enumerate_sampler("laplace", Fraction(7, 3), target=1e-3)
    lows = sum(lo for lo, _ in enumeration.mass.values()) + enumeration.restart[0]
    highs = sum(hi for _, hi in enumeration.mass.values()) + enumeration.restart[1]
    assert lows == enumeration.resolved_lo
    # exp(-g) branches are bounded 2**-256 apart: the bounds are tight, but not equal
    assert 0 < highs - lows < mpq(enumeration.runs, 2**200)


# ---- the tapes themselves -------------------------------------------------------------


def test_exhaustion_is_its_own_error():
    for base in (ValueError, TypeError, OSError, RuntimeError, ArithmeticError):
        assert not issubclass(Exhausted, base)
    for draw in (sampler("gaussian", 10), sampler("gaussian", 10, oracle=True)):
        with pytest.raises(Exhausted) as info:
            draw(Tape("0"))
        assert info.value.request is None


def test_decision_tape_reports_the_pending_request_and_restarts():
    for oracle in (False, True):
        draw = sampler("gaussian", 90, oracle=oracle)
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([]))
        assert info.value.request == ("uniform", 10)  # t = floor(sqrt(90)) + 1
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([3]))
        assert info.value.request == (
            "bernoulli_exp",
            Fraction(3, 10),
        )  # D by the digits of exp(-3/10)
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([3, 1]))  # D = 1; V's first Bernoulli(exp(-1))
        assert info.value.request == ("bernoulli_exp", 1)
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([3, 1, 0]))  # V = 0, Y = 3: the sign
        assert info.value.request == ("bernoulli", Fraction(1, 2))
        with pytest.raises(Exhausted) as info:
            draw(
                DecisionTape([3, 1, 0, 0])
            )  # Y = 3: accept with exp(-(3 - 90/10)^2/180), by its digits
        assert info.value.request == ("bernoulli_exp", Fraction(1, 5))
        with pytest.raises(Restart):
            draw(DecisionTape([3, 0]))  # D = 0: reject and restart
        with pytest.raises(ValueError):
            draw(DecisionTape([10]))  # outside uniform(10)


def test_decision_tape_sees_inversion_as_bernoulli_exp_one_over_t():
    """t <= INVERSION_MAX: X ~ Geometric(1 - exp(-1/t)) is, as decisions, Bernoulli(exp(-1/t))
    successes before a failure (no U, D or V)."""
    for oracle in (False, True):
        draw = sampler("gaussian", 10, oracle=oracle)  # t = 4
        for prefix in ([], [1], [1, 1]):
            with pytest.raises(Exhausted) as info:
                draw(DecisionTape(prefix))
            assert info.value.request == ("bernoulli_exp", Fraction(1, 4))
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([1, 1, 0]))  # X = 2: the sign
        assert info.value.request == ("bernoulli", Fraction(1, 2))
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([1, 1, 0, 0]))  # Y = 2: accept with exp(-(2 - 10/4)^2/20)
        assert info.value.request == ("bernoulli_exp", Fraction(1, 80))
        with pytest.raises(Restart):
            draw(DecisionTape([0, 1]))  # X = 0 with sign -: reject and restart


def test_past_the_split_the_last_factor_runs_algorithm_1():
    """t = 4098 (r = 1): U = 5 is H = 2, L = 1.  D's first factor Bernoulli(exp(-4/t)) by digits,
    V = 0, B = 0, the acceptance at a = 4 by digits, then Algorithm 1 on L (2a + L)/(2 sigma^2)."""
    sigma2 = 4097**2
    t = 4098
    gamma_a = (4 - Fraction(sigma2, t)) ** 2 / (2 * sigma2)  # below 1: one draw by digits
    for oracle in (False, True):
        draw = sampler("gaussian", sigma2, oracle=oracle)
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([5]))
        assert info.value.request == ("bernoulli_exp", Fraction(4, t))
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([5, 1, 0, 0]))
        assert info.value.request == ("bernoulli_exp", gamma_a)
        with pytest.raises(Exhausted) as info:
            draw(DecisionTape([5, 1, 0, 0, 1]))
        assert info.value.request == ("bernoulli", Fraction(1 * (2 * 4 + 1), 2 * sigma2))
        assert draw(DecisionTape([5, 1, 0, 0, 1, 0])) == 5


@pytest.mark.parametrize(
    "sigma2",
    [10**10, 2**62, Fraction(2**61 + 1, 3), 2**64, 4097**2],
    ids=["1e10", "2^62", "(2^61+1)/3", "2^64", "4097^2"],
)
def test_acceptance_requests_match_the_oracle_exactly(sigma2):
    """Past 2**HIGH_BITS, Algorithm 3 accepts at the block start a by digits and then runs
    Algorithm 1 on L (2a + L)/(2 sigma^2), on one word, two words or GMP by size.  A
    perturbation of gamma by 1e-10 would hardly ever change a sampled bit, but every
    Bernoulli a decision tape meets states its exact probability: for several U (then D's
    first factor 1, V = 0, B = 0) and paths through the acceptance and Algorithm 1's loop,
    the core's requests must equal the oracle's."""
    t = (
        math.isqrt(
            sigma2.numerator // sigma2.denominator if isinstance(sigma2, Fraction) else sigma2
        )
        + 1
    )
    core, oracle = sampler("gaussian", sigma2), sampler("gaussian", sigma2, oracle=True)
    compared = 0
    r = reference.split_bits(t)
    for u in (0, 1, 2, 3, t // 3, t // 2, t - 2, t - 1):
        # U = u; D's first factor 1 (no decision when H = 0); V = 0; B = 0
        start = [u, 1, 0, 0] if u >> r else [u, 0, 0]
        for tail in ([], [1], [1, 1], [0], [1, 0], [1, 1, 1]):
            requests = []
            for draw in (core, oracle):
                try:
                    draw(DecisionTape(start + tail))
                    requests.append("done")
                except Exhausted as stop:
                    requests.append(stop.request)
                except Restart:
                    requests.append("restart")
            assert requests[0] == requests[1], (u, tail)
            compared += requests[0] not in ("done", "restart")
    assert compared >= 20
