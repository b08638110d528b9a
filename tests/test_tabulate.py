"""dgauss.tabulate: the table against an independent computation of the documented rule
(plain Python: the hash written out, Counter over the kept rows), the neighbour property,
order independence, uniformity of the rows kept, and the two implementations of the rule
(pairwise for few rows, by sorting for many) against each other."""

import math
import random
import struct
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _bounding

M64 = 2**64 - 1


# -- the rule of tabulate's docstring, in plain Python --------------------------------------


def mix(z):
    z ^= z >> 30
    z = z * 0xBF58476D1CE4E5B9 & M64
    z ^= z >> 27
    z = z * 0x94D049BB133111EB & M64
    return z ^ (z >> 31)


def H(seed, *words):
    h = mix((seed + 0x9E3779B97F4A7C15) & M64)
    for w in words:
        h = mix(h ^ (w & M64))
    return h


def word(pid):
    if isinstance(pid, str):
        w = mix(len(pid))
        for ch in pid:
            w = mix(w ^ ord(ch))
        return w
    if isinstance(pid, float):
        if pid == math.floor(pid):
            return int(pid) & M64
        return struct.unpack("<Q", struct.pack("<d", pid))[0]
    return int(pid) & M64


def kept(rows, pid, seed, m=None, c=None, r=None, counts=True):
    """The rows (cell, steps) of one person that the rule keeps."""
    w, seen, items = word(pid), Counter(), []
    for cell, s in rows:
        k = seen[cell, s]
        words = (cell + (k << 32),) if counts else (cell + (k << 32), s)
        items.append((H(seed, 1, w, *words), cell, s, k))
        seen[cell, s] += 1
    items.sort()
    if c is not None:
        cells = sorted({cell for _, cell, _, _ in items}, key=lambda j: (H(seed, 2, w, j), j))
        items = [i for i in items if i[1] in cells[:c]]
    if r is not None:
        per = Counter()
        items = [i for i in items if (per.update([i[1]]) or per[i[1]] <= r)]
    if m is not None:
        items = items[:m]
    return [(cell, s) for _, cell, s, _ in items]


TOWNS = ["a", "b", "c", "d"]
AGES = [0, 1, 2]
KEYS = {"town": TOWNS, "age": AGES}


def cell_of(town, age):
    if town not in TOWNS or age not in AGES:
        return None
    return TOWNS.index(town) * len(AGES) + AGES.index(age)


def dataset(rng, people=12, most=6, strings=False):
    """Random records: a few people of 1..most rows, some keys outside the domain."""
    town, age, pid, pay = [], [], [], []
    ids = rng.sample(range(-(10**12), 10**12), people)
    for p in ids:
        for _ in range(rng.randint(1, most)):
            town.append(rng.choice(TOWNS + ["z"]))
            age.append(rng.choice(AGES + [7]) if rng.random() < 0.9 else rng.choice(AGES))
            pid.append(f"p{p}" if strings else p)
            pay.append(rng.choice([-3, 0, 1, 2, 5, 10]))
    return {
        "town": np.array(town),
        "age": np.array(age),
        "pid": np.array(pid),
        "pay": np.array(pay),
    }


def expected(data, seed, m=None, c=None, r=None, value=False, lo=None, hi=None):
    """The table, dropped and trimmed by the plain-Python rule."""
    rows, dropped = defaultdict(list), 0
    for town, age, p, v in zip(data["town"], data["age"], data["pid"], data["pay"], strict=True):
        cell = cell_of(str(town), int(age))
        if cell is None:
            dropped += 1
            continue
        steps = min(max(int(v), lo), hi) if value else 0
        rows[p.item()].append((cell, steps))
    table, trimmed = Counter(), 0
    for p, person_rows in rows.items():
        bounded = (m, c, r) != (None,) * 3
        keep = kept(person_rows, p, seed, m, c, r, not value) if bounded else person_rows
        trimmed += len(person_rows) - len(keep)
        for cell, s in keep:
            table[cell] += s if value else 1
    return [table[j] for j in range(len(TOWNS) * len(AGES))], dropped, trimmed


BOUNDS = [
    dict(max_rows=1),
    dict(max_rows=2),
    dict(max_groups=1, max_rows_per_group=1),
    dict(max_groups=2, max_rows_per_group=2),
    dict(max_rows=3, max_groups=2),
    dict(max_rows=2, max_rows_per_group=1),
    dict(max_rows=3, max_groups=2, max_rows_per_group=1),
]


