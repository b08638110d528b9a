"""Statistics for the distribution tests: exact PMFs and a chi-square test.

PMFs are computed in ``decimal`` at 50 significant digits, far beyond what a
goodness-of-fit test on 10**5..10**7 samples can resolve.  Floats appear only
here, in the test's bookkeeping, never on the sampling path.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

#: Each distribution test fails by chance with probability at most ALPHA when
#: the sampler is exact (OpenDP uses the same rate).
ALPHA = 1e-6

_PREC = 50


def _dec(q: Fraction) -> Decimal:
    return Decimal(q.numerator) / Decimal(q.denominator)


def gaussian_pmf(sigma2: Fraction, tail_sd: int = 40) -> dict[int, float]:
    """P[X = x] of N_Z(0, sigma2) for |x| <= tail_sd * sigma + 10 (the rest is < 1e-300)."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        s2 = _dec(Fraction(sigma2))
        bound = int(tail_sd * math.sqrt(float(sigma2))) + 10
        weights = {x: (-(Decimal(x) ** 2) / (2 * s2)).exp() for x in range(-bound, bound + 1)}
        total = sum(weights.values())
        return {x: float(w / total) for x, w in weights.items()}


def laplace_pmf(scale: Fraction, tail: int = 60) -> dict[int, float]:
    """P[X = x] = (e^{1/t} - 1)/(e^{1/t} + 1) e^{-|x|/t} for |x| <= tail * t + 10."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        t = _dec(Fraction(scale))
        a = (1 / t).exp()
        c = (a - 1) / (a + 1)
        bound = int(tail * float(scale)) + 10
        return {x: float(c * (-(Decimal(abs(x)) / t)).exp()) for x in range(-bound, bound + 1)}


def exp_neg(gamma: Fraction) -> float:
    """exp(-gamma), correctly rounded enough for a Bernoulli test."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        return float((-_dec(Fraction(gamma))).exp())


def chi2_sf(x: float, dof: int) -> float:
    """P[chi2(dof) >= x]: the regularised upper incomplete gamma Q(dof/2, x/2)."""
    a, z = dof / 2.0, x / 2.0
    if z <= 0:
        return 1.0
    log_prefactor = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # series for the lower function P, then Q = 1 - P
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= z / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    # continued fraction for Q (modified Lentz)
    tiny = 1e-300
    b = z + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(log_prefactor) * h


def chi2_gof(samples: np.ndarray, pmf: dict[int, float], min_expected: float = 20.0):
    """Chi-square goodness of fit of integer samples against ``pmf``.

    Values are binned one by one where the expected count is at least
    ``min_expected``; each tail is merged into the outermost such bin
    ("x <= lo" and "x >= hi"), so every bin has enough expected mass.  A
    sample outside the support of ``pmf`` fails outright.
    Returns (statistic, dof, p-value).
    """
    n = samples.size
    values, counts = np.unique(
        np.asarray(samples).astype(object).astype(np.int64), return_counts=True
    )
    observed = dict(zip(values.tolist(), counts.tolist(), strict=True))
    if any(x not in pmf for x in observed):
        return math.inf, 0, 0.0
    central = sorted(x for x, p in pmf.items() if p * n >= min_expected)
    lo, hi = central[0], central[-1]
    exp_bins = {x: pmf[x] for x in central}
    obs_bins = {x: observed.get(x, 0) for x in central}
    for x, p in pmf.items():
        if x < lo or x > hi:
            edge = lo if x < lo else hi
            exp_bins[edge] += p
            obs_bins[edge] += observed.get(x, 0)
    stat = sum((obs_bins[x] - n * p) ** 2 / (n * p) for x, p in exp_bins.items())
    dof = len(exp_bins) - 1
    return stat, dof, chi2_sf(stat, dof)
