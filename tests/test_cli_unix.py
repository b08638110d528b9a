"""The ``dgauss`` command line as a Unix tool: signals, pipes, its own input as output,
integer options, lattice values, bad cells, wording and reprs.

Signals and pipes are tested on real processes (``python -m dgauss``); the rest in-process
through :func:`dgauss.cli.main`.
"""

from __future__ import annotations

import decimal
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import cli
from dgauss.cli import _common, _io
from dgauss.cli import noise as noise_module
from dgauss.mechanisms import Remaining
from test_cli_noise import read_csv, write_csv

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and pipes")

ENV = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dgauss.__file__)))
DGAUSS = [sys.executable, "-m", "dgauss"]


def hangups_at_default() -> None:
    """(In the child, before exec.)  SIGHUP at its default action, as under a terminal: a
    run of the tests under ``nohup`` ignores it, a child would inherit that, and the CLI
    rightly leaves an ignored SIGHUP ignored (test_an_ignored_sighup_stays_ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start(args, tmp_path, **options) -> subprocess.Popen:
    if hasattr(signal, "SIGHUP"):
        options.setdefault("preexec_fn", hangups_at_default)
    return subprocess.Popen(
        DGAUSS + [str(a) for a in args],
        env=ENV,
        cwd=tmp_path,
        stdout=options.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def wait_for_partial_file(folder, process, timeout=60.0) -> None:
    """Until a hidden temporary file with some samples in it exists beside the output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        partial = [p for p in folder.iterdir() if p.name.startswith(".dgauss-")]
        if partial and partial[0].stat().st_size > 4096:
            return
        time.sleep(0.02)
    raise AssertionError("no partial output appeared")


def run(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


# ---- 1. SIGTERM and SIGHUP: no partial or hidden file, what was written, 128 + signal ---------


@posix_only
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("name", ["noise.npy", "noise.txt"])
def test_a_signal_during_sample_leaves_no_file_and_says_so(tmp_path, signum, name):
    """Killed mid-write (``kill``, ``timeout``, a closed terminal, Ctrl-C): the hidden
    temporary file is removed, an existing output is untouched, the status is 128 + signal."""
    out = tmp_path / name
    out.write_text("old\n")
    process = start(
        [
            "sample",
            "--sigma2",
            "100",
            "-n",
            "100000000",
            "-o",
            name,
            "--chunk",
            "1000",
            "--method",
            "rejection",
            "--no-progress",
        ],
        tmp_path,
    )
    wait_for_partial_file(tmp_path, process)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing hidden left
    assert out.read_text() == "old\n"
    how = "interrupted" if signum == signal.SIGINT else f"terminated by {signum.name}"
    assert f"dgauss sample: {how} after " in stderr
    assert f"samples; {name} was not written" in stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1
    assert stdout == ""


@posix_only
def test_an_ignored_sighup_stays_ignored(tmp_path):
    """Under ``nohup`` (SIGHUP ignored), a hang-up does not stop the run; SIGTERM still does."""

    def ignore_hangups():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    process = start(
        [
            "sample",
            "--sigma2",
            "100",
            "-n",
            "100000000",
            "-o",
            "x.npy",
            "--chunk",
            "1000",
            "--method",
            "rejection",
            "--no-progress",
        ],
        tmp_path,
        preexec_fn=ignore_hangups,
    )
    wait_for_partial_file(tmp_path, process)
    process.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    assert process.poll() is None  # still running
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143 and "terminated by SIGTERM" in stderr
    assert list(tmp_path.iterdir()) == []


@posix_only
@pytest.mark.parametrize("name", ["out.csv", "out.npy"])
def test_sigterm_while_noise_writes_leaves_the_old_output(tmp_path, capsys, monkeypatch, name):
    """The signal arrives in the middle of writing the temporary file (in-process: the
    handler dgauss installs turns it into an exception)."""
    source = write_csv(tmp_path / "in.csv", ["n"], [[i] for i in range(1000)])
    out = tmp_path / name
    out.write_bytes(b"old")
    real_fdopen = os.fdopen

    class SignalAfterWriting:
        """The temporary file, which raises SIGTERM once some of the output is in it."""

        def __init__(self, f):
            self.f = f

        def write(self, data):
            written = self.f.write(data)
            self.f.flush()
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here
            return written

        def writelines(self, lines):  # (the pyarrow path writes its batches so)
            for line in lines:
                self.write(line)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: SignalAfterWriting(real_fdopen(*a, **k)))
    status, _, err = run(capsys, "noise", source, "--column", "n", "--sigma2", 4, "-o", out)
    monkeypatch.undo()
    assert status == 143
    assert err.strip() == f"dgauss noise: terminated by SIGTERM; {out} was not written"
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.csv", name])
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored after the run


