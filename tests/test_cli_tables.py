"""``dgauss noise`` through pyarrow (the ``tables`` extra): the fast CSV path writes what the
plain path writes, byte for byte, and Parquet goes in and out exactly."""

from __future__ import annotations

import csv
import io
import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import cli
from dgauss.cli import _tables

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the tests of the fast path and Parquet skip; the refusal still runs
    pa = pq = None

#: A test that needs the tables extra.
needs_pyarrow = pytest.mark.skipif(pa is None, reason="needs the tables extra (pyarrow)")

SEED = 20261126


@pytest.fixture
def seeded(monkeypatch):
    """Every mechanism call draws from a generator seeded alike; the calls are recorded
    (values in, noise added)."""
    calls = []
    for cls in (dgauss.GaussianMechanism, dgauss.LaplaceMechanism):
        original = cls.__call__

        def call(self, values, *args, _original=original, **kwargs):
            kwargs["rng"] = np.random.default_rng(SEED)
            result = _original(self, values, *args, **kwargs)
            flat = [int(v) for v in np.asarray(values).ravel().tolist()]
            noisy = [int(v) for v in np.asarray(result).ravel().tolist()]
            calls.append((flat, [b - a for a, b in zip(flat, noisy, strict=True)]))
            return result

        monkeypatch.setattr(cls, "__call__", call)
    return calls


@pytest.fixture
def paths(monkeypatch):
    """Which path read each input: 'fast' (pyarrow) or 'plain'."""
    taken = []
    original = _tables.read

    def read(args, steps):
        table = original(args, steps)
        taken.append("plain" if table is None else "fast")
        return table

    monkeypatch.setattr(_tables, "read", read)
    return taken


def without_pyarrow(monkeypatch):
    """pyarrow made unimportable, as on a machine without the extra."""
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    _tables._arrow.cache_clear()


def run(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["noise", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def both(tmp_path, capsys, monkeypatch, text: bytes, options: list[str]):
    """(status, stdout, stderr, output bytes) of the fast and the plain path on ``text``."""
    source = tmp_path / "in.csv"
    source.write_bytes(text)
    results = []
    for plain in (False, True):
        out = tmp_path / ("plain.csv" if plain else "fast.csv")
        out.unlink(missing_ok=True)
        with monkeypatch.context() as m:
            if plain:
                without_pyarrow(m)
            status, stdout, err = run(capsys, source, *options, "-o", out)
        _tables._arrow.cache_clear()
        results.append((status, stdout, err, out.read_bytes() if out.exists() else None))
    return results


def model(text: bytes, names: list[str], noise: list[int], delimiter: str) -> bytes:
    """What the output must be, written here from scratch: the rows as Python's csv reads
    them, the named columns' cells int(cell.strip()) + noise (row by row), csv.writer."""
    rows = list(csv.reader(io.StringIO(text.decode("utf-8-sig"), newline=""), delimiter=delimiter))
    header, body = rows[0], rows[1:]
    columns = [[h.strip() for h in header].index(n) for n in names]
    it = iter(noise)
    for row in body:
        for j in columns:
            row[j] = str(int(row[j].strip()) + next(it))
    out = io.StringIO()
    for row in [header, *body]:
        if any("\r" in field for field in row):  # quoted on every Python, as 3.13 does
            quoted = [
                f'"{f.replace(chr(34), 2 * chr(34))}"'
                if set(f) & {delimiter, '"', "\n", "\r"}
                else f
                for f in row
            ]
            out.write(delimiter.join(quoted) + "\n")
        else:
            csv.writer(out, lineterminator="\n", delimiter=delimiter).writerow(row)
    return out.getvalue().encode()


# -- the two CSV paths agree ----------------------------------------------------------------

DELIMITERS = [",", ";", "\t", "|"]
#: Other columns' cells (a bare \r, which csv.writer does not quote, would end the row).
OTHER_CELLS = st.text(
    alphabet=st.sampled_from(list("ab ,;|\t\"\n'é€\u2028\x85\x00x1-.")), max_size=6
)
WRITER_CELLS = st.text(alphabet=st.sampled_from(list("ab ,;|\t\"\r\n'é\x85\x00-1")), max_size=6)


@st.composite
def tables(draw):
    """A CSV as an office might write it: the other columns any text (quoted as the writer
    needs), the counts integers of any size, with spaces, tabs or a plus sign sometimes."""
    delimiter = draw(st.sampled_from(DELIMITERS))
    width = draw(st.integers(1, 4))
    noised = draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=2, unique=True))
    names = [f"c{j}" for j in range(width)]
    header = [f" {n}" if draw(st.booleans()) else n for n in names]  # names are stripped
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        row = []
        for j in range(width):
            if j in noised:
                value = draw(
                    st.one_of(
                        st.integers(-(2**63), 2**63 - 1),
                        st.integers(-100, 100),
                        st.integers(-(2**80), 2**80),
                    )
                )
                sign = "-" if value < 0 else draw(st.sampled_from(["", "", "+"]))
                zeros = draw(st.sampled_from(["", "", "0", "00"]))
                spaces = draw(st.sampled_from(["", "", "", " ", "\t", " \t"]))
                after = draw(st.sampled_from(["", "", "", " ", "\t"]))
                row.append(f"{spaces}{sign}{zeros}{abs(value)}{after}")
            else:
                row.append(draw(OTHER_CELLS))
        rows.append(row)
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]))
    if any("\n" in cell for row in rows for cell in row):
        quoting = csv.QUOTE_ALL  # csv.writer quotes \n only when in its line end
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, quoting=quoting, lineterminator=ending)
    try:
        writer.writerow(header)
        writer.writerows(rows)
    except csv.Error:  # a CSV this Python's writer cannot write (3.10: some quotings)
        assume(False)
    text = buffer.getvalue()
    if draw(st.booleans()):
        text = text[: -len(ending)]  # no line end after the last row
    bom = draw(st.booleans())
    blank = draw(st.integers(0, 9)) == 0  # a blank line (one at the end, often): refused
    if blank:
        if draw(st.booleans()):  # after the header
            at = text.find(ending) + len(ending)
            text = text[:at] + ending + text[at:]
        else:
            text += ending if text.endswith(ending) else 2 * ending
    text = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    return text, delimiter, [names[j] for j in noised], blank


