"""One coordinate's privacy loss as a leaf of the PLD route: its atoms (the loss
L = ln P(o)/Q(o) and its tilted masses, :func:`_atoms`; a Gaussian window too wide to list
thinned onto every B-th atom, :func:`_thinned_gaussian`), connected onto the grid or placed on
the exact lattice every atom lies on (:func:`_lattice`), as a :class:`_Node` of tilted masses
with their error bounds and what is known of their law (:func:`_leaf`).

Steps 1 and 2 of the PLD route (:mod:`._composition`): connecting the dots, a garbling whose
δ is never below the truth, and the tilt by e^{αℓ}; ``docs/accounting.md``, *Composing a
program*.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dgauss._interval import Arith
from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._gaussian_sums import log_normaliser
from dgauss.accounting._laws import _Law
from dgauss.accounting._pld_settings import (
    _NEG_INF,
    _U,
    _WINDOW,
    PLD_MAX_ATOMS,
    PLD_MAX_POINTS,
    PLD_MAX_SIGMA2,
    _float_up,
    _float_up_array,
)
from dgauss.accounting._programs import _Coordinate


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
