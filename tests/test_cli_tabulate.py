"""``dgauss tabulate``: a microdata file to a noisy table over a public domain, on the command
line.  Where a test needs the table before noise, it draws with sigma2 = 1/100 (or scale
1/100): a cell's noise is then nonzero with probability below 10^-21, so the output is the
exact table, compared with :func:`dgauss.tabulate` on the same data."""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import cli
from dgauss.accounting import Contributions
from dgauss.cli import _tables, tabulate

try:
    import pyarrow
except ImportError:  # the pyarrow cases skip; the plain path's still run
    pyarrow = None

TINY = "1/100"  # sigma2 or scale: no noise but with probability < 1e-21 a cell

#: id, region, age, income: person 3 has 4 rows, one outside the domain (region east)
ROWS = [
    ["1", "north", "0-17", "10"],
    ["1", "north", "18+", "20"],
    ["2", "south", "18+", "5"],
    ["3", "east", "18+", "7"],
    ["3", "south", "0-17", "1.5"],
    ["3", "south", "18+", "100"],
    ["3", "north", "18+", "-4"],
    ["4", "north", "0-17", "2"],
]


def run(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["tabulate", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def hide_pyarrow(monkeypatch):
    """pyarrow unimportable, as where the tables extra is not installed."""
    for name in [m for m in sys.modules if m.split(".")[0] == "pyarrow"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    _tables._arrow.cache_clear()


@pytest.fixture(params=["pyarrow", "plain"])
def reader(request, monkeypatch):
    """The CSV files read through pyarrow (the tables extra) or through Python's csv alone;
    the value: a list of what each read of a CSV file took ('pyarrow' or 'plain')."""
    if request.param == "pyarrow" and pyarrow is None:
        pytest.skip("needs the tables extra (pyarrow)")
    if request.param == "plain":
        hide_pyarrow(monkeypatch)
    taken: list[str] = []
    fast = tabulate._read_fast

    def spy(*args, **kwargs):
        read = fast(*args, **kwargs)
        taken.append("plain" if read is None else "pyarrow")
        return read

    monkeypatch.setattr(tabulate, "_read_fast", spy)
    yield taken
    _tables._arrow.cache_clear()


@pytest.fixture
def people(tmp_path):
    return write_csv(tmp_path / "people.csv", ["id", "region", "age", "income"], ROWS)


def columns(rows=ROWS) -> dict[str, np.ndarray]:
    """The records as dgauss.tabulate takes them, typed as the command reads the CSV (the
    id column integers, the rest text)."""
    return {
        "id": np.array([int(r[0]) for r in rows]),
        "region": np.array([r[1] for r in rows]),
        "age": np.array([r[2] for r in rows]),
    }


PRODUCT = ["--by", "region,age", "--key", "region=north,south", "--key", "age=0-17,18+"]


def test_a_count_table_is_the_library_s_exact_table(capsys, people, reader):
    status, out, err = run(
        capsys, people, *PRODUCT, "--person", "id", "--max-rows", 2, "--seed", 7, "--sigma2", TINY
    )
    assert status == 0, err
    exact = dgauss.tabulate(
        columns(),
        ["region", "age"],
        {"region": ["north", "south"], "age": ["0-17", "18+"]},
        person="id",
        max_rows=2,
        seed=7,
    )
    assert parsed(out) == [
        ["region", "age", "count"],
        *[
            [r, a, str(v)]
            for r, a, v in zip(
                exact.columns["region"], exact.columns["age"], exact.values.tolist(), strict=True
            )
        ],
    ]
    assert [row[:2] for row in parsed(out)[1:]] == [
        ["north", "0-17"],
        ["north", "18+"],
        ["south", "0-17"],
        ["south", "18+"],
    ]  # the product in C order: the last --by column fastest
    # person 3: 4 rows, 1 outside the domain (dropped), 3 inside, 1 of them trimmed (m = 2)
    assert exact.dropped == 1 and exact.trimmed == 1 and sum(exact.values.tolist()) == 6
    assert "records: 1 dropped outside the domain, 1 trimmed by bounding" in err
    assert "(exact, not private: for your eyes)" in err
    assert "sensitivity Contributions(max_rows=2, cells=4)" in err
    assert "rho = 200" in err  # k * ||(2,)||^2 / (2 sigma2) = 4 / (2/100)


def test_the_noise_is_the_stated_one(tmp_path, capsys):
    """Every record outside the domain: the table is all zeros, so the output is the noise
    itself (integers, of the stated variance)."""
    rows = [["1", "nowhere"]]
    path = write_csv(tmp_path / "r.csv", ["id", "area"], rows)
    areas = ",".join(f"a{i}" for i in range(2000))
    status, out, err = run(capsys, path, "--by", "area", "--key", f"area={areas}", "--sigma2", 100)
    assert status == 0, err
    table = parsed(out)
    assert table[0] == ["area", "count"] and [r[0] for r in table[1:]] == areas.split(",")
    noise = [int(r[1]) for r in table[1:]]  # int() refutes any non-integer cell
    assert 85 < statistics.pvariance(noise) < 115 and abs(statistics.mean(noise)) < 0.7
    assert "sigma2 = 100, sensitivity Contributions(max_rows=1, cells=2000)" in err
    assert "rho = 1/200" in err
    lo, hi = dgauss.accounting.gaussian_interval(100, 0.05)
    assert f"+-{hi}" in err
    assert "records: 1 dropped outside the domain, 0 trimmed" in err


def test_key_rows_of_several_columns_in_the_file_s_order(tmp_path, capsys, people, reader):
    pd = pytest.importorskip("pandas")
    keys = [["south", "18+"], ["north", "0-17"], ["west", "0-17"]]
    write_csv(tmp_path / "keys.csv", ["age", "region"], [[a, r] for r, a in keys])
    status, out, err = run(
        capsys, people, "--by", "region,age", "--keys", tmp_path / "keys.csv",
        "--person", "id", "--max-groups", 1, "--max-rows-per-group", 1, "--seed", 3,
        "--sigma2", TINY,
    )  # fmt: skip
    assert status == 0, err
    exact = dgauss.tabulate(
        columns(),
        ["region", "age"],
        pd.DataFrame(keys, columns=["region", "age"]),
        person="id",
        max_groups=1,
        max_rows_per_group=1,
        seed=3,
    )
    expected = [[r, a, str(v)] for (r, a), v in zip(keys, exact.values.tolist(), strict=True)]
    assert parsed(out) == [["region", "age", "count"], *expected]
    assert f"{exact.dropped} dropped outside the domain, {exact.trimmed} trimmed" in err
    assert "Contributions(max_groups=1, max_rows_per_group=1, cells=3)" in err


def test_a_sum_table_on_a_lattice(capsys, people, reader):
    status, out, err = run(
        capsys, people, *PRODUCT, "--person", "id", "--max-rows", 3, "--seed", 1,
        "--value", "income", "--bounds=-2.5,50", "--granularity", "0.5", "--sigma2", TINY,
    )  # fmt: skip
    assert status == 0, err
    data = dict(columns(), income=np.array([float(r[3]) for r in ROWS]))
    exact = dgauss.tabulate(
        data,
        ["region", "age"],
        {"region": ["north", "south"], "age": ["0-17", "18+"]},
        person="id",
        max_rows=3,
        value="income",
        bounds=("-2.5", "50"),
        granularity="0.5",
        seed=1,
    )
    sums = [f"{v / 2:.1f}" for v in exact.values.tolist()]  # steps of 1/2, exactly
    assert [r[2] for r in parsed(out)[1:]] == sums and parsed(out)[0][2] == "income"
    assert "Contributions(max_rows=3, per_row=100, cells=4)" in err  # 50 / (1/2) a row
    assert "sums of 'income' clamped to [-2.5, 50]" in err


def test_integer_keys_match_as_integers_only_when_both_sides_are(tmp_path, capsys, reader):
    path = write_csv(tmp_path / "r.csv", ["age"], [["07"], ["7"], ["+7"], ["8"]])
    status, out, err = run(capsys, path, "--by", "age", "--key", "age=7,9", "--sigma2", TINY)
    assert status == 0, err
    assert parsed(out) == [["age", "count"], ["7", "3"], ["9", "0"]]
    assert "1 dropped outside the domain" in err
    # one key that is no integer: both sides are text, and 07, +7 are not 7
    status, out, err = run(capsys, path, "--by", "age", "--key", "age=7,x", "--sigma2", TINY)
    assert parsed(out) == [["age", "count"], ["7", "1"], ["x", "0"]]
    assert "3 dropped outside the domain" in err


def test_records_on_stdin(monkeypatch, capsys):
    text = "id;region\n1;north\n2;north\n2;south\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    status, out, err = run(capsys, "-", "--by", "region", "--key", "region=south,north",
                           "--sigma2", TINY)  # fmt: skip
    assert status == 0, err
    assert out == "region;count\nsouth;1\nnorth;2\n"  # the records' delimiter kept


def test_the_laplace_takes_the_l1_bound(capsys, people):
    status, out, err = run(
        capsys, people, *PRODUCT, "--person", "id", "--max-rows", 2, "--laplace", "--scale", TINY
    )
    assert status == 0, err
    assert "Lap_Z(scale) on 4 values, scale = 0.01, sensitivity 2" in err
    assert sum(int(r[2]) for r in parsed(out)[1:]) == 6


def test_output_file_and_its_refusal_to_replace_the_records(tmp_path, capsys, people):
    target = tmp_path / "table.csv"
    status, out, err = run(capsys, people, *PRODUCT, "--sigma2", TINY, "-o", target)
    assert status == 0 and out == "", err
    assert target.read_text().splitlines()[0] == "region,age,count"
    before = people.read_bytes()
    status, out, err = run(capsys, people, *PRODUCT, "--sigma2", TINY, "-o", people)
    assert status == 2 and "is the RECORDS file" in err and people.read_bytes() == before


def test_parquet_in_and_out(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    records = pa.table({"id": [1, 1, 2], "year": [2020, 2021, 2021], "v": [1.5, 2.0, 9.0]})
    pq.write_table(records, tmp_path / "r.parquet")
    status, out, err = run(
        capsys, tmp_path / "r.parquet", "--by", "year", "--key", "year=2021,2020,2019",
        "--person", "id", "--max-rows", 2, "--value", "v", "--bounds", "0,4",
        "--sigma2", TINY, "-o", tmp_path / "t.parquet",
    )  # fmt: skip
    assert status == 0, err
    table = pq.read_table(tmp_path / "t.parquet").to_pydict()
    assert table == {"year": [2021, 2020, 2019], "v": [6, 2, 0]}  # 1.5 -> 2 (half to even)


def ledger_args(ledger):
    return ["--ledger", ledger, "--person", "id", "--max-rows", 2]


def test_the_ledger_spends_the_table_s_contributions_and_refuses_past_its_budget(
    tmp_path, capsys, people
):
    ledger = tmp_path / "budget.json"
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1"]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, people, *PRODUCT, *ledger_args(ledger), "--rho", "0.6")
    assert status == 0, err
    assert "recorded as release 1" in err
    (release,) = json.loads(ledger.read_text())["releases"]
    assert Contributions.from_dict(release["sensitivity"]["contributions"]) == Contributions(
        max_rows=2, cells=4
    )
    before = ledger.read_bytes()
    target = tmp_path / "second.csv"
    status, out, err = run(
        capsys, people, *PRODUCT, *ledger_args(ledger), "--rho", "0.6", "-o", target
    )
    assert status == 3 and out == "" and "refused" in err
    assert ledger.read_bytes() == before and not target.exists()
    # what is left, shared: the least noise that fits, calibrated for this table
    status, out, err = run(capsys, people, *PRODUCT, *ledger_args(ledger), "--share", 1)
    assert status == 0 and "recorded as release 2" in err, err
    assert dgauss.Accountant.from_json(ledger.read_text()).spent.rho <= 1


BAD = [
    ([], "set the noise in exactly one way", 2),
    (["--person", "id"], "--person 'id' needs a bound", 2),
    (["--person", "id", "--max-groups", "2"], "--max-groups needs --max-rows-per-group", 2),
    (["--max-rows", "2"], "--max-rows", 2),
    (["--value", "income"], "--value 'income' needs --bounds", 2),
    (["--value", "income", "--bounds", "5,1"], "--bounds must have low <= high", 2),
    (["--value", "income", "--bounds", "0,x"], "--bounds must be a number", 2),
    (["--value", "income", "--bounds", "0,1.5", "--granularity", "1"], "--granularity", 2),
    (["--bounds", "0,1"], "--bounds and --granularity need --value", 2),
    (["--value", "nope", "--bounds", "0,1"], "--value names the column 'nope'", 2),
    (["--person", "nope", "--max-rows", "1"], "--person names the column 'nope'", 2),
    (["--value", "region", "--bounds", "0,1"], "--value 'region' is also a --by column", 2),
    (["--seed", str(2**64)], "--seed must be", 2),
    (["--seed", "-1"], "--seed", 2),
    (["--max-rows", "0", "--person", "id"], "--max-rows", 2),
    (["--key", "sex=f"], "--key 'sex' is not one of the --by columns", 2),
    (["--keys", "k.csv"], "give the public domain in one way", 2),
    (["--clip-min", "0.5"], "--clip-min", 2),
    (["-o", "t.txt"], "-o must end in .csv or .parquet", 2),
    (["--laplace", "--rho", "1"], "--sigma2 and --rho set Gaussian noise", 2),
]


@pytest.mark.parametrize(("extra", "says", "status"), BAD, ids=lambda x: str(x)[:40])
def test_a_bad_option_names_itself_and_spends_nothing(
    tmp_path, capsys, people, extra, says, status
):
    ledger = tmp_path / "budget.json"
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1"]) == 0
    capsys.readouterr()
    before = ledger.read_bytes()
    noise = [] if not extra or "--laplace" in extra else ["--rho", "0.1"]
    by = ["--by", "region", "--key", "region=north,south"]
    got, out, err = run(capsys, people, *by, *extra, *noise, "--ledger", ledger)
    assert got == status and out == "", err
    assert err.startswith("dgauss tabulate: error: ") and says in err, err
    assert ledger.read_bytes() == before


def test_a_missing_column_is_listed_with_the_file_s_columns(capsys, people, reader):
    status, out, err = run(capsys, people, "--by", "area", "--key", "area=x", "--sigma2", 1)
    assert status == 2 and out == ""
    assert "--by names the column 'area', which" in err
    assert "its columns are: id, region, age, income" in err


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        ([["1", "", "1"]], "column 'region': 1 empty cell (line 2); a missing value"),
        ([["", "north", "1"]], "column 'id': 1 empty cell (line 2)"),
        ([["1", "north", "abc"]], "--value column: 1 cell(s) are not numbers, such as 'abc'"),
        ([["1", "north"]], "line 2: 2 fields where the header has 3"),
    ],
)
def test_a_bad_cell_is_an_input_error_and_spends_nothing(tmp_path, capsys, rows, says, reader):
    path = write_csv(tmp_path / "r.csv", ["id", "region", "v"], rows)
    ledger = tmp_path / "budget.json"
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1"]) == 0
    capsys.readouterr()
    before = ledger.read_bytes()
    status, out, err = run(
        capsys, path, "--by", "region", "--key", "region=north", "--person", "id",
        "--max-rows", 1, "--value", "v", "--bounds", "0,1", "--rho", "0.1", "--ledger", ledger,
    )  # fmt: skip
    assert status == 1 and out == "" and says in err, err
    assert ledger.read_bytes() == before


def test_bad_key_files(tmp_path, capsys, people, reader):
    keys = write_csv(tmp_path / "k.csv", ["region"], [["north"], ["south"], ["north"]])
    status, out, err = run(capsys, people, "--by", "region", "--keys", keys, "--sigma2", 1)
    assert status == 1 and "holds the key 'north' twice (rows 1 and 3)" in err
    keys = write_csv(tmp_path / "k.csv", ["area"], [["north"]])
    status, out, err = run(capsys, people, "--by", "region", "--keys", keys, "--sigma2", 1)
    assert status == 2 and "--keys names the column 'region'" in err
    keys = write_csv(tmp_path / "k.csv", ["region"], [["north"]])
    status, out, err = run(capsys, tmp_path / "none.csv", "--by", "region", "--keys", keys,
                           "--sigma2", 1)  # fmt: skip
    assert status == 1 and "no such file" in err


def test_the_command_is_listed(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--help"])
    assert re.search(r"^\s+tabulate\s+microdata in", capsys.readouterr().out, re.M)


# -- the pyarrow path reads what the plain path reads ---------------------------------------

needs_pyarrow = pytest.mark.skipif(pyarrow is None, reason="needs the tables extra (pyarrow)")

#: A count by k with each person p cut to 2 rows: the domain as integers, then as text.
BOTH_OPTIONS = [
    ["--by", "k", "--key", "k=7,1,-3", "--person", "p", "--max-rows", 2, "--seed", 5],
    ["--by", "k", "--key", "k=7,07,x, 1", "--person", "p", "--max-rows", 2, "--seed", 5],
]


def both(tmp_path, capsys, monkeypatch, text: bytes, options) -> tuple[list, list]:
    """(status, stdout, stderr) with pyarrow and without, on the CSV ``text``; and what each
    run's read of the records took."""
    path = tmp_path / "records.csv"
    path.write_bytes(text)
    results, taken, reads = [], [], []
    fast = tabulate._read_fast

    def spy(*args, **kwargs):
        reads.append(fast(*args, **kwargs))
        return reads[-1]

    for plain in (False, True):
        reads.clear()
        with monkeypatch.context() as m:
            if plain:
                hide_pyarrow(m)
            m.setattr(tabulate, "_read_fast", spy)
            results.append(run(capsys, path, *options, "--sigma2", TINY))
        _tables._arrow.cache_clear()
        taken.append("plain" if not reads or reads[-1] is None else "pyarrow")
    return results, taken


@needs_pyarrow
@pytest.mark.parametrize("options", BOTH_OPTIONS, ids=["int-domain", "text-domain"])
@pytest.mark.parametrize(
    ("text", "fast"),
    [
        ("p,k\n1,7\n1,7\n1,7\n2,1\n3,-3\n3,8\n", True),  # integers
        ("p,k\n1, 7\n1,\t+7 \n1,07\n2,\xa01\u2028\n3,-3\n", True),  # spaces str.strip strips
        ("k;p\r\n7;a\r\n 1;b\r\n7;a\r\n", True),  # a text person, ; and \r\n
        ('\ufeff"p","k"\n"1","7"\n"2","x"\n"3"," 1"\n', True),  # BOM, quotes, a text key
        ('p,k,note\n1,7,"a,\nb"\n2,1,c\n', True),  # a line break inside quotes
        ("p,k\n1,7\n2,\n", False),  # an empty cell: its line is the plain path's to say
        ("p,k\n1,7\n\n2,1\n", False),  # an empty line
        ("p,k\n1,7\n2,1,3\n", False),  # a row of the wrong length
        ("p,k\n1,7\n2,99999999999999999999\n", False),  # beyond int64: Python ints
        ("p,k\n", False),  # no rows
        ("p,p,k\n1,1,7\n", False),  # p twice
    ],
)
def test_pyarrow_and_plain_paths_agree(tmp_path, capsys, monkeypatch, text, fast, options):
    (with_arrow, plain), taken = both(tmp_path, capsys, monkeypatch, text.encode(), options)
    assert with_arrow == plain
    assert taken == (["pyarrow"] if fast else ["plain"]) + ["plain"]
    status, out, err = plain
    assert status in (0, 1), err


@pytest.mark.long
@needs_pyarrow
def test_the_pyarrow_path_keeps_the_spelling_of_integer_keys_matched_as_text(
    tmp_path, capsys, monkeypatch
):
    """Records 07, 7, +7 are one integer key against an integer domain, three spellings
    against a text one: the pyarrow path keeps the text of a key column it must match as
    text, and of a column it found to be text only after many integer rows (read again)."""
    rows = "".join(f"{i},7\n" for i in range(300_000)) + "1,07\n2,+7\n3,x\n"
    text = ("p,k\n" + rows).encode()
    for options, counts in (
        (["--by", "k", "--key", "k=7,07,+7,x"], ["300000", "1", "1", "1"]),
        (["--by", "p", "--key", "p=1,2,-9"], ["2", "2", "0"]),  # p all integers
    ):
        (with_arrow, plain), taken = both(tmp_path, capsys, monkeypatch, text, options)
        assert with_arrow == plain and taken == ["pyarrow", "plain"]
        assert [r[-1] for r in parsed(with_arrow[1])[1:]] == counts
    # k a person column: integers for 300,000 rows, then 07 and x (read again, as text)
    spec = ["--by", "p", "--key", "p=1,2", "--person", "k", "--max-rows", 1, "--seed", 3]
    (with_arrow, plain), taken = both(tmp_path, capsys, monkeypatch, text, spec)
    assert with_arrow == plain and taken == ["pyarrow", "plain"] and with_arrow[0] == 0
    # 07 and +7 are two people but for 7 (as integers, all three one person: at most 1 row)
    assert sum(int(r[-1]) for r in parsed(with_arrow[1])[1:]) >= 2


@needs_pyarrow
def test_a_field_past_csvs_limit_goes_to_the_plain_path(tmp_path, capsys, monkeypatch):
    limit = csv.field_size_limit(50)
    try:
        text = f"p,k,note\n1,7,{'x' * 60}\n".encode()  # a column not read, but parsed
        (with_arrow, plain), taken = both(tmp_path, capsys, monkeypatch, text, BOTH_OPTIONS[0])
    finally:
        csv.field_size_limit(limit)
    assert with_arrow == plain and taken == ["plain", "plain"]
    assert plain[0] == 1 and "field larger than field limit" in plain[2]


HOSTILE = st.text(alphabet=st.sampled_from(list('17-+0 ,"\r\n\tx\xa0')), max_size=40)


@needs_pyarrow
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    body=HOSTILE, head=st.sampled_from(["p,k\n", "k,p\r\n", '"p",k,z\n']), which=st.integers(0, 1)
)
@pytest.mark.long
def test_any_text_both_paths_agree(tmp_path_factory, capsys, monkeypatch, body, head, which):
    """Hostile text (stray quotes, empty lines, short rows, spaces, signs): the pyarrow path
    reads it as the plain path does, or leaves it to the plain path."""
    tmp = tmp_path_factory.mktemp("t")
    (with_arrow, plain), _ = both(
        tmp, capsys, monkeypatch, (head + body).encode(), BOTH_OPTIONS[which]
    )
    assert with_arrow == plain
