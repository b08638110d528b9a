"""The discrete Gaussian by inversion (``method="inversion"``) against an independent model.

This file covers the plain rule, 1/64 <= sigma2 < 2**16 (GAUSSIAN_BLOCKED_MIN): |X| for
X ~ N_Z(0, sigma2) is the number of thresholds T_x = P[|X| >= x], x >= 1, above a lazy
uniform R = 0.b1 b2 ..., read until no threshold shares R's first j digits; then one sign bit
(1: negative) when |X| > 0.  The compiled core compares R's 64 bits with a table of words
floor(2**64 T_x) through a guide table, and past the 64th bit (a tie with a word, or R's 64 bits
all zero) calls dgauss._inversion.invert; the oracle reads one bit at a time.  From 2**16 to
2**24 the same T_x are drawn by blocked inversion: tests/test_gaussian_blocked.py covers that.
The tests of the public calls here (same bits, "auto", the range and its errors, large
samples, the table cache, threads) span the whole range 1/64 .. 2**24.

Everything here is compared with ``Exact``: the thresholds enclosed from scratch with MPFR and
directed rounding (no code shared with dgauss), giving exact floor(2**J T_x), J = 192, and
rigorous bounds on the pmf.  The file covers

* the words: the C table (fixed point and the Python fallback) = gaussian_floors = the
  enclosure, at 64 and 128 bits, the guide table, and the end of the table;
* the same bits: core = oracle on seeded generators (value, bits used, generator state);
* every fallback forced by hand-made tapes: a 64-bit tie, the tie starting mid-word, R's
  64 bits all zero, a crowded guide bucket, guide-bucket boundaries, a short last word, a tape
  running out in each of those places; each predicted exactly (value, bits used) by the model;
* the distribution: every bit prefix enumerated to 1e-4, the C table's decisions = the oracle's
  rule = the model's, the mass of each value within the exact pmf's rigorous bounds, and the
  real samplers (core, oracle) run on the decided prefixes with their sign bits;
* large samples (chi-square, variance) from the OS, errors, the table cache and threads.
"""

from __future__ import annotations

import bisect
import functools
import math
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from statistics import NormalDist

import gmpy2
import numpy as np
import pytest
from gmpy2 import mpfr, mpq

import _inversion_tapes as tapes
import dgauss
from _inversion_tapes import BITGENS, TapeModel
from _inversion_tapes import bits as _bits
from _inversion_tapes import tie as _tie
from _inversion_tapes import word_bits as _word_bits
from _python import run_python
from _stats import ALPHA, chi2_gof, gaussian_pmf
from dgauss import _core, _inversion, _methods, reference
from dgauss._kinds import Kind
from dgauss.testing import DecisionTape, Exhausted, Tape

GAUSS = Kind.DISCRETE_GAUSSIAN
MIN, MAX = Fraction(1, 64), Fraction(2**24)
#: From here on the core draws by blocked inversion (tests/test_gaussian_blocked.py); TOP is
#: the largest sigma2 whose plain table (every T_x's word) is tested here, 2**16 - 1/7.
BLOCKED_MIN = Fraction(2**16)
TOP = Fraction(2**16 * 7 - 1, 7)

# --------------------------------------------------------------------------------------------
# The independent model: thresholds and pmf enclosed with MPFR, directed rounding
# --------------------------------------------------------------------------------------------

#: Bits of the model's exact threshold floors floor(2**J T_x).
J = 192


