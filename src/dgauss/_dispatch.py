"""The one dispatch point of a release (a mechanism's call, ``add_*_noise``, an Accountant's
``add_*_noise``): a :class:`dgauss.Table` to :mod:`dgauss._table_release` (its value column,
its frame back), a Dask collection to the lazy path (:mod:`dgauss._lazy`, the ``dask`` extra,
imported on first use), a Spark DataFrame to :mod:`dgauss._spark` (the ``spark`` extra, imported
on first use), anything else to the in-memory path (:mod:`dgauss._inputs`).
Neither imports this module, so the rooms import each other one way only.
"""

from __future__ import annotations

from dgauss import _inputs, _table_release


def release(mech, values, take, rng, out, clip, overflow: str, workers, columns):
    """One release of ``mech`` over ``values``: :func:`dgauss._inputs._release`'s contract
    (every argument checked, then ``take()``, then the noise), lazily for a Dask
    collection."""
    if _table_release.is_table(values):
        return _table_release.release(
            mech, values, take, rng, out, clip, overflow, workers, columns
        )
    if _inputs._is_dask(values):
        from dgauss import _lazy  # the optional extra: needs Dask, which such values prove

        return _lazy._noised(mech, values, take, rng, out, clip, overflow, workers, columns)
    if _is_spark(values):
        from dgauss import _spark  # the optional extra: needs PySpark, which such values prove

        return _spark._noised(mech, values, take, rng, out, clip, overflow, workers, columns)
    return _inputs._release(mech, values, take, rng, out, clip, overflow, workers, columns)


def _is_spark(values) -> bool:
    """A Spark DataFrame (classic or Connect), told apart without importing PySpark."""
    module = type(values).__module__
    return module.split(".")[0] == "pyspark" and hasattr(values, "mapInArrow")
