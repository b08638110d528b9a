"""Speed and values of dgauss.accounting against OpenDP and Google's dp_accounting.

Run from an installed dgauss (peers: ``pip install '.[bench]'``)::

    python benchmarks/bench_accounting.py             # a few minutes
    python benchmarks/bench_accounting.py --repeat 3  # quicker, noisier
    python benchmarks/bench_accounting.py --only composition  # that section alone
    python benchmarks/bench_accounting.py --only accountant   # admissions, one run (~15 min)
    python benchmarks/bench_accounting.py --only calibration --repeat 3  # ℓ2-ball calibrations

It prints markdown tables and writes ``benchmarks/results/bench_accounting.md``
(``bench_accounting_<section>.md`` with ``--only``).
Each case is timed in the same run for dgauss and its peer: the median over
``--repeat`` rounds of ``timeit`` (each round as many calls as ``timeit.autorange``
fits in 0.2 s), per call.  Beside each time is the value the call returned, so
that differences show:

(a) zCDP -> (eps, delta): ``cdp_delta(0.5, 1)`` vs OpenDP's ``make_zCDP_to_approxDP``
    (the profile of a discrete Gaussian with rho = 0.5, queried at eps = 1);
(b) the exact delta of one discrete Gaussian query, ``gaussian_delta(sigma2, eps)``
    for sigma2 = 1e2, 1e8, 1e100 at eps = 1 and 1e-3, vs dp_accounting's privacy loss
    distribution (PLD) ``from_discrete_gaussian_mechanism`` + ``get_delta_for_epsilon``
    (its default discretisation 1e-4, pessimistic; noise truncated at mass 1e-30);
(c) k = 100 queries: ``gaussian_delta(2500, 1, k=100)`` vs the PLD's ``self_compose(100)``;
(d) calibration: ``calibrate_gaussian(1, 1e-6, k=100)`` vs a bisection on sigma with
    the PLD (to a relative 1e-4 in sigma2, about the 4-digit grid of dgauss);
(e) ``cdp_eps(0.5, 1e-6)`` vs OpenDP's profile ``epsilon(1e-6)``;

and the composition of a program of heterogeneous releases (Gaussians of several sigma2
and Laplaces of several scales: 3, 10 and 100 of them), ``compose(...).delta(1)`` and
``.epsilon(1e-6)`` vs dp_accounting's PLDs composed release by release, beside the true
delta and eps (tests/_compose_reference.py's exact computation) where it is computable;
and an Accountant admitting release by release (10 to 10^4 releases of 10 kinds, 10^3
all-distinct; (eps, delta), rho and pure budgets), the time of each offer, beside
dp_accounting's PLD composed offer by offer on the same sequence; and ``calibrate_gaussian``
for ℓ2-ball sensitivities (Δ up to 6, k across the end of the list of worst vectors), each
call the first in a fresh process.

A delta below the float range is shown from ``log=True`` (e.g. 7.393e-549), the
timed call being the plain one.  Every call is first tried once in a child
process with a time limit, so that one that hangs or fails is reported as n/a
with its reason instead of stopping the run; a missing peer is n/a too.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import platform
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

import dgauss
from dgauss import accounting
from dgauss.cli import _rounded_up_from_log

RESULTS = Path(__file__).resolve().parent / "results"

#: Seconds a first (probe) call may take before the case is reported as n/a.
PROBE_LIMIT = 20.0

#: A delta below this is shown from its logarithm.
TINY = 1e-300


# ---- timing and guarding ------------------------------------------------------


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds per call of ``fn``: ``repeat`` timeit rounds of autorange's size."""
    timer = timeit.Timer(fn)
    number, first = timer.autorange()
    rounds = max(1, repeat if first / number < 0.5 else min(repeat, 3))
    return statistics.median(t / number for t in timer.repeat(repeat=rounds, number=number))


def _child(fn, queue) -> None:
    try:
        queue.put(("ok", fn()))
    except BaseException as exc:  # report anything, from a child that is about to exit
        queue.put(("error", f"{type(exc).__name__}: {exc}"[:120]))


