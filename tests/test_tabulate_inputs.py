"""dgauss.tabulate's inputs and result: every kind of records gives pandas' table, the Table's
attributes (frame, columns, value, sensitivity, granularity), and each kind of bad input
refused by a TypeError/ValueError naming the argument, with the data left untouched."""

import random
import sys

import numpy as np
import pytest

import dgauss
from dgauss import accounting

pd = pytest.importorskip("pandas")

KEYS = {"town": ["a", "b", "c"], "age": [0, 1, 2]}
BY = ["town", "age"]


def records(n=400, seed=1):
    rng = random.Random(seed)
    people = [rng.randrange(10**9) for _ in range(n // 3)]
    return {
        "town": np.array([rng.choice("abcz") for _ in range(n)], dtype=object),
        "age": np.array([rng.choice([0, 1, 2, 2, 9]) for _ in range(n)]),
        "pid": np.array([rng.choice(people) for _ in range(n)]),
        "pay": np.array([rng.uniform(-5, 20) for _ in range(n)]),
    }


CASES = [
    dict(),
    dict(person="pid", max_rows=2),
    dict(person="pid", max_groups=1, max_rows_per_group=2),
    dict(person="pid", max_rows=3, value="pay", bounds=(-2, 8), granularity=0.5),
]


def _same(t, base):
    assert t.values.tolist() == base.values.tolist()
    assert (t.dropped, t.trimmed) == (base.dropped, base.trimmed)


@pytest.mark.parametrize("kw", CASES)
def test_dict_and_pandas_give_the_same_table(kw):
    data = records()
    base = dgauss.tabulate(pd.DataFrame(data), BY, KEYS, seed=3, **kw)
    _same(dgauss.tabulate(data, BY, KEYS, seed=3, **kw), base)
    assert base.values.sum() > 0 and base.dropped > 0


@pytest.mark.parametrize("kw", CASES)
def test_polars_gives_pandas_table(kw):
    pl = pytest.importorskip("polars")
    data = records()
    base = dgauss.tabulate(pd.DataFrame(data), BY, KEYS, seed=3, **kw)
    frame = pl.DataFrame({k: v.tolist() for k, v in data.items()})
    for records_ in (frame, frame.lazy()):
        t = dgauss.tabulate(records_, BY, KEYS, seed=3, **kw)
        _same(t, base)
        assert isinstance(t.frame, pl.DataFrame)
        assert t.frame[t.value].to_list() == base.frame[base.value].tolist()


@pytest.mark.parametrize("kw", CASES)
def test_dask_gives_pandas_table(kw):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    data = records(600)
    frame = pd.DataFrame(data)
    base = dgauss.tabulate(frame, BY, KEYS, seed=3, **kw)
    with dask.config.set(scheduler="sync"):
        t = dgauss.tabulate(dd.from_pandas(frame, npartitions=4), BY, KEYS, seed=3, **kw)
    _same(t, base)
    assert isinstance(t.frame, pd.DataFrame)


def test_no_pandas_columns_still_work_and_frame_says_so(monkeypatch):
    data = records()
    with_pandas = dgauss.tabulate(data, BY, KEYS, person="pid", max_rows=1, seed=5)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    t = dgauss.tabulate(data, BY, KEYS, person="pid", max_rows=1, seed=5)  # NumPy look-ups
    _same(t, with_pandas)
    assert t.columns["count"].tolist() == with_pandas.values.tolist()
    with pytest.raises(ImportError, match="install pandas.*columns"):
        _ = t.frame


def test_frame_keeps_the_keys_dtypes():
    data = records()
    keys = pd.DataFrame({"age": np.array([2, 0], dtype=np.int32), "town": ["c", "a"]})
    t = dgauss.tabulate(pd.DataFrame(data), BY, keys)
    assert list(t.frame.columns) == ["town", "age", "count"]
    assert t.frame["age"].dtype == np.int32 and t.frame["age"].tolist() == [2, 0]
    want = sum(
        (str(a), int(b)) == (tw, ag)
        for a, b in zip(data["town"], data["age"], strict=True)
        for tw, ag in [("c", 2)]
    )
    assert t.values.tolist()[0] == want
    t = dgauss.tabulate(data, BY, {"town": ["a"], "age": np.array([1, 2], dtype=np.int16)})
    assert t.frame["age"].dtype == np.int16 and t.frame["town"].tolist() == ["a", "a"]


def test_sum_table_attributes():
    data = records()
    t = dgauss.tabulate(data, BY, KEYS, value="pay", bounds=(-2, 8), granularity="0.5")
    assert t.value == "pay" and t.granularity == accounting_fraction("1/2")
    assert t.bounds == (-2, 8) and t.values.dtype == np.int64
    assert t.columns["pay"].tolist() == [v / 2 for v in t.values.tolist()]
    assert t.frame["pay"].tolist() == t.columns["pay"].tolist()
    c = dgauss.tabulate(data, BY, KEYS)
    assert c.value == "count" and c.granularity is None and c.bounds is None


def accounting_fraction(text):
    from fractions import Fraction

    return Fraction(text)


def test_sensitivity():
    data = records()
    s = dgauss.tabulate(data, BY, KEYS).sensitivity
    assert isinstance(s, accounting.Contributions)
    assert (s.max_rows, s.max_groups, s.max_rows_per_group, s.per_row, s.cells) == (
        1,
        None,
        None,
        1,
        9,
    )
    s = dgauss.tabulate(
        data,
        BY,
        KEYS,
        person="pid",
        max_groups=2,
        max_rows_per_group=3,
        value="pay",
        bounds=(-3, 7.5),
        granularity=0.5,
        seed=1,
    ).sensitivity
    assert (s.max_rows, s.max_groups, s.max_rows_per_group, s.per_row, s.cells) == (
        None,
        2,
        3,
        15,
        9,
    )


def test_table_is_immutable_and_reads_well():
    t = dgauss.tabulate(records(), BY, KEYS, person="pid", max_rows=2, seed=1)
    with pytest.raises(AttributeError):
        t.dropped = 0
    with pytest.raises(ValueError):
        t.values[0] = 5
    assert len(t) == 9
    text = repr(t)
    assert "9 cells" in text and "max_rows=2" in text and "not private" in text


def test_data_is_left_untouched():
    data = records()
    frame = pd.DataFrame(data)
    before = frame.copy()
    dgauss.tabulate(frame, BY, KEYS, person="pid", max_rows=1, value="pay", bounds=(0, 5), seed=1)
    with pytest.raises(ValueError):
        dgauss.tabulate(frame, BY, KEYS, person="pid", max_rows=0)
    pd.testing.assert_frame_equal(frame, before)


# -- bad input: one case per failure mode, each naming the argument ---------------------------


def _bad(**changes):
    data = records(30)
    args = dict(records=data, by=BY, keys=KEYS)
    args.update(changes)
    return args


def _nan_in(column, value):
    data = records(30)
    data[column] = data[column].astype(object if isinstance(value, str) or value is None else float)
    data[column][3] = value
    return data


BAD = [
    (
        "missing by column",
        _bad(by=["town", "sex"], keys={"town": ["a"], "sex": [0]}),
        ValueError,
        "by names column 'sex'",
    ),
    ("missing person", _bad(person="who", max_rows=1), ValueError, "person names column"),
    ("missing value", _bad(value="v", bounds=(0, 1)), ValueError, "value names column"),
    ("keys' columns", _bad(keys={"town": ["a"]}), ValueError, "keys' columns"),
    ("keys frame columns", _bad(keys=pd.DataFrame({"town": ["a"], "x": [1]})), ValueError, "keys"),
    ("key type", _bad(keys={"town": [1, 2], "age": [0]}), TypeError, "'town'.*keys"),
    ("NaN in key", _bad(records=_nan_in("age", np.nan)), ValueError, "by column 'age'.*missing"),
    ("None in key", _bad(records=_nan_in("town", None)), ValueError, "by column 'town'.*missing"),
    (
        "NaN in person",
        _bad(records=_nan_in("pid", np.nan), person="pid", max_rows=1),
        ValueError,
        "person column 'pid'.*missing",
    ),
    (
        "None in value",
        _bad(records=_nan_in("pay", None), value="pay", bounds=(0, 1)),
        ValueError,
        "value column 'pay'.*missing",
    ),
    (
        "NaN in value",
        _bad(records=_nan_in("pay", np.nan), value="pay", bounds=(0, 1)),
        ValueError,
        "value column 'pay'",
    ),
    (
        "text value",
        _bad(records=_nan_in("pay", "x"), value="pay", bounds=(0, 1)),
        TypeError,
        "value column 'pay'",
    ),
    (
        "max_rows 0",
        _bad(person="pid", max_rows=0),
        ValueError,
        "max_rows must be None or an int >= 1",
    ),
    ("max_rows bool", _bad(person="pid", max_rows=True), TypeError, "max_rows.*not bool"),
    ("max_rows float", _bad(person="pid", max_rows=1.0), TypeError, "max_rows.*float"),
    ("max_groups 0", _bad(person="pid", max_groups=0, max_rows=1), ValueError, "max_groups"),
    (
        "max_rows_per_group str",
        _bad(person="pid", max_rows=1, max_rows_per_group="2"),
        TypeError,
        "max_rows_per_group",
    ),
    (
        "bounds reversed",
        _bad(value="pay", bounds=(3, 1)),
        ValueError,
        "bounds must have low <= high",
    ),
    (
        "bounds infinite",
        _bad(value="pay", bounds=(0, float("inf"))),
        ValueError,
        "bounds must be finite",
    ),
    ("bounds not a pair", _bad(value="pay", bounds=5), TypeError, "bounds must be a pair"),
    (
        "bounds off the lattice",
        _bad(value="pay", bounds=(0, 1.25), granularity=0.5),
        ValueError,
        "bounds must be multiples of the granularity",
    ),
    ("granularity 0", _bad(value="pay", bounds=(0, 1), granularity=0), ValueError, "granularity"),
    (
        "duplicate dict keys",
        _bad(keys={"town": ["a", "a"], "age": [0]}),
        ValueError,
        "keys has duplicate rows",
    ),
    (
        "duplicate key rows",
        _bad(keys=pd.DataFrame({"town": ["a", "a"], "age": [0, 0]})),
        ValueError,
        "keys has duplicate rows",
    ),
    (
        "empty domain",
        _bad(keys={"town": [], "age": [0]}),
        ValueError,
        "keys must define a non-empty",
    ),
    (
        "empty key frame",
        _bad(keys=pd.DataFrame({"town": [], "age": []})),
        ValueError,
        "keys must define a non-empty",
    ),
    ("keys of a bad type", _bad(keys=[("a", 0)]), TypeError, "keys must be a dict"),
    ("by empty", _bad(by=[]), ValueError, "by must name at least one"),
    ("by duplicates", _bad(by=["town", "town"]), ValueError, "by must name each key column once"),
    ("by a number", _bad(by=3), TypeError, "by must be a column name"),
    ("records a list", _bad(records=[{"town": "a"}]), TypeError, "records must be a pandas"),
    ("records a Series", _bad(records=pd.Series([1])), TypeError, "records must be .*Dask"),
    (
        "unequal columns",
        _bad(records={"town": np.array(["a"]), "age": np.array([0, 1])}),
        ValueError,
        "records' columns must have equal lengths",
    ),
    (
        "2-D column",
        _bad(records={"town": np.array([["a"]]), "age": np.array([[0]])}),
        ValueError,
        "records\\['town'\\] must be a 1-D",
    ),
    ("person unbounded", _bad(person="pid"), ValueError, "person='pid' needs a bound"),
    ("bound without person", _bad(max_rows=2), ValueError, "need person="),
    (
        "max_groups alone",
        _bad(person="pid", max_groups=2),
        ValueError,
        "max_groups needs max_rows_per_group or max_rows",
    ),
    (
        "max_rows_per_group alone",
        _bad(person="pid", max_rows_per_group=2),
        ValueError,
        "max_rows_per_group needs max_groups or max_rows",
    ),
    ("value without bounds", _bad(value="pay"), ValueError, "value='pay' needs bounds"),
    ("bounds without value", _bad(bounds=(0, 1)), ValueError, "need value="),
    (
        "seed negative",
        _bad(seed=-1),
        ValueError,
        "seed must be None or an int in \\[0, 2\\*\\*64\\)",
    ),
    ("seed too large", _bad(seed=2**64), ValueError, "seed must be"),
    ("seed bool", _bad(seed=True), TypeError, "seed must be"),
    ("seed float", _bad(seed=1.0), TypeError, "seed must be"),
    (
        "person of bools",
        _bad(records={**records(30), "pid": np.ones(30, bool)}, person="pid", max_rows=1),
        TypeError,
        "person column 'pid' must hold ints",
    ),
    ("person is a key", _bad(person="town", max_rows=1), ValueError, "person='town' is also a key"),
]


@pytest.mark.parametrize(
    ("args", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_refused_by_name(args, error, message):
    with pytest.raises(error, match=message):
        dgauss.tabulate(**args)


def test_person_ids_ending_in_nul_are_refused_not_merged():
    """NumPy's strings drop trailing NULs: "a" and "a\\x00" would be one person, and adding
    the second would move the table by two rows under max_rows=1.  Such ids are refused;
    a NUL inside a string is kept (its id differs from the one without it)."""
    town = np.array(["x", "y"], dtype=object)
    keys = {"town": ["x", "y"]}
    for pid in (["a", "a\x00"], ["b\x00", "c"]):
        for data in (
            {"pid": np.array(pid, dtype=object), "town": town},
            pd.DataFrame({"pid": pid, "town": town}),
        ):
            with pytest.raises(ValueError, match=r"person column 'pid' holds a string ending"):
                dgauss.tabulate(data, "town", keys, person="pid", max_rows=1, seed=0)
    inner = {"pid": np.array(["a\x00b", "ab"], dtype=object), "town": town}
    for seed in range(8):  # two people: both rows kept, whatever the seed
        table = dgauss.tabulate(inner, "town", keys, person="pid", max_rows=1, seed=seed)
        assert table.values.tolist() == [1, 1] and table.trimmed == 0
