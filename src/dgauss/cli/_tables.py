"""Tables through pyarrow (the ``tables`` extra) for ``dgauss noise``: CSV fast, and Parquet.

**The fast CSV path** streams a CSV through pyarrow's reader, every column as strings, and
converts the noised columns to int64 exactly (digit strings parsed as integers, never through
a float); to write the result it streams the file again (a file changed in between is an
error), in batches, with pyarrow's writer or, where a field needs quotes,
pyarrow's string kernels.  It is an optimisation and nothing else: its output is, byte for
byte, what the plain path (Python's :mod:`csv`) writes for the same noise, and it takes a
file only when it can prove that.  Whatever it cannot prove, it hands back (``None``) to
the plain path, which reads the file, or says what is wrong with it, as without pyarrow:
a cell that is not a plain ``[+-]?[0-9]+`` with at most spaces and tabs around it (so
``7.0``, ``1e3``, an empty cell, a value beyond int64), an empty line, a row of the wrong
length, a field longer than :func:`csv.field_size_limit`, a parse pyarrow refuses (an
unterminated quote, a delimiter outside ASCII), no data rows, a ``--column`` that no
column or several bear, or ``--granularity``.

**Parquet** (``.parquet`` in or out) needs pyarrow: the noised columns must hold integers
with no missing values and come out as int64; the other columns keep their types.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgauss.cli._common import _write_stdout
from dgauss.cli._csv import InputError, _delimiter, _lattice_text, _one_column, write_csv_rows
from dgauss.cli._io import Output, _atomic, _suffix, _write_npy

#: The install command that brings pyarrow, named in every error that needs it.
EXTRA = "pip install 'dgauss[tables]'"

#: The oldest pyarrow the fast path and Parquet use.
PYARROW_MIN = 14

#: Bytes of CSV parsed per batch.
READ_BLOCK = 1 << 18

#: Rows written per batch (the progress bar moves between batches).
WRITE_ROWS = 1 << 16

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@functools.lru_cache(maxsize=1)
def _arrow() -> Any | None:
    """pyarrow with its compute and csv modules (``pa``, ``pa.compute``, ``pa.csv``), or
    None when pyarrow (>= 14) is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.compute
        import pyarrow.csv  # noqa: F401 (imported for pa.csv)
    except ImportError:
        return None
    if int(pa.__version__.split(".")[0]) < PYARROW_MIN:
        return None
    assert pyarrow.compute is not None
    return pa


def _pa() -> Any:
    """pyarrow, where it is known to be installed."""
    pa = _arrow()
    assert pa is not None, "pyarrow is needed here"
    return pa


def available() -> bool:
    """Whether pyarrow (>= 14) can be imported: the fast CSV path and Parquet."""
    return _arrow() is not None


def check_options(args: argparse.Namespace) -> None:
    """ValueError naming the extra when the input or ``-o`` is a ``.parquet`` file and
    pyarrow is not installed, or naming ``--granularity`` when it is not 1 with a Parquet
    file (whose noised columns hold integers: values, not steps of a lattice); checked with
    the options, before anything is read or drawn."""
    for path in (args.input, args.output):
        if path is None or _suffix(path) != ".parquet":
            continue
        if not available():
            raise ValueError(
                f"{path}: reading and writing Parquet needs pyarrow >= {PYARROW_MIN}, "
                f"the 'tables' extra: {EXTRA}"
            )
        g = getattr(args, "granularity", None)
        if g is not None and g != 1:
            raise ValueError(
                f"--granularity must be 1 with a Parquet file ({path}), whose noised columns "
                f"hold integers, got {_lattice_text(1, g)}; write .csv or .npy for values "
                "on a lattice"
            )


@contextlib.contextmanager
def _malloc() -> Iterator[None]:
    """pyarrow allocating with the C library's malloc (its default pool's own allocator
    keeps what is freed for itself): what the table frees is then reused by NumPy's arrays
    (the values, the noise), which at 10^6 rows saves some 10-20 MB.  Restored after."""
    pa = _pa()
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _input_error(message: str) -> Exception:

    return InputError(message)


