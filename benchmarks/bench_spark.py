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


if __name__ == "__main__":
    main()
