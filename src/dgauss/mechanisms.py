"""Noising arrays of counts: the discrete Gaussian and discrete Laplace mechanisms, with the
privacy guarantee attached, and an accountant that spends one budget over several releases.

A mechanism adds exact noise (the compiled samplers) to every value of an array; its noise
is set in exactly one way (a variance or scale, a zCDP ρ, or an (ε, δ) target calibrated by
:mod:`dgauss.accounting`), and it reports what it gives through the same module.

>>> import numpy as np, dgauss
>>> counts = np.array([12, 0, 7, 3])
>>> mech = dgauss.GaussianMechanism(rho=0.5)          # one count per person: sensitivity 1
>>> mech.sigma2
Fraction(1, 1)
>>> noisy = mech(counts, rng=np.random.default_rng(1))  # seeded: for examples only
>>> noisy.dtype, noisy.shape
(dtype('int64'), (4,))

The rules every entry point follows (the functions, the mechanisms' calls, the Accountant's
``add_*_noise``):

* **Inputs**, of any shape: Python ints, floats, lists and nested lists; NumPy arrays of any
  integer dtype, 0-d to N-D, C- or Fortran-ordered or strided views; object arrays of Python
  ints; pandas Series and DataFrames (returned with their index and columns; ``columns=``
  chooses the count columns, the others come back as they were); Dask arrays, DataFrames
  and Series (noised lazily, :mod:`dgauss.dask`).  The result has the input's shape and
  form (a Python scalar for a scalar, an ndarray for a list).  Floats, bools and anything
  else are refused, unless a ``granularity`` g is given: then values (floats, ints,
  Fractions, Decimals) must be exact multiples of g (never rounded), the mechanism counts
  sensitivity, σ² and scale in steps of g, adds g·(integer noise), and returns float64,
  each value the double nearest the exact value + g·noise.
* **One noise value per element**, drawn in one batch in C order (a DataFrame's rows, each
  across the columns in the order of ``columns=``): with a seeded ``rng`` the noise is that
  of one ``sample_gaussian(σ², n, rng=rng)`` (``sample_laplace``) of n values.
* **The input is never modified** unless ``out=`` is the input itself.  ``out``: an ndarray
  of the values' shape, of any layout, int64 or object (float64 with a granularity; object
  with ``overflow="object"``).
* **Overflow is never silent**: small and unsigned dtypes give int64 results (negatives
  allowed); a result outside int64 raises ``OverflowError``, or with ``overflow="object"``
  comes back as an object array of exact Python ints.  Object arrays, and Python ints
  beyond int64, come back as exact Python ints.  With a granularity the integers are exact
  on the way and ``overflow`` does not apply; a result beyond float64 raises
  ``OverflowError``.
* ``clip=(lo, hi)`` clips the noisy values (e.g. ``(0, None)`` for counts): post-processing,
  free privacy-wise.  Integers, in the values' units; with a granularity any rationals,
  narrowed to the multiples of g between them (the result stays on the lattice).
* **Every check runs before the budget is taken**: the input (shape, dtype, lattice, missing
  values, columns) and every option (``clip``, ``out``, ``overflow``, ``sensitivity``,
  ``rng``, ``workers``) are checked before a release is counted; a refused call leaves a
  mechanism's count and an Accountant's spent, remaining and ledger as they were.
* **What can fail after the draw** is an overflow (``OverflowError``: a value + noise beyond
  int64 with ``overflow="raise"`` or beyond an int64 ``out``, or beyond float64 with a
  granularity).  The release is then counted: whether it overflows depends on the values
  and the noise, so the error is itself an output.  Nothing is returned, the input is as
  it was, and ``out`` holds what it held or the noise alone, never a value.  A Dask
  collection's values are read when it is computed: a value off the lattice, a missing
  value or an overflow raises then, after the release was counted.
* **Timing**: the noise of a call is drawn in one batch before the data are touched; see the
  README's security notes for what the time of a call can still reveal.
"""

from __future__ import annotations

import copy
import dataclasses
import decimal
import functools
import json
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np

from dgauss import _driver, _params
from dgauss import accounting as _acc
from dgauss._kinds import Kind
from dgauss._rounding import _delta_text, _rounded_down, _rounded_up
from dgauss.accounting import _closed_forms as _cf
from dgauss.accounting import _compose
from dgauss.accounting._neighbours import norm2 as _norm2

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "Accountant",
    "PrivacyLoss",
    "PrivacyBudgetError",
    "Remaining",
    "add_gaussian_noise",
    "add_laplace_noise",
]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


#: An (ε, δ) budget's δ below this is checked on ln δ (a float δ would underflow).
_TINY_DELTA = Fraction(10) ** -300


