"""From microdata to a published release, step by step, timed beside a plain pandas count.

Run from an installed dgauss (or ``PYTHONPATH=src``), each under a time limit::

    timeout 600 python benchmarks/microdata.py                       # 10^6 rows, in memory
    timeout 600 python benchmarks/microdata.py --rows 1e7            # 10^7 rows, in memory
    timeout 900 python benchmarks/microdata.py --rows 1e7 --dask     # the same through Dask
    timeout 900 python benchmarks/microdata.py --tumult              # beside Tumult Analytics

**The data** (seeded NumPy, ``--seed``): a census-shaped register of ``--rows`` rows, one row
per (person, address or job).  8,000 municipalities with lognormal sizes (σ = 1.4 on the log
scale, so a few large towns and many small ones) in 100 provinces (the municipality →
province map is public: contiguous blocks of municipalities of random sizes); 18 age groups
and 2 sexes.  Each person has 1 to 5 rows (uniform); a person's age group and sex are the
same on all their rows, the municipality is the person's home on the first row and on each
other row the home with probability 3/4, else another municipality drawn by size, so a
person's rows can fall in several cells.  Columns: ``pid`` (int64), ``municipality`` and
``province`` (int16), ``age`` and ``sex`` (int8); the rows are in random order.  The data are
made in partitions of ``--partition`` rows (person ids never span two), so the Dask path can
make each partition where it is needed and 10^8 rows never sit in memory at once; in memory
the partitions are concatenated, so both paths see the same rows.

**The release** (the steps timed, in this order):

1. ``dgauss.tabulate`` of the detail table (municipality × age × sex: 288,000 cells), the
   municipality table (8,000) and the province table (100), each person's rows cut to
   ``--max-rows`` (default 3) by the same seed: each table's ``sensitivity`` is then
   ``Contributions(max_rows=3)``;
2. the budget: one ``dgauss.Accountant`` at (ε, δ) = (1, 10^-6) (``--epsilon``, ``--delta``;
   or ``--rho``), whose ``split(3, sensitivity=...)`` gives the σ² each of the three equal
   releases must use (calibrated by exact composition);
3. the noise: ``accountant.add_gaussian_noise(table, sigma2=σ²)`` for each table;
4. ``dgauss.reconcile`` of detail → municipality → province (the public parents, each level's
   exact noise variance) to non-negative integers that add up (``.integers()``);
5. ``accountant.report()``, the sentence to publish.

**Beside it**, on the same data in the same run, the baseline: ``df.groupby(["municipality",
"age", "sex"]).size()`` (pandas; with ``--dask`` the same on the Dask DataFrame, computed),
which counts the rows that occur with no domain and no bounding.  Reported: each step's
seconds (wall clock and the process's CPU time), the detail tabulate over the baseline in CPU
time, the best of ``--repeats`` runs in turns (goal: within 3×; CPU time, because the
machine's other jobs move the wall clock by tens of percent), the release end to end (steps
1–5, wall clock; goal at 10^7 rows: under 30 s), and the memory (goal: the release's peak under
three times the input's size).

**Memory** is the resident set (RSS) from ``/proc/self/status``: VmHWM, the kernel's peak,
reset before each step by writing 5 to ``/proc/self/clear_refs`` (Linux ≥ 4.0).  RSS counts
every allocation, NumPy's buffers, pandas' hash tables and GMP's limbs alike, and costs
nothing while the step runs; ``tracemalloc`` sees only what passes through Python's allocator
hooks and slows an allocating run, so it was not used.  The input's size is
``df.memory_usage(deep=True).sum()``.  A step's peak is reported above the RSS at the
release's start (the data and the interpreter already in it): the extra memory the step
needs; the release's peak is the largest of them.  Where VmHWM cannot be reset, the script
says so and reports ``resource.getrusage``'s ru_maxrss (never reset) instead.

With ``--dask`` every step reads a Dask DataFrame made by ``dask.dataframe.from_map`` (one
partition generated per task, the threaded scheduler): ``tabulate`` shuffles on ``pid`` and
tabulates each partition, so each table's time includes generating the partitions once more
(timed alone in the first row).  Noise and reconciliation run in memory (the tables are
small).

``--tumult`` runs the three bounded counts through Tumult Analytics on the same rows, if
``tmlt.analytics`` imports, else it says so and skips them (Tumult pins PySpark < 3.6,
pandas < 2 and NumPy < 2 on Python 3.11 and needs Java 17, so it goes in a virtualenv of its
own, dgauss there by ``PYTHONPATH=src``).  Run with tmlt.analytics 0.21.0 (Tumult Core
0.19.1), PySpark 3.5.9, OpenJDK 17.0.15 and CPython 3.11.7, Spark ``local[2]``.  Each table
is one ``Session.evaluate`` of ``enforce(MaxRowsPerID(3)).groupby(keyset).count()``: the
KeySet is the same domain, the protected change ``AddRowsWithID("pid")`` (add or remove one person's
rows: dgauss's neighbours), the session's budget ``RhoZCDPBudget(ρ)`` with ρ the zCDP that
(ε, δ) allows by Corollary 13 (0.024356 at (1, 10^-6)), each table ``ρ/3`` (rounded down).
Where the two differ:

* **accounting**: Tumult composes in zCDP and takes a person's ℓ2 sensitivity as the rows it
  keeps, Δ = 3 (all three may fall in one cell), so each table's discrete Gaussian has
  σ² = Δ²/(2ρ/3) = 554.28; (ε, δ) follows only by the conversion.  dgauss calibrates σ² by
  exact composition of the three releases at (ε, δ), at the worst of the vectors (3),
  (2, 1), (1, 1, 1): σ² = 481.9, so Tumult's noise has 15 % more variance at the same budget.
* **bounding**: both keep min(rows, 3) of each person's rows (the same number: 800,189 of
  10^6); Tumult keeps those with the smallest Spark hash of the row's values (unseeded),
  dgauss those its seeded choice picks, so the bounded tables differ a little cell by cell.
* **the release**: Tumult's three tables are independent queries, not reconciled (they do not
  add up, counts can be negative); step 4 has no counterpart.  Its noise is drawn one value
  at a time in Python (Tumult Core's ``sample_dgauss`` over ``Fraction``, bits from RDRAND
  here, else ``os.urandom``) in a pandas UDF, at σ² rounded up to a float.

Untimed, the script then prints each Tumult table's cells, σ² (``Session._noise_info``) and
the noise it drew (released minus the counts of Tumult's own ``truncate_large_groups`` on
``pid``).  At 10^6 rows the noise drawn had variance 0.998, 0.968 and 1.02 × σ² (288,000,
8,000 and 100 cells) and mean 0.03, 0.07 and 1.3.  Tumult took 360 s, 52 s and 29 s for the
three tables (441 s; 450 s with the DataFrame and the Session), dgauss 0.68 s for steps 1-3
(644×; 0.88 s for steps 1-5), the time mostly Tumult's noise per cell; the CPU seconds shown
are the driver's only (Spark's JVM and Python workers are not counted).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import re
import resource
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

import dgauss
from dgauss import accounting

MUNICIPALITIES = 8000
PROVINCES = 100
AGES = 18
SEXES = 2
BY = ["municipality", "age", "sex"]
COLUMNS = {
    "pid": np.int64,
    "municipality": np.int16,
    "province": np.int16,
    "age": np.int8,
    "sex": np.int8,
}


# ---- the data --------------------------------------------------------------------------


class Geography:
    """The public part: each municipality's share of the people (lognormal sizes) and its
    province.  Provinces are contiguous blocks of municipalities, each of at least one."""

    def __init__(self, seed: int):
        rng = np.random.default_rng([seed, 0])
        sizes = rng.lognormal(mean=0.0, sigma=1.4, size=MUNICIPALITIES)
        self.cdf = np.cumsum(sizes / sizes.sum())
        self.cdf[-1] = 1.0
        counts = 1 + rng.multinomial(MUNICIPALITIES - PROVINCES, np.full(PROVINCES, 1 / PROVINCES))
        self.province_of = np.repeat(np.arange(PROVINCES, dtype=np.int16), counts)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` municipalities drawn in proportion to their sizes."""
        return np.searchsorted(self.cdf, rng.random(n), side="right").astype(np.int16)

    def keys(self) -> dict[str, dict[str, np.ndarray]]:
        """The three tables' public domains (dicts: the Cartesian product of the columns)."""
        m = np.arange(MUNICIPALITIES, dtype=np.int16)
        return {
            "detail": {
                "municipality": m,
                "age": np.arange(AGES, dtype=np.int8),
                "sex": np.arange(SEXES, dtype=np.int8),
            },
            "municipality": {"municipality": m},
            "province": {"province": np.arange(PROVINCES, dtype=np.int16)},
        }

    def parents(self) -> list[np.ndarray]:
        """reconcile's parents: a detail cell's municipality (the product is in C order:
        ``municipality * 36 + age * 2 + sex``), a municipality's province."""
        detail = np.repeat(np.arange(MUNICIPALITIES), AGES * SEXES)
        return [detail, self.province_of.astype(np.int64)]


