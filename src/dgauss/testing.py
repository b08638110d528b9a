"""Exactness checking: finite random sources and an exact-distribution checker.

dgauss's samplers consume a stream of bits, so the distribution of one draw
can be computed exactly by running the sampler on every bit string (a *tape*)
and giving each run that ends after L bits probability 2**-L.  This module does
that, with rigorous bounds, against the compiled core or the oracle:

* :func:`enumerate_bits` runs a sampler on all bit tapes, shortest first.
  Used for the sampling primitives and Bernoulli(exp(-gamma)).
* :func:`enumerate_decisions` runs a sampler on *decision tapes*: the
  outcomes of its primitives (uniform(m), Bernoulli(n/d), the sign bit, and
  Bernoulli(exp(-g)) drawn by the digits of exp(-g)), each weighted by its
  exact probability (for exp(-g), rational bounds 2**-256 apart), most
  probable first, stopping at rejection-loop restarts.  Algorithms 2 and 3
  restart from their initial state, so with A(v) the mass of first attempts
  that output v and R the mass that restart, P[v] = A(v) / (1 - R) exactly.
  Bit-level enumeration of the Gaussian is hopeless (a draw uses ~20 bits with a long tail: 2**100
  tapes to resolve all but 1e-3); at the decision level, with restarts merged, it takes thousands
  of runs.  Together with the bit-level check of the primitives (the only code that reads bits)
  and oracle parity, this covers the whole chain.
* :func:`pmf_bounds` gives rigorous lower and upper bounds on the true
  probabilities (MPFR with directed rounding, never a plain float), and
  :func:`check` confirms, for every output value,
  ``enumerated lower bound <= true P <= enumerated upper bound``.

Run it as a command::

    python -m dgauss.testing gaussian 1/2 --target 1e-3
    python -m dgauss.testing bernoulli_exp 7/3 --oracle
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np
from gmpy2 import mpfr, mpq

from dgauss import _params, reference
from dgauss._kinds import Kind
from dgauss._sources import DecisionTape, Exhausted, Restart, ScriptedOS, Tape

__all__ = [
    "ScriptedOS",
    "Tape",
    "DecisionTape",
    "Exhausted",
    "Restart",
    "SAMPLERS",
    "sampler",
    "enumerate_bits",
    "enumerate_decisions",
    "Enumeration",
    "pmf_bounds",
    "check",
    "Check",
    "main",
]

#: What the checker can run: name -> (kind, is Bernoulli-valued).
SAMPLERS = {
    "gaussian": (Kind.DISCRETE_GAUSSIAN, False),
    "laplace": (Kind.DISCRETE_LAPLACE, False),
    "bernoulli_exp": (Kind.BERNOULLI_EXP, True),
    "bernoulli": (Kind.BERNOULLI, True),  # the primitive Bernoulli(p), 0 <= p <= 1
    "uniform": (Kind.UNIFORM, False),  # the primitive uniform(m), integer m >= 1
}

Draw = Callable[[Any], Any]


def sampler(name: str, param, *, oracle: bool = False, **fill_options: Any) -> Draw:
    """One draw of sampler ``name`` at ``param`` from a given source.

    Returns a callable ``draw(source)``: it runs the compiled core (or, with
    ``oracle=True``, :mod:`dgauss.reference`) once on ``source`` (a
    :class:`Tape`, :class:`DecisionTape` or NumPy generator) and returns the
    value (``bool`` for Bernoulli samplers, ``int`` otherwise).  ``fill_options``
    go to the backend's ``fill`` for this draw only (``high_bits``, ``fixed_point``).
    """
    if name not in SAMPLERS:
        raise ValueError(f"name must be one of {sorted(SAMPLERS)}, got {name!r}")
    kind, boolean = SAMPLERS[name]
    value = _params.to_fraction(param, "param")
    if name == "uniform" and (value.denominator != 1 or value < 1):
        raise ValueError(f"param of uniform must be an integer >= 1, got {param!r}")
    if (
        name in ("bernoulli", "bernoulli_exp")
        and value < 0
        or name in ("gaussian", "laplace")
        and value <= 0
    ):
        raise ValueError(f"param out of range for {name}: {param!r}")
    if oracle:
        fill = reference.fill
    else:
        from dgauss import _core  # here, not at the top: the oracle's checks run without it

        fill = _core.fill
    dtype = np.bool_ if boolean else object
    num, den = value.numerator, value.denominator

    def draw(source):
        out = np.empty(1, dtype=dtype)
        fill(kind, num, den, 0, source, out, **fill_options)
        return bool(out[0]) if boolean else int(out[0])

    draw.__name__ = f"{'oracle' if oracle else 'core'}_{name}({value})"
    return draw


# ---- enumeration -----------------------------------------------------------


@dataclass
class Enumeration:
    """What an enumeration found.

    Probabilities are pairs ``(lo, hi)`` of exact ``gmpy2.mpq`` bounds (equal
    unless some branch had an irrational probability, exp(-g)).

    Attributes
    ----------
    mass : dict
        Probability bounds of the tapes that ended with each value; for a
        regenerative enumeration, within the first attempt.
    restart : (mpq, mpq)
        Bounds on the mass of the tapes that reached a restart.
    resolved_lo : mpq
        Lower bound on the mass of all tapes followed to their end.  The
        unresolved mass is at most ``unresolved = 1 - resolved_lo``.
    runs : int
        Sampler runs made.
    regenerative : bool
        Whether restarts were merged (decision tapes with ``stop_at_restart``).
    target : mpq
        The resolution asked for; :attr:`complete` says whether it was reached.
    """

    mass: dict[Any, tuple[mpq, mpq]] = field(default_factory=dict)
    restart: tuple[mpq, mpq] = (mpq(0), mpq(0))
    resolved_lo: mpq = mpq(0)
    runs: int = 0
    regenerative: bool = False
    target: mpq = mpq(0)

    @property
    def unresolved(self) -> mpq:
        """Upper bound on the mass of the tapes not followed to their end."""
        return 1 - self.resolved_lo

    def bounds(self, value) -> tuple[mpq, mpq]:
        """Exact lower and upper bounds on the sampler's P[value] implied by the enumeration.

        Without restarts, P = A + (part of the unresolved mass U).  With them,
        P = A_total / (1 - R_total), where A_total >= A, R_total >= R and
        1 - R_total >= 1 - R - U.
        """
        a_lo, a_hi = self.mass.get(value, (mpq(0), mpq(0)))
        u = self.unresolved
        if not self.regenerative:
            return a_lo, min(mpq(1), a_hi + u)
        r_lo, r_hi = self.restart
        lo = a_lo / (1 - r_lo)
        rest = 1 - r_hi - u
        hi = (a_hi + u) / rest if rest > 0 else mpq(1)
        return lo, min(mpq(1), hi)

    @property
    def width(self) -> mpq:
        """Upper bound on P[value] for a value never seen (the checker's resolution)."""
        return self.bounds(object())[1]

    @property
    def complete(self) -> bool:
        """Whether the enumeration reached its target resolution (else a check proves little)."""
        return self.width <= self.target


def _enumerate(
    draw: Draw, make_source, root, extend, branches, target, max_runs, regenerative
) -> Enumeration:
    """Best-first search over tape prefixes: the most probable unfinished prefix next.

    ``make_source(prefix)`` builds the tape, ``extend(prefix, outcome)`` a
    child prefix, ``branches(request)`` the outcomes of the request that ran the
    tape out, with their exact probabilities.
    """
    result = Enumeration(regenerative=regenerative, target=target)
    order = itertools.count()
    heap: list[tuple] = [(-1.0, next(order), root, (mpq(1), mpq(1)))]
    while heap and result.runs < max_runs:
        if result.runs % 16 == 0 and result.width <= target:
            break
        _, _, prefix, (w_lo, w_hi) = heapq.heappop(heap)
        result.runs += 1
        try:
            value = draw(make_source(prefix))
        except Exhausted as exc:
            for outcome, (p_lo, p_hi) in branches(exc.request):
                if p_hi > 0:
                    child = (w_lo * p_lo, w_hi * p_hi)
                    heapq.heappush(
                        heap, (-float(child[1]), next(order), extend(prefix, outcome), child)
                    )
            continue
        except Restart:
            result.restart = _add(result.restart, (w_lo, w_hi))
        else:
            result.mass[value] = _add(result.mass.get(value, (mpq(0), mpq(0))), (w_lo, w_hi))
        result.resolved_lo += w_lo
    return result


def _add(a: tuple[mpq, mpq], b: tuple[mpq, mpq]) -> tuple[mpq, mpq]:
    return a[0] + b[0], a[1] + b[1]


_HALF = (mpq(1, 2), mpq(1, 2))


def _bit_branches(request):
    if request is not None:
        raise RuntimeError("a bit tape ran out with a decision request")
    return ((0, _HALF), (1, _HALF))


#: Bits of the rational bounds on an irrational branch probability exp(-g).
EXP_BOUND_BITS = 256


#: Widest uniform(m) a decision enumeration branches on.
MAX_UNIFORM_BRANCHES = 1 << 16


def _decision_branches(request):
    if request is None:
        raise RuntimeError("a decision tape ran out without a request")
    what, arg = request
    if what == "bernoulli":
        p = mpq(arg.numerator, arg.denominator)
        return ((1, (p, p)), (0, (1 - p, 1 - p)))
    if what == "bernoulli_exp":  # exp(-arg) in [f, f + 1) / 2**256
        f = reference.exp_neg_floor(arg, EXP_BOUND_BITS)
        lo, hi = mpq(f, 1 << EXP_BOUND_BITS), mpq(f + 1, 1 << EXP_BOUND_BITS)
        return ((1, (lo, hi)), (0, (1 - hi, 1 - lo)))
    if arg > MAX_UNIFORM_BRANCHES:
        raise ValueError(f"uniform({arg}) has too many outcomes to enumerate")
    p = (mpq(1, arg), mpq(1, arg))
    return [(i, p) for i in range(arg)]


def enumerate_bits(draw: Draw, *, target: float = 1e-3, max_runs: int = 2_000_000) -> Enumeration:
    """Run ``draw`` on every bit tape, shortest first, until at most ``target`` mass is unresolved.

    Each run on a tape of L bits that finishes has probability exactly 2**-L;
    a run that asks for one more bit is extended by 0 and by 1.
    """
    return _enumerate(
        draw,
        lambda prefix: Tape.from_int(*prefix),
        (0, 0),
        lambda prefix, bit: ((prefix[0] << 1) | bit, prefix[1] + 1),
        _bit_branches,
        mpq(Fraction(target)),
        max_runs,
        regenerative=False,
    )


def enumerate_decisions(
    draw: Draw, *, target: float = 1e-3, max_runs: int = 2_000_000, stop_at_restart: bool = True
) -> Enumeration:
    """Run ``draw`` on decision tapes, most probable first, merging restarts.

    Stops when every output probability is pinned to within ``target``
    (:attr:`Enumeration.width`) or after ``max_runs`` runs.
    """
    return _enumerate(
        draw,
        lambda prefix: DecisionTape(prefix, stop_at_restart=stop_at_restart),
        (),
        lambda prefix, outcome: prefix + (outcome,),
        _decision_branches,
        mpq(Fraction(target)),
        max_runs,
        regenerative=stop_at_restart,
    )


# ---- rigorous bounds on the true distribution -------------------------------

PRECISION = 256


def _ctx(down: bool):
    return gmpy2.context(precision=PRECISION, round=gmpy2.RoundDown if down else gmpy2.RoundUp)


def _exp_neg(q: mpq) -> tuple[mpfr, mpfr]:
    """Lower and upper bounds on exp(-q), q >= 0 rational."""
    with _ctx(down=False):
        q_hi = mpfr(q)
    with _ctx(down=True):
        q_lo = mpfr(q)
        lo = gmpy2.exp(-q_hi)
    with _ctx(down=False):
        hi = gmpy2.exp(-q_lo)
    return lo, hi


class _GaussianNormaliser:
    """Bounds on Z = sum_y exp(-y^2 / (2 sigma^2)): a partial sum plus a geometric tail bound."""

    def __init__(self, sigma2: mpq):
        self.sigma2 = sigma2
        reach = 40 * (math.isqrt(int(gmpy2.ceil(sigma2))) + 1) + 10
        lows, highs = zip(*(self.weight(y) for y in range(-reach, reach + 1)), strict=True)
        # for y > Y: y^2 >= (Y+1) y, so exp(-y^2/2s2) <= q^y with q = exp(-(Y+1)/2s2)
        q_hi = _exp_neg(mpq(reach + 1) / (2 * sigma2))[1]
        with _ctx(down=True):
            self.lo = sum(lows, mpfr(0))
            one_minus_q = 1 - q_hi
        with _ctx(down=False):
            tail = 2 * q_hi ** (reach + 1) / one_minus_q
            self.hi = sum(highs, mpfr(0)) + tail

    def weight(self, y: int) -> tuple[mpfr, mpfr]:
        return _exp_neg(mpq(y * y) / (2 * self.sigma2))


def pmf_bounds(name: str, param) -> Callable[[Any], tuple[Any, Any]]:
    """``bounds(value) -> (lo, hi)``, lo <= P[value] <= hi for the named distribution (rigorous)."""
    q = _params.to_fraction(param, "param")
    q = mpq(q.numerator, q.denominator)
    zero = (mpq(0), mpq(0))
    if name == "uniform":
        return lambda v: (mpq(1) / q, mpq(1) / q) if isinstance(v, int) and 0 <= v < q else zero
    if name == "bernoulli":
        p = min(q, mpq(1))
        return lambda v: (p, p) if v is True else (1 - p, 1 - p) if v is False else zero
    if name == "bernoulli_exp":
        e_lo, e_hi = _exp_neg(q)
        with _ctx(down=True):
            f_lo = 1 - e_hi
        with _ctx(down=False):
            f_hi = 1 - e_lo
        return lambda v: (e_lo, e_hi) if v is True else (f_lo, f_hi) if v is False else zero
    if name == "laplace":  # P[x] = tanh(1/(2t)) exp(-|x|/t)
        with _ctx(down=True):
            c_lo = gmpy2.tanh(mpfr(1 / (2 * q)))
        with _ctx(down=False):
            c_hi = gmpy2.tanh(mpfr(1 / (2 * q)))

        def laplace(v):
            if not isinstance(v, int) or isinstance(v, bool):
                return zero
            e_lo, e_hi = _exp_neg(mpq(abs(v)) / q)
            with _ctx(down=True):
                lo = c_lo * e_lo
            with _ctx(down=False):
                hi = c_hi * e_hi
            return lo, hi

        return laplace
    if name == "gaussian":
        z = _GaussianNormaliser(q)

        def gaussian(v):
            if not isinstance(v, int) or isinstance(v, bool):
                return zero
            w_lo, w_hi = z.weight(v)
            with _ctx(down=True):
                lo = w_lo / z.hi
            with _ctx(down=False):
                hi = w_hi / z.lo
            return lo, hi

        return gaussian
    raise ValueError(f"name must be one of {sorted(SAMPLERS)}, got {name!r}")


# ---- the check -----------------------------------------------------------------


@dataclass
class Check:
    """The result of :func:`check`.

    ``ok`` means every value's enumerated bounds contain its true probability
    *and* the enumeration reached its target resolution; ``failures`` lists the
    values whose bounds disagree.
    """

    enumeration: Enumeration
    failures: list[tuple]
    values_checked: int

    @property
    def ok(self) -> bool:
        return not self.failures and self.enumeration.complete

    def report(self) -> str:
        e = self.enumeration
        verdict = (
            "FAILED"
            if self.failures
            else "ok"
            if e.complete
            else "INCONCLUSIVE (target not reached)"
        )
        lines = [
            f"{verdict}: {self.values_checked} values checked, "
            f"{e.runs} runs, unresolved mass {float(e.unresolved):.3g}, "
            f"restart mass {float(e.restart[1]):.3g}, resolution {float(e.width):.3g}"
        ]
        for value, elo, ehi, tlo, thi in self.failures[:20]:
            lines.append(
                f"  value {value!r}: sampler P in [{float(elo):.9g}, {float(ehi):.9g}], "
                f"true P in [{float(tlo):.9g}, {float(thi):.9g}]"
            )
        return "\n".join(lines)


def _candidate_values(enumeration: Enumeration, bounds, boolean: bool) -> set:
    if boolean:
        return {True, False} | set(enumeration.mass)
    values = set(enumeration.mass)
    # every integer whose true probability could exceed what an unseen value may have
    unseen = enumeration.width
    for magnitude in itertools.count():
        hits = [v for v in {magnitude, -magnitude} if bounds(v)[1] > unseen]
        if not hits:
            break
        values.update(hits)
    return values


def check(enumeration: Enumeration, name: str, param) -> Check:
    """Confirm the enumerated bounds contain the true probability of every value."""
    bounds = pmf_bounds(name, param)
    failures = []
    values = _candidate_values(enumeration, bounds, SAMPLERS[name][1])
    for value in sorted(values, key=lambda v: (abs(int(v)), int(v))):
        e_lo, e_hi = enumeration.bounds(value)
        t_lo, t_hi = bounds(value)
        if e_lo > t_hi or e_hi < t_lo:
            failures.append((value, e_lo, e_hi, t_lo, t_hi))
    return Check(enumeration, failures, len(values))


def enumerate_sampler(
    name: str,
    param,
    *,
    oracle: bool = False,
    target: float = 1e-3,
    max_runs: int = 2_000_000,
    level: str | None = None,
    **fill_options: Any,
) -> Enumeration:
    """Enumerate one draw of a named sampler: bit level for the Bernoulli samplers, uniform
    and ``method="inversion"``, decision level (with restarts merged) for the Laplace and
    the Gaussian by rejection (``fill_options``: as for :func:`sampler`; ``method`` defaults
    to "rejection", the paper's loops)."""
    draw = sampler(name, param, oracle=oracle, **fill_options)
    rejection = fill_options.get("method", "rejection") == "rejection"
    level = level or ("decisions" if name in ("gaussian", "laplace") and rejection else "bits")
    if level == "bits":
        return enumerate_bits(draw, target=target, max_runs=max_runs)
    return enumerate_decisions(draw, target=target, max_runs=max_runs)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dgauss.testing NAME PARAM``: enumerate one draw and check it."""
    parser = argparse.ArgumentParser(
        prog="python -m dgauss.testing",
        description="Check a dgauss sampler's exact distribution by enumerating its random tapes.",
    )
    parser.add_argument("name", choices=sorted(SAMPLERS))
    parser.add_argument("param", help="the parameter, e.g. 1/2 (sigma^2, scale, gamma, p or m)")
    parser.add_argument(
        "--target",
        type=float,
        default=1e-3,
        help="stop when every probability is pinned to within this (default 1e-3)",
    )
    parser.add_argument("--max-runs", type=int, default=2_000_000)
    parser.add_argument(
        "--oracle", action="store_true", help="check dgauss.reference, not the core"
    )
    parser.add_argument(
        "--level",
        choices=("bits", "decisions"),
        help="tape level (default: bits for Bernoulli samplers, uniform and --method inversion, "
        "decisions for laplace and gaussian by rejection)",
    )
    parser.add_argument(
        "--method",
        choices=("rejection", "inversion"),
        default="rejection",
        help="for gaussian and laplace: the paper's rejection loops (default) or the inversion "
        "path (read at the bit level)",
    )
    args = parser.parse_args(argv)
    options = {}
    if args.method == "inversion":
        options = {"method": "inversion"}
    try:
        enumeration = enumerate_sampler(
            args.name,
            args.param,
            oracle=args.oracle,
            target=args.target,
            max_runs=args.max_runs,
            level=args.level,
            **options,
        )
        result = check(enumeration, args.name, args.param)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{'oracle' if args.oracle else 'core'} {args.name}({args.param}):")
    print(result.report())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
