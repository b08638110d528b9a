"""Which sampler draws a parameter, and the geometry of inversion: the contract's choices.

``method`` ("auto", "inversion" or "rejection") and the rule by which "auto" picks one
(:func:`resolve`); the ranges of inversion, blocked and enveloped inversion; and the blocks
each draws with (:func:`gaussian_blocks`, :func:`laplace_blocks`, :func:`envelope_blocks`).
These are choices, written out in docs/contract.md (item 9), not probabilities: the compiled
core, production's exact thresholds (:mod:`dgauss._inversion`) and the oracle
(:mod:`dgauss.reference`) all read them from here, and each computes the thresholds of a
block on its own.  tests/test_reference_inversion.py checks the geometry against the
contract's inequalities.

Nothing here uses floating point.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from dgauss._sources import DecisionTape

#: The discrete Gaussian is drawn by inversion by default (``method="auto"``) when
#: GAUSSIAN_INVERSION_MIN <= sigma^2 <= GAUSSIAN_INVERSION_MAX (docs/performance.md says why).
GAUSSIAN_INVERSION_MIN = Fraction(1, 64)
GAUSSIAN_BLOCKED_MIN = Fraction(1 << 16)
#: Blocked inversion up to here; beyond, up to GAUSSIAN_INVERSION_MAX, enveloped inversion.
GAUSSIAN_BLOCKED_MAX = Fraction(1 << 24)
GAUSSIAN_INVERSION_MAX = Fraction(1 << 100)

METHODS = ("auto", "inversion", "rejection")

#: "auto" draws by inversion whatever the batch size when the table has at most about this
#: many words (built in about 30 us), else for batches of a quarter as many as the words.
SMALL_TABLE = 1024

#: "auto" draws by inversion only for parameters n/d with n, d below this (the core then
#: builds the table in 128-bit fixed point, in well under a millisecond).
WORD_PARAM = 1 << 62

#: Lap_Z(0, scale) by inversion: with p = exp(-1/scale), Y = |X| has the thresholds
#: T_x = P[|X| >= x] = 2 p**x / (1 + p), x >= 1, about 45 scale of them at or above 2**-64.
#: Below LAPLACE_BLOCKED_MIN the core keeps them all as words (at most about 11,400); from
#: there on it draws by *blocked inversion*, whose tables hold about 89 scale/L + L words
#: (:func:`laplace_blocks`; at most about 0.3 MiB).
LAPLACE_INVERSION_MIN = Fraction(1, 64)
LAPLACE_BLOCKED_MIN = Fraction(1 << 8)
#: Blocked inversion up to here; beyond, up to LAPLACE_INVERSION_MAX, enveloped inversion.
LAPLACE_BLOCKED_MAX = Fraction(1 << 20)
LAPLACE_INVERSION_MAX = Fraction(1 << 40)
#: The largest block of the Laplace's blocked inversion (L = 2**k, k <= LAPLACE_BLOCK_MAX_K).
LAPLACE_BLOCK_MAX_K = 14

#: Enveloped inversion's block index B is drawn by the rule with sigma2 / L**2 in
#: [GAUSSIAN_ENVELOPE_INNER, 4 GAUSSIAN_ENVELOPE_INNER) (about 10 sqrt of that many words),
#: or, for the Laplace, scale / L in [LAPLACE_ENVELOPE_INNER, 2 LAPLACE_ENVELOPE_INNER)
#: (about 44.4 times that many words); the larger these, the rarer a draw whose acceptance
#: needs the digits of exp(-gamma) (about 1/sqrt(inner) of the Gaussian's draws, 1/inner of
#: the Laplace's), the larger the table (docs/performance.md, *Large parameters*).
GAUSSIAN_ENVELOPE_INNER = 1 << 14
LAPLACE_ENVELOPE_INNER = 1 << 6


def gaussian_blocks(sigma2: Fraction) -> tuple[int, int] | None:
    """(k, NB) of the blocked inversion of N_Z(0, sigma2) (docs/contract.md, item 9), or None
    below GAUSSIAN_BLOCKED_MIN: L = 2**k is the largest power of two with 1024 L**2 <= sigma2
    (L <= sigma/32), and NB = floor(floor(4 sigma) / L) blocks cover |X| in [1, L NB]."""
    if sigma2 < GAUSSIAN_BLOCKED_MIN:
        return None
    n, d = sigma2.numerator, sigma2.denominator
    k = math.isqrt(n // (1024 * d)).bit_length() - 1
    return k, math.isqrt(16 * n // d) >> k


def laplace_blocks(scale: Fraction) -> tuple[int, int] | None:
    """(k, c) of the blocked inversion of Lap_Z(0, scale) (docs/contract.md, item 9), or None
    below LAPLACE_BLOCKED_MIN: L = 2**k is the largest power of two, at most
    2**LAPLACE_BLOCK_MAX_K, with 32 L <= scale or L (L - 1) <= scale, and
    c = L - ceil(L (L - 1) / scale), so that 1 - p**c <= L p**(L - 1) (1 - p).

    The residual step's share of the draws is about (L - c)/L: 1/L where L (L - 1) <= scale
    (the rule that decides below 1024), about L/scale <= 1/32 where 32 L <= scale (from 1024
    on, keeping the first step's table near 89 * 32 words)."""
    if scale < LAPLACE_BLOCKED_MIN:
        return None
    n, d = scale.numerator, scale.denominator
    k = (n // (32 * d)).bit_length() - 1
    while (1 << (k + 1)) * ((1 << (k + 1)) - 1) * d <= n:
        k += 1
    k = min(k, LAPLACE_BLOCK_MAX_K)
    big_l = 1 << k
    return k, big_l - -(-big_l * (big_l - 1) * d // n)


def envelope_blocks(gaussian: bool, param: Fraction) -> tuple[int, Fraction]:
    """(k, inner) of the enveloped inversion of N_Z(0, param) or Lap_Z(0, param)
    (docs/contract.md, item 9), GAUSSIAN_BLOCKED_MAX < sigma2 <= GAUSSIAN_INVERSION_MAX or
    LAPLACE_BLOCKED_MAX < scale <= LAPLACE_INVERSION_MAX (else a ValueError): blocks of
    L = 2**k values, L the largest power of two with GAUSSIAN_ENVELOPE_INNER L**2 <= sigma2
    (inner = sigma2 / L**2, the block index's sigma2) or LAPLACE_ENVELOPE_INNER L <= scale
    (inner = scale / L, the block index's scale)."""
    low = GAUSSIAN_BLOCKED_MAX if gaussian else LAPLACE_BLOCKED_MAX
    high = GAUSSIAN_INVERSION_MAX if gaussian else LAPLACE_INVERSION_MAX
    if not low < param <= high:
        raise ValueError(f"{param} is not drawn by enveloped inversion")
    n, d = param.numerator, param.denominator
    if gaussian:
        k = math.isqrt(n // (d * GAUSSIAN_ENVELOPE_INNER)).bit_length() - 1
        return k, param / (1 << (2 * k))
    k = (n // (d * LAPLACE_ENVELOPE_INNER)).bit_length() - 1
    return k, param / (1 << k)


def check_method(method) -> str:
    """``method`` as given, or a ValueError naming the allowed values."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    return method


def table_words(gaussian: bool, param: Fraction) -> int:
    """About how many words the core's table for ``param`` has (its build costs 10-30 ns a
    word): 9.4 sigma for the Gaussian; for the Laplace 44.4 scale below LAPLACE_BLOCKED_MIN,
    and from there the blocked inversion's about 2 (44.4 scale / L) + L words
    (:func:`laplace_blocks`); past the blocked inversion, the block index's
    (:func:`envelope_blocks`: about 9.4 sqrt(inner) or 44.4 inner)."""
    if param > (GAUSSIAN_BLOCKED_MAX if gaussian else LAPLACE_BLOCKED_MAX):
        inner = envelope_blocks(gaussian, param)[1]
        whole = inner.numerator // inner.denominator
        return 10 * (math.isqrt(whole) + 1) if gaussian else 45 * (whole + 1)
    whole = param.numerator // param.denominator
    if gaussian:
        return 10 * (math.isqrt(whole) + 1)
    blocks = laplace_blocks(param)
    if blocks is None:
        return 45 * (whole + 1)
    big_l = 1 << blocks[0]
    return 90 * (whole + 1) // big_l + big_l


def _inversion_range(gaussian: bool) -> tuple[Fraction, Fraction]:
    """The parameters the inversion draws, low to high (σ² or the scale)."""
    if gaussian:
        return GAUSSIAN_INVERSION_MIN, GAUSSIAN_INVERSION_MAX
    return LAPLACE_INVERSION_MIN, LAPLACE_INVERSION_MAX


@functools.lru_cache(maxsize=256)
def _facts(gaussian: bool, param: Fraction) -> tuple[bool, bool, int]:
    """What :func:`resolve` reads of a parameter (a pure function of its exact value,
    remembered): inside the inversion's range; numerator and denominator below WORD_PARAM,
    or a parameter of enveloped inversion (whose tables are built in fixed point from any);
    and :func:`table_words`."""
    low, high = _inversion_range(gaussian)
    inside = low <= param <= high
    enveloped = param > (GAUSSIAN_BLOCKED_MAX if gaussian else LAPLACE_BLOCKED_MAX)
    words = enveloped or (param.numerator < WORD_PARAM and param.denominator < WORD_PARAM)
    return inside, words, table_words(gaussian, param) if inside else 0


def inversion_from(gaussian: bool, param: Fraction) -> int | None:
    """The fewest samples for which "auto" draws by inversion (4·count + SMALL_TABLE reaches
    the table's words), or None if it never does (the parameter out of the range, or its
    words not in fixed point): :func:`resolve`'s rule."""
    inside, words, table = _facts(gaussian, param)
    if not (inside and words):
        return None
    return max(0, -(-(table - SMALL_TABLE) // 4))


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
    if method == "auto":
        if isinstance(source, DecisionTape):
            return "rejection"
        first = inversion_from(gaussian, param)
        samples = 1 if count is None else count
        return "inversion" if first is not None and samples >= first else "rejection"
    inside, words, table = _facts(gaussian, param)
    if method == "inversion" and not inside:
        low, high = _inversion_range(gaussian)
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
