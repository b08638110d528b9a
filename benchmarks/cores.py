"""One thread against all cores on one Gaussian case, the calls in turns.

    python benchmarks/cores.py [sigma2] [n]       # defaults: 100, 4_000_000

Best of 12 calls each of ``dgauss.sample_gaussian(sigma2, n, workers=w)`` for
w = 1 and w = -1, in turns (``bench.rates``); prints both rates and their ratio.
Then, to tell the code from the machine, it times each thread of a few more
all-cores calls: the rate each thread sampled at, beside the one-thread rate
(means of 4 calls each, in turns), and how far apart the threads finished.  If
each thread samples about as fast as one thread alone and they finish together,
the threads do not slow each other and a ratio under the core count comes from
the cores (on a shared VM, from the load on the other virtual CPU): run it a few
times.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads spin on the other core

import math
import sys
import threading
import time
from fractions import Fraction

import numpy as np

import dgauss
from bench import rates
from dgauss import _core, _driver
from dgauss._kinds import Kind


def per_thread(sigma2: Fraction, n: int, calls: int = 4):
    """Mean samples/s of one-thread calls, of each thread inside all-cores calls (the two
    kinds in turns), and the largest gap between the threads' finishing times (s).  Goes
    through dgauss's own slicing (private API)."""
    runs, lock = [], threading.Lock()  # (thread id, samples, start, end) in the current call

    def fill(kind, num, den, mu, source, out, next_slice=None, method="auto"):
        start, taken = time.perf_counter(), 0

        def counted():
            nonlocal taken
            piece = next_slice()
            taken += 0 if piece is None else piece[1] - piece[0]
            return piece

        if next_slice is None:
            bits = _core.fill(kind, num, den, mu, source, out, method=method)
            taken = out.shape[0]
        else:
            bits = _core.fill(kind, num, den, mu, source, out, counted, method=method)
        with lock:
            runs.append((threading.get_ident(), taken, start, time.perf_counter()))
        return bits

    dtype = np.dtype(np.int64) if sigma2 < 10**30 else np.dtype(object)
    one, threads, gaps = [], {}, []
    for _ in range(calls):
        runs.clear()
        _driver.draw(fill, Kind.DISCRETE_GAUSSIAN, sigma2, n, 0, None, dtype, 1)
        one += runs
        runs.clear()
        _driver.draw(fill, Kind.DISCRETE_GAUSSIAN, sigma2, n, 0, None, dtype, -1)
        caller = threading.main_thread().ident
        for i, run in enumerate(sorted(runs, key=lambda r: r[0] != caller)):  # caller first
            threads.setdefault(i, []).append(run)
        gaps.append(max(r[3] for r in runs) - min(r[3] for r in runs))

    def rate(of):
        return sum(r[1] for r in of) / sum(r[3] - r[2] for r in of)

    return rate(one), [rate(of) for of in threads.values()], max(gaps)


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "100"
    sigma2 = Fraction(label)
    n = int(float(sys.argv[2])) if len(sys.argv) > 2 else 4_000_000
    best = rates(
        {w: lambda k, w=w: dgauss.sample_gaussian(sigma2, k, workers=w) for w in (1, -1)},
        n,
        repeats=12,
        budget=math.inf,
    )
    print(
        f"sigma2 = {label}, n = {n}: one thread {best[1] / 1e6:.2f} M/s, "
        f"all cores ({os.cpu_count()}) {best[-1] / 1e6:.2f} M/s, x{best[-1] / best[1]:.2f}"
    )
    one, threads, gap = per_thread(sigma2, n)
    print(
        f"  mean of 4 calls each: one thread {one / 1e6:.2f} M/s; inside all-cores calls, "
        "each thread "
        + ", ".join(f"{r / 1e6:.2f}" for r in threads)
        + f" M/s, finishing at most {gap * 1e3:.1f} ms apart"
    )


if __name__ == "__main__":
    main()
