"""The privacy of a whole release program: composition of discrete Gaussian and Laplace releases.

A program is a list of releases, each :class:`Gaussian` (N_Z(0, σ²) noise) or :class:`Laplace`
(Lap_Z(t) noise) on an integer query whose values on neighbouring inputs differ by the
release's sensitivity (an int Δ, or a difference vector μ), answered ``k`` times.
:func:`compose` returns a :class:`Composition` whose δ(ε) is the smallest of every valid route:

* **Theorem 15** (exact) when every release is Gaussian with one σ²;
* **Eq. 49** (exact for Δ = 1; Kairouz–Oh–Viswanath's optimal bound otherwise) when every
  release is Laplace with one scale and one scalar sensitivity;
* **pure DP**: δ = 0 once ε ≥ Σ k‖μ‖₁/t, when every release is Laplace;
* **zCDP**: Corollary 13 at ρ = Σ ρ_i (a pure ε-DP Laplace release counts as ε²/2);
* **basic composition**: every Laplace release at its pure ε, the Gaussians' own exact δ
  (or their zCDP) at the rest of ε;
* **PLD**: the privacy-loss distribution of the product mechanism, computed with rigorous
  one-sided rounding (below), for any mix: atom by atom for small programs (exact), on a
  grid otherwise.

The PLD route (derivation in ``docs/accounting.md``, *Composing a program*):

1. Each coordinate's privacy loss L = ln P(o)/Q(o) under P is a discrete distribution
   (Gaussian: L = (m² − 2my)/(2σ²), y ~ N_Z(0, σ²); Laplace: Δ + 1 atoms).  Each atom is
   split between the two grid points around it (spacing h) so that both its P-mass and its
   Q-mass (P-mass·e^{−ℓ}) are kept: "connecting the dots".  The hockey-stick curve of the
   result is the chord of the true, convex curve (in e^ε), so the gridded pair dominates the
   true one in Blackwell's order, and so does the composition of gridded pairs (apply the
   garbling coordinate by coordinate).  Its δ is never below the truth.
2. To compute a δ far below 1e−16 without losing it to floating-point error, every mass is
   tilted by e^{αℓ} (α near the saddle point of ε): convolution commutes with the tilt, so
   the composed tilted masses are convolved once by FFT and untilted at the end.
3. Mass far out in the tilted tails is dropped and accounted for by a Chernoff bound:
   (1 − e^{ε−x})₊ ≤ c_α e^{α(x−ε)} with c_α = α^α/(1+α)^{1+α}, so a dropped part adds at most
   c_α e^{−αε}·(its tilted mass)·Π_j M̄_j(α), M̄_j ≥ E[e^{αL̃_j}] (measured on the gridded
   leaf).  An end is dropped when its measured mass is negligible, or when Hoeffding's or
   Bennett's bound over the leaves (their supports, variances) says it is (the FFT's error
   floor hides the first in long compositions).
4. Each convolution's floating-point error is bounded entrywise (FFT error analysis,
   generously inflated) and carried; every entry is used as (value + bound).

The grid spacing h is chosen from the error of connecting the dots (about n·h²·λ(λ+1)/4
relative, λ the slope of ln δ, n the coordinates) to aim at 0.05%: a relative 1e−3 of
the truth where the grid fits the work budget (the tests check it against exact
computations), looser but still an upper bound where it does not.  That estimate assumes a
smooth loss: near a pure ε or on a heavy atom at a tiny δ the error is of first order in h,
and what is proved is δ_PLD(ε) ≤ δ(ε − n·h) (each gridded loss is within h of its atom).

One answer per question: the grid that answers at ε is a function of ε only (its bucket on a
fixed ladder of tilts, :class:`_Ladder`), and bounds are carried across buckets' edges so that
δ never rises with ε (:meth:`Composition._pld_log_delta`).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import gmpy2
import numpy as np
from gmpy2 import mpfr

from dgauss import _pool
from dgauss._interval import Arith
from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._gaussian_sums import log_normaliser
from dgauss.accounting._neighbours import MAX_NEIGHBOURS, L2Ball, norm2

__all__ = ["Gaussian", "Laplace", "Composition", "compose"]

_U = 2.0**-53  # unit roundoff of float64

#: Relative accuracy aimed at by the PLD route's grid (half the 0.1% it reaches).
PLD_TARGET = 5e-4

#: Most grid points in the composed distribution's ±_GRID_WINDOW tilted standard deviations
#: (beyond, the grid is coarsened) ...
PLD_MAX_POINTS = 1 << 19

#: ... unless the error of connecting the dots on that grid is estimated above PLD_FINE_ABOVE
#: (the estimate runs about 3× above the error measured), when up to this many are used:
#: composing 10^4..10^5 coordinates then takes seconds instead of a fraction of one.
PLD_MAX_POINTS_FINE = 1 << 21
PLD_FINE_ABOVE = 3e-3

#: Most points in any vector while composing (its FFT then takes about 1 GiB).
PLD_MAX_LENGTH = 1 << 25

#: Most atoms enumerated for one coordinate's loss (σ² up to about 4·10^8; beyond, a Gaussian's
#: atoms are thinned, _thinned_gaussian).
PLD_MAX_ATOMS = 400_000

#: Half-width of a Gaussian coordinate's tilted window, in standard deviations: the tilted
#: mass outside, about 2e^{−50} of each coordinate's (charged by Chernoff's bound), stays
#: below 1e−14 of it for up to 10^7 coordinates, far inside the 0.05% aimed at.
_WINDOW = 10.0

#: Half-width, in the composed law's tilted standard deviations, of the span the grid's
#: point budget covers (PLD_MAX_POINTS).
_GRID_WINDOW = 14.0

#: An end of a composed vector is dropped while its mass (value + error) is below this
#: fraction of the whole (and accounted for by the Chernoff bound).
_DROP = 1e-18

_NEG_INF = -math.inf
_LOG_DROP = math.log(_DROP) + 1e-12  # rounded up
_LOG_INV_DROP = -math.log(_DROP) + 1e-12  # rounded up (a wider t)

#: Past this ε the PLD route is not asked (δ is then far below anything it resolves; the
#: other routes answer, and a float ε this large is rounded down, which keeps δ an upper bound).
_PLD_MAX_EPS = 1e6

#: The basic-composition route sums the groups' exact δ's when there are at most this many
#: (σ², μ) groups of Gaussian releases (each costs a closed form); beyond, their zCDP bound.
_BASIC_EXACT_MAX = 3


# ==========================================================================
# Releases
# ==========================================================================
def _vector(sensitivity) -> tuple[int, ...]:
    return cf._sensitivity(sensitivity)


@dataclass(frozen=True, init=False)
class Gaussian:
    """A release with N_Z(0, σ²) noise on each coordinate, answered ``k`` times.

    ``sigma2`` > 0 exact (int, Fraction, ``"71.41"``, …); ``sensitivity`` a positive int Δ,
    an ℓ2 bound accounted at the worst integer vector of the ball (as
    :class:`~dgauss.accounting.L2Ball` (Δ); each of the k queries may move a different vector),
    an ``L2Ball``, or exactly the difference vector μ of Theorem 15; ``k`` from 1 to 10^7.
    """

    sigma2: Fraction
    sensitivity: tuple[int, ...] | L2Ball
    k: int

    def __init__(self, sigma2, sensitivity=1, k: int = 1) -> None:
        object.__setattr__(self, "sigma2", cf._positive(sigma2, "sigma2"))
        object.__setattr__(self, "sensitivity", cf._gaussian_sensitivity(sensitivity))
        object.__setattr__(self, "k", cf._count(k, "k"))

    @functools.cached_property
    def rho(self) -> Fraction:
        """ρ = k‖μ‖²/(2σ²), exactly (Theorems 4, 14; the largest ‖μ‖ of a ball)."""
        return self.k * norm2(self.sensitivity) / (2 * self.sigma2)

    def __repr__(self) -> str:
        return f"Gaussian(sigma2={_show(self.sigma2)}{_sens_k(self)})"


@dataclass(frozen=True, init=False)
class Laplace:
    """A release with Lap_Z(t) noise (P[x] ∝ e^{−|x|/t}) on each coordinate, ``k`` times.

    ``scale`` t > 0 exact; ``sensitivity`` a positive int (ℓ1) or a difference vector μ;
    ``k`` from 1 to 10^7.  Pure ε-DP with ε = k‖μ‖₁/t.
    """

    scale: Fraction
    sensitivity: tuple[int, ...]
    k: int

    def __init__(self, scale, sensitivity=1, k: int = 1) -> None:
        object.__setattr__(self, "scale", cf._positive(scale, "scale"))
        object.__setattr__(self, "sensitivity", _vector(sensitivity))
        object.__setattr__(self, "k", cf._count(k, "k"))

    @functools.cached_property
    def epsilon(self) -> Fraction:
        """The pure ε = k‖μ‖₁/t, exactly."""
        return Fraction(self.k * sum(abs(x) for x in self.sensitivity)) / self.scale

    @functools.cached_property
    def rho(self) -> Fraction:
        """ρ = ε₀²/2 per query (pure ε₀-DP implies ε₀²/2-zCDP), times k; exact."""
        eps0 = Fraction(sum(abs(x) for x in self.sensitivity)) / self.scale
        return self.k * eps0 * eps0 / 2

    def __repr__(self) -> str:
        return f"Laplace(scale={_show(self.scale)}{_sens_k(self)})"


Release = Gaussian | Laplace


def _show(q: Fraction) -> str:
    if q.denominator == 1:
        return str(q.numerator)
    f = float(q) if abs(q.numerator).bit_length() - q.denominator.bit_length() < 1000 else None
    if f is not None and f != 0 and Fraction(f) == q:
        return repr(f)
    return f"'{q}'" if f is None or f == 0 else f"{f:.6g}"


def _sens_k(r) -> str:
    sens: object
    if isinstance(r.sensitivity, L2Ball):
        sens = r.sensitivity.radius if r.sensitivity.coordinates is None else r.sensitivity
    elif len(r.sensitivity) == 1 and isinstance(r, Laplace):
        sens = r.sensitivity[0]
    else:  # a Gaussian vector, even of one entry: [2] is not the ball 2
        sens = r.sensitivity[0] if r.sensitivity == (1,) else list(r.sensitivity)
    return (f", sensitivity={sens}" if sens != 1 else "") + (f", k={r.k}" if r.k != 1 else "")


def _worst_programs(releases: Sequence[Release]) -> list[tuple[Release, ...]] | None:
    """Every ℓ2-ball release replaced by each of its worst-case vectors (:mod:`._neighbours`):
    the programs whose largest δ is the program's; None past MAX_NEIGHBOURS programs."""
    # identical ball releases are one k-fold release: its k-multisets of maximal vectors are
    # exactly the combinations of theirs (far fewer than the product of their lists)
    grouped: dict[tuple, int] = {}
    rest: list[Release] = []
    for r in releases:
        if isinstance(r, Gaussian) and isinstance(r.sensitivity, L2Ball):
            key = (r.sigma2, r.sensitivity)
            grouped[key] = grouped.get(key, 0) + r.k
        else:
            rest.append(r)
    if any(k > cf.MAX_K for k in grouped.values()):
        return None
    balls = [Gaussian(s, sens, k) for (s, sens), k in grouped.items()]
    options: list[list[Release]] = []
    for r in [*balls, *rest]:
        if isinstance(r, Gaussian) and isinstance(r.sensitivity, L2Ball):
            worst = r.sensitivity.neighbours(r.k)
            if worst is None:
                return None
            options.append([Gaussian(r.sigma2, list(mu), kk) for mu, kk in worst])
        else:
            options.append([r])
    if math.prod(len(o) for o in options) > MAX_NEIGHBOURS:
        return None
    return list(itertools.product(*options))


# ==========================================================================
# The PLD route
# ==========================================================================
@dataclass(frozen=True)
class _Coordinate:
    """One coordinate's pair: kind, σ² or t, |shift| m ≥ 1, and how many times it occurs."""

    gaussian: bool
    param: Fraction
    m: int
    count: int


def _vector_of(r: Release) -> tuple[int, ...]:
    """The difference vector of a release of a vector program (Composition expands every
    ℓ2-ball release into vectors before any route looks at one)."""
    if isinstance(r.sensitivity, L2Ball):
        raise TypeError("an ℓ2-ball release has no single vector: compose expands it first")
    return r.sensitivity


def _coordinates(releases: Sequence[Release]) -> list[_Coordinate]:
    counts: dict[tuple[bool, Fraction, int], int] = {}
    for r in releases:
        gaussian = isinstance(r, Gaussian)
        param = r.sigma2 if isinstance(r, Gaussian) else r.scale
        for x in _vector_of(r):
            if x:
                key = (gaussian, param, abs(x))
                counts[key] = counts.get(key, 0) + r.k
    return [_Coordinate(g, p, m, c) for (g, p, m), c in sorted(counts.items(), key=str)]