class PrivacyBudgetError(RuntimeError):
    """A release would spend more privacy than was set aside (nothing was drawn)."""


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

    return _driver.draw(_core.fill, kind, param, (count,), 0, rng, dtype, workers, out=out)


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
    nothing is counted before every argument has been checked.  A Dask collection is noised
    lazily, block by block (:mod:`dgauss.dask`).  An int64 array with every keyword at its
    default goes the lean way (:func:`_lean_release`)."""
    if type(values) is np.ndarray and _release_defaults(
        None, rng, out, clip, workers, columns, overflow
    ):  # (the granularity is the mechanism's: _lean_release checks it)
        noised = _lean_release(mech, values, take)
        if noised is not None:
            return noised
    if _is_dask(values):
        from dgauss import dask as _dask  # the optional extra, on first use

        return _dask._noised(mech, values, take, rng, out, clip, overflow, workers, columns)
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


# ==========================================================================
# Mechanisms
# ==========================================================================


def _one_way(named: dict[str, Any], what: str) -> str:
    given = [name for name, value in named.items() if value is not None]
    if len(given) != 1:
        options = ", ".join(f"{n}=" for n in named)
        raise ValueError(
            f"set the {what} in exactly one way ({options}); got "
            + (", ".join(f"{n}=" for n in given) if given else "none")
        )
    return given[0]


# A mechanism's release for the accounting (an Accountant's ledger entry), remembered per
# exact parameter and sensitivity (a Fraction, and a tuple of ints or an L2Ball: exact
# values): an Accountant makes one per release, and its ρ once (accounting.Gaussian.rho).
_gaussian_release = functools.lru_cache(maxsize=1024)(_acc.Gaussian)
_laplace_release = functools.lru_cache(maxsize=1024)(_acc.Laplace)


class _Releases:
    """Counts the releases a mechanism's guarantee covers (k of them).

    A copy or a pickle carries the count (k and how many were made), with a lock of its own.
    """

    def __init__(self, k: int):
        self.k, self.used, self._lock = k, 0, threading.Lock()

    def __getstate__(self) -> dict:
        with self._lock:
            return {"k": self.k, "used": self.used}

    def __setstate__(self, state: dict) -> None:
        self.k, self.used, self._lock = state["k"], state["used"], threading.Lock()

    def take(self, size: int | None = None) -> None:
        """Count one release (``size``, the values it noises, does not matter here)."""
        with self._lock:
            if self.used >= self.k:
                raise PrivacyBudgetError(
                    f"this mechanism's guarantee covers k={self.k} release(s), all made; "
                    "create it with a larger k, or use dgauss.Accountant"
                )
            self.used += 1


def _copy_mechanism(mech):
    """``copy.copy`` of a mechanism: its settings (immutable) shared, its release count its
    own (a copy's releases are not counted against the original, nor the reverse)."""
    new = object.__new__(type(mech))
    new.__dict__.update(mech.__dict__)
    new._releases = copy.copy(mech._releases)
    return new


def _mechanism_state(mech) -> dict:
    """A mechanism's pickled state: its settings and release count, without what it keeps
    for this process (the lean release's job, :func:`_lean_release`, which a later dgauss
    could resolve otherwise)."""
    state = dict(mech.__dict__)
    state.pop("_lean_job", None)
    return state


#: The argument types whose values a mechanism's set-up is remembered for (None: the
#: argument not given).
_EXACT_ARGUMENTS = (type(None), *_params.EXACT_TYPES)
#: Set-ups remembered (a repeated call, e.g. add_gaussian_noise in a loop, skips parsing and
#: calibrating its arguments again).
_SETUPS_MAX = 256
_setups: dict = {}


def _remembered_set_up(mech, arguments: dict, set_up: Callable[[], None]) -> None:
    """Give ``mech`` its settings: ``set_up()`` computes them from ``arguments`` (or raises),
    or they are copied from a mechanism of the same class set up from the same arguments
    (every argument of an _EXACT_ARGUMENTS type, keyed on its type and value; the settings
    are immutable, so sharing them is as a copy does).  Then a fresh release count."""
    key = None
    if all(type(value) in _EXACT_ARGUMENTS for value in arguments.values()):
        key = (type(mech), *((name, type(v), v) for name, v in arguments.items()))
        found = _setups.get(key)
        if found is not None:
            mech.__dict__.update(found)
            mech._releases = _Releases(mech.k)
            return
    set_up()
    if key is not None:
        if len(_setups) >= _SETUPS_MAX:
            _setups.clear()
        _setups[key] = dict(mech.__dict__)
    mech._releases = _Releases(mech.k)


class GaussianMechanism:
    r"""The discrete Gaussian mechanism: adds N_Z(0, σ²) to every value (Canonne, Kamath &
    Steinke 2020, Theorems 4, 7, 14, 15).

    Keyword-only; set the noise in exactly one way.

    Parameters
    ----------
    sigma2 : rational, optional
        The variance parameter σ² > 0 of the noise.
    rho : rational, optional
        A zCDP target ρ > 0 for all ``k`` releases: σ² = k‖Δ‖²/(2ρ), exactly.
    epsilon, delta : rational, optional
        An (ε, δ)-DP target for all ``k`` releases: σ² from
        :func:`dgauss.accounting.calibrate_gaussian` with ``round_up_safe=True``
        (``accounting`` picks the exact Theorem 7/15 route or the zCDP route): the
        smallest σ² with 4 significant digits such that it **and every larger one** give
        the target, so σ² may be rounded up.  (The exact δ is not monotone in σ² at large ε:
        at ε = 8 the smallest σ² certifying δ = 1e−20 is 1.313, but 1.407 gives
        δ = 1.13e−20, so this mechanism takes σ² = 1.42.)
    sensitivity : int, L2Ball or sequence of int
        The ℓ2 bound Δ of one person's effect on the whole array, a positive int: every
        integer vector of norm at most Δ, over any number of coordinates, and the accounting
        takes the worst (:class:`dgauss.accounting.L2Ball`; ``L2Ball(Δ, coordinates=1)`` when
        one count moves by at most Δ, ``coordinates=n`` for at most n counts, e.g. the length
        of the array).  Or exactly the difference vector μ of Theorem 15 (ints, not all zero).
        Default 1: each person changes one count by at most 1.
    k : int
        How many releases the guarantee covers (composition); the object refuses a
        (k+1)-th release with :class:`PrivacyBudgetError`.  A copy (``copy``, ``pickle``)
        counts its releases on its own, from the count at the time it was made.
    accounting : "exact" or "zcdp"
        How (ε, δ) is turned into σ² (only with ``epsilon``/``delta``).
    granularity : rational, optional
        Values on the lattice g·ℤ (Section 3.3): sensitivity and σ² count steps of g.

    Attributes
    ----------
    sigma2 : Fraction
        σ² (in steps of the granularity).
    rho : Fraction
        The exact zCDP parameter of all k releases, k‖Δ‖²/(2σ²).
    """

    _kind = Kind.DISCRETE_GAUSSIAN
    _releases: _Releases  # the release count (_remembered_set_up)

    def __init__(
        self,
        *,
        sigma2=None,
        rho=None,
        epsilon=None,
        delta=None,
        sensitivity=1,
        k: int = 1,
        accounting: str = "exact",
        granularity=None,
    ):
        arguments = {
            "sigma2": sigma2,
            "rho": rho,
            "epsilon": epsilon,
            "delta": delta,
            "sensitivity": sensitivity,
            "k": k,
            "accounting": accounting,
            "granularity": granularity,
        }
        _remembered_set_up(self, arguments, lambda: self._set_up(**arguments))

    def _set_up(self, *, sigma2, rho, epsilon, delta, sensitivity, k, accounting, granularity):
        self._sensitivity = _cf._gaussian_sensitivity(sensitivity)
        scalar = _cf._scalar(sensitivity)  # a 0-d array is a scalar
        self.sensitivity: int | tuple[int, ...] | _acc.L2Ball = (
            _cf._sensitivity(scalar)[0]
            if isinstance(scalar, (str, bytes)) or not isinstance(scalar, (Iterable, _acc.L2Ball))
            else self._sensitivity
        )
        self.k = _cf._count(k, "k")
        if accounting not in ("exact", "zcdp"):
            raise ValueError(f"accounting must be 'exact' or 'zcdp', got {accounting!r}")
        self.accounting = accounting
        self.granularity = _granularity(granularity)
        if delta is not None and epsilon is None:
            raise ValueError("delta= goes with epsilon= (an (ε, δ) target)")
        way = _one_way({"sigma2": sigma2, "rho": rho, "epsilon": epsilon}, "noise")
        norm2 = _norm2(self._sensitivity)
        if way == "sigma2":
            self.sigma2 = _params.positive(sigma2, "sigma2")
        elif way == "rho":
            r = _params.positive(rho, "rho")
            self.sigma2 = Fraction(self.k * norm2) / (2 * r)
        else:
            if delta is None:
                raise ValueError(
                    "epsilon= needs delta= (0 < delta < 1) for the Gaussian mechanism; "
                    "for pure ε-DP use LaplaceMechanism"
                )
            self.sigma2 = _acc.calibrate_gaussian(
                epsilon, delta, self._sensitivity, self.k, method=accounting, round_up_safe=True
            )
        self.rho = Fraction(self.k * norm2) / (2 * self.sigma2)

    __copy__ = _copy_mechanism
    __getstate__ = _mechanism_state

    @property
    def _param(self) -> Fraction:
        return self.sigma2

    def _accounting_release(self, size: int | None = None) -> _acc.Gaussian:
        """One release of this mechanism, for :func:`dgauss.accounting.compose`; on ``size``
        values, when known: a difference vector then has at most ``size`` nonzero entries, so
        an ℓ2 ball is cut to ``coordinates=size`` (one count: exactly the single shift)."""
        sens = self._sensitivity
        if isinstance(sens, _acc.L2Ball) and size is not None and size >= 1:
            limit = size if sens.coordinates is None else min(size, sens.coordinates)
            sens = _acc.L2Ball(sens.radius, limit)
        return _gaussian_release(self.sigma2, sens)

    def __repr__(self) -> str:
        return (
            f"GaussianMechanism(sigma2={self.sigma2}, sensitivity={self.sensitivity!r}, "
            f"k={self.k}, rho={self.rho})"
        )

    def delta(self, epsilon) -> float:
        """The δ of all k releases at ``epsilon`` (exact accounting, rounded up)."""
        return _acc.gaussian_delta(self.sigma2, epsilon, self._sensitivity, self.k)

    def epsilon(self, delta) -> float:
        """The smallest certified ε of all k releases at ``delta`` (rounded up)."""
        return _acc.gaussian_epsilon(self.sigma2, delta, self._sensitivity, self.k)

    def interval(self, alpha=0.05) -> tuple:
        """(−w, w): each value's noise lies within it with probability ≥ 1 − α (in the
        values' units: w·g with a granularity)."""
        lo, hi = _acc.gaussian_interval(self.sigma2, alpha)
        return _scaled(lo, hi, self.granularity)

    def __call__(
        self,
        values,
        *,
        rng=None,
        out=None,
        clip=None,
        overflow="raise",
        workers=None,
        columns=None,
    ):
        """``values`` plus independent N_Z(0, σ²) noise on every value: one of the k
        releases (see the module docstring for inputs of every shape, overflow, ``out`` and
        ``clip``; the keywords and what is returned and raised as for
        :func:`add_gaussian_noise`).  ``rng``: None for the OS CSPRNG (use it for real
        data); a NumPy generator only for reproducible simulations.  ``columns``: a
        DataFrame's count columns to noise (the others are returned as they are); by
        default every column, each of which must hold integer counts.  A call refused on
        its input is not counted; one that overflows after the draw is."""
        take = self._releases.take
        return _release(self, values, take, rng, out, clip, overflow, workers, columns)


class LaplaceMechanism:
    """The discrete Laplace (geometric) mechanism: adds Lap_Z(t), P[x] ∝ e^{−|x|/t}, to
    every value.

    Set the noise in exactly one way: ``scale`` t > 0, or ``epsilon`` (with ``delta`` ≥ 0,
    default 0: pure ε-DP) for all ``k`` releases, calibrated by
    :func:`dgauss.accounting.calibrate_laplace`.  ``sensitivity``: the ℓ1 bound of one
    person's effect on the whole array (a positive int).  ``k``, ``granularity``: as for
    :class:`GaussianMechanism`.

    Attributes: ``scale`` (Fraction); ``rho``, the zCDP parameter of all k releases,
    k(Δ/t)²/2 (pure ε-DP implies ε²/2-zCDP).
    """

    _kind = Kind.DISCRETE_LAPLACE
    _releases: _Releases  # the release count (_remembered_set_up)

    def __init__(
        self,
        *,
        scale=None,
        epsilon=None,
        delta=0,
        sensitivity=1,
        k: int = 1,
        granularity=None,
    ):
        arguments = {
            "scale": scale,
            "epsilon": epsilon,
            "delta": delta,
            "sensitivity": sensitivity,
            "k": k,
            "granularity": granularity,
        }
        _remembered_set_up(self, arguments, lambda: self._set_up(**arguments))

    def _set_up(self, *, scale, epsilon, delta, sensitivity, k, granularity):
        (self.sensitivity,) = _cf._sensitivity(sensitivity, vector_ok=False)
        self.k = _cf._count(k, "k")
        self.granularity = _granularity(granularity)
        way = _one_way({"scale": scale, "epsilon": epsilon}, "noise")
        if way == "scale":
            if delta not in (0, None):
                raise ValueError("delta= goes with epsilon= (an (ε, δ) target), not with scale=")
            self.scale = _params.positive(scale, "scale")
        else:
            self.scale = _acc.calibrate_laplace(
                epsilon, 0 if delta is None else delta, self.sensitivity, self.k
            )
        self.rho = self.k * (Fraction(self.sensitivity) / self.scale) ** 2 / 2

    __copy__ = _copy_mechanism
    __getstate__ = _mechanism_state

    @property
    def _param(self) -> Fraction:
        return self.scale

    def _accounting_release(self, size: int | None = None) -> _acc.Laplace:
        """One release of this mechanism, for :func:`dgauss.accounting.compose`."""
        return _laplace_release(self.scale, self.sensitivity)

    def __repr__(self) -> str:
        return f"LaplaceMechanism(scale={self.scale}, sensitivity={self.sensitivity}, k={self.k})"

    def delta(self, epsilon) -> float:
        """The exact δ of all k releases at ``epsilon`` (rounded up)."""
        return _acc.laplace_delta(self.scale, epsilon, self.sensitivity, self.k)

    def epsilon(self, delta=0) -> float:
        """ε of all k releases: the pure kΔ/t for ``delta`` = 0, else the smallest certified ε
        at ``delta`` (rounded up)."""
        return _acc.laplace_epsilon(self.scale, self.sensitivity, self.k, delta)

    def interval(self, alpha=0.05) -> tuple:
        """(−w, w): each value's noise lies within it with probability ≥ 1 − α."""
        lo, hi = _acc.laplace_interval(self.scale, alpha)
        return _scaled(lo, hi, self.granularity)

    def __call__(
        self,
        values,
        *,
        rng=None,
        out=None,
        clip=None,
        overflow="raise",
        workers=None,
        columns=None,
    ):
        """``values`` plus independent Lap_Z(t) noise on every value: one of the k releases
        (as for :class:`GaussianMechanism`'s call)."""
        take = self._releases.take
        return _release(self, values, take, rng, out, clip, overflow, workers, columns)


def _scaled(lo: int, hi: int, g: Fraction | None) -> tuple:
    if g is None:
        return lo, hi
    return float(lo * g), float(hi * g)


def add_gaussian_noise(
    values,
    *,
    sigma2=None,
    rho=None,
    epsilon=None,
    delta=None,
    sensitivity=1,
    k: int = 1,
    accounting: str = "exact",
    granularity=None,
    rng=None,
    out=None,
    clip=None,
    overflow: str = "raise",
    workers=None,
    columns=None,
):
    """``values`` plus N_Z(0, σ²) noise on every value: one release of a
    :class:`GaussianMechanism` (the keywords as there and in its call).

    Parameters
    ----------
    values : int, float, list, numpy.ndarray, pandas or Dask object
        Counts of any shape (0-d to N-D, any layout), Series or DataFrame, or a Dask
        collection; floats (and Fractions) only with a ``granularity``.  See the module
        docstring for the rules every entry point follows.
    sigma2, rho, epsilon, delta, sensitivity, k, accounting, granularity
        As for :class:`GaussianMechanism` (the noise set in exactly one way).
    rng : None or numpy.random.Generator
        None for the OS CSPRNG (use it for real data); a seeded generator for reproducible
        simulations (a Dask collection takes a SeedSequence or int seed instead).
    out : numpy.ndarray, optional
        Where to write the result: the values' shape, any layout; int64 or object (object
        with ``overflow="object"``), float64 with a granularity.  May be ``values`` itself.
    clip : (lo, hi), optional
        Clip the noisy values (post-processing): integers; with a granularity, rationals in
        the values' units narrowed to the multiples of g between them.
    overflow : "raise" or "object"
        A result beyond int64: ``OverflowError``, or an object array of exact Python ints.
    workers : int, optional
        Threads drawing the noise (OS randomness only).
    columns : label or list of labels, optional
        A DataFrame's count columns to noise (the others are returned as they are).

    Returns
    -------
    The noisy values in the input's form: a Python int (float) for a scalar, an ndarray of
    the input's shape (int64; object for exact Python ints; float64 with a granularity), a
    Series or DataFrame with its index and columns, a lazy Dask collection, or ``out``.

    Raises
    ------
    TypeError, ValueError
        On any bad input or option, naming it, before the release is counted or any noise
        drawn.
    OverflowError
        After the draw, on a value + noise beyond int64 (``overflow="raise"`` or an int64
        ``out``) or beyond float64 (with a granularity); the release is counted, since the
        error depends on the values and the noise.

    Notes
    -----
    **Privacy**: the release is ρ-zCDP with ρ = k‖Δ‖²/(2σ²) and (ε, δ)-DP for the exact δ of
    Theorems 7/15 (a calibrated σ² never gives less privacy than asked), Δ the sensitivity
    in steps of the granularity.  The noise is exact: every element gets an independent
    draw from the discrete Gaussian N_Z(0, σ²).

    >>> import dgauss
    >>> dgauss.add_gaussian_noise([5, 0, 2], sigma2=4).shape
    (3,)
    >>> dgauss.add_gaussian_noise([[1.5, 2.0]], sigma2=4, granularity=0.5).dtype
    dtype('float64')
    """
    if (
        sigma2 is not None
        and rho is None
        and epsilon is None
        and delta is None
        and _is_one(sensitivity)
        and _is_one(k)
        and accounting == "exact"
        and _release_defaults(granularity, rng, out, clip, workers, columns, overflow)
    ):
        noised = _lean_add(Kind.DISCRETE_GAUSSIAN, sigma2, values)
        if noised is not None:
            return noised
    mech = GaussianMechanism(
        sigma2=sigma2,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        k=k,
        accounting=accounting,
        granularity=granularity,
    )
    return mech(
        values, rng=rng, out=out, clip=clip, overflow=overflow, workers=workers, columns=columns
    )


def add_laplace_noise(
    values,
    *,
    scale=None,
    epsilon=None,
    delta=0,
    sensitivity: int = 1,
    k: int = 1,
    granularity=None,
    rng=None,
    out=None,
    clip=None,
    overflow: str = "raise",
    workers=None,
    columns=None,
):
    """``values`` plus Lap_Z(t) noise on every value: one release of a
    :class:`LaplaceMechanism` (the keywords as there and in its call).

    ``values``, ``rng``, ``out``, ``clip``, ``overflow``, ``workers`` and ``columns``, what
    is returned and what is raised (every check before the release is counted; only an
    overflow after the draw, the release then counted) are as for
    :func:`add_gaussian_noise`; ``sensitivity`` is the ℓ1 bound Δ, an int.

    **Privacy**: ``scale`` t, or ``epsilon`` (pure ε-DP, t = kΔ/ε; with ``delta`` > 0 the
    smallest t whose exact δ at ε is at most ``delta``).  Every element gets an independent
    exact draw from Lap_Z(t).
    """
    if (
        scale is not None
        and epsilon is None
        and type(delta) is int
        and delta == 0
        and _is_one(sensitivity)
        and _is_one(k)
        and _release_defaults(granularity, rng, out, clip, workers, columns, overflow)
    ):
        noised = _lean_add(Kind.DISCRETE_LAPLACE, scale, values)
        if noised is not None:
            return noised
    mech = LaplaceMechanism(
        scale=scale,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        k=k,
        granularity=granularity,
    )
    return mech(
        values, rng=rng, out=out, clip=clip, overflow=overflow, workers=workers, columns=columns
    )


# ==========================================================================
# The accountant
# ==========================================================================


def _decimal(q: Fraction | float, digits: int = 4) -> str:
    """A readable decimal (never a 40-digit Fraction): exact for short values."""
    if isinstance(q, Fraction) and q.denominator == 1:
        return str(q.numerator)
    f = _cf._approx(q)
    if isinstance(q, Fraction) and (f == 0 or math.isinf(f)):  # past the float range
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emin, ctx.Emax = digits, decimal.MIN_EMIN, decimal.MAX_EMAX
            text = str(decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator))
        return text.replace("E", "e").replace("e+", "e")
    if isinstance(q, Fraction) and Fraction(f) == q and len(repr(f)) <= 12:
        return repr(f)
    return f"{f:.{digits}g}"


