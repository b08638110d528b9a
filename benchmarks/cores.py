"""One thread against all cores on one Gaussian case, the calls in turns.

    python benchmarks/cores.py [sigma2] [n]       # defaults: 100, 4_000_000

Best of 12 calls of ``dgauss.sample_gaussian(sigma2, n, workers=w)`` for w = 1
and w = -1, taken alternately in two blocks of 6 each; prints both rates and
their ratio.  On a shared VM the ratio of one run moves with the load on the
other core: run it a few times.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # idle BLAS threads spin on the other core

import sys
import time
from fractions import Fraction

import dgauss


def best_rate(sigma2, n: int, workers: int, calls: int = 6) -> float:
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        dgauss.sample_gaussian(sigma2, n, workers=workers)
        best = min(best, time.perf_counter() - start)
    return n / best


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "100"
    sigma2 = Fraction(label)
    n = int(float(sys.argv[2])) if len(sys.argv) > 2 else 4_000_000
    rates = {1: 0.0, -1: 0.0}
    for _ in range(2):
        for workers in rates:
            rates[workers] = max(rates[workers], best_rate(sigma2, n, workers))
    print(f"sigma2 = {label}, n = {n}: one thread {rates[1] / 1e6:.2f} M/s, "
          f"all cores ({os.cpu_count()}) {rates[-1] / 1e6:.2f} M/s, x{rates[-1] / rates[1]:.2f}")


if __name__ == "__main__":
    main()
