"""The discrete Laplace by inversion (``method="inversion"``) at scales 1/64 <= t < 2**8,
against an independent model.

|X| for X ~ Lap_Z(0, t) is the number of thresholds T_x = P[|X| >= x] = 2 p**x / (1 + p),
p = exp(-1/t), x >= 1, above a lazy uniform R = 0.b1 b2 ..., read until no threshold shares
R's first j digits; then one sign bit (1: negative) when |X| > 0 (docs/contract.md, item 9).
Below LAPLACE_BLOCKED_MIN = 2**8 the compiled core keeps every word floor(2**64 T_x), x = 1 ..
K (K < 11,400), in a table (an ``_InvTable``) with a guide on R's top bits (csrc/dg_inv.h);
past bit 64 (a tie with a word, or R's 64 bits all zero) it calls dgauss._inversion.invert
with LaplaceFloors; the oracle reads one bit at a time with LaplaceFloors.  Scales 2**8 ..
2**20 are drawn by blocked inversion, other bits, tested in tests/test_laplace_blocked.py;
here only the overall range 1/64 .. 2**20 (method="auto", the range errors) reaches them.

Everything is compared with ``Model``: T_x enclosed from scratch with MPFR and directed rounding
(tests/_laplace_model.py, as for test_laplace_blocked.py's model; no code shared with dgauss),
giving exact floor(2**J T_x), J = 256, the rule of item 9 and rigorous bounds on the pmf.  The
file covers

1. the words, up to the largest plain scales and the edge at 2**8 (a plain table just below
   it, none at it), the GMP fallback and LaplaceFloors at 64, 128 and 256 bits;
2. the same bits: core = oracle on seeded generators (values, bits used, generator state);
3. every fallback forced by tapes (a 64-bit tie, mid-word, R's 64 zeros, R at a word or
   next to it and at the guide's bucket edges, a short last word, running out), predicted by
   the model, with the step past bit 64 seen to be taken;
4. every bit prefix to 1e-4 (dgauss.testing's checker and the model's exact masses), and for
   large tables every prefix inside windows of R around chosen thresholds;
5. large samples from the OS; 6. errors; 7. the bits read against the entropy.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from gmpy2 import mpq

import _inversion_tapes as tapes
import dgauss
from _inversion_tapes import BITGENS, TapeModel
from _inversion_tapes import bits as _bits
from _inversion_tapes import first_sample as _first_sample
from _inversion_tapes import tie as _tie
from _inversion_tapes import word_bits as _word_bits
from _laplace_model import LaplaceTails, entropy_bits
from _laplace_model import pmf as laplace_pmf
from _stats import ALPHA, chi2_gof
from dgauss import _core, _inversion, _methods, reference
from dgauss._kinds import Kind
from dgauss.testing import (
    DecisionTape,
    Exhausted,
    Tape,
    check,
    enumerate_bits,
    enumerate_sampler,
)

LAP = Kind.DISCRETE_LAPLACE
MIN, MAX = Fraction(1, 64), Fraction(2**20)
#: The first scale drawn by blocked inversion (tests/test_laplace_blocked.py).
BLOCKED_MIN = Fraction(2**8)
#: The largest plain scales tested: just below BLOCKED_MIN.
EDGE = BLOCKED_MIN - Fraction(1, 7)
EDGE_30 = BLOCKED_MIN - Fraction(1, 2**30)


def test_constants():
    assert (_methods.LAPLACE_INVERSION_MIN, _methods.LAPLACE_BLOCKED_MAX) == (MIN, MAX)
    assert _methods.LAPLACE_INVERSION_MAX == Fraction(2**40)  # enveloped from MAX on
    assert _methods.LAPLACE_BLOCKED_MIN == BLOCKED_MIN


# --------------------------------------------------------------------------------------------
# The independent model: T_x enclosed with MPFR, directed rounding
# --------------------------------------------------------------------------------------------

#: Bits of the model's exact floors floor(2**J T_x).
J = 256


class Model(LaplaceTails, TapeModel):
    """Lap_Z(0, t) from scratch (_laplace_model.LaplaceTails): p**u and T_x = 2 p**x / (1 + p)
    enclosed with every operation rounded the safe way, at J + 128 bits; ``floor(x)`` =
    floor(2**J T_x), checked decided (T_0 = 1); ``first_below(c)``: the first x >= 1 with
    floor(2**J T_x) < c; ``mass(y)``: bounds on P[|X| = y]."""

    def __init__(self, scale: Fraction):
        super().__init__(scale, J, J + 128)

    def word(self, x: int, p: int = 64) -> int:
        """floor(2**p T_x), p <= J."""
        return self.floor(x) >> (J - p)

    def last(self, p: int = 64) -> int:
        """K: the last x with floor(2**p T_x) > 0."""
        return self.first_below(1 << (J - p)) - 1

    def shares(self, a: int, j: int) -> bool:
        """Whether some threshold has R's first j digits a (a = 0: always, thresholds -> 0)."""
        assert j <= J, "the model needs more bits"
        if a == 0:
            return True
        return self.floor(self.first_below((a + 1) << (J - j))) >> (J - j) == a

    def decide(self, a: int, j: int) -> int | None:
        """The rule after R's first j bits a: |X| = #{x: floor(2**j T_x) > a}, or None."""
        if self.shares(a, j):
            return None
        return self.first_below((a + 1) << (J - j)) - 1

    def rule(self, bits: str) -> tuple[int, int] | None:
        """(|X|, bits read) for R = 0.bits..., or None when the bits run out first: decide()
        at the first j no threshold shares (found by bisection: _inversion_tapes.inversion_rule)."""
        return tapes.inversion_rule(bits, self.shares, self.decide, J)

    def digits(self, x: int, i: int) -> str:
        """T_x's first i binary digits."""
        return format(self.floor(x) >> (J - i), f"0{i}b")

    def bit(self, x: int, i: int) -> str:
        return str((self.floor(x) >> (J - i)) & 1)

    def window_masses(self, w: int, k: int) -> dict[int, tuple[mpq, mpq]]:
        """For R uniform in the window [w, w + 1) 2**-k (w >= 1): bounds on P[|X| = y | R in
        it] = |[T_{y+1}, T_y) n window| 2**k for every y it can give."""
        y_min = self.first_below((w + 1) << (J - k)) - 1  # thresholds >= the window's top
        y_max = self.first_below(w << (J - k)) - 1  # thresholds >= its bottom
        top, bottom = mpq(w + 1, 1 << k), mpq(w, 1 << k)
        out = {}
        for y in range(y_min, y_max + 1):
            a_lo, a_hi = (mpq(v) for v in self.threshold(y))
            b_lo, b_hi = (mpq(v) for v in self.threshold(y + 1))
            lo = max(mpq(0), min(a_lo, top) - max(b_hi, bottom))
            hi = max(mpq(0), min(a_hi, top) - max(b_lo, bottom))
            out[y] = (lo * (1 << k), hi * (1 << k))
        return out


