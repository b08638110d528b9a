"""The discrete Laplace by blocked inversion, 2**8 <= scale <= 2**20, against an independent model.

docs/contract.md, item 9: with t = scale, p = exp(-1/t) and T_x = P[|X| >= x] = 2 p**x / (1 + p),
L = 2**k is the largest power of two, at most 2**14 (MAX_BLOCK), with 32 L <= t (SPREAD) or
L (L - 1) <= t (the second decides below t = 1024), and c = L - ceil(L (L - 1) / t); then

1. the rule of item 9 (read R bit by bit until no threshold shares its first j digits) on
   theta_{2b+1} = T_{1+Lb}, theta_{2b+2} = T_{1+Lb+c}, b = 0, 1, ..., gives s;
2. s = 0: |X| = 0; s = 2b + 1: U is the next k raw bits; s = 2b + 2: U is the rule on a fresh R'
   against rho_u = F(u) / F(0), u = 1 .. L - 1, F(u) = L (p**u - p**L) - (L - u)(1 - p**c);
   |X| = 1 + Lb + U;
3. one sign bit when |X| > 0 (1: negative).

Everything is compared with ``Model``: p**u, T_x and rho_u enclosed from scratch with MPFR and
directed rounding (p**u and T_x by tests/_laplace_model.py, as for test_laplace_inversion.py's
model; no code shared with dgauss._inversion), L and c from the definition, giving
exact floor(2**J theta_s), floor(2**J rho_u) (J = 256), the whole bit-level rule (value and
bits read, or running out) and rigorous bounds on the pmf.  The draw from theta_s and rho_u,
and the checks written the same way for the blocked Gaussian (tests/test_gaussian_blocked.py),
are in tests/_blocked.py.  The file covers

0. the model itself: the blocked scheme's masses are the Laplace pmf (the contract's proof,
   checked numerically), the uniform-mass inequality, the uniform part's share, the closed form;
1. laplace_blocks: (k, c) at hand-computed scales and at the edges of both rules for L, of the
   cap and of the rounding of c;
2. the words: the core's thr and rthr (fixed point and not), LaplaceFloors(blocks) and
   residual_floors at 64 and 128 bits, their decide(), the core's decision on 64 bits;
3. the same bits: core = oracle on seeded generators (values, bits used, generator state);
4. tapes forcing each path (s = 0, odd, even; ties past bit 64 in both inversions; R or R'
   zero for 64 bits; mid-word starts, short last words, running out in every step), value
   and bits read predicted by the model;
5. every bit prefix inside windows of R (around thresholds, inside each branch) to 1e-4 of
   their mass at 2**8, 2**8 + 1/3, 992 - 1/2**40, 1000 and 2**12, each run and the conditional
   masses against the model (at 2**20, where L = 2**14, and from R's first bit, where the
   uniform part's 2 L tapes per R make it up to a million runs, to 1e-4 at 2**8 and 2**8 + 1/3
   and 1e-2 above: marked slow);
6. 10**6 samples from the OS (chi-square on magnitude and on the position inside a block);
7. the bits read: the model's exact expectation, and within 3 bits of the entropy.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from gmpy2 import mpfr, mpq

import _blocked
import _inversion_tapes as tapes
import dgauss
from _blocked import ONES, BlockedModel, J
from _blocked import mid as _mid
from _blocked import nd as _nd
from _blocked import q as _q
from _laplace_model import LaplaceTails, entropy_bits
from _laplace_model import pmf as laplace_pmf
from _stats import ALPHA
from dgauss import _core, _inversion, _methods, reference
from dgauss._kinds import Kind
from dgauss.testing import check, enumerate_bits, enumerate_sampler

LAP = Kind.DISCRETE_LAPLACE
BLOCKED_MIN, MAX = Fraction(2**8), Fraction(2**20)

#: S and the cap in "L = 2**k, the largest power of two, at most MAX_BLOCK, with S L <= t or
#: L (L - 1) <= t" (docs/contract.md, item 9).
SPREAD = 32
MAX_BLOCK = 2**14


def test_constants():
    """The range's ends, and the contract's S, cap and rules for L (the model uses SPREAD and
    MAX_BLOCK): "largest power of two, at most 2^14, with 32L ≤ t or L(L − 1) ≤ t (the second
    decides below t = 1024)", 1024 = SPREAD**2 (test_model_blocks_and_the_uniform_mass_inequality
    checks which rule decides)."""
    assert _methods.LAPLACE_BLOCKED_MIN == BLOCKED_MIN
    assert _methods.LAPLACE_BLOCKED_MAX == MAX
    assert 1 << _methods.LAPLACE_BLOCK_MAX_K == MAX_BLOCK
    assert _methods.LAPLACE_BLOCK_MAX_K == 14
    contract = (Path(__file__).resolve().parents[1] / "docs" / "contract.md").read_text("utf-8")
    said = re.findall(
        r"largest\s+power\s+of\s+two,\s+at\s+most\s+2\^(\d+),\s+with\s+(\d+)L\s+≤\s+t\s+or"
        r"\s+L\(L\s+−\s+1\)\s+≤\s+t\s+\(the\s+second\s+decides\s+below\s+t\s+=\s+(\d+)\)",
        contract,
    )
    assert said == [(str(MAX_BLOCK.bit_length() - 1), str(SPREAD), str(SPREAD * SPREAD))]


# --------------------------------------------------------------------------------------------
# The independent model
# --------------------------------------------------------------------------------------------

#: Working precision: F(u) loses at most about 30 bits to cancellation (F(L - 1) ~ L^2 / t^2).
PREC = J + 192


class Model(LaplaceTails, BlockedModel):
    """Blocked inversion of Lap_Z(0, t) from scratch.  p**u and T_x = 2 p**x / (1 + p) as in
    _laplace_model.LaplaceTails (p**u in [exp(-up(u/t)) rounded down, exp(-down(u/t)) rounded
    up]); F(u) = L (p**u - p**L) - (L - u)(1 - p**c), F(0) = L (p**c - p**L), rho_u = F(u) /
    F(0): each operation rounded the safe way at PREC bits, so every quantity is an interval;
    ``floor(x)`` = floor(2**J T_x) and ``rho_floors`` = floor(2**J rho_u) are checked decided
    (both ends have one floor).  The draw from them (``blocked``, ``rule``; ``digits(s, i)`` /
    ``bit(s, i)`` are theta_s's) is _blocked.BlockedModel's."""

    def __init__(self, scale: Fraction):
        LaplaceTails.__init__(self, scale, J, PREC)
        assert self.scale >= 64
        size = 1  # L: while 2 L is allowed, by either rule
        while 2 * size <= MAX_BLOCK and (
            SPREAD * (2 * size) <= self.scale or 2 * size * (2 * size - 1) <= self.scale
        ):
            size *= 2
        self.L, self.k = size, size.bit_length() - 1
        self.c = size - math.ceil(Fraction(size * (size - 1)) / self.scale)
        p_lo, p_hi = self.power(1)
        with self.down:
            self.q_lo = 1 - p_hi  # 1 - p
        with self.up:
            self.q_hi = 1 - p_lo
        self.p_big = self.power(self.L)  # p**L
        self.p_cut = self.power(self.c)  # p**c

    # (p**u, T_x, floor(x) = floor(2**J T_x), first_below(v), mass(y): LaplaceTails)

    # ---- step 1: theta ----

    def x_of(self, s: int) -> int:
        """theta_s = T_{x_of(s)}: 1 + Lb for s = 2b + 1, 1 + Lb + c for s = 2b + 2."""
        b, odd = divmod(s - 1, 2)
        return 1 + self.L * b + (self.c if odd else 0)

    def theta(self, s: int):
        """(lo, hi) mpfr bounds on theta_s (theta_0 = T_0 = 1)."""
        return self.threshold(self.x_of(s) if s else 0)

    def theta_floor(self, s: int) -> int:
        return self.floor(self.x_of(s))

    def theta_first_below(self, v: int) -> int:
        """The first s >= 1 with floor(2**J theta_s) < v: the first s with x_of(s) at or past
        the first x whose T_x is below."""
        b, r = divmod(self.first_below(v) - 1, self.L)
        return 2 * b + (1 if r == 0 else 2 if r <= self.c else 3)

    def theta_shares(self, a: int, j: int) -> bool:
        if a == 0:
            return True  # the thresholds tend to 0
        return self.theta_floor(self.theta_first_below((a + 1) << (J - j))) >> (J - j) == a

    def theta_count(self, a: int, j: int) -> int:
        """#{s: floor(2**j theta_s) > a}."""
        return self.theta_first_below((a + 1) << (J - j)) - 1

    # ---- step 2: rho ----

    def rho(self, u: int):
        """(lo, hi) mpfr bounds on rho_u (1 for u <= 0, 0 for u >= L)."""
        if u <= 0:
            return mpfr(1), mpfr(1)
        if u >= self.L:
            return mpfr(0), mpfr(0)
        big, (pl_lo, pl_hi), (pc_lo, pc_hi) = self.L, self.p_big, self.p_cut
        pu_lo, pu_hi = self.power(u)
        with self.down:
            gap_lo = 1 - pc_hi  # 1 - p**c
            spread_lo = (big - u) * gap_lo
            f0_lo = big * (pc_lo - pl_hi)
        with self.up:
            gap_hi = 1 - pc_lo
            spread_hi = (big - u) * gap_hi
            f0_hi = big * (pc_hi - pl_lo)
            f_hi = big * (pu_hi - pl_lo) - spread_lo
        with self.down:
            f_lo = big * (pu_lo - pl_hi) - spread_hi
            assert f_lo > 0, (self.scale, u, "F(u) not positive")
            lo = f_lo / f0_hi
        with self.up:
            hi = f_hi / f0_lo
        return lo, hi

    def rho_bounds(self, b: int, u: int):
        """rho(u): the same rho_u in every block b."""
        return self.rho(u)

    @functools.cached_property
    def rho_floors(self) -> list[int]:
        """floor(2**J rho_u), u = 1 .. L - 1 (decreasing)."""
        floors = [self.floor_of(*self.rho(u), ("rho", u)) for u in range(1, self.L)]
        assert all(a > b for a, b in zip(floors, floors[1:], strict=False))
        return floors

    @functools.cached_property
    def rho_ascending(self) -> list[int]:
        return self.rho_floors[::-1]

    def rho_word(self, u: int, p: int = 64) -> int:
        return self.rho_floors[u - 1] >> (J - p) if 1 <= u < self.L else 0

    def rho_count(self, a: int, j: int) -> int:
        """#{u: floor(2**j rho_u) > a}."""
        ascending = self.rho_ascending
        return len(ascending) - bisect.bisect_left(ascending, (a + 1) << (J - j))

    def rho_shares(self, a: int, j: int) -> bool:
        if a == 0:
            return True  # rho_u = 0 for u >= L
        n = self.rho_count(a, j)  # rho_1 .. rho_n are above; rho_{n+1} is the next
        return n + 1 < self.L and self.rho_floors[n] >> (J - j) == a

    def rho_digits(self, u: int, i: int) -> str:
        return format(self.rho_floors[u - 1] >> (J - i), f"0{i}b")

    def rho_rule(self, bits: str, b: int = 0):
        """Step 2's rule on R' = 0.bits... (the same rho_u in every block b)."""
        return tapes.inversion_rule(bits, self.rho_shares, self.rho_count, J)


@functools.cache
def model(scale) -> Model:
    return Model(Fraction(scale))


# --------------------------------------------------------------------------------------------
# 0. The model: the contract's scheme gives the Laplace pmf
# --------------------------------------------------------------------------------------------

#: scale -> (k, c), computed by hand: L the larger of the largest power of two with 32 L <= t
#: and that with L (L - 1) <= t, at most 2**14; c = L - ceil(L (L - 1) / t).
BLOCKS = {
    BLOCKED_MIN: (4, 15),  # L = 16: 16 * 15 = 240 <= 256 < 32 * 31 (32 L: 8); 240 / 256 = 0.94
    Fraction(3 * 2**8 + 1, 3): (4, 15),  # 240 * 3 / 769 = 0.94
    Fraction(992) - Fraction(1, 2**40): (4, 15),  # still L = 16 (32 L: 16): 240 / t = 0.24
    Fraction(992): (5, 31),  # L = 32: 32 * 31 = 992 <= t (32 L: 16); 992 / 992 = 1 exactly
    Fraction(1000): (5, 31),  # 992 / 1000 = 0.99
    Fraction(1023): (5, 31),  # 992 / 1023 = 0.97 (32 L: 16; 64 * 63 = 4032 > t)
    Fraction(1024): (5, 31),  # 32 L = 1024 <= t: L = 32 by both; 992 / 1024 = 0.97
    Fraction(2047): (5, 31),  # still L = 32 (64 * 32 = 2048 > t): 992 / 2047 = 0.48
    Fraction(2048): (6, 62),  # L = 64: 32 * 64 = 2048 (64 * 63 = 4032 > t); 4032 / 2048 = 1.97
    Fraction(2**12): (7, 124),  # L = 128: 32 * 128 = 4096; 16256 / 4096 = 3.97
    Fraction(3 * 2**12 + 1, 3): (7, 124),  # 16256 * 3 / 12289 = 3.97
    Fraction(2**13) - Fraction(1, 10**9): (7, 126),  # still L = 128: 16256 / t = 1.98
    Fraction(2**13): (8, 248),  # L = 256: 65280 / 8192 = 7.97
    Fraction(10**4): (8, 249),  # 65280 / 10**4 = 6.53
    Fraction(16320) - Fraction(1, 2**40): (8, 251),  # 65280 / t just above 4
    Fraction(16320): (8, 252),  # 65280 / t = 4 exactly: the ceiling is 4
    Fraction(16320) + Fraction(1, 2**40): (8, 252),  # just below 4
    Fraction(2**14) - Fraction(1, 7): (8, 252),  # still L = 256: 65280 / t = 3.98
    Fraction(2**14): (9, 496),  # L = 512: 261632 / 16384 = 15.97
    Fraction(32640): (9, 503),  # 261632 / 32640 = 8.02
    Fraction(10**5): (11, 2006),  # L = 2048: 4190208 / 10**5 = 41.9
    # L = 8192 (32 * 16384 > t): 8192 * 8191 / t = 67100672 / t = 127.98
    Fraction(2**19) - Fraction(1, 3): (13, 8064),
    # L = 16384 = 2**14 by 32 L <= t and by the cap: 268419072 / 2**19 = 511.97
    Fraction(2**19): (14, 15872),
    Fraction(10**6): (14, 16115),  # L = 16384 (32 L: 16384): 268419072 / 10**6 = 268.4
    MAX - Fraction(1, 3): (14, 16128),  # still L = 16384: 268419072 / t = 255.98
    MAX: (14, 16128),  # L = 16384, the cap (32 L: 32768): 268419072 / 2**20 = 255.98
}
_SEEDED = np.random.default_rng(20250607)
RANDOM_SCALES = [  # log-uniform in [2**8, 2**20], denominators up to 2**30
    min(MAX, max(BLOCKED_MIN, Fraction(int(2 ** (u + v)), int(2**v))))
    for u, v in zip(_SEEDED.uniform(8, 20, 6), _SEEDED.uniform(0, 30, 6), strict=True)
]
MAIN = [
    BLOCKED_MIN,
    Fraction(3 * 2**8 + 1, 3),
    Fraction(1000),
    Fraction(2**12),
    Fraction(10**4),
    Fraction(10**5),
    MAX,
]


@pytest.mark.parametrize("scale", list(BLOCKS) + RANDOM_SCALES, ids=str)
def test_model_blocks_and_the_uniform_mass_inequality(scale):
    """The model's (k, c) are the hand-computed ones; L is the largest allowed power of two
    (L <= 2**14 with 32 L <= t or L (L - 1) <= t, and 2 L is not: above the cap or failing
    both), the rule L (L - 1) <= t deciding below 1024 and 32 L <= t from there on (the
    contract's remark); 1 <= c < L; and (the model, rigorously) 1 - p**c <= L p**(L - 1) (1 -
    p), so that no residual mass is negative: F(L - 1) > 0; the uniform part's share (1 - p**c)
    / (1 - p**L) >= c / L is at least 31/32 from 1024 on, and c = L - 1 >= 15 below."""
    m = model(scale)
    big = m.L
    if scale in BLOCKS:
        assert (m.k, m.c) == BLOCKS[scale]
    allowed = lambda size: (
        size <= MAX_BLOCK and (SPREAD * size <= scale or size * (size - 1) <= scale)
    )
    assert big == 1 << m.k and allowed(big) and not allowed(2 * big)
    if scale < SPREAD * SPREAD:
        assert big * (big - 1) <= scale and m.c == big - 1 >= 15
    else:
        assert SPREAD * big <= scale and SPREAD * m.c >= (SPREAD - 1) * big
    assert 1 <= m.c < big
    below_last = m.power(big - 1)[0]  # p**(L - 1), from below
    with m.up:
        lhs = 1 - m.p_cut[0]
        top = 1 - m.p_big[0]  # 1 - p**L
    with m.down:
        rhs = big * below_last * m.q_lo
        share = (1 - m.p_cut[1]) / top  # (1 - p**c) / (1 - p**L), from below
    assert lhs < rhs
    assert m.rho(big - 1)[0] > 0
    assert share >= (mpq(SPREAD - 1, SPREAD) if scale >= SPREAD * SPREAD else mpq(15, 16))


@pytest.mark.parametrize("scale", MAIN, ids=str)
def test_model_scheme_gives_the_laplace_pmf(scale):
    """The contract's proof, checked on the model's enclosures: P[|X| = 1 + Lb + u] =
    (theta_{2b+1} - theta_{2b+2}) / L + (theta_{2b+2} - theta_{2b+3})(rho_u - rho_{u+1}) is
    T_{1+Lb+u} - T_{2+Lb+u} (rigorous bounds overlapping, 2**-300 wide) at several b and u;
    the residual's thresholds decrease strictly from rho_1 < 1 to rho_{L-1} > 0; the model's
    pmf agrees with tanh(1/(2t)) exp(-y/t) (twice it for y > 0) at 50 digits
    (_laplace_model.pmf)."""
    m = model(scale)
    big, c = m.L, m.c
    gen = np.random.default_rng(5)
    for b in sorted({0, 1, 7, int(gen.integers(8, 40 * scale // big))}):
        th = [_q(m.threshold(m.x_of(s))) for s in (2 * b + 1, 2 * b + 2, 2 * b + 3)]
        uniform = ((th[0][0] - th[1][1]) / big, (th[0][1] - th[1][0]) / big)
        residual = (th[1][0] - th[2][1], th[1][1] - th[2][0])
        us = {0, 1, 2, c - 1, c, c + 1, big - 2, big - 1, int(gen.integers(big))}
        for u in sorted(u for u in us if u < big):
            r0, r1 = _q(m.rho(u)), _q(m.rho(u + 1))
            lo = uniform[0] + residual[0] * (r0[0] - r1[1])
            hi = uniform[1] + residual[1] * (r0[1] - r1[0])
            t_lo, t_hi = m.mass(1 + big * b + u)
            assert lo <= t_hi and t_lo <= hi, (b, u)
            assert hi - lo < mpq(1, 2**300) and t_hi - t_lo < mpq(1, 2**300)
    assert m.rho(1)[1] < 1 and m.rho(big - 1)[0] > 0
    assert len(m.rho_floors) == big - 1  # (checked strictly decreasing)
    for y in (0, 1, 2, int(scale), int(5 * scale)):
        true = laplace_pmf(scale, y)
        lo, hi = m.mass(y)
        assert float(lo) <= true * (1 + 1e-12) and true <= float(hi) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------
# 1. laplace_blocks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", list(BLOCKS) + RANDOM_SCALES, ids=str)
def test_laplace_blocks(scale):
    """laplace_blocks(scale) = (k, c): the model's (independent; hand-computed for BLOCKS);
    the core's table has the same k and cut."""
    m = model(scale)
    assert _methods.laplace_blocks(Fraction(scale)) == (m.k, m.c)
    tab = _table(scale)
    assert (tab.k, tab.cut) == (m.k, m.c)


@pytest.mark.parametrize(
    "scale",
    [Fraction(1, 64), Fraction(7, 3), Fraction(255), BLOCKED_MIN - Fraction(1, 2**50)],
    ids=str,
)
def test_laplace_blocks_is_none_below_the_blocked_range(scale):
    assert _methods.laplace_blocks(scale) is None


# --------------------------------------------------------------------------------------------
# 2. The words
# --------------------------------------------------------------------------------------------


def _table(scale, fixed_point=None):
    n, d = _nd(scale)
    if fixed_point is None:
        return _core.laplace_table(n, d)
    return _core.laplace_table(n, d, fixed_point)


WORD_SCALES = MAIN + [
    Fraction(992) - Fraction(1, 2**40),
    Fraction(992),
    Fraction(2047),
    Fraction(3 * 2**12 + 1, 3),
    Fraction(16320),
    Fraction(2**19) - Fraction(1, 3),
    Fraction(2**19),
    Fraction(10**6),
    MAX - Fraction(1, 3),
]


@pytest.mark.parametrize("scale", WORD_SCALES + RANDOM_SCALES, ids=str)
def test_core_tables_are_the_exact_floors(scale):
    """The core's table: thr = [2**64 - 1, floor(2**64 theta_s) for s = 1 .. K, 0] with K the
    model's last s whose word is not 0, and rthr = [2**64 - 1, floor(2**64 rho_u) for u = 1 ..
    L - 1, 0], every word the model's; k and cut the model's; decided in fixed point."""
    m = model(scale)
    tab = _table(scale)
    assert (tab.k, tab.cut) == (m.k, m.c)
    assert tab.thr.dtype == np.uint64 and tab.rthr.dtype == np.uint64
    thr, rthr = tab.thr.tolist(), tab.rthr.tolist()
    last = m.theta_last()
    assert len(thr) == last + 2 and thr[0] == ONES and thr[-1] == 0
    assert thr[1:-1] == [m.theta_word(s) for s in range(1, last + 1)]
    assert len(rthr) == m.L + 1 and rthr[0] == ONES and rthr[-1] == 0
    assert rthr[1:-1] == [m.rho_word(u) for u in range(1, m.L)]
    assert tab.fixed_point


@pytest.mark.parametrize(
    "scale", [BLOCKED_MIN, Fraction(3 * 2**8 + 1, 3), Fraction(1000), Fraction(2**12), MAX], ids=str
)
def test_core_tables_without_fixed_point_are_the_same(scale):
    """fixed_point=False (every word from the exact integer bounds): the same thr and rthr."""
    fast, slow = _table(scale, True), _table(scale, False)
    assert not slow.fixed_point
    assert slow.thr.tolist() == fast.thr.tolist() and slow.rthr.tolist() == fast.rthr.tolist()
    assert (slow.k, slow.cut) == (fast.k, fast.cut)


def _theta_points(m: Model, gen) -> list[int]:
    last = m.theta_last()
    picks = {1, 2, 3, 4, last - 1, last, last + 1, last + 2}
    picks |= {int(v) for v in gen.integers(1, last + 3, 20)}
    return sorted(picks)


@pytest.mark.parametrize("scale", MAIN + RANDOM_SCALES[:2], ids=str)
def test_python_floors_are_the_exact_floors(scale):
    """LaplaceFloors(scale, p, blocks=(k, c)).word(s) = floor(2**p theta_s) and
    residual_floors(scale, p).words = [floor(2**p rho_u), u = 1 .. L - 1], p = 64 and 128, the
    model's; and decide(a, j), for R's first j bits a (random, and each threshold's own digits
    and their neighbours), is the model's rule: None where a threshold shares them, else the
    count above."""
    scale = Fraction(scale)
    m = model(scale)
    blocks = (m.k, m.c)
    gen = np.random.default_rng(12)
    for p in (64, 128):
        floors = _inversion.LaplaceFloors(scale, p, blocks)
        for s in _theta_points(m, gen):
            assert floors.word(s) == m.theta_word(s, p), (s, p)
        want = [m.rho_word(u, p) for u in range(1, m.L)]
        assert _inversion.residual_floors(scale, p).words == want, p
    theta = _inversion.LaplaceFloors(scale, 64, blocks)
    rho = _inversion.residual_floors(scale, 64)
    cases = []
    for j in (1, 2, 5, 9, 17, 30, 64):
        cases += [(int(gen.integers(0, 2**j, dtype=np.uint64)), j) for _ in range(3)]
        for s in (1, 2, 3, int(gen.integers(1, m.theta_last()))):
            w = m.theta_word(s) >> (64 - j)
            cases += [(w, j), (w + 1, j), (max(0, w - 1), j)]
        for u in (1, 2, m.L - 1, int(gen.integers(1, m.L))):
            w = m.rho_word(u) >> (64 - j)
            cases += [(w, j), (min(w + 1, 2**j - 1), j), (max(0, w - 1), j)]
    for a, j in cases:
        want = None if m.theta_shares(a, j) else m.theta_count(a, j)
        assert theta.decide(a, j) == want, ("theta", a, j)
        want = None if m.rho_shares(a, j) else m.rho_count(a, j)
        assert rho.decide(a, j) == want, ("rho", a, j)


def _word_points(words: list[int], gen, guide_bits: int) -> list[int]:
    """64-bit words r to decide: uniform, with leading zeros, each table word (of a sample of
    them) and its neighbours, and both sides of guide-bucket edges (top ``guide_bits`` bits)."""
    rs = [int(v) for v in gen.integers(0, 2**63, 200, dtype=np.uint64) * 2 + 1]
    rs += [r >> int(gen.integers(1, 64)) for r in rs[:100]]
    picks = gen.choice(len(words), min(len(words), 200), replace=False)
    rs += [words[i] + e for i in picks.tolist() for e in (-1, 0, 1)]
    edges = gen.integers(1, 2**guide_bits, 50).tolist()
    rs += [(g << (64 - guide_bits)) + e for g in edges for e in (-1, 0)]
    return sorted({r for r in [*rs, 0, 1, ONES] if 0 <= r < 2**64})


@pytest.mark.parametrize(
    "scale", [BLOCKED_MIN, Fraction(1000), Fraction(10**5), Fraction(2**19), MAX], ids=str
)
def test_the_cores_decision_on_64_bits(scale):
    """The core's decision on R's (or R''s) first 64 bits r (_core.inversion_word, the table
    and its guide) = the model's rule on them: the bits needed (65 when 64 do not decide)
    and, when decided, the count s (or U); for r uniform, with leading zeros, equal to a word
    and one off it, and at guide-bucket edges."""
    n, d = _nd(scale)
    m = model(scale)
    tab = _table(scale)
    gen = np.random.default_rng(13)
    for residual, words, guide_bits, rule in (
        (False, tab.thr.tolist()[1:-1], tab.guide_bits, m.theta_rule),
        (True, tab.rthr.tolist()[1:-1], tab.rguide_bits, m.rho_rule),
    ):
        needs = []
        for r in _word_points(words, gen, guide_bits):
            need, count = _core.inversion_word(n, d, r, laplace=True, residual=residual)
            found = rule(format(r, "064b"))
            want = (65, None) if found is None else (found[1], found[0])
            assert need == want[0] and (need == 65 or count == want[1]), (residual, r, want)
            needs.append(need)
        assert 65 in needs and min(needs) < 20


# --------------------------------------------------------------------------------------------
# 3. Core and oracle on the same bits
# --------------------------------------------------------------------------------------------

BITGENS = [np.random.PCG64, np.random.Philox, np.random.SFC64, np.random.MT19937]

PARITY = [  # (scale, mu, dtype, n)
    (BLOCKED_MIN, 0, None, 300),
    (Fraction(3 * 2**8 + 1, 3), 11, object, 300),
    (Fraction(1000), -(2**50), np.int64, 300),
    (Fraction(3 * 2**12 + 1, 3), -7, np.int64, 300),
    (Fraction(10**4), 10**20, object, 200),
    (Fraction(10**5), 2**40, np.int64, 150),
    (Fraction(10**6), -3, object, 100),
    (MAX, 5, None, 100),
]


def _plain(state):
    """A bit generator's state with arrays as lists (comparable with ==)."""
    if isinstance(state, dict):
        return {key: _plain(v) for key, v in state.items()}
    if isinstance(state, np.ndarray):
        return state.tolist()
    return state


@pytest.mark.parametrize("bitgen", BITGENS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("scale, mu, dtype, n", PARITY, ids=lambda v: str(v))
@pytest.mark.long
def test_core_and_oracle_read_the_same_bits(bitgen, scale, mu, dtype, n):
    """sample_laplace(method="inversion") from dgauss and dgauss.reference on generators
    seeded alike: the same values and dtype, both generators left in the same state; then the
    backends' fill on a bare bit generator: the same values and bits used, the same state.
    The values spread as Lap_Z(mu, t) does (both signs, some beyond t)."""
    gens = [np.random.Generator(bitgen(2024)) for _ in range(2)]
    options = {"mu": mu, "dtype": dtype, "method": "inversion"}
    core = dgauss.sample_laplace(scale, n, rng=gens[0], **options)
    ref = reference.sample_laplace(scale, n, rng=gens[1], **options)
    assert core.dtype == ref.dtype and core.tolist() == ref.tolist()
    assert _plain(gens[0].bit_generator.state) == _plain(gens[1].bit_generator.state)
    assert _plain(gens[0].bit_generator.state) != _plain(bitgen(2024).state)
    x = np.asarray(core, dtype=object) - mu
    assert min(x) < 0 < max(x) and max(abs(v) for v in x) > scale
    runs = []
    for fill in (_core.fill, reference.fill):
        src = bitgen(99)
        out = np.empty(n, dtype=np.int64 if abs(mu) < 2**62 - 2**30 else object)
        used = fill(LAP, *_nd(scale), mu, src, out, method="inversion")
        runs.append((used, out.tolist(), _plain(src.state)))
    assert runs[0] == runs[1]
    assert runs[0][0] > n * 10


# --------------------------------------------------------------------------------------------
# 4. Tapes forcing each path, predicted by the model
# --------------------------------------------------------------------------------------------


#: run_tape(scale, bits, count=1, mu=0): core and oracle on one tape, each = the model's
#: prediction (_blocked.tape_runner); returns the prediction.
run_tape = _blocked.tape_runner(LAP, model)


def _rho_r(m: Model, u: int, below: bool) -> str:
    return _blocked.near(m.rho_floors[u - 1], below)


TAPE_SCALES = [
    BLOCKED_MIN,
    Fraction(3 * 2**8 + 1, 3),
    Fraction(1000),
    Fraction(3 * 2**12 + 1, 3),
    Fraction(10**5),
    MAX,
]


@pytest.mark.parametrize("scale", TAPE_SCALES, ids=str)
def test_each_branch_reads_what_the_model_says(scale):
    """R above theta_1: |X| = 0, no sign bit.  R just below theta_{2b+1} (several b up to the
    table's end): the uniform branch, U = the next k bits as given (0, L - 1, random), then
    the sign.  R just below theta_{2b+2}: the residual branch, R' just below rho_u (U = u, for
    u = 1, 2, L/2, L - 1) or above rho_1 (U = 0), then the sign.  Each run's value and bits
    used are the model's, and the model takes the intended path (_blocked.each_branch)."""
    m = model(scale)
    gen = np.random.default_rng(21)
    last = m.theta_last()
    blocks = sorted({0, 1, 2, 9, (last - 1) // 4, (last - 1) // 2 - 1})
    residual = [(0, _rho_r(m, 1, False))]
    residual += [(u, _rho_r(m, u, True)) for u in (1, 2, m.L // 2, m.L - 1)]
    run = functools.partial(run_tape, scale)
    _blocked.each_branch(run, m, gen, blocks, lambda b: residual)


@pytest.fixture
def past_64(monkeypatch):
    """The calls of dgauss._inversion.laplace_blocked_magnitude, as (stage, a, j, base): the
    core's past R's or R''s 64th bit (_blocked.spy_past_64)."""
    return _blocked.spy_past_64(monkeypatch, "laplace_blocked_magnitude")


@pytest.mark.parametrize("scale", TAPE_SCALES, ids=str)
def test_a_64_bit_tie_in_step_1(scale, past_64):
    """R's first 64 bits = the core's word thr[s] (= theta_s's first 64 digits), R leaving
    theta_s at bit i > 64 on either side: the core goes on past bit 64 (stage 1, from those
    64 bits) and agrees with the model (value and bits used), for s = 1, 2, 3, 4, in the
    middle of the table (both parities), K - 1 and K; the uniform branch's k bits or the
    residual's R' follow R (_blocked.ties_in_step_1)."""
    m = model(scale)
    thr = _table(scale).thr.tolist()
    last = m.theta_last()
    gen = np.random.default_rng(22)
    picks = {1, 2, 3, 4, last // 2, last // 2 + 1, last - 1, last}
    _blocked.ties_in_step_1(functools.partial(run_tape, scale), m, thr, picks, gen, past_64)


@pytest.mark.parametrize("scale", TAPE_SCALES, ids=str)
def test_a_64_bit_tie_in_the_residual_step(scale, past_64):
    """s even (R just below theta_{2b+2}, b = 0, 3), then R''s first 64 bits = rthr[u] (=
    rho_u's first 64 digits), R' leaving rho_u at bit i > 64: the core goes on past R''s 64th
    bit (stage 2, base 1 + Lb) and agrees with the model, for u = 1, 2, L/2, L - 1 and both
    sides (_blocked.ties_in_the_residual_step)."""
    m = model(scale)
    rthr = _table(scale).rthr.tolist()
    gen = np.random.default_rng(23)
    _blocked.ties_in_the_residual_step(
        functools.partial(run_tape, scale),
        m,
        gen,
        past_64,
        (0, 3),
        (1, 2, m.L // 2, m.L - 1),
        lambda b, u: m.rho_digits(u, J),
        lambda b, u: rthr[u],
    )


@pytest.mark.parametrize("scale", TAPE_SCALES, ids=str)
def test_r_or_r_prime_zero_for_64_bits(scale, past_64):
    """R < 2**-64: s beyond every word (|X| far in the tail, from thresholds past the table),
    the core going on at stage 1 from a = 0; R' < 2**-64 in the residual step: U = L - 1
    (every rho_u is above 2**-64), decided at R''s first 1, the core going on at stage 2 from
    a = 0.  Both as the model says (_blocked.r_zero_for_64_bits, r_prime_zero_for_64_bits)."""
    m = model(scale)
    gen = np.random.default_rng(24)
    run = functools.partial(run_tape, scale)
    _blocked.r_zero_for_64_bits(run, m, gen, past_64)
    assert _blocked.r_prime_zero_for_64_bits(run, m, gen, past_64, 0) == {m.L}  # U = L - 1


@pytest.mark.parametrize("scale", [BLOCKED_MIN, MAX], ids=str)
def test_ties_starting_mid_word(scale):
    """An earlier sample read k bits, so R's 64 bits span two tape words: ties with theta_1,
    theta_2 and theta_K past bit 64, R deciding inside the second word, R's 64 zeros spanning
    the words; each as the model says (_inversion_tapes.ties_mid_word)."""
    m = model(scale)
    gen = np.random.default_rng(25)
    run = functools.partial(run_tape, scale)
    cases = list(tapes.ties_mid_word(run, m, gen, (1, 2, m.theta_last()), (65, 70, 129), 60))
    assert {case for case, *_ in cases} == {"past", "within", "zero"}


@pytest.mark.parametrize("scale", [BLOCKED_MIN, Fraction(1000), Fraction(10**5)], ids=str)
def test_short_last_word(scale):
    """The second sample's R starts k bits into the first word and runs into a finite tape's
    last word of m < k bits: decided inside it (as the model says) or out of bits."""
    gen = np.random.default_rng(26)
    run = functools.partial(run_tape, scale)
    outcomes = tapes.short_last_word(run, model(scale), gen, (1, 2), step=3)
    assert min(outcomes["decided"], outcomes["exhausted"]) >= 3, outcomes


@pytest.mark.parametrize("scale", [BLOCKED_MIN, Fraction(1000), Fraction(10**5), MAX], ids=str)
def test_running_out_in_each_step(scale):
    """A tape ending inside step 1 (within R's first word, at bit 64, past it, R all zero),
    inside the uniform branch's k bits, inside the residual's R' (within, past bit 64, R'
    zero), or just before the sign (where the model says it falls): core and oracle raise
    Exhausted with the tape past every word, as a first sample and as a second one; the tape
    with exactly the bits the model says the sample reads is decided, one bit fewer is not
    (_blocked.short_tapes, running_out_in_each_step)."""
    m = model(scale)
    gen = np.random.default_rng(27)
    tie_rho = _blocked.cross(m.rho_digits(2, J), True, 100)
    cases = _blocked.short_tapes(m, gen, _rho_r(m, 2, True), tie_rho)
    sample = functools.partial(dgauss.sample_laplace, scale, method="inversion")
    _blocked.running_out_in_each_step(functools.partial(run_tape, scale), m, gen, cases, sample)


# --------------------------------------------------------------------------------------------
# 5. Every bit prefix
# --------------------------------------------------------------------------------------------


def _checked_draw(fill, scale, head: str, move=None):
    """_inversion_tapes.checked_draw at the scale: one draw of ``fill`` on the tape head + the
    enumerated bits, checked against the model on every run; ``move``: a planted bug."""
    return tapes.checked_draw(LAP, fill, Fraction(scale), model(scale), head, move)


def _windows(m: Model) -> dict[str, str]:
    """name -> R's first bits: windows around thresholds (_blocked.around, holding two or three
    of them: the edge of |X| = 0, the uniform branch's end, a block's end), and prefixes
    inside one branch (the residual or the uniform part of a block)."""
    return {
        "theta_1 (|X| = 0)": _blocked.around(m, 1),
        "theta_2 (uniform to residual)": _blocked.around(m, 2),
        "theta_3 (block 0 to block 1)": _blocked.around(m, 3),
        "residual, block 0": _blocked.theta_r(m, 2, True),
        "residual, block 5": _blocked.theta_r(m, 12, True),
        "uniform, block 5": _blocked.theta_r(m, 11, True),
    }


WINDOW_TARGET = 1e-4
#: (the windows fan out into 2 L tapes at each R deciding the uniform part: L = 16 to 128 here)
ENUM_SCALES = [
    BLOCKED_MIN,
    Fraction(3 * 2**8 + 1, 3),
    Fraction(992) - Fraction(1, 2**40),
    Fraction(1000),
    Fraction(2**12),
]
ORACLE_WINDOWS = ("theta_1 (|X| = 0)", "residual, block 0", "uniform, block 5")


@pytest.mark.parametrize("scale", ENUM_SCALES, ids=str)
@pytest.mark.long
def test_every_prefix_inside_windows(scale):
    """Every bit tape whose R starts with a window's bits (the windows of _windows), most
    probable first, until at most 1e-4 of the window's mass is unresolved: every run (the
    core's) = the model's prediction (value, bits used, or running out), and the conditional
    mass of every value within the model's exact bounds (_blocked.window_masses: the uniform
    part's 1/L, the residual's rho_u - rho_{u+1}, the share of each branch in the window).
    The oracle too on three windows, to 1e-2."""
    m = model(scale)
    for name, head in _windows(m).items():
        e = enumerate_bits(_checked_draw(_core.fill, scale, head), target=WINDOW_TARGET)
        assert e.complete and _blocked.window_violations(m, e, head) == [], name
        if name in ORACLE_WINDOWS:
            e = enumerate_bits(_checked_draw(reference.fill, scale, head), target=1e-2)
            assert e.complete and _blocked.window_violations(m, e, head) == [], name


#: window -> target at 2**20 (L = 2**14: the residual's 16383 thresholds, its guide capped at
#: 2**12 entries; 2 L = 32768 tapes at each R deciding the uniform part): about a minute
TOP_WINDOWS = {"uniform, block 5": 1e-4, "residual, block 0": 1e-4, "theta_1 (|X| = 0)": 1e-2}


@pytest.mark.slow
def test_every_prefix_inside_windows_at_the_top():
    """The same at the top of the range, 2**20, on three windows (TOP_WINDOWS): the core's
    every run = the model's prediction, the conditional masses within the model's bounds."""
    scale = MAX
    m = model(scale)
    windows = _windows(m)
    for name, target in TOP_WINDOWS.items():
        head = windows[name]
        e = enumerate_bits(_checked_draw(_core.fill, scale, head), target=target)
        assert e.complete and _blocked.window_violations(m, e, head) == [], name


def test_every_prefix_in_a_window_past_bit_64():
    """The same at the table's end, 2**8: R's window around theta_K (the last threshold
    with a word) is longer than 64 bits, so every run goes on past R's 64th bit (in Python,
    about 0.5 ms a run: to 3e-2 of the window)."""
    scale = BLOCKED_MIN
    m = model(scale)
    head = _blocked.around(m, m.theta_last())
    assert len(head) > 64
    e = enumerate_bits(_checked_draw(_core.fill, scale, head), target=3e-2)
    assert e.complete and _blocked.window_violations(m, e, head) == []


def test_window_check_has_power():
    """The window check rejects samplers a little off, at 2**8: the residual's U reversed (L -
    1 - U), the uniform part's U off by one at its end (L - 1 read as L - 2), and the masses
    of the scale 2**8 against the model of 2**8 + 1/3 in the window at theta_2."""
    scale = BLOCKED_MIN
    m = model(scale)
    big = m.L
    windows = _windows(m)
    head = windows["residual, block 0"]
    rev = lambda v: (1 + big - 1 - (abs(v) - 1)) * (1 if v > 0 else -1)
    e = enumerate_bits(_checked_draw(_core.fill, scale, head, rev), target=WINDOW_TARGET)
    assert _blocked.window_violations(m, e, head)
    head = windows["uniform, block 5"]
    end = lambda v: v - (1 if v > 0 else -1) if abs(v) == 1 + 5 * big + big - 1 else v
    e = enumerate_bits(_checked_draw(_core.fill, scale, head, end), target=WINDOW_TARGET)
    assert sorted(abs(v) for v in _blocked.window_violations(m, e, head)) == [
        5 * big + big - 1,
        5 * big + big - 1,
        5 * big + big,
        5 * big + big,
    ]
    head = windows["theta_2 (uniform to residual)"]
    e = enumerate_bits(_checked_draw(_core.fill, scale, head), target=WINDOW_TARGET)
    other = model(Fraction(3 * 2**8 + 1, 3))
    assert _blocked.window_violations(other, e, head)


#: scale -> how much of R's mass may stay unresolved from its first bit: 1e-4 at the bottom of
#: the range (L = 16: about 15 s a scale), 1e-2 above (L = 16 to 128: 10-40 s)
FULL_TARGETS = {
    BLOCKED_MIN: 1e-4,
    Fraction(3 * 2**8 + 1, 3): 1e-4,
    Fraction(992) - Fraction(1, 2**40): 1e-2,
    Fraction(1000): 1e-2,
    Fraction(2**12): 1e-2,
}


@pytest.mark.slow
@pytest.mark.parametrize("scale, target", FULL_TARGETS.items(), ids=str)
def test_every_prefix_from_the_first_bit(scale, target):
    """Every bit tape of R from its first bit, most probable first, until at most ``target``
    is unresolved (the core: up to a million runs, 3-40 s at 1e-2; ten times the runs for each
    tenth less): dgauss.testing.check against the true pmf and the model's exact bounds for
    every value up to past the largest seen."""
    m = model(scale)
    e = enumerate_sampler("laplace", scale, method="inversion", target=target)
    assert e.complete
    result = check(e, "laplace", scale)
    assert result.ok, result.report()
    assert tapes.mass_violations(m, e) == []


# --------------------------------------------------------------------------------------------
# 6. Large samples from the operating system
# --------------------------------------------------------------------------------------------

LARGE_N = 10**6
#: bins of the position inside a block (its U), pooled over the blocks
POSITIONS = 16


def _position_pmf(m: Model) -> dict[int, float]:
    """P[key] for key = POSITIONS u // L, |X| = 1 + Lb + u, over all blocks (key -1: X = 0):
    sum over b of T_{1+Lb+u} - T_{1+Lb+u'} = (T_{1+u} - T_{1+u'}) / (1 - p**L)."""
    big, pool = m.L, 1 / (1 - _mid(m.p_big))
    pmf = {-1: 1 - _mid(m.threshold(1))}
    for v in range(POSITIONS):
        lo, hi = 1 + big * v // POSITIONS, 1 + big * (v + 1) // POSITIONS
        pmf[v] = (_mid(m.threshold(lo)) - _mid(m.threshold(hi))) * pool
    return pmf


def _position_keys(x: np.ndarray, big: int) -> np.ndarray:
    return np.where(x == 0, -1, (np.abs(x) - 1) % big * POSITIONS // big)


def _fits(x: np.ndarray, m: Model, alpha: float = ALPHA / 2) -> list[tuple]:
    """The two chi-square statistics that fail at ``alpha``: (name, stat, dof, p): on the
    magnitude (_blocked.magnitude_pmf, bins of t / 8 to 80 t, at least 100 dof) and on the
    position inside the block."""
    width = max(1, int(m.t) // 8)
    magnitude = _blocked.magnitude_pmf(m, width, int(80 * m.t / width) + 2)
    return _blocked.failed_fits(
        [
            ("magnitude", _blocked.magnitude_keys(x, width), magnitude, 100),
            ("position", _position_keys(x, m.L), _position_pmf(m), POSITIONS - 1),
        ],
        alpha,
    )


@pytest.mark.parametrize(
    "scale", [BLOCKED_MIN, Fraction(1000), Fraction(2**12), Fraction(10**5), MAX], ids=str
)
def test_large_sample_from_the_os_fits(scale):
    """rng=None, 10**6 draws: chi-square (each at ALPHA / 2) on (|x| // (t / 8), sign), and on
    the position U inside the block in 16 bins, pooled over the blocks (what the residual
    branch shapes: its mass is about L / t <= 1/32 of the whole from 1024 on, 1/L <= 1/16
    below, mostly at small U), against the model."""
    x = dgauss.sample_laplace(scale, LARGE_N, method="inversion")
    assert x.dtype == np.int64
    assert _fits(x, model(scale)) == []


def _blocked_draws(m: Model, gen, n: int, residual_u) -> np.ndarray:
    """n draws of the blocked scheme in floating point with numpy, the residual's U taken as
    residual_u(U) (a planted bug)."""
    big, c, t = m.L, m.c, m.t
    p = math.exp(-1 / t)
    blocks = int(60 * t / big)
    tb = 2 * p ** (1 + big * np.arange(blocks + 1)) / (1 + p)  # T_{1+Lb}
    odd = tb[:-1] * (1 - p**c)
    even = tb[:-1] * p**c - tb[1:]
    weights = np.concatenate([[1 - tb[0]], np.stack([odd, even], 1).ravel()])
    s = gen.choice(weights.size, size=n, p=weights / weights.sum())
    b = (s - 1) // 2
    us = np.arange(big + 1)
    f = big * (p**us - p**big) - (big - us) * (1 - p**c)
    rho = np.clip(f / f[0], 0, 1)
    u = np.where(
        s % 2 == 1,
        gen.integers(0, big, n),
        residual_u(gen.choice(big, size=n, p=rho[:-1] - rho[1:])),
    )
    y = np.where(s == 0, 0, 1 + big * b + u)
    return np.where(gen.integers(0, 2, n) == 1, -y, y)


def test_large_sample_statistics_have_power():
    """The statistics reject: the core's draws at 2**8 against the model at 1.02 times the
    scale (magnitude), and 10**6 draws of the scheme with the residual's U reversed (L - 1 -
    U: the position inside the block), while the same scheme unperturbed passes."""
    scale = BLOCKED_MIN
    m = model(scale)
    x = dgauss.sample_laplace(scale, LARGE_N, rng=np.random.PCG64(31), method="inversion")
    wrong = [name for name, *_ in _fits(x, model(scale * Fraction(51, 50)))]
    assert "magnitude" in wrong
    gen = np.random.default_rng(32)
    assert _fits(_blocked_draws(m, gen, LARGE_N, lambda u: u), m) == []
    reversed_ = _blocked_draws(m, gen, LARGE_N, lambda u: m.L - 1 - u)
    assert [name for name, *_ in _fits(reversed_, m)] == ["position"]


# --------------------------------------------------------------------------------------------
# 7. Bits read
# --------------------------------------------------------------------------------------------


def expected_bits(m: Model) -> float:
    """E[bits per sample]: E[step 1] + P[s odd] k + P[s even] E[step 2] + P[|X| > 0], with
    P[s odd] = T_1 (1 - p**c) / (1 - p**L), P[s even] = T_1 (p**c - p**L) / (1 - p**L)."""
    last = m.theta_at_least(1 << (J - 120)) + 1  # theta_last < 2**-120
    theta = [m.theta_floor(s) for s in range(1, last)]
    t1, pc, pl = _mid(m.threshold(1)), _mid(m.p_cut), _mid(m.p_big)
    odd, even = t1 * (1 - pc) / (1 - pl), t1 * (pc - pl) / (1 - pl)
    step_1 = _blocked.expected_rule_bits(theta, m.theta_floor(last))
    step_2 = _blocked.expected_rule_bits(m.rho_floors, 0)
    return step_1 + odd * m.k + even * step_2 + t1


@pytest.mark.parametrize(
    "scale", [BLOCKED_MIN, Fraction(1000), Fraction(10**4), Fraction(10**6), MAX], ids=str
)
def test_bits_per_sample(scale):
    """The core's count of bits read (fill's return, = the oracle's by the same-bits tests),
    200 calls of 1000 samples from PCG64: the mean is the model's exact expectation (z < 6
    on the calls' spread), at least H(X) (no exact sampler reads less; 0.05 of slack) and at
    most H(X) + 3 (_blocked.bits_per_sample)."""
    _blocked.bits_per_sample(LAP, scale, expected_bits(model(scale)), entropy_bits(scale))
