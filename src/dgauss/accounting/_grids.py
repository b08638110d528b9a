"""Which grid of the PLD route reads δ at ε: the tilt α at the saddle point of ε and the grid
spacing h aimed at the route's accuracy (:func:`_choose`, one grid for one ε), the fixed
ladder of tilts whose buckets of ε each read one grid (:class:`_Ladder`, so that δ is a
function of ε only), and whether the composed atoms are few enough to be read exactly, with no
grid (:func:`_enum_sizes`, for :mod:`._enumerated`).

Any tilt and any grid give a valid bound; these choices are for accuracy and work only
(``docs/accounting.md``, *Composing a program*).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._leaves import _lattice
from dgauss.accounting._pld_settings import (
    _GRID_WINDOW,
    _WINDOW,
    PLD_FINE_ABOVE,
    PLD_MAX_POINTS,
    PLD_MAX_POINTS_FINE,
    PLD_TARGET,
)
from dgauss.accounting._programs import _Coordinate


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


#: The tilts of the buckets' grids, in units of 1/s (s² bounds the composed loss's variance
#: under every tilt): 1/2 apart up to z = 16, then a ratio of 1 + 1/64; at most _ALPHA_MAX.
_LADDER_LINEAR = 32
_LADDER_RATIO = 1 + 1 / 64
_ALPHA_MAX = 2.0**20


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
