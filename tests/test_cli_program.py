"""``dgauss account`` on a whole program, and the command line's rough edges: --eps and
--epsilon everywhere, ';'-separated CSV and byte-order marks, a full disk, help texts."""

from __future__ import annotations

import errno
import json
import os

import pytest

from dgauss import accounting, cli
from dgauss.accounting import Gaussian, Laplace, compose
from dgauss.cli import _io


def run(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def table(out: str, first: str) -> dict[str, list[str]]:
    """Rows of the table whose header starts with ``first``: {first cell: the other cells}."""
    rows, inside = {}, False
    for line in out.splitlines():
        cells = line.split()
        if cells[:1] == [first]:
            inside = True
            continue
        if inside and (not cells or line.startswith("  (")):
            inside = False
        elif inside:
            rows[cells[0]] = cells[1:]
    return rows


PROGRAM = compose(Gaussian("71.41", k=4), Gaussian(100, [1, -1]), Laplace(4))


def test_account_program_from_options_prints_the_composition(capsys):
    status, out, err = run(
        capsys,
        "account",
        "--gaussian",
        "71.41x4",
        "--gaussian",
        "100:1,-1",
        "--laplace",
        "4",
        "--eps",
        "0.5,1,2",
        "--delta",
        "1e-6,1e-300",
    )
    assert status == 0, err
    assert "a program of 6 releases in 3 entries\n" in out
    assert "sigma2 = 71.41, sensitivity 1, k = 4" in out
    deltas = table(out, "eps")
    for eps in ("0.5", "1", "2"):
        printed, route = deltas[eps]
        truth = PROGRAM.delta(eps)
        assert float(printed) >= truth and float(printed) <= truth * 1.001  # rounded up
        assert route == PROGRAM.route(eps) == "PLD"
    epsilons = table(out, "delta")
    assert float(epsilons["1e-6"][0]) >= PROGRAM.epsilon("1e-6")
    assert float(epsilons["1e-300"][0]) >= PROGRAM.epsilon("1e-300")


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_account_program_from_a_file(tmp_path, capsys, fmt):
    if fmt == "json":
        path = tmp_path / "program.json"
        path.write_text(
            json.dumps(
                {
                    "releases": [
                        {"gaussian": "71.41", "k": 4},
                        {"gaussian": 100, "sensitivity": [1, -1]},
                        {"laplace": "4"},
                    ]
                }
            )
        )
    else:
        pytest.importorskip("tomllib")
        path = tmp_path / "program.toml"
        path.write_text(
            '[[releases]]\ngaussian = "71.41"\nk = 4\n\n[[releases]]\ngaussian = 100\n'
            'sensitivity = [1, -1]\n\n[[releases]]\nlaplace = "4"\n'
        )
    status, out, err = run(capsys, "account", "--program", path, "--eps", "1", "--delta", "1e-6")
    assert status == 0, err
    printed, route = table(out, "eps")["1"]
    assert float(printed) >= PROGRAM.delta(1) and route == "PLD"


def test_a_single_laplace_keeps_its_old_meaning(capsys):
    status, out, _ = run(capsys, "account", "--laplace", "4", "--k", "3", "--eps", "1")
    assert status == 0 and "Lap_Z(0, 4) noise on k = 3 queries" in out
    assert float(table(out, "eps")["1"][0]) >= accounting.laplace_delta(4, 1, k=3)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--gaussian", "abc"], "--gaussian abc"),
        (["--gaussian", "0"], "--gaussian 0"),
        (["--gaussian", "10:0"], "--gaussian 10:0"),
        (["--gaussian", "10x0"], "--gaussian 10x0"),
        (["--gaussian", "10", "--k", "3"], "--k"),
        (["--gaussian", "10", "--sigma2", "3"], "--sigma2"),
        (["--program", "/nonexistent/program.json"], "--program"),
        ([], "--sigma2"),
    ],
)
def test_bad_programs_end_in_one_line_naming_the_option(capsys, argv, option):
    status, out, err = run(capsys, "account", *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and option in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--gaussian", "10:[1,2]"], "sensitivity must be a positive integer (a bound) or a"),
        (["--gaussian", "10:2.5"], "sensitivity must be a positive integer (a bound) or a"),
        (["--gaussian", "10xabc"], "k must be an integer from 1 to 10000000, got 'abc'"),
        (["--gaussian", "10x2.5"], "k must be an integer from 1 to 10000000, got '2.5'"),
        (["--gaussian", "10x1e8"], "k must be an integer from 1 to 10000000, got '1e8'"),
        (["--laplace", "2:1,y"], "sensitivity must be a positive integer (a bound) or a"),
        (["--laplace", "2:1,x"], "expected PARAM[:SENSITIVITY][xK]"),
        (["--sigma2", "10", "--sensitivity", "1x"], "--sensitivity must be a positive integer"),
        (["--sigma2", "10", "--sensitivity", "9" * 5000], "more than 4000 digits"),
    ],
)
def test_parse_errors_say_what_is_accepted(capsys, argv, needle):
    """Not Python's int() message ("invalid literal for int() with base 10"), nor the
    '1/3' a general rational would take."""
    status, out, err = run(capsys, "account", *argv)
    assert status == 2 and out == ""
    assert needle in err, err
    assert "int()" not in err and "1/3" not in err and len(err.strip().splitlines()) == 1


def test_k_written_as_a_power_of_ten_is_read():
    """'10x1e7' failed with int()'s message; K is an exact rational like every parameter."""
    status = cli.main(["account", "--gaussian", "10x1e7", "--eps", "1e5", "--delta", "0.5"])
    assert status == 0


