"""``dgauss noise``: release integer columns of a CSV file (or a .npy array) with noise."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

import dgauss
from dgauss import _params, accounting
from dgauss._rounding import _delta_text, _rounded_up
from dgauss.cli import _ledger, _tables
from dgauss.cli._common import (
    Progress,
    _add_noise_setting,
    _approx,
    _integer_text,
    _mechanism,
    _one_line_errors,
    _positive_int,
    _rho_text,
    _write_stdout,
)
from dgauss.cli._csv import (
    InputError,
    _delimiter,
    _lattice_text,
    _one_column,
    write_csv_rows,
)
from dgauss.cli._io import Output, _atomic, _suffix, _write_npy
from dgauss.cli._release import Release, _release

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def _add_noise(commands: argparse._SubParsersAction) -> None:
    noise = commands.add_parser(
        "noise",
        help="release counts with exact noise: a CSV or Parquet column (or a .npy array) in, "
        "noisy out",
        description="Add discrete Gaussian (default) or discrete Laplace (--laplace) noise "
        "to integer counts: the named --column(s) of a CSV file with a header or of a "
        "Parquet file (the other columns are kept as they are), or a .npy integer array. "
        "Set the noise in exactly one way: --sigma2, --rho or --epsilon with --delta for "
        "the Gaussian; --scale or --epsilon [--delta] with --laplace. The guarantee (as rho "
        "and as (eps, delta)) and the 95% error bars go to stderr; the data to -o (.csv, "
        ".npy or .parquet, written whole or not at all) or to stdout as CSV. Formats: "
        ".csv and .npy in and out with dgauss alone; .parquet in or out needs the tables "
        f"extra ({_tables.EXTRA}), which also reads and writes large CSV files faster. A "
        "column with negative values, or a --delta of 1e-3 or more, is warned about on "
        "stderr. The noise comes from the operating system's CSPRNG.",
    )
    noise.set_defaults(command=run_noise)
    noise.add_argument(
        "input",
        metavar="INPUT",
        help="a .csv file with a header, a .npy integer array, or a .parquet file (needs "
        "dgauss[tables])",
    )
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
        help="a column of integers to noise (repeat for several; required for CSV and Parquet)",
    )
    _add_noise_setting(
        noise,
        delta_help="with --epsilon: 0 < D < 1 (Laplace: default 0, pure DP); from 1e-3 up a "
        "warning says it is too large to protect anyone",
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
    noise.add_argument(
        "--signed",
        action="store_true",
        help="the noised values may be negative (sums or differences of signed values): no "
        "warning about negative values, which counts cannot have",
    )
    noise.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write here, by its suffix: .csv, .npy, or .parquet (needs dgauss[tables]); "
        "default: CSV to stdout",
    )
    _ledger.add_noise_options(noise, _positive_int)
    noise.add_argument(
        "--overwrite-input",
        action="store_true",
        help="allow -o to be the input file itself (replaced whole once the release is ready; "
        "refused otherwise, so that true counts are never overwritten by mistake)",
    )
    noise.add_argument(
        "--granularity",
        metavar="G",
        help="values on the lattice G*Z, G > 0 an exact decimal or fraction (1 for whole "
        "numbers written as 7.0, 0.5, 1/3): each must be an exact multiple of G (never "
        "rounded); --sigma2, --scale and --sensitivity count steps of G, --clip-min is a "
        "value on the lattice, and the output stays on the lattice",
    )
    _one_line_errors(noise)


def run_noise(args: argparse.Namespace) -> int:
    """Carry out ``dgauss noise``; see :func:`main` for the exit status."""
    steps = _Steps(args)

    def check() -> tuple[Any, tuple[int, None] | None]:
        args.granularity = _granularity_option(args.granularity)
        mech = _ledger.noise_mechanism(args, lambda: _noise_mechanism(args))
        clip = None if args.clip_min is None else (_clip_steps(args), None)
        _check_noise_output(args)
        return mech, clip

    def make(checked: tuple[Any, tuple[int, None] | None], run: Release) -> None:
        run.mech, clip = checked
        run.table = table = _read_noise_input(args, steps)
        if not args.signed:
            for line in _negative_values(args.input, table):
                steps.say(line)
        if args.ledger is not None:  # recorded before any noise is drawn
            run.mech, run.ledger = _ledger.record(
                args, run.mech, table.count, lambda: _noise_mechanism(args)
            )
        steps.at(1, 0, f"noising {table.count:,} values")
        released = table.noised(run.mech, clip)
        steps.at(2, 0, "writing")
        steps.writing = True
        _write_noise_output(args, released, steps, run.output)

    def report(checked: object, run: Release) -> list[str]:
        lines = _noise_report(run.mech, args, run.table.count)
        return lines + _ledger.noise_lines(args, run.mech, run.ledger)

    return _release(
        "noise",
        args,
        check,
        _noise_option_message,
        make,
        report,
        ended=steps.close,  # the bar's line ends before any message
        stdout_begun=lambda: steps.writing,
    )


def _negative_values(path: str, table: _NoiseTable | _tables.ArrowTable) -> list[str]:
    """A warning for each noised column (or the .npy array) holding negative values, which
    counts cannot have: how many, of how many, and the lowest (in steps of a granularity,
    whose sign is the value's)."""
    found: list[tuple[str, np.ndarray | list[int], int]] = []  # (what, the negatives, of how many)
    if isinstance(table, _tables.ArrowTable):
        names = table._names()
        for i, j in enumerate(table.columns):
            column = table.values[:, i]
            found.append((f"column {names[j].strip()!r}", column[column < 0], len(column)))
    elif table.array is not None:
        flat = table.array.reshape(-1)
        found.append((path, flat[flat < 0], len(flat)))
    else:
        assert table.header is not None and table.rows is not None
        for j in table.columns:  # checked cells: integers (or steps), a sign first if any
            low = [v for v in [int(row[j]) for row in table.rows if row[j][:1] == "-"] if v]
            found.append((f"column {table.header[j].strip()!r}", low, len(table.rows)))
    lines = []
    g = table.granularity if isinstance(table, _NoiseTable) else None
    for what, negatives, total in found:
        if len(negatives):
            lowest = int(min(negatives))
            shown = str(lowest) if g is None else _lattice_text(lowest, g)
            lines.append(
                f"dgauss noise: warning: {what} holds {len(negatives):,} negative "
                f"value{'s' if len(negatives) != 1 else ''} (of {total:,}; the lowest "
                f"{shown}), which counts cannot be; --signed if it holds signed values "
                "(a sum, a difference)"
            )
    return lines


def _granularity_option(text: str | None) -> Fraction | None:
    """--granularity as an exact rational > 0 (a decimal or a fraction, never via a float)."""
    if text is None:
        return None
    return _params.positive(text.strip(), "--granularity")


def _clip_steps(args: argparse.Namespace) -> int:
    """--clip-min in steps of the granularity (the value itself without one)."""
    g = args.granularity
    if g is None:
        return _integer_text(args.clip_min, "--clip-min")
    low = _params.to_fraction(args.clip_min.strip(), "--clip-min") / g
    if low.denominator != 1:
        raise ValueError(
            f"--clip-min must be a multiple of --granularity {_lattice_text(1, g)}, "
            f"got {args.clip_min!r}"
        )
    return low.numerator


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
        self.writing = False  # whether the output has begun (for an interrupted run's message)

    def at(self, step: int, fraction: float, note: str) -> None:
        """Step ``step`` (0, 1, 2) is ``fraction`` done."""
        done = 1000 * step + int(1000 * min(max(fraction, 0.0), 1.0))
        self.bar.update(done, time.perf_counter() - self.start, note)

    def close(self) -> None:
        self.bar.close()

    def say(self, line: str) -> None:
        """``line`` on stderr, on a line of its own (below the bar, which goes on after)."""
        if self.bar.shown:
            sys.stderr.write("\n")
            self.bar.shown = False
        print(line, file=sys.stderr)


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
        ("granularity", "--granularity"),
    ):
        text = (
            re.sub(rf"\b{name}=?(?=\b)", option, text, count=1) if text.startswith(name) else text
        )
    return text


