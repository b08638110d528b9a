"""Integer totals split among children: the rounding step of :mod:`dgauss._reconcile` and
:mod:`dgauss._marginals` (non-negative integers that add up to each parent's, near the
estimates, ties in a pseudo-random order fixed by a seed)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dgauss import _bounding

_CHUNK = 1 << 18  # values a step of the passes reads at a time (bounds the temporaries)


def _chunks(n: int):
    for a in range(0, n, _CHUNK):
        yield slice(a, min(a + _CHUNK, n))


def _tie_keys(where: np.ndarray, seed: int) -> np.ndarray:
    """A pseudo-random uint64 per position (SplitMix64's finaliser of position and seed):
    the order among equal remainders, the same for the same positions and seed, favouring
    no position (with integer counts and one variance a level, every child of a parent has
    the same remainder, and "the earlier first" gave the first cells of every group the
    +1s: +0.35 a cell nationally for the first age group in the census tree)."""
    mix = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % (1 << 64)
    return _bounding._mix(where.astype(np.uint64) + np.uint64(mix))  # a fresh array: in place


def _split(
    total: np.ndarray,
    x: np.ndarray,
    F: np.ndarray,
    parent: np.ndarray,
    where: np.ndarray,
    seed: int,
) -> np.ndarray:
    """Each parent's integer ``total`` ≥ 0 split among its children into integers ≥ 0 that
    add up to it: the children's estimates x projected onto {w ≥ 0, Σ w = total} in the norm
    Σ (w − x)²/F, then rounded by largest remainders (remainders equal to 9 decimals in a
    pseudo-random order of the children's level positions ``where``, :func:`_tie_keys`).

    The projection is w_c = max(0, x_c − λ F_c), λ from the simplex-projection rule on the
    children sorted by x_c / F_c, the largest first; each group's running sums are its own
    (groups of one size at a time, as rows of a matrix), so no group's rounding depends on
    another's or on how a level is cut into chunks."""
    m, n = len(total), len(parent)
    counts = np.bincount(parent, minlength=m)
    starts = np.cumsum(counts) - counts
    order = np.lexsort((-(x / F), parent))
    tot = total.astype(np.float64)
    w = np.zeros(n)
    for size in np.unique(counts):
        groups = np.flatnonzero((counts == size) & (total > 0))
        if not groups.size:
            continue
        idx = order[starts[groups][:, None] + np.arange(size)]
        xs, fs = x[idx], F[idx]
        lam = (np.cumsum(xs, axis=1) - tot[groups][:, None]) / np.cumsum(fs, axis=1)
        rho = np.maximum(np.count_nonzero(xs / fs > lam, axis=1), 1)  # ≥ 1: the total > 0
        chosen = lam[np.arange(len(groups)), rho - 1]
        w[idx] = np.maximum(xs - chosen[:, None] * fs, 0.0)
    # largest remainders: Σ w is the total up to float rounding, so 0 ≤ short ≤ children
    floor = np.floor(w)
    ints = floor.astype(np.int64)
    short = total - _sums(parent, ints, m)
    order = np.lexsort((_tie_keys(where, seed), -np.round(w - floor, 9), parent))
    rank = np.arange(n) - starts[parent[order]]
    bump = rank < short[parent[order]]
    ints[order[bump]] += 1
    return _settle(total, ints, parent, m)


def _sums(parent: np.ndarray, ints: np.ndarray, m: int) -> np.ndarray:
    """Each group's sum of int64 values, exactly (np.add.at: no float weights)."""
    sums = np.zeros(m, dtype=np.int64)
    np.add.at(sums, parent, ints)
    return sums


def _settle(total: np.ndarray, ints: np.ndarray, parent: np.ndarray, m: int) -> np.ndarray:
    """Make every group add up to its total ≥ 0, should float rounding have left one off
    (only conceivable with totals near 2^53; one pass over each such group): a shortfall
    spread evenly (the remainder to the earlier children), an excess taken from the largest
    children first, never below 0 (possible: the group holds total + excess)."""
    diff = total - _sums(parent, ints, m)
    for g in np.flatnonzero(diff):
        members = np.flatnonzero(parent == g)
        d = int(diff[g])
        if d > 0:
            ints[members] += d // len(members)
            ints[members[: d % len(members)]] += 1
            continue
        excess = -d
        for c in members[np.argsort(-ints[members], kind="stable")]:
            taken = min(int(ints[c]), excess)
            ints[c] -= taken
            excess -= taken
            if excess == 0:
                break
    return ints


def _split_in_chunks(
    total: np.ndarray, x: np.ndarray, F: np.ndarray, parent: np.ndarray, seed: int
) -> np.ndarray:
    """:func:`_split` over runs of consecutive parents holding about _CHUNK children each:
    a slice when the children come ordered by parent, else found by a scan (no sort, whose
    index array would be as large as the detail table)."""
    n, m = len(parent), len(total)
    if n <= _CHUNK:
        return _split(total, x, F, parent, np.arange(n), seed)
    ordered = all(
        np.all(parent[p.start + 1 : p.stop + 1] >= parent[p.start : min(p.stop, n - 1)])
        for p in _chunks(n)
    )
    ends = np.cumsum(np.bincount(parent, minlength=m))
    ints = np.empty(n, dtype=np.int64)
    first = 0
    while first < m:
        start = int(ends[first - 1]) if first else 0
        last = max(int(np.searchsorted(ends, start + _CHUNK, side="right")), first + 1)
        stop = int(ends[last - 1])
        idx: Any = (
            slice(start, stop) if ordered else np.flatnonzero((parent >= first) & (parent < last))
        )
        where = np.arange(start, stop) if ordered else idx
        ints[idx] = _split(total[first:last], x[idx], F[idx], parent[idx] - first, where, seed)
        first = last
    return ints