@functools.cache
def model(scale) -> Model:
    return Model(Fraction(scale))


def test_model_agrees_with_the_closed_form():
    """The model's pmf bounds hold tanh(1/(2t)) exp(-y/t) (twice it for y > 0) at 50 digits
    (_laplace_model.pmf), are 2**-300 tight, and sum to 1; its K is the closed form's."""
    for scale in (Fraction(1, 4), Fraction(7, 3), 100, EDGE, 10**6):
        m = model(scale)
        for y in (0, 1, 2, 7, int(3 * float(scale))):
            true = laplace_pmf(scale, y)
            lo, hi = m.mass(y)
            assert float(lo) <= true * (1 + 1e-12) and true <= float(hi) * (1 + 1e-12)
            assert hi - lo < mpq(1, 2**300)
        k = m.last()
        t = float(scale)
        assert abs(k - t * (65 * math.log(2) - math.log(1 + math.exp(-1 / t)))) < 1.5
        total_lo = sum(m.mass(y)[0] for y in range(min(k, 400)))
        assert total_lo > 1 - (2 * math.exp(-min(k, 400) / t) + 1e-15)


# --------------------------------------------------------------------------------------------
# 1. The words
# --------------------------------------------------------------------------------------------


def _table(scale, fixed_point=True):
    """The core's table for a plain scale: an _InvTable of every word."""
    scale = Fraction(scale)
    tab = _core.laplace_table(scale.numerator, scale.denominator, fixed_point)
    assert type(tab).__name__ == "_InvTable", (scale, type(tab).__name__)
    return tab


def _words(scale, xs) -> list[int]:
    """floor(2**64 T_x) for the x in xs as the core's table holds them (0 past K)."""
    scale = Fraction(scale)
    return _core.laplace_words(scale.numerator, scale.denominator, list(xs))


_SEEDED = np.random.default_rng(20241125)
RANDOM_SCALES = [  # log-uniform in [1/64, 2**8) (and two among the large tables, [2**7, 2**8))
    min(EDGE_30, max(MIN, Fraction(math.ceil(2 ** (u + v)), int(2**v))))
    for u, v in zip(
        [*_SEEDED.uniform(-6, 8, 5), *_SEEDED.uniform(7, 8, 2)],
        _SEEDED.uniform(6, 30, 7),  # denominators 2**6 .. 2**30 (none rounds to below 1/64)
        strict=True,
    )
]
#: Plain scales from the smallest (no word) to the largest (K = 11,350); from 128 on (K over
#: 5,000) the large tables.
PLAIN_SCALES = [
    MIN,
    Fraction(1, 4),
    Fraction(1),
    Fraction(7, 3),
    Fraction(90),
    Fraction(128),
    Fraction(12345, 71),
    Fraction(200),
    Fraction(250),
    Fraction(255),
    EDGE,
]
WORD_SCALES = PLAIN_SCALES + RANDOM_SCALES


