"""The documentation runs: doctests pass, and CI runs exactly the README's Quick start."""

import doctest
import pathlib
import re

import pytest

import dgauss
from dgauss import _api, textbook

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", [dgauss, _api, textbook], ids=lambda m: m.__name__)
def test_doctests(module):
    """The modules with examples run them (and have some: a module without would pass vacuously)."""
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_ci_runs_exactly_the_quick_start():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    quick_start = [line for line in block.splitlines() if line.strip()]
    assert len(quick_start) == 2
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.startswith("python3 ")
    ]
    assert ci == quick_start


def test_the_readme_accounting_example_runs_and_says_what_it_returns():
    """The Privacy accounting section's example is executed, and its comments checked."""
    from fractions import Fraction

    from dgauss import accounting

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Privacy accounting", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md (Privacy accounting)", "exec"), namespace)
    assert namespace["sigma2"] == Fraction(1785)
    assert namespace["scale"] == Fraction(833, 20)
    assert accounting.gaussian_delta(namespace["sigma2"], 1, k=100) <= 1e-6
    assert accounting.gaussian_interval(namespace["sigma2"], 0.05) == (-83, 83)
    assert accounting.calibrate_gaussian(1, "1e-6", k=100, method="zcdp") == 2053
    assert round(accounting.laplace_variance(namespace["scale"])) == 3469
    assert f"{accounting.gaussian_delta(2500, 1, log=True):.2f}" == "-1262.12"
    for comment in (
        "Fraction(1785)",
        "(-83, 83)",
        "Fraction(2053)",
        "Fraction(833, 20)",
        "-1262.12",
    ):
        assert comment in block
