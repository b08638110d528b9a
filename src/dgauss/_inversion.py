"""Inversion against exactly known thresholds: the rule, and the discrete Gaussian's thresholds.

A discrete distribution on {0, 1, 2, ...} is given by its thresholds
T_x = P[Y >= x], x >= 1, which decrease to 0.  Y = #{x >= 1 : R < T_x} for a
uniform R = 0.b1 b2 ... in [0, 1).  R is read lazily, one bit at a time: after j
bits, R lies in [a, a + 1) / 2**j, and reading stops at the first j at which no
threshold has the same first j binary digits as R, i.e. no x has
floor(2**j T_x) == a.  Then Y is the number of thresholds with
floor(2**j T_x) > a.  That is :func:`invert`, the bit-consumption contract of
every sampler by inversion (docs/contract.md); the compiled core implements it
with words and a guide table and calls :func:`invert` itself to go on past the
64th bit, which it needs with probability about 2**-64 per sample.

For the discrete Gaussian N_Z(0, sigma^2), Y = |X| with

    T_x = 2 S_x / (1 + 2 S_1),   S_x = sum_{k >= x} exp(-k^2 / (2 sigma^2)),

and the sign is one more bit when Y > 0 (1 meaning negative).
:func:`gaussian_floors` gives floor(2**p T_x) exactly, from integer bounds.

Nothing here uses floating point.  This module does not import the compiled core.
"""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Protocol

from dgauss._exact import bernoulli_exp_by_digits, exp_neg_floor
from dgauss._methods import (
    GAUSSIAN_BLOCKED_MIN,
    LAPLACE_BLOCKED_MIN,
    envelope_blocks,
    gaussian_blocks,
    laplace_blocks,
)

#: Precision past which :func:`gaussian_floors` gives up (a RuntimeError): a threshold
#: that close to a multiple of 2**-p is a probability-zero event for any parameter we know.
MAX_GUARD = 1 << 16


class Thresholds(Protocol):
    """What :func:`invert` asks of the thresholds at one precision p (>= the bits read)."""

    def decide(self, a: int, j: int) -> int | None:
        """For R in [a, a + 1) / 2**j: the number of thresholds above R, or None when one has
        the same first j digits as R."""
        ...


class Floors:
    """floor(2**p T_x) for x = 1 .. K, the last x where it is not 0 (T_x < 2**-p beyond),
    kept in increasing order (``ascending[i]`` is the word of x = K - i) for bisection."""

    __slots__ = ("p", "ascending")

    def __init__(self, p: int, words: list[int]):
        self.p = p
        self.ascending = words[::-1]

    @property
    def words(self) -> list[int]:
        """floor(2**p T_x) for x = 1 .. K (decreasing)."""
        return self.ascending[::-1]

    def decide(self, a: int, j: int) -> int | None:
        """For R in [a, a + 1) / 2**j (j <= p): the number of thresholds above R, or None when
        one has the same first j digits as R."""
        if a == 0:
            return None  # infinitely many thresholds below 2**-j share R's digits
        shift = self.p - j
        above = bisect.bisect_left(self.ascending, (a + 1) << shift)
        if bisect.bisect_left(self.ascending, a << shift) != above:
            return None  # floor(2**j T_x) == a for some x
        return len(self.ascending) - above


def precision_for(j: int) -> int:
    """The precision at which thresholds are looked up after j bits: 64, 128, 256, ..."""
    p = 64
    while p < j:
        p *= 2
    return p


def invert(
    bit: Callable[[], int], floors_at: Callable[[int], Thresholds], a: int = 0, j: int = 0
) -> int:
    """The number of thresholds above a lazy uniform R, reading its bits with ``bit()``;
    ``a`` and ``j`` are R's first bits already read (a, as an integer) and how many."""
    while True:
        a = 2 * a + bit()
        j += 1
        if a == 0:
            continue
        count = floors_at(precision_for(j)).decide(a, j)
        if count is not None:
            return count


# --------------------------------------------------------------------------
# The discrete Gaussian's thresholds
# --------------------------------------------------------------------------


