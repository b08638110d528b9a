"""What a Gaussian sensitivity admits: the difference vectors that neighbouring inputs can produce.

By Theorem 15 the discrete Gaussian mechanism is (ε, δ)-DP exactly when δ bounds the
hockey-stick divergence of *every* pair of neighbours, and for the discrete Gaussian that
divergence depends on the difference vector μ, not only on ‖μ‖₂: at σ² = 10, ε = 4 the vector
(1, 1, 1, 1) has δ = 7.8e−11 where (2,) has 6.0e−11.  So a scalar sensitivity Δ, which the
documentation defines as an ℓ2 bound, must be accounted at the worst integer vector of the ball
‖μ‖₂ ≤ Δ, over any number of coordinates.

The ball is finite up to what does not matter, and this module lists it:

* zero entries add nothing and signs do not matter (the noise is symmetric), so a vector is a
  multiset of positive integers whose squares sum to at most Δ²;
* adding a coordinate never lowers δ (dropping it is post-processing), so only the *maximal*
  multisets count: with no bound on the coordinates, the partitions of Δ² into squares
  ((2,) and (1, 1, 1, 1) for Δ = 2); with at most c nonzero coordinates, the multisets that
  have c entries or whose squares sum to exactly Δ²;
* k queries, each with sensitivity Δ, may each move a different vector: every k-tuple is a
  sub-multiset of a k-multiset of maximal vectors, whose concatenation is one vector of the
  k·d coordinates.

:meth:`L2Ball.neighbours` returns those concatenated vectors, or None when there are more than
:data:`MAX_NEIGHBOURS` of them; the accounting then takes the zCDP route (Theorem 14 +
Corollary 13), whose ρ = k·Δ²/(2σ²) bounds every vector of the ball (``docs/accounting.md``,
*The ℓ2 ball*).
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

from dgauss import _params

__all__ = ["L2Ball", "MAX_NEIGHBOURS"]

#: Most vectors (over the k queries together) enumerated for one ℓ2 sensitivity; beyond, the
#: accounting of that release falls back to the zCDP route, valid for the whole ball.
MAX_NEIGHBOURS = 32


class L2Ball:
    """Every integer difference vector μ with ‖μ‖₂ ≤ ``radius`` (and at most ``coordinates``
    nonzero entries, when given): what a Gaussian ``sensitivity`` means.

    A plain int Δ passed as a Gaussian ``sensitivity`` is ``L2Ball(Δ)``: one person moves the
    answer by any integer vector of ℓ2 norm at most Δ, over any number of coordinates, and every
    δ, ε and calibration accounts the worst such vector.  ``L2Ball(Δ, coordinates=1)`` says "one
    coordinate moves by at most Δ" (a single count, or a histogram where one person touches one
    cell by up to Δ); ``coordinates=n`` says at most n cells move, e.g. the length of the
    array a mechanism noises.  A difference vector such as ``[2, -1]`` means exactly that
    difference (and its negation), not a ball.

    Parameters
    ----------
    radius : int
        Δ ≥ 1.
    coordinates : int, optional
        At most this many nonzero coordinates (≥ 1); None (the default) for any number.

    Examples
    --------
    >>> from dgauss.accounting import L2Ball
    >>> L2Ball(2).vectors()
    ((2,), (1, 1, 1, 1))
    >>> L2Ball(2, coordinates=1).vectors()      # one count moves: the single shift is the worst
    ((2,),)
    """

    __slots__ = ("radius", "coordinates")

    radius: int
    coordinates: int | None

    def __init__(self, radius, coordinates=None) -> None:
        r = _params.to_fraction(radius, "radius") if not isinstance(radius, bool) else None
        if r is None or r.denominator != 1 or r < 1:
            raise ValueError(
                f"radius (the sensitivity) must be a positive integer, got {_params.show(radius)}"
            )
        c = None
        if coordinates is not None:
            q = _params.to_fraction(coordinates, "coordinates")
            if q.denominator != 1 or q < 1:
                raise ValueError(
                    "coordinates must be a positive integer or None, "
                    f"got {_params.show(coordinates)}"
                )
            c = q.numerator
        object.__setattr__(self, "radius", r.numerator)
        object.__setattr__(self, "coordinates", c)

    def __setattr__(self, name, value):
        raise AttributeError("L2Ball is immutable")

    def __eq__(self, other) -> bool:
        return isinstance(other, L2Ball) and (self.radius, self._limit) == (
            other.radius,
            other._limit,
        )

    def __hash__(self) -> int:
        return hash((L2Ball, self.radius, self._limit))

    def __repr__(self) -> str:
        if self.coordinates is None:
            return f"L2Ball({self.radius})"
        return f"L2Ball({self.radius}, coordinates={self.coordinates})"

    def __reduce__(self):
        return (L2Ball, (self.radius, self.coordinates))

    @property
    def _limit(self) -> int:
        """The effective bound on nonzero coordinates (Δ² is never binding beyond)."""
        square = self.radius * self.radius
        return square if self.coordinates is None else min(self.coordinates, square)

    @property
    def norm2(self) -> int:
        """The largest ‖μ‖₂² of one query: Δ²."""
        return self.radius * self.radius

    def vectors(self) -> tuple[tuple[int, ...], ...] | None:
        """The maximal vectors of one query (entries positive, non-increasing), largest first;
        None when there are more than :data:`MAX_NEIGHBOURS`."""
        return _maximal(self.radius, self._limit)

    def blocks(self) -> tuple[tuple[int, ...], ...] | None:
        """The maximal vectors of one query, as :meth:`vectors`, up to :data:`MAX_BLOCKS` of
        them (None past): what the uniform bound over k queries concatenates."""
        return _maximal(self.radius, self._limit, MAX_BLOCKS)

    def neighbours(self, k: int) -> list[tuple[tuple[int, ...], int]] | None:
        """The worst cases of k queries, as pairs (μ, copies): k copies of μ when one vector is
        maximal, else one copy of each concatenation of k maximal vectors (one per query);
        None when there are more than :data:`MAX_NEIGHBOURS`."""
        one = self.vectors()
        if one is None:
            return None
        if len(one) == 1:
            return [(one[0], k)]
        if math.comb(len(one) + k - 1, k) > MAX_NEIGHBOURS:
            return None
        joined = {
            tuple(sorted((x for v in pick for x in v), reverse=True)): None
            for pick in itertools.combinations_with_replacement(one, k)
        }
        return [(mu, 1) for mu in joined]


#: Most maximal vectors of one query listed for the ball's uniform route (``blocks``).
MAX_BLOCKS = 64


@functools.lru_cache(maxsize=256)
def _maximal(
    radius: int, limit: int, cap: int = MAX_NEIGHBOURS
) -> tuple[tuple[int, ...], ...] | None:
    """The maximal multisets of positive ints with at most ``limit`` entries and squares summing
    to at most radius² (non-increasing tuples, largest first); None past ``cap`` of them.

    Maximal means no entry can be added (``limit`` entries, or no room left) and no entry can
    grow by one (growing the smallest, b, needs room 2b + 1); both only raise δ.
    """
    found: list[tuple[int, ...]] = []

    def extend(prefix: list[int], room: int, largest: int) -> bool:
        """Append every maximal completion of ``prefix``; False once there are too many."""
        full = len(prefix) == limit or room == 0
        if full:
            if room < 2 * prefix[-1] + 1:
                found.append(tuple(prefix))
            return len(found) <= cap
        # a non-increasing next entry a with a² ≤ room; room ≥ 1 always admits a = 1
        slots = limit - len(prefix)
        for a in range(min(largest, math.isqrt(room)), 0, -1):
            if room - slots * a * a >= 2 * a + 1:
                break  # entries ≤ a cannot fill the room: every completion could still grow
            prefix.append(a)
            ok = extend(prefix, room - a * a, a)
            prefix.pop()
            if not ok:
                return False
        return True

    if not extend([], radius * radius, radius):
        return None
    return tuple(found)


def norm2(sensitivity: tuple[int, ...] | L2Ball) -> Fraction:
    """‖μ‖₂² of one query (the largest over the ball)."""
    if isinstance(sensitivity, L2Ball):
        return Fraction(sensitivity.norm2)
    return Fraction(sum(x * x for x in sensitivity))
