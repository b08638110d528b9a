"""Input handling and the release path of :mod:`dgauss.mechanisms`: values of every form in
(arrays, lists, scalars, object arrays of big ints, pandas Series and DataFrames, values on a
lattice g·ℤ), checked and flattened; the noise drawn in one batch and added with overflow
checks; the result restored to the input's form.  Dask collections never come here: the
one dispatch point, :func:`dgauss._dispatch.release`, sends them to :mod:`dgauss._lazy`.
The rules are the module docstring of :mod:`dgauss.mechanisms`.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _driver, _params
from dgauss._kinds import Kind

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


# ==========================================================================
# Inputs and outputs
# ==========================================================================


def _fmt(q: Fraction | None) -> str:
    """A rational for messages: an int as is, else about 6 significant digits."""
    if q is None:
        return "None"
    return str(q.numerator) if q.denominator == 1 else f"{float(q):.6g}"


def _granularity(value) -> Fraction | None:
    if value is None:
        return None
    return _params.positive(value, "granularity")  # 1 too: whole-number floats are welcome


@dataclass
class _Prepared:
    """An input as lattice integers: ``flat`` (1-D int or object), and how to give it back."""

    flat: np.ndarray
    shape: tuple[int, ...]
    scalar: bool
    pandas: Any  # the Series / DataFrame the values came from, or None
    source: np.ndarray | None  # the caller's ndarray (an object one stays object), or None
    columns: list | None = None  # the DataFrame columns noised (columns=), or None for all


def _is_pandas(values) -> bool:
    module = type(values).__module__
    return (module == "pandas" or module.startswith("pandas.")) and hasattr(values, "to_numpy")


def _object_ints(arr: np.ndarray, name: str) -> None:
    for v in arr.flat:
        if type(v) is bool or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold integers; found {type(v).__name__} {v!r}")


#: What an object array may hold with a granularity: exact numbers (never bool, never text).
_NUMBERS = (int, np.integer, float, np.floating, Fraction, decimal.Decimal)


def _exact(v, name: str) -> Fraction:
    """One value of an object array, at its exact value (a float at its binary value)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, _NUMBERS):
        raise TypeError(f"{name} must hold numbers; found {type(v).__name__} {v!r}")
    if isinstance(v, np.floating):
        if not np.isfinite(v):
            raise ValueError(f"{name} must be finite to lie on a lattice, found {v!r}")
        return Fraction(*v.as_integer_ratio())  # long doubles too
    if isinstance(v, (float, decimal.Decimal)) and not math.isfinite(v):
        raise ValueError(f"{name} must be finite to lie on a lattice, found {v!r}")
    if isinstance(v, np.integer):
        return Fraction(int(v))
    return Fraction(v)  # int, float, Fraction or Decimal: exact


def _on_lattice(arr: np.ndarray, g: Fraction, name: str) -> np.ndarray:
    """arr / g as a flat (C order) array of integers (int64, or object where they are large),
    or ValueError if a value is not an exact multiple of g; float values are taken at their
    exact binary value."""
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite to lie on a lattice")
        pow2 = g.numerator & (g.numerator - 1) == 0 and g.denominator & (g.denominator - 1) == 0
        if pow2 and arr.dtype.itemsize <= 8:
            q = arr.astype(np.float64).reshape(-1) / float(g)  # exact: a power of two
            if np.all(q == np.floor(q)) and np.all(np.abs(q) < 2.0**53):
                return q.astype(np.int64)
    out = np.empty(arr.size, dtype=object)
    for i, v in enumerate(arr.flat):
        x = _exact(v, name) / g
        if x.denominator != 1:
            raise ValueError(
                f"{name} has a value not on the lattice granularity*Z: {v!r} is not a "
                f"multiple of {g} (values are never rounded)"
            )
        out[i] = x.numerator
    return _compact(out)


def _compact(obj: np.ndarray) -> np.ndarray:
    """An object array of Python ints as int64 when every value fits."""
    if obj.size == 0 or all(INT64_MIN <= v <= INT64_MAX for v in obj):
        return obj.astype(np.int64)
    return obj