@posix_only
def test_a_signal_at_the_rename_reports_the_file_as_written(tmp_path, capsys, monkeypatch):
    """A signal right at the rename is held until the output is recorded as written: the
    message agrees with the disk."""
    real_replace = os.replace

    def replace_then_signal(a, b):
        real_replace(a, b)
        os.kill(os.getpid(), signal.SIGTERM)  # delivered once the signals are released

    monkeypatch.setattr(_io.os, "replace", replace_then_signal)
    out = tmp_path / "x.npy"
    status, _, err = run(capsys, "sample", "--sigma2", 1, "-n", 500, "--seed", 3, "-o", out)
    monkeypatch.undo()
    assert status == 143
    assert "terminated by SIGTERM after 500 samples; " + f"{out} was written" in err
    assert np.load(out).shape == (500,)
    assert [p.name for p in tmp_path.iterdir()] == ["x.npy"]


@posix_only
def test_a_signal_during_the_summary_reports_the_file_as_written(tmp_path, capsys, monkeypatch):
    from dgauss.cli import sample as sample_module

    real_summary = sample_module._summary

    def summary_then_signal(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return real_summary(*args)

    monkeypatch.setattr(sample_module, "_summary", summary_then_signal)
    out = tmp_path / "x.txt"
    status, _, err = run(capsys, "sample", "--sigma2", 1, "-n", 300, "-o", out)
    assert status == 143
    assert (
        err.strip() == f"dgauss sample: terminated by SIGTERM after 300 samples; {out} was written"
    )
    assert len(out.read_text().split()) == 300


@posix_only
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT])
def test_a_signal_right_after_the_temporary_file_is_made_removes_it(
    tmp_path, capsys, monkeypatch, signum
):
    """The signal is sent while another thread runs: with the signals blocked in the main
    thread only (``pthread_sigmask``), the kernel delivers it to that thread and Python runs
    the handler in the main thread at once, losing the temporary file's name."""
    import tempfile
    import threading

    real_mkstemp = tempfile.mkstemp

    def mkstemp_then_signal(*args, **kwargs):
        made = real_mkstemp(*args, **kwargs)
        os.kill(os.getpid(), signum)
        time.sleep(0.2)  # the other thread has it by now; a pending handler runs after this
        return made

    monkeypatch.setattr(_io.tempfile, "mkstemp", mkstemp_then_signal)
    done = threading.Event()
    other = threading.Thread(target=done.wait)
    other.start()
    # an ignored SIGHUP (the tests run under nohup) at its default action, as under a
    # terminal: the CLI takes over only a signal left at its default
    previous = signal.getsignal(signum)
    if previous == signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
    try:
        status, _, err = run(capsys, "sample", "--sigma2", 1, "-n", 10, "-o", tmp_path / "x.txt")
    finally:
        signal.signal(signum, previous)
        done.set()
        other.join()
    monkeypatch.undo()
    how = "interrupted" if signum == signal.SIGINT else f"terminated by {signum.name}"
    assert status == (130 if signum == signal.SIGINT else 128 + signum)
    assert how in err and "x.txt was not written" in err
    assert list(tmp_path.iterdir()) == []


@posix_only
def test_signals_are_held_only_where_python_handles_them(tmp_path):
    """An ignored signal stays ignored inside the held block, and the handlers in force
    before it are back after it, also when a held signal arrived."""
    calls = []
    previous = signal.signal(signal.SIGTERM, lambda *a: calls.append("term"))
    previous_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with _io._signals_held():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            assert calls == []  # held
        assert calls == ["term"]
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGHUP, previous_hup)


def test_terminated_carries_the_conventional_status():
    assert _common.Terminated(signal.SIGTERM).status == 143
    assert _common.Terminated(signal.SIGTERM).name == "SIGTERM"


# ---- 2. -o naming the input -----------------------------------------------------------------


