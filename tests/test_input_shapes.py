"""Every input shape and every option through every entry point (issue 34, Deliver 1).

The property tests draw a release -- an input kind (0-d, 1-D, 2-D, 3-D, Fortran-ordered,
strided, list, nested list, scalar, Series, DataFrame with ``columns=``, Dask array, Dask
DataFrame), its dtype, a granularity, ``clip``, ``out``, ``overflow``, a sensitivity vector
-- and make it through the function, a mechanism and an Accountant, Gaussian and Laplace,
with a seeded generator.  The same noise is drawn separately (``sample_gaussian`` /
``sample_laplace`` on the same seed; each Dask block on its seed's child), and the result is
checked against a plain-Python model written here: shape, dtype, index and columns, and every
value exactly (the lattice integers m = value/g plus the noise, clipped to the multiples of g
inside ``clip``, times g, rounded once to float64).  A refused combination must name the
parameter, and leave the Accountant (its ledger, spent and remaining) as it was.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss.mechanisms import PrivacyBudgetError

pd = pytest.importorskip("pandas")

HAVE_DASK = importlib.util.find_spec("dask") is not None
needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="the dask extra is not installed")
if HAVE_DASK:
    import dask.array as da
    import dask.dataframe as dd

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# derandomized: CI sees the same examples every run; the counts keep the file well under a
# minute on one core (the Dask ones build and compute a graph each)
SET = settings(
    max_examples=250,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEW = settings(SET, max_examples=40)

GRANULARITIES = [None, 1, 2, "0.5", "1/3"]  # as passed; the model reads them as Fractions
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64", "longdouble"]
MEMORY_KINDS = [
    "scalar",
    "0d",
    "1d",
    "2d",
    "3d",
    "fortran",
    "strided",
    "list",
    "nested",
    "series",
    "frame",
]
DASK_KINDS = ["dask_array", "dask_frame"]


# ---- a release, as drawn ------------------------------------------------------------------


@dataclass
class Case:
    api: str  # "function", "mechanism", "accountant"
    mech: str  # "gaussian", "laplace"
    kind: str  # one of MEMORY_KINDS or DASK_KINDS
    dtypes: list[str]  # one per column of a frame, else one
    g: Any  # as passed (None, int or str)
    m: np.ndarray  # the lattice integers (object array of Python ints), the values' shape
    clip: tuple | None
    out: str | None  # None, "c", "f", "strided", "self"
    out_dtype: str | None
    overflow: str
    noise: dict  # the keywords that set the noise
    sensitivity: Any
    seed: int
    columns: list | None = None  # passed as columns=
    extra_column: bool = False  # a frame's label column, left as it is
    values: Any = field(default=None, repr=False)  # what is passed (built from m)

    @property
    def granularity(self) -> Fraction | None:
        return None if self.g is None else Fraction(self.g)

    @property
    def dask(self) -> bool:
        return self.kind in DASK_KINDS

    @property
    def frame(self) -> bool:
        return self.kind in ("frame", "dask_frame")


def _lattice_step(dtype: str, g: Fraction | None) -> int:
    """The lattice integers m that this dtype can hold exactly as m*g step by this."""
    if g is None:
        return 1
    dyadic = g.denominator & (g.denominator - 1) == 0
    if np.dtype(dtype).kind == "O" or np.dtype(dtype).kind == "f" and dyadic:
        return 1  # exact: a Fraction in an object array, a dyadic rational in a float
    return g.denominator  # m*g an integer (for floats and g = 1/3, an exact integer)


def _limit(dtype: str, g: Fraction | None, step: int) -> tuple[int, int]:
    """Bounds on k with m = k*step, so that m*g fits the dtype (100 at most in size)."""
    gg = g or Fraction(1)
    top = math.floor(Fraction(100) / (step * gg))
    if np.dtype(dtype).kind == "u":
        return 0, top
    if dtype == "int8":
        return -top, min(top, 127)
    return -top, top


EXTREMES = {  # values at int64's ends (and past them where the container holds them)
    "int64": [INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1],
    "uint64": [2**63, 2**64 - 1, INT64_MAX],
    "object": [INT64_MAX, INT64_MIN, 2**63, -(2**63) - 1, 2**70],
    "pyint": [INT64_MAX, INT64_MIN, 2**63, 2**70],
}


@st.composite
def cases(draw, kinds=MEMORY_KINDS) -> Case:
    kind = draw(st.sampled_from(kinds))
    mech = draw(st.sampled_from(["gaussian", "laplace"]))
    api = draw(st.sampled_from(["function", "mechanism", "accountant"]))
    g = draw(st.sampled_from(GRANULARITIES))
    gf = None if g is None else Fraction(g)
    # the shape
    if kind == "scalar" or kind == "0d":
        shape: tuple[int, ...] = ()
    elif kind in ("1d", "list", "series"):
        shape = (draw(st.integers(0, 6)),)
    elif kind == "3d":
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=3, max_size=3)))
    elif kind == "frame" or kind == "dask_frame":
        shape = (draw(st.integers(1, 5)), draw(st.integers(1, 3)))
    elif kind == "dask_array":
        shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    else:  # 2d, fortran, strided, nested
        shape = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    # the dtypes (floats without a granularity are drawn too: they must be refused)
    if kind in ("list", "nested", "scalar"):
        pool = ["pyint", "pyfloat"]
    elif kind == "dask_frame":
        pool = INT_DTYPES + ["float32", "float64"]
    else:
        pool = INT_DTYPES + FLOAT_DTYPES + ["object"]
    ncols = shape[1] if kind in ("frame", "dask_frame") else 1
    dtypes = [draw(st.sampled_from(pool)) for _ in range(ncols)]
    # the lattice integers, column by column
    m = np.empty(shape, dtype=object)
    extremes = draw(st.booleans()) and gf in (None, 1) and kind not in ("series", "frame")
    extremes = extremes and kind != "dask_frame"
    for index in np.ndindex(*shape):
        d = dtypes[index[1] if ncols > 1 else 0]
        np_d = _np_dtype(d)
        step = _lattice_step(np_d, gf)
        lo, hi = _limit(np_d, gf, step)
        if extremes and d in EXTREMES and not (kind == "dask_array" and d == "object"):
            m[index] = draw(st.sampled_from(EXTREMES[d] + [0, 5]))
        else:
            m[index] = draw(st.integers(lo, hi)) * step
    # the options
    clip = None
    if draw(st.booleans()):
        bound = st.integers(-60, 60) if gf is None else st.fractions(-60, 60, max_denominator=4)
        lo = draw(st.none() | bound)
        hi = draw(st.none() | bound)
        if lo is not None and hi is not None and lo > hi and draw(st.booleans()):
            lo, hi = hi, lo  # mostly a valid range; lo > hi must be refused
        if gf is not None:  # with a granularity, any rational bound (as a string)
            lo, hi = (None if b is None else str(b) for b in (lo, hi))
        clip = (lo, hi)
    overflow = draw(st.sampled_from(["raise", "object"]))
    out = None
    out_dtype = None
    if not kind.startswith("dask") or draw(st.integers(0, 9)) == 0:  # rarely: refused
        out = draw(st.sampled_from([None, None, "c", "f", "strided", "self"]))
        if out is not None:
            out_dtype = "float64" if gf is not None else draw(st.sampled_from(["int64", "object"]))
        if out == "self" and (
            kind not in ("0d", "1d", "2d", "3d", "fortran", "strided") or dtypes[0] != out_dtype
        ):
            out = "c"
    columns = None
    extra = False
    if kind in ("frame", "dask_frame"):
        extra = draw(st.booleans())
        names = [f"c{j}" for j in range(ncols)]
        if extra or draw(st.booleans()):
            columns = draw(st.permutations(names))  # any order: the noise follows it
    elif draw(st.integers(0, 19)) == 0:
        columns = ["c0"]  # refused: only a DataFrame has columns
    sensitivity = None
    if mech == "gaussian":
        sensitivity = draw(
            st.sampled_from([None, 1, 2, [1, 2], [3], [1, -1, 1, 1, 1], [0, 0, 2, 0, 0, 0, 1]])
        )
        if draw(st.booleans()):
            noise = {"rho": draw(st.sampled_from(["1/2", 2, "1/8"]))}
        else:
            noise = {"sigma2": draw(st.sampled_from([1, "7/3", 40]))}
    else:
        if draw(st.booleans()):
            noise = {"epsilon": draw(st.sampled_from([1, "1/2"]))}
            sensitivity = draw(st.sampled_from([None, 1, 3]))
        else:
            noise = {"scale": draw(st.sampled_from([1, "3/2", 9]))}
    case = Case(
        api=api,
        mech=mech,
        kind=kind,
        dtypes=dtypes,
        g=g,
        m=m,
        clip=clip,
        out=out,
        out_dtype=out_dtype,
        overflow=overflow,
        noise=noise,
        sensitivity=sensitivity,
        seed=draw(st.integers(0, 2**32)),
        columns=columns,
        extra_column=extra,
    )
    case.values = build(case, draw)
    return case


def _np_dtype(d: str) -> str:
    return {"pyint": "object", "pyfloat": "float64"}.get(d, d)


def _element(v: Fraction, d: str):
    """One value v = m*g in dtype ``d``, exactly."""
    kind = np.dtype(_np_dtype(d)).kind
    if d == "pyfloat" or kind == "f":
        x = np.array(float(v), dtype=_np_dtype(d))[()] if d != "pyfloat" else float(v)
        assert Fraction(x) == v if d == "pyfloat" else Fraction(*x.as_integer_ratio()) == v
        return x
    if v.denominator != 1:  # an object array with a fractional granularity: a Fraction
        return v
    return int(v)


def build(case: Case, draw) -> Any:
    """The input the case passes, holding the values m*g."""
    g = case.granularity or Fraction(1)
    exact = np.empty(case.m.shape, dtype=object)
    for index in np.ndindex(*case.m.shape):
        exact[index] = Fraction(case.m[index]) * g
    kind, d = case.kind, case.dtypes[0]
    if kind == "scalar":
        return _element(exact[()], d)
    if kind in ("list", "nested"):
        return (
            [_element(v, d) for v in exact]
            if kind == "list"
            else [[_element(v, d) for v in row] for row in exact]
        )
    if case.frame:
        data = {}
        if case.extra_column:
            data["region"] = [f"r{i}" for i in range(exact.shape[0])]
        for j, dj in enumerate(case.dtypes):
            column = np.array([_element(v, dj) for v in exact[:, j]], dtype=_np_dtype(dj))
            data[f"c{j}"] = column
        index = [f"row{i}" for i in range(exact.shape[0])] if kind == "frame" else None
        frame = pd.DataFrame(data, index=index)
        if kind == "dask_frame":
            return dd.from_pandas(frame, npartitions=draw(st.integers(1, 3)))
        return frame
    arr = np.empty(exact.shape, dtype=_np_dtype(d))
    for index in np.ndindex(*exact.shape):
        arr[index] = _element(exact[index], d)
    if kind == "series":
        return pd.Series(arr, index=[f"i{i}" for i in range(arr.size)], name="n")
    if kind == "fortran":
        return np.asfortranarray(arr)  # 2-D: strides in Fortran order
    if kind == "strided":  # a view every other row, backwards along the columns
        big = np.zeros((2 * arr.shape[0], arr.shape[1]), dtype=arr.dtype)
        big[::2, ::-1] = arr
        view = big[::2, ::-1]
        assert not view.flags.c_contiguous or view.size <= 1
        return view
    if kind == "dask_array":
        chunks = tuple(draw(st.integers(1, max(1, n))) for n in arr.shape)
        return da.from_array(arr, chunks=chunks)
    return arr


# ---- the model ----------------------------------------------------------------------------


def sigma2_or_scale(case: Case) -> Fraction:
    """The noise's parameter, computed here from what the case asks."""
    noise = {k: Fraction(v) for k, v in case.noise.items()}
    if "sigma2" in noise:
        return noise["sigma2"]
    if "scale" in noise:
        return noise["scale"]
    if "rho" in noise:  # k*||mu||^2 / (2 rho), k = 1
        s = 1 if case.sensitivity is None else case.sensitivity
        norm2 = s * s if isinstance(s, int) else sum(x * x for x in s)
        return Fraction(norm2) / (2 * noise["rho"])
    s = 1 if case.sensitivity is None else case.sensitivity
    return Fraction(s) / noise["epsilon"]  # pure epsilon-DP Laplace: t = Delta / epsilon


