"""dgauss.reconcile on marginal tables of one detail, at the edges: invariants reproduced
exactly, key columns of every dtype, constant and one-to-one columns, a geography of one
level, tables repeated or in any order, shuffled rows on any index, huge values, integers
whose fit to two invariant margins converges slowly, and refusals that name the table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dgauss
from dgauss import _marginals
from test_marginals import dense
from test_reconcile_margins import AGES, PROVINCE_OF, TOWNS
from test_reconcile_margins import census as census_with_truth
from test_reconcile_margins import noisy as noisy_with

pd = pytest.importorskip("pandas")


def census(seed: int = 0):
    """The true detail (town × age × sex, with its province), town totals, province × age
    × sex and the nation: test_reconcile_margins's tables."""
    return census_with_truth(seed)[1]


def noisy(tables, variances, seed=1):
    """The tables with normal noise of each variance (None, 0: as they are)."""
    return noisy_with(tables, np.random.default_rng(seed), variances)


def dense_census(given, variances, parents, sizes, shapes):
    margins = [
        _marginals.Margin(
            level,
            axes,
            None if v is None else t["n"].to_numpy(dtype=float).reshape(shape),
            1.0 if v is None else float(v),
        )
        for (level, axes, shape), t, v in zip(shapes, given, variances, strict=True)
    ]
    return dense(parents, sizes, (AGES, 2), margins)


CENSUS_SHAPES = [
    (0, (0, 1), (TOWNS, AGES, 2)),
    (0, (), (TOWNS,)),
    (1, (0, 1), (3, AGES, 2)),
    (2, (), (1,)),
]


def assert_dense(r, want):
    for got, got_var, (west, wvar, estimable) in zip(r.estimates, r.variances, want, strict=True):
        np.testing.assert_allclose(got["n"].to_numpy(), west, atol=1e-8)
        var = got_var.to_numpy()
        assert (var >= 0).all()
        assert (np.isfinite(var) == estimable).all()
        np.testing.assert_allclose(var[estimable], wvar[estimable], rtol=1e-9, atol=1e-9)


# ---- invariants, exactly ------------------------------------------------------------------------


@pytest.mark.parametrize("variances", [[4.0, 0, 3.0, 0], [4.0, 2.0, 0, 1.0], [0, 2.0, 3.0, 1.0]])
def test_invariants_are_their_own_estimates_exactly(variances):
    """3 ages × 2 sexes: the basis scales by √6, which float64 does not undo exactly."""
    tables = census(2)
    r = dgauss.reconcile(noisy(tables, variances), noise=variances, value="n")
    for i, v in enumerate(variances):
        if v == 0:
            np.testing.assert_array_equal(r.estimates[i]["n"].to_numpy(), tables[i]["n"])
            assert (r.variances[i] == 0).all()
            np.testing.assert_array_equal(r.integers()[i]["n"].to_numpy(), tables[i]["n"])


# ---- key columns of every kind -------------------------------------------------------------------


RETYPE = {
    "ints": ("town", lambda s: int(s[1:])),
    "floats": ("town", lambda s: float(s[1:]) + 0.5),
    "booleans": ("sex", lambda s: s == "F"),
    "datetimes": ("age", lambda a: pd.Timestamp("2020-01-01") + pd.Timedelta(days=int(a))),
    "mixed objects": ("town", lambda s: 0 if s == "t0" else s),
}


@pytest.mark.parametrize("kind", [*RETYPE, "categoricals", "categorical detail only"])
def test_key_columns_of_every_dtype_give_the_same_estimates(kind):
    variances = [4.0, 2.0, 3.0, 0]
    given = noisy(census(), variances)
    want = dgauss.reconcile(given, noise=variances, value="n")
    if kind in RETYPE:
        col, f = RETYPE[kind]
        other = [t.assign(**{col: t[col].map(f)}) if col in t else t for t in given]
    else:
        last = len(given) if kind == "categoricals" else 1
        other = [
            t.assign(town=t["town"].astype("category")) if "town" in t and i < last else t
            for i, t in enumerate(given)
        ]
    r = dgauss.reconcile(other, noise=variances, value="n")
    for a, b in zip(r.estimates, want.estimates, strict=True):
        np.testing.assert_allclose(a["n"].to_numpy(), b["n"].to_numpy(), atol=1e-9)
    for a, b in zip(r.integers(3), want.integers(3), strict=True):
        np.testing.assert_array_equal(a["n"].to_numpy(), b["n"].to_numpy())


