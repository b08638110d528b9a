"""Throughput, random bits and memory of dgauss, against its oracle, its peers and NumPy.

Run from an installed dgauss (peers: ``pip install '.[bench]'``)::

    python benchmarks/bench.py              # full run, a few minutes
    python benchmarks/bench.py --quick      # smaller samples, no memory run
    python benchmarks/bench.py --small      # small calls (1 to 10^6 samples) beside NumPy
    python benchmarks/bench.py --large      # sigma2 10^8 .. 2^100, scale 10^8 .. 2^40

It prints a table and writes ``benchmarks/results/bench.json`` and
``bench.md``.  For every case, in the same run and on the same inputs:

* dgauss on one thread and on every core (``workers=-1``), samples/s and
  ns/sample, with the random bits it consumed per sample beside the
  distribution's entropy (the least any exact sampler could use), as called by
  default (``method="auto"``);
* for the discrete Gaussian and Laplace, each ``method`` the sampler offers
  ("inversion", "rejection") on one thread, timed in the same turns: samples/s,
  ratio to NumPy, bits per sample (the "by method" table);
* the OS source: its throughput in 16 KiB reads (what dgauss reads), and
  each sampler's bits/sample x samples/s as a share of it;
* ``dgauss.reference``, the pure-Python oracle;
* NumPy's inexact ``rint(normal)`` / ``rint(laplace)`` / ``random() < exp(-g)``,
  the speed yardstick (fast, not exact);
* OpenDP's vector samplers (exact, Rust) and diffprivlib's ``GaussianDiscrete``
  (not exact: floats) when installed.

Each rate is the best of several timed calls (a timeit-style minimum), dgauss's
and NumPy's taken in turns; the clock stops when a call returns, before its result
is freed (freeing is not sampling, and on one thread it would cap every all-cores
figure); ratios are against NumPy and against the best exact peer (OpenDP).  The
memory run measures the peak resident memory of a 10**8-sample int64 batch and of
the CLI streaming 4 * 10**7 samples, each in a fresh process.
"""

from __future__ import annotations

import os

# NumPy's OpenBLAS threads spin on the second core and halve the all-cores figures
# (perf: blas_thread_server at 8% of a run that never calls BLAS); keep them to one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import functools
import json
import math
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np

import dgauss
from dgauss import _core, reference
from dgauss._kinds import Kind

RESULTS = Path(__file__).resolve().parent / "results"

GAUSSIAN = [1, 100, 10**4, 10**6, 10**10, 10**100]
LAPLACE = [1, 10, 1000, 10**4, 10**6]
BERNOULLI_EXP = [Fraction(1, 2), Fraction(7, 3)]

#: The ``method`` values timed side by side, per sampler.  A method a sampler does not offer
#: for a parameter (its call raises ValueError: inversion outside 1/64 <= sigma2 <= 2**100 or
#: 1/64 <= scale <= 2**40) reads n/a, so a new method is one entry here.
METHODS = {"gaussian": ("inversion", "rejection"), "laplace": ("inversion", "rejection")}

#: The size of dgauss's largest read from the OS (OS_BUFFER_WORDS in _core.pyx), 16 KiB.
OS_READ = 16384


# ---- timing ------------------------------------------------------------------


def rates(
    draws: dict[str, Callable[[int], object]], n: int, repeats: int, budget: float = 30.0
) -> dict[str, float]:
    """Samples/s of each sampler: the best of ``repeats`` calls of ``draw(n)``, stopping early
    after ``budget`` s.  The calls take turns (one of each per round), so that a stretch of
    load on this shared machine slows every contender alike and the ratios hold."""
    for draw in draws.values():
        draw(min(n, 100))  # warm-up
    best = {name: math.inf for name in draws}
    spent = 0.0
    for _ in range(repeats):
        for name, draw in draws.items():
            start = time.perf_counter()
            result = draw(n)
            elapsed = time.perf_counter() - start
            del result  # freed off the clock (10**6 Python ints take ~14 ms, on one thread)
            best[name], spent = min(best[name], elapsed), spent + elapsed
        if spent > budget:
            break
    return {name: n / seconds for name, seconds in best.items()}


def adaptive_rate(draw: Callable[[int], object], budget: float = 3.0, cap: int = 20_000) -> float:
    """Samples/s of a slow sampler.

    Draws batches of 1, 2, 4, ... up to ``cap`` until ``budget`` s are spent.
    """
    n, best, spent = 1, 0.0, 0.0
    while spent < budget:
        start = time.perf_counter()
        result = draw(n)
        elapsed = time.perf_counter() - start
        del result
        best, spent = max(best, n / max(elapsed, 1e-9)), spent + elapsed
        if n >= cap:
            break
        n = min(2 * n, cap)
    return best


