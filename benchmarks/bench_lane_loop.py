"""The lane loop's own cost: enveloped inversion's fused step alone, in C, on 1, 2 and 4 lanes;
then the whole batch loop in C on one thread and two, beside dgauss's own call.

Run from a checkout (it compiles ``benchmarks/lane_loop.c`` and ``benchmarks/fill_threads.c``
against ``csrc/`` with ``cc`` and GMP, and takes the tables from an installed or built
dgauss)::

    python benchmarks/bench_lane_loop.py                  # about a minute
    python benchmarks/bench_lane_loop.py --guides 12 13 14

For each large parameter the sampler draws by enveloped inversion (σ² from 10^8 to 2^100,
Laplace scales 10^8 and 2^40) it writes the block index's words and J(b) as dgauss builds
them, then times ``dg_env_fused`` (csrc/dg_inv.h) on lanes of 16 KiB of OS bytes read
round and round, lanes drawn in turns as DG_INV_FILL's pair loop draws its two: what a
sample costs the CPU with no reading, no Python and no fallback around it (a step the fused
step cannot take, about one in 100, skips 64 bits here).  One lane is bound by the chain
from a sample's bit position to the next's (two loads in a row: R's words, then the guide
entry); more lanes overlap their chains until the instructions bound the loop.  It prints a
Markdown table of ns a sample, the best of 25 rounds taken in turns.

The second table times ``dg_env_fill``, the loop dgauss's batches run (two lanes, the
fused step, the rare draws by ``dg_env_attempts``, refills), on batches of 10^6 samples:
on one thread and split between two as dgauss splits a batch (each thread two lanes of
its own), each lane reading the OS in 16 KiB reads or, in the "no reading" columns,
copying OS bytes read once; beside it dgauss's call, ``sample_gaussian(σ², 10**6)`` (or
the Laplace's), the best of 9: what the package adds to the C.

The third table says what those costs allow against the OS floor (``bench.py --large``: the
rate at which one thread's reads of the OS deliver a sample's entropy in bits, measured here
in the same run).  On a machine of two CPUs a batch needs at least the CPU time of its
computing (the cheaper of one thread's and two threads' "no reading" columns, as CPU time)
plus that of reading its bits (at one reader's rate), shared by the two: the least wall time
a sample can take, and so the largest share of the floor this sampler can reach here,
beside the share dgauss's call reaches.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

import numpy as np

import dgauss
from bench import bits_per_sample, entropy_bits, os_source_rate
from dgauss import _core

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILL_SAMPLES = 10**6
CASES = [
    ("gaussian", 10**8, "10^8"),
    ("gaussian", 10**12, "10^12"),
    ("gaussian", 10**20, "10^20"),
    ("gaussian", 2**100, "2^100"),
    ("laplace", 10**8, "10^8"),
    ("laplace", 2**40, "2^40"),
]
LIBRARY = [
    "csrc/dg_inv.c",
    "csrc/dg_exp.c",
    "csrc/dg_prim.c",
    "csrc/dg_rng.c",
]


def build(where: pathlib.Path, name: str) -> pathlib.Path:
    """benchmarks/NAME.c compiled with csrc/ as dgauss's hot loops are (DG_FILL_CLONES:
    x86-64-v3 where the CPU has it)."""
    program = where / name
    subprocess.run(
        [
            "cc",
            "-O3",
            "-std=gnu11",
            f"-I{ROOT / 'csrc'}",
            str(ROOT / "benchmarks" / f"{name}.c"),
            *(str(ROOT / s) for s in LIBRARY),
            "-lgmp",
            "-ldl",
            "-pthread",
            "-o",
            str(program),
        ],
        check=True,
    )
    return program


def write_tables(kind: str, param: int, where: pathlib.Path) -> int:
    """The stage's words, J(b) and the meta line lane_loop.c reads, as dgauss builds them;
    returns dgauss's guide bits for them."""
    table = (_core.gauss_table if kind == "gaussian" else _core.laplace_table)(
        Fraction(param).numerator, Fraction(param).denominator
    )
    where.mkdir()
    gaussian = int(kind == "gaussian")
    (where / "meta").write_text(f"{table.count} {table.k} {gaussian}\n")
    np.asarray(table.thr, dtype="<u8").tofile(where / "thr")
    np.asarray(table.ones, dtype=np.uint8).tofile(where / "ones")
    cmul = int(table.cmul)
    (where / "cmul").write_text(f"{cmul >> 64} {cmul & (2**64 - 1)} {table.cshift}\n")
    return int(table.guide_bits)


