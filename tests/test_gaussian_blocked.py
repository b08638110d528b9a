"""The discrete Gaussian by blocked inversion, 2**16 <= sigma2 <= 2**24, against a model.

docs/contract.md, item 9: with T_x = P[|X| >= x] = 2 S_x / (1 + 2 S_1), S_x = sum_{y >= x} w_y,
w_y = exp(-y**2 / (2 sigma2)), L = 2**k is the largest power of two with 1024 L**2 <= sigma2
and NB = floor(floor(4 sigma) / L); then

1. the rule of item 9 (read R bit by bit until no threshold shares its first j digits) on
   theta_{2b+1} = T_{1+Lb}, theta_{2b+2} = T_{1+Lb} - L P[|X| = L(b + 1)] (b < NB), then
   theta_{2NB+i} = T_{L NB + i} (i >= 1), gives s;
2. s = 0: |X| = 0; s = 2b + 1: |X| = 1 + Lb + U, U the next k raw bits; s = 2b + 2: the same
   with U the rule on a fresh R' against rho_{b,u} = N_u / N_0, u = 1 .. L - 2,
   N_u = sum_{v=u}^{L-2} (w_{1+Lb+v} - w_{L(b+1)}); s = 2 NB + i: |X| = L NB + i;
3. one sign bit when |X| > 0 (1: negative).

Everything is compared with ``Model``: the w_y, S_x, Z, T_x, theta_s and rho_{b,u} enclosed
from scratch with MPFR and directed rounding (no code shared with dgauss._inversion), L and NB
from the definition, giving exact floor(2**J theta_s), floor(2**J rho_{b,u}) (J = 256), the
whole bit-level rule (value and bits read, or running out) and rigorous bounds on the pmf.
The draw from theta_s and rho_{b,u}, and the checks written the same way for the blocked
Laplace (tests/test_laplace_blocked.py), are in tests/_blocked.py.
(tests/test_gaussian_inversion.py covers the plain rule, 1/64 <= sigma2 < 2**16.)  The file
covers

0. the model itself: the blocked scheme's masses are the Gaussian pmf (the contract's proof,
   checked on the enclosures), m_b is the block's smallest mass, the uniform part's share;
1. gaussian_blocks: (k, NB) at hand-computed sigma2 and at the edges of both roundings;
2. the words: the core's thr and rwords (fixed point and the Python words),
   gaussian_floors(blocks) and gaussian_residual_floors at 64 and 128 bits, their decide(),
   the first step's guide (inversion_word);
3. the same bits: core = oracle on seeded generators (values, bits used, generator state);
4. tapes forcing each path (s = 0, odd, even, past the blocks; ties past bit 64 in both
   inversions, seen to continue in dgauss._inversion with the right stage and block; R or R'
   zero for 64 bits; mid-word starts, short last words, running out in every step), value
   and bits read predicted by the model;
5. every bit prefix to 1e-4: from R's first bit at 2**16 (dgauss.testing.check and the
   model's pmf), and inside windows (around thresholds, inside one branch) at 2**16 and
   2**16 + 1/3 with the model's exact conditional masses; marked slow, from the first bit at
   2**16 + 1/3 and 258**2, the oracle too;
6. 10**6 samples from the OS (chi-square on magnitude and on the position inside a block);
7. the bits read: the model's exact expectation, and within 3 bits of the entropy.
"""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction
from pathlib import Path

import gmpy2
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
from _inversion_tapes import bits as _bits
from _inversion_tapes import tie as _tie
from _inversion_tapes import word_bits as _word_bits
from _stats import ALPHA, gaussian_pmf
from dgauss import _core, _inversion, _methods, reference
from dgauss._kinds import Kind
from dgauss.testing import check, enumerate_bits

GAUSS = Kind.DISCRETE_GAUSSIAN
BLOCKED_MIN, MAX = Fraction(2**16), Fraction(2**24)
#: "L = 2**k, the largest power of two with SPREAD L**2 <= sigma2" (docs/contract.md, item 9).
SPREAD = 1024

_CONTRACT = (Path(__file__).resolve().parents[1] / "docs" / "contract.md").read_text()


def test_constants():
    assert _methods.GAUSSIAN_BLOCKED_MIN == BLOCKED_MIN
    assert _methods.GAUSSIAN_BLOCKED_MAX == MAX
    flat = " ".join(_CONTRACT.split())
    assert f"largest power of two with {SPREAD}L² ≤ σ²" in flat
    assert "NB = ⌊⌊4σ⌋/L⌋" in flat


# --------------------------------------------------------------------------------------------
# The independent model
# --------------------------------------------------------------------------------------------

#: Working precision: a residual's differences w_{1+Lb+v} - w_{L(b+1)} lose about 20 bits at
#: most to cancellation (the smallest, w_{m-1} - w_m, is about w_m L / sigma2 >= w_m 2**-18).
PREC = J + 192


def _floor_sqrt(q: Fraction) -> int:
    """floor(sqrt(q)) for a rational q >= 0: an MPFR estimate, then corrected exactly."""
    with gmpy2.context(precision=200):
        m = int(gmpy2.floor(gmpy2.sqrt(mpq(q.numerator, q.denominator))))
    while m * m > q:
        m -= 1
    while (m + 1) ** 2 <= q:
        m += 1
    return m


def _shares(ascending: list[int], a: int, j: int) -> bool:
    """Whether a threshold whose J-bit floor is in ``ascending`` (or one that is 0: the
    thresholds tend to 0, and a residual's rho_u is 0 for u >= L - 1) has first j digits a."""
    if a == 0:
        return True
    shift = J - j
    return bisect.bisect_left(ascending, a << shift) != bisect.bisect_left(
        ascending, (a + 1) << shift
    )


def _count(ascending: list[int], a: int, j: int) -> int:
    """#{thresholds with floor(2**j threshold) > a}."""
    return len(ascending) - bisect.bisect_left(ascending, (a + 1) << (J - j))


