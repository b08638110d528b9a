"""``dgauss.tabulate``: microdata to a count or sum table over a public domain, each person's
contribution bounded, and the contribution set the table then has (:class:`Table`).

Here: the arguments (:func:`_spec`), the records as NumPy columns (:func:`_source`; pandas,
Polars and Dask imported only for their own inputs), the tally of one batch or of a Dask
DataFrame's partitions (:func:`_partial`, :func:`_lazy`) and the result (:class:`Table`);
the per-row work (domain, lattice, the bounding rule) is :mod:`dgauss._bounding`'s.
"""

from __future__ import annotations

import functools
import importlib
import operator
import secrets
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _params
from dgauss._bounding import (
    _CHUNK,
    _INT64_MAX,
    _MASK64,
    _NUMERIC,
    _Domain,
    _family,
    _kind,
    _select,
    _Spec,
    _steps,
)

_SUPPORTED = (
    "a pandas DataFrame, a Polars DataFrame or LazyFrame, a Dask DataFrame, a Spark DataFrame, "
    "or a dict of 1-D NumPy arrays"
)


def _bound(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be None or an int >= 1, not bool")
    try:
        result = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be None or an int >= 1, not {type(value).__name__}") from None
    if result < 1:
        raise ValueError(f"{name} must be None or an int >= 1, got {result}")
    return result


def _seed(seed) -> int:
    if seed is None:
        return secrets.randbits(64)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be None or an int in [0, 2**64), not {type(seed).__name__}")
    if not 0 <= int(seed) <= _MASK64:
        raise ValueError(f"seed must be None or an int in [0, 2**64), got {_params.show(seed)}")
    return int(seed)


def _by(by) -> tuple[Any, ...]:
    if isinstance(by, str):
        return (by,)
    if not isinstance(by, (list, tuple)):
        raise TypeError(f"by must be a column name or a list of them, not {type(by).__name__}")
    if not by:
        raise ValueError("by must name at least one key column, got an empty list")
    if len(set(by)) != len(by):
        raise ValueError(f"by must name each key column once, got {list(by)!r}")
    return tuple(by)


def _spec(by, person, max_rows, max_groups, max_rows_per_group, value, bounds, granularity, seed):
    """Every argument but the records and the keys, checked (nothing is read yet)."""
    by = _by(by)
    m, c, r = (
        _bound(max_rows, "max_rows"),
        _bound(max_groups, "max_groups"),
        _bound(max_rows_per_group, "max_rows_per_group"),
    )
    if person is None:
        if (m, c, r) != (None, None, None):
            raise ValueError(
                "max_rows, max_groups and max_rows_per_group bound a person's rows: they need "
                "person= (the column identifying a person); without it each row is a person"
            )
    elif person in by:
        raise ValueError(f"person={person!r} is also a key column in by")
    elif m is None and (c is None or r is None):
        if c is None and r is None:
            raise ValueError(
                f"person={person!r} needs a bound: max_rows=m, or max_groups=c with "
                "max_rows_per_group=r (else a person's contribution is unbounded)"
            )
        raise ValueError(
            "max_groups needs max_rows_per_group or max_rows (else a person's rows in a cell "
            "are unbounded)"
            if r is None
            else "max_rows_per_group needs max_groups or max_rows (else a person's number of "
            "cells is unbounded)"
        )
    g = Fraction(1)
    low = high = None
    lo = hi = 1
    if value is None:
        if bounds is not None or granularity is not None:
            raise ValueError("bounds and granularity need value= (the column to sum)")
    else:
        if bounds is None:
            raise ValueError(f"value={value!r} needs bounds=(low, high) to clamp each value to")
        if granularity is not None:
            g = _params.positive(granularity, "granularity")
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise TypeError("bounds must be a pair (low, high) of finite numbers")
        low, high = (_params.to_fraction(b, "bounds") for b in bounds)
        if low > high:
            raise ValueError(f"bounds must have low <= high, got {bounds!r}")
        if (low / g).denominator != 1 or (high / g).denominator != 1:
            raise ValueError(f"bounds must be multiples of the granularity {g}, got {bounds!r}")
        lo, hi = int(low / g), int(high / g)
        if max(abs(lo), abs(hi)) > _INT64_MAX:
            raise ValueError("bounds must lie within 2**63 - 1 steps of the granularity from 0")
    return _Spec(by, person, m, c, r, value, low, high, g, lo, hi, _seed(seed))


# -- the records -------------------------------------------------------------------------------


def _source(records, spec: _Spec) -> tuple[str, Any]:
    """``records``' kind and, but for Dask, its needed columns as 1-D NumPy arrays; a missing
    column is a ValueError naming the argument that names it."""
    kind = _family(records)
    if isinstance(records, Mapping):
        kind = "dict"
        names = list(records)
    elif kind is None:
        raise TypeError(f"records must be {_SUPPORTED}; got {type(records).__name__}")
    else:
        names = list(
            records.collect_schema().names()
            if hasattr(records, "collect_schema")
            else records.columns
        )
    for arg, cols in (("by", spec.by), ("person", [spec.person]), ("value", [spec.value])):
        for col in cols:
            if col is not None and col not in names:
                raise ValueError(f"{arg} names column {col!r}, which records does not have")
            if col is not None and names.count(col) > 1:
                raise ValueError(
                    f"{arg} names column {col!r}, which several columns of records share"
                )
    needed = _needed(spec)
    if kind in ("dask", "spark"):
        return kind, records  # tallied where the data are (_lazy, dgauss._spark._tally)
    if kind == "polars":
        if type(records).__name__ == "LazyFrame":
            records = records.select(needed).collect()
        return kind, {c: records.get_column(c).to_numpy() for c in needed}
    if kind == "pandas":
        return kind, {c: records[c].to_numpy() for c in needed}
    columns = {}
    for c in needed:
        a = np.asarray(records[c])
        if a.ndim != 1:
            raise ValueError(f"records[{c!r}] must be a 1-D array, got {a.ndim} dimensions")
        columns[c] = a
    if len({len(a) for a in columns.values()}) > 1:
        lengths = {c: len(a) for c, a in columns.items()}
        raise ValueError(f"records' columns must have equal lengths, got {lengths}")
    return kind, columns


def _needed(spec: _Spec) -> list:
    """The columns the tally reads: the keys, the person, the value (each once)."""
    return list(dict.fromkeys(c for c in (*spec.by, spec.person, spec.value) if c is not None))


# -- the tally ---------------------------------------------------------------------------------


def _text(ids: np.ndarray, where: str) -> np.ndarray:
    """String ids as a NumPy str array, refusing a string that ends in NUL: NumPy's strings
    drop trailing NULs, which would make "a" and "a\\x00" one person (and the table move
    by two people's rows when one is added)."""
    text = ids.astype(str)
    if ids.dtype == object and len(ids):
        lengths = np.fromiter(map(len, ids.tolist()), dtype=np.int64, count=len(ids))
        cut = np.flatnonzero(np.char.str_len(text) != lengths)
        if len(cut):
            raise ValueError(
                f"{where} holds a string ending in NUL ('\\x00') (row {int(cut[0])}), which "
                "would be read as the same id without it: strip or replace the NULs first"
            )
    return text


def _partial(columns: dict[Any, np.ndarray], domain: _Domain, spec: _Spec):
    """One batch of records (all the data, or one Dask partition holding each of its people's
    rows): the table's values, the records outside the domain, the rows trimmed, and the
    rows kept."""
    cell = domain.cells(columns)
    val = _steps(columns[spec.value], spec) if spec.value is not None else None
    pid = None
    if spec.person is not None:
        where = f"person column {spec.person!r}"
        kind, pid = _kind(columns[spec.person], where)
        if kind == "str":
            pid = _text(pid, where)
        elif kind == "empty":  # no rows (an empty frame, or an empty Dask partition)
            pid = np.zeros(0, dtype=np.int64)
        elif kind not in _NUMERIC:
            raise TypeError(f"{where} must hold ints, floats or strings, not {kind} values")
    inside = cell >= 0
    dropped = len(cell) - int(np.count_nonzero(inside))
    if dropped:
        cell = cell[inside]
        val = val[inside] if val is not None else None
        pid = pid[inside] if pid is not None else None
    trimmed, keep = 0, None
    if pid is not None:
        keep = _select(pid, cell, val, spec)
        trimmed = len(cell) - int(np.count_nonzero(keep))
        del pid
        if not trimmed:
            keep = None
        elif val is not None:
            cell, val = cell[keep], val[keep]
    if val is None:
        sums = _count(cell, keep, domain.size)
        return sums, dropped, trimmed, len(cell) - trimmed
    if len(cell) * max(abs(spec.lo), abs(spec.hi)) <= _INT64_MAX:
        sums = np.zeros(domain.size, dtype=np.int64)
        np.add.at(sums, cell, val)
    else:  # |sum| might pass 2**63 - 1: Python ints
        sums = np.zeros(domain.size, dtype=object)
        np.add.at(sums, cell, val.astype(object))
    return sums, dropped, trimmed, len(cell)


def _count(cell: np.ndarray, keep: np.ndarray | None, size: int) -> np.ndarray:
    """The rows in each of ``size`` cells (only the rows ``keep`` marks, if given), counted a
    chunk of rows at a time (no column-long temporary)."""
    sums = np.zeros(size, dtype=np.int64)
    step = max(_CHUNK, size)
    for i in range(0, len(cell), step):
        part = cell[i : i + step] if keep is None else cell[i : i + step][keep[i : i + step]]
        sums += np.bincount(part, minlength=size)
    return sums


def _combine(parts: list, spec: _Spec):
    """Partial tables summed (exactly: object ints when the int64 bound could fail)."""
    kept = sum(p[3] for p in parts)
    wide = kept * max(abs(spec.lo), abs(spec.hi)) > _INT64_MAX
    dtype = object if wide or any(p[0].dtype == object for p in parts) else np.int64
    total = np.zeros(len(parts[0][0]), dtype=dtype)
    for p in parts:
        total += p[0].astype(dtype)
    return total, sum(p[1] for p in parts), sum(p[2] for p in parts), kept


def _frame_partial(frame, domain: _Domain, spec: _Spec):
    return _partial({c: frame[c].to_numpy() for c in frame.columns}, domain, spec)


def _lazy(ddf, domain: _Domain, spec: _Spec):
    """The Dask path: each person's rows brought to one partition (a shuffle on ``person``),
    each partition tabulated by the same rule, the small partial tables summed; only the
    final table is computed."""
    from dask.delayed import delayed

    if spec.person is not None:
        ddf = ddf.shuffle(on=spec.person)
    shared = delayed(domain, pure=True)  # one copy of the domain for every task
    parts = [delayed(_frame_partial)(p, shared, spec) for p in ddf.to_delayed()]
    return delayed(_combine)(parts, spec).compute()


# -- the result --------------------------------------------------------------------------------


def _contributions(**bounds):
    """The table's contribution set, a :class:`dgauss.accounting.Contributions`."""
    from dgauss.accounting import Contributions

    return Contributions(**bounds)


def _units(values: np.ndarray, g: Fraction) -> np.ndarray:
    """Steps of g in the value's units: ints for an integer g, else the nearest floats."""
    if g == 1:
        return values
    top = int(np.abs(values).max()) if len(values) else 0
    if g.denominator == 1:
        if values.dtype != object and top * g.numerator <= _INT64_MAX:
            return values * g.numerator
        return np.array([int(v) * g.numerator for v in values.tolist()], dtype=object)
    dyadic = not g.denominator & (g.denominator - 1) and g.numerator < 2**53
    if values.dtype != object and dyadic and top < 2**53:
        return values.astype(np.float64) * float(g)  # one rounding: the nearest double
    return np.array([float(int(v) * g) for v in values.tolist()], dtype=np.float64)


class Table:
    """A count or sum table made by :func:`tabulate`: one row per key of the public domain.

    Attributes
    ----------
    frame : DataFrame
        The key columns (the keys' dtypes) and the value column: a Polars DataFrame for
        Polars records, else a pandas DataFrame (an ImportError without pandas: use
        ``columns``).
    columns : dict of str to numpy.ndarray
        The same columns as NumPy arrays (no pandas needed).
    value : str
        The value column's name: "count", or for a sum table ``value``'s own name; "sum" if
        that is a key column; a name that is a key column gets ``_`` prefixes until it is not.
    values : numpy.ndarray
        The value column in steps of the granularity: int64, or Python ints in an object
        array when a sum could outgrow int64.  ``frame`` and ``columns`` hold the sums in
        the value's units (steps times g: floats only when g is not an integer).
    sensitivity : dgauss.accounting.Contributions
        The contribution set: what adding or removing one person can change.
    granularity : Fraction or None
        g for a sum table with g != 1, else None.
    by, person, bounds
        As given to :func:`tabulate` (``by`` as a tuple, ``bounds`` as Fractions).
    dropped, trimmed : int
        Records whose key lies outside the domain, and rows removed by the bounding.  These
        are exact counts of the data, **not private**: for the analyst, never to publish.
    """

    __slots__ = (
        "by",
        "person",
        "bounds",
        "granularity",
        "value",
        "values",
        "columns",
        "dropped",
        "trimmed",
        "_limits",
        "_per_row",
        "_kind",
        "_keys",
        "_frame",
    )

    by: tuple[Any, ...]
    person: Any
    bounds: tuple[Fraction, Fraction] | None
    granularity: Fraction | None
    value: Any
    values: np.ndarray
    columns: dict[Any, np.ndarray]
    dropped: int
    trimmed: int
    _limits: dict[str, int | None]
    _per_row: int
    _kind: str
    _keys: Any
    _frame: Any

    def __init__(self, domain: _Domain, spec: _Spec, kind: str, sums, dropped, trimmed):
        name = "count" if spec.value is None else spec.value
        name = "sum" if name in spec.by and spec.value is not None else name
        while name in spec.by:
            name = "_" + name
        g = spec.g if spec.g != 1 else None
        sums.flags.writeable = False
        columns = {c: domain.columns[c] for c in spec.by}
        columns[name] = _units(sums, spec.g)
        for a in columns.values():
            a.flags.writeable = False
        bounds = None if spec.low is None else (spec.low, spec.high)
        limits = {
            "max_rows": spec.max_rows,
            "max_groups": spec.max_groups,
            "max_rows_per_group": spec.max_rows_per_group,
        }
        if spec.person is None:
            limits["max_rows"] = 1
        per_row = 1 if spec.value is None else max(abs(spec.lo), abs(spec.hi))
        for attr, v in (
            ("by", spec.by),
            ("person", spec.person),
            ("bounds", bounds),
            ("granularity", g),
            ("value", name),
            ("values", sums),
            ("columns", columns),
            ("dropped", dropped),
            ("trimmed", trimmed),
            ("_limits", limits),
            ("_per_row", per_row),
            ("_kind", kind),
            ("_keys", domain.frame),
            ("_frame", None),
        ):
            object.__setattr__(self, attr, v)

    def __setattr__(self, name, value):
        raise AttributeError(f"a Table is immutable: {name} cannot be set")

    def __len__(self) -> int:
        return len(self.values)

    @property
    def sensitivity(self):
        """The contribution set (:class:`dgauss.accounting.Contributions`)."""
        return _contributions(**self._limits, per_row=self._per_row, cells=len(self))

    @property
    def frame(self):
        """The table as a DataFrame (built on first use)."""
        if self._frame is None:
            object.__setattr__(self, "_frame", self._build())
        return self._frame

    def _build(self):
        same = self._keys is not None and _family(self._keys) == (
            "polars" if self._kind == "polars" else "pandas"
        )
        if self._kind == "polars":
            import polars as pl

            keys = (
                self._keys.select(self.by)
                if same
                else pl.DataFrame([pl.Series(str(c), self.columns[c]) for c in self.by])
            )
            return keys.with_columns(pl.Series(self.value, self.columns[self.value]))
        try:
            pd = importlib.import_module("pandas")
        except ImportError:
            raise ImportError(
                "Table.frame needs pandas: install pandas, or read Table.columns (NumPy arrays)"
            ) from None
        frame = (
            self._keys[list(self.by)].reset_index(drop=True)
            if same
            else pd.DataFrame({c: self.columns[c] for c in self.by})
        )
        frame[self.value] = self.columns[self.value]
        return frame

    def __repr__(self) -> str:
        limits = ", ".join(f"{k}={v}" for k, v in self._limits.items() if v is not None)
        who = f"person={self.person!r}, {limits}" if self.person is not None else "a row a person"
        what = (
            "count"
            if self.bounds is None
            else (
                f"sum of {self.value!r} in [{self.bounds[0]}, {self.bounds[1]}]"
                + (f" in steps of {self.granularity}" if self.granularity is not None else "")
            )
        )
        return (
            f"<Table: {len(self)} cells by {list(self.by)!r}, {what}; {who}; "
            f"dropped={self.dropped}, trimmed={self.trimmed} (not private)>"
        )


def tabulate(
    records: Any,
    by: Any,
    keys: Any,
    *,
    person: Any = None,
    max_rows: int | None = None,
    max_groups: int | None = None,
    max_rows_per_group: int | None = None,
    value: Any = None,
    bounds: tuple[Any, Any] | None = None,
    granularity: Any = None,
    seed: int | None = None,
) -> Table:
    """Count (or sum) records by key over a public domain, each person's rows bounded.

    The table has one cell per key of ``keys``, in the keys' order, 0 where no record falls;
    no key is ever read from the data (a record outside the domain is dropped).  With
    ``person`` each person's rows are first cut down to the bounds, so that the table has
    the contribution set ``Table.sensitivity``: adding or removing **one person with all
    their rows** (the neighbouring relation) changes the table by a vector with entries
    n_j * per_row, sum of n_j <= max_rows, at most max_groups of them nonzero, each
    n_j <= max_rows_per_group (per_row is 1 for counts, max(|low|, |high|) / g for sums).
    This holds because which rows of a person are kept depends only on that person's own
    rows and ``seed``, never on other people's rows nor on the rows' order: the table of
    D plus p is the table of D plus p's kept rows.

    Parameters
    ----------
    records : pandas, Polars (DataFrame or LazyFrame), Dask or Spark DataFrame, or dict
        The microdata; a dict maps column names to 1-D arrays of one length.  A Dask
        DataFrame is shuffled on ``person`` and tabulated partition by partition, lazily:
        only the final table is computed.  A Spark DataFrame likewise, on the executors
        (hash-partitioned on ``person``, each partition tallied in one ``mapInArrow`` task);
        only the partial tables reach the driver, and the table's ``frame`` is pandas.  Its
        column names are never parsed (a dot or a backtick is part of the name); a streaming
        DataFrame is refused (TypeError); a value the tally refuses raises the TypeError or
        ValueError the pandas path raises.  A Spark ``timestamp`` column is read as the
        session's wall-clock time (``spark.sql.session.timeZone``), as ``toPandas`` gives it;
        a ``date`` column as ``datetime64[D]`` (keys: NumPy datetime64 or pandas Timestamps),
        where ``toPandas`` gives ``datetime.date`` objects, which a table does not key on.
    by : str or list of str
        The key columns.
    keys : dict or DataFrame
        The public domain: ``{column: values}`` (the Cartesian product in ``by``'s order,
        C order: the last column varies fastest) or a pandas or Polars DataFrame of key
        rows with the columns of ``by``.  Data and keys must be of one type per column
        (strings, numbers, booleans, bytes, datetimes); ints and floats compare by exact
        value (2.0 is the key 2).  Missing values (None, NaN, NA, NaT) are refused.
    person : str, optional
        The column identifying a person (ints, floats or strings; never missing).
        Without it each row is a person (``max_rows=1`` in the contribution set).
    max_rows : int, optional
        Keep at most this many rows of each person.
    max_groups, max_rows_per_group : int, optional
        Keep at most ``max_groups`` of a person's cells, and at most ``max_rows_per_group``
        rows in each; either one needs the other or ``max_rows``.  All three may be given.
    value : str, optional
        Sum this column instead of counting rows; needs ``bounds``.
    bounds : (low, high), optional
        Each value v becomes round(v / g), the nearest integer (halves to even; v at its
        exact value, a float at its binary value), then is clamped to [low/g, high/g].
        low <= high, finite, multiples of g.
    granularity : rational, optional
        g > 0, the lattice of the sums (default 1: integers).
    seed : int, optional
        In [0, 2**64): which rows are kept, reproducibly; None draws one from the OS.

    Returns
    -------
    Table
        The values, the contribution set (``sensitivity``), and ``dropped`` / ``trimmed``:
        exact counts of the data that are **not private** (for the analyst, never to publish).

    Raises
    ------
    TypeError, ValueError
        Naming the argument and what it allows, before anything is computed (a Dask
        partition's values are checked when it is computed, a Spark partition's in the job);
        a column name that several columns of ``records`` share is a ValueError.

    Notes
    -----
    The rule.  Let H(seed; w1, ..., wk) = h_k where ``h_0 = mix(seed + 0x9E3779B97F4A7C15)``
    and ``h_i = mix(h_(i-1) XOR w_i)``, everything mod 2**64 and mix SplitMix64's
    finaliser (``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
    z *= 0x94D049BB133111EB; z ^= z >> 31``).  A person's id is the word: an int mod
    2**64; a float with an integer
    value as that int, another float by its IEEE-754 bits; a string as w = mix(len), then
    w = mix(w XOR code point) for each character.  Among the person's rows inside the
    domain, a row with cell index j (its row in the table) and value s (in steps) that is
    the k-th (from 0) of the person's rows equal to it gets the priority
    H(seed; 1, id, j + 2**32 k) in a count table, H(seed; 1, id, j + 2**32 k, s mod 2**64)
    in a sum table (k < 2**32: a person has fewer rows than that); the rows are ordered by
    (priority, j, s, k).  Then:

    1. with ``max_groups=c``: the person's cells ordered by (H(seed; 2, id, j), j), and the
       rows of the first c cells kept;
    2. with ``max_rows_per_group=r``: in each cell, the first r of those rows kept;
    3. with ``max_rows=m``: the first m of the rows still kept are kept.

    Every step reads only the person's rows, so the table moves by one person's bounded
    contribution when the person is added; the priorities are pseudo-random, so the rows
    kept are close to a uniform choice.  ``seed`` does not need to be secret: privacy
    comes from the noise added to the table, not from the choice of rows.

    Examples
    --------
    >>> import numpy as np, dgauss
    >>> records = {"town": np.array(["a", "b", "b", "c"]), "pid": np.array([1, 1, 2, 3])}
    >>> table = dgauss.tabulate(records, "town", {"town": ["a", "b"]}, person="pid",
    ...                         max_rows=1, seed=7)
    >>> table.values.tolist(), table.dropped, table.trimmed
    ([1, 1], 1, 1)
    >>> s = dgauss.tabulate({"town": np.array(["a", "a", "b"]), "pay": np.array([2.5, 9, 1])},
    ...                     "town", {"town": ["a", "b"]}, value="pay", bounds=(0, 4))
    >>> s.columns["pay"].tolist()
    [6, 1]
    """
    spec = _spec(
        by, person, max_rows, max_groups, max_rows_per_group, value, bounds, granularity, seed
    )
    domain = _Domain(keys, spec.by)  # (the public domain checked before the data is read)
    kind, columns = _source(records, spec)
    if kind == "dask":
        sums, dropped, trimmed, _ = _lazy(columns[_needed(spec)], domain, spec)
    elif kind == "spark":
        from dgauss import _spark  # the optional extra: needs pyspark, which such records prove

        tally = functools.partial(_partial, domain=domain, spec=spec)
        parts = _spark._tally(columns, spec.person, _needed(spec), tally)
        sums, dropped, trimmed, _ = _combine(parts, spec)
    else:
        sums, dropped, trimmed, _ = _partial(columns, domain, spec)
    return Table(domain, spec, kind, sums, dropped, trimmed)
