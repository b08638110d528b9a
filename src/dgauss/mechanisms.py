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

The rules every entry point follows:

* **Inputs**: any integer dtype, Python ints and lists, object arrays of Python ints,
  pandas Series and DataFrames (returned with their index and columns).  Floats, bools and
  anything else are refused, unless a ``granularity`` g is given: then values must be exact
  multiples of g (never rounded), the mechanism counts sensitivity, σ² and scale in steps of
  g, adds g·(integer noise), and returns float64.
* **The input is never modified** unless ``out=`` is the input itself.
* **Overflow is never silent**: small and unsigned dtypes give int64 results (negatives
  allowed); a result outside int64 raises ``OverflowError``, or with ``overflow="object"``
  comes back as an object array of exact Python ints.
* **Timing**: the noise of a call is drawn in one batch before the data are touched; see the
  README's security notes for what the time of a call can still reveal.
* ``clip=(lo, hi)`` clips the noisy values (e.g. ``(0, None)`` for counts): post-processing,
  free privacy-wise.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _params
from dgauss import accounting as _acc
from dgauss._kinds import Kind

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "Accountant",
    "PrivacyLoss",
    "PrivacyBudgetError",
    "add_gaussian_noise",
    "add_laplace_noise",
]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


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
    g = _params.positive(value, "granularity")
    return None if g == 1 else g


@dataclass
class _Prepared:
    """An input as lattice integers: ``flat`` (1-D int or object), and how to give it back."""

    flat: np.ndarray
    shape: tuple[int, ...]
    scalar: bool
    pandas: Any  # the Series / DataFrame the values came from, or None
    source: np.ndarray | None  # the caller's ndarray (for out= aliasing), or None


def _is_pandas(values) -> bool:
    module = type(values).__module__
    return (module == "pandas" or module.startswith("pandas.")) and hasattr(values, "to_numpy")


def _object_ints(arr: np.ndarray, name: str) -> None:
    for v in arr.flat:
        if type(v) is bool or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold integers; found {type(v).__name__} {v!r}")


def _on_lattice(arr: np.ndarray, g: Fraction, name: str) -> np.ndarray:
    """arr / g as integers (int64, or object where they are large), or ValueError if a value
    is not an exact multiple of g; float values are taken at their exact binary value."""
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite to lie on a lattice")
        pow2 = g.numerator & (g.numerator - 1) == 0 and g.denominator & (g.denominator - 1) == 0
        if pow2 and arr.dtype.itemsize <= 8:
            q = arr.astype(np.float64) / float(g)  # exact: division by a power of two
            if np.all(q == np.floor(q)) and np.all(np.abs(q) < 2.0**53):
                return q.astype(np.int64)
    out = np.empty(arr.size, dtype=object)
    for i, v in enumerate(arr.flat):
        exact = Fraction(*v.as_integer_ratio()) if isinstance(v, np.floating) else Fraction(v)
        x = exact / g  # a float at its exact binary value (long doubles too)
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


def _prepare(values, g: Fraction | None, name: str = "values") -> _Prepared:
    pandas = values if _is_pandas(values) else None
    source = values if isinstance(values, np.ndarray) else None
    scalar = False
    if pandas is not None:
        arr = np.asarray(values.to_numpy())
        if arr.dtype.kind == "O" and getattr(values, "ndim", 1) == 2:
            arr = arr.astype(object)
    elif isinstance(values, np.ndarray):
        arr = values
    elif isinstance(values, (bool, np.bool_)):
        raise TypeError(f"{name} must be integers, not bool")
    elif isinstance(values, (int, np.integer)):
        scalar = True
        arr = np.array(int(values), dtype=object)
    elif isinstance(values, (float, np.floating)):
        scalar = True
        arr = np.asarray(values)
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
    elif g is not None:
        flat = _on_lattice(arr.astype(object), g, name)
    else:
        flat = np.ascontiguousarray(arr).reshape(-1)
    return _Prepared(flat, tuple(arr.shape), scalar, pandas, source)


def _restore(prep: _Prepared, result: np.ndarray):
    """The result in the input's form: same shape; a scalar for a scalar; pandas for pandas."""
    shaped = result.reshape(prep.shape)
    if prep.scalar:
        value = shaped.item() if shaped.dtype != object else shaped[()]
        return value
    if prep.pandas is not None:
        like = prep.pandas
        if getattr(like, "ndim", 1) == 2:
            return type(like)(shaped, index=like.index, columns=like.columns)
        return type(like)(shaped, index=like.index, name=like.name)
    return shaped