def draw_noise(case: Case, n: int, seed) -> list[int]:
    """n noise values from the same seeded generator the release takes."""
    if n == 0:
        return []
    sample = dgauss.sample_gaussian if case.mech == "gaussian" else dgauss.sample_laplace
    return [int(x) for x in sample(sigma2_or_scale(case), n, rng=np.random.default_rng(seed))]


def child(seed: int, i: int) -> np.random.Generator:
    """Dask block i's generator: child i of the seed (docs/dask.md)."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(i + 1)[i])


def refusals(case: Case) -> list[tuple[type, list[str]]]:
    """Every error the case may raise before any noise is drawn (the entry points check in
    their own orders), each with the parameters it must name; empty if it is valid."""
    g = case.granularity
    found = []
    if case.columns is not None and not case.frame:
        found.append((TypeError, ["columns"]))
    if case.dask and case.out is not None:
        found.append((TypeError, ["out"]))
    floats = any(np.dtype(_np_dtype(d)).kind == "f" for d in case.dtypes)
    if g is None and floats and (case.m.size or case.kind not in ("list", "nested")):
        found.append((TypeError, ["granularity"]))
    if case.clip is not None:
        lo, hi = (None if b is None else Fraction(b) for b in case.clip)
        if lo is not None and hi is not None:
            if lo > hi:
                found.append((ValueError, ["clip"]))
            elif g is not None and math.ceil(lo / g) > math.floor(hi / g):
                found.append((ValueError, ["clip", "granularity"]))
    if case.out is not None and case.overflow == "object" and case.out_dtype == "int64":
        found.append((TypeError, ["out", "overflow"]))
    return found


def lattice_clip(case: Case) -> tuple:
    """``clip`` in lattice steps: the multiples of g inside it."""
    if case.clip is None:
        return None, None
    g = case.granularity or Fraction(1)
    lo, hi = (None if b is None else Fraction(b) for b in case.clip)
    return (None if lo is None else math.ceil(lo / g), None if hi is None else math.floor(hi / g))


def model(case: Case, m_flat: list[int], noise: list[int]) -> tuple[list, str]:
    """The released values (C order) and the dtype they come in, or OverflowError."""
    lo, hi = lattice_clip(case)
    lattice = []
    for mi, ni in zip(m_flat, noise, strict=True):
        r = mi + ni
        if lo is not None:
            r = max(r, lo)
        if hi is not None:
            r = min(r, hi)
        lattice.append(r)
    g = case.granularity
    if g is not None:
        return [float(Fraction(r) * g) for r in lattice], "float64"
    fits = all(INT64_MIN <= r <= INT64_MAX for r in lattice)
    python_ints = case.kind in ("list", "nested", "scalar") and not all(
        INT64_MIN <= v <= INT64_MAX for v in m_flat
    )
    if case.dask:
        if case.dtypes[0] == "object" or case.overflow == "object":
            return lattice, "object"
    elif (case.dtypes[0] == "object" and not case.frame and case.kind != "series") or python_ints:
        return lattice, "object"  # exact Python ints in, exact Python ints out
    if fits:
        return lattice, "int64"
    if case.overflow == "object":
        return lattice, "object"
    raise OverflowError


# ---- making the release -------------------------------------------------------------------


def make_out(case: Case) -> np.ndarray | None:
    shape = case.m.shape
    if case.out is None:
        return None
    if case.out == "self":
        return case.values
    if case.out == "c":
        return np.full(shape, 7, dtype=case.out_dtype)
    if case.out == "f":
        return np.full(shape, 7, dtype=case.out_dtype, order="F")
    big = np.full(shape + (2,), 7, dtype=case.out_dtype)  # every other element
    return big[..., 1]


def release(case: Case, out, acc=None):
    """The release through the case's entry point; ``acc``: the accountant, when it is one."""
    rng = np.random.SeedSequence(case.seed) if case.dask else np.random.default_rng(case.seed)
    options = dict(rng=rng, out=out, clip=case.clip, overflow=case.overflow)
    if case.columns is not None:
        options["columns"] = case.columns
    setting = dict(case.noise)
    if case.sensitivity is not None:
        setting["sensitivity"] = case.sensitivity
    if case.g is not None:
        setting["granularity"] = case.g
    gaussian = case.mech == "gaussian"
    if case.api == "function":
        add = dgauss.add_gaussian_noise if gaussian else dgauss.add_laplace_noise
        return add(case.values, **setting, **options)
    if case.api == "mechanism":
        cls = dgauss.GaussianMechanism if gaussian else dgauss.LaplaceMechanism
        return cls(**setting)(case.values, **options)
    add = acc.add_gaussian_noise if gaussian else acc.add_laplace_noise
    return add(case.values, **setting, **options)


