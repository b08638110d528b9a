"""``dgauss tabulate``: a file of microdata in, a noisy count or sum table over a public
domain out (:func:`dgauss.tabulate`, then the noise of ``dgauss noise``).

The run goes as ``dgauss noise``'s does: every option is checked first (a usage error,
status 2, reads nothing), then the records and the keys are read and tabulated (a bad file
or cell is status 1; an argument :func:`dgauss.tabulate` refuses is status 2, with its
message in the options' names), then ``--ledger`` admits and records the release before any
noise is drawn (status 3 when it does not fit), then the noise is drawn and the table written
whole to ``-o`` or stdout.  The noise options, ``--ledger``, ``--k``, ``--share``,
``--clip-min`` and ``--granularity`` are ``noise``'s own (:mod:`dgauss.cli.noise`,
:mod:`dgauss.cli._ledger`); only the sensitivity differs: it is the table's
:class:`~dgauss.accounting.Contributions`, never typed.

**How key values are matched.**  A CSV file's cells are text, with the spaces around them
removed.  A key column (one of ``--by``) is matched as integers when both sides are
integers: the records' column (an integer Parquet column, or text whose every cell is an
integer written ``[+-]?[0-9]+``) and the domain's values (the ``--keys`` file's column, or
``--key``'s list, by the same rule); then ``7``, ``07`` and ``+7`` are one key.  Otherwise
both sides are matched as exact text (an integer Parquet column as its decimal digits), so
``07`` is not ``7``.  The output writes each key as the domain spells it.  The person column
is read the same way (integers when all its cells are: two spellings of one number are one
person, which only bounds more).  An empty cell in a key, person or value column is an
error, as a missing value is for :func:`dgauss.tabulate`.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import itertools
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

import dgauss
from dgauss import _params
from dgauss.cli import _ledger, _tables
from dgauss.cli._common import (
    EXIT_USAGE,
    _add_noise_setting,
    _mechanism,
    _nonnegative_int,
    _one_line_errors,
    _positive_int,
    _write_stdout,
)
from dgauss.cli._csv import InputError, _delimiter, _lattice_text, write_csv_rows
from dgauss.cli._io import Output, _atomic, _suffix
from dgauss.cli._release import Release, _release
from dgauss.cli.noise import (
    _clip_steps,
    _delimiter_option,
    _granularity_option,
    _noise_mechanism,
    _noise_option_message,
    _noise_report,
    _same_file,
)

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")

#: How many line numbers an error gives of the bad cells of one column.
_LINES_SHOWN = 5

#: The name under which several key columns of a ``--keys`` file of rows are tabulated as one.
_JOINED = "\x00keys"


def _add_tabulate(commands: argparse._SubParsersAction) -> None:
    tab = commands.add_parser(
        "tabulate",
        help="microdata in, a noisy count or sum table over a public domain out",
        description="Count (or, with --value, sum) the rows of a CSV or Parquet file of "
        "microdata in each cell of a public domain of keys (--keys FILE of key rows, or "
        "--key COL=V1,V2,... for each --by column: their product), each person's "
        "contribution bounded (--person with --max-rows, or --max-groups with "
        "--max-rows-per-group), and release the table with discrete Gaussian (default) or "
        "discrete Laplace (--laplace) noise, its sensitivity the bounded contributions. "
        "Records outside the domain are dropped: no key is ever read from the records. The "
        "noise is set as for 'dgauss noise' (--sigma2, --rho, or --epsilon with --delta; "
        "--scale or --epsilon with --laplace; --ledger FILE spends from a privacy ledger). "
        "The table goes to -o (.csv, or .parquet with the tables extra) or to stdout as "
        "CSV: the key columns, then the noisy value column; the guarantee and the numbers "
        "of rows dropped and trimmed (exact: not private) go to stderr. Key columns are "
        "matched as integers when both the records' and the domain's values are all "
        "integers, else as exact text. The noise comes from the operating system's CSPRNG.",
    )
    tab.set_defaults(command=run_tabulate)
    tab.add_argument(
        "records",
        metavar="RECORDS",
        help="the microdata: a .csv file with a header, a .parquet file (needs "
        f"{_tables.EXTRA}), or - for CSV on stdin",
    )
    tab.add_argument(
        "--by",
        required=True,
        metavar="COL[,COL...]",
        help="the key columns of the table, in order (the last varies fastest in a product)",
    )
    tab.add_argument(
        "--keys",
        metavar="FILE",
        help="the public domain: a .csv or .parquet file whose columns include the --by columns "
        "and whose rows are the table's keys, in order",
    )
    tab.add_argument(
        "--key",
        action="append",
        metavar="COL=V1,V2,...",
        help="instead of --keys: the public values of one --by column (give one --key for "
        "each); the table's keys are their product",
    )
    tab.add_argument("--person", metavar="COL", help="the column identifying a person")
    for option, what in (
        ("--max-rows", "keep at most M rows of each person"),
        ("--max-groups", "keep at most C cells of each person (with --max-rows-per-group)"),
        ("--max-rows-per-group", "keep at most R rows of each person in a cell"),
    ):
        tab.add_argument(option, type=_positive_int, metavar=option[6].upper(), help=what)
    tab.add_argument("--value", metavar="COL", help="sum this column instead of counting rows")
    tab.add_argument(
        "--bounds",
        metavar="LOW,HIGH",
        help="with --value: each value is clamped to [LOW, HIGH] (exact decimals or fractions; "
        "a negative LOW as --bounds=-5,5)",
    )
    tab.add_argument(
        "--granularity",
        metavar="G",
        help="with --value: values are rounded to the lattice G*Z (halves to even) before "
        "clamping; --bounds and --clip-min must be multiples of G; --sigma2 and --scale count "
        "steps of G (default 1)",
    )
    tab.add_argument(
        "--seed",
        type=_nonnegative_int,
        metavar="N",
        help="seeds the choice of which rows of a person bounding keeps (0 <= N < 2**64): the same "
        "table for the same records; default a fresh one (the noise is never seeded)",
    )
    tab.add_argument(
        "--delimiter",
        type=_delimiter_option,
        metavar="D",
        help="the delimiter of the CSV files, one character (\\t for tab); default: sniffed "
        "from each header among , ; tab | (the output uses the records')",
    )
    _add_noise_setting(tab, delta_help="with --epsilon: 0 < D < 1 (Laplace: default 0, pure DP)")
    tab.add_argument(
        "--clip-min", metavar="LO", help="clip the noisy values below at LO, e.g. 0 for counts"
    )
    tab.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write here, by its suffix: .csv, or .parquet (needs dgauss[tables]); default: "
        "CSV to stdout",
    )
    _ledger.add_noise_options(tab, _positive_int)
    _one_line_errors(tab)


@dataclass
class _Column:
    """One column as read: its cells as text (CSV, or a Parquet string column) and as
    integers when every cell is one (or a Parquet integer column); a Parquet value column
    of floats or decimals as ``numbers``."""

    text: list[str] | None
    ints: np.ndarray | None
    numbers: np.ndarray | None = None
    strings: np.ndarray | None = None  # the cells as a NumPy str array (the fast CSV path)
    spelled: bool = True  # False: integers whose text was not kept (the fast CSV path)

    def as_text(self) -> list[str]:
        if self.text is not None:
            return self.text
        if self.strings is not None:
            return self.strings.tolist()
        assert self.ints is not None and self.spelled, "the cells' text was not kept"
        return [str(v) for v in self.ints.tolist()]

    def as_strings(self) -> np.ndarray:
        """The cells as text in a NumPy str array (what :func:`_strings` makes of them)."""
        return self.strings if self.strings is not None else _strings(self.as_text())


@dataclass
class _Plan:
    """The checked options: the key columns, the domain's source, the value's bounds."""

    by: list[str]
    product: dict[str, list[str]] | None  # --key: each column's values, as typed
    bounds: tuple[str, str] | None  # as typed (checked to be numbers)
    value_name: str


def run_tabulate(args: argparse.Namespace) -> int:
    """Carry out ``dgauss tabulate``; see :func:`dgauss.cli.main` for the exit status."""

    def check() -> tuple[_Plan, tuple[int, None] | None]:
        plan = _plan(args)
        args.sensitivity = "1"  # a stand-in: the options checked as noise checks them
        _ledger.noise_mechanism(args, lambda: _noise_mechanism(args))
        clip = None if args.clip_min is None else (_clip_steps(args), None)
        _dry_run(args, plan)  # what dgauss.tabulate refuses in the options, before reading
        return plan, clip

    def make(checked: tuple[_Plan, tuple[int, None] | None], run: Release) -> int | None:
        plan, clip = checked
        try:
            table, key_text, delimiter = _prepare(args, plan)
        except (ValueError, TypeError) as exc:  # a column or argument the data refutes
            print(f"dgauss tabulate: error: {_option_message(exc)}", file=sys.stderr)
            return EXIT_USAGE
        run.table = table
        # the table's sensitivity, in steps of its granularity (the values noised are steps)
        mechanism = functools.partial(_mechanism, args, table.sensitivity)
        run.mech = None if args.share is not None else mechanism()
        cells = len(table.values)
        if args.ledger is not None:  # recorded before any noise is drawn
            run.mech, run.ledger = _ledger.record(args, run.mech, cells, mechanism)
        assert run.mech is not None
        noisy = run.mech(np.asarray(table.values), clip=clip, overflow="object")
        _write(args, plan, key_text, table, noisy, delimiter, run.output)
        return None

    def report(checked: tuple[_Plan, object], run: Release) -> list[str]:
        return _report(args, checked[0], run.mech, run.table, run.ledger)

    return _release("tabulate", args, check, _option_message, make, report)


# ---- the options ---------------------------------------------------------------------------


def _names(text: str, option: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ValueError(f"{option} must be column names separated by commas, got {text!r}")
    return names


def _plan(args: argparse.Namespace) -> _Plan:
    """Every option checked, nothing read (ValueError naming the option)."""
    args.granularity = _granularity_option(args.granularity)
    by = _names(args.by, "--by")
    twice = sorted({n for n in by if by.count(n) > 1})
    if twice:
        raise ValueError(f"--by names the column {twice[0]!r} twice: name each key column once")
    product = None
    if (args.keys is None) == (args.key is None):
        raise ValueError(
            "give the public domain in one way: --keys FILE (its rows), or --key COL=V1,V2,... "
            "for each --by column (their product)"
        )
    if args.key is not None:
        product = {}
        for given in args.key:
            column, sep, values = given.partition("=")
            column = column.strip()
            if not sep or not column:
                raise ValueError(f"--key must be COL=V1,V2,..., got {given!r}")
            if column not in by:
                raise ValueError(f"--key {column!r} is not one of the --by columns {by}")
            if column in product:
                raise ValueError(f"--key {column!r} is given twice: give each column once")
            cells = [v.strip() for v in values.split(",")]
            if not all(cells):
                raise ValueError(f"--key {column!r} has an empty value in {values!r}")
            repeated = sorted({v for v in cells if cells.count(v) > 1})
            if repeated:
                raise ValueError(f"--key {column!r} gives the value {repeated[0]!r} twice")
            product[column] = cells
        missing = [c for c in by if c not in product]
        if missing:
            raise ValueError(f"--key: no values for the --by column {missing[0]!r}")
    bounds = None
    if args.bounds is not None:
        parts = args.bounds.split(",")
        if len(parts) != 2:
            raise ValueError(f"--bounds must be LOW,HIGH, got {args.bounds!r}")
        for part in parts:
            _params.to_fraction(part.strip(), "--bounds")  # a number, else named here
        bounds = (parts[0].strip(), parts[1].strip())
    for option, column in (("--person", args.person), ("--value", args.value)):
        if column is not None and column in by:
            raise ValueError(f"{option} {column!r} is also a --by column")
    g = args.granularity
    if args.output is not None:
        if _suffix(args.output) not in (".csv", ".parquet"):
            raise ValueError(f"-o must end in .csv or .parquet, got {args.output!r}")
        if _suffix(args.output) == ".parquet":
            if not _tables.available():
                raise ValueError(f"-o {args.output}: writing Parquet needs {_tables.EXTRA}")
            if g is not None and g.denominator != 1:
                raise ValueError(
                    f"-o {args.output}: a Parquet table holds integers; --granularity "
                    f"{_lattice_text(1, g)} makes sums off the integers: write .csv"
                )
        for option, path in (("RECORDS", args.records), ("--keys", args.keys)):
            if path is not None and path != "-" and _same_file(args.output, path):
                raise ValueError(f"-o {args.output} is the {option} file: write elsewhere")
    for path in (args.records, args.keys):
        if path is not None and _suffix(path) == ".parquet" and not _tables.available():
            raise ValueError(f"{path}: reading Parquet needs {_tables.EXTRA}")
    if args.keys == "-" and args.records == "-":
        raise ValueError("RECORDS and --keys cannot both be stdin (-)")
    value_name = "count" if args.value is None else args.value
    return _Plan(by, product, bounds, value_name)


def _dry_run(args: argparse.Namespace, plan: _Plan) -> None:
    """:func:`dgauss.tabulate` on no records: its checks of the arguments, before any file
    is read (a ValueError or TypeError in its words)."""
    text, numbers = _strings([]), np.empty(0, dtype=np.int64)
    needed = _needed(args, plan)
    dgauss.tabulate(
        {c: numbers if option == "--value" else text for c, option in needed.items()},
        plan.by,
        {c: ["k"] for c in plan.by},
        **_arguments(args, plan),
    )


def _arguments(args: argparse.Namespace, plan: _Plan) -> dict[str, Any]:
    return {
        "person": args.person,
        "max_rows": args.max_rows,
        "max_groups": args.max_groups,
        "max_rows_per_group": args.max_rows_per_group,
        "value": args.value,
        "bounds": plan.bounds,
        "granularity": args.granularity,
        "seed": args.seed,
    }


def _needed(args: argparse.Namespace, plan: _Plan) -> dict[str, str]:
    """The records' columns to read, each with the option naming it."""
    needed = {c: "--by" for c in plan.by}
    for option, column in (("--person", args.person), ("--value", args.value)):
        if column is not None:
            needed[column] = option
    return needed


