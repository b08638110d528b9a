"""Contributions and tabulate's bounding, checked adversarially: the accounting of a set against
every vector it admits (not only the maximal ones, found here by brute force over row counts),
its serialization, its cost on extreme bounds, and tabulate's neighbour claim (adding one
person moves the table by exactly that person's kept vector, a member of the sensitivity)."""

from __future__ import annotations

import copy
import itertools
import json
import math
import pickle
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import Accountant
from dgauss.accounting import (
    Contributions,
    Gaussian,
    L2Ball,
    Laplace,
    calibrate_gaussian,
    calibrate_laplace,
    compose,
    gaussian_delta,
    gaussian_epsilon,
    laplace_delta,
    laplace_epsilon,
)
from dgauss.accounting._neighbours import MAX_LISTED_PARTS
from test_contributions import _admitted, _maximal

# -- an independent model of the set -----------------------------------------------------------


# every vector the bounds admit, and the maximal ones: the brute force of test_contributions
admitted = _admitted
maximal = _maximal


bounds = st.tuples(
    st.sampled_from([None, 1, 2, 3, 4, 5]),  # m
    st.sampled_from([None, 1, 2, 3, 5]),  # c
    st.sampled_from([None, 1, 2, 3]),  # r
    st.integers(1, 4),  # cells
    st.sampled_from([1, 2, 3]),  # per_row
).filter(lambda b: b[0] is not None or b[2] is not None)

SIGMA2 = [Fraction(1, 100), Fraction(1, 10), Fraction(1, 2), 1, 3, 10]
EPS = [0, Fraction(1, 2), 1, 3, 8, 20]
FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _set(b):
    m, c, r, cells, per = b
    return Contributions(m, c, r, per_row=per, cells=cells)


# -- 1. the set's vectors, and δ / ε / calibration against every admitted vector ---------------


@settings(max_examples=200, deadline=None)
@given(bounds)
def test_vectors_are_the_maximal_admitted_vectors(b):
    found = _set(b).vectors()
    assert found is not None
    assert set(found) == maximal(admitted(*b))
    assert list(found) == sorted(found, reverse=True)


@FAST
@given(bounds, st.sampled_from(SIGMA2), st.sampled_from(EPS))
def test_delta_bounds_every_admitted_vector_and_is_the_worst(b, s, e):
    got = gaussian_delta(s, e, _set(b))
    each = [gaussian_delta(s, e, list(v)) for v in admitted(*b)]
    assert got >= max(each)  # never optimistic
    assert got == pytest.approx(max(each), rel=1e-9)  # listed: the worst exactly


@pytest.mark.parametrize(
    "b,s,e",
    [
        ((3, None, None, 3, 2), Fraction(1, 10), 20),
        ((4, 2, 2, 3, 1), Fraction(1, 2), 8),
        ((None, 3, 2, 4, 3), 1, 3),
        ((3, 5, None, 2, 1), Fraction(1, 100), 1),  # max_groups > cells
    ],
)
def test_delta_of_k_queries_bounds_every_pair(b, s, e):
    C, vs = _set(b), admitted(*b)
    got = gaussian_delta(s, e, C, 2)
    each = [
        gaussian_delta(s, e, list(u + v)) for u, v in itertools.combinations_with_replacement(vs, 2)
    ]
    assert got >= max(each)
    assert got == pytest.approx(max(each), rel=1e-9)
    assert compose(Gaussian(s, C, 1), Gaussian(s, C, 1)).delta(e) >= max(each)


@pytest.mark.slow  # about 20 s
@FAST
@given(
    bounds,
    st.sampled_from([Fraction(1, 2), 1, 3, 8]),
    st.sampled_from([Fraction(1, 10**3), Fraction(1, 10**9)]),
    st.integers(1, 2),
    st.booleans(),
)
def test_calibrated_sigma2_protects_every_admitted_vector(b, e, d, k, safe):
    s = calibrate_gaussian(e, d, _set(b), k, round_up_safe=safe)
    assert all(gaussian_delta(s, e, list(v), k) <= d for v in admitted(*b))


