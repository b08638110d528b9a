"""Shared fixtures: the two implementations (compiled core, pure-Python oracle) and the
per-call test options of the core; and the thinning of parametrized sweeps.

The core's parameter is skipped, not failed, when ``dgauss._core`` does not import, so
that the oracle's tests run without the extension (tests/test_standalone.py checks that).

``DGAUSS_THIN_SWEEPS=N`` (an int ≥ 1; 1 thins nothing) runs, of each parametrized test
function, its first case and every N-th after it (in collection order): every test function
still runs, its sweep thinned.  .ci/run sets it for the CPythons other than the Quick
start's (tools/test-pythons); the Quick start runs the whole suite.
"""

import importlib
import os

import pytest


def _thinning() -> int:
    text = os.environ.get("DGAUSS_THIN_SWEEPS", "")
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"DGAUSS_THIN_SWEEPS must be an integer >= 1, not {text!r}")
    return int(text)


def pytest_collection_modifyitems(config, items):
    every = _thinning()
    if every == 1:
        return
    seen: dict[tuple[str, str], int] = {}
    kept, dropped = [], []
    for item in items:
        if getattr(item, "callspec", None) is None:
            kept.append(item)
            continue
        key = (item.nodeid.split("::")[0], item.originalname)
        index = seen.get(key, 0)
        seen[key] = index + 1
        (kept if index % every == 0 else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_header(config):
    every = _thinning()
    if every > 1:
        return f"dgauss: parametrized sweeps thinned to 1 case in {every} (DGAUSS_THIN_SWEEPS)"
    return None


def _core_or_skip():
    try:
        return importlib.import_module("dgauss._core")
    except ImportError as exc:
        pytest.skip(f"the compiled core does not import: {exc}")


@pytest.fixture(params=[False, True], ids=["core", "oracle"])
def oracle(request):
    """False for the compiled core, True for dgauss.reference (the argument that
    dgauss.testing's ``sampler`` and ``enumerate_sampler`` take)."""
    if not request.param:
        _core_or_skip()
    return request.param


@pytest.fixture(params=["core", "oracle"])
def fill(request):
    """The backend ``fill(kind, num, den, mu, source, out, ...)`` of core or oracle."""
    if request.param == "core":
        return _core_or_skip().fill
    from dgauss import reference

    return reference.fill


@pytest.fixture(params=["core", "oracle"])
def implementation(request):
    """The module with ``sample_gaussian``, ``sample_laplace``, ``sample_bernoulli_exp``:
    dgauss (the compiled core) or dgauss.reference."""
    if request.param == "core":
        _core_or_skip()
        import dgauss

        return dgauss
    from dgauss import reference

    return reference


@pytest.fixture(params=[True, False], ids=["fixed-point", "gmp-fallback"])
def fixed_point(request):
    """The core's per-call ``fixed_point`` option: digit words by 128-bit fixed point where
    it decides, or every word by GMP (the same words)."""
    return request.param
