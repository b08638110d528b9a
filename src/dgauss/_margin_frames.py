""":func:`dgauss.reconcile` on marginal tables of one detail table (pandas DataFrames): the
structure read from the tables' key columns, the estimate of :mod:`dgauss._marginals`, and
the result in the tables' own rows.

The structure.  The first table is the detail; every other table's key columns (its columns
but the value column) are some of the detail's, and its values are the noisy group-by sums of
the detail over them.  Among the detail's key columns, a *geography* column is one that
another key column determines or that determines another (municipality → province → region,
read from the detail's rows); geography columns must nest in one chain (columns in one-to-one
correspondence are one level).  The other key columns are the cross-classification (age,
sex), and the detail must hold every combination of them in every area of its finest level,
once.  A table's level is the finest geography level among its columns (no geography: the
whole), its variables the cross-classifying columns it keeps; its rows must be exactly that
level's areas times its variables' values.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _marginals

__all__: list[str] = []


def wanted(frames: Sequence[Any], noise: Sequence[Any], value: str) -> bool:
    """Whether DataFrames go this way: an invariant (a noise of 0), the detail not
    released, or a table that is not a grouping of the one before (the chain of groupings
    keeps :mod:`dgauss._reconcile`'s own passes, which allow any rows)."""
    if any(is_invariant(n) for n in noise) or noise[0] is None:
        return True
    keys = [[c for c in f.columns if c != value] for f in frames]
    return any(not set(keys[i]) <= set(keys[i - 1]) for i in range(1, len(frames)))


def is_invariant(noise: Any) -> bool:
    """A noise of exactly 0 (an int, float or Fraction; not a bool): a table published
    without noise."""
    if isinstance(noise, (bool, np.bool_)):
        return False
    return isinstance(noise, (numbers.Real, Fraction)) and noise == 0


@dataclass
class _Table:
    """One input table as a margin: its rows' places (area × cell, flat) and the margin."""

    frame: Any
    place: np.ndarray  # each row's flat position in (areas of level) × (cells of axes)
    margin: _marginals.Margin


@dataclass
class Structure:
    """The structure read from the tables, what the passes take."""

    sizes: list[int]
    parents: list[np.ndarray]
    dims: tuple[int, ...]
    tables: list[_Table]

    def margins(self) -> list[_marginals.Margin]:
        return [t.margin for t in self.tables]

    def rows(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Each table's values per area × cell (one array per table, flat or per area) as
        values per row of its frame."""
        out = []
        for t, arr in zip(self.tables, arrays, strict=True):
            cells = math.prod(self.dims[i] for i in t.margin.axes)
            flat = np.asarray(arr).reshape(-1)
            if flat.size != len(t.place):  # one value per area: every cell of it
                flat = np.repeat(flat, cells)
            out.append(flat[t.place])
        return out

    def margin_of(self, detail: np.ndarray, level: int, axes: tuple[int, ...]) -> np.ndarray:
        """The exact margin of an integer detail table (leaves × cells): int64, areas of
        ``level`` × cells of ``axes``, flat."""
        everything = tuple(range(len(self.dims)))
        shaped = detail.reshape(detail.shape[0], *self.dims)
        return self.coarsened(shaped, 0, everything, level, axes).reshape(-1)

    def coarsened(
        self, values: np.ndarray, level: int, axes: tuple[int, ...], to: int, kept: tuple[int, ...]
    ) -> np.ndarray:
        """A margin's ``values`` (areas of ``level`` × cells of ``axes``) summed to the areas
        of level ``to`` and the variables ``kept`` (coarser: ``to`` >= ``level``, ``kept`` a
        subset of ``axes``), in ``values``' dtype: areas × cells of ``kept``."""
        arr = np.asarray(values)
        drop = tuple(1 + j for j, i in enumerate(axes) if i not in kept)
        arr = arr.sum(axis=drop) if drop else arr
        arr = arr.reshape(arr.shape[0], -1)
        for lv in range(level, to):
            up = np.zeros((self.sizes[lv + 1], arr.shape[1]), dtype=arr.dtype)
            np.add.at(up, self.parents[lv], arr)
            arr = up
        return arr


def _codes(column: Any, categories: Any, where: str) -> np.ndarray:
    """Each value's position among ``categories`` (a pandas Index); a missing value (None,
    NaN, NA) or a value not there is a ValueError naming ``where``."""
    missing = column.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{where} has a missing key in column {column.name!r} (row {row})")
    codes = categories.get_indexer(column)
    if np.any(codes < 0):
        row = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(
            f"{where} has the key {column.iloc[row]!r} (row {row}), which the detail table "
            "(levels[0]) does not have"
        )
    return codes.astype(np.int64)


def read(
    frames: Sequence[Any],
    variances: Sequence[float],
    value: str,
    flat_values: Callable[[Any, int, bool], np.ndarray],
) -> Structure:
    """The structure of ``frames`` (margins of ``frames[0]``), each table's values read by
    ``flat_values(frame, i, released)``; ValueError naming the table for anything that is not
    a marginal of one detail."""
    pd: Any = importlib.import_module("pandas")  # (DataFrames in: pandas is there)

    keys = [[c for c in f.columns if c != value] for f in frames]
    detail = frames[0]
    for i, f in enumerate(frames):
        if len(f) == 0:
            raise ValueError(f"levels[{i}] is empty: every table holds at least one row")
    for i, k in enumerate(keys):
        missing = [c for c in k if c not in keys[0]]
        if missing:
            raise ValueError(
                f"levels[{i}] has the key column(s) {missing} that the detail table "
                "(levels[0]) lacks: every table must be a marginal (a group-by sum) of the "
                "detail, which carries every key column" + index_hint(detail, "levels[0]")
            )
    if not keys[0]:
        raise ValueError(
            "levels[0] (the detail table) has no key columns beside the value"
            + index_hint(detail, "levels[0]")
        )
    categories = {}
    codes = {}
    for c in keys[0]:
        col = detail[c]
        if col.isna().any():
            raise ValueError(f"levels[0] has a missing key in column {c!r}")
        codes[c], categories[c] = pd.factorize(col, sort=True)
        categories[c] = pd.Index(categories[c])
    n = {c: len(categories[c]) for c in keys[0]}

    def crosses(a: str, b: str) -> bool:
        """Every value of a meets every value of b in some row (a bitmap of the pairs, no
        larger than the detail: more pairs than rows cannot all be there)."""
        if n[a] * n[b] > len(detail):
            return False
        seen = np.zeros(n[a] * n[b], dtype=bool)
        seen[codes[a].astype(np.int64) * n[b] + codes[b]] = True
        return bool(seen.all())

    def determines(a: str, b: str) -> bool:
        """Each value of a meets one value of b only (a functional dependency)."""
        one = np.empty(n[a], dtype=np.int64)
        one[codes[a]] = codes[b]  # some b of each a; every row must agree with it
        return bool(np.array_equal(one[codes[a]], codes[b]))

    # a cross-classifying column meets every value of every other key column; the rest are
    # geography, where a finer column determines a coarser one
    variables = [c for c in keys[0] if all(crosses(c, b) for b in keys[0] if b != c)]
    geo = [c for c in keys[0] if c not in variables]
    fd = {(a, b): determines(a, b) for a in geo for b in geo if a != b}
    # levels: classes of one-to-one columns, finest (most areas) first, each nesting in the next
    classes: list[list[str]] = []
    for c in sorted(geo, key=lambda c: (-n[c], keys[0].index(c))):
        if classes and fd[c, classes[-1][0]] and fd[classes[-1][0], c]:
            classes[-1].append(c)
        elif classes and not fd[classes[-1][0], c]:
            raise ValueError(
                f"levels[0]'s key columns {classes[-1][0]!r} and {c!r} neither cross (every "
                f"value of one with every value of the other) nor nest (each {classes[-1][0]} "
                f"within one {c}): the areas must form one hierarchy, and the other keys "
                "cross them"
            )
        else:
            classes.append([c])
    dims = tuple(n[c] for c in variables)
    level_of = {c: lv for lv, cls in enumerate(classes) for c in cls}
    needs_root = any(not any(c in level_of for c in k) for k in keys)
    sizes = [n[cls[0]] for cls in classes] + ([1] if needs_root or not classes else [])
    parents = []
    for lv in range(len(sizes) - 1):
        parent = np.zeros(sizes[lv], dtype=np.int64)
        if lv + 1 < len(classes):
            parent[codes[classes[lv][0]]] = codes[classes[lv + 1][0]]
        parents.append(parent)
    # the detail: every area of the finest level × every combination of the variables, once
    leaf = codes[classes[0][0]] if classes else np.zeros(len(detail), dtype=np.int64)
    cell = _flat_cell([codes[c] for c in variables], dims, len(detail))
    _full(
        leaf * math.prod(dims) + cell,
        sizes[0] * math.prod(dims),
        0,
        index_hint(detail, "levels[0]"),
    )

    tables = []
    for i, frame in enumerate(frames):
        present = [c for c in keys[i] if c in level_of]
        level = min((level_of[c] for c in present), default=len(sizes) - 1)
        axes = tuple(j for j, c in enumerate(variables) if c in keys[i])
        where = f"levels[{i}]"
        if i == 0:
            area, cells = leaf, cell
        else:
            if present:
                finest = (
                    classes[level][0]
                    if classes[level][0] in keys[i]
                    else next(c for c in present if level_of[c] == level)
                )
                area = _codes(frame[finest], categories[finest], where)
                for c in present:
                    if c == finest:
                        continue
                    got = _codes(frame[c], categories[c], where)
                    want = _area_code(parents, level, level_of[c], area)
                    if np.any(got != want):
                        row = int(np.flatnonzero(got != want)[0])
                        raise ValueError(
                            f"{where} row {row}: {c} = {frame[c].iloc[row]!r} does not hold "
                            f"{finest} = {frame[finest].iloc[row]!r} in the detail table"
                        )
            else:
                area = np.zeros(len(frame), dtype=np.int64)
            kept = [variables[j] for j in axes]
            cells = _flat_cell(
                [_codes(frame[c], categories[c], where) for c in kept],
                tuple(n[c] for c in kept),
                len(frame),
            )
        ncells = math.prod(dims[j] for j in axes)
        place = area * ncells + cells
        _full(place, sizes[level] * ncells, i, index_hint(frame, f"levels[{i}]"))
        released = not math.isinf(variances[i])
        flat = flat_values(frame, i, released)
        arranged = np.zeros(sizes[level] * ncells)
        arranged[place] = flat
        shape = (sizes[level], *[dims[j] for j in axes])
        margin = _marginals.Margin(
            level, axes, arranged.reshape(shape) if released else None, variances[i]
        )
        tables.append(_Table(frame, place, margin))
    structure = Structure(sizes, parents, dims, tables)
    _check_invariants(structure)
    return structure


def _flat_cell(codes: list[np.ndarray], dims: tuple[int, ...], rows: int) -> np.ndarray:
    if not codes:
        return np.zeros(rows, dtype=np.int64)
    return np.ravel_multi_index(tuple(codes), dims).astype(np.int64)


def index_hint(frame: Any, name: str) -> str:
    """Where a table's keys are in its index (a group-by's result without as_index=False),
    a word on how to pass them; else nothing."""
    held = [n for n in frame.index.names if n is not None]
    if not held:
        return ""
    return f" ({name}'s index holds {held}: pass it with .reset_index(), the keys as columns)"


def _full(place: np.ndarray, expected: int, i: int, hint: str = "") -> None:
    """Every position of the product once: else a ValueError naming levels[i]."""
    counts = np.bincount(place, minlength=expected)
    if np.any(counts > 1):
        raise ValueError(f"levels[{i}] has two rows with the same keys{hint}")
    if len(place) != expected:
        raise ValueError(
            f"levels[{i}] has {len(place):,} rows, but its areas times its cross-classified "
            f"values make {expected:,}: a table must hold every combination of its keys "
            f"once{hint}"
        )


def _area_code(parents, level: int, to: int, area: np.ndarray) -> np.ndarray:
    """The areas of level ``to`` holding ``area`` (areas of ``level``)."""
    for lv in range(level, to):
        area = parents[lv][area]
    return area


def _check_invariants(structure: Structure) -> None:
    """Two invariant tables must agree on what they share (their common margin: the coarser
    level, the variables both keep), exactly where both hold integers."""
    inv = [(i, t.margin) for i, t in enumerate(structure.tables) if t.margin.variance == 0]
    for a in range(len(inv)):
        for b in range(a + 1, len(inv)):
            (i, m), (j, k) = inv[a], inv[b]
            level, axes = max(m.level, k.level), tuple(x for x in m.axes if x in k.axes)
            one, two = (
                structure.coarsened(
                    np.asarray(t.values, dtype=np.float64), t.level, t.axes, level, axes
                )
                for t in (m, k)
            )
            if not np.allclose(one, two, rtol=1e-12, atol=0):
                raise ValueError(
                    f"the invariants levels[{i}] and levels[{j}] disagree: their common margin "
                    "(the coarser level, the variables both keep) differs"
                )
