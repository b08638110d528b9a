"""The reconciliation of marginal tables (dgauss._marginals) against a dense solve.

The dense solve, written here from the definitions: the detail x as one vector, every margin
as a 0/1 matrix M, the released margins' rows weighted by 1/√v, the invariants as equality
constraints C x = c.  The minimum-norm constrained least-squares solution: x = x_p + N z with
x_p = C⁺c, N an orthonormal basis of C's null space, z = (W A N)⁺ W (y − A x_p); its
covariance N (WAN)⁺ (WAN)⁺ᵀ Nᵀ.  A margin's cell is estimable when its row lies in the row
space of [C; A]; the tree passes must give its variance there and ∞ elsewhere.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dgauss import _marginals
from dgauss._marginals import Margin


def structure(rng, levels: int, dims: tuple[int, ...]):
    """Random parents: level sizes shrinking to the top, each area of level l + 1 with at
    least one child unless ``rng`` leaves one empty (rarely)."""
    sizes = [int(rng.integers(4, 9))]
    for _ in range(levels - 1):
        sizes.append(max(1, sizes[-1] // int(rng.integers(2, 4))))
    parents = []
    for lv in range(levels - 1):
        n, m = sizes[lv], sizes[lv + 1]
        p = np.concatenate([np.arange(min(n, m)), rng.integers(0, m, n - min(n, m))])
        rng.shuffle(p)
        parents.append(p.astype(np.int64))
    return sizes, parents


def leaves_under(parents, level: int, n0: int) -> np.ndarray:
    """Each leaf's area at ``level``."""
    a = np.arange(n0)
    for lv in range(level):
        a = parents[lv][a]
    return a


def margin_matrix(parents, sizes, dims, level, axes) -> np.ndarray:
    """The 0/1 matrix of a margin: rows (area, cell of axes) in C order, columns (leaf, c)."""
    C = math.prod(dims)
    area = leaves_under(parents, level, sizes[0])
    cells = np.array(list(itertools.product(*[range(d) for d in dims])))
    kept = [dims[i] for i in axes]
    cell_of = (
        np.ravel_multi_index(tuple(cells[:, i] for i in axes), kept)
        if axes
        else np.zeros(len(cells), dtype=np.int64)
    )
    ncell = math.prod(kept)
    M = np.zeros((sizes[level] * ncell, sizes[0] * C))
    for leaf in range(sizes[0]):
        for c in range(C):
            M[area[leaf] * ncell + cell_of[c], leaf * C + c] = 1
    return M


def null_space(C: np.ndarray, n: int) -> np.ndarray:
    if C.shape[0] == 0:
        return np.eye(n)
    _, s, vt = np.linalg.svd(C)
    rank = int((s > 1e-9 * max(1.0, s.max())).sum())
    return vt[rank:].T


def pinv(B: np.ndarray) -> np.ndarray:
    """The pseudo-inverse, singular values below 1e-9 treated as 0 (absolute: B's entries
    are 0/1 over √v, so an exact 0 shows as ~1e-16, never as a small true value)."""
    if B.size == 0:
        return B.T.copy()
    u, s, vt = np.linalg.svd(B, full_matrices=False)
    keep = s > 1e-9
    return (vt[keep].T / s[keep]) @ u[:, keep].T


def dense(parents, sizes, dims, margins):
    n = sizes[0] * math.prod(dims)
    rows, ys, cons, cs = [], [], [], []
    mats = []
    for m in margins:
        M = margin_matrix(parents, sizes, dims, m.level, m.axes)
        mats.append(M)
        if m.values is None:
            continue
        y = np.asarray(m.values, dtype=float).reshape(-1)
        if m.variance == 0:
            cons.append(M)
            cs.append(y)
        else:
            rows.append(M / math.sqrt(m.variance))
            ys.append(y / math.sqrt(m.variance))
    Cm = np.vstack(cons) if cons else np.zeros((0, n))
    c = np.concatenate(cs) if cs else np.zeros(0)
    A = np.vstack(rows) if rows else np.zeros((0, n))
    y = np.concatenate(ys) if ys else np.zeros(0)
    xp = pinv(Cm) @ c if cons else np.zeros(n)
    N = null_space(Cm, n)
    B = A @ N
    Bp = pinv(B)
    x = xp + N @ (Bp @ (y - A @ xp))
    cov = N @ Bp @ Bp.T @ N.T
    stacked = np.vstack([Cm, A])
    if stacked.shape[0]:
        _, s, vt = np.linalg.svd(stacked)
        rank = int((s > 1e-9 * max(1.0, s.max())).sum())
        R = vt[:rank]
    else:
        R = np.zeros((0, n))
    out = []
    for M in mats:
        resid = M - (M @ R.T) @ R
        estimable = np.abs(resid).max(axis=1) < 1e-7 if len(M) else np.zeros(0, bool)
        out.append((M @ x, np.einsum("ij,jk,ik->i", M, cov, M), estimable))
    return out


