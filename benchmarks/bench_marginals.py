"""The reconciliation of marginal tables, timed on a census-shaped synthetic structure.

    python benchmarks/bench_marginals.py [--towns 7901] [--branching B] [--memory]

``--towns`` towns (7,901: Italy's municipalities) in provinces of about 74 and regions of
about 5 provinces, 18 age groups × 2 sexes in each town (284,436 detail cells at the
default), Poisson(20) counts; ``--branching B`` puts them instead in a deep tree, B areas
a parent at every level up to one root.  Released with Gaussian noise of variance 481.9 per
cell: town × age × sex, town totals, every level between × age × sex (provinces and
regions) and the root's total (the census study's tables).  Timed: the estimate
(``dgauss._marginals.solve``, what ``dgauss.reconcile`` runs on marginal tables), and the
integers without invariants, with the totals of the second level above the towns (the
regions) and of the root invariant, and with the towns' totals invariant.
``--memory`` measures instead each case's peak of new memory (tracemalloc, which NumPy
reports to; slower) as a multiple of the input's (the noisy tables' values).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from dgauss._marginals import Margin, integers, solve


def tree(towns: int, branching: int | None, rng) -> tuple[list[int], list[np.ndarray]]:
    """Each level's number of areas and each area's parent, the towns first."""
    if branching is None:  # provinces of about 74 towns, regions of about 5 provinces
        sizes, parents = [towns], []
        for per in (74, 5.3):
            n = max(1, round(sizes[-1] / per))
            p = np.sort(rng.integers(0, n, sizes[-1]))
            p[:n] = np.arange(n)  # every area holds a child
            sizes.append(n)
            parents.append(np.sort(p))
    else:
        sizes, parents = [towns], []
        while sizes[-1] > branching:
            parents.append(np.arange(sizes[-1]) // branching)
            sizes.append(-(-sizes[-1] // branching))
    parents.append(np.zeros(sizes[-1], dtype=np.int64))  # the root
    return [*sizes, 1], parents


def frames_cases(sizes, parents, margins) -> tuple[dict, int]:
    """The same release as pandas DataFrames (key columns level0 (the towns), level1, ...,
    age, sex; value n), and what ``dgauss.reconcile`` does with them; their memory."""
    import pandas as pd

    import dgauss

    top = len(sizes) - 1
    area = [np.arange(sizes[0])]
    for p in parents[:-1]:
        area.append(p[area[-1]])
    tables = []
    for m in margins:
        shape = m.values.shape
        idx = np.indices(shape).reshape(len(shape), -1)
        columns = {}
        if m.level < top:
            for lv in range(m.level, top if m.level == 0 else m.level + 1):
                columns[f"level{lv}"] = area[lv - m.level][idx[0]] if m.level == 0 else idx[0]
        for j, name in zip(m.axes, ("age", "sex"), strict=False):
            columns[name] = idx[1 + m.axes.index(j)]
        columns["n"] = m.values.reshape(-1)
        tables.append(pd.DataFrame(columns))
    noise = [m.variance for m in margins]

    def reconcile():
        r = dgauss.reconcile(tables, noise=noise, value="n")
        return r.estimates, r.variances

    solved = dgauss.reconcile(tables, noise=noise, value="n")
    cases = {
        "DataFrames: reconcile, .estimates and .variances": reconcile,
        "DataFrames: .integers()": solved.integers,
    }
    return cases, sum(int(t.memory_usage(index=True, deep=True).sum()) for t in tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towns", type=int, default=7901)
    parser.add_argument("--branching", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory", action="store_true", help="peak new memory, not time")
    parser.add_argument(
        "--frames", action="store_true", help="through dgauss.reconcile on pandas DataFrames"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes, parents = tree(args.towns, args.branching, rng)
    dims, v = (18, 2), 481.9
    x = rng.poisson(20, size=(args.towns, *dims)).astype(np.float64)

    def noisy(a):
        return a + rng.normal(0, v**0.5, a.shape)

    margins = [Margin(0, (0, 1), noisy(x), v), Margin(0, (), noisy(x.sum(axis=(1, 2))), v)]
    z, totals = x, [x.sum(axis=(1, 2))]
    for lv, p in enumerate(parents, start=1):
        z = np.stack(
            [
                np.bincount(p, weights=z[..., i, j], minlength=sizes[lv])
                for i in range(dims[0])
                for j in range(dims[1])
            ],
            axis=-1,
        ).reshape(-1, *dims)
        totals.append(z.sum(axis=(1, 2)))
        top = lv == len(sizes) - 1
        margins.append(Margin(lv, () if top else (0, 1), noisy(totals[-1] if top else z), v))
    levels = ", ".join(f"{n:,}" for n in sizes)
    print(f"{len(sizes)} levels of {levels} areas: {x.size:,} detail cells")
    towns, regions, nation = totals[0], totals[min(2, len(sizes) - 1)], totals[-1]
    del x, z, totals  # the truth: not part of the input
    cases = {
        "estimate and variances": lambda: solve(sizes, parents, dims, margins),
        "integers, no invariant": lambda: integers(sizes, parents, dims, margins),
        "integers, nation and region totals invariant": lambda: integers(
            sizes,
            parents,
            dims,
            [
                *margins,
                Margin(min(2, len(sizes) - 1), (), regions, 0.0),
                Margin(len(sizes) - 1, (), nation, 0.0),
            ],
        ),
        "integers, town totals invariant": lambda: integers(
            sizes, parents, dims, [*margins, Margin(0, (), towns, 0.0)]
        ),
    }
    given = sum(m.values.nbytes for m in margins)
    if args.frames:
        cases, given = frames_cases(sizes, parents, margins)
    for name, run in cases.items():
        if args.memory:
            tracemalloc.start()
            run()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{name}: peak {peak / 2**20:.0f} MiB new, {peak / given:.2f}× the input's")
            continue
        t = time.perf_counter()
        run()
        print(f"{name}: {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
