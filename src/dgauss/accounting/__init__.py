"""Privacy accounting for the discrete Gaussian and discrete Laplace: exact, and never optimistic.

Sections 2–4 of Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy"
(NeurIPS 2020), as functions, each rounded to the safe side (a δ or ε never below the truth, a ρ
never above it, a calibrated σ² or scale never giving less privacy than asked):

* zCDP ↔ (ε, δ), Corollary 13: :func:`cdp_delta`, :func:`cdp_eps`, :func:`cdp_rho`,
  :func:`cdp_delta_standard`.
* One mechanism, k queries: :func:`gaussian_rho`, :func:`gaussian_delta`,
  :func:`gaussian_epsilon` (Theorems 4, 7, 14, 15); :func:`laplace_epsilon`,
  :func:`laplace_delta` (Eq. 49).
* Calibration: :func:`calibrate_gaussian`, :func:`calibrate_laplace`.
* What a sensitivity admits (a :class:`NeighbourSet`): :class:`L2Ball` (an int Δ is the ℓ2
  ball of radius Δ, accounted at its worst integer vector) and :class:`Contributions` (a table
  whose rows were bounded per person, :func:`dgauss.tabulate`; accounted at its worst vector).
* Utility: :func:`gaussian_variance`, :func:`laplace_variance`, :func:`gaussian_pmf`,
  :func:`gaussian_cdf`, :func:`gaussian_sf`, :func:`gaussian_interval`,
  :func:`laplace_interval`.

The package's rooms: ``_closed_forms`` (the functions above), ``_gaussian_sums`` (rigorous
enclosures of the discrete Gaussian's sums, over :mod:`dgauss._interval`'s interval arithmetic),
``_lattice_bounds`` (the lattice error of a sum of them, and the ℓ2 ball's uniform bound),
``_neighbours`` (the worst vectors of an ℓ2 ball), and whole programs (:func:`compose`):
``_releases`` (:class:`Gaussian`, :class:`Laplace`), ``_composition`` (:class:`Composition` and
its routes; the basic-composition route in ``_basic_composition``) over the PLD route's rooms
``_programs``, ``_leaves``, ``_laws``, ``_convolution``, ``_grids``, ``_readouts``,
``_enumerated`` and ``_pld_settings`` (``_compose`` only keeps old pickles loading).  How
every bound is derived: ``docs/accounting.md``.
"""

from dgauss.accounting._closed_forms import (
    GRID_DIGITS,
    MAX_BITS,
    MAX_K,
    Number,
    Sensitivity,
    calibrate_gaussian,
    calibrate_laplace,
    cdp_delta,
    cdp_delta_standard,
    cdp_eps,
    cdp_rho,
    gaussian_cdf,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_interval,
    gaussian_pmf,
    gaussian_rho,
    gaussian_sf,
    gaussian_variance,
    laplace_delta,
    laplace_epsilon,
    laplace_interval,
    laplace_variance,
)

__all__ = [
    "cdp_delta",
    "cdp_delta_standard",
    "cdp_eps",
    "cdp_rho",
    "gaussian_rho",
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_epsilon",
    "laplace_delta",
    "calibrate_gaussian",
    "calibrate_laplace",
    "gaussian_variance",
    "laplace_variance",
    "gaussian_pmf",
    "gaussian_cdf",
    "gaussian_sf",
    "gaussian_interval",
    "laplace_interval",
    "GRID_DIGITS",
    "MAX_BITS",
    "MAX_K",
    "Number",
    "Sensitivity",
]

from dgauss.accounting._composition import Composition, compose  # noqa: E402
from dgauss.accounting._neighbours import Contributions, L2Ball, NeighbourSet  # noqa: E402
from dgauss.accounting._releases import Gaussian, Laplace  # noqa: E402

__all__ += [
    "compose",
    "Composition",
    "Gaussian",
    "Laplace",
    "L2Ball",
    "Contributions",
    "NeighbourSet",
]

# Which room holds a class is not part of the interface: the composition's classes are named
# by the package, so that a pickle of one names dgauss.accounting, never a private module.
for _public in (Gaussian, Laplace, Composition):
    _public.__module__ = __name__
del _public