def random_case(seed: int, variables: int | None = None):
    """A random structure (1-3 levels, 0-2 variables of sizes 1-3, or ``variables`` of
    them), true counts, and margins at random: not released, invariant or noisy."""
    rng = np.random.default_rng(seed)
    levels = int(rng.integers(1, 4))
    if variables is None:
        variables = int(rng.integers(0, 3))
    dims = tuple(int(d) for d in rng.integers(1, 4, size=variables))
    sizes, parents = structure(rng, levels, dims)
    C = math.prod(dims)
    x = rng.integers(0, 20, size=(sizes[0], C)).astype(float)
    subsets = [
        tuple(s) for r in range(len(dims) + 1) for s in itertools.combinations(range(len(dims)), r)
    ]
    margins = []
    for lv in range(levels):
        for axes in subsets:
            roll = rng.random()
            if roll < 0.35:
                continue
            M = margin_matrix(parents, sizes, dims, lv, axes)
            truth = M @ x.reshape(-1)
            shape = (sizes[lv], *[dims[i] for i in axes])
            if roll < 0.45:
                margins.append(Margin(lv, axes, None, 1.0))
            elif roll < 0.55:
                margins.append(Margin(lv, axes, truth.reshape(shape), 0.0))
            else:
                v = float(rng.choice([0.5, 1.0, 3.0, 17.0]))
                noisy = truth + rng.normal(0, math.sqrt(v), truth.size)
                margins.append(Margin(lv, axes, noisy.reshape(shape), v))
    if not margins:
        margins.append(Margin(0, tuple(range(len(dims))), None, 1.0))
    return parents, sizes, dims, margins


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("variables", [None, 3])
def test_tree_passes_are_the_dense_least_squares_solution(seed, variables):
    parents, sizes, dims, margins = random_case(seed, variables)
    got = _marginals.solve(sizes, parents, dims, margins)
    want = dense(parents, sizes, dims, margins)
    for m, (est, var), (west, wvar, estimable) in zip(margins, got, want, strict=True):
        est = est.reshape(-1)
        ncell = math.prod(dims[i] for i in m.axes)
        var_cells = np.repeat(var, ncell)
        np.testing.assert_allclose(est, west, rtol=1e-9, atol=1e-8)
        assert (np.isfinite(var_cells) == estimable).all()
        np.testing.assert_allclose(var_cells[estimable], wvar[estimable], rtol=1e-9, atol=1e-9)
        if m.values is not None and m.variance == 0:
            np.testing.assert_allclose(est, np.asarray(m.values).reshape(-1), atol=1e-8)
            assert (var == 0).all()


def test_helmert_is_orthonormal_with_a_constant_first_row():
    for d in range(1, 8):
        q = _marginals.helmert(d)
        np.testing.assert_allclose(q @ q.T, np.eye(d), atol=1e-14)
        np.testing.assert_allclose(q[0], 1 / math.sqrt(d))


# ---- non-negative integers ----------------------------------------------------------------------


def totals_case(seed: int, nested: bool = False):
    """A random structure whose invariants are totals (a margin over no variable), or with
    ``nested`` margins over the first j variables (j random: they nest), at random levels,
    beside noisy margins (the detail always noisy)."""
    rng = np.random.default_rng(seed)
    levels = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 4 if nested else 3))))
    sizes, parents = structure(rng, levels, dims)
    C = math.prod(dims)
    x = rng.integers(0, 6, size=(sizes[0], C)).astype(float)
    everything = tuple(range(len(dims)))
    margins = []
    for lv in range(levels):
        prefix = tuple(range(int(rng.integers(0, len(dims) + 1)))) if nested else ()
        for axes in dict.fromkeys([prefix, (), everything]):
            M = margin_matrix(parents, sizes, dims, lv, axes)
            truth = M @ x.reshape(-1)
            shape = (sizes[lv], *[dims[i] for i in axes])
            if axes == prefix and rng.random() < 0.5:
                margins.append(Margin(lv, axes, truth.reshape(shape), 0.0))
            elif lv == 0 and axes == everything or rng.random() < 0.6:
                noisy = truth + rng.normal(0, 2.0, truth.size)
                margins.append(Margin(lv, axes, noisy.reshape(shape), 4.0))
    return parents, sizes, dims, margins, x


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("nested", [False, True])
def test_integers_are_non_negative_and_meet_every_invariant(seed, nested):
    parents, sizes, dims, margins, _ = totals_case(seed, nested)
    X = _marginals.integers(sizes, parents, dims, margins, seed=seed)
    assert X.dtype == np.int64 and X.shape == (sizes[0], math.prod(dims)) and X.min() >= 0
    for m in margins:
        if m.variance == 0:
            M = margin_matrix(parents, sizes, dims, m.level, m.axes)
            np.testing.assert_array_equal(M @ X.reshape(-1), np.asarray(m.values).reshape(-1))
    again = _marginals.integers(sizes, parents, dims, margins, seed=seed)
    np.testing.assert_array_equal(X, again)  # deterministic given the seed


