"""Shared fixtures: the two implementations (compiled core, pure-Python oracle) and the
per-call test options of the core.

The core's parameter is skipped, not failed, when ``dgauss._core`` does not import, so
that the oracle's tests run without the extension (tests/test_standalone.py checks that).
"""

import importlib

import pytest


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
