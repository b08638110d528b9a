"""dgauss.reconcile on marginal tables of one detail table (pandas): the structure read from
the key columns (geography nested, the other keys crossed), estimates that add up in every
table and reproduce the invariants, the dense least-squares solution's values and variances,
integers, the input's row order kept, and each kind of bad input refused by name."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dgauss
from dgauss import _marginals
from test_marginals import dense

pd = pytest.importorskip("pandas")

TOWNS, PROVINCE_OF = 6, [0, 0, 1, 1, 1, 2]
AGES, SEXES = 3, 2


def census(seed: int = 0):
    """The detail (town × age × sex, with its province), the town totals, province × age ×
    sex and the nation's total, each true, and the dense solver's structure."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 30, size=(TOWNS, AGES, SEXES))
    rows = list(itertools.product(range(TOWNS), range(AGES), "FM"))
    detail = pd.DataFrame(
        {
            "town": [f"t{t}" for t, _, _ in rows],
            "province": [f"p{PROVINCE_OF[t]}" for t, _, _ in rows],
            "age": [a for _, a, _ in rows],
            "sex": [s for _, _, s in rows],
            "n": x.reshape(-1),
        }
    )
    towns = detail.groupby("town", as_index=False)["n"].sum()
    provinces = detail.groupby(["province", "age", "sex"], as_index=False)["n"].sum()
    nation = pd.DataFrame({"n": [int(x.sum())]})
    return x, [detail, towns, provinces, nation]


def noisy(tables, rng, variances):
    out = []
    for t, v in zip(tables, variances, strict=True):
        t = t.copy()
        if v not in (None, 0):
            t["n"] = t["n"] + rng.normal(0, math.sqrt(v), len(t))
        out.append(t)
    return out


def sums(frame, by):
    return frame.groupby(by)["n"].sum().to_numpy()


@pytest.mark.parametrize(
    "variances",
    [[4.0, 2.0, 9.0, 0], [None, 3.0, 1.0, 5.0], [4.0, None, 2.0, 0], [1.0, 1.0, None, None]],
)
def test_estimates_add_up_reproduce_invariants_and_are_the_dense_solution(variances):
    rng = np.random.default_rng(1)
    x, tables = census()
    given = noisy(tables, rng, variances)
    r = dgauss.reconcile(given, noise=variances, value="n")
    detail, towns, provinces, nation = r.estimates
    # every table is a margin of the detail estimate
    np.testing.assert_allclose(sums(detail, "town"), towns["n"], atol=1e-8)
    np.testing.assert_allclose(sums(detail, ["province", "age", "sex"]), provinces["n"], atol=1e-8)
    np.testing.assert_allclose(detail["n"].sum(), nation["n"][0], atol=1e-8)
    if variances[3] == 0:
        assert nation["n"][0] == pytest.approx(x.sum(), abs=1e-8)
        assert r.variances[3].iloc[0] == 0
    # the dense constrained least-squares solution, written in test_marginals
    parents = [np.array(PROVINCE_OF), np.zeros(3, dtype=np.int64)]
    shapes = [
        (0, (0, 1), (TOWNS, AGES, SEXES)),
        (0, (), (TOWNS,)),
        (1, (0, 1), (3, AGES, SEXES)),
        (2, (), (1,)),
    ]
    margins = [
        _marginals.Margin(
            level, axes, None if v is None else _arr(t, shape), 1.0 if v is None else float(v)
        )
        for (level, axes, shape), t, v in zip(shapes, given, variances, strict=True)
    ]
    want = dense(parents, [TOWNS, 3, 1], (AGES, SEXES), margins)
    for got, got_var, (west, wvar, estimable) in zip(r.estimates, r.variances, want, strict=True):
        np.testing.assert_allclose(got["n"].to_numpy(), west, atol=1e-8)
        var = got_var.to_numpy()
        assert (np.isfinite(var) == estimable).all()
        np.testing.assert_allclose(var[estimable], wvar[estimable], rtol=1e-9, atol=1e-9)


def _arr(frame, shape):
    return frame["n"].to_numpy(dtype=float).reshape(shape)


def test_integers_add_up_in_every_table_and_keep_the_invariants():
    rng = np.random.default_rng(2)
    x, tables = census(3)
    towns_exact = tables[1]["n"].to_numpy()
    variances = [6.0, 0, 4.0, 0]  # town totals and the nation's published exactly
    r = dgauss.reconcile(noisy(tables, rng, variances), noise=variances, value="n")
    detail, towns, provinces, nation = r.integers(seed=5)
    for t in (detail, towns, provinces, nation):
        assert t["n"].dtype == np.int64 and (t["n"] >= 0).all()
    np.testing.assert_array_equal(sums(detail, "town"), towns["n"])
    np.testing.assert_array_equal(sums(detail, ["province", "age", "sex"]), provinces["n"])
    assert detail["n"].sum() == nation["n"][0] == x.sum()
    np.testing.assert_array_equal(towns["n"].to_numpy(), towns_exact)
    again = r.integers(seed=5)
    assert all(a.equals(b) for a, b in zip(again, [detail, towns, provinces, nation], strict=True))