#: The library's argument names, as the options that set them.
_OPTIONS = (
    ("max_rows_per_group", "--max-rows-per-group"),
    ("max_rows", "--max-rows"),
    ("max_groups", "--max-groups"),
    ("person", "--person"),
    ("value", "--value"),
    ("bounds", "--bounds"),
    ("granularity", "--granularity"),
    ("seed", "--seed"),
)


def _option_message(exc: Exception) -> str:
    """The message of a ValueError or TypeError in the command's words: the library's
    argument names (``max_rows=``, ``bounds``) as the options that set them."""
    text = _noise_option_message(exc)
    for name, option in _OPTIONS:
        # name=X -> option X; name= -> option; the bare name too, but for the English words
        text = re.sub(rf"(?<![\w-]){name}=(?=\S)", option + " ", text)
        text = re.sub(rf"(?<![\w-]){name}=", option, text)
        if name not in ("person", "value"):
            text = re.sub(rf"(?<![\w-]){name}\b", option, text)
        else:
            text = re.sub(rf"^{name}\b", option, text)
    text = re.sub(r"^by\b", "--by", text)
    return text.replace(" (the column identifying a person)", "")


# ---- reading -------------------------------------------------------------------------------


def _open_text(path: str) -> Any:
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a test's StringIO
            return sys.stdin
        return io.TextIOWrapper(buffer, encoding="utf-8-sig", newline="")
    return open(path, newline="", encoding="utf-8-sig")


