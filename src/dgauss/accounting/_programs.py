"""A program of releases as the routes of :mod:`._composition` read it: an ℓ2-ball release
replaced by each of its worst-case vectors (:func:`_worst_programs`, over :mod:`._neighbours`),
and a vector program as its coordinates (:class:`_Coordinate`: one kind of noise, its σ² or t,
one |shift| m, and how many times it occurs), each a pair of neighbouring distributions of the
product mechanism (Theorem 15's coordinates; ``docs/accounting.md``, *Composing a program*).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._neighbours import MAX_NEIGHBOURS, NeighbourSet
from dgauss.accounting._releases import Gaussian, Release


def _worst_programs(releases: Sequence[Release]) -> list[tuple[Release, ...]] | None:
    """Every ℓ2-ball release replaced by each of its worst-case vectors (:mod:`._neighbours`):
    the programs whose largest δ is the program's; None past the sets' cap of programs
    (:data:`MAX_NEIGHBOURS` for ℓ2 balls, more with a ``Contributions``)."""
    # identical ball releases are one k-fold release: its k-multisets of maximal vectors are
    # exactly the combinations of theirs (far fewer than the product of their lists)
    grouped: dict[tuple, int] = {}
    rest: list[Release] = []
    for r in releases:
        if isinstance(r, Gaussian) and isinstance(r.sensitivity, NeighbourSet):
            key = (r.sigma2, r.sensitivity)
            grouped[key] = grouped.get(key, 0) + r.k
        else:
            rest.append(r)
    if any(k > cf.MAX_K for k in grouped.values()):
        return None
    balls = [Gaussian(s, sens, k) for (s, sens), k in grouped.items()]
    options: list[list[Release]] = []
    for r in [*balls, *rest]:
        if isinstance(r, Gaussian) and isinstance(r.sensitivity, NeighbourSet):
            worst = r.sensitivity.neighbours(r.k)
            if worst is None:
                return None
            options.append([Gaussian(r.sigma2, list(mu), kk) for mu, kk in worst])
        else:
            options.append([r])
    cap = max(
        (r.sensitivity._cap for r in balls if isinstance(r.sensitivity, NeighbourSet)),
        default=MAX_NEIGHBOURS,
    )
    if math.prod(len(o) for o in options) > cap:
        return None
    return list(itertools.product(*options))


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
    if isinstance(r.sensitivity, NeighbourSet):
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
