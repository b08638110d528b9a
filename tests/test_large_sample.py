"""Large-sample distribution suite: 10**7 draws per case from the OS CSPRNG.

Every case draws N = 10**7 samples with ``rng=None`` (the production source),
in chunks of 10**6, keeping only exact tallies: histogram counts and integer
sums of x and x**2 as Python ints, so memory stays bounded and the object
arrays of sigma2 = 10**100 are summed exactly.  The cases cover the Gaussian's
inversion (sigma2 <= 2**24; enveloped from just past it, 2**24 + 1, to 2**100, with
2 * 10**9, 10**10 and 10**20 between) and its rejection loops past 2**100 (10**100),
and the Laplace sampler from scale 1/3 to 2**40 (enveloped from 2**20 + 1).

Each case runs four sub-tests against the exact distribution:

1. ``gof``: chi-square goodness of fit.  Where sigma (or the Laplace scale)
   is at most 1000 the bins are single integers, tails merged into the
   outermost bins exactly as ``_stats.chi2_gof`` does (every bin expects at
   least 20 samples); above, 20 bins of about equal mass whose edges are
   normal (Laplace) quantiles in units of sigma (scale).
2. ``mean``: z = sum(x) / sqrt(n Var X) against E[X] = 0.
3. ``variance``: the second moment about the known centre,
   m2 = sum(x**2) / n, has E[m2] = Var X and Var(m2) = (E[X**4] - Var X**2) / n
   exactly; z = (m2 - Var X) / sqrt(Var m2).
4. ``symmetry``: given m nonzero samples, the number of positive ones is
   Binomial(m, 1/2); z = (positives - negatives) / sqrt(m).

Normal p-values are two-sided, p = erfc(|z| / sqrt 2).

Error budget: each sub-test rejects at p <= ALPHA / 4 = 2.5e-7, so by the
union (Bonferroni) bound, which needs no independence between the four, an
exact sampler fails a case with probability at most ALPHA = 1e-6.  The levels
rest on the chi-square and normal approximations, which at n = 10**7 are
accurate to a few per cent of the nominal tail mass (the skewness of x**2
divided by sqrt(n) is at most 2.5e-3, and to first order its effect cancels
between the two tails).  Over the 21 cases the suite fails by
chance with probability at most 2.1e-5.  ``test_statistics_have_power`` shows
the statistics reject a sampler with sigma^2 5% off or shifted by one.

The whole module is marked slow (deselected by default):

    PYTHONPATH=src python3 -m pytest tests/test_large_sample.py -m slow

or, printing a table of every case and exiting non-zero on a failure:

    PYTHONPATH=src python3 tests/test_large_sample.py [--n N | --quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import pairwise
from statistics import NormalDist

import numpy as np
import pytest

import dgauss
from _stats import ALPHA, chi2_gof, chi2_sf, gaussian_pmf, laplace_pmf

pytestmark = pytest.mark.slow

#: Samples per case, per case with --quick, and per chunk drawn.
N = 10**7
QUICK_N = 10**6
CHUNK = 10**6
#: The sub-tests of a case, and the level of each (Bonferroni split of ALPHA).
SUBTESTS = ("gof", "mean", "variance", "symmetry")
LEVEL = ALPHA / len(SUBTESTS)
#: Largest sigma (Gaussian) or scale (Laplace) binned integer by integer.
PER_INTEGER_MAX = 1000
#: Number of bins in the coarse goodness-of-fit test.
COARSE_BINS = 20
#: Decimal digits for exact masses and moments (as in _stats).
PREC = 50

Draw = Callable[[int], np.ndarray]


# --------------------------------------------------------------------------
# The exact distributions: bins with their masses, second and fourth moments
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """What an exact sampler must match.

    ``edges`` e_0 < e_1 < ... split the integers into the bins x < e_0,
    e_0 <= x < e_1, ..., x >= e_last; ``masses`` are their probabilities.
    ``var`` = E[X^2] = Var X (the mean is 0) and ``fourth`` = E[X^4].
    """

    edges: tuple[int, ...]
    masses: tuple[float, ...]
    var: Decimal
    fourth: Decimal


def _dec(q: Fraction) -> Decimal:
    """``q`` in the current Decimal context."""
    return Decimal(q.numerator) / Decimal(q.denominator)


def integer_bins(
    pmf: Mapping[int, float], n: int, min_expected: float = 20.0
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``chi2_gof``'s bins as (edges, masses).

    One bin per integer expecting at least ``min_expected`` of ``n`` samples;
    each tail joins the outermost such bin (x <= lo, x >= hi).
    """
    central = [x for x, p in pmf.items() if p * n >= min_expected]
    lo, hi = min(central), max(central)
    if lo == hi:
        raise ValueError(f"n = {n} is too small for a goodness-of-fit test")
    below = math.fsum(p for x, p in pmf.items() if x <= lo)
    above = math.fsum(p for x, p in pmf.items() if x >= hi)
    masses = (below, *(pmf[x] for x in range(lo + 1, hi)), above)
    return tuple(range(lo + 1, hi + 1)), masses