@needs_pyarrow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=tables(), sniff=st.booleans())
@pytest.mark.long
def test_fast_and_plain_paths_write_the_same_bytes(
    tmp_path_factory, capsys, monkeypatch, seeded, case, sniff
):
    text, delimiter, names, blank = case
    tmp = tmp_path_factory.mktemp("t")
    options = [a for n in names for a in ("--column", n)] + ["--sigma2", "1e6"]
    if not sniff:
        options += ["--delimiter", delimiter]
    seeded.clear()
    fast, plain = both(tmp, capsys, monkeypatch, text, options)
    assert fast == plain
    status, _, err, output = fast
    if status != 0:  # a blank line, or a delimiter sniffed wrong: both paths refuse alike
        assert (blank or sniff) and output is None and err.startswith("dgauss noise: error:")
        return
    assert not blank
    first = io.StringIO(text.decode("utf-8-sig"), newline="").readline()
    used = delimiter if not sniff else cli.noise._delimiter(None, first)
    (values, noise), _ = seeded
    assert output == model(text, names, noise, used)


@needs_pyarrow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    body=st.text(alphabet=st.sampled_from(list('1-0 ,"\r\n\tx.e+')), max_size=30),
    head=st.sampled_from(["n,m\n", "n\n", '"n",m\r\n', "m,n,o\n"]),
)
@pytest.mark.long
def test_any_text_both_paths_agree(tmp_path_factory, capsys, monkeypatch, seeded, body, head):
    """Hostile text: unterminated quotes, empty lines, short rows, stray quotes, floats. The
    fast path either writes the plain path's bytes or leaves the file to it."""
    tmp = tmp_path_factory.mktemp("t")
    text = (head + body).encode()
    fast, plain = both(tmp, capsys, monkeypatch, text, ["--column", "n", "--sigma2", "4"])
    assert fast == plain


@needs_pyarrow
def test_a_plain_table_takes_the_fast_path(tmp_path, capsys, seeded, paths):
    rows = "".join(f"r{i};{i % 7};{-i}\n" for i in range(5000))
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbfregion;age;count\n" + rows.encode())
    out = tmp_path / "o.csv"
    status, _, err = run(capsys, path, "--column", "count", "--sigma2", 9, "-o", out)
    assert status == 0 and paths == ["fast"], err
    ((values, noise),) = seeded
    assert values == [-i for i in range(5000)] and len(noise) == 5000
    assert out.read_bytes() == model(path.read_bytes(), ["count"], noise, ";")