def _bounded(kw):
    return kw.get("max_rows"), kw.get("max_groups"), kw.get("max_rows_per_group")


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("bounds", BOUNDS)
def test_counts_match_the_documented_rule(bounds, strings):
    rng = random.Random(hash((str(bounds), strings)) & 0xFFFF)
    for trial in range(15):
        data = dataset(rng, people=rng.randint(1, 15), most=rng.choice([3, 8, 30]), strings=strings)
        seed = rng.getrandbits(64)
        t = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", seed=seed, **bounds)
        want, dropped, trimmed = expected(data, seed, *_bounded(bounds))
        assert t.values.tolist() == want, trial
        assert (t.dropped, t.trimmed) == (dropped, trimmed)


@pytest.mark.parametrize("bounds", BOUNDS[:4])
def test_sums_match_the_documented_rule(bounds):
    rng = random.Random(7)
    for _ in range(15):
        data = dataset(rng, people=rng.randint(1, 12), most=rng.choice([4, 25]))
        seed = rng.getrandbits(64)
        t = dgauss.tabulate(
            data,
            ["town", "age"],
            KEYS,
            person="pid",
            value="pay",
            bounds=(-2, 6),
            seed=seed,
            **bounds,
        )
        want, dropped, trimmed = expected(data, seed, *_bounded(bounds), value=True, lo=-2, hi=6)
        assert t.values.tolist() == want
        assert (t.dropped, t.trimmed, t.value) == (dropped, trimmed, "pay")


def test_without_person_every_in_domain_row_counts():
    rng = random.Random(3)
    data = dataset(rng, people=40)
    t = dgauss.tabulate(data, ["town", "age"], KEYS)
    want = Counter(cell_of(str(a), int(b)) for a, b in zip(data["town"], data["age"], strict=True))
    assert t.values.tolist() == [want[j] for j in range(12)]
    assert t.dropped == want[None] and t.trimmed == 0 and t.person is None


@pytest.mark.parametrize("bounds", BOUNDS)
def test_pairwise_and_sorted_rankings_agree(bounds, monkeypatch):
    """The same rule by its two implementations: every person ranked pairwise, then every
    person ranked by sorting."""
    rng = random.Random(11)
    for _ in range(10):
        data = dataset(rng, people=20, most=12)
        seed = rng.getrandbits(64)
        tables = []
        for limit in (10**9, 0):
            monkeypatch.setattr(_bounding, "_PAIRWISE_MAX", limit)
            t = dgauss.tabulate(
                data,
                ["town", "age"],
                KEYS,
                person="pid",
                value="pay",
                bounds=(-3, 10),
                seed=seed,
                **bounds,
            )
            tables.append((t.values.tolist(), t.trimmed))
        assert tables[0] == tables[1]


def test_order_independence():
    """Shuffled rows (and so a different partitioning into batches) give the same table."""
    rng = random.Random(5)
    for bounds in BOUNDS:
        data = dataset(rng, people=30, most=20)
        base = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", seed=9, **bounds)
        for _ in range(4):
            perm = np.array(rng.sample(range(len(data["pid"])), len(data["pid"])))
            shuffled = {k: v[perm] for k, v in data.items()}
            t = dgauss.tabulate(shuffled, ["town", "age"], KEYS, person="pid", seed=9, **bounds)
            assert t.values.tolist() == base.values.tolist()
            assert (t.dropped, t.trimmed) == (base.dropped, base.trimmed)


def _concat(a, b):
    return {k: np.concatenate([a[k], b[k]]) for k in a}


def test_neighbours_differ_by_one_bounded_contribution():
    """tabulate(D + p) - tabulate(D) is p's own bounded contribution, in the contribution set."""
    rng = random.Random(17)
    for trial in range(60):
        bounds = BOUNDS[trial % len(BOUNDS)]
        m, c, r = _bounded(bounds)
        data = dataset(rng, people=rng.randint(0, 10) or 1, most=8)
        person = dataset(rng, people=1, most=12)
        if person["pid"][0] in set(data["pid"].tolist()):
            continue
        seed = rng.getrandbits(64)
        for value in (None, "pay"):
            kw = dict(person="pid", value=value, bounds=value and (-3, 10), seed=seed, **bounds)
            d = dgauss.tabulate(data, ["town", "age"], KEYS, **kw).values
            dp = dgauss.tabulate(_concat(data, person), ["town", "age"], KEYS, **kw).values
            alone = dgauss.tabulate(person, ["town", "age"], KEYS, **kw).values
            assert (dp - d).tolist() == alone.tolist()
            # in the contribution set: entries n_j * per_row, sum n_j <= m, <= c nonzero, n_j <= r
            per_row = 10 if value else 1
            rows = [
                (cell_of(str(t), int(a)), min(max(int(v), -3), 10) if value else 0)
                for t, a, v in zip(person["town"], person["age"], person["pay"], strict=True)
            ]
            inside = [x for x in rows if x[0] is not None]
            pid = person["pid"][0].item()
            n = Counter(j for j, _ in kept(inside, pid, seed, m, c, r, counts=not value))
            assert all(abs(alone[j]) <= n[j] * per_row for j in range(12))
            assert m is None or sum(n.values()) <= m
            assert c is None or len(n) <= c
            assert r is None or max(n.values(), default=0) <= r
            assert value or alone.tolist() == [n[j] for j in range(12)]