def _quantiles(inverse_cdf: Callable[[float], float]) -> Iterator[Fraction]:
    """The COARSE_BINS-quantiles of a standard law, rounded to 3 decimals."""
    for k in range(1, COARSE_BINS):
        yield Fraction(round(1000 * inverse_cdf(k / COARSE_BINS)), 1000)


def gaussian_coarse_bins(sigma2: Fraction) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """About equal-mass bins for N_Z(0, sigma2), edges at normal quantiles times sigma.

    The mass of the integers below e is taken as the normal CDF with a
    continuity correction, Phi((e - 1/2) / sigma).  This is the midpoint rule
    for the normal density, whose Euler-Maclaurin error is about
    z phi(z) / (24 sigma^2) <= 0.0101 / sigma^2 (z = (e - 1/2) / sigma; checked
    by ``test_continuity_corrected_cdf_error``), while the normalising
    constants agree to a relative exp(-2 pi^2 sigma^2) (Poisson summation).
    For sigma^2 > 10**6, where these bins are used, the error is below 1e-8
    per bin; at n = 10**7 it shifts the chi-square statistic by less than
    1e-3, and by less than 1e-12 on the GMP path (sigma^2 >= 2 * 10**9).
    Big sigma2 is handled exactly: (e - 1/2)^2 / sigma2 is formed as a
    Fraction before becoming a float.
    """

    def edge(z: Fraction) -> int:
        magnitude = math.isqrt(math.floor(z * z * sigma2))
        return -magnitude if z < 0 else magnitude

    def below(e: int) -> float:
        half = Fraction(2 * e - 1, 2)
        z = math.copysign(math.sqrt(float(half * half / sigma2)), half)
        return 0.5 * math.erfc(-z / math.sqrt(2))

    edges = tuple(edge(z) for z in _quantiles(NormalDist().inv_cdf))
    cdf = [0.0, *(below(e) for e in edges), 1.0]
    return edges, tuple(b - a for a, b in pairwise(cdf))


def _standard_laplace_quantile(q: float) -> float:
    """Inverse CDF of the density e^{-|z|} / 2."""
    return math.log(2 * q) if q < 0.5 else -math.log(2 * (1 - q))


def laplace_below(e: int, scale: Fraction) -> Decimal:
    """P[X < e] for the discrete Laplace of scale t, exactly (to PREC digits).

    With q = e^{-1/t}, P[X = x] = (1 - q) / (1 + q) q^|x|, so for k >= 1
    P[X >= k] = (1 - q) / (1 + q) * q^k / (1 - q) = q^k / (1 + q), and by
    symmetry P[X < e] = P[X >= 1 - e] for e <= 0.
    """
    with localcontext() as ctx:
        ctx.prec = PREC
        t = _dec(scale)
        q = (-1 / t).exp()
        if e >= 1:
            return 1 - (-e / t).exp() / (1 + q)
        return (-(1 - e) / t).exp() / (1 + q)