@pytest.mark.parametrize(
    "argv, blamed",
    [
        (["--gaussian", "10", "--sensitivity", "2"], "--sensitivity:"),
        (["--gaussian", "10", "--k", "3"], "--k:"),
        (["--gaussian", "10", "--k", "3", "--sensitivity", "2"], "--k and --sensitivity:"),
    ],
)
def test_a_program_blames_the_option_given(capsys, argv, blamed):
    status, _, err = run(capsys, "account", *argv)
    assert status == 2 and f"error: {blamed}" in err


def test_a_negative_sensitivity_reads_the_same_everywhere(capsys):
    """One number is a bound (positive); a vector is a difference (any signs): the same rule
    and the same words for --sensitivity and for a release's spec."""
    errors = []
    for argv in (
        ["--gaussian=10:-1x2"],
        ["--laplace=2:-1"],
        ["--sigma2", "10", "--sensitivity=-1"],
    ):
        status, _, err = run(capsys, "account", *argv, "--eps", "1")
        assert status == 2
        errors.append(err.split("must be", 1)[1])
    assert len(set(errors)) == 1 and "only a vector's entries may be negative" in errors[0]
    for argv in (["--gaussian=10:-1,2x2"], ["--sigma2", "10", "--sensitivity=-1,2", "--k", "2"]):
        status, out, _ = run(capsys, "account", *argv, "--eps", "1")
        assert status == 0 and "= 1/2 (0.5)" in out


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"releases": []}', "non-empty"),
        ('{"releases": [{"gaussian": 10, "sigma": 2}]}', "unknown key 'sigma'"),
        ('{"releases": [{"gaussian": 10, "laplace": 2}]}', "exactly one"),
        ('{"releases": [{"laplace": 2, "sensitivity": 0}]}', "sensitivity"),
        ("[1, 2", "release"),
    ],
)
def test_bad_program_files(tmp_path, capsys, content, needle):
    path = tmp_path / "p.json"
    path.write_text(content)
    status, _, err = run(capsys, "account", "--program", path)
    assert status == 2 and "--program" in err
    assert needle in err or "JSON" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "--epsilon", "1", "--delta", "1e-6"],
        ["calibrate", "--eps", "1", "--delta", "1e-6"],
        ["account", "--sigma2", "100", "--epsilon", "1"],
        ["account", "--sigma2", "100", "--eps", "1"],
    ],
)
def test_eps_and_epsilon_are_both_accepted(capsys, argv):
    status, _, err = run(capsys, *argv)
    assert status == 0, err


def test_noise_accepts_eps_as_well(tmp_path, capsys):
    path = tmp_path / "c.csv"
    path.write_text("n\n5\n")
    for option in ("--eps", "--epsilon"):
        status, out, err = run(capsys, "noise", path, "--column", "n", option, 1, "--delta", "1e-6")
        assert status == 0, err


@pytest.mark.parametrize("command", ["sample", "calibrate", "account", "noise"])
def test_no_doubled_percent_in_help(capsys, command):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "-h"])
    out = capsys.readouterr().out
    assert "%%" not in out and "%(" not in out


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_noise_reads_any_delimiter_and_drops_a_byte_order_mark(tmp_path, capsys, bom, delimiter):
    path = tmp_path / "istat.csv"
    rows = [["comune", "n", "note"], ["Roma", "10", "a b"], ["Milano", "3", "c"]]
    text = "\n".join(delimiter.join(r) for r in rows) + "\n"
    path.write_bytes(bom + text.encode())
    out_path = tmp_path / "out.csv"
    status, _, err = run(capsys, "noise", path, "--column", "comune", "--sigma2", 1)
    assert status == 1 and "'comune'" in err and "\ufeff" not in err  # names, no BOM
    status, _, err = run(capsys, "noise", path, "--column", "n", "--sigma2", 1, "-o", out_path)
    assert status == 0, err
    written = out_path.read_bytes()
    assert not written.startswith(b"\xef\xbb\xbf")
    lines = written.decode().splitlines()
    assert lines[0] == delimiter.join(rows[0])  # same delimiter out, header kept
    assert [line.split(delimiter)[0] for line in lines[1:]] == ["Roma", "Milano"]


def test_noise_delimiter_option(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("n:m\n4:5\n")
    status, out, err = run(
        capsys, "noise", path, "--column", "m", "--sigma2", 1, "--delimiter", ":"
    )
    assert status == 0, err and out.splitlines()[0] == "n:m"
    status, _, err = run(capsys, "noise", path, "--column", "m", "--sigma2", 1, "--delimiter", "ab")
    assert status == 2 and "--delimiter" in err


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_is_said_plainly(tmp_path, capsys, monkeypatch, number):
    def full(f, chunk):
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(_io, "_write_npy_chunk", full)
    target = tmp_path / "noise.npy"
    status, _, err = run(capsys, "sample", "--sigma2", 4, "-n", 1000, "-o", target)
    assert status == 1
    assert f"no space left on device writing {target}" in err and "requested" not in err
    assert not target.exists() and not list(tmp_path.iterdir())  # nothing partial left


def test_a_full_disk_on_noise_output(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.csv"
    path.write_text("n\n5\n")

    def full(f, array):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_io, "_write_bytes_of", full)  # under the .npy writer
    out_path = tmp_path / "o.npy"
    status, _, err = run(capsys, "noise", path, "--column", "n", "--sigma2", 1, "-o", out_path)
    monkeypatch.undo()
    assert status == 1 and f"no space left on device writing {out_path}" in err
    assert not out_path.exists()