def _read(
    path: str, delimiter: str | None, needed: dict[str, str], role: str, spelled: set[str]
) -> tuple[dict[str, _Column], str]:
    """The ``needed`` columns of the CSV or Parquet file ``path`` (``-``: CSV on stdin), and
    its delimiter (``,`` for Parquet).  ``needed`` maps each column to the option naming it
    (``--value`` the one column that may hold other numbers than integers); ``role`` names
    the file in messages (RECORDS, --keys); the text of the ``spelled`` columns is kept
    even where they hold integers only.  A CSV file goes through pyarrow where it is
    installed and the file is one it reads as Python's csv does (:func:`_read_fast`), else
    through :mod:`csv`: the same columns, the same errors.  A missing column is a usage
    error (ValueError); an unreadable file or an empty cell an InputError."""
    shown = "stdin" if path == "-" else path
    if path != "-" and not os.path.isfile(path):
        raise InputError(f"no such file: {path} ({role})")
    if _suffix(path) == ".parquet":
        return _read_parquet(path, needed, role), ","
    if path != "-":
        fast = _read_fast(path, delimiter, needed, spelled)
        if fast is not None:
            return fast
    try:
        with _open_text(path) as f:
            first = f.readline()
            chosen = _delimiter(delimiter, first)
            header = next(csv.reader([first], delimiter=chosen), None)
            reader = csv.reader(f, delimiter=chosen)
            starts, rows, line = [], [], 1
            for row in reader:
                starts.append(line + 1)
                line = reader.line_num + 1
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read {shown} as CSV ({role}): {exc}") from None
    if not header:
        raise InputError(f"{shown} is empty ({role}): a CSV file needs a header row")
    names = [h.strip() for h in header]
    index = {}
    for name, option in needed.items():
        _have(names, name, shown, option)
        index[name] = names.index(name)
    for number, row in enumerate(rows):
        if len(row) != len(header):
            raise InputError(
                f"{shown}, line {starts[number]}: {len(row)} fields where the header has "
                f"{len(header)}"
            )
    columns = {}
    for name, j in index.items():
        cells = [row[j].strip() for row in rows]
        empty = [starts[i] for i, c in enumerate(cells) if not c]
        if empty:
            raise InputError(_empty_message(shown, name, empty))
        columns[name] = _Column(cells, _ints(cells))
    return columns, chosen


