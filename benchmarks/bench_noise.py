"""Noising an array of counts against drawing the same noise alone: time and memory.

    python benchmarks/bench_noise.py            # 10**8 int64 counts, a few minutes
    python benchmarks/bench_noise.py --n 1e7    # smaller

For each case, in one run: the best of ``--repeat`` calls of ``dgauss.sample_gaussian``
(or ``sample_laplace``) for n samples, and of the mechanism noising n int64 counts (the noise
drawn into the output, then an exact int64 range check and an in-place add); their ratio.
Memory: each measured in a fresh process, the peak resident memory above the process's
memory once the counts exist (VmHWM, Linux), so the output array itself, 8n bytes, is the
floor.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import dgauss  # noqa: E402

CASES = [
    ("gaussian sigma2=100", "gaussian", 100),
    ("gaussian rho=0.5", "gaussian", 1),
    ("laplace scale=10", "laplace", 10),
]

MEMORY_CHILD = """
import json, sys
import numpy as np
import dgauss

def kib(field):  # VmHWM: this process's peak resident memory (ru_maxrss would count the parent's)
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

what, kind, param, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
counts = np.full(n, 7, dtype=np.int64)  # no temporaries: the peak so far is the present
before = kib("VmHWM")
if what == "sample":
    out = (dgauss.sample_gaussian if kind == "gaussian" else dgauss.sample_laplace)(param, n)
elif kind == "gaussian":
    out = dgauss.GaussianMechanism(sigma2=param)(counts)
else:
    out = dgauss.LaplaceMechanism(scale=param)(counts)
print(json.dumps({"extra_mib": (kib("VmHWM") - before) / 1024}))
"""


def best_of(call, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
        del result
    return best


def memory(what: str, kind: str, param: int, n: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, what, kind, str(param), str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)["extra_mib"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=float, default=1e8, help="counts per call (default 1e8)")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per case (best)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    args = parser.parse_args(argv)
    n = int(args.n)
    counts = np.random.default_rng(0).integers(0, 1000, n, dtype=np.int64)
    rows = []
    for label, kind, param in CASES:
        if kind == "gaussian":
            sample = lambda p=param: dgauss.sample_gaussian(p, n)  # noqa: E731
            make = dgauss.GaussianMechanism  # a new one per call: one release each
            kwargs = {"sigma2": param}
        else:
            sample = lambda p=param: dgauss.sample_laplace(p, n)  # noqa: E731
            make = dgauss.LaplaceMechanism
            kwargs = {"scale": param}
        # in turns, so that drift of the machine hits both alike
        t_sample = t_noise = float("inf")
        for _ in range(args.repeat):
            t_sample = min(t_sample, best_of(sample, 1))
            t_noise = min(t_noise, best_of(lambda m=make, k=kwargs: m(**k)(counts), 1))
        row = {
            "case": label,
            "n": n,
            "sample_s": round(t_sample, 3),
            "noise_s": round(t_noise, 3),
            "noise/sample": round(t_noise / t_sample, 3),
        }
        if not args.no_memory:
            row["sample_extra_mib"] = round(memory("sample", kind, param, n))
            row["noise_extra_mib"] = round(memory("noise", kind, param, n))
            row["output_mib"] = round(8 * n / 2**20)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in head) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
