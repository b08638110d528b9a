"""dgauss on Spark DataFrames: exact noise drawn on the executors (mapInArrow), one release
counted for the whole DataFrame before any job, and drawn once (a read never re-draws), on a
real local SparkSession (local[2]: the ``spark`` fixture of conftest.py, started once
for the test run)."""

from __future__ import annotations

import shutil
from fractions import Fraction

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
import dgauss.accounting  # noqa: E402
import dgauss.spark  # noqa: E402
from _stats import ALPHA, chi2_gof  # noqa: E402
from dgauss.mechanisms import PrivacyBudgetError  # noqa: E402

INT64_MAX = (1 << 63) - 1

#: Every test here is ``long`` (the quick check leaves them to ``--after-quick``: a Spark
#: session takes 20 s to start); and PySpark's own warnings about pandas are not dgauss's.
pytestmark = [
    pytest.mark.long,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
    pytest.mark.filterwarnings("ignore:toPandas attempted Arrow optimization"),  # lost blocks
]


def counts_frame(spark, n: int = 400, partitions: int = 2):
    """id (long, 0..n-1), n (int, id % 10), m (short, id % 3), s (string, "r<id>"): n rows
    in ``partitions`` partitions (no job runs to make it)."""
    ids = F.col("id")
    return spark.range(0, n, 1, partitions).select(
        ids,
        (ids % 10).cast("int").alias("n"),
        (ids % 3).cast("short").alias("m"),
        F.concat(F.lit("r"), ids.cast("string")).alias("s"),
    )


def zeros(spark, n: int, partitions: int):
    """``n`` zero counts (long) in ``partitions`` partitions, in order (spark.range splits)."""
    return spark.range(0, n, 1, partitions).select(F.lit(0).cast("long").alias("x"))


def per_partition(df, column: str) -> list[np.ndarray]:
    """``column`` of each partition of ``df``, in its order within the partition."""
    got = df.select(F.spark_partition_id().alias("p"), column).toPandas()
    return [got[column][got["p"] == p].to_numpy() for p in range(df.rdd.getNumPartitions())]


def child_rng(seed: np.random.SeedSequence, i: int) -> np.random.Generator:
    """Partition i's generator as docs/spark.md states it: child i of a fresh copy of seed."""
    fresh = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)
    return np.random.Generator(np.random.PCG64(fresh.spawn(i + 1)[i]))


# ---- values, dtypes, columns ---------------------------------------------------------------


def test_chosen_columns_noised_into_int64_the_others_untouched(spark):
    df = counts_frame(spark)
    noisy = dgauss.add_gaussian_noise(df, sigma2=4, columns=["n", "m"])
    assert [(f.name, f.dataType) for f in noisy.schema.fields] == [
        ("id", T.LongType()),
        ("n", T.LongType()),
        ("m", T.LongType()),
        ("s", T.StringType()),
    ]
    got = noisy.toPandas()
    ids = np.arange(400)
    np.testing.assert_array_equal(got["id"].to_numpy(), ids)
    assert got["s"].tolist() == [f"r{i}" for i in ids]
    for c, true in (("n", ids % 10), ("m", ids % 3)):
        noise = got[c].to_numpy() - true
        assert got[c].dtype == np.int64
        assert (noise != 0).any() and np.abs(noise).max() < 40  # N_Z(0, 4): |x| < 20σ
        assert abs(noise.mean()) < 1 and 2 < noise.var() < 6


def test_reads_give_the_same_values_and_lost_blocks_fail(spark):
    """Counted once, drawn once: the result read twice is the same; with its kept blocks
    dropped, a read fails (never fresh noise)."""
    noisy = dgauss.add_gaussian_noise(zeros(spark, 2000, 2), sigma2=100)
    first = noisy.toPandas()["x"].to_numpy()
    np.testing.assert_array_equal(noisy.toPandas()["x"].to_numpy(), first)
    assert noisy.agg(F.sum("x")).first()[0] == first.sum()  # an aggregate reads the same noise
    kept = spark.sparkContext._jsc.getPersistentRDDs()
    assert len(kept) >= 1
    for rdd in list(kept.values()):
        rdd.unpersist(True)
    try:
        again = noisy.toPandas()["x"].to_numpy()
    except Exception as error:  # Spark's: the checkpointed block is gone
        assert "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in str(error) or "not found" in str(error)
    else:
        np.testing.assert_array_equal(again, first)


@pytest.mark.long
def test_laplace_mechanism_and_granularity(spark):
    df = spark.createDataFrame(
        pd.DataFrame({"a": np.arange(300) % 5, "w": (np.arange(300) % 4) * 0.5}),
        "a long, w double",
    )
    mech = dgauss.LaplaceMechanism(scale=2, k=1)
    lap = mech(df, columns=["a"]).toPandas()
    assert lap["a"].dtype == np.int64 and (lap["a"] != np.arange(300) % 5).any()
    np.testing.assert_array_equal(lap["w"].to_numpy(), (np.arange(300) % 4) * 0.5)
    half = dgauss.spark.add_laplace_noise(df, scale=2, granularity=0.5, columns=["w"])
    assert half.schema["w"].dataType == T.DoubleType()
    w = half.toPandas()["w"].to_numpy()
    assert (w * 2 == np.round(w * 2)).all() and (w != (np.arange(300) % 4) * 0.5).any()
    with pytest.raises(PrivacyBudgetError):  # k=1: the one release was the whole DataFrame
        mech(df, columns=["a"])