@pytest.mark.slow  # about 90 s: an ε search over every listed vector
@settings(max_examples=6, deadline=None)
@given(
    bounds, st.sampled_from(SIGMA2[2:]), st.sampled_from([Fraction(1, 10**3), Fraction(1, 10**9)])
)
def test_epsilon_protects_every_admitted_vector(b, s, d):
    e = gaussian_epsilon(s, d, _set(b))
    # δ(ε(d)) ≤ d, read through the float δ returns (rounded up: 0.001 is above 1/1000)
    assert all(gaussian_delta(s, e, list(v)) <= float(d) * (1 + 2**-50) for v in admitted(*b))
    assert compose(Gaussian(s, _set(b))).epsilon(d) >= e * (1 - 1e-9)


@FAST
@given(bounds, st.sampled_from(SIGMA2), st.sampled_from(EPS[1:]))
def test_skip_rule_premise_zcdp_bounds_each_vector(b, s, e):
    # the listing skips a vector whose zCDP bound is at most the largest δ found: sound only
    # if that bound is at least the vector's own δ, at every σ² and ε
    for v in _set(b).vectors():
        rho = Fraction(sum(x * x for x in v), 2) / s
        assert dgauss.accounting.cdp_delta(rho, e) >= gaussian_delta(s, e, list(v))


# -- 2. mixed programs -------------------------------------------------------------------------


@pytest.mark.parametrize("e", [Fraction(1, 2), 2, 6])
def test_mixed_program_bounds_the_product_of_admitted_vectors(e):
    A, B = Contributions(max_rows=3, cells=3), Contributions(max_groups=2, max_rows_per_group=2)
    program = compose(
        Gaussian(Fraction(3, 2), A),
        Gaussian(4, B),
        Gaussian(2, L2Ball(1)),
        Laplace(5, [1, 1]),
        Gaussian(7, [2, 1]),
    )
    got = program.delta(e)
    worst = 0.0
    for u in admitted(3, None, None, 3, 1):
        for v in admitted(None, 2, 2, 4, 1):
            one = compose(
                Gaussian(Fraction(3, 2), list(u)),
                Gaussian(4, list(v)),
                Gaussian(2, [1]),
                Laplace(5, [1, 1]),
                Gaussian(7, [2, 1]),
            ).delta(e)
            worst = max(worst, one)
    assert got >= worst * (1 - 1e-9)


# -- 3. the Laplace side -----------------------------------------------------------------------


@FAST
@given(
    bounds,
    st.sampled_from([Fraction(1, 2), 1, 3]),
    st.sampled_from([0, Fraction(1, 2), 2]),
    st.integers(1, 2),
)
def test_laplace_bounds_every_admitted_vector(b, t, e, k):
    C, vs = _set(b), admitted(*b)
    m = C._shape[0]
    assert C.norm1 == b[4] * m == max(sum(v) for v in vs)
    brute = max(compose(Laplace(t, list(v), k)).delta(e) for v in vs)
    assert laplace_delta(t, e, C, k) >= brute * (1 - 1e-12)
    d = Fraction(1, 10**6)
    eps = laplace_epsilon(t, C, k, d)
    assert max(compose(Laplace(t, list(v), k)).delta(eps) for v in vs) <= d * (1 + 1e-12)
    scale = calibrate_laplace(1, d, C, k)
    assert max(compose(Laplace(scale, list(v), k)).delta(1) for v in vs) <= d * (1 + 1e-12)


# -- 4. serialization, equality ----------------------------------------------------------------


EQUAL_PAIRS = [
    (Contributions(max_rows=3), Contributions(max_rows=3, max_groups=9, max_rows_per_group=7)),
    (
        Contributions(max_rows=10, max_groups=2, max_rows_per_group=2),
        Contributions(max_groups=2, max_rows_per_group=2),
    ),
    (Contributions(max_rows=4, cells=2), Contributions(max_rows=4, max_groups=2)),
]