class Exact(TapeModel):
    """N_Z(0, sigma2) from scratch: w_k = exp(-k^2 / (2 sigma2)) enclosed term by term (each
    exp on an argument rounded the safe way), S_x = sum_{k >= x} w_k as a sum to m plus
    w_{m+1} / (1 - exp(-2c(m + 1))) (k^2 >= (m+1)^2 + 2(m+1)(k-m-1)), Z = 1 + 2 S_1,
    T_x = 2 S_x / Z, every operation rounded down for the lower and up for the upper bound.
    ``floor[x]`` = floor(2**J T_x), x = 0 .. m + 1 (T_0 = 1), checked decided."""

    def __init__(self, sigma2: Fraction):
        self.sigma2 = sigma2
        prec = J + 128
        c = mpq(sigma2.denominator, 2 * sigma2.numerator)  # 1 / (2 sigma2)
        down = gmpy2.context(precision=prec, round=gmpy2.RoundDown)
        up = gmpy2.context(precision=prec, round=gmpy2.RoundUp)
        # c m^2 >= J + 64: the terms past m are below 2**-(J + 64)
        m = math.isqrt(math.ceil((J + 64) / float(c))) + 2
        w_lo, w_hi = [mpfr(1)], [mpfr(1)]
        for k in range(1, m + 2):
            with up:
                arg_hi = mpfr(c * k * k)
            with down:
                arg_lo = mpfr(c * k * k)
                w_lo.append(gmpy2.exp(-arg_hi))
            with up:
                w_hi.append(gmpy2.exp(-arg_lo))
        with down:
            g_lo = mpfr(2 * c * (m + 1))
        with up:
            q_hi = gmpy2.exp(-g_lo)
        with down:
            one_minus_q = 1 - q_hi
        with up:
            tail = w_hi[m + 1] / one_minus_q  # >= sum_{k > m} w_k
        s_lo, s_hi = [mpfr(0)] * (m + 2), [tail] * (m + 2)
        with down:
            for k in range(m, 0, -1):
                s_lo[k] = s_lo[k + 1] + w_lo[k]
            z_lo = 1 + 2 * s_lo[1]
        with up:
            for k in range(m, 0, -1):
                s_hi[k] = s_hi[k + 1] + w_hi[k]
            z_hi = 1 + 2 * s_hi[1]
        with down:
            t_lo = [mpfr(1)] + [2 * s_lo[x] / z_hi for x in range(1, m + 2)]
            f_lo = [int(gmpy2.floor(gmpy2.mul_2exp(t, J))) for t in t_lo]
            # P[|X| = 0] = 1 / Z, P[|X| = y] = 2 w_y / Z
            self.pmf_lo = [mpq(1 / z_hi)] + [mpq(2 * w_lo[y] / z_hi) for y in range(1, m + 1)]
        with up:
            t_hi = [mpfr(1)] + [2 * s_hi[x] / z_lo for x in range(1, m + 2)]
            f_hi = [int(gmpy2.floor(gmpy2.mul_2exp(t, J))) for t in t_hi]
            self.pmf_hi = [mpq(1 / z_lo)] + [mpq(2 * w_hi[y] / z_lo) for y in range(1, m + 1)]
        self.m = m
        self.f_lo, self.f_hi = f_lo, f_hi
        self.t_hi = t_hi
        undecided = [x for x in range(m + 2) if f_lo[x] != f_hi[x]]
        assert not undecided, f"floor(2**{J} T_x) not decided for x = {undecided[:5]}"
        self.floor = f_lo
        self.ascending = f_lo[:0:-1]  # floor(2**J T_x), x = m + 1 .. 1

    def floors(self, p: int) -> list[int]:
        """floor(2**p T_x) for x = 1 .. the last non-zero (p <= J)."""
        words = [f >> (J - p) for f in self.floor[1:]]
        return words[: words.index(0)]

    def decide(self, a: int, j: int) -> int | None:
        """The rule after R's first j bits a: |X|, or None while a threshold shares them."""
        if a == 0:
            return None
        assert j < J, "the model needs more bits"
        shift = J - j
        low = bisect.bisect_left(self.ascending, a << shift)
        high = bisect.bisect_left(self.ascending, (a + 1) << shift)
        return len(self.ascending) - high if low == high else None

    def rule(self, bits: str) -> tuple[int, int] | None:
        """(|X|, bits read) for R = 0.bits..., or None when the bits run out first."""
        a = 0
        for j, b in enumerate(bits, 1):
            a = 2 * a + (b == "1")
            y = self.decide(a, j)
            if y is not None:
                return y, j
        return None

    def bit(self, x: int, i: int) -> str:
        """The i-th binary digit of T_x (i = 1, 2, ..., i <= J)."""
        return str((self.floor[x] >> (J - i)) & 1)

    def digits(self, x: int, i: int) -> str:
        """T_x's first i binary digits."""
        return format(self.floor[x] >> (J - i), f"0{i}b")


@functools.cache
def exact(sigma2) -> Exact:
    return Exact(Fraction(sigma2))


#: One call on a tape: _run(fill, sigma2, bits, count, mu=0, **options) -> (values, bits
#: used, tape position) or ("exhausted", tape position).
_run = functools.partial(tapes.run, GAUSS)


def run_tape(sigma2, bits: str, count: int = 1, mu: int = 0):
    """Core (fixed-point words and Python words) and oracle on one tape, checked equal to
    each other and to the model's prediction; returns the prediction."""
    return tapes.run_tape(
        GAUSS, exact(sigma2), sigma2, bits, count, mu, variants=[{"fixed_point": False}]
    )


def _table(sigma2):
    sigma2 = Fraction(sigma2)
    return _core.gauss_table(sigma2.numerator, sigma2.denominator)


# --------------------------------------------------------------------------------------------
# 1-2. The words
# --------------------------------------------------------------------------------------------

_SEEDED = np.random.default_rng(20240601)
RANDOM_SIGMA2 = [  # log-uniform in [1/64, 2**16), denominators up to 2**30
    min(BLOCKED_MIN - Fraction(1, 2**30), max(MIN, Fraction(int(2 ** (u + v)), int(2**v))))
    for u, v in zip(_SEEDED.uniform(-6, 16, 8), _SEEDED.uniform(0, 30, 8), strict=True)
]
WORD_SIGMA2 = (
    [1, 2, 3, 10, 64, 100, 1000, 40000, 2**16 - 1, TOP, MIN]
    + [
        Fraction(7, 3),
        Fraction(12345, 7),
        Fraction(1, 3),
        Fraction(999999, 1000),
        Fraction(65, 4096),
        Fraction(3 * 2**16 - 2, 3),
    ]
    + RANDOM_SIGMA2
)
#: n or d >= 2**62: outside the C builder's domain, so the words come from Python (both plain:
#: about 3 and 2**14; tests/test_gaussian_blocked.py has a blocked one).
HUGE_TERMS = [Fraction(3 * 2**70 + 1, 2**70), Fraction(2**80 + 7, 2**66 + 1)]


@pytest.mark.parametrize("sigma2", WORD_SIGMA2 + HUGE_TERMS, ids=str)
def test_table_words_are_the_exact_floors(sigma2):
    """gauss_table's words = gaussian_floors(sigma2, 64) (fixed point, and the Python words);
    thr[0] = 2**64 - 1, thr[K + 1] = 0; the guide is the first x with thr[x]'s top g bits <= h."""
    sigma2 = Fraction(sigma2)
    assert sigma2 < BLOCKED_MIN and _methods.gaussian_blocks(sigma2) is None
    n, d = sigma2.numerator, sigma2.denominator
    words = _inversion.gaussian_floors(sigma2, 64).words
    tab = _core.gauss_table(n, d)
    slow = _core.gauss_table(n, d, False)
    assert tab.thr.dtype == np.uint64 and tab.thr.tolist() == [2**64 - 1, *words, 0]
    assert slow.thr.tolist() == tab.thr.tolist() and not slow.fixed_point
    assert tab.count == slow.count == len(words) and words[-1] > 0
    assert all(a >= b for a, b in zip(words, words[1:], strict=False))
    # the C builder covers n, d < 2**62; outside it the fallback must have been used
    if n >= 2**62 or d >= 2**62:
        assert not tab.fixed_point
    elif sigma2 not in RANDOM_SIGMA2:
        assert tab.fixed_point  # known to be decided by the fixed-point bound
    if not tab.fixed_point:
        print(f"sigma2 = {sigma2}: words from the Python fallback")
    assert tab.guide.tolist() == slow.guide.tolist()
    _check_guide(sigma2, tab)
    for t in (tab, slow):
        assert t.nbytes == t.thr.nbytes + t.guide.nbytes


