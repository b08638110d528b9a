"""The closed forms at k = 10^7 composed queries, against truths written here in mpmath.

``laplace_epsilon(10, k=10**7, delta="1e-6")`` took 38 s and ``gaussian_delta(100, 1000,
k=10**7)`` 16 s; they now take seconds or less (benchmarks/bench_large_k.py).  These tests
check that the faster routes are still right: Eq. 49's binomial sum term by term with
mpmath's log-gamma, and Theorem 7 where its threshold lies left of the centre (m ≤ 0) against
the continuous Gaussian's δ, which the discrete one matches to O(1/σ) at σ ~ 10^7.
"""

import math
from fractions import Fraction

import mpmath
import pytest

from dgauss import accounting as A

mp = mpmath.mp.clone()
mp.dps = 30


def laplace_truth(t, eps, sens, k):
    """Eq. 49: (1 + e^{ε0})^{−k} Σ_{l ≥ first} C(k,l)(e^{lε0} − e^{ε + (k−l)ε0}), summed term by
    term over ±14 standard deviations of the binomial around its mode (the rest is below
    e^{−98} of the sum)."""
    t, eps = Fraction(t), Fraction(eps)
    e0 = mp.mpf(sens) / (mp.mpf(t.numerator) / t.denominator)
    e = mp.mpf(eps.numerator) / eps.denominator
    v = (k + eps * t / sens) / 2
    first = v.numerator // v.denominator + 1
    p = float(mp.exp(e0) / (1 + mp.exp(e0)))
    sd = math.sqrt(k * p * (1 - p))
    lo, hi = max(first, int(k * p - 14 * sd)), min(k, int(k * p + 14 * sd) + 1)
    log_k, norm = mp.loggamma(k + 1), k * mp.log1p(mp.exp(e0))
    total = mp.mpf(0)
    for l in range(lo, hi + 1):
        log_b = log_k - mp.loggamma(l + 1) - mp.loggamma(k - l + 1) - norm
        total += mp.exp(log_b + l * e0) - mp.exp(log_b + e + (k - l) * e0)
    return total


@pytest.mark.parametrize(
    "scale, eps, sens, k",
    [
        (10, 1, 1, 100),
        ("7/3", "2.5", 2, 57),
        (10, 50000, 1, 10**7),
        (1000, "19.4", 1, 10**7),
        (3, 22000, 2, 10**5),
    ],
)
def test_laplace_delta_at_large_k(scale, eps, sens, k):
    truth = laplace_truth(scale, eps, sens, k)
    found = A.laplace_delta(scale, eps, sens, k)
    assert found >= truth  # never below
    assert found <= truth * (1 + mp.mpf(10) ** -9)


@pytest.mark.long
def test_laplace_epsilon_at_k_10_million():
    """The issue's slow call: the ε returned certifies δ = 1e-6, and 0.1% less does not."""
    eps = A.laplace_epsilon(10, k=10**7, delta="1e-6")
    assert laplace_truth(10, Fraction(eps), 1, 10**7) <= Fraction("1e-6")
    assert laplace_truth(10, Fraction(eps) * Fraction(999, 1000), 1, 10**7) > Fraction("1e-6")


def continuous_delta(rho, eps):
    """δ(ε) of the continuous Gaussian mechanism with ρ = Δ²/(2σ²)."""
    phi = lambda x: mpmath.erfc(-x / mpmath.sqrt(2)) / 2  # noqa: E731
    rho, eps = mpmath.mpf(rho), mpmath.mpf(eps)
    a = eps / mpmath.sqrt(2 * rho)
    b = mpmath.sqrt(rho / 2)
    return phi(-a + b) - mpmath.exp(eps) * phi(-a - b)


@pytest.mark.parametrize("sigma2, eps", [(5 * 10**6, "0.5"), (10**6, "2"), (2 * 10**7, "0.1")])
def test_gaussian_delta_left_of_the_centre_at_k_10_million(sigma2, eps):
    """ε below ρ: Theorem 7's sum starts left of the centre (the route that never closed)."""
    k = 10**7
    found = A.gaussian_delta(sigma2, eps, k=k)
    truth = continuous_delta(Fraction(k, 2 * sigma2), Fraction(eps))
    # the discrete Gaussian at σ'² = kσ² ≥ 10^13 is the continuous one to O(1/σ') ~ 1e-6
    assert found == pytest.approx(float(truth), rel=1e-5)


def test_gaussian_delta_near_one_at_k_10_million():
    assert A.gaussian_delta(100, 1000, k=10**7) == 1.0
    assert A.gaussian_delta(100, 1000, k=10**7, log=True) == 0.0
    assert A.gaussian_delta(100, 1000, [1, 2], k=10**7) == 1.0


def test_theorem7_left_of_the_centre_at_one_query():
    """m ≤ 0 at small σ² too: the direct sum Σ_y max(0, p(y) − e^ε p(y + Δ)) in mpmath."""
    for s, eps, sens in [(1, "0.1", 2), (3, "0.2", 3), (Fraction(1, 2), 0, 1)]:
        ys = range(-60, 61)
        weights = {y: mpmath.exp(-mpmath.mpf(y * y) / (2 * mpmath.mpf(s))) for y in ys}
        z = sum(weights.values())
        e = mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator
        truth = (
            sum(
                max(mpmath.mpf(0), weights[y] - mpmath.exp(e) * weights.get(y + sens, 0))
                for y in ys
            )
            / z
        )
        # one coordinate moved by exactly sens: the vector [sens] (a scalar ≥ 2 is the ℓ2 ball)
        assert A.gaussian_delta(s, eps, [sens]) == pytest.approx(float(truth), rel=1e-12)


def test_calibration_at_k_10_million():
    sigma2 = A.calibrate_gaussian(1, "1e-6", k=10**7)
    assert sigma2 == A.calibrate_gaussian(1, "1e-6", k=10**7, round_up_safe=True)
    rho = Fraction(10**7, 2 * sigma2)
    # the continuous Gaussian of the same ρ, within O(1/σ') of the truth; the grid step is 10^5
    assert continuous_delta(rho, 1) <= Fraction("1e-6") * (1 + Fraction(1, 10**4))
    assert continuous_delta(Fraction(10**7, 2 * (sigma2 - 10**5)), 1) > Fraction("1e-6")