def _noise_mechanism(args: argparse.Namespace):
    sens = _integer_text(args.sensitivity, "--sensitivity")
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
        if args.scale is not None and args.delta is not None:
            raise ValueError("--delta goes with --epsilon, not with --scale")
        return _mechanism(args, sens)
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
    return _mechanism(args, sens)


def _check_noise_output(args: argparse.Namespace) -> None:
    if args.output is not None and _suffix(args.output) not in (".csv", ".npy", ".parquet"):
        raise ValueError(f"-o must end in .csv, .npy or .parquet, got {args.output!r}")
    if args.output is not None and not args.overwrite_input and _same_file(args.output, args.input):
        raise ValueError(
            f"-o {args.output} is the input file: its true values would be replaced by noisy "
            "ones; write elsewhere, or give --overwrite-input to replace it on purpose"
        )
    _tables.check_options(args)
    is_npy = _suffix(args.input) == ".npy"
    if is_npy and args.column:
        raise ValueError("--column is for CSV input; a .npy input is noised whole")
    if not is_npy and not args.column:
        raise ValueError("name the CSV column(s) to noise with --column")
    twice = sorted({name for name in args.column or () if args.column.count(name) > 1})
    if twice:  # its noise would be drawn (and counted) twice, the last kept
        raise ValueError(f"--column {twice[0]!r} is given more than once: name each column once")


