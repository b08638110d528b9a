"""DGAUSS_THIN_SWEEPS (tests/conftest.py): CI's other CPythons run every test function,
each parametrized sweep thinned to its first case and every N-th after it."""

import functools
import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
SWEEP = "test_compose_vectors.py::test_fft_length_is_the_smallest_5_smooth_length"
PLAIN = "test_compose_vectors.py::test_bennett_cuts_long_compositions_shorter_than_hoeffding"


@functools.cache
def _collect(thin: str | None, *targets: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DGAUSS_THIN_SWEEPS", None)
    if thin is not None:
        env["DGAUSS_THIN_SWEEPS"] = thin
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *(str(TESTS / t) for t in targets),
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ids(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.parametrize("thin, expected", [(None, 9), ("1", 9), ("3", 3), ("4", 3), ("20", 1)])
def test_a_sweep_keeps_its_first_case_and_every_nth(thin, expected):
    every = _ids(_collect(None, SWEEP))
    got = _ids(_collect(thin, SWEEP, PLAIN))
    assert len(every) == 9
    step = int(thin or 1)
    assert got == every[::step] + [PLAIN.split("::")[1]]  # the unparametrized one stays
    assert len(got) == expected + 1


@pytest.mark.parametrize("thin", ["0", "-2", "x", "1.5"])
def test_a_bad_setting_is_a_usage_error(thin):
    done = _collect(thin, PLAIN)
    assert done.returncode != 0
    assert "DGAUSS_THIN_SWEEPS must be an integer >= 1" in done.stdout + done.stderr