def _chi2(hits, cells, total):
    return sum((hits[j] - total / len(cells)) ** 2 / (total / len(cells)) for j in cells)


def test_rows_kept_are_close_to_uniform():
    """m=1, a person with 3 rows in 3 cells: each cell kept about 1/3 of the time, over 600
    seeds for one person and over 3000 people for one seed.  The chi-square bound (2 degrees
    of freedom) at 40 fails with probability 2e-9 for a uniform choice; "always the first
    row" gives 1200 and 6000."""
    data = {"town": np.array(["a", "b", "c"]), "age": np.array([0, 0, 0]), "pid": np.array([4] * 3)}
    hits = Counter()
    for seed in range(600):
        t = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=1, seed=seed)
        hits[int(np.flatnonzero(t.values)[0])] += 1
    assert sum(hits.values()) == 600 and _chi2(hits, (0, 3, 6), 600) < 40, hits
    many = {
        "town": np.tile(["a", "b", "c"], 3000),
        "age": np.zeros(9000, int),
        "pid": np.repeat(np.arange(3000) * 7919, 3),
    }
    t = dgauss.tabulate(many, ["town", "age"], KEYS, person="pid", max_rows=1, seed=12345)
    assert t.trimmed == 6000 and _chi2(dict(enumerate(t.values)), (0, 3, 6), 3000) < 40


def test_identical_rows_are_chosen_by_occurrence():
    """Three equal rows in one cell and one in another, m=1: the first cell is kept about
    3/4 of the time (the occurrence number separates equal rows), over 4000 people."""
    n = 4000
    data = {
        "town": np.tile(["a", "a", "a", "b"], n),
        "age": np.zeros(4 * n, int),
        "pid": np.repeat(np.arange(n), 4),
    }
    t = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=1, seed=77)
    assert abs(t.values[0] - 3000) < 200  # 7 standard deviations; 1/2 would give 2000


def test_seed_reproduces_and_none_draws():
    rng = random.Random(23)
    data = dataset(rng, people=50, most=6)
    tables = [
        dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=1, seed=s).values
        for s in (1, 1, None, None, None)
    ]
    assert tables[0].tolist() == tables[1].tolist()
    assert len({tuple(t.tolist()) for t in tables}) >= 2  # fresh seeds differ (all equal: ~0)


def test_person_id_words():
    """The id words of the docstring: ints mod 2**64, integral floats as ints, others by
    bits, strings by code points (non-ASCII too)."""
    ids = [np.array([5, -1, 2**62]), np.array([3.0, -0.0, 2.5]), np.array(["", "ab", "é✓x"])]
    for a in ids:
        assert _bounding._word(a).tolist() == [word(v) for v in a.tolist()]
    big = np.array([2**63 + 5, 1], dtype=np.uint64)
    assert _bounding._word(big).tolist() == [word(2**63 + 5), 1]


def test_hash_collisions_of_people_are_told_apart(monkeypatch):
    """Two people whose words agree (forced) are still bounded one by one."""
    monkeypatch.setattr(_bounding, "_word", lambda pid: np.zeros(len(pid), dtype=np.uint64))
    data = {
        "town": np.array(["a", "b", "a", "b"]),
        "age": np.zeros(4, int),
        "pid": np.array([1, 2, 1, 2]),
    }
    t = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=2, seed=1)
    assert t.values.sum() == 4 and t.trimmed == 0


def test_frame_keys_order_and_missing_cells():
    keys = {"town": ["d", "a"], "age": [2, 0]}
    data = {"town": np.array(["a", "a", "d", "b"]), "age": np.array([0, 0, 2, 0])}
    t = dgauss.tabulate(data, ["town", "age"], keys)
    assert t.columns["town"].tolist() == ["d", "d", "a", "a"]
    assert t.columns["age"].tolist() == [2, 0, 2, 0]
    assert t.values.tolist() == [1, 0, 0, 2] and t.dropped == 1