def snapshot(acc: dgauss.Accountant) -> tuple:
    return acc.to_json(), acc.spent.rho, repr(acc.remaining), len(acc.spent.releases)


def expected_rho(case: Case) -> Fraction:
    """The zCDP cost of one release: ||Delta||^2 / (2 sigma^2), or (Delta/t)^2 / 2."""
    s = 1 if case.sensitivity is None else case.sensitivity
    norm2 = s * s if isinstance(s, int) else sum(x * x for x in s)
    if case.mech == "gaussian":
        return Fraction(norm2) / (2 * sigma2_or_scale(case))
    return (Fraction(s) / sigma2_or_scale(case)) ** 2 / 2


def run(case: Case) -> None:
    """Release the case and check it against the model (or the refusal it must meet)."""
    acc = dgauss.Accountant(rho=10**6) if case.api == "accountant" else None
    before = snapshot(acc) if acc is not None else None
    out = make_out(case)
    refused = refusals(case)
    event(f"{case.kind}: {'refused' if refused else 'released'}")
    if refused:
        with pytest.raises((TypeError, ValueError)) as info:
            release(case, out, acc)
        assert any(
            type(info.value) is error and all(name in str(info.value) for name in names)
            for error, names in refused
        ), (refused, repr(info.value))
        if acc is not None:
            assert snapshot(acc) == before  # nothing was spent
        return
    m_flat = [int(v) for v in noised(case).reshape(-1)]
    if case.dask:
        return run_dask(case, acc, before)
    noise = draw_noise(case, len(m_flat), case.seed)
    try:
        want, dtype = model(case, m_flat, noise)
    except OverflowError:
        want = None
    if want is None or (case.out_dtype == "int64" and not all(_fits(v) for v in want)):
        # after the draw: the release is counted (whether it overflows depends on the values
        # and the noise, so the error is itself an output)
        with pytest.raises(OverflowError, match="int64"):
            release(case, out, acc)
        if acc is not None:
            assert len(acc.spent.releases) == 1
        return
    got = release(case, out, acc)
    if acc is not None:
        assert len(acc.spent.releases) == 1 and acc.spent.rho == expected_rho(case)
    check(case, got, out, want, dtype)


