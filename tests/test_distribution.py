"""Goodness of fit of the compiled samplers against their exact PMFs.

Each test draws >= 10**5 samples from a fixed-seed generator and runs a
chi-square test at level ALPHA = 1e-6: with a random seed, an exact sampler
fails a given test with probability at most 1e-6 (the chi-square approximation
is good here: every bin expects >= 20 samples).  The fixed seed makes CI
deterministic.  `test_gof_has_power` shows the same test rejects a sampler
whose sigma^2 is off by 5%, so passing means something.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _stats import ALPHA, chi2_gof, chi2_sf, exp_neg, gaussian_pmf, laplace_pmf

N = 200_000


def test_chi2_sf_matches_closed_forms():
    for x in (0.5, 3.0, 20.0, 60.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
        assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-12)
    for x, k in ((100.0, 50), (200.0, 120), (30.0, 10)):
        z = x / 2  # even dof: Q = e^{-z} sum_{i < k/2} z^i / i!
        exact = math.exp(-z) * sum(z**i / math.factorial(i) for i in range(k // 2))
        assert chi2_sf(x, k) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), 1, Fraction(5, 2), 100, 10**4], ids=str)
def test_gaussian_fits_exact_pmf(sigma2):
    x = dgauss.sample_gaussian(sigma2, N, rng=np.random.default_rng(11))
    stat, dof, p = chi2_gof(x, gaussian_pmf(Fraction(sigma2)))
    assert p > ALPHA, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"


def test_gaussian_on_gmp_path_fits():
    """sigma^2 = 10**10 runs the acceptance test on GMP integers.

    Bins are whole sigmas.  The discrete Gaussian's mass on [a, b) equals the
    continuous normal's mass on [a - 1/2, b - 1/2) up to about 0.01 / sigma^2
    (the normalising constant itself is exact to exp(-2 pi^2 sigma^2) by
    Poisson summation; the per-bin error is the midpoint rule's, measured in
    test_large_sample.py): 1e-12 at sigma = 10**5, far below what 2 * 10**5
    samples can see.
    """
    sigma = 10**5
    x = dgauss.sample_gaussian(sigma**2, N, rng=np.random.default_rng(12))
    edges = [k * sigma for k in range(-3, 4)]
    counts = np.histogram(x, bins=[-(2**62)] + edges + [2**62])[0]
    cdf = [0.0] + [0.5 * math.erfc(-(e - 0.5) / (sigma * math.sqrt(2))) for e in edges] + [1.0]
    masses = np.diff(cdf)
    stat = float(((counts - N * masses) ** 2 / (N * masses)).sum())
    assert chi2_sf(stat, len(counts) - 1) > ALPHA


@pytest.mark.parametrize("scale", [Fraction(1, 3), 1, Fraction(7, 3), 10], ids=str)
def test_laplace_fits_exact_pmf(scale):
    x = dgauss.sample_laplace(scale, N, rng=np.random.default_rng(13))
    stat, dof, p = chi2_gof(x, laplace_pmf(Fraction(scale)))
    assert p > ALPHA, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"


@pytest.mark.parametrize("gamma", [0, Fraction(1, 3), 1, Fraction(7, 3), 5], ids=str)
def test_bernoulli_exp_fits(gamma):
    x = dgauss.sample_bernoulli_exp(gamma, N, rng=np.random.default_rng(14))
    p = exp_neg(Fraction(gamma))
    ones = int(x.sum())
    if p == 1.0:
        assert ones == N
        return
    stat = (ones - N * p) ** 2 / (N * p) + ((N - ones) - N * (1 - p)) ** 2 / (N * (1 - p))
    assert chi2_sf(stat, 1) > ALPHA


def test_gof_has_power():
    """The Gaussian test rejects samples whose sigma^2 is 5% off, and a Laplace in place
    of a Gaussian."""
    x = dgauss.sample_gaussian(105, N, rng=np.random.default_rng(15))
    assert chi2_gof(x, gaussian_pmf(Fraction(100)))[2] < ALPHA
    y = dgauss.sample_laplace(7, N, rng=np.random.default_rng(16))
    assert chi2_gof(y, gaussian_pmf(Fraction(100)))[2] < ALPHA


def test_default_os_randomness_fits():
    """The default source (OS CSPRNG) gives the right distribution too."""
    x = dgauss.sample_gaussian(Fraction(5, 2), N)
    assert chi2_gof(x, gaussian_pmf(Fraction(5, 2)))[2] > ALPHA