def partition(i: int, rows: int, per: int, seed: int, geo: Geography) -> pd.DataFrame:
    """Partition ``i``: ``rows`` (at most ``per``) rows of people whose ids are in
    [i * per, (i + 1) * per)."""
    rng = np.random.default_rng([seed, 1, i])
    each = rng.integers(1, 6, size=rows)  # rows of each person: more people than needed
    people = int(np.searchsorted(np.cumsum(each), rows)) + 1
    each = each[:people]
    first = np.zeros(people, dtype=np.int64)
    np.cumsum(each[:-1], out=first[1:])
    person = np.repeat(np.arange(people), each)[:rows]
    home = geo.draw(rng, people)[person]
    other = geo.draw(rng, rows)
    moved = (rng.random(rows) < 0.25) & (np.arange(rows) != first[person])
    municipality = np.where(moved, other, home)
    frame = pd.DataFrame(
        {
            "pid": person + np.int64(i) * per,
            "municipality": municipality,
            "province": geo.province_of[municipality],
            "age": rng.integers(0, AGES, size=people, dtype=np.int8)[person],
            "sex": rng.integers(0, SEXES, size=people, dtype=np.int8)[person],
        }
    )
    return frame.iloc[rng.permutation(rows)].reset_index(drop=True)


def sizes(n: int, per: int) -> list[int]:
    """The partitions' row counts: ``per`` each, the last one the rest."""
    full, rest = divmod(n, per)
    return [per] * full + ([rest] if rest else [])


