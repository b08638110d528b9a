"""The exact least-squares reconciliation of marginal tables of one detail table.

The structure.  A detail table x has one cell per (area, c): areas are the leaves of a tree
of geography (municipality ⊂ province ⊂ region ...; ``parents[l]`` maps each area of level
l to its area of level l + 1) and c runs over a cross-classification, the product of
variables of sizes ``dims`` (age × sex: (18, 2)).  A *margin* is the group-by sum of x to one
level of the tree and a subset S of the variables: for every area a of its level, the table
P_S z_a, where z_a is the sum of x over a's leaves and P_S sums out the variables not in S.
Each margin is released with independent noise of one variance v per cell (v = 0: published
exactly, an invariant) or not released.

The estimate.  The minimum-variance linear unbiased estimate of every margin given all the
released ones, with the invariants as constraints (generalised least squares), and its exact
variance.  It decouples, because every P_S^T P_S is diagonal in one orthonormal basis of the
cross-classification: for each variable take the orthonormal basis whose first vector is
constant (1/√d, then Helmert contrasts); the tensor products of those vectors, indexed by
k = (k_1, ..., k_m), are the basis, and k's *component* is the set A of variables with
k_i ≠ 0 (the ANOVA decomposition).  Summing out a variable i maps its constant vector to √d_i
and its contrasts to 0, so a margin over S observes exactly the coefficients of z_a whose
component A ⊆ S, each as √(Π_{i∉S} d_i) times the coefficient, with independent noise of
variance v.  Every coefficient of the detail is thus its own scalar problem on the tree, with
observations at the levels of the margins that keep its component: the tree passes of
:mod:`dgauss._reconcile` (Hay et al. 2010, a variance per node; here also several
observations of a node, invariants, and unobserved leaves), applied to all coefficients at
once, with weights per component.

Unobserved directions.  Where the data do not determine a coefficient (the detail not
released, say, and a province's contrasts observed but not how they split among its
municipalities), the estimate is the minimum-norm least-squares solution (the limit of a
prior N(0, λ) on every leaf coefficient as λ → ∞: such a node splits its parent's value in
proportion to its number of leaves), and the variance is ∞: the value is not estimable.
Every released margin is estimable (it is observed).  The passes carry a variance as
k·λ + f (k the number of unobserved leaves below, f finite) and take the limits exactly.

Post-processing of the released tables, so the output has their privacy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dgauss._splits import _CHUNK, _split_in_chunks, _tie_keys

__all__: list[str] = []


@dataclass(frozen=True)
class Margin:
    """One table of the release: the group-by sum of the detail to ``level`` and the
    variables ``axes`` (sorted indexes into ``dims``), its noisy ``values`` (shape
    ``(areas of level, *dims[axes])``; None: not released) and the noise's ``variance`` per
    cell (0: an invariant)."""

    level: int
    axes: tuple[int, ...]
    values: np.ndarray | None
    variance: float


def helmert(d: int) -> np.ndarray:
    """A d × d orthonormal matrix whose first row is constant (1/√d) and whose row k ≥ 1 is
    the k-th Helmert contrast: 1/√(k(k+1)) on the first k entries, −k/√(k(k+1)) on entry k."""
    q = np.zeros((d, d))
    q[0] = 1 / math.sqrt(d)
    for k in range(1, d):
        q[k, :k] = 1 / math.sqrt(k * (k + 1))
        q[k, k] = -k / math.sqrt(k * (k + 1))
    return q


def _helmert_along(arr: np.ndarray, axis: int) -> np.ndarray:
    """``helmert(d) @ v`` for every vector v of ``arr`` along ``axis``, in O(d) each
    (running sums; no d × d matrix, so a variable of thousands of values costs no more)."""
    v = np.moveaxis(arr, axis, -1)
    d = v.shape[-1]
    out = np.empty(v.shape)
    running = np.cumsum(v, axis=-1)
    out[..., 0] = running[..., -1] / math.sqrt(d)
    if d > 1:
        k = np.arange(1, d)
        out[..., 1:] = (running[..., :-1] - k * v[..., 1:]) / np.sqrt(k * (k + 1.0))
    return np.moveaxis(out, -1, axis)


def _helmert_back(arr: np.ndarray, axis: int) -> np.ndarray:
    """``helmert(d).T @ y`` along ``axis`` (the inverse of :func:`_helmert_along`), in O(d):
    v_j = y_0/√d − j·y_j/√(j(j+1)) (j ≥ 1) + Σ_{k>j} y_k/√(k(k+1))."""
    y = np.moveaxis(arr, axis, -1)
    d = y.shape[-1]
    out = np.broadcast_to(y[..., :1] / math.sqrt(d), y.shape).copy()
    if d > 1:
        k = np.arange(1, d)
        scaled = y[..., 1:] / np.sqrt(k * (k + 1.0))
        out[..., 1:] -= k * scaled
        later = np.cumsum(scaled[..., ::-1], axis=-1)[..., ::-1]  # Σ_{k ≥ j} for j = 1..d-1
        out[..., :-1] += later
    return np.moveaxis(out, -1, axis)


class _Basis:
    """The cross-classification's basis: the per-variable matrices, each coefficient's
    component (a bitmask of the variables where k_i ≠ 0), and the maps in and out."""

    def __init__(self, dims: Sequence[int]):
        self.dims = tuple(int(d) for d in dims)
        self.size = math.prod(self.dims)
        component = np.zeros(self.dims, dtype=np.int64)
        for i, d in enumerate(self.dims):
            shape = [1] * len(self.dims)
            shape[i] = d
            component |= (np.arange(d) > 0).reshape(shape).astype(np.int64) << i
        self.component = component.reshape(-1)  # each coefficient's component
        self.components = 1 << len(self.dims)

    def gain2(self, axes: tuple[int, ...]) -> int:
        """Π of d_i over the variables a margin sums out: its coefficients are √ of this
        times the detail's."""
        return math.prod(d for i, d in enumerate(self.dims) if i not in axes)

    def _slot(self, axes: tuple[int, ...]) -> tuple:
        return (slice(None),) + tuple(
            slice(None) if i in axes else 0 for i in range(len(self.dims))
        )

    def inward(self, values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """A margin's values (areas × its cells) as the detail's coefficients it observes,
        in the detail's units: shape (areas, size), 0 in the coefficients it does not."""
        arr = np.asarray(values, dtype=np.float64)
        for j in range(len(axes)):
            arr = _helmert_along(arr, j + 1)
        full = np.zeros((arr.shape[0], *self.dims))
        full[self._slot(axes)] = arr / math.sqrt(self.gain2(axes))
        return full.reshape(arr.shape[0], self.size)

    def outward(self, coefficients: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """The inverse of :meth:`inward` on the coefficients a margin observes: the margin's
        cells (areas × its cells) from the detail's coefficients (areas × size)."""
        full = coefficients.reshape(coefficients.shape[0], *self.dims)
        arr = full[self._slot(axes)] * math.sqrt(self.gain2(axes))
        for j in range(len(axes)):
            arr = _helmert_back(arr, j + 1)
        return arr

    def outward_rows(self, coefficients: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """:meth:`outward`, a block of areas at a time (its temporaries stay small)."""
        out = np.empty((len(coefficients), *[self.dims[i] for i in axes]))
        for rows in _rows(len(coefficients), self.size):
            out[rows] = self.outward(coefficients[rows], axes)
        return out

    def observes(self, axes: tuple[int, ...]) -> np.ndarray:
        """Which components a margin over ``axes`` observes (A ⊆ S), as a boolean array."""
        mask = sum(1 << i for i in axes)
        return (np.arange(self.components) & ~mask) == 0

    def share(self, axes: tuple[int, ...]) -> np.ndarray:
        """For each component A ⊆ S, the sum over A's coefficients of a basis vector's squared
        entry at any one cell of the margin: Π_{i∈A} (1 − 1/d_i) · Π_{i∈S∖A} 1/d_i (the same
        at every cell, as every column of an orthonormal matrix has norm 1); 0 elsewhere."""
        out = np.zeros(self.components)
        for a in range(self.components):
            if a & ~sum(1 << i for i in axes):
                continue
            p = 1.0
            for i in axes:
                p *= (1 - 1 / self.dims[i]) if a >> i & 1 else 1 / self.dims[i]
            out[a] = p
        return out


def _group_sum(parent: np.ndarray, values: np.ndarray, m: int) -> np.ndarray:
    """Σ of the rows of ``values`` (n × c) over each parent's group: m × c."""
    out = np.empty((m, values.shape[1]), dtype=np.float64)
    for j in range(values.shape[1]):
        out[:, j] = np.bincount(parent, weights=values[:, j], minlength=m)
    return out


def solve(
    sizes: Sequence[int],
    parents: Sequence[np.ndarray],
    dims: Sequence[int],
    margins: Sequence[Margin],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The generalised least-squares estimate of every margin (released or not) and the
    variance of each of its cells (one per area: every cell of an area has the same; ∞
    where not estimable), as a list of (estimate, variance) in ``margins``' order.

    ``sizes[l]`` is the number of areas of level l; ``parents[l]`` maps each area of level l
    to its area of level l + 1 (ints in [0, sizes[l + 1])); the top level's areas are the
    roots.  Inputs are trusted (checked by the caller); invariants must be consistent (else
    the first one read wins)."""
    basis, x, V = _passes(sizes, parents, dims, margins)
    out = []
    for m in margins:
        est = basis.outward_rows(x[m.level], m.axes)
        share = basis.share(m.axes)
        used = share > 0
        with np.errstate(invalid="ignore"):
            var = basis.gain2(m.axes) * (V[m.level][:, used] * share[used]).sum(axis=1)
        out.append((est, var))
    return out


def _rows(areas: int, width: int):
    """Slices of about _CHUNK values of an areas × width table: the passes work a block of
    areas at a time, so their temporaries stay small beside the level's own arrays."""
    step = max(1, _CHUNK // max(1, width))
    for a in range(0, areas, step):
        yield slice(a, min(a + step, areas))


def _own(basis: _Basis, areas: int, margins: Sequence[Margin]) -> tuple[np.ndarray, np.ndarray]:
    """One level's released margins combined: the value of each area's coefficients (areas ×
    size: the precision-weighted mean of the noisy observations, or an invariant's value)
    and their variance per component (0: fixed by an invariant; ∞: not observed)."""
    ncomp, comp = basis.components, basis.component
    precision = np.zeros(ncomp)
    exact = np.zeros(ncomp, dtype=bool)
    noisy, fixed = [], []
    for m in margins:
        seen = basis.observes(m.axes)
        values = np.asarray(m.values, dtype=np.float64)
        if m.variance == 0:
            fixed.append((values, m.axes, (seen & ~exact)[comp]))
            exact |= seen
        else:
            noise = m.variance / basis.gain2(m.axes)
            noisy.append((values, m.axes, 1 / noise))
            precision[seen] += 1 / noise
    with np.errstate(divide="ignore"):
        var = np.where(precision > 0, 1 / precision, np.inf)
    scale = np.where(precision > 0, var, 0.0)[comp]  # Σ coef/noise × var: the weighted mean
    var[exact] = 0.0
    value = np.zeros((areas, basis.size))
    for rows in _rows(areas, basis.size):
        out = value[rows]
        for values, axes, weight in noisy:  # inward is 0 in the coefficients not observed
            out += basis.inward(values[rows], axes) * weight
        out *= scale
        for values, axes, cols in fixed:
            out[:, cols] = basis.inward(values[rows], axes)[:, cols]
    return value, var


def _passes(
    sizes: Sequence[int],
    parents: Sequence[np.ndarray],
    dims: Sequence[int],
    margins: Sequence[Margin],
) -> tuple[_Basis, list[np.ndarray], list[np.ndarray]]:
    """The basis, and for every level the estimate of each area's detail coefficients
    (areas × size) and their variance per component (areas × components; ∞: not
    estimable).

    Memory: beside the returned arrays, the levels above the leaves and one block of areas'
    temporaries (:func:`_rows`); the leaves' variance terms k and f are the same for every
    leaf (one row, broadcast), and the estimate is computed in place of the up pass's."""
    basis = _Basis(dims)
    top = len(sizes) - 1
    ncomp, comp = basis.components, basis.component

    # up: each area's estimate from its subtree, u, with variance k·λ + f (per component)
    u: list[np.ndarray] = [np.empty(0)] * (top + 1)
    k: list[np.ndarray] = [np.empty(0)] * (top + 1)
    f: list[np.ndarray] = [np.empty(0)] * (top + 1)
    U: list[np.ndarray] = [np.empty(0)] * (top + 1)  # children's sums, for the down pass
    K: list[np.ndarray] = [np.empty(0)] * (top + 1)
    F: list[np.ndarray] = [np.empty(0)] * (top + 1)
    for lv in range(top + 1):
        own = [m for m in margins if m.level == lv and m.values is not None]
        own_value, r = _own(basis, sizes[lv], own)
        if lv == 0:
            seen = np.isfinite(r)
            u[0] = own_value
            k[0] = np.broadcast_to(np.where(seen, 0, 1).astype(np.int64), (sizes[0], ncomp))
            f[0] = np.broadcast_to(np.where(seen, r, 0.0), (sizes[0], ncomp))
            continue
        parent, areas = parents[lv - 1], sizes[lv]
        U[lv] = _group_sum(parent, u[lv - 1], areas)
        K[lv] = np.rint(_group_sum(parent, k[lv - 1], areas)).astype(np.int64)
        F[lv] = _group_sum(parent, f[lv - 1], areas)
        kk, ff, uu = K[lv].copy(), F[lv].copy(), U[lv].copy()
        for a in range(ncomp):
            cols = comp == a
            if math.isinf(r[a]):
                continue  # nothing observed here: the children's sum
            if r[a] == 0:
                take = np.ones(areas, dtype=bool)
            else:
                take = kk[:, a] > 0  # the subtree leaves it open: the own value alone
            exact_below = (kk[:, a] == 0) & (ff[:, a] == 0)
            take &= ~exact_below | (r[a] == 0)
            both = ~take & ~exact_below
            ov = own_value[:, cols]
            uu[np.ix_(take, cols)] = ov[take]
            kk[take, a], ff[take, a] = 0, r[a]
            if both.any():
                fb = ff[both, a]
                uu[np.ix_(both, cols)] = (
                    ov[both] * fb[:, None] + uu[np.ix_(both, cols)] * r[a]
                ) / (r[a] + fb)[:, None]
                ff[both, a] = r[a] * fb / (r[a] + fb)
        u[lv], k[lv], f[lv] = uu, kk, ff

    # down: the final estimate x (in place of u) and its variance (inf where not estimable)
    x, V = u, [np.empty(0)] * (top + 1)
    V[top] = np.where(k[top] > 0, np.inf, f[top])
    for lv in range(top - 1, -1, -1):
        p = parents[lv]
        step = x[lv + 1] - U[lv + 1]  # each parent's correction, shared by its children
        V[lv] = np.empty((sizes[lv], ncomp))
        for rows in _rows(sizes[lv], basis.size):
            pr = p[rows]
            Ka, Fa = K[lv + 1][pr], F[lv + 1][pr]
            kb, fb = k[lv][rows], f[lv][rows]
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(Ka > 0, kb / np.maximum(Ka, 1), np.where(Fa > 0, fb / Fa, 0.0))
                t1 = np.where(
                    Ka == 0,
                    np.where(Fa > 0, fb * (Fa - fb) / Fa, 0.0),
                    np.where(kb > 0, np.where(kb == Ka, Fa - fb, np.inf), fb),
                )
                t2 = np.where(w > 0, w * w * V[lv + 1][pr], 0.0)
            x[lv][rows] += w[:, comp] * step[pr]
            V[lv][rows] = t1 + t2
        U[lv + 1] = K[lv + 1] = F[lv + 1] = np.empty(0)

    return basis, x, V


# ---- non-negative integers ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Fixed:
    """What invariants fix at one level: each area's margin over ``axes`` (int64, areas ×
    cells of axes in C order), from the invariants ``names`` (for messages); ``chosen``
    when it is a table picked to meet several invariants over crossing variables (one of
    many that would)."""

    axes: tuple[int, ...]
    values: np.ndarray
    names: tuple[str, ...] = ()
    chosen: bool = False


def _listed(names: Sequence[str]) -> str:
    """Names as a phrase, in their order (``levels[2]`` before ``levels[10]``)."""
    names = sorted(set(names), key=lambda name: (len(name), name))
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _coarser(fixed: _Fixed, axes: tuple[int, ...], dims: Sequence[int]) -> np.ndarray:
    """``fixed``'s values summed over its variables not in ``axes`` (a subset)."""
    arr = fixed.values.reshape(len(fixed.values), *[dims[i] for i in fixed.axes])
    drop = tuple(1 + j for j, i in enumerate(fixed.axes) if i not in axes)
    return (arr.sum(axis=drop) if drop else arr).reshape(len(fixed.values), -1)


def _together(a: _Fixed, b: _Fixed, est: np.ndarray, dims: Sequence[int], seed: int) -> _Fixed:
    """What two invariants of one level fix together, once checked that they agree on the
    variables they share: the one over more variables where the other's nest in it; where
    they cross (age in one, sex in the other), a table over both's variables chosen to meet
    both, near the level's estimated cells ``est`` (areas × dims): for each area and each
    cell of the shared variables, a 2-way table with fixed margins (:func:`_two_margins`,
    which always finds one)."""
    shared = tuple(i for i in a.axes if i in b.axes)
    if not np.array_equal(_coarser(a, shared, dims), _coarser(b, shared, dims)):
        names = _listed([*a.names, *b.names])
        if a.chosen or b.chosen:
            raise ValueError(
                f"no non-negative integer table was found that meets the invariants {names} "
                "together: invariants over crossing variables at several levels may admit "
                "none, and finding one when they do is a hard combinatorial problem"
            )
        raise ValueError(f"the invariants {names} do not add up to each other")
    if shared == a.axes:
        return b
    if shared == b.axes:
        return a
    only_a = tuple(i for i in a.axes if i not in shared)
    only_b = tuple(i for i in b.axes if i not in shared)
    union = tuple(sorted(a.axes + only_b))
    areas = len(a.values)
    n_s, n_a, n_b = (math.prod(dims[i] for i in axes) for axes in (shared, only_a, only_b))

    def arranged(values: np.ndarray, axes: tuple[int, ...], order: tuple[int, ...]):
        arr = values.reshape(areas, *[dims[i] for i in axes])
        return np.transpose(arr, (0, *[1 + axes.index(i) for i in order]))

    every = tuple(range(len(dims)))
    cells = est.sum(axis=tuple(1 + i for i in every if i not in union))
    cells = arranged(cells, union, shared + only_a + only_b).reshape(-1, n_b)
    row = arranged(a.values, a.axes, shared + only_a).reshape(-1)
    col = arranged(b.values, b.axes, shared + only_b).reshape(-1, n_b)
    group = np.repeat(np.arange(areas * n_s), n_a)
    ints = _two_margins(cells, row, col, group, _tie_keys(np.arange(len(row)), seed))
    ints = ints.reshape(areas, *[dims[i] for i in shared + only_a + only_b])
    back = np.argsort((0, *[1 + i for i in shared + only_a + only_b]))
    values = np.ascontiguousarray(np.transpose(ints, back)).reshape(areas, -1)
    return _Fixed(union, values, (*a.names, *b.names), chosen=True)


def _fixed(
    sizes: Sequence[int],
    parents: Sequence[np.ndarray],
    dims: Sequence[int],
    margins: Sequence[Margin],
    names: Sequence[str],
    cells: Sequence[np.ndarray],
    seed: int,
) -> list[_Fixed | None]:
    """What invariants fix at each level (None where none is at or below it), from the
    leaves up: the sums of what is fixed below, with the level's own invariants, two at a
    time (:func:`_together`, near the level's estimated ``cells``)."""
    own: list[list[_Fixed]] = [[] for _ in sizes]
    for i, m in enumerate(margins):
        if m.values is None or m.variance != 0:
            continue
        values = np.asarray(m.values, dtype=np.float64).reshape(sizes[m.level], -1)
        if np.any(values != np.round(values)) or np.any(values < 0):
            raise ValueError(f"{names[i]} is an invariant that is not of integers >= 0")
        own[m.level].append(_Fixed(tuple(m.axes), values.astype(np.int64), (names[i],)))
    out: list[_Fixed | None] = [None] * len(sizes)
    below: _Fixed | None = None
    for lv in range(len(sizes)):
        if below is not None and lv > 0:
            summed = np.zeros((sizes[lv], below.values.shape[1]), dtype=np.int64)
            np.add.at(summed, parents[lv - 1], below.values)
            below = _Fixed(below.axes, summed, below.names, below.chosen)
        for j, mine in enumerate(own[lv]):
            if below is None:
                below = mine
            else:
                below = _together(below, mine, cells[lv], dims, seed + 7919 * (lv + 1) + j)
        out[lv] = below
    return out


def _two_margins(
    estimate: np.ndarray,
    row: np.ndarray,
    col: np.ndarray,
    group: np.ndarray,
    keys: np.ndarray,
) -> np.ndarray:
    """Non-negative integers (rows × columns) near ``estimate`` whose rows sum to ``row`` and
    whose rows of each ``group`` sum, column by column, to that group's row of ``col``:
    iterative proportional fitting of the estimate's non-negative part to both margins,
    then each entry the fit's floor or one more (:func:`_ryser`, group by group).  Where the
    fit falls short of a group's margins (it converges slowly when the estimate is far from
    them), that group's table is :func:`_transport`'s."""
    w = np.maximum(estimate, 0.0) + 1e-9
    rowf, colf = row.astype(np.float64), col.astype(np.float64)
    for _ in range(2000):
        rs = w.sum(axis=1)
        w *= np.divide(rowf, rs, out=np.zeros_like(rs), where=rs > 0)[:, None]
        cs = _group_sum(group, w, len(col))
        w *= np.divide(colf, cs, out=np.zeros_like(cs), where=cs > 0)[group]
        if np.abs(w.sum(axis=1) - rowf).max(initial=0) <= 1e-9 * max(
            1.0, float(rowf.max(initial=0))
        ):
            break
    # a fit within 1e-7 of an integer is that integer (an integral estimate stays itself),
    # unless that overshoots a margin
    for floor in (
        np.where(np.abs(w - np.rint(w)) < 1e-7, np.rint(w), np.floor(w)),
        np.floor(w - 1e-7),
    ):
        floor = np.maximum(floor, 0).astype(np.int64)
        need = row - floor.sum(axis=1)
        demand = col.copy()
        np.subtract.at(demand, group, floor)
        if need.min(initial=0) >= 0 and demand.min(initial=0) >= 0:
            break
    out = np.empty_like(floor)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(col) + 1))
    for a in range(len(col)):
        rows = order[bounds[a] : bounds[a + 1]]
        if not len(rows):
            continue
        try:
            if need[rows].min() < 0 or demand[a].min() < 0:
                raise ValueError("the fit's floor overshoots a margin")
            out[rows] = _ryser(
                floor[rows], w[rows] - floor[rows], need[rows], demand[a], keys[rows]
            )
        except ValueError:
            out[rows] = _transport(w[rows], row[rows], col[a], keys[rows])
    return out


def _transport(w: np.ndarray, need: np.ndarray, demand: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Non-negative integers (rows × columns) with row sums ``need`` and column sums
    ``demand`` (both ≥ 0, of equal sums): each row, in the order of ``keys``, takes what
    remains of the columns' demand, its largest entries of ``w`` first.  It always succeeds
    (the demand left is the need left); the fallback of :func:`_two_margins`."""
    out = np.zeros(w.shape, dtype=np.int64)
    left = demand.astype(np.int64)
    for b in np.argsort(keys, kind="stable"):
        r = int(need[b])
        for c in np.argsort(-w[b], kind="stable"):
            if r == 0:
                break
            take = min(r, int(left[c]))
            out[b, c] += take
            left[c] -= take
            r -= take
        if r:
            raise ValueError("no non-negative integer table meets the invariant totals")
    return out


def _ryser(
    floor: np.ndarray, frac: np.ndarray, need: np.ndarray, demand: np.ndarray, keys: np.ndarray
) -> np.ndarray:
    """One parent's children × cells: ``floor`` plus a 0/1 matrix with row sums ``need`` and
    column sums ``demand`` (Gale–Ryser's construction: each row, in the order of ``keys``,
    takes the columns of largest remaining demand, the larger fractional part ``frac``
    first among equals), which exists when a fractional one in [0, 1] does."""
    out = floor.copy()
    demand = demand.copy()
    for b in np.argsort(keys, kind="stable"):
        r = int(need[b])
        if r == 0:
            continue
        order = np.lexsort((-frac[b], -demand))[:r]
        if r > out.shape[1] or demand[order[-1]] <= 0:
            raise ValueError("no non-negative integer table meets the invariant totals")
        out[b, order] += 1
        demand[order] -= 1
    return out


def integers(
    sizes: Sequence[int],
    parents: Sequence[np.ndarray],
    dims: Sequence[int],
    margins: Sequence[Margin],
    seed: int = 0,
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """A detail table of non-negative integers (leaves × cells, C order) near the estimate,
    every invariant met exactly; every margin of it is then of integers that add up.

    What invariants fix at a level is read from the leaves up: the sums of what is fixed
    below, with the level's own invariants, the finer where their variables nest (a total,
    then age, then age × sex); where they cross (age at one, sex at another), a table over
    both's variables that meets both, chosen near the estimate (:func:`_together`: one
    always exists for two invariants at a level).  A third crossing invariant at a level,
    or invariants above a chosen table that fix more of it, may admit no table at all:
    then, or should the one chosen not be extended, a ValueError naming the invariants not
    met together.  Top-down:
    each root's cells rounded to what is fixed (its margin kept, split over the other
    variables by the projection and largest remainders of :mod:`dgauss._splits`); then each
    area's integer cells split among its children: cell by cell where the children are not
    fixed, and where they are, for each cell of the fixed variables, a children × (other
    variables) table with both margins fixed (iterative proportional fitting of the
    estimate's non-negative part, then every entry the fit's floor or one more: Gale and
    Ryser's construction, which exists whenever the fit does; should the fit fall short, a
    table meeting both margins taken greedily, the largest estimates first).  Where nothing
    fixes them, each root's total is its estimate's nearest integer >= 0 and the children's
    totals are their parent's split among them near their estimates (as in a chain), before
    the cells, so that an area's total stays near its estimate.  ``names``
    names the margins in messages (default ``margins[i]``); an OverflowError when an
    estimate reaches 2^53 (beyond it, integers are not exact in float64 and int64 sums
    may wrap)."""
    if names is None:
        names = [f"margins[{i}]" for i in range(len(margins))]
    basis, x, _ = _passes(sizes, parents, dims, margins)
    everything = tuple(range(len(dims)))
    top = len(sizes) - 1
    cells = []  # each level's estimated cells (areas × dims), in place of its coefficients
    for lv, coef in enumerate(x):
        for rows in _rows(sizes[lv], basis.size):
            coef[rows] = basis.outward(coef[rows], everything).reshape(-1, basis.size)
        if coef.size and max(-coef.min(), coef.max()) >= 2.0**53:
            raise OverflowError(
                f"the estimates of level {lv} of the tree reach a magnitude of 2^53 or more, "
                "which integer tables cannot carry exactly"
            )
        cells.append(coef.reshape(sizes[lv], *dims))
    del x
    fixed = _fixed(sizes, parents, dims, margins, names, cells, seed)
    found: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * (top + 1)
    ones = np.ones  # the split's weights: every cell alike

    def grouped(arr: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """areas × dims as (areas · cells of axes) × cells of the other variables."""
        rest = tuple(i for i in everything if i not in axes)
        moved = np.transpose(arr, (0, *[1 + i for i in axes], *[1 + i for i in rest]))
        return moved.reshape(arr.shape[0] * math.prod(dims[i] for i in axes), -1)

    def ungrouped(arr: np.ndarray, axes: tuple[int, ...], areas: int) -> np.ndarray:
        rest = tuple(i for i in everything if i not in axes)
        order = (*axes, *rest)
        shaped = arr.reshape(areas, *[dims[i] for i in order])
        back = np.argsort((0, *[1 + i for i in order]))
        return np.transpose(shaped, back)

    def totals_split(total: np.ndarray, est: np.ndarray, parent: np.ndarray, s: int) -> _Fixed:
        """Children's totals where nothing fixes them: each parent's integer total split
        among its children near their estimated totals (so that no child's total drifts
        from its estimate while its cells are rounded), as what the step then keeps."""
        flat = est.reshape(len(est), -1).sum(axis=1)
        ints = _split_in_chunks(total, flat, ones(flat.size), parent, s)
        return _Fixed((), ints.reshape(-1, 1))

    f = fixed[top]
    if f is None:  # each root's total: the nearest integer >= 0 to its estimate
        roots = np.rint(cells[top].reshape(sizes[top], -1).sum(axis=1))
        f = _Fixed((), np.maximum(roots, 0).astype(np.int64).reshape(-1, 1))
    # each root's margin over f.axes kept, split over the other variables
    est = grouped(cells[top], f.axes)
    parent = np.repeat(np.arange(est.shape[0]), est.shape[1])
    flat = est.reshape(-1)
    ints = _split_in_chunks(f.values.reshape(-1), flat, ones(flat.size), parent, seed)
    found[top] = ungrouped(ints, f.axes, sizes[top])
    for lv in range(top - 1, -1, -1):
        p, up, f = parents[lv], found[lv + 1], fixed[lv]
        if f is None:  # the children's totals first, from their parent's
            total = up.reshape(len(up), -1).sum(axis=1)
            f = totals_split(total, cells[lv], p, seed + lv + 1)
        # the children's margins over f.axes fixed, and the parent's cells: for each cell of
        # f.axes, a children × (other variables) table with both margins fixed; a block of
        # parents at a time (their children taken in order of parent)
        n_s = math.prod(dims[i] for i in f.axes)
        found[lv] = np.empty((sizes[lv], *dims), dtype=np.int64)
        order = np.argsort(p, kind="stable")
        ends = np.cumsum(np.bincount(p, minlength=sizes[lv + 1]))
        start, first = 0, 0
        while start < sizes[lv]:
            reach = int(np.searchsorted(ends, start + max(1, _CHUNK // basis.size)))
            last = min(max(reach, first) + 1, len(ends))
            stop = int(ends[last - 1])
            areas = order[start:stop]
            est = grouped(cells[lv][areas], f.axes)
            col = grouped(up[first:last], f.axes)
            group = ((p[areas] - first)[:, None] * n_s + np.arange(n_s)).reshape(-1)
            keys = _tie_keys((areas[:, None] * n_s + np.arange(n_s)).reshape(-1), seed + lv + 1)
            ints = _two_margins(est, f.values[areas].reshape(-1), col, group, keys)
            found[lv][areas] = ungrouped(ints, f.axes, len(areas))
            start, first = stop, last
        found[lv + 1] = cells[lv + 1] = np.empty(0)
    return found[0].reshape(sizes[0], basis.size)
