"""The oracle's sampling by inversion, written from docs/contract.md (item 9) alone.

The rule, blocked inversion and enveloped inversion, on thresholds that are computed here by
interval arithmetic in MPFR (:mod:`dgauss._interval`, the accounting's too): every exp(-y) is
MPFR's, correctly rounded down for a lower bound and up for an upper one, and every sum, product
and quotient is rounded to the side that keeps the bound.  A comparison of a threshold with a
dyadic number a / 2**j is decided by such an enclosure; when the enclosure holds a / 2**j, the
precision doubles.

Production's thresholds (:mod:`dgauss._inversion`, whose exact words the compiled core reads
where its fixed point cannot decide) come from integer bounds on the series of
:func:`dgauss._exact.exp_neg_floor`, through recurrences of their own.  The two computations
share the contract and nothing else: the choices it names (ranges and blocks,
:mod:`dgauss._methods`) and the digits of exp(-gamma) for enveloped inversion's acceptance
(:mod:`dgauss._exact`, checked against MPFR in tests/test_digits.py).  So the core and the
oracle, fed the same bits, agree only if both are right; tests/test_reference_inversion.py
compares the two sets of thresholds word for word as well.

A threshold family is theta_1 > theta_2 > ... (finite, or tending to 0); ``bounds(x, ar, depth)``
encloses theta_x in an :class:`~dgauss._interval.Interval` of ``ar.bits`` working bits (the
Gaussian's sums cut at 2**-depth).  Slow (a few thousand samples a second) and plain; what it
remembers is bounded (a few parameters, a few precisions).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

from gmpy2 import mpfr, mpq

from dgauss import _methods
from dgauss._exact import bernoulli_exp_by_digits
from dgauss._interval import Arith, Interval

#: The working precision, and the depth (see :class:`GaussianSums`), at which a comparison gives
#: up (a RuntimeError): a threshold that close to a dyadic number, or R's first 2**14 bits all
#: 0, are probability-zero events.
MAX_PRECISION = 1 << 14

#: Gaussian sums kept per sigma2 (each (precision, depth) pair's list of enclosures; the newest).
_TAILS_KEPT = 2

Bit = Callable[[], int]


@functools.cache
def arith(prec: int) -> Arith:
    """The directed-rounding contexts at ``prec`` bits (one per precision, shared)."""
    return Arith(prec)


def exp_neg(y: Fraction, ar: Arith) -> Interval:
    """An enclosure of exp(-y), y rational: MPFR's exp, rounded outward."""
    return (-ar.q(y)).exp()


# --------------------------------------------------------------------------
# Threshold families
# --------------------------------------------------------------------------


class _Family:
    """theta_x, x = 1 .. count (None: without end), decreasing: :meth:`bounds` encloses one at a
    working precision ``ar`` and a depth (the Gaussian's sums are cut where their rest is below
    2**-depth), :meth:`enclose` remembers what it gave."""

    count: int | None = None

    def bounds(self, x: int, ar: Arith, depth: int) -> Interval:
        raise NotImplementedError

    def enclose(self, x: int, prec: int, depth: int) -> Interval:
        memo = self.__dict__.setdefault("_memo", {})
        found = memo.get((x, prec, depth))
        if found is None:
            if len(memo) > 1 << 14:
                memo.clear()
            found = memo[x, prec, depth] = self.bounds(x, arith(prec), depth)
        return found


def gaussian_weight(sigma2: Fraction, k: int, ar: Arith) -> Interval:
    """w_k = exp(-k**2 / (2 sigma2)), enclosed."""
    return exp_neg(Fraction(k * k) / (2 * sigma2), ar)


