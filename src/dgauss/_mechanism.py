"""The discrete Gaussian and discrete Laplace mechanisms and ``add_*_noise`` (public through
:mod:`dgauss.mechanisms`, whose docstring states the rules every entry point follows)."""

from __future__ import annotations

import copy
import functools
import threading
import warnings
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from dgauss import _params, _table_release
from dgauss import accounting as _acc
from dgauss._dispatch import release as _release
from dgauss._inputs import _granularity, _is_one, _lean_add, _release_defaults
from dgauss._kinds import Kind
from dgauss.accounting import _closed_forms as _cf
from dgauss.accounting._neighbours import norm2 as _norm2

#: An (ε, δ) budget's δ below this is checked on ln δ (a float δ would underflow).
_TINY_DELTA = Fraction(10) ** -300


class PrivacyBudgetError(RuntimeError):
    """A release would spend more privacy than was set aside (nothing was drawn)."""


class BudgetCopyWarning(UserWarning):
    """A privacy budget was pickled while some of it is left: each copy can spend it.

    Raised (as a warning) by ``pickle`` of an :class:`Accountant` with budget left, or of a
    :class:`GaussianMechanism` / :class:`LaplaceMechanism` with some of its ``k`` releases
    left.  Pickling is how an object reaches another process: ``multiprocessing``,
    ``concurrent.futures.ProcessPoolExecutor``, joblib, a Dask or Ray worker.  Each unpickled
    copy spends the remaining budget on its own, unaware of the others, so that N copies can
    together spend N times what was left, and the guarantee the original states no longer
    holds.

    Notes
    -----
    What to do instead:

    * draw the noise where the budget is: keep one Accountant (or mechanism) in the driver
      process and call it there; :mod:`dgauss.dask` noises a whole Dask collection as one
      release of the driver's accountant, its workers receiving only the noise's
      parameters;
    * to keep a budget across runs, save it: :meth:`Accountant.to_json` /
      :meth:`Accountant.from_json`, or the command line's ``--ledger``;
    * when the pickle is a copy that will never spend (a checkpoint, a cache, every copy but
      one discarded), silence it where it is made::

          with warnings.catch_warnings():
              warnings.simplefilter("ignore", dgauss.BudgetCopyWarning)
              blob = pickle.dumps(accountant)

    ``copy.copy`` and ``copy.deepcopy`` do not warn: they are made by one's own code in one's
    own process, where the copy is in sight, and their object is documented to spend on its
    own.  Nothing warns when the budget is used up (a ρ or pure ε budget spent to the last
    bit, a mechanism's k releases made): such a copy can release nothing.  An (ε, δ) budget
    is never exactly used up, so pickling such an Accountant always warns.
    """


def _warn_budget_copy(what: str, left: str) -> None:
    """Warn (:class:`BudgetCopyWarning`) that ``what``, with ``left`` of its budget, is being
    pickled; called from a ``__getstate__``, so that the warning names its caller's line."""
    warnings.warn(
        f"pickling {what} copies {left}: each unpickled copy (one per worker process of "
        "multiprocessing, concurrent.futures or Dask, say) can spend all of that on its own, "
        "so the copies together can spend a multiple of it. Instead keep one budget and draw "
        "the noise where it is (dgauss.dask noises Dask collections from the driver); to save "
        "a budget, use Accountant.to_json() or the command line's --ledger; once you know "
        "that every copy but one is discarded, silence this with warnings.filterwarnings("
        "'ignore', category=dgauss.BudgetCopyWarning)",
        BudgetCopyWarning,
        stacklevel=3,
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

    @property
    def left(self) -> int:
        """How many releases are left (0: none can be made)."""
        with self._lock:
            return self.k - self.used

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


def _settings(mech) -> dict:
    """A mechanism's settings and release count, without what it keeps for this process
    (the lean release's job, :func:`_lean_release`, which a later dgauss could resolve
    otherwise)."""
    state = dict(mech.__dict__)
    state.pop("_lean_job", None)
    return state


def _mechanism_state(mech) -> dict:
    """A mechanism's pickled state (:func:`_settings`); with releases left it warns
    (:class:`BudgetCopyWarning`): each unpickled copy can make them all."""
    left = mech._releases.left
    if left > 0:
        plural = "s" if left != 1 else ""
        _warn_budget_copy(
            f"this {type(mech).__name__}",
            f"its {left} remaining release{plural} (of k={mech.k})",
        )
    return _settings(mech)


def _deepcopy_mechanism(mech, memo: dict):
    """``copy.deepcopy`` of a mechanism: as a pickle and back (:func:`_settings`, the release
    count its own) but without the warning a pickle gives: the copy is made in this process,
    by the caller's own code."""
    new = object.__new__(type(mech))
    memo[id(mech)] = new
    new.__dict__.update(copy.deepcopy(_settings(mech), memo))
    return new


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
        counts its releases on its own, from the count at the time it was made (so a
        pickle with releases left warns: see *Warns*).
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

    Warns
    -----
    BudgetCopyWarning
        When the mechanism is pickled (sent to another process) with some of its k releases
        left: each copy could make them all.  ``copy.copy`` and ``copy.deepcopy`` do not
        warn.
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
        self.sensitivity: int | tuple[int, ...] | _acc.NeighbourSet = (
            _cf._sensitivity(scalar)[0]
            if isinstance(scalar, (str, bytes))
            or not isinstance(scalar, (Iterable, _acc.NeighbourSet))
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
    __deepcopy__ = _deepcopy_mechanism
    __getstate__ = _mechanism_state

    @property
    def _param(self) -> Fraction:
        return self.sigma2

    def _accounting_release(self, size: int | None = None) -> _acc.Gaussian:
        """One release of this mechanism, for :func:`dgauss.accounting.compose`; on ``size``
        values, when known: a difference vector then has at most ``size`` nonzero entries, so
        an ℓ2 ball is cut to ``coordinates=size`` (one count: exactly the single shift)."""
        sens = self._sensitivity
        if isinstance(sens, _acc.NeighbourSet) and size is not None and size >= 1:
            sens = sens.limited(size)
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
    k(Δ/t)²/2 (pure ε-DP implies ε²/2-zCDP).  Pickled with releases left, it warns
    (:class:`BudgetCopyWarning`), as a :class:`GaussianMechanism` does.
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
    __deepcopy__ = _deepcopy_mechanism
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
    values : int, float, list, numpy.ndarray, pandas, Dask or Spark object, or Table
        Counts of any shape (0-d to N-D, any layout), Series or DataFrame, a Dask
        collection, a Spark DataFrame (:mod:`dgauss.spark`), or a :class:`~dgauss.Table`
        (its own sensitivity and granularity; its frame returned with the noisy column);
        floats (and Fractions) only with a ``granularity``.  See the module docstring for
        the rules every entry point follows.
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
        Threads drawing the noise (OS randomness only); ``None``: as for
        :func:`dgauss.sample_gaussian` (two for a large array where a second CPU is idle).
    columns : label or list of labels, optional
        A DataFrame's count columns to noise (the others are returned as they are).

    Returns
    -------
    int, float, numpy.ndarray, pandas.Series, pandas.DataFrame or Dask collection
        The noisy values in the input's form: a Python int (float) for a scalar, an ndarray
        of the input's shape (int64; object for exact Python ints; float64 with a
        granularity), a Series or DataFrame with its index and columns, a lazy Dask
        collection, or ``out``.

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
    sensitivity, granularity = _table_release.settings(values, sensitivity, granularity)
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
    sensitivity, granularity = _table_release.settings(values, sensitivity, granularity)
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