class PrivacyLoss:
    """The composed privacy of the releases an :class:`Accountant` made.

    ``rho`` is the exact zCDP total; ``epsilon(delta)`` and ``delta(epsilon)`` are those of
    :func:`dgauss.accounting.compose` over the releases (the smallest of every valid route:
    Theorem 15, Eq. 49, pure DP, the privacy-loss distribution, zCDP), rounded to the safe
    side, and never read above the budget the accountant enforced.
    """

    def __init__(
        self,
        releases,
        budget: tuple | None = None,
        composition=None,
        *,
        rho: Fraction | None = None,
        ceiling: tuple | None = None,
    ) -> None:
        self.releases: tuple = tuple(releases)
        self._budget = budget  # ("rho", ρ) | ("pure", ε) | ("approx", ε, δ)
        self._composition = composition  # of these releases (grouped or not)
        if self._composition is None and self.releases:
            self._composition = _acc.compose(*self.releases)
        self._rho = rho
        # (ε, δ, ln δ): a larger program that contains these releases was certified to have
        # this δ at this ε, which bounds theirs too (the accountant admitted them by it)
        self._ceiling = ceiling

    @property
    def rho(self) -> Fraction:
        """The exact zCDP total ρ (a pure ε-DP Laplace release counts as ε²/2)."""
        if self._rho is not None:
            return self._rho
        return sum((r.rho for r in self.releases), Fraction(0))

    def delta(self, epsilon, log: bool = False) -> float:
        """The smallest certified δ at ``epsilon`` of everything released (rounded up);
        ``log=True`` gives an upper bound on ln δ (for δ below the float range)."""
        if self._composition is None:
            _cf._nonnegative(epsilon, "epsilon")
            return -math.inf if log else 0.0
        found = self._composition.delta(epsilon, log=log)
        # the ceiling bounds δ at its ε, and so at every larger ε (δ never rises with ε)
        if self._ceiling is not None and _cf._nonnegative(epsilon, "epsilon") >= self._ceiling[0]:
            found = min(found, self._ceiling[2] if log else self._ceiling[1])
        return found

    def epsilon(self, delta) -> float:
        """The smallest certified ε at ``delta`` of everything released (rounded up);
        ``delta`` = 0 for a pure ε (all-Laplace releases only)."""
        if self._composition is None:
            _cf._probability(delta, "delta", allow_zero=True)
            return 0.0
        found = self._composition.epsilon(delta)
        b = self._budget
        if b is not None and b[0] == "approx" and Fraction(_cf._rational(delta, "delta")) >= b[2]:
            # admitted because δ(ε_budget) ≤ δ_budget was certified: ε_budget is certified
            found = min(found, _cf._float_up(b[1]))
        return found

    def route(self, epsilon) -> str:
        """Which route gives :meth:`delta` at ``epsilon`` (:func:`dgauss.accounting.compose`)."""
        if self._composition is None:
            return "nothing released"
        return self._composition.route(epsilon)

    def __repr__(self) -> str:
        """E.g. ``PrivacyLoss(2 releases, delta=9.967e-7 at epsilon=1, rho=0.02799)``: the
        guarantee in the budget's terms (rounded up, as :meth:`delta` gives it), then ρ."""
        n = len(self.releases)
        text = f"PrivacyLoss({n} release{'s' if n != 1 else ''}"
        b = self._budget
        if n and b is not None and b[0] == "approx":
            delta = _trimmed(_delta_text(self.delta, b[1]))
            text += f", delta={delta} at epsilon={_trimmed(_decimal(b[1]))}"
        elif n and b is not None and b[0] == "pure":
            text += f", epsilon={_trimmed(_rounded_up(self.epsilon(0)))}"
        return text + f", rho={_trimmed(_rounded_up(self.rho))})"


def _trimmed(text: str) -> str:
    """A printed number without padding: '0.3750' -> '0.375', '1.000' -> '1', '1e-06' -> '1e-6'
    (the digits kept are those printed, so a number rounded up or down stays so)."""
    mantissa, e, exponent = text.partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    if e:
        sign = "-" if exponent.startswith("-") else ""
        exponent = sign + (exponent.lstrip("+-").lstrip("0") or "0")
    return mantissa + e + exponent