def dgauss_call(kind: str, param: int, n: int, rounds: int = 9) -> float:
    """ns a sample of dgauss's own call on n samples from the OS (the default: split between
    two threads where a CPU is idle), the best of ``rounds``."""
    sample = dgauss.sample_gaussian if kind == "gaussian" else dgauss.sample_laplace
    best = math.inf
    for _ in range(rounds):
        start = time.perf_counter()
        sample(param, n)
        best = min(best, time.perf_counter() - start)
    return best / n * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--guides", type=int, nargs="+", help="the guide's bits to time (default: dgauss's, 13)"
    )
    args = parser.parse_args()
    print("| case | guide bits | 1 lane | 2 lanes | 4 lanes | 2 ÷ 4 |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        program = build(pathlib.Path(tmp), "lane_loop")
        fill = build(pathlib.Path(tmp), "fill_threads")
        guide_bits = {}
        for kind, param, label in CASES:
            where = pathlib.Path(tmp) / f"{kind}-{param}"
            dgauss_guide = write_tables(kind, param, where)
            guide_bits[kind, param] = dgauss_guide
            guides = args.guides or [dgauss_guide]
            result = subprocess.run(
                [str(program), str(where), *map(str, guides)],
                check=True,
                capture_output=True,
                text=True,
            )
            for line in result.stdout.splitlines():
                g, one, two, four = line.split()
                print(
                    f"| {kind} {label} | {g} | {one} | {two} | {four} | "
                    f"{float(two) / float(four):.2f} |",
                    flush=True,
                )
        print(
            "\n| case | 1 thread | 2 threads | 1 thread, no reading | 2 threads, no reading "
            "| dgauss's call |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        batches = {}
        for kind, param, label in CASES:
            where, n = pathlib.Path(tmp) / f"{kind}-{param}", FILL_SAMPLES
            cells = []
            for source in ("os", "pool"):
                result = subprocess.run(
                    [str(fill), str(where), str(guide_bits[kind, param]), str(n), source],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                cells += result.stdout.split()
            call = dgauss_call(kind, param, n)
            batches[kind, param] = [float(c) for c in cells] + [call]
            print(f"| {kind} {label} | {' | '.join(cells)} | {call:.2f} |", flush=True)
    print(
        f"\nns a sample: the lane loop's the best of 25 rounds in turns, the batches' (10^6"
        f" samples) the best of 9; {platform.machine()}, `{' '.join(['python', *sys.argv])}`"
    )
    bound_table(batches)


def bound_table(batches: dict[tuple[str, int], list[float]]) -> None:
    """The least wall time a sample takes on two CPUs from the costs measured above, and the
    share of the OS floor it allows (the module's docstring)."""
    rate = os_source_rate()  # bytes/s, one thread, 16 KiB reads
    print(
        f"\nThe OS source ({_core.os_reader()}) read {rate / 1e9:.2f} GB/s from one thread; ns a"
        " sample (CPU time for the computing and the reading):\n"
    )
    print(
        "| case | bits read (entropy) | floor | 80% of the floor | computing | reading "
        "| least on two CPUs | most share of the floor | dgauss's share |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, param, label in CASES:
        _, _, alone, two, call = batches[kind, param]
        entropy = entropy_bits(kind, Fraction(param))
        bits = bits_per_sample(kind, Fraction(param), 200_000)
        floor = entropy / 8 / rate * 1e9
        computing = min(alone, 2 * two)
        reading = bits / 8 / rate * 1e9
        least = (computing + reading) / 2
        print(
            f"| {kind} {label} | {bits:.1f} ({entropy:.1f}) | {floor:.2f} | {floor / 0.8:.2f} "
            f"| {computing:.2f} | {reading:.2f} | {least:.2f} | {floor / least:.0%} "
            f"| {floor / call:.0%} |"
        )


if __name__ == "__main__":
    main()
