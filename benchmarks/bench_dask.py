"""dgauss.dask on a local distributed cluster: bounded memory writing to Zarr, and scaling.

    python benchmarks/bench_dask.py             # 10**9 samples to Zarr, 4 * 10**8 scaling
    python benchmarks/bench_dask.py --quick     # small sizes, well under a minute

On ``distributed.LocalCluster(processes=True, threads_per_worker=1)``, in one run:

* **Zarr**: ``dgauss.dask.sample_gaussian(100, n, chunks=chunk).to_zarr(path)`` on 2 worker
  processes (each with an explicit memory limit).  A thread in the driver polls every worker's
  resident memory (psutil, every ~20 ms) from before the write to its end, so the table gives
  each worker's peak RSS in MiB and in chunks (one chunk is 8 * chunk bytes): bounded by a few
  chunks, not by the array.  Then the wall time, samples/s and the store's size on disk; then
  the store is read back with ``dask.array.from_zarr`` and its exact sum and sum of squares
  (chunkwise, on the workers) give the mean and variance of the noise.  The store is deleted.
* **Scaling**: ``sample_gaussian(100, m, chunks=chunk).sum()`` computed on 1 worker process and
  on 2 (only a scalar reaches the driver), against ``dgauss.sample_gaussian(100, chunk)`` summed
  in a loop in this process without Dask (the same total).  Best of ``--repeat`` runs each, after
  a warm-up, the three taking turns so that load on the machine hits all alike.

It prints a markdown report and writes it to ``benchmarks/results/bench_dask.md`` (``--out``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
import numpy as np  # noqa: E402
import psutil  # noqa: E402
import zarr  # noqa: E402

import dgauss  # noqa: E402
import dgauss.dask  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SIGMA2 = 100
MIB = 2**20


# ---- the cluster and its workers ---------------------------------------------------------------


def cluster(workers: int, memory_limit: str) -> tuple[distributed.LocalCluster, distributed.Client]:
    c = distributed.LocalCluster(
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        memory_limit=memory_limit,
    )
    client = distributed.Client(c)
    client.wait_for_workers(workers)
    client.run(_warm)  # imports on every worker before anything is measured
    return c, client


def _warm() -> None:
    import zarr  # noqa: F401

    import dgauss.dask  # noqa: F401
    from dgauss import _core  # noqa: F401


def worker_pids(client: distributed.Client) -> list[int]:
    return sorted(client.run(os.getpid).values())


def cpu(pids: list[int]) -> np.ndarray:
    """CPU seconds so far: of the worker processes ``pids``, of this driver process (client,
    scheduler, RSS poller), of this process's whole tree (driver, nannies, workers), and of
    the whole machine (busy time of every core); so a difference over a run shows how much
    CPU other processes took from it."""
    workers = sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)
    me = psutil.Process()
    driver = sum(me.cpu_times()[:2])
    tree = driver + sum(sum(p.cpu_times()[:2]) for p in me.children(recursive=True))
    t = psutil.cpu_times()
    busy = t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)
    return np.array([workers, driver, tree, busy])


class RssPoller:
    """The peak resident memory of each process, polled from a thread every ``interval`` s."""

    def __init__(self, pids: list[int], interval: float = 0.02):
        self.procs = {pid: psutil.Process(pid) for pid in pids}
        self.interval = interval
        self.before = {pid: p.memory_info().rss for pid, p in self.procs.items()}
        self.peak = dict(self.before)
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid, p in self.procs.items():
                self.peak[pid] = max(self.peak[pid], p.memory_info().rss)
            self.polls += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> RssPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.after = {pid: p.memory_info().rss for pid, p in self.procs.items()}


def disk_usage(path: str) -> tuple[int, int, int]:
    """(bytes in files, bytes allocated on disk, number of files) under ``path``."""
    size = blocks = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            st = os.stat(os.path.join(root, name))
            size, blocks, files = size + st.st_size, blocks + st.st_blocks * 512, files + 1
    return size, blocks, files


# ---- the two measurements ----------------------------------------------------------------------


def zarr_run(n: int, chunk: int, memory_limit: str, where: str) -> dict:
    tmp = tempfile.mkdtemp(prefix="bench_dask-", dir=where)
    path = os.path.join(tmp, "noise.zarr")
    c, client = cluster(2, memory_limit)
    try:
        pids = worker_pids(client)
        x = dgauss.dask.sample_gaussian(SIGMA2, n, chunks=chunk)
        write = x.to_zarr(path, compute=False)  # the array's metadata is written here
        cpu0 = cpu(pids)
        with RssPoller(pids) as poll:
            start = time.perf_counter()
            client.compute(write).result()
            wall = time.perf_counter() - start
        used = cpu(pids) - cpu0
        size, allocated, files = disk_usage(path)
        compressors = zarr.open_array(path, mode="r").compressors

        start = time.perf_counter()
        y = da.from_zarr(path)
        s, s2 = client.compute([y.sum(), (y * y).sum()], sync=True)
        verify = time.perf_counter() - start
    finally:
        client.close()
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    s, s2 = int(s), int(s2)
    mean = s / n
    var = (s2 - s * s / n) / n
    return {
        "n": n,
        "chunk": chunk,
        "pids": pids,
        "before": poll.before,
        "peak": poll.peak,
        "after": poll.after,
        "polls": poll.polls,
        "wall": wall,
        "worker_cpu": used[0],
        "driver_cpu": used[1],
        "other_cpu": used[3] - used[2],
        "size": size,
        "allocated": allocated,
        "files": files,
        "compressors": compressors,
        "shape": y.shape,
        "dtype": y.dtype,
        "numblocks": y.numblocks,
        "mean": mean,
        "var": var,
        # standard errors of the mean and the variance of N(0, 100): sqrt(s2/n), sqrt(2 s2^2/n)
        "z_mean": mean / math.sqrt(SIGMA2 / n),
        "z_var": (var - SIGMA2) / math.sqrt(2 * SIGMA2**2 / n),
        "verify": verify,
        "gone": not os.path.exists(tmp),
    }


def _baseline(m: int, chunk: int) -> int:
    total = 0
    for start in range(0, m, chunk):
        total += int(dgauss.sample_gaussian(SIGMA2, size=min(chunk, m - start)).sum())
    return total


def scaling_run(m: int, chunk: int, repeat: int, memory_limit: str) -> dict:
    setups = {}
    try:
        for workers in (1, 2):
            setups[workers] = cluster(workers, memory_limit)
        # warm-up: one round of each, short
        warm = min(m, 4 * chunk)
        _baseline(warm, chunk)
        for _, client in setups.values():
            client.compute(dgauss.dask.sample_gaussian(SIGMA2, warm, chunks=chunk).sum()).result()

        times: dict[str, list[float]] = {"baseline": [], "1 worker": [], "2 workers": []}
        used: dict[str, list[np.ndarray]] = {k: [] for k in times}  # cpu() differences
        for _ in range(repeat):
            c0 = cpu([])
            start = time.perf_counter()
            _baseline(m, chunk)
            times["baseline"].append(time.perf_counter() - start)
            used["baseline"].append(cpu([]) - c0)
            for workers, (_, client) in setups.items():
                key = "1 worker" if workers == 1 else "2 workers"
                pids = worker_pids(client)
                x = dgauss.dask.sample_gaussian(SIGMA2, m, chunks=chunk).sum()
                c0 = cpu(pids)
                start = time.perf_counter()
                client.compute(x).result()
                times[key].append(time.perf_counter() - start)
                used[key].append(cpu(pids) - c0)
    finally:
        for c, client in setups.values():
            client.close()
            c.close()
    return {"m": m, "chunk": chunk, "times": times, "used": used}


# ---- the report --------------------------------------------------------------------------------


def machine() -> list[str]:
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        f"- Machine: {platform.machine()} ({platform.system()}), {os.cpu_count()} logical cores "
        f"({model}), {psutil.virtual_memory().total / 2**30:.1f} GiB RAM",
        f"- Python {platform.python_version()}; dgauss {dgauss.__version__}; dask "
        f"{dask.__version__}; distributed {distributed.__version__}; zarr {zarr.__version__}; "
        f"numpy {np.__version__}; psutil {psutil.__version__}",
    ]


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1e6:.2f} M/s"


def zarr_report(r: dict, memory_limit: str) -> list[str]:
    chunk_bytes = 8 * r["chunk"]
    array_bytes = 8 * r["n"]
    lines = [
        f"## Zarr write, 2 worker processes: {r['n']:.3g} int64 samples, sigma2={SIGMA2}",
        "",
        f"`dgauss.dask.sample_gaussian({SIGMA2}, {r['n']}, chunks={r['chunk']})"
        f".to_zarr(path)`: {r['n'] // r['chunk']} chunks of {r['chunk']:.3g} elements = "
        f"{chunk_bytes / MIB:.1f} MiB each; the array is {array_bytes / 2**30:.2f} GiB. "
        f"LocalCluster(processes=True, n_workers=2, threads_per_worker=1, "
        f'memory_limit="{memory_limit}"). RSS polled every 20 ms ({r["polls"]} polls).',
        "",
        "| worker pid | RSS before (MiB) | peak RSS (MiB) | peak / chunk | "
        "(peak - before) / chunk | RSS after (MiB) | peak / array |",
        "|---|---|---|---|---|---|---|",
    ]
    for pid in r["pids"]:
        b, p, a = r["before"][pid], r["peak"][pid], r["after"][pid]
        lines.append(
            f"| {pid} | {b / MIB:.0f} | {p / MIB:.0f} | {p / chunk_bytes:.2f} | "
            f"{(p - b) / chunk_bytes:.2f} | {a / MIB:.0f} | {p / array_bytes:.4f} |"
        )
    raw = array_bytes
    lines += [
        "",
        f"- Wall time {r['wall']:.1f} s: **{rate(r['n'], r['wall'])}** "
        f"({rate(r['n'], r['wall'] * 2)} per worker); worker CPU {r['worker_cpu']:.1f} s "
        f"({100 * r['worker_cpu'] / (2 * r['wall']):.0f}% of 2 cores), driver (client + "
        f"scheduler + RSS poller) CPU {r['driver_cpu']:.1f} s; other processes on the "
        f"machine: {r['other_cpu'] / r['wall']:.2f} cores on average",
        f"- Store: {r['files']} files, {r['size'] / 2**30:.3f} GiB in files "
        f"({r['allocated'] / 2**30:.3f} GiB allocated on disk), {r['size'] / raw:.3f} of the "
        f"raw {raw / 2**30:.2f} GiB ({8 * r['size'] / r['n']:.2f} bits per sample); "
        f"compressors {r['compressors']}",
        f"- Read back with `da.from_zarr`: shape {r['shape']}, dtype {r['dtype']}, "
        f"{r['numblocks'][0]} blocks; exact sum and sum of squares on the workers in "
        f"{r['verify']:.1f} s: mean {r['mean']:+.6f} (z = {r['z_mean']:+.2f}), variance "
        f"{r['var']:.5f} (z = {r['z_var']:+.2f} against {SIGMA2}; the variance of "
        f"N_Z(0, {SIGMA2}) is {SIGMA2} to within 1e-800)",
        f"- Store deleted afterwards: {r['gone']}",
    ]
    return lines


def scaling_report(r: dict, repeat: int) -> list[str]:
    m, times, used = r["m"], r["times"], r["used"]
    best = {k: min(v) for k, v in times.items()}
    lines = [
        f"## Scaling: {m:.3g} samples, sigma2={SIGMA2}, chunks of {r['chunk']:.3g}, summed",
        "",
        f"Best of {repeat} runs each (after a warm-up; the three take turns). Dask: "
        f"`sample_gaussian({SIGMA2}, {m}, chunks={r['chunk']}).sum()` computed on the "
        "cluster (one scalar to the driver). Baseline: `dgauss.sample_gaussian"
        f"({SIGMA2}, size={r['chunk']}).sum()` in a loop in the driver, no Dask.",
        "",
        "| setup | best s | samples/s | vs baseline | all runs (s) | worker CPU / wall "
        "(best run) | driver CPU s (best run) | other processes, cores (best run) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in ("baseline", "1 worker", "2 workers"):
        i = times[key].index(best[key])
        w, d, tree, busy = used[key][i]
        util = "-" if key == "baseline" else f"{w / best[key]:.2f} cores"
        other = (busy - tree) / best[key]
        lines.append(
            f"| {key} | {best[key]:.2f} | {rate(m, best[key])} | "
            f"{best['baseline'] / best[key]:.3f}x | "
            f"{', '.join(f'{t:.2f}' for t in times[key])} | {util} | {d:.2f} | {other:.2f} |"
        )
    others = [(u[3] - u[2]) / t for k in times for u, t in zip(used[k], times[k], strict=True)]
    ratio = best["1 worker"] / best["2 workers"]
    lines += [
        "",
        f"- **2 workers / 1 worker: {ratio:.3f}x** (target >= 1.8x: "
        f"{'met' if ratio >= 1.8 else 'NOT met'}); 2 workers / baseline: "
        f"{best['baseline'] / best['2 workers']:.3f}x; Dask overhead on 1 worker: "
        f"{100 * (best['1 worker'] / best['baseline'] - 1):+.1f}% time against the baseline",
        f"- CPU taken by other processes on the machine during the {len(others)} timed runs: "
        f"{min(others):.2f} to {max(others):.2f} cores on average per run",
    ]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=float, default=1e9, help="samples written to Zarr (1e9)")
    parser.add_argument("--chunk", type=float, default=1e7, help="elements per chunk (1e7)")
    parser.add_argument("--scaling-n", type=float, default=4e8, help="samples per scaling run")
    parser.add_argument("--repeat", type=int, default=3, help="timed scaling runs (best of)")
    parser.add_argument("--memory-limit", default="4GiB", help="per worker process (4GiB)")
    parser.add_argument("--dir", default="/tmp", help="where the Zarr store goes (/tmp)")
    parser.add_argument("--quick", action="store_true", help="n=2e7, chunk=1e6, scaling 2e7")
    parser.add_argument("--no-zarr", action="store_true", help="skip the Zarr run")
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling run")
    parser.add_argument("--out", default=str(RESULTS / "bench_dask.md"), help="report file")
    args = parser.parse_args(argv)
    logging.getLogger("distributed").setLevel(logging.WARNING)  # no INFO lines on stderr
    # with the dashboard off, each scheduler still serves /health on 8787 or, taken, another port
    warnings.filterwarnings("ignore", message="Port 8787 is already in use")
    if args.quick:
        args.n, args.chunk, args.scaling_n = 2e7, 1e6, 2e7
    n, chunk, m = int(args.n), int(args.chunk), int(args.scaling_n)

    load = os.getloadavg()
    began = time.perf_counter()
    lines = [
        "# dgauss.dask on a local distributed cluster",
        "",
        f"Command: `{shlex.join(['python', *sys.argv])}`",
        "",
        *machine(),
        f"- Load average before the run (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, "
        f"{load[2]:.2f}",
        f"- Worker memory limit: {args.memory_limit} per worker process",
        "",
    ]
    if not args.no_zarr:
        r = zarr_run(n, chunk, args.memory_limit, args.dir)
        lines += zarr_report(r, args.memory_limit) + [""]
        print(f"zarr: {r['wall']:.1f} s", file=sys.stderr, flush=True)
    if not args.no_scaling:
        r = scaling_run(m, chunk, args.repeat, args.memory_limit)
        lines += scaling_report(r, args.repeat) + [""]
    after = os.getloadavg()
    lines.append(
        f"Run took {time.perf_counter() - began:.0f} s; load average after: "
        f"{after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f}."
    )
    report = "\n".join(lines) + "\n"
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
