"""Throughput of dgauss against its pure-Python oracle and NumPy's inexact sampler.

Run from an installed dgauss::

    python benchmarks/bench.py            # full table (about a minute)
    python benchmarks/bench.py --quick    # fewer samples

Every rate is the best of several repeats (timeit-style minimum of time per
sample), and every row is reported as ratios measured in the same run, so the
table is comparable across machines: dgauss / oracle and dgauss / NumPy's
``rint(normal)`` (or ``rint(laplace)``), which is fast but not exact.
"""
from __future__ import annotations

import argparse
import platform
import time
from fractions import Fraction
from typing import Callable, List

import numpy as np

import dgauss
from dgauss import reference


def best_rate(draw: Callable[[int], object], n: int, repeats: int) -> float:
    """Samples per second: the best of ``repeats`` timed calls of ``draw(n)``."""
    draw(min(n, 1000))  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        draw(n)
        best = min(best, time.perf_counter() - start)
    return n / best


def rows(quick: bool) -> List[tuple]:
    n = 200_000 if quick else 2_000_000
    n_ref = 300 if quick else 2_000
    repeats = 3 if quick else 5
    gen = np.random.default_rng(0)
    out = []
    for sigma2 in (1, 100, 10**6, 10**10, 10**100):
        sigma = float(Fraction(sigma2)) ** 0.5
        n_core = n if sigma2 < 10**20 else n // 10
        core = best_rate(lambda k: dgauss.sample_gaussian(sigma2, k), n_core, repeats)
        seeded = best_rate(lambda k: dgauss.sample_gaussian(sigma2, k, rng=gen), n_core, repeats)
        oracle = best_rate(lambda k: reference.sample_gaussian(sigma2, k), n_ref, 1)
        inexact = best_rate(lambda k: np.rint(gen.normal(0.0, sigma, k)), n, repeats)
        out.append((f"gaussian sigma2={sigma2:g}", core, seeded, oracle, inexact))
    for scale in (1, 10, 1000, 10**6):
        core = best_rate(lambda k: dgauss.sample_laplace(scale, k), n, repeats)
        seeded = best_rate(lambda k: dgauss.sample_laplace(scale, k, rng=gen), n, repeats)
        oracle = best_rate(lambda k: reference.sample_laplace(scale, k), n_ref, 1)
        inexact = best_rate(lambda k: np.rint(gen.laplace(0.0, scale, k)), n, repeats)
        out.append((f"laplace scale={scale:g}", core, seeded, oracle, inexact))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, fewer repeats")
    args = parser.parse_args()
    print(f"# dgauss {dgauss.__version__} on {platform.machine()}, {platform.python_version()}, one thread")
    print(f"{'case':<26}{'dgauss M/s':>11}{'seeded M/s':>11}{'oracle k/s':>11}"
          f"{'x oracle':>10}{'/ numpy':>9}")
    for name, core, seeded, oracle, inexact in rows(args.quick):
        print(f"{name:<26}{core / 1e6:>11.2f}{seeded / 1e6:>11.2f}{oracle / 1e3:>11.2f}"
              f"{core / oracle:>10.0f}{core / inexact:>9.3f}")
    print("x oracle: dgauss (OS randomness) / dgauss.reference;  / numpy: dgauss / np.rint(rng.normal) "
          "or np.rint(rng.laplace), the inexact yardstick")


if __name__ == "__main__":
    main()