@dataclass
class ArrowTable:
    """A table read by pyarrow: the columns (the noised ones blanked), the values noised.

    ``values`` holds the noised columns' integers, one row per table row (int64, or object
    when a noisy value leaves int64), in the order the plain path draws their noise (row by
    row).  ``header`` is a CSV's header as Python's :mod:`csv` parsed it (None for Parquet).
    A CSV's table is not kept (``table`` None): ``source`` streams its rows again, as
    pyarrow record batches of strings, for the output.
    """

    table: Any  # pyarrow.Table, or None for a CSV
    header: list[str] | None
    columns: list[int]
    values: np.ndarray
    source: Any = None  # () -> an iterator of the CSV's data rows as record batches

    @property
    def count(self) -> int:
        return int(self.values.size)

    def noised(self, mech, clip) -> ArrowTable:
        """The table with ``mech``'s noise added to its values: one call on all of them,
        row by row, as the plain path makes it (the same noise for the same random bits)."""
        noisy = mech(self.values.reshape(-1), clip=clip, overflow="object")
        return replace(self, values=np.asarray(noisy).reshape(self.values.shape))

    def write(self, args: argparse.Namespace, steps, output: Output | None = None) -> None:
        """Write to ``-o`` (.csv, .npy, .parquet; a file whole or not at all, through
        ``output``) or stdout (CSV)."""
        with _malloc():
            self._write(args, steps, output)

    def _write(self, args: argparse.Namespace, steps, output: Output | None) -> None:
        path = args.output
        suffix = None if path is None else _suffix(path)
        if suffix == ".npy":
            array = self.values[:, 0] if self.values.shape[1] == 1 else self.values
            _save_npy(path, array, output)
        elif suffix == ".parquet":
            _save_parquet(path, self._typed(), output)
        else:
            self._write_csv(path, args.delimiter or ",", steps, output)

    def _names(self) -> list[str]:
        return list(self.header) if self.header is not None else self.table.column_names

    def _noisy_column(self, i: int, start: int = 0, stop: int | None = None):
        """The ``i``-th noised column's noisy values from row ``start`` to ``stop``, as a
        pyarrow int64 array, or as decimal strings where some value leaves int64."""
        pa = _pa()
        column = self.values[start:stop, i]
        if column.dtype != object:
            return _arrow_int64s(column)
        return pa.array([str(v) for v in column.tolist()], type=pa.string())

    def _typed(self):
        """The table with the noisy values in int64 columns (InputError if one leaves int64)."""
        if self.values.dtype == object:
            _int64_or_error(self.values)
        table = self.table if self.table is not None else _pa().Table.from_batches(self.source())
        for i, j in enumerate(self.columns):
            values = self.values[:, i].astype(np.int64)
            table = table.set_column(j, self._names()[j], _arrow_int64s(values))
        return table.rename_columns(self._names())

    def _as_text(self):
        """The table with its other columns as strings (a Parquet file's numbers, dates and
        so on in pyarrow's formatting; a missing value as an empty field)."""
        pa = _pa()
        table = self.table
        for j, name in enumerate(self._names()):
            column = table.column(j)
            if j in self.columns or (pa.types.is_string(column.type) and not column.null_count):
                continue
            try:
                text = pa.compute.cast(column, pa.string()).fill_null("")
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
                raise _input_error(
                    f"column {name!r} ({column.type}) cannot be written as CSV: {exc}; "
                    "write .parquet"
                ) from None
            table = table.set_column(j, name, text)
        return table

    def _write_csv(
        self, path: str | None, delimiter: str, steps, output: Output | None = None
    ) -> None:

        rows = self.values.shape[0]
        header = io.StringIO()
        write_csv_rows(header, [self._names()], delimiter)

        def batches():
            yield header.getvalue()
            start = 0
            for batch in self._text_batches():
                stop = start + batch.num_rows
                for i, j in enumerate(self.columns):
                    column = self._noisy_column(i, start, stop)
                    batch = batch.set_column(j, f"f{j}", column)
                yield _csv_text(batch, delimiter)
                start = stop
                steps.at(2, start / max(rows, 1), "writing")
            if start != rows:
                raise _input_error("the input changed while it was being noised")

        if path is None:
            for text in batches():
                _write_stdout(text)  # whole, or BrokenPipeError when the reader left
        else:
            _atomic(path, "w", lambda f: f.writelines(batches()), output)  # the plain "w"

    def _text_batches(self) -> Iterator[Any]:
        """The rows to write, every column as strings, in batches: a CSV's streamed again
        (in blocks of up to WRITE_ROWS rows), a Parquet table's sliced."""
        if self.table is None:
            from_batches = _pa().Table.from_batches
            for batch in self.source():
                for start in range(0, batch.num_rows, WRITE_ROWS):
                    yield from_batches([batch.slice(start, WRITE_ROWS)])
            return
        table = self._as_text()
        for start in range(0, table.num_rows, WRITE_ROWS):
            yield table.slice(start, WRITE_ROWS)


