"""Contributions: the exact set of vectors one person with bounded rows moves a table by, and
the accounting of it, checked against an independent enumeration written here."""

from __future__ import annotations

import copy
import itertools
import json
import pickle
from fractions import Fraction

import pytest

from dgauss import Accountant, GaussianMechanism, LaplaceMechanism, accounting
from dgauss.accounting import Contributions, L2Ball
from dgauss.accounting._neighbours import MAX_LISTED_PARTS


def _admitted(m, c, r, cells, per_row):
    """Every vector the bounds admit (as sorted multisets of positive entries), by brute force
    over all row counts n ∈ {0, …, bound}^cells."""
    top = min(x for x in (m, r) if x is not None)
    out = set()
    for n in itertools.product(range(top + 1), repeat=cells):
        if m is not None and sum(n) > m:
            continue
        if c is not None and sum(1 for x in n if x) > c:
            continue
        if r is not None and any(x > r for x in n):
            continue
        v = tuple(sorted((per_row * x for x in n if x), reverse=True))
        if v:
            out.add(v)
    return out


def _dominated(u, v):
    """Whether u ≠ v is obtained from v by dropping entries and shrinking the rest."""
    if u == v or len(u) > len(v):
        return False
    return all(a <= b for a, b in zip(u, v, strict=False))  # both non-increasing


def _maximal(vectors):
    return {v for v in vectors if not any(_dominated(v, w) for w in vectors)}


CASES = [
    (m, c, r, cells, p)
    for m in (None, 1, 2, 3, 4, 5)
    for c in (None, 1, 2, 3)
    for r in (None, 1, 2, 3)
    for cells in (4,)
    for p in (1, 3)
    if m is not None or r is not None
]


@pytest.mark.parametrize("m, c, r, cells, per_row", CASES)
def test_vectors_are_exactly_the_maximal_elements(m, c, r, cells, per_row):
    """The listed vectors are the maximal elements of every vector the bounds admit (the set is
    closed under dropping and shrinking, so they say everything), and the norms are theirs."""
    sens = Contributions(m, c, r, per_row=per_row, cells=cells)
    admitted = _admitted(m, c, r, cells, per_row)
    listed = sens.vectors()
    assert listed is not None
    assert set(listed) == _maximal(admitted)
    assert list(listed) == sorted(listed, reverse=True)
    assert sens.norm2 == max(sum(x * x for x in v) for v in admitted)
    assert sens.norm1 == max(sum(v) for v in admitted)
    assert sens.support == max(len(v) for v in admitted)
    assert sens.member() in admitted
    assert sum(x * x for x in sens.member()) == sens.norm2


def test_more_vectors_than_listed_fall_back_to_none():
    assert len(Contributions(max_rows=12).vectors()) == 77  # p(12)
    assert Contributions(max_rows=13).vectors() is None  # p(13) = 101 > MAX_LISTED
    assert Contributions(max_rows=10**6, max_groups=1).vectors() == ((10**6,),)
    assert Contributions(max_groups=5, max_rows_per_group=10**9).vectors() == ((10**9,) * 5,)
    assert Contributions(max_rows=10**9).vectors() is None  # never enumerated


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("sigma2, eps", [("0.4", "0.5"), ("3", "2"), ("20", "1"), ("7.5", "6")])
def test_delta_is_the_worst_admitted_vector(m, sigma2, eps):
    """δ of the set is exactly the largest δ over every admitted vector (brute force)."""
    sens = Contributions(max_rows=m)
    worst = max(
        accounting.gaussian_delta(sigma2, eps, list(v)) for v in _admitted(m, None, None, m, 1)
    )
    assert accounting.gaussian_delta(sigma2, eps, sens) == worst


@pytest.mark.parametrize("k", [1, 2])
def test_k_queries_take_the_worst_concatenation(k):
    sens = Contributions(max_rows=3, per_row=2)
    vectors = _maximal(_admitted(3, None, None, 3, 2))
    worst = max(
        accounting.gaussian_delta("30", "1", [x for v in pick for x in v])
        for pick in itertools.product(sorted(vectors), repeat=k)
    )
    assert accounting.gaussian_delta("30", "1", sens, k=k) == worst
    program = accounting.compose(*[accounting.Gaussian("30", sens)] * k)
    assert program.delta("1") >= worst


@pytest.mark.parametrize(
    "sens", [Contributions(max_rows=13), Contributions(max_rows=40, per_row=3)]
)
def test_past_the_list_the_zcdp_route_bounds_every_vector(sens):
    """Past the list: never below any admitted vector's δ (a few of the largest checked)."""
    assert sens.vectors() is None
    m = sens.max_rows
    some = [sens.member(), (sens.per_row * (m - 1), sens.per_row), (sens.per_row,) * m]
    d = accounting.gaussian_delta(200, 1, sens)
    assert all(d >= accounting.gaussian_delta(200, 1, list(v)) for v in some)
    rho = Fraction(sens.norm2, 2 * 200)
    assert d >= accounting.cdp_delta(rho, 1) * 0.999999


@pytest.mark.parametrize("m, c, r", [(3, None, None), (None, 2, 2), (4, 3, 2)])
def test_calibration_certifies_every_admitted_vector(m, c, r):
    sens = Contributions(m, c, r)
    sigma2 = accounting.calibrate_gaussian(1, "1e-6", sens)
    admitted = _admitted(m, c, r, 4, 1)
    assert all(accounting.gaussian_delta(sigma2, 1, list(v)) <= 1e-6 for v in admitted)
    # and no less than the single worst vector's own calibration
    assert sigma2 >= accounting.calibrate_gaussian(1, "1e-6", list(sens.member()))