def test_plain_tables_up_to_the_blocked_edge():
    """Every scale below 2**8, up to the largest just below it, has a plain table: an
    _InvTable of exactly the model's K words, built as fixed_point asks, whose guide has
    2**guide_bits entries; scale 1/64 has no word at all (T_1 ~ 2 exp(-64) < 2**-64).  From
    2**8 on (blocked inversion, the old edge 2**12 included) there is no plain table."""
    for scale in [*PLAIN_SCALES, EDGE_30, *RANDOM_SCALES]:
        k = model(scale).last()
        for fixed_point in (True, False) if k < 5000 else (True,):
            tab = _table(scale, fixed_point)
            assert tab.count == k and tab.fixed_point == fixed_point, (scale, fixed_point)
            assert tab.thr.size == k + 2 and tab.guide.size == 1 << tab.guide_bits, scale
    assert model(EDGE_30).last() == 11_357  # about 44.36 t: T_x >= 2**-64
    assert _table(MIN).count == 0 and _table(MIN).thr.tolist() == [2**64 - 1, 0]
    assert all(scale < BLOCKED_MIN for scale in RANDOM_SCALES)
    blocked = [BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 2**30), BLOCKED_MIN + Fraction(1, 7)]
    for scale in [*blocked, 300, 1000, 2**12 - Fraction(1, 7), 2**12, 10**4, MAX]:
        _assert_no_plain_table(scale)


def _assert_no_plain_table(scale) -> None:
    """From 2**8 on, laplace_table gives blocked inversion's tables, not an _InvTable of
    every word."""
    scale = Fraction(scale)
    tab = _core.laplace_table(scale.numerator, scale.denominator)
    assert type(tab).__name__ == "_BlockedTable", scale


def _word_points(k: int, gen) -> list[int]:
    """x = 1, 2, 3, K, K + 1, K + 2 and random x."""
    xs = {1, 2, 3, k, k + 1, k + 2, *(int(v) for v in gen.integers(1, k + 2, 40))}
    return sorted(x for x in xs if x >= 1)


@pytest.mark.parametrize("scale", WORD_SCALES, ids=str)
def test_core_words_are_the_exact_floors(scale):
    """The words of the core's table = LaplaceFloors(scale, 64).word(x) = the model's floor,
    at x = 1, 2, 3, K, K + 1 (0) and random x; K is the model's: thr[0] = 2**64 - 1,
    thr[K] > 0, thr[K + 1] = 0, decreasing.  Every table word for word (K <= 11,357); small
    tables = the table from fixed_point=False, large ones (K > 5,000) = the GMP words at every x
    (the fallback's, checked at points below)."""
    scale = Fraction(scale)
    m = model(scale)
    k = m.last()
    gen = np.random.default_rng(k)
    xs = _word_points(k, gen)
    floors = _inversion.LaplaceFloors(scale, 64)
    core = _words(scale, xs)
    assert core == [floors.word(x) for x in xs] == [m.word(x) for x in xs]
    tab = _table(scale)
    thr = tab.thr.tolist()
    assert core == [thr[x] if x < len(thr) else 0 for x in xs]
    assert tab.count == k and thr[0] == 2**64 - 1 and thr[-1] == 0 and len(thr) == k + 2
    assert thr[k] != 0 or k == 0
    assert all(a >= b for a, b in zip(thr, thr[1:], strict=False))
    assert thr[1:-1] == [m.word(x) for x in range(1, k + 1)]
    if k <= 5000:
        slow = _table(scale, False)
        assert slow.thr.tolist() == thr and slow.guide.tolist() == tab.guide.tolist()
    else:  # against the GMP words
        n, d = scale.numerator, scale.denominator
        assert thr[1:-1] == [_core.laplace_word_exact(n, d, x) for x in range(1, k + 1)]


def _exact_points(scale):
    k = model(scale).last()
    gen = np.random.default_rng(int(k) + 7)
    return sorted({1, 2, k, k + 1, *(int(v) for v in gen.integers(1, k + 3, 12))} - {0})


@pytest.mark.parametrize(
    "scale", [Fraction(1, 4), Fraction(7, 3), 128, 200, 255, EDGE, *RANDOM_SCALES[:3]], ids=str
)
def test_gmp_words_are_the_exact_floors(scale):
    """The core's GMP fallback (laplace_word_exact: dg_laplace_word_exact) = laplace_floor =
    the model at random x, K and K + 1; LaplaceFloors at 128 and 256 bits (the step past bit
    64) = the model too."""
    scale = Fraction(scale)
    m = model(scale)
    n, d = scale.numerator, scale.denominator
    for x in _exact_points(scale):
        exact = _inversion.laplace_floor(scale, x, 64)
        assert _core.laplace_word_exact(n, d, x) == exact == m.word(x), x
        for p in (128, 256):
            assert _inversion.LaplaceFloors(scale, p).word(x) == m.word(x, p), (x, p)


# --------------------------------------------------------------------------------------------
# 2. Core and oracle on the same bits
# --------------------------------------------------------------------------------------------

PARITY = [  # (scale, mu, dtype, n): the oracle takes ~0.3 ms a sample at the largest scales
    (MIN, 5, np.int64, 300),
    (Fraction(1, 3), -3, object, 300),
    (Fraction(7, 3), 11, np.int64, 300),
    (Fraction(12345, 71), -(10**30), object, 150),
    (Fraction(200), 2**62, None, 150),
    (Fraction(250), -1, np.int64, 100),
    (Fraction(255), 10**20, object, 100),
    (EDGE, 0, None, 100),
]


