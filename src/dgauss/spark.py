"""Exact noise on Spark DataFrames: the chosen integer columns noised on the executors, in
bulk, and the whole DataFrame counted as one release.

Needs PySpark (with PyArrow) and Java; every executor needs dgauss with its compiled core,
PyArrow and the same Python as the driver (see docs/spark.md).  The functions here are
:func:`dgauss.add_gaussian_noise` and :func:`dgauss.add_laplace_noise`, which (like a
mechanism's call and an :class:`~dgauss.Accountant`'s methods) take a Spark DataFrame too::

    noisy = acc.add_gaussian_noise(df, sigma2=acc.calibrate_gaussian(), columns=["n"])

Every promise of the in-memory API holds, partition by partition:

* **Exact**: each column of each Arrow batch is noised by one call of the compiled samplers
  (``mapInArrow``: no Python per row), exactly as :func:`dgauss.add_gaussian_noise` noises an
  array.
* **One release, one guarantee**: the whole DataFrame is **one** release, whose sensitivity
  is one person's effect on all of it (its row count is not known without a job, so an ℓ2
  ball is never cut to fewer coordinates: the safe side).  The column names and types are
  checked from the schema (``columns=``, default every column; each must be integral, or
  float with a ``granularity``), then the release is counted (an Accountant refuses an
  overspend with :class:`~dgauss.PrivacyBudgetError`) before any Spark job runs.  Column
  names are never parsed (``columns=["a.b"]`` names the column ``a.b``, not a field of a
  struct ``a``), and a name other columns share is no obstacle to noising the rest; a
  streaming DataFrame is refused (``TypeError``: it has no end to materialise once; noise
  each micro-batch, each a release).  A missing
  value (null), a value off the lattice of ``granularity`` or a sum beyond int64 raises in
  the job, after the release was counted.
* **Randomness**: with ``rng=None`` (the default) each task reads the operating system's
  CSPRNG on the executor that runs it; nothing is seeded from the driver.  With ``rng`` a
  :class:`numpy.random.SeedSequence` (or an int seed), partition *i*
  (``TaskContext.partitionId()``) draws from ``SeedSequence(entropy, spawn_key=(*spawn_key,
  i))`` -- ``seed.spawn(n)[i]`` of a fresh sequence -- its Arrow batches in order: the same
  values for the same partitioning and batch size.  Seeded noise is for tests and simulations
  only, never to protect real data.
* **Dtypes**: noised columns become LongType (int64; every sum checked to fit), or DoubleType
  with a ``granularity`` (each the double nearest the exact value); the other columns are
  untouched.  ``overflow="object"`` and noise too wide for int64 are refused.
* **Counted once, drawn once**: Spark evaluates lazily and recomputes a partition whenever its
  result is not kept, and a recomputed partition would draw fresh noise.  So the noised
  DataFrame is materialised before it is returned (``localCheckpoint(eager=True)``): its
  blocks are kept on the executors and its lineage is cut, so every read gives the same
  values, and a read whose blocks were lost fails instead of drawing again.  Write the result
  (``to_parquet``, a table) to keep it past the session.
"""

from __future__ import annotations

from dgauss import _mechanism

__all__ = ["add_gaussian_noise", "add_laplace_noise"]


def add_gaussian_noise(values, **kwargs):
    """A Spark DataFrame plus N_Z(0, σ²) noise on its chosen columns, drawn once on the
    executors: one release of a :class:`~dgauss.GaussianMechanism` over the whole DataFrame
    (keywords as :func:`dgauss.add_gaussian_noise`; ``rng`` None, a SeedSequence or an int
    seed; no ``out``).  The sensitivity is one person's effect on the whole DataFrame."""
    _require_spark(values)
    return _mechanism.add_gaussian_noise(values, **kwargs)


def add_laplace_noise(values, **kwargs):
    """A Spark DataFrame plus Lap_Z(t) noise on its chosen columns, drawn once on the
    executors: one release of a :class:`~dgauss.LaplaceMechanism` (keywords as
    :func:`dgauss.add_laplace_noise`; ``rng`` as in :func:`add_gaussian_noise`)."""
    _require_spark(values)
    return _mechanism.add_laplace_noise(values, **kwargs)


def _require_spark(values) -> None:
    module = type(values).__module__
    if module.split(".")[0] != "pyspark" or not hasattr(values, "mapInArrow"):
        raise TypeError(
            "dgauss.spark noises Spark DataFrames; for an in-memory "
            f"{type(values).__name__} use dgauss.add_gaussian_noise / add_laplace_noise"
        )