def laplace_coarse_bins(scale: Fraction) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """About equal-mass bins for the discrete Laplace, edges at Laplace quantiles times scale."""
    edges = tuple(round(z * scale) for z in _quantiles(_standard_laplace_quantile))
    with localcontext() as ctx:
        ctx.prec = PREC
        cdf = [Decimal(0), *(laplace_below(e, scale) for e in edges), Decimal(1)]
        return edges, tuple(float(b - a) for a, b in pairwise(cdf))


def gaussian_moments(sigma2: Fraction) -> tuple[Decimal, Decimal]:
    """(E[X^2], E[X^4]) of N_Z(0, sigma2), summed in Decimal.

    The sum runs over |x| <= 40 sigma + 10, the range of ``gaussian_pmf``;
    the rest weighs less than e^{-800}.
    """
    with localcontext() as ctx:
        ctx.prec = PREC
        s2 = _dec(sigma2)
        bound = int(40 * math.sqrt(sigma2)) + 10
        weights = [(-(Decimal(x) ** 2) / (2 * s2)).exp() for x in range(1, bound + 1)]
        total = 1 + 2 * sum(weights)
        second = 2 * sum(x**2 * w for x, w in enumerate(weights, 1)) / total
        fourth = 2 * sum(x**4 * w for x, w in enumerate(weights, 1)) / total
        return second, fourth


def laplace_moments(scale: Fraction) -> tuple[Decimal, Decimal]:
    """(E[X^2], E[X^4]) of the discrete Laplace: 2q/(1-q)^2 and 2q(1+10q+q^2)/(1-q)^4, q = e^{-1/t}.

    From sum_{x>=1} x^2 q^x = q(1+q)/(1-q)^3 and
    sum_{x>=1} x^4 q^x = q(1+q)(1+10q+q^2)/(1-q)^5, times 2(1-q)/(1+q).
    """
    with localcontext() as ctx:
        ctx.prec = PREC
        q = (-1 / _dec(scale)).exp()
        return 2 * q / (1 - q) ** 2, 2 * q * (1 + 10 * q + q * q) / (1 - q) ** 4


def gaussian_model(sigma2: Fraction, n: int) -> Model:
    """The exact N_Z(0, sigma2), binned for ``n`` samples."""
    if sigma2 <= PER_INTEGER_MAX**2:
        return Model(*integer_bins(gaussian_pmf(sigma2), n), *gaussian_moments(sigma2))
    # Poisson summation: E[X^2] = sigma^2 - O(sigma^4 e^{-2 pi^2 sigma^2}) and
    # E[X^4] = 3 sigma^4 (1 + O(sigma^4 e^{-2 pi^2 sigma^2})), so for
    # sigma^2 > 10**6 both are exact far below 1e-100 relative
    # (test_gaussian_moments_for_large_sigma checks this at sigma^2 = 10**6).
    with localcontext() as ctx:
        ctx.prec = PREC
        var = _dec(sigma2)
        return Model(*gaussian_coarse_bins(sigma2), var, 3 * var * var)


def laplace_model(scale: Fraction, n: int) -> Model:
    """The exact discrete Laplace of scale ``scale``, binned for ``n`` samples."""
    if scale <= PER_INTEGER_MAX:
        bins = integer_bins(laplace_pmf(scale), n)
    else:
        bins = laplace_coarse_bins(scale)
    return Model(*bins, *laplace_moments(scale))


# --------------------------------------------------------------------------
# Exact tallies of a sample drawn in chunks
# --------------------------------------------------------------------------


def power_sums(chunk: np.ndarray) -> tuple[int, int]:
    """(sum x, sum x^2) of an integer array, exactly, as Python ints.

    int64 arithmetic is used when it cannot overflow (max|x|^2 * size < 2**63);
    otherwise (e.g. sigma2 = 10**20 in int64, or object arrays) Python ints.
    """
    if chunk.dtype == np.int64:
        bound = max(-int(chunk.min()), int(chunk.max()))
        if bound * bound * chunk.size < 2**63:
            return int(chunk.sum()), int(np.dot(chunk, chunk))
    values = chunk.tolist()
    return sum(values), sum(v * v for v in values)