class Model(BlockedModel):
    """Blocked inversion of N_Z(0, sigma2) from scratch.  L, NB from their definitions (L by
    doubling, floor(4 sigma) by an exact square-root floor); w_y = exp(-y**2 / (2 sigma2)) as
    [exp(-up(arg)) rounded down, exp(-down(arg)) rounded up] at PREC bits for y <= M (w_M <
    2**-(J + 64)), S_x = sum_{x <= y <= M} w_y + [0, w_{M+1} / (1 - exp(-2c(M + 1)))]
    (y**2 >= (M+1)**2 + 2(M+1)(y - M - 1) past M), Z = 1 + 2 S_1, T_x = 2 S_x / Z,
    theta_{2b+2} = 2 (S_{1+Lb} - L w_{L(b+1)}) / Z, rho_{b,u} = N_u / N_0: every operation
    rounded the safe way, so each quantity is an interval, and its J-bit floor is checked
    decided (both ends have one floor).  The terms are computed when first needed.  The draw
    from them (``blocked``, ``rule``; ``digits(s, i)`` / ``bit(s, i)`` are theta_s's) is
    _blocked.BlockedModel's, with the thresholds past the blocks (``past_blocks``)."""

    def __init__(self, sigma2: Fraction):
        self.sigma2 = Fraction(sigma2)
        assert self.sigma2 >= SPREAD
        size = 1
        while SPREAD * (2 * size) ** 2 <= self.sigma2:
            size *= 2
        self.L, self.k = size, size.bit_length() - 1
        self.four_sigma = _floor_sqrt(16 * self.sigma2)
        self.nb = self.four_sigma // size
        self.sigma = math.sqrt(float(self.sigma2))
        self.down = gmpy2.context(precision=PREC, round=gmpy2.RoundDown)
        self.up = gmpy2.context(precision=PREC, round=gmpy2.RoundUp)
        self._rho: dict[int, tuple] = {}

    # ---- the terms, the sums and the thresholds T_x ----

    @functools.cached_property
    def _terms(self):
        n, d = self.sigma2.numerator, self.sigma2.denominator
        c = mpq(d, 2 * n)  # 1 / (2 sigma2)
        # c M**2 >= 0.7 (J + 64) > ln(2) (J + 64): w_M < 2**-(J + 64)
        top = math.isqrt(math.ceil(Fraction(7 * (J + 64), 10) / Fraction(d, 2 * n))) + 2
        w_lo, w_hi = [mpfr(1)], [mpfr(1)]
        for y in range(1, top + 2):
            arg = c * y * y
            with self.up:
                arg_hi = mpfr(arg)
            with self.down:
                arg_lo = mpfr(arg)
                w_lo.append(gmpy2.exp(-arg_hi))
            with self.up:
                w_hi.append(gmpy2.exp(-arg_lo))
        with self.down:
            g_lo = mpfr(2 * c * (top + 1))
        with self.up:
            ratio_hi = gmpy2.exp(-g_lo)
        with self.down:
            one_minus = 1 - ratio_hi
        with self.up:
            tail = w_hi[top + 1] / one_minus  # >= sum_{y > M} w_y
        s_lo, s_hi = [mpfr(0)] * (top + 2), [tail] * (top + 2)
        with self.down:
            for y in range(top, 0, -1):
                s_lo[y] = s_lo[y + 1] + w_lo[y]
            z_lo = 1 + 2 * s_lo[1]
        with self.up:
            for y in range(top, 0, -1):
                s_hi[y] = s_hi[y + 1] + w_hi[y]
            z_hi = 1 + 2 * s_hi[1]
        return top, w_lo, w_hi, s_lo, s_hi, z_lo, z_hi

    @property
    def top(self) -> int:
        """M: the last y whose w_y the model sums term by term."""
        return self._terms[0]

    def w(self, y: int):
        """(lo, hi) mpfr bounds on w_y, y <= M + 1."""
        _, w_lo, w_hi, *_ = self._terms
        return w_lo[y], w_hi[y]

    def s(self, x: int):
        """(lo, hi) mpfr bounds on S_x, 1 <= x <= M + 1."""
        _, _, _, s_lo, s_hi, _, _ = self._terms
        return s_lo[x], s_hi[x]

    @property
    def z(self):
        """(lo, hi) mpfr bounds on Z = 1 + 2 S_1 = sum over all integers of w."""
        return self._terms[5], self._terms[6]

    def _ratio(self, num_lo, num_hi):
        """(lo, hi) bounds on 2 num / Z."""
        z_lo, z_hi = self.z
        with self.down:
            lo = 2 * num_lo / z_hi
        with self.up:
            hi = 2 * num_hi / z_lo
        return lo, hi

    def threshold(self, x: int):
        """(lo, hi) mpfr bounds on T_x (T_0 = 1), x <= M + 1."""
        if x == 0:
            return mpfr(1), mpfr(1)
        return self._ratio(*self.s(x))

    def mass(self, y: int) -> tuple[mpq, mpq]:
        """Rigorous bounds on P[|X| = y]: 1 / Z for y = 0, 2 w_y / Z for y >= 1."""
        z_lo, z_hi = self.z
        if y == 0:
            with self.down:
                lo = 1 / z_hi
            with self.up:
                hi = 1 / z_lo
            return mpq(lo), mpq(hi)
        return tuple(map(mpq, self._ratio(*self.w(y))))

    def t_floor(self, x: int) -> int:
        """floor(2**J T_x)."""
        return self._floor_of(*self.threshold(x), ("T", x))

    def _floor_of(self, lo, hi, what) -> int:
        with self.down:  # (multiplying by a power of two is exact)
            f = int(gmpy2.floor(gmpy2.mul_2exp(lo, J)))
            assert f == int(gmpy2.floor(gmpy2.mul_2exp(hi, J))), (self.sigma2, what, "undecided")
        return f

    # ---- step 1: theta ----

    def theta(self, s: int):
        """(lo, hi) mpfr bounds on theta_s (theta_0 = 1)."""
        if s == 0:
            return mpfr(1), mpfr(1)
        b, even = divmod(s - 1, 2)
        if b >= self.nb:
            return self.threshold(self.L * self.nb + s - 2 * self.nb)
        x = 1 + self.L * b
        if not even:
            return self.threshold(x)
        s_lo, s_hi = self.s(x)
        w_lo, w_hi = self.w(self.L * (b + 1))
        with self.down:
            lo = s_lo - self.L * w_hi
        with self.up:
            hi = s_hi - self.L * w_lo
        return self._ratio(lo, hi)

    @functools.cached_property
    def theta_floors(self) -> list[int]:
        """floor(2**J theta_s) for s = 1 .. the last that is not 0 (decreasing)."""
        floors = []
        s = 1
        while True:
            f = self._floor_of(*self.theta(s), ("theta", s))
            if f == 0:
                break
            floors.append(f)
            s += 1
        assert s - 2 * self.nb + self.L * self.nb < self.top  # T_x < 2**-J well before M
        pairs = list(zip(floors, floors[1:], strict=False))
        assert all(a >= b for a, b in pairs) and all(a > b for a, b in pairs if b > 2**64)
        return floors

    @functools.cached_property
    def theta_ascending(self) -> list[int]:
        return self.theta_floors[::-1]

    def theta_floor(self, s: int) -> int:
        """floor(2**J theta_s), s >= 0 (2**J for s = 0)."""
        if s == 0:
            return 1 << J
        return self.theta_floors[s - 1] if s <= len(self.theta_floors) else 0

    def theta_shares(self, a: int, j: int) -> bool:
        return _shares(self.theta_ascending, a, j)

    def theta_count(self, a: int, j: int) -> int:
        return _count(self.theta_ascending, a, j)

    def past_blocks(self, s: int) -> int | None:
        """|X| = L NB + s - 2 NB for s past the blocks (s > 2 NB), else None."""
        return self.L * self.nb + s - 2 * self.nb if s > 2 * self.nb else None

    # ---- step 2: rho ----

    def _residual(self, b: int):
        """Block b's ([rho_lo], [rho_hi], [floors]) for u = 1 .. L - 2 (and N_0's bounds)."""
        found = self._rho.get(b)
        if found is not None:
            return found
        assert 0 <= b < self.nb
        y0, m, big = 1 + self.L * b, self.L * (b + 1), self.L
        wm_lo, wm_hi = self.w(m)
        with self.down:
            d_lo = [self.w(y0 + v)[0] - wm_hi for v in range(big - 1)]
        with self.up:
            d_hi = [self.w(y0 + v)[1] - wm_lo for v in range(big - 1)]
        assert min(d_lo) > 0  # (v = L - 2: w_{m-1} - w_m)
        n_lo, n_hi = [mpfr(0)] * big, [mpfr(0)] * big  # N_u, u = 0 .. L - 1 (N_{L-1} = 0)
        with self.down:
            for v in range(big - 2, -1, -1):
                n_lo[v] = n_lo[v + 1] + d_lo[v]
        with self.up:
            for v in range(big - 2, -1, -1):
                n_hi[v] = n_hi[v + 1] + d_hi[v]
        assert n_lo[big - 2] > 0
        with self.down:
            lo = [n_lo[u] / n_hi[0] for u in range(1, big - 1)]
        with self.up:
            hi = [n_hi[u] / n_lo[0] for u in range(1, big - 1)]
        pairs = enumerate(zip(lo, hi, strict=True), 1)
        floors = [self._floor_of(a, z, ("rho", b, u)) for u, (a, z) in pairs]
        assert all(a > z for a, z in zip(floors, floors[1:], strict=False))
        assert floors[0] < 1 << J and floors[-1] > 0
        found = self._rho[b] = (lo, hi, floors, floors[::-1], (n_lo[0], n_hi[0]))
        return found

    def rho(self, b: int, u: int):
        """(lo, hi) mpfr bounds on rho_{b,u} (1 for u <= 0, 0 for u >= L - 1)."""
        if u <= 0:
            return mpfr(1), mpfr(1)
        if u >= self.L - 1:
            return mpfr(0), mpfr(0)
        lo, hi, *_ = self._residual(b)
        return lo[u - 1], hi[u - 1]

    def rho_bounds(self, b: int, u: int):
        """rho(b, u)."""
        return self.rho(b, u)

    def rho_floors(self, b: int) -> list[int]:
        """floor(2**J rho_{b,u}), u = 1 .. L - 2 (decreasing)."""
        return self._residual(b)[2]

    def rho_word(self, b: int, u: int, p: int = 64) -> int:
        return self.rho_floors(b)[u - 1] >> (J - p) if 1 <= u < self.L - 1 else 0

    def rho_digits(self, b: int, u: int, i: int) -> str:
        return format(self.rho_floors(b)[u - 1] >> (J - i), f"0{i}b")

    def rho_shares(self, b: int, a: int, j: int) -> bool:
        return _shares(self._residual(b)[3], a, j)

    def rho_count(self, b: int, a: int, j: int) -> int:
        return _count(self._residual(b)[3], a, j)

    def rho_rule(self, bits: str, b: int):
        """Step 2's rule on R' = 0.bits... for block b."""
        shares, count = functools.partial(self.rho_shares, b), functools.partial(self.rho_count, b)
        return tapes.inversion_rule(bits, shares, count, J)


