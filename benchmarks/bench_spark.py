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

``--microdata ROWS`` runs instead benchmarks/microdata.py's release on Spark, by the public
API only, and times each step, Spark's start included in the total (goal at 10^7 rows: under
60 s on ``local[2]``)::

    timeout 900 python benchmarks/bench_spark.py --microdata 1e7

* the data, at rest in Parquet as an office's register would be: microdata.py's census
  register (8,000 municipalities of lognormal sizes in 100 provinces, 18 ages, 2 sexes, 1 to
  5 rows a person), made on the executors (``spark.range`` of the partition numbers, each task
  making its partition of ``--partition`` rows with ``microdata.partition`` in
  ``mapInArrow``, so the rows are the ones microdata.py makes in memory for the same
  ``--seed``) and written to ``--parquet DIR`` (default: a temporary directory) by a child
  process before the timed run, which starts its own JVM: writing the data is not timed, the
  session's start is;
* the load: ``spark.read.parquet``, then ``repartition("pid").cache()`` and ``count()``: every
  row of a person in one partition, once, so that each ``dgauss.tabulate`` finds the rows
  already partitioned on its person and Spark plans no second shuffle.  ``--shuffle-each``
  leaves that out (each table's job reads the Parquet and shuffles on the person itself);
* the release: ``microdata.release`` unchanged: ``dgauss.tabulate(df, ...)`` of the detail
  (municipality x age x sex), municipality and province tables with ``person="pid",
  max_rows=3`` (tallied on the executors), one ``dgauss.Accountant(epsilon=1,
  delta="1e-6")``, σ² from ``split(3, sensitivity=...)``, ``add_gaussian_noise(table, ...)``
  for each, ``dgauss.reconcile(...).integers()`` and ``report()`` on the driver (the tables
  are small).

``--source generate`` makes the rows on the executors inside the timed run instead of reading
them (each table's job makes them again; with ``--cache`` they are made once into Spark's
cache): the rows are made by Python code, several times slower than reading Parquet.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sigma2", type=int, default=100)
    parser.add_argument("--batch", type=int, default=10_000, help="Arrow records per batch")
    parser.add_argument("--microdata", type=float, default=0, metavar="ROWS")
    parser.add_argument("--partition", type=float, default=1e6, help="--microdata: rows a task")
    parser.add_argument("--max-rows", type=int, default=3, help="--microdata: rows a person")
    parser.add_argument("--epsilon", default="1", help="--microdata: the budget's ε")
    parser.add_argument("--delta", default="1e-6", help="--microdata: the budget's δ")
    parser.add_argument("--seed", type=int, default=2026, help="--microdata: data and bound")
    parser.add_argument("--simulate", action="store_true", help="--microdata: seeded noise")
    parser.add_argument(
        "--source",
        choices=["parquet", "generate"],
        default="parquet",
        help="--microdata: read the rows from Parquet (written first, untimed) or make them",
    )
    parser.add_argument("--parquet", metavar="DIR", help="--microdata: the Parquet data's home")
    parser.add_argument(
        "--shuffle-each",
        action="store_true",
        help="--microdata: no partitioning once on the person: each tabulate shuffles",
    )
    parser.add_argument(
        "--cache", action="store_true", help="--source generate: make the rows once, cache()"
    )
    parser.add_argument("--write-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.microdata, args.partition, args.rho = int(args.microdata), int(args.partition), None
    if args.microdata < 0 or args.partition < 1:
        parser.error("--microdata must be at least 0 and --partition at least 1")
    scratch = None
    if args.microdata and args.source == "parquet" and not args.write_only:
        if args.parquet is None:
            scratch = tempfile.TemporaryDirectory(prefix="bench-spark-")
            args.parquet = os.path.join(scratch.name, "register.parquet")
        if not os.path.exists(args.parquet):  # the data at rest, written by another JVM
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, *sys.argv, "--write-only", "--parquet", args.parquet], check=True
            )
            print(
                f"(the data written to {args.parquet} in {time.perf_counter() - t:.1f} s, untimed)"
            )

    start = time.perf_counter()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this Python, with dgauss
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import dgauss

    started = time.perf_counter() - start
    if args.microdata:
        microdata(spark, args, start, started)
        if scratch is not None:
            scratch.cleanup()
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
    print(f"ratio dgauss / spark: {best['dgauss'] / best['spark']:.2f} (goal: within 2)")
    print(f"noisy column's variance {var:.1f} (the counts' own is 833.25, plus σ² {args.sigma2})")
    spark.stop()


