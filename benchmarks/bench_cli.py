"""The rate ``dgauss sample`` prints against the same draw in-process, one run.

For each case, in turns (so that load on a shared machine slows both alike): the command
``python -m dgauss sample ... -n N`` in a subprocess (the rate it prints: samples over the
time spent in the sampler) and, in this process, the same chunks of 2^20 drawn by
``dgauss.sample_gaussian``/``sample_laplace`` (samples over the time of the calls).  Prints
the best of ``--rounds`` for each and their ratio; issue 34 asks for the printed rate within
10% of the in-process one.

    python3 benchmarks/bench_cli.py [--rounds 5] [-n 10000000]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

import dgauss

CHUNK = 1 << 20
CASES = [("--sigma2", "100"), ("--sigma2", "1000000"), ("--laplace", "10")]


def printed_rate(option: str, value: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "dgauss", "sample", option, value, "-n", str(n)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.search(r"([\d.]+) million samples/s", out)
    assert found, out
    return float(found.group(1))


def in_process_rate(option: str, value: str, n: int) -> float:
    draw = dgauss.sample_gaussian if option == "--sigma2" else dgauss.sample_laplace
    draw(value, size=1)  # the table, built once as the command builds it
    spent = 0.0
    left = n
    while left:
        size = min(CHUNK, left)
        start = time.perf_counter()
        draw(value, size=size)
        spent += time.perf_counter() - start
        left -= size
    return n / spent / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=10_000_000)
    args = parser.parse_args(argv)
    print("| case | dgauss sample prints (M/s) | in-process (M/s) | printed / in-process |")
    print("|---|---:|---:|---:|")
    for option, value in CASES:
        printed, inside = 0.0, 0.0
        for _ in range(args.rounds):
            printed = max(printed, printed_rate(option, value, args.n))
            inside = max(inside, in_process_rate(option, value, args.n))
        print(f"| {option} {value} | {printed:.1f} | {inside:.1f} | {printed / inside:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