@needs_pyarrow
@pytest.mark.parametrize(
    "cell, reason",
    [
        ("7.0", "a float"),
        ("1e3", "an exponent"),
        ("", "an empty cell"),
        ("0x1F", "hexadecimal, which pyarrow's parse takes"),
        ("1_000", "an underscore, which int() takes"),
        ("\u0663", "an Arabic-Indic digit, which int() takes"),
        ("\xa05", "a no-break space, which str.strip() strips"),
        ("9223372036854775808", "beyond int64"),
        ("+-5", "two signs"),
    ],
)
def test_cells_the_fast_path_leaves_to_the_plain_path(
    tmp_path, capsys, monkeypatch, seeded, paths, cell, reason
):
    text = f"n,m\n1,a\n{cell},b\n".encode()
    fast, plain = both(tmp_path, capsys, monkeypatch, text, ["--column", "n", "--sigma2", "4"])
    assert fast == plain, reason
    assert paths[0] == "plain", reason


@needs_pyarrow
@pytest.mark.parametrize("text", ["n,m\n1,2\n\n", "n,m\r\n1,2\r\n\r\n3,4\r\n", "n\n1\n\n2\n"])
def test_a_blank_line_is_refused_on_both_paths(tmp_path, capsys, monkeypatch, seeded, text):
    """Python's csv reads a blank line as a row of no fields, which the plain path refuses;
    pyarrow reads a row of empty cells (or, if asked, skips it): the plain path decides."""
    fast, plain = both(
        tmp_path, capsys, monkeypatch, text.encode(), ["--column", "n", "--sigma2", "4"]
    )
    assert fast == plain
    assert fast[0] == 1 and "0 fields where the header has" in fast[2] and fast[3] is None


@needs_pyarrow
def test_a_field_past_csvs_limit_is_left_to_the_plain_path(tmp_path, capsys, monkeypatch, seeded):
    long = "x" * csv.field_size_limit() + "x"  # Python's csv refuses it; pyarrow would not
    text = f"n,note\n1,a\n2,{long}\n".encode()
    fast, plain = both(tmp_path, capsys, monkeypatch, text, ["--column", "n", "--sigma2", "4"])
    assert fast == plain
    assert fast[0] == 1 and "field larger than field limit" in fast[2]


@needs_pyarrow
def test_integers_exactly_as_int(capsys):
    """_integers against int(cell.strip()) on the plain path's pattern, cell by cell."""
    cells = ["0", "-0", "007", "+7", " 12\t", "-9223372036854775808", "9223372036854775807"]
    out = np.empty(len(cells), dtype=np.int64)
    assert _tables._integers(pa.array(cells), out)
    assert out.tolist() == [int(c.strip()) for c in cells]


@needs_pyarrow
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789+- \t\xa0x._\u0663e")), max_size=22))
def test_integers_never_takes_a_cell_the_plain_path_refuses(cell):
    out = np.zeros(1, dtype=np.int64)
    taken = _tables._integers(pa.array([cell]), out)
    plain = re.fullmatch(r"[+-]?[0-9]+", cell.strip()) is not None
    if taken:
        assert plain and int(out[0]) == int(cell.strip())
    elif plain and re.fullmatch(r"[ \t]*[+-]?[0-9]+[ \t]*", cell):
        assert not -(2**63) <= int(cell.strip()) < 2**63  # left only when beyond int64


@needs_pyarrow
@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(WRITER_CELLS, min_size=3, max_size=3), min_size=1, max_size=8),
    delimiter=st.sampled_from([*DELIMITERS, "a", "1", "-", " "]),
    width=st.integers(1, 3),
)
def test_csv_text_is_csv_writers(rows, delimiter, width):
    """The batch writer against csv.writer itself, on any strings and delimiters (a digit
    or minus sign too, which the integers then hold), an int64 column last; a row with a
    carriage return in a field may differ (it is quoted on every Python), but every row
    reads back as it was."""
    rows = [row[:width] for row in rows]
    ints = [len(r[0]) * 10**17 - 5 for r in rows]
    columns = [pa.array([r[j] for r in rows], pa.string()) for j in range(width)]
    names = list("abcd")[: width + 1]
    batch = pa.Table.from_arrays([*columns, pa.array(ints, pa.int64())], names=names)
    alone = pa.Table.from_arrays([columns[0]], names=["a"])  # "" alone in a row is quoted
    for table, lines in (
        (batch, [[*r, str(i)] for r, i in zip(rows, ints, strict=True)]),
        (alone, [[r[0]] for r in rows]),
    ):
        expected = io.StringIO()
        try:
            csv.writer(expected, lineterminator="\n", delimiter=delimiter).writerows(lines)
        except csv.Error:  # what this Python's writer refuses, the batch writer refuses too
            with pytest.raises(csv.Error):
                _tables._csv_text(table, delimiter)
            continue
        written = _tables._csv_text(table, delimiter)
        assert list(csv.reader(io.StringIO(written, newline=""), delimiter=delimiter)) == lines
        if "\r" not in "".join(map("".join, lines)):
            assert written == expected.getvalue()


