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
* **PLD**: the privacy-loss distribution of the product mechanism, computed with rigorous
  one-sided rounding (below), for any mix.

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
   leaf).  An end is dropped when its measured mass is negligible, or when Hoeffding's bound
   over the leaves' supports says it is (the FFT's error floor hides the first in long
   compositions).
4. Each convolution's floating-point error is bounded entrywise (FFT error analysis,
   generously inflated) and carried; every entry is used as (value + bound).

The grid spacing h is chosen from the error of connecting the dots (about n·h²·λ(λ+1)/4
relative, λ the slope of ln δ, n the coordinates) to aim at 0.05%: a relative 1e−3 of
the truth where the grid fits the work budget (the tests check it against exact
computations), looser but still an upper bound where it does not.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from gmpy2 import mpfr

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._gaussian_sums import log_normaliser
from dgauss.accounting._interval import Arith

__all__ = ["Gaussian", "Laplace", "Composition", "compose"]

_U = 2.0**-53  # unit roundoff of float64

#: Relative accuracy aimed at by the PLD route's grid (half the 0.1% it reaches).
PLD_TARGET = 5e-4

#: Most grid points in the composed distribution's ±_WINDOW tilted standard deviations
#: (beyond, the grid is coarsened) ...
PLD_MAX_POINTS = 1 << 19

#: ... unless the error of connecting the dots on that grid is estimated above PLD_FINE_ABOVE
#: (the estimate runs about 3× above the error measured), when up to this many are used:
#: composing 10^4..10^5 coordinates then takes seconds instead of a fraction of one.
PLD_MAX_POINTS_FINE = 1 << 21
PLD_FINE_ABOVE = 3e-3

#: Most points in any vector while composing (its FFT then takes about 1 GiB).
PLD_MAX_LENGTH = 1 << 25

#: Most atoms enumerated for one coordinate's loss (σ² up to about 2·10^8).
PLD_MAX_ATOMS = 400_000

#: Half-width of a Gaussian coordinate's tilted window, in standard deviations.
_WINDOW = 14.0

#: An end of a composed vector is dropped while its mass (value + error) is below this
#: fraction of the whole (and accounted for by the Chernoff bound).
_DROP = 1e-18

_NEG_INF = -math.inf
_LOG_DROP = math.log(_DROP) + 1e-12  # rounded up
_LOG_INV_DROP = -math.log(_DROP) + 1e-12  # rounded up (a wider t)

#: Past this ε the PLD route is not asked (δ is then far below anything it resolves; the
#: other routes answer, and a float ε this large is rounded down, which keeps δ an upper bound).
_PLD_MAX_EPS = 1e6


# ==========================================================================
# Releases
# ==========================================================================
def _vector(sensitivity) -> tuple[int, ...]:
    return cf._sensitivity(sensitivity)


@dataclass(frozen=True, init=False)
class Gaussian:
    """A release with N_Z(0, σ²) noise on each coordinate, answered ``k`` times.

    ``sigma2`` > 0 exact (int, Fraction, ``"71.41"``, …); ``sensitivity`` a positive int or
    the difference vector μ of Theorem 15; ``k`` from 1 to 10^7.
    """

    sigma2: Fraction
    sensitivity: tuple[int, ...]
    k: int

    def __init__(self, sigma2, sensitivity=1, k: int = 1) -> None:
        object.__setattr__(self, "sigma2", cf._positive(sigma2, "sigma2"))
        object.__setattr__(self, "sensitivity", _vector(sensitivity))
        object.__setattr__(self, "k", cf._count(k, "k"))

    @property
    def rho(self) -> Fraction:
        """ρ = k‖μ‖²/(2σ²), exactly (Theorems 4, 14)."""
        return Fraction(self.k * sum(x * x for x in self.sensitivity)) / (2 * self.sigma2)

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

    @property
    def epsilon(self) -> Fraction:
        """The pure ε = k‖μ‖₁/t, exactly."""
        return Fraction(self.k * sum(abs(x) for x in self.sensitivity)) / self.scale

    @property
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
    sens = r.sensitivity[0] if len(r.sensitivity) == 1 else list(r.sensitivity)
    return (f", sensitivity={sens}" if sens != 1 else "") + (f", k={r.k}" if r.k != 1 else "")


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