def test_ints_and_floats_compare_by_exact_value():
    data = {"k": np.array([1.0, 2.5, 2.0, 2**53 + 0.0]), "x": np.arange(4)}
    t = dgauss.tabulate(data, "k", {"k": [1, 2, 2**53 + 1]})
    assert t.values.tolist() == [1, 1, 0] and t.dropped == 2
    t = dgauss.tabulate({"k": np.array([1, 2, 3])}, "k", {"k": [1.0, 2.5, 3.0]})
    assert t.values.tolist() == [1, 0, 1] and t.dropped == 1


# -- sums ------------------------------------------------------------------------------------


def test_lattice_rounding_halves_to_even_and_clamps():
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 7.0, -9.0, 0.49999999999999994])
    t = dgauss.tabulate({"k": np.zeros(8, int), "v": v}, "k", {"k": [0]}, value="v", bounds=(-4, 4))
    assert t.values.tolist() == [0 + 2 + 2 + 0 - 2 + 4 - 4 + 0]


@pytest.mark.parametrize("g", [Fraction(1, 10), Fraction(1, 4), Fraction(3), Fraction(2, 3)])
def test_granularity_steps_are_exact(g):
    """Each value v as round(v / g) at v's exact binary value (halves to even), clamped."""
    rng = random.Random(int(g * 1000))
    vals = [rng.choice([0.05, 0.15, 0.25, 0.35, 1.5, 2.0, 3.0, -1.0, 4.5, 1e6, -1e18])]
    vals += [rng.uniform(-5, 5) for _ in range(200)] + [float(k * g) for k in range(-8, 9)]
    lo, hi = -6 * g, 6 * g
    t = dgauss.tabulate(
        {"k": np.zeros(len(vals), int), "v": np.array(vals)},
        "k",
        {"k": [0]},
        value="v",
        bounds=(lo, hi),
        granularity=g,
    )
    want = sum(min(max(round(Fraction(v) / g), -6), 6) for v in vals)
    assert t.values.tolist() == [want]
    assert t.granularity == g
    if g.denominator == 1:
        assert t.columns["v"].tolist() == [want * g]
    else:
        assert t.columns["v"].tolist() == [float(want * g)]


def test_integer_values_with_a_granularity():
    v = np.array([1, 2, 3, 4, 5, 6, 100, -100], dtype=np.int64)
    t = dgauss.tabulate(
        {"k": np.zeros(8, int), "v": v}, "k", {"k": [0]}, value="v", bounds=(-8, 8), granularity=2
    )
    want = sum(min(max(round(Fraction(int(x), 2)), -4), 4) for x in v)
    assert t.values.tolist() == [want] and t.columns["v"].tolist() == [2 * want]


def test_object_values_are_exact():
    from decimal import Decimal

    v = np.array([Fraction(1, 3), Decimal("2.5"), 7, 1.5], dtype=object)
    t = dgauss.tabulate({"k": np.zeros(4, int), "v": v}, "k", {"k": [0]}, value="v", bounds=(0, 5))
    assert t.values.tolist() == [0 + 2 + 5 + 2]


def test_sums_outgrowing_int64_are_python_ints():
    n = 4
    hi = 2**62
    t = dgauss.tabulate(
        {"k": np.zeros(n, int), "v": np.full(n, 2**62, dtype=np.int64)},
        "k",
        {"k": [0]},
        value="v",
        bounds=(0, hi),
    )
    assert t.values.dtype == object and t.values.tolist() == [n * 2**62]


def test_value_named_like_a_key_column_is_sum():
    t = dgauss.tabulate({"k": np.array([1, 2, 2])}, "k", {"k": [1, 2]}, value="k", bounds=(0, 5))
    assert t.value == "sum" and t.columns["sum"].tolist() == [1, 4]
    t = dgauss.tabulate({"count": np.array([1, 2, 2])}, "count", {"count": [1, 2]})
    assert t.value == "_count" and t.values.tolist() == [1, 2]


def test_the_docstring_examples_run():
    import doctest

    from dgauss import _tabulate

    result = doctest.testmod(_tabulate, verbose=False)
    assert result.failed == 0 and result.attempted >= 4