def test_rows_in_any_order_give_each_row_its_own_estimate():
    rng = np.random.default_rng(4)
    _, tables = census(5)
    variances = [4.0, 2.0, 3.0, 0]
    given = noisy(tables, rng, variances)
    plain = dgauss.reconcile(given, noise=variances, value="n").estimates
    shuffled = [t.sample(frac=1, random_state=7) for t in given]
    mixed = dgauss.reconcile(shuffled, noise=variances, value="n").estimates
    for a, b in zip(plain, mixed, strict=True):
        pd.testing.assert_frame_equal(a.loc[b.index], b, atol=1e-9)


def _bad(mutate, variances=(4.0, 2.0, 3.0, 1.0)):
    _, tables = census()
    tables = [t.copy() for t in tables]
    variances = list(variances)
    mutate(tables, variances)
    return lambda: dgauss.reconcile(tables, noise=variances, value="n")


BAD = {
    "a key the detail lacks": (
        lambda t, v: t.__setitem__(2, t[2].assign(region="r")),
        r"levels\[2\] has the key column\(s\) \['region'\]",
    ),
    "geography that does not nest": (
        lambda t, v: t.__setitem__(
            0, t[0].assign(district=[f"d{(i // 6) % 4}" for i in range(len(t[0]))])
        ),
        "neither cross",
    ),
    "a missing row": (
        lambda t, v: t.__setitem__(1, t[1].iloc[1:]),
        r"levels\[1\] has 5 rows, but .* make 6",
    ),
    "a row twice": (
        lambda t, v: t.__setitem__(1, t[1].iloc[[0, 0, 2, 3, 4, 5]]),
        r"levels\[1\] has two rows with the same keys",
    ),
    "a key the detail has not": (
        lambda t, v: t[1].__setitem__("town", ["t0", "t1", "t2", "t3", "t4", "t9"]),
        r"levels\[1\] has the key 't9'",
    ),
    "a province that does not hold its town": (
        lambda t, v: t.__setitem__(1, t[1].assign(province=["p1", "p0", "p1", "p1", "p1", "p2"])),
        r"levels\[1\] row 0: province = 'p1' does not hold town = 't0'",
    ),
    "invariants that disagree": (
        lambda t, v: (
            v.__setitem__(1, 0),
            v.__setitem__(3, 0),
            t[3].__setitem__("n", t[3]["n"] + 1),
        ),
        r"the invariants levels\[1\] and levels\[3\] disagree",
    ),
    "a negative variance": (lambda t, v: v.__setitem__(2, -1.0), r"noise\[2\]"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_structures_are_refused_naming_the_table(case):
    mutate, match = BAD[case]
    with pytest.raises(ValueError, match=match):
        _bad(mutate)()


def test_integer_area_totals_stay_near_their_estimates():
    """A province's cells are split among its towns only after the towns' totals are
    split from the province's: a small town's negative cells clamped to 0 must not pull
    the mass out of its neighbours' totals (each town's integer total within 1 of its
    estimate, clamped at 0, here)."""
    towns_of = {"big": ("p", 100), "tiny": ("p", 0), "other": ("q", 50)}
    rows = list(itertools.product(list(towns_of), range(18), "FM"))
    detail = pd.DataFrame(
        {
            "town": [t for t, _, _ in rows],
            "province": [towns_of[t][0] for t, _, _ in rows],
            "age": [a for _, a, _ in rows],
            "sex": [s for _, _, s in rows],
            "n": [towns_of[t][1] for t, _, _ in rows],
        }
    )
    towns = detail.groupby("town", as_index=False)["n"].sum()
    provinces = detail.groupby(["province", "age", "sex"], as_index=False)["n"].sum()
    rng, variances = np.random.default_rng(0), [36.0, 1.0, 1.0]
    given = noisy([detail, towns, provinces], rng, variances)
    r = dgauss.reconcile(given, noise=variances, value="n")
    estimate = np.maximum(r.estimates[1]["n"].to_numpy(), 0)
    for seed in range(4):
        ints = r.integers(seed=seed)[1]["n"].to_numpy()
        assert np.abs(ints - estimate).max() <= 1


def test_keys_left_in_the_index_are_pointed_out():
    """A group-by's result without as_index=False holds its keys in the index: whichever
    error that causes says so, naming the table, on both the marginal and the chain path."""
    _, (detail, towns, provinces, nation) = census()
    by = ["province", "age", "sex"]
    cases = [
        ([detail, towns, provinces.set_index(by)], "levels[2]", ["province", "age", "sex"]),
        ([detail, towns.set_index("town"), provinces], "levels[1]", ["town"]),
        ([detail.set_index(["town", "age", "sex"]), towns, provinces], "levels[0]", None),
        ([detail, towns.set_index("town"), nation], "levels[1]", ["town"]),  # a chain
    ]
    for tables, name, held in cases:
        with pytest.raises(ValueError) as caught:
            dgauss.reconcile(tables, noise=[1.0] * len(tables), value="n")
        message = str(caught.value)
        assert f"{name}'s index holds" in message and ".reset_index()" in message
        if held is not None:
            assert str(held) in message
    # no hint where the index holds no names (the default RangeIndex, or any unnamed one)
    shuffled = towns.sample(frac=1, random_state=0)
    with pytest.raises(ValueError) as caught:
        dgauss.reconcile([detail, shuffled.iloc[1:], nation], noise=[1.0] * 3, value="n")
    assert "index holds" not in str(caught.value)
