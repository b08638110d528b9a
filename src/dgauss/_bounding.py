"""The per-row work of :func:`dgauss.tabulate` (:mod:`dgauss._tabulate`): the keyed hash, the
kinds of the key columns, the public domain and each record's cell (:class:`_Domain`), the
values on the lattice (:func:`_steps`) and the bounding rule (:func:`_select`), whose exact
statement is in ``tabulate``'s docstring.  NumPy only: no pandas needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _params

_U64 = np.uint64
_M1, _M2 = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_INT64_MAX = 2**63 - 1
#: A person with at most this many rows is ranked pairwise (s² comparisons, vectorised across
#: people); a larger one by sorting.  Both follow the one rule (the tests compare them).
_PAIRWISE_MAX = 8
_ROW_TAG, _CELL_TAG = 1, 2
#: Rows a step works on at once where the work is per row (temporaries stay this short).
_CHUNK = 1 << 20


# -- the keyed hash ----------------------------------------------------------------------------


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on uint64 (arithmetic mod 2**64)."""
    t = z >> _U64(30)  # (in place: z is always a fresh array)
    z ^= t
    z *= _M1
    np.right_shift(z, _U64(27), out=t)
    z ^= t
    z *= _M2
    np.right_shift(z, _U64(31), out=t)
    z ^= t
    return z


def _hash(seed: int, *words: np.ndarray) -> np.ndarray:
    """H(seed; w1, ..., wk) on uint64 words: h = mix(seed + 0x9E3779B97F4A7C15 mod 2**64),
    then h = mix(h XOR w) for each word in turn."""
    h: np.ndarray = _mix(np.array([(seed + _GOLDEN) & _MASK64], dtype=_U64))
    for w in words:
        h = _mix(h ^ w)
    return h


def _u64(a: np.ndarray) -> np.ndarray:
    """Integers as uint64 words (two's complement mod 2**64)."""
    return a.astype(np.int64, copy=False).view(_U64)


def _word(pid: np.ndarray) -> np.ndarray:
    """Each person id as a uint64 word: an int mod 2**64; a float with an integer value as
    that int, another float by its IEEE bits; a string s as w = mix(len(s)), then
    w = mix(w XOR ord(ch)) for each character."""
    kind = pid.dtype.kind
    if kind in "iu":
        # (wraps: mod 2**64; 64-bit ids are read in place, as their bits)
        return pid.view(_U64) if pid.dtype.itemsize == 8 else pid.astype(_U64)
    if kind == "f":
        x = pid.astype(np.float64)
        whole = (x == np.floor(x)) & (np.abs(x) < 2.0**63)
        words = np.where(whole, 0, x).view(_U64).copy()
        words[whole] = _u64(x[whole].astype(np.int64))
        return words
    if kind == "O":  # ints beyond int64
        return np.array([int(v) & _MASK64 for v in pid.tolist()], dtype=_U64)
    assert kind == "U"
    n, width = len(pid), pid.dtype.itemsize // 4
    length = np.char.str_len(pid).astype(_U64) if n else np.zeros(0, _U64)
    w = _mix(length.copy())
    if width and n:
        points = np.ascontiguousarray(pid).view(np.uint32).reshape(n, width)
        for i in range(width):
            w = np.where(length > i, _mix(w ^ points[:, i].astype(_U64)), w)
    return w


# -- the arguments -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    """The checked arguments that every partition of the work shares."""

    by: tuple[Any, ...]
    person: Any
    max_rows: int | None
    max_groups: int | None
    max_rows_per_group: int | None
    value: Any
    low: Fraction | None  # the bounds in the value's units
    high: Fraction | None
    g: Fraction  # the granularity (1 for counts)
    lo: int  # the bounds in steps of g
    hi: int
    seed: int


def _family(obj) -> str | None:
    """ "pandas", "polars", "dask", "spark" for a DataFrame of that library, else None (no
    import)."""
    top = type(obj).__module__.split(".")[0]
    name = type(obj).__name__
    if top == "pandas" and name == "DataFrame":
        return "pandas"
    if top == "polars" and name in ("DataFrame", "LazyFrame"):
        return "polars"
    if top in ("dask", "dask_expr") and hasattr(obj, "__dask_graph__") and hasattr(obj, "columns"):
        return "dask"
    if top == "pyspark" and name == "DataFrame":
        return "spark"
    return None


