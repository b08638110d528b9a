"""One consistent release of a hierarchy: :func:`reconcile`.

An office releases noisy tables that are sums of one detail table along a tree of groupings
(cells ⊂ municipalities ⊂ provinces ⊂ regions ⊂ nation).  Each noisy table is unbiased but
they do not add up.  :func:`reconcile` returns the minimum-variance linear unbiased estimate
of every node of the tree given all the noisy tables (weighted least squares, each table
weighted by the exact variance of its noise), which adds up at every level, with the exact
variance of every estimate, and, on request, non-negative integer tables that still add up.

The estimate in O(n): two passes over the tree (Hay et al., VLDB 2010, generalised to a
variance per node; a Kalman smoother on the tree).  Write y_v for node v's noisy value, s_v
for its noise variance (∞ when its table was not released).

* **Up** (leaves first): the estimate of x_v from the noisy values in v's subtree alone, z_v,
  and its variance P_v.  A leaf: z = y, P = s.  A node with children c: S = Σ z_c,
  Q = Σ P_c (the children's estimates are independent), then z_v = S + k (y_v − S),
  P_v = k s_v with k = Q / (Q + s_v) (z_v = S, P_v = Q when v was not released).
* **Down** (roots first): a root's estimate is x = z, F = P.  Given its parent's final x_v,
  F_v, a child's is x_c = z_c + g (x_v − S), F_c = (1 − g) P_c + g² F_v with g = P_c / Q:
  the children's independent subtree estimates conditioned on their sum, averaged over the
  parent's estimate.  Children's corrections add up to x_v − S, so the estimates add up.

It is the generalised least-squares estimate because it is the posterior mean under a flat
prior with Gaussian errors of the same variances (the two agree for any error law: both are
the same linear function of y); ``tests/test_reconcile.py`` checks it against a dense
weighted least-squares solve.

Post-processing: it reads only the noisy tables, their noise's variances (public: they are
the mechanisms' parameters) and the public structure, so its output has exactly the privacy
of the noisy tables (post-processing, Dwork & Roth 2014, Prop. 2.1; the paper's Lemma 3 for
its notions), whatever it computes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any, cast

import numpy as np

from dgauss import _bounding, _margin_frames, _marginals
from dgauss._splits import _chunks, _split_in_chunks

__all__ = ["reconcile", "Reconciliation"]


# ---- inputs ---------------------------------------------------------------------------------


# A variance's range: the passes square variances and sum them over every cell, which stays
# far inside float64's range for these (and every mechanism's variance is inside it).
_VARIANCE_MIN, _VARIANCE_MAX = 2.0**-200, 2.0**200


def _noise_variance(noise: Any, level: int) -> float:
    """The variance of one value's noise at ``level``: ∞ for None (not released)."""
    from dgauss import accounting
    from dgauss.mechanisms import GaussianMechanism, LaplaceMechanism

    where = f"noise[{level}]"
    if noise is None:
        return math.inf
    if isinstance(noise, (GaussianMechanism, LaplaceMechanism)):
        if isinstance(noise, GaussianMechanism):
            var = accounting.gaussian_variance(noise.sigma2)
        else:
            var = accounting.laplace_variance(noise.scale)
        g = noise.granularity
        if g is not None and g != 1:  # the values' units: the noise is g times an integer
            var = math.nextafter(var * float(g) ** 2, math.inf)
    elif isinstance(noise, bool) or not isinstance(noise, (numbers.Real, Fraction)):
        raise TypeError(
            f"{where} must be a GaussianMechanism, a LaplaceMechanism, a positive number "
            f"(the noise's variance) or None (a level not released), not {type(noise).__name__}"
        )
    else:
        try:
            var = float(noise)
        except OverflowError:
            var = math.inf  # beyond float64: refused below
    if not (_VARIANCE_MIN <= var <= _VARIANCE_MAX):
        raise ValueError(
            f"{where}: the noise's variance must be in [2^-200, 2^200], got {noise!r} "
            f"(variance {var!r}); pass None for a level that was not released"
        )
    return var


def _is_frame(table: Any) -> bool:
    return type(table).__module__.startswith("pandas") and hasattr(table, "columns")


@dataclass
class _Level:
    values: np.ndarray  # flat float64 (ignored when not released)
    variance: float  # one value's noise variance, inf when not released
    parent: np.ndarray  # flat int64 positions in the next level (empty at the top)
    shape: tuple  # the input's shape (NumPy) or the frame (pandas)
    frame: Any = None  # the input DataFrame, or None