class GaussianSums:
    """The discrete Gaussian's weights w_k and their tails S_x = sum_{k >= x} w_k, enclosed at a
    working precision (the newest _TAILS_KEPT (precision, depth) pairs remembered).

    The sum stops at the first K with w_K sigma2 / K < 2**-(depth + 4): the rest,
    sum_{k > K} w_k, is at most the integral of exp(-t**2 / (2 sigma2)) over t >= K, which is at
    most w_K sigma2 / K (t / K >= 1 under the integral); every tail's upper end includes it.
    The depth follows the bits of R read (a comparison with a / 2**j needs S_x to about
    2**-(j + 64)), the precision only the closeness of the comparison: each S_x is summed from
    the far end, so a small one keeps its relative precision."""

    def __init__(self, sigma2: Fraction):
        self.sigma2 = sigma2
        self._tails: dict[tuple[int, int], list[Interval]] = {}

    def tail(self, x: int, ar: Arith, depth: int) -> Interval:
        """An enclosure of S_x (S_0 = 1 + S_1)."""
        tails = self._tails.get((ar.bits, depth))
        if tails is None:
            terms, k = [ar.q(1)], 1
            while True:
                terms.append(gaussian_weight(self.sigma2, k, ar))
                rest = terms[-1] * self.sigma2 / k
                if ar.up.mul_2exp(rest.hi, depth + 4) < 1:
                    break
                k += 1
            tails = [Interval(mpfr(0), rest.hi, ar)] * (k + 2)
            for i in range(k, -1, -1):
                tails[i] = tails[i + 1] + terms[i]
            # a new dict, assigned whole: threads reading or adding at once never see it half-made
            kept = list(self._tails.items())[1 - _TAILS_KEPT :]
            self._tails = dict([*kept, ((ar.bits, depth), tails)])
        return tails[min(x, len(tails) - 1)]


class GaussianThresholds(_Family):
    """T_x = weight S_x / (1 + weight S_1): P[|X| >= x] of N_Z(0, sigma2) (weight 2), or
    P[B >= x] of the one-sided B, P[B = b] proportional to w_b, b >= 0 (weight 1)."""

    def __init__(self, sums: GaussianSums, weight: int):
        self.sums, self.weight = sums, weight

    def normaliser(self, ar: Arith, depth: int) -> Interval:
        return 1 + self.weight * self.sums.tail(1, ar, depth)

    def bounds(self, x: int, ar: Arith, depth: int) -> Interval:
        return self.weight * self.sums.tail(x, ar, depth) / self.normaliser(ar, depth)


class GaussianBlockedStage(_Family):
    """The first step's thresholds of the Gaussian's blocked inversion (blocks (k, NB)):
    theta_{2b+1} = T_{1+Lb}, theta_{2b+2} = T_{1+Lb} - L P[|X| = L(b + 1)] for b < NB,
    theta_{2NB+i} = T_{L NB + i}; P[|X| = y] = 2 w_y / Z."""

    def __init__(self, thresholds: GaussianThresholds, blocks: tuple[int, int]):
        self.t, (self.k, self.nb) = thresholds, blocks

    def bounds(self, x: int, ar: Arith, depth: int) -> Interval:
        b, second = divmod(x - 1, 2)
        if b >= self.nb:
            return self.t.bounds((self.nb << self.k) + x - 2 * self.nb, ar, depth)
        start = self.t.bounds(1 + (b << self.k), ar, depth)
        if not second:
            return start
        w = gaussian_weight(self.t.sums.sigma2, (b + 1) << self.k, ar)
        return start - (1 << self.k) * (2 * w / self.t.normaliser(ar, depth))


def _ratio(n: Interval, d: Interval) -> Interval:
    """An enclosure of N / D (N >= 0 and D > 0 in truth); [0, 1] while D's reaches 0."""
    if not d.lo > 0:
        return Interval(mpfr(0), mpfr(1), d.ar)
    return n / d


class GaussianResidual(_Family):
    """Block b's residual: rho_u = N_u / N_0, u = 1 .. L - 2, with
    N_u = sum_{v=u}^{L-2} (w_{y0+v} - w_{L(b+1)}), y0 = 1 + Lb."""

    def __init__(self, sigma2: Fraction, k: int, b: int):
        self.sigma2, self.k, self.b = sigma2, k, b
        self.count = (1 << k) - 2
        self._n: dict[int, list[Interval]] = {}

    def bounds(self, u: int, ar: Arith, depth: int) -> Interval:
        n = self._n.get(ar.bits)
        if n is None:
            big_l, y0 = 1 << self.k, 1 + (self.b << self.k)
            last = gaussian_weight(self.sigma2, y0 + big_l - 1, ar)
            n = [ar.q(0)] * big_l
            for v in range(big_l - 2, -1, -1):
                n[v] = n[v + 1] + (gaussian_weight(self.sigma2, y0 + v, ar) - last)
            self._n = {ar.bits: n}  # the newest precision only
        return _ratio(n[u], n[0])