def _have(names: list[str], name: str, shown: str, option: str) -> None:
    where = [j for j, n in enumerate(names) if n == name]
    if not where:
        raise ValueError(
            f"{option} names the column {name!r}, which {shown} does not have; "
            f"its columns are: {', '.join(names)}"
        )
    if len(where) > 1:
        raise InputError(
            f"{shown}: {len(where)} columns are named {name!r} (columns "
            f"{', '.join(str(j + 1) for j in where)}): rename the others"
        )


def _empty_message(shown: str, name: str, lines: list[int]) -> str:
    more = "" if len(lines) <= _LINES_SHOWN else f", and {len(lines) - _LINES_SHOWN:,} more"
    where = ", ".join(map(str, lines[:_LINES_SHOWN]))
    cells = "1 empty cell" if len(lines) == 1 else f"{len(lines):,} empty cells"
    return (
        f"{shown}, column {name!r}: {cells} (line{'s' if len(lines) > 1 else ''} "
        f"{where}{more}); a missing value: drop or fill it first"
    )


def _ints(cells: list[str]) -> np.ndarray | None:
    """The cells as integers when every one is written as one (int64, or Python ints when
    one is beyond it), else None."""
    if not all(_INTEGER.match(c) for c in cells):
        return None
    values = [int(c) for c in cells]
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)


