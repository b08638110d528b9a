"""The lane loop's own cost: enveloped inversion's fused step alone, in C, on 1, 2 and 4 lanes.

Run from a checkout (it compiles ``benchmarks/lane_loop.c`` against ``csrc/`` with ``cc``
and GMP, and takes the tables from an installed or built dgauss)::

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
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import subprocess
import sys
import tempfile
from fractions import Fraction

import numpy as np

from dgauss import _core

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = [
    ("gaussian", 10**8, "10^8"),
    ("gaussian", 10**12, "10^12"),
    ("gaussian", 10**20, "10^20"),
    ("gaussian", 2**100, "2^100"),
    ("laplace", 10**8, "10^8"),
    ("laplace", 2**40, "2^40"),
]
SOURCES = [
    "benchmarks/lane_loop.c",
    "csrc/dg_inv.c",
    "csrc/dg_exp.c",
    "csrc/dg_prim.c",
    "csrc/dg_rng.c",
]


def build(where: pathlib.Path) -> pathlib.Path:
    """lane_loop compiled as dgauss's hot loops are (DG_FILL_CLONES: x86-64-v3 where the
    CPU has it)."""
    program = where / "lane_loop"
    subprocess.run(
        [
            "cc",
            "-O3",
            "-std=gnu11",
            f"-I{ROOT / 'csrc'}",
            *(str(ROOT / s) for s in SOURCES),
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
    return int(table.guide_bits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--guides", type=int, nargs="+", help="the guide's bits to time (default: dgauss's, 13)"
    )
    args = parser.parse_args()
    print("| case | guide bits | 1 lane | 2 lanes | 4 lanes | 2 ÷ 4 |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        program = build(pathlib.Path(tmp))
        for kind, param, label in CASES:
            where = pathlib.Path(tmp) / f"{kind}-{param}"
            dgauss_guide = write_tables(kind, param, where)
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
        f"\nns a sample, the best of 25 rounds in turns; {platform.machine()}, "
        f"`{' '.join(['python', *sys.argv])}`"
    )


if __name__ == "__main__":
    main()