def _pandas_array(values, g: Fraction | None, columns) -> tuple[np.ndarray, list | None]:
    """A Series' or DataFrame's values (only ``columns`` of a DataFrame), each column checked:
    no missing values, and integers (or, with a granularity, numbers)."""
    frame = getattr(values, "ndim", 1) == 2
    chosen = None
    if columns is not None:
        if not frame:
            raise TypeError("columns= chooses count columns of a DataFrame, not of a Series")
        chosen = list(columns) if isinstance(columns, (list, tuple)) else [columns]
        if not chosen:
            raise ValueError("columns= must name at least one column")
        for c in chosen:
            if c not in values.columns:
                raise ValueError(
                    f"columns= names {c!r}, which is not a column; the columns are: "
                    + ", ".join(map(repr, values.columns))
                )
        values = values[chosen]
    parts = [values[c] for c in values.columns] if frame else [values]
    for part in parts:
        label = f"column {part.name!r}" if part.name is not None else "the Series"
        missing = int(part.isna().sum())
        if missing:
            raise ValueError(
                f"{label} has {missing} missing value{'s' if missing != 1 else ''} "
                "(NaN, None or <NA>); fill or drop them before noising"
            )
        dt = part.dtype
        kind = (
            dt.kind
            if isinstance(dt, np.dtype)
            else np.dtype(getattr(dt, "numpy_dtype", np.dtype(object))).kind
        )
        text = isinstance(dt, np.dtype) and kind in "SU" or type(dt).__name__ == "StringDtype"
        if kind == "b" or text or (kind not in "iuf" and not _all_numbers(part)):
            hint = " (choose the count columns with columns=[...])" if frame else ""
            raise ValueError(f"{label} holds {part.dtype} values, not integer counts{hint}")
        if kind == "f" and g is None:
            raise TypeError(
                f"{label} holds floats: pass granularity=g (values on the lattice g*Z, "
                "e.g. granularity=1 for whole numbers) or integer counts; floats are never "
                "rounded"
            )
    arr = _frame_values(parts) if frame and len(parts) > 1 else np.asarray(values.to_numpy())
    return arr, chosen


def _frame_values(parts: list) -> np.ndarray:
    """A DataFrame's columns as one 2-D array, exactly: in their common NumPy dtype when each
    converts to it without rounding (pandas would round int64 counts beyond 2**53 beside a
    float column, and give float64 for int64 beside uint64), else as exact Python numbers."""
    arrays = [np.asarray(part.to_numpy()) for part in parts]
    if all(a.dtype.kind in "iuf" for a in arrays):
        common = np.result_type(*(a.dtype for a in arrays))
        if common.kind in "iu":
            return np.column_stack(arrays).astype(common, copy=False)
        floats = any(a.dtype.kind == "f" for a in arrays)  # else int64 beside uint64
        ints = [a for a in arrays if a.dtype.kind in "iu" and a.size]
        if floats and all(_exact_in(a, common) for a in ints):
            return np.column_stack(arrays).astype(common, copy=False)  # ints beside floats
    return np.column_stack([a.astype(object) for a in arrays])


def _exact_in(ints: np.ndarray, floats: np.dtype) -> bool:
    """Whether every integer of ``ints`` (not empty) is exact in the float dtype ``floats``."""
    limit = 2 ** (np.finfo(floats).nmant + 1)
    return -limit <= int(ints.min()) and int(ints.max()) <= limit


def _all_numbers(part) -> bool:
    """Whether an object column holds numbers only (ints, or on a lattice any exact number)."""
    return all(type(v) is not bool and isinstance(v, _NUMBERS) for v in part.tolist())