# ---- errors: nothing counted, no job run -----------------------------------------------------


def test_bad_input_is_refused_before_counting_and_the_accountant_counts_once(spark):
    df = counts_frame(spark)
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    sigma2 = acc.calibrate_gaussian()  # the whole budget for one release
    bad = [
        ({}, TypeError, "column 's' holds string"),  # default: every column
        ({"columns": ["nope"]}, ValueError, "columns= names 'nope'"),
        ({"columns": []}, ValueError, "at least one column"),
        ({"columns": ["s"]}, TypeError, "not integer counts"),
        ({"columns": ["n"], "rng": np.random.default_rng(1)}, TypeError, "rng must be"),
        ({"columns": ["n"], "out": np.zeros(3)}, TypeError, "out="),
        ({"columns": ["n"], "overflow": "object"}, ValueError, "overflow='object'"),
        ({"columns": ["n"], "workers": 2}, ValueError, "workers"),
        ({"columns": ["n"], "clip": (5, 1)}, ValueError, "clip"),
    ]
    group = "dgauss-refused"
    spark.sparkContext.setJobGroup(group, "no job may run")
    try:
        for kwargs, error, message in bad:
            with pytest.raises(error, match=message):
                acc.add_gaussian_noise(df, sigma2=sigma2, **kwargs)
        floats = spark.createDataFrame(pd.DataFrame({"f": [0.5]}), "f double")
        with pytest.raises(TypeError, match="granularity"):
            acc.add_gaussian_noise(floats, sigma2=sigma2)
        assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        spark.sparkContext.setJobGroup("other", "")
    noisy = acc.add_gaussian_noise(df, sigma2=sigma2, columns=["n"])  # nothing was spent
    assert noisy.count() == 400
    spark.sparkContext.setJobGroup(group, "no job may run")
    try:  # one release spent the budget (once, for the whole DataFrame): refused, no job
        with pytest.raises(PrivacyBudgetError):
            acc.add_gaussian_noise(df, sigma2=sigma2, columns=["n"])
        assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        spark.sparkContext.setJobGroup("other", "")


def test_dgauss_spark_refuses_other_values():
    with pytest.raises(TypeError, match="Spark DataFrames"):
        dgauss.spark.add_gaussian_noise(np.arange(3), sigma2=1)


@pytest.mark.long
def test_values_are_checked_in_the_job(spark):
    """A null, or a sum beyond int64, raises in the job (the release was counted)."""
    nulls = spark.createDataFrame([(1,), (None,)], "x long")
    with pytest.raises(Exception, match="missing value"):
        dgauss.add_gaussian_noise(nulls, sigma2=4)
    top = spark.createDataFrame([(INT64_MAX,)] * 2000, "x long")
    with pytest.raises(Exception, match="OverflowError"):
        dgauss.add_gaussian_noise(top, sigma2=100)


# ---- randomness ------------------------------------------------------------------------------


@pytest.mark.long
def test_os_noise_differs_between_partitions_and_between_calls(spark):
    df = zeros(spark, 4000, 4)
    parts = per_partition(dgauss.add_gaussian_noise(df, sigma2=2**20), "x")
    assert [p.size for p in parts] == [1000] * 4
    assert len({p.tobytes() for p in parts}) == 4  # no two partitions share bits
    again = per_partition(dgauss.add_gaussian_noise(df, sigma2=2**20), "x")
    assert not any(np.array_equal(a, b) for a in parts for b in again)


def test_seeded_partition_i_draws_from_child_i_run_to_run(spark):
    seed = np.random.SeedSequence(2026)
    for partitions in (1, 4):
        df = zeros(spark, 4000, partitions)
        first = per_partition(dgauss.add_gaussian_noise(df, sigma2=9, rng=seed), "x")
        second = per_partition(dgauss.add_gaussian_noise(df, sigma2=9, rng=seed), "x")
        for i, (a, b) in enumerate(zip(first, second, strict=True)):
            np.testing.assert_array_equal(a, b)
            expected = dgauss.add_gaussian_noise(
                np.zeros(a.size, dtype=np.int64), sigma2=9, rng=child_rng(seed, i)
            )
            np.testing.assert_array_equal(a, expected)
    other = per_partition(dgauss.add_gaussian_noise(zeros(spark, 4000, 4), sigma2=9, rng=7), "x")
    assert len({p.tobytes() for p in other}) == 4  # distinct children: no shared bits


# ---- reconcile on collected tables ------------------------------------------------------------