def probe(fn: Callable[[], object], limit: float = PROBE_LIMIT) -> tuple[bool, object]:
    """Call ``fn`` once in a forked child: (True, its result) or (False, why it gave none)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(fn, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.kill()
        child.join()
        return False, f"no answer within {limit:.0f} s"
    try:
        status, value = queue.get(timeout=5)
    except Exception:
        return False, f"the call crashed its process (exit code {child.exitcode})"
    if status != "ok":
        return False, value
    return True, value


@dataclass
class Measure:
    """One side of a case: a time per call and the value shown, or why there is none."""

    seconds: float | None
    value: str
    raw: object = None  # what the call returned (None when n/a)


def measure(
    fn: Callable[[], object], show: Callable[[object], str], repeat: int, limit: float = PROBE_LIMIT
) -> Measure:
    ok, result = probe(fn, limit)
    if not ok:
        return Measure(None, f"n/a ({result})")
    try:
        return Measure(median_seconds(fn, repeat), show(result), result)
    except Exception as exc:
        return Measure(None, f"n/a ({type(exc).__name__}: {exc})"[:140])


def unavailable(reason: str) -> Measure:
    return Measure(None, f"n/a ({reason})")


# ---- values ----------------------------------------------------------------------


def g(x: float) -> str:
    return f"{x:.10g}"


def our_delta(log_delta: Callable[[], float]) -> Callable[[float], str]:
    """Show a float delta, or (below TINY) the one from log=True."""

    def show(value: float) -> str:
        if value >= TINY or value == 0:
            return g(value)
        return _rounded_up_from_log(log_delta(), digits=6) + " (from log)"

    return show


def fraction_text(q) -> str:
    return f"{float(q):.6g}"


# ---- peers -------------------------------------------------------------------------


def opendp_profile():
    """OpenDP's (eps, delta) profile of a zCDP measurement with rho = 0.5 (or None), and its
    version (or why it is unavailable)."""
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        gauss = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=1.0)
        assert gauss.map(1) == 0.5, gauss.map(1)  # rho = d_in**2/(2 scale**2)
        # the profile of rho = 0.5, built once: the timed call is the conversion alone
        return dp.c.make_zCDP_to_approxDP(gauss).map(1), f"opendp {dp.__version__}"
    except Exception as exc:
        return None, f"OpenDP unavailable: {type(exc).__name__}: {exc}"[:120]


def dp_accounting_pld():
    try:
        import dp_accounting
        from dp_accounting.pld import privacy_loss_distribution as pld

        version = getattr(dp_accounting, "__version__", None)
        if version is None:
            from importlib.metadata import version as dist_version

            version = dist_version("dp-accounting")
        return pld, f"dp_accounting {version}"
    except Exception as exc:
        return None, f"dp_accounting unavailable: {type(exc).__name__}: {exc}"[:120]


def pld_delta(pld, sigma2: float, eps: float, k: int = 1) -> float:
    """dp_accounting's delta of k discrete Gaussian queries with parameter sigma2."""
    dist = pld.from_discrete_gaussian_mechanism(math.sqrt(sigma2))
    if k > 1:
        dist = dist.self_compose(k)
    return dist.get_delta_for_epsilon(eps)


def pld_calibrate(pld, eps: float, delta: float, k: int, rel: float = 1e-4) -> float:
    """The smallest sigma2 (to a relative ``rel``) with the PLD's delta <= ``delta``."""
    lo, hi = 1.0, 2.0
    while pld_delta(pld, hi * hi, eps, k) > delta:
        lo, hi = hi, 2 * hi
    while hi * hi > lo * lo * (1 + rel):
        mid = math.sqrt(lo * hi)
        if pld_delta(pld, mid * mid, eps, k) <= delta:
            hi = mid
        else:
            lo = mid
    return hi * hi


# ---- the cases ---------------------------------------------------------------------


@dataclass
class Row:
    case: str
    ours: Measure
    peer_name: str
    peer: Measure


def run_cases(repeat: int) -> tuple[list[Row], list[str]]:
    profile, opendp_name = opendp_profile()
    pld, pld_name = dp_accounting_pld()
    rows: list[Row] = []

    def opendp_side(fn: Callable, show: Callable) -> Measure:
        if profile is None:
            return unavailable(opendp_name)
        return measure(fn, show, repeat)

    def pld_side(fn: Callable, show: Callable = g, limit: float = PROBE_LIMIT) -> Measure:
        if pld is None:
            return unavailable(pld_name)
        return measure(fn, show, repeat, limit)

    # (a) zCDP -> (eps, delta)
    rows.append(
        Row(
            "(a) zCDP->DP delta, rho=0.5, eps=1",
            measure(lambda: accounting.cdp_delta(0.5, 1), g, repeat),
            "OpenDP make_zCDP_to_approxDP profile .delta(1.0)",
            opendp_side(lambda: profile.delta(1.0), g),
        )
    )

    # (b) one query, exact delta
    for sigma2 in ("1e2", "1e8", "1e100"):
        for eps in ("1", "1e-3"):
            rows.append(
                Row(
                    f"(b) gaussian_delta, sigma2={sigma2}, eps={eps}, k=1",
                    # default arguments bind this iteration's sigma2 and eps
                    measure(
                        lambda s=sigma2, e=eps: accounting.gaussian_delta(s, e),
                        our_delta(
                            lambda s=sigma2, e=eps: accounting.gaussian_delta(s, e, log=True)
                        ),
                        repeat,
                    ),
                    "dp_accounting PLD from_discrete_gaussian_mechanism + get_delta_for_epsilon",
                    pld_side(lambda s=sigma2, e=eps: pld_delta(pld, float(s), float(e))),
                )
            )

    # (c) 100 queries
    rows.append(
        Row(
            "(c) gaussian_delta, sigma2=2500, eps=1, k=100",
            measure(lambda: accounting.gaussian_delta(2500, 1, k=100), g, repeat),
            "dp_accounting PLD self_compose(100)",
            pld_side(lambda: pld_delta(pld, 2500.0, 1.0, k=100)),
        )
    )

    # (d) calibration
    rows.append(
        Row(
            "(d) calibrate_gaussian(1, 1e-6, k=100), sigma2 found",
            measure(
                lambda: accounting.calibrate_gaussian(1, "1e-6", k=100, method="exact"),
                fraction_text,
                repeat,
            ),
            "bisection on sigma with the dp_accounting PLD (rel. 1e-4)",
            pld_side(
                lambda: pld_calibrate(pld, 1.0, 1e-6, 100), lambda s2: f"{s2:.6g}", limit=120.0
            ),
        )
    )

    # (e) zCDP eps at delta
    rows.append(
        Row(
            "(e) cdp_eps(0.5, 1e-6)",
            measure(lambda: accounting.cdp_eps(0.5, "1e-6"), g, repeat),
            "OpenDP make_zCDP_to_approxDP profile .epsilon(1e-6)",
            opendp_side(lambda: profile.epsilon(1e-6), g),
        )
    )

    return rows, [opendp_name, pld_name]


