"""The Accountant: one privacy budget spent over several releases, composed exactly (public
through :mod:`dgauss.mechanisms`), with what it spent (:class:`PrivacyLoss`), what is left
(:class:`Remaining`) and its ledger (JSON)."""

from __future__ import annotations

import dataclasses
import decimal
import functools
import json
import math
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np

from dgauss import _inputs, _params, _table_release
from dgauss import accounting as _acc
from dgauss._dispatch import release as _release
from dgauss._mechanism import (
    _TINY_DELTA,
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyBudgetError,
    _warn_budget_copy,
)
from dgauss._rounding import _delta_text, _rounded_down, _rounded_up
from dgauss.accounting import _closed_forms as _cf
from dgauss.accounting import _programs
from dgauss.accounting._neighbours import norm2 as _norm2

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
    if isinstance(sens, _acc.Contributions):  # bounded rows per person
        sens = {"contributions": sens.as_dict()}
    elif isinstance(sens, _acc.L2Ball):  # an int is the ball; a list is exactly that vector
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
    if param == "sigma2" and isinstance(sens, dict) and "contributions" in sens:
        _ledger_fields(sens, f"{where}: sensitivity", {"contributions"})
        fields = sens["contributions"]
        if not isinstance(fields, dict) or any(type(x) is not int for x in fields.values()):
            raise ValueError(f"{where}: contributions must be an object of integer bounds")
        try:
            sens = _acc.Contributions.from_dict(fields)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        parts = [1]
    elif param == "sigma2" and isinstance(sens, dict):  # an ℓ2 ball with a coordinate bound
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


