"""Run Python code in a fresh interpreter that imports the same dgauss as the tests."""

import os
import subprocess
import sys


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -c code`` with this process's ``sys.path`` (so an in-place build is found as
    the tests find it); output captured as text; never raises on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