# -- Parquet --------------------------------------------------------------------------------


@pytest.fixture
def parquet(tmp_path):
    table = pa.table(
        {
            "region": pa.array(["Nord", "Sud", None, "Centro, isole"]),
            "count": pa.array([5, 0, 2**31 - 1, -3], pa.int32()),
            "share": pa.array([0.5, 1.25, float("nan"), -0.0]),
            "when": pa.array([1, 2, 3, 4], pa.date32()),
            "big": pa.array([0, 1, 2**64 - 1, 7], pa.uint64()),
        }
    )
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    return path, table


@needs_pyarrow
def test_parquet_round_trip(tmp_path, capsys, seeded, parquet):
    path, table = parquet
    out = tmp_path / "out.parquet"
    status, _, err = run(capsys, path, "--column", "count", "--sigma2", 100, "-o", out)
    assert status == 0, err
    ((values, noise),) = seeded
    assert values == table.column("count").to_pylist()
    released = pq.read_table(out)
    assert released.column_names == table.column_names
    assert released.schema.field("count").type == pa.int64()
    assert released.column("count").to_pylist() == [
        v + e for v, e in zip(values, noise, strict=True)
    ]
    for name in ("region", "share", "when", "big"):  # kept, types and all
        assert released.column(name).type == table.column(name).type
        assert str(released.column(name).to_pylist()) == str(table.column(name).to_pylist())


@needs_pyarrow
def test_parquet_to_csv_and_npy_and_beyond_int64(tmp_path, capsys, seeded, parquet):
    path, table = parquet
    status, stdout, err = run(capsys, path, "--column", "count", "--column", "big", "--sigma2", 1)
    assert status == 0, err
    ((values, noise),) = seeded
    released = [v + e for v, e in zip(values, noise, strict=True)]  # row by row
    assert values == [
        x
        for row in zip(*(table.column(n).to_pylist() for n in ("count", "big")), strict=True)
        for x in row
    ]
    rows = list(csv.reader(io.StringIO(stdout)))
    assert rows[0] == table.column_names
    assert [int(x) for r in rows[1:] for x in (r[1], r[4])] == released  # 2**64 - 1 exact
    assert [r[0] for r in rows[1:]] == ["Nord", "Sud", "", "Centro, isole"]  # null: empty
    assert [r[3] for r in rows[1:]] == ["1970-01-02", "1970-01-03", "1970-01-04", "1970-01-05"]
    npy = tmp_path / "o.npy"
    seeded.clear()
    status, _, err = run(capsys, path, "--column", "big", "--sigma2", 1, "-o", npy)
    assert status == 1 and "does not fit int64" in err and not npy.exists()
    seeded.clear()
    status, _, err = run(capsys, path, "--column", "count", "--sigma2", 1, "-o", npy)
    ((values, noise),) = seeded
    assert status == 0 and np.load(npy).tolist() == [
        v + e for v, e in zip(values, noise, strict=True)
    ]


@needs_pyarrow
def test_csv_to_parquet_both_paths(tmp_path, capsys, monkeypatch, seeded):
    path = tmp_path / "in.csv"
    path.write_text("region;count\nNord;5\nSud;-2\n")
    results = []
    for plain in (False, True):
        out = tmp_path / f"out{plain}.parquet"
        with monkeypatch.context() as m:
            if plain:  # the CSV read by Python's csv, the Parquet written from its rows
                m.setattr(_tables, "read", lambda args, steps: None)
            status, _, err = run(capsys, path, "--column", "count", "--sigma2", 4, "-o", out)
        assert status == 0, err
        results.append(pq.read_table(out))
    assert results[0].equals(results[1])
    (values, noise), _ = seeded
    assert results[0].column("count").type == pa.int64()
    assert results[0].column("count").to_pylist() == [5 + noise[0], -2 + noise[1]]
    assert results[0].column("region").to_pylist() == ["Nord", "Sud"]