def _array(table: Any, where: str) -> np.ndarray:
    """np.asarray(table), refusing what it would read wrongly: a masked array (its mask would
    be dropped) or ragged nested lists."""
    if isinstance(table, np.ma.MaskedArray):
        raise TypeError(
            f"{where} is a masked array: its mask would be ignored; fill or drop the masked "
            "values first"
        )
    try:
        return np.asarray(table)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"{where} is not a rectangular array: {exc}") from None


def _flat_values(table: Any, level: int, released: bool, value: str | None) -> np.ndarray:
    """A level's values as a flat array, as given (zeros when the level was not released):
    integers or floats, checked to be finite and of magnitude below 2^53 (where float64
    holds every integer, and the integer tables stay far inside int64)."""
    frame = _is_frame(table)
    where = f"levels[{level}][{value!r}]" if frame else f"levels[{level}]"
    raw = table[value].to_numpy() if frame else _array(table, where)
    if not released:
        return np.zeros(raw.size)
    if raw.dtype == np.bool_ or not (
        np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
    ):
        raise TypeError(f"{where} must hold real numbers (integers or floats), got {raw.dtype}")
    arr = raw.reshape(-1)
    for part in _chunks(arr.size):
        chunk = arr[part]
        if not np.issubdtype(raw.dtype, np.integer) and not np.all(np.isfinite(chunk)):
            bad = part.start + int(np.flatnonzero(~np.isfinite(chunk))[0])
            raise ValueError(
                f"{where} holds a value that is not finite (NaN or ±inf) at position {bad}: "
                "every value of a released level must be a finite number"
            )
        big = np.abs(chunk.astype(np.float64)) >= 2.0**53
        if np.any(big):
            bad = part.start + int(np.flatnonzero(big)[0])
            raise ValueError(
                f"{where} holds a value of magnitude ≥ 2^53 at position {bad}, which float64 "
                "estimates cannot carry exactly"
            )
    return arr


def _frame_parents(frames: Sequence[Any], value: str) -> list[np.ndarray]:
    """Level l's rows' parent row in level l + 1, matched on level l + 1's key columns."""
    parents = []
    for level in range(len(frames) - 1):
        fine, coarse = frames[level], frames[level + 1]
        keys = [c for c in coarse.columns if c != value]
        missing = [k for k in keys if k not in fine.columns]
        if missing:
            raise ValueError(
                f"levels[{level}] lacks the column(s) {missing} that identify its rows' "
                f"parents in levels[{level + 1}] (a finer table must carry the coarser keys)"
                + _margin_frames.index_hint(fine, f"levels[{level}]")
            )
        if not keys:
            if len(coarse) != 1:
                raise ValueError(
                    f"levels[{level + 1}] has no key columns, so it must have one row (a "
                    f"grand total), got {len(coarse)}"
                    + _margin_frames.index_hint(coarse, f"levels[{level + 1}]")
                )
            parents.append(np.zeros(len(fine), dtype=np.int64))
            continue
        index = coarse.set_index(keys).index
        if index.has_duplicates:
            dup = index[index.duplicated()][0]
            raise ValueError(
                f"levels[{level + 1}] has two rows with the keys {keys} = {dup}"
                + _margin_frames.index_hint(coarse, f"levels[{level + 1}]")
            )
        parent = index.get_indexer(fine.set_index(keys).index)
        if np.any(parent < 0):
            row = int(np.flatnonzero(parent < 0)[0])
            found = tuple(fine[keys].iloc[row])
            raise ValueError(
                f"levels[{level}] row {row} has no parent: no row of levels[{level + 1}] has "
                f"{keys} = {found}"
            )
        parents.append(parent.astype(np.int64))
    return parents


#: DataFrames reconcile does not read, and how to make a pandas one of each.
_COLLECT = {
    "spark": "df.toPandas()",
    "dask": "df.compute()",
    "polars": "df.to_pandas(), after .collect() for a LazyFrame",
}