def os_source_rate(budget: float = 1.0, rounds: int = 5) -> float:
    """Bytes/s of the OS source in 16 KiB reads from one thread, read as the sampler reads
    it (``_core.os_read_seconds``: the core's read loop into one buffer, no Python between
    reads): the best of ``rounds`` loops, each about ``budget / rounds`` s."""
    _core.os_read_seconds(1)
    best, reads = 0.0, 16
    for _ in range(rounds):
        while True:
            elapsed = _core.os_read_seconds(reads)
            if elapsed >= budget / rounds / 4:
                break
            reads *= 2
        best = max(best, reads * OS_READ / elapsed)
    return best


# ---- peers -------------------------------------------------------------------


def opendp_samplers() -> dict[str, Callable]:
    try:
        import opendp.prelude as dp
    except ImportError as exc:
        return {"error": f"not installed ({exc.name})"}
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=int))

    def gaussian(sigma2):
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=int), scale=math.sqrt(float(sigma2)))
        return lambda n: meas([0] * n)

    def laplace(scale):
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=int), scale=float(scale))
        return lambda n: meas([0] * n)

    return {"gaussian": gaussian, "laplace": laplace}


#: Above this, one diffprivlib draw runs for minutes or never ends (its float loop in
#: bernoulli_neg_exp); those cells read n/a.
DIFFPRIVLIB_MAX_SIGMA2 = 10**10


def diffprivlib_samplers() -> dict[str, Callable]:
    try:
        from diffprivlib.mechanisms import GaussianDiscrete
    except ImportError as exc:
        return {"error": f"not importable ({exc})"}

    def gaussian(sigma2):
        if sigma2 > DIFFPRIVLIB_MAX_SIGMA2:
            return None
        mech = GaussianDiscrete(epsilon=0.5, delta=1e-5, sensitivity=1)
        mech._scale = math.sqrt(float(sigma2))  # private attribute: set the scale we benchmark
        return lambda n: [mech.randomise(0) for _ in range(n)]

    return {"gaussian": gaussian}


# ---- entropy -----------------------------------------------------------------


def entropy_bits(kind: str, param: Fraction) -> float:
    """Shannon entropy of one sample, in bits (a lower bound on the bits any exact sampler uses).

    The Bernoulli's and the Laplace's are closed forms.  The Gaussian's is the sum over the
    pmf to 30 digits up to σ² = 10^6 and ½·log2(2πeσ²) above: by Poisson summation
    Z = Σ e^{-x²/2σ²} = √(2πσ²)·(1 + ε) and E[X²] = σ²·(1 - ε') with 0 <= ε < 3e^{-2π²σ²}
    and 0 <= ε' < 9π²σ²·e^{-2π²σ²}, so H = ln Z + E[X²]/2σ² differs from ½·ln(2πeσ²) by less than
    10^-8,000,000 there: the formula is the entropy to the last bit of a double (computed
    from the exact numerator and denominator, so σ² = 2^100 loses nothing)."""
    if kind == "bernoulli_exp":
        p = math.exp(-float(param))
        return -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
    if kind == "laplace":
        t = float(param)
        a = math.exp(-1 / t)
        c = (1 - a) / (1 + a)
        mean_abs = 2 * a / ((1 - a) * (1 + a))
        return -math.log2(c) + mean_abs * math.log2(math.e) / t
    sigma2 = float(param) if param < 10**300 else math.inf
    if sigma2 > 10**6:
        return (
            0.5 * math.log2(2 * math.pi * math.e)
            + 0.5 * math.log2(param.numerator)
            - 0.5 * math.log2(param.denominator)
        )
    with localcontext() as ctx:
        ctx.prec = 30
        s2 = Decimal(param.numerator) / Decimal(param.denominator)
        reach = int(40 * math.sqrt(sigma2)) + 10
        weights = [(-(Decimal(x) ** 2) / (2 * s2)).exp() for x in range(-reach, reach + 1)]
        total = sum(weights)
        return float(
            -sum((w / total) * (w / total).ln() for w in weights if w > 0) / Decimal(2).ln()
        )


def bits_per_sample(kind: str, param: Fraction, n: int, method: str = "auto") -> float:
    """Random bits the compiled core consumed per sample by ``method``, from the OS source
    (``_core.fill``'s own default is "rejection": the method is always passed)."""
    codes = {
        "gaussian": Kind.DISCRETE_GAUSSIAN,
        "laplace": Kind.DISCRETE_LAPLACE,
        "bernoulli_exp": Kind.BERNOULLI_EXP,
    }
    out = np.empty(n, dtype=np.bool_ if kind == "bernoulli_exp" else object)
    options = {} if kind == "bernoulli_exp" else {"method": method}
    return _core.fill(codes[kind], param.numerator, param.denominator, 0, None, out, **options) / n


