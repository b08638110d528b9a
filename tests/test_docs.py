"""The documentation runs: doctests pass, and CI runs exactly the README's Quick start."""
import doctest
import pathlib
import re

import pytest

import dgauss
from dgauss import _api, _params, reference

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", [dgauss, _api, _params, reference], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_ci_runs_exactly_the_quick_start():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    quick_start = [line for line in block.splitlines() if line.strip()]
    assert len(quick_start) == 2
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.startswith("python3 ")]
    assert ci == quick_start
