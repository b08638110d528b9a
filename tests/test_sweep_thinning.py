"""The suite's tiers (tests/conftest.py): the quick check that the README's test command runs
(every test function, each parametrized sweep thinned to its first case and every
QUICK_THINNING-th after it), ``--after-quick`` (the cases it leaves out, which .ci/run runs
after it), ``--full``, and DGAUSS_THIN_SWEEPS=N (CI's other CPythons)."""

import functools
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import QUICK_THINNING

TESTS = pathlib.Path(__file__).resolve().parent
SWEEP = "test_compose_vectors.py::test_fft_length_is_the_smallest_5_smooth_length"
PLAIN = "test_compose_vectors.py::test_bennett_cuts_long_compositions_shorter_than_hoeffding"


@functools.cache
def _collect(
    thin: str | None, *targets: str, options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DGAUSS_THIN_SWEEPS", None)
    # the tiers are tests/conftest.py's, not a plugin's: without the installed plugins
    # (hypothesis's, zarr's: ~3 s of imports) a collection takes ~1.3 s instead of ~4.5
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
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
            *options,
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
    # an id made from an object's repr names its address, which differs between processes
    return [
        re.sub(r"0x[0-9a-fA-F]+", "0x", line.split("::", 1)[1])
        for line in done.stdout.splitlines()
        if "::" in line
    ]


@pytest.mark.parametrize("thin, expected", [(None, 3), ("1", 9), ("3", 3), ("4", 3), ("20", 1)])
@pytest.mark.long
def test_a_sweep_keeps_its_first_case_and_every_nth(thin, expected):
    every = _ids(_collect(None, SWEEP, options=("--full",)))
    got = _ids(_collect(thin, SWEEP, PLAIN))
    assert len(every) == 9
    step = int(thin or QUICK_THINNING)
    assert got == every[::step] + [PLAIN.split("::")[1]]  # the unparametrized one stays
    assert len(got) == expected + 1


@pytest.mark.parametrize("thin", ["0", "-2", "x", "1.5"])
@pytest.mark.long
def test_a_bad_setting_is_a_usage_error(thin):
    done = _collect(thin, PLAIN)
    assert done.returncode != 0
    assert "DGAUSS_THIN_SWEEPS must be an integer >= 1" in done.stdout + done.stderr


# a whole file, with sweeps of several lengths and plain tests beside them
FILE = "test_inputs.py"


def _function(node_id: str) -> str:
    return node_id.split("[", 1)[0]


@pytest.mark.long
def test_quick_and_after_quick_run_every_case_once():
    full = _ids(_collect(None, FILE, options=("--full",)))
    quick = _ids(_collect(None, FILE))
    rest = _ids(_collect(None, FILE, options=("--after-quick",)))
    assert len(quick) < len(full) and rest, "the quick check thins nothing"
    assert sorted(quick + rest) == sorted(full)  # a partition: every case once
    assert not set(quick) & set(rest)


@pytest.mark.long
def test_the_quick_check_runs_every_test_function():
    full = _ids(_collect(None, FILE, options=("--full",)))
    quick = _ids(_collect(None, FILE))
    assert {_function(n) for n in quick} == {_function(n) for n in full}
    assert {n for n in full if "[" not in n} <= set(quick)  # and every unparametrized test


@pytest.mark.long
def test_a_case_named_by_node_id_runs_in_any_tier():
    full = _ids(_collect(None, FILE, options=("--full",)))
    quick = set(_ids(_collect(None, FILE)))
    left_out = next(n for n in full if n not in quick and "0x" not in n)
    for options in [(), ("--after-quick",)]:
        assert _ids(_collect(None, f"{FILE}::{left_out}", options=options)) == [left_out]
    # naming the function (not a case) keeps its tier's thinning
    function = _function(left_out)
    named = _ids(_collect(None, f"{FILE}::{function}"))
    assert left_out not in named and named


@pytest.mark.long
def test_full_and_after_quick_exclude_each_other():
    done = _collect(None, PLAIN, options=("--full", "--after-quick"))
    assert done.returncode != 0 and "exclude each other" in done.stdout + done.stderr


LONG = "test_standalone.py"  # holds a test marked long (the oracle's suite in a subprocess)


@pytest.mark.long
def test_a_long_test_is_left_to_after_quick():
    full = _ids(_collect(None, LONG, options=("--full",)))
    quick = _ids(_collect(None, LONG))
    rest = _ids(_collect(None, LONG, options=("--after-quick",)))
    thinned = _ids(_collect("5", LONG))
    long_ones = [n for n in full if n not in quick]
    assert long_ones and set(long_ones) <= set(rest)
    assert thinned == full  # an explicit thinning (CI's other CPythons) keeps long tests


@pytest.mark.long
def test_a_long_test_named_by_its_function_runs():
    full = _ids(_collect(None, LONG, options=("--full",)))
    quick = _ids(_collect(None, LONG))
    (left_out,) = (n for n in full if n not in quick)
    assert _ids(_collect(None, f"{LONG}::{left_out}")) == [left_out]
