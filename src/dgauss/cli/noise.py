"""``dgauss noise``: release integer columns of a CSV file (or a .npy array) with noise."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass

import numpy as np

import dgauss
from dgauss import _params, accounting
from dgauss._rounding import _delta_text, _rounded_up
from dgauss.cli import _tables
from dgauss.cli._common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Progress,
    _approx,
    _one_line_errors,
    _rho_text,
)
from dgauss.cli._io import _atomic, _suffix

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


class InputError(Exception):
    """A problem with the input file: reported in one line, exit status 1."""


def _add_noise(commands: argparse._SubParsersAction) -> None:
    noise = commands.add_parser(
        "noise",
        help="release counts with exact noise: a CSV column (or a .npy array) in, noisy out",
        description="Add discrete Gaussian (default) or discrete Laplace (--laplace) noise "
        "to integer counts: the named --column(s) of a CSV file with a header (the other "
        "columns are kept as they are), or a .npy integer array. Set the noise in "
        "exactly one way: --sigma2, --rho or --epsilon with --delta for the Gaussian; "
        "--scale or --epsilon [--delta] with --laplace. The guarantee (as rho and as "
        "(eps, delta)) and the 95% error bars go to stderr; the data to -o (.csv or "
        ".npy, written whole or not at all) or to stdout as CSV. The noise comes from "
        "the operating system's CSPRNG.",
    )
    noise.set_defaults(command=run_noise)
    noise.add_argument("input", metavar="INPUT", help="a .csv file with a header, or a .npy file")
    noise.add_argument(
        "--no-progress",
        action="store_true",
        help=f"no progress bar (shown only when stderr is a terminal and the input is over "
        f"{PROGRESS_BYTES // 2**20} MiB)",
    )
    noise.add_argument(
        "--delimiter",
        type=_delimiter_option,
        metavar="D",
        help="the CSV delimiter, one character (\\t for tab); default: sniffed from the "
        "header among , ; tab | (the output uses the same)",
    )
    noise.add_argument(
        "--column",
        action="append",
        metavar="NAME",
        help="a CSV column of integers to noise (repeat for several; required for CSV)",
    )
    noise.add_argument("--laplace", action="store_true", help="discrete Laplace noise")
    noise.add_argument("--sigma2", metavar="S", help="Gaussian: the variance parameter")
    noise.add_argument("--rho", metavar="R", help="Gaussian: a zCDP target rho > 0")
    noise.add_argument("--scale", metavar="T", help="Laplace: the scale t > 0")
    noise.add_argument("--epsilon", "--eps", metavar="E", help="an (eps, delta) target: eps > 0")
    noise.add_argument(
        "--delta", metavar="D", help="with --epsilon: 0 < D < 1 (Laplace: default 0, pure DP)"
    )
    noise.add_argument(
        "--accounting",
        choices=("exact", "zcdp"),
        default="exact",
        help="Gaussian with --epsilon: calibrate by exact accounting (default) or by zCDP",
    )
    noise.add_argument(
        "--sensitivity",
        default="1",
        metavar="N",
        help="one person's effect on all the noised values together: a positive int, "
        "l2 for the Gaussian, l1 for the Laplace (default 1)",
    )
    noise.add_argument(
        "--clip-min", metavar="LO", help="clip the noisy values below at LO, e.g. 0 for counts"
    )
    noise.add_argument("-o", "--output", metavar="PATH", help="write here (.csv or .npy)")
    _one_line_errors(noise)


def run_noise(args: argparse.Namespace) -> int:
    """Carry out ``dgauss noise``; see :func:`main` for the exit status."""
    try:
        mech = _noise_mechanism(args)
        clip = (
            None
            if args.clip_min is None
            else (_params.integer(args.clip_min.strip(), "--clip-min"), None)
        )
        _check_noise_output(args)
    except (ValueError, TypeError) as exc:
        print(f"dgauss noise: error: {_noise_option_message(exc)}", file=sys.stderr)
        return EXIT_USAGE
    steps = _Steps(args)
    try:
        try:
            table = _read_noise_input(args, steps)
            steps.at(1, 0, f"noising {table.count:,} values")
            released = table.noised(mech, clip)
            steps.at(2, 0, "writing")
            _write_noise_output(args, released, steps)
        finally:
            steps.close()  # the bar's line ends before any message
    except InputError as exc:
        print(f"dgauss noise: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("dgauss noise: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    for line in _noise_report(mech, args, table.count):
        print(line, file=sys.stderr)
    return 0


#: An input file above this size gets a progress bar (on a terminal): about a second's work.
PROGRESS_BYTES = 16 * 2**20

#: Rows read or written between two redraws of the bar.
PROGRESS_ROWS = 1 << 16


class _Steps:
    """The progress of ``dgauss noise`` over its three steps, reading, noising and writing,
    each a third of the bar (reading and writing advance row by row)."""

    def __init__(self, args: argparse.Namespace) -> None:
        big = os.path.isfile(args.input) and os.path.getsize(args.input) > PROGRESS_BYTES
        self.bar = Progress(3 * 1000, enabled=big and not args.no_progress and sys.stderr.isatty())
        self.start = time.perf_counter()

    def at(self, step: int, fraction: float, note: str) -> None:
        """Step ``step`` (0, 1, 2) is ``fraction`` done."""
        done = 1000 * step + int(1000 * min(max(fraction, 0.0), 1.0))
        self.bar.update(done, time.perf_counter() - self.start, note)

    def close(self) -> None:
        self.bar.close()


def _noise_option_message(exc: Exception) -> str:
    text = str(exc)
    for name, option in (
        ("sigma2", "--sigma2"),
        ("rho", "--rho"),
        ("scale", "--scale"),
        ("eps", "--epsilon"),
        ("epsilon", "--epsilon"),
        ("delta", "--delta"),
        ("sensitivity", "--sensitivity"),
    ):
        text = (
            re.sub(rf"\b{name}=?(?=\b)", option, text, count=1) if text.startswith(name) else text
        )
    return text


def _noise_mechanism(args: argparse.Namespace):
    sens = _params.integer(args.sensitivity.strip(), "--sensitivity")
    if sens < 1:
        raise ValueError(f"--sensitivity must be a positive integer, got {args.sensitivity!r}")
    if args.laplace:
        if args.sigma2 is not None or args.rho is not None:
            raise ValueError(
                "--sigma2 and --rho set Gaussian noise; with --laplace use --scale or --epsilon"
            )
        if (args.scale is None) == (args.epsilon is None):
            raise ValueError(
                "with --laplace, set the noise in exactly one way: --scale or --epsilon [--delta]"
            )
        if args.scale is not None:
            if args.delta is not None:
                raise ValueError("--delta goes with --epsilon, not with --scale")
            return dgauss.LaplaceMechanism(scale=args.scale.strip(), sensitivity=sens)
        delta = "0" if args.delta is None else args.delta.strip()
        return dgauss.LaplaceMechanism(epsilon=args.epsilon.strip(), delta=delta, sensitivity=sens)
    if args.scale is not None:
        raise ValueError("--scale sets Laplace noise: add --laplace, or use --sigma2")
    given = [
        o
        for o, v in (("--sigma2", args.sigma2), ("--rho", args.rho), ("--epsilon", args.epsilon))
        if v is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "set the noise in exactly one way: --sigma2, --rho, or --epsilon with "
            "--delta" + (f" (got {', '.join(given)})" if given else "")
        )
    if args.delta is not None and args.epsilon is None:
        raise ValueError("--delta goes with --epsilon")
    if args.epsilon is not None and args.delta is None:
        raise ValueError(
            "--epsilon needs --delta (0 < D < 1) for the Gaussian; for pure eps-DP use --laplace"
        )
    return dgauss.GaussianMechanism(
        sigma2=None if args.sigma2 is None else args.sigma2.strip(),
        rho=None if args.rho is None else args.rho.strip(),
        epsilon=None if args.epsilon is None else args.epsilon.strip(),
        delta=None if args.delta is None else args.delta.strip(),
        sensitivity=sens,
        accounting=args.accounting,
    )


def _check_noise_output(args: argparse.Namespace) -> None:
    if args.output is not None and _suffix(args.output) not in (".csv", ".npy", ".parquet"):
        raise ValueError(f"-o must end in .csv, .npy or .parquet, got {args.output!r}")
    _tables.check_options(args)
    is_npy = _suffix(args.input) == ".npy"
    if is_npy and args.column:
        raise ValueError("--column is for CSV input; a .npy input is noised whole")
    if not is_npy and not args.column:
        raise ValueError("name the CSV column(s) to noise with --column")


@dataclass
class _NoiseTable:
    """The input: a CSV (header, rows of strings, the noised columns' indices) or an array."""

    header: list[str] | None
    rows: list[list[str]] | None
    columns: list[int]
    array: np.ndarray | None

    @property
    def count(self) -> int:
        if self.array is not None:
            return int(self.array.size)
        assert self.rows is not None
        return len(self.rows) * len(self.columns)

    def noised(self, mech, clip) -> _NoiseTable:
        if self.array is not None:
            return _NoiseTable(None, None, [], mech(self.array, clip=clip, overflow="object"))
        assert self.rows is not None
        values = [int(row[j]) for row in self.rows for j in self.columns]
        noisy = mech(np.array(values, dtype=object), clip=clip, overflow="object")
        rows = [list(row) for row in self.rows]
        it = iter(noisy.tolist())
        for row in rows:
            for j in self.columns:
                row[j] = str(next(it))
        return _NoiseTable(self.header, rows, self.columns, None)


#: The delimiters a CSV header is sniffed for, in order of preference on a tie.
_DELIMITERS = (",", ";", "\t", "|")


def _delimiter(given: str | None, header_line: str) -> str:
    """The --delimiter (one character; ``\\t`` for tab), or the one of , ; tab | that the
    header line uses most (outside quotes), ``,`` when it has none."""
    if given is not None:
        return given
    unquoted = re.sub(r'"[^"]*"', "", header_line)
    counts = [(unquoted.count(d), -i, d) for i, d in enumerate(_DELIMITERS)]
    best = max(counts)
    return best[2] if best[0] > 0 else ","


def _delimiter_option(text: str) -> str:
    value = "\t" if text in ("\\t", "tab", "TAB") else text
    if len(value) != 1 or value in '"\r\n':
        raise argparse.ArgumentTypeError(
            f"must be one character (\\t for tab), not a quote or newline, got {text!r}"
        )
    return value


def _read_noise_input(args: argparse.Namespace, steps: _Steps) -> _NoiseTable | _tables.ArrowTable:
    import csv

    path = args.input
    if not os.path.isfile(path):
        raise InputError(f"no such file: {path}")
    fast = _tables.read(args, steps)  # Parquet, or a CSV pyarrow reads as csv would; or None
    if fast is not None:
        return fast
    if _suffix(path) == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InputError(f"{path} is not a readable .npy array: {exc}") from None
        if array.dtype.kind not in "iu":
            raise InputError(f"{path} holds {array.dtype} values; counts must be integers")
        return _NoiseTable(None, None, [], array)
    try:
        # utf-8-sig: a byte-order mark (Excel's, many offices') is not part of the first name
        steps.at(0, 0, f"reading {os.path.basename(path)}")
        with open(path, newline="", encoding="utf-8-sig") as f:
            first = f.readline()
            delimiter = _delimiter(args.delimiter, first)
            f.seek(0)  # the utf-8-sig decoder drops the mark again after a seek to 0
            reader = csv.reader(f, delimiter=delimiter)
            header = next(reader, None)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read {path} as CSV: {exc}") from None
    args.delimiter = delimiter  # the output uses the input's
    if not header:
        raise InputError(f"{path} is empty: a CSV file needs a header row")
    names = [h.strip() for h in header]
    columns = []
    for name in args.column:
        if name not in names:
            raise InputError(f"no column {name!r} in {path}; its columns are: {', '.join(names)}")
        columns.append(names.index(name))
    steps.at(0, 0.5, f"checking {len(rows):,} rows")
    for number, row in enumerate(rows, start=2):
        if number % PROGRESS_ROWS == 0:
            steps.at(0, 0.5 + number / len(rows) / 2, f"checking {len(rows):,} rows")
        if len(row) != len(header):
            raise InputError(
                f"{path}, line {number}: {len(row)} fields where the header has {len(header)}"
            )
        for j in columns:
            cell = row[j].strip()
            if not _INTEGER.match(cell):
                raise InputError(
                    f"{path}, line {number}, column {names[j]!r}: {row[j]!r} is not an integer "
                    "(counts are never rounded)"
                )
            row[j] = cell
    if not rows:
        raise InputError(f"{path} has a header but no rows")
    return _NoiseTable(header, rows, columns, None)


def _noise_report(mech, args: argparse.Namespace, count: int) -> list[str]:
    delta = "1e-6" if args.delta is None or args.laplace else args.delta.strip()
    if isinstance(mech, dgauss.GaussianMechanism):
        lines = [
            f"dgauss noise: N_Z(0, sigma2) on {count} values, sigma2 = {_approx(mech.sigma2)}"
            f", sensitivity {mech.sensitivity}",
            f"  zCDP: rho = {_rho_text(mech.rho)}",
            f"  (eps, delta): eps = {_rounded_up(mech.epsilon(delta))} at delta = {delta}",
        ]
        if args.epsilon is not None:
            eps = args.epsilon.strip()
            at = _delta_text(accounting.gaussian_delta, mech.sigma2, eps, mech.sensitivity)
            lines.append(f"  delta = {at} at eps = {eps}")
    else:
        lines = [
            f"dgauss noise: Lap_Z(scale) on {count} values, scale = {_approx(mech.scale)}"
            f", sensitivity {mech.sensitivity}",
            f"  pure eps = {_rounded_up(mech.epsilon())}; zCDP: rho = {_rho_text(mech.rho)}",
        ]
        if args.delta not in (None, "0"):
            lines.append(
                f"  eps = {_rounded_up(mech.epsilon(args.delta.strip()))} at delta = {args.delta}"
            )
    lo, hi = mech.interval(0.05)
    lines.append(f"  95% error bars: each released value is within +-{hi} of the truth")
    if args.clip_min is not None:
        lines.append(f"  clipped below at {args.clip_min} (post-processing)")
    return lines


def _write_noise_output(
    args: argparse.Namespace, table: _NoiseTable | _tables.ArrowTable, steps: _Steps
) -> None:
    import csv
    import io

    path = args.output
    if isinstance(table, _tables.ArrowTable):
        table.write(args, steps)
        return
    if path is not None and _suffix(path) == ".parquet":
        _tables.write_plain_parquet(path, table.header, table.rows, table.columns, table.array)
        return
    if path is not None and _suffix(path) == ".npy":
        array = table.array
        if array is None:
            assert table.rows is not None
            array = np.array([[row[j] for j in table.columns] for row in table.rows], dtype=object)
            array = np.array([[int(v) for v in r] for r in array.tolist()], dtype=object)
            if len(table.columns) == 1:
                array = array[:, 0]
        if array.dtype == object:
            if not all(-(2**63) <= int(v) < 2**63 for v in array.ravel()):
                raise InputError("a released value does not fit int64; write .csv instead")
            array = array.astype(np.int64)
        _atomic(path, "wb", lambda f: np.save(f, array, allow_pickle=False))
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", delimiter=args.delimiter or ",")
    if table.array is not None:
        writer.writerow(["value"])
        writer.writerows([v] for v in table.array.ravel().tolist())
    else:
        assert table.header is not None and table.rows is not None
        writer.writerow(table.header)
        for i in range(0, len(table.rows), PROGRESS_ROWS):
            writer.writerows(table.rows[i : i + PROGRESS_ROWS])
            steps.at(2, (i + PROGRESS_ROWS) / len(table.rows), "writing")
    text = buffer.getvalue()
    if path is None:
        sys.stdout.write(text)
    else:
        _atomic(path, "w", lambda f: f.write(text))