@functools.cache
def model(sigma2) -> Model:
    return Model(Fraction(sigma2))


# --------------------------------------------------------------------------------------------
# 0. The model: the contract's scheme gives the Gaussian pmf
# --------------------------------------------------------------------------------------------

#: sigma2 -> (k, NB), computed by hand: 1024 L**2 <= sigma2 < 4096 L**2, NB = floor(4 sigma) // L.
BLOCKS = {
    BLOCKED_MIN: (3, 128),  # L = 8: 1024 * 64 = 2**16; 4 sigma = 1024
    BLOCKED_MIN + Fraction(1, 3): (3, 128),  # 4 sigma = 1024.0026
    Fraction(66564) - Fraction(1, 2**40): (3, 128),  # 4 sigma just below 1032 = 129 L
    Fraction(66564): (3, 129),  # sigma = 258: 4 sigma = 1032 exactly
    Fraction(10**5): (3, 158),  # L**2 <= 97.7: 8; 4 sigma = 1264.9
    Fraction(2**18) - Fraction(1, 2**40): (3, 255),  # L = 16 just out of reach; 2047.99 // 8
    Fraction(2**18): (4, 128),  # 1024 * 256 = 2**18 exactly
    Fraction(10**6): (4, 250),  # L**2 <= 976.6: 16; 4 sigma = 4000
    Fraction(2**20): (5, 128),
    Fraction(2**22) - 1: (5, 255),  # L**2 <= 4095.999: 32; 4 sigma = 8191.999
    Fraction(2**24 - 1, 3): (6, 147),  # L**2 <= 5461.3: 64; 4 sigma = 9459.4
    MAX - Fraction(1, 3): (6, 255),  # 4 sigma = 16383.99998
    MAX: (7, 128),  # L = 128 = sigma / 32; 4 sigma = 16384
}
_SEEDED = np.random.default_rng(20250611)
RANDOM_SIGMA2 = [  # log-uniform in [2**16, 2**24], denominators up to 2**30
    min(MAX, max(BLOCKED_MIN, Fraction(int(2 ** (u + v)), int(2**v))))
    for u, v in zip(_SEEDED.uniform(16, 24, 3), _SEEDED.uniform(0, 30, 3), strict=True)
]
#: n >= 2**62: outside the C builder's domain, so every word comes from dgauss._inversion.
HUGE = Fraction(2**80 + 7, 2**62 + 1)
MAIN = [BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 3), Fraction(10**5), Fraction(10**6), MAX]


def _uniform_share(m: Model) -> tuple[float, float]:
    """(P[s odd], P[s odd] / P[1 <= |X| <= L NB]): the uniform parts' mass, absolute and as a
    share of the blocks' (lower bounds)."""
    odd = sum(
        (mpq(m.theta(2 * b + 1)[0]) - mpq(m.theta(2 * b + 2)[1]) for b in range(m.nb)), mpq(0)
    )
    blocks = mpq(m.theta(1)[1]) - mpq(m.theta(2 * m.nb + 1)[0])
    return float(odd), float(odd / blocks)


