"""The releases a program is made of: :class:`Gaussian` (N_Z(0, σ²) noise, Theorems 4, 14
and 15 of the paper) and :class:`Laplace` (Lap_Z(t) noise, Eq. 49), each on an integer query
answered ``k`` times with a sensitivity (an int, a difference vector μ, or for a Gaussian an
ℓ2 ball, :class:`~dgauss.accounting.L2Ball`), their exact ρ (and a Laplace release's pure ε),
and how they print.

Immutable, exact values: :func:`dgauss.accounting.compose` composes them
(:mod:`._composition`); ``docs/accounting.md``, *Composing a program*.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._neighbours import L2Ball, NeighbourSet, norm2

__all__ = ["Gaussian", "Laplace"]


def _vector(sensitivity) -> tuple[int, ...]:
    return cf._sensitivity(sensitivity)


def _kept_hash(release) -> int:
    """The hash of a release's fields, computed once and kept (an Accountant's ledger looks
    its kinds up at every release; a Fraction's hash is not cheap)."""
    kept = release.__dict__.get("_hash")
    if kept is None:
        kept = hash((release.__class__.__name__, *_fields(release)))
        release.__dict__["_hash"] = kept
    return kept


def _fields(release) -> tuple:
    if isinstance(release, Gaussian):
        return release.sigma2, release.sensitivity, release.k
    return release.scale, release.sensitivity, release.k


def _state(release) -> dict:
    """A release's pickled state: its fields (and ρ, ε once computed), never the kept hash,
    which another process (another string-hash seed) would compute differently."""
    state = dict(release.__dict__)
    state.pop("_hash", None)
    return state


@dataclass(frozen=True, init=False)
class Gaussian:
    """A release with N_Z(0, σ²) noise on each coordinate, answered ``k`` times.

    ``sigma2`` > 0 exact (int, Fraction, ``"71.41"``, …); ``sensitivity`` a positive int Δ,
    an ℓ2 bound accounted at the worst integer vector of the ball (as
    :class:`~dgauss.accounting.L2Ball` (Δ); each of the k queries may move a different vector),
    an ``L2Ball``, or exactly the difference vector μ of Theorem 15; ``k`` from 1 to 10^7.
    """

    sigma2: Fraction
    sensitivity: tuple[int, ...] | NeighbourSet
    k: int

    def __init__(self, sigma2, sensitivity=1, k: int = 1) -> None:
        object.__setattr__(self, "sigma2", cf._positive(sigma2, "sigma2"))
        object.__setattr__(self, "sensitivity", cf._gaussian_sensitivity(sensitivity))
        object.__setattr__(self, "k", cf._count(k, "k"))

    @functools.cached_property
    def rho(self) -> Fraction:
        """ρ = k‖μ‖²/(2σ²), exactly (Theorems 4, 14; the largest ‖μ‖ of a ball)."""
        return self.k * norm2(self.sensitivity) / (2 * self.sigma2)

    __hash__ = _kept_hash
    __getstate__ = _state

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

    __hash__ = _kept_hash
    __getstate__ = _state

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
    if isinstance(r.sensitivity, L2Ball) and r.sensitivity.coordinates is None:
        sens = r.sensitivity.radius
    elif isinstance(r.sensitivity, NeighbourSet):
        sens = r.sensitivity
    elif len(r.sensitivity) == 1 and isinstance(r, Laplace):
        sens = r.sensitivity[0]
    else:  # a Gaussian vector, even of one entry: [2] is not the ball 2
        sens = r.sensitivity[0] if r.sensitivity == (1,) else list(r.sensitivity)
    return (f", sensitivity={sens}" if sens != 1 else "") + (f", k={r.k}" if r.k != 1 else "")