@dataclass(frozen=True)
class _Law:
    """The law of a node's untruncated sum, its leaves normalised (each a probability law,
    in grid indices) and independent: its mean (within ``mean_err``); Σ (leaf support
    width)², for Hoeffding's bound; and for Bennett's, an upper bound on Σ of the leaves'
    variances and on how far any leaf reaches above (``above``) or below (``below``) its
    own mean."""

    mean: float
    mean_err: float
    width2: float
    var: float
    above: float
    below: float

    def __add__(self, other: _Law) -> _Law:
        return _Law(
            self.mean + other.mean,
            self.mean_err + other.mean_err,
            self.width2 + other.width2,
            self.var + other.var,
            max(self.above, other.above),
            max(self.below, other.below),
        )

    def times(self, count: int) -> _Law:
        """The law of ``count`` independent copies' sum."""
        return _Law(
            self.mean * count,
            self.mean_err * count,
            self.width2 * count,
            self.var * count,
            self.above,
            self.below,
        )

    def reach(self, upward: bool) -> float:
        """A t, rounded up, such that the sum lies above (upward) or below the computed mean
        by more than t with probability at most _DROP: the smaller of Hoeffding's
        (√(Σw²·ln(1/_DROP)/2)) and Bennett's, plus the mean's error."""
        hoeffding = math.sqrt(self.width2 * _LOG_INV_DROP / 2) * (1 + 4 * _U)
        bennett = _bennett_reach(self.var, self.above if upward else self.below, _LOG_INV_DROP)
        return min(hoeffding, bennett) + self.mean_err + 1


def _bennett_h_low(u: float) -> float:
    """A lower bound on h(u) = (1 + u)·ln(1 + u) − u, u ≥ 0."""
    if u < 0.01:  # the alternating series Σ_{k≥2} (−u)^k/(k(k−1)), its terms falling
        return u * u * (1 / 2 - u * (1 / 6 - u * (1 / 12 - u / 20))) * (1 - 8 * _U)
    a = (1 + u) * math.log1p(u)
    return (a - u) - 8 * _U * (a + u)


def _bennett_reach(var: float, b: float, log_inv: float) -> float:
    """Bennett's inequality: independent X_j with X_j − E X_j ≤ b and Σ Var X_j ≤ var have
    P(Σ (X_j − E X_j) ≥ t) ≤ exp(−(var/b²)·h(bt/var)).  Returns a t (rounded up) at which
    that is at most e^{−log_inv}; inf when var or b is not positive and finite."""
    if not (0 < var < math.inf and 0 < b < math.inf):
        return math.inf
    need = log_inv * b * b / var  # h(u) ≥ need, u = bt/var
    lo = math.sqrt(2 * need)  # h(u) ≤ u²/2: u ≥ √(2·need)
    hi = 2 * lo
    while _bennett_h_low(hi) < need:
        lo, hi = hi, 2 * hi
    for _ in range(30):  # to a relative 1e-9 (hi is the bound: it only ever certifies)
        mid = (lo + hi) / 2
        if _bennett_h_low(mid) >= need:
            hi = mid
        else:
            lo = mid
    return hi * var / b * (1 + 8 * _U)


@dataclass
class _Node:
    """Tilted masses on the grid: the true tilted mass at (lo + j)·h lies in
    [v_j − err, v_j + err]·e^{kappa}.  ``log_mgf`` = ln Π M̄_j over the node's coordinates;
    ``dropped`` = ln Σ (tilted mass dropped at a node A)/Π_{j∈A} M̄_j, over A in this subtree
    (so that the Chernoff bound needs only the product over every coordinate)."""

    lo: int
    v: np.ndarray
    kappa: float
    err: float
    dropped: float
    log_mgf: float
    #: what is known of the law of the untruncated convolution (for dropping its ends)
    law: _Law
    #: how far the true ln-scale may lie below ``kappa`` (it is rounded up at every step);
    #: only the lower readout (:meth:`_PLD.log_delta_low`) needs it
    kappa_slack: float = 0.0


@functools.lru_cache(maxsize=4096)
def _log_theta(s: Fraction) -> float:
    """ln Θ(s) rounded down (so 1/Θ is rounded up), Θ(s) = Σ_y e^{−y²/(2σ²)}.

    For σ² ≥ 2, from Poisson's summation Θ = √(2πσ²)·Σ_k e^{−2π²σ²k²} ≥ √(2πσ²): ½ ln(2πσ²)
    in floats, less their rounding, is below ln Θ by at most 2e^{−4π²} ≈ 1.5e−17 (the k ≠ 0
    terms) and the rounding, a few u (k coordinates add k times that to κ); else the
    interval computation (64 bits)."""
    if 2 <= s < 2**1000:
        x = 0.5 * math.log(2 * math.pi * float(s))
        return x - 16 * _U * (abs(x) + 1)  # float(s), 2π, the product and log: a few u
    return cf._float_down(log_normaliser(s, Arith(64)).lo)


def _float_up(x: float) -> float:
    return x + abs(x) * 4 * _U + 1e-300


#: Largest σ² of a Gaussian coordinate in the PLD route (beyond 2·10^8 its atoms are thinned).
PLD_MAX_SIGMA2 = 2.0**101


def _power_sums(block: int, terms: int) -> tuple[list[float], list[float]]:
    """a_j = P_{j+1}(B)/B^{j+2} and r_j = (B·P_j(B) − P_{j+1}(B))/B^{j+2}, j = 0 … terms, where
    P_p(B) = Σ_{k<B} k^p = Σ_i S(p, i)·i!·C(B, i+1) (S: Stirling numbers of the second kind),
    computed exactly and rounded to floats."""
    stirling = [[1]]
    for p in range(1, terms + 2):
        prev = stirling[-1] + [0]
        stirling.append([0] + [i * prev[i] + prev[i - 1] for i in range(1, p + 1)])
    sums = [
        sum(stirling[p][i] * math.factorial(i) * math.comb(block, i + 1) for i in range(p + 1))
        for p in range(terms + 2)
    ]
    a = [float(Fraction(sums[j + 1], block ** (j + 2))) for j in range(terms + 1)]
    r = [float(Fraction(block * sums[j] - sums[j + 1], block ** (j + 2))) for j in range(terms + 1)]
    return a, r


#: Most terms of the power series in t = B·ln q (|t| ≤ 1: 30 leave a rest below 1e−30).
_SERIES_TERMS = 30

#: Cells of a thinned Gaussian window (20σ atoms in blocks of B: B²/(2σ²) ≈ 8e−8).
_THIN_CELLS = 50_000