def _same_file_names(tmp_path, source):
    folder = tmp_path / "sub"
    folder.mkdir()
    (tmp_path / "link.csv").symlink_to(source)
    os.link(source, tmp_path / "hard.csv")
    return [
        str(source),
        str(folder / ".." / source.name),  # the same path once resolved
        str(tmp_path / "link.csv"),  # a symbolic link to it
        str(tmp_path / "hard.csv"),  # another name of the same inode
    ]


@posix_only
def test_output_equal_to_the_input_is_refused(tmp_path, capsys):
    rows = [[i, i * 3] for i in range(20)]
    source = write_csv(tmp_path / "t.csv", ["id", "count"], rows)
    before = source.read_bytes()
    for target in _same_file_names(tmp_path, source):
        status, out, err = run(
            capsys, "noise", source, "--column", "count", "--sigma2", 4, "-o", target
        )
        assert status == 2, target
        assert "is the input file" in err and "--overwrite-input" in err
        assert source.read_bytes() == before
    # and the other way round: the input named through a link, -o the file itself
    status, _, err = run(
        capsys, "noise", tmp_path / "link.csv", "--column", "count", "--sigma2", 4, "-o", source
    )
    assert status == 2 and source.read_bytes() == before


def test_overwrite_input_replaces_it_on_purpose(tmp_path, capsys):
    rows = [[i, i * 3] for i in range(20)]
    source = write_csv(tmp_path / "t.csv", ["id", "count"], rows)
    status, _, err = run(
        capsys,
        "noise",
        source,
        "--column",
        "count",
        "--sigma2",
        "1e-9",
        "--overwrite-input",
        "-o",
        source,
    )
    assert status == 0, err
    header, released = read_csv(source)
    # sigma2 = 1e-9: a nonzero noise has probability below 2*exp(-5e8); the rows come back
    assert header == ["id", "count"] and released == [[str(a), str(b)] for a, b in rows]
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_a_different_output_is_not_refused(tmp_path, capsys):
    source = write_csv(tmp_path / "t.csv", ["count"], [[1], [2]])
    status, _, err = run(
        capsys, "noise", source, "--column", "count", "--sigma2", 4, "-o", tmp_path / "t2.csv"
    )
    assert status == 0, err


# ---- 3. a closed pipe ends quietly ------------------------------------------------------------


