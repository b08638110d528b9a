"""A :class:`dgauss.Table` (from :func:`dgauss.tabulate`) through the release path: the
mechanisms read the table's own sensitivity and granularity (no ``sensitivity=`` typed), noise
its value column, and return the table's frame with the noisy column in place of the exact one
(the key columns and their order kept).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _inputs


def is_table(values: Any) -> bool:
    """Whether ``values`` is a :class:`dgauss.Table`."""
    if type(values).__name__ != "Table":
        return False
    from dgauss._tabulate import Table

    return isinstance(values, Table)


def settings(values: Any, sensitivity: Any, granularity: Any) -> tuple[Any, Any]:
    """(sensitivity, granularity) for a mechanism built to noise ``values``: a table's own,
    else the ones given.  A table with another ``sensitivity`` or ``granularity`` given is a
    ValueError: the table's are what its rows were bounded to."""
    if not is_table(values):
        return sensitivity, granularity
    if not _inputs._is_one(sensitivity) and sensitivity != values.sensitivity:
        raise ValueError(
            f"sensitivity: a Table carries its own ({values.sensitivity!r}), what its rows were "
            f"bounded to; leave sensitivity= out (got {sensitivity!r})"
        )
    if granularity is not None and _inputs._granularity(granularity) != (values.granularity or 1):
        raise ValueError(
            f"granularity: a Table carries its own ({values.granularity}); leave granularity= "
            f"out (got {granularity!r})"
        )
    return values.sensitivity, values.granularity


def release(mech, table, take, rng, out, clip, overflow: str, workers, columns):
    """One release of ``mech`` over ``table``'s value column; the table's frame returned with
    the noisy column (:func:`dgauss._inputs._release`'s contract otherwise)."""
    if out is not None:
        raise ValueError("out: a Table's release is a new DataFrame; out= is not taken with one")
    if columns is not None:
        raise ValueError(f"columns: a Table noises its value column {table.value!r}; leave it out")
    own = getattr(mech, "_sensitivity", None)
    if own is None:  # a Laplace mechanism: its ℓ1 bound
        fits = mech.sensitivity == table.sensitivity.norm1
    else:
        fits = own == table.sensitivity
    if not fits:
        raise ValueError(
            f"this mechanism's sensitivity ({mech.sensitivity!r}) is not the table's "
            f"({table.sensitivity!r}): build it with sensitivity=table.sensitivity"
        )
    if (mech.granularity or 1) != (table.granularity or 1):
        raise ValueError(
            f"this mechanism's granularity ({mech.granularity}) is not the table's "
            f"({table.granularity}): build it with granularity=table.granularity"
        )
    steps = np.asarray(table.values)
    g = mech.granularity
    values = steps if g is None else np.array([Fraction(int(x)) * g for x in steps], dtype=object)
    noisy = _inputs._release(mech, values, take, rng, None, clip, overflow, workers, None)
    return _with_column(table.frame, table.value, noisy)


def _with_column(frame, name: str, column: np.ndarray):
    """``frame`` with its column ``name`` replaced (pandas or Polars), the rest as they were."""
    module = type(frame).__module__
    if module.startswith("polars"):
        import polars as pl

        return frame.with_columns(pl.Series(name, column))
    result = frame.copy()
    result[name] = column
    return result