@pytest.mark.parametrize("sigma2", MAIN + [Fraction(2**18), Fraction(2**24 - 1, 3)], ids=str)
@pytest.mark.long
def test_model_scheme_gives_the_gaussian_pmf(sigma2):
    """The contract's proof, checked on the model's enclosures: P[|X| = 1 + Lb + u] =
    (theta_{2b+1} - theta_{2b+2}) / L + (theta_{2b+2} - theta_{2b+3})(rho_{b,u} - rho_{b,u+1})
    is the pmf 2 w_y / Z (rigorous bounds overlapping, 2**-300 wide) for blocks b = 0, 1, 2,
    NB/2, NB - 1 and a random one, every u; P[s = 0] = 1 - theta_1 = 1/Z and P[s = 2 NB + i] =
    P[|X| = L NB + i]; the uniform part's mass per value, m_b = P[|X| = L(b + 1)], is at most
    every mass of block b (every block); the uniform parts take at least 31/32 of the blocks'
    mass, and of all (about 0.9875 where L = sigma/32); the model's pmf agrees with
    _stats.gaussian_pmf (50 digits)."""
    m = model(sigma2)
    big, nb = m.L, m.nb
    gen = np.random.default_rng(5)
    theta = lambda s: _q(m.theta(s))  # noqa: E731
    tiny = mpq(1, 2**300)
    for b in sorted({0, 1, 2, nb // 2, nb - 1, int(gen.integers(nb))}):
        th = [theta(s) for s in (2 * b + 1, 2 * b + 2, 2 * b + 3)]
        uniform = ((th[0][0] - th[1][1]) / big, (th[0][1] - th[1][0]) / big)
        residual = (th[1][0] - th[2][1], th[1][1] - th[2][0])
        for u in range(big):
            r0, r1 = _q(m.rho(b, u)), _q(m.rho(b, u + 1))
            lo = uniform[0] + residual[0] * (r0[0] - r1[1])
            hi = uniform[1] + residual[1] * (r0[1] - r1[0])
            t_lo, t_hi = m.mass(1 + big * b + u)
            assert lo <= t_hi and t_lo <= hi, (b, u)
            assert hi - lo < tiny and t_hi - t_lo < tiny
        assert m.rho(b, 1)[1] < 1 and m.rho(b, big - 2)[0] > 0
    one = theta(1)
    zero = m.mass(0)
    assert 1 - one[1] <= zero[1] and zero[0] <= 1 - one[0]
    for i in (1, 2, 3, 50):
        a, z = theta(2 * nb + i), theta(2 * nb + i + 1)
        t_lo, t_hi = m.mass(big * nb + i)
        assert a[0] - z[1] <= t_hi and t_lo <= a[1] - z[0]
    for b in range(nb):  # m_b is the block's smallest mass, and the uniform part's
        m_lo, m_hi = m.mass(big * (b + 1))
        assert all(m_hi <= m.mass(1 + big * b + v)[0] for v in range(big - 1))
        a, z = theta(2 * b + 1), theta(2 * b + 2)
        assert (a[0] - z[1]) / big <= m_hi and m_lo <= (a[1] - z[0]) / big
    absolute, share = _uniform_share(m)
    print(f"sigma2 {sigma2}: P[s odd] = {absolute:.6f}, {share:.6f} of the blocks' mass")
    assert share >= 31 / 32 and absolute >= 31 / 32
    pmf = gaussian_pmf(Fraction(sigma2), tail_sd=14)
    for y in (0, 1, 2, int(m.sigma), 4 * int(m.sigma), 12 * int(m.sigma)):
        true = pmf[y] * (2 if y else 1)
        lo, hi = m.mass(y)
        assert float(lo) <= true * (1 + 1e-12) and true <= float(hi) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------
# 1. gaussian_blocks
# --------------------------------------------------------------------------------------------


def _table(sigma2, fixed_point=None):
    n, d = _nd(sigma2)
    if fixed_point is None:
        return _core.gauss_table(n, d)
    return _core.gauss_table(n, d, fixed_point)


@pytest.mark.parametrize("sigma2", list(BLOCKS) + RANDOM_SIGMA2 + [HUGE], ids=str)
def test_gaussian_blocks(sigma2):
    """gaussian_blocks(sigma2) = (k, NB): the model's (independent; hand-computed for BLOCKS),
    with 1024 L**2 <= sigma2 < 1024 (2L)**2 and L NB <= floor(4 sigma) < L (NB + 1); the core's
    table has the same k and nb."""
    m = model(sigma2)
    if sigma2 in BLOCKS:
        assert (m.k, m.nb) == BLOCKS[sigma2]
    assert SPREAD * m.L**2 <= sigma2 < SPREAD * (2 * m.L) ** 2
    assert m.four_sigma**2 <= 16 * sigma2 < (m.four_sigma + 1) ** 2
    assert m.L * m.nb <= m.four_sigma < m.L * (m.nb + 1)
    assert _methods.gaussian_blocks(Fraction(sigma2)) == (m.k, m.nb)
    tab = _table(sigma2)
    assert isinstance(tab, _core._BlockedTable)
    assert (tab.k, tab.nb) == (m.k, m.nb)


@pytest.mark.parametrize(
    "sigma2",
    [Fraction(1, 64), Fraction(7, 3), Fraction(2**16 - 1), BLOCKED_MIN - Fraction(1, 2**50)],
    ids=str,
)
def test_gaussian_blocks_is_none_below_the_blocked_range(sigma2):
    """None below 2**16, where the core's table is the plain one (every T_x), and block
    residuals do not exist."""
    assert _methods.gaussian_blocks(sigma2) is None
    assert not isinstance(_table(sigma2), _core._BlockedTable)
    with pytest.raises(ValueError):
        _inversion.gaussian_residual_floors(sigma2, 0, 64)
    with pytest.raises(ValueError):
        _inversion.gaussian_blocked_magnitude(lambda: 0, sigma2)


# --------------------------------------------------------------------------------------------
# 2. The words
# --------------------------------------------------------------------------------------------

WORD_SIGMA2 = MAIN + [Fraction(66564), Fraction(2**18), Fraction(2**24 - 1, 3), MAX - 1]


def _check_table(m: Model, tab) -> None:
    """thr = [2**64 - 1, floor(2**64 theta_s) for s = 1 .. K, 0], K the model's last s whose
    word is not 0; rwords: block b's L words at b L = [2**64 - 1, floor(2**64 rho_{b,u}) for
    u = 1 .. L - 2, 0]; k, nb, count, the guide's size and nbytes as documented."""
    assert (tab.k, tab.nb) == (m.k, m.nb)
    assert tab.thr.dtype == np.uint64 and tab.rwords.dtype == np.uint64
    thr, rwords = tab.thr.tolist(), tab.rwords.tolist()
    last = m.theta_last()
    assert tab.count == last and len(thr) == last + 2 and thr[0] == ONES and thr[-1] == 0
    assert thr[1:-1] == [m.theta_word(s) for s in range(1, last + 1)]
    assert last > 2 * m.nb  # the table reaches past the blocks
    assert len(rwords) == m.nb * m.L
    for b in range(m.nb):
        want = [ONES, *(m.rho_word(b, u) for u in range(1, m.L - 1)), 0]
        assert rwords[b * m.L : (b + 1) * m.L] == want, b
    assert tab.guide_bits == 12 and tab.guide.size == 1 << 12
    assert tab.nbytes == tab.thr.nbytes + tab.guide.nbytes + tab.rwords.nbytes


@pytest.mark.parametrize("sigma2", WORD_SIGMA2 + RANDOM_SIGMA2, ids=str)
@pytest.mark.long
def test_core_tables_are_the_exact_floors(sigma2):
    """The core's table (_check_table: every word of thr and rwords the model's), built in
    fixed point (asserted for the hand-picked sigma2; a random one could have needed
    dgauss._inversion's words, where the fixed-point bound leaves a first-step word open)."""
    m = model(sigma2)
    tab = _table(sigma2)
    _check_table(m, tab)
    if sigma2 in RANDOM_SIGMA2:
        print(f"sigma2 = {sigma2}: fixed_point = {tab.fixed_point}")
    else:
        assert tab.fixed_point


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 3), MAX], ids=str)
def test_core_tables_without_fixed_point_are_the_same(sigma2):
    """fixed_point=False (every word from dgauss._inversion's exact integer bounds): the same
    thr, rwords, k and nb."""
    fast, slow = _table(sigma2, True), _table(sigma2, False)
    assert fast.fixed_point and not slow.fixed_point
    assert slow.thr.tolist() == fast.thr.tolist()
    assert slow.rwords.tolist() == fast.rwords.tolist()
    assert (slow.k, slow.nb, slow.count) == (fast.k, fast.nb, fast.count)


def test_core_table_of_a_huge_fraction_is_the_exact_floors():
    """n >= 2**62: the C builder's domain ends, so the words come from dgauss._inversion
    (fixed_point False), and they are the model's."""
    tab = _table(HUGE)
    assert not tab.fixed_point
    _check_table(model(HUGE), tab)


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6), MAX], ids=str)
def test_core_gmp_residual_words_are_the_exact_floors(sigma2):
    """The core's GMP fallback for a residual word the fixed-point bound leaves open
    (dg_gauss_resid_word_exact) = the model's floor(2**64 rho_{b,u}), every u of blocks 0, 1
    and NB - 1.  The fallback is taken with probability below about 2**-20 a word, so no
    sigma2 at hand reaches it through the table: this needs a hook calling it directly,
    assumed to be _core.gauss_resid_word_exact(num, den, y0, k, u) (as laplace_word_exact);
    skipped while there is none."""
    hook = getattr(_core, "gauss_resid_word_exact", None)
    if hook is None:
        pytest.skip("dg_gauss_resid_word_exact is not exposed to Python (no test hook)")
    m = model(sigma2)
    n, d = _nd(sigma2)
    for b in sorted({0, 1, m.nb - 1}):
        got = [hook(n, d, 1 + m.L * b, m.k, u) for u in range(1, m.L - 1)]
        assert got == [m.rho_word(b, u) for u in range(1, m.L - 1)], b


def _theta_points(m: Model, gen, p: int = 64) -> list[int]:
    last, nb = m.theta_last(p), m.nb
    picks = {1, 2, 3, 4, 2 * nb - 1, 2 * nb, 2 * nb + 1, 2 * nb + 2, last - 1, last, last + 1}
    picks |= {int(v) for v in gen.integers(1, last + 2, 20)}
    return sorted(picks)