class LaplaceThresholds(_Family):
    """T_x = 2 p**x / (1 + p), p = exp(-1/scale): P[|X| >= x] of Lap_Z(0, scale); with blocks
    (k, c), the blocked inversion's first step instead: theta_{2b+1} = T_{1+Lb},
    theta_{2b+2} = T_{1+Lb+c}."""

    def __init__(self, scale: Fraction, blocks: tuple[int, int] | None = None):
        self.scale, self.blocks = scale, blocks

    def bounds(self, x: int, ar: Arith, depth: int) -> Interval:
        if self.blocks is not None:
            k, c = self.blocks
            b, second = divmod(x - 1, 2)
            x = 1 + (b << k) + (c if second else 0)
        return 2 * exp_neg(x / self.scale, ar) / (1 + exp_neg(1 / self.scale, ar))


class LaplaceResidual(_Family):
    """The Laplace's residual, the same for every block (blocks (k, c)): rho_u = F(u) / F(0),
    u = 1 .. L - 1, F(u) = L (p**u - p**L) - (L - u)(1 - p**c)."""

    def __init__(self, scale: Fraction, blocks: tuple[int, int]):
        self.scale, (self.k, self.c) = scale, blocks
        self.count = (1 << self.k) - 1

    def _f(self, u: int, ar: Arith) -> Interval:
        big_l = 1 << self.k
        p_u, p_l, p_c = (exp_neg(Fraction(y) / self.scale, ar) for y in (u, big_l, self.c))
        return big_l * (p_u - p_l) - (big_l - u) * (1 - p_c)

    def bounds(self, u: int, ar: Arith, depth: int) -> Interval:
        return _ratio(self._f(u, ar), self._f(0, ar))


class Geometric(_Family):
    """P[B >= x] = exp(-x / scale): the geometric B, P[B = b] proportional to exp(-b / scale)."""

    def __init__(self, scale: Fraction):
        self.scale = scale

    def bounds(self, x: int, ar: Arith, depth: int) -> Interval:
        return exp_neg(x / self.scale, ar)


# --------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------


def at_least(family: _Family, x: int, a: int, j: int) -> bool:
    """theta_x >= a / 2**j, decided exactly (theta_x is never a dyadic number)."""
    if family.count is not None and x > family.count:
        return False  # theta_x = 0 past the last
    target = mpq(a, 1 << j)
    prec, depth = 128, 128
    while depth < j + 64:
        depth *= 2
    while True:
        if depth > MAX_PRECISION:
            raise RuntimeError(
                f"threshold {x} could not be told from {a}/2**{j} within {MAX_PRECISION} bits"
            )
        bounds = family.enclose(x, prec, depth)
        if mpq(bounds.lo) >= target:
            return True
        if mpq(bounds.hi) < target:
            return False
        prec, depth = 2 * prec, 2 * depth


def count_at_least(family: _Family, a: int, j: int) -> int:
    """#{x >= 1 : theta_x >= a / 2**j}, a >= 1 (the thresholds decrease to 0), by doubling
    and bisection."""
    if not at_least(family, 1, a, j):
        return 0
    low, high = 1, 2  # at_least(low), and high is to be tried
    while at_least(family, high, a, j):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        if at_least(family, mid, a, j):
            low = mid
        else:
            high = mid
    return low


def rule(bit: Bit, family: _Family) -> int:
    """The number of thresholds above a uniform R read one bit at a time (contract item 9):
    after j bits R is in [a, a + 1) / 2**j; stop at the first j (with a > 0) at which no
    threshold has a / 2**j <= theta_x < (a + 1) / 2**j, and count those at or above
    (a + 1) / 2**j."""
    a = j = 0
    while True:
        a, j = 2 * a + bit(), j + 1
        if a == 0:
            continue
        above = count_at_least(family, a + 1, j)
        if count_at_least(family, a, j) == above:
            return above


