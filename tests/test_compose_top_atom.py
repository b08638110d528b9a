"""The PLD route just below a Laplace-only program's pure ε, against an independent formula.

There the composed loss has one atom above ε, the top one (every coordinate at its largest
loss |x|/t, at y ≤ 0), so δ(ε) = P(top)·(1 − e^{ε − ε_pure}) with
P(top) = Π_i (1/(1 + e^{−1/t_i}))^{k_i·(nonzero entries of x_i)}, for every ε from the
next atom down (ε_pure − min_i 2/t_i) to ε_pure.  The formula is checked against the exact
enumeration of tests/_compose_reference.py, then the gridded PLD route (forced onto its grid
for programs small enough to enumerate) and the public ``delta`` are checked against it.

At such ε the tilt is steep: a steep kind's tilted spread is nearly nil, and the window a
transform keeps for its powers can be shorter than its leaf.  A transform of length n must
then fold the leaf modulo n (:func:`dgauss.accounting._convolution._folded`); cropping it to
its first n points drops the top atom and with it nearly all of the tilted mass.
"""

from fractions import Fraction
from unittest import mock

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from _compose_reference import composed_delta
from dgauss.accounting import Laplace, _convolution, _grids, compose


def _pure(rel) -> Fraction:
    return sum((Fraction(sum(abs(x) for x in v) * k) / Fraction(t) for t, v, k in rel), Fraction(0))


def _gap(rel) -> Fraction:
    """The distance from the top atom to the next one down."""
    return min(2 / Fraction(t) for t, _, _ in rel)


def _top_delta(rel, eps: Fraction) -> mpmath.mpf:
    """δ(ε) for ε in [ε_pure − gap, ε_pure): P(top)·(1 − e^{ε − ε_pure}), at 50 digits."""
    pure = _pure(rel)
    assert pure - _gap(rel) <= eps < pure
    with mpmath.workdps(50):
        p = mpmath.mpf(1)
        for t, v, k in rel:
            tf = Fraction(t)
            tm = mpmath.mpf(tf.numerator) / tf.denominator
            p *= (1 / (1 + mpmath.exp(-1 / tm))) ** (k * sum(1 for x in v if x))
        d = eps - pure
        return p * -mpmath.expm1(mpmath.mpf(d.numerator) / d.denominator)


def _program(rel):
    return compose(*(Laplace(t, v if len(v) > 1 else v[0], k) for t, v, k in rel))


def _gridded():
    """The PLD route with its grid even where the atoms are few enough to enumerate."""
    return mock.patch.object(_grids, "ENUM_MAX_ATOMS", 0)


TWO_SCALES = [("0.358", [2], 5), ("3.55", [1], 2)]


@pytest.mark.parametrize(
    "rel",
    [TWO_SCALES, [("0.7", [1, -3], 2), ("2.42", [3], 1)], [("1.3", [2, 1], 3)]],
)
@pytest.mark.parametrize("share", [Fraction(1, 10**9), Fraction(1, 3), Fraction(1)])
def test_the_formula_is_the_exact_enumeration(rel, share):
    eps = _pure(rel) - share * _gap(rel)
    lo, hi = composed_delta([("laplace", t, v, k) for t, v, k in rel], eps)
    f = _top_delta(rel, eps)
    assert lo <= f * (1 + mpmath.mpf("1e-40")) and f <= hi * (1 + mpmath.mpf("1e-40"))


@pytest.mark.parametrize("eps", [Fraction("28.49634"), _pure(TWO_SCALES) - Fraction("1e-9")])
def test_on_the_grid_two_scales_near_pure_epsilon_are_not_below_the_truth(eps):
    """The gridded route read 2.9e-18 at 28.49634 (truth 2.84e-7) and 6e-21 at ε_pure − 1e-9
    (truth 2.4e-10) when the steep leaf (7,101 points) was cropped to its power's window."""
    with _gridded():
        pld = _program(TWO_SCALES)._pld_log_delta(float(eps))
    assert pld is not None
    truth = _top_delta(TWO_SCALES, Fraction(float(eps)))
    assert mpmath.exp(pld) >= truth
    assert mpmath.exp(pld) <= truth * 1.01  # and close: the top atom was kept


