"""The suite's tiers (tests/conftest.py): the quick check that the README's test command runs,
and the cases it leaves out, which .ci/run runs after it.

Together the two must run every case exactly once, the quick check must run every test
function, and a test named by node id must run whatever the tier."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# a small file with parametrized sweeps of several lengths and plain tests beside them
SAMPLE = "tests/test_inputs.py"


def collected(*options: str) -> list[str]:
    """The node ids pytest would run on SAMPLE with these options (no thinning from the
    environment)."""
    env = {k: v for k, v in os.environ.items() if k != "DGAUSS_THIN_SWEEPS"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *options,
            SAMPLE,
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    # an id made from an object's repr names its address, which differs between processes
    return [
        re.sub(r"0x[0-9a-fA-F]+", "0x", line) for line in out.stdout.splitlines() if "::" in line
    ]


def function(node: str) -> str:
    return node.split("[", 1)[0]


def test_quick_and_after_quick_run_every_case_once():
    full = collected("--full")
    quick = collected()
    rest = collected("--after-quick")
    assert len(quick) < len(full), "the quick check thins nothing"
    assert rest, "--after-quick runs nothing"
    assert sorted(quick + rest) == sorted(full)  # a partition: every case once
    assert not set(quick) & set(rest)


def test_the_quick_check_runs_every_test_function():
    full = collected("--full")
    quick = collected()
    assert {function(n) for n in quick} == {function(n) for n in full}
    # and every unparametrized test
    assert {n for n in full if "[" not in n} <= set(quick)


def test_a_test_named_by_node_id_runs_in_any_tier():
    full = collected("--full")
    quick = set(collected())
    left_out = next(n for n in full if n not in quick and "0x" not in n)
    named = left_out.split("/", 1)[1] if left_out.startswith("tests/") else left_out
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            f"tests/{named}",
        ],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "DGAUSS_THIN_SWEEPS"},
    )
    assert left_out in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_thinning_is_a_usage_error(value):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", SAMPLE],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DGAUSS_THIN_SWEEPS": value},
    )
    assert out.returncode != 0 and "DGAUSS_THIN_SWEEPS" in out.stdout + out.stderr