@pytest.mark.parametrize("bitgen", BITGENS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("scale, mu, dtype, n", PARITY, ids=lambda v: str(v))
@pytest.mark.long
def test_core_and_oracle_read_the_same_bits(bitgen, scale, mu, dtype, n):
    """sample_laplace(method="inversion"): core = oracle, generators left in the same state;
    the backends' fill returns the same bits used and values (int64 and object)."""
    out_dtype = np.int64 if abs(mu) < 2**40 else object
    used = tapes.same_bits("sample_laplace", LAP, scale, n, mu, dtype, bitgen, out_dtype)
    assert used >= n


@pytest.mark.parametrize("scale", [Fraction(7, 3), 250], ids=str)
def test_int64_overflow_is_an_error_after_the_same_bits(scale):
    """mu + X past 2**63 - 1 in an int64 array: OverflowError from core (its C batch loop) and
    oracle, the generator left at the same place by both; dtype=object draws it."""
    mu = 2**63 - 1 - 3 * int(scale)
    states = []
    for fill in (_core.fill, reference.fill):
        src = np.random.PCG64(4)
        with pytest.raises(OverflowError, match="int64"):
            fill(LAP, *_nd(scale), mu, src, np.empty(500, np.int64), method="inversion")
        states.append(src.random_raw(2).tolist())
    assert states[0] == states[1]
    big = dgauss.sample_laplace(scale, 500, mu=mu, rng=np.random.PCG64(4), method="inversion")
    assert big.dtype == object and max(big) > 2**63 - 1


@pytest.mark.parametrize(
    "scale",
    [Fraction(7, 3), 128, EDGE, BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 7), 1000, 10**4, MAX],
    ids=str,
)
def test_auto_is_inversion_for_large_batches(scale):
    """method="auto" draws by inversion inside the range (blocked inversion's scales too) for a
    batch large enough for the table (4 count + 1024 >= table_words), and by rejection for a
    batch of 10 at a large scale (table_words then exceeds 4 * 10 + 1024)."""
    n = max(1000, (_methods.table_words(False, Fraction(scale)) - 1024) // 4 + 1)
    auto = dgauss.sample_laplace(scale, n, rng=np.random.PCG64(5))
    inv = dgauss.sample_laplace(scale, n, rng=np.random.PCG64(5), method="inversion")
    assert auto.tolist() == inv.tolist()
    if _methods.table_words(False, Fraction(scale)) > 4 * 10 + 1024:
        auto = dgauss.sample_laplace(scale, 10, rng=np.random.PCG64(5))
        rej = dgauss.sample_laplace(scale, 10, rng=np.random.PCG64(5), method="rejection")
        assert auto.tolist() == rej.tolist()


def test_fixed_point_and_python_words_read_the_same_bits():
    for scale in (Fraction(1, 3), Fraction(7, 3), 90, EDGE):
        tapes.fixed_point_runs_agree(LAP, scale, 3000)


def test_inversion_reads_other_bits_than_rejection():
    a = dgauss.sample_laplace(100, 200, rng=np.random.PCG64(1), method="inversion")
    b = dgauss.sample_laplace(100, 200, rng=np.random.PCG64(1), method="rejection")
    assert a.tolist() != b.tolist()


# --------------------------------------------------------------------------------------------
# 3. Tapes that force every branch, predicted exactly by the model
# --------------------------------------------------------------------------------------------


def run_tape(scale, bits: str, count: int = 1, mu: int = 0):
    """Core (into object and int64 arrays: the per-sample draw and the C batch loop; and, for
    small tables, on the Python-built words) and oracle on one tape, each = the model's
    prediction; returns the prediction."""
    scale = Fraction(scale)
    variants: list[dict] = [{"dtype": np.int64}]
    if model(scale).last() < 5000:
        variants.append({"fixed_point": False})
    return tapes.run_tape(LAP, model(scale), scale, bits, count, mu, variants)


@pytest.fixture
def past_64(monkeypatch):
    """The calls the core makes to dgauss._inversion.invert from bit 65 (a = R's 64 bits, j =
    64): the core binds _inversion.invert when a call starts, so this sees every one."""
    calls: list[int] = []
    real = _inversion.invert

    def spy(bit, floors_at, a=0, j=0):
        if j == 64:
            calls.append(a)
        else:
            assert (a, j) == (0, 0)  # the oracle, from its first bit
        return real(bit, floors_at, a, j)

    monkeypatch.setattr(_inversion, "invert", spy)
    return calls


def _tie_points(scale) -> list[int]:
    """x whose words a tie is made with: 1, 2, K/2, K - 1, K."""
    k = model(scale).last()
    return sorted(x for x in {1, 2, k // 2, k - 1, k} if x >= 1)


TIE_SCALES = [Fraction(1, 4), 1, Fraction(7, 3), 128, 200, 250, 255, EDGE]


@pytest.mark.parametrize("scale", TIE_SCALES, ids=str)
def test_a_64_bit_tie_reads_on_past_bit_64(scale, past_64):
    """R's first 64 bits = the word of x (taken from the core's table, = T_x's digits): the core
    steps past bit 64 (one call of invert with a = that word, j = 64) and decides exactly
    where R leaves T_x (when no other threshold shares the 64 digits), on both sides of T_x."""
    m = model(scale)
    gen = np.random.default_rng(1)
    sides = set()
    xs = _tie_points(scale)
    around = sorted({x + e for x in xs for e in (-1, 0, 1)} - {0})
    word = dict(zip(around, _words(scale, around), strict=True))
    for x in xs:
        assert m.digits(x, 64) == _word_bits(word[x])
        alone = word[x - 1] != word[x] != word[x + 1] if x > 1 else word[x] != word[x + 1]
        for i in (65, 66, 100, 129, 180):
            past_64.clear()
            bits = _tie(m, x, i) + _bits(gen, 60)
            values, used, _ = run_tape(scale, bits)
            assert past_64 and set(past_64) == {word[x]}  # the core stepped past bit 64
            y = abs(values[0])
            assert used >= i > 64
            if alone:
                assert used == i + (1 if y else 0)
                assert y == (x - 1 if m.bit(x, i) == "0" else x)
            sides.add(y - x)
    assert sides >= {-1, 0}


@pytest.mark.parametrize("scale", [Fraction(7, 3), 128, 250, EDGE], ids=str)
def test_a_tie_starting_mid_word(scale, past_64):
    """An earlier sample read k bits, so R's 64 bits span two tape words: a tie with a word
    (past bit 64, from the second word's middle), R deciding inside the second word, and R's
    64 zeros spanning the words."""
    m = model(scale)
    k_last = m.last()
    gen = np.random.default_rng(2)

    def run(bits, count):
        past_64.clear()
        return run_tape(scale, bits, count)

    for case, x, second, value in tapes.ties_mid_word(
        run, m, gen, (1, 2, k_last), (65, 70, 129), 40
    ):
        if case == "past":
            assert past_64 and past_64[0] == m.word(x)
        elif case == "within":
            # near T_K the flipped digit may make R's 64 bits 0 or another threshold's word
            r = int(second[:64], 2)
            assert past_64 == [] if m.need(r)[0] <= 64 else set(past_64) == {r}
            assert m.need(r)[0] <= 64 or x == k_last
        else:
            assert abs(value) > k_last and past_64 and past_64[0] == 0
    assert case == "zero"


@pytest.mark.parametrize("scale", [MIN, 1, Fraction(7, 3), 200, 255, EDGE], ids=str)
def test_r_zero_for_64_bits_uses_thresholds_past_the_table(scale, past_64):
    """R < 2**-64: below every word; |X| comes from thresholds no word holds (T_x < 2**-64),
    at 128 or 256 bits (invert called with a = 0, j = 64)."""
    k = model(scale).last()
    gen = np.random.default_rng(3)
    seen = set()
    for lead in (0, 1, 3, 10, 40, 63, 100):
        past_64.clear()
        values, used, _ = run_tape(scale, "0" * (64 + lead) + "1" + _bits(gen, 60))
        assert used >= 65 + lead and abs(values[0]) >= k and past_64 and set(past_64) == {0}
        seen.add(abs(values[0]))
    assert max(seen) > k + (scale if scale > 1 else 0)  # some lie far beyond the words


def _check_word(scale, r: int, gen, run: bool = True) -> int:
    """inversion_word(r) (need, |X|) = the model's; the tape of r (and more) as predicted."""
    scale = Fraction(scale)
    need, y = _core.inversion_word(scale.numerator, scale.denominator, r, laplace=True)
    want_need, want_y = model(scale).need(r)
    assert need == want_need, (r, need, want_need)
    if need <= 64:
        assert y == want_y, (r, y, want_y)
    if run:
        run_tape(scale, _word_bits(r) + _bits(gen, 140))
    return need


@pytest.mark.parametrize(
    "scale", [Fraction(7, 3), 90, 128, 200, 255, EDGE, RANDOM_SCALES[-1]], ids=str
)
def test_random_words_and_guide_edges(scale):
    """The core's decision on R's 64 bits (inversion_word: the guide, then the words it points
    to) = the model's, for r uniform, r with leading zeros (the tail), r = the word of x (a
    tie: 65) and r +- 1 (|X| = x below it, x - 1 above it, where the neighbouring words differ
    from it by more than 1) for x = 1, 2, K/2, K - 1, K and random x, and r at both edges of
    guide buckets (the first and the last bucket, T_1's, T_K's and random ones)."""
    m = model(scale)
    k = m.last()
    gen = np.random.default_rng(4)
    needs = []
    for i in range(300):
        r = int(gen.integers(0, 2**63)) * 2 + int(gen.integers(0, 2))
        if i % 3 == 0:
            r >>= int(gen.integers(1, 63))
        needs.append(_check_word(scale, r, gen, run=i % 10 == 0))
    for x in sorted({1, 2, k // 2, k - 1, k, *(int(v) for v in gen.integers(1, k + 1, 10))}):
        w = m.word(x)
        assert _check_word(scale, w, gen) == 65, x
        below = _core.inversion_word(*_nd(scale), w - 1, laplace=True)[1]
        assert below == x or m.word(x + 1) >= w - 1, x
        if w + 1 < 2**64:
            above = _core.inversion_word(*_nd(scale), w + 1, laplace=True)[1]
            assert above == x - 1 or (x > 1 and m.word(x - 1) <= w + 1), x
        for r in {w - 1, w + 1} - {2**64}:
            needs.append(_check_word(scale, r, gen))
    tab = _table(scale)
    shift = 64 - tab.guide_bits
    thr = tab.thr.tolist()
    buckets = {0, (1 << tab.guide_bits) - 1, thr[1] >> shift, thr[k] >> shift}
    buckets |= {int(v) for v in gen.integers(0, 1 << tab.guide_bits, 10)}
    for g in sorted(buckets):
        for r in (g << shift, ((g + 1) << shift) - 1):
            needs.append(_check_word(scale, r, gen, run=r == g << shift))
    assert max(n for n in needs if n <= 64) >= 30


def _nd(scale):
    scale = Fraction(scale)
    return scale.numerator, scale.denominator


def _sample_bits(m: Model, r_bits: str, sign: str) -> str:
    """One sample's bits: R's bits up to where the rule stops, then the sign when |X| > 0."""
    y, j = m.rule(r_bits)
    return r_bits[:j] + (sign if y else "")


@pytest.mark.parametrize("scale", [Fraction(7, 3), 128, 250, EDGE], ids=str)
def test_steps_past_bit_64_inside_a_batch(scale, past_64):
    """Eight samples on one tape, into int64 (the C batch loop stops at each undecided draw,
    the sample is finished past bit 64 and the loop goes on with the next) and object arrays:
    plain draws around a tie with T_1 (sign 1), a tie with T_2 (sign 0), R's 64 zeros, and a
    tie decided at a tape word's last bit (its sign bit the next word's first)."""
    m = model(scale)
    gen = np.random.default_rng(8)
    plain = _first_sample(m, gen)
    parts = [
        plain,
        _sample_bits(m, _tie(m, 1, 70) + _bits(gen, 60), "1"),
        plain,
        _sample_bits(m, _tie(m, 2, 90) + _bits(gen, 60), "0"),
        plain,
        _sample_bits(m, "0" * 64 + "1" + _bits(gen, 60), "1"),
    ]
    i = 65 + (-(len("".join(parts)) + 65)) % 64
    last_tie = _sample_bits(m, _tie(m, 1, i) + _bits(gen, 60), "1")
    assert len(last_tie) in (i, i + 1) and (len("".join(parts)) + i) % 64 == 0
    bits = "".join([*parts, last_tie, plain]) + _bits(gen, 5)
    values, used, _ = run_tape(scale, bits, 8)
    assert used == len(bits) - 5
    assert values[0] == values[2] == values[4] == values[7] and values[1] <= 0 <= values[3]
    assert len(past_64) >= 8 and len(past_64) % 4 == 0  # four per core run


@pytest.mark.parametrize("scale", [Fraction(7, 3), 250], ids=str)
def test_short_last_word_goes_bit_by_bit(scale):
    """The second sample's R starts k bits into the first word and runs into a finite tape's
    last word of m < k bits: the bit-by-bit path (dg_*_draw_bitwise).  Every m = 1 .. k - 1,
    for R deciding at each of its bits 65 - k .. 64: decided inside the last word (as the
    model says) or out of bits, never a value read from bits the tape does not have."""
    gen = np.random.default_rng(6)
    run = functools.partial(run_tape, scale)
    outcomes = tapes.short_last_word(run, model(scale), gen, (1, 2), step=2)
    assert min(outcomes["decided"], outcomes["exhausted"]) >= 3, outcomes


@pytest.mark.parametrize("scale", [Fraction(7, 3), 255], ids=str)
def test_running_out_raises_exhausted_everywhere(scale):
    """A tape ending before the sample is decided: inside R's 64 bits, inside the step past
    bit 64 (a tie, the zero R), before the sign bit; core and oracle raise Exhausted."""
    gen = np.random.default_rng(7)
    cases = tapes.running_out(functools.partial(run_tape, scale), model(scale), gen)
    assert len(cases) == 9
    for bits, count in cases:
        with pytest.raises(Exhausted):
            dgauss.sample_laplace(scale, count, rng=Tape(bits), method="inversion")


# --------------------------------------------------------------------------------------------
# 4. Every bit prefix
# --------------------------------------------------------------------------------------------

#: (scale, the oracle's target): the oracle reads ~10 times slower than the core.
ENUM = [(Fraction(1, 4), 1e-4), (Fraction(1), 1e-4), (Fraction(7, 3), 1e-4), (Fraction(100), 1e-1)]


@pytest.mark.parametrize("scale, oracle_target", ENUM, ids=lambda v: str(v))
def test_every_prefix_to_1e_4(scale, oracle_target):
    """Every bit tape, most probable first, until at most 1e-4 is unresolved (enumerate_sampler
    at the bit level): dgauss.testing.check (every value's mass within the true pmf's bounds)
    and the model's bounds for every |v| <= K + 2.  The oracle, at its target, gives exactly
    the same masses as the core at that target."""
    m = model(scale)
    values = [s * y for y in range(m.last() + 3) for s in ((1, -1) if y else (1,))]
    core = enumerate_sampler("laplace", scale, method="inversion", target=1e-4)
    result = check(core, "laplace", scale)
    assert result.ok, result.report()
    assert tapes.mass_violations(m, core, values) == []
    small = enumerate_sampler("laplace", scale, method="inversion", target=oracle_target)
    oracle = enumerate_sampler(
        "laplace", scale, oracle=True, method="inversion", target=oracle_target
    )
    assert check(oracle, "laplace", scale).ok
    assert (oracle.mass, oracle.runs) == (small.mass, small.runs)


def test_the_enumeration_check_has_power():
    """The checks above reject scale 7/3's masses against scale 12/5's pmf (3% off) and
    against the model once 2**-12 of mass moves from |X| = 1 to 2."""
    scale = Fraction(7, 3)
    e = enumerate_sampler("laplace", scale, method="inversion", target=1e-4)
    assert not check(e, "laplace", Fraction(12, 5)).ok
    assert tapes.mass_violations(model(Fraction(12, 5)), e, range(-5, 6))
    moved = dict(e.mass)
    shift = mpq(1, 2**12)
    moved[1] = (moved[1][0] - shift, moved[1][1] - shift)
    moved[2] = (moved[2][0] + shift, moved[2][1] + shift)
    e.mass = moved
    assert tapes.mass_violations(model(scale), e, range(-5, 6)) == [1, 2]


def _window(m: Model, x: int, count: int) -> tuple[int, int]:
    """(w, k): the window [w, w + 1) 2**-k of T_x's first k digits, k such that about
    ``count`` thresholds lie in it (their gaps near T_x are about T_x / t)."""
    lo, _ = m.threshold(x)
    k = max(1, math.ceil(math.log2(max(m.t, 1) / (float(lo) * count))))
    return m.floor(x) >> (J - k), k


def _window_enumeration(fill, scale, w: int, k: int, target: float):
    """Every tape R = 0.(w's k bits)(enumerated bits): each run (value, bits used, or running
    out) = the model's prediction (_inversion_tapes.checked_draw), masses conditional on the
    window."""
    draw = tapes.checked_draw(LAP, fill, scale, model(scale), format(w, f"0{k}b"))
    return enumerate_bits(draw, target=target)


def _window_violations(m: Model, e, w: int, k: int) -> list:
    """Values whose conditional bounds miss the model's window masses, or that the window
    [w, w + 1) 2**-k cannot give (_inversion_tapes.window_violations)."""
    return tapes.window_violations(m.window_masses(w, k), e)


WINDOW_SCALES = [128, 250, EDGE]


@pytest.mark.parametrize("scale", WINDOW_SCALES, ids=str)
@pytest.mark.long
def test_large_tables_prefixes_inside_windows(scale):
    """A large table's distribution (too many thresholds to enumerate [0, 1) to 1e-4): every
    tape inside windows of R around T_x (about 12 thresholds each) for x = 1 (|X| = 0's edge),
    2, 1000, a random x, K/2, K - 1, K (the window past R's 64 bits: every run steps past bit
    64) and x past K, enumerated to 1e-4 of the window; every run = the model's prediction
    (core; the oracle on three windows, to 1e-2), and the conditional masses within the
    model's exact bounds."""
    scale = Fraction(scale)
    m = model(scale)
    k_last = m.last()
    gen = np.random.default_rng(k_last)
    x_random = int(gen.integers(3, k_last - 1))
    xs = [1, 2, 1000, x_random, k_last // 2, k_last - 1, k_last, k_last + 100]
    for i, x in enumerate(xs):
        w, k = _window(m, x, 12)
        e = _window_enumeration(_core.fill, scale, w, k, 1e-4)
        assert e.complete and _window_violations(m, e, w, k) == [], (x, w, k)
        if i in (0, 4, 6):
            e = _window_enumeration(reference.fill, scale, w, k, 1e-2)
            assert e.complete and _window_violations(m, e, w, k) == [], (x, w, k)


def test_window_check_has_power():
    """The window check rejects scale 250's window masses around T_60 against scale 251's (its
    thresholds there about a quarter of a gap higher)."""
    scale = Fraction(250)
    m = model(scale)
    w, k = _window(m, 60, 12)
    e = _window_enumeration(_core.fill, scale, w, k, 1e-4)
    assert _window_violations(model(scale + 1), e, w, k)


# --------------------------------------------------------------------------------------------
# 5. Large samples from the operating system
# --------------------------------------------------------------------------------------------

LARGE_N = 200_000


def _binned_pmf(scale: Fraction, width: int) -> dict[int, float]:
    """P[key] for key = 2 (|X| // width) + (X < 0): T_x = 2 p**x / (1 + p) at 50 digits."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 50
        t = Decimal(scale.numerator) / Decimal(scale.denominator)
        p = (-1 / t).exp()
        tail = lambda x: Decimal(1) if x == 0 else 2 * p**x / (1 + p)
        zero = 1 - tail(1)
        pmf = {}
        for b in range(int(80 * float(scale) / width) + 2):
            lo, hi = b * width, (b + 1) * width
            both = tail(lo) - tail(hi) - (zero if b == 0 else 0)
            pmf[2 * b] = float(both / 2 + (zero if b == 0 else 0))
            pmf[2 * b + 1] = float(both / 2)
        return pmf


def _keys(x: np.ndarray, width: int) -> np.ndarray:
    return 2 * (np.abs(x) // width) + (x < 0)


def _moment_p(x: np.ndarray, scale: Fraction) -> float:
    """Two-sided p-value of mean(X**2) against E X**2 = 2p / (1 - p)**2, with Var(X**2) from
    E X**4 = 2p (1 + 11p + 11p**2 + p**3) / ((1 + p)(1 - p)**4)."""
    from statistics import NormalDist

    q = -math.expm1(-1 / float(scale))  # 1 - p
    p = 1 - q
    m2 = 2 * p / q**2
    m4 = 2 * p * (1 + 11 * p + 11 * p * p + p**3) / ((1 + p) * q**4)
    xs = x.astype(np.float64)
    z = (float(np.mean(xs * xs)) - m2) / math.sqrt((m4 - m2 * m2) / x.size)
    return 2 * NormalDist().cdf(-abs(z))


@pytest.mark.parametrize("scale", [Fraction(7, 3), 128, 200, EDGE], ids=str)
def test_large_sample_from_the_os_fits(scale):
    """rng=None, 200000 draws: chi-square on (|x| // width, sign) with width ~ scale / 8, and
    the second moment, each at ALPHA / 2."""
    scale = Fraction(scale)
    x = dgauss.sample_laplace(scale, LARGE_N, method="inversion")
    width = max(1, int(scale) // 8)
    stat, dof, p = chi2_gof(_keys(x, width), _binned_pmf(scale, width))
    assert dof >= 20 and p > ALPHA / 2, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"
    assert _moment_p(x, scale) > ALPHA / 2


def test_large_sample_statistics_have_power():
    """The same statistics reject scale 200 against 206, and samples with the sign ignored."""
    x = dgauss.sample_laplace(200, LARGE_N, rng=np.random.PCG64(1), method="inversion")
    wrong = Fraction(206)
    assert chi2_gof(_keys(x, 25), _binned_pmf(wrong, 25))[2] < ALPHA / 2
    assert _moment_p(x, wrong) < ALPHA / 2
    assert chi2_gof(_keys(np.abs(x), 25), _binned_pmf(Fraction(200), 25))[2] < ALPHA / 2


def test_min_scale_is_almost_always_zero():
    """Scale 1/64: P[X != 0] = T_1 < 2 exp(-64) < 4e-28: 10**6 OS draws are all 0 (while the
    core reads one word per draw with no word in its table)."""
    assert not dgauss.sample_laplace(MIN, 10**6, method="inversion").any()


def test_workers_draw_by_inversion():
    x = dgauss.sample_laplace(250, 300_000, method="inversion", workers=3)
    width = 250 // 8
    stat, dof, p = chi2_gof(_keys(x, width), _binned_pmf(Fraction(250), width))
    assert p > ALPHA, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"


# --------------------------------------------------------------------------------------------
# 6. Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [Fraction(1, 65), 2**40 + 1, Fraction(2**46 + 1, 2**6)], ids=str)
def test_inversion_outside_its_range_is_a_value_error(implementation, scale):
    with pytest.raises(ValueError, match=r"1/64 <= scale <= 2\*\*40"):
        implementation.sample_laplace(scale, 3, method="inversion")
    for fill in (_core.fill, reference.fill):
        with pytest.raises(ValueError, match=r"1/64 <= scale <= 2\*\*40"):
            fill(LAP, *_nd(scale), 0, np.random.PCG64(1), np.empty(2, object), method="inversion")
    # "auto" still draws it: by rejection
    a = implementation.sample_laplace(scale, 50, rng=np.random.PCG64(2))
    b = implementation.sample_laplace(scale, 50, rng=np.random.PCG64(2), method="rejection")
    assert a.tolist() == b.tolist() and len(a) == 50


def test_inversion_range_is_inclusive(implementation):
    for scale in (MIN, MAX, 0.015625, 2.0**20):
        implementation.sample_laplace(scale, 3, rng=np.random.PCG64(2), method="inversion")


def test_decision_tape_goes_to_rejection_or_is_refused(implementation):
    """A DecisionTape drives the rejection loops' primitives: "auto" uses rejection (running
    out of outcomes asks for a primitive's outcome, not a bit), "inversion" refuses it."""
    with pytest.raises(ValueError, match="DecisionTape"):
        implementation.sample_laplace(3, 1, rng=DecisionTape([0, 0]), method="inversion")
    for fill in (_core.fill, reference.fill):
        with pytest.raises(ValueError, match="DecisionTape"):
            fill(LAP, 3, 1, 0, DecisionTape([0, 0]), np.empty(1, object), method="inversion")
        with pytest.raises(Exhausted) as info:
            fill(LAP, 3, 1, 0, DecisionTape([]), np.empty(1, object), method="auto")
        assert "next request" in str(info.value)  # a decision, not a bit


# --------------------------------------------------------------------------------------------
# 7. Bits read against the entropy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1, 100, 200, 250], ids=str)
def test_bits_per_sample_near_the_entropy(scale):
    """Mean bits read per sample (fill's count, seeded, 200000 samples) is at least H(X) (no
    exact sampler reads fewer on average; 0.05 of slack for chance) and at most H(X) + 3."""
    scale = Fraction(scale)
    n = 200_000
    out = np.empty(n, dtype=np.int64)
    used = _core.fill(LAP, *_nd(scale), 0, np.random.PCG64(9), out, method="inversion")
    h = entropy_bits(scale)
    excess = used / n - h
    print(f"scale {scale}: {used / n:.3f} bits per sample, H = {h:.3f}, excess {excess:.3f}")
    assert -0.05 < excess < 3