def _generate(per: int, seed: int, geo, rows: list[int], batches):
    """``mapInArrow``'s function: for each partition number ``i`` in the batches (the ids of
    ``spark.range``), the rows of ``microdata.partition(i, rows[i], per, seed, geo)``, made
    here on the executor and handed on as one Arrow batch."""
    import pyarrow as pa

    import microdata as md

    for batch in batches:
        for i in batch.column("id").to_pylist():
            frame = md.partition(i, rows[i], per, seed, geo)
            yield pa.RecordBatch.from_pandas(frame, preserve_index=False)


def microdata(spark, args, start: float, started: float) -> None:
    """benchmarks/microdata.py's release on Spark, timed from before the session's start:
    its census rows made on the executors, its three tables tabulated there by
    ``dgauss.tabulate``, the noise, reconciliation and report on the driver (the tables are
    small), each step by the public API."""
    from pathlib import Path

    from pyspark.sql import types as T

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    spark.sparkContext.addPyFile(str(here / "microdata.py"))  # the executors import it too
    import microdata as md

    n, per = args.microdata, args.partition
    rows = md.sizes(n, per)
    geo = md.Geography(args.seed)  # the public part: 8,000 sizes and provinces, nothing more
    schema = T.StructType(
        [
            T.StructField("pid", T.LongType()),
            T.StructField("municipality", T.ShortType()),
            T.StructField("province", T.ShortType()),
            T.StructField("age", T.ByteType()),
            T.StructField("sex", T.ByteType()),
        ]
    )
    ids = spark.range(0, len(rows), 1, len(rows))  # one task a partition of the data
    made = ids.mapInArrow(functools.partial(_generate, per, args.seed, geo, rows), schema)
    meter = md.Meter()
    if args.write_only:
        made.write.mode("overwrite").parquet(args.parquet)
        spark.stop()
        return
    if args.source == "generate":
        records = made.cache() if args.cache else made  # cached: made once, held columnar
        first = "generate into the cache" if args.cache else "generate the partitions (once)"
        meter.step(first, records.count)
    elif args.shuffle_each:
        records = spark.read.parquet(args.parquet)
        meter.step("read the Parquet (count)", records.count)
    else:
        # every row of a person in one partition, once: each tabulate's repartition on the
        # person is then satisfied already, and Spark plans no second shuffle
        records = spark.read.parquet(args.parquet).repartition("pid").cache()
        meter.step("read, partition on the person, cache", records.count)
    out = md.release(meter, records, geo, args)
    total = time.perf_counter() - start
    detail = out["tables"]["detail"]
    assert detail.values.sum() + detail.trimmed + detail.dropped == n
    steps = [name for name, *_ in meter.rows[1:]]  # the tables onwards
    release_s = sum(meter.seconds(s) for s in steps)
    print(
        f"microdata: {n:,} rows ({args.source}; made on the executors in {len(rows)} "
        f"partitions of at most {per:,}), local[2]; {detail.trimmed:,} rows cut by "
        f"max_rows={args.max_rows}"
    )
    print()
    print("| step | seconds |")
    print("|---|---:|")
    print(f"| Spark session start (JVM and imports) | {started:.2f} |")
    for name, seconds, *_ in meter.rows:
        print(f"| {name} | {seconds:.2f} |")
    print(f"| **release, steps 1–5** | **{release_s:.2f}** |")
    print(f"| **end to end, the session's start included** | **{total:.2f}** |")
    print()
    print(f"end to end: {total:.1f} s (goal at 10^7 rows: under 60 s)")
    print(f"σ² for each of the 3 releases: {out['sigma2']} ({float(out['sigma2']):.4g})")
    print(out["report"])
    spark.stop()


if __name__ == "__main__":
    main()
