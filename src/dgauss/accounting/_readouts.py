"""δ(ε) read from a composed privacy-loss distribution, with one-sided rounding: the common
readout of points with outward-rounded positions and tilted masses (:class:`_Readout`, the
dropped mass charged by Chernoff's bound), the composed grid at one tilt and spacing
(:class:`_PLD`), and a kept grid extended by more coordinates and read without forming the
merge (:class:`_Extended`, the Accountant's incremental hook).

The end of the PLD route (:mod:`._composition`): δ is never below the truth, and falls with ε
float for float; ``docs/accounting.md``, *Composing a program* and *The Accountant*.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._convolution import _composed, _merge
from dgauss.accounting._grids import _choose, _power_of_two
from dgauss.accounting._leaves import _Node
from dgauss.accounting._pld_settings import _NEG_INF, _PLD_MAX_EPS, _U, _float_up, _float_up_array
from dgauss.accounting._programs import _Coordinate


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