@needs_pyarrow
@pytest.mark.parametrize(
    "column, message",
    [
        ("missing", "no column 'missing'"),
        ("share", "double values; counts must be integers"),
        ("region", "string values; counts must be integers"),
    ],
)
def test_parquet_columns_refused(tmp_path, capsys, parquet, column, message):
    path, _ = parquet
    status, stdout, err = run(capsys, path, "--column", column, "--sigma2", 1)
    assert status == 1 and message in err and stdout == ""


@needs_pyarrow
def test_parquet_missing_counts_refused_with_their_rows(tmp_path, capsys):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"n": pa.array([1, None, 3, None], pa.int64())}), path)
    status, _, err = run(capsys, path, "--column", "n", "--sigma2", 1, "-o", tmp_path / "o.parquet")
    assert status == 1 and "2 missing value(s), the first at row(s) 2, 4" in err
    assert not (tmp_path / "o.parquet").exists()


def test_without_pyarrow_parquet_is_refused_naming_the_extra(tmp_path, capsys, monkeypatch):
    path = tmp_path / "in.parquet"
    path.write_bytes(b"PAR1")  # refused on its name, before it is read
    csv_path = tmp_path / "c.csv"
    csv_path.write_text("n\n1\n")
    without_pyarrow(monkeypatch)
    out = tmp_path / "o.parquet"
    for args in ([path, "--column", "count"], [csv_path, "--column", "n", "-o", out]):
        status, stdout, err = run(capsys, *args, "--sigma2", 1)
        assert status == 2 and stdout == ""
        assert "needs pyarrow" in err and "pip install 'dgauss[tables]'" in err
    assert not out.exists()
    status, stdout, _ = run(capsys, csv_path, "--column", "n", "--sigma2", 1)  # CSV: plain
    assert status == 0 and stdout.startswith("n\n")
    _tables._arrow.cache_clear()


@needs_pyarrow
@pytest.mark.parametrize(
    "source, target, g",
    [
        ("in.parquet", None, "2"),  # read as steps of 1: half the noise the report claimed
        ("in.parquet", "o.csv", "0.5"),
        ("in.csv", "o.parquet", "0.5"),  # the lattice text 10.5 is no int64: a traceback
        ("in.npy", "o.parquet", "0.5"),  # the steps written as if values: 21 for 10.5
    ],
)
def test_granularity_with_parquet_is_refused_before_anything_is_drawn(
    tmp_path, capsys, seeded, source, target, g
):
    """A Parquet file's noised columns hold integers, not lattice steps: --granularity other
    than 1 is refused with the options (status 2), before any noise is drawn."""
    pq.write_table(pa.table({"n": pa.array([10, 20], pa.int64())}), tmp_path / "in.parquet")
    (tmp_path / "in.csv").write_text("n\n10.5\n20\n")
    np.save(tmp_path / "in.npy", np.array([10.5, 20.0]))
    column = [] if source.endswith(".npy") else ["--column", "n"]
    out = [] if target is None else ["-o", tmp_path / target]
    status, stdout, err = run(
        capsys, tmp_path / source, *column, "--sigma2", 4, "--granularity", g, *out
    )
    assert status == 2 and stdout == "" and seeded == [], err
    assert "--granularity must be 1 with a Parquet file" in err and f"got {g}" in err
    assert target is None or not (tmp_path / target).exists()


@needs_pyarrow
def test_granularity_1_with_parquet_is_the_integers(tmp_path, capsys, seeded):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"n": pa.array([10, -3], pa.int64())}), path)
    outputs = []
    for g in ([], ["--granularity", "1"]):
        status, stdout, err = run(capsys, path, "--column", "n", "--sigma2", 4, *g)
        assert status == 0, err
        outputs.append(stdout)
    (_, noise), _ = seeded
    assert outputs[0] == outputs[1] == f"n\n{10 + noise[0]}\n{-3 + noise[1]}\n"