def _thinned_gaussian(m: int, sf: float, alpha: float, y_lo: int, y_hi: int, block: int):
    """A Gaussian coordinate's atoms connected onto every B-th atom (y ≡ 0 mod B, whatever the
    tilt: one pair for every grid), for a window too wide to list.  A garbling, like the grid.

    Kept atoms y_b have losses G_b, H = B·d apart (d = m/σ²).  Atom y_b + k (0 ≤ k < B) lies
    u = (B − k)d above G_{b+1}; its tilted mass e^{−(y+αm)²/(2σ²)} is c_b·ρ^k·θ_k with
    θ_k = e^{−k²/(2σ²)} ∈ [θ_B, 1], and with q = e^{−y_b/σ²} the tilted masses it sends to
    G_b and G_{b+1} (the leaf's connect-the-dots weights) add up, over the cell, to

        to G_b:      c_b·d/(1 − e^{−H})·Σ_k θ_k q^k (B − k)·[e^{−H}, 1]
        to G_{b+1}:  c_b·e^{−(1+α)H}·d/(1 − e^{−H})·Σ_k θ_k q^k k·[1, e^{H}]

    (1 − e^{−x} and e^{x} − 1, for 0 ≤ x ≤ H, lie between x·e^{−H} and x·e^{H}).  The sums
    are power series in t = B·ln q whose coefficients are exact power sums.  Returns (losses
    rounded up, tilted masses at their upper ends, their relative width, the last y kept),
    or None where |t| > 1 or the blocks are too long for the bracket on θ."""
    theta_min = math.exp(-((block - 1) ** 2) / (2 * sf))
    if theta_min < 1 - 1e-5:
        return None
    first = (y_lo // block) * block
    n_cells = -(-(y_hi - first) // block)
    d = m / sf
    H = block * d
    offsets = np.arange(n_cells + 1, dtype=np.float64) * block  # y_b − first
    y_b = first + offsets  # within a relative u (past 2^53)
    z = (first + alpha * m) + offsets  # y_b + αm
    log_c = -(z * z) / (2 * sf)
    t = -(y_b / sf) * block  # B·ln q
    t_max = float(np.abs(t).max())
    if not t_max <= 1:
        return None
    # terms: the rest, Σ_{j>J} |t|^j/j! (coefficients ≤ 1), is below e·|t|^{J+1}/(J+1)!
    terms = next(
        j for j in range(1, _SERIES_TERMS) if t_max ** (j + 1) / math.factorial(j + 1) < 1e-20
    )
    a, r = _power_sums(block, terms)
    to_low = np.zeros_like(t)  # Σ_k k q^k / B²
    to_up = np.zeros_like(t)  # Σ_k (B − k) q^k / B²
    for j in range(terms, -1, -1):  # Horner
        inv = 1 / math.factorial(j)
        to_low = to_low * t + a[j] * inv
        to_up = to_up * t + r[j] * inv
    scale = block * block * d / -math.expm1(-H)
    w = np.exp(log_c + np.log(to_up * scale))  # cell b to its top G_b
    w[-1] = math.exp(float(log_c[-1]))  # the last kept atom: all its mass is at G_last
    w[1:] += np.exp(log_c[:-1] + np.log(to_low[:-1] * scale) - alpha * H)  # (e^{−(1+α)H}·e^H)
    # the brackets (θ, e^{±H}), the series' rest (below 3e−20 of sums ≥ e^{−1}/6) and its
    # rounding (|t| ≤ 1: a relative 1e−13), and the exponents' rounding (z²/(2σ²) from floats
    # within a few u of their size)
    width = 1 - theta_min * math.exp(-2 * H) + 1e-12 + 64 * _U * float((z * z).max()) / sf
    loss = (m * m - 2 * m * y_b) / (2 * sf)
    loss = loss + (np.abs(loss) + np.abs(m * y_b / sf)) * (8 * _U) + 1e-300
    return loss, w, width, first + n_cells * block


def _atoms(c: _Coordinate, alpha: float):
    """A coordinate's loss atoms ℓ (each rounded up), tilted masses w (ln-scaled by kappa),
    the mass outside the window (same scale), kappa, the largest exponent met (its
    rounding errors scale with it), the first y (None when the atoms were thinned), the
    slack of kappa and a relative width of the masses beyond rounding; None when the route
    cannot enumerate them."""
    m = c.m
    if c.gaussian:
        s = c.param
        sf = cf._approx(s)
        if not (2.0**-30 < sf < PLD_MAX_SIGMA2):
            return None
        sd = math.sqrt(sf)
        centre = -alpha * m  # the tilted distribution is N_Z(−αm, σ²), up to a constant
        half = _WINDOW * sd + 1.0
        y_lo, y_hi = math.ceil(centre - half), math.floor(centre + half)
        width = 0.0
        window = 2 * math.floor(half) + 1  # the same for every tilt
        if window > PLD_MAX_ATOMS:
            block = -(-window // _THIN_CELLS)
            thinned = _thinned_gaussian(m, sf, alpha, y_lo, y_hi, block)
            if thinned is None:
                return None
            loss, w, width, y_hi = thinned
            y_lo = (y_lo // block) * block
            first = None
        else:
            y = np.arange(y_lo, y_hi + 1, dtype=np.float64)
            w = np.exp(-((y + alpha * m) ** 2) / (2 * sf))
            loss = _float_up_array((m * m - 2 * m * y) / (2 * sf))
            first = y_lo
        # ln of the tilted constant: α(α+1)m²/(2σ²) − ln Θ, rounded up
        exponent = alpha * (alpha + 1) * m * m / (2 * sf)
        log_theta = _log_theta(s)
        kappa = _float_up(_float_up(exponent) - log_theta)
        # tails outside [y_lo, y_hi]: geometric bound on each side (ratio ≤ e^{−(2d+1)/(2σ²)})
        out = 0.0
        for d in (y_hi + 1 - centre, centre - (y_lo - 1)):
            out += math.exp(-d * d / (2 * sf)) / -math.expm1(-(2 * d + 1) / (2 * sf))
        size = float(_WINDOW * _WINDOW / 2 + alpha * np.abs(loss).max())
        # kappa was rounded up from a product and a difference of floats (σ² rounded to
        # float, ln Θ to 64 bits): the true value is within this of it
        slack = 32 * _U * (abs(exponent) + abs(log_theta) + abs(kappa)) + 1e-300
        return loss, w, _float_up(out * 1.0001), kappa, size, first, slack, width
    t = cf._approx(c.param)
    if not (2.0**-30 < t < 2.0**60) or m > PLD_MAX_ATOMS:
        return None
    r = math.exp(-1.0 / t)
    j = np.arange(m + 1, dtype=np.float64)
    loss = (m - 2 * j) / t
    p = np.exp(-j / t) * (-math.expm1(-1.0 / t)) / (1 + r)  # P[Y = j], 0 < j < m
    p[0] = 1 / (1 + r)  # P[Y <= 0]
    p[m] = math.exp(-m / t) / (1 + r)  # P[Y >= m]
    # tilt, scaled so the largest is about 1 (kappa carries the scale)
    log_w = np.log(p) + alpha * loss
    top = float(log_w.max())
    size = float(np.abs(log_w).max() + alpha * np.abs(loss).max())
    slack = 16 * _U * abs(top) + 1e-300
    return _float_up_array(loss), np.exp(log_w - top), 0.0, _float_up(top), size, 0, slack, 0.0


def _float_up_array(x: np.ndarray) -> np.ndarray:
    return x + np.abs(x) * (4 * _U) + 1e-300


def _lattice(coords: list[_Coordinate]) -> Fraction:
    """The largest a such that every coordinate's loss atoms are multiples of a (exactly)."""
    a = Fraction(0)
    for c in coords:
        if c.gaussian:
            parts = (Fraction(c.m * c.m) / (2 * c.param), Fraction(c.m) / c.param)
        else:
            parts = (Fraction(c.m) / c.param, Fraction(2) / c.param)
        for q in parts:
            a = Fraction(
                math.gcd(a.numerator * q.denominator, q.numerator * a.denominator),
                a.denominator * q.denominator,
            )
    return a


def _aligned_indices(c: _Coordinate, n_atoms: int, first: int, a: Fraction) -> np.ndarray:
    """Exact grid indices ℓ/a of a coordinate's atoms (atom i is y = first + i, or j = i)."""
    if c.gaussian:
        i0 = Fraction(c.m * c.m) / (2 * c.param) / a
        i1 = Fraction(c.m) / c.param / a
    else:
        i0, i1 = Fraction(c.m) / c.param / a, Fraction(2) / c.param / a
    assert i0.denominator == 1 and i1.denominator == 1
    # ℓ = i0·a − i1·a·(first + i)
    return (int(i0) - int(i1) * first) - int(i1) * np.arange(n_atoms, dtype=np.int64)


def _leaf(c: _Coordinate, alpha: float, h: float, a: Fraction | None) -> _Node | None:
    """One coordinate's pair, connected onto the grid (spacing h, or exactly the lattice a
    every atom lies on) and tilted."""
    found = _atoms(c, alpha)
    if found is None:
        return None
    loss, w, out, kappa, exponent, first, slack, width = found
    if a is not None and first is None:
        return None  # thinned atoms are not indexed by y
    if a is not None:  # every atom is a grid point: nothing to connect
        j = _aligned_indices(c, len(loss), first, a)
        u = np.zeros(len(loss))
    else:
        j = np.floor(loss / h)
        u = loss - j * h  # in [0, h) up to rounding; clamp
        u = np.clip(u, 0.0, h)
    den = -math.expm1(-h)
    lo_w = w * (-np.expm1(u - h)) * np.exp(-(1 + alpha) * u) / den
    # (an atom on a grid point has u = 0: nothing moves up, whatever e^{α(h−u)})
    hi_w = np.where(u > 0, w * (-np.expm1(-u)) * np.exp(alpha * (h - u)) / den, 0.0)
    ji = j.astype(np.int64)
    base = int(ji.min())
    size = int(ji.max()) - base + 2
    if not np.any((ji == ji.max()) & (u > 0)):
        size -= 1  # no atom moves up past the last grid point (on a lattice): its mass is 0
    if size > PLD_MAX_POINTS:
        return None
    v = np.bincount(ji - base, weights=lo_w, minlength=size).astype(np.float64)
    v += np.bincount(ji - base + 1, weights=hi_w, minlength=size)[:size]
    top = float(v.max())
    v = v / top
    slack += 16 * _U * (abs(kappa) + abs(math.log(top)))
    kappa = _float_up(kappa + math.log(top))
    # relative error of each entry: a few roundings (libm within 4 ulp), and the exponents'
    # absolute rounding errors, which grow with their size
    err = 64 * _U * (8 + exponent) + width
    # M̄ ≥ E[e^{αL̃}] of the gridded coordinate: the window's tilted mass (each entry within
    # a relative err, the float sum within size·u) plus the mass outside it, moved up by < h
    log_window = math.log(float(v.sum()) * (1 + err + 2 * size * _U)) + kappa
    log_out = math.log(out) + alpha * h + kappa - math.log(top) if out > 0 else _NEG_INF
    log_mgf = _float_up(float(np.logaddexp(log_window, log_out)))
    dropped = _float_up(log_out - log_mgf) if out > 0 else _NEG_INF
    return _Node(base, v, kappa, err, dropped, log_mgf, _leaf_law(v, base, err), slack)


def _leaf_law(v: np.ndarray, base: int, err: float) -> _Law:
    """The law of a leaf's vector ``v`` (entries within a relative ``err`` of the truth) at
    grid indices base, base + 1, …"""
    size = len(v)
    index = np.arange(size, dtype=np.float64)
    total = float(v.sum())
    centre = float((index * v).sum() / total)
    # v is within a relative `err` of the true vector: the mean within err·size, and more
    mean_err = 4 * err * size + 1e-9 * size
    # the variance is at most the second moment about any point, here `centre`: the float
    # sums of positive terms are within a relative size·u (and their terms a few u)
    second = float((v * (index - centre) ** 2).sum()) / total
    var = second * (1 + err) / (1 - err) * (1 + 4 * (size + 4) * _U) + 1e-300
    return _Law(
        base + centre,
        mean_err,
        float(size - 1) ** 2,
        var,
        (size - 1 - centre) + mean_err,
        centre + mean_err,
    )


def _fft_length(n: int) -> int:
    """The smallest 2^i·3^j·5^k ≥ n: a transform of that length is about as fast per point
    as a power of two's (pocketfft's radix-3 and -5 passes), and pads less (a power of two
    doubles the work of a vector just past one)."""
    best = 1 << (n - 1).bit_length()
    five = 1
    while five < best:
        three = five
        while three < best:
            m = three
            while m < n:
                m *= 2
            best = min(best, m)
            three *= 3
        five *= 5
    return best


def _fft_error(n: int) -> float:
    """Entrywise error bound of an FFT convolution of length n, per unit of ‖a‖₁‖b‖₁."""
    return 80 * max(1, (n - 1).bit_length()) * _U


def _convolve(a: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, float]:
    """The convolution of a and b (b None: of a with itself, one transform fewer), and a
    bound on each entry's rounding error per unit of ‖a‖₁‖b‖₁ (the inputs nonnegative)."""
    other = a if b is None else b
    n = len(a) + len(other) - 1
    if min(len(a), len(other)) <= 64:
        return np.convolve(a, other), 2 * min(len(a), len(other)) * _U
    size = _fft_length(n)
    fa = np.fft.rfft(a, size)
    fb = fa if b is None else np.fft.rfft(b, size)
    return np.fft.irfft(fa * fb, size)[:n], _fft_error(size)


def _merge(a: _Node, b: _Node) -> _Node:
    n = len(a.v) + len(b.v) - 1
    if n > PLD_MAX_LENGTH:  # before allocating: the route is left out instead
        raise ArithmeticError(f"a composed vector of {n} points exceeds the PLD route's budget")
    na, nb = float(a.v.sum()), float(b.v.sum())
    na_true, nb_true = na + a.err * len(a.v), nb + b.err * len(b.v)
    v, rounding = _convolve(a.v, b.v if b is not a else None)
    err = a.err * nb_true + b.err * na_true + rounding * na_true * nb_true
    np.maximum(v, 0.0, out=v)
    top = float(v.max())
    if top <= 0:
        top = 1.0
    v /= top
    err = err / top * (1 + 4 * _U)
    kappa = _float_up(a.kappa + b.kappa + math.log(top))
    slack = a.kappa_slack + b.kappa_slack + 16 * _U * (abs(a.kappa) + abs(b.kappa) + abs(kappa))
    dropped = float(np.logaddexp(a.dropped, b.dropped))
    merged = _Node(
        a.lo + b.lo,
        v,
        kappa,
        err,
        dropped,
        a.log_mgf + b.log_mgf,
        a.law + b.law,
        slack,
    )
    return _truncate(merged)


def _truncate(node: _Node) -> _Node:
    """Drop the ends of a node's vector whose mass is negligible, recording it as dropped.

    Two bounds on an end's true tilted mass, whichever drops more on each side:

    * measured: Σ (value + error) over it, while below _DROP of the whole;
    * the law's: the node's vector is (up to earlier drops, which only remove mass) the
      convolution of its leaves, i.e. at most Π_j M̄_j times the law of a sum of
      independent variables, leaf j's supported on an interval of width w_j, with a
      variance and a reach from its mean bounded from its vector.  Beyond its mean ± t
      (:meth:`_Law.reach`: Hoeffding's t = √(Σw_j²·ln(1/_DROP)/2) or Bennett's, whichever
      is smaller) each side holds at most _DROP of it: in the units of ``dropped``
      (mass / Π M̄_j) that is _DROP exactly, whatever the FFT's error floor, which stops
      the measured bound from cutting anything in long compositions.  (Bennett's is the
      shorter past a few dozen leaves: about √(2·ln(1/_DROP)·Σ Var) where Hoeffding's has
      √(Σw_j²/4), and a Gaussian leaf is 20 standard deviations wide.)
    """
    v = node.v
    n = len(v)
    upper = v + node.err
    total = float(upper.sum())
    limit = _DROP * total
    head = np.cumsum(upper)
    tail = np.cumsum(upper[::-1])
    i = int(np.searchsorted(head, limit, side="right"))
    k = int(np.searchsorted(tail, limit, side="right"))
    law = node.law
    i_h = max(0, math.floor(law.mean - law.reach(False)) - node.lo)  # below mean − t
    k_h = max(0, n - 1 - (math.ceil(law.mean + law.reach(True)) - node.lo))  # above mean + t
    pieces = []  # ln of each dropped part's mass / Π_{j∈node} M̄_j
    if i_h > i:
        i = i_h
        pieces.append(_LOG_DROP)
    elif i and head[i - 1] > 0:
        pieces.append(_float_up(math.log(float(head[i - 1]) * 1.0001) + node.kappa - node.log_mgf))
    if k_h > k:
        k = k_h
        pieces.append(_LOG_DROP)
    elif k and tail[k - 1] > 0:
        pieces.append(_float_up(math.log(float(tail[k - 1]) * 1.0001) + node.kappa - node.log_mgf))
    if i + k >= n - 1 or i + k == 0:
        return node
    dropped = node.dropped
    for piece in pieces:
        dropped = float(np.logaddexp(dropped, piece))
    kept = v[i : n - k].copy()
    return _Node(
        node.lo + i,
        kept,
        node.kappa,
        node.err,
        dropped,
        node.log_mgf,
        node.law,
        node.kappa_slack,
    )


#: A level of merges runs on every core when its vectors add up to this many points.
_PARALLEL_POINTS = 1 << 16


def _threads(tasks: int, points: int) -> int:
    """How many threads ``tasks`` merges over vectors of ``points`` points in all get."""
    return _pool.cores() if tasks > 1 and points >= _PARALLEL_POINTS else 1


def _transform_error(n: int) -> float:
    """Relative ℓ2 error bound of one real FFT of length n, forward or inverse: 25·⌈log₂ n⌉·u,
    five times the classical radix-2 bound (as the convolution's 80 is three transforms'
    and a product's)."""
    return 25 * max(1, (n - 1).bit_length()) * _U


def _spectrum_power(f: np.ndarray, k: int) -> np.ndarray:
    """f^k entrywise, by repeated squaring."""
    result, base = None, f
    while True:
        if k & 1:
            if result is None:
                result = base.copy() if base is f else base
            else:
                result = result * base
        k >>= 1
        if not k:
            assert result is not None
            return result
        base = base * base


@dataclass
class _Factor:
    """One leaf's part of a product: its normalised vector's spectrum raised to its count."""

    spectrum: np.ndarray
    top: float  # an upper bound on the transform's largest modulus (at least 1)
    scale: float  # the leaf's vector sum S (the normalised vector is v / S)
    err: float  # entrywise error bound of the normalised vector (against the true one / S)
    mass: float  # an upper bound on the true normalised vector's ℓ1 mass


def _factor(leaf: _Node, count: int, n: int) -> _Factor:
    s = float(leaf.v.sum())
    w = leaf.v / s
    # w = v/S within a rounding: the true vector / S is within err/S (+ that rounding) of w
    err = leaf.err / s * (1 + 2 * _U) + _U * float(w.max())
    mass = (1 + 2 * len(w) * _U) + err * len(w) * (1 + 2 * _U)
    f = np.fft.rfft(w, n)
    top = max(1.0, float(np.abs(f).max()) * (1 + 4 * _U))
    return _Factor(_spectrum_power(f, count), top, s, err, mass)


def _span(pairs: list[tuple[_Node, int]]) -> tuple[_Law, int, int, int, int]:
    """For leaves taken ``k`` times each: (their sum's law, the support's first and last
    grid index, and the window _product keeps: the support cut to the law's mean ± reach)."""
    laws = [leaf.law.times(k) for leaf, k in pairs]
    law = sum(laws[1:], laws[0])
    first = sum(leaf.lo * k for leaf, k in pairs)
    last = sum((leaf.lo + len(leaf.v) - 1) * k for leaf, k in pairs)
    lo = max(first, math.floor(law.mean - law.reach(False)))
    hi = min(last, math.ceil(law.mean + law.reach(True)))
    return law, first, last, lo, hi


def _transform_cost(n: int) -> float:
    return n * max(1, n.bit_length())


def _composed_leaves(pairs: list[tuple[_Node, int]]) -> _Node:
    """The node of leaves taken k times each: one :func:`_product` of them all where that
    transforms fewer points than a tree would, else each leaf's power in one transform and
    a balanced tree of merges (shortest first, each level's merges on every core where they
    are long enough to pay: NumPy's FFTs release the GIL, and the result does not depend on
    the order they finish in).  The cost model: a product transforms every leaf and its
    result at the whole window's length n (n·log₂ n each); a tree of m powers transforms, level
    by level, about ten times their own windows' points (three transforms a merge, the levels'
    lengths falling by about √2: a few kinds taken many times compose in one product, many
    kinds taken once in a tree)."""
    windows = [_span([pair]) for pair in pairs]
    _, _, _, lo, hi = _span(pairs)
    product = (len(pairs) + 1) * _transform_cost(_fft_length(hi - lo + 1))
    tree = 10 * sum(_transform_cost(_fft_length(w[4] - w[3] + 1)) for w in windows)
    if product <= tree:
        return _product([leaf for leaf, _ in pairs], [k for _, k in pairs])
    points = sum(w[4] - w[3] + 1 for w in windows)
    threads = _threads(len(pairs), points)
    nodes = _pool.map_ordered(lambda p: _product([p[0]], [p[1]]), pairs, threads)
    while len(nodes) > 1:
        nodes.sort(key=lambda node: len(node.v))
        merges = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
        points = sum(len(x.v) + len(y.v) for x, y in merges)
        merged = _pool.map_ordered(lambda p: _merge(*p), merges, _threads(len(merges), points))
        nodes = merged + ([nodes[-1]] if len(nodes) % 2 else [])
    return nodes[0]


def _product(leaves: list[_Node], counts: list[int]) -> _Node:
    """The node of the leaves' convolution, leaf i taken ``counts[i]`` times, in one
    transform: each normalised leaf's spectrum raised to its count, the spectra multiplied,
    one inverse transform.  Its length is cut to the law's mean ± reach (as _truncate would
    cut it), the transform length n holding that window: the circular convolution then adds
    to each entry at most the computed convolution's mass beyond the window, 2·_DROP of the
    whole (the law bounds the computed leaves' sum as well as the true one's).

    Entrywise error, in units of Π S_i^{k_i} (S_i a leaf's vector sum, w_i = v_i/S_i): the
    inputs', Σ_i k_i·e_i·σ_i^{k_i−1}·Π_{j≠i} σ_j^{k_j} (e_i w_i's entrywise bound, σ_i an
    upper bound on the true and computed normalised masses: telescoping, each factor's ℓ1 at
    most σ); the transforms': with K = Σ k_i, γ = _transform_error(n) and M ≥ 1 bounding
    every computed spectrum's modulus, ‖Ŵ_i − W_i‖₂ ≤ γ·√n·‖w_i‖₂ ≤ γ√n, so the product's
    spectrum is within M^{K−1}·K·γ√n in ℓ2, the complex multiplications add
    (K − 1)·√5·u·M^K·√n (each within √5·u, Brent et al. 2007; a product of K factors by
    repeated squaring or any other order, unrolled, is K − 1 multiplications, each rounding
    factor raised to how often its result recurs), and the inverse (1/√n in ℓ2) γ·M^K: each
    entry within M^{K−1}Kγ + γM^K + (K − 1)√5uM^K (the ℓ2 bound bounds every entry)."""
    pairs = list(zip(leaves, counts, strict=True))
    if pairs == [(leaves[0], 1)]:
        return leaves[0]
    law, first, last, lo, hi = _span(pairs)
    cut = int(lo > first) + int(hi < last)
    length = hi - lo + 1
    if length > PLD_MAX_LENGTH:
        raise ArithmeticError(
            f"a composed vector of {length} points exceeds the PLD route's budget"
        )
    n = _fft_length(length)
    threads = _threads(len(leaves), n * len(leaves)) if n <= 1 << 22 else 1
    factors = _pool.map_ordered(lambda p: _factor(p[0], p[1], n), pairs, threads)
    spectrum = factors[0].spectrum
    for f in factors[1:]:
        spectrum = spectrum * f.spectrum
    x = np.fft.irfft(spectrum, n)
    total = sum(counts)
    top = max(f.top for f in factors)
    gamma = _transform_error(n)
    power = top**total * (1 + 2 * _U)
    if not power < 1e300:
        raise ArithmeticError("the PLD route's product of transforms has no error bound")
    rounding = (power / top * total * gamma + gamma * power + total * 2.25 * _U * power) * 1.01
    inputs, mass = 0.0, 1.0  # the inputs' error and the masses' product, leaf by leaf
    for f, k in zip(factors, counts, strict=True):
        grown = f.mass**k * (1 + 4 * _U)
        inputs = (inputs * grown + mass * k * f.err * f.mass ** (k - 1)) * (1 + 4 * _U)
        mass *= grown
    alias = 2 * _DROP * mass * (1 + 1e-9) if cut else 0.0
    v = x[(lo - first + np.arange(length)) % n]  # entry j: grid index lo + j
    np.maximum(v, 0.0, out=v)
    peak = float(v.max())
    if peak <= 0:
        peak = 1.0
    v /= peak
    err = (inputs + rounding + alias + 1e-300) / peak * (1 + 4 * _U)
    # κ: ln of Π (S_i·e^{κ_i})^{k_i}·peak, its float sum rounded up by a bound on its error
    terms = [
        k * (leaf.kappa + math.log(f.scale))
        for leaf, f, k in zip(leaves, factors, counts, strict=True)
    ]
    terms.append(math.log(peak))
    # each term within a few roundings of its parts (libm's ln within 4 ulp), the sum
    # (math.fsum) within one
    parts = sum(
        k * (abs(leaf.kappa) + abs(math.log(f.scale)))
        for leaf, f, k in zip(leaves, factors, counts, strict=True)
    )
    slop = 16 * _U * (parts + abs(terms[-1])) + 1e-300
    kappa = _float_up(math.fsum(terms) + slop)
    slack = sum(leaf.kappa_slack * k for leaf, k in zip(leaves, counts, strict=True)) + 2 * slop
    slack += 16 * _U * abs(kappa)
    pieces = [math.log(k) + leaf.dropped for leaf, k in pairs if leaf.dropped > _NEG_INF]
    pieces += [_LOG_DROP] * cut
    dropped = _float_up(float(np.logaddexp.reduce(pieces))) if pieces else _NEG_INF
    log_mgf = _float_up(math.fsum(leaf.log_mgf * k for leaf, k in pairs))
    return _truncate(_Node(lo, v, kappa, err, dropped, log_mgf, law, slack))


def _moments(c: _Coordinate, alpha: float) -> tuple[float, float]:
    """Mean and variance of L under the tilt α (for choosing α and h only: any α is valid)."""
    if c.gaussian:
        rho = c.m * c.m / (2 * float(c.param))
        return c.count * (1 + 2 * alpha) * rho, c.count * 2 * rho
    t = float(c.param)
    j = np.arange(c.m + 1, dtype=np.float64)
    loss = (c.m - 2 * j) / t
    logp = -j / t + math.log(-math.expm1(-1 / t))  # interior atoms, up to a common factor
    logp[0] = 0.0  # P[Y <= 0]
    logp[-1] = -c.m / t  # P[Y >= m]
    lw = logp + alpha * loss
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = float((w * loss).sum())
    return c.count * mean, c.count * float((w * (loss - mean) ** 2).sum())


def _scaled(
    log_up: np.ndarray, log_lo: np.ndarray, peak: int
) -> tuple[float, np.ndarray, np.ndarray]:
    """(C, e^{log_up − C}, e^{log_lo − C}) for a vector's ε-free readout terms, C the largest
    upper term from the tilted peak on (the readouts are at ε near it; to its left an error
    floor, untilted by e^{−αg}, could dwarf them).  One scale for every ε, so that a readout
    is the same float sum at every ε (δ then falls with ε, float for float); an underflow is
    charged by the readouts (in the lower terms it only lowers them)."""
    scale = float(log_up[peak:].max())
    if not np.isfinite(scale):
        raise ArithmeticError("the composed distribution is not finite")
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        return scale, np.exp(log_up - scale), np.exp(log_lo - scale)


class _Readout:
    """δ(ε) read from a composed loss distribution held as points (grid points or exact
    atoms) with outward-rounded positions and tilted masses.

    Subclasses set ``alpha``, ``grid_up``/``grid_dn`` (each point's loss rounded up/down),
    ``kappa`` and ``kappa_slack`` (the common ln-scale, rounded up, and how far below it the
    truth may lie), ``log_dropped`` (ln of the tilted mass left out, charged by Chernoff's
    bound) and call :meth:`_prepare` with each point's ε-free term ln(mass) − αg, rounded up
    and down."""

    alpha: float
    grid_up: np.ndarray
    grid_dn: np.ndarray
    kappa: float
    kappa_slack: float
    log_dropped: float

    def _prepare(self, log_up: np.ndarray, log_lo: np.ndarray, peak: int, big: float) -> None:
        self.log_up = log_up
        self.scale, self.up_scaled, self.lo_scaled = _scaled(log_up, log_lo, peak)
        # the absolute rounding of every exponent (αg, the subtraction of C, κ), and 1e−9
        self.slop = 1e-9 + 16 * _U * (big + abs(self.scale) + abs(self.kappa))

    def _main(self, eps: float, upper: bool) -> float:
        """ln of Σ_{g>ε} (mass)·e^{κ−αg}(1 − e^{ε−g}) over the points kept, rounded up
        (masses + error) or down (masses − error, κ less its slack)."""
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            if upper:  # (1 − e^{ε−g}) at g rounded up
                w = np.where(self.grid_up > eps, -np.expm1(eps - self.grid_up), 0.0)
                total = float((self.up_scaled * w).sum())
                # pairwise summation is within a relative log2(n)·u; each underflowed
                # scaled term was below 1e-300
                total = total * (1 + 64 * _U * math.log2(len(w) + 1)) + len(w) * 1e-300
            else:
                w = np.where(self.grid_dn > eps, -np.expm1(eps - self.grid_dn), 0.0)
                total = float((self.lo_scaled * w).sum())
                total = total * (1 - 64 * _U * math.log2(len(w) + 1))
        if not math.isfinite(total):  # a term overflowed the common scale (ε far from it)
            return math.inf if upper else _NEG_INF  # (the upper one is summed afresh)
        if not total > 0:
            return _NEG_INF
        if upper:
            return self.scale + self.kappa + math.log(total)
        return self.scale + self.kappa - self.kappa_slack + math.log(total)

    def _main_rescaled(self, eps: float) -> float:
        """The upper main sum, scaled by its own largest term (for an ε far from this
        grid's bucket, where the common scale underflows)."""
        sel = self.grid_up > eps
        if not sel.any():
            return _NEG_INF
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            logs = self.log_up[sel] + np.log(-np.expm1(eps - self.grid_up[sel])) + self.kappa
            top = float(logs.max())
            if top == _NEG_INF:  # no mass past ε
                return _NEG_INF
            if not np.isfinite(top):
                return math.inf  # (read as δ ≤ 1)
            total = float(np.exp(logs - top).sum()) * (1 + 1e-12)
        return top + math.log(total)

    def log_delta(self, eps: float) -> float:
        """An upper bound on ln δ(ε) of the composition held (so of the true one).

        Non-increasing in ε, float for float: the same sum of terms that each fall with ε."""
        main = self._main(eps, True)
        if not main < math.inf or main < self.scale + self.kappa - 650:
            main = self._main_rescaled(eps)  # far outside this grid's ε: sum afresh
        return _upper(main, self.alpha, eps, self.log_dropped, self.slop)

    def log_delta_low(self, eps: float) -> float:
        """A lower bound on ln δ̃(ε) of the composition held (δ̃ ≥ the true δ for a grid,
        = for exact atoms): the kept masses less their error bounds, rounded downward.
        Used only to show that a bound need not be carried (Composition._pld_log_delta)."""
        return _lower(self._main(eps, False), self.slop)


def _upper(main: float, a: float, eps: float, log_dropped: float, slop: float) -> float:
    """ln δ(ε) from the ln of a readout's main sum: the dropped mass charged by Chernoff's
    bound at the tilt a (c_a·e^{−aε}·dropped, c_a = a^a/(1+a)^{1+a}), the exponents'
    rounding (``slop``) and the ln's own added, upward."""
    if log_dropped > _NEG_INF:
        log_c = a * math.log(a) - (1 + a) * math.log1p(a) if a > 0 else 0.0
        main = float(np.logaddexp(main, log_c - a * eps + log_dropped))
    return main + slop + abs(main) * 16 * _U if main > _NEG_INF else main


def _lower(main: float, slop: float) -> float:
    """The ln of a readout's main sum (its lower reading) less the rounding, downward."""
    return main - slop - abs(main) * 16 * _U if main > _NEG_INF else main


class _ReadAtExact:
    """Readings at an exact ε (a Fraction), for a readout's float ``log_delta``/
    ``log_delta_low``."""

    def log_delta_at(self, e: Fraction) -> float:
        """An upper bound on ln δ(e), e exact (read at a float ε rounded down), at most 0."""
        ef = cf._float_down(min(e, Fraction(_PLD_MAX_EPS)))
        return min(self.log_delta(ef), 0.0)  # type: ignore[attr-defined]

    def log_delta_low_at(self, e: Fraction) -> float:
        """A lower bound on ln δ̃(e) of this grid's composition (``log_delta_low``, read at a
        float ε rounded up; −inf past the route's largest ε)."""
        if e >= _PLD_MAX_EPS:
            return _NEG_INF
        return self.log_delta_low(cf._float_up(e))  # type: ignore[attr-defined]


#: A kept composition keeps at most this many of its extensions' leaves (composed(): each
#: extension by a kind merged before reuses its leaf).
_LEAVES_KEPT = 256


def _composed(
    coords: list[_Coordinate],
    alpha: float,
    h: float,
    a: Fraction | None,
    start: _Node | None,
    leaves_kept: dict | None = None,
) -> _Node:
    """The coordinates' leaves at (α, h) (or on the lattice a) composed into one node, and
    merged into ``start`` (a node composed at the same α and h) when one is given;
    ``leaves_kept``: the leaves built at this (α, h) before, by (kind, parameter, shift)
    (read and added to; a leaf is a function of those and (α, h), and no merge alters
    its inputs)."""
    for c in coords:  # a leaf wider than the budget fails: find out before the work
        p = cf._approx(c.param)
        span = 2 * c.m / p if not c.gaussian else 2 * (_WINDOW * math.sqrt(p) + 1) * c.m / p
        if span / h > 2 * PLD_MAX_POINTS:
            raise ArithmeticError("a coordinate's leaf would exceed the PLD route's budget")
    leaves = []
    for c in coords:
        key = (c.gaussian, c.param, c.m)
        leaf = leaves_kept.get(key) if leaves_kept is not None else None
        if leaf is None:
            leaf = _leaf(c, alpha, h, a)
            if leaf is None:
                raise ArithmeticError("a coordinate is out of the PLD route's range")
            if leaves_kept is not None and len(leaves_kept) < _LEAVES_KEPT:
                leaves_kept[key] = leaf
        leaves.append(leaf)
    # the composed vector, cut by _truncate, spans at most its reach: refuse before the work
    laws = [leaf.law.times(c.count) for c, leaf in zip(coords, leaves, strict=True)]
    laws += [start.law] if start is not None else []
    law = sum(laws[1:], laws[0])
    if law.reach(True) + law.reach(False) > PLD_MAX_LENGTH / 2:
        raise ArithmeticError("the composed vector would exceed the PLD route's budget")
    # the leaves' powers (_composed_leaves), then merged into ``start``
    node = _composed_leaves(list(zip(leaves, [c.count for c in coords], strict=True)))
    return node if start is None else _merge(start, node)


def _tilted(
    node: _Node, alpha: float, h: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """A node's grid points rounded outward and its masses' ε-free readout terms, ln of
    (mass ± error)·e^{−αg} rounded up and down: (grid_up, grid_dn, log_up, log_lo, peak,
    big), peak the largest mass's index and big the largest |αg| (the exponents' rounding
    errors scale with it)."""
    grid = (node.lo + np.arange(len(node.v), dtype=np.float64)) * h
    grid_up = _float_up_array(grid)  # (h = float(a) may be inexact)
    grid_dn = grid - np.abs(grid) * (4 * _U) - 1e-300
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        log_up = np.log(node.v + node.err) - alpha * grid_dn
        log_lo = np.log(np.maximum(node.v - node.err, 0.0)) - alpha * grid_up
    big = float(np.abs(alpha * grid).max())
    return grid_up, grid_dn, log_up, log_lo, int(np.argmax(node.v)), big


class _PLD(_Readout, _ReadAtExact):
    """The composed, gridded, tilted privacy-loss distribution at one (α, h)."""

    def __init__(
        self,
        coords: list[_Coordinate],
        alpha: float,
        h: float,
        a: Fraction | None,
    ) -> None:
        self._set_root(_composed(coords, alpha, h, a, None), alpha, h)

    @classmethod
    def of_root(cls, root: _Node, alpha: float, h: float) -> _PLD:
        """The readout of a composed root at (α, h)."""
        pld = cls.__new__(cls)
        pld._set_root(root, alpha, h)
        return pld

    def _set_root(self, root: _Node, alpha: float, h: float) -> None:
        self.alpha, self.h, self.root = alpha, h, root
        self.log_mgf = root.log_mgf  # Σ over the coordinates of ln M̄_j
        if not (np.isfinite(root.kappa) and np.isfinite(root.err) and root.v.size):
            raise ArithmeticError("the PLD route's composed vector is not finite")
        self.kappa, self.kappa_slack = root.kappa, root.kappa_slack
        self.log_dropped = root.dropped + root.log_mgf if root.dropped > _NEG_INF else _NEG_INF
        self.grid_up, self.grid_dn, log_up, log_lo, peak, big = _tilted(root, alpha, h)
        self._prepare(log_up, log_lo, peak, big)
        self._sums: tuple[np.ndarray, ...] | None = None
        self.leaves: dict = {}  # the leaves of the coordinates merged into it (at its α, h)

    # ---- extending a composition (the Accountant's incremental hook) ------------------
    # A composed root at tilt α on the grid h, merged with more coordinates' leaves at the
    # same α and h, is what composing them all at (α, h) gives (merging is associative, and
    # every bound above holds for any α ≥ 0 and any h): an upper bound on the δ of the larger
    # program, as valid as a fresh one, if less tight once α and h are far from what
    # _choose would pick for it.  Only grids whose spacing h is a power of two are extended
    # (their points index·h are exact floats, so leaves connected onto h share them; an exact
    # lattice a that is not a power of two belongs to the coordinates it was computed for).
    # The merge into the root is never formed: the more coordinates are composed into a node
    # of their own, and δ of the root ∗ that node is read from the root's suffix sums
    # (_Extended), in time linear in the node's length.

    @classmethod
    def on_shared_grid(cls, coords: list[_Coordinate], eps: float) -> _PLD | None:
        """The composition of ``coords`` at _choose's tilt for ``eps``, on a grid of spacing a
        power of two (so that any coordinates can be merged in later); None if out of range."""
        alpha, h, a = _choose(coords, eps, None)
        if a is not None:
            h = 2.0 ** math.floor(math.log2(h))
        try:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                return cls(coords, alpha, h, None)
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            return None

    def extended(self, more: list[_Coordinate]) -> _PLD | _Extended | None:
        """This composition (on a power-of-two grid) with the coordinates ``more`` merged in,
        at the same tilt and grid; None if one is out of range."""
        return _Extended.of(self, None, more)

    def formed(self) -> _PLD:
        """This composition, its suffix sums computed (for an extension read soon)."""
        self.suffix_sums()
        return self

    def suffix_sums(self) -> tuple[np.ndarray, ...]:
        """(Computed once.)  The root's readout terms summed from each point to the end, for
        reading δ of the root merged with another node (:class:`_Extended`): with x_i the
        upper terms (``up_scaled``) and x'_i the lower ones (``lo_scaled``), and y_i = e^{−g_i}
        (g_i = (lo + i)·h exact, h a power of two), arrays of length n + 1 (0 at n) that
        bound Σ_{i≥k} x_i from above (A↑) and Σ_{i≥k} x_i·y_i from below (B↓), and
        Σ_{i≥k} x'_i from below (A↓) and Σ_{i≥k} x'_i·y_i from above (B↑).  Each underflowed
        upper term is charged 1e-300; a float sum of n nonnegative terms is within a
        relative (n + 2)·u of the truth, a product or e^x within 8u."""
        if self._sums is None:
            n = len(self.up_scaled)
            g = (self.root.lo + np.arange(n, dtype=np.float64)) * self.h
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                y = np.exp(-g)
                gamma = (n + 2) * _U * 1.01
                up_terms = self.up_scaled + 1e-300
                parts = (
                    (up_terms, 1 + gamma),
                    (self.up_scaled * y * (1 - 16 * _U), 1 - gamma),
                    (self.lo_scaled, 1 - gamma),
                    (self.lo_scaled * y * (1 + 16 * _U) + 1e-300, 1 + gamma),
                )
                sums = []
                for terms, factor in parts:
                    suffix = np.zeros(n + 1)
                    suffix[:n] = np.cumsum(terms[::-1])[::-1] * factor
                    sums.append(suffix)
            self._sums = tuple(sums)
        return self._sums


#: An extension's node is merged into its root once longer than the root over this (an
#: extension costs a merge into the node and a reading linear in it; forming, a merge into
#: the root: at 10^4 releases of 10 kinds, 1-4 ms and 15-35 ms).
_FORM_SHARE = 4


class _Extended(_ReadAtExact):
    """A kept composition (``base``, a :class:`_PLD` on a power-of-two grid) merged with a
    node of more coordinates composed at its tilt and grid, read without forming the merge.

    The gridded δ̃ of the merge at ε is Σ_{i,j} R_i·Q_j·e^{−α(g_i+g_j)}(1 − e^{ε−g_i−g_j})
    over g_i + g_j > ε, R and Q the two nodes' tilted masses: for each point j of the node,
    with c_j = e^{ε−g_j} and k_j the first root point past ε − g_j (exactly: the points
    are integers times h), the inner sum is e^{−αg_j}·(A(k_j) − c_j·B(k_j)), A and B the
    root's suffix sums (:meth:`_PLD.suffix_sums`).  Every quantity is rounded toward the
    side of the bound read (masses ± their error bounds, the subtracted part rounded the
    other way), so :meth:`log_delta` bounds what the merged vector would read from above,
    and :meth:`log_delta_low` δ̃ from below, in time linear in the node.  Where the common
    scales leave the sums without enough range, the merge is formed after all (a
    :class:`_PLD` of the merged root) and read."""

    def __init__(self, base: _PLD, node: _Node) -> None:
        self.base, self.node = base, node
        self.alpha, self.h = base.alpha, base.h
        root = base.root
        self.kappa = _float_up(root.kappa + node.kappa)
        self.kappa_slack = (
            root.kappa_slack
            + node.kappa_slack
            + 16 * _U * (abs(root.kappa) + abs(node.kappa) + abs(self.kappa))
        )
        dropped = float(np.logaddexp(root.dropped, node.dropped))
        log_mgf = root.log_mgf + node.log_mgf
        self.log_dropped = dropped + log_mgf if dropped > _NEG_INF else _NEG_INF
        _, _, log_up, log_lo, peak, big = _tilted(node, self.alpha, self.h)
        self.scale, self.up, self.lo = _scaled(log_up, log_lo, peak)
        self.slop = base.slop + 1e-9 + 16 * _U * (big + abs(self.scale) + abs(node.kappa))
        self.g = (node.lo + np.arange(len(node.v), dtype=np.float64)) * self.h
        self._formed: _PLD | None = None

    @classmethod
    def of(cls, base: _PLD, node: _Node | None, more: list[_Coordinate]) -> _PLD | _Extended | None:
        """``base`` merged with ``node`` (None: nothing yet) and the coordinates ``more``;
        None if one is out of range or the grid is not a power of two."""
        if not _power_of_two(base.h):
            return None
        if node is None and not more:
            return base
        try:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                node = _composed(more, base.alpha, base.h, None, node, base.leaves)
                return cls(base, node)
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            return None

    def extended(self, more: list[_Coordinate]) -> _PLD | _Extended | None:
        """This composition with the coordinates ``more`` merged in: into the node, or, once
        the node is longer than the root over _FORM_SHARE, into the merge formed (so that a
        run of extensions by a release or two, an Accountant's at its budget's edge, each
        merge into and read a node no longer than the root)."""
        if len(self.node.v) * _FORM_SHARE > len(self.base.root.v):
            try:
                formed = self._merged()
            except (ArithmeticError, MemoryError, ValueError, OverflowError):
                return None
            return _Extended.of(formed, None, more)
        return _Extended.of(self.base, self.node, more)

    def _inner(self, eps: float, upper: bool) -> np.ndarray:
        """Per node point j: a bound (upper or lower) on the root's sum e^{αg_j}·Σ_i …
        at ε, i.e. A(k_j) − c_j·B(k_j) rounded to that side (0 where no root point is past
        ε − g_j)."""
        a_up, b_lo, a_lo, b_up = self.base.suffix_sums()
        n = len(a_up) - 1
        h = self.h
        m = len(self.g)
        # the first grid index past ε (eps/h is exact), as a root index for node point 0
        first = math.floor(eps / h) + 1 - self.base.root.lo - self.node.lo
        first = min(max(first, -1), n + m)  # (k is clipped to [0, n] below: fits an int64)
        k = np.clip(first - np.arange(m, dtype=np.int64), 0, n)
        arg = eps - self.g
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            c = np.exp(arg)
            # c: exp within 4 ulp (8u), its argument within u·|arg|; the product's three
            # roundings and 1 ∓ rel's, 4u more: 8u covers them
            rel = 8 * _U + 2 * _U * np.abs(arg)
            if upper:
                t = a_up[k] - c * (1 - rel) * b_lo[k] * (1 - 8 * _U)
                t = np.maximum(t, 0.0) * (1 + 2 * _U)  # (the difference's rounding)
            else:
                t = a_lo[k] - c * (1 + rel) * b_up[k] * (1 + 8 * _U)
                t = np.maximum(t, 0.0) * (1 - 2 * _U)
        return np.where(k < n, t, 0.0)  # (where no root point is past it, c may be inf)

    def _main(self, eps: float, upper: bool) -> float | None:
        """ln of the main sum (as :meth:`_Readout._main`), or None where the common scales
        leave it without range (an overflow, or a sum too far below its scales)."""
        inner = self._inner(eps, upper)
        m = len(inner)
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            if upper:
                total = float(((self.up + 1e-300) * inner).sum())
                total *= 1 + 64 * _U * (math.log2(m + 1) + 1)
            else:
                total = float((self.lo * inner).sum())
                total *= 1 - 64 * _U * (math.log2(m + 1) + 1)
        if not math.isfinite(total):  # (a lower bound of 0 is valid, if useless)
            return None if upper else _NEG_INF
        if not total > 0:
            return _NEG_INF if not upper else None
        if upper and math.log(total) < -600:  # the 1e-300 charges may dominate: form it
            return None
        scales = self.base.scale + self.scale + self.kappa
        if upper:
            return scales + math.log(total)
        return scales - self.kappa_slack + math.log(total)

    def formed(self) -> _PLD:
        """The merge formed, its suffix sums computed (a root for extensions to come)."""
        return self._merged().formed()

    def _merged(self) -> _PLD:
        """The merge formed after all (for readouts the suffix sums cannot answer)."""
        if self._formed is None:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                formed = _PLD.of_root(_merge(self.base.root, self.node), self.alpha, self.h)
            formed.leaves = self.base.leaves  # (the same α and h)
            self._formed = formed
        return self._formed

    def log_delta(self, eps: float) -> float:
        """An upper bound on ln δ(ε) of the merged composition (as :meth:`_Readout.log_delta`)."""
        main = self._main(eps, True)
        if main is None:
            return self._merged().log_delta(eps)
        return _upper(main, self.alpha, eps, self.log_dropped, self.slop)

    def log_delta_low(self, eps: float) -> float:
        """A lower bound on ln δ̃(ε) of the merged grid composition."""
        main = self._main(eps, False)
        if main is None:
            return self._merged().log_delta_low(eps)
        return _lower(main, self.slop)


#: The exact route (every atom of the composed loss, no grid) is used when the composed atoms
#: number at most this many, and each kind of coordinate's k-fold sum at most ENUM_MAX_TYPE.
ENUM_MAX_ATOMS = 1 << 16
ENUM_MAX_TYPE = 4096


def _enum_sizes(coords: list[_Coordinate]) -> list[int] | None:
    """The number of atoms of each kind of coordinate's count-fold sum (the Gaussian's
    window does not depend on the tilt), or None if the exact route does not apply."""
    sizes = []
    for c in coords:
        if c.gaussian:
            sf = cf._approx(c.param)
            if not (2.0**-30 < sf < 2.0**60):
                return None
            one = 2 * math.floor(_WINDOW * math.sqrt(sf) + 1.0) + 2
        else:
            one = c.m + 1
        if c.count * (one - 1) + 1 > ENUM_MAX_TYPE:
            return None
        sizes.append(c.count * (one - 1) + 1)
    return sizes if math.prod(sizes) <= ENUM_MAX_ATOMS else None


class _Enumerated(_Readout):
    """The composed privacy-loss distribution atom by atom, at a tilt α (exact: no grid).

    Each kind of coordinate (σ² or t, and |shift| m, ``count`` times) has its loss on a
    lattice: the count-fold sum is convolved directly (sums of positive terms, each entry
    within a relative count·err + 8·L·u·(1 + log₂ count) of the truth, L its length), and
    the kinds' sums are combined by outer sums: every composed atom at its own position
    (rounded outward).  The Gaussian's mass outside its window is charged by Chernoff's
    bound: the tilted mass of "some coordinate of kind c outside" is at most
    count_c·out_c·M_c^{count_c−1}·Π_{d≠c} M_d^{count_d} (M the tilted mass of one coordinate).
    """

    def __init__(self, coords: list[_Coordinate], alpha: float) -> None:
        self.alpha = alpha
        kinds = []
        for c in coords:
            one = _Coordinate(c.gaussian, c.param, c.m, 1)
            found = _atoms(one, alpha)
            if found is None:
                raise ArithmeticError("a coordinate is out of the exact route's range")
            _, w, out, kappa, size, first, slack, _ = found
            err = 64 * _U * (8 + size)
            top = float(w.max())
            w = w / top
            log_top = math.log(top)
            slack += 16 * _U * (abs(kappa) + abs(log_top))
            kappa = _float_up(kappa + log_top)
            out = out / top
            # ln M ≥ ln of one coordinate's tilted mass: window (rounded up) + outside
            log_m = _float_up(math.log(float(w.sum()) * (1 + err + 2 * len(w) * _U) + out))
            v = np.ones(1)
            base = w
            count = c.count
            length_err = 0.0
            while count:  # repeated squaring, by direct (positive) convolution
                if count & 1:
                    v = np.convolve(v, base)
                    length_err += len(v)
                count >>= 1
                if count:
                    base = np.convolve(base, base)
                    length_err += len(base)
            v_top = float(v.max())
            v = v / v_top
            k_total = _float_up(c.count * kappa + math.log(v_top))
            s_total = c.count * slack + 16 * _U * (abs(k_total) + c.count * abs(kappa))
            rel = c.count * err * 1.01 + 8 * _U * length_err + 8 * _U
            # the kind's losses: the sum S of its count shifts-draws, exactly on a lattice
            idx = np.arange(len(v), dtype=np.float64)
            if c.gaussian:
                sf = cf._approx(c.param)
                ys = c.count * first + idx  # Σ y over the count coordinates
                loss = (c.count * c.m * c.m - 2 * c.m * ys) / (2 * sf)
            else:
                t = cf._approx(c.param)
                loss = (c.count * c.m - 2 * idx) / t
            pad = np.abs(loss) * (16 * _U) + 1e-300  # σ², t rounded to float, and the ops
            log_out = (
                math.log(c.count * out) + (c.count - 1) * log_m + c.count * kappa
                if out > 0
                else _NEG_INF
            )
            log_mass = c.count * log_m + c.count * kappa
            kinds.append((loss + pad, loss - pad, v, rel, k_total, s_total, log_out, log_mass))
        # combine the kinds by outer sums
        g_up, g_dn = np.zeros(1), np.zeros(1)
        mass = np.ones(1)
        rel_all, kappa, kappa_slack = 0.0, 0.0, 0.0
        for up, dn, v, rel, k, sk, _, _ in kinds:
            g_up = np.add.outer(g_up, up).ravel()
            g_dn = np.add.outer(g_dn, dn).ravel()
            mass = np.multiply.outer(mass, v).ravel()
            rel_all += rel + 4 * _U
            kappa += k
            kappa_slack += sk
        n_kinds = len(kinds)
        self.kappa = _float_up(kappa + abs(kappa) * 4 * n_kinds * _U)
        self.kappa_slack = kappa_slack + 8 * n_kinds * _U * sum(abs(x[4]) for x in kinds)
        # outward again for the float additions of the kinds' positions
        g_up = g_up + np.abs(g_up) * (4 * n_kinds * _U)
        g_dn = g_dn - np.abs(g_dn) * (4 * n_kinds * _U)
        self.grid_up, self.grid_dn = g_up, g_dn
        # the mass left out: some kind with a coordinate outside its window
        total_m = sum(x[7] for x in kinds)
        pieces = [x[6] - x[7] + total_m for x in kinds if x[6] > _NEG_INF]
        self.log_dropped = (
            _float_up(float(np.logaddexp.reduce(pieces)) + 1e-12) if pieces else _NEG_INF
        )
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            log_up = np.log(mass * (1 + rel_all) + 1e-300) - alpha * g_dn
            log_lo = np.log(mass * max(0.0, 1 - rel_all)) - alpha * g_up
        big = float(np.abs(alpha * g_up).max())
        self._prepare(log_up, log_lo, int(np.argmax(mass)), big)


def _power_of_two(h: float) -> bool:
    return h > 0 and h == 2.0 ** math.floor(math.log2(h))


def _choose(coords: list[_Coordinate], eps: float, log_inv_delta: float | None):
    """α at the saddle point of ε (tilted mean = ε), and the grid: h for the accuracy aimed
    at, or the exact lattice a of every atom when it is not much finer than h.  (One grid for
    one ε, for tests of the grid itself; the route reads the grids of :class:`_Ladder`.)"""
    mean0 = sum(_moments(c, 0.0)[0] for c in coords)
    alpha = 0.0
    if eps > mean0:
        lo, hi = 0.0, 1.0
        while sum(_moments(c, hi)[0] for c in coords) < eps and hi < 1e6:
            lo, hi = hi, hi * 2
        for _ in range(40):
            mid = (lo + hi) / 2
            if sum(_moments(c, mid)[0] for c in coords) < eps:
                lo = mid
            else:
                hi = mid
        alpha = hi
    n = sum(c.count for c in coords)
    lam = alpha + 1.0
    if log_inv_delta is not None:
        lam = max(lam, 1.0)
    h = math.sqrt(4 * PLD_TARGET / (n * lam * (lam + 1)))
    h = 2.0 ** math.floor(math.log2(min(h, 0.25)))
    # the composed width: about 2·_GRID_WINDOW tilted standard deviations, plus the leaves
    width = 2 * _GRID_WINDOW * math.sqrt(sum(_moments(c, alpha)[1] for c in coords))

    def coarsened(budget: int) -> float:
        g = h
        while width / g > budget / 2 and g < 0.25:
            g *= 2
        return g

    def estimate(g: float) -> float:  # the relative error of connecting the dots at g
        return n * g * g * lam * (lam + 1) / 4

    budget = PLD_MAX_POINTS
    if estimate(coarsened(budget)) > PLD_FINE_ABOVE:  # long programs: a finer, slower grid
        budget = PLD_MAX_POINTS_FINE
    h = coarsened(budget)
    a = _lattice(coords)
    # (float(a) is 0 when a's denominator is past the float range: many distinct parameters)
    if a > 0 and float(a) > 0 and width / float(a) <= budget / 2 and a >= h / 4:
        return alpha, float(a), a
    return alpha, h, None


# ==========================================================================
# The PLD route's grids, one per bucket of ε
# ==========================================================================
#: The tilts of the buckets' grids, in units of 1/s (s² bounds the composed loss's variance
#: under every tilt): 1/2 apart up to z = 16, then a ratio of 1 + 1/64; at most _ALPHA_MAX.
_LADDER_LINEAR = 32
_LADDER_RATIO = 1 + 1 / 64
_ALPHA_MAX = 2.0**20

#: Most earlier grids asked for the bound carried into a bucket (see _pld_log_delta).
_CARRY_MAX = 8


def _ladder_z(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    geometric = 16 * _LADDER_RATIO ** np.maximum(x - _LADDER_LINEAR, 0.0)
    return np.where(x <= _LADDER_LINEAR, x / 2, geometric)


def _tilted_cumulants(c: _Coordinate, alphas: np.ndarray) -> tuple[np.ndarray, ...]:
    """ln E[e^{αL}], and the mean and variance of L under each tilt α, times the count (for
    the buckets' edges and a first guess of ε only: any non-decreasing edges keep the route
    valid)."""
    if c.gaussian:  # L ~ N(ρ, 2ρ), nearly
        rho = c.m * c.m / (2 * cf._approx(c.param))
        return (
            c.count * rho * alphas * (alphas + 1),
            c.count * (1 + 2 * alphas) * rho,
            np.full(len(alphas), c.count * 2 * rho),
        )
    mean0, var0 = _moments(c, 0.0)
    if (c.m + 1) * len(alphas) > 20_000_000:  # a very wide Laplace: Gaussian-like
        return (
            alphas * mean0 + alphas**2 * var0 / 2,
            mean0 + alphas * var0,
            np.full(len(alphas), var0),
        )
    t = cf._approx(c.param)
    j = np.arange(c.m + 1, dtype=np.float64)
    loss = (c.m - 2 * j) / t
    logp = -j / t + math.log(-math.expm1(-1 / t)) - math.log1p(math.exp(-1 / t))
    logp[0] = -math.log1p(math.exp(-1 / t))
    logp[-1] = -c.m / t - math.log1p(math.exp(-1 / t))
    out = np.empty((3, len(alphas)))
    step = max(1, 2_000_000 // (c.m + 1))
    for i in range(0, len(alphas), step):
        lw = logp[None, :] + alphas[i : i + step, None] * loss[None, :]
        top = lw.max(axis=1, keepdims=True)
        w = np.exp(lw - top)
        total = w.sum(axis=1)
        mean = (w * loss).sum(axis=1) / total
        out[0, i : i + step] = top[:, 0] + np.log(total)
        out[1, i : i + step] = mean
        out[2, i : i + step] = (w * (loss - mean[:, None]) ** 2).sum(axis=1) / total
    return c.count * out[0], c.count * out[1], c.count * out[2]


class _Ladder:
    """The PLD route's buckets of ε, and each bucket's grid: a function of the program only.

    Bucket j ≥ 1 holds the ε in [edges[j−1], edges[j]) (bucket 0 those below edges[0], the
    last those above): edge j is the tilted mean loss at the tilt α_{j+1} of a fixed ladder,
    so an ε in bucket j has its saddle point between α_j and α_{j+1}, and the bucket's grid is
    tilted at the ladder's midpoint.  The grids' spacings never grow with j, are powers of 2
    (nested) or, from some bucket on, the exact lattice of every loss: a later bucket's grid
    is never coarser than an earlier one's, which is what lets a bound be carried from
    bucket to bucket (:meth:`Composition._pld_log_delta`).
    """

    def __init__(self, coords: list[_Coordinate]) -> None:
        n = sum(c.count for c in coords)
        # s² ≥ the loss's variance under any tilt: 2ρ for a Gaussian coordinate, and
        # (range/2)² (Popoviciu) for a Laplace one
        var = sum(
            c.count
            * (c.m * c.m / cf._approx(c.param) if c.gaussian else (c.m / cf._approx(c.param)) ** 2)
            for c in coords
        )
        s = math.sqrt(var)
        z_max = max(_ALPHA_MAX * s, 64.0)
        if z_max <= 16:
            last = max(1, math.ceil(2 * z_max))
        else:
            last = _LADDER_LINEAR + math.ceil(math.log(z_max / 16) / math.log(_LADDER_RATIO))
        x = np.arange(last + 1, dtype=np.float64)
        edge_alphas = _ladder_z(x[1:]) / s  # α_1 … α_last
        parts = [_tilted_cumulants(c, edge_alphas) for c in coords]
        log_mgf, means, variance = (sum(p[i] for p in parts) for i in range(3))
        self.edges = np.maximum.accumulate(means)  # non-decreasing
        # the saddle-point estimate of ln δ at each edge, δ ≈ e^{K(α)−αε}/(α(α+1)√(2πV)):
        # a first guess for epsilon() only
        a = edge_alphas
        self.guess = np.minimum(
            log_mgf - a * means - np.log(a * (a + 1) * np.sqrt(2 * math.pi * variance)), 0.0
        )
        self.alpha = _ladder_z(x + 0.5) / s  # bucket j's tilt, j = 0 … last
        # spacing: aimed at PLD_TARGET (the error of connecting the dots ≈ n·h²·λ(λ+1)/4,
        # λ = α + 1), then coarsened to the point budget over the width 2·_GRID_WINDOW·s
        lam = self.alpha + 1.0
        h = np.sqrt(4 * PLD_TARGET / (n * lam * (lam + 1)))
        h = 2.0 ** np.floor(np.log2(np.minimum(h, 0.25)))
        width = 2 * _GRID_WINDOW * s

        def coarsened(budget: np.ndarray | int) -> np.ndarray:
            fits = 2.0 ** np.ceil(np.log2(np.maximum(2 * width / budget, 2.0**-1000)))
            return np.maximum(h, np.minimum(fits, 0.25))

        normal = coarsened(PLD_MAX_POINTS)
        fine = n * normal**2 * lam * (lam + 1) / 4 > PLD_FINE_ABOVE
        budget = np.where(fine, PLD_MAX_POINTS_FINE, PLD_MAX_POINTS)
        self.h = np.minimum.accumulate(coarsened(budget))
        self.exact = _enum_sizes(coords) is not None
        self.a = _lattice(coords)
        af = float(self.a)
        on = (af > 0) & (width / max(af, 1e-300) <= budget / 2) & (af >= self.h / 4)
        self.on_lattice = np.logical_or.accumulate(on)

    def bucket(self, eps: float) -> int:
        return int(np.searchsorted(self.edges, eps, side="right"))

    def left(self, j: int) -> float:
        """The smallest ε of bucket j ≥ 1."""
        return float(self.edges[j - 1])

    def grid(self, j: int) -> tuple[float, float, Fraction | None]:
        if self.exact:  # every atom: h = 0
            return float(self.alpha[j]), 0.0, None
        if self.on_lattice[j]:
            return float(self.alpha[j]), float(self.a), self.a
        return float(self.alpha[j]), float(self.h[j]), None


def _continuous_log_delta(rho: Fraction, eps: Fraction) -> float:
    """ln δ(ε) of the continuous Gaussian mechanism at ρ (Balle–Wang), to about 30 digits:
    an estimate only (choosing whether to compute a bound), never a bound itself."""
    ctx = gmpy2.context(precision=160)
    mu = ctx.sqrt(ctx.mul(2, mpfr(rho, 160)))
    e = mpfr(eps, 160)
    a = ctx.sub(ctx.div(mu, 2), ctx.div(e, mu))
    b = ctx.sub(ctx.minus(ctx.div(mu, 2)), ctx.div(e, mu))
    root2 = ctx.sqrt(mpfr(2, 160))
    first = ctx.erfc(ctx.div(ctx.minus(a), root2))
    second = ctx.mul(ctx.exp(e), ctx.erfc(ctx.div(ctx.minus(b), root2)))
    value = ctx.sub(first, second)
    if value <= 0:  # lost to cancellation: the first term alone overestimates it
        value = first
    return float(ctx.log(ctx.div(value, 2)))


# ==========================================================================
# The composition
# ==========================================================================
class Composition:
    """The composed privacy of a release program; see :func:`compose`."""

    def __init__(self, releases: Sequence[Release]) -> None:
        self.releases: tuple[Release, ...] = tuple(releases)
        #: with an ℓ2-ball release: the programs of its worst-case vectors (δ is their largest),
        #: or None when there are too many to list and the zCDP route answers alone
        self._cases: list[Composition] | None = None
        self._zcdp_only = False
        if any(isinstance(r, Gaussian) and isinstance(r.sensitivity, L2Ball) for r in releases):
            programs = _worst_programs(self.releases)
            self._zcdp_only = programs is None
            self._cases = None if programs is None else [Composition(p) for p in programs]
            self._coords: list[_Coordinate] = []
        else:
            self._coords = _coordinates(self.releases)
        self._cache: dict[tuple, _Readout | None] = {}
        self._lock = threading.Lock()
        self._ladder_found: _Ladder | None = None
        # the PLD route enumerates atoms in floats: only for parameters well inside their range
        self._in_range = all(
            2.0**-30 < cf._approx(c.param) < (PLD_MAX_SIGMA2 if c.gaussian else 2.0**60)
            and c.m <= PLD_MAX_ATOMS
            for c in self._coords
        )

    # ---- exact quantities -------------------------------------------------------------
    @property
    def rho(self) -> Fraction:
        """The zCDP total ρ = Σ ρ_i, exactly (a Laplace release counts as ε²/2 per query)."""
        return sum((r.rho for r in self.releases), Fraction(0))

    @property
    def pure_epsilon(self) -> Fraction | None:
        """Σ k‖μ‖₁/t when every release is Laplace (pure DP, δ = 0), else None."""
        if all(isinstance(r, Laplace) for r in self.releases):
            return sum((r.epsilon for r in self.releases if isinstance(r, Laplace)), Fraction(0))
        return None

    def __repr__(self) -> str:
        return "compose(" + ", ".join(map(repr, self.releases)) + ")"

    # ---- copying and pickling ---------------------------------------------------------
    # The releases are immutable; the lock and the cache of composed grids are not state:
    # a copy gets a lock of its own and its own dict of the grids computed so far (each grid
    # is read-only once built, so the two may share them); a pickle leaves the grids out
    # (they can weigh megabytes, and are recomputed on demand).
    def __getstate__(self) -> dict:
        return {"releases": self.releases}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["releases"])  # type: ignore[misc]

    def __copy__(self) -> Composition:
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        with self._lock:
            new._cache = dict(self._cache)
        return new

    def __deepcopy__(self, memo: dict) -> Composition:
        return self.__copy__()  # nothing mutable is shared, as for a shallow copy

    def _shared_grid_pld(self, epsilon: Fraction) -> _PLD | None:
        """A PLD of this program that more releases can be merged into (:meth:`_PLD.extended`):
        one already computed on a power-of-two grid, else a new one; None out of range, or
        when the program has an ℓ2-ball release (its δ is the largest over several programs,
        not one PLD)."""
        if not self._in_range or self._cases is not None or self._zcdp_only:
            return None
        with self._lock:
            for pld in getattr(self, "_cache", {}).values():
                if isinstance(pld, _PLD) and _power_of_two(pld.h):
                    return pld
        ef = float(epsilon) if epsilon < _PLD_MAX_EPS else _PLD_MAX_EPS
        return _PLD.on_shared_grid(self._coords, ef)

    def _grids_no_finer(self, epsilon: Fraction, h: float) -> bool:
        """Whether every bound this composition could give on δ(ε) other than basic
        composition and zCDP comes from grids of spacing at least h (h a power of 2): the
        PLD route alone answers (several kinds of release, none an ℓ2 ball), and neither
        the exact atoms nor a lattice are among the grids its bucket and the earlier ones
        read.  The ladder's spacings are powers of 2 too, so each of those grids is h's
        coarsened, and its gridded δ̃ at least h's (connecting the dots on nested grids)."""
        if not _power_of_two(h) or epsilon >= _PLD_MAX_EPS:
            return False
        if self._cases is not None or self._zcdp_only or not self._in_range:
            return False
        if self.pure_epsilon is not None or self._one_sigma2() is not None:
            return False
        if self._one_scale() is not None:
            return False
        ef = float(epsilon)
        if Fraction(ef) > epsilon:
            ef = math.nextafter(ef, -math.inf)  # as _other_routes reads it
        ladder = self._ladder()
        j = ladder.bucket(ef)
        # the bucket's spacing is the smallest of buckets 0 … j (they never grow with j)
        return not ladder.exact and not ladder.on_lattice[j] and ladder.h[j] >= h

    # ---- routes ----------------------------------------------------------------------
    def _one_sigma2(self) -> tuple[Fraction, tuple[int, ...], int] | None:
        if not all(isinstance(r, Gaussian) for r in self.releases):
            return None
        if len({r.sigma2 for r in self.releases if isinstance(r, Gaussian)}) != 1:
            return None
        first = self.releases[0]
        assert isinstance(first, Gaussian)
        groups = {_vector_of(r) for r in self.releases}
        if len(groups) == 1:
            return first.sigma2, _vector_of(first), sum(r.k for r in self.releases)
        if sum(r.k * len(_vector_of(r)) for r in self.releases) > 10**5:
            return None
        mu = tuple(x for r in self.releases for _ in range(r.k) for x in _vector_of(r))
        return first.sigma2, mu, 1

    def _one_scale(self) -> tuple[Fraction, int, int] | None:
        if not all(isinstance(r, Laplace) for r in self.releases):
            return None
        keys = {(r.scale, r.sensitivity) for r in self.releases if isinstance(r, Laplace)}
        if len(keys) != 1:
            return None
        (scale, sens) = keys.pop()
        if len(sens) != 1:
            return None
        return scale, abs(sens[0]), sum(r.k for r in self.releases)

    def _pld(self, alpha: float, h: float, a: Fraction | None) -> _Readout | None:
        """The grid at (α, h, a) (h = 0: the exact atoms at α), or None where the route
        cannot build it; cached (a grid is a function of its key: the cache changes no
        answer)."""
        key = (alpha, h, a)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        try:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                found: _Readout | None = (
                    _Enumerated(self._coords, alpha) if h == 0 else _PLD(self._coords, alpha, h, a)
                )
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            found = None
        with self._lock:
            while len(self._cache) >= 8:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = found
        return found

    def _ladder(self) -> _Ladder:
        with self._lock:
            found = self._ladder_found
        if found is None:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                found = _Ladder(self._coords)
            with self._lock:
                self._ladder_found = found
        return found

    def _pld_log_delta(self, eps: float) -> float | None:
        """The PLD route's upper bound on ln δ at a float ε: a function of ε only, and
        non-increasing in it.

        With bucket j's grid g_j (:class:`_Ladder`) and b_j its readout, the route answers
        F(ε) = min(b_j(ε), T_j), where T_j = min_{i<j} b_i(e_{i+1}) carries every earlier
        bucket's bound at its right end e_{i+1} (valid at ε ≥ e_{i+1}, as δ falls with ε).
        Within a bucket F falls with ε, and at an edge the set only grows: F never rises
        (empty buckets, whose edges coincide, answer no ε and are skipped).
        T_j need not be computed when b_j(ε) is below a lower bound L_j(e_j) on the gridded
        δ̃_j(e_j): each b_i(e_{i+1}) ≥ δ̃_i(e_{i+1}) ≥ δ̃_j(e_{i+1}) ≥ δ̃_j(e_j) (an earlier grid
        is coarser, or the same lattice: its pair dominates), so T_j ≥ L_j(e_j).  Likewise
        the walk back stops at bucket i once what it carried is ≤ L_i(e_i).
        """
        ladder = self._ladder()
        j = ladder.bucket(eps)
        grid = self._pld(*ladder.grid(j))
        value = grid.log_delta(eps) if grid is not None else math.inf
        if j == 0 or (grid is not None and value <= grid.log_delta_low(ladder.left(j))):
            return value if value < math.inf else None
        carried = math.inf
        asked = 0
        for i in range(j - 1, -1, -1):
            if i > 0 and ladder.edges[i - 1] == ladder.edges[i]:
                continue  # an empty bucket answers no ε: nothing to carry from it
            if asked == _CARRY_MAX:
                break
            asked += 1
            earlier = self._pld(*ladder.grid(i))
            if earlier is None:
                continue
            carried = min(carried, earlier.log_delta(ladder.left(i + 1)))
            if i == 0 or carried <= earlier.log_delta_low(ladder.left(i)):
                break
        found = min(value, carried)
        return found if found < math.inf else None

    # ---- basic composition ----------------------------------------------------------
    def _basic_parts(self) -> tuple[Fraction, list[tuple[Fraction, tuple[int, ...], int]]]:
        """The Laplace releases' pure ε in all, and the Gaussian releases grouped by
        (σ², μ) with their k added up."""
        pure = Fraction(0)
        groups: dict[tuple[Fraction, tuple[int, ...]], int] = {}
        for r in self.releases:
            if isinstance(r, Laplace):
                pure += r.epsilon
            else:
                key = (r.sigma2, _vector_of(r))
                groups[key] = groups.get(key, 0) + r.k
        return pure, [(s, mu, k) for (s, mu), k in sorted(groups.items(), key=str)]

    def _basic_log_delta(self, e: Fraction, unless_above: mpfr | None = None) -> mpfr | None:
        """Basic composition of each release's own guarantee: every Laplace release at its
        pure ε (δ = 0), the Gaussian releases at ε_G = ε − Σ pure ε, as the smaller of
        (a) each (σ², μ) group's exact δ (Theorem 15) at a share w_g·ε_G, w_g ∝ √ρ_g (fixed
        by the program), added up, when there are at most _BASIC_EXACT_MAX groups, and
        (b) Corollary 13 at the Gaussians' ρ.  None when ε_G < 0.  Non-increasing in ε.

        (a) costs a closed form per group: with ``unless_above`` (the other routes' best),
        it is skipped where the continuous Gaussian's δ of one group (σ² ≥ 1, close to the
        discrete one) is already 4 times above it: the sum cannot win there."""
        pure, groups = self._basic_parts()
        if not groups or e < pure:
            return None
        e_g = e - pure
        rho_g = sum(
            (Fraction(k * sum(x * x for x in mu)) / (2 * s) for s, mu, k in groups), Fraction(0)
        )
        best = cf._cdp_log_delta(rho_g, e_g)
        if (
            unless_above is not None
            and len(groups) <= _BASIC_EXACT_MAX
            and all(s >= 1 for s, _, _ in groups)
        ):
            shares = self._basic_weights(groups) if len(groups) > 1 else [Fraction(1)]
            guess = max(
                _continuous_log_delta(Fraction(k * sum(x * x for x in mu)) / (2 * s), e_g * w)
                for (s, mu, k), w in zip(groups, shares, strict=True)
            )
            if guess - math.log(4) > unless_above:
                return best
        if len(groups) == 1:
            s, mu, k = groups[0]
            return min(best, cf._gaussian_log_delta(s, e_g, mu, k))
        if len(groups) <= _BASIC_EXACT_MAX:
            up = cf._AR.up
            parts = [
                cf._gaussian_log_delta(s, e_g * w, mu, k)
                for (s, mu, k), w in zip(groups, self._basic_weights(groups), strict=True)
            ]
            parts = [x for x in parts if x > mpfr("-inf")]
            if not parts:
                return mpfr("-inf")
            top = max(parts)
            total = mpfr(0)
            for x in parts:
                total = up.add(total, up.exp(up.sub(x, top)))
            best = min(best, up.add(top, up.log(total)))
        return best

    @staticmethod
    def _basic_weights(groups) -> list[Fraction]:
        """Shares of ε_G ∝ √ρ_g (equal where a ρ is past the float range)."""
        roots = [
            math.sqrt(cf._approx(Fraction(k * sum(x * x for x in mu)) / (2 * s)))
            for s, mu, k in groups
        ]
        if not all(0 < r < math.inf for r in roots):
            roots = [1.0] * len(groups)
        total = sum(map(Fraction, roots), Fraction(0))
        return [Fraction(r) / total for r in roots]

    def _routes_log_delta(self, e: Fraction) -> dict[str, mpfr]:
        routes = self._other_routes(e)
        basic = self._basic_log_delta(e, min(routes.values()))
        if basic is not None:
            routes["basic composition"] = basic
        return routes

    def _other_routes(self, e: Fraction) -> dict[str, mpfr]:
        routes: dict[str, mpfr] = {}
        rho = self.rho
        routes["zCDP"] = cf._cdp_log_delta(rho, e) if rho > 0 else mpfr(0)
        pure = self.pure_epsilon
        if pure is not None and e >= pure:
            routes["pure DP"] = mpfr("-inf")
            return routes
        one = self._one_sigma2()
        if one is not None:
            s, mu, k = one
            routes["Theorem 15"] = cf._gaussian_log_delta(s, e, mu, k)
        lap = self._one_scale()
        if lap is not None:
            t, sens, k = lap
            bound = cf._laplace_log_delta(t, e, sens, k)
            routes["Eq. 49"] = mpfr("-inf") if bound is None else bound
        if "Theorem 15" not in routes and not (lap is not None and sens == 1) and self._in_range:
            # ε as a float rounded down keeps the bound valid (δ falls with ε)
            ef = float(e) if e < _PLD_MAX_EPS else _PLD_MAX_EPS
            if Fraction(ef) > e:
                ef = math.nextafter(ef, -math.inf)
            found = self._pld_log_delta(ef)
            if found is not None and not math.isnan(found):
                routes["PLD"] = mpfr(min(found, 0.0))
        return routes

    def _best(self, e: Fraction) -> tuple[mpfr, str]:
        if self._cases is not None:  # the worst of the ball's vectors
            return max((case._best(e) for case in self._cases), key=lambda found: found[0])
        if self._zcdp_only:
            return cf._cdp_log_delta(self.rho, e), "zCDP"
        routes = self._routes_log_delta(e)
        name = min(routes, key=lambda k: routes[k])
        return routes[name], name

    # ---- the public readout ----------------------------------------------------------
    def delta(self, epsilon, log: bool = False) -> float:
        """δ(ε) of the whole program, rounded up: never below the true δ of the product
        mechanism (both neighbouring directions: the noise is symmetric, so they agree).

        The smallest of every valid route (:func:`compose`).  ``log=True`` returns an upper
        bound on ln δ (−inf when δ = 0), for δ below the float range.

        A function of ``epsilon`` only (not of earlier calls or other threads), and
        non-increasing in it.  Accuracy: within 10^−7 of the truth where the PLD route
        enumerates the atoms (small programs), aimed at 0.1% on its grid; near a pure ε or
        with ε on a heavy atom at a tiny δ the grid's guarantee is δ(ε) ≤ δ_true(ε − n·h)
        (n coordinates, spacing h; ``docs/accounting.md``).
        """
        e = cf._nonnegative(epsilon, "epsilon")
        log_hi, _ = self._best(e)
        if log_hi == mpfr("-inf"):
            return -math.inf if log else 0.0
        return cf._delta_out(log_hi, log)

    def route(self, epsilon) -> str:
        """The name of the route that gives :meth:`delta` at ``epsilon``: ``"Theorem 15"``,
        ``"Eq. 49"``, ``"pure DP"``, ``"PLD"``, ``"basic composition"`` or ``"zCDP"``."""
        e = cf._nonnegative(epsilon, "epsilon")
        return self._best(e)[1]

    def epsilon(self, delta) -> float:
        """The smallest ε (rounded up, certified) whose δ(ε) is at most ``delta``.

        Certified by this object's own :meth:`delta`: ``delta(epsilon(d)) <= d`` always, and
        ``delta(e) > d`` for ``e < epsilon(d)/1.001`` (each route's smallest ε is found to a
        relative 1e−9 or better on its own non-increasing bound, and the smallest that
        :meth:`delta` certifies is returned).  0 < ``delta`` < 1; ``delta`` = 0 gives the pure
        ε of an all-Laplace program (``ValueError`` otherwise).
        """
        d = cf._probability(delta, "delta", allow_zero=True)
        pure = self.pure_epsilon
        if d == 0:
            if pure is None:
                raise ValueError(
                    "delta must lie in (0, 1) for a program with a Gaussian release "
                    "(only an all-Laplace program has delta = 0)"
                )
            return cf._float_up(pure)
        return cf._float_up(self._epsilon_fraction(d))

    def _epsilon_fraction(self, d: Fraction) -> Fraction:
        """The smallest ε (a Fraction) at which :meth:`delta` certifies ``d``.

        Each route's own smallest ε is found (to a relative 2^−36 for the closed forms,
        1e−9 for the PLD route, on its own non-increasing bound) and the smallest that
        the whole readout certifies is returned: δ is the minimum over routes, so its
        threshold is the smallest of theirs.  With an ℓ2-ball release, the largest over
        its worst-case programs (or the zCDP route alone)."""
        if self._cases is not None:
            return self._cases_epsilon(d, self._cases)
        target = self._target(d)
        rho = self.rho
        if self._zcdp_only:
            zc = cf._exact(mpfr(cf._cdp_eps_interval(rho, d).hi, 64)) + Fraction(1, 2**40)
            return max(zc, Fraction(0))
        candidates: list[Fraction] = []
        zc = cf._exact(mpfr(cf._cdp_eps_interval(rho, d).hi, 64)) + Fraction(1, 2**40)
        candidates.append(max(zc, Fraction(0)))
        if self.pure_epsilon is not None:
            candidates.append(self.pure_epsilon)
        one = self._one_sigma2()
        if one is not None:
            s, mu, k = one
            candidates.append(
                cf._smallest_eps(lambda e: cf._gaussian_log_delta(s, e, mu, k), target, zc)
            )
        lap = self._one_scale()
        if lap is not None:
            t, sens, k = lap

            def lap_hi(e: Fraction) -> mpfr:
                bound = cf._laplace_log_delta(t, e, sens, k)
                return mpfr("-inf") if bound is None else bound

            candidates.append(cf._smallest_eps(lap_hi, target, Fraction(k * sens) / t))
        if one is None and not (lap is not None and sens == 1) and self._in_range:
            found = self._pld_epsilon(float(target), min(candidates))
            if found is not None:
                candidates.append(found)
        found = self._basic_epsilon(target, min(candidates))
        if found is not None:
            candidates.append(found)
        # certify with the whole readout, as a float rounded up is what is returned
        for e in sorted(set(candidates)):
            up = cf._float_up(e)
            if up == math.inf or self._best(Fraction(up))[0] <= target:
                return e  # (ε = +inf, past the floats, is an upper bound with no question)
        raise AssertionError("no route certified its own epsilon")  # pragma: no cover

    def _cases_epsilon(self, d: Fraction, cases: list[Composition]) -> Fraction:
        """The smallest ε certified for every worst case: the largest of their ε's, checked
        (and raised until certified) on each case's own δ bound."""
        target = self._target(d)
        eps = max(case._epsilon_fraction(d) for case in cases)
        for _ in range(64):
            if all(case._best(eps)[0] <= target for case in cases):
                return eps
            eps += eps * Fraction(1, 2**20) + Fraction(1, 2**40)
        zc = cf._exact(mpfr(cf._cdp_eps_interval(self.rho, d).hi, 64)) + Fraction(1, 2**40)
        return max(eps, zc)  # zCDP at the ball's ρ bounds every case

    @staticmethod
    def _target(d: Fraction) -> mpfr:
        """ln d rounded down to a float, and to ln of d rounded down to a float: a bound
        ≤ it reads back as a δ ≤ d (and an ln δ ≤ ln d) after :func:`cf._delta_out`."""
        log_d = cf._AR.q(d).log().lo
        d_float = cf._float_down(d)
        if d_float >= 2.2250738585072014e-308:
            log_d = min(log_d, cf._AR.dn.log(mpfr(d_float)))
        return mpfr(cf._float_down(log_d))

    def _basic_epsilon(self, target: mpfr, best: Fraction) -> Fraction | None:
        """The smallest ε of the basic-composition route, when it is below ``best``."""
        if self._basic_log_delta(best) is None:
            return None
        good = best
        found = self._basic_log_delta(good)
        if found is None or found > target:
            return None  # this route cannot beat the others
        pure, _ = self._basic_parts()

        def log_delta_hi(e_g: Fraction) -> mpfr:
            value = self._basic_log_delta(pure + e_g)
            return mpfr(0) if value is None else value

        return pure + cf._smallest_eps(log_delta_hi, target, good - pure)

    def _pld_epsilon(self, target: float, start: Fraction) -> Fraction | None:
        """The smallest float ε ≤ ``start`` (to a relative 1e−9) at which the PLD route's
        bound (:meth:`_pld_log_delta`, non-increasing) is ≤ ``target``; None if none."""
        hi = cf._float_down(min(start, Fraction(_PLD_MAX_EPS)))
        value = self._pld_log_delta(0.0)
        if value is not None and value <= target:
            return Fraction(0)
        ladder = self._ladder()

        def threshold(readout, lo: float, hi: float, rel: float) -> float:
            """The smallest ε in (lo, hi] (to ``rel``) with readout(ε) ≤ target, given
            readout(hi) ≤ target (non-increasing readouts)."""
            while hi - lo > rel * hi:
                mid = (lo + hi) / 2
                value = readout(mid)
                if value is not None and value <= target:
                    hi = mid
                else:
                    lo = mid
            return hi

        # a first bucket from the saddle-point estimate; then the threshold on that bucket
        # grid's own readout (cheap), moving to the bucket of the threshold found
        i = int(np.searchsorted(-ladder.guess, -target, side="left"))
        guess = min(hi, float(ladder.edges[i])) if i < len(ladder.edges) else hi
        guess = guess if guess > 0 else hi
        for _ in range(4):
            grid = self._pld(*ladder.grid(ladder.bucket(guess)))
            if grid is None or grid.log_delta(hi) > target:
                break
            moved = threshold(grid.log_delta, 0.0, hi, 1e-6)
            done = ladder.bucket(moved) == ladder.bucket(guess)
            guess = moved
            if done:
                break
        # bracket the guess on the route's readout, then bisect
        value = self._pld_log_delta(guess)
        step = 1e-6
        if value is not None and value <= target:
            top, low = guess, guess
            while low > 0:
                low = max(0.0, guess * (1 - step)) if step < 1 else 0.0
                value = self._pld_log_delta(low)
                if value is None or value > target:
                    break
                top, step = low, step * 8
        else:
            low, top = guess, guess
            while True:
                if top >= hi:
                    return None  # the route does not reach the target below hi
                top = min(hi, guess * (1 + step))
                value = self._pld_log_delta(top)
                if value is not None and value <= target:
                    break
                low, step = top, step * 8
        return Fraction(threshold(self._pld_log_delta, low, top, 1e-9))


def compose(*releases: Release) -> Composition:
    """The privacy of a whole release program: the composition of its releases.

    ``releases`` are :class:`Gaussian` and :class:`Laplace` objects (any mix, any σ², scales,
    sensitivities and k).  The result's ``delta(epsilon, log=False)`` is an upper bound on
    the δ of the product mechanism (the hockey-stick divergence of the composed privacy-loss
    distribution, over both neighbouring directions), never below it: the smallest of the
    exact routes where they apply (Theorem 15 for one σ², Eq. 49 for one scale), pure DP,
    zCDP (Corollary 13), basic composition of the releases' own guarantees, and the
    privacy-loss-distribution route with one-sided rounding (``docs/accounting.md``): exact
    atom by atom for small programs, else on a grid aimed at a relative 0.1% of the truth for
    δ down to 1e−300 (and below, with ``log=True``), δ(ε) ≤ δ_true(ε − n·h) where that is not
    met.  ``delta`` is a function of ε only and never rises with it; ``epsilon(delta)`` is
    the smallest ε that ``delta`` certifies and ``rho`` the exact zCDP total.
    ``route(epsilon)`` names the route used.

    Example::

        >>> from dgauss.accounting import compose, Gaussian, Laplace
        >>> program = compose(Gaussian(100), Gaussian(400, k=4), Laplace(10))
        >>> program.rho
        Fraction(3, 200)
    """
    if not releases:
        raise ValueError("compose needs at least one release (Gaussian(...) or Laplace(...))")
    for r in releases:
        if not isinstance(r, (Gaussian, Laplace)):
            raise TypeError(
                f"each release must be accounting.Gaussian or accounting.Laplace, got {r!r}"
            )
    return Composition(releases)
