"""dgauss.textbook — Algorithms 1–3 as printed — proven by the same enumeration as the core.

Bernoulli(exp(−γ)) is enumerated on bit tapes; the discrete Laplace and Gaussian on
decision tapes (the outcomes of uniform(m) and Bernoulli(p), with exact probabilities,
the loops' restarts merged), and every enumerated probability must enclose the true one
(``dgauss.testing.check``).  A textbook with a mistake of the kind the course report's
garbled code makes fails the same check.
"""

from fractions import Fraction

import numpy as np
import pytest

from dgauss import reference, testing, textbook


def draw_of(function, *args):
    def draw(source):
        return function(reference.open_stream(source), *args)

    return draw


@pytest.mark.parametrize("gamma", ["1/3", "1", "7/3"])
def test_algorithm_1_on_bit_tapes(gamma):
    enumeration = testing.enumerate_bits(
        draw_of(textbook.bernoulli_exp, Fraction(gamma)), target=1e-3
    )
    result = testing.check(enumeration, "bernoulli_exp", gamma)
    assert result.ok, result.report()


@pytest.mark.parametrize("t, s", [(1, 1), (7, 3), (3, 2)])
def test_algorithm_2_on_decision_tapes(t, s):
    enumeration = testing.enumerate_decisions(draw_of(textbook.discrete_laplace, t, s), target=1e-3)
    result = testing.check(enumeration, "laplace", Fraction(t, s))
    assert result.ok, result.report()


@pytest.mark.parametrize("sigma2, target", [("1/2", 1e-3), ("2", 3e-3), ("9/4", 1e-2)])
@pytest.mark.long
def test_algorithm_3_on_decision_tapes(sigma2, target):
    enumeration = testing.enumerate_decisions(
        draw_of(textbook.discrete_gaussian, Fraction(sigma2)), target=target
    )
    result = testing.check(enumeration, "gaussian", sigma2)
    assert result.ok, result.report()


@pytest.mark.long
def test_a_wrong_textbook_fails_the_same_check(monkeypatch):
    """Algorithm 3 with the acceptance's factor 2 dropped is caught."""

    def wrong_gaussian(bits, sigma2):
        t = 2
        while True:
            y = textbook.discrete_laplace(bits, t)
            if textbook.bernoulli_exp(bits, (abs(y) - sigma2 / t) ** 2 / sigma2):
                return y
            reference.restart(bits)

    enumeration = testing.enumerate_decisions(draw_of(wrong_gaussian, Fraction(2)), target=1e-2)
    assert testing.check(enumeration, "gaussian", "2").failures  # refuted, not just inconclusive


def test_textbook_samples_from_a_generator():
    bits = reference.open_stream(np.random.PCG64(5))
    values = [textbook.discrete_gaussian(bits, Fraction(4)) for _ in range(2000)]
    assert abs(np.mean(values)) < 0.3 and 3.0 < np.var(values) < 5.0