def test_a_constant_column_and_a_one_to_one_alias_change_nothing():
    variances = [4.0, 2.0, 3.0, 0]
    given = noisy(census(), variances)
    want = dgauss.reconcile(given, noise=variances, value="n").estimates
    detail, towns, provinces, nation = given
    name = {f"t{t}": f"Town {t}" for t in range(TOWNS)}
    variants = [
        [detail.assign(country="NL"), towns, provinces.assign(country="NL"), nation],
        [detail.assign(name=detail["town"].map(name)), towns, provinces, nation],
        # the towns by name only
        [
            detail.assign(name=detail["town"].map(name)),
            towns.assign(town=towns["town"].map(name)).rename(columns={"town": "name"}),
            provinces,
            nation,
        ],
    ]
    for tables in variants:
        got = dgauss.reconcile(tables, noise=variances, value="n").estimates
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a["n"].to_numpy(), b["n"].to_numpy(), atol=1e-9)


def test_a_geography_of_one_level_is_the_dense_solution():
    """Town without a province: town crosses age and sex, and the result is still the
    constrained least-squares solution (town totals, age × sex, the nation invariant)."""
    detail, towns, _, nation = census(4)
    ages = detail.groupby(["age", "sex"], as_index=False)["n"].sum()
    tables = [detail.drop(columns="province"), towns, ages, nation]
    variances = [4.0, 2.0, 3.0, 0]
    given = noisy(tables, variances)
    r = dgauss.reconcile(given, noise=variances, value="n")
    shapes = [
        (0, (0, 1), (TOWNS, AGES, 2)),
        (0, (), (TOWNS,)),
        (1, (0, 1), (1, AGES, 2)),
        (1, (), (1,)),
    ]
    assert_dense(r, dense_census(given, variances, [np.zeros(TOWNS, np.int64)], [TOWNS, 1], shapes))
    ints = r.integers()
    assert ints[3]["n"][0] == nation["n"][0]
    np.testing.assert_array_equal(
        ints[0].groupby("town")["n"].sum().to_numpy(), ints[1]["n"].to_numpy()
    )


# ---- tables: order, repeats, rows --------------------------------------------------------------


def test_tables_in_any_order_after_the_detail():
    variances = [4.0, 2.0, 3.0, 0]
    given = noisy(census(), variances)
    want = dgauss.reconcile(given, noise=variances, value="n").estimates
    for order in itertools.permutations([1, 2, 3]):
        tables = [given[0], *[given[i] for i in order]]
        noise = [variances[0], *[variances[i] for i in order]]
        got = dgauss.reconcile(tables, noise=noise, value="n").estimates
        for j, i in enumerate(order):
            np.testing.assert_allclose(got[j + 1]["n"], want[i]["n"], atol=1e-9)


def test_a_table_released_twice_is_its_mean_at_half_the_variance():
    variances = [4.0, 2.0, 3.0, 0]
    tables = census()
    given = noisy(tables, variances)
    again = noisy([tables[1]], [2.0], seed=9)[0]
    twice = dgauss.reconcile([*given, again], noise=[*variances, 2.0], value="n")
    mean = given[1].assign(n=(given[1]["n"] + again["n"]) / 2)
    once = dgauss.reconcile([given[0], mean, *given[2:]], noise=[4.0, 1.0, 3.0, 0], value="n")
    for a, b in zip(twice.estimates, once.estimates, strict=False):
        np.testing.assert_allclose(a["n"], b["n"], atol=1e-9)
    np.testing.assert_allclose(twice.estimates[4]["n"], once.estimates[1]["n"], atol=1e-9)
    np.testing.assert_allclose(twice.variances[1], once.variances[1], rtol=1e-12)