class Tally:
    """Exact running counts of a sample: bin counts, power sums, signs."""

    def __init__(self, edges: Sequence[int]):
        self.edges = list(edges)
        self.bins = np.zeros(len(self.edges) + 1, dtype=np.int64)
        self.n = self.sum1 = self.sum2 = self.positive = self.negative = 0

    def add(self, chunk: np.ndarray) -> None:
        """Count one chunk of samples (int64 or object array)."""
        index = np.searchsorted(np.array(self.edges, dtype=chunk.dtype), chunk, side="right")
        self.bins += np.bincount(index, minlength=self.bins.size)
        sum1, sum2 = power_sums(chunk)
        self.sum1 += sum1
        self.sum2 += sum2
        self.positive += int(np.count_nonzero(chunk > 0))
        self.negative += int(np.count_nonzero(chunk < 0))
        self.n += chunk.size


# --------------------------------------------------------------------------
# Statistics and cases
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SubTest:
    """One statistic: how it reads (``shown``) and its p-value."""

    name: str
    shown: str
    p: float

    @property
    def passed(self) -> bool:
        return self.p > LEVEL


def _normal(name: str, z: float) -> SubTest:
    """A z-score with its two-sided normal p-value."""
    return SubTest(name, f"z={z:+.2f}", math.erfc(abs(z) / math.sqrt(2)))


def evaluate(model: Model, tally: Tally) -> dict[str, SubTest]:
    """The four sub-tests of ``tally`` against ``model``, by name."""
    n = tally.n
    expected = n * np.array(model.masses)
    chi2 = float(((tally.bins - expected) ** 2 / expected).sum())
    dof = len(model.masses) - 1
    with localcontext() as ctx:
        ctx.prec = PREC
        z_mean = Decimal(tally.sum1) / (n * model.var).sqrt()
        z_var = (Decimal(tally.sum2) - n * model.var) / (n * (model.fourth - model.var**2)).sqrt()
    nonzero = tally.positive + tally.negative
    z_sym = (tally.positive - tally.negative) / math.sqrt(nonzero) if nonzero else 0.0
    tests = (
        SubTest("gof", f"chi2={chi2:.1f}/{dof}", chi2_sf(chi2, dof)),
        _normal("mean", float(z_mean)),
        _normal("variance", float(z_var)),
        _normal("symmetry", z_sym),
    )
    return {t.name: t for t in tests}


def _label(q: Fraction) -> str:
    """``q`` as written in the case list: 1/4, 100, 10**4, 2*10**9, 2**100, 2**24+1."""
    if q.denominator != 1 or q < 10**4:
        return str(q)
    mantissa, exponent = q.numerator, 0
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    if exponent > 0:
        return f"10**{exponent}" if mantissa == 1 else f"{mantissa}*10**{exponent}"
    power = q.numerator.bit_length() - 1
    extra = q.numerator - 2**power
    return f"2**{power}" if extra == 0 else f"2**{power}+{extra}" if extra < 10 else str(q)


@dataclass(frozen=True)
class Case:
    """A sampler and parameter: ``kind`` is "gaussian" (sigma2) or "laplace" (scale)."""

    kind: str
    param: Fraction

    @property
    def name(self) -> str:
        what = "sigma2" if self.kind == "gaussian" else "scale"
        return f"{self.kind} {what}={_label(self.param)}"

    @property
    def id(self) -> str:
        return f"{self.kind}-{_label(self.param)}"

    def model(self, n: int) -> Model:
        """The exact law, binned for ``n`` samples."""
        return (gaussian_model if self.kind == "gaussian" else laplace_model)(self.param, n)

    def draw(self, size: int) -> np.ndarray:
        """``size`` samples from the OS CSPRNG, default dtype."""
        sampler = dgauss.sample_gaussian if self.kind == "gaussian" else dgauss.sample_laplace
        return sampler(self.param, size)


