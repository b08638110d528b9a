"""The Spark path of dgauss (public through :mod:`dgauss.spark`, whose docstring says what it
promises): one release of a noised Spark DataFrame, which :mod:`dgauss._dispatch` hands here.
The noise is drawn on the executors, one compiled call per column of each Arrow batch
(``mapInArrow``), and the noised DataFrame is materialised once (a local checkpoint) before it
is returned.  It imports the in-memory path (:mod:`dgauss._inputs`), never the modules that
dispatch to it.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

try:
    import pyarrow as pa
    from pyspark import TaskContext
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "dgauss.spark needs PySpark and PyArrow: pip install 'dgauss[spark]' (and Java)"
    ) from exc

from dgauss import _driver, _inputs, _seeds
from dgauss._kinds import Kind

#: What ``rng`` may be: None (the OS CSPRNG), or a seed that names every partition's stream.
SeedLike = _seeds.SeedLike

#: Spark's integral column types (any of them noised into LongType, int64).
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
#: Spark's float column types (noised only with a granularity, into DoubleType).
_FLOATS = (T.FloatType, T.DoubleType)


# ==========================================================================
# Checks, on the driver, before the release is counted
# ==========================================================================


def _seed(rng: SeedLike) -> tuple | None:
    """``rng`` as a picklable seed (:func:`dgauss._seeds.picklable_seed`), or None."""
    return _seeds.picklable_seed(rng, "executor", "the partitions of a Spark DataFrame")


_partition_rng = _seeds.child_rng  # piece i's generator: the seed's i-th child, or None (the OS)


def _batch_only(df, what: str) -> None:
    """Refuse a streaming DataFrame (``what`` names the argument): it has no end, so it can be
    neither materialised once nor tallied; no job runs."""
    if df.isStreaming:
        raise TypeError(
            f"{what} is a streaming Spark DataFrame, which has no end to noise or tabulate "
            "once: apply dgauss to each micro-batch (foreachBatch), each batch a release"
        )


def _by_position(df):
    """``df`` with its columns renamed ``_0``, ``_1``, ... by position (no name is parsed:
    Spark reads ``a.b`` as a field of ``a`` and a backtick as a quote, and refuses a name
    two columns share); the original names are kept by the caller."""
    return df.toDF(*(f"_{i}" for i in range(len(df.columns))))


def _chosen(schema, columns, granularity: Fraction | None) -> list[int]:
    """The indexes of the columns to noise (``columns=``, default every column), each checked
    against the schema: it exists once, and holds integers (or, with a granularity, floats)."""
    names = list(schema.names)
    if columns is None:
        wanted = names
        if not wanted:
            raise ValueError("values has no columns to noise")
    else:
        if isinstance(columns, str) or not isinstance(columns, (list, tuple)):
            columns = [columns]
        wanted = list(columns)
        if not wanted:
            raise ValueError("columns= must name at least one column")
    chosen = []
    for name in wanted:
        if not isinstance(name, str):
            raise TypeError(f"columns= must hold column names (str), found {name!r}")
        if name not in names:
            raise ValueError(
                f"columns= names {name!r}, which is not a column; the columns are: "
                + ", ".join(map(repr, names))
            )
        if names.count(name) > 1:
            raise ValueError(f"columns= names {name!r}, which several columns share")
        index = names.index(name)
        if index in chosen:
            raise ValueError(f"columns= names {name!r} twice")
        field = schema.fields[index]
        allowed = _INTEGRAL + (_FLOATS if granularity is not None else ())
        if not isinstance(field.dataType, allowed):
            hint = " (choose the count columns with columns=[...])" if columns is None else ""
            if isinstance(field.dataType, _FLOATS):
                raise TypeError(
                    f"column {name!r} holds floats: pass granularity=g (values on the lattice "
                    "g*Z) or integer counts; floats are never rounded"
                )
            raise TypeError(
                f"column {name!r} holds {field.dataType.simpleString()} values, not integer "
                f"counts{hint}"
            )
        chosen.append(index)
    return chosen


# ==========================================================================
# The work on the executors
# ==========================================================================


@dataclass(frozen=True)
class _Plan:
    """What every task needs (one picklable object: the noise's parameters, never a budget)."""

    kind: int
    param: Fraction
    int64_safe: bool
    granularity: Fraction | None
    clip: tuple[int | None, int | None] | None
    seed: tuple | None
    chosen: tuple[int, ...]  # the noised columns' indexes
    names: tuple[str, ...]  # every column's name (for messages: the batches carry _0, _1, ...)


def _noise_column(values: pa.Array, name: str, plan: _Plan, rng) -> pa.Array:
    """One Arrow column of a batch plus noise, by the in-memory path (one compiled call)."""
    if values.null_count:
        raise ValueError(
            f"column {name!r} has {values.null_count} missing value(s) (null); fill or drop "
            "them before noising"
        )
    array = values.to_numpy(zero_copy_only=False)
    prep = _inputs._prepare(array, plan.granularity, name=f"column {name!r}")
    noised = _inputs._add(
        prep,
        Kind(plan.kind),
        plan.param,
        plan.int64_safe,
        rng=rng,
        out=None,
        clip=plan.clip,
        overflow="raise",
        workers=None,
        granularity=plan.granularity,
    )
    out_type = pa.float64() if plan.granularity is not None else pa.int64()
    return pa.array(noised, type=out_type)


def _noise_batches(plan: _Plan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: every batch of one partition, its chosen columns noised.
    Seeded, the partition's batches draw in order from its own child of the seed."""
    context = TaskContext.get()
    rng = _partition_rng(plan.seed, context.partitionId() if context is not None else 0)
    for batch in batches:
        arrays = list(batch.columns)
        for i in plan.chosen:
            arrays[i] = _noise_column(arrays[i], plan.names[i], plan, rng)
        # (positional names: Spark's reader of the batches misreads two columns of one name)
        yield pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


# ==========================================================================
# The release
# ==========================================================================


def _noised(mech, values, take, rng, out, clip, overflow: str, workers, columns):
    """One release of ``mech`` over the Spark DataFrame ``values``
    (:func:`dgauss._inputs._release`'s contract): every argument checked from the schema (a
    streaming DataFrame refused), then ``take()`` (size unknown: the whole sensitivity), then
    the noise drawn on the executors and materialised once (``localCheckpoint(eager=True)``),
    the result returned.  The columns travel by position (``_0``, ``_1``, ...) and get their
    names back in the result's schema, so no name is parsed."""
    kind, param, g = mech._kind, mech._param, mech.granularity
    if out is not None:
        raise TypeError("out= is not supported for a Spark DataFrame (a new one is returned)")
    if workers is not None and workers != 1:
        raise ValueError(
            f"workers must be None for a Spark DataFrame (Spark's tasks are the parallelism), "
            f"got {workers!r}"
        )
    clip_, overflow_ = _inputs._check_clip(clip, g), _inputs._check_overflow(overflow)
    int64_safe = _driver.int64_safe(kind, param)
    if g is None and overflow_ == "object":
        raise ValueError(
            "overflow='object' is not supported for a Spark DataFrame: noised columns are "
            "int64 (LongType), and a sum beyond int64 raises"
        )
    if g is None and not int64_safe:
        raise ValueError(
            "the noise is too wide for int64 columns (sigma2 > 2**100 or scale > 2**40): a "
            "Spark DataFrame's noised columns are int64"
        )
    seed = _seed(rng)
    if not hasattr(values, "schema") or not hasattr(values, "mapInArrow"):
        raise TypeError(f"values must be a Spark DataFrame, not {type(values).__name__}")
    _batch_only(values, "values")
    schema = values.schema
    chosen = _chosen(schema, columns, g)
    out_type = T.DoubleType() if g is not None else T.LongType()
    fields = [
        T.StructField(f.name, out_type, f.nullable) if i in chosen else f
        for i, f in enumerate(schema.fields)
    ]
    plan = _Plan(
        int(kind),
        param,
        int64_safe,
        g,
        clip_,
        seed,
        tuple(chosen),
        tuple(schema.names),
    )
    take()  # counted (or refused) before any job runs
    noised = _by_position(values).mapInArrow(
        functools.partial(_noise_batches, plan), T.StructType(fields)
    )
    # Drawn here, once: the blocks are kept and the lineage cut, so that no later read can
    # draw again (a lost block fails the read instead).
    return noised.localCheckpoint(eager=True)


# ==========================================================================
# Tallies of microdata (for dgauss.tabulate): partial tables, summed on the driver
# ==========================================================================


def _tally_partition(
    partial: Callable[[dict], tuple], names: list, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: every batch of one partition as one set of NumPy columns
    named ``names`` (a person's rows are all in this partition, so they are tallied
    together), its partial table pickled into one row; nothing for an empty partition.  A
    TypeError or ValueError of the tally (a null, a key of another type than the domain) is
    sent as the row instead, for the driver to raise as the in-memory path raises it."""
    found = list(batches)
    if not found or not sum(b.num_rows for b in found):
        return
    table = pa.Table.from_batches(found)
    try:
        sums, *rest = partial(_numpy_columns(table, names))
    except (TypeError, ValueError) as error:
        part: tuple = ("error", error)
    else:
        cells = np.flatnonzero(sums)  # sparse: a partition touches few of a large domain's cells
        part = ("part", len(sums), cells, sums[cells], *rest)
    blob = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
    yield pa.RecordBatch.from_arrays([pa.array([blob], type=pa.binary())], names=["part"])


def _numpy_columns(table: pa.Table, names: list) -> dict:
    """The columns of ``table`` (positional names) as NumPy arrays under ``names``."""
    return {name: table.column(i).to_numpy() for i, name in enumerate(names)}


def _dense(part: tuple) -> tuple:
    """A partial table sent sparse by :func:`_tally_partition`, as ``partial`` returned it
    (an error it sent is raised)."""
    if part[0] == "error":
        raise part[1]
    _, size, cells, values, *rest = part
    sums = np.zeros(size, dtype=values.dtype)
    sums[cells] = values
    return (sums, *rest)


def _tally(df, person, needed: list, partial: Callable[[dict], tuple]) -> list[tuple]:
    """The partial tables of a Spark DataFrame's records: its ``needed`` columns, each
    person's rows brought to one partition (hash-partitioned on ``person``), each partition
    tallied on its executor by ``partial`` (a picklable function of ``{column: ndarray}``),
    and the small results collected; the microdata never reach the driver.  An empty
    DataFrame gives ``partial`` of its empty columns (typed from the schema).

    The columns are selected by position (no name is parsed); a timestamp column is read
    as the session's wall-clock time (``timestamp_ntz``), as ``toPandas`` gives it; a
    TypeError or ValueError of ``partial`` is raised here, as the in-memory path raises it."""
    _batch_only(df, "records")
    names, fields = df.columns, df.schema.fields
    positional = _by_position(df)
    picked: list = []
    for name in needed:
        i = names.index(name)  # (a name two columns share was refused: _tabulate._source)
        column = F.col(f"_{i}")
        if isinstance(fields[i].dataType, T.TimestampType):
            column = column.cast(T.TimestampNTZType())
        picked.append(column.alias(f"_{len(picked)}"))
    data = positional.select(*picked)
    if person is not None:
        data = data.repartition(F.col(f"_{needed.index(person)}"))
    tally = functools.partial(_tally_partition, partial, list(needed))
    found = data.mapInArrow(tally, "part binary").collect()
    if found:
        return [_dense(pickle.loads(row[0])) for row in found]
    return [partial(_numpy_columns(data.limit(0).toArrow(), list(needed)))]