@pytest.mark.parametrize("a,b", EQUAL_PAIRS)
def test_equal_sets_account_identically_and_stay_equal_when_limited(a, b):
    assert a == b and hash(a) == hash(b)
    assert a.vectors() == b.vectors() and a.norm1 == b.norm1 and a.norm2 == b.norm2
    for n in (1, 2, 3, 5):
        assert a.limited(n) == b.limited(n)
        assert set(a.limited(n).vectors()) == set(b.limited(n).vectors())
    assert gaussian_delta(2, 1, a) == gaussian_delta(2, 1, b)
    assert calibrate_gaussian(1, Fraction(1, 10**6), a) == calibrate_gaussian(
        1, Fraction(1, 10**6), b
    )


def test_unequal_sets_of_one_shape_family_differ():
    assert Contributions(max_rows=4, max_rows_per_group=2) != Contributions(
        max_groups=2, max_rows_per_group=2
    )
    assert Contributions(max_rows=3, per_row=2) != Contributions(max_rows=3)


@pytest.mark.parametrize(
    "a", [p[1] for p in EQUAL_PAIRS] + [Contributions(max_rows=2, per_row=10**40, cells=7)]
)
def test_pickle_copy_and_dict_round_trip(a):
    for b in (
        pickle.loads(pickle.dumps(a)),
        copy.copy(a),
        copy.deepcopy(a),
        Contributions.from_dict(json.loads(json.dumps(a.as_dict()))),
    ):
        assert b == a and repr(b) == repr(a) and b.as_dict() == a.as_dict()
    with pytest.raises(AttributeError):
        a.max_rows = 1


@pytest.mark.parametrize(
    "fields,error",
    [
        ({}, ValueError),
        ({"max_rows": 0}, ValueError),
        ({"max_rows": -3}, ValueError),
        ({"max_rows": True}, TypeError),
        ({"max_rows": 2.0}, TypeError),
        ({"max_rows": "2"}, TypeError),
        ({"max_rows": 2, "per_row": 0}, ValueError),
        ({"max_rows": 2, "bogus": 1}, ValueError),
        ({"max_rows": 2, "_shape": 1}, ValueError),
        ({"max_groups": 2}, ValueError),
        ({"max_rows_per_group": 2}, ValueError),
    ],
)
def test_from_dict_refuses_hostile_fields(fields, error):
    with pytest.raises(error):
        Contributions.from_dict(fields)


def _ledger_with(fields):
    return json.dumps(
        {
            "format": "dgauss Accountant ledger",
            "version": 1,
            "budget": {"epsilon": "1", "delta": "1/1000000"},
            "releases": [
                {
                    "kind": "gaussian",
                    "sigma2": "100000",
                    "sensitivity": {"contributions": fields},
                    "k": 1,
                }
            ],
        }
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"max_rows": 0},
        {"max_rows": -1},
        {"max_rows": True},
        {"max_rows": 2.0},
        {"max_rows": 2, "x": 1},
        {},
        [2],
        {"max_rows": None},
    ],
)
def test_ledger_refuses_hostile_contributions(fields):
    with pytest.raises(ValueError):
        Accountant.from_json(_ledger_with(fields))


def test_ledger_round_trip_keeps_the_set():
    text = _ledger_with({"max_rows": 5, "max_groups": 2, "per_row": 3})
    acc = Accountant.from_json(text)
    again = Accountant.from_json(acc.to_json())
    assert acc.to_json() == again.to_json()
    assert json.loads(again.to_json())["releases"][0]["sensitivity"] == {
        "contributions": {"max_rows": 5, "max_groups": 2, "per_row": 3}
    }


# -- 6. extreme bounds stay cheap (no listing, no allocation of the bound) ---------------------


