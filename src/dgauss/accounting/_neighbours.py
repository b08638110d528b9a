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
import numbers
from fractions import Fraction

from dgauss import _params

__all__ = ["NeighbourSet", "L2Ball", "Contributions", "MAX_NEIGHBOURS", "MAX_LISTED"]

#: Most vectors (over the k queries together) enumerated for one sensitivity; beyond, the
#: accounting of that release falls back to the zCDP route, valid for every vector of the set.
MAX_NEIGHBOURS = 32


class NeighbourSet:
    """A set of integer difference vectors closed under dropping a coordinate and shrinking an
    entry towards 0: what one person can move a released vector by.

    Both only lower δ (dropping a coordinate is a post-processing; a discrete Gaussian's
    hockey-stick divergence grows with the shift, ``docs/accounting.md``), so the accounting
    reads a set through its *maximal* vectors (entries positive, non-increasing: the noise is
    symmetric and its coordinates independent, so signs and order do not matter).  The two
    kinds: :class:`L2Ball` (an ℓ2 bound) and :class:`Contributions` (bounded rows per person).
    """

    __slots__ = ()

    #: Most worst cases listed (:meth:`vectors`, :meth:`neighbours`); past it, the zCDP route.
    _cap = MAX_NEIGHBOURS

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def vectors(self) -> tuple[tuple[int, ...], ...] | None:
        """The maximal vectors of one query (entries positive, non-increasing), largest first;
        None when there are more than :data:`MAX_NEIGHBOURS`."""
        raise NotImplementedError

    def blocks(self) -> tuple[tuple[int, ...], ...] | None:
        """The maximal vectors for a uniform bound over k queries, or None (an ℓ2 ball's)."""
        return None

    @property
    def norm2(self) -> int:
        """The largest ‖μ‖₂² of one query."""
        raise NotImplementedError

    @property
    def norm1(self) -> int | None:
        """The largest ‖μ‖₁ of one query (a Laplace sensitivity), or None when the set has
        none that the accounting may use."""
        return None

    @property
    def support(self) -> int:
        """The most nonzero coordinates of one query's vector."""
        raise NotImplementedError

    def member(self) -> tuple[int, ...]:
        """One vector of the set of the largest norm (for lower bounds on δ)."""
        raise NotImplementedError

    def relaxed(self) -> NeighbourSet:
        """A superset with a bound of its own where this set has none (itself by default)."""
        return self

    def limited(self, cells: int) -> NeighbourSet:
        """The vectors of the set with at most ``cells`` nonzero coordinates (an array of
        ``cells`` values cannot move by more)."""
        raise NotImplementedError

    def neighbours(self, k: int) -> list[tuple[tuple[int, ...], int]] | None:
        """The worst cases of k queries, as pairs (μ, copies): k copies of μ when one vector is
        maximal, else one copy of each concatenation of k maximal vectors (one per query);
        None when there are more than the set lists (:data:`MAX_NEIGHBOURS` for a ball)."""
        one = self.vectors()
        if one is None:
            return None
        if len(one) == 1:
            return [(one[0], k)]
        if math.comb(len(one) + k - 1, k) > self._cap:
            return None
        joined = {
            tuple(sorted((x for v in pick for x in v), reverse=True)): None
            for pick in itertools.combinations_with_replacement(one, k)
        }
        return [(mu, 1) for mu in joined]


class L2Ball(NeighbourSet):
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

    @property
    def support(self) -> int:
        """The most nonzero coordinates: min(Δ², c) (an integer vector of ℓ2 norm ≤ Δ has
        at most Δ² nonzero entries)."""
        return self._limit

    def member(self) -> tuple[int, ...]:
        """(Δ,): the single shift."""
        return (self.radius,)

    def relaxed(self) -> L2Ball:
        """The ball of the same radius over any number of coordinates (it holds this one)."""
        return L2Ball(self.radius)

    def limited(self, cells: int) -> L2Ball:
        """This ball with at most ``cells`` nonzero coordinates."""
        return L2Ball(
            self.radius, cells if self.coordinates is None else min(cells, self.coordinates)
        )


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


#: Most worst cases of a Contributions listed (its vectors, or their concatenations over k
#: queries): more than the ball's, since the accounting skips a case whose zCDP bound is below
#: the worst found (most are: a partition far from (m,) has a much smaller norm).
MAX_LISTED = 96
#: Most rows per person (max_rows) whose partitions are listed; beyond, the zCDP route.
MAX_LISTED_ROWS = 256
#: Most queries of one coordinate the accounting takes (``dgauss.accounting.MAX_K``).
MAX_QUERIES = 10**7
#: Most entries of a single maximal vector (c' cells of r' rows each) listed.
MAX_LISTED_PARTS = 1 << 14


