"""``dgauss noise`` on a large table: time and peak memory, plain path against pyarrow's.

Makes a CSV of ``--rows`` rows (default 10^6; columns region, age band, sex and a count),
once with ``,`` and once with ``;`` and a UTF-8 byte-order mark, and the same table as
Parquet, then times ``dgauss noise FILE --column count --sigma2 100 -o OUT`` (one run each):

* **command**: the command in a child process, as a user runs it: its wall time, interpreter
  start and imports included;
* **main()**: in another child, after the imports and a warm-up run on a 1000-row file of the
  same kind (pyarrow's code is paged in on first use), the CLI's ``main`` on the file: its
  time and CPU time (user + system: less disturbed by other jobs on the machine), its peak
  resident memory (Linux's VmHWM) and that peak less the resident memory before it (the
  work's own memory), also as a multiple of the input file's size;
* **in-process**: ``dgauss.cli.main`` called in this process (imports done), its time.

``plain`` runs the command with pyarrow made unimportable (``sys.modules["pyarrow"] = None``),
which is what a machine without the ``tables`` extra runs; ``pyarrow`` runs it as installed.
Prints a Markdown table.

    python benchmarks/bench_tables_io.py [--rows 1000000] [--paths plain,pyarrow]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's idle BLAS threads spin otherwise

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

#: The child: imports, a warm-up run on a small file of the same kind (pyarrow's code is paged
#: in on first use), then the CLI's main on the file, timed; its resident memory before and
#: its peak during that run (Linux: /proc/self/status's VmRSS, and VmHWM after resetting it),
#: as JSON.
CHILD = """
import contextlib, io, json, resource, sys, time
if {plain}:
    sys.modules["pyarrow"] = None  # unimportable: the plain path
import dgauss, dgauss.cli
if not {plain}:
    import pyarrow, pyarrow.csv, pyarrow.compute, pyarrow.parquet

def status(field):  # kB, from /proc (ru_maxrss would count the parent's memory at the fork)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))

with contextlib.redirect_stderr(io.StringIO()):
    assert dgauss.cli.main({warmup!r}) == 0
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM := VmRSS
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

start, cpu_start = time.perf_counter(), cpu()
code = dgauss.cli.main({argv!r})
seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu_start
after = status("VmHWM:")
print(json.dumps(dict(status=code, seconds=seconds, cpu=cpu_seconds, before=before, after=after)),
      file=open({report!r}, "w"))
sys.exit(code)
"""

REGIONS = ["Piemonte", "Valle d'Aosta", "Lombardia", "Trentino-Alto Adige", "Veneto", "Lazio"]


def make_table(rows: int, seed: int = 1) -> dict[str, np.ndarray]:
    """The table's columns: strings (one region holds an apostrophe, none a delimiter) and
    int64 counts from 0 to 10^6."""
    rng = np.random.default_rng(seed)
    ages = np.array([f"{a}-{a + 4}" for a in range(0, 100, 5)])
    return {
        "region": np.array(REGIONS)[rng.integers(0, len(REGIONS), rows)],
        "age": ages[rng.integers(0, len(ages), rows)],
        "sex": np.array(["F", "M"])[rng.integers(0, 2, rows)],
        "count": rng.integers(0, 10**6, rows),
    }


def write_csv(path: str, table: dict[str, np.ndarray], delimiter: str, bom: bool) -> None:
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as f:
        f.write(delimiter.join(table) + "\n")
        columns = [table[name].astype(str) for name in table]
        for i in range(0, len(columns[0]), 1 << 16):
            rows = zip(*(c[i : i + (1 << 16)] for c in columns), strict=True)
            f.write("".join(delimiter.join(row) + "\n" for row in rows))


def write_parquet(path: str, table: dict[str, np.ndarray]) -> bool:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    pq.write_table(pa.table({k: pa.array(v) for k, v in table.items()}), path)
    return True


#: The command as a user runs it (with pyarrow unimportable for the plain path).
COMMAND = """
import sys
if {plain}:
    sys.modules["pyarrow"] = None