NOTES = """\
Notes: dgauss's delta and eps are certified upper bounds (interval arithmetic), within
1e-9 of the truth; "from log" is `log=True`'s bound on ln delta, for a delta below
the float range.  OpenDP implements the same Corollary 13 conversion, timed on a
profile built once.  dp_accounting's PLD is pessimistic (an upper bound) but
discretises the privacy loss (interval 1e-4) and truncates the noise at mass
1e-30, which it counts as delta: its delta cannot fall below about 1e-34 (sigma2 =
1e8, eps = 1), and at small eps its discretisation shows (sigma2 = 1e8, eps = 1e-3);
at sigma2 = 1e100 it cannot build the distribution.
Its calibration (d) is a bisection written here on top of it, so its sigma2 is
larger by its pessimism, not by a different grid."""


# ---- composition of a program ------------------------------------------------------

TESTS = Path(__file__).resolve().parent.parent / "tests"

#: dp_accounting's discretisation of the privacy loss: its default, as in (b)-(d).
PLD_INTERVAL = 1e-4

#: Where a composition is asked for its delta, and for its eps.
COMPOSITION_EPS = "1"
COMPOSITION_DELTA = "1e-6"

#: The time to stay under, by number of releases: (seconds, as shown).
TARGETS = {10: (0.1, "100 ms"), 100: (1.0, "1 s")}

#: Seconds the exact reference may take for one program's delta, and for its eps.
TRUTH_LIMIT = 60.0
TRUTH_EPS_LIMIT = 120.0

#: Relative width of the bracket put around the true eps.
TRUTH_EPS_REL = 1e-9


@dataclass(frozen=True)
class Program:
    """Releases of sensitivity 1, each answered once: ("gaussian", sigma2) with noise
    P[x] ∝ exp(-x²/(2 sigma2)) or ("laplace", t) with P[x] ∝ exp(-|x|/t), the parameter an
    exact decimal string.  ``exact``: whether tests/_compose_reference.py is asked for the
    true delta (it enumerates the composed loss atom by atom, so only for a few releases)."""

    name: str
    releases: tuple[tuple[str, str], ...]
    exact: bool


def heterogeneous(n: int, seed: int) -> Program:
    """``n`` releases from a seeded generator: every fifth a Laplace with scale uniform in
    [4, 40], the others Gaussians with sigma2 log-uniform in [20, 2000], to two decimals."""
    rng = np.random.default_rng(seed)
    releases = []
    for i in range(n):
        if i % 5 == 4:
            releases.append(("laplace", f"{rng.uniform(4, 40):.2f}"))
        else:
            releases.append(
                ("gaussian", f"{math.exp(rng.uniform(math.log(20), math.log(2000))):.2f}")
            )
    laplaces = sum(kind == "laplace" for kind, _ in releases)
    return Program(
        f"{n} releases: {n - laplaces} Gaussian (sigma2 in [20, 2000]), {laplaces} Laplace "
        f"(scale in [4, 40]), seed {seed}",
        tuple(releases),
        exact=False,
    )


def programs() -> list[Program]:
    def small(*releases: tuple[str, str]) -> Program:
        name = ", ".join(f"{'G' if kind == 'gaussian' else 'L'}({x})" for kind, x in releases)
        return Program(f"3 releases: {name}", releases, exact=True)

    return [
        small(("gaussian", "3"), ("gaussian", "5"), ("laplace", "2")),
        small(("gaussian", "71.41"), ("gaussian", "300"), ("laplace", "4")),
        heterogeneous(10, seed=10),
        heterogeneous(100, seed=100),
    ]


def ours_program(program: Program) -> accounting.Composition:
    """A fresh Composition (it caches its grids, so each timed call builds its own)."""
    return accounting.compose(
        *(
            accounting.Gaussian(x) if kind == "gaussian" else accounting.Laplace(x)
            for kind, x in program.releases
        )
    )


def pld_program(pld, program: Program):
    """dp_accounting's PLD of the program: one PLD per release, composed in order."""
    dist = None
    for kind, x in program.releases:
        if kind == "gaussian":
            # its sigma: P[x] ∝ exp(-x²/(2 sigma²)), so sigma = sqrt(sigma2)
            one = pld.from_discrete_gaussian_mechanism(
                math.sqrt(float(x)), sensitivity=1, value_discretization_interval=PLD_INTERVAL
            )
        else:
            # its parameter a: P[x] ∝ exp(-a|x|), so a = 1/t
            one = pld.from_discrete_laplace_mechanism(
                1 / float(x), sensitivity=1, value_discretization_interval=PLD_INTERVAL
            )
        dist = one if dist is None else dist.compose(one)
    return dist