# -- the kinds of columns ----------------------------------------------------------------------


_NA_TYPES = ("NAType", "NaTType")


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ in _NA_TYPES


def _kind(a: np.ndarray, where: str) -> tuple[str, np.ndarray]:
    """A column's kind (int, float, str, bool, bytes, datetime, timedelta) and its values as
    a typed array; a missing value (None, NaN, NA, NaT) is a ValueError naming ``where``."""
    k = a.dtype.kind
    if k in "fcMm" and len(a) and np.isnan(a).any():
        raise ValueError(f"{where} has a missing value (NaN/NaT); drop or fill it first")
    kinds = {"i": "int", "u": "int", "f": "float", "U": "str", "b": "bool", "S": "bytes"}
    if k in kinds:
        return kinds[k], a
    if k in "Mm":
        return ("datetime" if k == "M" else "timedelta"), a
    if k != "O":
        raise TypeError(f"{where} has values of dtype {a.dtype}, which a table cannot key on")
    items = a.tolist()
    types = set(map(type, items))
    suspect = types & {type(None), float} or any(t.__name__ in _NA_TYPES for t in types)
    if suspect and any(map(_missing, items)):
        raise ValueError(f"{where} has a missing value (None/NaN/NA); drop or fill it first")
    if not types:
        return "empty", a
    if all(issubclass(t, str) for t in types):
        return "str", a
    if all(issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_)) for t in types):
        try:
            return "int", np.array(items, dtype=np.int64)
        except OverflowError:
            return "int", a
    if all(issubclass(t, (int, float, np.integer, np.floating)) for t in types) and not any(
        issubclass(t, (bool, np.bool_)) for t in types
    ):
        # ints beside floats compare as floats: exact only while every int is one (|x| <= 2**53)
        if any(isinstance(x, (int, np.integer)) and abs(int(x)) > 1 << 53 for x in items):
            raise TypeError(
                f"{where} mixes floats with ints beyond 2**53, which a float cannot tell apart "
                "(two ids or keys would become one): make the column all ints or all floats"
            )
        return "float", np.array(items, dtype=np.float64)
    if all(issubclass(t, (bool, np.bool_)) for t in types):
        return "bool", a.astype(bool)
    names = sorted(t.__name__ for t in types)
    raise TypeError(f"{where} holds values of types {names}, which a table cannot key on")


# -- the domain and each record's cell ---------------------------------------------------------


_NUMERIC = ("int", "float")