@pytest.mark.long
def test_reconcile_on_collected_noisy_tables(spark):
    cells = pd.DataFrame({"region": ["a", "a", "b", "b"], "town": [1, 2, 3, 4], "count": 5})
    regions = cells.groupby("region", as_index=False)["count"].sum()
    mech = dgauss.GaussianMechanism(sigma2=4, k=2)
    noisy = [
        mech(spark.createDataFrame(frame), columns=["count"]).toPandas()
        for frame in (cells, regions)
    ]
    r = dgauss.reconcile(noisy, noise=[mech, mech], value="count")
    fine, coarse = r.estimates
    assert np.isclose(fine.groupby("region")["count"].sum().to_numpy(), coarse["count"]).all()
    uncollected = spark.createDataFrame(noisy[1])  # not collected: said so, with the remedy
    with pytest.raises(TypeError, match=r"levels\[1\] is a Spark DataFrame.*toPandas"):
        dgauss.reconcile([noisy[0], uncollected], noise=[mech, mech], value="count")


# ---- exactness ---------------------------------------------------------------------------------


@pytest.mark.long
def test_a_million_draws_follow_the_exact_pmf(spark):
    sigma2 = Fraction(4)
    noisy = dgauss.add_gaussian_noise(zeros(spark, 10**6, 4), sigma2=sigma2)
    samples = noisy.toPandas()["x"].to_numpy()
    assert samples.size == 10**6
    pmf = {x: dgauss.accounting.gaussian_pmf(x, sigma2) for x in range(-40, 41)}
    _, _, p = chi2_gof(samples, pmf)
    assert p > ALPHA


# ---- tallies of microdata (the pieces of dgauss.tabulate on Spark) ------------------------------


@pytest.mark.long
@pytest.mark.parametrize("value", [None, "pay"])
def test_tally_on_spark_is_the_pandas_table(spark, value):
    """Hash-partitioned on the person, each partition tallied by tabulate's own per-batch
    rule, the partial tables summed: the same table as dgauss.tabulate on pandas, rows
    dropped and trimmed alike (people of more rows than max_rows, keys outside the domain)."""

    rng = np.random.default_rng(11)
    n = 5000
    records = pd.DataFrame(
        {
            "pid": rng.integers(0, 600, n),
            "town": rng.choice(["a", "b", "c", "z"], n),  # "z" is outside the domain
            "age": rng.integers(0, 6, n),
            "pay": rng.integers(-50, 200, n),
        }
    )
    keys = {"town": ["a", "b", "c"], "age": [0, 1, 2, 3, 4]}
    bounds = {"max_rows": 3, "seed": 99}
    if value is not None:
        bounds.update(value=value, bounds=(0, 100))
    want = dgauss.tabulate(records, ["town", "age"], keys, person="pid", **bounds)
    frame = spark.createDataFrame(records).repartition(3)
    got = dgauss.tabulate(frame, ["town", "age"], keys, person="pid", **bounds)
    np.testing.assert_array_equal(got.values, want.values)
    assert (got.dropped, got.trimmed) == (want.dropped, want.trimmed)
    assert got.trimmed > 0 and got.dropped > 0
    assert got.sensitivity == want.sensitivity
    assert got.frame.equals(want.frame)  # a pandas frame: the table is small
    empty = dgauss.tabulate(frame.limit(0), ["town", "age"], keys, person="pid", **bounds)
    assert empty.values.tolist() == [0] * 15


def jobs_run(spark, work) -> int:
    """How many Spark jobs ``work()`` runs (its own job group, read back from the status
    tracker); under adaptive execution each shuffle's map side is a job of its own."""
    sc = spark.sparkContext
    group = f"dgauss-test-{id(work)}"
    sc.setJobGroup(group, "counted by the test")
    try:
        work()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def test_a_register_partitioned_on_the_person_is_not_shuffled_again(spark):
    """docs/spark.md's advice for several tables: partition the register on the person once
    (``repartition(person)``, cached); tabulate's own repartition is then satisfied and
    Spark plans no second shuffle: one job, not two, and the same table."""
    rng = np.random.default_rng(5)
    records = pd.DataFrame({"pid": rng.integers(0, 300, 3000), "age": rng.integers(0, 5, 3000)})
    keys = {"age": [0, 1, 2, 3, 4]}
    bounds = {"person": "pid", "max_rows": 2, "seed": 3}
    want = dgauss.tabulate(records, "age", keys, **bounds)
    frame = spark.createDataFrame(records)
    tables = []
    plain = jobs_run(spark, lambda: tables.append(dgauss.tabulate(frame, "age", keys, **bounds)))
    register = frame.repartition("pid").cache()
    register.count()
    once = jobs_run(spark, lambda: tables.append(dgauss.tabulate(register, "age", keys, **bounds)))
    other = frame.repartition("age").cache()  # partitioned, but not on the person
    other.count()
    again = jobs_run(spark, lambda: tables.append(dgauss.tabulate(other, "age", keys, **bounds)))
    register.unpersist()
    other.unpersist()
    assert (plain, once, again) == (2, 1, 2)
    for table in tables:
        np.testing.assert_array_equal(table.values, want.values)
