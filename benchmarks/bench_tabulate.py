"""dgauss.tabulate on census-like microdata, against a plain pandas count.

Run from an installed dgauss (or ``PYTHONPATH=src``)::

    python benchmarks/bench_tabulate.py                 # 10^6 and 10^7 rows, a few minutes
    python benchmarks/bench_tabulate.py --rows 1e6      # one size

The records: municipality (8,000 values), age group (18), sex (2), all int64, and a person
id (a random int64) with 1 to 5 rows each, in random order; a tenth of a percent of the
rows fall outside the domain.  The domain is the 288,000 cells of the three keys.  For each
size, the least wall and CPU times of ``--repeats`` runs (taking turns) of:

* **pandas**: ``df.groupby(["municipality", "age", "sex"]).size()`` (no domain, no
  bounding: the baseline);
* **tabulate, no person**: ``dgauss.tabulate(df, by, keys)``;
* **tabulate, max_rows=m** for m in 1, 3: each person's rows bounded;
* **tabulate, max_groups=2, max_rows_per_group=1**;
* **tabulate, sum**: ``value="income", bounds=(0, 100000)``, max_rows=3.

It prints a Markdown table with the times and their ratios to pandas.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time

import numpy as np
import pandas as pd

import dgauss


def census(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=n)  # more people than needed; cut at n rows
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n)) + 1]
    pid = np.repeat(rng.integers(-(2**62), 2**62, size=len(sizes)), sizes)[:n]
    municipality = rng.integers(0, 8000, size=n)
    municipality[rng.random(n) < 0.001] = 9999  # outside the domain
    frame = pd.DataFrame(
        {
            "municipality": municipality,
            "age": rng.integers(0, 18, size=n),
            "sex": rng.integers(0, 2, size=n),
            "pid": pid,
            "income": rng.integers(0, 200_000, size=n),
        }
    )
    return frame.iloc[rng.permutation(n)].reset_index(drop=True)


def timed(f) -> tuple[float, float]:
    """f()'s wall time and the process's CPU time (each step is single-threaded: on an idle
    machine the two agree; on a shared one the CPU time is the steadier)."""
    wall, cpu = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, action="append", help="rows (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    by = ["municipality", "age", "sex"]
    keys = {"municipality": np.arange(8000), "age": np.arange(18), "sex": np.arange(2)}
    cases = {
        "tabulate, no person": {},
        "tabulate, max_rows=1": dict(person="pid", max_rows=1),
        "tabulate, max_rows=3": dict(person="pid", max_rows=3),
        "tabulate, max_groups=2, max_rows_per_group=1": dict(
            person="pid", max_groups=2, max_rows_per_group=1
        ),
        "tabulate, sum, max_rows=3": dict(
            person="pid", max_rows=3, value="income", bounds=(0, 100_000)
        ),
    }
    print("| rows | what | wall s | / pandas | CPU s | / pandas |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in [int(r) for r in args.rows or [1e6, 1e7]]:
        df = census(n)
        runs = {"pandas groupby(by).size()": lambda df=df: df.groupby(by).size()}
        for name, kw in cases.items():
            runs[name] = lambda df=df, kw=kw: dgauss.tabulate(df, by, keys, seed=1, **kw)
        best = {name: [float("inf")] * 2 for name in runs}
        for _ in range(args.repeats):  # taking turns, so that a busy spell hits every case
            for name, f in runs.items():
                best[name] = [min(a, b) for a, b in zip(best[name], timed(f), strict=True)]
        base = best["pandas groupby(by).size()"]
        for name, (wall, cpu) in best.items():
            print(
                f"| {n:.0e} | {name} | {wall:.3f} | {wall / base[0]:.2f} | {cpu:.3f} | "
                f"{cpu / base[1]:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