@pytest.mark.parametrize("sigma2", MAIN + RANDOM_SIGMA2[:1], ids=str)
def test_python_floors_are_the_exact_floors(sigma2):
    """gaussian_floors(sigma2, p, blocks=(k, NB)).words = [floor(2**p theta_s), s = 1 .. K_p]
    and gaussian_residual_floors(sigma2, b, p).words = [floor(2**p rho_{b,u}), u = 1 .. L - 2]
    (blocks 0, 1, NB - 1 and two random ones), p = 64 and 128, the model's; without blocks,
    gaussian_floors gives every T_x's word.  decide(a, j), for R's first j bits a (random, and
    thresholds' own digits and their neighbours), is the model's rule: None where a threshold
    shares them, else the count above."""
    sigma2 = Fraction(sigma2)
    m = model(sigma2)
    blocks = (m.k, m.nb)
    gen = np.random.default_rng(12)
    picks = sorted({0, 1, m.nb - 1, *(int(b) for b in gen.integers(0, m.nb, 2))})
    for p in (64, 128):
        words = _inversion.gaussian_floors(sigma2, p, blocks).words
        assert words == [m.theta_word(s, p) for s in range(1, m.theta_last(p) + 1)], p
        for b in picks:
            assert _inversion.gaussian_residual_floors(sigma2, b, p).words == [
                m.rho_word(b, u, p) for u in range(1, m.L - 1)
            ], (p, b)
    plain = _inversion.gaussian_floors(sigma2, 64).words
    t64 = [m.t_floor(x) >> (J - 64) for x in range(1, len(plain) + 2)]
    assert plain == t64[:-1] and t64[-1] == 0
    theta = _inversion.gaussian_floors(sigma2, 64, blocks)
    cases = []
    for j in (1, 2, 5, 9, 17, 30, 64):
        cases += [(int(gen.integers(0, 2**j, dtype=np.uint64)), j) for _ in range(3)]
        for s in _theta_points(m, gen)[::3]:
            w = m.theta_word(s) >> (64 - j)
            cases += [(w, j), (min(w + 1, 2**j - 1), j), (max(0, w - 1), j)]
    for a, j in cases:
        want = None if m.theta_shares(a, j) else m.theta_count(a, j)
        assert theta.decide(a, j) == want, ("theta", a, j)
    for b in picks:
        rho = _inversion.gaussian_residual_floors(sigma2, b, 64)
        rcases = [(int(gen.integers(0, 2**j, dtype=np.uint64)), j) for j in (1, 3, 8, 20, 64)]
        for j in (1, 2, 5, 9, 17, 30, 64):
            for u in sorted({1, 2, m.L - 2, int(gen.integers(1, m.L - 1))}):
                w = m.rho_word(b, u) >> (64 - j)
                rcases += [(w, j), (min(w + 1, 2**j - 1), j), (max(0, w - 1), j)]
        for a, j in rcases:
            want = None if m.rho_shares(b, a, j) else m.rho_count(b, a, j)
            assert rho.decide(a, j) == want, ("rho", b, a, j)


def test_residual_floors_exist_only_for_the_blocks():
    """gaussian_residual_floors(sigma2, b, p) is a ValueError for b outside 0 .. NB - 1;
    inversion_word has no residual table for the Gaussian (one per block: rwords)."""
    m = model(BLOCKED_MIN)
    for b in (-1, m.nb, m.nb + 1):
        with pytest.raises(ValueError):
            _inversion.gaussian_residual_floors(BLOCKED_MIN, b, 64)
    with pytest.raises(ValueError, match="rwords"):
        _core.inversion_word(*_nd(BLOCKED_MIN), 2**63, residual=True)


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6), MAX], ids=str)
def test_first_step_guide_decides_as_the_model(sigma2):
    """inversion_word(n, d, r): the core's first-step table (its 2**12-entry guide and the
    search inside a bucket) on R's 64 bits r = (bits needed, s), the model's theta rule on
    them (65: undecided), for random r, r = 0 and 2**64 - 1, every guide bucket's first r and
    the one before it, each word of thr and its neighbours (a sample of them)."""
    m = model(sigma2)
    n, d = _nd(sigma2)
    tab = _table(sigma2)
    thr = tab.thr.tolist()
    shift = 64 - tab.guide_bits
    gen = np.random.default_rng(14)
    rs = [0, 1, ONES, *(int(r) for r in gen.integers(0, 2**63, 300, dtype=np.uint64) * 2 + 1)]
    rs += [int(r) >> int(gen.integers(0, 60)) for r in gen.integers(0, 2**63, 100)]
    for h in range(1, 1 << tab.guide_bits, 7):
        rs += [h << shift, (h << shift) - 1]
    xs = sorted({1, 2, 3, tab.count, *(int(x) for x in gen.integers(1, tab.count + 1, 150))})
    for x in xs:
        rs += [w for w in (thr[x] - 1, thr[x], thr[x] + 1) if 0 <= w <= ONES]
    needs = []
    for r in rs:
        need, s = _core.inversion_word(n, d, r)
        found = m.theta_rule(_word_bits(r))
        want = (65, None) if found is None else (found[1], found[0])
        assert need == want[0] and (need > 64 or s == want[1]), (r, need, s, want)
        needs.append(need)
    assert 65 in needs and min(needs) < 12 and max(n for n in needs if n <= 64) >= 60


# --------------------------------------------------------------------------------------------
# 3. Core and oracle on the same bits
# --------------------------------------------------------------------------------------------

BITGENS = [np.random.PCG64, np.random.Philox, np.random.SFC64, np.random.MT19937]

PARITY = [  # (sigma2, mu, dtype, n)
    (BLOCKED_MIN, 0, None, 400),
    (BLOCKED_MIN + Fraction(1, 3), -7, np.int64, 400),
    (Fraction(10**5), 10**20, object, 300),
    (Fraction(10**6), 2**40, np.int64, 300),
    (Fraction(2**24 - 1, 3), -(2**62), object, 200),
    (MAX, 5, None, 200),
    (HUGE, -3, np.int64, 200),
]


@pytest.mark.parametrize("bitgen", BITGENS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("sigma2, mu, dtype, n", PARITY, ids=str)
@pytest.mark.long
def test_core_and_oracle_read_the_same_bits(bitgen, sigma2, mu, dtype, n):
    """sample_gaussian(method="inversion") from dgauss and dgauss.reference on generators
    seeded alike: the same values and dtype, both generators left in the same state; then the
    backends' fill on a bare bit generator into int64 (object when mu is far out): the same
    values, bits used and state (_inversion_tapes.same_bits).  The values spread as
    N_Z(mu, sigma2) does (both signs, several blocks)."""
    out_dtype = np.int64 if abs(mu) < 2**61 else object
    used = tapes.same_bits("sample_gaussian", GAUSS, sigma2, n, mu, dtype, bitgen, out_dtype)
    assert used > 10 * n
    x = np.asarray(
        dgauss.sample_gaussian(sigma2, n, mu=mu, rng=bitgen(7), method="inversion"), dtype=object
    )
    x -= mu
    m = model(sigma2)
    assert min(x) < 0 < max(x) and max(abs(v) for v in x) > m.sigma > 4 * m.L


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6)], ids=str)
@pytest.mark.long
def test_core_and_oracle_agree_on_many_residual_draws(sigma2):
    """5000 samples (about 60 through a residual) from PCG64: core = oracle, values, bits
    used and generator state; then the core's fill on the fixed-point words and on the Python
    words (fixed_point=False): the same."""
    runs = []
    for fill in (_core.fill, reference.fill):
        src = np.random.PCG64(17)
        out = np.empty(5000, dtype=np.int64)
        used = tapes.fill(GAUSS, fill, sigma2, 0, src, out)
        runs.append((out.tolist(), used, src.random_raw(2).tolist()))
    assert runs[0] == runs[1]
    tapes.fixed_point_runs_agree(GAUSS, sigma2, 5000)