def exact_reference():
    """tests/_compose_reference.py's ``composed_delta`` and mpmath, or why they are missing."""
    try:
        if str(TESTS) not in sys.path:
            sys.path.insert(0, str(TESTS))
        import mpmath

        from _compose_reference import composed_delta

        return (composed_delta, mpmath), None
    except Exception as exc:
        return None, f"exact reference unavailable: {type(exc).__name__}: {exc}"[:120]


def reference_releases(program: Program) -> list[tuple]:
    return [(kind, x, [1], 1) for kind, x in program.releases]


def true_epsilon(reference, program: Program, delta: str, guesses: list[float]):
    """((a, b) or None, {guess: verdict}).  (a, b): b = a·(1 + TRUTH_EPS_REL) about, with
    true delta(a) > ``delta`` >= true delta(b), so that the true eps lies in (a, b] (found by
    a secant on ln delta from the guesses, and checked on the reference's enclosures).
    verdict: 1 if the true delta at that guess is at most ``delta`` (a valid eps), -1 if it
    is above, 0 if the enclosure straddles ``delta``."""
    composed_delta, mpmath = reference
    releases = reference_releases(program)
    q = Fraction(delta)
    target = mpmath.mpf(q.numerator) / q.denominator
    enclosures = {}

    def gap(e: float) -> float:  # ln(true delta(e)) - ln(delta), from the enclosure's middle
        enclosures[e] = composed_delta(releases, e, keep_digits=60)
        lo, hi = enclosures[e]
        return float(mpmath.log(lo + hi) - mpmath.log(2 * target))

    x0, x1 = min(guesses), max(guesses)
    if x1 - x0 < TRUTH_EPS_REL * x1:
        x0 = x1 * (1 - 1e-3)
    g0, g1 = gap(x0), gap(x1)
    verdicts = {}
    for e in guesses:
        lo, hi = enclosures[e]
        verdicts[e] = 1 if hi <= target else -1 if lo > target else 0
    for _ in range(10):
        if g1 == g0 or abs(x1 - x0) <= TRUTH_EPS_REL * x1 / 8:
            break
        x0, g0, x1 = x1, g1, x1 - g1 * (x1 - x0) / (g1 - g0)
        g1 = gap(x1)
    a, b = x1 * (1 - TRUTH_EPS_REL / 2), x1 * (1 + TRUTH_EPS_REL / 2)
    gap(a)
    gap(b)
    closed = enclosures[a][0] > target and enclosures[b][1] <= target
    return ((a, b) if closed else None), verdicts


def eps_versus_truth(value: object, bracket, verdicts: dict) -> str:
    """Whether the eps ``value`` is valid (the true delta there is at most the delta asked
    for, i.e. ``value`` >= the true eps), and how far above the true eps it is."""
    if not isinstance(value, float) or value not in verdicts:
        return "—"
    excess = ""
    if bracket is not None:
        a, b = bracket
        if a < value <= b:
            excess = f" (within {TRUTH_EPS_REL:g} rel.)"
        else:
            excess = f" ({(2 * value / (a + b) - 1) * 100:+.3g}%)"
    return {1: "yes", -1: "NO", 0: "undecided"}[verdicts[value]] + excess


def versus_truth(value: object, low, high) -> str:
    """Whether ``value`` (a float, or None) is at least the truth in [low, high], and by how
    much (relative to ``high``)."""
    if not isinstance(value, float) or low is None:
        return "—"
    excess = f"{(value / float(high) - 1) * 100:+.3g}%"
    if value >= high:
        return f"yes ({excess})"
    if value < low:
        return f"NO ({excess})"
    return "within the truth's enclosure"


def target_text(n: int, seconds: float | None) -> str:
    if n not in TARGETS:
        return "—"
    limit, shown = TARGETS[n]
    if seconds is None:
        return f"n/a (< {shown})"
    return f"{'yes' if seconds < limit else 'NO'} (< {shown})"


@dataclass
class CompositionRow:
    program: Program
    route: str
    ours: Measure
    peer: Measure
    truth: str
    ours_check: str
    peer_check: str


