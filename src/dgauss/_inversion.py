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
import math
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Protocol

from dgauss._sources import DecisionTape

#: Precision past which :func:`gaussian_floors` gives up (a RuntimeError): a threshold
#: that close to a multiple of 2**-p is a probability-zero event for any parameter we know.
MAX_GUARD = 1 << 16

#: The discrete Gaussian is drawn by inversion by default (``method="auto"``) when
#: GAUSSIAN_INVERSION_MIN <= sigma^2 <= GAUSSIAN_INVERSION_MAX (docs/performance.md says why).
GAUSSIAN_INVERSION_MIN = Fraction(1, 64)
GAUSSIAN_INVERSION_MAX = Fraction(1 << 24)

METHODS = ("auto", "inversion", "rejection")

#: "auto" draws by inversion whatever the batch size when the table has at most about this
#: many words (built in about 30 us), else for batches of a quarter as many as the words.
SMALL_TABLE = 1024

#: "auto" draws by inversion only for parameters n/d with n, d below this (the core then
#: builds the table in 128-bit fixed point, in well under a millisecond).
WORD_PARAM = 1 << 62


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
    from dgauss.reference import exp_neg_floor  # the oracle's exact digits of exp(-gamma)

    return exp_neg_floor(gamma, k)


def _gaussian_bounds(sigma2: Fraction, q: int, p: int):
    """Integer bounds, in units of 2**-q, on the sums S_x (x = 1 .. K + 1) and on Z = 1 + 2 S_1,
    with the terms summed until the rest is below 2**-(p + (q - p)/2).

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
    return lower, upper, (one + 2 * lower[0], one + 2 * upper[0])


_FLOORS: dict = {}
_FLOORS_MAX = 64
_FLOORS_LOCK = threading.Lock()


def gaussian_floors(sigma2: Fraction, p: int) -> Floors:
    """floor(2**p T_x) of N_Z(0, sigma2) for every x with T_x >= 2**-p, exactly (cached).

    T_x = P[|X| >= x] lies in [2 S_lo / Z_hi, 2 S_hi / Z_lo] (:func:`_gaussian_bounds` at
    q = p + guard bits); when the floors of both ends agree for every x, and the bound on
    T_{K+1} is below 2**-p, they are the answer.  Otherwise the guard bits double (up to
    MAX_GUARD: a RuntimeError).
    """
    key = (sigma2, p)
    with _FLOORS_LOCK:
        found = _FLOORS.get(key)
    if found is not None:
        return found
    guard = 32 + 3 * (sigma2.numerator // sigma2.denominator).bit_length()
    while True:
        q = p + guard
        lower, upper, (z_lo, z_hi) = _gaussian_bounds(sigma2, q, p)
        words, decided = [], True
        for lo, hi in zip(lower, upper, strict=True):
            f_lo = (lo << (p + 1)) // z_hi
            f_hi = (hi << (p + 1)) // z_lo
            if f_lo != f_hi:
                decided = False
                break
            if f_lo == 0:
                break
            words.append(f_lo)
        else:
            decided = False  # the last bound must show T_{K+1} < 2**-p
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


def gaussian_magnitude(bit: Callable[[], int], sigma2: Fraction, a: int = 0, j: int = 0) -> int:
    """|X| for X ~ N_Z(0, sigma2) by :func:`invert` (the sign is the caller's next bit)."""
    return invert(bit, functools.partial(gaussian_floors, sigma2), a, j)


# --------------------------------------------------------------------------
# The discrete Laplace's thresholds
# --------------------------------------------------------------------------

#: Lap_Z(0, scale) by inversion: with p = exp(-1/scale), Y = |X| has the thresholds
#: T_x = P[|X| >= x] = 2 p**x / (1 + p), x >= 1, about 45 scale of them at or above 2**-64.
#: The core keeps them all as words up to DIRECT_WORDS of them, and past that computes each
#: word it needs as T_{BLOCK b + u} = (2 p**(BLOCK b) / (1 + p)) p**u from two tables of
#: 128-bit bounds (dg_inv.h); either way the rule reads the same bits.
BLOCK = 4096
DIRECT_WORDS = 1 << 20

LAPLACE_INVERSION_MIN = Fraction(1, 64)
LAPLACE_INVERSION_MAX = Fraction(1 << 20)


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
    :meth:`decide` as :meth:`Floors.decide`, by bisection on x (T_x decreases)."""

    __slots__ = ("scale", "p")

    def __init__(self, scale: Fraction, p: int):
        self.scale, self.p = scale, p

    def word(self, x: int) -> int:
        return laplace_floor(self.scale, x, self.p)

    def first_at_most(self, bound: int) -> int:
        """The first x >= 1 with floor(2**p T_x) <= bound (0 <= bound)."""
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


def laplace_magnitude(bit: Callable[[], int], scale: Fraction, a: int = 0, j: int = 0) -> int:
    """|X| for X ~ Lap_Z(0, scale) by :func:`invert` (the sign is the caller's next bit)."""
    return invert(bit, functools.partial(LaplaceFloors, scale), a, j)


def check_method(method) -> str:
    """``method`` as given, or a ValueError naming the allowed values."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    return method


def table_words(gaussian: bool, param: Fraction) -> int:
    """About how many words the core's table for ``param`` has (its build costs 10-30 ns a
    word): 9.4 sigma for the Gaussian, 44.4 scale for the Laplace up to DIRECT_WORDS, and past
    that the 4096 powers p**u and one word per block of 4096 (the words computed as needed)."""
    whole = param.numerator // param.denominator
    if gaussian:
        return 10 * (math.isqrt(whole) + 1)
    if 45 * (whole + 1) <= DIRECT_WORDS:
        return 45 * (whole + 1)
    return BLOCK + 45 * (whole + 1) // BLOCK  # computed as needed: the blocks and p**u


def resolve(gaussian: bool, param: Fraction, method, count: int | None = None, source=None) -> str:
    """``method`` ("auto", "inversion" or "rejection") resolved for ``count`` samples (None:
    one) of the discrete Gaussian (``param`` = sigma^2) or Laplace (``param`` = the scale), or
    a ValueError.  "auto" is "inversion" where it is the faster: inside its range
    (GAUSSIAN_INVERSION_MIN/MAX, LAPLACE_INVERSION_MIN/MAX), for a parameter whose numerator
    and denominator are below WORD_PARAM, and for a batch of at least a quarter as many
    samples as the table has words beyond SMALL_TABLE (:func:`table_words`), so that building
    the table (once per parameter) never costs much more than the batch; "rejection"
    otherwise.  It depends on the parameters and ``count`` only, never on what is cached, so
    that a seeded call always draws the same samples.  With a DecisionTape ``source`` (which
    drives the rejection loops' primitives), "auto" is "rejection".  An explicit "inversion"
    outside the range, or for a Laplace scale whose numerator or denominator reaches
    WORD_PARAM (its words would all be computed in Python), is a ValueError."""
    method = check_method(method)
    low, high = (
        (GAUSSIAN_INVERSION_MIN, GAUSSIAN_INVERSION_MAX)
        if gaussian
        else (LAPLACE_INVERSION_MIN, LAPLACE_INVERSION_MAX)
    )
    inside = low <= param <= high
    words = param.numerator < WORD_PARAM and param.denominator < WORD_PARAM
    if method == "auto":
        if isinstance(source, DecisionTape):
            return "rejection"
        batch = 4 * (1 if count is None else count) + SMALL_TABLE >= table_words(gaussian, param)
        return "inversion" if inside and words and batch else "rejection"
    if method == "inversion" and not inside:
        name = "sigma2" if gaussian else "scale"
        raise ValueError(
            f"method='inversion' needs {low} <= {name} <= 2**{high.numerator.bit_length() - 1}, "
            f"got {param}; method='auto' or 'rejection' draws any {name}"
        )
    if method == "inversion" and not gaussian and not words:
        raise ValueError(
            "method='inversion' needs a scale whose numerator and denominator are below 2**62 "
            f"(its words are then computed in fixed point), got {param}; method='auto' or "
            "'rejection' draws any scale"
        )
    return method


def use_inversion(gaussian: bool, num: int, den: int, source, method, count: int) -> bool:
    """Whether a fill backend draws ``count`` samples by inversion (:func:`resolve`, and a
    source of bits)."""
    if resolve(gaussian, Fraction(num, den), method, count, source) == "rejection":
        return False
    if isinstance(source, DecisionTape):
        raise ValueError(
            "a DecisionTape drives the rejection loops' primitives: use method='rejection'"
        )
    return True
