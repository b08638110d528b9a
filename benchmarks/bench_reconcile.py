"""``dgauss.reconcile`` at scale: time and memory on synthetic trees of ISTAT's shape.

Run from an installed dgauss (or ``PYTHONPATH=src``)::

    python benchmarks/bench_reconcile.py                 # 284,436 and 10,080,000 cells
    python benchmarks/bench_reconcile.py --municipalities 7901

The tree: municipalities of 36 detail cells each (Poisson(5) counts), 107 provinces, 20
regions, a nation; every level released with N_Z(0, 9) noise (seeded: a simulation).  For
each size it reports one run of the estimate and of ``integers()`` (time.perf_counter), the
new memory at the peak of each (tracemalloc: the integers' peak includes the estimate's
arrays, which the result holds), the input's bytes (values and parent positions of every
level), and checks that the integer tables add up; with ``--shuffled`` the detail cells come
in random order (the integer split then sorts them by parent first).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's idle BLAS threads spin otherwise

import argparse
import time
import tracemalloc

import numpy as np

import dgauss


def tree(municipalities: int, shuffled: bool, rng: np.random.Generator):
    """Noisy levels and parent positions of a synthetic ISTAT-shaped tree."""
    cells = np.repeat(np.arange(municipalities), 36)
    province = np.sort(rng.integers(0, 107, size=municipalities))
    province[:107] = np.arange(107)
    region = np.arange(107) % 20
    parents = [cells, np.sort(province), region, np.zeros(20, dtype=np.int64)]
    truth = [rng.poisson(5, size=len(cells))]
    for p, m in zip(parents, [municipalities, 107, 20, 1], strict=True):
        truth.append(np.bincount(p, truth[-1], minlength=m).astype(np.int64))
    noisy = [t + dgauss.sample_gaussian(9, size=len(t), rng=rng) for t in truth]
    if shuffled:
        order = rng.permutation(len(cells))
        noisy[0], parents[0] = noisy[0][order], parents[0][order]
    return noisy, parents


def measure(municipalities: int, shuffled: bool) -> str:
    noisy, parents = tree(municipalities, shuffled, np.random.default_rng(2026))
    size = sum(a.nbytes for a in noisy) + sum(a.nbytes for a in parents)
    tracemalloc.start()
    t0 = time.perf_counter()
    result = dgauss.reconcile(noisy, parents, noise=[9] * 5)
    t1 = time.perf_counter()
    peak_estimate = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    t2 = time.perf_counter()
    ints = result.integers()
    t3 = time.perf_counter()
    peak_integers = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    for lv in range(len(parents)):
        sums = np.zeros(len(ints[lv + 1]), dtype=np.int64)
        np.add.at(sums, parents[lv], ints[lv])
        assert np.array_equal(sums, ints[lv + 1]) and ints[lv].min() >= 0
    order = "random" if shuffled else "by parent"
    return (
        f"| {len(noisy[0]):,} | {order} | {1e3 * (t1 - t0):.0f} ms | {1e3 * (t3 - t2):.0f} ms "
        f"| {peak_estimate / 1e6:.0f} MB / {peak_integers / 1e6:.0f} MB | {size / 1e6:.0f} MB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--municipalities", type=int, nargs="*", default=[7901, 280000])
    parser.add_argument("--shuffled", action="store_true", help="also the cells in random order")
    args = parser.parse_args()
    print("| detail cells | order | estimate | integers | new memory at the peak | input |")
    print("|---:|---|---:|---:|---:|---:|")
    for m in args.municipalities:
        for shuffled in (False, True) if args.shuffled else (False,):
            print(measure(m, shuffled), flush=True)


if __name__ == "__main__":
    main()
