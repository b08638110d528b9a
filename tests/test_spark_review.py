"""dgauss on Spark, for inputs the main Spark tests do not name: streaming DataFrames, column
names Spark would parse (dots, backticks, duplicates), the errors of a tabulation raised as
the pandas path raises them, timestamp keys in a session time zone other than UTC, and
columns of every kind passed through untouched.  Every tabulation is compared with
``dgauss.tabulate`` on ``df.toPandas()``.  The session is conftest.py's (one for the run)."""

from __future__ import annotations

import datetime
import functools
import shutil
from decimal import Decimal

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'dgauss[spark]'")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow: pip install 'dgauss[spark]'")
if shutil.which("java") is None:
    pytest.skip("the Spark tests need Java (no `java` on PATH)", allow_module_level=True)

import pandas as pd  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import dgauss  # noqa: E402

pytestmark = [
    pytest.mark.long,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]


def jobs_run(spark, group: str, call) -> list:
    """The Spark jobs ``call()`` runs (in a job group of its own), and what it raised."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "counted")
    try:
        call()
    except Exception as error:  # noqa: BLE001 - returned for the caller to check
        raised = error
    else:
        raised = None
    finally:
        sc.setJobGroup("dgauss-other", "")
    return [list(sc.statusTracker().getJobIdsForGroup(group)), raised]


def table_of(records, by, keys, **kwargs):
    """``dgauss.tabulate``'s values, dropped and trimmed, or the type and message it raised."""
    try:
        t = dgauss.tabulate(records, by, keys, **kwargs)
    except (TypeError, ValueError) as error:
        return type(error), str(error)
    return t.values.tolist(), t.dropped, t.trimmed


def same_as_pandas(df, by, keys, **kwargs):
    """The table of the Spark DataFrame ``df`` is the pandas one of ``df.toPandas()``."""
    want = table_of(df.toPandas(), by, keys, **kwargs)
    got = table_of(df, by, keys, **kwargs)
    assert got == want
    return got


# ---- privacy: refused before counting, no job ------------------------------------------------


def test_streaming_and_unnoisable_columns_are_refused_before_counting_and_any_job(spark):
    """A streaming DataFrame cannot be materialised once (it has no end): refused before the
    release is counted, as is every column that holds no counts, and no job runs."""
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    sigma2 = acc.calibrate_gaussian()
    ledger = acc.to_json()
    stream = spark.readStream.format("rate").load()  # timestamp, value (bigint)
    rich = spark.createDataFrame(
        [(1, Decimal(2), True, {"a": 1}, (1, "x"))],
        "n long, d decimal(10,0), b boolean, m map<string,int>, s struct<i:int,t:string>",
    )
    cases = [
        (stream, {"columns": ["value"]}, TypeError, "streaming"),
        (rich, {"columns": ["d"]}, TypeError, "decimal"),
        (rich, {"columns": ["b"]}, TypeError, "boolean"),
        (rich, {"columns": ["m"]}, TypeError, "map"),
        (rich, {"columns": ["s.i"]}, ValueError, "not a column"),  # a field is not a column
        (rich, {"columns": ["n"], "sensitivity": 0}, ValueError, "sensitivity"),
        (rich, {"columns": ["n"], "granularity": -1}, ValueError, "granularity"),
    ]
    for i, (df, kwargs, error, message) in enumerate(cases):
        jobs, raised = jobs_run(
            spark,
            f"dgauss-refused-{i}",
            functools.partial(acc.add_gaussian_noise, df, sigma2=sigma2, **kwargs),
        )
        assert isinstance(raised, error) and message in str(raised), (kwargs, raised)
        assert jobs == [], kwargs
        assert acc.to_json() == ledger, kwargs  # nothing counted
    jobs, raised = jobs_run(
        spark, "dgauss-refused-tabulate", lambda: dgauss.tabulate(stream, "value", {"value": [1]})
    )
    assert isinstance(raised, TypeError) and "streaming" in str(raised)
    assert jobs == []