#: A guide entry (csrc/dg_inv.h): the first x with thr[x]'s top g bits <= h in bits 0..23;
#: when no word has top bits h, bit 31 set and, in bits 24..30, the bits that decide every
#: r in the bucket (|X| = x - 1).
GUIDE_INDEX, GUIDE_DECIDED = (1 << 24) - 1, 1 << 31


def _check_guide(sigma2, tab):
    g = tab.guide_bits
    shift = 64 - g
    assert tab.guide.dtype == np.uint32 and tab.guide.size == 1 << g and 4 <= g <= 16
    tops = np.sort(tab.thr[1:] >> np.uint64(shift))  # thr[1 .. K + 1], K + 1 = the 0 word
    h = np.arange(tab.guide.size, dtype=np.uint64)
    first_x = tab.count + 2 - np.searchsorted(tops, h, side="right")
    guide = tab.guide.astype(np.int64)
    assert (guide & GUIDE_INDEX).tolist() == first_x.tolist()
    empty = np.searchsorted(tops, h, side="left") == np.searchsorted(tops, h, side="right")
    assert ((guide & GUIDE_DECIDED) != 0).tolist() == empty.tolist()
    floors = _inversion.gaussian_floors(Fraction(sigma2), 64)
    buckets = np.flatnonzero(empty)
    if buckets.size > 4000:  # a sample of them for the large tables (2**16 buckets)
        buckets = np.sort(np.random.default_rng(g).choice(buckets, 4000, replace=False))
    for b in buckets.tolist():
        # the rule on the bucket's g bits (the oracle's, checked against the model elsewhere)
        need = next(j for j in range(1, g + 1) if floors.decide(b >> (g - j), j) is not None)
        y = floors.decide(b >> (g - need), need)
        assert (need, y) == ((int(guide[b]) >> 24) & 0x7F, (int(guide[b]) & GUIDE_INDEX) - 1)


@pytest.mark.parametrize(
    "sigma2",
    [
        MIN,
        Fraction(1, 3),
        1,
        Fraction(7, 3),
        Fraction(999999, 1000),
        Fraction(12345, 7),
        40000,
        TOP,
        *HUGE_TERMS[:1],
    ],
    ids=str,
)
def test_floors_match_an_independent_enclosure(sigma2):
    """gaussian_floors(sigma2, p), p = 64 and 128 (and the C words), against the MPFR
    enclosure: floor(2**p T_lo) <= word <= floor(2**p T_hi), all decided, so equal; the last
    word is >= 1 and T_{K+1} < 2**-p by the enclosure."""
    sigma2 = Fraction(sigma2)
    e = exact(sigma2)
    for p in (64, 128, 192):
        words = _inversion.gaussian_floors(sigma2, p).words
        k = len(words)
        assert k <= e.m
        for x, word in enumerate(words, 1):
            lo, hi = e.f_lo[x] >> (J - p), e.f_hi[x] >> (J - p)
            assert lo <= word <= hi and lo == hi, (p, x, word, lo, hi)
        assert words[-1] >= 1
        assert e.f_hi[k + 1] < 1 << (J - p)  # T_{K+1} < 2**-p
        assert words == e.floors(p)
    assert _table(sigma2).thr[1:-1].tolist() == e.floors(64)


def test_model_agrees_with_gaussian_pmf():
    """The model's pmf bounds contain _stats.gaussian_pmf (50 digits), so a wrong model
    cannot pass the enumeration below unnoticed."""
    for sigma2 in (Fraction(1, 4), Fraction(7, 3), 100):
        e = exact(sigma2)
        pmf = gaussian_pmf(Fraction(sigma2))
        for y in range(min(30, e.m + 1)):
            p = pmf[y] if y == 0 else 2 * pmf[y]
            assert float(e.pmf_lo[y]) <= p * (1 + 1e-12) and p <= float(e.pmf_hi[y]) * (1 + 1e-12)
            assert e.pmf_hi[y] - e.pmf_lo[y] <= mpq(1, 2**150)


# --------------------------------------------------------------------------------------------
# 3. Core and oracle on the same bits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bitgen", BITGENS, ids=lambda b: b.__name__)
@pytest.mark.parametrize(
    "sigma2, mu, dtype",
    [
        (MIN, 5, np.int64),
        (Fraction(1, 3), -3, object),
        (1, 0, None),
        (Fraction(7, 3), 11, np.int64),
        (Fraction(12345, 7), -(10**30), object),
        (TOP, 2**62, None),
        (MAX, -1, np.int64),  # (blocked inversion: this test uses public calls only)
    ],
    ids=str,
)
@pytest.mark.long
def test_core_and_oracle_read_the_same_bits(bitgen, sigma2, mu, dtype):
    """sample_gaussian(method="inversion"): core = oracle, generators left in the same state;
    the backends' fill returns the same bits used."""
    n = 400
    used = tapes.same_bits("sample_gaussian", GAUSS, sigma2, n, mu, dtype, bitgen, object)
    assert used > n


