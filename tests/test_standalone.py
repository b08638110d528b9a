"""What holds whatever the build: the oracle needs no compiled core, and the compiled core
has no switch that could make a default call read anything but the operating system."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Runs with dgauss._core unimportable (a None entry in sys.modules makes `import` raise).
WITHOUT_CORE = """
import sys
sys.modules["dgauss._core"] = None
import numpy as np
import dgauss, dgauss.reference as reference, dgauss.accounting as accounting
assert reference.sample_gaussian(100, 5, rng=np.random.default_rng(1)).tolist() == {expected}
assert accounting.calibrate_gaussian(1, "1e-6") > 0
try:
    dgauss.sample_gaussian(100)
except ImportError as exc:
    assert "compiled core" in str(exc), exc
else:
    raise AssertionError("dgauss.sample_gaussian ran without the core")
print("ok")
"""


def _run(code, *args):
    return subprocess.run(
        [sys.executable, *args, "-c", code] if code else [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        # the inner pytest runs whole sweeps (its counts are checked), whatever the outer's
        env={**os.environ, "DGAUSS_THIN_SWEEPS": "1", "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_the_oracle_imports_and_samples_without_the_core():
    import numpy as np

    from dgauss import reference

    expected = reference.sample_gaussian(100, 5, rng=np.random.default_rng(1)).tolist()
    result = _run(WITHOUT_CORE.format(expected=expected))
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.long
def test_the_oracle_tests_run_without_the_core():
    """The textbook and the regression vectors' oracle half pass with the core unimportable,
    and the core's half is skipped (not failed)."""
    code = (
        "import sys, pytest; sys.modules['dgauss._core'] = None; "
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-rs', "
        "'tests/test_textbook.py', 'tests/test_regression_vectors.py']))"
    )
    result = _run(code)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", result.stdout).group(1))
    skipped = int(re.search(r"(\d+) skipped", result.stdout).group(1))
    assert passed >= 15 and skipped >= 15, result.stdout[-1500:]


def test_no_module_level_switch_in_the_core():
    """The core's Python names include no hook, and its writable C data holds no switch:
    the only writable symbols the dgauss sources define are exp_level, the table of
    exp(-k/256**j) that dg_exp_init fills once at import (csrc/dg_exp.c)."""
    from dgauss import _core

    names = [n for n in dir(_core) if not n.startswith("__")]
    assert not [n for n in names if re.search("hook|fake|force|_test", n)]
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    symbols = subprocess.run([nm, _core.__file__], capture_output=True, text=True).stdout
    writable = {
        line.split()[2]
        for line in symbols.splitlines()
        if len(line.split()) == 3 and line.split()[1] in "bBdD"
    }
    ours = {s for s in writable if s.startswith("dg_") or s in {"exp_level"}}
    assert ours == {"exp_level"}, ours
    assert not {s for s in writable if re.search("hook|fake|force|_test|high_bits", s)}


def test_a_scripted_source_affects_only_its_own_call():
    """The test source that fakes the OS changes its call alone: a call with rng=None right
    after (and one running meanwhile in another thread) reads the OS, not the fake words."""
    import threading

    import dgauss
    from dgauss.testing import ScriptedOS

    fake = dgauss.sample_laplace(10**6, 64, rng=ScriptedOS(fake=True)).tolist()
    assert fake == dgauss.sample_laplace(10**6, 64, rng=ScriptedOS(fake=True)).tolist()
    seen = []
    worker = threading.Thread(target=lambda: seen.append(dgauss.sample_laplace(10**6, 64)))
    worker.start()
    again = dgauss.sample_laplace(10**6, 64, rng=ScriptedOS(fake=True)).tolist()
    worker.join()
    assert again == fake
    assert seen[0].tolist() != fake and dgauss.sample_laplace(10**6, 64).tolist() != fake