def test_laplace_reads_the_l1_bound():
    sens = Contributions(max_rows=4, max_groups=2, max_rows_per_group=3, per_row=5)
    assert sens.norm1 == 20
    assert accounting.laplace_epsilon(10, sens) == accounting.laplace_epsilon(10, 20)
    assert accounting.calibrate_laplace(1, 0, sens) == accounting.calibrate_laplace(1, 0, 20)
    assert LaplaceMechanism(epsilon=1, sensitivity=sens).sensitivity == 20
    with pytest.raises(TypeError, match="ℓ2"):
        accounting.laplace_epsilon(10, L2Ball(3))


def test_a_mechanism_of_n_values_limits_the_cells():
    sens = Contributions(max_rows=5)
    mech = GaussianMechanism(sigma2=10, sensitivity=sens)
    assert mech.sensitivity == sens
    release = mech._accounting_release(size=2)
    assert release.sensitivity == Contributions(max_rows=5, cells=2)
    assert set(release.sensitivity.vectors()) == {(5,), (4, 1), (3, 2)}


def test_round_trips():
    sens = Contributions(5, 2, 3, per_row=4, cells=9)
    assert pickle.loads(pickle.dumps(sens)) == sens
    assert copy.deepcopy(sens) == sens
    assert eval(repr(sens), {"Contributions": Contributions}) == sens
    assert Contributions.from_dict(sens.as_dict()) == sens
    assert hash(Contributions(max_rows=3, max_groups=7)) == hash(Contributions(max_rows=3))
    with pytest.raises(AttributeError):
        sens.max_rows = 1


def test_the_ledger_keeps_a_contributions_release():
    acc = Accountant(epsilon=2, delta="1e-6")
    sens = Contributions(max_rows=3, per_row=2)
    acc.add_gaussian_noise([1, 2, 3], sigma2=400, sensitivity=sens)
    text = acc.to_json()
    assert json.loads(text)["releases"][0]["sensitivity"] == {
        "contributions": {"max_rows": 3, "per_row": 2, "cells": 3}
    }
    again = Accountant.from_json(text)
    assert again.spent.delta(2) == acc.spent.delta(2)
    bad = text.replace('"per_row": 2', '"per_row": 0')
    with pytest.raises(ValueError, match="per_row"):
        Accountant.from_json(bad)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({}, ValueError, "max_rows"),
        ({"max_groups": 3}, ValueError, "max_rows"),
        ({"max_rows_per_group": 3}, ValueError, "max_rows"),
        ({"max_rows": 0}, ValueError, "max_rows must be a positive integer"),
        ({"max_rows": True}, TypeError, "max_rows"),
        ({"max_rows": 2.0}, TypeError, "max_rows"),
        ({"max_rows": 2, "per_row": 0}, ValueError, "per_row"),
        ({"max_rows": 2, "cells": -1}, ValueError, "cells"),
        ({"max_groups": 2, "max_rows_per_group": "3"}, TypeError, "max_rows_per_group"),
    ],
)
def test_bad_bounds_are_refused(kwargs, error, words):
    with pytest.raises(error, match=words):
        Contributions(**kwargs)


def test_three_tables_are_accounted_exactly_not_by_zcdp():
    """Three tables of one person bounded to 3 rows, one σ²: the 10 concatenations are listed
    (most skipped on their zCDP bound), the composed δ is never below any of them, and the
    result is well inside the zCDP route's (what a norm-only accountant gives)."""
    sens = Contributions(max_rows=3)
    program = accounting.compose(*[accounting.Gaussian("53.5", sens)] * 3)
    parts = sorted(_maximal(_admitted(3, None, None, 3, 1)))
    d = program.delta(2)
    for pick in itertools.combinations_with_replacement(parts, 3):
        mu = [x for v in pick for x in v]
        assert d >= accounting.compose(accounting.Gaussian("53.5", mu)).delta(2)
    assert d == accounting.gaussian_delta("53.5", 2, [3, 3, 3])  # the single shift wins here
    assert program.epsilon("1e-6") < 0.95 * accounting.cdp_eps(program.rho, "1e-6")


@pytest.mark.parametrize("c, r, per_row", [(2, 1, 1), (5, 2, 3), (MAX_LISTED_PARTS + 1, 1, 1)])
def test_equal_entries_are_one_coordinate_answered_c_times(c, r, per_row):
    """c cells of r rows: the one maximal vector's c equal entries are the single coordinate
    (per_row·r,) answered c times, the same product mechanism, however large c is (no cliff
    where a list of entries would end)."""
    sens = Contributions(max_groups=c, max_rows_per_group=r, per_row=per_row)
    one = accounting.gaussian_delta(5000, 1, [per_row * r], k=c)
    assert accounting.gaussian_delta(5000, 1, sens) == one
    if c < 100:
        assert one == accounting.gaussian_delta(5000, 1, [per_row * r] * c)
    assert accounting.calibrate_gaussian(1, "1e-6", sens) == accounting.calibrate_gaussian(
        1, "1e-6", [per_row * r], k=c
    )