def _levels(levels, parents, noise, value) -> list[_Level]:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence):
        raise TypeError("levels must be a list of tables, the detail table first")
    if len(levels) < 1:
        raise ValueError("levels must hold at least one table")
    if isinstance(noise, (str, bytes)) or not isinstance(noise, Sequence):
        raise TypeError("noise must be a list with one entry per level")
    if len(noise) != len(levels):
        raise ValueError(
            f"noise must have one entry per level: {len(levels)} levels, {len(noise)} entries"
        )
    variances = [_noise_variance(n, i) for i, n in enumerate(noise)]
    if math.isinf(variances[0]):
        raise ValueError(
            "noise[0] is None, but the detail table (levels[0]) must be released: without it "
            "the detail cells cannot be estimated"
        )
    for i, table in enumerate(levels):
        family = _bounding._family(table)
        if family in _COLLECT:
            raise TypeError(
                f"levels[{i}] is a {family.capitalize()} DataFrame: collect it first "
                f"({_COLLECT[family]}); a noisy table is small, and reconcile reads it whole"
            )
    frames = [_is_frame(t) for t in levels]
    if any(frames):
        if not all(frames):
            raise TypeError("levels must be all pandas DataFrames or all arrays, not a mix")
        if parents is not None:
            raise ValueError("parents is for arrays; DataFrames are matched on their key columns")
        if value is None:
            raise ValueError("value must name the DataFrames' column of noisy counts")
        for i, t in enumerate(levels):
            if value not in t.columns:
                raise ValueError(f"levels[{i}] has no column {value!r} (the value column)")
        flat_parents = _frame_parents(levels, value)
    else:
        if value is not None:
            raise ValueError("value names a DataFrame column; these levels are arrays")
        if parents is None:
            if len(levels) > 1:
                raise ValueError(
                    "parents must give, for every level but the last, each value's parent's "
                    "position in the next level"
                )
            parents = []
        if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence):
            raise TypeError("parents must be a list of integer arrays")
        if len(parents) != len(levels) - 1:
            raise ValueError(
                f"parents must have one array per level but the last: {len(levels)} levels, "
                f"{len(parents)} arrays"
            )
        flat_parents = []
        for i, p in enumerate(parents):
            arr = _array(p, f"parents[{i}]")
            if not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"parents[{i}] must be an integer array, got dtype {arr.dtype}")
            flat_parents.append(arr.reshape(-1))
    out = []
    for i, table in enumerate(levels):
        vals = _flat_values(table, i, not math.isinf(variances[i]), value)
        if len(vals) == 0:
            raise ValueError(f"levels[{i}] is empty")
        shape = () if frames[i] else np.shape(table)
        empty = np.zeros(0, dtype=np.int64)
        out.append(_Level(vals, variances[i], empty, shape, table if frames[i] else None))
    for i, p in enumerate(flat_parents):
        n, m = len(out[i].values), len(out[i + 1].values)
        if len(p) != n:
            raise ValueError(
                f"parents[{i}] has {len(p)} entries, but levels[{i}] has {n} values "
                "(one parent position per value)"
            )
        if len(p) and (p.min() < 0 or p.max() >= m):
            bad = int(np.flatnonzero((p < 0) | (p >= m))[0])
            raise ValueError(
                f"parents[{i}][{bad}] = {int(p[bad])} is not a position in levels[{i + 1}] "
                f"(0 to {m - 1}): a value without a parent"
            )
        # a copy (the result keeps the structure it was computed on), int32 where it fits
        p = p.astype(np.int32 if m < 2**31 else np.int64, copy=True)
        counts = np.bincount(p, minlength=m)
        if np.any(counts == 0):
            bad = int(np.flatnonzero(counts == 0)[0])
            raise ValueError(
                f"levels[{i + 1}] position {bad} has no children in levels[{i}]: every group "
                "must hold at least one value of the level below"
            )
        out[i].parent = p
    return out


# ---- the two passes ---------------------------------------------------------------------------


def _grouped_sum(parent: np.ndarray, weights: Any, m: int) -> np.ndarray:
    """Σ of ``weights`` (an array, or one number for every value) over each parent's group."""
    if np.ndim(weights) == 0:
        return float(weights) * np.bincount(parent, minlength=m)
    total = np.zeros(m)
    for part in _chunks(len(parent)):
        total += np.bincount(parent[part], weights=weights[part], minlength=m)
    return total