def _prepare(values, g: Fraction | None, name: str = "values", columns=None) -> _Prepared:
    pandas = values if _is_pandas(values) else None
    source = values if isinstance(values, np.ndarray) else None
    scalar = False
    chosen = None
    if columns is not None and pandas is None:
        raise TypeError("columns= chooses count columns of a pandas DataFrame")
    if pandas is not None:
        arr, chosen = _pandas_array(values, g, columns)
    elif isinstance(values, np.ndarray):
        masked = np.ma.count_masked(values) if isinstance(values, np.ma.MaskedArray) else 0
        if masked:
            raise ValueError(
                f"{name} has {masked} masked value{'s' if masked != 1 else ''}; fill or drop "
                "them before noising"
            )
        arr = np.asarray(values)  # a subclass (np.matrix, a masked array) as a plain array
    elif isinstance(values, (bool, np.bool_)):
        raise TypeError(f"{name} must be integers, not bool")
    elif isinstance(values, (int, np.integer)):
        scalar = True
        arr = np.array(int(values), dtype=object)
    elif isinstance(values, (float, np.floating)):
        scalar = True
        arr = np.asarray(values)
    elif isinstance(values, (Fraction, decimal.Decimal)):  # on a lattice, with a granularity
        scalar = True
        arr = np.array(values, dtype=object)
    elif isinstance(values, (list, tuple)):
        arr = np.array(values, dtype=object)
        if arr.size and all(isinstance(v, (float, np.floating)) for v in arr.flat):
            arr = arr.astype(np.float64)
    else:
        raise TypeError(
            f"{name} must be an array, list, int or pandas object of integers, "
            f"not {type(values).__name__}"
        )
    kind = arr.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must be integers, not bool (convert with .astype(int))")
    if kind not in "iufO":
        raise TypeError(f"{name} must be integers, not dtype {arr.dtype}")
    if kind == "O":
        if g is None:
            _object_ints(arr, name)
            flat = _compact(np.asarray(arr, dtype=object).ravel()) if source is None else None
            if flat is None:  # the caller's object array: keep it object (exact ints)
                flat = np.ascontiguousarray(arr).ravel()
        else:
            flat = _on_lattice(arr, g, name)
    elif kind == "f":
        if g is None:
            raise TypeError(
                f"{name} are floats: pass granularity=g (values on the lattice g*Z, "
                "e.g. granularity=0.5) or integer counts; floats are never rounded"
            )
        flat = _on_lattice(arr, g, name)
    elif g is not None and g != 1:
        flat = _on_lattice(arr.astype(object), g, name)
    else:
        flat = np.ascontiguousarray(arr).reshape(-1)
    return _Prepared(flat, tuple(arr.shape), scalar, pandas, source, chosen)


def _restore(prep: _Prepared, result: np.ndarray):
    """The result in the input's form: same shape; a scalar for a scalar; pandas for pandas."""
    shaped = result.reshape(prep.shape)
    if prep.scalar:
        value = shaped.item() if shaped.dtype != object else shaped[()]
        return value
    if prep.pandas is not None:
        like = prep.pandas
        if prep.columns is not None:  # the chosen columns noised, the others as they were
            frame = like.copy()
            for i, c in enumerate(prep.columns):
                frame[c] = shaped[:, i]
            return frame
        if getattr(like, "ndim", 1) == 2:
            return type(like)(shaped, index=like.index, columns=like.columns)
        return type(like)(shaped, index=like.index, name=like.name)
    return shaped


# ==========================================================================
# Drawing and adding the noise
# ==========================================================================