# --------------------------------------------------------------------------------------------
# 4. Tapes forcing each path, predicted by the model
# --------------------------------------------------------------------------------------------


#: run_tape(sigma2, bits, count=1, mu=0): core and oracle on one tape, each = the model's
#: prediction (_blocked.tape_runner); returns the prediction.
run_tape = _blocked.tape_runner(GAUSS, model)


def _rho_r(m: Model, b: int, u: int, below: bool) -> str:
    return _blocked.near(m.rho_floors(b)[u - 1], below)


TAPE_SIGMA2 = [BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 3), Fraction(10**6), MAX]


@pytest.mark.parametrize("sigma2", TAPE_SIGMA2, ids=str)
def test_each_branch_reads_what_the_model_says(sigma2):
    """R above theta_1: |X| = 0, no sign bit.  R just below theta_{2b+1} (b = 0, 1, 2, NB/2,
    NB - 1): the uniform branch, U = the next k bits as given (0, L - 1, random), then the
    sign.  R just below theta_{2b+2}: the residual branch, R' just below rho_{b,u} (U = u,
    u = 1, 2, L/2, L - 2), above rho_{b,1} (U = 0) or below them all (U = L - 2, never L - 1),
    then the sign.  R just below theta_{2NB+i}: past the blocks, |X| = L NB + i, then the
    sign.  Each run's value and bits used are the model's, and the model takes the intended
    path (_blocked.each_branch, and past the blocks)."""
    m = model(sigma2)
    big, nb = m.L, m.nb
    gen = np.random.default_rng(21)

    def residual(b):
        cases = [(0, _rho_r(m, b, 1, False)), (big - 2, "0" * 40 + "1")]
        return cases + [(u, _rho_r(m, b, u, True)) for u in (1, 2, big // 2, big - 2)]

    blocks = sorted({0, 1, 2, nb // 2, nb - 1})
    _blocked.each_branch(functools.partial(run_tape, sigma2), m, gen, blocks, residual)
    for i in (1, 2, 3, 100, (m.theta_last() - 2 * nb) // 2):
        r = _blocked.theta_r(m, 2 * nb + i, True)
        y, j, s, j1 = m.blocked(r + _bits(gen, 10))
        assert (s, y, j, j1) == (2 * nb + i, big * nb + i, len(r), len(r))
        values, used, _ = run_tape(sigma2, r + "1" + _bits(gen, 10), mu=3)
        assert values == [3 - y] and used == len(r) + 1


def _path(m: Model, s: int) -> str:
    """Which way step 1's s goes: "zero", "uniform", "residual" or "tail" (past the blocks)."""
    if s == 0:
        return "zero"
    if s > 2 * m.nb:
        return "tail"
    return "uniform" if s % 2 else "residual"


@pytest.fixture
def past_64(monkeypatch):
    """The calls of dgauss._inversion.gaussian_blocked_magnitude, as (stage, a, j, base): the
    core's past R's or R''s 64th bit (_blocked.spy_past_64)."""
    return _blocked.spy_past_64(monkeypatch, "gaussian_blocked_magnitude")


@pytest.mark.parametrize("sigma2", TAPE_SIGMA2, ids=str)
def test_a_64_bit_tie_in_step_1(sigma2, past_64):
    """R's first 64 bits = the core's word thr[s] (= theta_s's first 64 digits), R leaving
    theta_s at bit i > 64 on either side: the core goes on past bit 64 (in
    gaussian_blocked_magnitude, stage 1, from those 64 bits) and agrees with the model (value
    and bits used), for s = 1 .. 4, the last block's (2 NB - 1, 2 NB), the first past the
    blocks (2 NB + 1, 2 NB + 2), the middle of the tail, K - 1 and K; the uniform branch's k
    bits, the residual's R' or the sign follow R, each path seen (_blocked.ties_in_step_1)."""
    m = model(sigma2)
    thr = _table(sigma2).thr.tolist()
    last, nb = m.theta_last(), m.nb
    gen = np.random.default_rng(22)
    picks = {1, 2, 3, 4, 2 * nb - 1, 2 * nb, 2 * nb + 1, 2 * nb + 2, (2 * nb + last) // 2}
    run = functools.partial(run_tape, sigma2)
    found = _blocked.ties_in_step_1(run, m, thr, picks | {last - 1, last}, gen, past_64)
    assert {_path(m, s) for s in found} == {"zero", "uniform", "residual", "tail"}


@pytest.mark.parametrize("sigma2", TAPE_SIGMA2, ids=str)
def test_a_64_bit_tie_in_the_residual_step(sigma2, past_64):
    """s even (R just below theta_{2b+2}, b = 0, 3, NB - 1), then R''s first 64 bits =
    rwords[b L + u] (= rho_{b,u}'s first 64 digits), R' leaving rho_{b,u} at bit i > 64: the
    core goes on past R''s 64th bit (stage 2, base 1 + Lb) and agrees with the model, for
    u = 1, 2, L/2, L - 2 and both sides (_blocked.ties_in_the_residual_step)."""
    m = model(sigma2)
    rwords = _table(sigma2).rwords.tolist()
    gen = np.random.default_rng(23)
    _blocked.ties_in_the_residual_step(
        functools.partial(run_tape, sigma2),
        m,
        gen,
        past_64,
        sorted({0, 3, m.nb - 1}),
        (1, 2, m.L // 2, m.L - 2),
        lambda b, u: m.rho_digits(b, u, J),
        lambda b, u: rwords[b * m.L + u],
    )


@pytest.mark.parametrize("sigma2", TAPE_SIGMA2, ids=str)
def test_r_or_r_prime_zero_for_64_bits(sigma2, past_64):
    """R < 2**-64: s beyond every word (|X| = L NB + s - 2 NB, far in the tail, from
    thresholds past the table), the core going on at stage 1 from a = 0; R' < 2**-64 in a
    residual step: U = L - 2 (every rho_{b,u} is above 2**-64; none for U = L - 1), decided
    at R''s first 1, the core going on at stage 2 from a = 0.  Both as the model says
    (_blocked.r_zero_for_64_bits, r_prime_zero_for_64_bits)."""
    m = model(sigma2)
    gen = np.random.default_rng(24)
    run = functools.partial(run_tape, sigma2)
    for s, y in _blocked.r_zero_for_64_bits(run, m, gen, past_64):
        assert y == m.L * m.nb + s - 2 * m.nb
    for b in sorted({0, m.nb - 1}):  # U = L - 2
        assert _blocked.r_prime_zero_for_64_bits(run, m, gen, past_64, b) == {m.L * (b + 1) - 1}


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, MAX], ids=str)
def test_ties_starting_mid_word(sigma2):
    """An earlier sample read k bits, so R's 64 bits span two tape words: ties with theta_1,
    theta_2, theta_{2NB+1} and theta_K past bit 64, R deciding inside the second word, R's 64
    zeros spanning the words; each as the model says (_inversion_tapes.ties_mid_word)."""
    m = model(sigma2)
    gen = np.random.default_rng(25)
    run = functools.partial(run_tape, sigma2)
    xs = (1, 2, 2 * m.nb + 1, m.theta_last())
    cases = list(tapes.ties_mid_word(run, m, gen, xs, (65, 70, 129), 60))
    assert {case for case, *_ in cases} == {"past", "within", "zero"}


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6)], ids=str)
def test_short_last_word(sigma2):
    """The second sample's R starts k bits into the first word and runs into a finite tape's
    last word of m < k bits: decided inside it (as the model says) or out of bits."""
    gen = np.random.default_rng(26)
    run = functools.partial(run_tape, sigma2)
    outcomes = tapes.short_last_word(run, model(sigma2), gen, (1, 2), step=3)
    assert min(outcomes["decided"], outcomes["exhausted"]) >= 3, outcomes


def _short_tapes(m: Model, gen) -> dict[str, tuple[str, int, str]]:
    """_blocked.short_tapes (block 1's rho_2), and two past the blocks: a tie with
    theta_{2NB+1} cut past bit 64, and a sample past the blocks cut before its sign."""
    cases = _blocked.short_tapes(
        m, gen, _rho_r(m, 1, 2, True), _blocked.cross(m.rho_digits(1, 2, J), True, 100)
    )
    tail = _blocked.theta_r(m, 2 * m.nb + 2, True)
    tie_tail = _tie(m, 2 * m.nb + 1, 100) + _bits(gen, 80)
    cases["step 1 past the blocks, past bit 64"] = (tie_tail, 90, "1")
    cases["sign past the blocks"] = (tail + "1", len(tail), "sign")
    return cases


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6), MAX], ids=str)
def test_running_out_in_each_step(sigma2):
    """A tape ending inside step 1 (within R's first word, at bit 64, past it, R all zero,
    past the blocks), inside the uniform branch's k bits, inside the residual's R' (within,
    past bit 64, R' zero), or just before the sign (where the model says it falls): core and
    oracle raise Exhausted with the tape past every word, as a first sample and as a second
    one; the tape with exactly the bits the model says the sample reads is decided, one bit
    fewer is not (_blocked.running_out_in_each_step)."""
    m = model(sigma2)
    gen = np.random.default_rng(27)
    sample = functools.partial(dgauss.sample_gaussian, sigma2, method="inversion")
    run = functools.partial(run_tape, sigma2)
    _blocked.running_out_in_each_step(run, m, gen, _short_tapes(m, gen), sample)