def test_integers_of_noise_free_counts_are_the_counts():
    """Released without noise (but not as invariants), every margin consistent: the
    estimate is the truth, and the integers are it exactly, invariant totals or not."""
    rng = np.random.default_rng(3)
    sizes, parents = structure(rng, 3, (3, 2))
    x = rng.integers(0, 9, size=(sizes[0], 6)).astype(float)
    for invariant_level in (None, 0, 1, 2):
        margins = [Margin(0, (0, 1), x.reshape(sizes[0], 3, 2), 1.0)]
        for lv in range(3):
            M = margin_matrix(parents, sizes, (3, 2), lv, ())
            v = 0.0 if lv == invariant_level else 2.0
            margins.append(Margin(lv, (), M @ x.reshape(-1), v))
        X = _marginals.integers(sizes, parents, (3, 2), margins, seed=1)
        np.testing.assert_array_equal(X, x)


def test_integers_refuse_contradicting_invariants():
    rng = np.random.default_rng(4)
    sizes, parents = structure(rng, 2, (2,))
    x = rng.integers(0, 9, size=(sizes[0], 2)).astype(float)
    detail = Margin(0, (0,), x, 1.0)
    leaves = margin_matrix(parents, sizes, (2,), 0, ()) @ x.reshape(-1)
    tops = margin_matrix(parents, sizes, (2,), 1, ()) @ x.reshape(-1)
    wrong = tops.copy()
    wrong[0] += 1
    with pytest.raises(ValueError, match="do not add up"):
        _marginals.integers(
            sizes, parents, (2,), [detail, Margin(0, (), leaves, 0), Margin(1, (), wrong, 0)]
        )
    with pytest.raises(ValueError, match="not of integers"):
        _marginals.integers(sizes, parents, (2,), [detail, Margin(1, (), tops + 0.5, 0)])


def crossing_case(seed: int, count: int):
    """A random structure with ``count`` invariants over random subsets of the variables
    (so they often cross: age at one, sex at another) at random levels, all margins of one
    table of non-negative integers, beside the noisy detail and noisy totals."""
    rng = np.random.default_rng(seed)
    levels = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(2, 4, size=int(rng.integers(2, 4))))
    sizes, parents = structure(rng, levels, dims)
    x = rng.integers(0, 5, size=(sizes[0], math.prod(dims))).astype(float)

    def truth(lv, axes):
        M = margin_matrix(parents, sizes, dims, lv, axes)
        return (M @ x.reshape(-1)).reshape(sizes[lv], *[dims[i] for i in axes])

    everything = tuple(range(len(dims)))
    margins = [
        Margin(0, everything, truth(0, everything) + rng.normal(0, 2, (sizes[0], *dims)), 4.0)
    ]
    for lv in range(1, levels):
        margins.append(Margin(lv, (), truth(lv, ()) + rng.normal(0, 2, sizes[lv]), 4.0))
    for _ in range(count):
        lv = int(rng.integers(0, levels))
        axes = tuple(i for i in everything if rng.random() < 0.5)
        margins.append(Margin(lv, axes, truth(lv, axes), 0.0))
    return parents, sizes, dims, margins


def meets_every_invariant(X, parents, sizes, dims, margins) -> None:
    assert X.dtype == np.int64 and X.min() >= 0
    for m in margins:
        if m.variance == 0:
            M = margin_matrix(parents, sizes, dims, m.level, m.axes)
            np.testing.assert_array_equal(M @ X.reshape(-1), np.asarray(m.values).reshape(-1))


