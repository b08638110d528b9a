"""One lane against two: what reading two OS streams at once gives an int64 batch by inversion.

Run from an installed dgauss (or ``PYTHONPATH=src``)::

    python benchmarks/bench_lanes.py            # about a minute
    python benchmarks/bench_lanes.py --n 1e6    # another batch size

From the operating system an int64 batch by inversion draws its even samples from one stream
and its odd samples from a second (csrc/dg_inv.h, DG_INV_FILL; docs/contract.md item 1), so
that the CPU overlaps two draws.  This times, one thread, the best of ``--repeats`` calls
taking turns:

* **2 lanes**: ``rng=None``, as users call it;
* **1 lane**: the same OS bytes through ``dgauss.testing.ScriptedOS(lanes=1)`` (the same
  buffered read loop, one stream: the bit-position reader alone);
* NumPy's inexact ``rint(normal)`` / ``rint(laplace)``, for the ratio.

It prints a Markdown table.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's idle BLAS threads spin otherwise

import argparse
import math

import numpy as np

import dgauss
from bench_tables import best_of
from dgauss.testing import ScriptedOS

CASES = [
    ("gaussian", 1),
    ("gaussian", 100),
    ("gaussian", 10**4),
    ("gaussian", 10**6),
    ("laplace", 1),
    ("laplace", 1000),
    ("laplace", 10**6),
]


def case(kind: str, param: int, n: int, repeats: int) -> dict:
    gen = np.random.default_rng(1)
    if kind == "gaussian":
        sample = dgauss.sample_gaussian
        numpy = lambda: np.rint(gen.normal(0, math.sqrt(param), n))  # noqa: E731
    else:
        sample = dgauss.sample_laplace
        numpy = lambda: np.rint(gen.laplace(0, param, n))  # noqa: E731
    calls = {
        "two": lambda: sample(param, n, method="inversion", workers=1),
        "one": lambda: sample(param, n, method="inversion", rng=ScriptedOS(lanes=1)),
        "numpy": numpy,
    }
    return {name: n / seconds / 1e6 for name, seconds in best_of(calls, repeats).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=4e6, help="samples a call (4e6)")
    parser.add_argument("--repeats", type=int, default=9, help="calls of each, best kept (9)")
    args = parser.parse_args()
    n = int(args.n)
    print("| case | NumPy M/s | 1 lane M/s | ÷ NumPy | 2 lanes M/s | ÷ NumPy | 2 lanes ÷ 1 lane |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, param in CASES:
        r = case(kind, param, n, args.repeats)
        print(
            f"| {kind} {param} | {r['numpy']:.1f} | {r['one']:.1f} | {r['one'] / r['numpy']:.3f} "
            f"| {r['two']:.1f} | {r['two'] / r['numpy']:.3f} | {r['two'] / r['one']:.2f} |",
            flush=True,
        )
    print(f"\n{n:,} samples a call, one thread, best of {args.repeats}, in turns.")


if __name__ == "__main__":
    main()