# --------------------------------------------------------------------------------------------
# 5. Every bit prefix
# --------------------------------------------------------------------------------------------


def _checked_draw(fill, sigma2, head: str = "", move=None, every: int = 1):
    """_inversion_tapes.checked_draw at sigma2: one draw of ``fill`` on the tape head + the
    enumerated bits, checked against the model on every ``every``-th run and every running
    out; ``move``: a planted bug."""
    return tapes.checked_draw(GAUSS, fill, Fraction(sigma2), model(sigma2), head, move, every)


def _windows(m: Model) -> dict[str, str]:
    """name -> R's first bits: windows around thresholds (holding two or three of them: the
    edge of |X| = 0, a uniform part's end, a block's end, the last block's end and the first
    threshold past the blocks, the table's end past bit 64), and prefixes inside one branch
    (a residual, a uniform part, past the blocks)."""
    around = functools.partial(_blocked.around, m)
    nb = m.nb
    return {
        "theta_1 (|X| = 0)": around(1),
        "theta_2 (uniform to residual)": around(2),
        "theta_3 (block 0 to block 1)": around(3),
        "theta_2NB (the last residual)": around(2 * nb),
        "theta_2NB+1 (past the blocks)": around(2 * nb + 1),
        "theta_K (past bit 64)": around(m.theta_last()),
        "residual, block 0": _blocked.theta_r(m, 2, True),
        "residual, block NB - 1": _blocked.theta_r(m, 2 * nb, True),
        "uniform, block 5": _blocked.theta_r(m, 11, True),
        "past the blocks": _blocked.theta_r(m, 2 * nb + 7, True),
    }


WINDOW_TARGET = 1e-4
ENUM_SIGMA2 = [BLOCKED_MIN, BLOCKED_MIN + Fraction(1, 3)]


@pytest.mark.parametrize("sigma2", ENUM_SIGMA2, ids=str)
def test_every_prefix_inside_windows(sigma2):
    """Every bit tape whose R starts with a window's bits (the windows of _windows), most
    probable first, until at most 1e-4 of the window's mass is unresolved: every run (the
    core's) = the model's prediction (value, bits used, or running out), and the conditional
    mass of every value within the model's exact bounds (_blocked.window_masses: the uniform
    part's 1/L, the residual's rho_{b,u} - rho_{b,u+1}, the share of each branch in the
    window).  The oracle too on four windows, to 1e-2."""
    m = model(sigma2)
    for i, (name, head) in enumerate(_windows(m).items()):
        e = enumerate_bits(_checked_draw(_core.fill, sigma2, head), target=WINDOW_TARGET)
        assert e.complete and _blocked.window_violations(m, e, head) == [], name
        if i in (0, 1, 5, 6):
            e = enumerate_bits(_checked_draw(reference.fill, sigma2, head), target=1e-2)
            assert e.complete and _blocked.window_violations(m, e, head) == [], name


@pytest.mark.long
def test_every_prefix_from_the_first_bit():
    """Every bit tape of R from its first bit at 2**16, most probable first, until at most
    1e-4 is unresolved (the core, about 230,000 runs, one in four checked against the model's
    prediction, every running out checked): dgauss.testing.check against the true pmf, and
    the model's exact bounds for every value up to past the largest seen."""
    sigma2 = BLOCKED_MIN
    e = enumerate_bits(_checked_draw(_core.fill, sigma2, every=4), target=1e-4)
    assert e.complete
    result = check(e, "gaussian", sigma2)
    assert result.ok, result.report()
    assert tapes.mass_violations(model(sigma2), e) == []


def test_window_check_has_power():
    """The window check rejects samplers a little off, at 2**16: a residual's U reversed
    (L - 2 - U), the uniform part's U off by one at its end (L - 1 read as L - 2), and the
    masses of 2**16 against the model of 2**16 + 1/3 in the window at theta_2."""
    sigma2 = BLOCKED_MIN
    m = model(sigma2)
    big = m.L
    windows = _windows(m)
    head = windows["residual, block 0"]
    rev = lambda v: (big - abs(v)) * (1 if v > 0 else -1)  # noqa: E731 (|v| = 1 + U)
    e = enumerate_bits(_checked_draw(_core.fill, sigma2, head, rev), target=WINDOW_TARGET)
    assert _blocked.window_violations(m, e, head)
    head = windows["uniform, block 5"]
    end = 1 + 5 * big + big - 1
    move = lambda v: v - (1 if v > 0 else -1) if abs(v) == end else v  # noqa: E731
    e = enumerate_bits(_checked_draw(_core.fill, sigma2, head, move), target=WINDOW_TARGET)
    bad = _blocked.window_violations(m, e, head)
    assert sorted(abs(v) for v in bad) == [end - 1] * 2 + [end] * 2
    head = windows["theta_2 (uniform to residual)"]
    e = enumerate_bits(_checked_draw(_core.fill, sigma2, head), target=WINDOW_TARGET)
    assert _blocked.window_violations(model(BLOCKED_MIN + Fraction(1, 3)), e, head)


@pytest.mark.long
def test_check_from_the_first_bit_has_power():
    """The check from the first bit (to 1e-4) rejects a sampler whose uniform parts never give
    U = L - 1 (|X| = L(b + 1) read as L(b + 1) - 1, every block): both dgauss.testing.check
    and the model's bounds, at the first blocks' values."""
    sigma2 = BLOCKED_MIN
    big, nb = model(sigma2).L, model(sigma2).nb

    def move(v):
        y = abs(v)
        return v - (1 if v > 0 else -1) if 0 < y <= big * nb and y % big == 0 else v

    e = enumerate_bits(_checked_draw(_core.fill, sigma2, move=move, every=1000), target=1e-4)
    assert not check(e, "gaussian", sigma2).ok
    bad = tapes.mass_violations(model(sigma2), e)
    assert {big - 1, big, -big, 1 - big} <= set(bad)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [BLOCKED_MIN + Fraction(1, 3), Fraction(66564)], ids=str)