def noised(case: Case) -> np.ndarray:
    """The lattice integers as the release sees them: a frame's in the order of columns=."""
    if case.frame and case.columns is not None:
        return case.m[:, [int(c[1:]) for c in case.columns]]
    return case.m


def _fits(v) -> bool:
    return INT64_MIN <= v <= INT64_MAX


def check(case: Case, got, out, want: list, dtype: str) -> None:
    shape = case.m.shape
    if out is not None:
        assert got is out
        assert out.tolist() == np.array(want, dtype=object).reshape(shape).tolist()
        return
    if case.kind == "scalar":
        assert type(got) is (float if case.g is not None else int)
        assert got == want[0]
        return
    if case.kind == "series":
        assert isinstance(got, pd.Series) and got.name == "n"
        assert list(got.index) == list(case.values.index)
        assert str(got.dtype) == dtype and got.tolist() == want
        return
    if case.kind == "frame":
        check_frame(case, case.values, got, want, dtype)
        return
    assert isinstance(got, np.ndarray) and got.shape == shape and got.dtype == np.dtype(dtype)
    assert got.tolist() == np.array(want, dtype=object).reshape(shape).tolist()
    if dtype == "object":
        assert all(type(v) is int for v in got.reshape(-1))


def check_frame(case: Case, given, got, want: list, dtype: str) -> None:
    """A noised frame: index and columns kept, the chosen columns noised in C order over
    (rows, chosen columns), the others as they were."""
    assert isinstance(got, pd.DataFrame)
    assert list(got.index) == list(given.index) and list(got.columns) == list(given.columns)
    chosen = case.columns if case.columns is not None else list(given.columns)
    rows = len(given)
    for j, c in enumerate(chosen):
        assert str(got[c].dtype) == dtype
        assert got[c].tolist() == [want[i * len(chosen) + j] for i in range(rows)]
    for c in given.columns:
        if c not in chosen:
            assert got[c].tolist() == given[c].tolist()