@posix_only
@pytest.mark.parametrize(
    "args",
    [
        ["sample", "--sigma2", "1", "-n", "1000"],
        ["account", "--sigma2", "100"],
        ["calibrate", "--eps", "1", "--delta", "1e-6"],
    ],
)
def test_a_closed_pipe_is_quiet_with_status_141(tmp_path, args):
    """The reader went away before the output was written (its end closed at once): no
    message, no traceback (not even from the interpreter's flush at exit), status 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    process = start(args, tmp_path, stdout=write_end)
    os.close(write_end)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 141
    assert stderr == ""


@posix_only
@pytest.mark.parametrize("tables", [True, False], ids=["pyarrow", "plain"])
@pytest.mark.long
def test_noise_into_head_says_what_was_released(tmp_path, tables):
    """``dgauss noise big.csv ... | head -1``: head exits after one line, the rest of the
    (larger than a pipe's buffer) CSV meets a closed pipe.  No traceback, status 141, and
    stderr says that the output was cut short and which noise the release was made with
    (the same lines as a complete run's), so that what was released is known."""
    write_csv(tmp_path / "big.csv", ["n"], [[i % 50] for i in range(200_000)])
    dgauss_command = " ".join(DGAUSS)
    if not tables:  # the plain path: pyarrow made unimportable in the child
        (tmp_path / "plain.py").write_text(
            "import runpy, sys\nsys.modules['pyarrow'] = None\n"
            "runpy.run_module('dgauss', run_name='__main__')\n"
        )
        dgauss_command = f"{sys.executable} plain.py"
    command = f"{dgauss_command} noise big.csv --column n --sigma2 4"
    done = subprocess.run(
        ["bash", "-c", f'{command} | head -1; echo "status ${{PIPESTATUS[0]}}" >&2'],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == "n\n"
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "dgauss noise: stdout was closed before the output was complete (its reader left); "
        "the release was made, with this noise:"
    ), done.stderr
    assert lines[1] == ("dgauss noise: N_Z(0, sigma2) on 200000 values, sigma2 = 4, sensitivity 1")
    assert "  zCDP: rho = 1/8 (0.125)" in lines and lines[-2].startswith("  95% error bars")
    assert lines[-1] == "status 141" and "Traceback" not in done.stderr


# ---- 4. integer options: 1e7, 10_000_000, exact only ------------------------------------------


@pytest.mark.parametrize("text", ["2000", "2e3", "2E3", "2_000", "2.0e3", "+2000", " 2000 "])
def test_n_takes_every_exact_spelling(capsys, text):
    status, out, err = run(capsys, "sample", "--sigma2", 1, "-n", text, "--seed", 1)
    assert status == 0, err
    assert "2,000 samples" in out


@pytest.mark.parametrize(
    "option, text, words",
    [
        ("-n", "1.5e0", "not a whole number"),
        ("-n", "1e-3", "not a whole number"),
        ("-n", "1e400", "at most 9,223,372,036,854,775,807"),
        ("-n", "2_000.0", "underscore"),
        ("-n", "2__000", "underscore"),
        ("-n", "_2000", "underscore"),
        ("-n", "2000_", "underscore"),
        ("-n", "nan", "an integer such as"),
        ("-n", "inf", "an integer such as"),
        ("-n", "0x10", "an integer such as"),
        ("-n", "", "an integer such as"),
        ("-n", "-1", ">= 0"),
        ("--chunk", "1e400", "at most"),
        ("--chunk", "0.5e0", "not a whole number"),
        ("--seed", "1.5", "not a whole number"),
        ("--mu", "1.5", "not a whole number"),
    ],
)
def test_integer_options_refuse_naming_the_option(capsys, option, text, words):
    args = ["sample", "--sigma2", "1", "-n", "10", option, text]
    if option == "-n":
        args = ["sample", "--sigma2", "1", "-n", text]
    status, _, err = run(capsys, *args)
    assert status == 2
    assert option in err and words in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["account", "calibrate"])
def test_k_in_exponent_form_is_the_same_k(capsys, command):
    base = ["--sigma2", "2500"] if command == "account" else ["--eps", "1", "--delta", "1e-6"]
    outputs = [run(capsys, command, *base, "--k", k) for k in ("100", "1e2", "1_00")]
    assert all(status == 0 for status, _, _ in outputs)
    assert len({out for _, out, _ in outputs}) == 1 and "100 queries" in outputs[0][1]
    status, _, err = run(capsys, command, *base, "--k", "1e8")
    assert status == 2 and "--k" in err and "at most 10,000,000" in err


def test_seed_in_exponent_form_draws_the_same_samples(tmp_path, capsys):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert run(capsys, "sample", "--sigma2", 9, "-n", 100, "--seed", "1000", "-o", a)[0] == 0
    assert run(capsys, "sample", "--sigma2", 9, "-n", "1e2", "--seed", "1e3", "-o", b)[0] == 0
    np.testing.assert_array_equal(np.load(a), np.load(b))


def test_parameters_keep_their_exactness_rules(capsys):
    """--sigma2 stays an exact rational: 1e100 is taken, an underscore is not a number there."""
    assert run(capsys, "sample", "--sigma2", "1e100", "-n", 1, "--seed", 1)[0] == 0
    status, _, err = run(capsys, "sample", "--sigma2", "1_0", "-n", 1)
    assert status == 2 and "--sigma2" in err


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789_", min_size=1, max_size=12))
def test_grouped_integers_follow_python(text):
    """Digits and underscores: accepted exactly when Python's int() takes them, at its value."""
    try:
        expected = int(text)
    except ValueError:
        expected = None
    try:
        found = _common._exact_integer(text)
    except ValueError:
        found = None
    assert found == expected


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.eE+-", min_size=1, max_size=10))
def test_exponent_forms_are_exact_integers_only(text):
    """Decimals and exponents: accepted exactly when the decimal value is a whole number (the
    oracle: decimal.Decimal, exact at these sizes), at that value; never rounded."""
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation:
        value = None
    if value is not None and value.is_finite():
        # past dgauss's limits (an exponent beyond 10**6) a refusal is right whatever the value
        assume(abs(value.as_tuple().exponent) <= 10**6 and value.adjusted() <= 50)
    integral = value is not None and value.is_finite() and value == value.to_integral_value()
    expected = int(value) if integral else None
    try:
        found = _common._exact_integer(text)
    except ValueError:
        found = None
    assert found == expected, text


# ---- 5. --granularity on dgauss noise ---------------------------------------------------------


def _exact(text: str) -> Fraction:
    return Fraction(decimal.Decimal(text)) if "/" not in text else Fraction(text)


@pytest.mark.parametrize(
    "g, cells, shown",
    [
        ("1", ["7.0", "12", "-3.00", "1e1", "0"], ["7", "12", "-3", "10", "0"]),
        ("0.5", ["7.0", "3.5", "-2.50", "1e1", "12"], ["7.0", "3.5", "-2.5", "10.0", "12.0"]),
        ("0.1", ["0.3", "0.7", "1.1", "2"], ["0.3", "0.7", "1.1", "2.0"]),  # 0.3/0.1 != 3 in floats
        ("1e-1", ["0.3"], ["0.3"]),
        ("1/3", ["1/3", "2", "-5/3"], ["1/3", "2", "-5/3"]),
        ("0.25", ["0.75", "1.25"], ["0.75", "1.25"]),
    ],
)
def test_granularity_takes_lattice_values_exactly(tmp_path, capsys, g, cells, shown):
    """sigma2 = 1e-9 (in steps): a nonzero noise has probability below 2*exp(-5e8), so the
    release equals the input, written on the lattice (G's decimal places, or a fraction)."""
    source = write_csv(tmp_path / "t.csv", ["area", "count"], [[i, c] for i, c in enumerate(cells)])
    out = tmp_path / "out.csv"
    status, _, err = run(
        capsys,
        "noise",
        source,
        "--column",
        "count",
        "--sigma2",
        "1e-9",
        "--granularity",
        g,
        "-o",
        out,
    )
    assert status == 0, err
    _, rows = read_csv(out)
    assert [r[1] for r in rows] == shown
    assert [_exact(s) for s in shown] == [_exact(c) for c in cells]  # the same values


@pytest.mark.long
def test_granularity_noise_is_g_times_integer_noise(tmp_path, capsys):
    """With G = 0.5 and sigma2 = 100 (in steps of G), (released - true)/G is an integer with
    variance 100: noise on the integers (not scaled by G) would read 400, or leave the lattice."""
    n, g = 20_000, Fraction(1, 2)
    truth = [Fraction(i % 17, 2) for i in range(n)]
    source = write_csv(tmp_path / "t.csv", ["v"], [[f"{float(t):.1f}"] for t in truth])
    out = tmp_path / "out.csv"
    status, _, err = run(
        capsys, "noise", source, "--column", "v", "--sigma2", 100, "--granularity", "0.5", "-o", out
    )
    assert status == 0, err
    _, rows = read_csv(out)
    steps = [(_exact(r[0]) - t) / g for r, t in zip(rows, truth, strict=True)]
    assert all(s.denominator == 1 for s in steps)
    assert all(len(r[0].split(".")[1]) == 1 for r in rows)  # 0.5's one decimal place
    variance = float(sum(s * s for s in steps) / n)
    # the sample variance of 20,000 draws is within 100 +- 10 (10 standard deviations)
    assert 90 < variance < 110, variance
    assert "on the lattice 0.5*Z" in err and "+-" in err


@pytest.mark.parametrize(
    "g, cell, message",
    [
        ("0.5", "0.3", "not a multiple of --granularity 0.5"),
        ("1", "7.5", "not a multiple of --granularity 1"),
        ("1/3", "0.5", "not a multiple of --granularity 1/3"),
    ],
)
def test_granularity_refuses_values_off_the_lattice(tmp_path, capsys, g, cell, message):
    source = write_csv(tmp_path / "t.csv", ["v"], [["1"], [cell]])
    status, _, err = run(
        capsys, "noise", source, "--column", "v", "--sigma2", 4, "--granularity", g
    )
    assert status == 1 and message in err and "line 3" in err and repr(cell) in err


@pytest.mark.parametrize("g", ["0", "-0.5", "abc", "nan"])
def test_granularity_must_be_a_positive_exact_number(tmp_path, capsys, g):
    source = write_csv(tmp_path / "t.csv", ["v"], [["1"]])
    status, _, err = run(
        capsys, "noise", source, "--column", "v", "--sigma2", 4, "--granularity", g
    )
    assert status == 2 and "--granularity" in err


def test_without_granularity_a_float_cell_points_to_it(tmp_path, capsys):
    source = write_csv(tmp_path / "t.csv", ["v"], [["1"], ["7.0"]])
    status, _, err = run(capsys, "noise", source, "--column", "v", "--sigma2", 4)
    assert status == 1 and "(counts are never rounded)" in err and "--granularity 1" in err


def test_granularity_clip_min_is_in_values(tmp_path, capsys):
    source = write_csv(tmp_path / "t.csv", ["v"], [["0.0"]] * 400)
    out = tmp_path / "out.csv"
    status, _, err = run(
        capsys,
        "noise",
        source,
        "--column",
        "v",
        "--sigma2",
        100,
        "--granularity",
        "0.5",
        "--clip-min",
        "1.5",
        "-o",
        out,
    )
    assert status == 0, err
    values = [_exact(r[0]) for r in read_csv(out)[1]]
    assert min(values) == Fraction(3, 2)  # clipped at 1.5 (400 draws: P(all above) < 1e-100)
    status, _, err = run(
        capsys,
        "noise",
        source,
        "--column",
        "v",
        "--sigma2",
        100,
        "--granularity",
        "0.5",
        "--clip-min",
        "0.2",
    )
    assert status == 2 and "--clip-min" in err


def test_granularity_on_a_float_npy(tmp_path, capsys):
    values = np.array([7.0, 3.5, -2.5, 0.0])
    np.save(tmp_path / "v.npy", values)
    status, _, err = run(
        capsys,
        "noise",
        tmp_path / "v.npy",
        "--sigma2",
        "1e-9",
        "--granularity",
        "0.5",
        "-o",
        tmp_path / "out.npy",
    )
    assert status == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), values)
    np.save(tmp_path / "w.npy", np.array([0.1]))
    status, _, err = run(
        capsys, "noise", tmp_path / "w.npy", "--sigma2", 4, "--granularity", "0.1"
    )  # the double 0.1 is not 1/10: never rounded
    assert status == 1 and "lattice" in err