def _coordinates(releases: Sequence[Release]) -> list[_Coordinate]:
    counts: dict[tuple[bool, Fraction, int], int] = {}
    for r in releases:
        gaussian = isinstance(r, Gaussian)
        param = r.sigma2 if isinstance(r, Gaussian) else r.scale
        for x in r.sensitivity:
            if x:
                key = (gaussian, param, abs(x))
                counts[key] = counts.get(key, 0) + r.k
    return [_Coordinate(g, p, m, c) for (g, p, m), c in sorted(counts.items(), key=str)]


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
    #: the untruncated convolution's law (leaves normalised, independent): its mean (grid
    #: index, within ``mean_err``) and Σ (leaf support width)², for Hoeffding's bound
    mean: float
    mean_err: float
    width2: float


def _log_theta(s: Fraction) -> float:
    """ln Θ(s) rounded down (so 1/Θ is rounded up), Θ(s) = Σ_y e^{−y²/(2σ²)}."""
    return cf._float_down(log_normaliser(s, Arith(64)).lo)


def _float_up(x: float) -> float:
    return x + abs(x) * 4 * _U + 1e-300


def _atoms(c: _Coordinate, alpha: float):
    """A coordinate's loss atoms ℓ (each rounded up), tilted masses w (ln-scaled by kappa),
    the mass outside the window (same scale), kappa, and the largest exponent met (its
    rounding errors scale with it); None when too many atoms."""
    m = c.m
    if c.gaussian:
        s = c.param
        sf = cf._approx(s)
        if not (2.0**-30 < sf < 2.0**60):
            return None
        sd = math.sqrt(sf)
        centre = -alpha * m  # the tilted distribution is N_Z(−αm, σ²), up to a constant
        half = _WINDOW * sd + 1.0
        y_lo, y_hi = math.ceil(centre - half), math.floor(centre + half)
        if y_hi - y_lo + 1 > PLD_MAX_ATOMS:
            return None
        y = np.arange(y_lo, y_hi + 1, dtype=np.float64)
        w = np.exp(-((y + alpha * m) ** 2) / (2 * sf))
        loss = (m * m - 2 * m * y) / (2 * sf)
        # ln of the tilted constant: α(α+1)m²/(2σ²) − ln Θ, rounded up
        kappa = _float_up(alpha * (alpha + 1) * m * m / (2 * sf)) - _log_theta(s)
        kappa = _float_up(kappa)
        # tails outside [y_lo, y_hi]: geometric bound on each side (ratio ≤ e^{−(2d+1)/(2σ²)})
        out = 0.0
        for d in (y_hi + 1 - centre, centre - (y_lo - 1)):
            out += math.exp(-d * d / (2 * sf)) / -math.expm1(-(2 * d + 1) / (2 * sf))
        size = float(_WINDOW * _WINDOW / 2 + alpha * np.abs(loss).max())
        return _float_up_array(loss), w, _float_up(out * 1.0001), kappa, size, y_lo
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
    return _float_up_array(loss), np.exp(log_w - top), 0.0, _float_up(top), size, 0


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
    loss, w, out, kappa, exponent, first = found
    if a is not None:  # every atom is a grid point: nothing to connect
        j = _aligned_indices(c, len(loss), first, a)
        u = np.zeros(len(loss))
    else:
        j = np.floor(loss / h)
        u = loss - j * h  # in [0, h) up to rounding; clamp
        u = np.clip(u, 0.0, h)
    den = -math.expm1(-h)
    lo_w = w * (-np.expm1(u - h)) * np.exp(-(1 + alpha) * u) / den
    hi_w = w * (-np.expm1(-u)) * np.exp(alpha * (h - u)) / den
    ji = j.astype(np.int64)
    base = int(ji.min())
    size = int(ji.max()) - base + 2
    if size > PLD_MAX_POINTS:
        return None
    v = np.bincount(ji - base, weights=lo_w, minlength=size).astype(np.float64)
    v += np.bincount(ji - base + 1, weights=hi_w, minlength=size)
    top = float(v.max())
    v = v / top
    kappa = _float_up(kappa + math.log(top))
    # relative error of each entry: a few roundings (libm within 4 ulp), and the exponents'
    # absolute rounding errors, which grow with their size
    err = 64 * _U * (8 + exponent)
    # M̄ ≥ E[e^{αL̃}] of the gridded coordinate: the window's tilted mass (each entry within
    # a relative err, the float sum within size·u) plus the mass outside it, moved up by < h
    log_window = math.log(float(v.sum()) * (1 + err + 2 * size * _U)) + kappa
    log_out = math.log(out) + alpha * h + kappa - math.log(top) if out > 0 else _NEG_INF
    log_mgf = _float_up(float(np.logaddexp(log_window, log_out)))
    dropped = _float_up(log_out - log_mgf) if out > 0 else _NEG_INF
    index = np.arange(size, dtype=np.float64)
    mean = base + float((index * v).sum() / v.sum())
    # v is within a relative `err` of the true vector: the mean within err·size, and more
    mean_err = 4 * err * size + 1e-9 * size
    return _Node(base, v, kappa, err, dropped, log_mgf, mean, mean_err, float(size - 1) ** 2)