def microdata(n: int, per: int, seed: int, geo: Geography) -> pd.DataFrame:
    """The whole register in memory: the partitions, concatenated."""
    parts = [partition(i, r, per, seed, geo) for i, r in enumerate(sizes(n, per))]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def dask_microdata(n: int, per: int, seed: int, geo: Geography):
    """The same register as a Dask DataFrame, each partition made by its own task."""
    import dask.dataframe as dd

    meta = pd.DataFrame({c: np.array([], dtype=t) for c, t in COLUMNS.items()})
    rows = sizes(n, per)
    return dd.from_map(
        lambda i: partition(i, rows[i], per, seed, geo),
        range(len(rows)),
        meta=meta,
        divisions=[None] * (len(rows) + 1),
        enforce_metadata=False,
    )


# ---- measuring -------------------------------------------------------------------------


def _status(field: str) -> int:
    """A field of /proc/self/status in bytes (0 where there is none)."""
    try:
        with open("/proc/self/status") as f:
            found = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return 0
    return int(found.group(1)) * 1024 if found else 0


def _reset_peak() -> bool:
    """Reset the kernel's peak RSS (VmHWM) to the current RSS; False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


class Meter:
    """Each step's wall time and its peak RSS above the RSS at ``start()``."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, int | None, int | None]] = []
        self.base = 0
        self.resettable = _reset_peak()

    def start(self) -> None:
        self.base = _status("VmRSS")

    def step(self, name: str, f: Callable[[], Any]) -> Any:
        if self.resettable:
            _reset_peak()
        before = _status("VmRSS")
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        hwm = _status("VmHWM") if self.resettable else None
        own = hwm - before if hwm is not None else None
        self.rows.append((name, seconds, cpu, own, hwm - self.base if hwm is not None else None))
        return out

    def seconds(self, name: str, cpu: bool = False) -> float:
        return sum(c if cpu else s for n, s, c, _, _ in self.rows if n == name)


def mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


# ---- the release -----------------------------------------------------------------------