def _int64_or_error(values: np.ndarray) -> np.ndarray:
    if not all(_INT64_MIN <= int(v) <= _INT64_MAX for v in values.ravel()):
        raise _input_error("a released value does not fit int64; write .csv instead")
    return values.astype(np.int64)


def _save_npy(path: str, array: np.ndarray, output: Output | None = None) -> None:
    """``array`` (int64, or object of ints that must fit int64) as a .npy file, atomically."""
    if array.dtype == object:
        array = _int64_or_error(array)
    _atomic(path, "wb", lambda f: _write_npy(f, array), output)


def _save_parquet(path: str, table, output: Output | None = None) -> None:
    import pyarrow.parquet as pq

    _atomic(path, "wb", lambda f: pq.write_table(table, f), output)


# -- reading ------------------------------------------------------------------------------


def read(args: argparse.Namespace, steps) -> ArrowTable | None:
    """The input read by pyarrow: a Parquet file (InputError if it cannot be noised), or a
    CSV file the fast path can take; None for a CSV (or .npy) the plain path must read."""
    if _suffix(args.input) == ".parquet":
        with _malloc():
            table = _read_parquet(args.input, args.column, steps)
            if args.output is None or _suffix(args.output) == ".csv":
                # the other columns as text now: one that cannot be is refused before the
                # ledger is charged and the noise drawn, not after
                table = replace(table, table=table._as_text())
            return table
    pa = _arrow()
    if pa is None or _suffix(args.input) == ".npy":
        return None
    if getattr(args, "granularity", None) is not None:
        return None  # cells such as 7.0 are taken: the plain path's rules
    try:
        with _malloc():
            return _read_csv(args, steps)
    except (pa.ArrowException, ValueError, OSError, UnicodeDecodeError, csv.Error):
        return None  # the plain path reads it, or says what is wrong with it


def _read_csv(args: argparse.Namespace, steps) -> ArrowTable | None:
    """A CSV through pyarrow, or None where its parse might not be Python's (see the module)."""

    pa = _pa()
    path = args.input
    steps.at(0, 0, f"reading {os.path.basename(path)}")
    # the header and delimiter exactly as the plain path finds them
    with open(path, newline="", encoding="utf-8-sig") as f:
        delimiter = _delimiter(args.delimiter, f.readline())
        f.seek(0)
        header = next(csv.reader(f, delimiter=delimiter), None)
    if not header or len(delimiter.encode()) != 1:
        return None
    names = [h.strip() for h in header]
    if any(names.count(name) != 1 for name in args.column):
        return None  # no such column, or several: the plain path says so
    columns = [names.index(name) for name in args.column]
    before = os.stat(path)
    limit = csv.field_size_limit()
    parts, rows, blocks = [], 0, 0
    for batch in _csv_batches(path, delimiter, header):
        if batch.num_columns != len(header) or any(t != pa.string() for t in batch.schema.types):
            return None
        if _longest_field(batch) >= limit:
            return None  # Python's csv refuses a field this long
        part = np.empty((batch.num_rows, len(columns)), dtype=np.int64)
        for i, j in enumerate(columns):
            if not _integers(batch.column(j), part[:, i]):
                return None
        parts.append(part)
        rows += batch.num_rows
        blocks += 1
        steps.at(0, blocks * READ_BLOCK / max(before.st_size, 1), f"checking {rows:,} rows")
    if rows == 0:
        return None
    args.delimiter = delimiter  # the output uses the input's, as on the plain path
    values = np.concatenate(parts)
    del parts

    def again() -> Iterator[Any]:
        now = os.stat(path)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        ):
            raise _input_error(f"{path} changed while it was being noised")
        return _csv_batches(path, delimiter, header)

    return ArrowTable(None, header, columns, values, source=again)