# ---- 6. bad cells: what, how many, where ------------------------------------------------------


def test_bad_cells_are_counted_by_kind_with_their_lines(tmp_path, capsys):
    cells = ["1", "", " ", "NA", "7.0", "abc", "2"] + ["8.0"] * 7 + ["n/a"]
    source = write_csv(tmp_path / "t.csv", ["area", "count"], [["x", c] for c in cells])
    status, out, err = run(capsys, "noise", source, "--column", "count", "--sigma2", 4)
    assert status == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    lines = {}  # the expected lines, computed from the file: line 1 is the header
    for number, cell in enumerate(cells, start=2):
        kind = (
            "empty"
            if not cell.strip()
            else "missing"
            if cell.lower() in ("na", "n/a")
            else "number"
            if cell.endswith(".0")
            else "text"
            if not cell.isdigit()
            else None
        )
        if kind:
            lines.setdefault(kind, []).append(number)
    bad = sum(len(v) for v in lines.values())
    assert f"column 'count': {bad} cells are not integers (counts are never rounded)" in err
    assert f"2 empty: lines {lines['empty'][0]}, {lines['empty'][1]}" in err
    assert f"2 missing, such as 'NA': lines {lines['missing'][0]}, {lines['missing'][1]}" in err
    first = ", ".join(map(str, lines["number"][:5]))
    assert f"8 numbers not written as integers, such as '7.0': lines {first}, and 3 more" in err
    assert f"1 not a number ('abc'): line {lines['text'][0]}" in err