def test_the_public_delta_of_a_long_program_near_pure_epsilon_is_not_below_the_truth():
    """Too many atoms to enumerate (8,401 in the second kind), so the public ``delta`` reads
    the grid: it was 1e-10 of the truth here (e^−146.6 for e^−123.6)."""
    rel = [("0.7", [2], 5), ("355", [50], 168)]
    program = _program(rel)
    eps = _pure(rel) - _gap(rel) / 3
    truth = _top_delta(rel, eps)
    got = mpmath.exp(program.delta(eps, log=True))
    assert program.route(eps) == "PLD"
    assert truth <= got <= truth * mpmath.mpf("1.001")


def _convolved_delta(rel, eps: float) -> float:
    """δ(ε) of a Laplace-only program by direct convolution in floats (every term positive,
    so within a relative 1e-12 or so): each coordinate's count of steps j (mass ∝ e^{−j/t},
    loss (|x| − 2j)/t), each kind's k-fold sum, then Σ p·(1 − e^{ε−ℓ})⁺ over their product."""
    losses, probs = np.zeros(1), np.ones(1)
    for t, v, k in rel:
        tf = float(Fraction(t))
        r = np.exp(-1 / tf)
        for x in v:
            m = abs(x)
            j = np.arange(m + 1)
            one = np.exp(-j / tf) * (1 - r) / (1 + r)
            one[0], one[m] = 1 / (1 + r), np.exp(-m / tf) / (1 + r)
            summed = np.ones(1)
            for _ in range(k):
                summed = np.convolve(summed, one)
            loss = (k * m - 2 * np.arange(len(summed))) / tf
            keep = summed > 1e-300
            losses = (losses[:, None] + loss[keep][None, :]).ravel()
            probs = (probs[:, None] * summed[keep][None, :]).ravel()
    return float((probs * np.where(losses > eps, -np.expm1(eps - losses), 0.0)).sum())


def test_the_public_delta_at_a_percent_is_not_a_billion_times_below_the_truth():
    """Five steep coordinates and eight wide ones (16,001 atoms: the grid), one below pure ε
    minus 5: δ is 1.09%, and the steep leaf (its top nearly all of its tilted mass) is longer
    than its power's window; cropped, the public ``delta`` read 1.7e-11."""
    rel = [("0.1", [3], 5), ("4000.1", [2000], 8)]
    program = _program(rel)
    eps = Fraction(153)
    truth = _convolved_delta(rel, 153.0)
    assert 0.0108 < truth < 0.0110
    got = float(np.exp(program.delta(eps, log=True)))
    assert program.route(eps) == "PLD"
    assert truth * (1 - 1e-9) <= got <= truth * 1.001


@pytest.mark.parametrize("length, n", [(7101, 1458), (12, 5), (10, 10), (3, 8)])
def test_a_fold_is_the_circular_reading_of_the_linear_convolution(length, n):
    """Folded modulo n, two vectors' circular convolution is their linear one folded."""
    rng = np.random.default_rng(length)
    a, b = rng.random(length), rng.random(length // 2 + 1)
    fa, ma = _convolution._folded(a, n)
    fb, _ = _convolution._folded(b, n)
    assert len(fa) == min(length, n)  # a vector already within n is left as it is
    assert ma == max(1, -(-length // n))
    circular = np.fft.irfft(np.fft.rfft(fa, n) * np.fft.rfft(fb, n), n)
    linear = np.convolve(a, b)
    folded = np.zeros(n)
    np.add.at(folded, np.arange(len(linear)) % n, linear)
    assert np.allclose(circular, folded, rtol=0, atol=1e-9 * linear.sum())


_kind = st.tuples(
    st.sampled_from(["0.2", "0.358", "0.7", "1.3", "3.55", "7.1", "35.5"]),
    st.sampled_from([[1], [2], [3], [1, -2], [2, 2, 1]]),
    st.integers(1, 6),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    rel=st.lists(_kind, min_size=1, max_size=3),
    share=st.sampled_from(["1e-9", "1e-6", "1e-3", "0.1", "0.5", "0.999", "1"]),
)
def test_on_the_grid_a_laplace_program_near_pure_epsilon_is_never_below_the_truth(rel, share):
    """Random Laplace-only programs, read on the grid anywhere in the top atom's gap."""
    pure = _pure(rel)
    ef = float(pure - Fraction(share) * _gap(rel))
    eps = Fraction(ef)  # the float the route reads at, exactly
    assume(pure - _gap(rel) <= eps < pure)
    with _gridded():
        pld = _program(rel)._pld_log_delta(ef)
    assume(pld is not None)  # out of the route's range: another route answers
    assert mpmath.exp(pld) >= _top_delta(rel, eps)
