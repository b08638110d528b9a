"""The PLD route's settings: the accuracy its grid aims at, its work budgets, the windows of
its leaves and composed vectors, the cut of negligible ends, and the float rounding every one
of its error bounds is written with (the unit roundoff u, and rounding a float upward).

Shared by the rooms of the privacy-loss-distribution route of :func:`dgauss.accounting.compose`
(:mod:`._leaves`, :mod:`._convolution`, :mod:`._grids`, :mod:`._readouts`, :mod:`._enumerated`,
:mod:`._composition`); how each figure enters a bound: ``docs/accounting.md``, *Composing a
program*.
"""

from __future__ import annotations

import math

import numpy as np

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


#: Largest σ² of a Gaussian coordinate in the PLD route (beyond 2·10^8 its atoms are thinned).
PLD_MAX_SIGMA2 = 2.0**101


def _float_up(x: float) -> float:
    return x + abs(x) * 4 * _U + 1e-300


def _float_up_array(x: np.ndarray) -> np.ndarray:
    return x + np.abs(x) * (4 * _U) + 1e-300