@dataclass(frozen=True)
class Remaining:
    """What is left of a budget, in the budget's own terms (each rounded down; None where it
    does not apply): ``rho`` of a zCDP budget; ``epsilon`` of a pure budget, or for an (ε, δ)
    budget the ε a further pure-DP release may take at δ; ``delta`` of an (ε, δ) budget, the
    δ a further (0, δ) release may take at ε.  For the next discrete Gaussian or Laplace
    release use :meth:`Accountant.calibrate_gaussian` / :meth:`Accountant.calibrate_laplace`
    (or :meth:`Accountant.split` for k equal ones), which compose exactly."""

    rho: Fraction | None = None
    epsilon: float | None = None
    delta: float | None = None

    def __repr__(self) -> str:
        """E.g. ``Remaining(epsilon=1.590e-4 of 1, delta=3.370e-9 of 1e-6)``: each value
        rounded down (never reading more than is left), beside the budget it is left of
        when an :class:`Accountant` gave it; fields that do not apply are left out."""
        budget = getattr(self, "_of", None) or {}
        parts = [
            f"{name}={_trimmed(_rounded_down(value))}"
            + (f" of {_trimmed(_decimal(budget[name]))}" if name in budget else "")
            for name, value in (("rho", self.rho), ("epsilon", self.epsilon), ("delta", self.delta))
            if value is not None
        ]
        return f"Remaining({', '.join(parts)})"

    def _left_of(self, budget: tuple) -> Remaining:
        """This, knowing the budget it is left of (for the repr only: not a field, not
        compared)."""
        names = {"rho": ("rho",), "pure": ("epsilon",), "approx": ("epsilon", "delta")}[budget[0]]
        object.__setattr__(self, "_of", dict(zip(names, budget[1:], strict=True)))
        return self


#: Most compositions an Accountant spends looking ahead after one admission.
_LOOK_AHEAD_STEPS = 4

#: ... and only when the releases it may cover number this many times the kinds released
#: (a composition costs about as many merges into the kept PLD as there are kinds, and its
#: look-ahead up to _LOOK_AHEAD_STEPS compositions: fewer releases are cheaper merged).
_LOOK_AHEAD_WORTH = 4

#: An Accountant prepares ahead on a background thread (Accountant._prepare_ahead) once its
#: (ε, δ) program holds this many releases (fewer compose in well under a second) ...
_PREPARE_WORTH = 100

#: ... of which this many were admitted since the accountant was made or restored (a ledger
#: restored for one release, as a command-line run does, starts no thread) ...
_PREPARE_AFTER = 20

#: ... and their total ρ is past this share of the largest ρ the zCDP route certifies; it
#: then certifies ahead in up to this many tries (merges; on the thread, so more than the
#: look-ahead's: a finer share leaves fewer releases to merge one by one at the edge).
_PREPARE_FROM = Fraction(1, 8)
_PREPARE_STEPS = 8

#: While it is at work, each admission waits for it up to this many seconds: offers in a
#: tight loop would otherwise reach the zCDP route's end (and wait there for all of it)
#: having given it little of the interpreter; spread, the wait is a few ms per admission.
_PREPARE_PACE = 0.002


def _repeated(program: _Program) -> dict:
    """The kinds ``program`` releases at least twice, with their counts."""
    return {unit: n for unit, n in program.counts.items() if n >= 2}


def _grown(program: _Program, share: float | Fraction) -> _Program:
    """``program`` with every kind released at least twice grown by ``share`` of its count,
    rounded up (the releases to come, guessed from those made)."""
    grown = program.plus()
    for unit, n in _repeated(program).items():
        grown.add(unit, math.ceil(share * n))
    return grown


#: The preparation also composes the program this share short of its certificate's growth
#: (:func:`_short_of`): the releases reach it before they leave the certificate, unless they
#: stray from the proportions it was grown in by more than this share of it.
_SHORT_OF_EDGE = Fraction(1, 8)


def _short_of(program: _Program, certified: _Program, share: Fraction) -> _Program:
    """The program between ``program`` and ``certified`` (which holds it), ``share`` of each
    kind's growth short of ``certified`` (rounded down: inside it)."""
    short = program.plus()
    for unit, n in certified.counts.items():
        more = math.floor((1 - share) * (n - program.counts.get(unit, 0)))
        if more > 0:
            short.add(unit, more)
    return short


def _grown_to(program: _Program, rho: Fraction) -> _Program | None:
    """``program`` :func:`_grown` by the share that takes its total ρ to ``rho`` (at least;
    ``program`` itself if it is there); None when the kinds released at least twice hold
    less than half of its ρ (the releases to come are then no guess)."""
    repeated_rho = sum((unit.rho * n for unit, n in _repeated(program).items()), Fraction(0))
    if 2 * repeated_rho < program.rho:
        return None
    if program.rho >= rho:
        return program.plus()
    return _grown(program, (rho - program.rho) / repeated_rho)


#: The JSON ledger of an Accountant (:meth:`Accountant.to_json`): its name and version.
LEDGER_FORMAT = "dgauss Accountant ledger"
LEDGER_VERSION = 1


def _ledger_entry(release) -> dict:
    """One release as a ledger entry (exact rationals as strings)."""
    sens = release.sensitivity
    if isinstance(sens, _acc.L2Ball):  # an int is the ball; a list is exactly that vector
        sens = (
            sens.radius
            if sens.coordinates is None
            else {"radius": sens.radius, "coordinates": sens.coordinates}
        )
    else:
        sens = list(sens)
    if isinstance(release, _acc.Gaussian):
        return {
            "kind": "gaussian",
            "sigma2": str(release.sigma2),
            "sensitivity": sens,
            "k": release.k,
        }
    return {"kind": "laplace", "scale": str(release.scale), "sensitivity": sens, "k": release.k}


def _no_duplicate_keys(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"the ledger repeats the field(s) {', '.join(map(repr, twice))}")
    return dict(pairs)


def _ledger_fields(data, where: str, required: set, optional: set | None = None) -> dict:
    """``data`` as a JSON object with exactly the ``required`` (and any ``optional``) keys."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(data).__name__}")
    missing = sorted(required - data.keys())
    unknown = sorted(data.keys() - required - (optional or set()))
    if missing:
        raise ValueError(f"{where} lacks the field(s) {', '.join(map(repr, missing))}")
    if unknown:
        raise ValueError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}")
    return data


def _ledger_exact(value, where: str) -> Fraction:
    """An exact rational from a ledger: a string such as "357/10" (or a JSON integer)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(
            f'{where} must be an exact rational written as a string such as "357/10" '
            f"(never a float), got {value!r}"
        )
    try:
        return _params.to_fraction(value, where)
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None


def _ledger_budget(data) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"the ledger's budget must be a JSON object, got {type(data).__name__}")
    shapes = ({"rho"}, {"epsilon"}, {"epsilon", "delta"})
    if set(data) not in shapes:
        raise ValueError(
            'the ledger\'s budget must hold "rho", "epsilon", or "epsilon" and '
            f'"delta"; got the field(s) {", ".join(map(repr, sorted(data)))}'
        )
    budget = {key: _ledger_exact(value, f"budget.{key}") for key, value in data.items()}
    try:
        Accountant(**budget)  # checks the ranges, naming the parameter
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the ledger's budget: {exc}") from None
    return budget


