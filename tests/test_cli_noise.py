"""``dgauss noise``: counts in a CSV column (or a .npy array) released with noise."""

from __future__ import annotations

import csv
import io
import statistics
import sys

import numpy as np
import pytest

from dgauss import accounting, cli


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
