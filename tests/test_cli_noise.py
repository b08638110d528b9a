"""``dgauss noise``: counts in a CSV column (or a .npy array) released with noise."""

from __future__ import annotations

import csv
import io
import statistics
import sys

import numpy as np
import pytest

from dgauss import accounting, cli
from dgauss.cli import noise as noise_module


def run(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["noise", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def write_csv(path, header, rows, delimiter=","):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.fixture
def counts(tmp_path):
    rows = [[f"area{i}", str(i % 37), f"note {i}"] for i in range(10_000)]
    return write_csv(tmp_path / "counts.csv", ["area", "n", "note"], rows), rows


def test_csv_column_released_with_the_stated_noise(tmp_path, capsys, counts):
    path, rows = counts
    out = tmp_path / "released.csv"
    status, stdout, err = run(capsys, path, "--column", "n", "--sigma2", 100, "-o", out)
    assert status == 0 and stdout == ""
    header, released = read_csv(out)
    assert header == ["area", "n", "note"] and len(released) == len(rows)
    assert [r[0] for r in released] == [r[0] for r in rows]  # order and other columns kept
    assert [r[2] for r in released] == [r[2] for r in rows]
    noise = [int(a[1]) - int(b[1]) for a, b in zip(released, rows, strict=True)]
    assert 85 < statistics.pvariance(noise) < 115 and abs(statistics.mean(noise)) < 0.5
    assert "sigma2 = 100" in err and "rho = 1/200" in err
    eps = accounting.gaussian_epsilon(100, "1e-6")
    assert f"eps = {cli._rounded_up(eps)} at delta = 1e-6" in err
    lo, hi = accounting.gaussian_interval(100, 0.05)
    assert f"+-{hi}" in err


def test_epsilon_delta_and_stdout(tmp_path, capsys):
    path = write_csv(tmp_path / "c.csv", ["n", "m"], [["1", "2"], ["3", "4"]])
    status, stdout, err = run(
        capsys, path, "--column", "n", "--column", "m", "--epsilon", 1, "--delta", "1e-6"
    )
    assert status == 0
    lines = stdout.splitlines()
    assert lines[0] == "n,m" and len(lines) == 3
    assert all(v.lstrip("-").isdigit() for line in lines[1:] for v in line.split(","))
    assert "sigma2 = 17.9" in err and "at eps = 1" in err


def test_laplace_and_clip(tmp_path, capsys):
    path = write_csv(tmp_path / "c.csv", ["n"], [["0"]] * 2000)
    out = tmp_path / "o.csv"
    status, _, err = run(
        capsys, path, "--column", "n", "--laplace", "--epsilon", 1, "--clip-min", 0, "-o", out
    )
    assert status == 0 and "pure eps = 1.000" in err and "rho = 1/2" in err
    values = [int(r[0]) for r in read_csv(out)[1]]
    assert min(values) == 0 and max(values) > 0


def test_npy_in_and_out(tmp_path, capsys):
    src = tmp_path / "a.npy"
    np.save(src, np.arange(5000, dtype=np.uint16))
    out = tmp_path / "b.npy"
    assert run(capsys, src, "--rho", 2, "-o", out)[0] == 0
    released = np.load(out)
    assert released.dtype == np.int64 and released.shape == (5000,)
    assert 0.05 < np.var(released - np.arange(5000)) < 0.5  # sigma2 = 1/4


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (None, ["missing.csv", "--column", "n", "--rho", 1], "no such file"),
        ("empty", ["--column", "n", "--rho", 1], "empty"),
        ("good", ["--column", "x", "--rho", 1], "no column 'x'"),
        ("float", ["--column", "n", "--rho", 1], "not an integer"),
        ("ragged", ["--column", "n", "--rho", 1], "fields"),
        ("good", ["--column", "n"], "exactly one way"),
        ("good", ["--column", "n", "--rho", 1, "--sigma2", 4], "exactly one way"),
        ("good", ["--column", "n", "--epsilon", 1], "--delta"),
        ("good", ["--column", "n", "--rho", -1], "rho"),
        ("good", ["--column", "n", "--rho", 1, "--sensitivity", 0], "--sensitivity"),
        ("good", ["--column", "n", "--laplace", "--rho", 1], "--laplace"),
        ("good", ["--column", "n", "--scale", 3], "--laplace"),
        ("good", ["--rho", 1], "--column"),
        ("npyfloat", ["--rho", 1], "integers"),
    ],
)
def test_bad_input_one_line_nonzero_and_no_output(tmp_path, capsys, setup, args, message):
    files = {
        "empty": lambda p: p.write_text(""),
        "good": lambda p: write_csv(p, ["n"], [["1"], ["2"]]),
        "float": lambda p: write_csv(p, ["n"], [["1"], ["2.0"]]),
        "ragged": lambda p: p.write_text("n,m\n1,2\n3\n"),
    }
    if setup == "npyfloat":
        path = tmp_path / "in.npy"
        np.save(path, np.array([1.5]))
    elif setup is not None:
        path = tmp_path / "in.csv"
        files[setup](path)
    else:
        path = tmp_path / args.pop(0)
    out = tmp_path / "out.csv"
    out.write_text("old content\n")
    status, stdout, err = run(capsys, path, *args, "-o", out)
    assert status != 0 and message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and out.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".dgauss-")] == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("limit, extra, shown", [(0, [], True), (0, ["--no-progress"], False)])