def run_dask(case: Case, acc, before) -> None:
    """A Dask collection: counted at once, noised when computed, block by block."""
    lazy = release(case, None, acc)
    if acc is not None:
        assert len(acc.spent.releases) == 1 and snapshot(acc) != before
    if case.kind == "dask_array":
        blocks = []  # (slices, lattice of the block) in C order over the block grid
        starts = [np.cumsum((0,) + c) for c in case.values.chunks]
        for block_id in np.ndindex(*case.values.numblocks):
            where = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, block_id, strict=True))
            blocks.append((where, case.m[where]))
    else:
        frame = case.values
        chosen = (
            case.columns
            if case.columns is not None
            else [c for c in frame.columns if c != "region"]
        )
        blocks, start = [], 0
        for i in range(frame.npartitions):
            rows = len(frame.get_partition(i).compute())
            order = [int(c[1:]) for c in chosen]
            blocks.append((slice(start, start + rows), case.m[start : start + rows][:, order]))
            start += rows
    want_blocks = []
    overflow = False
    dtype = None
    for i, (where, m_block) in enumerate(blocks):
        flat = [int(v) for v in m_block.reshape(-1)]
        noise = draw_noise(case, len(flat), child(case.seed, i)) if flat else []
        try:
            values, dtype = model(case, flat, noise)
        except OverflowError:
            overflow = True
            continue
        want_blocks.append((where, np.array(values, dtype=object).reshape(m_block.shape)))
    if overflow:
        with pytest.raises(OverflowError, match="int64"):
            lazy.compute(scheduler="sync")
        return
    got = lazy.compute(scheduler="sync")
    if case.kind == "dask_array":
        assert isinstance(got, np.ndarray) and got.shape == case.m.shape
        want = np.empty(case.m.shape, dtype=object)
        for where, values in want_blocks:
            want[where] = values
        assert got.dtype == np.dtype(dtype or lazy.dtype)
        assert got.tolist() == want.tolist()
        return
    flat = []
    for _, values in want_blocks:
        flat.extend(values.reshape(-1).tolist())
    check_frame(case, case.values.compute(), got, flat, dtype)


# ---- the properties -----------------------------------------------------------------------


@SET
@given(cases(kinds=["0d", "1d", "2d", "3d", "fortran", "strided"]))
def test_numpy_arrays_of_every_layout_match_the_model(case):
    run(case)


@settings(SET, max_examples=120)
@given(cases(kinds=["scalar", "list", "nested"]))
def test_python_scalars_and_lists_match_the_model(case):
    run(case)


@settings(SET, max_examples=150)
@given(cases(kinds=["series", "frame"]))
def test_pandas_series_and_frames_match_the_model(case):
    run(case)


@needs_dask
@FEW
@given(cases(kinds=["dask_array"]))
def test_dask_arrays_match_the_model_block_by_block(case):
    run(case)


@needs_dask
@settings(FEW, max_examples=25)
@given(cases(kinds=["dask_frame"]))
def test_dask_dataframes_match_the_model_partition_by_partition(case):
    run(case)


# ---- a call that fails on its input spends nothing ------------------------------------------


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"region": ["a", "b"], "n": [3, 4], "f": [1.0, np.nan]})


def _read_only() -> np.ndarray:
    out = np.empty(2, dtype=np.int64)
    out.flags.writeable = False
    return out


BAD_INPUTS = [  # (what, values, options, what the error must name)
    ("out of another shape", [1, 2], {"out": np.empty(3, np.int64)}, ["out", "shape"]),
    ("out not an array", [1, 2], {"out": [0, 0]}, ["out"]),
    ("out of a narrow dtype", [1, 2], {"out": np.empty(2, np.int32)}, ["out", "int32"]),
    ("out read-only", [1, 2], {"out": _read_only()}, ["out", "writeable"]),
    (
        "out int64 with overflow='object'",
        [1, 2],
        {"out": np.empty(2, np.int64), "overflow": "object"},
        ["out", "overflow"],
    ),
    (
        "out not float64 on a lattice",
        [1, 2],
        {"out": np.empty(2, np.int64), "granularity": 1},
        ["out", "float64"],
    ),
    ("bool values", np.array([[True, False]]), {}, ["values", "bool"]),
    ("text values", np.array([["1", "2"]]), {}, ["values"]),
    ("complex values", np.array([1j]), {}, ["values"]),
    ("floats without a granularity", np.ones((2, 2)), {}, ["granularity"]),
    ("a float off the lattice", np.array([[0.5, 0.3]]), {"granularity": "0.5"}, ["granularity"]),
    ("a value not finite", np.array([[1.0, np.inf]]), {"granularity": 1}, ["finite"]),
    ("a value beyond float64", [10**400], {"granularity": 1}, ["float64"]),
    ("text on a lattice", np.array(["1", 2], dtype=object), {"granularity": 1}, ["values"]),
    ("clip not a pair", [1, 2], {"clip": 5}, ["clip"]),
    ("clip lo > hi", [1, 2], {"clip": (3, 1)}, ["clip"]),
    ("clip not an integer", [1, 2], {"clip": ("0.5", None)}, ["clip[0]"]),
    (
        "clip holding no multiple of g",
        [1.0],
        {"clip": ("0.2", "0.4"), "granularity": "0.5"},
        ["clip", "granularity"],
    ),
    ("columns on an array", [1, 2], {"columns": ["n"]}, ["columns"]),
    ("columns naming no column", _frame(), {"columns": ["x"]}, ["columns", "'x'"]),
    ("columns choosing text", _frame(), {"columns": ["region"]}, ["region"]),
    ("a missing value", _frame(), {"columns": ["n", "f"], "granularity": 1}, ["'f'", "missing"]),
    ("sensitivity zero", [1, 2], {"sensitivity": 0}, ["sensitivity"]),
    ("an unknown overflow policy", [1, 2], {"overflow": "wrap"}, ["overflow"]),
    ("rng not a generator", [1, 2], {"rng": "seed"}, ["rng"]),
    ("workers zero", [1, 2], {"workers": 0}, ["workers"]),
    (
        "workers with a seeded rng",
        [1, 2],
        {"workers": 2, "rng": np.random.default_rng(1)},
        ["workers", "rng"],
    ),
]