def test_bad_cells_of_several_columns_name_each(tmp_path, capsys):
    source = write_csv(tmp_path / "t.csv", ["a", "b"], [["1", ""], ["x", "2"]])
    status, _, err = run(capsys, "noise", source, "--column", "a", "--column", "b", "--sigma2", 4)
    assert status == 1
    assert "2 cells are not integers" in err
    assert "1 empty: line 2 ('b')" in err and "1 not a number ('x'): line 3 ('a')" in err


# ---- 7. wording, usage lines, reprs -----------------------------------------------------------


@pytest.mark.parametrize(
    "specs, heading",
    [
        (["35.73x2"], "a program of 2 releases in 1 entry"),
        (["35.73"], "a program of 1 release"),
        (["35.73", "100"], "a program of 2 releases"),
        (["35.73x2", "100x3"], "a program of 5 releases in 2 entries"),
    ],
)
def test_a_program_counts_its_releases(capsys, specs, heading):
    args = [a for s in specs for a in ("--gaussian", s)]
    status, out, err = run(capsys, "account", *args, "--eps", "1", "--delta", "1e-6")
    assert status == 0, err
    assert out.splitlines()[0] == f"dgauss account: {heading}"


@pytest.mark.parametrize(
    "command, args",
    [
        ("sample", ["--sigma2", "1", "-n", "1"]),
        ("noise", ["in.csv", "--column", "n", "--sigma2", "1"]),
        ("account", ["--sigma2", "1"]),
        ("calibrate", ["--eps", "1", "--delta", "1e-6"]),
    ],
)
def test_an_unknown_option_gets_the_subcommands_own_usage(capsys, command, args):
    status, _, err = run(capsys, command, *args, "--no-such-option", "3")
    assert status == 2
    assert f"dgauss {command}: error: unrecognized arguments: --no-such-option 3" in err
    assert "usage: dgauss [-h]" not in err


