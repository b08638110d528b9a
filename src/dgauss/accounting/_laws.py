"""What is known of the law of a composed vector's untruncated sum (:class:`_Law`: its mean,
its leaves' widths, variances and reach), and the tail bounds that say where its ends hold a
negligible mass: Hoeffding's and Bennett's (:func:`_bennett_reach`).

Step 3 of the PLD route (:mod:`._composition`): the ends of a composed vector beyond these
bounds are dropped and charged by Chernoff's bound (``docs/accounting.md``, *Composing a
program*).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dgauss.accounting._pld_settings import _LOG_INV_DROP, _U


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
