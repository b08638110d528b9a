"""Shared fixtures: the two implementations (compiled core, pure-Python oracle) and the
per-call test options of the core; and the tiers of the suite.

The core's parameter is skipped, not failed, when ``dgauss._core`` does not import, so
that the oracle's tests run without the extension (tests/test_standalone.py checks that).

The tiers: ``python3 -m pytest`` is the **quick check**: every test function but those
marked ``long`` (several seconds each), and of each parametrized test function its first
case and every ``QUICK_THINNING``-th after it (in collection order).  ``--full`` runs every
case; ``--after-quick`` runs exactly what the quick check leaves out (.ci/run runs it after
the Quick start, so that every test runs once).  The long statistical runs are marked
``slow`` and run with ``-m slow`` (with the rest: ``--full -m ''``).  A case named by node id
(``pytest tests/test_x.py::test_y[3]``) always runs, and a ``long`` test named by
its function runs in the quick check.  ``DGAUSS_THIN_SWEEPS=N`` (an int
>= 1; 1 thins nothing) sets the thinning explicitly, in place of the quick check's
(tools/test-pythons uses it for the CPythons other than the Quick start's).
"""

import importlib
import os
import sys

import pytest

#: The quick check's thinning: one case in this many of each parametrized test function.
QUICK_THINNING = 4


def pytest_addoption(parser):
    group = parser.getgroup("dgauss", "dgauss's tiers (tests/conftest.py)")
    group.addoption(
        "--full",
        action="store_true",
        help="run every case of every parametrized test (the default, the quick check, runs "
        f"the first and one in {QUICK_THINNING} of each)",
    )
    group.addoption(
        "--after-quick",
        action="store_true",
        help="run only the parametrized cases the quick check leaves out",
    )


def _thinning(config) -> int:
    text = os.environ.get("DGAUSS_THIN_SWEEPS", "")
    if config.getoption("--full") and config.getoption("--after-quick"):
        raise pytest.UsageError("--full and --after-quick exclude each other")
    if not text:
        return 1 if config.getoption("--full") else QUICK_THINNING
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"DGAUSS_THIN_SWEEPS must be an integer >= 1, not {text!r}")
    return int(text)


def _named_cases(config) -> list[str]:
    """The parametrized cases the command line names by node id (``file::test[id]``)."""
    return [arg.replace(os.sep, "/") for arg in config.args if "::" in arg and "[" in arg]


def _named_functions(config) -> list[str]:
    """The test functions the command line names by node id (``file::test``)."""
    return [arg.replace(os.sep, "/") for arg in config.args if "::" in arg and "[" not in arg]


def _matches(node_id: str, args: list[str]) -> bool:
    """Whether a node id is the one an argument names (relative or absolute)."""
    return any(arg.endswith(node_id) or node_id.endswith(arg) for arg in args)


def pytest_collection_modifyitems(config, items):
    every = _thinning(config)
    if every == 1:
        return
    named = _named_cases(config)
    functions = _named_functions(config)
    after_quick = config.getoption("--after-quick")
    # ``long`` tests are the quick check's to leave out; an explicit thinning keeps them
    leave_long = not os.environ.get("DGAUSS_THIN_SWEEPS")
    seen: dict[tuple[str, str], int] = {}
    kept, dropped = [], []
    for item in items:
        long = leave_long and item.get_closest_marker("long") is not None
        if long and not _matches(item.nodeid.split("[", 1)[0], functions):
            quick = False  # a test of several seconds: left to --after-quick and --full
        elif getattr(item, "callspec", None) is None:
            quick = True  # unparametrized: the quick check runs it
        else:
            key = (item.nodeid.split("::")[0], item.originalname)
            index = seen.get(key, 0)
            seen[key] = index + 1
            quick = index % every == 0
        (kept if _matches(item.nodeid, named) or quick != after_quick else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_header(config):
    every = _thinning(config)
    if every == 1:
        return "dgauss: every case of every parametrized test"
    if config.getoption("--after-quick"):
        return f"dgauss: the parametrized cases the quick check (1 in {every}) leaves out"
    return (
        f"dgauss: the quick check, parametrized sweeps thinned to 1 case in {every} "
        "(every case: --full)"
    )


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


@pytest.fixture(scope="session")
def spark():
    """A local Spark session (local[2]), started once for every Spark test of the run (a
    start takes about 20 s); skipped without PySpark."""
    pyspark_sql = pytest.importorskip(
        "pyspark.sql", reason="the Spark tests need pyspark: pip install 'dgauss[spark]'"
    )
    # the workers run PYSPARK_PYTHON (else `python3` on PATH, maybe another version): a session
    # started from Python reads the variable, not the spark.pyspark.python setting
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("dgauss-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
