"""The ``dgauss`` command line, run in-process through :func:`dgauss.cli.main`."""

from __future__ import annotations

import io
import os
import re
import statistics
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import cli


def api_draws(sampler, param, n, chunk, seed, mu=0, **options):
    """What ``dgauss sample`` draws: chunks in sequence from one seeded generator."""
    rng = np.random.default_rng(seed)
    sizes = [chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])
    parts = [sampler(param, size=k, mu=mu, rng=rng, **options) for k in sizes]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


@pytest.mark.parametrize("n", [0, 1, 2999, 3000, 10_001])
def test_npy_roundtrip_equals_api_samples(tmp_path, n):
    path = tmp_path / "noise.npy"
    assert (
        cli.main(
            [
                "sample",
                "--sigma2",
                "100",
                "-n",
                str(n),
                "--chunk",
                "3000",
                "--seed",
                "7",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    loaded = np.load(path)
    assert loaded.dtype == np.int64 and loaded.shape == (n,)
    np.testing.assert_array_equal(loaded, api_draws(dgauss.sample_gaussian, 100, n, 3000, 7))
    header_bytes = path.stat().st_size - 8 * n
    assert header_bytes % 64 == 0 and 0 < header_bytes <= 128  # nothing beyond the n samples


def test_laplace_npy_with_mu(tmp_path):
    path = tmp_path / "lap.npy"
    assert (
        cli.main(
            [
                "sample",
                "--laplace",
                "7/3",
                "--mu",
                "-5",
                "-n",
                "5000",
                "--chunk",
                "1024",
                "--seed",
                "3",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    expected = api_draws(dgauss.sample_laplace, Fraction(7, 3), 5000, 1024, 3, mu=-5)
    np.testing.assert_array_equal(np.load(path), expected)


def test_txt_holds_huge_integers(tmp_path):
    path = tmp_path / "noise.txt"
    assert (
        cli.main(
            [
                "sample",
                "--sigma2",
                "1e100",
                "-n",
                "50",
                "--chunk",
                "20",
                "--seed",
                "11",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    lines = path.read_text().splitlines()
    assert len(lines) == 50
    assert max(len(line.lstrip("-")) for line in lines) > 40
    expected = api_draws(dgauss.sample_gaussian, 10**100, 50, 20, 11)
    assert [int(line) for line in lines] == expected.tolist()


def test_txt_for_int64_samples(tmp_path):
    path = tmp_path / "noise.txt"
    assert (
        cli.main(
            [
                "sample",
                "--sigma2",
                "2.5",
                "-n",
                "1000",
                "--chunk",
                "300",
                "--seed",
                "5",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    expected = api_draws(dgauss.sample_gaussian, Fraction(5, 2), 1000, 300, 5)
    assert [int(line) for line in path.read_text().splitlines()] == expected.tolist()


@pytest.mark.parametrize(
    "args",
    [
        ["--sigma2", "1e100"],
        ["--laplace", str(2**40 + 1)],
        ["--sigma2", "1", "--mu", str(2**62 + 1)],
    ],
)
def test_npy_refused_when_int64_is_not_the_default(tmp_path, capsys, args):
    path = tmp_path / "noise.npy"
    assert cli.main(["sample", *args, "-n", "10", "-o", str(path)]) == 2
    err = capsys.readouterr().err
    assert ".txt" in err and "Traceback" not in err
    assert not path.exists()


@pytest.mark.parametrize(
    "args, option",
    [
        (["--sigma2", "0", "-n", "10"], "--sigma2"),
        (["--sigma2", "-1/3", "-n", "10"], "--sigma2"),
        (["--sigma2", "abc", "-n", "10"], "--sigma2"),
        (["--laplace", "0", "-n", "10"], "--laplace"),
        (["--sigma2", "1", "-n", "-1"], "-n"),
        (["--sigma2", "1", "-n", "ten"], "-n"),
        (["--sigma2", "1"], "-n"),
        (["--sigma2", "1", "-n", "10", "--chunk", "0"], "--chunk"),
        (["--sigma2", "1", "-n", "10", "--mu", "0.5"], "--mu"),
        (["--sigma2", "1", "-n", "10", "--seed", "-1"], "--seed"),
        (["--sigma2", "1", "-n", "10", "-o", "noise.csv"], "-o"),
        (["--sigma2", "1", "--laplace", "1", "-n", "10"], "--laplace"),
        (["-n", "10"], "--sigma2"),
        (["--sigma2", "1", "-n", "10", "--workers", "0"], "--workers"),
        (["--sigma2", "1", "-n", "10", "--workers", "-2"], "--workers"),
        (["--sigma2", "1", "-n", "10", "--workers", "2", "--seed", "1"], "--workers"),
    ],
)
def test_bad_arguments_exit_2_naming_the_option(capsys, args, option):
    assert cli.main(["sample", *args]) == 2
    captured = capsys.readouterr()
    assert option in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_summary(capsys):
    assert (
        cli.main(["sample", "--sigma2", "100", "-n", "20000", "--chunk", "7000", "--seed", "1"])
        == 0
    )
    captured = capsys.readouterr()
    first, moments_line, destination = captured.out.splitlines()
    assert first.startswith("dgauss: 20,000 samples of N_Z(0, 100) by inversion: ")
    assert re.search(r" million samples/s \([\d.]+ s sampling, [\d.]+ s in all\)$", first)
    samples = api_draws(dgauss.sample_gaussian, 100, 20000, 7000, 1).tolist()
    mean = float(statistics.mean(samples))
    variance = float(statistics.variance(samples))
    printed = moments_line.replace(",", "").split()
    assert printed[0] == "mean" and printed[2:4] == ["sample", "variance"]
    assert float(printed[1]) == pytest.approx(mean, rel=1e-5)
    assert float(printed[4]) == pytest.approx(variance, rel=1e-5)
    assert "not kept" in destination
    assert "seed" in captured.err  # the warning about seeded output


def test_the_rate_is_the_samplers(monkeypatch, capsys):
    """The printed rate is the samples over the time spent drawing them, not over the run:
    with summing made slow (0.2 s per chunk) and drawing not, the rate printed is the draws'."""
    import dgauss.cli.sample as sample_cli

    real_add = sample_cli.Moments.add

    def slow_add(self, chunk):
        time.sleep(0.2)
        real_add(self, chunk)

    monkeypatch.setattr(sample_cli.Moments, "add", slow_add)
    args = ["sample", "--sigma2", "100", "-n", "40000", "--chunk", "10000", "--seed", "1"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out.splitlines()[0]
    found = re.search(
        r": ([\d.]+) million samples/s \(([\d.]+) s sampling, ([\d.]+) s in all", first
    )
    assert found, first
    rate, drawing, elapsed = (float(g) for g in found.groups())
    assert elapsed >= 0.75  # four chunks summed, 0.2 s each
    assert drawing < 0.5 * elapsed  # the sleep is not counted as sampling
    assert rate > 40000 / 1e6 / elapsed * 1.5  # so the rate is not samples / whole run


def test_a_failed_write_is_reported(monkeypatch, capsys):
    """An OSError while keeping a chunk reaches the user as the error it is."""
    import dgauss.cli.sample as sample_cli

    def failing_add(self, chunk):
        raise OSError("disk full (planted)")

    monkeypatch.setattr(sample_cli.Moments, "add", failing_add)
    args = ["sample", "--sigma2", "100", "-n", "40000", "--chunk", "10000", "--seed", "1"]
    assert cli.main(args) == 1
    assert "disk full (planted)" in capsys.readouterr().err


def test_method_is_passed_on_checked_and_named(tmp_path, capsys):
    path = tmp_path / "noise.npy"
    args = ["sample", "--sigma2", "100", "-n", "5000", "--seed", "3", "--method", "rejection"]
    assert cli.main([*args, "-o", str(path)]) == 0
    assert " by rejection: " in capsys.readouterr().out
    rejection = api_draws(dgauss.sample_gaussian, 100, 5000, 5000, 3, method="rejection")
    np.testing.assert_array_equal(np.load(path), rejection)
    # the default reads the bits differently (by inversion)
    assert not np.array_equal(api_draws(dgauss.sample_gaussian, 100, 5000, 5000, 3), rejection)
    assert cli.main(["sample", "--laplace", "1e30", "-n", "3", "--method", "inversion"]) == 2
    err = capsys.readouterr().err
    assert "--method" in err and "scale <= 2**40" in err


def test_summary_names_laplace_mu_and_output(tmp_path, capsys):
    path = tmp_path / "noise.npy"
    assert cli.main(["sample", "--laplace", "7/3", "--mu", "12", "-n", "100", "-o", str(path)]) == 0
    captured = capsys.readouterr()
    assert "samples of Lap_Z(12, 7/3)" in captured.out and str(path) in captured.out
    assert "seed" not in captured.err  # OS randomness: no warning


@pytest.mark.parametrize(
    "values",
    [
        [3, -1, 4, 1, -5, 9],
        [2**61, -(2**61), 2**60, 7],  # squares far beyond int64
        [2**40 + k for k in range(100)],  # int64 sums of squares would overflow
    ],
)
def test_moments_are_exact(values):
    moments = cli.Moments(mu=1)
    moments.add(np.array(values[:2], dtype=np.int64))
    moments.add(np.array(values[2:], dtype=np.int64))
    assert moments.mean() == statistics.mean(Fraction(v) for v in values)
    assert moments.variance() == statistics.variance(Fraction(v) for v in values)


def test_moments_of_object_arrays():
    values = [10**60 + 1, -(10**60), 3]
    moments = cli.Moments(mu=10**70)
    moments.add(np.array(values, dtype=object))
    assert moments.mean() == statistics.mean(Fraction(v) for v in values)
    assert moments.variance() == statistics.variance(Fraction(v) for v in values)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(["sample", "--sigma2", "4", "-n", "4000", "--chunk", "1000"]) == 0
    bar = terminal.getvalue()
    assert bar.count("\r[") == 4
    assert "\r[" + "#" * cli.Progress.WIDTH + "] 100%" in bar and bar.endswith("samples/s\n")


@pytest.mark.parametrize("args", [["--no-progress"], ["--chunk", "4000"]])
def test_no_progress_bar(monkeypatch, args):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(["sample", "--sigma2", "4", "-n", "4000", *args]) == 0
    assert terminal.getvalue() == ""


def test_python_dash_m(tmp_path):
    path = tmp_path / "noise.npy"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dgauss.__file__)))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dgauss",
            "sample",
            "--sigma2",
            "1/3",
            "-n",
            "1000",
            "--chunk",
            "256",
            "--seed",
            "2",
            "-o",
            str(path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "samples of N_Z(0, 1/3)" in result.stdout and "samples/s" in result.stdout
    expected = api_draws(dgauss.sample_gaussian, Fraction(1, 3), 1000, 256, 2)
    np.testing.assert_array_equal(np.load(path), expected)


@pytest.mark.parametrize("workers", ["2", "-1"])
def test_workers_fill_every_sample(tmp_path, workers):
    """--workers splits each chunk across threads: all n samples arrive, with
    N_Z(0, 100)'s spread."""
    path = tmp_path / "noise.npy"
    n = 300_000
    assert (
        cli.main(
            [
                "sample",
                "--sigma2",
                "100",
                "-n",
                str(n),
                "--chunk",
                "200000",
                "--workers",
                workers,
                "-o",
                str(path),
                "--no-progress",
            ]
        )
        == 0
    )
    loaded = np.load(path)
    assert loaded.shape == (n,) and loaded.dtype == np.int64
    # variance of N_Z(0, 100) is within 1e-6 of 100; 300k samples put it within 1.5 with
    # probability far above 1 - 1e-6; an unfilled (zero) slice would pull it far below
    assert abs(loaded.var() - 100) < 1.5 and abs(loaded.mean()) < 0.2


# ---- failures of the output: never a half-written file, never a traceback ----------------------
def test_failed_run_leaves_an_existing_output_untouched_and_no_partial_file(
    tmp_path, capsys, monkeypatch
):
    """-o writes to a temporary file beside the target and renames it only on success."""
    path = tmp_path / "noise.txt"
    path.write_text("keep me\n")
    calls = []

    def failing_draw(self, size, rng, workers=1):
        calls.append(size)
        if len(calls) == 3:
            raise OSError(5, "simulated read failure")
        return np.zeros(size, dtype=np.int64)

    monkeypatch.setattr(cli.Distribution, "draw", failing_draw)
    assert (
        cli.main(["sample", "--sigma2", "1", "-n", "5000", "--chunk", "1000", "-o", str(path)]) == 1
    )
    assert path.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noise.txt"]
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "simulated" in err


def test_successful_run_replaces_the_output(tmp_path):
    path = tmp_path / "noise.npy"
    path.write_bytes(b"old")
    assert cli.main(["sample", "--sigma2", "1", "-n", "10", "--seed", "1", "-o", str(path)]) == 0
    assert np.load(path).shape == (10,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noise.npy"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_is_one_line_and_a_failure_status():
    """(A closed pipe ends quietly instead: tests/test_cli_unix.py.)"""
    command = f"{sys.executable} -m dgauss sample --sigma2 1 -n 1000 > /dev/full"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_chunk_too_large_for_memory_is_one_line(capsys):
    assert (
        cli.main(
            ["sample", "--sigma2", "1", "-n", str(10**12), "--chunk", str(10**12), "--no-progress"]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--chunk" in err


@pytest.mark.parametrize("workers", ["-2", "0", "1.5", "5000"])
def test_workers_error_says_what_is_accepted(capsys, workers):
    assert cli.main(["sample", "--sigma2", "1", "--workers", workers]) == 2
    err = capsys.readouterr().err
    assert "positive int up to 1024 or -1" in err and ">= 0" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "name, count, need",
    [
        ("out.npy", 1000, 128 + 8 * 1000),  # exactly: the header and 8 bytes a sample
        ("out.txt", 1000, 2 * 1000),  # at least a digit and a newline a sample
    ],
)
def test_sample_refuses_an_output_that_cannot_fit(tmp_path, capsys, monkeypatch, name, count, need):
    """-o checks the free space before drawing: one byte short is refused with both sizes,
    nothing is written; exactly enough goes ahead."""
    import shutil

    real = shutil.disk_usage

    def usage(free):
        return lambda path: real(path)._replace(free=free)

    path = tmp_path / name
    monkeypatch.setattr(shutil, "disk_usage", usage(need - 1))
    assert cli.main(["sample", "--sigma2", "100", "-n", str(count), "-o", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{need:,} bytes)" in err and f"{need - 1:,} bytes) free" in err
    assert "1,000 samples" in err
    assert not path.exists() and not list(tmp_path.iterdir())
    monkeypatch.setattr(shutil, "disk_usage", usage(need))
    assert cli.main(["sample", "--sigma2", "100", "-n", str(count), "-o", str(path)]) == 0
    if name.endswith(".npy"):
        assert path.stat().st_size == need and len(np.load(path)) == count