# ---- one case --------------------------------------------------------------------


def offered(sample: Callable, param: Fraction, method: str) -> bool:
    """Whether ``sample(param, ..., method=method)`` is allowed (else it raises ValueError)."""
    try:
        sample(param, 1, method=method)
    except ValueError:
        return False
    return True


def auto_method(sample: Callable, param: Fraction, n: int, methods: list[str]) -> str | None:
    """The method a default call ``sample(param, n)`` runs (it may depend on n): the one whose
    seeded draw of n samples is the default's, or None when none is."""
    if len(methods) <= 1:
        return methods[0] if methods else None
    seeded = lambda **options: sample(param, n, rng=np.random.default_rng(1), **options)
    default = seeded()
    return next((m for m in methods if np.array_equal(seeded(method=m), default)), None)


def case(kind: str, param, quick: bool, peers: dict[str, dict[str, Callable]]) -> dict:
    param = Fraction(param)
    big = kind == "gaussian" and param > 10**20
    # quick: 2**18 at sigma2 > 10**20, enough for two threads (a batch under 2**17 stays on one)
    n = (2**18 if big else 400_000) if quick else (1_000_000 if big else 4_000_000)
    repeats = 3 if quick else 15
    gen = np.random.default_rng(0)
    if kind == "gaussian":
        sample = dgauss.sample_gaussian
        oracle = lambda k: reference.sample_gaussian(param, k)
        sigma = math.sqrt(float(param)) if not big else 10.0 ** (math.log10(param) / 2)
        yardstick = lambda k: np.rint(gen.normal(0.0, sigma, k))
    elif kind == "laplace":
        sample = dgauss.sample_laplace
        oracle = lambda k: reference.sample_laplace(param, k)
        yardstick = lambda k: np.rint(gen.laplace(0.0, float(param), k))
    else:
        sample = dgauss.sample_bernoulli_exp
        oracle = lambda k: reference.sample_bernoulli_exp(param, k)
        threshold = math.exp(-float(param))
        yardstick = lambda k: gen.random(k) < threshold
    methods = [m for m in METHODS.get(kind, ()) if offered(sample, param, m)]
    auto = auto_method(sample, param, n, methods)
    # one thread: each method (the default's figures are those of the method it runs for this
    # n), and the default call itself where it runs none of them; all cores: the default call
    draws: dict[str, Callable[[int], object]] = {
        m: (lambda k, m=m: sample(param, k, method=m, workers=1)) for m in methods
    }
    if auto is None:
        draws["dgauss_1"] = lambda k: sample(param, k, workers=1)
    draws["dgauss_all"] = lambda k: sample(param, k, workers=-1)
    draws["numpy"] = yardstick
    timed = rates(draws, n, repeats)
    row = {"case": f"{kind} {_label(param)}", "method": auto}
    row["methods"] = {
        m: {"rate": timed[m], "bits": bits_per_sample(kind, param, min(n, 200_000), m)}
        for m in methods
    }
    for figures in row["methods"].values():
        figures["vs_numpy"] = figures["rate"] / timed["numpy"]
    if auto is not None:
        row["dgauss_1"], row["bits"] = row["methods"][auto]["rate"], row["methods"][auto]["bits"]
    else:
        row["dgauss_1"] = timed["dgauss_1"]
        row["bits"] = bits_per_sample(kind, param, min(n, 200_000), "auto")
    row.update(
        {
            "dgauss_all": timed["dgauss_all"],
            "numpy": timed["numpy"],
            "entropy": entropy_bits(kind, param),
            "reference": adaptive_rate(oracle, budget=2.0 if quick else 5.0),
        }
    )
    for name, samplers in peers.items():
        make = samplers.get(kind)
        sampler = make(param) if make else None
        row[name] = adaptive_rate(sampler) if sampler else None
    exact_peer = row.get("opendp")
    row["vs_numpy"] = row["dgauss_1"] / row["numpy"]
    row["vs_best_exact_peer"] = row["dgauss_1"] / exact_peer if exact_peer else None
    row["vs_reference"] = row["dgauss_1"] / row["reference"]
    row["cores_speedup"] = row["dgauss_all"] / row["dgauss_1"]
    return row


def add_source_use(row: dict, source_rate: float) -> None:
    """Each one-thread figure's draw on the OS source: bits/sample x samples/s, in MB/s
    (10**6 bytes) and as a share of the source's measured bytes/s (``source_rate``)."""
    for figures in [row, *row["methods"].values()]:
        rate = figures["dgauss_1"] if figures is row else figures["rate"]
        used = figures["bits"] * rate / 8
        figures["source_mb_s"], figures["source_share"] = used / 1e6, used / source_rate