@pytest.mark.parametrize(
    "C",
    [
        Contributions(max_rows=10**18),
        Contributions(max_rows=10**18, max_groups=3),
        Contributions(max_rows=10**18, max_rows_per_group=10**15),
    ],
)
def test_huge_bounds_take_the_zcdp_route_without_listing(C):
    # calibration's lower bound reads one member: never a tuple of m' entries (MemoryError)
    assert C.vectors() is None
    assert len(C.member()) <= MAX_LISTED_PARTS
    rho = Fraction(C.norm2, 2 * 10**40)
    assert gaussian_delta(10**40, 1, C) <= dgauss.accounting.cdp_delta(rho, 1)
    s = calibrate_gaussian(1, Fraction(1, 10**6), C)
    assert gaussian_delta(s, 1, C) <= 1e-6


def test_a_billion_cells_of_one_row_calibrates():
    C = Contributions(max_groups=10**9, max_rows_per_group=1)
    assert C.vectors() is None and len(C.member()) == MAX_LISTED_PARTS
    s = calibrate_gaussian(1, Fraction(1, 10**6), C)
    assert gaussian_delta(s, 1, C) <= 1e-6


# -- 5. tabulate's bounding against the neighbour claim ---------------------------------------


KEYS = {"c": [0, 1, 2, 3]}


def _table(rows, limits, value=False, bounds_=(-2, 3), granularity=None):
    """tabulate of rows (pid, cell, value) with the ids in an object column (exact)."""
    pid = np.empty(len(rows), dtype=object)
    pid[:] = [r[0] for r in rows]
    data = {"c": np.array([r[1] for r in rows], dtype=np.int64), "p": pid}
    extra = {}
    if value:
        data["v"] = np.array([r[2] for r in rows], dtype=np.int64)
        extra = {"value": "v", "bounds": bounds_}
        if granularity is not None:
            extra["granularity"] = granularity
    return dgauss.tabulate(data, "c", KEYS, person="p", seed=11, **limits, **extra)


def _values(t):
    return np.array(t.values.tolist(), dtype=object)


limits = st.sampled_from(
    [
        {"max_rows": 1},
        {"max_rows": 2},
        {"max_rows": 3, "max_groups": 2},
        {"max_groups": 2, "max_rows_per_group": 1},
        {"max_rows": 4, "max_groups": 2, "max_rows_per_group": 2},
        {"max_rows": 2, "max_rows_per_group": 1},
    ]
)
ids = st.sampled_from(["a", "b", "é", "", "0", "aa"])  # one id type per column (documented)
row = st.tuples(ids, st.integers(0, 4), st.integers(-4, 6))  # cell 4 is outside the domain


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(row, max_size=30),
    st.lists(st.tuples(st.integers(0, 4), st.integers(-4, 6)), min_size=1, max_size=14),
    limits,
    st.booleans(),
)
def test_adding_a_person_moves_the_table_by_their_kept_vector(D, prows, lim, value):
    p = "newcomer"
    P = [(p, c, v) for c, v in prows]
    D = D or [("z", 4, 0)]
    before, after, alone = (_values(_table(x, lim, value)) for x in (D, D + P, P))
    assert (after - before).tolist() == alone.tolist()
    sens = _table(P, lim, value).sensitivity
    per = sens.per_row
    # the fewest rows per cell that could add alone: within the bounds (a member of the set)
    n = [-(-abs(a) // per) for a in alone.tolist()]
    if not value:
        assert alone.tolist() == n  # a count: the rows themselves
    assert sum(n) <= (lim.get("max_rows") or 10**9)
    assert sum(1 for k in n if k) <= (lim.get("max_groups") or 10**9)
    assert max(n) <= (lim.get("max_rows_per_group") or 10**9)
    assert sum(x * x for x in alone.tolist()) <= sens.norm2
    shuffled = D + P
    random.Random(len(D)).shuffle(shuffled)
    assert _values(_table(shuffled, lim, value)).tolist() == after.tolist()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-4, 6)), min_size=1, max_size=20), limits)
