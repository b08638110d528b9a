"""A Table straight into a release: the mechanisms, ``add_*_noise`` and the Accountant read
its sensitivity and granularity, noise its value column and return its frame; reconcile takes
the noisy frames."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import accounting

pd = pytest.importorskip("pandas")


def _records(n=400, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "region": rng.choice(["north", "south"], n),
            "town": rng.choice(["a", "b", "c"], n),
            "pid": rng.integers(0, n // 3, n),
            "pay": rng.integers(-50, 500, n),
        }
    )


KEYS = {"region": ["north", "south"], "town": ["a", "b", "c"]}


@pytest.fixture
def table():
    return dgauss.tabulate(_records(), ["region", "town"], KEYS, person="pid", max_rows=3, seed=11)


def test_add_gaussian_noise_reads_the_table(table):
    noisy = dgauss.add_gaussian_noise(table, sigma2=9, rng=np.random.default_rng(5))
    plain = dgauss.add_gaussian_noise(
        table.values, sigma2=9, sensitivity=table.sensitivity, rng=np.random.default_rng(5)
    )
    assert list(noisy.columns) == ["region", "town", "count"]
    assert noisy[["region", "town"]].equals(table.frame[["region", "town"]])
    assert noisy["count"].tolist() == plain.tolist()
    assert table.frame["count"].tolist() == table.values.tolist()  # the table is untouched


def test_rho_is_calibrated_to_the_tables_worst_vector(table):
    mech = dgauss.GaussianMechanism(rho="0.1", sensitivity=table.sensitivity)
    assert mech.sigma2 == Fraction(table.sensitivity.norm2) / (2 * Fraction(1, 10))
    assert table.sensitivity.norm2 == 9  # (3,): three rows of one person in one cell
    noisy = mech(table, rng=np.random.default_rng(1))
    assert len(noisy) == len(table)


def test_the_accountant_spends_the_tables_exact_set(table):
    acc = dgauss.Accountant(epsilon=2, delta="1e-6")
    acc.add_gaussian_noise(table, sigma2=100)
    expected = accounting.compose(accounting.Gaussian(100, table.sensitivity.limited(len(table))))
    assert acc.spent.delta(1) == expected.delta(1)
    assert acc.spent.delta(1) > accounting.gaussian_delta(100, 1, 1)  # more than one row's
    before = acc.spent.delta(1)
    with pytest.raises(dgauss.PrivacyBudgetError):
        acc.add_gaussian_noise(table, sigma2="0.5")
    assert acc.spent.delta(1) == before


def test_laplace_takes_the_l1_bound(table):
    mech = dgauss.LaplaceMechanism(epsilon=1, sensitivity=table.sensitivity)
    assert mech.scale == 3
    noisy = dgauss.add_laplace_noise(table, epsilon=1, rng=np.random.default_rng(2))
    assert noisy["count"].dtype == np.int64
    acc = dgauss.Accountant(epsilon=1)
    acc.add_laplace_noise(table, scale=6)
    assert acc.spent.epsilon(0) == pytest.approx(0.5)
    assert acc.spent.rho == Fraction(1, 8)  # (ε = 3/6)²/2


def test_a_sum_table_with_a_granularity():
    sums = dgauss.tabulate(
        _records(),
        ["region", "town"],
        KEYS,
        person="pid",
        max_rows=2,
        value="pay",
        bounds=(-10, "2.5"),
        granularity="0.5",
        seed=4,
    )
    assert sums.granularity == Fraction(1, 2) and sums.sensitivity.per_row == 20
    noisy = dgauss.add_gaussian_noise(sums, sigma2=100, rng=np.random.default_rng(0))
    assert noisy["pay"].dtype == np.float64
    assert np.all(noisy["pay"] * 2 == np.round(noisy["pay"] * 2))  # on the lattice 0.5·ℤ


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda t: dgauss.add_gaussian_noise(t, sigma2=4, sensitivity=2), "sensitivity"),
        (lambda t: dgauss.add_gaussian_noise(t, sigma2=4, granularity=2), "granularity"),
        (lambda t: dgauss.add_gaussian_noise(t, sigma2=4, out=np.zeros(6)), "out"),
        (lambda t: dgauss.add_gaussian_noise(t, sigma2=4, columns=["count"]), "columns"),
        (lambda t: dgauss.GaussianMechanism(sigma2=4)(t), "sensitivity"),
        (lambda t: dgauss.LaplaceMechanism(scale=4, sensitivity=2)(t), "sensitivity"),
    ],
)
def test_a_table_refuses_what_contradicts_it(table, call, words):
    acc = dgauss.Accountant(rho=1)
    with pytest.raises(ValueError, match=words):
        call(table)
    with pytest.raises(ValueError, match="sensitivity"):
        acc.add_gaussian_noise(table, sigma2=4, sensitivity=5)
    assert acc.spent.rho == 0


def test_explicitly_the_same_sensitivity_is_fine(table):
    noisy = dgauss.add_gaussian_noise(table, sigma2=4, sensitivity=table.sensitivity)
    assert len(noisy) == len(table)


def test_polars_in_polars_out():
    pl = pytest.importorskip("polars")
    records = pl.from_pandas(_records())
    table = dgauss.tabulate(records, ["region", "town"], KEYS, person="pid", max_rows=2, seed=1)
    noisy = dgauss.add_gaussian_noise(table, sigma2=4)
    assert isinstance(noisy, pl.DataFrame)
    assert noisy.columns == ["region", "town", "count"]


def test_reconcile_takes_the_noisy_frames():
    records = _records(2000)
    detail = dgauss.tabulate(records, ["region", "town"], KEYS, person="pid", max_rows=2, seed=9)
    top = dgauss.tabulate(
        records, ["region"], {"region": KEYS["region"]}, person="pid", max_rows=2, seed=9
    )
    acc = dgauss.Accountant(rho=1)
    noisy = [acc.add_gaussian_noise(t, sigma2=16) for t in (detail, top)]
    fit = dgauss.reconcile(noisy, noise=[16, 16], value="count")
    assert fit is not None
    assert acc.spent.rho == 2 * Fraction(4, 2 * 16)  # two tables, each (2,): ‖μ‖² = 4
