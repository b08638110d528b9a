"""A batch by inversion including its table's build, against the rejection path.

Run from an installed dgauss (or ``PYTHONPATH=src``)::

    python benchmarks/bench_tables.py            # about a minute
    python benchmarks/bench_tables.py --n 1e6    # another batch size

For each case, one thread, the best of ``--repeats`` calls of each, taking turns:

* **rejection**: ``method="rejection"`` (the paper's algorithms);
* **inversion, table built**: ``method="inversion"`` with the table cache emptied before
  each call, so the time includes building the table (``dgauss._core`` keeps tables by
  parameter; a first call pays this once);
* **inversion, table cached**: the same call with the table already built;
* the table's size and its build time alone (the first minus the second).

It prints a Markdown table with the ratios rejection / inversion.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's idle BLAS threads spin otherwise

import argparse
import math
import time
from fractions import Fraction

import dgauss
from dgauss import _core

CASES = [
    ("gaussian", 1),
    ("gaussian", 100),
    ("gaussian", 10**4),
    ("gaussian", 2**16),
    ("gaussian", 10**6),
    ("gaussian", 2**24),
    ("laplace", 100),
    ("laplace", 255),
    ("laplace", 256),
    ("laplace", 1000),
    ("laplace", 2**12),
    ("laplace", 10**4),
    ("laplace", 10**6),
    ("laplace", 2**20),
]


def best_of(calls: dict, repeats: int) -> dict:
    """Seconds: the best of ``repeats`` runs of each call, the calls taking turns."""
    best = {name: math.inf for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def case(kind: str, param, n: int, repeats: int) -> dict:
    sample = dgauss.sample_gaussian if kind == "gaussian" else dgauss.sample_laplace
    param = Fraction(param)

    def built():
        _core._INV_TABLES.clear()
        sample(param, n, method="inversion")

    calls = {
        "rejection": lambda: sample(param, n, method="rejection"),
        "built": built,
        "cached": lambda: sample(param, n, method="inversion"),
    }
    times = best_of(calls, repeats)
    table = (_core.gauss_table if kind == "gaussian" else _core.laplace_table)(
        param.numerator, param.denominator
    )
    return {"case": f"{kind} {param}", "kib": table.nbytes / 1024, **times}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e5, help="batch size (default 1e5)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    n = int(args.n)
    print(
        "| case | table KiB | rejection | inversion, table built | × | "
        "inversion, table cached | × | build |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, param in CASES:
        r = case(kind, param, n, args.repeats)
        ms = lambda s: f"{s * 1e3:.2f} ms"
        print(
            f"| {r['case']} | {r['kib']:.0f} | {ms(r['rejection'])} | {ms(r['built'])} | "
            f"{r['rejection'] / r['built']:.1f} | {ms(r['cached'])} | "
            f"{r['rejection'] / r['cached']:.1f} | {ms(max(0.0, r['built'] - r['cached']))} |",
            flush=True,
        )
    print(f"\n{n:,} samples a call, one thread, best of {args.repeats}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