def run_composition(repeat: int) -> tuple[list[CompositionRow], list[CompositionRow], list[str]]:
    """The delta rows (at COMPOSITION_EPS), the eps rows (at COMPOSITION_DELTA), the peers."""
    pld, pld_name = dp_accounting_pld()
    reference, reference_name = exact_reference()
    eps, delta = COMPOSITION_EPS, COMPOSITION_DELTA
    delta_rows: list[CompositionRow] = []
    eps_rows: list[CompositionRow] = []

    def pld_side(fn: Callable) -> Measure:
        if pld is None:
            return unavailable(pld_name)
        return measure(fn, g, repeat)

    for p in programs():
        route = ours_program(p).route(eps)
        ours = measure(
            lambda p=p: ours_program(p).delta(eps),
            our_delta(lambda p=p: ours_program(p).delta(eps, log=True)),
            repeat,
        )
        peer = pld_side(lambda p=p: pld_program(pld, p).get_delta_for_epsilon(float(eps)))
        truth, low, high = "—", None, None
        if p.exact and reference is not None:
            ok, found = probe(
                lambda p=p: reference[0](reference_releases(p), eps, keep_digits=60),
                TRUTH_LIMIT,
            )
            if ok:
                low, high = found
                truth = g(float(high))
            else:
                truth = f"n/a ({found})"
        elif p.exact:
            truth = f"n/a ({reference_name})"
        delta_rows.append(
            CompositionRow(
                p,
                route,
                ours,
                peer,
                truth,
                versus_truth(ours.raw, low, high),
                versus_truth(peer.raw, low, high),
            )
        )

        ours = measure(lambda p=p: ours_program(p).epsilon(delta), g, repeat)
        peer = pld_side(lambda p=p: pld_program(pld, p).get_epsilon_for_delta(float(delta)))
        truth, bracket, verdicts = "—", None, {}
        guesses = [m.raw for m in (ours, peer) if isinstance(m.raw, float)]
        if p.exact and reference is not None and guesses:
            ok, found = probe(
                lambda p=p, gs=guesses: true_epsilon(reference, p, delta, gs), TRUTH_EPS_LIMIT
            )
            if ok:
                bracket, verdicts = found
                truth = "n/a (the bracket did not close)"
                if bracket is not None:
                    truth = f"{(bracket[0] + bracket[1]) / 2:.9g}"
            else:
                truth = f"n/a ({found})"
        elif p.exact:
            truth = f"n/a ({reference_name if reference is None else 'no eps to start from'})"
        eps_rows.append(
            CompositionRow(
                p,
                "",
                ours,
                peer,
                truth,
                eps_versus_truth(ours.raw, bracket, verdicts),
                eps_versus_truth(peer.raw, bracket, verdicts),
            )
        )

    return delta_rows, eps_rows, [pld_name]


COMPOSITION_NOTES = f"""\
Each timed call builds the program afresh and asks it one question: dgauss's
`compose(Gaussian(sigma2), ..., Laplace(t), ...)` then `.delta({COMPOSITION_EPS})` or
`.epsilon({COMPOSITION_DELTA})` (a Composition caches its grids, so a reused one would be
timed on a cache); dp_accounting's `from_discrete_gaussian_mechanism(sqrt(sigma2))` and
`from_discrete_laplace_mechanism(1/t)` (its parameter is the rate a of exp(-a|x|)), with
value_discretization_interval {PLD_INTERVAL:g} and its defaults otherwise (pessimistic),
composed release by release with `.compose`, then `get_delta_for_epsilon` or
`get_epsilon_for_delta`.  Every release has sensitivity 1 and k = 1.  The truth is
tests/_compose_reference.py's exact composition (60-digit masses, every atom of the
composed loss), where it runs in seconds; the true eps is bracketed with it, to a relative
{TRUTH_EPS_REL:g}.  "yes (+x%)": the delta is an upper bound on the true delta, x% above it;
the eps is valid (the true delta there is at most {COMPOSITION_DELTA}), x% above the true
eps; "NO": below the truth (for an eps: its true delta exceeds {COMPOSITION_DELTA}).
"under target": the dgauss time against 100 ms for 10 releases and 1 s for 100."""


def composition_markdown(delta_rows: list[CompositionRow], eps_rows: list[CompositionRow]) -> str:
    def cells(r: CompositionRow, value_head: str) -> list[str]:
        n = len(r.program.releases)
        return [
            r.program.name,
            *([r.route] if value_head == "delta" else []),
            r.ours.value,
            r.peer.value,
            r.truth,
            r.ours_check,
            r.peer_check,
            time_text(r.ours.seconds),
            time_text(r.peer.seconds),
            ratio_text(r.ours.seconds, r.peer.seconds),
            target_text(n, r.ours.seconds),
        ]

    def head(value_head: str) -> list[str]:
        return [
            "program",
            *(["dgauss route"] if value_head == "delta" else []),
            f"dgauss {value_head}",
            f"dp_accounting {value_head}",
            f"true {value_head}",
            "dgauss >= truth",
            "dp_accounting >= truth",
            "dgauss time",
            "dp_accounting time",
            "dp_accounting time / dgauss time",
            "dgauss under target",
        ]

    lines = ["## Composition of a program", ""]
    lines += [f"### delta at eps = {COMPOSITION_EPS}", ""]
    lines += table(head("delta"), [cells(r, "delta") for r in delta_rows])
    lines += ["", f"### eps at delta = {COMPOSITION_DELTA}", ""]
    lines += table(head("eps"), [cells(r, "eps") for r in eps_rows])
    lines += ["", "Programs (parameters as passed, exact decimals):", ""]
    for r in delta_rows:
        if not r.program.exact:
            shown = ", ".join(
                f"{'G' if kind == 'gaussian' else 'L'}({x})" for kind, x in r.program.releases
            )
            lines.append(f"- {r.program.name}: {shown}")
    return "\n".join([*lines, "", COMPOSITION_NOTES])


# ---- an accountant admitting release by release --------------------------------------

#: The (eps, delta) budget of the accountant runs.
ACCOUNTANT_EPS = "1"
ACCOUNTANT_DELTA = "1e-6"

#: Releases in a run (10 kinds round robin), and the all-distinct run's.
ACCOUNTANT_SIZES = (10, 100, 1000, 10_000)
ACCOUNTANT_DISTINCT = 1000

#: The kinds' total rho at n releases, as a multiple of the largest rho the zCDP route
#: admits at (eps, delta): beyond 1 the last releases need a composition, and the budget
#: fills at about n (the run offers 10% more, so that it ends with refusals).
ACCOUNTANT_FILL = Fraction(115, 100)