def _label(q: Fraction) -> str:
    if q.denominator == 1 and q.numerator >= 10**4 and str(q.numerator).rstrip("0") == "1":
        return f"1e{len(str(q.numerator)) - 1}"
    return str(q)


# ---- memory ------------------------------------------------------------------------

MEMORY_PROBE = """
import numpy as np, dgauss

def status(key):  # bytes, from /proc/self/status (Linux)
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

dgauss.sample_gaussian(100, 10**6, workers=-1)  # warm up threads, imports, buffers
base = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # restart the peak (VmHWM) from here
x = dgauss.sample_gaussian(100, 10**8, workers=-1)
print(status("VmHWM") - base, x.nbytes)
"""


def memory() -> dict:
    """Peak extra memory of a 10**8 int64 batch beyond the output; CLI peak for two run lengths."""
    extra, output = map(
        int, subprocess.check_output([sys.executable, "-c", MEMORY_PROBE], text=True).split()
    )
    cli = {}
    for n in (10**6, 4 * 10**7):
        probe = (
            "import resource, sys; from dgauss.cli import main; "
            f"main(['sample', '--sigma2', '100', '-n', '{n}', '--no-progress']); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        )
        cli[n] = int(done.stderr.strip().splitlines()[-1])
    return {
        "batch_output_bytes": output,
        "batch_peak_over_output_bytes": extra - output,
        "cli_peak_rss_bytes": cli,
    }


# ---- report --------------------------------------------------------------------------

COLUMNS = [
    ("case", "case", "{}"),
    ("method", "auto runs", "{}"),
    ("dgauss_1", "dgauss M/s", "{:.2f}"),
    ("ns", "ns/sample", "{:.0f}"),
    ("dgauss_all", "all cores M/s", "{:.2f}"),
    ("bits", "bits/sample", "{:.1f}"),
    ("entropy", "entropy bits", "{:.1f}"),
    ("vs_numpy", "÷ NumPy", "{:.3f}"),
    ("vs_best_exact_peer", "× OpenDP", "{:.0f}"),
    ("vs_reference", "× oracle", "{:.0f}"),
    ("cores_speedup", "cores ×", "{:.2f}"),
    ("source_mb_s", "source MB/s", "{:.1f}"),
    ("source_share", "of getrandom", "{:.0%}"),
]

#: The by-method table: per method, these figures (key in row["methods"][m], title, format).
METHOD_COLUMNS = [
    ("rate", "M/s", "{:.2f}"),
    ("vs_numpy", "÷ NumPy", "{:.3f}"),
    ("bits", "bits", "{:.1f}"),
    ("source_share", "of getrandom", "{:.0%}"),
]


def _cell(value, fmt: str) -> str:
    return fmt.format(value) if value is not None else "n/a"


def main_table(rows: list[dict]) -> list[str]:
    lines = [
        "| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
        "|---|---|" + "---:|" * (len(COLUMNS) - 2),
    ]
    for row in rows:
        row = dict(
            row,
            method=row["method"] or "—",
            ns=1e9 / row["dgauss_1"],
            dgauss_1=row["dgauss_1"] / 1e6,
            dgauss_all=row["dgauss_all"] / 1e6,
        )
        lines.append("| " + " | ".join(_cell(row.get(k), fmt) for k, _, fmt in COLUMNS) + " |")
    return lines


def method_table(rows: list[dict]) -> list[str]:
    """dgauss by each method on one thread, NumPy's rate from the same turns, the entropy."""
    rows = [row for row in rows if row["methods"]]
    methods = [m for m in ("inversion", "rejection") if any(m in r["methods"] for r in rows)]
    methods += sorted({m for r in rows for m in r["methods"]} - set(methods))
    if not rows:
        return []
    titles = ["case", "NumPy M/s"]
    titles += [f"{m} {title}" for m in methods for _, title, _ in METHOD_COLUMNS]
    titles += ["entropy bits"]
    if {"inversion", "rejection"} <= set(methods):
        titles.append("inversion ÷ rejection")
    lines = ["| " + " | ".join(titles) + " |", "|---|" + "---:|" * (len(titles) - 1)]
    for row in rows:
        cells = [row["case"], f"{row['numpy'] / 1e6:.2f}"]
        for m in methods:
            figures = row["methods"].get(m, {})
            figures = dict(figures, rate=figures["rate"] / 1e6) if figures else figures
            cells += [_cell(figures.get(k), fmt) for k, _, fmt in METHOD_COLUMNS]
        cells.append(f"{row['entropy']:.1f}")
        if {"inversion", "rejection"} <= set(methods):
            both = row["methods"].keys() >= {"inversion", "rejection"}
            ratio = (
                row["methods"]["inversion"]["rate"] / row["methods"]["rejection"]["rate"]
                if both
                else None
            )
            cells.append(_cell(ratio, "{:.2f}"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(rows: list[dict], machine: str, mem: dict | None, source: dict | None) -> str:
    lines = [f"dgauss {dgauss.__version__}, {machine}", ""]
    if source:
        lines += [
            f"OS source: {_core.os_reader()} in 16 KiB reads (dgauss's read size), one thread, "
            f"{source['start'] / 1e6:,.0f} MB/s before the cases and "
            f"{source['end'] / 1e6:,.0f} MB/s after (the better is used below). "
            "'source MB/s' is bits/sample × samples/s / 8, the rate at which a one-thread "
            "sampler draws on it; 'of getrandom' is that as a share of getrandom's rate, about "
            "the share of the sampler's time spent reading the OS.",
            "",
        ]
    lines += main_table(rows)
    by_method = method_table(rows)
    if by_method:
        lines += [
            "",
            "By method, one thread (`method=`; the same turns as above, so each ÷ NumPy uses "
            "NumPy's rate from this run; 'auto runs' above names the method the default uses):",
            "",
            *by_method,
        ]
    lines += [
        "",
        "Peers' samples/s (same run): "
        + "; ".join(
            f"{row['case']}: "
            + ", ".join(
                f"{name} {row[name]:,.0f}"
                for name in ("opendp", "diffprivlib", "reference")
                if row.get(name)
            )
            for row in rows
        ),
    ]
    if mem:
        lines += [
            "",
            "Memory: a 10^8-sample int64 batch "
            f"({mem['batch_output_bytes'] / 2**20:.0f} MiB of output) "
            f"peaks {mem['batch_peak_over_output_bytes'] / 2**20:.1f} MiB above its output; "
            "the CLI's peak RSS is "
            + ", ".join(
                f"{v / 2**20:.0f} MiB for -n {k:,}" for k, v in mem["cli_peak_rss_bytes"].items()
            )
            + ".",
        ]
    return "\n".join(lines) + "\n"


#: The batch sizes of the small-call sweep (None: one scalar), and its parameters.
SMALL_SIZES = (None, 10, 100, 1000, 10_000, 1_000_000)
SMALL_SIGMA2 = (1, 100, 10**4)
SMALL_SCALES = (1, 1000)
#: The small calls from ``rng=dgauss.ChaCha20()`` (the lean way, as the OS's): one sample
#: and 1,000, beside the OS's, at these σ² and scales.
CHACHA_SMALL_SIGMA2 = (10**8, 2**100)
CHACHA_SMALL_SCALES = (10**8, 2**40)
#: The large-parameter sweep (enveloped inversion; rejection before it) and its batch.
LARGE_SIGMA2 = (10**8, 10**12, 10**20, 2**100)
LARGE_SCALES = (10**8, 2**40)
LARGE_BATCH = 10**6


def per_call(
    ours: Callable[[], object], theirs: Callable[[], object], budget: float = 0.4, rounds: int = 15
) -> tuple[float, float]:
    """The best time of one call of ``ours`` and of ``theirs``, in seconds: each called in
    loops of about ``budget`` / (2 ``rounds``) seconds, the two loops taking turns round
    after round (so that a slow spell of this shared machine, which lasts seconds, slows
    both alike and their ratio holds), the fastest loop's mean of each."""
    numbers = []
    for fn in (ours, theirs):
        fn()
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - start >= budget / rounds / 8:
                break
            number *= 4
        numbers.append(number)
    best = [math.inf, math.inf]
    for _ in range(rounds):
        for j, fn in enumerate((ours, theirs)):
            start = time.perf_counter()
            for _ in range(numbers[j]):
                fn()
            best[j] = min(best[j], (time.perf_counter() - start) / numbers[j])
    return best[0], best[1]


def _small_cases(g: np.random.Generator, sigma2s, scales) -> list[tuple]:
    """(kind, parameter, NumPy's spread, dgauss's sampler, NumPy's) for each σ² of the
    Gaussian, then each scale of the Laplace."""
    cases = [("gaussian", s2, math.sqrt(s2), dgauss.sample_gaussian, g.normal) for s2 in sigma2s]
    cases += [("laplace", t, float(t), dgauss.sample_laplace, g.laplace) for t in scales]
    return cases


def small_rows() -> list[dict]:
    """dgauss's calls at every batch size beside NumPy's inexact rounding, in turns: the
    scalar against ``round(g.normal(0, σ))``, a batch against ``np.rint(g.normal(0, σ, n))``
    (and the Laplace's likewise), from one sample to 10^6; then a GaussianMechanism,
    add_gaussian_noise and an Accountant's on 10 and 1,000 counts against
    ``counts + rint(normal).astype(int64)``."""
    g = np.random.default_rng()
    rows = []
    for kind, param, spread, ours_draw, theirs_draw in _small_cases(g, SMALL_SIGMA2, SMALL_SCALES):
        for size in SMALL_SIZES:
            if size is None:
                ours = functools.partial(ours_draw, param)
                theirs = lambda d=theirs_draw, s=spread: round(d(0, s))  # noqa: E731
            else:
                ours = functools.partial(ours_draw, param, size=size)
                theirs = lambda d=theirs_draw, s=spread, n=size: np.rint(d(0, s, n))  # noqa: E731
            a, b = per_call(ours, theirs)
            rows.append({"case": f"{kind} {param}", "size": size, "dgauss": a, "numpy": b})
    rows += chacha_small_rows(g)
    for n in (10, 1000):
        counts = np.arange(n, dtype=np.int64)
        theirs = lambda c=counts: c + np.rint(g.normal(0, 10, c.size)).astype(np.int64)  # noqa: E731
        acc = dgauss.Accountant(rho=10**9)
        mech = dgauss.GaussianMechanism(sigma2=100, k=10**7)  # releases enough for the loops
        ours_calls = {
            "GaussianMechanism(sigma2=100)": functools.partial(mech, counts),
            "add_gaussian_noise, sigma2 100": functools.partial(
                dgauss.add_gaussian_noise, counts, sigma2=100
            ),
            "Accountant.add_gaussian_noise": functools.partial(
                acc.add_gaussian_noise, counts, sigma2=100
            ),
        }
        for label, ours in ours_calls.items():
            a, b = per_call(ours, theirs)
            rows.append({"case": label, "size": n, "dgauss": a, "numpy": b})
    return rows


def chacha_small_rows(g: np.random.Generator) -> list[dict]:
    """One sample and 1,000 from ``rng=dgauss.ChaCha20()`` (one kept, as a caller keeps
    it) and from the OS, both the lean way, beside NumPy's ``np.rint(g.normal(0, σ))`` and
    ``np.rint(g.normal(0, σ, 1000)).astype(np.int64)`` (the Laplace's likewise), in turns."""
    source = dgauss.ChaCha20()
    rows = []
    for kind, param, spread, ours_draw, theirs_draw in _small_cases(
        g, CHACHA_SMALL_SIGMA2, CHACHA_SMALL_SCALES
    ):
        for size in (None, 1000):
            if size is None:
                theirs = lambda d=theirs_draw, s=spread: np.rint(d(0, s))  # noqa: E731
            else:
                theirs = lambda d=theirs_draw, s=spread, n=size: np.rint(d(0, s, n)).astype(  # noqa: E731
                    np.int64
                )
            calls = {
                "ChaCha20": functools.partial(ours_draw, param, size, rng=source),
                "OS": functools.partial(ours_draw, param, size),
            }
            for label, ours in calls.items():
                a, b = per_call(ours, theirs)
                case = f"{kind} {_power_label(Fraction(param))}, {label}"
                rows.append({"case": case, "size": size, "dgauss": a, "numpy": b})
    return rows


def small_markdown(rows: list[dict], machine: str) -> str:
    lines = [
        "# dgauss: small calls beside NumPy",
        "",
        f"{machine}; `python benchmarks/bench.py --small`; one thread, OS randomness",
        "(the rows marked ChaCha20: `rng=dgauss.ChaCha20()`, one kept for every call);",
        "best mean of 15 timed loops per call, dgauss's and NumPy's loops in turns.",
        "",
        "| case | samples | dgauss | NumPy (inexact) | NumPy time / dgauss time |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        size = "1 (scalar)" if r["size"] is None else f"{r['size']:,}"
        lines.append(
            f"| {r['case']} | {size} | {r['dgauss'] * 1e6:.2f} us | {r['numpy'] * 1e6:.2f} us "
            f"| {r['numpy'] / r['dgauss']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def large_rows() -> list[dict]:
    """Batches of LARGE_BATCH at large parameters, in turns: dgauss from the OS (the
    default), from ``dgauss.ChaCha20()`` (the opt-in user-space source), by the rejection
    loops (what "auto" drew here before enveloped inversion), and NumPy's
    ``rint(normal)`` / ``rint(laplace)``; with the bits per sample and what reading them
    alone from the OS costs: the OS floor, the rate at which the OS source (its measured
    bytes/s in the sampler's read size) delivers the law's entropy in bits, which no exact
    sampler on it can beat; and the same for the bits this sampler reads.  The OS source's
    bytes/s are measured for each case in turns with its samplers (the 16 KiB reads of the
    bytes its batch reads: ``_core.os_read_seconds``), as getrandom's rate moves by ±20%
    between the seconds of one run on this shared machine."""
    g = np.random.default_rng()
    n = LARGE_BATCH
    rows = []
    cases = [("gaussian", Fraction(s2)) for s2 in LARGE_SIGMA2]
    cases += [("laplace", Fraction(t)) for t in LARGE_SCALES]
    for kind, param in cases:
        ours = dgauss.sample_gaussian if kind == "gaussian" else dgauss.sample_laplace
        spread = 2 ** (math.log2(param) / 2) if kind == "gaussian" else float(param)
        theirs = g.normal if kind == "gaussian" else g.laplace
        draws = {
            "os": functools.partial(ours, param),
            "os_ahead": functools.partial(ours, param, workers=1),
            "os_direct": functools.partial(_read_directly, ours, param),
            "chacha20": lambda k, o=ours, p=param: o(p, k, rng=dgauss.ChaCha20()),
            "rejection": functools.partial(ours, param, method="rejection"),
            "numpy": lambda k, d=theirs, s=spread: np.rint(d(0.0, s, k)),
        }
        bits = bits_per_sample(kind, param, 200_000)
        reads = max(1, math.ceil(n * bits / (8 * OS_READ)))  # the batch's bits, in reads
        draws["os_read"] = lambda k, r=reads: _core.os_read_seconds(r)
        two_readers: list[float] = []
        draws["os_read2"] = lambda k, r=reads, seen=two_readers: _two_readers(r, seen)
        draws["os_read_syscall"] = lambda k, r=reads: _read_without_vdso(r)
        measured = rates(draws, n, 7)  # in turns: a slow spell hits every column
        source = measured.pop("os_read") * reads * OS_READ / n  # bytes/s
        measured.pop("os_read2")
        source2 = max(two_readers)
        source_syscall = measured.pop("os_read_syscall") * reads * OS_READ / n
        rows.append(
            {
                "case": f"{kind} {_power_label(param)}",
                **measured,
                "bits": bits,
                "entropy": entropy_bits(kind, param),
                "os_floor": source * 8 / entropy_bits(kind, param),  # any exact sampler
                "os_bits_floor": source * 8 / bits,  # this one, were reading its bits all
                "os_bytes_per_s": source,
                "os_floor2": source2 * 8 / entropy_bits(kind, param),  # two threads reading
                "os_bytes_per_s2": source2,
                # one thread's reads by the system call, not the vDSO's function
                "os_floor_syscall": source_syscall * 8 / entropy_bits(kind, param),
                "os_bytes_per_s_syscall": source_syscall,
            }
        )
    return rows


def _read_directly(sample: Callable, param: Fraction, k: int) -> np.ndarray:
    """``sample(param, k)`` from the OS on one thread reading the OS itself, between its
    computing, as on a machine with one CPU (no reader thread: csrc/dg_ahead.h)."""
    old = _core.read_ahead(-1)
    try:
        return sample(param, k, workers=1)
    finally:
        _core.read_ahead(**old)


def _read_without_vdso(reads: int) -> None:
    """``reads`` 16 KiB reads of the OS by the reader dgauss takes where the kernel has no
    vDSO getrandom (the system call, here), on one thread; dgauss's reader is restored."""
    was = _core.os_reader()
    _core.os_reader("getrandom(3)")
    try:
        _core.os_read_seconds(reads)
    finally:
        if was == "vDSO getrandom":
            _core.os_reader(was)


def _two_readers(reads: int, seen: list[float]) -> None:
    """``reads`` 16 KiB reads of the OS shared by two threads reading at once (the OS's
    rate to a batch split between two threads: each CPU has its own kernel generator);
    appends to ``seen`` their rate in bytes/s, each thread's bytes over its own seconds,
    summed.  Not the wall time of the whole: Python's start and join of two threads, about
    0.2 ms, are not the OS's, and beside a batch's ~2.5 ms of reads they made two readers
    look 0.79 GB/s where they read 0.95 (147 against 1,470 reads, 2026-11-29)."""
    halves = [reads // 2, reads - reads // 2]
    seconds = [0.0, 0.0]

    def read(i: int) -> None:
        seconds[i] = _core.os_read_seconds(halves[i])

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen.append(sum(h * OS_READ / s for h, s in zip(halves, seconds, strict=True)))


def _power_label(q: Fraction) -> str:
    """2^k for a power of two from 2^20 on, else as _label."""
    n = q.numerator
    if q.denominator == 1 and n >= 2**20 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return _label(q)


def large_markdown(rows: list[dict], machine: str) -> str:
    lines = [
        "# dgauss: large parameters beside NumPy",
        "",
        f"{machine}; `python benchmarks/bench.py --large`; batches of {LARGE_BATCH:,}, the "
        "best of 7 calls each, all columns in turns; M samples/s.",
        f"The OS source ({_core.os_reader()}) read "
        f"{min(r['os_bytes_per_s'] for r in rows) / 1e9:.2f}–"
        f"{max(r['os_bytes_per_s'] for r in rows) / 1e9:.2f} GB/s in 16 KiB reads from one "
        f"thread, {min(r['os_bytes_per_s2'] for r in rows) / 1e9:.2f}–"
        f"{max(r['os_bytes_per_s2'] for r in rows) / 1e9:.2f} GB/s from two at once, "
        f"{min(r['os_bytes_per_s_syscall'] for r in rows) / 1e9:.2f}–"
        f"{max(r['os_bytes_per_s_syscall'] for r in rows) / 1e9:.2f} GB/s by the system call "
        "(each row's, in turns with its columns);",
        "\"OS floor\" is the rate at which one thread's reads deliver a sample's entropy in",
        'bits (no exact sampler reading on one thread can be faster), "share" the OS column\'s',
        "fraction of it, of the floor of two threads reading and of one thread's floor by the",
        'system call (the reader without the kernel\'s vDSO getrandom), "bits floor" the rate at',
        'which one thread reads the bits this sampler reads. "OS (default)" is split between',
        'two threads where a second CPU is idle, each reading its own stream; "one thread"',
        'reads the OS ahead on a second thread; "read directly" between its computing.',
        "",
        "| case | OS (default) | one thread | read directly | ChaCha20 | rejection "
        "| NumPy (inexact) | OS ÷ NumPy | ChaCha20 ÷ NumPy | bits/sample (entropy) "
        "| OS floor ÷ NumPy | share of the floor | share, two readers | share, system call "
        "| bits floor ÷ NumPy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['os'] / 1e6:.1f} | {r['os_ahead'] / 1e6:.1f} "
            f"| {r['os_direct'] / 1e6:.1f} | {r['chacha20'] / 1e6:.1f} "
            f"| {r['rejection'] / 1e6:.1f} | {r['numpy'] / 1e6:.1f} | {r['os'] / r['numpy']:.2f} "
            f"| {r['chacha20'] / r['numpy']:.2f} | {r['bits']:.1f} ({r['entropy']:.1f}) "
            f"| {r['os_floor'] / r['numpy']:.2f} | {r['os'] / r['os_floor']:.0%} "
            f"| {r['os'] / r['os_floor2']:.0%} | {r['os'] / r['os_floor_syscall']:.0%} "
            f"| {r['os_bits_floor'] / r['numpy']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller samples, no memory run")
    parser.add_argument(
        "--small",
        action="store_true",
        help="only the small-call sweep (batch sizes 1 to 10^4, and add_*_noise on 10 and "
        "1,000 counts) beside NumPy; writes bench_small.md",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="only the large-parameter sweep (sigma2 10^8 to 2^100, scale 10^8 and 2^40) "
        "beside NumPy, from the OS and from ChaCha20; writes bench_large.md",
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="where to write bench.json and bench.md"
    )
    args = parser.parse_args(argv)
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"NumPy {np.__version__}"
    )
    sweeps = {"small": (small_rows, small_markdown), "large": (large_rows, large_markdown)}
    for name, (rows_of, markdown_of) in sweeps.items():
        if getattr(args, name):
            report = markdown_of(rows_of(), machine)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"bench_{name}.md").write_text(report)
            print(report)
            return 0
    peers = {"opendp": opendp_samplers(), "diffprivlib": diffprivlib_samplers()}
    for name, samplers in peers.items():
        if "error" in samplers:
            print(f"# {name}: {samplers.pop('error')}", file=sys.stderr)
    source = {"start": os_source_rate()}
    rows = []
    for kind, params in (
        ("gaussian", GAUSSIAN),
        ("laplace", LAPLACE),
        ("bernoulli_exp", BERNOULLI_EXP),
    ):
        for param in params:
            rows.append(case(kind, param, args.quick, peers))
            add_source_use(rows[-1], source["start"])
            print(main_table(rows[-1:])[-1], flush=True)
    source["end"] = os_source_rate()
    source["best"] = max(source["start"], source["end"])
    for row in rows:
        add_source_use(row, source["best"])
    mem = None if args.quick else memory()
    report = markdown(rows, machine, mem, source)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.md").write_text(report)
    (args.out / "bench.json").write_text(
        json.dumps(
            {"machine": machine, "os_source_bytes_per_s": source, "rows": rows, "memory": mem},
            indent=2,
            default=str,
        )
    )
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
