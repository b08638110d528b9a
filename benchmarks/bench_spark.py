"""Exact noise on Spark against Spark's own floating-point noise, in one local session.

    python benchmarks/bench_spark.py [--rows 10000000] [--partitions 4] [--repeat 3]

Noises one long column of ``rows`` counts (``id % 100``) in a ``local[2]`` session:

* dgauss: ``dgauss.add_gaussian_noise(df, sigma2=σ², columns=["x"])``, which draws the exact
  discrete Gaussian on the executors (``mapInArrow``) and materialises the result once
  (``localCheckpoint(eager=True)``);
* Spark: ``x + round(randn() * σ)`` cast to long, materialised the same way (floating-point
  noise, not exact: the baseline a user would otherwise write).

Both take turns, best of ``--repeat``; the ratio is dgauss's time over Spark's.  Wall times
only: the work runs in the JVM and the Python workers, not in this process.  The session's
start is timed too.

``--microdata ROWS`` times instead the path from microdata to a release, Spark's start
included: ROWS synthetic records (people of about 3 rows, 50 towns x 10 ages, some keys
outside the domain) hash-partitioned on the person, each partition tallied on its executor by
the same rule as ``dgauss.tabulate`` on pandas (at most 2 rows a person), the partial tables
summed on the driver, and the table noised through a mechanism of the table's sensitivity.
(The pieces are called directly: ``dgauss.tabulate`` does not yet take a Spark DataFrame.)
"""

from __future__ import annotations

import argparse
import math
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sigma2", type=int, default=100)
    parser.add_argument("--batch", type=int, default=10_000, help="Arrow records per batch")
    parser.add_argument("--microdata", type=int, default=0, metavar="ROWS")
    args = parser.parse_args()

    start = time.perf_counter()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import dgauss

    started = time.perf_counter() - start
    if args.microdata:
        microdata(spark, args.microdata, start, started)
        return
    df = spark.range(0, args.rows, 1, args.partitions).select((F.col("id") % 100).alias("x"))
    sigma = math.sqrt(args.sigma2)

    def with_dgauss():
        return dgauss.add_gaussian_noise(df, sigma2=args.sigma2, columns=["x"])

    def with_spark():
        noised = F.col("x") + F.round(F.randn() * sigma).cast("long")
        return df.select(noised.alias("x")).localCheckpoint(eager=True)

    with_dgauss()  # the Python workers started and dgauss imported on them
    times: dict[str, list[float]] = {"dgauss": [], "spark": []}
    for _ in range(args.repeat):
        for name, run in (("dgauss", with_dgauss), ("spark", with_spark)):
            t = time.perf_counter()
            result = run()
            times[name].append(time.perf_counter() - t)
            result.unpersist()
    var = with_dgauss().select(F.variance("x")).first()[0]
    best = {name: min(ts) for name, ts in times.items()}
    print(f"rows {args.rows:,}, {args.partitions} partitions, local[2], batch {args.batch:,}")
    print(f"session start (JVM and imports): {started:.1f} s")
    for name, ts in times.items():
        shown = ", ".join(f"{t:.2f}" for t in ts)
        rate = args.rows / best[name] / 1e6
        print(f"{name:>7}: best {best[name]:.2f} s ({rate:.1f} M rows/s; runs {shown})")
    print(f"ratio dgauss / spark: {best['dgauss'] / best['spark']:.2f}")
    print(f"noisy column's variance {var:.1f} (the counts' own is 833.25, plus σ² {args.sigma2})")
    spark.stop()


def microdata(spark, rows: int, start: float, started: float) -> None:
    """Microdata to a noisy table, timed from before the session's start."""
    import functools

    from pyspark.sql import functions as F

    import dgauss
    from dgauss import _spark, _tabulate

    ids = F.col("id")
    records = spark.range(0, rows, 1, 4).select(
        ((ids * 2654435761) % max(1, rows // 3)).alias("pid"),
        ((ids * 7919) % 55).alias("town"),  # towns 50..54 are outside the domain
        ((ids * 104729) % 10).alias("age"),
    )
    keys = {"town": list(range(50)), "age": list(range(10))}
    spec = _tabulate._spec(("town", "age"), "pid", 2, None, None, None, None, None, 2026)
    domain = _tabulate._Domain(keys, spec.by)
    tally = functools.partial(_tabulate._partial, domain=domain, spec=spec)
    t = time.perf_counter()
    parts = _spark._tally(records, "pid", ["town", "age", "pid"], tally)
    sums, dropped, trimmed, kept = _tabulate._combine(parts, spec)
    table = _tabulate.Table(domain, spec, "spark", sums, dropped, trimmed)
    tallied = time.perf_counter() - t
    mech = dgauss.GaussianMechanism(sigma2=100, sensitivity=table.sensitivity)
    noisy = mech(table)
    total = time.perf_counter() - start
    print(f"microdata: {rows:,} records, 4 partitions, local[2]; {len(parts)} partial tables")
    print(f"session start (JVM and imports): {started:.1f} s")
    print(f"shuffle on person and tally: {tallied:.1f} s ({rows / tallied / 1e6:.2f} M rows/s)")
    print(f"end to end, the start included: {total:.1f} s")
    print(f"cells {len(noisy)}, kept {kept:,}, dropped {dropped:,}, trimmed {trimmed:,}")
    spark.stop()


if __name__ == "__main__":
    main()