def test_a_progress_bar_for_large_inputs_on_a_terminal(tmp_path, monkeypatch, limit, extra, shown):
    """Above PROGRESS_BYTES (lowered here) the three steps advance one bar to 100%, then the
    report follows on its own line; --no-progress, or a small input, shows none."""
    from dgauss.cli import noise

    path = tmp_path / "counts.csv"
    path.write_text("id,n\n" + "".join(f"{i},{i % 7}\n" for i in range(1000)))
    monkeypatch.setattr(noise, "PROGRESS_BYTES", limit)
    monkeypatch.setattr(noise, "PROGRESS_ROWS", 100)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    out = tmp_path / "out.csv"
    args = ["noise", str(path), "--column", "n", "--rho", "0.5", "-o", str(out), *extra]
    assert cli.main(args) == 0
    err = terminal.getvalue()
    assert ("\r[" in err) == shown
    if shown:
        assert "reading counts.csv" in err and "noising 1,000 values" in err and "writing" in err
        assert "\r[" + "#" * cli.Progress.WIDTH + "] 100%" in err
        assert err.split("\r")[-1].split("\n", 1)[1].startswith("dgauss noise:")  # report after
    assert len(out.read_text().splitlines()) == 1001
    monkeypatch.setattr(noise, "PROGRESS_BYTES", path.stat().st_size)  # not above: no bar
    terminal.seek(0)
    terminal.truncate()
    assert cli.main(args[: -len(extra) or None]) == 0
    assert "\r[" not in terminal.getvalue()


# ---- what a newcomer is told: formats, a large delta, negative counts ------------------------