#: Seconds one side of one run may take.
ACCOUNTANT_LIMIT = 1200.0


def accountant_kinds(n: int, distinct: int, laplace_only: bool = False) -> list[tuple[str, str]]:
    """``distinct`` kinds (every fifth a Laplace, or all Laplace) whose rho, repeated round
    robin to n releases, add up to ACCOUNTANT_FILL times the zCDP route's largest rho; their
    parameters spread over a factor of 2, written to two decimals."""
    per = Fraction(accounting.cdp_rho(ACCOUNTANT_EPS, ACCOUNTANT_DELTA)) * ACCOUNTANT_FILL / n
    kinds = []
    for i in range(distinct):
        rho = per * (Fraction(2, 3) + Fraction(2 * i, 3 * distinct))  # mean 1
        if laplace_only or i % 5 == 4:  # rho = (1/t)^2/2
            kinds.append(("laplace", f"{1 / math.sqrt(2 * float(rho)):.2f}"))
        else:  # rho = 1/(2 sigma2)
            kinds.append(("gaussian", f"{1 / (2 * float(rho)):.2f}"))
    return kinds


@dataclass(frozen=True)
class AccountantRun:
    name: str
    budget: str  # "approx", "rho" or "pure"
    sequence: tuple[tuple[str, str], ...]  # the offers, in order


def accountant_runs() -> list[AccountantRun]:
    runs = []
    for budget in ("approx", "rho", "pure"):
        for n in ACCOUNTANT_SIZES:
            kinds = accountant_kinds(n, 10, laplace_only=budget == "pure")
            offers = n + n // 10 + 10
            label = "10 Laplace kinds" if budget == "pure" else "10 kinds"
            runs.append(
                AccountantRun(
                    f"{n} releases, {label}",
                    budget,
                    tuple(kinds[i % 10] for i in range(offers)),
                )
            )
        if budget == "approx":
            n = ACCOUNTANT_DISTINCT
            kinds = accountant_kinds(n, n)
            offers = kinds + kinds[: n // 10 + 10]  # then offered again: refused
            runs.append(AccountantRun(f"{n} releases, all distinct", budget, tuple(offers)))
    return runs


def accountant_budget(run: AccountantRun) -> dict:
    """The run's budget: (eps, delta); or the rho, or the pure eps, of its first n offers."""
    if run.budget == "approx":
        return {"epsilon": ACCOUNTANT_EPS, "delta": ACCOUNTANT_DELTA}
    n = round((len(run.sequence) - 10) / 1.1)
    releases = [
        accounting.Gaussian(x) if kind == "gaussian" else accounting.Laplace(x)
        for kind, x in run.sequence[:n]
    ]
    if run.budget == "rho":
        return {"rho": sum((r.rho for r in releases), Fraction(0))}
    return {"epsilon": sum((r.epsilon for r in releases), Fraction(0))}  # type: ignore[union-attr]


def summary(times: list[float], admitted: int, final: str, extra: dict | None = None) -> dict:
    ordered = sorted(times)
    return {
        "offers": len(times),
        "admitted": admitted,
        "total": sum(times),
        "mean": sum(times) / len(times),
        "median": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)],
        "max": ordered[-1],
        "final": final,
        **(extra or {}),
    }


def dgauss_accountant(run: AccountantRun) -> dict:
    """Offer the run's releases to a dgauss Accountant through its public methods (each
    call also draws one noise value): the time of each offer, admitted or refused."""
    acc = dgauss.Accountant(**accountant_budget(run))
    one = np.zeros(1, dtype=np.int64)
    times, admitted = [], 0
    for kind, x in run.sequence:
        start = time.perf_counter()
        try:
            if kind == "gaussian":
                acc.add_gaussian_noise(one, sigma2=x)
            else:
                acc.add_laplace_noise(one, scale=x)
            admitted += 1
        except dgauss.PrivacyBudgetError:
            pass
        times.append(time.perf_counter() - start)
    if run.budget == "approx":
        eps = ACCOUNTANT_EPS
        final = our_delta(lambda: acc.spent.delta(eps, log=True))(acc.spent.delta(eps))
    elif run.budget == "rho":
        final = f"rho {float(acc.spent.rho):.6g}"
    else:
        final = f"eps {acc.spent.epsilon(0):.6g}"
    return summary(times, admitted, final)


def dp_accounting_accountant(pld, run: AccountantRun) -> dict:
    """dp_accounting on the same offers: its PLD composed release by release, as its
    PLDAccountant composes (it has no discrete Gaussian event), each offer admitted when the
    composed PLD's delta at eps is within the budget.  The per-kind PLDs are built once."""
    eps, budget = float(ACCOUNTANT_EPS), float(ACCOUNTANT_DELTA)
    leaves: dict = {}
    composed = None
    times, admitted = [], 0
    for kind, x in run.sequence:
        start = time.perf_counter()
        leaf = leaves.get((kind, x))
        if leaf is None:
            if kind == "gaussian":
                leaf = pld.from_discrete_gaussian_mechanism(
                    math.sqrt(float(x)), value_discretization_interval=PLD_INTERVAL
                )
            else:
                leaf = pld.from_discrete_laplace_mechanism(
                    1 / float(x), value_discretization_interval=PLD_INTERVAL
                )
            leaves[(kind, x)] = leaf
        candidate = leaf if composed is None else composed.compose(leaf)
        if candidate.get_delta_for_epsilon(eps) <= budget:
            composed = candidate
            admitted += 1
        times.append(time.perf_counter() - start)
    final = g(composed.get_delta_for_epsilon(eps)) if composed is not None else "0"
    return summary(times, admitted, final)