def _fft_error(n: int) -> float:
    """Entrywise error bound of an FFT convolution of length n, per unit of ‖a‖₁‖b‖₁."""
    return 80 * max(1, (n - 1).bit_length()) * _U


def _merge(a: _Node, b: _Node) -> _Node:
    n = len(a.v) + len(b.v) - 1
    if n > PLD_MAX_LENGTH:  # before allocating: the route is left out instead
        raise ArithmeticError(f"a composed vector of {n} points exceeds the PLD route's budget")
    na, nb = float(a.v.sum()), float(b.v.sum())
    na_true, nb_true = na + a.err * len(a.v), nb + b.err * len(b.v)
    if min(len(a.v), len(b.v)) <= 64:
        v = np.convolve(a.v, b.v)
        rounding = 2 * min(len(a.v), len(b.v)) * _U * na_true * nb_true
    else:
        size = 1 << (n - 1).bit_length()
        v = np.fft.irfft(np.fft.rfft(a.v, size) * np.fft.rfft(b.v, size), size)[:n]
        rounding = _fft_error(size) * na_true * nb_true
    err = a.err * nb_true + b.err * na_true + rounding
    np.maximum(v, 0.0, out=v)
    top = float(v.max())
    if top <= 0:
        top = 1.0
    v /= top
    err = err / top * (1 + 4 * _U)
    kappa = _float_up(a.kappa + b.kappa + math.log(top))
    dropped = float(np.logaddexp(a.dropped, b.dropped))
    merged = _Node(
        a.lo + b.lo,
        v,
        kappa,
        err,
        dropped,
        a.log_mgf + b.log_mgf,
        a.mean + b.mean,
        a.mean_err + b.mean_err,
        a.width2 + b.width2,
    )
    return _truncate(merged)