def _exactly_one(mech: str) -> tuple[dgauss.Accountant, dict]:
    """An accountant whose budget holds exactly one release of the noise returned."""
    if mech == "gaussian":
        return dgauss.Accountant(rho=Fraction(1, 4)), {"sigma2": 2}  # rho = 1/(2*2)
    return dgauss.Accountant(rho=Fraction(1, 8)), {"epsilon": "1/2"}  # rho = epsilon^2/2


@pytest.mark.parametrize("mech", ["gaussian", "laplace"])
@pytest.mark.parametrize("what, values, options, names", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_a_call_refused_on_its_input_spends_nothing(mech, what, values, options, names):
    acc, noise = _exactly_one(mech)
    before = snapshot(acc)
    add = acc.add_gaussian_noise if mech == "gaussian" else acc.add_laplace_noise
    with pytest.raises((TypeError, ValueError)) as info:
        add(values, **noise, **options)
    for name in names:
        assert name in str(info.value), str(info.value)
    assert snapshot(acc) == before
    add([1, 2], **noise)  # the whole budget is still there: one release fits, and no more
    with pytest.raises(PrivacyBudgetError):
        add([1, 2], **noise)
    # a mechanism made for one release still has it after the refused call
    cls = dgauss.GaussianMechanism if mech == "gaussian" else dgauss.LaplaceMechanism
    setting = {k: v for k, v in options.items() if k in ("sensitivity", "granularity")}
    try:
        mechanism = cls(**noise, **setting)
    except (TypeError, ValueError):  # a Laplace sensitivity vector: refused when made
        return
    with pytest.raises((TypeError, ValueError)):
        mechanism(values, **{k: v for k, v in options.items() if k not in setting})
    mechanism(np.zeros(3, dtype=np.int64))
    with pytest.raises(PrivacyBudgetError):
        mechanism(np.zeros(3, dtype=np.int64))


def _dask_bad_inputs() -> list:
    if not HAVE_DASK:
        return []
    ints = da.from_array(np.arange(6).reshape(2, 3), chunks=(1, 2))
    floats = da.from_array(np.ones((2, 3)), chunks=(1, 2))
    frame = dd.from_pandas(_frame(), npartitions=2)
    seed = np.random.SeedSequence(1)
    return [
        ("out", ints, {"out": np.empty((2, 3), np.int64)}, ["out"]),
        ("columns on an array", ints, {"columns": ["n"]}, ["columns"]),
        ("floats without a granularity", floats, {}, ["granularity"]),
        ("clip lo > hi", ints, {"clip": (3, 1)}, ["clip"]),
        (
            "clip holding no multiple of g",
            floats,
            {"clip": ("0.2", "0.4"), "granularity": "0.5"},
            ["clip"],
        ),
        ("an unknown overflow policy", ints, {"overflow": "wrap"}, ["overflow"]),
        ("a Generator", ints, {"rng": np.random.default_rng(1)}, ["rng"]),
        ("workers with a seed", ints, {"workers": 2, "rng": seed}, ["workers"]),
        ("sensitivity zero", ints, {"sensitivity": 0}, ["sensitivity"]),
        ("columns naming no column", frame, {"columns": ["x"]}, ["columns"]),
        ("columns choosing text", frame, {"columns": ["region"]}, ["region"]),
    ]


@needs_dask
@pytest.mark.parametrize("mech", ["gaussian", "laplace"])
@pytest.mark.parametrize("case", range(11))
def test_a_dask_call_refused_on_its_input_spends_nothing(mech, case):
    """As for in-memory inputs: every check a Dask collection allows before it is computed
    (the dtypes, not the values) runs before the release is counted."""
    what, values, options, names = _dask_bad_inputs()[case]
    acc, noise = _exactly_one(mech)
    before = snapshot(acc)
    add = acc.add_gaussian_noise if mech == "gaussian" else acc.add_laplace_noise
    with pytest.raises((TypeError, ValueError)) as info:
        add(values, **noise, **options)
    for name in names:
        assert name in str(info.value), (what, str(info.value))
    assert snapshot(acc) == before
    add(da.zeros(3, dtype=np.int64, chunks=2), **noise)  # still exactly one release left
    with pytest.raises(PrivacyBudgetError):
        add(da.zeros(3, dtype=np.int64, chunks=2), **noise)


# ---- what can still fail after the draw -----------------------------------------------------


def _seed_where(mech_noise, n: int, want) -> tuple[int, list[int]]:
    """A seed whose n noise values satisfy ``want`` (found by drawing them here)."""
    for seed in range(1000):
        noise = [int(x) for x in mech_noise(n, np.random.default_rng(seed))]
        if want(noise):
            return seed, noise
    raise AssertionError("no seed found")


@pytest.mark.parametrize("layout", ["c", "strided", "self"])
def test_an_int64_overflow_after_the_draw_is_charged_and_writes_no_value(layout):
    """values + noise beyond int64 (overflow="raise") is found only once the noise is drawn:
    the release is counted (the error depends on the values and the noise: it is itself an
    output), and ``out`` holds either what it held or the noise alone, never a value."""
    values = np.array([INT64_MAX - 1, 5, INT64_MIN + 1, 7], dtype=np.int64)
    seed, noise = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(9, n, rng=rng), 4, lambda z: z[0] > 1 and z[2] < 0
    )
    acc = dgauss.Accountant(rho=Fraction(1, 18))  # exactly one release of sigma2 = 9
    kept = values.copy()
    if layout == "self":
        out = values
    elif layout == "c":
        out = np.full(4, -3, dtype=np.int64)
    else:
        out = np.full((4, 2), -3, dtype=np.int64)[:, 1]
    before = out.copy()
    with pytest.raises(OverflowError, match="int64"):
        acc.add_gaussian_noise(values, sigma2=9, rng=np.random.default_rng(seed), out=out)
    assert len(acc.spent.releases) == 1 and acc.spent.rho == Fraction(1, 18)
    with pytest.raises(PrivacyBudgetError):
        acc.add_gaussian_noise([1], sigma2=9)
    assert values.tolist() == kept.tolist()  # the input is untouched, out=values too
    assert out.tolist() in (before.tolist(), noise)  # its old contents, or the noise alone
    # with overflow="object" the same draw is exact
    got = dgauss.add_gaussian_noise(
        values, sigma2=9, rng=np.random.default_rng(seed), overflow="object"
    )
    assert got.dtype == object and got.tolist() == [
        int(v) + z for v, z in zip(kept, noise, strict=True)
    ]