def test_every_prefix_from_the_first_bit_slow(sigma2):
    """As test_every_prefix_from_the_first_bit, at 2**16 + 1/3 and 258**2 (NB = 129), every
    run checked against the model (about 230,000 runs); then the oracle to 1e-3 (20 s in
    all for each)."""
    m = model(sigma2)
    for fill, target in ((_core.fill, 1e-4), (reference.fill, 1e-3)):
        e = enumerate_bits(_checked_draw(fill, sigma2), target=target)
        assert e.complete
        result = check(e, "gaussian", sigma2)
        assert result.ok, result.report()
        assert tapes.mass_violations(m, e) == []


# --------------------------------------------------------------------------------------------
# 6. Large samples from the operating system
# --------------------------------------------------------------------------------------------

LARGE_N = 10**6


def _t_floats(m: Model, last: int) -> np.ndarray:
    """T_x as floats, x = 0 .. last."""
    return np.array([_mid(m.threshold(x)) for x in range(last + 1)])


def _positions(m: Model) -> int:
    return min(16, m.L)


def _position_pmf(m: Model) -> dict[int, float]:
    """P[key] for key = P u // L (P = min(16, L) bins), |X| = 1 + Lb + u <= L NB, over all
    blocks; key -1 for X = 0, -2 for |X| > L NB (past the blocks)."""
    big, nb, bins = m.L, m.nb, _positions(m)
    t = _t_floats(m, big * nb + 1)
    pmf = {-1: 1 - t[1], -2: t[big * nb + 1]}
    for v in range(bins):
        lo, hi = big * v // bins, big * (v + 1) // bins
        pmf[v] = float(sum(t[1 + big * b + lo] - t[1 + big * b + hi] for b in range(nb)))
    return pmf


def _position_keys(x: np.ndarray, m: Model) -> np.ndarray:
    y = np.abs(x)
    inside = (y - 1) % m.L * _positions(m) // m.L
    return np.where(y == 0, -1, np.where(y > m.L * m.nb, -2, inside))


def _fits(x: np.ndarray, m: Model, alpha: float = ALPHA / 2) -> list[tuple]:
    """The two chi-square statistics that fail at ``alpha``: (name, stat, dof, p): on the
    magnitude (_blocked.magnitude_pmf, bins of sigma / 8 to 14 sigma, at least 50 dof) and on
    the position inside the block."""
    width = max(1, int(m.sigma) // 8)
    magnitude = _blocked.magnitude_pmf(m, width, int(14 * m.sigma / width) + 2)
    return _blocked.failed_fits(
        [
            ("magnitude", _blocked.magnitude_keys(x, width), magnitude, 50),
            ("position", _position_keys(x, m), _position_pmf(m), _positions(m) + 1),
        ],
        alpha,
    )


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6)], ids=str)
def test_large_sample_from_the_os_fits(sigma2):
    """rng=None, 10**6 draws: chi-square (each at ALPHA / 2) on (|x| // (sigma / 8), sign),
    and on the position U inside the block in min(16, L) bins, pooled over the blocks (what
    the residual branch shapes), with X = 0 and |X| > L NB as two more bins, against the
    model."""
    x = dgauss.sample_gaussian(sigma2, LARGE_N, method="inversion")
    assert x.dtype == np.int64
    assert _fits(x, model(sigma2)) == []


def _blocked_draws(m: Model, gen, n: int, residual_u) -> np.ndarray:
    """n draws of the blocked scheme in floating point with numpy, the residual's U taken as
    residual_u(U) (a planted bug)."""
    big, nb = m.L, m.nb
    ys = np.arange(int(14 * m.sigma) + 2)
    w = np.exp(-(ys.astype(float) ** 2) / (2 * float(m.sigma2)))  # w_y
    residual = [w[1 + big * b : big * (b + 1)] - w[big * (b + 1)] for b in range(nb)]  # u < L - 1
    weights = [0.5]  # P[s] / (2 / Z): s = 0, then 2b + 1 (L m_b), 2b + 2 (N_0), then the tail
    for b in range(nb):
        weights += [big * w[big * (b + 1)], residual[b].sum()]
    weights = np.concatenate([weights, w[big * nb + 1 :]])
    s = gen.choice(weights.size, size=n, p=weights / weights.sum())
    b = (s - 1) // 2
    u = gen.integers(0, big, n)
    for block in np.unique(b[(s > 0) & (s % 2 == 0) & (b < nb)]):
        chosen = s == 2 * block + 2
        mass = residual[block] / residual[block].sum()
        u[chosen] = residual_u(gen.choice(big - 1, size=int(chosen.sum()), p=mass))
    y = np.where(s == 0, 0, np.where(b >= nb, big * nb + s - 2 * nb, 1 + big * b + u))
    return np.where(gen.integers(0, 2, n) == 1, -y, y)


def test_large_sample_statistics_have_power():
    """The statistics reject: the core's draws at 2**16 against the model at 1.02 times
    sigma2 (magnitude), and 10**6 draws of the scheme with the residual's U reversed (L - 2 -
    U: the position inside the block), while the same scheme unperturbed passes."""
    sigma2 = BLOCKED_MIN
    m = model(sigma2)
    x = dgauss.sample_gaussian(sigma2, LARGE_N, rng=np.random.PCG64(31), method="inversion")
    wrong = [name for name, *_ in _fits(x, model(sigma2 * Fraction(51, 50)))]
    assert "magnitude" in wrong
    gen = np.random.default_rng(32)
    assert _fits(_blocked_draws(m, gen, LARGE_N, lambda u: u), m) == []
    reversed_ = _blocked_draws(m, gen, LARGE_N, lambda u: m.L - 2 - u)
    assert [name for name, *_ in _fits(reversed_, m)] == ["position"]


# --------------------------------------------------------------------------------------------
# 7. Bits read
# --------------------------------------------------------------------------------------------


def expected_bits(m: Model) -> float:
    """E[bits per sample]: E[step 1] + P[s odd] k + sum_b P[s = 2b + 2] E[block b's step 2]
    + P[|X| > 0] (the sign), P[s = i] = theta_i - theta_{i+1}."""
    last = m.theta_at_least(1 << (J - 120)) + 1  # theta_last < 2**-120
    theta = [m.theta_floor(s) for s in range(1, last)]
    step_1 = _blocked.expected_rule_bits(theta, m.theta_floor(last))
    th = [_mid(m.theta(s)) for s in range(2 * m.nb + 2)]
    odd = sum(th[2 * b + 1] - th[2 * b + 2] for b in range(m.nb))
    step_2 = sum(
        (th[2 * b + 2] - th[2 * b + 3]) * _blocked.expected_rule_bits(m.rho_floors(b), 0)
        for b in range(m.nb)
    )
    return step_1 + odd * m.k + step_2 + th[1]


def entropy_bits(m: Model) -> float:
    """H(X) in bits for N_Z(0, sigma2): log2 Z + E[X**2] / (2 sigma2 ln 2), in floats."""
    ys = np.arange(1, int(40 * m.sigma) + 2, dtype=float)
    w = np.exp(-(ys**2) / (2 * float(m.sigma2)))
    z = 1 + 2 * w.sum()
    second = 2 * (ys**2 * w).sum() / z
    return math.log2(z) + second / (2 * float(m.sigma2) * math.log(2))


@pytest.mark.parametrize("sigma2", [BLOCKED_MIN, Fraction(10**6), MAX], ids=str)
def test_bits_per_sample(sigma2):
    """The core's count of bits read (fill's return, = the oracle's by the same-bits tests),
    200 calls of 1000 samples from PCG64: the mean is the model's exact expectation (z < 6
    on the calls' spread), at least H(X) (no exact sampler reads less; 0.05 of slack) and at
    most H(X) + 3 (_blocked.bits_per_sample)."""
    m = model(sigma2)
    _blocked.bits_per_sample(GAUSS, sigma2, expected_bits(m), entropy_bits(m))