def test_ids_whose_hash_words_collide_are_still_two_people(prows, lim):
    # 5 and 5 + 2**64 have one hash word; an int and a str "5" are different types
    q = [(5, c, v) for c, v in prows]
    p = [(5 + 2**64, c, v) for c, v in prows]
    for value in (False, True):
        both, alone_q, alone_p = (_values(_table(x, lim, value)) for x in (q + p, q, p))
        assert (both - alone_q).tolist() == alone_p.tolist()


def test_sum_bounds_with_negative_low_and_granularity_stay_in_the_set():
    rows = [("x", j % 4, (-1) ** j * j) for j in range(12)]
    t = _table(
        rows, {"max_rows": 3}, value=True, bounds_=(Fraction(-3, 2), 1), granularity=Fraction(1, 2)
    )
    assert t.sensitivity.per_row == 3  # max(|−3/2|, |1|) / (1/2)
    assert sum(abs(x) for x in t.values.tolist()) <= t.sensitivity.norm1


def test_large_int_ids_beside_a_float_id_are_refused_not_merged():
    """Ints beyond 2**53 beside a float in one id column would be one float: ids 2**53 and
    2**53 + 1 one person, and adding one would move the table by (-1, +1).  Refused."""
    with pytest.raises(TypeError, match="person column 'p' mixes floats with ints beyond 2"):
        _table([(2**53, 0, 0), (0.5, 2, 0), (2**53 + 1, 1, 0)], {"max_rows": 1})
    D = [(2**53 - 1, 0, 0), (0.5, 2, 0)]  # within 2**53 a float is exact: two people
    P = [(2**53 - 2, 1, 0)]
    moved = _values(_table(D + P, {"max_rows": 1})) - _values(_table(D, {"max_rows": 1}))
    assert moved.tolist() == _values(_table(P, {"max_rows": 1})).tolist()


def test_empty_object_person_column_tabulates_to_zero():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"c": pd.Series([], dtype="int64"), "p": pd.Series([], dtype=object)})
    t = dgauss.tabulate(frame, "c", KEYS, person="p", max_rows=1, seed=1)
    assert t.values.tolist() == [0, 0, 0, 0]


@pytest.mark.slow
def test_dask_with_string_ids_and_an_empty_partition():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"c": [0, 1, 0], "p": ["a", "a", "b"]})
    t = dgauss.tabulate(
        dd.from_pandas(frame, npartitions=3), "c", KEYS, person="p", max_rows=1, seed=1
    )
    assert sum(t.values.tolist()) == 2


@pytest.mark.slow
def test_dask_agrees_with_pandas_on_random_data():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = random.Random(5)
    for lim in ({"max_rows": 2}, {"max_groups": 2, "max_rows_per_group": 1}):
        rows = [(rng.randrange(30), rng.randrange(5), rng.randrange(-4, 7)) for _ in range(400)]
        frame = pd.DataFrame(rows, columns=["p", "c", "v"])
        kw = dict(person="p", seed=3, value="v", bounds=(-2, 3), **lim)
        a = dgauss.tabulate(frame, "c", KEYS, **kw)
        b = dgauss.tabulate(dd.from_pandas(frame, npartitions=3), "c", KEYS, **kw)
        assert a.values.tolist() == b.values.tolist()


def test_many_row_people_use_the_same_rule_as_few_row_people():
    # 12 rows (sorting path) against the neighbour claim, with a colliding id beside
    base = [(7, j % 4, j) for j in range(12)]
    other = [(7 + 2**64, (j + 1) % 4, j) for j in range(12)]
    for lim in ({"max_rows": 2}, {"max_rows": 5, "max_groups": 2, "max_rows_per_group": 2}):
        both = _values(_table(base + other, lim, True))
        assert (both - _values(_table(base, lim, True))).tolist() == _values(
            _table(other, lim, True)
        ).tolist()
        assert math.isfinite(float(sum(both)))