def test_shuffled_rows_on_any_index_keep_each_row_its_own_results():
    variances = [4.0, 0, 3.0, None]
    given = noisy(census(6), variances)
    plain = dgauss.reconcile(given, noise=variances, value="n")
    shuffled = []
    for t in given:
        t = t.sample(frac=1, random_state=3).reset_index(drop=True)
        t.index = pd.MultiIndex.from_arrays(
            [np.arange(len(t))[::-1], [f"r{i}" for i in range(len(t))]]
        )
        shuffled.append(t[t.columns[::-1]])
    mixed = dgauss.reconcile(shuffled, noise=variances, value="n")
    keyed = [[c for c in t.columns if c != "n"] for t in given]
    # the integers too: their tie order follows the keys, not the rows' order
    pairs = [
        *zip(plain.estimates, mixed.estimates, strict=True),
        *zip(plain.integers(2), mixed.integers(2), strict=True),
    ]
    for (a, b), keys in zip(pairs, keyed * 2, strict=True):
        if keys:
            merged = a.merge(b, on=keys)
            assert len(merged) == len(a)
            np.testing.assert_allclose(merged["n_x"], merged["n_y"], atol=1e-9)
        else:
            np.testing.assert_allclose(a["n"].to_numpy(), b["n"].to_numpy(), atol=1e-9)
    # each row's own variance and interval sit on the frame's index
    for est, var, (low, high) in zip(
        mixed.estimates, mixed.variances, mixed.interval(0.1), strict=True
    ):
        assert var.index.equals(est.index) and low.index.equals(est.index)
        np.testing.assert_allclose(high - low, 2 * 1.6448536269514722 * np.sqrt(var), rtol=1e-12)
    assert all(a.equals(b) for a, b in zip(mixed.integers(7), mixed.integers(7), strict=True))


# ---- mechanisms --------------------------------------------------------------------------------


def test_mechanisms_give_their_exact_variances():
    gauss = dgauss.GaussianMechanism(sigma2=3, k=3)
    laplace = dgauss.LaplaceMechanism(scale=2)
    tables = census(7)
    given = [
        tables[0].assign(n=gauss(tables[0]["n"].to_numpy())),
        tables[1].assign(n=laplace(tables[1]["n"].to_numpy())),
        tables[2],
        tables[3],
    ]
    noise = [gauss, laplace, None, 0]
    r = dgauss.reconcile(given, noise=noise, value="n")
    exact = [
        dgauss.accounting.gaussian_variance(gauss.sigma2),
        dgauss.accounting.laplace_variance(laplace.scale),
        None,
        0,
    ]
    assert_dense(
        r,
        dense_census(
            given,
            exact,
            [np.array(PROVINCE_OF), np.zeros(3, np.int64)],
            [TOWNS, 3, 1],
            CENSUS_SHAPES,
        ),
    )


# ---- numbers ------------------------------------------------------------------------------------