@pytest.mark.parametrize("sigma2", [MIN, Fraction(7, 3), 10**4, MAX, 2**100], ids=str)
def test_auto_is_inversion_inside_the_range(sigma2):
    """method="auto" draws by inversion for 1/64 <= sigma2 <= 2**100 (a batch of 10**5, enough
    for any table), by rejection just outside; and what it draws does not depend on which
    tables are cached (a seeded call is reproducible)."""
    n = 10**5
    auto = dgauss.sample_gaussian(sigma2, n, rng=np.random.PCG64(5))
    inv = dgauss.sample_gaussian(sigma2, n, rng=np.random.PCG64(5), method="inversion")
    assert auto.tolist() == inv.tolist()
    outside = MIN * Fraction(63, 64) if sigma2 == MIN else 2**100 + 1 if sigma2 == 2**100 else None
    if outside is not None:
        auto = dgauss.sample_gaussian(outside, 1000, rng=np.random.PCG64(5))
        rej = dgauss.sample_gaussian(outside, 1000, rng=np.random.PCG64(5), method="rejection")
        assert auto.tolist() == rej.tolist()
    for count in (1, 10, 1000):  # whichever method "auto" picks, the cache does not matter
        cached = dgauss.sample_gaussian(sigma2, count, rng=np.random.PCG64(6))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_core, "_INV_TABLES", OrderedDict())
            fresh = dgauss.sample_gaussian(sigma2, count, rng=np.random.PCG64(6))
        assert fresh.tolist() == cached.tolist()


def test_fixed_point_and_python_words_read_the_same_bits():
    for sigma2 in (Fraction(1, 3), Fraction(7, 3), 10**4, *HUGE_TERMS):
        tapes.fixed_point_runs_agree(GAUSS, sigma2, 2000)


def test_inversion_reads_other_bits_than_rejection():
    """The methods really differ (so parity above proves the core inverts)."""
    a = dgauss.sample_gaussian(100, 200, rng=np.random.PCG64(1), method="inversion")
    b = dgauss.sample_gaussian(100, 200, rng=np.random.PCG64(1), method="rejection")
    assert a.tolist() != b.tolist()
    c = reference.sample_gaussian(100, 200, rng=np.random.PCG64(1), method="rejection")
    assert b.tolist() == c.tolist()


# --------------------------------------------------------------------------------------------
# 4. Tapes that force every branch, predicted exactly by the model
# --------------------------------------------------------------------------------------------


TIE_SIGMA2 = [Fraction(1, 4), 1, Fraction(7, 3), 100, 40000, TOP]


@pytest.mark.parametrize("sigma2", TIE_SIGMA2, ids=str)
def test_a_64_bit_tie_reads_on_past_bit_64(sigma2):
    """(a) R's first 64 bits = thr[x]: the table cannot decide, the exact thresholds at 128
    and 256 bits do, at exactly the bit where R leaves T_x; both sides of T_x are reached."""
    e = exact(sigma2)
    tab = _table(sigma2)
    thr = tab.thr.tolist()
    k = tab.count
    gen = np.random.default_rng(1)
    sides = set()
    for x in sorted({1, 2, k // 2, k - 1, k} - {0}):
        assert e.digits(x, 64) == _word_bits(thr[x])
        for i in (65, 66, 100, 128, 129, 130, 180):
            values, used, _ = run_tape(sigma2, _tie(e, x, i) + _bits(gen, 20))
            y = abs(values[0])
            assert used >= i > 64
            if thr[x - 1] != thr[x] != thr[x + 1]:
                # only T_x shares R's 64 digits: decided exactly at bit i
                assert used == i + (1 if y else 0)
                assert y == (x - 1 if e.bit(x, i) == "0" else x)
            sides.add(y - x)
    assert sides >= {-1, 0}


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), 100, TOP], ids=str)
def test_a_tie_starting_mid_word(sigma2):
    """(b) an earlier sample read k bits, so R's 64 bits span two words and tie with a word;
    also R deciding inside the second word (no tie), and R's 64 zeros spanning the words."""
    k_table = _table(sigma2).count
    gen = np.random.default_rng(2)
    run = functools.partial(run_tape, sigma2)
    cases = tapes.ties_mid_word(run, exact(sigma2), gen, (1, 2, k_table), (65, 70, 128, 129), 10)
    for case, _, _, value in cases:
        if case == "zero":
            assert abs(value) >= k_table
    assert case == "zero"


@pytest.mark.parametrize("sigma2", [MIN, 1, Fraction(7, 3), 40000, TOP], ids=str)
def test_r_zero_for_64_bits_uses_thresholds_past_the_table(sigma2):
    """(c) R < 2**-64: below every word (r = 0 = thr[K + 1]); |X| comes from thresholds the
    table does not hold (T_x < 2**-64), computed at 128 or 256 bits."""
    k = _table(sigma2).count
    gen = np.random.default_rng(3)
    seen = set()
    for lead in (0, 1, 3, 10, 40, 63, 100):
        values, used, _ = run_tape(sigma2, "0" * (64 + lead) + "1" + _bits(gen, 40))
        assert used >= 65 + lead and abs(values[0]) >= k
        seen.add(abs(values[0]))
    if sigma2 != MIN:  # (there T_2 < 2**-180: |X| = K = 1 for all of these)
        assert max(seen) > k  # some lie strictly beyond the table


def _check_word(sigma2, e: Exact, r: int, gen) -> int:
    sigma2 = Fraction(sigma2)
    need, y = _core.inversion_word(sigma2.numerator, sigma2.denominator, r)
    want_need, want_y = e.need(r)
    assert need == want_need, (r, need, want_need)
    if need <= 64:
        assert y == want_y, (r, y, want_y)
    run_tape(sigma2, _word_bits(r) + _bits(gen, 140))
    return need