CASES = (
    *(
        Case("gaussian", Fraction(s))
        for s in (
            Fraction(1, 4),
            1,
            Fraction(5, 2),
            100,
            10**4,
            10**6,
            2 * 10**9,
            10**10,
            10**20,
            10**100,
            2**24 + 1,  # enveloped inversion's edges (docs/contract.md, item 9)
            Fraction(3 * 2**60 + 1, 3),
            2**100,
        )
    ),
    *(
        Case("laplace", Fraction(t))
        for t in (Fraction(1, 3), 1, Fraction(7, 3), 10, 1000, 10**6, 2**20 + 1, 2**40)
    ),
)


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case."""

    case: Case
    n: int
    tests: dict[str, SubTest]
    seconds: float

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tests.values())

    def row(self) -> str:
        """One line of the script's table."""
        cells = "".join(f"  {t.shown:>18} p={t.p:8.2e}" for t in self.tests.values())
        verdict = "pass" if self.passed else "FAIL"
        return f"{self.case.name:<26}{self.n:>10}{cells}  {self.seconds:6.1f}s  {verdict}"

    def report(self) -> str:
        """The statistics, for an assertion message."""
        tests = ", ".join(f"{t.name} {t.shown} p={t.p:.2e}" for t in self.tests.values())
        return f"{self.case.name}, n={self.n}: {tests} (each must exceed p={LEVEL:.1e})"


def run_case(case: Case, n: int = N, draw: Draw | None = None) -> CaseResult:
    """Draw ``n`` samples in chunks of CHUNK and test them against ``case``'s exact law.

    ``draw(size)`` defaults to ``case.draw``; the power test passes a wrong sampler.
    """
    draw = draw or case.draw
    start = time.perf_counter()
    model = case.model(n)
    tally = Tally(model.edges)
    for first in range(0, n, CHUNK):
        tally.add(draw(min(CHUNK, n - first)))
    return CaseResult(case, n, evaluate(model, tally), time.perf_counter() - start)


# --------------------------------------------------------------------------
# pytest
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(case):
    """N samples of ``case`` pass all four sub-tests."""
    result = run_case(case)
    assert result.passed, result.report()


def test_statistics_have_power():
    """At n = 10**6, sigma^2 = 105 tested as 100 fails the fit and the variance;
    N_Z(1, 100) tested as N_Z(0, 100) fails the mean and the symmetry."""
    as_100 = Case("gaussian", Fraction(100))
    wide = run_case(as_100, 10**6, lambda size: dgauss.sample_gaussian(105, size))
    assert not wide.tests["gof"].passed and not wide.tests["variance"].passed, wide.report()
    shifted = run_case(as_100, 10**6, lambda size: dgauss.sample_gaussian(100, size, mu=1))
    assert not shifted.tests["mean"].passed and not shifted.tests["symmetry"].passed, (
        shifted.report()
    )


@pytest.mark.parametrize(
    "case",
    [
        Case("gaussian", Fraction(5, 2)),
        Case("laplace", Fraction(7, 3)),
        Case("gaussian", Fraction(10**4)),
    ],
    ids=lambda c: c.id,
)
def test_integer_bins_reproduce_chi2_gof(case):
    """Tallying chunks into ``integer_bins`` gives chi2_gof's statistic on the whole sample."""
    n = 3 * 10**5
    samples = case.draw(n)
    model = case.model(n)
    tally = Tally(model.edges)
    for chunk in np.array_split(samples, 3):
        tally.add(chunk)
    pmf = (gaussian_pmf if case.kind == "gaussian" else laplace_pmf)(case.param)
    stat, dof, p = chi2_gof(samples, pmf)
    assert tally.bins.sum() == n and len(model.masses) - 1 == dof
    assert evaluate(model, tally)["gof"].p == pytest.approx(p, rel=1e-9, abs=1e-300)


def test_power_sums_are_exact():
    """Both the int64 and the Python-int route, including int64 squares that would overflow."""
    small = np.array([-3, 0, 5, 7], dtype=np.int64)
    assert power_sums(small) == (9, 83)
    big = np.array([3 * 10**9, -(2**62), 2**62], dtype=np.int64)
    assert power_sums(big) == (3 * 10**9, 9 * 10**18 + 2 * 4**62)
    huge = np.array([10**60, -(10**60), 3], dtype=object)
    assert power_sums(huge) == (3, 2 * 10**120 + 9)


