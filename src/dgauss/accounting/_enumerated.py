"""The exact route of the PLD: the composed privacy-loss distribution atom by atom, at a tilt,
with no grid (:class:`_Enumerated`), for programs whose composed atoms are few
(:func:`._grids._enum_sizes`).  Its δ is within 10^−7 of the truth; read as every readout is
(:class:`._readouts._Readout`).  ``docs/accounting.md``, *Composing a program*.
"""

from __future__ import annotations

import math

import numpy as np

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._leaves import _atoms
from dgauss.accounting._pld_settings import _NEG_INF, _U, _float_up
from dgauss.accounting._programs import _Coordinate
from dgauss.accounting._readouts import _Readout


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