@pytest.mark.parametrize("sigma2", [40000, TOP], ids=str)
def test_crowded_guide_bucket_binary_search(sigma2):
    """(d) R's top bits zero: R falls among the thousands of tail thresholds sharing guide
    bucket 0 (the binary search).  Random such r, the words themselves (ties, equal
    neighbouring words included), and their neighbours r +- 1."""
    e = exact(sigma2)
    tab = _table(sigma2)
    thr = tab.thr.tolist()
    shift = 64 - tab.guide_bits
    bucket0 = [x for x in range(1, tab.count + 1) if thr[x] >> shift == 0]
    assert len(bucket0) > 1000  # crowded
    assert any(thr[x] == thr[x + 1] for x in bucket0[:-1])
    gen = np.random.default_rng(4)
    needs = []
    for _ in range(60):
        r = int(gen.integers(0, 2**63)) >> int(gen.integers(tab.guide_bits, 62))
        needs.append(_check_word(sigma2, e, r, gen))
    picks = [
        bucket0[0],
        bucket0[1],
        bucket0[len(bucket0) // 2],
        bucket0[-1],
        *(bucket0[int(i)] for i in gen.integers(0, len(bucket0), 10)),
    ]
    picks += [x for x in bucket0[:-1] if thr[x] == thr[x + 1]][:3]  # equal words
    for x in picks:
        for r in (thr[x] - 1, thr[x], thr[x] + 1):
            needs.append(_check_word(sigma2, e, r, gen))
    assert 65 in needs and max(n for n in needs if n <= 64) >= 60


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(7, 3), 100, 40000, TOP], ids=str)
def test_guide_bucket_boundaries(sigma2):
    """(d) r exactly at a bucket's start (h << shift) and just below it, for every bucket
    (a sample of them for large tables), and the words next to a bucket edge."""
    e = exact(sigma2)
    tab = _table(sigma2)
    thr = tab.thr.tolist()
    g, shift = tab.guide_bits, 64 - tab.guide_bits
    gen = np.random.default_rng(5)
    if g <= 8:
        buckets = range(1, 1 << g)
    else:
        edges = {thr[x] >> shift for x in range(1, tab.count + 1)}
        buckets = sorted({1, 2, 3, (1 << g) - 1, *(h for h in edges if h > 0)})
        buckets = buckets[:: max(1, len(edges) // 40)]
        buckets = sorted({*buckets, *(int(h) for h in gen.integers(1, 1 << g, 20))})
    for h in buckets:
        for r in (h << shift, (h << shift) - 1, (h << shift) + 1):
            _check_word(sigma2, e, r, gen)


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), 100, TOP], ids=str)
def test_short_last_word_goes_bit_by_bit(sigma2):
    """(e) the second sample's R starts k bits into the first word and runs into a finite
    tape's last word, which holds m < k bits (fewer than R's 64 need): the bit-by-bit path.
    Every m = 1 .. k - 1, for R deciding at each of its bits 65 - k .. 64: decided inside the
    last word (value and bits used as the model says) or out of bits (the magnitude or
    just the sign), never a value read from bits the tape does not have."""
    gen = np.random.default_rng(6)
    run = functools.partial(run_tape, sigma2)
    outcomes = tapes.short_last_word(run, exact(sigma2), gen, (1, 2, 3))
    assert min(outcomes.values()) >= 3, outcomes


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), TOP], ids=str)
def test_running_out_raises_exhausted_everywhere(sigma2):
    """(f) A tape that ends before the sample is decided: inside the 64-bit word, inside the
    step past bit 64 (a tie, the zero R), before the sign bit; core and oracle both raise
    Exhausted and leave the tape past every word."""
    gen = np.random.default_rng(7)
    cases = tapes.running_out(functools.partial(run_tape, sigma2), exact(sigma2), gen)
    assert len(cases) == 9


# --------------------------------------------------------------------------------------------
# 5. Every bit prefix, to 1e-4
# --------------------------------------------------------------------------------------------

#: (up to TOP, the largest plain table; tests/test_gaussian_blocked.py enumerates 2**16 and up)
ENUM_SIGMA2 = [MIN, Fraction(1, 4), 1, Fraction(7, 3), 100, 10**4, TOP]


def _enumerate(sigma2: Fraction):
    """Depth-first over R's bit prefixes to depth D, (K + 1) 2**-D < 1e-4, checking at each
    prefix that the C table (inversion_word on the zero-padded word), the oracle's rule
    (Floors.decide) and the model decide alike (the C table exactly at the first deciding
    bit).  Returns (decided, leaves, D, tapes): decided[y] = the mass of the prefixes giving
    |X| = y in units of 2**-D, the undecided prefixes a of length D, and (a, j, y) for each
    decided prefix."""
    n, d = sigma2.numerator, sigma2.denominator
    e = exact(sigma2)
    floors = _inversion.gaussian_floors(sigma2, 64)
    depth = math.ceil(math.log2((_table(sigma2).count + 1) / 1e-4)) + 1
    decided: dict[int, int] = {}
    leaves: list[int] = []
    tapes: list[tuple[int, int, int]] = []
    stack = [(0, 0)]
    while stack:
        parent, j0 = stack.pop()
        for b in (0, 1):
            a, j = 2 * parent + b, j0 + 1
            need, y_c = _core.inversion_word(n, d, a << (64 - j))
            y_o = floors.decide(a, j) if a else None
            y_m = e.decide(a, j)
            assert y_o == y_m, (a, j)
            if y_m is None:
                assert need > j, (a, j, need)
                if j < depth:
                    stack.append((a, j))
                else:
                    leaves.append(a)
            else:
                assert need == j and y_c == y_m, (a, j, need, y_c, y_m)
                decided[y_m] = decided.get(y_m, 0) + (1 << (depth - j))
                tapes.append((a, j, y_m))
    assert sum(decided.values()) + len(leaves) == 1 << depth
    assert mpq(len(leaves), 1 << depth) < mpq(1, 10**4)
    return decided, leaves, depth, tapes