def _truncate(node: _Node) -> _Node:
    """Drop the ends of a node's vector whose mass is negligible, recording it as dropped.

    Two bounds on an end's true tilted mass, whichever drops more on each side:

    * measured: Σ (value + error) over it, while below _DROP of the whole;
    * Hoeffding: the node's vector is (up to earlier drops, which only remove mass) the
      convolution of its leaves, i.e. Π_j M̄_j times the law of a sum of independent
      variables, leaf j's supported on an interval of width w_j.  Beyond its mean ± t,
      t = √(Σw_j²·ln(1/_DROP)/2), each side holds at most _DROP of it: in the units of
      ``dropped`` (mass / Π M̄_j) that is _DROP exactly, whatever the FFT's error floor,
      which stops the measured bound from cutting anything in long compositions.
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
    t = math.sqrt(node.width2 * _LOG_INV_DROP / 2) + node.mean_err + 1
    i_h = max(0, math.floor(node.mean - t) - node.lo)  # indices below mean − t
    k_h = max(0, n - 1 - (math.ceil(node.mean + t) - node.lo))  # indices above mean + t
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
        node.mean,
        node.mean_err,
        node.width2,
    )


def _power(leaf: _Node, count: int) -> _Node:
    result = None
    base = leaf
    while True:
        if count & 1:
            result = base if result is None else _merge(result, base)
        count >>= 1
        if not count:
            break
        base = _merge(base, base)
    assert result is not None
    return result


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


class _PLD:
    """The composed, gridded, tilted privacy-loss distribution at one (α, h)."""

    def __init__(
        self,
        coords: list[_Coordinate],
        alpha: float,
        h: float,
        a: Fraction | None,
        start: _Node | None = None,
    ) -> None:
        # start: a composed root at (α, h) to merge the coordinates into (see extended())
        self.alpha, self.h = alpha, h
        leaves = []
        for c in coords:
            leaf = _leaf(c, alpha, h, a)
            if leaf is None:
                raise ArithmeticError("a coordinate is out of the PLD route's range")
            leaves.append(leaf)
        # the composed vector, cut by Hoeffding, spans at most 2t: refuse before the work
        width2 = sum(c.count * leaf.width2 for c, leaf in zip(coords, leaves, strict=True))
        width2 += start.width2 if start is not None else 0.0
        if 2 * math.sqrt(width2 * _LOG_INV_DROP / 2) > PLD_MAX_LENGTH / 2:
            raise ArithmeticError("the composed vector would exceed the PLD route's budget")
        nodes = [_power(leaf, c.count) for c, leaf in zip(coords, leaves, strict=True)]
        nodes += [start] if start is not None else []
        while len(nodes) > 1:  # balanced merging keeps the vectors short
            nodes.sort(key=lambda node: len(node.v))
            nodes = [_merge(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)] + (
                [nodes[-1]] if len(nodes) % 2 else []
            )
        self.root = nodes[0]
        self.log_mgf = self.root.log_mgf  # Σ over the coordinates of ln M̄_j
        grid = (self.root.lo + np.arange(len(self.root.v), dtype=np.float64)) * h
        # the grid points as floats, rounded outward (h = float(a) may be inexact)
        self.grid_up = _float_up_array(grid)
        self.grid_dn = grid - np.abs(grid) * (4 * _U) - 1e-300
        self.upper = self.root.v + self.root.err

    # ---- extending a composition (the Accountant's incremental hook) ------------------
    # A composed root at tilt α on the grid h, merged with more coordinates' leaves at the
    # same α and h, is what composing them all at (α, h) gives (merging is associative, and
    # every bound above holds for any α ≥ 0 and any h): an upper bound on the δ of the larger
    # program, as valid as a fresh one, if less tight once α and h are far from what
    # _choose would pick for it.  Only grids whose spacing h is a power of two are extended
    # (their points index·h are exact floats, so leaves connected onto h share them; an exact
    # lattice a that is not a power of two belongs to the coordinates it was computed for).

    @classmethod
    def on_shared_grid(cls, coords: list[_Coordinate], eps: float) -> _PLD | None:
        """The composition of ``coords`` at _choose's tilt for ``eps``, on a grid of spacing a
        power of two (so that any coordinates can be merged in later); None if out of range."""
        alpha, h, a = _choose(coords, eps, None)
        if a is not None:
            h = 2.0 ** math.floor(math.log2(h))
        try:
            return cls(coords, alpha, h, None)
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            return None

    def extended(self, more: list[_Coordinate]) -> _PLD | None:
        """This composition (on a power-of-two grid) with the coordinates ``more`` merged in,
        at the same tilt and grid; None if one is out of range."""
        if not _power_of_two(self.h):
            return None
        try:
            return _PLD(more, self.alpha, self.h, None, start=self.root)
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            return None

    def log_delta_at(self, e: Fraction) -> float:
        """An upper bound on ln δ(e), e exact (read at a float ε rounded down), at most 0."""
        ef = float(e) if e < _PLD_MAX_EPS else _PLD_MAX_EPS
        e_lo = ef if Fraction(ef) <= e else math.nextafter(ef, -math.inf)
        return min(self.log_delta(e_lo), 0.0)

    def log_delta(self, eps: float) -> float:
        """An upper bound on ln δ(ε) of the gridded composition (so of the true one)."""
        a, node = self.alpha, self.root
        sel = self.grid_up > eps
        if not sel.any():
            main = _NEG_INF
        else:
            # (1 − e^{ε−g}) at g rounded up, the untilt e^{−αg} at g rounded down
            logs = (
                np.log(self.upper[sel])
                - a * self.grid_dn[sel]
                + np.log(-np.expm1(eps - self.grid_up[sel]))
                + node.kappa
            )
            top = float(logs.max())
            main = top + math.log(float(np.exp(logs - top).sum()))
        if node.dropped > _NEG_INF:
            log_c = (
                a * math.log(a) - (1 + a) * math.log1p(a) if a > 0 else 0.0
            )  # c_α = α^α/(1+α)^{1+α}
            tail = log_c - a * eps + self.log_mgf + node.dropped
            main = float(np.logaddexp(main, tail))
        # every float step above is within a relative 1e−12; inflate by 1e−9
        return main + 1e-9 + abs(main) * 16 * _U if main > _NEG_INF else main


def _power_of_two(h: float) -> bool:
    return h > 0 and h == 2.0 ** math.floor(math.log2(h))


def _choose(coords: list[_Coordinate], eps: float, log_inv_delta: float | None):
    """α at the saddle point of ε (tilted mean = ε), and the grid: h for the accuracy aimed
    at, or the exact lattice a of every atom when it is not much finer than h."""
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
    # the composed width: about 2·_WINDOW tilted standard deviations, plus the leaves
    width = 2 * _WINDOW * math.sqrt(sum(_moments(c, alpha)[1] for c in coords))

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
# The composition
# ==========================================================================
class Composition:
    """The composed privacy of a release program; see :func:`compose`."""

    def __init__(self, releases: Sequence[Release]) -> None:
        self.releases: tuple[Release, ...] = tuple(releases)
        self._coords = _coordinates(self.releases)
        self._cache: dict[tuple, _PLD | None] = {}
        self._lock = threading.Lock()
        # the PLD route enumerates atoms in floats: only for parameters well inside their range
        self._in_range = all(
            2.0**-30 < cf._approx(c.param) < 2.0**60 and c.m <= PLD_MAX_ATOMS for c in self._coords
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
        one already computed on a power-of-two grid, else a new one; None out of range."""
        if not self._in_range:
            return None
        with self._lock:
            for pld in getattr(self, "_cache", {}).values():
                if isinstance(pld, _PLD) and _power_of_two(pld.h):
                    return pld
        ef = float(epsilon) if epsilon < _PLD_MAX_EPS else _PLD_MAX_EPS
        return _PLD.on_shared_grid(self._coords, ef)

    # ---- routes ----------------------------------------------------------------------
    def _one_sigma2(self) -> tuple[Fraction, tuple[int, ...], int] | None:
        if not all(isinstance(r, Gaussian) for r in self.releases):
            return None
        if len({r.sigma2 for r in self.releases if isinstance(r, Gaussian)}) != 1:
            return None
        first = self.releases[0]
        assert isinstance(first, Gaussian)
        groups = {r.sensitivity for r in self.releases}
        if len(groups) == 1:
            return first.sigma2, first.sensitivity, sum(r.k for r in self.releases)
        if sum(r.k * len(r.sensitivity) for r in self.releases) > 10**5:
            return None
        mu = tuple(x for r in self.releases for _ in range(r.k) for x in r.sensitivity)
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

    def _pld(self, alpha: float, h: float, a: Fraction | None) -> _PLD | None:
        key = (alpha, h, a)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        try:
            found: _PLD | None = _PLD(self._coords, alpha, h, a)
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            found = None
        with self._lock:
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[key] = found
        return found

    def _routes_log_delta(self, e: Fraction) -> dict[str, mpfr]:
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
            ef = float(e) if e < _PLD_MAX_EPS else _PLD_MAX_EPS
            self._pld(*_choose(self._coords, ef, None))
            # ε as a float rounded down keeps the bound valid (δ falls with ε); every grid
            # computed so far gives a valid bound, so the smallest is taken (and a δ read at
            # an ε that epsilon() certified is the one it certified)
            e_lo = ef if Fraction(ef) <= e else math.nextafter(ef, -math.inf)
            with self._lock:
                plds = [p for p in self._cache.values() if p is not None]
            found = min((p.log_delta(e_lo) for p in plds), default=math.nan)
            if not math.isnan(found):
                routes["PLD"] = mpfr(min(found, 0.0))
        return routes

    def _best(self, e: Fraction) -> tuple[mpfr, str]:
        routes = self._routes_log_delta(e)
        name = min(routes, key=lambda k: routes[k])
        return routes[name], name

    # ---- the public readout ----------------------------------------------------------
    def delta(self, epsilon, log: bool = False) -> float:
        """δ(ε) of the whole program, rounded up: never below the true δ of the product
        mechanism (both neighbouring directions: the noise is symmetric, so they agree).

        The smallest of every valid route (:func:`compose`).  ``log=True`` returns an upper
        bound on ln δ (−inf when δ = 0), for δ below the float range.
        """
        e = cf._nonnegative(epsilon, "epsilon")
        log_hi, _ = self._best(e)
        if log_hi == mpfr("-inf"):
            return -math.inf if log else 0.0
        return cf._delta_out(log_hi, log)

    def route(self, epsilon) -> str:
        """The name of the route that gives :meth:`delta` at ``epsilon``: ``"Theorem 15"``,
        ``"Eq. 49"``, ``"pure DP"``, ``"PLD"`` or ``"zCDP"``."""
        e = cf._nonnegative(epsilon, "epsilon")
        return self._best(e)[1]

    def epsilon(self, delta) -> float:
        """The smallest ε (rounded up, certified) whose δ(ε) is at most ``delta``.

        The smallest over every route: each route's ε is certified (its δ upper bound at
        that ε is ≤ ``delta``).  0 < ``delta`` < 1; ``delta`` = 0 gives the pure ε of an
        all-Laplace program (``ValueError`` otherwise).
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
        rho = self.rho
        target = cf._AR.q(d).log().lo
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
            if sens == 1:
                return min(candidates)
        if one is None and self._in_range:
            found = self._pld_epsilon(d, min(candidates))
            if found is not None:
                candidates.append(found)
        return min(candidates)

    def _pld_epsilon(self, d: Fraction, start: Fraction) -> Fraction | None:
        """The smallest ε certified by the PLD route, searching one tilt and refining it once."""
        if start > _PLD_MAX_EPS:
            return None
        target = cf._float_down(cf._AR.q(d).log().lo)  # ln δ rounded down
        guess = float(start)
        best: Fraction | None = None
        for _ in range(3):
            pld = self._pld(*_choose(self._coords, guess, -target))
            if pld is None:
                return best
            hi = float(start)
            if pld.log_delta(hi) > target:
                return best
            lo = 0.0
            if pld.log_delta(lo) <= target:
                return Fraction(0)
            for _ in range(60):
                mid = (lo + hi) / 2
                if pld.log_delta(mid) <= target:
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-12 * hi:
                    break
            found = Fraction(hi)
            best = found if best is None else min(best, found)
            if abs(hi - guess) <= 0.05 * max(hi, 1e-9):
                break
            guess = hi
        return best


def compose(*releases: Release) -> Composition:
    """The privacy of a whole release program: the composition of its releases.

    ``releases`` are :class:`Gaussian` and :class:`Laplace` objects (any mix, any σ², scales,
    sensitivities and k).  The result's ``delta(epsilon, log=False)`` is an upper bound on
    the δ of the product mechanism (the hockey-stick divergence of the composed privacy-loss
    distribution, over both neighbouring directions), never below it: the smallest of the
    exact routes where they apply (Theorem 15 for one σ², Eq. 49 for one scale), pure DP,
    zCDP (Corollary 13), and the privacy-loss-distribution route with one-sided rounding
    (``docs/accounting.md``), which aims at a relative 0.1% of the truth for δ down to
    1e−300 (and below, with ``log=True``).  ``epsilon(delta)`` is the smallest certified ε
    and ``rho`` the exact zCDP total.  ``route(epsilon)`` names the route used.

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