def _clipped(result: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """Clip in place (int64) or elementwise (exact ints; also when a bound lies beyond int64
    on the far side, so that every value becomes that bound)."""
    if result.dtype != object:
        if (lo is None or lo <= INT64_MAX) and (hi is None or hi >= INT64_MIN):
            lo = None if lo is None else max(lo, INT64_MIN)  # a bound beyond int64 on the
            hi = None if hi is None else min(hi, INT64_MAX)  # near side clips nothing
            return np.clip(result, lo, hi, out=result)
        result = result.astype(object)
    low = -math.inf if lo is None else lo
    high = math.inf if hi is None else hi
    return np.array([min(max(v, low), high) for v in result], dtype=object)


def _times(lattice: np.ndarray, g: Fraction) -> np.ndarray:
    """lattice * g as float64, each the double nearest the exact product (vectorized when g
    is dyadic and the integers are below 2**53, where one rounding gives exactly that), or
    OverflowError where a product lies beyond the float64 range."""
    dyadic = g.denominator & (g.denominator - 1) == 0 and g.numerator < 2**53
    if lattice.dtype != object and dyadic and lattice.size and np.abs(lattice).max() < 2**53:
        with np.errstate(over="ignore"):
            result = lattice.astype(np.float64) * float(g)
    else:
        result = np.array([_float(int(v) * g) for v in lattice.tolist()], dtype=np.float64)
    if not np.isfinite(result).all():
        raise OverflowError(
            "a value plus its noise lies beyond the float64 range (about 1.8e308), which "
            "a result with a granularity cannot hold"
        )
    return result


def _float(q: Fraction) -> float:
    """The double nearest ``q``, or inf beyond the float64 range."""
    try:
        return float(q)
    except OverflowError:
        return math.inf


def _check_clip(clip, g: Fraction | None = None) -> tuple[int | None, int | None] | None:
    """``clip`` as bounds in lattice steps: integers as given without a granularity; with a
    granularity g, any rational bounds in the values' units, narrowed to the multiples of g
    between them (the clipped values stay on the lattice g*Z)."""
    if clip is None:
        return None
    if not isinstance(clip, (tuple, list)) or len(clip) != 2:
        raise TypeError("clip must be None or a pair (lo, hi), either of them None")
    exact = _params.integer if g is None else _params.to_fraction
    lo = None if clip[0] is None else exact(clip[0], "clip[0]")
    hi = None if clip[1] is None else exact(clip[1], "clip[1]")
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"clip must have lo <= hi, got {clip!r}")
    if g is None:
        return (
            None if lo is None else int(lo),
            None if hi is None else int(hi),
        )  # (integers already: _params.integer)
    steps = (None if lo is None else math.ceil(lo / g), None if hi is None else math.floor(hi / g))
    if steps[0] is not None and steps[1] is not None and steps[0] > steps[1]:
        raise ValueError(
            f"clip={clip!r} holds no multiple of granularity {g} (clipped values stay "
            "on the lattice granularity*Z)"
        )
    return steps


def _check_overflow(overflow: str) -> str:
    if overflow not in ("raise", "object"):
        raise ValueError(f"overflow must be 'raise' or 'object', got {overflow!r}")
    return overflow


def _add_int64(noise: np.ndarray, flat: np.ndarray, overflow: str) -> np.ndarray:
    """noise + flat (any integer dtype), in place in ``noise`` (int64) when every sum fits
    int64 -- in one pass for int64 values, checked by the noise's range for narrower ones,
    exactly otherwise (uint64 values beyond int64, noise near int64's ends) -- else
    OverflowError, or exact Python ints with ``overflow="object"``."""
    core = _core_module or _load_core()
    big = flat.dtype == np.uint64 and flat.size > 0 and int(flat.max()) > INT64_MAX
    if flat.dtype in (np.int64, np.uint64) and not big:
        if core.add_int64_checked(noise, flat.view(np.int64)) < 0:
            return noise
        exact = None  # a sum leaves int64 (noise is as it was)
    else:  # |values| < 2**32: a sum leaves int64 only if the noise is that close to its ends
        lo, hi = (int(noise.min()), int(noise.max())) if noise.size else (0, 0)
        if not big and INT64_MIN + 2**32 <= lo and hi <= INT64_MAX - 2**32:
            np.add(noise, flat, out=noise, casting="unsafe")
            return noise
        exact = flat.astype(object) + noise.astype(object)
        if all(INT64_MIN <= v <= INT64_MAX for v in exact):
            noise[...] = exact
            return noise
    if overflow == "object":
        return exact if exact is not None else flat.astype(object) + noise.astype(object)
    raise OverflowError(
        "a value plus its noise leaves int64 (the values reach "
        f"{_fmt(Fraction(int(flat.max())))}); pass overflow='object' for exact Python ints"
    )