# ==========================================================================
# Drawing and adding the noise
# ==========================================================================


def _clipped(result: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """Clip in place (int64) or elementwise (exact ints)."""
    if result.dtype != object:
        return np.clip(result, lo, hi, out=result)
    low = -math.inf if lo is None else lo
    high = math.inf if hi is None else hi
    return np.array([min(max(v, low), high) for v in result], dtype=object)


def _times(lattice: np.ndarray, g: Fraction) -> np.ndarray:
    """lattice * g as float64, each the double nearest the exact product (vectorized when g
    is dyadic and the integers are below 2**53, where one rounding gives exactly that)."""
    dyadic = g.denominator & (g.denominator - 1) == 0 and g.numerator < 2**53
    if lattice.dtype != object and dyadic and lattice.size and np.abs(lattice).max() < 2**53:
        return lattice.astype(np.float64) * float(g)
    return np.array([float(int(v) * g) for v in lattice.tolist()], dtype=np.float64)


def _check_clip(clip) -> tuple[int | None, int | None] | None:
    if clip is None:
        return None
    if not isinstance(clip, (tuple, list)) or len(clip) != 2:
        raise TypeError("clip must be None or a pair (lo, hi), either of them None")
    lo = None if clip[0] is None else _params.integer(clip[0], "clip[0]")
    hi = None if clip[1] is None else _params.integer(clip[1], "clip[1]")
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"clip must have lo <= hi, got {clip!r}")
    return lo, hi


def _check_overflow(overflow: str) -> str:
    if overflow not in ("raise", "object"):
        raise ValueError(f"overflow must be 'raise' or 'object', got {overflow!r}")
    return overflow


def _add_int64(noise: np.ndarray, flat: np.ndarray, overflow: str) -> np.ndarray:
    """noise + flat (any integer dtype), in place in ``noise`` (int64) when every sum fits
    int64 -- in one pass for int64 values, checked by the noise's range for narrower ones --
    else OverflowError, or exact Python ints with ``overflow="object"``."""
    from dgauss import _core

    if flat.dtype == np.uint64 and flat.size and int(flat.max()) > INT64_MAX:
        bad = 0  # a value beyond int64: some sum may fit, but not as an int64 array
    elif flat.dtype in (np.int64, np.uint64):
        bad = _core.add_int64_checked(noise, flat.view(np.int64))
    else:  # |values| < 2**32: a sum leaves int64 only if the noise is that close to its ends
        lo, hi = (int(noise.min()), int(noise.max())) if noise.size else (0, 0)
        bad = -1 if INT64_MIN + 2**32 <= lo and hi <= INT64_MAX - 2**32 else 0
        if bad < 0:
            np.add(noise, flat, out=noise, casting="unsafe")
    if bad < 0:
        return noise
    if overflow == "object":
        return flat.astype(object) + noise.astype(object)
    raise OverflowError(
        "a value plus its noise leaves int64 (the values reach "
        f"{_fmt(Fraction(int(flat.max())))}); pass overflow='object' for exact Python ints"
    )


def _check_out(out, prep: _Prepared, float_out: bool) -> None:
    """``out``: None, or a writeable ndarray of the values' shape that can hold the result
    (float64 with a granularity, else int64 or object); checked before any noise is drawn."""
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