def _mass_violations(e: Exact, pmf: Exact, decided, leaves, depth) -> list:
    """The y with decided(y) > P_hi(y) or P_lo(y) > decided(y) + U_y (exact rationals), where
    the pmf bounds come from ``pmf`` and U_y, the mass of the undecided leaves that can still
    give y, from the thresholds of ``e``: leaf [a, a + 1) 2**-D gives |X| in
    [#{x: T_x >= (a + 1) 2**-D}, #{x: T_x >= a 2**-D}] (every y past that for a = 0)."""
    top = e.m + 1
    spread = [0] * (top + 2)
    shift = J - depth
    for a in leaves:
        y_lo = len(e.ascending) - bisect.bisect_left(e.ascending, (a + 1) << shift)
        y_hi = top if a == 0 else len(e.ascending) - bisect.bisect_left(e.ascending, a << shift)
        spread[y_lo] += 1
        spread[y_hi + 1] -= 1
    unit = mpq(1, 1 << depth)
    bad, possible = [], 0
    if max(decided) > min(e.m, pmf.m):
        bad.append(max(decided))
    for y in range(min(e.m, pmf.m) + 1):
        possible += spread[y]
        mass = decided.get(y, 0) * unit
        if not pmf.pmf_lo[y] - possible * unit <= mass <= pmf.pmf_hi[y]:
            bad.append(y)
    return bad


@pytest.mark.parametrize("sigma2", ENUM_SIGMA2, ids=str)
def test_every_prefix_is_decided_right_and_the_masses_are_exact(sigma2):
    """Every bit prefix to 1e-4 (:func:`_enumerate`: C table = oracle's rule = model at each
    prefix).  The decided prefixes of |X| = y lie in [T_{y+1}, T_y), so
        decided(y) <= P[|X| = y] <= decided(y) + U_y
    with the model's rigorous pmf (:func:`_mass_violations`); with the sign bit, X = +-y
    each get half of it.  The real samplers then run on the decided prefixes followed by each
    sign bit (core on up to 4000 of them, the oracle on one in eight): X = +y (0) or -y (1),
    bits used j + 1 (j for 0), the prefix alone or one bit shorter running out."""
    sigma2 = Fraction(sigma2)
    decided, leaves, depth, tapes = _enumerate(sigma2)
    assert _mass_violations(exact(sigma2), exact(sigma2), decided, leaves, depth) == []
    gen = np.random.default_rng(8)
    picks = range(len(tapes)) if len(tapes) <= 4000 else gen.choice(len(tapes), 4000, replace=False)
    for count, t in enumerate(picks):
        a, j, y = tapes[t]
        prefix = format(a, f"0{j}b")
        fills = (_core.fill, reference.fill) if count % 8 == 0 else (_core.fill,)
        for fill in fills:
            if y == 0:
                assert _run(fill, sigma2, prefix, 1) == ([0], j, 1)
            else:
                assert _run(fill, sigma2, prefix + "0", 1) == ([y], j + 1, 1)
                assert _run(fill, sigma2, prefix + "1", 1) == ([-y], j + 1, 1)
                assert _run(fill, sigma2, prefix, 1)[0] == "exhausted"
            if j > 1:
                assert _run(fill, sigma2, prefix[:-1], 1)[0] == "exhausted"


def test_the_mass_check_has_power():
    """The check above rejects the masses of sigma2 = 7/3 against the pmf of 12/5 (3% off),
    and against its own pmf once one prefix of 2**-12 moves from |X| = 1 to 2."""
    sigma2 = Fraction(7, 3)
    decided, leaves, depth, _ = _enumerate(sigma2)
    e = exact(sigma2)
    assert _mass_violations(e, exact(Fraction(12, 5)), decided, leaves, depth)
    moved = dict(decided)
    moved[1] -= 1 << (depth - 12)
    moved[2] += 1 << (depth - 12)
    assert _mass_violations(e, e, moved, leaves, depth) == [1, 2]


# --------------------------------------------------------------------------------------------
# 6. Large samples from the operating system
# --------------------------------------------------------------------------------------------


def _variance_p(x: np.ndarray, pmf: dict[int, float]) -> float:
    """Two-sided p-value of m2 = mean(x^2) against E[X^2], Var(m2) = (E X^4 - (E X^2)^2) / n."""
    m2 = sum(p * v * v for v, p in pmf.items())
    m4 = sum(p * v**4 for v, p in pmf.items())
    xs = x.astype(np.float64)
    z = (float(np.mean(xs * xs)) - m2) / math.sqrt((m4 - m2 * m2) / x.size)
    return 2 * NormalDist().cdf(-abs(z))


LARGE_N = 200_000