def test_remaining_repr_rounds_down_and_names_the_budget():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    counts = np.zeros(3, dtype=np.int64)
    acc.add_gaussian_noise(counts, sigma2="35.73")
    acc.add_gaussian_noise(counts, sigma2="35.73")
    left = acc.remaining
    text = repr(left)
    assert text.startswith("Remaining(epsilon=") and " of 1, delta=" in text
    assert text.endswith(" of 1e-6)")
    eps_shown = text.split("epsilon=")[1].split(" ")[0]
    delta_shown = text.split("delta=")[1].split(" ")[0]
    assert Fraction(eps_shown) <= Fraction(left.epsilon)  # never more than is left
    assert Fraction(delta_shown) <= Fraction(left.delta)
    assert Fraction(eps_shown) > Fraction(left.epsilon) * Fraction(999, 1000)  # 4 digits
    assert left == Remaining(epsilon=left.epsilon, delta=left.delta)  # fields unchanged


@pytest.mark.parametrize(
    "value, shown",
    [(0.123456789, "0.1234"), (0.99999999, "0.9999"), (1.0, "1"), (3.5e-12, "3.5e-12")],
)
def test_remaining_repr_digits(value, shown):
    assert repr(Remaining(epsilon=value)) == f"Remaining(epsilon={shown})"
    assert repr(Remaining(rho=Fraction(1, 3))) == "Remaining(rho=0.3333)"


def test_privacy_loss_repr_rounds_the_spent_delta_up():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise(np.zeros(2, dtype=np.int64), sigma2="35.73")
    text = repr(acc.spent)
    assert text.startswith("PrivacyLoss(1 release, delta=") and " at epsilon=1, rho=" in text
    delta_shown = Fraction(text.split("delta=")[1].split(" ")[0])
    assert delta_shown >= Fraction(acc.spent.delta(1))
    rho_shown = Fraction(text.split("rho=")[1].rstrip(")"))
    assert rho_shown >= Fraction(1, 2 * Fraction("35.73"))  # rho = 1/(2 sigma2), rounded up


def test_the_accountant_writes_its_budget_as_the_cli_does():
    """1e-6, not Python's 1e-06, in the Accountant's repr and in a refusal's message (the
    ledger's refusal prints it beside the CLI's own "(eps, delta) = (1, 1e-6)")."""
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    assert repr(acc) == "Accountant(epsilon=1, delta=1e-6; 0 releases)"
    assert repr(dgauss.Accountant(epsilon="0.50", delta="2.5e-10")).startswith(
        "Accountant(epsilon=0.5, delta=2.5e-10;"
    )
    with pytest.raises(dgauss.PrivacyBudgetError, match=r"\(Accountant\(epsilon=1, delta=1e-6; 0"):
        acc.add_gaussian_noise(np.zeros(2, dtype=np.int64), sigma2="1/100")


def test_lattice_text_is_exact():
    """The lattice text helper writes exactly g*steps (checked against Fraction arithmetic)."""
    for g in (Fraction(1, 2), Fraction(1, 10), Fraction(3, 8), Fraction(1, 3), Fraction(5)):
        for steps in (-7, -1, 0, 1, 3, 10**30):
            text = noise_module._lattice_text(steps, g)
            assert _exact(text) == steps * g