def _same_file(output: str, given: str) -> bool:
    """Whether ``output`` names the file ``given``: the same path once symbolic links and
    ``..`` are resolved, or another name (a hard link) of the same file."""
    if os.path.realpath(output) == os.path.realpath(given):
        return True
    try:
        return os.path.samefile(output, given)
    except OSError:  # one of them does not exist (yet)
        return False


@dataclass
class _NoiseTable:
    """The input: a CSV (header, rows of strings, the noised columns' indices) or an array."""

    header: list[str] | None
    rows: list[list[str]] | None
    columns: list[int]
    array: np.ndarray | None
    granularity: Fraction | None = None  # values are lattice integers: steps of it

    @property
    def count(self) -> int:
        if self.array is not None:
            return int(self.array.size)
        assert self.rows is not None
        return len(self.rows) * len(self.columns)

    def noised(self, mech, clip) -> _NoiseTable:
        g = self.granularity
        if self.array is not None:
            noisy = mech(self.array, clip=clip, overflow="object")
            return _NoiseTable(None, None, [], noisy, g)
        assert self.rows is not None
        values = [int(row[j]) for row in self.rows for j in self.columns]
        noisy = mech(np.array(values, dtype=object), clip=clip, overflow="object")
        rows = [list(row) for row in self.rows]
        it = iter(noisy.tolist())
        for row in rows:
            for j in self.columns:
                row[j] = str(next(it)) if g is None else _lattice_text(next(it), g)
        return _NoiseTable(self.header, rows, self.columns, None, g)


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
        g = args.granularity
        if g is not None and array.dtype.kind in "iuf":
            from dgauss._inputs import _on_lattice

            try:  # floats at their exact binary value, never rounded
                return _NoiseTable(None, None, [], _on_lattice(array, g, path), g)
            except ValueError as exc:
                unit = _lattice_text(1, g)
                raise InputError(str(exc).replace("granularity*Z", f"{unit}*Z")) from None
        if array.dtype.kind not in "iu":
            hint = " (--granularity G takes values on a lattice)" if array.dtype.kind == "f" else ""
            raise InputError(f"{path} holds {array.dtype} values; counts must be integers{hint}")
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
            one_line_each = reader.line_num == len(rows) + 1  # no quoted line breaks
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
        _one_column(path, names, name)
        columns.append(names.index(name))
    steps.at(0, 0.5, f"checking {len(rows):,} rows")
    bad = _BadCells(path, args.granularity, len(columns) > 1)
    g = args.granularity
    starts: list[int] = []

    def line(number: int) -> int:
        """The line of the file on which the ``number``-th record (1: the header) starts."""
        if one_line_each:
            return number
        if not starts:  # only for a message: the file is read again
            starts.extend(_record_lines(path, delimiter))
        return starts[number - 1]

    for number, row in enumerate(rows, start=2):
        if number % PROGRESS_ROWS == 0:
            steps.at(0, 0.5 + number / len(rows) / 2, f"checking {len(rows):,} rows")
        if len(row) != len(header):
            raise InputError(
                f"{path}, line {line(number)}: {len(row)} fields where the header has {len(header)}"
            )
        for j in columns:
            cell = row[j].strip()
            if g is None and _INTEGER.match(cell):
                row[j] = cell
                continue
            steps_of_g = None if g is None else _on_lattice_text(cell, g)
            if steps_of_g is None:
                bad.add(cell, line(number), names[j])
            else:
                row[j] = str(steps_of_g)
    if bad.count:
        raise InputError(bad.message())
    if not rows:
        raise InputError(f"{path} has a header but no rows")
    return _NoiseTable(header, rows, columns, None, g)


