"""``dgauss tabulate`` on a large census-shaped CSV: the plain path (Python's csv) against the
pyarrow path (the tables extra), beside a pandas count of the same file.

    python benchmarks/bench_cli_tabulate.py --rows 1e7 --dir /tmp/tabbench

writes ``census.csv`` (pid, municipality, age, sex: 8,000 municipalities of lognormal sizes,
18 age groups, sex 1 or 2, 1 to 5 rows a person, in random order) unless it is there, then
runs each command once under ``/usr/bin/time -v`` (wall time, peak resident set):

- ``dgauss tabulate census.csv --by municipality,age,sex --key ... --person pid
  --max-rows 3 --rho 0.1 -o out.csv``, with pyarrow and with pyarrow hidden (a
  ``sitecustomize`` on a path of its own makes ``import pyarrow`` fail, as on a machine
  without the extra);
- ``python -c "import pandas; pandas.read_csv(...).groupby([...]).size()"``.

Each run is under ``timeout`` (``--timeout``, default 900 s).  Speed is the machine's: run it
when the cores are otherwise idle, and read the ratios.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

MUNICIPALITIES = 8000
AGES = 18


def write_census(path: str, rows: int, seed: int = 2026) -> None:
    """A census register of ``rows`` rows as CSV, written in chunks."""
    rng = np.random.default_rng(seed)
    sizes = rng.lognormal(7, 1.3, MUNICIPALITIES)
    weights = sizes / sizes.sum()
    per_person = rng.integers(1, 6, size=rows)  # 1..5 rows a person, cut at `rows`
    pid = np.repeat(np.arange(rows, dtype=np.int64), per_person)[:rows] * 7 + 100_000
    rng.shuffle(pid)
    chunk = 1_000_000
    tmp = path + ".part"
    with open(tmp, "w") as f:
        f.write("pid,municipality,age,sex\n")
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            m = rng.choice(MUNICIPALITIES, size=n, p=weights) + 1001
            a = rng.integers(0, AGES, size=n)
            s = rng.integers(1, 3, size=n)
            block = np.column_stack([pid[start : start + n], m, a, s])
            np.savetxt(f, block, fmt="%d", delimiter=",")
    os.replace(tmp, path)


def timed(command: list[str], env: dict[str, str], timeout: int) -> tuple[float, float, int]:
    """(wall s, peak RSS MiB, exit status) of one run under /usr/bin/time -v."""
    full = ["timeout", str(timeout), "/usr/bin/time", "-v", *command]
    start = time.perf_counter()
    done = subprocess.run(full, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return wall, (int(peak.group(1)) / 1024 if peak else float("nan")), done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--only", choices=("pyarrow", "plain", "pandas"), action="append")
    args = parser.parse_args()
    rows = int(args.rows)
    path = os.path.join(args.dir, f"census-{rows}.csv")
    if not os.path.exists(path):
        t = time.perf_counter()
        write_census(path, rows)
        print(
            f"wrote {path}: {os.path.getsize(path) / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s"
        )
    hide = os.path.join(args.dir, "no-pyarrow")
    os.makedirs(hide, exist_ok=True)
    with open(os.path.join(hide, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.modules['pyarrow'] = None\n")
    municipalities = ",".join(str(m) for m in range(1001, 1001 + MUNICIPALITIES))
    out = os.path.join(args.dir, "out.csv")
    ages = ",".join(map(str, range(AGES)))
    tabulate = [
        sys.executable, "-m", "dgauss", "tabulate", path, "--by", "municipality,age,sex",
        "--key", f"municipality={municipalities}", "--key", f"age={ages}",
        "--key", "sex=1,2", "--person", "pid", "--max-rows", "3", "--rho", "0.1", "-o", out,
    ]  # fmt: skip
    pandas = [
        sys.executable, "-c",
        f"import pandas; pandas.read_csv({path!r}).groupby(['municipality', 'age', 'sex']).size()",
    ]  # fmt: skip
    env = dict(os.environ)
    plain_env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [hide, env.get("PYTHONPATH")])))
    runs = {
        "pyarrow": (tabulate, env),
        "plain": (tabulate, plain_env),
        "pandas": (pandas, env),
    }
    print(f"{rows:,} rows, {os.path.getsize(path) / 1e6:.0f} MB; tabulate command:")
    print(" ".join(tabulate[2:6]) + " ... --person pid --max-rows 3 --rho 0.1 -o out.csv")
    print("| run | wall s | peak RSS MiB | status |")
    for name in args.only or list(runs):
        command, environment = runs[name]
        wall, peak, status = timed(command, environment, args.timeout)
        print(f"| {name} | {wall:.1f} | {peak:,.0f} | {status} |", flush=True)


if __name__ == "__main__":
    main()
