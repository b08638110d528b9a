"""Speed and values of dgauss.accounting against OpenDP and Google's dp_accounting.

Run from an installed dgauss (peers: ``pip install '.[bench]'``)::

    python benchmarks/bench_accounting.py             # about a minute
    python benchmarks/bench_accounting.py --repeat 3  # quicker, noisier

It prints a markdown table and writes ``benchmarks/results/bench_accounting.md``.
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
(e) ``cdp_eps(0.5, 1e-6)`` vs OpenDP's profile ``epsilon(1e-6)``.

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
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def measure(
    fn: Callable[[], object], show: Callable[[object], str], repeat: int, limit: float = PROBE_LIMIT
) -> Measure:
    ok, result = probe(fn, limit)
    if not ok:
        return Measure(None, f"n/a ({result})")
    try:
        return Measure(median_seconds(fn, repeat), show(result))
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


def markdown(rows: list[Row], peers: list[str], repeat: int, elapsed: float) -> str:
    head = [
        "case",
        "dgauss value",
        "dgauss time",
        "peer",
        "peer value",
        "peer time",
        "peer time / dgauss time",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r.case,
            r.ours.value,
            time_text(r.ours.seconds),
            r.peer_name,
            r.peer.value,
            time_text(r.peer.seconds),
            ratio_text(r.ours.seconds, r.peer.seconds),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    info = (
        f"dgauss {dgauss.__version__}; {'; '.join(peers)}; Python {platform.python_version()} "
        f"on {platform.machine()} ({platform.processor() or platform.system()}); median of "
        f"{repeat} timeit rounds per call; run took {elapsed:.0f} s."
    )
    return (
        "\n".join(["# dgauss.accounting against its peers", "", info, ""] + lines + ["", NOTES])
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit rounds per case (default 7)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows, peers = run_cases(max(1, args.repeat))
    text = markdown(rows, peers, args.repeat, time.perf_counter() - start)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_accounting.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {RESULTS / 'bench_accounting.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