@needs_pyarrow
@pytest.mark.parametrize(
    "other, message",
    [
        (pa.array([[1], [2, 3]]) if pa else None, "Unsupported cast from list"),
        (pa.array([b"\xff", b"a"], pa.binary()) if pa else None, "Invalid UTF8"),
    ],
)
def test_parquet_column_csv_cannot_hold_is_refused_before_the_draw(
    tmp_path, capsys, seeded, other, message
):
    """A Parquet column that cannot be written as CSV text is refused before the ledger is
    charged and the noise drawn: nothing spent on a release that is never written."""
    path, ledger = tmp_path / "in.parquet", tmp_path / "ledger.json"
    pq.write_table(pa.table({"n": pa.array([10, 20], pa.int64()), "x": other}), path)
    assert (
        cli.main(["account", "--ledger", str(ledger), "--init", "--eps", "1", "--delta", "1e-6"])
        == 0
    )
    before = ledger.read_bytes()
    capsys.readouterr()
    for out in ([], ["-o", tmp_path / "o.csv"]):
        status, stdout, err = run(
            capsys, path, "--column", "n", "--sigma2", 100, "--ledger", ledger, *out
        )
        assert status == 1 and stdout == "" and seeded == [], err
        assert "column 'x'" in err and message in err and "recorded in the ledger" not in err
        assert ledger.read_bytes() == before and not (tmp_path / "o.csv").exists()
    status, _, err = run(
        capsys, path, "--column", "n", "--sigma2", 100, "-o", tmp_path / "o.parquet"
    )
    assert status == 0, err  # Parquet holds it


@needs_pyarrow
@pytest.mark.parametrize("lone", ["a\rb", "\r", "x\r\ny\rz"])
def test_a_carriage_return_in_another_column_comes_out_as_it_went_in(
    tmp_path, capsys, monkeypatch, seeded, lone
):
    """csv.writer before 3.13 writes a field's bare \\r unquoted: read back, it ends the row.
    Both paths quote it, so the other column's text comes out exactly as it went in."""
    text = f'n,"no\rte"\n1,"{lone}"\n2,b\n'.encode()
    fast, plain = both(tmp_path, capsys, monkeypatch, text, ["--column", "n", "--sigma2", "4"])
    assert fast == plain
    status, _, err, output = fast
    assert status == 0, err
    rows = list(csv.reader(io.StringIO(output.decode(), newline="")))
    (_, noise), _ = seeded
    assert rows == [["n", "no\rte"], [str(1 + noise[0]), lone], [str(2 + noise[1]), "b"]]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(WRITER_CELLS, min_size=1, max_size=3), min_size=1, max_size=6),
    delimiter=st.sampled_from(DELIMITERS),
)
def test_plain_writer_reads_back_and_is_csv_writers_without_a_carriage_return(rows, delimiter):
    """The plain path's writer (no pyarrow needed): every row reads back as it was; a row
    with no \\r in its fields is csv.writer's line (on 3.13, whose writer quotes \\r, all).
    Before 3.11 neither csv.writer nor csv.reader takes a NUL (the plain path refuses such a
    file as it reads it), so no row with one reaches this writer there."""
    assume(sys.version_info >= (3, 11) or not any("\x00" in f for row in rows for f in row))
    out = io.StringIO()
    cli.noise.write_csv_rows(out, rows, delimiter)
    written = out.getvalue()
    assert list(csv.reader(io.StringIO(written, newline=""), delimiter=delimiter)) == rows
    expected = io.StringIO()
    csv.writer(expected, lineterminator="\n", delimiter=delimiter).writerows(rows)
    if sys.version_info >= (3, 13) or not any("\r" in f for row in rows for f in row):
        assert written == expected.getvalue()


# -- a hostile property test: every output kind, every option, every kind of cell ----------

#: Noised cells the plain path takes: spaces, tabs, signs, zeros, any size.
NUMBER_CELLS = st.builds(
    lambda pad, sign, zeros, value, after: f"{pad}{sign}{zeros}{value}{after}",
    st.sampled_from(["", "", " ", "\t", " \t"]),
    st.sampled_from(["", "", "", "+", "-"]),
    st.sampled_from(["", "", "0", "00"]),
    st.one_of(
        st.integers(0, 100), st.integers(0, 2**64), st.sampled_from([2**63 - 1, 2**63, 10**40])
    ),
    st.sampled_from(["", "", " ", "\t"]),
)
#: Noised cells taken only with --granularity 1 (7.0, 1e3), or refused (each kind).
BAD_CELLS = ["7.0", "1e3", "0x10", "1_000", "\u0663", "\uff13", "NaN", "NA", "", " ", "\xa05", "-"]
#: Other columns: delimiters, quotes, line ends, non-ASCII, cells that look like numbers.
TEXT_CELLS = st.text(
    alphabet=st.sampled_from(list("ab ,;|\t\"\n\r'é€\u2028\x85\x00x1-.") + ["\ufeff"]),
    max_size=6,
)