def _record_lines(path: str, delimiter: str) -> list[int]:
    """The line of the CSV file on which each record starts (a quoted field may hold line
    breaks: a record then spans several lines)."""
    import csv

    starts, end = [], 0
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=delimiter)
        for _ in reader:
            starts.append(end + 1)
            end = reader.line_num  # the lines read so far: this record's last
    return starts


#: Cells that mean "no value" in the exports of spreadsheets, R, pandas and SQL.
_MISSING = frozenset(
    ["na", "n/a", "nan", "null", "none", "<na>", "#n/a", "nat", "missing", "-", ".", "?"]
)

#: How many line numbers a message gives of each kind of bad cell.
_LINES_SHOWN = 5


def _number(text: str) -> Fraction | None:
    """``text`` as an exact rational (a decimal such as 7.0, 1e3, 2.5, or a fraction such as
    7/3), or None when it is not a number."""
    try:
        return _params.to_fraction(text, "cell")
    except (ValueError, TypeError):
        return None


def _cell_value(text: str) -> Fraction:
    """A cell already checked to be a number, at its exact value."""
    value = _number(text)
    assert value is not None, text
    return value


def _on_lattice_text(cell: str, g: Fraction) -> int | None:
    """The cell's value in steps of ``g`` (exactly: 7.0 with g = 1 is 7), or None when it is
    no number or not a multiple of ``g``."""
    value = _number(cell)
    if value is None:
        return None
    steps = value / g
    return steps.numerator if steps.denominator == 1 else None


class _BadCells:
    """The cells of a CSV's noised columns that are not values to release, by kind (empty,
    missing, not a whole number, not on the lattice, text), with their first line numbers."""

    def __init__(self, path: str, granularity: Fraction | None, several: bool) -> None:
        self.path = path
        self.g = granularity
        self.several = several  # name the column beside each line
        self.count = 0
        self.kinds: dict[str, list] = {}  # kind -> [count, example, [places]]

    def add(self, cell: str, line: int, column: str) -> None:
        if not cell:
            kind = "empty"
        elif cell.lower() in _MISSING:
            kind = "missing"
        elif _number(cell) is None:
            kind = "text"
        else:
            kind = "number" if self.g is None else "off the lattice"
        self.count += 1
        self.column = column
        entry = self.kinds.setdefault(kind, [0, cell, []])
        entry[0] += 1
        if len(entry[2]) < _LINES_SHOWN:
            entry[2].append(f"{line} ({column!r})" if self.several else str(line))

    def message(self) -> str:
        """One line: how many cells, and of each kind how many, an example and where."""
        one = self.count == 1
        if self.g is None:
            what = "an integer" if one else "integers"
            never = "counts are never rounded"
        else:
            what = "a multiple" if one else "multiples"
            what += f" of --granularity {_lattice_text(1, self.g)}"
            never = "values are never rounded"
        parts = []
        for kind, (count, example, places) in self.kinds.items():
            label = {
                "empty": ("empty", "empty"),
                "missing": ("missing", "missing"),
                "text": ("not a number", "not numbers"),
                "number": ("a number not written as an integer", "numbers not written as integers"),
                "off the lattice": ("a number off the lattice", "numbers off the lattice"),
            }[kind][count > 1]
            if kind != "empty":
                label += f" ({example!r})" if count == 1 else f", such as {example!r}"
            more = "" if count <= len(places) else f", and {count - len(places):,} more"
            where = f"line{'s' if count > 1 else ''} {', '.join(places)}{more}"
            parts.append(f"{count:,} {label}: {where}")
        cells = "1 cell is" if one else f"{self.count:,} cells are"
        hint = (
            " (--granularity 1 takes whole numbers written as 7.0)"
            if "number" in self.kinds
            else ""
        )
        where = self.path if self.several else f"{self.path}, column {self.column!r}"
        return f"{where}: {cells} not {what} ({never}): " + "; ".join(parts) + hint


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
            at = _delta_text(accounting.gaussian_delta, mech.sigma2, eps, mech.sensitivity, mech.k)
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
    g = args.granularity
    if g is not None:
        unit = _lattice_text(1, g)
        param = "sigma2" if isinstance(mech, dgauss.GaussianMechanism) else "scale"
        lines.append(
            f"  on the lattice {unit}*Z: the noise is {unit} * "
            f"{'N_Z(0, sigma2)' if param == 'sigma2' else 'Lap_Z(scale)'}; {param} and the "
            f"sensitivity count steps of {unit}"
        )
        hi = _lattice_text(hi, g)
    lines.append(f"  95% error bars: each released value is within +-{hi} of the truth")
    if args.clip_min is not None:
        lines.append(f"  clipped below at {args.clip_min} (post-processing)")
    return lines