def _plus(total: tuple[int, int], q: tuple[int, int]) -> tuple[int, int]:
    """The exact sum ``total`` (numerator, common denominator) plus ``q`` (numerator,
    denominator), over a common denominator again (the lcm when ``q``'s does not divide it;
    never reduced: read it as ``Fraction(*total)``, which is)."""
    num, den = total
    if den % q[1] == 0:
        return num + q[0] * (den // q[1]), den
    common = math.lcm(den, q[1])
    return num * (common // den) + q[0] * (common // q[1]), common


def _exact(q: Fraction) -> tuple[int, int]:
    return q.numerator, q.denominator


class _Program:
    """A program of releases grouped by kind: identical releases (the same noise, exact
    parameter and sensitivity) are one k-fold release; with the running exact totals, each
    kept as an integer numerator over a common denominator (``_rho``, ``_pure``: adding a
    release of a kind seen before is an integer addition; ``rho`` and ``pure`` read them as
    Fractions)."""

    __slots__ = ("counts", "_rho", "_pure", "gaussians")

    def __init__(self) -> None:
        self.counts: dict = {}  # each kind (a release with k = 1) -> how many times
        self._rho = (0, 1)  # Σ ρ, as (numerator, common denominator)
        self._pure = (0, 1)  # Σ ε of the Laplace releases, likewise
        self.gaussians = 0  # how many Gaussian releases (times k)

    @property
    def rho(self) -> Fraction:
        """Σ ρ, exactly."""
        return Fraction(*self._rho)

    @property
    def pure(self) -> Fraction:
        """Σ ε of the Laplace releases, exactly."""
        return Fraction(*self._pure)

    def add(self, unit, count: int = 1) -> None:
        """Add ``count`` releases of the kind ``unit`` (or one release ``unit`` with any k)."""
        if unit.k != 1:
            unit, count = _unit(unit), unit.k * count
        self.counts[unit] = self.counts.get(unit, 0) + count
        self._rho = _plus(self._rho, _exact(unit.rho * count))
        if isinstance(unit, _acc.Laplace):
            self._pure = _plus(self._pure, _exact(unit.epsilon * count))
        else:
            self.gaussians += count

    def plus(self, release=None) -> _Program:
        """A copy, with ``release`` added."""
        new = _Program()
        new.counts = dict(self.counts)
        new._rho, new._pure, new.gaussians = self._rho, self._pure, self.gaussians
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
        self.counts, rho, pure, self.gaussians = state
        self._rho, self._pure = _exact(rho), _exact(pure)


@dataclass(frozen=True)
class _Certificate:
    """A program certified to fit an (ε, δ) budget, with its δ at ε (float, rounded up) and
    an upper bound on ln δ: every program inside it fits, its δ at most these."""

    program: _Program
    delta: float
    log_delta: float


#: The argument types an Accountant remembers a release's set-up for (None: not given):
#: values of these types are equal only when they mean the same (:data:`_params.EXACT_TYPES`).
_EXACT_ARGUMENTS = (type(None), *_params.EXACT_TYPES)

#: Most releases (exact arguments) an Accountant remembers, and most sizes one remembers
#: the accounting release of (an ℓ2 ball is cut to the number of values noised).
_KNOWN_MAX = 256
_SIZES_MAX = 64


class _Known:
    """A release an :class:`Accountant` was asked for before, by its exact arguments: the
    mechanism set up from them (its settings are immutable; it never counts a release here)
    and, per number of values noised, its accounting release with the exact ρ and ε, so that
    the same call again is admitted on the running exact sums and drawn the lean way
    without setting a mechanism up again.  Facts about the arguments only: whether a release
    fits is decided at every call."""

    __slots__ = ("mech", "laplace", "one", "sizes", "take")

    def __init__(self, mech) -> None:
        self.mech = mech
        self.laplace = isinstance(mech, LaplaceMechanism)
        # (release, ρ, ε or None), ρ and ε as (numerator, denominator); an ℓ2 ball's
        # release depends on how many values are noised (it is cut to them): one per size
        sens = getattr(mech, "_sensitivity", None)
        self.one = None if isinstance(sens, _acc.NeighbourSet) else self._facts(None)
        self.sizes: dict = {}
        self.take: Any = None  # take(size): spend a release on size values (the Accountant's)

    def _facts(self, size: int | None) -> tuple:
        unit = self.mech._accounting_release(size)
        return unit, _exact(unit.rho), _exact(unit.epsilon) if self.laplace else None

    def facts(self, size: int) -> tuple:
        """(release, ρ, ε or None) of a call on ``size`` values, as the mechanism's
        ``_accounting_release(size)`` gives it."""
        found = self.one
        if found is not None:
            return found
        found = self.sizes.get(size)
        if found is None:
            found = self._facts(size)
            if len(self.sizes) >= _SIZES_MAX:
                self.sizes.clear()
            self.sizes[size] = found
        return found


def _step(den: int, q: tuple[int, int]) -> int | None:
    """``q`` (numerator, denominator) as a numerator over ``den``; None when ``den`` is not
    a multiple of ``q``'s denominator."""
    if den % q[1]:
        return None
    return q[0] * (den // q[1])


def _known_key(values, rng, out, clip, workers, columns, overflow, arguments: tuple):
    """The key an :class:`Accountant` remembers a release's set-up by (:class:`_Known`):
    ``arguments`` (the kind, then the mechanism's keywords) and their types, when the call
    is one the lean way draws: an ndarray, every other keyword at its default
    (:func:`dgauss._inputs._release_defaults`; ``overflow`` only the str "raise"); else
    None.  (Plain tests, no loop: this runs at every call.)"""
    if (
        type(values) is not np.ndarray
        or rng is not None
        or out is not None
        or clip is not None
        or workers is not None
        or columns is not None
        or type(overflow) is not str
        or overflow != "raise"
    ):
        return None
    return arguments, tuple(map(type, arguments))


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

    Warns
    -----
    BudgetCopyWarning
        When pickled with budget left (a ρ or pure ε budget not spent to the last bit; an
        (ε, δ) budget always): a pickle is how an object reaches another process
        (multiprocessing, ``concurrent.futures``, Dask), and each copy there could spend
        everything that is left, so that N copies together spend up to N times it.  Keep
        the accountant in one process and noise there (:mod:`dgauss.dask` for Dask
        collections), or save it with :meth:`to_json`.  ``copy.copy`` and
        ``copy.deepcopy`` do not warn.
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
        self._bound = _exact(budget[1])  # the budget's ρ or ε, (numerator, denominator)
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
        self._known: dict = {}  # the releases asked for before, by exact arguments (_Known)
        self._lock = threading.Lock()

    # ---- copying and saving ----------------------------------------------------------

    def _state(self) -> tuple[tuple, tuple, _Certificate | None]:
        """(budget, releases, certificate), read in one step."""
        with self._lock:
            return self._budget, tuple(self._releases), self._certificate

    def _left_words(self) -> str | None:
        """What is left of the budget, in words, or None when nothing is: a ρ or pure ε
        budget spent to the last bit.  An (ε, δ) budget is never used up exactly (a release
        with enough noise still fits), so something is always left of it."""
        with self._lock:
            b, program = self._budget, self._program
            if b[0] == "approx":
                return "its remaining (epsilon, delta) budget"
            left = b[1] - (program.rho if b[0] == "rho" else program.pure)
        if left <= 0:
            return None
        name = "rho" if b[0] == "rho" else "epsilon"
        return f"its remaining budget ({name} = {_trimmed(_rounded_down(left))} left)"

    def __getstate__(self) -> dict:
        left = self._left_words()
        if left is not None:  # a pickle is how another process gets it: each copy may spend
            _warn_budget_copy("this Accountant", left)
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
    #   last composition (same tilt and grid: _readouts._PLD.extended; after a refusal
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
        one's tilt and grid: :meth:`_readouts._PLD.extended`): ``base`` = (program, PLD), by
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
        if any(isinstance(r.sensitivity, _acc.NeighbourSet) for r in more.releases()):
            return None  # an ℓ2 ball is its worst vectors' programs, not one PLD (compose)
        return pld.extended(_programs._coordinates(more.releases()))

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
            self._program.add(_unit(release), release.k)
            self._admitted(release)

    def _admitted(self, release) -> None:
        """(The lock held.)  Record ``release``, admitted and already added to the program."""
        self._releases.append(release)
        certificate = self._certificate
        if certificate is not None and not self._program.within_at(
            certificate.program, _unit(release)
        ):
            self._certificate = None  # left behind: the releases are no longer inside it
        self._refused.clear()
        self._spent = None
        self._admitted_here += 1
        if self._budget[0] == "approx":  # (the only budget prepared ahead)
            self._prepare_ahead()
        if self._preparing is not None:  # give it time: offers may follow back to back
            self._preparing.join(_PREPARE_PACE)

    def _brief(self) -> str:
        n = len(self._releases)
        return f"Accountant({self._budget_text()}; {n} release{'s' if n != 1 else ''} made)"

    # ---- a release asked for before, admitted on the running exact sums ---------------

    def _remember(self, key: tuple, mech) -> None:
        """Keep ``mech`` (just set up from the arguments in ``key``) for the same call again
        (:class:`_Known`): when every argument is of an exact type, and its releases are
        drawn the lean way (no granularity)."""
        if mech.granularity is not None or mech.k != 1:
            return
        if all(t in _EXACT_ARGUMENTS for t in key[1][1:]) and key not in self._known:
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            known = _Known(mech)
            known.take = functools.partial(self._take_known, known)
            self._known[key] = known

    def _known_release(self, key: tuple, values: np.ndarray):
        """The lean release (:func:`dgauss._inputs._lean_release`) of the call ``key`` asked
        for before, spent by :meth:`_take_known`; None when it was not asked for, or must go
        the general way (not an int64 array of 1 to LEAN_MAX values; nothing spent then)."""
        try:
            known = self._known.get(key)
        except TypeError:  # an unhashable argument: the general way says what is wrong
            return None
        if known is None:
            return None
        return _inputs._lean_release(known.mech, values, known.take)

    def _take_known(self, known: _Known, size: int) -> None:
        """``take()`` of a release asked for before (:class:`_Known`) on ``size`` values:
        admitted at once when the running exact sums show that it fits (:meth:`_fits_at_once`),
        else spent as any release is (:meth:`_spend` decides, admits, or refuses in its own
        words)."""
        found = known.one
        unit, rho, eps = found if found is not None else known.facts(size)
        with self._lock:
            program = self._program
            num, den = program._rho
            step = None if den % rho[1] else rho[0] * (den // rho[1])  # (_step, inline)
            if step is not None and self._fits_at_once(program, num + step, den, eps):
                counts = program.counts
                counts[unit] = counts.get(unit, 0) + 1
                program._rho = (num + step, den)
                if eps is None:
                    program.gaussians += 1
                else:
                    program._pure = _plus(program._pure, eps)
                self._admitted(unit)
                return
        self._spend(unit)

    def _fits_at_once(self, program: _Program, num: int, den: int, eps) -> bool:
        """(The lock held.)  Whether a release with ε ``eps`` (a Laplace one; None for a
        Gaussian) that takes ``program``'s ρ to ``num``/``den`` fits by one of the first tests
        of :meth:`_admits`, in its order: the exact ρ total of a ρ budget; the pure ε total
        while every release is Laplace; the zCDP route at the exact total ρ (its answers
        kept as :meth:`_admits` keeps them).  False when none admits it (:meth:`_admits` then
        decides, asking the same first questions again: the same answers, nothing changed)."""
        way, (top, bottom) = self._budget[0], self._bound
        if way == "rho":
            return num * bottom <= top * den
        if eps is not None and program.gaussians == 0:
            pure_num, pure_den = program._pure
            step = _step(pure_den, eps)
            if step is not None and (pure_num + step) * bottom <= top * pure_den:
                return True
        if way == "pure":
            return False
        fits = self._zcdp_fits
        if fits is not None and num * fits.denominator <= fits.numerator * den:
            return True  # (_zcdp_certifies's first answer, on integers)
        return self._zcdp_certifies(Fraction(num, den))

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
            return f"rho={_trimmed(_decimal(b[1]))}"
        if b[0] == "pure":
            return f"epsilon={_trimmed(_decimal(b[1]))}"
        return f"epsilon={_trimmed(_decimal(b[1]))}, delta={_trimmed(_decimal(b[2]))}"

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
        key = _known_key(
            values,
            rng,
            out,
            clip,
            workers,
            columns,
            overflow,
            ("gaussian", sigma2, rho, epsilon, delta, sensitivity, accounting, granularity),
        )
        if key is not None:
            noised = self._known_release(key, values)  # the same call again
            if noised is not None:
                return noised
        sensitivity, granularity = _table_release.settings(values, sensitivity, granularity)
        mech = GaussianMechanism(
            sigma2=sigma2,
            rho=rho,
            epsilon=epsilon,
            delta=delta,
            sensitivity=sensitivity,
            accounting=accounting,
            granularity=granularity,
        )
        if key is not None:
            self._remember(key, mech)

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
        key = _known_key(
            values,
            rng,
            out,
            clip,
            workers,
            columns,
            overflow,
            ("laplace", scale, epsilon, delta, sensitivity, granularity),
        )
        if key is not None:
            noised = self._known_release(key, values)  # the same call again
            if noised is not None:
                return noised
        sensitivity, granularity = _table_release.settings(values, sensitivity, granularity)
        mech = LaplaceMechanism(
            scale=scale,
            epsilon=epsilon,
            delta=delta,
            sensitivity=sensitivity,
            granularity=granularity,
        )
        if key is not None:
            self._remember(key, mech)

        take = self._taker(mech)
        return _release(mech, values, take, rng, out, clip, overflow, workers, columns)