def _csv_batches(path: str, delimiter: str, header: list[str]) -> Iterator[Any]:
    """The CSV's data rows, every column as strings, streamed by pyarrow in blocks of
    READ_BLOCK bytes (one thread: on two cores as fast as several, and less memory); its
    first row must be ``header`` (as Python's csv read it), and is left out.  A parse
    pyarrow refuses raises pyarrow's ArrowInvalid; a first row that is not ``header``, or
    of another length, ValueError."""
    pa = _pa()
    reader = pa.csv.open_csv(
        path,
        read_options=pa.csv.ReadOptions(
            autogenerate_column_names=True, use_threads=False, block_size=READ_BLOCK
        ),
        parse_options=pa.csv.ParseOptions(
            delimiter=delimiter,
            quote_char='"',
            double_quote=True,
            escape_char=False,
            newlines_in_values=True,
            ignore_empty_lines=False,  # an empty line is a row of empty cells: refused later
        ),
        convert_options=pa.csv.ConvertOptions(
            column_types={f"f{i}": pa.string() for i in range(len(header))},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
        memory_pool=_pool(),
    )
    first = True
    for batch in reader:
        if first and batch.num_rows:
            if (
                batch.num_columns != len(header)
                or [batch.column(j)[0].as_py() for j in range(len(header))] != header
            ):
                raise ValueError("pyarrow reads the header otherwise than Python's csv")
            batch, first = batch.slice(1), False
        if batch.num_rows:
            yield batch


def _longest_field(batch) -> int:
    """The most bytes in one field of a record batch of strings."""
    return max((_longest(column) for column in batch.columns), default=0)


def _pool():
    """The memory pool for the CSV's strings: the C library's malloc, so that the memory
    they free is reused by NumPy's arrays (the noise, the output) rather than kept apart."""
    return _pa().system_memory_pool()


def _chunk_bytes(chunk) -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow string array's offsets (relative to its first string) and UTF-8 bytes."""
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)
    offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data = chunk.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets - offsets[0], raw[offsets[0] : offsets[-1]]


def _holds(column, chars: str) -> bool:
    """Whether a string of the pyarrow string column holds one of the ASCII ``chars``."""
    found = [c.encode("ascii") for c in chars]
    for chunk in getattr(column, "chunks", [column]):
        data = _chunk_bytes(chunk)[1].tobytes()
        if any(c in data for c in found):  # bytes.__contains__: a memchr-fast scan
            return True
    return False


def _only_digits(column) -> bool:
    """Whether the strings of the pyarrow string column hold only ASCII digits and ``-``."""
    for chunk in getattr(column, "chunks", [column]):
        data = _chunk_bytes(chunk)[1]
        if data.size and (data.min() < ord("-") or data.max() > ord("9")):
            return False
    return not _holds(column, "./")  # the two bytes between - and 0


def _longest(column) -> int:
    """The most bytes in one string of a pyarrow string column (0 when it has none)."""
    chunks = getattr(column, "chunks", [column])
    return max((int(np.diff(_chunk_bytes(c)[0]).max(initial=0)) for c in chunks), default=0)


def _integers(column, out: np.ndarray) -> bool:
    """Whether the cells of a string column are integers as the plain path takes them
    (``int(cell.strip())`` where ``cell.strip()`` is ``[+-]?[0-9]+``) that fit int64: if so,
    their values are now in ``out``; if not, the plain path decides."""
    pa = _pa()
    pc = pa.compute
    start = 0
    for chunk in getattr(column, "chunks", [column]):  # chunk by chunk: little memory
        # plain cells: pyarrow's parse takes -?[0-9]+ exactly as int() does, but it also takes
        # hexadecimal (0x1F): only digits and minus signs may be there
        if not _only_digits(chunk):
            # spaces or tabs around, or a plus sign: what the plain path strips and takes
            if not pc.all(pc.match_substring_regex(chunk, _LENIENT)).as_py():
                return False
            chunk = pc.replace_substring_regex(chunk, r"^[ \t]*\+?|[ \t]*$", "")
        try:
            integers = pc.cast(chunk, pa.int64(), memory_pool=_pool())
        except pa.ArrowInvalid:
            return False  # '', '-', '1-2', or beyond int64
        out[start : start + len(chunk)] = _int64s(integers)
        start += len(chunk)
    return True