@pytest.mark.parametrize("sigma2", [Fraction(1, 8), Fraction(7, 3), 100, 10**4, TOP, MAX], ids=str)
def test_large_sample_from_the_os_fits(sigma2):
    """rng=None: chi-square goodness of fit and the second moment, each at ALPHA / 2 (an exact
    sampler fails with probability <= ALPHA = 1e-6, as in test_distribution.py)."""
    sigma2 = Fraction(sigma2)
    x = dgauss.sample_gaussian(sigma2, LARGE_N, method="inversion")
    pmf = gaussian_pmf(sigma2, tail_sd=40 if sigma2 <= 10**4 else 12)
    width = 1 if sigma2 <= 10**4 else 64  # sigma = 256 or 4096: bins of 64 integers
    binned: dict[int, float] = {}
    for v, p in pmf.items():
        binned[v // width] = binned.get(v // width, 0.0) + p
    stat, dof, p = chi2_gof(x // width, binned)
    assert dof >= 2 and p > ALPHA / 2, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"
    assert _variance_p(x, pmf) > ALPHA / 2


def test_large_sample_statistics_have_power():
    """The same statistics reject inversion samples against sigma2 5% off, and a
    sampler whose sign bit is ignored."""
    x = dgauss.sample_gaussian(100, LARGE_N, rng=np.random.PCG64(1), method="inversion")
    wrong = gaussian_pmf(Fraction(105))
    assert chi2_gof(x, wrong)[2] < ALPHA / 2
    assert _variance_p(x, wrong) < ALPHA / 2
    assert chi2_gof(np.abs(x), gaussian_pmf(Fraction(100)))[2] < ALPHA / 2


def test_min_sigma2_is_almost_always_zero():
    """sigma2 = 1/64: P[X != 0] = 2 exp(-32) / Z < 3e-14, so 10**6 OS draws are all 0 except
    with probability < 3e-8."""
    x = dgauss.sample_gaussian(MIN, 10**6, method="inversion")
    assert not x.any()


def test_workers_draw_by_inversion():
    x = dgauss.sample_gaussian(7, 300_000, method="inversion", workers=3)
    stat, dof, p = chi2_gof(x, gaussian_pmf(Fraction(7)))
    assert p > ALPHA, f"chi2={stat:.1f} on {dof} dof, p={p:.2e}"


# --------------------------------------------------------------------------------------------
# 7. Errors
# --------------------------------------------------------------------------------------------


def test_bad_method_is_a_value_error(implementation):
    for method in ("bogus", "Inversion", "", None, 1):
        with pytest.raises(ValueError, match="method"):
            implementation.sample_gaussian(1, 3, method=method)
        with pytest.raises(ValueError, match="method"):
            implementation.sample_laplace(1, 3, method=method)


def test_method_strings_from_numpy_are_accepted():
    """np.str_ passes the method check; the core must then accept it too."""
    for method in ("inversion", "rejection", "auto"):
        a = dgauss.sample_gaussian(3, 5, rng=np.random.PCG64(1), method=np.str_(method))
        b = dgauss.sample_gaussian(3, 5, rng=np.random.PCG64(1), method=method)
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize(
    "sigma2", [Fraction(1, 65), 2**100 + 1, Fraction(2**106 + 1, 2**6)], ids=str
)
def test_inversion_outside_its_range_is_a_value_error(implementation, sigma2):
    with pytest.raises(ValueError, match=r"1/64 <= sigma2 <= 2\*\*100"):
        implementation.sample_gaussian(sigma2, 3, method="inversion")
    # "auto" and "rejection" still draw it
    for method in ("auto", "rejection"):
        a = implementation.sample_gaussian(sigma2, 3, rng=np.random.PCG64(2), method=method)
        assert len(a) == 3


def test_inversion_range_is_inclusive(implementation):
    for sigma2 in (MIN, MAX, 0.015625, 2.0**24, 2**100, 2.0**100):
        implementation.sample_gaussian(sigma2, 3, rng=np.random.PCG64(2), method="inversion")


def test_laplace_inversion_outside_its_range(implementation):
    """The Laplace takes method="inversion" only inside its own range (or, before it had one,
    never): a ValueError naming the scale's range (or the discrete Gaussian)."""
    low = getattr(_methods, "LAPLACE_INVERSION_MIN", None)
    if low is None:
        cases, message = [1], "discrete Gaussian"
    else:
        high = _methods.LAPLACE_INVERSION_MAX
        cases, message = [low / 2, high + 1], "<= scale <="
    for scale in cases:
        with pytest.raises(ValueError, match=message):
            implementation.sample_laplace(scale, 3, method="inversion")
        for fill in (_core.fill, reference.fill):
            scale = Fraction(scale)
            with pytest.raises(ValueError, match=message):
                fill(
                    Kind.DISCRETE_LAPLACE,
                    scale.numerator,
                    scale.denominator,
                    0,
                    np.random.PCG64(1),
                    np.empty(2, object),
                    method="inversion",
                )


def test_decision_tape_is_refused_by_inversion(implementation):
    with pytest.raises(ValueError, match="DecisionTape"):
        implementation.sample_gaussian(1, 1, rng=DecisionTape([0, 0]), method="inversion")
    for fill in (_core.fill, reference.fill):
        with pytest.raises(ValueError, match="DecisionTape"):
            fill(GAUSS, 1, 1, 0, DecisionTape([0, 0]), np.empty(1, object), method="inversion")
    # rejection still takes one
    out = np.empty(1, object)
    with pytest.raises(Exhausted):
        _core.fill(GAUSS, 1, 1, 0, DecisionTape([]), out, method="rejection")


class _Boom(BaseException):
    """Not an Exception: it must still come out of the GIL-holding step."""


@pytest.mark.parametrize("error", [RuntimeError("no digits"), _Boom("boom")], ids=repr)
def test_an_error_past_bit_64_propagates(monkeypatch, error):
    """gaussian_floors failing at p = 128, under a 64-bit tie: fill raises that very error,
    from the core (through its nogil loop), and everything works after.  (The oracle computes
    its thresholds on its own: it does not call gaussian_floors.)"""
    sigma2 = Fraction(7, 3)
    e = exact(sigma2)
    real = _inversion.gaussian_floors

    def failing(s, p):
        if p == 128:
            raise error
        return real(s, p)

    tie = _tie(e, 2, 70) + "0" * 64
    clean = _run(_core.fill, sigma2, tie, 1)
    monkeypatch.setattr(_inversion, "gaussian_floors", failing)
    for count, dtype in ((1, object), (3, np.int64)):
        with pytest.raises(type(error)) as info:
            _core.fill(
                GAUSS, 7, 3, 0, Tape(tie + "1" * 64), np.empty(count, dtype), method="inversion"
            )
        assert info.value is error
    out, tape = np.empty(1, object), Tape(tie + "1" * 64)  # the oracle's own thresholds:
    assert reference.fill(GAUSS, 7, 3, 0, tape, out, method="inversion") > 64  # untouched
    # a run that never goes past bit 64 does not call it
    short = _tie(e, 2, 40) + "0"
    assert _run(_core.fill, sigma2, short, 1) == e.expect(short, 1)
    monkeypatch.undo()
    assert _run(_core.fill, sigma2, tie, 1) == clean
    assert dgauss.sample_gaussian(sigma2, 1000, method="inversion").size == 1000


# --------------------------------------------------------------------------------------------
# 8. The table cache and threads
# --------------------------------------------------------------------------------------------


def test_tables_are_cached():
    a = _core.gauss_table(12347, 3)
    assert _core.gauss_table(12347, 3) is a
    assert any(t is a for t in _core._INV_TABLES.values())
    b = _core.gauss_table(12347, 3, False)
    assert b is not a and _core.gauss_table(12347, 3, False) is b
    dgauss.sample_gaussian(Fraction(12347, 3), 10, method="inversion")
    assert _core.gauss_table(12347, 3) is a  # the sampler used the cached table


def test_cache_respects_its_byte_limit(monkeypatch):
    monkeypatch.setattr(_core, "_INV_TABLES", OrderedDict())
    sizes = {}
    params = [(10**4 + i, 1) for i in range(6)]
    for n, d in params:
        sizes[n] = _core.gauss_table(n, d).nbytes
    limit = 3 * max(sizes.values()) + 100
    monkeypatch.setattr(_core, "INV_CACHE_BYTES", limit)
    _core.gauss_table(*params[0])  # touched: most recently used
    for i in range(6, 16):
        _core.gauss_table(10**4 + i, 1)
        total = sum(t.nbytes for t in _core._INV_TABLES.values())
        assert total <= limit
    kept = list(_core._INV_TABLES)
    assert 2 <= len(kept) <= 3 and 10**4 + 15 in kept[-1]
    assert not any(params[0][0] in key for key in kept)
    # one table larger than the limit is still kept (alone)
    monkeypatch.setattr(_core, "INV_CACHE_BYTES", 1)
    big = _core.gauss_table(2**24 - 3, 1)
    assert list(_core._INV_TABLES.values()) == [big]
    assert _core.gauss_table(2**24 - 3, 1) is big


_EVICTION = r"""
import threading, time
from collections import OrderedDict
import numpy as np
import dgauss
from dgauss import _core

sigma2, n = SIGMA2, 3 * 10**6
expected = dgauss.sample_gaussian(sigma2, n, rng=np.random.PCG64(11), method="inversion")
table = _core.gauss_table(sigma2, 1)
# every array the table holds: thr and guide (plain or blocked), and a blocked table's rwords
arrays = [(a.size, a.dtype) for a in (getattr(table, name, None) for name in ARRAYS)
          if a is not None]
assert len(arrays) == EXPECTED_ARRAYS, arrays
del table
_core._INV_TABLES = OrderedDict()   # A builds its own table, held by the cache and its job only
_core.INV_CACHE_BYTES = 1
source = np.random.PCG64(11)
result = {}

def a():
    result["a"] = dgauss.sample_gaussian(sigma2, n, rng=source, method="inversion")

def locked():  # A holds the generator's lock (an RLock) while its job runs
    if source.lock.acquire(blocking=False):
        source.lock.release()
        return False
    return True

thread = threading.Thread(target=a)
thread.start()
deadline = time.monotonic() + 30
while not locked() and thread.is_alive() and time.monotonic() < deadline:
    time.sleep(0.0005)
junk, running = [], None
for i in range(30):
    _core.gauss_table(i + 1, 1)  # evicts the last table (A's, first)
    # were A's table freed, these would likely take its memory: zeroed arrays of its sizes
    junk += [np.zeros(size, dtype) for size, dtype in arrays]
    if i == 0:
        running = locked()
evicted = not any(sigma2 in key for key in _core._INV_TABLES)
thread.join()
print("evicted while running:", evicted and running)
print("same samples:", result["a"].tolist() == expected.tolist())
"""


@pytest.mark.parametrize("sigma2, arrays", [(2**16 - 5, 2), (2**24 - 5, 3)], ids=str)
def test_a_table_evicted_while_a_job_uses_it(sigma2, arrays):
    """Thread A draws 3 * 10**6 samples at sigma2 (a plain table: thr and guide; a blocked one:
    also rwords) from a seeded generator; once it holds the generator's lock (its table built
    and in use) the main thread builds 30 small tables with a 1-byte cache, evicting A's
    table, and allocates zeroed arrays of the sizes of each of the table's arrays, which would
    take its memory were it freed.  A's samples must equal a run without the eviction.  In a
    fresh interpreter: a use after free may crash it."""
    script = (
        f"SIGMA2, EXPECTED_ARRAYS = {sigma2}, {arrays}\n"
        "ARRAYS = ('thr', 'guide', 'rwords')\n" + _EVICTION
    )
    done = run_python(script, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "evicted while running: True" in done.stdout, "A finished first: inconclusive"
    assert "same samples: True" in done.stdout


@pytest.mark.long
def test_threads_building_and_using_tables_agree_with_a_serial_run(monkeypatch):
    """Eight threads start together on fresh sigma2 (two share one; two take the Python
    words), building their tables concurrently; each run equals the same seeded run alone."""
    jobs = [
        (Fraction(2**24 - 17), True),
        (Fraction(2**24 - 17), True),
        (Fraction(10**6 + 3), True),
        (Fraction(123457, 11), True),
        (Fraction(1, 3), True),
        (Fraction(2**23 + 9), False),
        (Fraction(777, 13), False),
        (Fraction(5, 2), True),
    ]

    def run(i, sigma2, fixed_point):
        out = np.empty(1_000_000, dtype=np.int64)
        src = np.random.PCG64(100 + i)
        used = tapes.fill(GAUSS, _core.fill, sigma2, 0, src, out, fixed_point=fixed_point)
        return out.tolist(), used

    serial = [run(i, *job) for i, job in enumerate(jobs)]
    monkeypatch.setattr(_core, "_INV_TABLES", OrderedDict())
    barrier = threading.Barrier(len(jobs))

    def threaded(i):
        barrier.wait()
        return run(i, *jobs[i])

    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(threaded, range(len(jobs))))
    assert results == serial
    assert len(_core._INV_TABLES) == len(set(jobs)) == 7