def test_other_key_types():
    """Datetimes, booleans, bytes, and ints beyond int64 (Python ints) as keys."""
    day = np.array(["2026-01-01", "2026-01-02", "2026-01-05"], dtype="datetime64[D]")
    t = dgauss.tabulate({"d": day[[0, 0, 2]]}, "d", {"d": day[:2]})
    assert t.values.tolist() == [2, 0] and t.dropped == 1
    t = dgauss.tabulate({"b": np.array([True, True, False])}, "b", {"b": [False, True]})
    assert t.values.tolist() == [1, 2]
    t = dgauss.tabulate({"s": np.array([b"x", b"y", b"y"])}, "s", {"s": np.array([b"y"])})
    assert t.values.tolist() == [2] and t.dropped == 1
    big = np.array([2**64, 5, 2**64, -(2**70)], dtype=object)
    t = dgauss.tabulate({"n": big}, "n", {"n": [2**64, 5, 7]})
    assert t.values.tolist() == [2, 1, 0] and t.dropped == 1
    with pytest.raises(TypeError, match="'d'.*datetime"):
        dgauss.tabulate({"d": day}, "d", {"d": [1, 2]})


def test_a_key_frame_of_several_columns_maps_each_row():
    pd = pytest.importorskip("pandas")
    rng = random.Random(31)
    rows = sorted(
        {(rng.choice(TOWNS), rng.choice(AGES)) for _ in range(8)}, key=lambda _: rng.random()
    )
    keys = pd.DataFrame(rows, columns=["town", "age"])
    data = dataset(rng, people=30)
    t = dgauss.tabulate(data, ["town", "age"], keys)
    counts = Counter(zip(data["town"].tolist(), data["age"].tolist(), strict=True))
    assert t.values.tolist() == [counts[r] for r in rows]
    assert t.dropped == len(data["town"]) - sum(counts[r] for r in rows)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_many_narrow_int_keys_find_their_cells(dtype):
    """Past 2**18 rows a column of 8- or 16-bit ints is looked up in a table of every value
    of its type; the cells (negative values and values outside the domain included) are
    the same as a plain dict's."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(41)
    keys = {
        "a": np.array(sorted({info.min, info.max, 0, 1, 5, int(info.max) // 2}), dtype=dtype),
        "b": np.array([3, 1, 2], dtype=dtype),
    }
    n = (1 << 18) + 1000
    data = {
        "a": np.r_[keys["a"], rng.integers(info.min, info.max, n, endpoint=True)].astype(dtype),
        "b": rng.integers(0, 5, n + len(keys["a"])).astype(dtype),
    }
    t = dgauss.tabulate(data, ["a", "b"], keys)
    index = [{v: i for i, v in enumerate(keys[c].tolist())} for c in ("a", "b")]
    want = Counter(
        index[0][a] * 3 + index[1][b]
        for a, b in zip(data["a"].tolist(), data["b"].tolist(), strict=True)
        if a in index[0] and b in index[1]
    )
    assert t.values.tolist() == [want[j] for j in range(len(t))]
    assert t.dropped == len(data["a"]) - sum(want.values()) > 0


@pytest.mark.parametrize("ids", ["str", "float", "uint64", "int64 wide"])
def test_people_are_grouped_by_their_ids_whatever_their_kind(ids, monkeypatch):
    """The rule for ids that are not packed whole (strings, floats, ints of a wide range) and
    for uint64 ids past 2**63, against the plain-Python rule; then with every word forced
    equal, so that all people meet in one run of the sort and are told apart by their ids."""
    rng = random.Random(29)
    data = dataset(rng, people=25, most=6)
    ranks = {p: i for i, p in enumerate(sorted(set(data["pid"].tolist())))}
    rank = np.array([ranks[p] for p in data["pid"].tolist()], dtype=np.uint64)
    data["pid"] = {
        "str": np.array([f"id{r}" for r in rank.tolist()]),
        "float": rank * 0.5 - 3.25,
        "uint64": np.uint64(2**64 - 100) + rank,
        "int64 wide": np.where(rank % 2 == 0, -(2**62), 2**62) + rank.astype(np.int64),
    }[ids]
    t = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=2, seed=3)
    want, dropped, trimmed = expected(data, 3, 2)
    assert t.values.tolist() == want and (t.dropped, t.trimmed) == (dropped, trimmed)
    assert trimmed > 0
    monkeypatch.setattr(_bounding, "_word", lambda pid: np.zeros(len(pid), dtype=np.uint64))
    forced = dgauss.tabulate(data, ["town", "age"], KEYS, person="pid", max_rows=2, seed=3)
    assert forced.trimmed == trimmed  # each person still cut to 2 rows, one by one