#: A cell the plain path strips and takes, with at most spaces and tabs to strip.
_LENIENT = r"^[ \t]*[+-]?[0-9]+[ \t]*$"


def _int64s(column) -> np.ndarray:
    """A pyarrow int64 column without nulls as one NumPy array, read from its buffers (its
    own to_numpy imports pandas: half a second)."""
    parts = [
        np.frombuffer(c.buffers()[1], dtype=np.int64)[c.offset : c.offset + len(c)]
        for c in getattr(column, "chunks", [column])
        if len(c)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _arrow_int64s(values: np.ndarray):
    """An int64 NumPy array as a pyarrow array, through its buffer (pa.array imports pandas)."""
    pa = _pa()
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _read_parquet(path: str, names: list[str], steps) -> ArrowTable:
    """A Parquet file whose ``names`` columns hold integers (any width, no nulls)."""
    pa = _pa()
    import pyarrow.parquet as pq

    steps.at(0, 0, f"reading {os.path.basename(path)}")
    try:
        table = pq.ParquetFile(path).read()  # (read_table imports pandas, half a second)
    except (pa.ArrowException, OSError) as exc:
        raise _input_error(f"cannot read {path} as Parquet: {exc}") from None
    have = table.column_names
    columns = []
    for name in names:
        if name not in have:
            raise _input_error(f"no column {name!r} in {path}; its columns are: {', '.join(have)}")

        _one_column(path, have, name)
        columns.append(have.index(name))
    if table.num_rows == 0:
        raise _input_error(f"{path} has no rows")
    values = np.empty((table.num_rows, len(columns)), dtype=np.int64)
    exact = []
    for j in columns:
        column, name = table.column(j), have[j]
        if not pa.types.is_integer(column.type):
            raise _input_error(
                f"{path}, column {name!r}: {column.type} values; counts must be integers "
                "(they are never rounded)"
            )
        if column.null_count:
            rows = pa.compute.indices_nonzero(pa.compute.is_null(column.combine_chunks()))
            first = ", ".join(str(r + 1) for r in rows[:5].to_pylist())
            raise _input_error(
                f"{path}, column {name!r}: {column.null_count:,} missing value(s), the first "
                f"at row(s) {first}; counts are never imputed"
            )
        try:
            exact.append(_int64s(pa.compute.cast(column, pa.int64())))
        except pa.ArrowInvalid:  # uint64 beyond int64: exact Python ints
            exact.append(np.array(column.to_pylist(), dtype=object))
    if any(e.dtype == object for e in exact):
        values = np.empty((table.num_rows, len(columns)), dtype=object)
    for i, e in enumerate(exact):
        values[:, i] = e
    return ArrowTable(table, None, columns, values)


def write_plain_parquet(
    path: str, header, rows, columns, array, output: Output | None = None
) -> None:
    """The plain path's noisy table as Parquet: the noised columns int64, the others
    strings, as the CSV held them; or an array as one int64 column ``value``."""
    pa = _pa()
    if array is not None:
        flat = array.reshape(-1)
        table = pa.table(
            {"value": pa.array(_int64_or_error(flat) if flat.dtype == object else flat)}
        )
    else:
        arrays = []
        for j in range(len(header)):
            cells = [row[j] for row in rows]
            if j in columns:
                ints = np.array([int(c) for c in cells], dtype=object)
                arrays.append(pa.array(_int64_or_error(ints), type=pa.int64()))
            else:
                arrays.append(pa.array(cells, type=pa.string()))
        table = pa.Table.from_arrays(arrays, names=list(header))
    _save_parquet(path, table, output)


# -- writing CSV ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _quoting(delimiter: str) -> tuple[str, str, bool]:
    """How this Python's :func:`csv.writer` (``lineterminator="\\n"``) quotes, found by asking
    it: the characters that make it quote a field wherever they are, those whose effect we
    cannot describe so simply (such a field goes through csv.writer itself), and whether
    the rest of its rule is the usual one (a quote doubled inside quotes; an empty field
    bare, except alone in its row, ``""``).  Python 3.11 quotes for the delimiter, ``"``
    and ``\\n``; other versions may add to these."""

    def line(*fields: str) -> str | None:
        out = io.StringIO()
        try:
            csv.writer(out, lineterminator="\n", delimiter=delimiter).writerow(fields)
        except csv.Error:
            return None
        return out.getvalue()

    a, b, x = [f for f in "abxy" if f != delimiter][:3]  # letters, not the delimiter
    always, unsure = "", ""
    candidates = {delimiter, '"', "\x7f", "\x85", "\u2028", *map(chr, range(33))}
    for c in sorted(candidates):
        fields = (c, a + c, c + a, a + c + b)
        written = [line(field, x) for field in fields]
        quoted = [text is not None and text.startswith('"') for text in written]
        if all(quoted):
            always += c
        elif any(quoted) or None in written:
            unsure += c
    usual = (
        line(f'{a}"{b}', x) == f'"{a}""{b}"{delimiter}{x}\n'
        and line("", x) == f"{delimiter}{x}\n"
        and line("") == '""\n'
        and line(a + b, x) == f"{a}{b}{delimiter}{x}\n"
    )
    return always, unsure, usual


def _class(chars: str) -> str:
    """An RE2 character class of ``chars``."""
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in chars) + "]"