def test_a_result_beyond_float64_after_the_draw_raises_and_is_charged():
    """With a granularity the result is float64: a value near its end plus noise may leave
    it, found after the draw (OverflowError; the release is counted)."""
    g = Fraction(2) ** 1000
    values = [float(2**23 * g)]  # 2**1023, the lattice point 2**23; float64 ends near 2**1024
    seed, noise = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(2**46, n, rng=rng), 1, lambda z: z[0] >= 2**23
    )
    acc = dgauss.Accountant(rho=1)
    with pytest.raises(OverflowError, match="float64"):
        acc.add_gaussian_noise(values, sigma2=2**46, granularity=g, rng=np.random.default_rng(seed))
    assert len(acc.spent.releases) == 1
    seed, noise = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(2**46, n, rng=rng), 1, lambda z: z[0] < 0
    )
    got = dgauss.add_gaussian_noise(
        values, sigma2=2**46, granularity=g, rng=np.random.default_rng(seed)
    )
    assert got.tolist() == [float((2**23 + noise[0]) * g)]


@needs_dask
def test_a_dask_value_off_the_lattice_fails_when_computed_after_the_release_is_counted():
    """A Dask collection's values are read only when computed: a value off the lattice (or
    missing) raises then, and the release was counted when the graph was built."""
    acc = dgauss.Accountant(rho=1)
    lazy = acc.add_gaussian_noise(
        da.from_array(np.array([0.5, 0.3]), chunks=1), sigma2=2, granularity="0.5"
    )
    assert len(acc.spent.releases) == 1
    with pytest.raises(ValueError, match="granularity"):
        lazy.compute(scheduler="sync")
    frame = dd.from_pandas(pd.DataFrame({"n": [1.0, np.nan, 3.0]}), npartitions=2)
    lazy = acc.add_gaussian_noise(frame, sigma2=2, granularity=1)
    assert len(acc.spent.releases) == 2
    with pytest.raises(ValueError, match="missing"):
        lazy.compute(scheduler="sync")


# ---- cases the matrix does not draw -------------------------------------------------------


def test_a_frame_of_ints_beside_floats_is_read_exactly():
    """pandas joins an int64 column with a float64 one as float64, rounding 2**53 + 1; the
    values are read column by column instead, exactly."""
    frame = pd.DataFrame({"big": [2**53 + 1, 2**60 + 1], "half": [0.5, -1.5]})
    rng = np.random.default_rng(5)
    got = dgauss.add_gaussian_noise(frame, sigma2=4, granularity="0.5", rng=rng)
    noise = [int(z) for z in dgauss.sample_gaussian(4, 4, rng=np.random.default_rng(5))]
    exact = [2**53 + 1, Fraction(1, 2), 2**60 + 1, Fraction(-3, 2)]  # C order: row by row
    want = [float(Fraction(v) + Fraction(z, 2)) for v, z in zip(exact, noise, strict=True)]
    assert got["big"].tolist() == want[0::2] and got["half"].tolist() == want[1::2]
    # a value off the lattice is found in the int column too (it was rounded onto it before)
    with pytest.raises(ValueError, match="lattice"):
        dgauss.add_gaussian_noise(
            pd.DataFrame({"big": [2**53 + 1], "x": [2.0]}), sigma2=4, granularity=2
        )


def test_a_frame_of_int64_beside_uint64_is_integers_not_floats():
    frame = pd.DataFrame({"u": np.array([2**63, 1], dtype=np.uint64), "i": [-1, 2]})
    got = dgauss.add_gaussian_noise(frame, sigma2=4, rng=np.random.default_rng(2))
    noise = [int(z) for z in dgauss.sample_gaussian(4, 4, rng=np.random.default_rng(2))]
    assert got["u"].tolist() == [2**63 + noise[0], 1 + noise[2]]
    assert got["i"].tolist() == [-1 + noise[1], 2 + noise[3]]