def _ledger_release(entry, where: str):
    """One ledger entry as an accounting release, checked as its constructor checks it."""
    if not isinstance(entry, dict) or entry.get("kind") not in ("gaussian", "laplace"):
        got = entry.get("kind") if isinstance(entry, dict) else type(entry).__name__
        raise ValueError(
            f'{where} must be an object with "kind" "gaussian" or "laplace", got {got!r}'
        )
    param = "sigma2" if entry["kind"] == "gaussian" else "scale"
    _ledger_fields(entry, where, {"kind", param, "sensitivity", "k"})
    _ledger_exact(entry[param], f"{where}: {param}")  # a string or an int, not a float
    sens = entry["sensitivity"]
    if param == "sigma2" and isinstance(sens, dict):  # an ℓ2 ball with a coordinate bound
        _ledger_fields(sens, f"{where}: sensitivity", {"radius", "coordinates"})
        if type(sens["radius"]) is not int or type(sens["coordinates"]) is not int:
            raise ValueError(f"{where}: sensitivity's radius and coordinates must be integers")
        try:
            sens = _acc.L2Ball(sens["radius"], sens["coordinates"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        parts = [1]
    else:
        parts = sens if isinstance(sens, list) else [sens]
    if not parts or any(type(x) is not int for x in parts):
        raise ValueError(
            f"{where}: sensitivity must be a positive integer or a list of integers"
            + (" (or an object with radius and coordinates)" if param == "sigma2" else "")
            + f", got {sens!r}"
        )
    k = entry["k"]
    if type(k) is not int:
        raise ValueError(f"{where}: k must be an integer, got {k!r}")
    make = _acc.Gaussian if param == "sigma2" else _acc.Laplace
    try:
        return make(entry[param], tuple(sens) if isinstance(sens, list) else sens, k)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _unit(release):
    """``release`` answered once (its kind: the noise, parameter and sensitivity)."""
    return release if release.k == 1 else dataclasses.replace(release, k=1)


class _Program:
    """A program of releases grouped by kind: identical releases (the same noise, exact
    parameter and sensitivity) are one k-fold release; with the running exact totals."""

    __slots__ = ("counts", "rho", "pure", "gaussians")

    def __init__(self) -> None:
        self.counts: dict = {}  # each kind (a release with k = 1) -> how many times
        self.rho = Fraction(0)  # Σ ρ
        self.pure = Fraction(0)  # Σ ε of the Laplace releases
        self.gaussians = 0  # how many Gaussian releases (times k)

    def add(self, unit, count: int = 1) -> None:
        """Add ``count`` releases of the kind ``unit`` (or one release ``unit`` with any k)."""
        if unit.k != 1:
            unit, count = _unit(unit), unit.k * count
        self.counts[unit] = self.counts.get(unit, 0) + count
        self.rho += unit.rho * count
        if isinstance(unit, _acc.Laplace):
            self.pure += unit.epsilon * count
        else:
            self.gaussians += count

    def plus(self, release=None) -> _Program:
        """A copy, with ``release`` added."""
        new = _Program()
        new.counts = dict(self.counts)
        new.rho, new.pure, new.gaussians = self.rho, self.pure, self.gaussians
        if release is not None:
            new.add(release)
        return new

    def within(self, other: _Program) -> bool:
        """Whether every release of this program is one of ``other``'s."""
        return all(other.counts.get(unit, 0) >= n for unit, n in self.counts.items())

    def within_at(self, other: _Program, unit) -> bool:
        """``within(other)``, knowing it held before releases of ``unit`` were added."""
        return other.counts.get(unit, 0) >= self.counts.get(unit, 0)

    def releases(self) -> list:
        """The grouped program: one k-fold release per kind (k at most accounting's MAX_K)."""
        found = []
        for unit, count in self.counts.items():
            while count:
                k = min(count, _acc.MAX_K)
                found.append(unit if k == 1 else dataclasses.replace(unit, k=k))
                count -= k
        return found

    def composition(self):
        return _acc.compose(*self.releases())

    def __getstate__(self) -> tuple:
        return self.counts, self.rho, self.pure, self.gaussians

    def __setstate__(self, state: tuple) -> None:
        self.counts, self.rho, self.pure, self.gaussians = state


@dataclass(frozen=True)
class _Certificate:
    """A program certified to fit an (ε, δ) budget, with its δ at ε (float, rounded up) and
    an upper bound on ln δ: every program inside it fits, its δ at most these."""

    program: _Program
    delta: float
    log_delta: float


class Accountant:
    """One privacy budget spent over several releases, composed exactly.

    The budget is set in exactly one way: ``Accountant(rho=...)`` (zCDP),
    ``Accountant(epsilon=..., delta=...)`` ((ε, δ)-DP) or ``Accountant(epsilon=...)`` (pure
    ε-DP: discrete Laplace releases only).  ``add_gaussian_noise`` / ``add_laplace_noise``
    admit a release **only when the composition of everything released plus this one fits
    the budget** — ρ's add up; pure ε's add up; for (ε, δ) a certified upper bound on the
    composed δ at ε is at most δ: that of :func:`dgauss.accounting.compose` (Theorem 15,
    Eq. 49, pure DP, the privacy-loss distribution and zCDP, the smallest), or a cheaper
    one that already fits (zCDP at the exact total ρ, a certified larger program holding
    this one, the kept privacy-loss distribution with this release merged in) — and check it
    **before any noise is drawn**: a refused release raises :class:`PrivacyBudgetError` and
    changes nothing.  Identical releases are grouped into one k-fold release, so a ρ or
    pure budget admits in O(1) and an (ε, δ) one composes at most one release per kind
    (``docs/accounting.md``, *The Accountant*).

    ``spent`` is the composition of what was released (:class:`PrivacyLoss`), which never
    reads above the budget it enforced; ``remaining`` what is left in the budget's terms;
    ``calibrate_gaussian()`` / ``calibrate_laplace()`` / ``split(k)`` the least noise the next
    release(s) may use; ``report()`` one sentence stating the certified guarantee.
    Thread-safe: the check and the spend are one step.

    A long (ε, δ) program (100 releases or more, 20 of them admitted by this object, mostly
    of repeated kinds) is prepared ahead: once its ρ passes 1/8 of what the zCDP route
    certifies, a daemon thread composes the program the releases are heading for and
    certifies a larger one, so that the releases past the zCDP route are admitted without a
    composition of seconds; while it works, each admission waits for it up to 2 ms.  It
    decides nothing on its own: its certificates are the same certified bounds.

    Saving: :meth:`to_json` / :meth:`from_json` write and read a ledger of the budget and the
    releases; ``pickle``, ``copy.copy`` and ``copy.deepcopy`` give an accountant in the same
    state that spends on its own (neither's releases count against the other's budget).  The
    kept privacy-loss distribution is not saved: at the very edge of the budget, where a
    merged bound and a fresh composition differ (both certified), a restored accountant
    decides by the fresh one.
    """

    def __init__(self, *, rho=None, epsilon=None, delta=None):
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise ValueError(
                    "set the budget in exactly one way: rho=, epsilon= with delta=, or "
                    "epsilon= alone (pure DP)"
                )
            self._budget: tuple = ("rho", _cf._positive(rho, "rho"))
        elif epsilon is not None:
            eps = _cf._positive(epsilon, "epsilon")
            if delta is None or _cf._rational(delta, "delta") == 0:
                self._budget = ("pure", eps)
            else:
                self._budget = ("approx", eps, _cf._probability(delta, "delta"))
        else:
            raise ValueError(
                "set the budget in exactly one way: rho=, epsilon= with delta=, or "
                "epsilon= alone (pure DP)" + ("; delta= alone is not a budget" if delta else "")
            )
        self._load(self._budget, ())

    def _load(self, budget: tuple, releases, certificate: _Certificate | None = None) -> None:
        """Set the whole state: the budget, the releases made (admitted already) and a
        certified larger program (or None); everything else is derived from them."""
        self._budget = budget
        self._releases: list = []
        self._program = _Program()
        for r in releases:
            self._releases.append(r)
            self._program.add(r)
        self._certificate = certificate
        # facts about the budget, true whatever was released (so copies may share them):
        # the zCDP route certifies every ρ <= _zcdp_fits, and fails from _zcdp_fails on
        self._zcdp_fits: Fraction | None = None
        self._zcdp_fails: Fraction | None = None
        self._refused: set = set()  # releases refused since the last admission
        self._too_far: _Program | None = None  # the last program the look-ahead saw fail
        # the PLD of a program inside the releases made, (program, PLD), to merge more into;
        # and the (program, PLD) that admitted a release by merging (its δ bounds spent's
        # while the program is what was released)
        self._base: tuple | None = None
        self._proof: tuple | None = None
        # the preparation on a background thread (_prepare_ahead): the thread, how many
        # releases there were when it started, the ((program, PLD), certificate) it hands
        # over as it ends; and the (program, PLD) taken from it
        self._preparing: threading.Thread | None = None
        self._prepared_at = 0
        self._admitted_here = 0  # admissions since this object was made or restored
        self._zcdp_rho: Fraction | None = None  # _zcdp_limit, once computed
        self._prepared: tuple | None = None
        self._prepared_bases: tuple = ()
        self._spent: PrivacyLoss | None = None  # built when read
        self._lock = threading.Lock()

    # ---- copying and saving ----------------------------------------------------------

    def _state(self) -> tuple[tuple, tuple, _Certificate | None]:
        """(budget, releases, certificate), read in one step."""
        with self._lock:
            return self._budget, tuple(self._releases), self._certificate

    def __getstate__(self) -> dict:
        budget, releases, certificate = self._state()
        return {
            "version": LEDGER_VERSION,
            "budget": budget,
            "releases": releases,
            "certificate": certificate,
        }

    def __setstate__(self, state: dict) -> None:
        if state.get("version") != LEDGER_VERSION:
            raise ValueError(
                f"cannot restore an Accountant pickled with state version "
                f"{state.get('version')!r}; this dgauss reads version {LEDGER_VERSION}"
            )
        self._load(state["budget"], state["releases"], state.get("certificate"))

    def __copy__(self) -> Accountant:
        """An independent accountant: the same budget and releases, spent on separately."""
        new = object.__new__(type(self))
        new._load(*self._state())
        return new

    def __deepcopy__(self, memo: dict) -> Accountant:
        return self.__copy__()  # the releases are immutable: nothing else to copy

    def to_json(self) -> str:
        """The ledger as JSON text: the budget and every release made, in order, each
        parameter an exact rational as a string (``"357/10"``, never a float), with a format
        version.  :meth:`from_json` reads it back.  An (ε, δ) ledger may also hold
        ``"certified"``: a larger program (its releases grouped, ``k`` each) that the
        accountant certified to fit the budget and that contains every release made; it
        admits later releases inside it at once, and :meth:`from_json` checks it again.

        >>> import dgauss
        >>> acc = dgauss.Accountant(epsilon=1, delta="1e-6")
        >>> _ = acc.add_gaussian_noise([3], sigma2="35.7")
        >>> print(acc.to_json())
        {
         "format": "dgauss Accountant ledger",
         "version": 1,
         "budget": {"epsilon": "1", "delta": "1/1000000"},
         "releases": [
          {"kind": "gaussian", "sigma2": "357/10", "sensitivity": [1], "k": 1}
         ]
        }
        """
        budget, releases, certificate = self._state()
        if budget[0] == "rho":
            head = {"rho": str(budget[1])}
        elif budget[0] == "pure":
            head = {"epsilon": str(budget[1])}
        else:
            head = {"epsilon": str(budget[1]), "delta": str(budget[2])}
        lines = [
            "{",
            f' "format": {json.dumps(LEDGER_FORMAT)},',
            f' "version": {LEDGER_VERSION},',
            f' "budget": {json.dumps(head, ensure_ascii=False)},',
            ' "releases": [',
        ]
        lines += [
            "  " + json.dumps(_ledger_entry(r)) + ("," if i + 1 < len(releases) else "")
            for i, r in enumerate(releases)
        ]
        if certificate is None:
            return "\n".join([*lines, " ]", "}"])
        lines += [" ],", ' "certified": [']
        entries = certificate.program.releases()
        lines += [
            "  " + json.dumps(_ledger_entry(r)) + ("," if i + 1 < len(entries) else "")
            for i, r in enumerate(entries)
        ]
        return "\n".join([*lines, " ]", "}"])

    @classmethod
    def from_json(cls, text: str | bytes) -> Accountant:
        """The accountant a :meth:`to_json` ledger describes: its budget, and its releases
        as made (so it admits and refuses what the one that wrote it would).

        Raises ``ValueError`` naming what is wrong: not JSON, not a ledger, an unknown
        version, a missing, unknown or malformed field (a float where an exact rational is
        needed, a σ² ≤ 0, ...), or releases that do not fit the ledger's own budget.
        """
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the ledger is not valid JSON: {exc}") from None
        except TypeError as exc:
            raise TypeError(f"from_json reads a str or bytes ledger ({exc})") from None
        fields = _ledger_fields(
            data, "the ledger", {"format", "version", "budget", "releases"}, {"certified"}
        )
        if fields["format"] != LEDGER_FORMAT:
            raise ValueError(
                f"the ledger's format must be {LEDGER_FORMAT!r}, got {fields['format']!r}"
            )
        version = fields["version"]
        if type(version) is not int or version != LEDGER_VERSION:
            raise ValueError(
                f"unknown ledger version {version!r}; this dgauss reads version {LEDGER_VERSION}"
            )
        acc = cls(**_ledger_budget(fields["budget"]))
        entries = fields["releases"]
        if not isinstance(entries, list):
            raise ValueError(f"the ledger's releases must be a list, got {type(entries).__name__}")
        releases = [_ledger_release(entry, f"release {i}") for i, entry in enumerate(entries)]
        acc._load(acc._budget, releases)
        if "certified" in fields:
            acc._certificate = acc._checked_certificate(fields["certified"])
        if releases and not acc._decide(acc._program):
            raise ValueError(
                f"the ledger's {len(releases)} releases do not fit its own budget "
                f"({acc._budget_text()}): it was altered, or not written by to_json"
            )
        return acc

    def _checked_certificate(self, entries) -> _Certificate | None:
        """A ledger's "certified" program, if it holds the releases and fits (else None: it
        is then not used, and the releases are checked on their own)."""
        if self._budget[0] != "approx":
            raise ValueError('only an (epsilon, delta) ledger has a "certified" program')
        if not isinstance(entries, list):
            raise ValueError(f"the ledger's certified must be a list, got {type(entries).__name__}")
        program = _Program()
        for i, entry in enumerate(entries):
            program.add(_ledger_release(entry, f"certified {i}"))
        if not self._program.within(program):
            raise ValueError(
                "the ledger's certified program does not contain its releases: it was altered"
            )
        return self._certify(program)

    # ---- the check -------------------------------------------------------------------
    # A release is admitted when the program of everything released plus it fits: a
    # certified upper bound on its δ at ε (or its exact ρ, or its pure ε) is within the
    # budget.  The cheapest bound that answers is used, each one valid on its own:
    #
    # * a ρ or pure budget: the running exact totals (O(1));
    # * an (ε, δ) budget: pure DP while every release is Laplace; the zCDP route at the
    #   exact total ρ (monotone in ρ, so one check answers every smaller ρ); a *certified*
    #   larger program that contains this one (post-processing: dropping releases from a
    #   product mechanism never raises its δ); the releases refused since the last admission;
    #   else the composition of the grouped program (accounting.compose, which composes
    #   identical releases as one k-fold release and so gives what composing every release
    #   gives).  Before composing afresh, the candidate is merged into the PLD kept from the
    #   last composition (same tilt and grid: _compose._PLD.extended; after a refusal
    #   with none kept, as after a restore, that of the releases made), a valid bound; it
    #   admits when that fits.  It refuses when even a lower bound on its gridded δ̃ is over
    #   the budget and a fresh composition could read no smaller δ (_grid_refuses: its
    #   grids no finer, basic composition over the budget too); otherwise (at the kept
    #   tilt, far from the larger program's saddle point, the upper bound can be loose by
    #   orders of magnitude) the candidate is composed afresh.
    #   After a fresh composition admits a long program, the accountant guesses how much
    #   more the budget holds (from ln δ, which scales about as 1/ρ) and certifies a
    #   program with every repeated kind grown by that share: the releases inside it are
    #   then admitted at once.

    def _admits(self, release) -> bool:
        """Whether everything released plus ``release`` fits (the lock held)."""
        b, program = self._budget, self._program
        if b[0] == "rho":
            return program.rho + release.rho <= b[1]
        laplace = isinstance(release, _acc.Laplace)
        if laplace and program.gaussians == 0 and program.pure + release.epsilon <= b[1]:
            return True  # pure DP: δ = 0 at ε (and the whole of a pure budget)
        if b[0] == "pure":
            return False
        if self._zcdp_certifies(program.rho + release.rho):
            return True
        if self._inside_certificate(release):
            return True
        if release in self._refused:
            return False
        candidate = program.plus(release)
        decided = self._merged(release, candidate)
        if decided is None and self._preparing is not None:
            # no merge answered: what the preparation hands over may (its certificate,
            # or a distribution nearer this program to merge into); wait for it
            before = self._prepared_bases
            self._wait_for_prepared()
            if self._inside_certificate(release):
                return True
            if self._prepared_bases is not before:
                decided = self._merged(release, candidate)
        if decided is not None:
            return decided
        fits = self._composes(candidate, look_ahead=True)
        if not fits:
            self._refused.add(release)
            if self._base is None and program.counts:  # (restored): the next offers merge
                pld = program.composition()._shared_grid_pld(b[1])
                self._base = (program.plus(), pld)
        return fits

    def _inside_certificate(self, release) -> bool:
        """(The lock held.)  Whether the releases made plus ``release`` lie inside the
        certificate (which contains the releases made, when there is one)."""
        certificate = self._certificate
        if certificate is None:
            return False
        unit = _unit(release)
        inside = certificate.program.counts.get(unit, 0)
        return self._program.counts.get(unit, 0) + release.k <= inside

    def _merged(self, release, candidate: _Program) -> bool | None:
        """Admit ``release`` (True) if ``candidate`` merged into a kept PLD fits, refuse it
        (False) if that shows a fresh composition would refuse it too (:meth:`_grid_refuses`);
        None when no PLD is kept or neither holds."""
        self._advance_base()
        step = self._extended(candidate)
        if step is None:
            return None
        log_delta = step.log_delta_at(self._budget[1])  # an upper bound: it admits
        if self._log_fits(gmpy2.mpfr(log_delta)):
            self._base = self._proof = (candidate, step)
            return True
        if self._grid_refuses(candidate, step):
            self._refused.add(release)
            return False
        return None

    def _advance_base(self) -> None:
        """(The lock held.)  Bring the kept PLD up to the releases made: merge every release
        made since it was computed (admitted inside a certificate, say) into it once, and keep
        that as the base, so that the offers that follow, admitted or refused, each merge
        only themselves (at the budget's edge, every offer is merged: each took 40-200 ms at
        10^4 releases of 10 kinds when it merged everything since the last composition)."""
        program = self._program
        bases = [
            b for b in (self._base, *self._prepared_bases) if b is not None and b[1] is not None
        ]
        if not program.counts or any(b[0].counts == program.counts for b in bases):
            return
        step = self._extended(program)
        if step is not None:
            self._base = (program.plus(), step)

    def _extended(self, candidate: _Program, base: tuple | None = None) -> Any:
        """The PLD of ``candidate``, merged into one kept of a program inside it (on that
        one's tilt and grid: :meth:`_compose._PLD.extended`): ``base`` = (program, PLD), by
        default the largest of the last composition's and the preparation's; None without."""
        bases = [base] if base is not None else [self._base, *self._prepared_bases]
        usable = [b for b in bases if b is not None and b[1] is not None and b[0].within(candidate)]
        if not usable:
            return None
        done, pld = max(usable, key=lambda b: sum(b[0].counts.values()))
        more = _Program()
        for unit, n in candidate.counts.items():
            if n > done.counts.get(unit, 0):
                more.add(unit, n - done.counts.get(unit, 0))
        if any(isinstance(r.sensitivity, _acc.L2Ball) for r in more.releases()):
            return None  # an ℓ2 ball is its worst vectors' programs, not one PLD (compose)
        return pld.extended(_compose._coordinates(more.releases()))

    def _grid_refuses(self, candidate: _Program, pld) -> bool:
        """Whether a fresh composition of ``candidate`` would refuse it, known without
        composing it: ``pld`` (the kept composition extended to it) holds a lower bound on
        its gridded δ̃ at ε above the budget; a fresh composition would read the PLD route
        only from grids no finer than pld's (Composition._grids_no_finer: each δ̃ at least
        pld's, so each bound above the budget); and basic composition, the one other route
        past zCDP (checked first), does not fit either."""
        eps = self._budget[1]
        log_budget = float(_cf._AR.q(self._budget[2]).log().hi)
        if not pld.log_delta_low_at(eps) > log_budget + 1e-9:
            return False
        composition = candidate.composition()
        if not composition._grids_no_finer(eps, pld.h):
            return False
        basic = composition._basic_log_delta(eps)
        return basic is None or not self._log_fits(basic)

    def _decide(self, program: _Program) -> bool:
        """Whether ``program`` (a whole program: what was released and what would be) fits."""
        b = self._budget
        if b[0] == "rho":
            return program.rho <= b[1]
        if program.gaussians == 0 and program.pure <= b[1]:
            return True
        if b[0] == "pure":
            return False
        if self._zcdp_certifies(program.rho):
            return True
        certificate = self._certificate
        if certificate is not None and program.within(certificate.program):
            return True
        return self._composes(program)

    def _log_budget(self) -> Any:
        """ln δ of an (ε, δ) budget, rounded down (an MPFR number)."""
        return _cf._AR.q(self._budget[2]).log().lo

    def _log_fits(self, log_hi) -> bool:
        """Whether a δ whose ln is at most ``log_hi`` fits, read as a composition's
        ``delta()`` reads it (so a route decides here as it does in ``spent``)."""
        delta = self._budget[2]
        if delta >= _TINY_DELTA:
            return _cf._delta_out(log_hi, False) <= delta
        return _cf._delta_out(log_hi, True) <= self._log_budget()

    def _zcdp_certifies(self, rho: Fraction) -> bool:
        """Whether the zCDP route (Corollary 13 at the exact total ρ) certifies the budget."""
        fits_up_to, fails_from = self._zcdp_fits, self._zcdp_fails
        if fits_up_to is not None and rho <= fits_up_to:
            return True
        if fails_from is not None and rho >= fails_from:
            return False
        fits = self._log_fits(_cf._cdp_log_delta(rho, self._budget[1]))
        if fits:
            self._zcdp_fits = rho if fits_up_to is None else max(rho, fits_up_to)
        else:
            self._zcdp_fails = rho if fails_from is None else min(rho, fails_from)
        return fits

    def _composition_fits(self, composition) -> tuple[bool, float]:
        """(fits, ln of its δ at ε as a float) for a composition, by its own ``delta()``."""
        eps, delta = self._budget[1], self._budget[2]
        try:
            if delta >= _TINY_DELTA:  # as spent.delta(eps) will read it
                found = composition.delta(eps)
                return found <= delta, math.log(found) if found > 0 else -math.inf
            # below the float range: ln δ's upper bound against ln(budget)'s lower bound
            log_found = composition.delta(eps, log=True)
            return log_found <= self._log_budget(), log_found
        except (ValueError, ArithmeticError):  # beyond what the routes compute: refuse
            return False, 0.0

    def _composes(self, program: _Program, look_ahead: bool = False) -> bool:
        """Whether the composition of ``program`` fits; with ``look_ahead``, when it does,
        keep its PLD to merge the next releases into, and certify a larger program for the
        admissions to come."""
        composition = program.composition()
        fits, log_delta = self._composition_fits(composition)
        if fits and look_ahead:
            pld = composition._shared_grid_pld(self._budget[1])
            self._base = (program, pld)  # pld None: out of the route's range
            self._look_ahead(program, log_delta)
        return fits

    def _look_ahead(self, program: _Program, log_delta: float) -> None:
        """Certify a larger program for the admissions to come (:meth:`_grown_certificate`,
        from the PLD just kept) and keep it as the certificate."""
        certificate, too_far = self._grown_certificate(
            program, log_delta, self._base, self._too_far
        )
        if certificate is not None:
            self._certificate = certificate
        if too_far is not None:
            self._too_far = too_far

    def _grown_certificate(
        self,
        program: _Program,
        log_delta: float,
        base: tuple | None,
        too_far: Any,
        steps: int = _LOOK_AHEAD_STEPS,
    ) -> tuple[_Certificate | None, _Program | None]:
        """The largest program, within ``steps`` tries, that grows every kind released at
        least twice by one share s of its count (rounded up), certified (:meth:`_certify`,
        merged into ``base``), starting from a guess of what the budget has left (ln δ
        scales about as 1/ρ; ``log_delta`` is ln δ of ``program``) and halving or doubling
        s as the tries say; with the last program seen to fail.  (None, ``too_far``) when
        the releases it could cover are too few to repay the tries (_LOOK_AHEAD_WORTH), or
        ``too_far`` (a program that failed) is inside even the smallest step.  Reads only
        the budget."""
        log_budget = float(self._log_budget())
        if not (log_delta < log_budget < 0):
            return None, too_far
        repeated = _repeated(program)
        if not repeated:
            return None, too_far

        share = min(1.0, log_delta / log_budget - 1)  # ln δ ∝ 1/ρ, roughly
        if share * sum(program.counts.values()) < _LOOK_AHEAD_WORTH * len(program.counts):
            return None, too_far  # the admissions it could cover cost less merged one by one
        smallest = 1 / max(repeated.values())  # one more release of each repeated kind
        if too_far is not None and too_far.within(_grown(program, smallest)):
            return None, too_far  # a program inside even the smallest step failed
        best = None
        low, high = 0.0, math.inf  # shares known to fit / to fail
        share = max(share, smallest)
        for _ in range(steps):
            candidate = _grown(program, share)
            certificate = self._certify(candidate, base)
            if certificate is not None:
                best, low = certificate, share
            else:
                high, too_far = share, candidate
            if low >= 1.0:
                break
            share = min(2 * low, 1.0) if high == math.inf else (low + high) / 2
            if _grown(program, share).counts == _grown(program, low).counts or (
                high < math.inf and _grown(program, share).counts == _grown(program, high).counts
            ):
                break
        return best, too_far

    def _certify(self, program: _Program, base: tuple | None = None) -> _Certificate | None:
        """``program`` with an upper bound on its δ at the budget's ε, if that fits (else
        None): merged into the kept PLD when that is of a program inside it (one FFT merge
        at the kept tilt; a valid bound, looser the further the program is from the kept
        one: the look-ahead then certifies a smaller share), else composed afresh.  ``base``
        as in :meth:`_extended`."""
        step = self._extended(program, base)
        if step is not None:
            log_delta = gmpy2.mpfr(step.log_delta_at(self._budget[1]))
            if not self._log_fits(log_delta):
                return None
            found = (_cf._delta_out(log_delta, False), _cf._delta_out(log_delta, True))
            return _Certificate(program, *found)
        composition = program.composition()
        if not self._composition_fits(composition)[0]:
            return None
        eps = self._budget[1]
        return _Certificate(program, composition.delta(eps), composition.delta(eps, log=True))

    # ---- preparing ahead, on a background thread ----------------------------------------
    # A long program past the zCDP route needs compositions of seconds (10^4 releases of 10
    # kinds: one of about 5 s, then a look-ahead).  While the zCDP route still admits, a
    # daemon thread composes the program the releases are heading for: every repeated kind
    # grown by one share, to the zCDP route's largest ρ; from there it certifies the largest
    # grown program it can (merges into that composition's PLD), and hands both over as it
    # ends (one attribute assignment).  The next admission after it ended takes them; one
    # that the zCDP route and the certificate no longer answer waits for the thread to end
    # before merging or composing itself, and while it works each admission waits for it
    # up to _PREPARE_PACE.  The thread only reads the budget and its own programs.  Nothing
    # it finds is saved: a copy or a restored accountant starts without it.

    def _prepare_ahead(self) -> None:
        """(The lock held, after an admission.)  Start the preparation when it is worth it
        and none is at work: an (ε, δ) budget, at least _PREPARE_WORTH releases (and
        _PREPARE_AFTER admitted since this object was made or restored) with ρ past
        _PREPARE_FROM of the zCDP route's largest, half of it in kinds released more than
        once, the grown program not inside the certificate, and a tenth more releases since
        the last one started."""
        if self._budget[0] != "approx":
            return
        self._collect_prepared()
        if self._preparing is not None:
            return
        program = self._program
        n = sum(program.counts.values())
        if n < _PREPARE_WORTH or n < self._prepared_at * 11 // 10 or program.rho == 0:
            return
        if self._admitted_here < _PREPARE_AFTER:
            return  # a restored ledger spent once (a command-line run): not worth a thread
        limit = self._zcdp_limit()
        if program.rho < limit * _PREPARE_FROM:
            return
        if program.rho >= limit:  # past the zCDP route: each offer's merge does the work
            return
        edge = _grown_to(program, limit)
        certificate = self._certificate
        if edge is None or certificate is not None and edge.within(certificate.program):
            return
        self._prepared_at = n
        self._preparing = threading.Thread(
            target=self._prepare, args=(edge,), name="dgauss-accountant-prepare", daemon=True
        )
        self._preparing.start()

    def _prepare(self, edge: _Program) -> None:
        """(On the background thread.)  Compose ``edge``; if it fits, certify the largest
        grown program from its PLD, compose the program short of that certificate's edge
        (:func:`_short_of`) from the same PLD, and hand over (((edge, PLD), (short, PLD)),
        the certificate).  The first offer past the certificate then merges only the releases
        since the short program into its PLD (not the thousand or so made inside the
        certificate: 0.15 s at 10^4 releases of 10 kinds).  (Composing the certified program
        afresh to certify more from there was tried: at 10^3 and 10^4 releases it certified
        nothing more, and admissions at the edge waited for it.)"""
        eps = self._budget[1]
        try:
            composition = edge.composition()
            fits, log_delta = self._composition_fits(composition)
            if not fits:
                return
            base = (edge, composition._shared_grid_pld(eps))
            found = _Certificate(edge, composition.delta(eps), composition.delta(eps, log=True))
            grown, _ = self._grown_certificate(edge, log_delta, base, None, _PREPARE_STEPS)
            bases = [base]
            if grown is not None and base[1] is not None:
                short = _short_of(edge, grown.program, _SHORT_OF_EDGE)
                step = self._extended(short, base) if short.counts != edge.counts else None
                if step is not None:
                    bases.append((short, step.formed()))
            self._prepared = (tuple(bases), grown if grown is not None else found)
        except Exception:  # nothing found: the admissions compose as without it
            return

    def _collect_prepared(self) -> None:
        """(The lock held.)  Once the preparation has ended, take what it handed over: its
        PLD to merge into, and its certificate if that holds the releases made (and is
        larger); then forget the thread."""
        thread = self._preparing
        if thread is None or thread.is_alive():
            return
        self._preparing, prepared, self._prepared = None, self._prepared, None
        if prepared is None:  # it found nothing (did not fit, or failed)
            return
        bases, certificate = prepared
        # (no PLD on a shared grid: nothing to merge into)
        self._prepared_bases = tuple(b for b in bases if b[1] is not None)
        current = self._certificate
        if self._program.within(certificate.program) and (
            current is None or not certificate.program.within(current.program)
        ):
            self._certificate = certificate

    def _wait_for_prepared(self) -> None:
        """(The lock held.)  Wait for the preparation to end and take what it handed over."""
        if self._preparing is not None:
            self._preparing.join()
        self._collect_prepared()

    def _zcdp_limit(self) -> Fraction:
        """The largest ρ the zCDP route certifies at the budget, rounded down (a guide for
        the preparation only: no decision rests on it); computed once (0.3 ms)."""
        if self._zcdp_rho is None:
            self._zcdp_rho = Fraction(_acc.cdp_rho(self._budget[1], self._budget[2]))
        return self._zcdp_rho

    def _spend(self, release) -> None:
        with self._lock:
            if not self._admits(release):
                why = (
                    "a pure-DP budget admits only discrete Laplace releases; "
                    if self._budget[0] == "pure" and isinstance(release, _acc.Gaussian)
                    else ""
                )
                raise PrivacyBudgetError(
                    f"this release ({release!r}) does not fit in what is left of the budget "
                    f"({self._brief()}); {why}nothing was drawn and the budget is unchanged"
                )
            self._releases.append(release)
            self._program.add(_unit(release), release.k)
            certificate = self._certificate
            if certificate is not None and not self._program.within_at(
                certificate.program, _unit(release)
            ):
                self._certificate = None  # left behind: the releases are no longer inside it
            self._refused.clear()
            self._spent = None
            self._admitted_here += 1
            self._prepare_ahead()
            if self._preparing is not None:  # give it time: offers may follow back to back
                self._preparing.join(_PREPARE_PACE)

    def _brief(self) -> str:
        n = len(self._releases)
        return f"Accountant({self._budget_text()}; {n} release{'s' if n != 1 else ''} made)"

    # ---- what is used and left -------------------------------------------------------

    @property
    def spent(self) -> PrivacyLoss:
        """The composition of the releases made (:class:`PrivacyLoss`), built when first
        read after a release (the grouped program; its δ is composed when asked)."""
        with self._lock:
            if self._spent is None:
                program, certificate = self._program, self._certificate
                ceiling = None
                if certificate is not None:  # the releases are inside it: its δ bounds theirs
                    ceiling = (self._budget[1], certificate.delta, certificate.log_delta)
                proof = self._proof
                if proof is not None and proof[0].counts == program.counts:
                    # the PLD that admitted the last release is of exactly these releases
                    eps = self._budget[1]
                    log_hi = gmpy2.mpfr(proof[1].log_delta_at(eps))
                    found = (_cf._delta_out(log_hi, False), _cf._delta_out(log_hi, True))
                    if ceiling is not None:
                        found = (min(found[0], ceiling[1]), min(found[1], ceiling[2]))
                    ceiling = (eps, *found)
                self._spent = PrivacyLoss(
                    self._releases,
                    self._budget,
                    program.composition() if self._releases else None,
                    rho=program.rho,
                    ceiling=ceiling,
                )
            return self._spent

    @property
    def remaining(self) -> Remaining:
        """What is left, in the budget's own terms (:class:`Remaining`)."""
        return self._remaining()._left_of(self._budget)

    def _remaining(self) -> Remaining:
        spent, b = self.spent, self._budget
        if b[0] == "rho":
            return Remaining(rho=max(b[1] - spent.rho, Fraction(0)))
        if b[0] == "pure":
            used = self._program.pure
            return Remaining(epsilon=_cf._float_down(max(b[1] - used, Fraction(0))))
        if not spent.releases:
            return Remaining(epsilon=_cf._float_down(b[1]), delta=_cf._float_down(b[2]))
        eps_left = b[1] - Fraction(spent.epsilon(b[2]))
        delta_left = b[2] - Fraction(spent.delta(b[1]))
        return Remaining(
            epsilon=_cf._float_down(max(eps_left, Fraction(0))),
            delta=_cf._float_down(max(delta_left, Fraction(0))),
        )

    def _budget_text(self) -> str:
        b = self._budget
        if b[0] == "rho":
            return f"rho={_decimal(b[1])}"
        if b[0] == "pure":
            return f"epsilon={_decimal(b[1])}"
        return f"epsilon={_decimal(b[1])}, delta={_decimal(b[2])}"

    def __repr__(self) -> str:
        n = len(self._releases)
        text = f"Accountant({self._budget_text()}; {n} release{'s' if n != 1 else ''}"
        if n:
            b = self._budget
            if b[0] == "approx":
                spent = _delta_text(self.spent.delta, b[1])
                text += f", spent delta={spent} at epsilon={_decimal(b[1])}"
            elif b[0] == "pure":
                text += f", spent epsilon={_decimal(self._program.pure)}"
            text += f", rho={_decimal(self._program.rho)}"
        return text + ")"

    def report(self) -> str:
        """One sentence stating the certified guarantee of everything released, for
        publication (every number rounded to the safe side)."""
        releases = self._releases
        g = sum(1 for r in releases if isinstance(r, _acc.Gaussian))
        lap = len(releases) - g
        parts = []
        if g:
            parts.append(f"{g} with discrete Gaussian noise")
        if lap:
            parts.append(f"{lap} with discrete Laplace noise")
        if len(releases) == 1:
            what = f"The release (with discrete {'Gaussian' if g else 'Laplace'} noise)"
        elif releases:
            what = f"The {len(releases)} releases (" + " and ".join(parts) + ")"
        else:
            what = "No release has been made; the empty program"
        b, spent = self._budget, self.spent
        verb = "satisfies" if len(releases) == 1 else "satisfy"
        if b[0] == "approx" and releases:
            route = spent.route(b[1])
            guarantee = (
                f"{verb} (ε, δ)-differential privacy with ε = {_decimal(b[1])} and "
                f"δ = {_delta_text(spent.delta, b[1])} (a certified upper bound, composed by "
                f"{route}; Canonne, Kamath & Steinke 2020)"
            )
        elif b[0] == "pure" and releases:
            used = self._program.pure
            guarantee = f"{verb} ε-differential privacy with ε = {_rounded_up(used)}"
        elif releases:
            guarantee = (
                f"{verb} ρ-zero-concentrated differential privacy with ρ = {_rounded_up(spent.rho)}"
            )
        else:
            guarantee = "reveals nothing"
        return f"{what} {guarantee}, as computed by dgauss."

    # ---- the next releases -----------------------------------------------------------

    def _least(self, make, start: Fraction) -> Fraction:
        """The smallest parameter (σ² or scale, 4 significant digits) whose release fits."""
        with self._lock:
            program = self._program.plus()

        def works(x: Fraction) -> bool:
            return self._decide(program.plus(make(x)))

        good = _cf._grid_up(start)
        for _ in range(400):
            if works(good):
                return _cf._smallest_grid(works, good)
            good = _cf._grid_up(good * 4)
        raise PrivacyBudgetError(f"no release fits in what is left of the budget ({self._brief()})")

    def calibrate_gaussian(self, sensitivity=1, k: int = 1) -> Fraction:
        """A σ² (4 significant digits, rounded up) with which ``k`` more discrete Gaussian
        releases of this ``sensitivity`` still fit the budget, composed exactly with what was
        released: the smallest that fits found by bisection on the grid.  Raises
        :class:`PrivacyBudgetError` if none fits (a pure budget).

        Only the returned value is certified to fit: δ is not monotone in σ² at large ε
        (see :func:`dgauss.accounting.calibrate_gaussian`), so a larger σ² may not fit, and
        a smaller one may.  Nothing is at risk either way: a release with any σ² is admitted
        only if it fits."""
        sens = _cf._gaussian_sensitivity(sensitivity)
        kk = _cf._count(k, "k")
        if self._budget[0] == "pure":
            raise PrivacyBudgetError("a pure-DP budget admits only discrete Laplace releases")
        start = kk * _norm2(sens) / (2 * self._budget_rho())  # a starting point only
        return self._least(lambda s: _acc.Gaussian(s, sens, kk), start)

    def calibrate_laplace(self, sensitivity: int = 1, k: int = 1) -> Fraction:
        """A scale (4 significant digits, rounded up) with which ``k`` more discrete Laplace
        releases of this ℓ1 ``sensitivity`` still fit the budget: the smallest that fits found
        by bisection on the grid.  As for :meth:`calibrate_gaussian`, only the returned value
        is certified to fit (the composed δ of a mixed program need not be monotone in one
        scale); a release with any scale is admitted only if it fits."""
        (sens,) = _cf._sensitivity(sensitivity, vector_ok=False)
        kk = _cf._count(k, "k")
        b = self._budget
        eps = b[1] if b[0] != "rho" else _cf._exact(gmpy2.sqrt(gmpy2.mpfr(2 * b[1], 64)))
        start = Fraction(kk * sens) / eps  # a starting point only
        return self._least(lambda t: _acc.Laplace(t, sens, kk), start)

    def _budget_rho(self) -> Fraction:
        """The whole budget as a ρ (for starting points only: exactness is not needed)."""
        b = self._budget
        if b[0] == "rho":
            return b[1]
        if b[0] == "pure":
            return b[1] * b[1] / 2
        return _cf._exact(_cf._cdp_rho_bound(b[1], b[2]))

    def split(self, k: int, *, mechanism: str | None = None, sensitivity=1) -> Fraction:
        """The σ² (or, for ``mechanism="laplace"`` and by default under a pure budget, the
        scale) that each of ``k`` equal releases of what is left must use."""
        if mechanism is None:
            mechanism = "laplace" if self._budget[0] == "pure" else "gaussian"
        if mechanism == "gaussian":
            return self.calibrate_gaussian(sensitivity, k)
        if mechanism == "laplace":
            return self.calibrate_laplace(sensitivity, k)
        raise ValueError(f"mechanism must be 'gaussian' or 'laplace', got {mechanism!r}")

    # ---- releases --------------------------------------------------------------------

    def _taker(self, mech):
        """``take()`` for one release of ``mech``: spend it from the budget (or refuse), then
        count it against the mechanism."""

        def take(size: int | None = None) -> None:
            # ``size``: how many values this release noises, when known before drawing
            self._spend(mech._accounting_release(size))
            mech._releases.take()

        return take

    def add_gaussian_noise(
        self,
        values,
        *,
        sigma2=None,
        rho=None,
        epsilon=None,
        delta=None,
        sensitivity=1,
        accounting: str = "exact",
        granularity=None,
        rng=None,
        out=None,
        clip=None,
        overflow: str = "raise",
        workers=None,
        columns=None,
    ):
        """Noise ``values`` with a :class:`GaussianMechanism` (the keywords as there; one
        release) and spend its privacy.  The release is admitted only if the composition of
        everything released plus this one fits the budget, checked before any noise is drawn.

        Inputs of every shape and every option as for :func:`dgauss.add_gaussian_noise`.
        Every check on them runs first: a call refused on its input (``TypeError``,
        ``ValueError``) or on the budget (:class:`PrivacyBudgetError`) leaves ``spent``,
        ``remaining`` and the ledger as they were.  An ``OverflowError`` after the draw
        (a value + noise beyond int64 or float64) leaves the release spent: the error
        depends on the values and the noise.
        """
        mech = GaussianMechanism(
            sigma2=sigma2,
            rho=rho,
            epsilon=epsilon,
            delta=delta,
            sensitivity=sensitivity,
            accounting=accounting,
            granularity=granularity,
        )

        take = self._taker(mech)
        return _release(mech, values, take, rng, out, clip, overflow, workers, columns)

    def add_laplace_noise(
        self,
        values,
        *,
        scale=None,
        epsilon=None,
        delta=0,
        sensitivity: int = 1,
        granularity=None,
        rng=None,
        out=None,
        clip=None,
        overflow: str = "raise",
        workers=None,
        columns=None,
    ):
        """Noise ``values`` with a :class:`LaplaceMechanism` (the keywords as there; one
        release) and spend its privacy, admitted, checked and charged as for
        :meth:`add_gaussian_noise`."""
        mech = LaplaceMechanism(
            scale=scale,
            epsilon=epsilon,
            delta=delta,
            sensitivity=sensitivity,
            granularity=granularity,
        )

        take = self._taker(mech)
        return _release(mech, values, take, rng, out, clip, overflow, workers, columns)