@st.composite
def hostile_tables(draw):
    """A CSV (bytes), its delimiter, the noised columns' names, and dgauss noise options."""
    delimiter = draw(st.sampled_from(DELIMITERS))
    width = draw(st.integers(1, 4))
    noised = draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=2, unique=True))
    # the other names: some alike (after stripping; c0 as a noised one), some not ASCII,
    # quoted, multi-line
    names = [
        draw(st.sampled_from(["n", " n", "m", "é", "n,m", 'a"b', "x\ny", "c0"]))
        for _ in range(width)
    ]
    for j in noised:
        names[j] = draw(st.sampled_from([f"c{j}", f" c{j} ", f"c{j}é"]))
    rows = [
        [draw(NUMBER_CELLS if j in noised else TEXT_CELLS) for j in range(width)]
        for _ in range(draw(st.integers(0, 6)))  # 0: a header only
    ]
    if rows and draw(st.integers(0, 4)) == 0:  # a bad cell (or one --granularity 1 takes)
        rows[draw(st.integers(0, len(rows) - 1))][noised[0]] = draw(st.sampled_from(BAD_CELLS))
    if any(c in cell for row in [names, *rows] for cell in row for c in "\r\n"):
        quoting = csv.QUOTE_ALL  # csv.writer before 3.13 quotes a bare \r only so
    else:
        quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, quoting=quoting, lineterminator=ending)
    try:
        writer.writerows([names, *rows])
    except csv.Error:  # a CSV this Python's writer cannot write
        assume(False)
    text = buffer.getvalue()
    if draw(st.booleans()):
        text = text[: -len(ending)]  # no line end after the last row
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    options = [a for j in noised for a in ("--column", names[j].strip())]
    options += draw(st.sampled_from([["--sigma2", "1e6"], ["--laplace", "--scale", "1000"]]))
    options += draw(st.sampled_from([[], [], ["--clip-min", "0"], ["--granularity", "1"]]))
    if draw(st.booleans()):
        options += ["--delimiter", delimiter]
    return bom + text.encode(), delimiter, [names[j].strip() for j in noised], options


def _parquet_text(data: bytes | None) -> str | None:
    return None if data is None else str(pq.ParquetFile(pa.py_buffer(data)).read().to_pydict())


@needs_pyarrow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=hostile_tables(), target=st.sampled_from([None, "o.csv", "o.npy", "o.parquet"]))
@pytest.mark.long
def test_both_paths_agree_on_hostile_tables(
    tmp_path_factory, capsys, monkeypatch, seeded, case, target
):
    """The fast and the plain path, on the same random bits, give the same exit status, the
    same messages and the same output (CSV and .npy byte for byte, Parquet value for value);
    a CSV release keeps every other column's text as the input had it, and each noised cell
    is int(cell.strip()) plus its noise."""
    text, delimiter, names, options = case
    tmp = tmp_path_factory.mktemp("t")
    source = tmp / "in.csv"
    source.write_bytes(text)
    results = []
    for plain in (False, True):
        out = None if target is None else tmp / f"{plain}{target}"
        seeded.clear()
        with monkeypatch.context() as m:
            if plain and target == "o.parquet":  # written with pyarrow, read by csv
                m.setattr(_tables, "read", lambda args, steps: None)
            elif plain:
                without_pyarrow(m)
            status, stdout, err = run(
                capsys, source, *options, *([] if out is None else ["-o", out])
            )
        _tables._arrow.cache_clear()
        data = out.read_bytes() if out is not None and out.exists() else None
        if target == "o.parquet":
            data = _parquet_text(data)
        results.append((status, stdout, err.replace(str(out), "OUT"), data, list(seeded)))
    fast, plain = results
    assert fast == plain
    status, stdout, err, data, calls = fast
    event("released" if status == 0 else "refused")
    if status != 0:  # refused before the draw, unless a noisy value left int64 (.npy, Parquet)
        assert data is None and stdout == "" and "error:" in err
        assert calls == [] or "does not fit int64" in err
        return
    if target in (None, "o.csv") and "--granularity" not in options:
        ((_, noise),) = calls
        released = stdout.encode() if target is None else data
        first = io.StringIO(text.decode("utf-8-sig"), newline="").readline()
        used = delimiter if "--delimiter" in options else cli.noise._delimiter(None, first)
        if "--clip-min" not in options:
            assert released == model(text, names, noise, used)
        given = list(csv.reader(io.StringIO(text.decode("utf-8-sig"), newline=""), delimiter=used))
        back = list(csv.reader(io.StringIO(released.decode(), newline=""), delimiter=used))
        kept = [j for j, h in enumerate(given[0]) if h.strip() not in names]
        assert [[r[j] for j in kept] for r in back] == [[r[j] for j in kept] for r in given]