# ---- reading a CSV through pyarrow (the tables extra) ----------------------------------------


class _Unsure(Exception):
    """The fast path cannot prove its reading is the plain path's: the plain path reads."""


def _read_fast(
    path: str, delimiter: str | None, needed: dict[str, str], spelled: set[str]
) -> tuple[dict[str, _Column], str] | None:
    """The ``needed`` columns of the CSV file ``path`` read by pyarrow, or None when pyarrow
    is not installed or the file is one this path leaves to the plain one (which then reads
    it, or says what is wrong with it): an empty cell, a row of the wrong length, an empty
    line, a field past :func:`csv.field_size_limit`, an integer column beyond int64, a parse
    pyarrow refuses or makes otherwise than Python's :mod:`csv` (checked on the header), a
    column missing or named twice, no data rows.  The columns are what the plain path makes
    of the same file: each cell stripped as :meth:`str.strip` strips, integers when every
    cell of the column is ``[+-]?[0-9]+``; the text of an integer column is kept only for
    the ``spelled`` columns (the plain path keeps it always)."""
    pa = _tables._arrow()
    if pa is None:
        return None
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            first = f.readline()
        chosen = _delimiter(delimiter, first)
        header = next(csv.reader([first], delimiter=chosen), None)
        if not header or len(chosen.encode()) != 1:
            return None
        names = [h.strip() for h in header]
        if any(names.count(name) != 1 for name in needed):
            return None
        index = {name: names.index(name) for name in needed}
        kept = set(spelled) & set(index)  # the columns whose text is kept
        with _tables._malloc():
            while True:
                read = _gather(path, chosen, header, index, kept)
                if isinstance(read, str):  # a column of text: read again, keeping its text
                    kept.add(read)
                    continue
                return read, chosen
    except (pa.ArrowException, ValueError, OSError, UnicodeDecodeError, csv.Error, _Unsure):
        return None