# ---- noise: names Spark would parse, every other column untouched ------------------------------


def test_names_with_dots_backticks_and_duplicates_are_noised_as_named(spark):
    """Column names are names, never parsed: a dot is not a struct field, a backtick not a
    quote, and a name two other columns share does not stop the noising of a third."""
    n = 300
    base = spark.range(0, n, 1, 2).select(
        F.col("id"),
        (F.col("id") % 7).alias("c1"),
        (F.col("id") % 5).cast("int").alias("c2"),
        F.lit("k").alias("k1"),
        F.lit("q").alias("k2"),
        F.create_map(F.lit("a"), F.col("id")).alias("m"),
        F.struct(F.col("id").alias("i")).alias("s"),
        F.array(F.col("id")).alias("arr"),
        F.col("id").cast("decimal(20,0)").alias("dec"),
        F.timestamp_seconds(F.col("id")).alias("ts"),
    )
    names = ["id", "a.b", "c`d e", "k", "k", "m", "s", "arr", "dec", "ts"]
    df = base.toDF(*names)
    noisy = dgauss.add_gaussian_noise(df, sigma2=4, columns=["a.b", "c`d e"])
    assert noisy.columns == names
    assert [f.dataType for f in noisy.schema.fields[1:3]] == [T.LongType(), T.LongType()]
    assert noisy.schema.fields[3:] == df.schema.fields[3:]
    got = sorted(noisy.collect(), key=lambda r: r[0])
    want = sorted(df.collect(), key=lambda r: r[0])
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0] and tuple(g[3:]) == tuple(w[3:])  # untouched, nested ones too
    for j in (1, 2):
        noise = np.array([g[j] - w[j] for g, w in zip(got, want, strict=True)])
        assert (noise != 0).any() and np.abs(noise).max() < 40  # N_Z(0, 4)
    # drawn once: the result read again, through its RDD, gives the same values
    assert sorted(tuple(r) for r in noisy.rdd.collect()) == sorted(tuple(g) for g in got)


def test_a_dataframe_of_no_partitions_is_noised_and_tabulated(spark):
    empty = spark.createDataFrame(spark.sparkContext.emptyRDD(), "k string, pid long, n long")
    assert empty.rdd.getNumPartitions() == 0
    noisy = dgauss.add_gaussian_noise(empty, sigma2=4, columns=["n"])
    assert noisy.collect() == [] and noisy.schema["n"].dataType == T.LongType()
    t = dgauss.tabulate(empty, "k", {"k": ["a", "b"]}, person="pid", max_rows=1)
    assert (t.values.tolist(), t.dropped, t.trimmed) == ([0, 0], 0, 0)


# ---- tabulate: the pandas table, or the pandas error ---------------------------------------------


def test_errors_in_the_tally_are_the_pandas_ones(spark):
    """A value the tally refuses (a null, a type the domain does not hold) raises the
    pandas path's TypeError or ValueError, naming the argument, not Spark's wrapper."""
    bounded = {"person": "pid", "max_rows": 1, "seed": 3}
    cases = [  # (each row a person but where the person is the point: no shuffle)
        ("k string", [("a",), (None,)], {"k": ["a"]}, {}),
        ("k int", [(1,), (None,)], {"k": [1]}, {}),
        ("k int", [(1,)], {"k": ["1"]}, {}),  # the domain holds strings
        ("k decimal(5,1)", [(Decimal("1.5"),)], {"k": [1.5]}, {}),
        (
            "k string, v long",
            [("a", 2), ("a", None)],
            {"k": ["a"]},
            {"value": "v", "bounds": (0, 5)},
        ),
        ("k string, pid long", [("a", 1), ("a", None)], {"k": ["a"]}, bounded),
        ("k string, pid boolean", [("a", True)], {"k": ["a"]}, bounded),
    ]
    for schema, rows, keys, kwargs in cases:
        got = same_as_pandas(spark.createDataFrame(rows, schema), "k", keys, **kwargs)
        assert got[0] in (TypeError, ValueError), (schema, got)