@pytest.mark.parametrize("scale", [Fraction(1, 3), 1, Fraction(7, 3), 10], ids=str)
def test_laplace_closed_forms(scale):
    """Tail P[X >= k] = e^{-k/t} / (1 + e^{-1/t}) and the moments agree with sums of laplace_pmf."""
    pmf = laplace_pmf(Fraction(scale))
    for k in range(1, int(5 * scale) + 3):
        tail = math.fsum(p for x, p in pmf.items() if x >= k)
        assert float(1 - laplace_below(k, Fraction(scale))) == pytest.approx(tail, rel=1e-12)
        assert float(laplace_below(1 - k, Fraction(scale))) == pytest.approx(tail, rel=1e-12)
    var, fourth = laplace_moments(Fraction(scale))
    assert float(var) == pytest.approx(math.fsum(x**2 * p for x, p in pmf.items()), rel=1e-12)
    assert float(fourth) == pytest.approx(math.fsum(x**4 * p for x, p in pmf.items()), rel=1e-12)


def test_laplace_coarse_bins_are_exact():
    """At scale 100 the closed-form bin masses equal sums of laplace_pmf."""
    scale = Fraction(100)
    edges, masses = laplace_coarse_bins(scale)
    pmf = laplace_pmf(scale)
    index = np.searchsorted(edges, list(pmf), side="right")
    sums = np.bincount(index, weights=list(pmf.values()), minlength=len(masses))
    assert masses == pytest.approx(sums, rel=1e-12)
    assert all(0.04 < m < 0.06 for m in masses)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), 1, Fraction(5, 2), 100], ids=str)
def test_gaussian_moments_match_pmf(sigma2):
    """The Decimal moments agree with float sums over gaussian_pmf."""
    pmf = gaussian_pmf(Fraction(sigma2))
    var, fourth = gaussian_moments(Fraction(sigma2))
    assert float(var) == pytest.approx(math.fsum(x**2 * p for x, p in pmf.items()), rel=1e-12)
    assert float(fourth) == pytest.approx(math.fsum(x**4 * p for x, p in pmf.items()), rel=1e-12)


def test_gaussian_moments_for_large_sigma():
    """Already at sigma^2 = 10**6 the exact moments are sigma^2 and 3 sigma^4 to 45 digits."""
    var, fourth = gaussian_moments(Fraction(10**6))
    assert abs(var / 10**6 - 1) < Decimal("1e-45")
    assert abs(fourth / (3 * 10**12) - 1) < Decimal("1e-45")


@pytest.mark.parametrize("sigma2", [10**4, 10**6], ids=str)
def test_continuity_corrected_cdf_error(sigma2):
    """The coarse Gaussian masses differ from exact sums of gaussian_pmf by at most
    2 * 0.0101 / sigma^2."""
    edges, masses = gaussian_coarse_bins(Fraction(sigma2))
    pmf = gaussian_pmf(Fraction(sigma2))
    index = np.searchsorted(edges, list(pmf), side="right")
    sums = np.bincount(index, weights=list(pmf.values()), minlength=len(masses))
    assert np.abs(np.array(masses) - sums).max() < 2 * 0.0101 / sigma2 + 1e-14
    assert all(0.04 < m < 0.06 for m in masses)


# --------------------------------------------------------------------------
# Script
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run every case, print a table; the exit status is 1 if any case failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=N, help=f"samples per case (default {N})")
    size.add_argument(
        "--quick", dest="n", action="store_const", const=QUICK_N, help=f"{QUICK_N} samples per case"
    )
    n = parser.parse_args(argv).n
    header = "".join(f"  {name:>18} {'p-value':<10}" for name in SUBTESTS)
    print(f"{'case':<26}{'n':>10}{header}  {'time':>7}  result", flush=True)
    failed = []
    for case in CASES:
        result = run_case(case, n)
        print(result.row(), flush=True)
        if not result.passed:
            failed.append(result)
    print(
        f"\n{len(CASES) - len(failed)}/{len(CASES)} cases passed "
        f"(each sub-test at p > {LEVEL:.1e}, each case at false-failure rate <= {ALPHA:.0e})"
    )
    for result in failed:
        print("FAILED:", result.report())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