class Contributions(NeighbourSet):
    """What one person with bounded contributions can move a table by: the exact set of
    difference vectors of a table whose rows were bounded per person.

    Every vector has entries ``per_row``·n_j, the n_j non-negative integers (one person's rows
    in cell j, each row adding at most ``per_row`` in absolute value) with

    * Σ n_j ≤ ``max_rows`` (at most m rows in all),
    * at most ``max_groups`` of them nonzero (at most c cells), each n_j ≤ ``max_rows_per_group``
      (at most r rows in a cell),
    * at most ``cells`` coordinates (the table's length),

    each bound None when absent (at least one of ``max_rows`` and ``max_rows_per_group`` with a
    limit on the cells must be given: else one person could move the table without bound).
    Its maximal vectors are the partitions of m' = min(m, c'·r') into at most c' = min(c, cells)
    parts each at most r' = min(r, m), scaled by ``per_row``; with ``max_rows`` alone, the
    partitions of m.  Accounted at the worst of them (δ of the discrete Gaussian is not always
    largest at the single shift (m,): ``docs/accounting.md``, *Bounded contributions*), while
    they are at most :data:`MAX_LISTED`; past that by the zCDP route at the largest
    ‖μ‖₂² (the greedy vector (r', …, r', m' mod r')), which bounds every vector of the set.
    The discrete Laplace takes its ℓ1 bound, ``per_row``·m'.

    :func:`dgauss.tabulate` returns it as a table's ``sensitivity``; every function of
    :mod:`dgauss.accounting` and every mechanism accepts it as ``sensitivity=``.

    Parameters
    ----------
    max_rows : int, optional
        m ≥ 1: at most m rows per person.
    max_groups : int, optional
        c ≥ 1: at most c cells per person.
    max_rows_per_group : int, optional
        r ≥ 1: at most r rows per person in one cell.
    per_row : int
        What one row adds to its cell at most, in absolute value (1 for counts; for sums
        max(|low|, |high|) in steps of the granularity).
    cells : int, optional
        The table's length (at most that many coordinates move).

    Examples
    --------
    >>> from dgauss.accounting import Contributions
    >>> Contributions(max_rows=3).vectors()
    ((3,), (2, 1), (1, 1, 1))
    >>> Contributions(max_groups=2, max_rows_per_group=2).vectors()
    ((2, 2),)
    >>> Contributions(max_rows=3, per_row=10).norm2, Contributions(max_rows=3, per_row=10).norm1
    (900, 30)
    """

    __slots__ = ("max_rows", "max_groups", "max_rows_per_group", "per_row", "cells")
    _cap = MAX_LISTED

    max_rows: int | None
    max_groups: int | None
    max_rows_per_group: int | None
    per_row: int
    cells: int | None

    def __init__(
        self,
        max_rows=None,
        max_groups=None,
        max_rows_per_group=None,
        *,
        per_row=1,
        cells=None,
    ) -> None:
        given = {
            "max_rows": max_rows,
            "max_groups": max_groups,
            "max_rows_per_group": max_rows_per_group,
            "per_row": per_row,
            "cells": cells,
        }
        for name, value in given.items():
            if value is None and name != "per_row":
                object.__setattr__(self, name, None)
                continue
            object.__setattr__(self, name, _positive_int(value, name))
        if self.max_rows is None and (self.max_rows_per_group is None or self._groups is None):
            raise ValueError(
                "Contributions needs max_rows, or max_rows_per_group with max_groups (or cells): "
                "without them one person's contribution has no bound"
            )

    @property
    def _groups(self) -> int | None:
        """c' = min(c, cells): the most cells one person touches (None: no bound)."""
        bounds = [b for b in (self.max_groups, self.cells) if b is not None]
        return min(bounds) if bounds else None

    @property
    def _shape(self) -> tuple[int, int, int]:
        """(m', c', r'): the partitions of m' into at most c' parts each at most r' are the
        maximal vectors (before scaling by per_row)."""
        c, r, m = self._groups, self.max_rows_per_group, self.max_rows
        if m is None:  # then r and c are given
            assert r is not None and c is not None
            return c * r, c, r
        r = m if r is None else min(r, m)
        c = m if c is None else min(c, m)
        return min(m, c * r), c, r

    def __eq__(self, other) -> bool:
        return isinstance(other, Contributions) and (self._shape, self.per_row) == (
            other._shape,
            other.per_row,
        )

    def __hash__(self) -> int:
        return hash((Contributions, self._shape, self.per_row))

    def __repr__(self) -> str:
        parts = [
            f"{name}={getattr(self, name)}"
            for name in self.__slots__
            if getattr(self, name) is not None and not (name == "per_row" and self.per_row == 1)
        ]
        return "Contributions(" + ", ".join(parts) + ")"

    def __reduce__(self):
        return (
            _contributions,
            (self.max_rows, self.max_groups, self.max_rows_per_group, self.per_row, self.cells),
        )

    def as_dict(self) -> dict[str, int]:
        """The bounds given, by name (what :meth:`from_dict` reads back)."""
        return {name: getattr(self, name) for name in self.__slots__ if getattr(self, name)}

    @classmethod
    def from_dict(cls, fields: dict) -> Contributions:
        """The set :meth:`as_dict` wrote."""
        unknown = set(fields) - set(cls.__slots__)
        if unknown:
            raise ValueError(f"Contributions has no field {sorted(unknown)[0]!r}")
        return cls(**fields)

    @property
    def norm2(self) -> int:
        """The largest ‖μ‖₂²: the greedy vector's, per_row²·(⌊m'/r'⌋·r'² + (m' mod r')²)."""
        m, _, r = self._shape
        return self.per_row**2 * ((m // r) * r * r + (m % r) ** 2)

    @property
    def norm1(self) -> int:
        """The largest ‖μ‖₁: per_row·m'."""
        return self.per_row * self._shape[0]

    @property
    def support(self) -> int:
        """The most nonzero coordinates: min(c', m')."""
        m, c, _ = self._shape
        return min(c, m)

    def member(self) -> tuple[int, ...]:
        """The greedy vector (r', …, r', m' mod r')·per_row, of the largest norm; when it has
        more than :data:`MAX_LISTED_PARTS` entries, its first MAX_LISTED_PARTS (still a
        member: fewer rows; what a lower bound reads, never a list of m' entries)."""
        m, _, r = self._shape
        if m // r >= MAX_LISTED_PARTS:
            return (self.per_row * r,) * MAX_LISTED_PARTS
        rest = (m % r,) if m % r else ()
        return tuple(self.per_row * x for x in (r,) * (m // r) + rest)

    def neighbours(self, k: int) -> list[tuple[tuple[int, ...], int]] | None:
        """As :meth:`NeighbourSet.neighbours`; when the one maximal vector is c' entries
        per_row·r' (all equal: no ``max_rows``, or m' = c'·r'), it is one coordinate
        (per_row·r',) answered c'·k times, which is the same product mechanism, however many
        entries (up to :data:`MAX_QUERIES` in all)."""
        m, c, r = self._shape
        if m == c * r and c > 1:
            return [((self.per_row * r,), c * k)] if c * k <= MAX_QUERIES else None
        return super().neighbours(k)

    def limited(self, cells: int) -> Contributions:
        """This set with at most ``cells`` coordinates."""
        n = _positive_int(cells, "cells")
        return Contributions(
            self.max_rows,
            self.max_groups,
            self.max_rows_per_group,
            per_row=self.per_row,
            cells=n if self.cells is None else min(n, self.cells),
        )

    def vectors(self) -> tuple[tuple[int, ...], ...] | None:
        """The maximal vectors (entries positive, non-increasing), largest first; None when
        there are more than :data:`MAX_LISTED`."""
        m, c, r = self._shape
        if m > MAX_LISTED_ROWS and m != c * r:
            return None
        found = _partitions(m, c, r, MAX_LISTED)
        if found is None:
            return None
        return tuple(tuple(self.per_row * x for x in v) for v in found)


def _contributions(max_rows, max_groups, max_rows_per_group, per_row, cells) -> Contributions:
    """Unpickle a :class:`Contributions`."""
    return Contributions(max_rows, max_groups, max_rows_per_group, per_row=per_row, cells=cells)


def _positive_int(value, name: str) -> int:
    """A positive int (not a bool); a TypeError or ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value}")
    return int(value)


@functools.lru_cache(maxsize=256)
def _partitions(
    total: int, parts: int, largest: int, cap: int
) -> tuple[tuple[int, ...], ...] | None:
    """The partitions of ``total`` into at most ``parts`` parts each at most ``largest``
    (non-increasing tuples, in decreasing lexicographic order); None past ``cap`` of them.
    Needs total ≤ parts·largest.  Iterative (a depth-first walk on an explicit stack)."""
    if total == parts * largest:
        return ((largest,) * parts,) if parts <= MAX_LISTED_PARTS else None
    found: list[tuple[int, ...]] = []
    # (prefix, what is left to place, the largest part allowed next)
    stack: list[tuple[tuple[int, ...], int, int]] = [((), total, min(largest, total))]
    while stack:
        prefix, room, top = stack.pop()
        if room == 0:
            found.append(prefix)
            if len(found) > cap:
                return None
            continue
        slots = parts - len(prefix)
        # a next part a ≤ top leaves room − a for slots − 1 parts each ≤ a
        low = -(-room // slots)  # the least a with room ≤ slots·a
        for a in range(low, min(top, room) + 1):  # pushed smallest first: largest popped first
            stack.append((prefix + (a,), room - a, a))
    return tuple(found)


def norm2(sensitivity: tuple[int, ...] | NeighbourSet) -> Fraction:
    """‖μ‖₂² of one query (the largest over the set)."""
    if isinstance(sensitivity, NeighbourSet):
        return Fraction(sensitivity.norm2)
    return Fraction(sum(x * x for x in sensitivity))