def test_the_help_names_every_format_and_what_needs_the_extra(capsys):
    with pytest.raises(SystemExit) as done:
        cli.build_parser().parse_args(["noise", "-h"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse's line breaks undone
    assert "a .csv file with a header, a .npy integer array, or a .parquet file" in text
    assert "(needs dgauss[tables])" in text
    assert "Formats: .csv and .npy in and out with dgauss alone; .parquet in or out needs" in text
    assert "pip install 'dgauss[tables]'" in text
    # (Python 3.13's argparse shows "-o, --output PATH", earlier ones "-o PATH, --output PATH")
    assert "--output PATH write here, by its suffix: .csv, .npy, or .parquet" in text
    assert "--signed" in text and "95% error bars" in text


LARGE = "--delta {} is large: (eps, delta)-DP allows publishing each person's record outright"


@pytest.mark.parametrize(
    "delta, warned",
    [("0.1", True), ("1e-3", True), ("1/1000", True), ("0.000999", False), ("1e-6", False)],
)
def test_a_large_delta_is_warned_about_not_refused(tmp_path, capsys, delta, warned):
    """From LARGE_DELTA = 1e-3 up (the boundary exact: 1/1000 warns, 0.000999 does not), one
    warning line on stderr; the release is made as asked."""
    path = write_csv(tmp_path / "c.csv", ["n"], [["5"], ["7"]])
    status, stdout, err = run(capsys, path, "--column", "n", "--epsilon", 1, "--delta", delta)
    assert status == 0 and len(stdout.splitlines()) == 3
    warning = [line for line in err.splitlines() if "warning" in line]
    if warned:
        assert warning == [
            f"dgauss noise: warning: {LARGE.format(delta)} with probability delta, so delta "
            "should be far below 1/n for n people (1e-6 or less is usual); warned from "
            "delta >= 0.001"
        ]
    else:
        assert warning == []
    assert f"at delta = {delta}" in err  # the report states the delta that was asked


def test_a_large_delta_is_warned_about_wherever_a_delta_is_given(tmp_path, capsys):
    path = write_csv(tmp_path / "c.csv", ["n"], [["5"], ["7"]])
    laplace = ["--laplace", "--epsilon", "1", "--delta", "0.01"]
    assert cli.main(["noise", str(path), "--column", "n", *laplace]) == 0
    assert LARGE.format("0.01") in capsys.readouterr().err
    assert cli.main(["calibrate", "--eps", "1", "--delta", "0.01"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("dgauss calibrate: warning: " + LARGE.format("0.01"))
    assert "sigma2 = 3.438" in out  # calibrated all the same
    assert cli.main(["account", "--sigma2", "10", "--delta", "1e-6,0.05"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and LARGE.format("0.05") in err  # 1e-6 is not warned
    ledger = tmp_path / "L.json"
    assert (
        cli.main(["account", "--ledger", str(ledger), "--init", "--eps", "1", "--delta", "0.1"])
        == 0
    )
    err = capsys.readouterr().err
    assert "dgauss account: warning: " + LARGE.format("0.1") in err  # a budget's delta
    assert cli.main(["account", "--sigma2", "10"]) == 0  # the default deltas: no warning
    assert cli.main(["noise", str(path), "--column", "n", "--rho", "1"]) == 0
    assert "warning" not in capsys.readouterr().err
    # a bad delta is refused by its own message, with no warning before it
    assert cli.main(["calibrate", "--eps", "1", "--delta", "2"]) == 2
    err = capsys.readouterr().err
    assert "warning" not in err and "--delta" in err


def negatives_warning(what: str, count: int, total: int, lowest: str) -> str:
    values = "value" if count == 1 else "values"
    return (
        f"dgauss noise: warning: {what} holds {count:,} negative {values} (of {total:,}; the "
        f"lowest {lowest}), which counts cannot be; --signed if it holds signed values (a sum, "
        "a difference)"
    )


@pytest.mark.parametrize("tables", [True, False], ids=["pyarrow", "plain"])
def test_negative_counts_are_warned_about_by_column(tmp_path, capsys, monkeypatch, request, tables):
    """A noised column holding negative values gets one warning naming it, how many of its
    rows, and the lowest; the release is made all the same (a warning, not a refusal), and
    --signed, saying the values are signed, silences it.  Both ways of reading a CSV agree."""
    if not tables:
        from dgauss.cli import _tables
        from test_cli_tables import without_pyarrow

        without_pyarrow(monkeypatch)
        request.addfinalizer(_tables._arrow.cache_clear)  # pyarrow found again after
    else:
        pytest.importorskip("pyarrow")
    taken = []
    read = noise_module._read_noise_input
    monkeypatch.setattr(
        noise_module, "_read_noise_input", lambda *a: taken.append(read(*a)) or taken[-1]
    )
    n = [2, -1, 0, 5, -3, 1, -1, 0, 4, 2, 1, 3]
    rows = [[f"r{i}", str(v), str(i), "-1"] for i, v in enumerate(n)]
    path = write_csv(tmp_path / "c.csv", ["region", " n ", "m", "note"], rows)
    out = tmp_path / "out.csv"
    status, _, err = run(capsys, path, "--column", "n", "--column", "m", "--rho", 1, "-o", out)
    assert status == 0 and len(read_csv(out)[1]) == 12
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [negatives_warning("column 'n'", 3, 12, "-3")]  # not m, nor the note
    assert isinstance(taken[0], noise_module._tables.ArrowTable) == tables  # the path meant
    status, _, err = run(capsys, path, "--column", "n", "--rho", 1, "--signed", "-o", out)
    assert status == 0 and "warning" not in err
    one = write_csv(tmp_path / "one.csv", ["n"], [["3"], ["-0"], ["-2"], ["+4"]])
    status, _, err = run(capsys, one, "--column", "n", "--rho", 1, "-o", out)
    assert status == 0 and negatives_warning("column 'n'", 1, 4, "-2") in err  # -0 is 0


def test_negative_values_of_an_array_a_lattice_and_parquet(tmp_path, capsys):
    array = tmp_path / "counts.npy"
    np.save(array, np.array([[3, -1], [-7, 0]], dtype=np.int16))
    status, _, err = run(capsys, array, "--rho", 1, "-o", tmp_path / "out.npy")
    assert status == 0 and negatives_warning(str(array), 2, 4, "-7") in err
    cells = write_csv(tmp_path / "g.csv", ["x"], [["1.5"], ["-2.5"], ["0"]])
    status, _, err = run(capsys, cells, "--column", "x", "--granularity", "0.5", "--rho", 1)
    assert status == 0 and negatives_warning("column 'x'", 1, 3, "-2.5") in err  # a value
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "t.parquet"
    pd.DataFrame({"n": np.array([-4, 2, -1], dtype=np.int8), "m": [1, 2, 3]}).to_parquet(parquet)
    status, _, err = run(capsys, parquet, "--column", "n", "--rho", 1, "-o", tmp_path / "o.parquet")
    assert status == 0 and negatives_warning("column 'n'", 2, 3, "-4") in err, err


def test_the_warnings_read_as_the_cli_page_shows(tmp_path, capsys):
    """docs/cli.md shows the two warnings and the lines of a release cut short by a closed
    pipe: each is what the command prints (the pipe's on a real pipe: test_cli_unix)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    shown = [line.strip() for line in page.splitlines()]
    path = write_csv(tmp_path / "c.csv", ["n"], [["5"], ["7"]])
    status, _, err = run(capsys, path, "--column", "n", "--epsilon", 1, "--delta", "0.1")
    large = "dgauss noise: warning: " + LARGE.format("0.1")
    printed = [line for line in err.splitlines() if "warning" in line]
    assert status == 0 and [line for line in shown if line.startswith(large)] == printed
    assert negatives_warning("column 'n'", 3, 12, "-3") in shown  # as the test above prints
    cut = "dgauss noise: stdout was closed before the output was complete (its reader left); "
    assert cut + "the release was made, with this noise:" in shown