def _write_noise_output(
    args: argparse.Namespace,
    table: _NoiseTable | _tables.ArrowTable,
    steps: _Steps,
    output: Output | None,
) -> None:
    import csv
    import io

    path = args.output
    if isinstance(table, _tables.ArrowTable):
        table.write(args, steps, output)
        return
    if path is not None and _suffix(path) == ".parquet":
        _tables.write_plain_parquet(
            path, table.header, table.rows, table.columns, table.array, output
        )
        return
    g = table.granularity
    if path is not None and _suffix(path) == ".npy":
        array = table.array
        if array is None:
            assert table.rows is not None
            array = np.array([[row[j] for j in table.columns] for row in table.rows], dtype=object)
            unit = Fraction(1) if g is None else g  # back to steps of g, exactly
            array = np.array(
                [[(_cell_value(v) / unit).numerator for v in r] for r in array.tolist()],
                dtype=object,
            )
            if len(table.columns) == 1:
                array = array[:, 0]
        if g is not None:  # float64, each the double nearest the lattice value (as the API)
            from dgauss._inputs import _times

            lattice = np.asarray(array, dtype=object).reshape(-1)
            array = _times(lattice, g).reshape(np.shape(array))
        elif array.dtype == object:
            if not all(-(2**63) <= int(v) < 2**63 for v in array.ravel()):
                raise InputError("a released value does not fit int64; write .csv instead")
            array = array.astype(np.int64)
        _atomic(path, "wb", lambda f: _write_npy(f, array), output)
        return
    buffer = io.StringIO()
    delimiter = args.delimiter or ","
    writer = csv.writer(buffer, lineterminator="\n", delimiter=delimiter)
    if table.array is not None:
        writer.writerow(["value"])
        if g is None:
            writer.writerows([v] for v in table.array.ravel().tolist())
        else:
            writer.writerows([_lattice_text(v, g)] for v in table.array.ravel().tolist())
    else:
        assert table.header is not None and table.rows is not None
        write_csv_rows(buffer, [table.header], delimiter)
        for i in range(0, len(table.rows), PROGRESS_ROWS):
            write_csv_rows(buffer, table.rows[i : i + PROGRESS_ROWS], delimiter)
            steps.at(2, (i + PROGRESS_ROWS) / len(table.rows), "writing")
    text = buffer.getvalue()
    if path is None:
        _write_stdout(text)  # whole, or BrokenPipeError (``| head``)
    else:
        _atomic(path, "w", lambda f: f.write(text), output)
