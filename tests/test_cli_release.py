"""How ``dgauss noise`` and ``dgauss tabulate`` end a release cut short: a signal or Ctrl-C
(what became of the output), a reader of stdout that left (what was released), an output
that could not be written after the ledger recorded the release (its budget stays spent).
Each failure is made in-process, at the step named, so that the message is exact."""

from __future__ import annotations

import csv
import json
import signal

import pytest

from dgauss import cli
from dgauss.cli import _common, _tables, noise, tabulate

ROWS = [["1", "north"], ["2", "south"], ["3", "north"], ["4", "east"]]


@pytest.fixture
def command_args(tmp_path):
    """Each command's arguments for a small release to stdout, by the command's name."""
    path = tmp_path / "people.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["id", "region"], *ROWS])
    return {
        "noise": ["noise", str(path), "--column", "id", "--sigma2", "4"],
        "tabulate": [
            "tabulate",
            str(path),
            "--by",
            "region",
            "--key",
            "region=north,south",
            "--sigma2",
            "4",
        ],
    }


def raising(exc: BaseException):
    def stop(*args, **kwargs):
        raise exc

    return stop


def stop_writing_stdout(monkeypatch, exc: BaseException) -> None:
    """``exc`` where either command begins to write its output to stdout."""
    for module in (noise, tabulate, _tables):
        monkeypatch.setattr(module, "_write_stdout", raising(exc))


STOPS = [
    (lambda: KeyboardInterrupt(), "interrupted", 130),
    (lambda: _common.Terminated(signal.SIGTERM), "terminated by SIGTERM", 143),
]


@pytest.mark.parametrize(("stop", "how", "status"), STOPS, ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize(
    ("command", "fate"),
    [
        ("noise", "the output on stdout may be incomplete"),
        ("tabulate", "nothing was written"),  # tabulate says no more of stdout
    ],
)
def test_a_stop_while_stdout_is_written_says_what_became_of_it(
    capsys, monkeypatch, command_args, command, fate, stop, how, status
):
    stop_writing_stdout(monkeypatch, stop())
    assert cli.main(command_args[command]) == status
    out, err = capsys.readouterr()
    assert out == "" and err == f"dgauss {command}: {how}; {fate}\n"


@pytest.mark.parametrize(("stop", "how", "status"), STOPS, ids=["ctrl-c", "sigterm"])
def test_noise_stopped_before_writing_says_nothing_was_written(
    capsys, monkeypatch, command_args, stop, how, status
):
    monkeypatch.setattr(noise, "_read_noise_input", raising(stop()))
    assert cli.main(command_args["noise"]) == status
    assert capsys.readouterr().err == f"dgauss noise: {how}; nothing was written\n"


@pytest.mark.parametrize("command", ["noise", "tabulate"])
def test_a_reader_that_left_is_told_what_was_released(capsys, monkeypatch, command_args, command):
    """The lines after the closed pipe's are those of a run that ended well (the noise does
    not enter them), and the BrokenPipeError goes on to :func:`dgauss.cli.main` (141)."""
    assert cli.main(command_args[command]) == 0
    released = capsys.readouterr().err.splitlines()
    assert released[0].startswith(f"dgauss {command}: N_Z(0, sigma2) on ")
    stop_writing_stdout(monkeypatch, BrokenPipeError())
    args = cli.build_parser().parse_args(command_args[command])
    with pytest.raises(BrokenPipeError):
        args.command(args)
    assert capsys.readouterr().err.splitlines() == [
        f"dgauss {command}: stdout was closed before the output was complete (its reader "
        "left); the release was made, with this noise:",
        *released,
    ]


@pytest.mark.parametrize("command", ["noise", "tabulate"])
def test_an_output_not_written_after_recording_keeps_the_budget_spent(
    tmp_path, capsys, command_args, command
):
    ledger = tmp_path / "budget.json"
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1"]) == 0
    capsys.readouterr()
    out = tmp_path / "no-such-folder" / "out.csv"
    status = cli.main([*command_args[command], "--ledger", str(ledger), "-o", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert status == 1 and len(err) == 2, err
    assert err[0] == (
        f"dgauss {command}: the release is recorded in the ledger {ledger} but its output "
        "was not written: its budget stays spent (the safe side)"
    )
    assert "error: " in err[1] and "No such file or directory" in err[1]
    assert len(json.loads(ledger.read_text())["releases"]) == 1
