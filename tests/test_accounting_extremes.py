"""The accounting at the edges of the float range: σ², scales, ε and δ far below or above it.

Every public function either answers with a valid bound or raises an error saying why; none
fails on a float conversion ("integer division result too large for a float") or hangs.  The
truths used here are elementary: with σ² = 10^-400, N_Z(0, σ²) is 0 except with probability
below e^{-10^399}, so one query has δ(ε) = 1 for every ε below its loss 1/(2σ²) = 5·10^399,
and the ε at any δ < 1/2 is about that loss, beyond the float range (an upper bound: +inf).
"""

import math
from fractions import Fraction

import pytest

import dgauss
from dgauss import accounting as A
from dgauss.accounting import Gaussian, Laplace, compose

TINY = ["1e-400", "1e-310"]  # σ² or scale whose ρ (or 1/t) is past the float range
HUGE = ["1e310", "1e400"]
EPS = ["0", "1e-400", "1", "1e310"]


@pytest.mark.parametrize("sigma2", TINY)
@pytest.mark.parametrize("eps", ["0", "1e-400", "1", "1e300"])
def test_a_nearly_noiseless_gaussian_has_delta_one(sigma2, eps):
    assert A.gaussian_delta(sigma2, eps) == 1.0
    assert A.gaussian_delta(sigma2, eps, log=True) == 0.0
    assert A.gaussian_delta(sigma2, eps, [1, 2], k=3) == 1.0
    assert dgauss.GaussianMechanism(sigma2=sigma2).delta(eps) == 1.0
    assert compose(Gaussian(sigma2), Laplace(3)).delta(eps) == 1.0
    assert compose(Gaussian(sigma2), Gaussian("3.3")).delta(eps) == 1.0


@pytest.mark.parametrize("sigma2", TINY)
@pytest.mark.parametrize(
    "delta",  # about 10 s each: two of the three with -m slow
    [
        pytest.param("1e-400", marks=pytest.mark.slow),
        "1e-6",
        pytest.param("0.25", marks=pytest.mark.slow),
    ],
)
def test_a_nearly_noiseless_gaussian_has_epsilon_past_the_floats(sigma2, delta):
    assert A.gaussian_epsilon(sigma2, delta) == math.inf
    assert compose(Gaussian(sigma2), Laplace(2)).epsilon(delta) == math.inf
    assert A.cdp_eps(A.gaussian_rho(sigma2), delta) == math.inf


@pytest.mark.parametrize("scale", TINY)
def test_a_nearly_noiseless_laplace(scale):
    assert A.laplace_epsilon(scale) == math.inf  # k·Δ/t = 10^400: +inf is its upper bound
    assert A.laplace_delta(scale, 1) == 1.0
    assert compose(Laplace(scale), Laplace("3.3")).delta(1) == 1.0
    assert A.laplace_interval(scale, "0.05") == (0, 0)


@pytest.mark.parametrize("param", HUGE)
@pytest.mark.parametrize("eps", EPS)
@pytest.mark.long
def test_huge_noise_answers(param, eps):
    """Noise past the float range: δ is tiny but certified (≥ 0, ≤ the zCDP bound)."""
    d = A.gaussian_delta(param, eps)
    assert 0 <= d <= 1 and d <= A.cdp_delta(A.gaussian_rho(param), eps)
    program = compose(Gaussian(param), Laplace(param))
    assert 0 <= program.delta(eps) <= 1
    assert program.delta(eps) <= A.cdp_delta(program.rho, eps)
    assert 0 <= A.laplace_delta(param, eps) <= 1


@pytest.mark.parametrize("param", HUGE)
def test_a_variance_past_the_float_range_says_so(param):
    with pytest.raises(OverflowError, match="variance"):
        A.laplace_variance(param)
    with pytest.raises(OverflowError, match="variance"):
        A.gaussian_variance(param)


def test_laplace_interval_at_a_huge_scale_is_quick_and_tight():
    """w for P[|X| > w] ≤ α at t = 10^300: it was found by counting up from a guess 2^-64
    off (about 10^281 steps).  Here w is checked against the closed form at w and w − 1:
    ln P[|X| > w] = ln 2 − (w + 1)/t − ln(2 + expm1(−1/t)), in 420 digits (w has 301)."""
    import mpmath

    t = 10**300
    (lo, hi) = A.laplace_interval(t, "0.05")
    assert lo == -hi
    with mpmath.workdps(420):
        log_alpha = mpmath.log(mpmath.mpf(1) / 20)
        const = mpmath.log(2) - mpmath.log(2 + mpmath.expm1(-1 / mpmath.mpf(t)))

        def log_outside(w):
            return const - mpmath.mpf(w + 1) / t

        assert log_outside(hi) <= log_alpha < log_outside(hi - 1)


@pytest.mark.parametrize("eps, delta", [("1e-400", "1e-400"), ("1e-20", "1e-320")])
def test_an_accountant_with_a_budget_past_the_floats(eps, delta):
    """A δ budget below the float range is checked on ln δ; the next σ² is calibrated."""
    acc = dgauss.Accountant(epsilon=eps, delta=delta)
    sigma2 = acc.calibrate_gaussian()
    log_budget = math.log(Fraction(delta).numerator) - math.log(Fraction(delta).denominator)
    assert compose(Gaussian(sigma2)).delta(eps, log=True) <= log_budget
    acc.add_gaussian_noise([1, 2, 3], sigma2=sigma2)  # admitted
    assert acc.spent.delta(eps, log=True) <= log_budget
    assert f"delta={delta}" in repr(acc) and f"epsilon={eps}" in repr(acc), repr(acc)
    assert f"ε = {eps}" in acc.report() and "δ = " in acc.report()
    with pytest.raises(dgauss.PrivacyBudgetError):
        acc.add_gaussian_noise([1, 2, 3], sigma2=sigma2)


def test_a_rho_budget_past_the_floats_calibrates_at_once():
    acc = dgauss.Accountant(rho="1e-400")
    assert acc.calibrate_gaussian() == Fraction(5) * Fraction(10) ** 399


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["account", "--sigma2", "1e-400"], ["1.000", "inf"]),  # δ = 1; ε past the floats
        (["account", "--laplace", "1e-400"], ["1.000e400"]),
        (["account", "--gaussian", "1e-400", "--laplace", "1e-400", "--eps", "1"], ["inf"]),
        (["account", "--sigma2", "1e400"], ["e^-1.797e308"]),  # ln δ past the floats: a bound
    ],
)
@pytest.mark.long
def test_the_command_line_answers_past_the_float_range(capsys, argv, shown):
    from dgauss import cli

    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    for text in shown:
        assert text in out