def test_integers_beyond_int64_are_refused_not_wrapped():
    """4,096 town totals of 2^52 − 1 (each allowed): their sum is 2^64, which int64
    would wrap (to 0) without a word."""
    towns = 4096
    detail = pd.DataFrame({"town": np.arange(towns), "province": np.arange(towns) // 2, "n": 0.0})
    totals = detail[["town"]].assign(n=2.0**52 - 1)
    nation = pd.DataFrame({"n": [0.0]})
    r = dgauss.reconcile([detail, totals, nation], noise=[None, 1.0, None], value="n")
    assert r.estimates[2]["n"][0] == pytest.approx(2.0**64, rel=1e-12)
    with pytest.raises(OverflowError, match=r"levels\[2\]"):
        r.integers()


@pytest.mark.parametrize("seed", [173, 178, 189])
def test_integers_meet_two_invariant_margins_far_from_the_estimate(seed):
    """Town totals and province × age × sex published exactly, the detail's noisy values
    negative wherever the truth is not 0: the margin fit converges slowly, and the integers
    must still meet both invariants (a table does: the truth)."""
    rng = np.random.default_rng(seed)
    scale = [1000, 10**6][seed % 2]
    truth = rng.integers(0, scale, size=(10, 6)) * (rng.random((10, 6)) < 0.3)
    rows = list(itertools.product(range(10), range(3), "FM"))
    detail = pd.DataFrame(
        {
            "town": [t for t, _, _ in rows],
            "age": [a for _, a, _ in rows],
            "sex": [s for _, _, s in rows],
        }
    )
    detail["province"] = detail["town"] // 5
    detail["n"] = truth.reshape(-1)
    towns = detail.groupby("town", as_index=False)["n"].sum()
    provinces = detail.groupby(["province", "age", "sex"], as_index=False)["n"].sum()
    values = np.where(truth.reshape(-1) > 0, -scale * 10, rng.integers(0, scale * 10, truth.size))
    r = dgauss.reconcile([detail.assign(n=values), towns, provinces], noise=[1.0, 0, 0], value="n")
    fine, by_town, by_province = r.integers()
    assert (fine["n"] >= 0).all()
    np.testing.assert_array_equal(by_town["n"], towns["n"])
    np.testing.assert_array_equal(by_province["n"], provinces["n"])
    np.testing.assert_array_equal(fine.groupby("town")["n"].sum(), towns["n"])


# ---- refusals, by name --------------------------------------------------------------------------


def test_refusals_name_the_table():
    variances = [4.0, 2.0, 3.0, 0]
    detail, towns, provinces, nation = census()
    cases = [
        ([detail.iloc[:0], nation], [1.0, 0], r"levels\[0\] is empty"),
        ([detail, towns.iloc[:0], nation], [1.0, 1.0, 0], r"levels\[1\]"),
        (
            [detail, towns.assign(town=[None, *towns["town"][1:]]), provinces, nation],
            variances,
            r"levels\[1\] has a missing key in column 'town' \(row 0\)",
        ),
        ([detail, towns.set_index("town"), provinces, nation], variances, r"levels\[1\]"),
    ]
    for tables, noise, match in cases:
        with pytest.raises(ValueError, match=match):
            dgauss.reconcile(tables, noise=noise, value="n")


def test_integers_name_the_tables_they_refuse():
    detail, towns, provinces, nation = census()
    half = detail.assign(n=detail["n"] + 0.5)  # an invariant detail that is not of integers
    r = dgauss.reconcile([half, towns, nation], noise=[0, 1.0, None], value="n")
    np.testing.assert_array_equal(r.estimates[0]["n"], half["n"])
    with pytest.raises(ValueError, match=r"levels\[0\] is an invariant that is not of integers"):
        r.integers()


def test_integers_meet_invariants_over_crossing_variables():
    """Province × age and town × sex both exact (and then the nation's age × sex too): the
    integers meet every one, in the tables returned and in the detail's own margins."""
    detail, *_ = census()
    exact = [
        detail.groupby(["province", "age"], as_index=False)["n"].sum(),
        detail.groupby(["town", "sex"], as_index=False)["n"].sum(),
        detail.groupby(["age", "sex"], as_index=False)["n"].sum(),
    ]
    for invariants in (exact[:2], exact):
        tables = [detail.assign(n=detail["n"] + 0.4), *invariants]
        r = dgauss.reconcile(tables, noise=[1.0] + [0] * len(invariants), value="n")
        got = r.integers()
        assert got[0]["n"].min() >= 0
        for table, mine in zip(invariants, got[1:], strict=True):
            keys = [c for c in table.columns if c != "n"]
            np.testing.assert_array_equal(mine["n"], table["n"])
            summed = got[0].groupby(keys, as_index=False)["n"].sum()
            merged = table.merge(summed, on=keys, suffixes=("", "_detail"))
            np.testing.assert_array_equal(merged["n"], merged["n_detail"])