def release(meter: Meter, records, geo: Geography, args) -> dict[str, Any]:
    """Steps 1-5 on ``records`` (a pandas or Dask DataFrame), timed by ``meter``."""
    keys = geo.keys()
    bounded = dict(person="pid", max_rows=args.max_rows, seed=args.seed)
    tables = {
        name: meter.step(
            f"tabulate {name}",
            lambda name=name: dgauss.tabulate(records, list(keys[name]), keys[name], **bounded),
        )
        for name in ("detail", "municipality", "province")
    }
    if args.rho is not None:
        acc = dgauss.Accountant(rho=args.rho)
    else:
        acc = dgauss.Accountant(epsilon=args.epsilon, delta=args.delta)
    sensitivity = tables["detail"].sensitivity
    sigma2 = meter.step("calibrate σ²", lambda: acc.split(3, sensitivity=sensitivity))
    rng = np.random.default_rng([args.seed, 2]) if args.simulate else None
    noisy = meter.step(
        "noise 3 tables",
        lambda: [acc.add_gaussian_noise(t, sigma2=sigma2, rng=rng) for t in tables.values()],
    )
    variance = accounting.gaussian_variance(sigma2)
    released = meter.step(
        "reconcile to integers",
        lambda: dgauss.reconcile(
            [frame["count"].to_numpy() for frame in noisy],
            geo.parents(),
            noise=[variance] * 3,
        ).integers(),
    )
    report = meter.step("report", acc.report)
    parents = geo.parents()
    for level in range(2):
        summed = np.bincount(parents[level], released[level], minlength=len(released[level + 1]))
        assert (summed == released[level + 1]).all(), "reconciled tables do not add up"
    assert all((r >= 0).all() for r in released)
    return {"tables": tables, "sigma2": sigma2, "released": released, "report": report}


def baseline(records, dask: bool):
    """The plain count of the detail table's rows that occur (no domain, no bounding)."""
    counted = records.groupby(BY).size()
    return counted.compute() if dask else counted


# ---- Tumult Analytics ------------------------------------------------------------------