def old_rule(run: AccountantRun, admitted: int) -> float:
    """Seconds of one admission by the rule before grouping: compose every release made."""
    releases = [
        accounting.Gaussian(x) if kind == "gaussian" else accounting.Laplace(x)
        for kind, x in run.sequence[:admitted]
    ]
    start = time.perf_counter()
    accounting.compose(*releases).delta(ACCOUNTANT_EPS)
    return time.perf_counter() - start


@dataclass
class AccountantRow:
    run: AccountantRun
    ours: dict | str  # the summary, or why there is none
    peer: dict | str
    before: str


def run_accountant() -> tuple[list[AccountantRow], list[str]]:
    pld, pld_name = dp_accounting_pld()
    rows = []
    for r in accountant_runs():
        ok, ours = probe(lambda r=r: dgauss_accountant(r), ACCOUNTANT_LIMIT)
        ours = ours if ok else f"n/a ({ours})"
        if r.budget != "approx":
            peer: dict | str = "— (a sum)"
        elif pld is None:
            peer = f"n/a ({pld_name})"
        else:
            ok, peer = probe(lambda r=r: dp_accounting_accountant(pld, r), ACCOUNTANT_LIMIT)
            peer = peer if ok else f"n/a ({peer})"
        before = "—"
        if r.budget == "approx" and isinstance(ours, dict):
            ok, seconds = probe(lambda r=r, n=ours["admitted"]: old_rule(r, n), PROBE_LIMIT)
            before = time_text(seconds) if ok else f"n/a ({seconds})"
        rows.append(AccountantRow(r, ours, peer, before))
        print(f"accountant: {r.name} ({r.budget}) done", file=sys.stderr)
    return rows, [pld_name]


def accountant_markdown(rows: list[AccountantRow]) -> str:
    def side(found: dict | str, key: str) -> str:
        if isinstance(found, str):
            return found if key == "final" else "n/a"
        if key in ("offers", "admitted"):
            return str(found[key])
        return found[key] if key == "final" else time_text(found[key])

    def ratio(r: AccountantRow, key: str) -> str:
        if isinstance(r.ours, dict) and isinstance(r.peer, dict):
            return ratio_text(r.ours[key], r.peer[key])
        return "n/a"

    budgets = {
        "approx": f"(eps, delta) = ({ACCOUNTANT_EPS}, {ACCOUNTANT_DELTA})",
        "rho": "rho of the first n",
        "pure": "pure eps of the first n",
    }
    head = [
        "run",
        "budget",
        "offers",
        "admitted",
        "dgauss mean / offer",
        "median",
        "p99",
        "max",
        "total",
        "dgauss final",
        "dp_accounting admitted",
        "dp_accounting mean / offer",
        "dp_accounting max",
        "dp_accounting final delta",
        "dp_accounting mean / dgauss mean",
        "before: one admission",
    ]
    cells = [
        [
            r.run.name,
            budgets[r.run.budget],
            side(r.ours, "offers"),
            side(r.ours, "admitted"),
            side(r.ours, "mean"),
            side(r.ours, "median"),
            side(r.ours, "p99"),
            side(r.ours, "max"),
            side(r.ours, "total"),
            side(r.ours, "final"),
            side(r.peer, "admitted") if isinstance(r.peer, dict) else "—",
            side(r.peer, "mean"),
            side(r.peer, "max"),
            side(r.peer, "final"),
            ratio(r, "mean"),
            r.before,
        ]
        for r in rows
    ]
    return "\n".join(
        ["## An accountant, release by release", "", *table(head, cells), "", ACCOUNTANT_NOTES]
    )


ACCOUNTANT_NOTES = f"""\
Each run offers its releases in order to a new `dgauss.Accountant` (one
`add_gaussian_noise`/`add_laplace_noise` call per offer on a one-element array, so each
time includes drawing one noise value), timed offer by offer, admitted or refused.  The 10
kinds (7 discrete Gaussians, 3 discrete Laplaces; 10 Laplaces for the pure budget) are
offered round robin; their rho add up, at n releases, to {float(ACCOUNTANT_FILL):g} times the
largest rho the zCDP route admits at ({ACCOUNTANT_EPS}, {ACCOUNTANT_DELTA}), so the zCDP route
admits the first ~85%, compositions the rest, and the budget fills at about n; the run offers
10% more.  The all-distinct run offers 1,000 different kinds once, then 110 of them again.
The rho and pure budgets are the totals of the first n releases (exact sums).  "final": the
certified delta of what was admitted at eps = {ACCOUNTANT_EPS} (dgauss: `spent.delta`),
or the rho, or the pure eps.  dp_accounting (no discrete Gaussian event in its
PLDAccountant) composes its `from_discrete_gaussian_mechanism`/`from_discrete_laplace_mechanism`
PLDs (value_discretization_interval {PLD_INTERVAL:g}) into the PLD of what it admitted,
offer by offer, as its PLDAccountant does, and admits when the composed PLD's delta at eps
is within the budget.  "before: one admission": the rule before grouping, one
`compose(*every release admitted).delta(eps)`, timed once (the old accountant paid it at every
offer)."""