def _floor(q: mpq) -> int:
    return int(q.numerator // q.denominator)  # exact (gmpy2.floor would round to a float)


def floor_word(family: _Family, x: int, p: int) -> int:
    """floor(2**p theta_x), exactly (for comparing thresholds with production's words)."""
    prec = 2 * p
    while True:
        bounds = family.enclose(x, prec, prec)
        f_lo, f_hi = _floor(mpq(bounds.lo) * (1 << p)), _floor(mpq(bounds.hi) * (1 << p))
        if f_lo == f_hi:
            return f_lo
        prec *= 2
        if prec > MAX_PRECISION:
            raise RuntimeError(f"threshold {x} could not be told from a multiple of 2**-{p}")


# --------------------------------------------------------------------------
# The samplers
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def gaussian_sums(sigma2: Fraction) -> GaussianSums:
    return GaussianSums(sigma2)


@functools.lru_cache(maxsize=8)
def gaussian_stage(sigma2: Fraction) -> _Family:
    """|X|'s thresholds T_x, or the blocked inversion's first step (by the contract's ranges)."""
    thresholds = GaussianThresholds(gaussian_sums(sigma2), 2)
    blocks = _methods.gaussian_blocks(sigma2)
    return thresholds if blocks is None else GaussianBlockedStage(thresholds, blocks)


@functools.lru_cache(maxsize=8)
def laplace_stage(scale: Fraction) -> _Family:
    return LaplaceThresholds(scale, _methods.laplace_blocks(scale))


@functools.lru_cache(maxsize=8)
def geometric(scale: Fraction) -> Geometric:
    """The thresholds exp(-x / scale) (remembered: Algorithm 2's t <= 8 draws by them)."""
    return Geometric(scale)


def _raw_bits(bit: Bit, k: int) -> int:
    """The next k bits as an integer, first bit most significant: uniform on [0, 2**k)."""
    u = 0
    for _ in range(k):
        u = 2 * u + bit()
    return u


def _blocked(bit: Bit, s: int, k: int, nb: int | None, residual: Callable[[int], _Family]) -> int:
    """Y from the first step's count s (contract item 9, blocked inversion, steps 2)."""
    if s == 0:
        return 0
    b, second = divmod(s - 1, 2)
    if nb is not None and b >= nb:
        return (nb << k) + s - 2 * nb
    # U: the next k raw bits, or the rule on block b's residual (a fresh uniform R')
    u = rule(bit, residual(b)) if second else _raw_bits(bit, k)
    return 1 + (b << k) + u


def gaussian_magnitude(bit: Bit, sigma2: Fraction) -> int:
    """|X| for X ~ N_Z(0, sigma2), 1/64 <= sigma2 <= 2**24, by (blocked) inversion."""
    s = rule(bit, gaussian_stage(sigma2))
    blocks = _methods.gaussian_blocks(sigma2)
    if blocks is None:
        return s
    k, nb = blocks
    return _blocked(bit, s, k, nb, lambda b: _gaussian_residual(sigma2, k, b))


@functools.lru_cache(maxsize=1024)
def _gaussian_residual(sigma2: Fraction, k: int, b: int) -> GaussianResidual:
    return GaussianResidual(sigma2, k, b)


def laplace_magnitude(bit: Bit, scale: Fraction) -> int:
    """|X| for X ~ Lap_Z(0, scale), 1/64 <= scale <= 2**20, by (blocked) inversion."""
    s = rule(bit, laplace_stage(scale))
    blocks = _methods.laplace_blocks(scale)
    if blocks is None:
        return s
    residual = _laplace_residual(scale, blocks)
    return _blocked(bit, s, blocks[0], None, lambda b: residual)


@functools.lru_cache(maxsize=8)
def _laplace_residual(scale: Fraction, blocks: tuple[int, int]) -> LaplaceResidual:
    return LaplaceResidual(scale, blocks)


@functools.lru_cache(maxsize=8)
def envelope_stage(gaussian: bool, param: Fraction) -> tuple[int, _Family]:
    """(k, the block index's thresholds) of enveloped inversion."""
    k, inner = _methods.envelope_blocks(gaussian, param)
    if gaussian:
        return k, GaussianThresholds(gaussian_sums(inner), 1)
    return k, Geometric(inner)


def enveloped(bit: Bit, gaussian: bool, param: Fraction) -> int:
    """X (signed) by enveloped inversion (contract item 9): B by the rule, U the next k bits,
    Bernoulli(exp(-gamma)) by digits, the sign; a rejection or -0 starts again."""
    k, stage = envelope_stage(gaussian, param)
    while True:
        b = rule(bit, stage)
        u = _raw_bits(bit, k)
        y0 = b << k
        gamma = Fraction(u * (2 * y0 + u)) / (2 * param) if gaussian else u / param
        if not bernoulli_exp_by_digits(bit, gamma):
            continue
        negative = bit()
        y = y0 + u
        if y == 0 and negative:
            continue
        return -y if negative else y