def _gather(
    path: str, delimiter: str, header: list[str], index: dict[str, int], kept: set[str]
) -> dict[str, _Column] | str:
    """One pass of pyarrow's reader over the file (every column parsed as strings, as it
    must to find the rows and to check the field-size limit; only the ``index`` columns
    kept): the columns, or the name of a column not in ``kept`` that turned out not to hold
    integers only (its text was not kept: the caller reads again)."""
    pa = _tables._pa()
    limit = csv.field_size_limit()
    ints: dict[str, list[np.ndarray] | None] = {name: [] for name in index}
    text: dict[str, list[Any]] = {name: [] for name in kept}
    rows = 0
    for batch in _tables._csv_batches(path, delimiter, header):
        if batch.num_columns != len(header) or any(t != pa.string() for t in batch.schema.types):
            raise _Unsure
        if _tables._longest_field(batch) >= limit:
            raise _Unsure  # Python's csv refuses a field this long
        for name, j in index.items():
            cells = _stripped(batch.column(j))
            parts = ints[name]
            if parts is not None:
                values = _integers(cells)
                if values is None and name not in kept:
                    return name
                if values is None:
                    ints[name] = None
                else:
                    parts.append(values)
            if name in kept:
                text[name].append(cells)
        rows += batch.num_rows
    if rows == 0:
        raise _Unsure
    columns = {}
    for name in index:
        parts = ints[name]
        values = None if parts is None else np.concatenate(parts)
        strings = _numpy_strings(text[name]) if name in kept else None
        columns[name] = _Column(None, values, strings=strings, spelled=name in kept)
    return columns


@functools.lru_cache(maxsize=1)
def _space() -> tuple[str, np.ndarray]:
    """What :meth:`str.strip` strips (the characters of :meth:`str.isspace`), as an RE2
    class, and the bytes that may begin or end one in UTF-8 (a table of 256 flags: the
    ASCII ones, and every byte past ASCII)."""
    chars = "".join(filter(str.isspace, map(chr, range(sys.maxunicode + 1))))
    edge = np.zeros(256, dtype=bool)
    edge[[ord(c) for c in chars if ord(c) < 128]] = True
    edge[128:] = True
    return _tables._class(chars), edge


def _stripped(cells: Any) -> Any:
    """A pyarrow string array's cells stripped as :meth:`str.strip` strips them (the regular
    expression runs only where a first or last byte may be a space); _Unsure when a cell is
    then empty (the plain path says on which lines)."""
    pc = _tables._pa().compute
    space, edge = _space()
    offsets, raw = _tables._chunk_bytes(cells)
    if not np.diff(offsets).all():
        raise _Unsure
    if edge[raw[offsets[:-1]]].any() or edge[raw[offsets[1:] - 1]].any():
        cells = pc.replace_substring_regex(cells, f"^{space}+|{space}+$", "")
        if not np.diff(_tables._chunk_bytes(cells)[0]).all():
            raise _Unsure
    return cells


def _integers(cells: Any) -> np.ndarray | None:
    """The stripped cells as int64 when every one is ``[+-]?[0-9]+`` (the plain path's rule),
    else None; beyond int64, the plain path decides (pyarrow's ArrowInvalid)."""
    pa = _tables._pa()
    pc = pa.compute
    raw = _tables._chunk_bytes(cells)[1]
    if raw.min() < ord("0") or raw.max() > ord("9"):  # not digits alone (no cell is empty)
        if not pc.all(pc.match_substring_regex(cells, r"^[+-]?[0-9]+$")).as_py():
            return None
        cells = pc.replace_substring_regex(cells, r"^\+", "")  # pyarrow's parse refuses +7
    return _tables._int64s(pc.cast(cells, pa.int64(), memory_pool=_tables._pool()))


def _numpy_strings(chunks: list[Any]) -> np.ndarray:
    """Pyarrow string arrays as one NumPy str array, as ``np.array(cells, dtype=str)`` makes
    it of their Python strings: each distinct string made once, then taken by index."""
    pa = _tables._pa()
    pc = pa.compute
    column = pa.chunked_array(chunks, type=pa.string())
    distinct = pc.unique(column)
    where = pc.index_in(column, value_set=distinct)
    indices = np.concatenate(
        [
            np.frombuffer(c.buffers()[1], dtype=np.int32)[c.offset : c.offset + len(c)]
            for c in where.chunks
            if len(c)
        ]
    )
    return _strings(distinct.to_pylist())[indices]