@pytest.mark.parametrize("value", [Fraction(7, 2), "decimal"])
def test_an_exact_scalar_on_a_lattice(value):
    import decimal

    if value == "decimal":
        value = decimal.Decimal("3.5")
    got = dgauss.add_laplace_noise(value, scale=3, granularity="0.5", rng=np.random.default_rng(4))
    z = int(dgauss.sample_laplace(3, 1, rng=np.random.default_rng(4))[0])
    assert type(got) is float and got == float(Fraction(7, 2) + Fraction(z, 2))
    with pytest.raises(TypeError, match="integers"):
        dgauss.add_laplace_noise(value, scale=3)  # without a granularity: integers only


def test_clip_with_a_granularity_is_in_the_values_units_on_the_lattice():
    """clip=(lo, hi) with a granularity g: the values' units, narrowed to the multiples of g
    inside [lo, hi] (the result stays on the lattice)."""
    values = np.zeros((50, 2))
    got = dgauss.add_gaussian_noise(values, sigma2=400, granularity="0.5", clip=("-1.2", "2.9"))
    assert got.min() == -1.0 and got.max() == 2.5
    assert set((got * 2).ravel().tolist()) <= set(range(-2, 6))


def test_clip_beyond_int64_on_the_far_side():
    got = dgauss.add_gaussian_noise(np.array([1, 2]), sigma2=1, clip=(2**70, None))
    assert got.dtype == object and got.tolist() == [2**70, 2**70]
    got = dgauss.add_gaussian_noise(np.array([1, 2]), sigma2=1, clip=(-(2**70), 2**70))
    assert got.dtype == np.int64


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_a_lattice_beyond_int64_is_no_overflow_with_a_granularity(dtype):
    """With a granularity the result is float64: the lattice integers may leave int64 on the
    way (overflow= is about int64 results) and come back as the double nearest the sum."""
    values = np.array([INT64_MAX, 2**63 + 5 if dtype == "uint64" else INT64_MIN], dtype=dtype)
    seed, noise = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(9, n, rng=rng), 2, lambda z: z[0] > 0 and z[1] < 0
    )
    got = dgauss.add_gaussian_noise(
        values, sigma2=9, granularity=1, rng=np.random.default_rng(seed)
    )
    assert got.dtype == np.float64
    assert got.tolist() == [float(int(v) + z) for v, z in zip(values, noise, strict=True)]


def test_uint64_values_beyond_int64_whose_sums_fit_give_int64():
    """overflow="raise" refuses results beyond int64, not values: 2**63 plus negative noise is
    an int64 result."""
    values = np.array([2**63 + 1, 2**63, 3], dtype=np.uint64)
    seed, noise = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(9, n, rng=rng), 3, lambda z: max(z[:2]) < -1
    )
    got = dgauss.add_gaussian_noise(values, sigma2=9, rng=np.random.default_rng(seed))
    assert got.dtype == np.int64
    assert got.tolist() == [int(v) + z for v, z in zip(values, noise, strict=True)]
    seed, _ = _seed_where(
        lambda n, rng: dgauss.sample_gaussian(9, n, rng=rng), 3, lambda z: z[1] >= 0
    )
    with pytest.raises(OverflowError, match="int64"):  # a result beyond int64 is refused
        dgauss.add_gaussian_noise(values, sigma2=9, rng=np.random.default_rng(seed))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_ndarray_subclasses_are_plain_arrays_and_masked_values_are_refused():
    matrix = np.matrix([[1.0, 2.5], [3.0, 4.0]])
    got = dgauss.add_gaussian_noise(
        matrix, sigma2=4, granularity="0.5", rng=np.random.default_rng(3)
    )
    noise = dgauss.sample_gaussian(4, 4, rng=np.random.default_rng(3)).tolist()
    assert type(got) is np.ndarray and got.shape == (2, 2)
    assert got.ravel().tolist() == [v + z / 2 for v, z in zip([1, 2.5, 3, 4], noise, strict=True)]
    plain = np.ma.masked_array([[1, 2], [3, 4]], mask=False)
    assert dgauss.add_laplace_noise(plain, scale=1).shape == (2, 2)
    acc = dgauss.Accountant(rho=1)
    with pytest.raises(ValueError, match="values has 1 masked value"):
        acc.add_laplace_noise(np.ma.masked_array([[1, 2], [3, 4]], mask=[[0, 1], [0, 0]]), scale=1)
    assert len(acc.spent.releases) == 0


def test_pandas_extension_dtypes_on_a_lattice():
    frame = pd.DataFrame(
        {"n": pd.array([1, 2], dtype="Int64"), "x": pd.array([1.5, -2.0], dtype="Float64")}
    )
    got = dgauss.add_gaussian_noise(
        frame, sigma2=4, granularity="0.5", rng=np.random.default_rng(6)
    )
    noise = dgauss.sample_gaussian(4, 4, rng=np.random.default_rng(6)).tolist()
    assert got["n"].tolist() == [1 + noise[0] / 2, 2 + noise[2] / 2]
    assert got["x"].tolist() == [1.5 + noise[1] / 2, -2.0 + noise[3] / 2]