# ---- report ------------------------------------------------------------------------


def time_text(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def ratio_text(ours: float | None, peer: float | None) -> str:
    if ours is None or peer is None:
        return "n/a"
    return f"{peer / ours:.3g}x"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cells in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def cases_markdown(rows: list[Row]) -> str:
    head = [
        "case",
        "dgauss value",
        "dgauss time",
        "peer",
        "peer value",
        "peer time",
        "peer time / dgauss time",
    ]
    cells = [
        [
            r.case,
            r.ours.value,
            time_text(r.ours.seconds),
            r.peer_name,
            r.peer.value,
            time_text(r.peer.seconds),
            ratio_text(r.ours.seconds, r.peer.seconds),
        ]
        for r in rows
    ]
    return "\n".join([*table(head, cells), "", NOTES])


#: Calibrations timed fresh (a new process each, so no cache helps): (eps, delta, Δ, k).
CALIBRATIONS = [
    (1, "1e-6", 1, 1),
    (1, "1e-6", 1, 100),
    (1, "1e-6", 5, 1),
    (4, "1e-10", 5, 1),
    (12, "1e-30", 3, 1),
    (1, "1e-6", 2, 31),
    (1, "1e-6", 2, 32),
    (8, "1e-10", 2, 32),
    (1, "1e-6", 3, 3),
    (1, "1e-6", 3, 4),
    (1, "1e-6", 6, 1),
]

_CALIBRATE_CHILD = """
import sys, time
from dgauss.accounting import calibrate_gaussian
eps, delta, sens, k, safe = sys.argv[1:]
wall, cpu = time.perf_counter(), time.process_time()
s = calibrate_gaussian(int(eps), delta, int(sens), int(k), round_up_safe=safe == "1")
print(time.perf_counter() - wall, time.process_time() - cpu, s)
"""


def run_calibration(repeat: int) -> str:
    """``calibrate_gaussian`` for ℓ2 balls, each call the first in a fresh process: the median
    wall and CPU seconds over ``repeat`` processes (reported, not asserted)."""
    head = ["(ε, δ), Δ, k", "σ²", "wall", "CPU", "σ² (round_up_safe)", "wall", "CPU"]
    cells = []
    for eps, delta, sens, k in CALIBRATIONS:
        row = [f"({eps}, {delta}), {sens}, {k}"]
        for safe in ("0", "1"):
            walls, cpus, value = [], [], ""
            for _ in range(max(1, min(repeat, 5))):
                out = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _CALIBRATE_CHILD,
                        str(eps),
                        delta,
                        str(sens),
                        str(k),
                        safe,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=True,
                ).stdout.split()
                walls.append(float(out[0]))
                cpus.append(float(out[1]))
                value = fraction_text(Fraction(out[2]))
            row += [value, time_text(statistics.median(walls)), time_text(statistics.median(cpus))]
        cells.append(row)
        print(" | ".join(row), file=sys.stderr)
    note = (
        "Each call is the first in a fresh Python process (imports excluded), so no cache "
        "helps; median over the processes. Δ is an ℓ2 ball (every integer vector of norm ≤ Δ)."
    )
    return "\n".join(
        ["## Calibration of an ℓ2-ball sensitivity", "", *table(head, cells), "", note]
    )


def markdown(sections: list[str], peers: list[str], repeat: int, elapsed: float) -> str:
    info = (
        f"dgauss {dgauss.__version__}; {'; '.join(peers)}; Python {platform.python_version()} "
        f"on {platform.machine()} ({platform.processor() or platform.system()}); median of "
        f"{repeat} timeit rounds per call; run took {elapsed:.0f} s."
    )
    return "\n\n".join(["# dgauss.accounting against its peers", info, *sections]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit rounds per case (default 7)")
    parser.add_argument(
        "--only",
        choices=["cases", "composition", "accountant", "calibration"],
        help="run only the cases (a)-(e), only the composition of a program, only an "
        "accountant admitting release by release, or only calibrations of ℓ2-ball "
        "sensitivities (written to bench_accounting_<name>.md)",
    )
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)
    start = time.perf_counter()
    sections: list[str] = []
    peers: list[str] = []
    if args.only in (None, "cases"):
        rows, names = run_cases(repeat)
        sections.append(cases_markdown(rows))
        peers += names
    if args.only in (None, "composition"):
        delta_rows, eps_rows, names = run_composition(repeat)
        sections.append(composition_markdown(delta_rows, eps_rows))
        peers += [n for n in names if n not in peers]
    if args.only in (None, "calibration"):
        sections.append(run_calibration(repeat))
    if args.only in (None, "accountant"):
        accountant_rows, names = run_accountant()
        sections.append(accountant_markdown(accountant_rows))
        peers += [n for n in names if n not in peers]
    text = markdown(sections, peers, repeat, time.perf_counter() - start)
    name = "bench_accounting.md" if args.only is None else f"bench_accounting_{args.only}.md"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / name).write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {RESULTS / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