def _exp_neg_floor(gamma: Fraction, k: int) -> int:
    """floor(2**k exp(-gamma)), exactly; 0 at once when gamma >= 0.7 k (exp(-0.7) < 1/2)."""
    if 10 * gamma >= 7 * k:
        return 0
    return exp_neg_floor(gamma, k)


def _gaussian_bounds(sigma2: Fraction, q: int, p: int, weight: int = 2):
    """Integer bounds, in units of 2**-q, on the sums S_x (x = 1 .. K + 1) and on
    Z = 1 + weight S_1 (weight 2: |X|'s normaliser; 1: the one-sided one of enveloped
    inversion), with the terms summed until the rest is below 2**-(p + (q - p)/2).

    The terms w_k = exp(-c k^2), c = 1 / (2 sigma^2), come from E = floor(2**q exp(-c)) and
    Q = floor(2**q exp(-2c)) by w_{k+1} = w_k r_k, r_k = exp(-c(2k + 1)), r_{k+1} = r_k Q,
    every product rounded down.  So each computed W_k, R_k is a lower bound, and (the error of
    a product of lower bounds of numbers <= 1 is at most the sum of their errors plus 1)
    err(R_1) < 3, err(R_k) < 2k + 1, err(W_1) < 1, err(W_k) < k^2 + k - 1.  The rest after K
    is at most w_{K+1} / (1 - exp(-c(2K + 3))) <= w_{K+1} (1 + 2 sigma^2 / (2K + 3)).
    Returns (lower, upper) lists of S_1 .. S_{K+1} and (z_lo, z_hi)."""
    n, d = sigma2.numerator, sigma2.denominator
    one = 1 << q
    e = _exp_neg_floor(Fraction(d, 2 * n), q)
    qq = _exp_neg_floor(Fraction(d, n), q)
    w, r, k = e, (e * qq) >> q, 1
    terms_lo, terms_hi = [], []
    while True:
        hi = w + k * k + k  # > w_k
        # the rest from k on: hi (1 + 2n / (d (2k + 1))), rounded up
        rest = hi + -(-hi * 2 * n // (d * (2 * k + 1)))
        if rest < 1 << (q - p) // 2:  # below 2**-(p + guard/2): shrinks as the guard grows
            break
        terms_lo.append(w)
        terms_hi.append(hi)
        w, r, k = (w * r) >> q, (r * qq) >> q, k + 1
    lower, upper = [0] * (len(terms_lo) + 1), [rest] * (len(terms_lo) + 1)
    for i in range(len(terms_lo) - 1, -1, -1):
        lower[i] = lower[i + 1] + terms_lo[i]
        upper[i] = upper[i + 1] + terms_hi[i]
    return lower, upper, (one + weight * lower[0], one + weight * upper[0])


_FLOORS: dict = {}
_FLOORS_MAX = 64
_FLOORS_LOCK = threading.Lock()


def _gaussian_pairs(lower: list[int], upper: list[int], blocks: tuple[int, int] | None):
    """Bounds (lo, hi) on S for each threshold 2 S / Z in order: S_x for T_x, x = 1, 2, ...;
    with blocks (k, NB), S_{1+Lb} and S_{1+Lb} - L w_{L(b+1)} for b < NB (theta_{2b+1},
    theta_{2b+2}), then S_x for x = 1 + L NB, 2 + L NB, ...  (w_y = S_y - S_{y+1})."""
    if blocks is None:
        yield from zip(lower, upper, strict=True)
        return
    k, nb = blocks
    big_l = 1 << k
    for b in range(nb):
        i, m = b << k, (b + 1) << k  # S_{1+Lb} at i; w_m = S_m - S_{m+1}, S_m at m - 1
        yield lower[i], upper[i]
        yield (
            lower[i] - big_l * (upper[m - 1] - upper[m]),
            upper[i] - big_l * (lower[m - 1] - lower[m]),
        )
    yield from zip(lower[nb << k :], upper[nb << k :], strict=True)


def gaussian_floors(
    sigma2: Fraction, p: int, blocks: tuple[int, int] | None = None, one_sided: bool = False
) -> Floors:
    """floor(2**p T_x) of N_Z(0, sigma2) for every x with T_x >= 2**-p, exactly (cached); with
    ``blocks`` = (k, NB) (:func:`gaussian_blocks`), the first step's thresholds of the blocked
    inversion instead: theta_{2b+1} = T_{1+Lb}, theta_{2b+2} = T_{1+Lb} - L P[|X| = L(b+1)] for
    b < NB, then T_x for x > L NB; with ``one_sided``, the thresholds S_x / (1 + S_1) of the
    one-sided B, P[B = b] proportional to exp(-b**2 / (2 sigma2)) for b >= 0 (enveloped
    inversion's block index, :class:`Envelope`).

    Each threshold weight S / Z lies in [weight S_lo / Z_hi, weight S_hi / Z_lo]
    (:func:`_gaussian_bounds` at q = p + guard bits; weight 2, or 1 when one-sided); when the
    floors of both ends agree for every one, and the bound on the first past the last is
    below 2**-p, they are the answer.  Otherwise the guard bits double (up to MAX_GUARD: a
    RuntimeError).
    """
    key = (sigma2, p, blocks, one_sided)
    with _FLOORS_LOCK:
        found = _FLOORS.get(key)
    if found is not None:
        return found
    weight = 1 if one_sided else 2
    guard = 32 + 3 * (sigma2.numerator // sigma2.denominator).bit_length()
    while True:
        q = p + guard
        lower, upper, (z_lo, z_hi) = _gaussian_bounds(sigma2, q, p, weight)
        words, decided = [], True
        for lo, hi in _gaussian_pairs(lower, upper, blocks):
            f_lo = (weight * lo << p) // z_hi
            f_hi = (weight * hi << p) // z_lo
            if f_lo != f_hi:
                decided = False
                break
            if f_lo == 0:
                break
            words.append(f_lo)
        else:
            decided = False  # the last bound must show the next threshold < 2**-p
        if decided:
            break
        guard *= 2
        if guard > MAX_GUARD:
            raise RuntimeError(
                f"a threshold of N_Z(0, {sigma2}) could not be told from a multiple of "
                f"2**-{p} with {MAX_GUARD} guard bits"
            )
    found = Floors(p, words)
    with _FLOORS_LOCK:
        if len(_FLOORS) >= _FLOORS_MAX:
            _FLOORS.clear()
        _FLOORS[key] = found
    return found


@functools.lru_cache(maxsize=4096)
def gaussian_residual_floors(sigma2: Fraction, b: int, p: int) -> Floors:
    """floor(2**p rho_{b,u}), u = 1 .. L - 2, of block b's residual in the blocked inversion of
    N_Z(0, sigma2) (docs/contract.md, item 9), exactly: rho_{b,u} = N_u / N_0 with
    N_u = sum_{v=u}^{L-2} (w_{y0+v} - w_{y0+L-1}), y0 = 1 + Lb, w_y = exp(-y**2 / (2 sigma2)).
    With A_y = floor(2**q w_y), each difference lies in (A_{y0+v} - A_m - 1, A_{y0+v} - A_m + 1);
    q doubles until both ends of every ratio have one floor."""
    blocks = gaussian_blocks(sigma2)
    if blocks is None or not 0 <= b < blocks[1]:
        raise ValueError(f"N_Z(0, {sigma2}) has no block {b} in its blocked inversion")
    big_l = 1 << blocks[0]
    y0 = 1 + (b << blocks[0])

    def bounds(q: int) -> tuple[list[int], list[int]]:
        a = [_exp_neg_floor(Fraction(y * y) / (2 * sigma2), q) for y in range(y0, y0 + big_l)]
        lows, highs = [0] * big_l, [0] * big_l  # N_u, u = 0 .. L - 1 (N_{L-1} = 0)
        for v in range(big_l - 2, -1, -1):
            lows[v] = lows[v + 1] + a[v] - a[-1] - 1
            highs[v] = highs[v + 1] + a[v] - a[-1] + 1
        return lows, highs

    return _ratio_floors(bounds, big_l - 2, p, p + 64, f"N_Z(0, {sigma2})")


def _ratio_floors(
    bounds: Callable[[int], tuple[list[int], list[int]]], count: int, p: int, q: int, what: str
) -> Floors:
    """floor(2**p N_u / N_0), u = 1 .. count, from bounds(q) = (lows, highs) with
    lows[u] <= 2**q N_u <= highs[u] (u = 0 .. count): each word lies between
    floor(2**p lows[u] / highs[0]) and floor(2**p highs[u] / lows[0]); q doubles until every
    one is decided (up to MAX_GUARD: a RuntimeError naming ``what``)."""
    while True:
        lows, highs = bounds(q)
        words = []
        if lows[0] > 0:
            for u in range(1, count + 1):
                lo, hi = (lows[u] << p) // highs[0], (highs[u] << p) // lows[0]
                if lo != hi or lows[u] <= 0:
                    break
                words.append(lo)
        if len(words) == count:
            return Floors(p, words)
        q *= 2
        if q > MAX_GUARD:
            raise RuntimeError(
                f"a residual threshold of {what} could not be told from a multiple of 2**-{p} "
                f"with {MAX_GUARD} bits"
            )


def blocked_magnitude(
    bit: Callable[[], int],
    stage_floors: Callable[[int], Thresholds],
    residual_floors: Callable[[int, int], Thresholds],
    blocks: tuple[int, int | None],
    a: int = 0,
    j: int = 0,
    stage: int = 1,
    base: int = 0,
) -> int:
    """Y by blocked inversion (docs/contract.md, item 9), blocks = (k, NB), NB None for no end:
    the rule on the first step's thresholds (``stage_floors(p)``) gives s; s = 0 is Y = 0;
    s = 2b + 1 (b < NB) is Y = 1 + Lb + U, U the next k raw bits; s = 2b + 2 the same with U
    by the rule on block b's residual (``residual_floors(b, p)``), on a fresh uniform R';
    s = 2 NB + i is Y = L NB + i.  ``stage`` 1 starts from R's first ``j`` bits ``a``; stage 2
    from R''s, the block's start ``base`` = 1 + Lb known.  The sign is the caller's next bit."""
    k, nb = blocks
    if stage == 1:
        s = invert(bit, stage_floors, a, j)
        if s == 0:
            return 0
        b, part = divmod(s - 1, 2)
        if nb is not None and b >= nb:
            return (nb << k) + s - 2 * nb
        base = 1 + (b << k)
        if part == 0:  # the block's uniform part: U is k raw bits
            u = 0
            for _ in range(k):
                u = 2 * u + bit()
            return base + u
        a, j = 0, 0
    return base + invert(bit, functools.partial(residual_floors, (base - 1) >> k), a, j)


def gaussian_blocked_magnitude(
    bit: Callable[[], int], sigma2: Fraction, a: int = 0, j: int = 0, stage: int = 1, base: int = 0
) -> int:
    """|X| for X ~ N_Z(0, sigma2) by blocked inversion (:func:`blocked_magnitude`)."""
    blocks = gaussian_blocks(sigma2)
    if blocks is None:
        raise ValueError(f"N_Z(0, {sigma2}) is not drawn by blocked inversion")
    return blocked_magnitude(
        bit,
        functools.partial(gaussian_floors, sigma2, blocks=blocks),
        functools.partial(gaussian_residual_floors, sigma2),
        blocks,
        a,
        j,
        stage,
        base,
    )


def gaussian_magnitude(bit: Callable[[], int], sigma2: Fraction, a: int = 0, j: int = 0) -> int:
    """|X| for X ~ N_Z(0, sigma2) by inversion (the sign is the caller's next bit): the rule on
    every threshold below GAUSSIAN_BLOCKED_MIN, blocked inversion from there up to
    GAUSSIAN_BLOCKED_MAX (beyond: :func:`enveloped_draw`, which draws the sign itself)."""
    if sigma2 >= GAUSSIAN_BLOCKED_MIN:
        return gaussian_blocked_magnitude(bit, sigma2, a, j)
    return invert(bit, functools.partial(gaussian_floors, sigma2), a, j)


# --------------------------------------------------------------------------
# The discrete Laplace's thresholds
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def laplace_floor(scale: Fraction, x: int, p: int) -> int:
    """floor(2**p T_x), T_x = 2 exp(-x/scale) / (1 + exp(-1/scale)), x >= 1, exactly: from
    A = floor(2**q exp(-x/scale)) and B = floor(2**q exp(-1/scale)), T_x lies in
    [2A / (2**q + B + 1), 2(A + 1) / (2**q + B)]; q grows until both ends have one floor."""
    q = p + 64
    while True:
        a = _exp_neg_floor(x / scale, q)
        b = _exp_neg_floor(1 / scale, q)
        lo = (a << (p + 1)) // ((1 << q) + b + 1)
        hi = ((a + 1) << (p + 1)) // ((1 << q) + b)
        if lo == hi:
            return lo
        q *= 2
        if q > MAX_GUARD:
            raise RuntimeError(
                f"a threshold of Lap_Z(0, {scale}) could not be told from a multiple of "
                f"2**-{p} with {MAX_GUARD} bits"
            )


class LaplaceFloors:
    """floor(2**p T_x) of Lap_Z(0, scale)'s |X|, computed when asked (:func:`laplace_floor`):
    :meth:`decide` as :meth:`Floors.decide`, by bisection on x (T_x decreases).  With
    ``blocks`` = (k, c) (:func:`laplace_blocks`), the thresholds are instead the first step's of
    the blocked inversion, theta_{2b+1} = T_{1 + Lb} and theta_{2b+2} = T_{1 + Lb + c}."""

    __slots__ = ("scale", "p", "blocks")

    def __init__(self, scale: Fraction, p: int, blocks: tuple[int, int] | None = None):
        self.scale, self.p, self.blocks = scale, p, blocks

    def word(self, x: int) -> int:
        """floor(2**p T_x), or with blocks floor(2**p theta_x) (x >= 1)."""
        if self.blocks is not None:
            k, c = self.blocks
            b, odd = divmod(x - 1, 2)
            x = 1 + (b << k) + (c if odd else 0)
        return laplace_floor(self.scale, x, self.p)

    def first_at_most(self, bound: int) -> int:
        """The first x >= 1 with word(x) <= bound (0 <= bound)."""
        hi = 1
        while self.word(hi) > bound:
            hi *= 2
        lo = hi // 2 + 1 if hi > 1 else 1  # word(lo - 1) > bound, or lo = 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.word(mid) > bound:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def decide(self, a: int, j: int) -> int | None:
        if a == 0:
            return None
        shift = self.p - j
        # floor(2**j T_x) > a  <=>  floor(2**p T_x) >= (a + 1) 2**shift
        x = self.first_at_most(((a + 1) << shift) - 1)  # the first threshold not above R
        if self.word(x) >> shift == a:
            return None
        return x - 1


def _power_bounds(scale: Fraction, q: int, last: int) -> list[int]:
    """P_u = floor(2**q p**u) ... as lower bounds: P_0 = 2**q, P_1 = floor(2**q p), P_u =
    floor(P_(u-1) P_1 / 2**q), each within 2u - 1 units of 2**q p**u (below it), u <= last."""
    one = 1 << q
    e = _exp_neg_floor(1 / scale, q)
    powers = [one, e]
    for _ in range(last - 1):
        powers.append((powers[-1] * e) >> q)
    return powers


@functools.lru_cache(maxsize=64)
def residual_floors(scale: Fraction, p: int) -> Floors:
    """floor(2**p rho_u), u = 1 .. L - 1, of the blocked inversion's residual (docs/contract.md,
    item 9): rho_u = F(u)/F(0), F(u) = L (p**u - p**L) - (L - u)(1 - p**c), exactly.

    With P_u from :func:`_power_bounds` at q bits (P_u <= 2**q p**u < P_u + 2u), F(u) 2**q lies
    in [L (P_u - P_L - 2L) - (L - u)(2**q - P_c), L (P_u + 2u - P_L) - (L - u)(2**q - P_c - 2c)];
    when the floors of both ends of every ratio agree they are the words, else q doubles."""
    blocks = laplace_blocks(scale)
    if blocks is None:
        raise ValueError(f"Lap_Z(0, {scale}) is not drawn by blocked inversion")
    k, c = blocks
    big_l = 1 << k

    def bounds(q: int) -> tuple[list[int], list[int]]:
        one = 1 << q
        pw = _power_bounds(scale, q, big_l)
        lows = [
            big_l * (pw[u] - pw[big_l] - 2 * big_l) - (big_l - u) * (one - pw[c])
            for u in range(big_l)
        ]
        highs = [
            big_l * (pw[u] + 2 * u - pw[big_l]) - (big_l - u) * (one - pw[c] - 2 * c)
            for u in range(big_l)
        ]
        return lows, highs

    return _ratio_floors(bounds, big_l - 1, p, p + 64 + 2 * k, f"Lap_Z(0, {scale})")


def laplace_blocked_magnitude(
    bit: Callable[[], int], scale: Fraction, a: int = 0, j: int = 0, stage: int = 1, base: int = 0
) -> int:
    """|X| for X ~ Lap_Z(0, scale) by blocked inversion (:func:`blocked_magnitude`): blocks
    without end, every block's residual the same (:func:`residual_floors`)."""
    blocks = laplace_blocks(scale)
    if blocks is None:
        raise ValueError(f"Lap_Z(0, {scale}) is not drawn by blocked inversion")
    k, c = blocks
    return blocked_magnitude(
        bit,
        functools.partial(LaplaceFloors, scale, blocks=blocks),
        lambda b, p: residual_floors(scale, p),
        (k, None),
        a,
        j,
        stage,
        base,
    )


def laplace_magnitude(bit: Callable[[], int], scale: Fraction, a: int = 0, j: int = 0) -> int:
    """|X| for X ~ Lap_Z(0, scale) by inversion (the sign is the caller's next bit): the rule on
    every threshold below LAPLACE_BLOCKED_MIN, blocked inversion from there up to
    LAPLACE_BLOCKED_MAX (beyond: :func:`enveloped_draw`, which draws the sign itself)."""
    if scale >= LAPLACE_BLOCKED_MIN:
        return laplace_blocked_magnitude(bit, scale, a, j)
    return invert(bit, functools.partial(LaplaceFloors, scale), a, j)


# --------------------------------------------------------------------------
# Enveloped inversion: the largest parameters
# --------------------------------------------------------------------------

#: The most leading 1 digits of exp(-gamma) a block's table entry claims.
MAX_LEADING_ONES = 62


@functools.lru_cache(maxsize=1 << 16)
def geometric_floor(scale: Fraction, x: int, p: int) -> int:
    """floor(2**p exp(-x/scale)), exactly: P[B >= x] for B geometric with
    P[B = b] proportional to exp(-b/scale), b >= 0."""
    return _exp_neg_floor(x / scale, p)


class GeometricFloors(LaplaceFloors):
    """floor(2**p exp(-x/scale)), x >= 1, computed when asked (:func:`geometric_floor`):
    :meth:`decide` as :meth:`LaplaceFloors.decide`."""

    __slots__ = ()

    def word(self, x: int) -> int:
        """floor(2**p exp(-x/scale))."""
        return geometric_floor(self.scale, x, self.p)


class Envelope:
    """Enveloped inversion of N_Z(0, sigma2), GAUSSIAN_BLOCKED_MAX < sigma2 <=
    GAUSSIAN_INVERSION_MAX, or Lap_Z(0, scale), LAPLACE_BLOCKED_MAX < scale <=
    LAPLACE_INVERSION_MAX (docs/contract.md, item 9).  With w_y = exp(-f(y)),
    f(y) = y**2 / (2 sigma2) or y / scale, and blocks of L = 2**k values:

    1. B = b >= 0 by the rule on the thresholds P[B >= b] of P[B = b] proportional to w_{Lb}:
       a one-sided discrete Gaussian of sigma2 / L**2 (``inner``), or the geometric
       P[B >= b] = exp(-b / (scale / L));
    2. U, the next k raw bits, first bit most significant (uniform on [0, L));
    3. acceptance: Bernoulli(exp(-gamma)) by digits (contract item 5), gamma = f(Lb + U) -
       f(Lb) = U (2Lb + U) / (2 sigma2) or U / scale; a 0 starts again at step 1;
    4. the sign, one bit (1: negative); Y = Lb + U, and Y = 0 with the sign 1 starts again.

    An attempt gives each pair (sign, y) the probability P[B = b] / (2L) times w_y / w_{Lb},
    proportional to w_y, so X = +-Y (zero once) is exactly N_Z(0, sigma2) or Lap_Z(0, scale).
    ``leading_ones(b)`` is J(b), the largest j <= MAX_LEADING_ONES with
    2**j gamma(b, L - 1) <= 1: then exp(-gamma) >= 1 - gamma >= 1 - 2**-j for every U of the
    block, so its first J(b) digits are 1 and R's first 0 among them accepts (the core's
    shortcut; the same bits as the comparison digit by digit)."""

    __slots__ = ("gaussian", "param", "k", "inner")

    def __init__(self, gaussian: bool, param: Fraction):
        k, inner = envelope_blocks(gaussian, param)  # a ValueError out of its range
        self.gaussian, self.param, self.k, self.inner = gaussian, param, k, inner

    def stage_floors(self, p: int) -> Thresholds:
        """floor(2**p P[B >= b]), b >= 1, exactly."""
        if self.gaussian:
            return gaussian_floors(self.inner, p, one_sided=True)
        return GeometricFloors(self.inner, p)

    def gamma(self, b: int, u: int) -> Fraction:
        """f(Lb + u) - f(Lb): the acceptance's exponent."""
        if self.gaussian:
            return Fraction(u * ((b << (self.k + 1)) + u)) / (2 * self.param)
        return u / self.param

    def leading_ones(self, b: int) -> int:
        """J(b) (the class's docstring)."""
        worst = self.gamma(b, (1 << self.k) - 1)
        j = max(0, (worst.denominator // worst.numerator).bit_length() - 1)
        return min(j, MAX_LEADING_ONES)


@functools.lru_cache(maxsize=256)
def envelope(gaussian: bool, param: Fraction) -> Envelope:
    """The :class:`Envelope` of a parameter (cached)."""
    return Envelope(gaussian, param)


def enveloped_attempt(
    bit: Callable[[], int], env: Envelope, a: int = 0, j: int = 0, block: int | None = None
) -> int | None:
    """One attempt of enveloped inversion (:class:`Envelope`, steps 1-4), reading bits with
    ``bit()``: X, or None when the draw starts again.  Step 1 starts from R's first ``j``
    bits ``a``, or, with ``block``, is already done (B = block): the core's ways of going on
    past R's 64th bit."""
    b = invert(bit, env.stage_floors, a, j) if block is None else block
    u = 0
    for _ in range(env.k):
        u = 2 * u + bit()
    if not bernoulli_exp_by_digits(bit, env.gamma(b, u)):
        return None
    negative = bit()
    y = (b << env.k) + u
    if y == 0 and negative:
        return None
    return -y if negative else y


def enveloped_draw(
    bit: Callable[[], int], env: Envelope, a: int = 0, j: int = 0, block: int | None = None
) -> int:
    """X (signed) by enveloped inversion: attempts (:func:`enveloped_attempt`) until one
    gives X; the first starts from ``a``, ``j`` or ``block``."""
    while True:
        x = enveloped_attempt(bit, env, a, j, block)
        if x is not None:
            return x
        a, j, block = 0, 0, None