def _read_parquet(path: str, needed: dict[str, str], role: str) -> dict[str, _Column]:
    pa = _tables._pa()
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path).read()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read {path} as Parquet ({role}): {exc}") from None
    names = table.column_names
    columns = {}
    for name, option in needed.items():
        _have(names, name, path, option)
        column = table.column(name).combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        if column.null_count:
            rows = pa.compute.indices_nonzero(pa.compute.is_null(column))
            first = ", ".join(str(r + 1) for r in rows[:_LINES_SHOWN].to_pylist())
            raise InputError(
                f"{path}, column {name!r}: {column.null_count:,} missing value(s), the first "
                f"at row(s) {first}; drop or fill them first"
            )
        kind = column.type
        if pa.types.is_integer(kind):
            ints = column.to_numpy()
            if ints.dtype == np.uint64 and len(ints) and int(ints.max()) >= 2**63:
                ints = np.array(column.to_pylist(), dtype=object)
            columns[name] = _Column(None, ints.astype(np.int64) if ints.dtype != object else ints)
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            cells = [c.strip() for c in column.to_pylist()]
            columns[name] = _Column(cells, _ints(cells))
        elif option == "--value" and (pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
            numbers = column.to_numpy() if pa.types.is_floating(kind) else column.to_pylist()
            columns[name] = _Column(None, None, np.asarray(numbers))
        else:
            raise InputError(
                f"{path}, column {name!r}: {kind} values; a key or person column must hold "
                "integers or text (a value column: numbers)"
            )
    return columns


def _domain(
    args: argparse.Namespace, plan: _Plan
) -> tuple[dict[str, _Column] | None, list[tuple[str, ...]]]:
    """The domain's columns (None for a --key product) and each key's text, in the table's
    order (the product's in C order: the last --by column varies fastest)."""
    if plan.product is not None:
        lists = [plan.product[c] for c in plan.by]
        return None, list(itertools.product(*lists))
    needed = {c: "--keys" for c in plan.by}
    columns, _ = _read(args.keys, args.delimiter, needed, "--keys", set(plan.by))
    texts = list(zip(*(columns[c].as_text() for c in plan.by), strict=True))
    if not texts:
        raise InputError(f"{args.keys} has no rows (--keys): the domain must not be empty")
    seen: dict[tuple[str, ...], int] = {}
    for i, key in enumerate(texts):
        if key in seen:
            raise InputError(
                f"{args.keys} (--keys) holds the key {key if len(key) > 1 else key[0]!r} twice "
                f"(rows {seen[key] + 1} and {i + 1}): each key once"
            )
        seen[key] = i
    return columns, texts


def _matched(
    args: argparse.Namespace,
    plan: _Plan,
    records: dict[str, _Column],
    keys: dict[str, _Column] | None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The records' columns and the domain as :func:`dgauss.tabulate` takes them, each key
    column matched as integers or as text (the module's rule)."""
    if keys is None:
        assert plan.product is not None
        keys = {c: _Column(v, _ints(v)) for c, v in plan.product.items()}
    data: dict[str, np.ndarray] = {}
    domain: dict[str, np.ndarray] = {}
    for c in plan.by:
        r, k = records[c], keys[c]
        if r.ints is not None and k.ints is not None:
            data[c], domain[c] = r.ints, k.ints
        else:
            data[c], domain[c] = r.as_strings(), k.as_strings()
    if args.person is not None:
        p = records[args.person]
        data[args.person] = p.ints if p.ints is not None else p.as_strings()
    if args.value is not None:
        data[args.value] = _values(records[args.value], args.records)
    if plan.product is None and len(plan.by) > 1:  # rows of several columns: one joined key
        for side in (data, domain):
            side[_JOINED] = _joined([side.pop(c) for c in plan.by])
    return data, domain


def _strings(cells: list[str]) -> np.ndarray:
    return np.array(cells, dtype=str) if cells else np.empty(0, dtype="<U1")


def _joined(columns: list[np.ndarray]) -> np.ndarray:
    """One text key per row for several key columns: each part as ``len:text`` (ints in
    decimal), so that two rows are equal exactly when all their parts are."""
    parts = [[f"{len(s)}:{s}" for s in map(str, col.tolist())] for col in columns]
    return _strings(["".join(row) for row in zip(*parts, strict=True)])


def _values(column: _Column, shown: str) -> np.ndarray:
    """The value column: integers as int64, other numbers as exact Fractions (a cell that is
    no number: InputError)."""
    if column.ints is not None:
        return column.ints
    if column.numbers is not None:  # Parquet floats (at their exact value) or decimals
        return column.numbers
    values, bad = [], []
    for i, cell in enumerate(column.as_text()):
        try:
            values.append(_params.to_fraction(cell, "cell"))
        except (ValueError, TypeError):
            bad.append((i, cell))
    if bad:
        raise InputError(
            f"{shown}, --value column: {len(bad):,} cell(s) are not numbers, such as "
            f"{bad[0][1]!r} (record {bad[0][0] + 1})"
        )
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _prepare(args: argparse.Namespace, plan: _Plan) -> tuple[Any, list[tuple[str, ...]], str]:
    """The exact table (:func:`dgauss.tabulate` on the files), each key's text in its order,
    and the records' delimiter.  ValueError or TypeError: a usage error; InputError: a bad
    file or cell."""
    keys, key_text = _domain(args, plan)
    if keys is None:
        assert plan.product is not None
        keys = {c: _Column(v, _ints(v)) for c, v in plan.product.items()}
    spelled = {c for c in plan.by if keys[c].ints is None}  # matched as text
    records, delimiter = _read(
        args.records, args.delimiter, _needed(args, plan), "RECORDS", spelled
    )
    data, domain = _matched(args, plan, records, keys)
    by = [_JOINED] if _JOINED in domain else plan.by
    return dgauss.tabulate(data, by, domain, **_arguments(args, plan)), key_text, delimiter


# ---- writing -------------------------------------------------------------------------------


def _write(
    args: argparse.Namespace,
    plan: _Plan,
    key_text: list[tuple[str, ...]],
    table,
    noisy: np.ndarray,
    delimiter: str,
    output: Output | None,
) -> None:
    """The noisy table (the key columns as the domain spells them, then the value column) to
    ``-o`` (whole or not at all) or stdout."""
    g = table.granularity
    header = [*plan.by, _value_name(plan, table)]
    cells = [str(v) if g is None else _lattice_text(v, g) for v in noisy.tolist()]
    path = args.output
    if path is not None and _suffix(path) == ".parquet":
        pa = _tables._pa()
        arrays = []
        for j in range(len(plan.by)):
            texts = [key[j] for key in key_text]
            ints = _ints(texts)
            arrays.append(pa.array(texts) if ints is None else pa.array(ints, type=pa.int64()))
        values = np.array([int(c) for c in cells], dtype=object)
        arrays.append(pa.array(_tables._int64_or_error(values), type=pa.int64()))
        _tables._save_parquet(path, pa.Table.from_arrays(arrays, names=header), output)
        return
    buffer = io.StringIO()
    rows = [[*key, cell] for key, cell in zip(key_text, cells, strict=True)]
    write_csv_rows(buffer, [header, *rows], delimiter)
    text = buffer.getvalue()
    if path is None:
        _write_stdout(text)
    else:
        _atomic(path, "w", lambda f: f.write(text), output)


def _value_name(plan: _Plan, table) -> str:
    """The value column's name: the table's, or with several key columns tabulated as one,
    the same rule's (``count`` or the --value column, ``_`` put before it while it is the
    name of a key column)."""
    if _JOINED not in table.by:
        return table.value
    name = plan.value_name
    while name in plan.by:
        name = "_" + name
    return name


def _report(args, plan: _Plan, mech, table, ledger) -> list[str]:
    """The stderr summary: ``noise``'s guarantee lines, the ledger's, then the table and
    the counts of rows dropped and trimmed (exact: not private)."""
    if mech is None or table is None:
        return []
    lines = _noise_report(mech, args, len(table.values))
    lines[0] = lines[0].replace("dgauss noise:", "dgauss tabulate:", 1)
    lines += _ledger.noise_lines(args, mech, ledger)
    what = "counts of rows" if args.value is None else f"sums of {args.value!r}"
    if plan.bounds is not None:
        what += f" clamped to [{plan.bounds[0]}, {plan.bounds[1]}]"
    lines.append(f"  table: {len(table.values)} cells by {', '.join(plan.by)}; {what}")
    lines.append(
        f"  records: {table.dropped:,} dropped outside the domain, {table.trimmed:,} trimmed "
        "by bounding (exact, not private: for your eyes)"
    )
    return lines
