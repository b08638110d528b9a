"""One thread against all cores on one Gaussian case, the calls in turns.

    python benchmarks/cores.py [sigma2] [n]       # defaults: 100, 4_000_000

Best of 12 calls of ``dgauss.sample_gaussian(sigma2, n, workers=w)`` for w = 1
and w = -1, taken alternately in two blocks of 6 each; prints both rates and
their ratio.  Then, to tell the code from the machine, it times each thread of
a few more all-cores calls: the rate each thread sampled at, beside the one-thread
rate (means of 4 calls each, in turns), and how far apart the threads finished.  If each thread samples about as fast
as one thread alone and they finish together, the threads do not slow each other
and a ratio under the core count comes from the cores (on a shared VM, from the
load on the other virtual CPU): run it a few times.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # idle BLAS threads spin on the other core

import sys
import threading
import time
from fractions import Fraction

import numpy as np

import dgauss
from dgauss import _api, _core


def best_rate(sigma2, n: int, workers: int, calls: int = 6) -> float:
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        result = dgauss.sample_gaussian(sigma2, n, workers=workers)
        best = min(best, time.perf_counter() - start)
        del result   # freed off the clock
    return n / best


def per_thread(sigma2: Fraction, n: int, calls: int = 4):
    """Mean samples/s of one-thread calls, of each thread inside all-cores calls (the two
    kinds in turns), and the largest gap between the threads' finishing times (s).  Goes
    through dgauss's own slicing (private API)."""
    done, lock = {}, threading.Lock()

    def fill(kind, num, den, mu, source, out, next_slice=None):
        start, taken = time.perf_counter(), 0

        def counted():
            nonlocal taken
            piece = next_slice()
            taken += 0 if piece is None else piece[1] - piece[0]
            return piece
        if next_slice is None:
            bits, taken = _core.fill(kind, num, den, mu, source, out), out.shape[0]
        else:
            bits = _core.fill(kind, num, den, mu, source, out, counted)
        with lock:
            done.setdefault(workers, {}).setdefault(threading.get_ident(), []).append(
                (taken, start, time.perf_counter()))
        return bits

    dtype = np.dtype(np.int64) if sigma2 < 10**30 else np.dtype(object)
    gaps = []
    for _ in range(calls):
        for workers in (1, -1):
            before = {k: len(v) for k, v in done.get(workers, {}).items()}
            _api.draw(fill, _api.GAUSSIAN, sigma2, n, 0, None, dtype, workers)
        ends = [v[-1][2] for k, v in done[-1].items() if len(v) > before.get(k, 0)]
        gaps.append(max(ends) - min(ends))

    def rate(runs):
        return sum(t for t, _, _ in runs) / sum(e - s for _, s, e in runs)
    return (rate([r for v in done[1].values() for r in v]),
            [rate(v) for v in done[-1].values()], max(gaps))


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
    one, threads, gap = per_thread(sigma2, n)
    print(f"  mean of 4 calls each: one thread {one / 1e6:.2f} M/s; inside all-cores calls, "
          "each thread " + ", ".join(f"{r / 1e6:.2f}" for r in threads)
          + f" M/s, finishing at most {gap * 1e3:.1f} ms apart")


if __name__ == "__main__":
    main()
