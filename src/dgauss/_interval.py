"""Interval arithmetic over MPFR: the accounting's rigorous bounds, and the oracle's thresholds.

An :class:`Interval` ``[lo, hi]`` holds two MPFR numbers computed with
directed rounding (``lo`` toward −∞, ``hi`` toward +∞), so every operation
returns an interval that contains the exact result of the exact operation on
any points of its operands.  MPFR's functions are correctly rounded in every
rounding mode, so ``exp``, ``log``, ``erfc``… of an interval are enclosed by
rounding the endpoints outward, using monotonicity.

Nothing here uses a Python float, and no MPFR operation runs in gmpy2's global
(53-bit, round-to-nearest) context: every one goes through an Arith's ``dn`` or
``up`` context — even negation, which gmpy2's unary minus would round.  Exact
inputs enter as ``Fraction``/``int`` (:meth:`Arith.q`), and the precision of one
computation is fixed by the :class:`Arith` that made its intervals, so two
threads never share state.
"""

from __future__ import annotations

from fractions import Fraction

import gmpy2
from gmpy2 import mpfr, mpz

Exact = int | Fraction


class Arith:
    """Directed-rounding MPFR contexts at one precision (in bits)."""

    __slots__ = ("bits", "dn", "up", "near")

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.dn = gmpy2.context(precision=bits, round=gmpy2.RoundDown)
        self.up = gmpy2.context(precision=bits, round=gmpy2.RoundUp)
        self.near = gmpy2.context(precision=bits)

    def q(self, value: Exact) -> Interval:
        """The tightest interval of this precision around an exact rational."""
        if isinstance(value, int):
            n, d = mpz(value), mpz(1)
        else:
            n, d = mpz(value.numerator), mpz(value.denominator)
        return Interval(self.dn.div(n, d), self.up.div(n, d), self)

    def point(self, x) -> Interval:
        """A degenerate interval at an MPFR number (exact if it fits the precision)."""
        return Interval(self.dn.plus(x), self.up.plus(x), self)

    def pi(self) -> Interval:
        return Interval(self.dn.const_pi(), self.up.const_pi(), self)

    def hull(self, lo: Interval, hi: Interval) -> Interval:
        return Interval(lo.lo, hi.hi, self)


class Interval:
    """A closed interval [lo, hi] of reals, lo and hi MPFR numbers."""

    __slots__ = ("lo", "hi", "ar")

    def __init__(self, lo, hi, ar: Arith) -> None:
        self.lo = lo
        self.hi = hi
        self.ar = ar

    def __repr__(self) -> str:
        return f"Interval({self.lo}, {self.hi})"

    def _lift(self, other) -> Interval:
        if isinstance(other, Interval):
            return other
        return self.ar.q(other)

    # -- ring operations -------------------------------------------------
    def __add__(self, other) -> Interval:
        o = self._lift(other)
        ar = self.ar
        return Interval(ar.dn.add(self.lo, o.lo), ar.up.add(self.hi, o.hi), ar)

    __radd__ = __add__

    def __neg__(self) -> Interval:
        # ctx.minus, not unary minus: that would round to the global 53-bit context.
        return Interval(self.ar.dn.minus(self.hi), self.ar.up.minus(self.lo), self.ar)

    def __sub__(self, other) -> Interval:
        o = self._lift(other)
        ar = self.ar
        return Interval(ar.dn.sub(self.lo, o.hi), ar.up.sub(self.hi, o.lo), ar)

    def __rsub__(self, other) -> Interval:
        return self._lift(other) - self

    def __mul__(self, other) -> Interval:
        o = self._lift(other)
        ar = self.ar
        a, b, c, d = self.lo, self.hi, o.lo, o.hi
        if a >= 0 and c >= 0:
            return Interval(ar.dn.mul(a, c), ar.up.mul(b, d), ar)
        dn, up = ar.dn, ar.up
        lo = min(dn.mul(a, c), dn.mul(a, d), dn.mul(b, c), dn.mul(b, d))
        hi = max(up.mul(a, c), up.mul(a, d), up.mul(b, c), up.mul(b, d))
        return Interval(lo, hi, ar)

    __rmul__ = __mul__

    def __truediv__(self, other) -> Interval:
        o = self._lift(other)
        if not o.lo > 0:
            raise ZeroDivisionError("interval division by an interval that is not positive")
        ar = self.ar
        a, b, c, d = self.lo, self.hi, o.lo, o.hi
        lo = ar.dn.div(a, d) if a >= 0 else ar.dn.div(a, c)
        hi = ar.up.div(b, c) if b >= 0 else ar.up.div(b, d)
        return Interval(lo, hi, ar)

    def __rtruediv__(self, other) -> Interval:
        return self._lift(other) / self

    def __pow__(self, n: int) -> Interval:
        """x**n for an integer n >= 0."""
        if n < 0:
            raise ValueError("negative powers are not supported; divide instead")
        ar = self.ar
        if n == 0:
            return ar.q(1)
        lo, hi = self.lo, self.hi
        if n % 2 == 1 or lo >= 0:
            return Interval(ar.dn.pow(lo, n), ar.up.pow(hi, n), ar)
        if hi <= 0:
            return Interval(ar.dn.pow(hi, n), ar.up.pow(lo, n), ar)
        return Interval(mpfr(0), ar.up.pow(max(ar.up.abs(lo), hi), n), ar)

    def scale2(self, k: int) -> Interval:
        """Multiplied by 2**k (exact)."""
        return Interval(self.ar.dn.mul_2exp(self.lo, k), self.ar.up.mul_2exp(self.hi, k), self.ar)

    # -- monotone functions ----------------------------------------------
    def exp(self) -> Interval:
        return Interval(self.ar.dn.exp(self.lo), self.ar.up.exp(self.hi), self.ar)

    def expm1(self) -> Interval:
        return Interval(self.ar.dn.expm1(self.lo), self.ar.up.expm1(self.hi), self.ar)

    def log(self) -> Interval:
        if not self.lo > 0:
            raise ValueError("log of an interval that is not positive")
        return Interval(self.ar.dn.log(self.lo), self.ar.up.log(self.hi), self.ar)

    def log1p(self) -> Interval:
        return Interval(self.ar.dn.log1p(self.lo), self.ar.up.log1p(self.hi), self.ar)

    def sqrt(self) -> Interval:
        return Interval(self.ar.dn.sqrt(max(self.lo, mpfr(0))), self.ar.up.sqrt(self.hi), self.ar)

    def erfc(self) -> Interval:
        """erfc is decreasing."""
        return Interval(self.ar.dn.erfc(self.hi), self.ar.up.erfc(self.lo), self.ar)

    def max0(self) -> Interval:
        """max(x, 0)."""
        zero = mpfr(0)
        return Interval(max(self.lo, zero), max(self.hi, zero), self.ar)

    # -- inspection ------------------------------------------------------
    def rel_width(self):
        """(hi − lo) / |lo|, rounded up; +inf when lo is 0."""
        if self.lo == 0:
            return mpfr("inf")
        return self.ar.up.div(self.ar.up.sub(self.hi, self.lo), abs(self.lo))

    def abs_width(self):
        return self.ar.up.sub(self.hi, self.lo)


def log_add(a: Interval, b: Interval) -> Interval:
    """An enclosure of ln(e^a + e^b), computed without overflow."""
    hi, lo = (a, b) if a.lo >= b.lo else (b, a)
    return hi + (lo - hi).exp().log1p()
