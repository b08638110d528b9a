"""The reconciliation of marginal tables, timed on a census-shaped synthetic structure.

    python benchmarks/bench_marginals.py [--towns 7901]

``--towns`` towns (7,901: Italy's municipalities) in provinces of about 74 and regions of
about 5 provinces, 18 age groups × 2 sexes in each town (284,436 detail cells at the
default), Poisson(20) counts.  Released with Gaussian noise of variance 481.9 per cell:
town × age × sex, town totals, province × age × sex, region × age × sex and the nation's
total (the census study's tables).  Timed: the estimate (``dgauss._marginals.solve``,
what ``dgauss.reconcile`` runs on marginal tables), and the integers without invariants, with
the nation's and the regions' totals invariant, and with the towns' totals invariant.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dgauss._marginals import Margin, integers, solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towns", type=int, default=7901)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n0 = args.towns
    n1, n2 = max(1, n0 // 74), max(1, n0 // 395)
    p0 = np.sort(rng.integers(0, n1, n0))
    p0[:n1] = np.arange(n1)  # every province holds a town
    p1 = np.sort(rng.integers(0, n2, n1))
    p1[:n2] = np.arange(n2)
    p2 = np.zeros(n2, dtype=np.int64)
    sizes, parents, dims = [n0, n1, n2, 1], [p0, p1, p2], (18, 2)
    x = rng.poisson(20, size=(n0, *dims)).astype(np.float64)

    def up(a, p, m):
        out = np.zeros((m, *a.shape[1:]))
        np.add.at(out, p, a)
        return out

    z1 = up(x, p0, n1)
    z2 = up(z1, p1, n2)
    v = 481.9

    def noisy(a):
        return a + rng.normal(0, v**0.5, a.shape)

    margins = [
        Margin(0, (0, 1), noisy(x), v),
        Margin(0, (), noisy(x.sum(axis=(1, 2))), v),
        Margin(1, (0, 1), noisy(z1), v),
        Margin(2, (0, 1), noisy(z2), v),
        Margin(3, (), noisy(np.array([x.sum()])), v),
    ]
    print(f"{n0:,} towns, {n1} provinces, {n2} regions: {x.size:,} detail cells")
    cases = {
        "estimate and variances": lambda: solve(sizes, parents, dims, margins),
        "integers, no invariant": lambda: integers(sizes, parents, dims, margins),
        "integers, nation and region totals invariant": lambda: integers(
            sizes,
            parents,
            dims,
            [*margins, Margin(2, (), z2.sum(axis=(1, 2)), 0.0), Margin(3, (), [x.sum()], 0.0)],
        ),
        "integers, town totals invariant": lambda: integers(
            sizes, parents, dims, [*margins, Margin(0, (), x.sum(axis=(1, 2)), 0.0)]
        ),
    }
    for name, run in cases.items():
        t = time.perf_counter()
        run()
        print(f"{name}: {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