def _blue(levels: list[_Level]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """x and F (estimate and variance) of every level, by the up and down passes.  The
    detail level's P is one number (its noise variance), and its down step runs in chunks,
    so that the passes hold little beyond their outputs."""
    top = len(levels) - 1
    z: list[Any] = [lv.values for lv in levels]  # the detail's as given; the others below
    P: list[Any] = [levels[0].variance] + [None] * top
    S: list[Any] = [None] * len(levels)
    Q: list[Any] = [None] * len(levels)
    for lv in range(1, top + 1):
        child = levels[lv - 1]
        m = len(levels[lv].values)
        S[lv] = _grouped_sum(child.parent, z[lv - 1], m)
        Q[lv] = _grouped_sum(child.parent, P[lv - 1], m)
        s = levels[lv].variance
        if math.isinf(s):
            z[lv], P[lv] = S[lv], Q[lv]
        else:
            k = Q[lv] / (Q[lv] + s)
            z[lv] = S[lv] + k * (levels[lv].values - S[lv])
            P[lv] = k * s
    x: list[Any] = [None] * len(levels)
    F: list[Any] = [None] * len(levels)
    size = len(levels[top].values)
    x[top] = np.array(z[top], dtype=np.float64)
    F[top] = np.full(size, P[top]) if np.ndim(P[top]) == 0 else np.array(P[top], dtype=float)
    for lv in range(top - 1, -1, -1):
        par = levels[lv].parent
        q = Q[lv + 1]
        shift = (x[lv + 1] - S[lv + 1]) / q  # the children's correction is P_c times this
        n = len(par)
        x[lv], F[lv] = np.empty(n), np.empty(n)
        for part in _chunks(n):
            p = P[lv] if np.ndim(P[lv]) == 0 else P[lv][part]
            up = par[part]
            xs = x[lv][part]
            np.multiply(shift[up], p, out=xs)
            xs += z[lv][part]
            g = p / q[up]  # in (0, 1]; F_c as a sum of terms ≥ 0 (g = 1 gives F_v exactly)
            F[lv][part] = (1 - g) * p + g * g * F[lv + 1][up]
    return x, F


# ---- non-negative integers ------------------------------------------------------------------


def _integers(
    levels: list[_Level], x: list[np.ndarray], F: list[np.ndarray], seed: int
) -> list[np.ndarray]:
    for lv, est in enumerate(x):  # a sum of released values can pass 2^53 where they do not
        if any(np.any(np.abs(est[part]) >= 2.0**53) for part in _chunks(len(est))):
            raise OverflowError(
                f"levels[{lv}]'s estimates reach a magnitude of 2^53 or more (sums of the "
                "values below), which integer tables cannot carry exactly"
            )
    top = len(levels) - 1
    out: list[Any] = [None] * len(levels)
    out[top] = np.maximum(np.rint(x[top]), 0).astype(np.int64)
    for lv in range(top - 1, -1, -1):
        level_seed = (seed << 8) | lv  # another pseudo-random order at every level
        out[lv] = _split_in_chunks(out[lv + 1], x[lv], F[lv], levels[lv].parent, level_seed)
    return out


# ---- the result -----------------------------------------------------------------------------


def _checked(value: object, kind: type, name: str, what: str) -> Any:
    """``value`` when it is a ``kind`` (numbers.Real, numbers.Integral) and not a bool; else
    TypeError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {value!r}")
    return float(cast(Any, value)) if kind is numbers.Real else value


class Reconciliation:
    """What :func:`reconcile` returns: the estimates, their variances and intervals, and the
    non-negative integer tables (each a list with one entry per level, the detail first, in
    the form of the input: arrays of its shapes, or copies of its DataFrames)."""

    def __init__(
        self,
        levels: list[_Level],
        value: str | None,
        solved: tuple[list, list, Callable[[int], list]] | None = None,
    ):
        self._levels = levels
        self._value = value
        if solved is None:  # a chain of groupings: the passes here
            self._x, self._F = _blue(levels)
            self._integers = lambda seed: _integers(levels, self._x, self._F, seed)
        else:  # marginal tables of one detail (dgauss._margin_frames)
            self._x, self._F, self._integers = solved

    def __repr__(self) -> str:
        sizes = ", ".join(f"{len(lv.values):,}" for lv in self._levels)
        return f"<Reconciliation of {len(self._levels)} levels ({sizes} values)>"

    def _shaped(self, flat: list[np.ndarray], as_values: bool, copy: bool = True) -> list:
        """``flat`` in the input's form: arrays of its shapes (copies of the result's own
        arrays unless ``copy`` is False), or the DataFrames with their value column
        replaced (``as_values``) or Series on their index."""
        out = []
        for lv, arr in zip(self._levels, flat, strict=True):
            if lv.frame is None:
                out.append(arr.reshape(lv.shape).copy() if copy else arr.reshape(lv.shape))
            elif as_values:
                frame = lv.frame.copy()
                frame[self._value] = arr
                out.append(frame)
            else:  # a Series of the frame's own class, on its index
                column = lv.frame[self._value]
                out.append(type(column)(arr.copy(), index=lv.frame.index, name=self._value))
        return out

    @property
    def estimates(self) -> list:
        """The minimum-variance linear unbiased estimate of every value of every level
        (float64): each parent's estimate is the sum of its children's, up to float
        rounding."""
        return self._shaped(self._x, True)

    @property
    def variances(self) -> list:
        """The exact variance of each estimate (float64, computed in floating point from
        the noise's exact variances): the estimate is y's linear function with this error
        variance, whatever the noise's law."""
        return self._shaped(self._F, False)

    def interval(self, alpha: float = 0.05) -> list[tuple]:
        """(low, high) for every level: estimate ∓ z·√variance, z the normal quantile of
        1 − α/2.  The estimate's error is a sum of independent discrete Gaussian (or Laplace)
        noises, so the normal law is an approximation: close for Gaussian noise and for
        sums of many noises, less so where one Laplace noise dominates (benchmarks/census.py
        at α = 0.05: Gaussian detail cells and municipalities 95.0% and 94.9%, Laplace
        detail cells 93.8%)."""
        a = _checked(alpha, numbers.Real, "alpha", "a number in (0, 1)")
        if not 0 < a < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        zq = NormalDist().inv_cdf(1 - a / 2)
        lows = [x - zq * np.sqrt(f) for x, f in zip(self._x, self._F, strict=True)]
        highs = [x + zq * np.sqrt(f) for x, f in zip(self._x, self._F, strict=True)]
        return list(zip(self._shaped(lows, False), self._shaped(highs, False), strict=True))

    def integers(self, seed: int = 0) -> list:
        """Non-negative integer tables (int64) that add up exactly at every level.

        Top-down: each root's estimate rounded to the nearest integer ≥ 0; then every
        parent's integer total split among its children: their estimates projected onto the
        non-negative values adding up to it (least squares weighted by 1/variance), then
        rounded by largest remainders.  Each integer is the floor of its projected value or
        one more, and the projected value is the estimate plus its share of what its
        parent's rounding moved (so, away from zero, within about 1 of the estimate, a
        little more down a deep tree).  Remainders equal to 9 decimals (with integer counts
        and one variance a level, all of a group's) are ordered pseudo-randomly by the
        cells' positions and ``seed`` (an int ≥ 0), so that no position (say, the first age
        group) gets the +1s: the same input and seed give the same tables.  O(n log n).
        Not unbiased: a cell whose estimate is near zero is pushed up (docs/reconcile.md
        measures how much, by cell and area size).  OverflowError when an estimate reaches
        2^53.

        Marginal tables of one detail: a non-negative integer detail table is built
        top-down (each area's children get their totals first, split from their parent's
        as above unless invariants fix them, then their cells: the children × cells table
        fitted to both margins and rounded, each entry the fit's floor or one more, or
        filled greedily should the fit fall short), and every table is its margin: all add
        up, invariants kept exactly.
        Invariants whose cross-classified columns cross (age in one, sex in another) are
        refused (ValueError naming them)."""
        seed = int(_checked(seed, numbers.Integral, "seed", "an int >= 0"))
        if seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        # computed anew at each call and not kept: the caller owns the tables
        return self._shaped(self._integers(seed), True, copy=False)


def reconcile(
    levels: Sequence[Any],
    parents: Sequence[Any] | None = None,
    *,
    noise: Sequence[Any],
    value: str | None = None,
) -> Reconciliation:
    """Noisy tables of a hierarchy made consistent: the minimum-variance linear unbiased
    estimate of every value given all of them, with its exact variance.

    Parameters
    ----------
    levels
        The noisy tables, the detail table first and each next table a grouping of the one
        before (every value of ``levels[l]`` is the noisy sum of a group of values of
        ``levels[l - 1]``); the last may hold one grand total or several (a forest).  Either
        arrays (any shape, read in C order) or pandas DataFrames.

        DataFrames may also be **marginal tables of one detail**: every table's key columns
        are some of the detail's (``levels[0]``), its values the noisy group-by sums of the
        detail over them.  The detail's key columns are read as a geography, the columns
        that nest (town within province within region: each value of a finer one within one
        value of a coarser one), and a cross-classification, the columns that cross every
        other (age, sex: the detail holds every combination in every area, once); each
        table holds every combination of its keys once.  Then tables need not be a chain
        (province × age × sex beside town totals), the detail need not be released, and a
        table may be an **invariant**: published without noise (``noise`` 0), reproduced
        exactly by the estimates and the integers.
    parents
        Arrays only: ``parents[l]`` (an integer array with one entry per value of
        ``levels[l]``) gives each value's parent's flat position in ``levels[l + 1]``; one
        array per level but the last.  Every position of ``levels[l + 1]`` must be some
        value's parent.
    noise
        One entry per level: the :class:`~dgauss.GaussianMechanism` or
        :class:`~dgauss.LaplaceMechanism` that released it (its exact noise variance is
        used, in the values' units when it has a granularity), a number (the variance of
        each value's noise); every variance in [2^-200, 2^200].  Or None for a level that
        was not released (its values are ignored; the detail table must be released, but
        for marginal tables).  For marginal tables, 0: an invariant, a table published
        exactly (nothing protects it: it is not a private release).  Integers meet every
        invariant whose cross-classified columns nest (a total, then sex, then age × sex),
        and any two that cross (age in one, sex in another); with more crossing ones, a
        table may not exist, and ``integers()`` raises a ValueError naming those it could
        not meet together.
    value
        DataFrames only: the column of noisy counts.  Every other column of ``levels[l + 1]``
        is a key, and must be a column of ``levels[l]`` too: a row's parent is the row of
        the next table with the same keys.

    Returns
    -------
    Reconciliation
        ``.estimates``, ``.variances``, ``.interval(alpha)`` and ``.integers()``, each a list
        with one entry per level in the input's form.

    Raises
    ------
    TypeError, ValueError
        Naming the argument, for tables of the wrong type, non-finite values, mismatched
        lengths, a value without a parent, an empty group, or a variance that is not > 0.

    Notes
    -----
    The estimate is the generalised least-squares solution (each noisy value weighted by
    1/variance) under the constraints that every parent is the sum of its children,
    computed in O(n) by two passes over the tree.  It reads only the noisy tables, the
    public structure and the mechanisms' parameters: post-processing, so the release keeps
    exactly the privacy of the noisy tables.
    """
    margins = _margins(levels, parents, noise, value)
    if margins is not None:
        return margins
    return Reconciliation(_levels(levels, parents, noise, value), value)


def _margins(levels, parents, noise, value) -> Reconciliation | None:
    """The reconciliation of marginal tables of one detail (:mod:`dgauss._margin_frames`),
    for pandas tables that are not a chain of groupings or that have an invariant or an
    unreleased detail; None for the other inputs (:func:`_levels` reads and checks them)."""
    if (
        value is None
        or parents is not None
        or not isinstance(levels, Sequence)
        or not isinstance(noise, Sequence)
        or isinstance(noise, (str, bytes))
        or len(noise) != len(levels)
        or not levels
        or not all(_is_frame(t) and value in t.columns for t in levels)
        or not _margin_frames.wanted(levels, noise, value)
    ):
        return None
    variances = [
        0.0 if _margin_frames.is_invariant(n) else _noise_variance(n, i)
        for i, n in enumerate(noise)
    ]
    structure = _margin_frames.read(
        levels, variances, value, lambda frame, i, released: _flat_values(frame, i, released, value)
    )
    args = (structure.sizes, structure.parents, structure.dims, structure.margins())
    solved = _marginals.solve(*args)
    x = structure.rows([est for est, _ in solved])
    F = structure.rows([var for _, var in solved])
    names = [f"levels[{i}]" for i in range(len(levels))]
    for i, t in enumerate(structure.tables):
        if variances[i] == 0:  # an invariant is its own estimate, exactly (not up to rounding)
            x[i] = np.asarray(t.margin.values, dtype=np.float64).reshape(-1)[t.place]

    def integers(seed: int) -> list[np.ndarray]:
        for i, est in enumerate(x):
            if np.any(np.abs(est) >= 2.0**53):
                raise OverflowError(
                    f"{names[i]}'s estimates reach a magnitude of 2^53 or more (sums of the "
                    "values below), which integer tables cannot carry exactly"
                )
        detail = _marginals.integers(*args, seed=seed, names=names)
        return structure.rows(
            [structure.margin_of(detail, t.margin.level, t.margin.axes) for t in structure.tables]
        )

    tables = [
        _Level(
            _flat_values(t.frame, i, not math.isinf(variances[i]), value),
            variances[i],
            np.zeros(0, dtype=np.int64),
            (),
            t.frame,
        )
        for i, t in enumerate(structure.tables)
    ]
    return Reconciliation(tables, value, (x, F, integers))