@pytest.mark.parametrize("header", ["n,m,n", "n, n ,m", "region;n;n"])
def test_a_column_named_twice_is_refused(tmp_path, capsys, monkeypatch, seeded, header):
    """--column n with two columns named n: which is meant is unclear, and the other would be
    released with its true counts. Refused on both paths, before any noise is drawn."""
    delimiter = ";" if ";" in header else ","
    path = tmp_path / "in.csv"
    path.write_text(f"{header}\n" + delimiter.join(["1", "2", "3"]) + "\n")
    for plain in (False, True):
        with monkeypatch.context() as m:
            if plain:
                without_pyarrow(m)
            status, stdout, err = run(capsys, path, "--column", "n", "--sigma2", 4)
        _tables._arrow.cache_clear()
        assert status == 1 and stdout == "" and seeded == [], err
        assert "2 columns are named 'n' (columns " in err and "rename the others" in err


@needs_pyarrow
def test_a_parquet_column_named_twice_is_refused(tmp_path, capsys, seeded):
    path = tmp_path / "in.parquet"
    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["n", "n"])
    pq.write_table(table, path)
    status, stdout, err = run(capsys, path, "--column", "n", "--sigma2", 4)
    assert status == 1 and stdout == "" and seeded == []
    assert "2 columns are named 'n' (columns 1, 2)" in err


def test_a_column_given_twice_is_a_usage_error(tmp_path, capsys, seeded):
    """--column n --column n drew two noises for one cell, kept the last and reported twice
    the values released: refused with the options (status 2)."""
    path = tmp_path / "in.csv"
    path.write_text("n,m\n5,a\n")
    status, stdout, err = run(capsys, path, "--column", "n", "--column", "n", "--sigma2", 4)
    assert status == 2 and stdout == "" and seeded == []
    assert "--column 'n' is given more than once" in err


@pytest.mark.parametrize("pyarrow_too", [False, True])
def test_bad_cells_are_placed_on_the_lines_of_the_file(tmp_path, capsys, monkeypatch, pyarrow_too):
    """A quoted field holding line breaks makes a record span lines: a message names the line
    of the file where the bad record starts (as an editor shows it), not the record's number."""
    if pyarrow_too and pa is None:
        pytest.skip("needs the tables extra (pyarrow)")
    if not pyarrow_too:
        without_pyarrow(monkeypatch)
    path = tmp_path / "in.csv"
    path.write_bytes(b'n,note\r\n1,"a\r\nb\nc"\r\nx,d\r\n"",e\r\n')
    # lines: 1 the header; 2-4 the first record; 5 'x'; 6 ''
    text = list(io.StringIO(path.read_bytes().decode(), newline=""))
    assert text[4].startswith("x,") and text[5].startswith('"",')
    status, _, err = run(capsys, path, "--column", "n", "--sigma2", 4)
    assert status == 1 and "1 not a number ('x'): line 5; 1 empty: line 6" in err, err
    path.write_bytes(b'n,note\r\n1,"a\r\nb\nc"\r\n2,"f\rg"\r\n3\r\n')  # 5-6: f\rg
    status, _, err = run(capsys, path, "--column", "n", "--sigma2", 4)
    assert status == 1 and "line 7: 1 fields where the header has 2" in err, err
    _tables._arrow.cache_clear()


# ---- read twice: checked, then streamed again for the output ------------------------------


@needs_pyarrow
def test_an_input_changed_between_the_check_and_the_output_is_an_error(
    tmp_path, capsys, monkeypatch
):
    """The fast path reads a CSV twice (the checks, then the rows it writes): a file changed
    in between is an error, and no output is written."""
    source = tmp_path / "t.csv"
    source.write_text("region,count\nA,5\nB,7\n")
    real = _tables.ArrowTable.noised

    def noised_then_edit(self, mech, clip):
        result = real(self, mech, clip)
        source.write_text("region,count\nA,5\nB,7\nC,9\n")  # another row, meanwhile
        return result

    monkeypatch.setattr(_tables.ArrowTable, "noised", noised_then_edit)
    out = tmp_path / "o.csv"
    status, _, err = run(capsys, source, "--column", "count", "--sigma2", 4, "-o", out)
    assert status == 1 and "changed while it was being noised" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