def test_timestamp_keys_in_another_session_time_zone(spark):
    """A timestamp key is read as the session's wall-clock time, as ``show`` and ``toPandas``
    give it (instants in UTC are 5 hours ahead of New York's clocks in winter, 4 in
    summer)."""
    conf = spark.conf
    zone = conf.get("spark.sql.session.timeZone")
    conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        utc = datetime.timezone.utc
        stamps = [(2024, 1, 1, 5), (2024, 1, 2, 0), (2024, 7, 1, 23)]  # instants, in UTC
        df = spark.createDataFrame(
            [(datetime.datetime(*t, tzinfo=utc), i) for i, t in enumerate(stamps)],
            "k timestamp, pid long",
        )
        local = ["2024-01-01T00", "2024-01-01T19", "2024-07-01T19"]  # New York's clocks
        keys = {"k": np.array(local, "datetime64[us]")}
        got = same_as_pandas(df, "k", keys, person="pid", max_rows=1, seed=1)
        assert got == ([1, 1, 1], 0, 0)
    finally:
        conf.set("spark.sql.session.timeZone", zone)


def test_names_spark_would_parse_are_tabulated_as_named(spark):
    rows = [(i % 4, f"t{i % 3}", float(i % 5) / 2) for i in range(60)]
    df = spark.createDataFrame(rows, "a long, b string, c double").toDF("p.id", "to`wn", "pay $")
    keys = {"to`wn": ["t0", "t1", "t2"]}
    bounded = {"person": "p.id", "max_rows": 2, "seed": 5}
    got = same_as_pandas(df, "to`wn", keys, **bounded)
    assert sum(got[0]) == 8 and got[2] > 0
    got = same_as_pandas(
        df, "to`wn", keys, value="pay $", bounds=(0, 2), granularity="0.5", **bounded
    )
    assert got[2] > 0
    # a name that two columns share is refused, naming the argument (pandas: likewise)
    dup = df.toDF("k", "k", "v")
    for args in (("k", {"k": [0, 1]}, {}), ("v", {"v": [0.0]}, {"person": "k", "max_rows": 1})):
        got = same_as_pandas(dup, args[0], args[1], **args[2])
        assert got[0] is ValueError and "several columns" in got[1]


def test_kinds_of_keys_and_people_are_the_pandas_table(spark):
    """String, float, boolean and small-int keys; float person ids (0.0 and -0.0 one
    person), one person of many rows, empty partitions, every bound, a float and a Decimal
    value on a lattice: the same table as pandas."""
    rng = np.random.default_rng(4)
    n = 600
    pid = rng.integers(0, 40, n).astype(float)
    pid[:150] = 7.0  # one person of 150+ rows
    pid[150:160] = -0.0
    pid[160:170] = 0.0
    frame = pd.DataFrame(
        {
            "pid": pid,
            "town": rng.choice(["a", "b", "c", "zz"], n),
            "x": rng.choice([0.5, 1.0, 2.0], n),
            "flag": rng.integers(0, 2, n).astype(bool),
            "age": rng.integers(0, 4, n).astype(np.int8),
            "pay": np.round(rng.uniform(-3, 9, n), 2),
            "cents": [Decimal(int(v)) / 4 for v in rng.integers(-40, 400, n)],
        }
    )
    df = spark.createDataFrame(frame).repartition(8)  # more partitions than the data fill
    by = ["town", "x", "flag", "age"]
    keys = {"town": ["a", "b", "c"], "x": [0.5, 1, 2], "flag": [False, True], "age": [0, 1, 2]}
    bound = {"person": "pid", "max_groups": 3, "max_rows_per_group": 2, "max_rows": 5, "seed": 9}
    got = same_as_pandas(df, by, keys, **bound)
    assert got[1] > 0 and got[2] > 0
    one = df.coalesce(1)
    for value in ("pay", "cents"):
        got = same_as_pandas(one, by, keys, value=value, bounds=(-2, 6), granularity="1/4", **bound)
        assert got[2] > 0