from dgauss.cli import main
sys.exit(main({argv!r}))
"""


def wall(argv: list[str], plain: bool) -> float:
    """Seconds the command takes in a child process, start to end."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", COMMAND.format(plain=plain, argv=argv)], capture_output=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}): {done.stderr.decode()}")
    return seconds


def command(argv: list[str], warmup: list[str], plain: bool, folder: str) -> dict:
    report = os.path.join(folder, "report.json")
    code = CHILD.format(plain=plain, argv=argv, warmup=warmup, report=report)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}): {done.stderr}")
    with open(report) as f:
        return json.load(f)


def in_process(argv: list[str], plain: bool) -> float:
    import contextlib
    import io

    import dgauss.cli
    from dgauss.cli import _tables

    saved = sys.modules.get("pyarrow", "absent")
    if plain:
        sys.modules["pyarrow"] = None  # type: ignore[assignment]
    _tables._arrow.cache_clear()  # found anew: a plain run's "no pyarrow" is not kept
    try:
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            status = dgauss.cli.main(argv)
        seconds = time.perf_counter() - start
    finally:
        if saved == "absent":
            sys.modules.pop("pyarrow", None)
        else:
            sys.modules["pyarrow"] = saved  # type: ignore[assignment]
        _tables._arrow.cache_clear()
    assert status == 0, argv
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--paths", default="plain,pyarrow")
    args = parser.parse_args(argv)
    rows = int(args.rows)
    if rows != args.rows or rows < 1:
        parser.error(f"--rows must be a positive integer, got {args.rows}")
    paths = args.paths.split(",")
    table = make_table(rows)
    small = {name: column[:1000] for name, column in table.items()}
    with tempfile.TemporaryDirectory() as folder:
        inputs = []
        for name, delimiter, bom in (("comma.csv", ",", False), ("semicolon-bom.csv", ";", True)):
            path = os.path.join(folder, name)
            write_csv(path, table, delimiter, bom)
            write_csv(os.path.join(folder, "small-" + name), small, delimiter, bom)
            inputs.append((name, path, ".csv"))
        parquet = os.path.join(folder, "table.parquet")
        if write_parquet(parquet, table):
            write_parquet(os.path.join(folder, "small-table.parquet"), small)
            inputs.append(("table.parquet", parquet, ".parquet"))
        del table  # the children's peaks are their own; the parent's stays small
        print(f"{rows:,} rows, `dgauss noise FILE --column count --sigma2 100 -o OUT`, one run")
        print()
        print(
            "| input | MB | path | command s | main() s | main() CPU s | in-process s | peak MB "
            "| peak - before MB | (peak - before) / file |"
        )
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, path, suffix in inputs:
            size = os.path.getsize(path)
            for which in paths:
                plain = which == "plain"
                if plain and suffix == ".parquet":
                    continue  # Parquet needs pyarrow
                out = os.path.join(folder, "out" + suffix)
                cli = ["noise", path, "--column", "count", "--sigma2", "100", "-o", out]
                warmup = [*cli[:1], os.path.join(folder, "small-" + name), *cli[2:]]
                try:
                    seconds = wall(cli, plain)
                    child = command(cli, warmup, plain, folder)
                except RuntimeError as exc:
                    print(f"| {name} | {size / 1e6:.1f} | {which} | failed: {exc} |")
                    continue
                inside = in_process(cli, plain)
                peak = child["after"] * 1024
                work = (child["after"] - child["before"]) * 1024  # kB
                print(
                    f"| {name} | {size / 1e6:.1f} | {which} | {seconds:.2f} "
                    f"| {child['seconds']:.2f} | {child['cpu']:.2f} | {inside:.2f} "
                    f"| {peak / 1e6:.0f} "
                    f"| {work / 1e6:.0f} | {work / size:.2f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