def _search(data: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index of each data value in ``keys`` (distinct values), -1 where absent."""
    if len(data) == 0 or len(keys) == 0:
        return np.full(len(data), -1, dtype=np.int64)
    if data.dtype != keys.dtype and data.dtype.kind in "MmSb":
        common = np.result_type(data, keys)
        data, keys = data.astype(common), keys.astype(common)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    pos = np.minimum(np.searchsorted(ordered, data), len(keys) - 1)
    return np.where(ordered[pos] == data, order[pos], -1).astype(np.int64)


def _by_dict(data: np.ndarray, keys: np.ndarray) -> np.ndarray:
    index = {v: i for i, v in enumerate(keys.tolist())}
    return np.array([index.get(v, -1) for v in data.tolist()], dtype=np.int64)


def _int_codes(data: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """_search for integers: a look-up table when the keys span a short range (for many
    8- or 16-bit ints, a table of every value of their type: int32 codes)."""
    if len(data) == 0 or len(keys) == 0:
        return np.full(len(data), -1, dtype=np.int64)
    if data.dtype.kind in "iu" and data.dtype.itemsize <= 2 and len(data) > 1 << 18:
        # a table of every value of the data's type (at most 2**16), read at the data's bits
        unsigned = np.dtype(f"u{data.dtype.itemsize}")
        every = np.arange(1 << 8 * data.dtype.itemsize, dtype=unsigned).view(data.dtype)
        codes = _int_codes(every, keys)
        return codes.astype(np.int32 if len(keys) < 2**31 else np.int64)[data.view(unsigned)]
    arrays = []
    for a in (data, keys):
        if a.dtype == object or (a.dtype.kind == "u" and a.size and int(a.max()) > _INT64_MAX):
            return _by_dict(data, keys)  # beyond int64: Python ints, exactly
        arrays.append(a.astype(np.int64, copy=False))
    data, keys = arrays
    kmin, kmax = int(keys.min()), int(keys.max())
    span = kmax - kmin + 1
    if span <= max(4 * len(keys), 1 << 16):
        table = np.full(span + 1, -1, dtype=np.int64)  # table[span]: outside the range
        table[keys - kmin] = np.arange(len(keys))
        with np.errstate(over="ignore"):  # mod 2**64: only kmin + x for 0 <= x < span lands
            offset = (data - np.int64(kmin)).view(_U64)  # below span
        return table[np.minimum(offset, _U64(span))]
    return _search(data, keys)


def _lookup(data: np.ndarray, kd: str, keys: np.ndarray, kk: str, column) -> np.ndarray:
    """The index in ``keys`` of each value of the data column, -1 where it is not a key; the
    kinds must agree (ints and floats compare by exact value)."""
    if "empty" in (kd, kk):
        return np.full(len(data), -1, dtype=np.int64)
    if kd != kk and not (kd in _NUMERIC and kk in _NUMERIC):
        raise TypeError(
            f"by column {column!r} holds {kd} values but keys[{column!r}] holds {kk} values; "
            "the data's keys must be of the domain's type"
        )
    if kd == "float" and kk == "int":
        whole = (data == np.floor(data)) & (np.abs(data) < 2.0**63)
        codes = _int_codes(np.where(whole, data, 0).astype(np.int64), keys)
        return np.where(whole, codes, -1)
    if kd == "int" and kk == "float":
        whole = np.flatnonzero((keys == np.floor(keys)) & (np.abs(keys) < 2.0**63))
        codes = _int_codes(data, keys[whole].astype(np.int64))
        return np.where(codes >= 0, whole[np.maximum(codes, 0)], -1) if len(whole) else codes
    if kd == "int":
        return _int_codes(data, keys)
    if kd == "str" and object in (data.dtype, keys.dtype):
        try:
            pd = importlib.import_module("pandas")
        except ImportError:
            return _search(data.astype(str), keys.astype(str))
        return pd.Index(keys, dtype=object).get_indexer(data).astype(np.int64)
    return _search(data, keys)


def _as_array(values, where: str) -> np.ndarray:
    """A key column's values as a 1-D array (a list of Python objects kept exact)."""
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{where} must be 1-D, got {values.ndim} dimensions")
        return values
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{where} must be a sequence of values, not {type(values).__name__}")
    items = list(values)
    a = np.empty(len(items), dtype=object)
    a[:] = items
    return a


class _Domain:
    """The public domain: the key columns of the table (in ``by``'s order) and the map from
    records' keys to cells."""

    def __init__(self, keys, by: tuple[Any, ...]):
        frame = _family(keys) in ("pandas", "polars") and type(keys).__name__ == "DataFrame"
        if not isinstance(keys, Mapping) and not frame:
            raise TypeError(
                "keys must be a dict {column: values} (their Cartesian product) or a pandas or "
                f"Polars DataFrame of key rows; got {type(keys).__name__}"
            )
        if set(keys if isinstance(keys, Mapping) else keys.columns) != set(by):
            names = list(keys if isinstance(keys, Mapping) else keys.columns)
            raise ValueError(f"keys' columns {names!r} must be by's columns {list(by)!r}")
        self.by = by
        self.frame = keys if frame else None
        self.kinds: list[str] = []
        self.values: list[np.ndarray] = []  # what each column's data is looked up in
        self.columns: dict[Any, np.ndarray] = {}
        for c in by:
            where = f"keys[{c!r}]"
            kind, a = _kind(_as_array(keys[c], where), where)
            if len(a) == 0:
                raise ValueError(f"keys must define a non-empty domain; {where} has no values")
            self.kinds.append(kind)
            self.columns[c] = a
            distinct = np.unique(a)
            if not frame and len(distinct) < len(a):
                raise ValueError(f"keys has duplicate rows: {where} repeats a value")
            self.values.append(a if not frame else distinct)
        if not frame:
            sizes = [len(v) for v in self.values]
            self.size = int(np.prod(sizes, dtype=object))
            if self.size > 2**31:
                raise ValueError(f"keys define {self.size} cells, more than a table can hold")
            self.strides = [int(np.prod(sizes[j + 1 :], dtype=object)) for j in range(len(by))]
            cell = np.arange(self.size)
            self.columns = {
                c: v[(cell // s) % len(v)]
                for c, v, s in zip(by, self.values, self.strides, strict=True)
            }
            return
        self.size = len(keys)
        rows = [
            _lookup(self.columns[c], k, v, k, c).astype(np.int64, copy=False)
            for c, k, v in zip(by, self.kinds, self.values, strict=True)
        ]
        code, self.steps = rows[0], []
        for j in range(1, len(by)):
            combined = code * len(self.values[j]) + rows[j]
            distinct = np.unique(combined)
            self.steps.append(distinct)
            code = np.searchsorted(distinct, combined)
        if len(np.unique(code)) < self.size:
            raise ValueError("keys has duplicate rows")
        self.row_of = np.empty(self.size, dtype=np.int64)
        self.row_of[code] = np.arange(self.size)

    def cells(self, data: dict[Any, np.ndarray]) -> np.ndarray:
        """Each record's cell (-1 outside the domain)."""
        if self.frame is None:
            # cell = sum of code_j * stride_j, built column by column (Horner) in int32
            # (a cell is below size <= 2**31); a row with a code -1 may wrap: it is set to -1
            cell: np.ndarray | None = None
            outside = None
            wide = np.int32 if self.size <= 2**31 else np.int64
            for j, (c, kk, keys) in enumerate(zip(self.by, self.kinds, self.values, strict=True)):
                kd, column = _kind(data[c], f"by column {c!r}")
                code = _lookup(column, kd, keys, kk, c)
                if cell is None or outside is None:
                    cell, outside = code.astype(wide), code < 0
                else:
                    cell *= len(self.values[j])
                    np.add(cell, code, out=cell, casting="unsafe")
                    outside |= code < 0
                del code
            assert cell is not None
            cell[outside] = -1
            return cell
        codes = []
        for c, kk, keys in zip(self.by, self.kinds, self.values, strict=True):
            kd, column = _kind(data[c], f"by column {c!r}")
            codes.append(_lookup(column, kd, keys, kk, c).astype(np.int64, copy=False))
        code = codes[0]
        for j, distinct in enumerate(self.steps, start=1):
            combined = code * len(self.values[j]) + codes[j]
            pos = np.minimum(np.searchsorted(distinct, combined), len(distinct) - 1)
            hit = (code >= 0) & (codes[j] >= 0) & (distinct[pos] == combined)
            code = np.where(hit, pos, -1)
        return np.where(code >= 0, self.row_of[np.maximum(code, 0)], -1)


# -- the values on the lattice -----------------------------------------------------------------


def _exact_steps(x, spec: _Spec, where: str) -> int:
    """One value in steps of g: round(x / g), halves to even, clamped to [lo, hi]."""
    if _missing(x) or (isinstance(x, (float, np.floating)) and not np.isfinite(x)):
        raise ValueError(f"{where} has a missing or infinite value {x!r}; drop or fill it first")
    if isinstance(x, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{where} must hold numbers; found {type(x).__name__} {x!r}")
    return min(max(round(_params.to_fraction(x, where) / spec.g), spec.lo), spec.hi)


def _steps(a: np.ndarray, spec: _Spec) -> np.ndarray:
    """The value column on the lattice: each value v becomes round(v / g) (the nearest
    integer, halves to even, v at its exact value), clamped to [lo, hi]; int64."""
    where = f"value column {spec.value!r}"
    k, g, lo, hi = a.dtype.kind, spec.g, spec.lo, spec.hi
    if k == "O":
        return np.array([_exact_steps(x, spec, where) for x in a.tolist()], dtype=np.int64)
    if k not in "iuf":
        raise TypeError(f"{where} must hold numbers, not dtype {a.dtype}")
    if k in "iu":
        if k == "u":
            a = np.minimum(a, _U64(_INT64_MAX))  # (beyond hi anyway)
        x = a.astype(np.int64)
        if g == 1:
            return np.clip(x, lo, hi)
        low, high = -((-lo * g.numerator) // g.denominator), (hi * g.numerator) // g.denominator
        inside = np.clip(x, low, high)  # [ceil(lo*g), floor(hi*g)]: the rest clamp to lo, hi
        p, q = g.numerator, g.denominator
        if max(abs(low), abs(high)) * q >= 2**62 or p >= 2**62:
            steps = np.array([min(max(round(Fraction(v) / g), lo), hi) for v in inside.tolist()])
        else:
            quotient, rest = np.divmod(inside * q, p)
            up = (2 * rest > p) | ((2 * rest == p) & (quotient % 2 == 1))
            steps = quotient + up
        return np.where(x < low, lo, np.where(x > high, hi, steps)).astype(np.int64)
    x = a.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"{where} has a missing or infinite value (NaN/inf); drop or fill it")
    t = x / float(g)
    dyadic = not (g.numerator & (g.numerator - 1) or g.denominator & (g.denominator - 1))
    big = np.abs(t) >= 2.0**52
    near_half = np.abs(t - np.floor(t) - 0.5) <= np.abs(t) * 2.0**-48
    exact = big | (near_half if not dyadic else False)  # where the float may round wrongly
    exact &= (t >= lo - 2 - abs(lo) * 2.0**-48) & (t <= hi + 2 + abs(hi) * 2.0**-48)
    n = np.clip(np.rint(np.where(exact | big, 0, t)), -(2.0**62), 2.0**62).astype(np.int64)
    steps = np.clip(n, lo, hi)
    far = np.flatnonzero(big & ~exact)  # beyond the bounds by more than 2 steps
    steps[far] = np.where(t[far] < lo, lo, hi)
    at = np.flatnonzero(exact)
    steps[at] = [_exact_steps(v, spec, where) for v in x[at].tolist()]
    return steps


# -- the bounding rule -------------------------------------------------------------------------


def _runs(*arrays: np.ndarray) -> np.ndarray:
    """True where a run of equal rows (over all ``arrays``) starts."""
    starts = np.zeros(len(arrays[0]), dtype=bool)
    starts[:1] = True
    for a in arrays:
        starts[1:] |= a[1:] != a[:-1]
    return starts


def _rank_in_runs(starts: np.ndarray) -> np.ndarray:
    """Each row's position within its run."""
    index = np.arange(len(starts))
    return index - np.maximum.accumulate(np.where(starts, index, 0))


def _group(word: np.ndarray, pid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A permutation that puts each person's rows together, and where each person starts
    in it.  One sort of uint64 keys, the row index packed into the low bits: integer ids of
    a short range are packed whole (id minus the least id: exact), other ids by the high bits
    of their word mixed (a bijection), and people whose keys agree there are then told apart
    by their ids.  Built a chunk of rows at a time, so that no temporary is a column long."""
    n = len(word)
    bits = max(1, (n - 1).bit_length())
    if bits > 40:
        return _group_wide(word, pid)
    mask = _U64((1 << bits) - 1)
    exact = pid.dtype.kind in "iu" and n > 0
    if exact:
        least = int(pid.min())
        exact = int(pid.max()) - least < 1 << (64 - bits)
    key = np.empty(n, dtype=_U64)
    for i in range(0, n, _CHUNK):
        j = min(i + _CHUNK, n)
        if exact:
            k = pid[i:j].astype(_U64)  # (mod 2**64: k - least is the id minus the least)
            k -= _U64(least & _MASK64)
            k <<= _U64(bits)
        else:
            k = _mix(word[i:j].copy())
            k &= ~mask
        k |= np.arange(i, j, dtype=_U64)
        key[i:j] = k
    key.sort()
    starts = np.empty(n, dtype=bool)
    starts[:1] = True
    for i in range(1, n, _CHUNK):
        j = min(i + _CHUNK, n)
        starts[i:j] = (key[i:j] ^ key[i - 1 : j - 1]) > mask
    key &= mask
    order = key.astype(np.int32) if n <= 2**31 else key.view(np.int64)
    del key
    if not exact:
        p = pid[order]
        clash = (p[1:] != p[:-1]) & ~starts[1:]
        if clash.any():  # two people in one run of keys: order that run by id
            first = np.flatnonzero(starts)
            ends = np.r_[first[1:], n]
            runs = np.unique(np.searchsorted(first, np.flatnonzero(clash) + 1, side="right") - 1)
            at = np.concatenate([np.arange(first[i], ends[i]) for i in runs])
            run = np.repeat(np.arange(len(runs)), ends[runs] - first[runs])
            order[at] = order[at][np.lexsort((p[at], run))]
            p[at] = pid[order[at]]
            starts[1:] |= p[1:] != p[:-1]
    return order, starts


def _group_wide(word: np.ndarray, pid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group` for 2**40 rows or more: a stable sort of the words, then ids."""
    order = np.argsort(word, kind="stable")
    top, p = word[order], pid[order]
    new_top, new_pid = top[1:] != top[:-1], p[1:] != p[:-1]
    clash = new_pid & ~new_top
    if clash.any():
        starts = np.flatnonzero(np.r_[True, new_top])
        ends = np.r_[starts[1:], len(word)]
        runs = np.unique(np.searchsorted(starts, np.flatnonzero(clash) + 1, side="right") - 1)
        at = np.concatenate([np.arange(starts[i], ends[i]) for i in runs])
        run = np.repeat(np.arange(len(runs)), ends[runs] - starts[runs])
        order[at] = order[at][np.lexsort((p[at], run))]
        p[at] = pid[order[at]]
        new_pid = p[1:] != p[:-1]
    return order, np.r_[True, new_pid]


def _priorities(spec: _Spec, w, c, v, k) -> np.ndarray:
    """H(seed; 1, id, cell + 2**32 occurrence[, steps]) of each row (no steps for counts)."""
    words = (w, _u64(c) | (_u64(k) << _U64(32)))
    return _hash(spec.seed, _U64(_ROW_TAG), *words, *(() if v is None else (_u64(v),)))


def _before(p: np.ndarray, a: int, b: int, *ties: np.ndarray) -> np.ndarray:
    """For each person (a column of these 2-D arrays): is their row a before row b in the order
    (p, *ties)?  (Equal p is rare: the ties are settled on those people alone.)"""
    first = p[a] < p[b]
    at = np.flatnonzero(p[a] == p[b])
    if len(at):
        result, undecided = np.zeros(len(at), dtype=bool), np.ones(len(at), dtype=bool)
        for t in ties:
            x, y = t[a][at], t[b][at]
            result |= undecided & (x < y)
            undecided &= x == y
        first[at] = result
    return first


def _few(row_key, cell_key, c, v, spec: _Spec) -> np.ndarray:
    """The rule for people of s rows each, s small: ``c`` and ``v`` are (s, people) arrays
    (row i of every person contiguous), ``row_key`` and ``cell_key`` H(seed; 1, id) and
    H(seed; 2, id) as (1, people) arrays;
    every pair of a person's rows compared once, vectorised across people."""
    s = c.shape[0]
    pairs = [(a, b) for b in range(1, s) for a in range(b)]
    same = {(a, b): c[a] == c[b] for a, b in pairs}
    k = np.zeros(c.shape, dtype=np.int64)
    for a, b in pairs:
        k[b] += same[a, b] if v is None else same[a, b] & (v[a] == v[b])
    prio = _mix(row_key ^ (_u64(c) | (_u64(k) << _U64(32))))
    if v is not None:
        prio = _mix(prio ^ _u64(v))
    keep = np.ones(c.shape, dtype=bool)
    if spec.max_groups is not None:
        first = np.ones(c.shape, dtype=bool)
        for a, b in pairs:
            first[b] &= ~same[a, b]
        cp, rank = _mix(cell_key ^ _u64(c)), 0 * k
        for a, b in pairs:
            ab = _before(cp, a, b, c)
            rank[b] += first[a] & ab
            rank[a] += first[b] & ~ab & ~same[a, b]
        keep &= rank < spec.max_groups
    if spec.max_rows_per_group is None and spec.max_rows is None:
        return keep
    ties = (c, k) if v is None else (c, v, k)  # the order (priority, cell, value, occurrence)
    before = {(a, b): _before(prio, a, b, *ties) for a, b in pairs}
    if spec.max_rows_per_group is not None:
        rank = 0 * k
        for a, b in pairs:
            rank[b] += same[a, b] & before[a, b]
            rank[a] += same[a, b] & ~before[a, b]
        keep &= rank < spec.max_rows_per_group
    if spec.max_rows is not None:
        rank = 0 * k
        for a, b in pairs:
            rank[b] += keep[a] & before[a, b]
            rank[a] += keep[b] & ~before[a, b]
        keep &= rank < spec.max_rows
    return keep


def _sorted(w, c, v, g, spec: _Spec) -> np.ndarray:
    """The rule for people of many rows (``g`` their group, each person's rows together), by
    sorting: the same choice as :func:`_pairwise`."""
    counting = v is None
    v = np.zeros(len(c), dtype=np.int64) if v is None else v
    o = np.lexsort((v, c, g))
    w, c, v, g = w[o], c[o], v[o], g[o]
    new_cell = _runs(g, c)
    k = _rank_in_runs(new_cell | _runs(v))
    prio = _priorities(spec, w, c, None if counting else v, k)
    keep = np.ones(len(c), dtype=bool)
    if spec.max_groups is not None:
        f = np.flatnonzero(new_cell)
        cp = _hash(spec.seed, _U64(_CELL_TAG), w[f], _u64(c[f]))
        o2 = np.lexsort((c[f], cp, g[f]))
        rank = np.empty(len(f), dtype=np.int64)
        rank[o2] = _rank_in_runs(_runs(g[f][o2]))
        keep &= (rank < spec.max_groups)[np.cumsum(new_cell) - 1]
    if spec.max_rows_per_group is not None:
        o3 = np.lexsort((k, v, prio, c, g))
        rank = np.empty(len(c), dtype=np.int64)
        rank[o3] = _rank_in_runs(_runs(g[o3], c[o3]))
        keep &= rank < spec.max_rows_per_group
    if spec.max_rows is not None:
        at = np.flatnonzero(keep)
        o4 = np.lexsort((k[at], v[at], c[at], prio[at], g[at]))
        rank = np.empty(len(at), dtype=np.int64)
        rank[o4] = _rank_in_runs(_runs(g[at][o4]))
        keep[at] = rank < spec.max_rows
    out = np.empty(len(c), dtype=bool)
    out[o] = keep
    return out


def _select(pid: np.ndarray, cell: np.ndarray, val: np.ndarray | None, spec: _Spec) -> np.ndarray:
    """Which rows the bounding keeps (``val`` None for counts; the rule: ``tabulate``'s
    docstring)."""
    n = len(cell)
    keep = np.ones(n, dtype=bool)
    bounds = (spec.max_rows, spec.max_groups, spec.max_rows_per_group)
    limit = min(b for b in bounds if b is not None)
    if n <= limit:
        return keep
    word = _word(pid)
    order, starts = _group(word, pid)
    first = np.flatnonzero(starts)
    sizes = np.diff(np.r_[first, n])
    if sizes.max() >= 2**32:  # (the occurrence number's room in a priority's word)
        raise ValueError("person: one person has 2**32 rows or more, which bounding cannot rank")
    for s in range(limit + 1, min(int(sizes.max()), _PAIRWISE_MAX) + 1):
        everyone = np.flatnonzero(sizes == s)
        for i in range(0, len(everyone), _CHUNK // s):  # (a chunk of rows at a time)
            people = everyone[i : i + _CHUNK // s]
            at = order[(first[people][:, None] + np.arange(s)).ravel()]
            ids = word[order[first[people]]]
            row_key, cell_key = (
                _hash(spec.seed, _U64(t), ids)[None, :] for t in (_ROW_TAG, _CELL_TAG)
            )
            v = None if val is None else np.ascontiguousarray(val[at].reshape(-1, s).T)
            c = np.ascontiguousarray(cell[at].reshape(-1, s).T)
            keep[at] = _few(row_key, cell_key, c, v, spec).T.ravel()
    many = np.flatnonzero(sizes > max(limit, _PAIRWISE_MAX))
    if len(many):
        sz = sizes[many]
        rows = np.arange(sz.sum()) + np.repeat(first[many] - (np.cumsum(sz) - sz), sz)
        at = order[rows]
        g = np.repeat(np.arange(len(many)), sizes[many])
        keep[at] = _sorted(word[at], cell[at], None if val is None else val[at], g, spec)
    return keep