def _csv_text(batch, delimiter: str) -> str:
    """The rows of ``batch`` (string and int64 columns) as csv.writer writes them with
    ``delimiter`` and ``lineterminator="\\n"``, in one string."""
    pa = _pa()
    pc = pa.compute
    always, unsure, usual = _quoting(delimiter)
    if "\r" not in always:  # a \r is quoted as 3.13 does, by csv.writer only before it
        unsure += "\r"
    strings = [c.combine_chunks() for c in batch.columns]
    if set(always + unsure) & set("0123456789-"):  # a delimiter that integers may hold
        strings = [c if pa.types.is_string(c.type) else pc.cast(c, pa.string()) for c in strings]
    texts = [c for c in strings if pa.types.is_string(c.type)]
    non_ascii = any(ord(c) >= 128 for c in always + unsure)
    if not usual or non_ascii or any(_holds(c, unsure) for c in texts):
        return _python_text(strings, delimiter)
    needs = [pa.types.is_string(c.type) and _holds(c, always) for c in strings]
    alone = len(strings) == 1  # an empty field alone in its row is written ""
    if not any(needs) and not (alone and texts and pc.any(pc.equal(strings[0], "")).as_py()):
        try:  # no field needs quotes: pyarrow's writer, told never to quote, writes them bare
            out = pa.BufferOutputStream()
            options = pa.csv.WriteOptions(
                include_header=False, delimiter=delimiter, quoting_style="none"
            )
            pa.csv.write_csv(pa.Table.from_arrays(strings, names=batch.column_names), out, options)
            return out.getvalue().to_pybytes().decode("utf-8")
        except pa.ArrowInvalid:
            pass  # it refuses some character that Python writes bare (\r): join them below
    fields = []
    for column, quote in zip(strings, needs, strict=True):
        column = column if pa.types.is_string(column.type) else pc.cast(column, pa.string())
        if quote or alone:
            pattern = _class(always) + ("|^$" if alone else "")
            quoted = pc.binary_join_element_wise(
                '"', pc.replace_substring(column, '"', '""'), '"', ""
            )
            column = pc.if_else(pc.match_substring_regex(column, pattern), quoted, column)
        fields.append(column)
    fields[-1] = pc.binary_join_element_wise(fields[-1], "\n", "")
    lines = pc.binary_join_element_wise(*fields, delimiter).cast(pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
    offsets = offsets[lines.offset : lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    return bytes(memoryview(data)[offsets[0] : offsets[-1]]).decode("utf-8")


def _python_text(strings: list, delimiter: str) -> str:
    """The rows written by csv.writer itself (the plain path's way, slow)."""

    out = io.StringIO()
    columns = [
        c.to_pylist() if _pa().types.is_string(c.type) else [str(v) for v in c.to_pylist()]
        for c in strings
    ]
    write_csv_rows(out, list(zip(*columns, strict=True)), delimiter)
    return out.getvalue()
