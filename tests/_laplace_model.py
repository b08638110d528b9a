"""The discrete Laplace's thresholds enclosed from scratch, shared by the independent models of
test_laplace_inversion.py (plain inversion, scale < 2**8) and test_laplace_blocked.py
(blocked inversion, 2**8 <= scale <= 2**20).

For X ~ Lap_Z(0, t), p = exp(-1/t): T_x = P[|X| >= x] = 2 p**x / (1 + p) (T_0 = 1), and
P[|X| = y] = T_y - T_{y+1} = tanh(1/(2t)) exp(-y/t) (twice it for y > 0).  Nothing here comes
from dgauss: :class:`LaplaceTails` encloses p**u and T_x with MPFR and directed rounding,
:func:`pmf` is the closed form at 50 digits, :func:`entropy_bits` is H(X) at 200 bits.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import gmpy2
from gmpy2 import mpfr, mpq


class LaplaceTails:
    """Lap_Z(0, t) from scratch: p**u in [exp(-up(u/t)) rounded down, exp(-down(u/t)) rounded
    up], T_x = 2 p**x / (1 + p) with every operation rounded the safe way at ``prec`` bits, so
    every quantity is an interval; ``floor(x)`` = floor(2**depth T_x) (the model's J), checked
    decided (both ends have one floor)."""

    def __init__(self, scale, depth: int, prec: int):
        self.scale = Fraction(scale)
        self.t = float(self.scale)
        self.depth = depth
        self.down = gmpy2.context(precision=prec, round=gmpy2.RoundDown)
        self.up = gmpy2.context(precision=prec, round=gmpy2.RoundUp)
        self.inv = mpq(self.scale.denominator, self.scale.numerator)  # 1/t
        p_lo, p_hi = self.power(1)
        with self.down:
            self.d_lo = 1 + p_lo
        with self.up:
            self.d_hi = 1 + p_hi
        self.log_top = math.log(2 / (1 + math.exp(-1 / self.t))) + depth * math.log(2)
        self._threshold: dict[int, tuple] = {}
        self._floor: dict[int, int] = {}

    def power(self, u: int):
        """(lo, hi) mpfr bounds on p**u = exp(-u/t)."""
        z = self.inv * u
        with self.up:
            z_hi = mpfr(z)
        with self.down:
            z_lo = mpfr(z)
            lo = gmpy2.exp(-z_hi)
        with self.up:
            hi = gmpy2.exp(-z_lo)
        return lo, hi

    def threshold(self, x: int):
        """(lo, hi) mpfr bounds on T_x (T_0 = 1)."""
        if x == 0:
            return mpfr(1), mpfr(1)
        found = self._threshold.get(x)
        if found is None:
            e_lo, e_hi = self.power(x)
            with self.down:
                lo = 2 * e_lo / self.d_hi
            with self.up:
                hi = 2 * e_hi / self.d_lo
            found = self._threshold[x] = (lo, hi)
        return found

    def floor_of(self, lo, hi, what) -> int:
        """floor(2**depth v) for v in [lo, hi], asserted the same at both ends (``what`` names
        v in the message)."""
        with self.down:  # (multiplying by a power of two is exact)
            f = int(gmpy2.floor(gmpy2.mul_2exp(lo, self.depth)))
            hi_f = int(gmpy2.floor(gmpy2.mul_2exp(hi, self.depth)))
            assert f == hi_f, (self.scale, what, "undecided")
        return f

    def floor(self, x: int) -> int:
        """floor(2**depth T_x)."""
        f = self._floor.get(x)
        if f is None:
            f = self._floor[x] = self.floor_of(*self.threshold(x), ("T", x))
        return f

    def first_below(self, v: int) -> int:
        """The first x >= 1 with floor(2**depth T_x) < v (1 <= v <= 2**depth): from the float
        estimate t (ln(2 / (1 + p)) + depth ln 2 - ln v), corrected with exact floors."""
        x = max(1, math.ceil(self.t * (self.log_top - math.log(v))))
        while self.floor(x) >= v:
            x += 1
        while x > 1 and self.floor(x - 1) < v:
            x -= 1
        return x

    def mass(self, y: int) -> tuple[mpq, mpq]:
        """Rigorous bounds on P[|X| = y] = T_y - T_{y+1}."""
        a_lo, a_hi = self.threshold(y)
        b_lo, b_hi = self.threshold(y + 1)
        return mpq(a_lo) - mpq(b_hi), mpq(a_hi) - mpq(b_lo)


def pmf(scale, y: int) -> float:
    """P[|X| = y] = tanh(1/(2t)) exp(-y/t) (twice it for y > 0), computed at 50 digits."""
    scale = Fraction(scale)
    with localcontext() as ctx:
        ctx.prec = 50
        t = Decimal(scale.numerator) / Decimal(scale.denominator)
        e = (1 / (2 * t)).exp()
        tanh = (e - 1 / e) / (e + 1 / e)
        return float(tanh * (-(Decimal(y) / t)).exp() * (2 if y else 1))


def entropy_bits(scale) -> float:
    """H(X) in bits for Lap_Z(0, t): log2((1 + p) / (1 - p)) + E|X| / (t ln 2) with
    E|X| = 2p / ((1 - p)(1 + p)), at 200 bits."""
    scale = Fraction(scale)
    with gmpy2.context(precision=200):
        q = mpq(scale.numerator, scale.denominator)
        p = gmpy2.exp(-1 / mpfr(q))
        one_minus = -gmpy2.expm1(-1 / mpfr(q))
        mean = 2 * p / (one_minus * (1 + p))
        return float(gmpy2.log2((1 + p) / one_minus) + mean / (mpfr(q) * gmpy2.log(2)))