@pytest.mark.parametrize("seed", range(60))
def test_two_invariants_over_crossing_variables_are_met(seed):
    """Two invariants of one true table, whatever their levels and variables (region × age
    and town × sex, say): a non-negative integer table meeting both always exists, and
    integers() finds one."""
    parents, sizes, dims, margins = crossing_case(seed, 2)
    X = _marginals.integers(sizes, parents, dims, margins, seed=seed)
    meets_every_invariant(X, parents, sizes, dims, margins)
    np.testing.assert_array_equal(X, _marginals.integers(sizes, parents, dims, margins, seed=seed))


def test_more_crossing_invariants_are_met_or_named():
    """Three or four invariants of one true table over random variables: integers() meets
    them all, or says which it could not meet together (a table may not exist, and finding
    one is hard); it meets them in most cases."""
    met = 0
    for seed in range(80):
        parents, sizes, dims, margins = crossing_case(1000 + seed, 3 + seed % 2)
        try:
            X = _marginals.integers(sizes, parents, dims, margins, seed=seed)
        except ValueError as e:
            assert "no non-negative integer table was found that meets the invariants" in str(e)
            named = [f"margins[{i}]" for i, m in enumerate(margins) if m.variance == 0]
            assert sum(name in str(e) for name in named) >= 2
            continue
        meets_every_invariant(X, parents, sizes, dims, margins)
        met += 1
    assert met >= 60


def test_a_table_chosen_for_crossing_invariants_that_an_upper_one_contradicts_is_named():
    """Town × age and town × sex exact fix each town's age × sex table only up to a choice;
    a nation × age × sex invariant above fixes the sum of those choices, which the one made
    need not meet: the error names the three invariants."""
    rng = np.random.default_rng(5)
    sizes, parents = structure(rng, 2, (3, 2))

    def truth(lv, axes):
        M = margin_matrix(parents, sizes, (3, 2), lv, axes)
        return (M @ x.reshape(-1)).reshape(sizes[lv], *[(3, 2)[i] for i in axes])

    x = rng.integers(1, 4, size=(sizes[0], 6)).astype(float)  # every nation cell >= 1
    margins = [
        Margin(0, (0, 1), truth(0, (0, 1)), 1.0),
        Margin(0, (0,), truth(0, (0,)), 0.0),
        Margin(0, (1,), truth(0, (1,)), 0.0),
        Margin(1, (0, 1), truth(1, (0, 1)) + np.array([[1, -1], [-1, 1], [0, 0]]), 0.0),
    ]
    with pytest.raises(
        ValueError,
        match=r"no non-negative integer table was found that meets the invariants "
        r"margins\[1\], margins\[2\] and margins\[3\] together",
    ):
        _marginals.integers(sizes, parents, (3, 2), margins)


def test_the_running_sum_transforms_are_the_helmert_matrix_and_its_transpose():
    rng = np.random.default_rng(0)
    for d in (1, 2, 3, 7, 40):
        q = _marginals.helmert(d)
        arr = rng.normal(size=(3, d, 2))
        along = _marginals._helmert_along(arr, 1)
        np.testing.assert_allclose(along, np.einsum("kj,ajb->akb", q, arr), atol=1e-12)
        back = _marginals._helmert_back(arr, 1)
        np.testing.assert_allclose(back, np.einsum("kj,akb->ajb", q, arr), atol=1e-12)


@pytest.mark.parametrize("chunk", [1, 5, 13, 40])
def test_blocks_of_areas_change_nothing(monkeypatch, chunk):
    """The passes and the integers work a block of areas at a time (about _CHUNK values):
    cut into blocks of one area or a few, the estimates and variances are the same to the
    last bit, and the integers still meet every invariant (parents without children
    included: the structures leave some empty)."""
    cases = [totals_case(seed, nested=True) for seed in range(30)]
    cases += [(*crossing_case(seed, 2), None) for seed in range(30)]
    whole = [
        _marginals.solve(sizes, parents, dims, margins)
        for parents, sizes, dims, margins, _ in cases
    ]
    monkeypatch.setattr(_marginals, "_CHUNK", chunk)
    for (parents, sizes, dims, margins, _), before in zip(cases, whole, strict=True):
        for (est, var), (est0, var0) in zip(
            _marginals.solve(sizes, parents, dims, margins), before, strict=True
        ):
            np.testing.assert_array_equal(est, est0)
            np.testing.assert_array_equal(var, var0)
        X = _marginals.integers(sizes, parents, dims, margins, seed=3)
        assert X.shape == (sizes[0], math.prod(dims))
        meets_every_invariant(X, parents, sizes, dims, margins)