def tumult(meter: Meter, frame: pd.DataFrame, geo: Geography, args) -> bool:
    """The three bounded counts through Tumult Analytics at ρ split in three; False (and a
    note) when ``tmlt.analytics`` does not import.

    Each table is one ``Session.evaluate`` of ``QueryBuilder(...).enforce(MaxRowsPerID(m))
    .groupby(keyset).count()`` at ``RhoZCDPBudget(ρ/3)`` (rounded down) on the register as a
    Spark DataFrame (``local[2]``), the session's protected change ``AddRowsWithID("pid")``;
    timed: the evaluation and ``toPandas()``.  Untimed, afterwards: each table's shape and
    keys against the domain, Tumult's noise (``Session._noise_info``) and the noise it drew,
    measured against the counts Tumult bounds (its own ``truncate_large_groups`` on ``pid``,
    counted in pandas).
    """
    try:
        from importlib.metadata import version

        import pyspark
        from pyspark.sql import SparkSession
        from tmlt.analytics.constraints import MaxRowsPerID
        from tmlt.analytics.keyset import KeySet
        from tmlt.analytics.privacy_budget import RhoZCDPBudget
        from tmlt.analytics.protected_change import AddRowsWithID
        from tmlt.analytics.query_builder import QueryBuilder
        from tmlt.analytics.session import Session
        from tmlt.core.utils.truncation import truncate_large_groups
    except ImportError as exc:
        print(f"\n--tumult: skipped, tmlt.analytics does not import ({exc})")
        return False
    # the Python workers run PYSPARK_PYTHON (default "python3", which need not see tmlt):
    # this interpreter, unless set; read when the SparkContext starts (not on the imports)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # the zCDP ρ that (ε, δ) allows (Corollary 13, rounded down): Tumult accounts in zCDP
    exact = (
        Fraction(args.rho)
        if args.rho is not None
        else Fraction(accounting.cdp_rho(Fraction(args.epsilon), Fraction(args.delta)))
    )
    rho = float(exact)
    if Fraction(rho) > exact:
        rho = math.nextafter(rho, 0.0)
    third = math.nextafter(rho / 3, 0.0)  # three of them never add up past rho
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    sdf = meter.step("tumult: to Spark", lambda: spark.createDataFrame(frame.astype(np.int64)))
    session = meter.step(
        "tumult: Session",
        lambda: Session.from_dataframe(
            privacy_budget=RhoZCDPBudget(rho),
            source_id="register",
            dataframe=sdf,
            protected_change=AddRowsWithID(id_column="pid"),
        ),
    )
    domains = geo.keys()
    results, noise = {}, {}
    for name, domain in domains.items():
        keyset = KeySet.from_dict({c: [int(v) for v in vs] for c, vs in domain.items()})
        query = (
            QueryBuilder("register").enforce(MaxRowsPerID(args.max_rows)).groupby(keyset).count()
        )
        noise[name] = session._noise_info(query, RhoZCDPBudget(third))
        results[name] = meter.step(
            f"tumult: {name}",
            lambda query=query: session.evaluate(query, RhoZCDPBudget(third)).toPandas(),
        )

    # untimed: what Tumult released, beside the counts it bounded
    kept = truncate_large_groups(sdf, ["pid"], args.max_rows).toPandas()
    print(
        f"\nTumult Analytics {version('tmlt.analytics')} (Tumult Core {version('tmlt.core')}), "
        f"PySpark {pyspark.__version__} (local[2]); zCDP budget ρ = {rho!r}, each "
        f"table at ρ/3 = {third!r}; MaxRowsPerID({args.max_rows}) kept {len(kept):,} rows"
    )
    print()
    print(
        "| Tumult table | cells (domain) | noise | σ² | mean of the noise drawn "
        "| its variance | / σ² |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, domain in domains.items():
        got = results[name]
        columns = list(domain)
        levels = [np.asarray(v, dtype=np.int64) for v in domain.values()]
        index = (
            pd.MultiIndex.from_product(levels, names=columns)
            if len(levels) > 1
            else pd.Index(levels[0], name=columns[0])
        )
        truth = kept.groupby(columns).size().reindex(index, fill_value=0)
        released = got.set_index(columns)["count"]
        assert len(got) == len(index) and released.index.is_unique, f"{name}: not the domain"
        drawn = (released.reindex(index) - truth).to_numpy(dtype=np.float64)
        assert not np.isnan(drawn).any(), f"{name}: cells outside the domain"
        (info,) = noise[name]
        sigma2 = info["noise_parameter"]
        print(
            f"| {name} | {len(got):,} | {info['noise_mechanism'].name} | {sigma2:.6g} | "
            f"{drawn.mean():.3f} | {drawn.var():.5g} | {drawn.var() / sigma2:.4f} |"
        )
    ours = sum(meter.seconds(f"tabulate {name}") for name in domains)
    ours += meter.seconds("calibrate σ²") + meter.seconds("noise 3 tables")
    tables = sum(meter.seconds(f"tumult: {name}") for name in domains)
    whole = tables + meter.seconds("tumult: to Spark") + meter.seconds("tumult: Session")
    print(
        f"\nTumult, the three tables: {tables:.2f} s ({whole:.2f} s with the DataFrame and the "
        f"Session); dgauss, steps 1-3 (tabulate, calibrate, noise): {ours:.2f} s; "
        f"Tumult / dgauss: {tables / ours:.1f} ({whole / ours:.1f})"
    )
    return True


# ---- the report ------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e6, help="rows of microdata (1e6)")
    parser.add_argument("--max-rows", type=int, default=3, help="rows kept per person (3)")
    parser.add_argument("--epsilon", default="1", help="the budget's ε (default 1)")
    parser.add_argument("--delta", default="1e-6", help="the budget's δ (default 1e-6)")
    parser.add_argument("--rho", default=None, help="a zCDP budget ρ instead of (ε, δ)")
    parser.add_argument("--seed", type=int, default=2026, help="the data's and the bound's seed")
    parser.add_argument(
        "--partition", type=float, default=1e6, help="rows per partition of the data (1e6)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="time the baseline and the detail tabulate this many times, in turns, for the "
        "ratio (the best of each; default 1: the release's own run)",
    )
    parser.add_argument("--dask", action="store_true", help="the same through Dask")
    parser.add_argument("--tumult", action="store_true", help="beside Tumult Analytics")
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="seeded NumPy noise (a simulation) instead of the OS's random bits",
    )
    args = parser.parse_args(argv)
    n, per = int(args.rows), int(args.partition)
    if n < 1 or per < 1 or args.repeats < 1:
        parser.error("--rows, --partition and --repeats must be at least 1")
    if args.dask and args.tumult:
        parser.error("--tumult reads the data in memory: run it without --dask")

    geo = Geography(args.seed)
    meter = Meter()
    start = time.perf_counter()
    if args.dask:
        records = dask_microdata(n, per, args.seed, geo)
        size = n * sum(np.dtype(t).itemsize for t in COLUMNS.values())
        size_note = "in memory it would be"
        meter.start()
        meter.step("generate the partitions (once)", lambda: records.map_partitions(len).compute())
    else:
        records = microdata(n, per, args.seed, geo)
        size = int(records.memory_usage(deep=True).sum())
        size_note = "memory_usage(deep=True)"
        meter.start()
    made = time.perf_counter() - start
    counted = meter.step("baseline: groupby(by).size()", lambda: baseline(records, args.dask))
    out = release(meter, records, geo, args)
    # the ratio: the baseline and the detail tabulate again, in turns, the best of each
    keys = geo.keys()["detail"]
    bounded = dict(person="pid", max_rows=args.max_rows, seed=args.seed)
    best = {"baseline": meter.seconds("baseline: groupby(by).size()", cpu=True)}
    best["detail"] = meter.seconds("tabulate detail", cpu=True)
    for _ in range(args.repeats - 1):
        for name, f in (
            ("baseline", lambda: baseline(records, args.dask)),
            ("detail", lambda: dgauss.tabulate(records, BY, keys, **bounded)),
        ):
            c0 = time.process_time()
            f()
            best[name] = min(best[name], time.process_time() - c0)
    if args.tumult:
        tumult(meter, records, geo, args)

    detail = out["tables"]["detail"]
    # the bounded table counts at most the rows the plain count does, cell by cell
    plain = counted.reindex(
        pd.MultiIndex.from_product([range(MUNICIPALITIES), range(AGES), range(SEXES)]), fill_value=0
    ).to_numpy()
    assert (detail.values <= plain).all() and detail.values.sum() == n - detail.trimmed

    steps = [
        name for name, _, _, _, _ in meter.rows if not name.startswith(("baseline", "generate"))
    ]
    steps = [s for s in steps if not s.startswith("tumult")]
    total = sum(meter.seconds(s) for s in steps)
    cpu_total = sum(meter.seconds(s, cpu=True) for s in steps)
    base = meter.seconds("baseline: groupby(by).size()")
    peaks = [p for name, _, _, _, p in meter.rows if name in steps and p is not None]
    where = "Dask (threaded scheduler)" if args.dask else "in memory (pandas)"
    print(
        f"{n:,} rows, {where}; "
        f"{detail.values.sum() + detail.trimmed:,} rows in the domain, {detail.trimmed:,} "
        f"cut by max_rows={args.max_rows}; data made in {made:.1f} s; input {mib(size)} "
        f"({size_note}); RSS at the release's start {mib(meter.base)}"
    )
    print()
    print(
        "| step | seconds | CPU seconds | / baseline (wall) | peak RSS above the step's start "
        "| above the release's |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, seconds, cpu, own, peak in meter.rows:
        shown = " | ".join(mib(b) if b is not None else "n/a" for b in (own, peak))
        print(f"| {name} | {seconds:.3f} | {cpu:.3f} | {seconds / base:.2f} | {shown} |")
    print(
        f"| **release, steps 1–5** | **{total:.2f}** | {cpu_total:.2f} | {total / base:.2f} | "
        f" | {mib(max(peaks)) if peaks else 'n/a'} |"
    )
    print()
    ratio = best["detail"] / best["baseline"]
    print(
        f"tabulate detail (bounded) / groupby: {ratio:.2f} (goal: within 3; CPU seconds, the "
        f"best of {args.repeats} in turns: {best['detail']:.3f} s / {best['baseline']:.3f} s)"
    )
    print(f"release end to end: {total:.2f} s (goal at 10^7 rows: under 30 s)")
    if peaks:
        print(
            f"release's peak RSS above its start: {mib(max(peaks))} = {max(peaks) / size:.2f} × "
            f"the input's {mib(size)} (goal: under 3; RSS by VmHWM, reset before each step)"
        )
    else:
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(
            f"peak RSS (ru_maxrss, whole process, never reset: data generation included): "
            f"{mib(maxrss)}; input {mib(size)}"
        )
    print(f"σ² for each of the 3 releases: {out['sigma2']} ({float(out['sigma2']):.4g})")
    print(out["report"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