def _noise_into(kind: Kind, param: Fraction, count: int, rng, dtype, workers, out=None):
    from dgauss import _core, _driver  # the compiled core, on first use

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
    _check_out(out, prep, float_out)
    # the noise, in one batch, before the values are looked at
    target = None
    if (
        out is not None
        and not float_out
        and out.dtype == np.int64
        and out.flags.c_contiguous
        and int64_safe
        and flat.dtype != object
        and not (prep.source is not None and np.shares_memory(out, prep.source))
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
        result = _add_int64(noise, flat, overflow)
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
                raise TypeError(
                    f"out has dtype {out.dtype} but the result needs exact Python ints (object)"
                )
        np.copyto(out, result.reshape(out.shape))  # out may be any view, contiguous or not
        return out
    return _restore(prep, result)


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


class _Releases:
    """Counts the releases a mechanism's guarantee covers (k of them)."""

    def __init__(self, k: int):
        self.k, self.used, self._lock = k, 0, threading.Lock()

    def take(self) -> None:
        with self._lock:
            if self.used >= self.k:
                raise PrivacyBudgetError(
                    f"this mechanism's guarantee covers k={self.k} release(s), all made; "
                    "create it with a larger k, or use dgauss.Accountant"
                )
            self.used += 1


class GaussianMechanism:
    r"""The discrete Gaussian mechanism: adds N_Z(0, σ²) to every value (Canonne, Kamath &
    Steinke 2020, Theorems 4, 7, 14, 15).

    Parameters (keyword-only; set the noise in exactly one way)
    ----------
    sigma2 : rational, optional
        The variance parameter σ² > 0 of the noise.
    rho : rational, optional
        A zCDP target ρ > 0 for all ``k`` releases: σ² = k‖Δ‖²/(2ρ), exactly.
    epsilon, delta : rational, optional
        An (ε, δ)-DP target for all ``k`` releases: σ² from
        :func:`dgauss.accounting.calibrate_gaussian` (``accounting`` picks the exact
        Theorem 7/15 route or the zCDP route); never less noise than needed.
    sensitivity : int or sequence of int
        The ℓ2 bound Δ of one person's effect on the whole array, a positive int, or the
        difference vector μ of Theorem 15 (ints, not all zero).  Default 1: each person
        changes one count by at most 1.
    k : int
        How many releases the guarantee covers (composition); the object refuses a
        (k+1)-th release with :class:`PrivacyBudgetError`.
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
        self._sensitivity = _acc._sensitivity(sensitivity)
        self.sensitivity: int | tuple[int, ...] = (
            self._sensitivity[0]
            if isinstance(sensitivity, (int, np.integer)) and not isinstance(sensitivity, bool)
            else self._sensitivity
        )
        self.k = _acc._count(k, "k")
        if accounting not in ("exact", "zcdp"):
            raise ValueError(f"accounting must be 'exact' or 'zcdp', got {accounting!r}")
        self.accounting = accounting
        self.granularity = _granularity(granularity)
        if delta is not None and epsilon is None:
            raise ValueError("delta= goes with epsilon= (an (ε, δ) target)")
        way = _one_way({"sigma2": sigma2, "rho": rho, "epsilon": epsilon}, "noise")
        norm2 = sum(x * x for x in self._sensitivity)
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
                epsilon, delta, self._sensitivity, self.k, method=accounting
            )
        self.rho = Fraction(self.k * norm2) / (2 * self.sigma2)
        self._releases = _Releases(self.k)

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

    def __call__(self, values, *, rng=None, out=None, clip=None, overflow="raise", workers=None):
        """``values`` plus independent N_Z(0, σ²) noise on every value (see the module
        docstring for inputs, overflow, ``out`` and ``clip``).  ``rng``: None for the OS
        CSPRNG (use it for real data); a NumPy generator only for reproducible simulations."""
        prep = _prepare(values, self.granularity)
        clip_, overflow_ = _check_clip(clip), _check_overflow(overflow)
        _check_out(out, prep, self.granularity is not None)
        self._releases.take()
        return _add(
            prep,
            Kind.DISCRETE_GAUSSIAN,
            self.sigma2,
            _params.gaussian_int64_safe(self.sigma2, 0),
            rng=rng,
            out=out,
            clip=clip_,
            overflow=overflow_,
            workers=workers,
            granularity=self.granularity,
        )


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
        (self.sensitivity,) = _acc._sensitivity(sensitivity, vector_ok=False)
        self.k = _acc._count(k, "k")
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
        self._releases = _Releases(self.k)

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

    def __call__(self, values, *, rng=None, out=None, clip=None, overflow="raise", workers=None):
        """``values`` plus independent Lap_Z(t) noise on every value (see the module
        docstring)."""
        prep = _prepare(values, self.granularity)
        clip_, overflow_ = _check_clip(clip), _check_overflow(overflow)
        _check_out(out, prep, self.granularity is not None)
        self._releases.take()
        return _add(
            prep,
            Kind.DISCRETE_LAPLACE,
            self.scale,
            _params.laplace_int64_safe(self.scale, 0),
            rng=rng,
            out=out,
            clip=clip_,
            overflow=overflow_,
            workers=workers,
            granularity=self.granularity,
        )


def _scaled(lo: int, hi: int, g: Fraction | None) -> tuple:
    if g is None:
        return lo, hi
    return float(lo * g), float(hi * g)


_CALL_KEYS = ("rng", "out", "clip", "overflow", "workers")


def _split_call(kwargs: dict) -> tuple[dict, dict]:
    call = {key: kwargs.pop(key) for key in _CALL_KEYS if key in kwargs}
    return kwargs, call


def add_gaussian_noise(values, **kwargs):
    """``GaussianMechanism(**kwargs)(values, rng=, out=, clip=, overflow=, workers=)`` in one
    call (one release).

    >>> import dgauss
    >>> dgauss.add_gaussian_noise([5, 0, 2], sigma2=4).shape
    (3,)
    """
    setup, call = _split_call(dict(kwargs))
    return GaussianMechanism(**setup)(values, **call)


def add_laplace_noise(values, **kwargs):
    """``LaplaceMechanism(**kwargs)(values, rng=, out=, clip=, overflow=, workers=)`` in one
    call (one release)."""
    setup, call = _split_call(dict(kwargs))
    return LaplaceMechanism(**setup)(values, **call)


# ==========================================================================
# The accountant
# ==========================================================================


@dataclass(frozen=True)
class PrivacyLoss:
    """A zCDP amount ρ (exact), viewable as (ε, δ) through :mod:`dgauss.accounting`."""

    rho: Fraction

    def epsilon(self, delta) -> float:
        """ε at ``delta`` for ρ-zCDP (Corollary 13; rounded up)."""
        if self.rho == 0:
            return 0.0
        return _acc.cdp_eps(self.rho, delta)

    def delta(self, epsilon) -> float:
        """δ at ``epsilon`` for ρ-zCDP (Corollary 13; rounded up)."""
        if self.rho == 0:
            return 0.0
        return _acc.cdp_delta(self.rho, epsilon)


@dataclass(frozen=True)
class _Spend:
    kind: str  # "gaussian" or "laplace"
    param: Fraction  # sigma2 or scale
    sensitivity: tuple[int, ...]
    rho: Fraction


class Accountant:
    """One privacy budget spent over several releases.

    ``Accountant(rho=...)`` (zCDP) or ``Accountant(epsilon=..., delta=...)``.  Each
    ``add_gaussian_noise`` / ``add_laplace_noise`` checks that the release fits in what is
    left **before any noise is drawn**; an overspend raises :class:`PrivacyBudgetError` and
    leaves the budget unchanged.  Composition is zCDP's (ρ's add up; a pure ε-DP Laplace
    release counts as ε²/2), except that with an (ε, δ) budget, when it admits more: only
    Gaussian releases of one σ² are composed exactly (Theorem 15's joint δ), and only Laplace
    releases by adding their pure ε's or, at one scale, by their exact joint δ (Eq. 49).
    Thread-safe: the check and the spend are one step.
    """

    def __init__(self, *, rho=None, epsilon=None, delta=None):
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise ValueError("set the budget in exactly one way: rho=, or epsilon= with delta=")
            self._rho_budget: Fraction | None = _params.positive(rho, "rho")
            self._eps = self._delta = None
        else:
            if epsilon is None or delta is None:
                raise ValueError("set the budget in exactly one way: rho=, or epsilon= with delta=")
            self._eps = _acc._positive(epsilon, "epsilon")
            self._delta = _acc._probability(delta, "delta")
            self._rho_budget = None
        self._spends: list[_Spend] = []
        self._lock = threading.Lock()

    # ---- what is used and left -------------------------------------------------------

    @property
    def spent(self) -> PrivacyLoss:
        """The zCDP total of the releases made (exact)."""
        return PrivacyLoss(sum((s.rho for s in self._spends), Fraction(0)))

    @property
    def remaining(self) -> PrivacyLoss:
        """What is left, as zCDP ρ: the ρ budget minus what was spent, or for an (ε, δ)
        budget :func:`dgauss.accounting.cdp_rho` (ε, δ) minus it (never below 0)."""
        left = self._rho_total() - self.spent.rho
        return PrivacyLoss(max(left, Fraction(0)))

    def _rho_total(self) -> Fraction:
        if self._rho_budget is not None:
            return self._rho_budget
        return Fraction(_acc.cdp_rho(self._eps, self._delta))

    def __repr__(self) -> str:
        budget = (
            f"rho={_fmt(self._rho_budget)}"
            if self._rho_budget is not None
            else f"epsilon={_fmt(self._eps)}, delta={_fmt(self._delta)}"
        )
        spent = _fmt(self.spent.rho)
        return f"Accountant({budget}; {len(self._spends)} releases, spent rho={spent})"

    # ---- the check -------------------------------------------------------------------

    def _fits(self, spends: list[_Spend]) -> bool:
        rho = sum((s.rho for s in spends), Fraction(0))
        if self._rho_budget is not None:
            return rho <= self._rho_budget
        assert self._eps is not None and self._delta is not None
        if rho <= Fraction(_acc.cdp_rho(self._eps, self._delta)):
            return True
        params = {(s.param, s.sensitivity) for s in spends}
        try:
            if all(s.kind == "gaussian" for s in spends) and len({p for p, _ in params}) == 1:
                mu = tuple(x for s in spends for x in s.sensitivity)
                return _acc.gaussian_delta(spends[0].param, self._eps, mu) <= self._delta
            if all(s.kind == "laplace" for s in spends):
                # pure DP composes by adding the epsilons (delta 0)
                if sum(Fraction(s.sensitivity[0]) / s.param for s in spends) <= self._eps:
                    return True
                if len(params) == 1:  # one scale and sensitivity: the exact composition (Eq. 49)
                    scale, (sens,) = params.pop()
                    return _acc.laplace_delta(scale, self._eps, sens, len(spends)) <= self._delta
        except (ValueError, ArithmeticError):  # beyond what the exact routes compute: refuse
            return False
        return False

    def _spend(self, spend: _Spend) -> None:
        with self._lock:
            if not self._fits([*self._spends, spend]):
                raise PrivacyBudgetError(
                    f"this release (rho={_fmt(spend.rho)}) does not fit in what is "
                    f"left of the budget ({self!r}); nothing was drawn and the budget is "
                    "unchanged"
                )
            self._spends.append(spend)

    # ---- releases --------------------------------------------------------------------

    def add_gaussian_noise(self, values, **kwargs):
        """Noise ``values`` with a :class:`GaussianMechanism` (keywords as there, one release;
        plus ``rng``, ``out``, ``clip``, ``overflow``, ``workers``) and spend its privacy."""
        setup, call = _split_call(dict(kwargs))
        if "k" in setup:
            raise TypeError("k is not accepted here: each call is one release")
        mech = GaussianMechanism(**setup)
        prep = _prepare(values, mech.granularity)
        clip, overflow = (
            _check_clip(call.pop("clip", None)),
            _check_overflow(call.pop("overflow", "raise")),
        )
        _check_out(call.get("out"), prep, mech.granularity is not None)
        self._spend(_Spend("gaussian", mech.sigma2, mech._sensitivity, mech.rho))
        mech._releases.take()
        return _add(
            prep,
            Kind.DISCRETE_GAUSSIAN,
            mech.sigma2,
            _params.gaussian_int64_safe(mech.sigma2, 0),
            clip=clip,
            overflow=overflow,
            granularity=mech.granularity,
            rng=call.get("rng"),
            out=call.get("out"),
            workers=call.get("workers"),
        )

    def add_laplace_noise(self, values, **kwargs):
        """Noise ``values`` with a :class:`LaplaceMechanism` (keywords as there, one release)
        and spend its privacy (as ρ = ε²/2, ε = Δ/t)."""
        setup, call = _split_call(dict(kwargs))
        if "k" in setup:
            raise TypeError("k is not accepted here: each call is one release")
        mech = LaplaceMechanism(**setup)
        prep = _prepare(values, mech.granularity)
        clip, overflow = (
            _check_clip(call.pop("clip", None)),
            _check_overflow(call.pop("overflow", "raise")),
        )
        _check_out(call.get("out"), prep, mech.granularity is not None)
        self._spend(_Spend("laplace", mech.scale, (mech.sensitivity,), mech.rho))
        mech._releases.take()
        return _add(
            prep,
            Kind.DISCRETE_LAPLACE,
            mech.scale,
            _params.laplace_int64_safe(mech.scale, 0),
            clip=clip,
            overflow=overflow,
            granularity=mech.granularity,
            rng=call.get("rng"),
            out=call.get("out"),
            workers=call.get("workers"),
        )