def _check_out(out, prep: _Prepared, float_out: bool, overflow: str = "raise") -> None:
    """``out``: None, or a writeable ndarray of the values' shape that can hold the result
    (float64 with a granularity, else int64 or object, and object with ``overflow="object"``);
    checked before any noise is drawn."""
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, not {type(out).__name__}")
    if tuple(out.shape) != prep.shape:
        raise ValueError(f"out must have the shape of values, {prep.shape}, not {out.shape}")
    allowed = ("float64",) if float_out else ("int64", "object")
    if out.dtype.name not in allowed:
        raise TypeError(f"out must have dtype {' or '.join(allowed)}, not {out.dtype}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    if overflow == "object" and out.dtype != object and not float_out:
        raise TypeError(
            f"out has dtype {out.dtype}, which cannot hold the exact Python ints that "
            "overflow='object' returns beyond int64: pass an object out, or overflow='raise'"
        )


def _noise_into(kind: Kind, param: Fraction, count: int, rng, dtype, workers, out=None):
    from dgauss import _core  # the compiled core, on first use

    return _driver.draw(
        _core.fill,
        kind,
        param,
        (count,),
        0,
        rng,
        dtype,
        workers,
        out=out,
        os_threads=_core.os_threads,
    )


def _add(
    prep: _Prepared,
    kind: Kind,
    param: Fraction,
    int64_safe: bool,
    *,
    rng,
    out,
    clip,
    overflow: str,
    workers,
    granularity: Fraction | None,
):
    """values + noise, the noise drawn first in one batch; the result in the input's form."""
    flat = prep.flat
    n = flat.size
    float_out = granularity is not None
    _check_out(out, prep, float_out, overflow)
    # the noise, in one batch, before the values are looked at
    target = None
    if (
        out is not None
        and not float_out
        and out.dtype == np.int64
        and out.flags.c_contiguous
        and int64_safe
        and flat.dtype != object
        and not np.may_share_memory(out, flat)  # out=values: add before overwriting
    ):
        target = out.reshape(-1)  # the noise goes straight into out; values added in place
    noise = _noise_into(
        kind,
        param,
        n,
        rng,
        np.dtype(np.int64) if int64_safe else np.dtype(object),
        workers,
        out=target,
    )
    noise = noise.reshape(-1)
    # values + noise, exactly
    result: np.ndarray
    if noise.dtype != object and flat.dtype != object:
        # with a granularity the result is float64: the lattice may leave int64 on the way
        result = _add_int64(noise, flat, "object" if float_out else overflow)
    else:
        result = flat.astype(object) + noise.astype(object)
    if clip is not None:
        result = _clipped(result, *clip)
    if float_out:
        assert granularity is not None
        result = _times(result, granularity)
    if out is not None:
        if result is noise and target is not None:
            return out  # the noise was drawn into out and the values added there
        if result.dtype == object and out.dtype != object:
            if out.dtype == np.int64 and all(INT64_MIN <= v <= INT64_MAX for v in result):
                result = result.astype(np.int64)
            else:
                raise OverflowError(
                    "a value plus its noise leaves int64, the dtype of out; pass an object "
                    "out for exact Python ints"
                )
        np.copyto(out, result.reshape(out.shape))  # out may be any view, contiguous or not
        return out
    return _restore(prep, result)


def _is_dask(values) -> bool:
    """A Dask collection (array, DataFrame, Series), told apart without importing Dask."""
    module = type(values).__module__
    return module.split(".")[0] == "dask" and hasattr(values, "__dask_graph__")


def _check_draw(rng, workers) -> None:
    """``rng`` and ``workers`` as the sampler will take them (checked before the release)."""
    _params.workers(workers, _params.bit_generator(rng))


#: The largest finite float64.
_FLOAT_MAX = Fraction(np.finfo(np.float64).max)


def _check_float_range(flat: np.ndarray, g: Fraction) -> None:
    """With a granularity the result is float64: every value (``flat``, in steps of g) must
    lie in its range before the noise is added."""
    if flat.size == 0:
        return
    if flat.dtype == object:
        top = max(abs(int(v)) for v in flat)
    else:
        top = max(abs(int(flat.min())), abs(int(flat.max())))
    if top * g > _FLOAT_MAX:
        raise ValueError(
            "values reach beyond the float64 range (about 1.8e308) that the result of a "
            "granularity holds"
        )


def _lean_release(mech, values: np.ndarray, take):
    """The common release, the lean way: an int64 ndarray of 1 to LEAN_MAX counts, no
    granularity, every keyword at its default (:func:`_noised_lean`); None when the call
    must go the general way."""
    if values.dtype is not _INT64 or mech.granularity is not None:
        return None  # (a byte-swapped int64 dtype is another object: the general way)
    job = mech.__dict__.get("_lean_job", _driver._UNSEEN)  # (settings are fixed)
    if job is _driver._UNSEEN:
        job = _driver.lean_job(mech._kind, mech._param, 0)
        mech.__dict__["_lean_job"] = _driver.warmed(job)  # (the next calls: by inversion)
    return _noised_lean(job, values, take)


def _lean_add(kind: Kind, param, values):
    """``add_*_noise(values, sigma2=param)`` (``scale=``) with every other keyword at its
    default, the lean way (:func:`_noised_lean`: one release of a mechanism of k = 1, which
    nothing else can spend); None when the call must go the general way, and for a
    parameter it refuses (the general way then refuses it, in its own words)."""
    if type(values) is not np.ndarray or values.dtype is not _INT64:
        return None
    try:
        job = _driver.lean_job(kind, param, 0)
    except (ValueError, TypeError):
        return None
    return _noised_lean(job, values, None)


def _noised_lean(job: tuple | None, values: np.ndarray, take):
    """``values`` (an int64 ndarray) + noise of ``job`` (:func:`dgauss._driver.lean_job`),
    drawn from the OS as :func:`dgauss.sample_gaussian` draws a batch that size, and added
    exactly in place; ``take(n)`` (if given) first.  What the general way gives and raises
    (the release counted first, an OverflowError after the draw); None (nothing done) for
    no job or a size outside 1 to LEAN_MAX."""
    n = values.size
    if job is None or not 1 <= n <= _LEAN_MAX:
        return None
    core = _core_module or _load_core()
    if take is not None:
        take(n)
    kind, num, den, mu, first = job
    noised, bad = core.noised_int64(kind, num, den, mu, _driver.lean_method(first, n), values)
    if bad < 0:
        return noised
    flat = np.ascontiguousarray(values).reshape(-1)
    return _add_int64(noised.reshape(-1), flat, "raise")  # a sum leaves int64: its message


_core_module: Any = None
_LEAN_MAX = _driver.LEAN_MAX
_INT64 = np.dtype(np.int64)


def _is_one(x) -> bool:
    """Whether ``x`` is the int 1 (a default left as it is)."""
    return type(x) is int and x == 1


def _release_defaults(granularity, rng, out, clip, workers, columns, overflow) -> bool:
    """Whether a release's keywords are all at their defaults (the lean way's condition;
    written out, not a loop: it is on the path of every small call)."""
    return (
        granularity is None
        and rng is None
        and out is None
        and clip is None
        and workers is None
        and columns is None
        and overflow == "raise"
    )


def _load_core() -> Any:
    """The compiled core, imported on first use and kept."""
    global _core_module
    from dgauss import _core

    _core_module = _core
    return _core


def _release(mech, values, take, rng, out, clip, overflow: str, workers, columns):
    """One release of ``mech`` (a :class:`GaussianMechanism` or :class:`LaplaceMechanism`):
    check every argument, ``take()`` the release (count it, spend the budget: it raises to
    refuse), then noise ``values``.  Nothing is drawn before ``take()`` admits the release, and
    nothing is counted before every argument has been checked.  (A Dask collection never
    gets here: :mod:`dgauss._dispatch` sends it to the lazy path.)  An int64 array with
    every keyword at its default goes the lean way (:func:`_lean_release`)."""
    if type(values) is np.ndarray and _release_defaults(
        None, rng, out, clip, workers, columns, overflow
    ):  # (the granularity is the mechanism's: _lean_release checks it)
        noised = _lean_release(mech, values, take)
        if noised is not None:
            return noised
    g = mech.granularity
    prep = _prepare(values, g, columns=columns)
    clip_, overflow_ = _check_clip(clip, g), _check_overflow(overflow)
    _check_out(out, prep, g is not None, overflow_)
    _check_draw(rng, workers)
    if g is not None:
        _check_float_range(prep.flat, g)
    take(prep.flat.size)
    return _add(
        prep,
        mech._kind,
        mech._param,
        _driver.int64_safe(mech._kind, mech._param),
        rng=rng,
        out=out,
        clip=clip_,
        overflow=overflow_,
        workers=workers,
        granularity=mech.granularity,
    )
