"""Exact arithmetic shared by the compiled path and the oracle (``dgauss.reference``).

The digits of exp(−γ) for a rational γ, and Bernoulli(exp(−γ)) by those digits (the bit
contract's item 5, docs/contract.md).  Production (``dgauss._inversion``, which the compiled
core calls for its exact tables and its rare continuations) and the oracle both import them
from here, so that neither imports the other; ``tests/test_digits.py`` checks them against
MPFR with directed rounding, independently of both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction


@functools.lru_cache(maxsize=1 << 14)
def exp_neg_floor(gamma: Fraction, k: int) -> int:
    """floor(2**k * exp(-gamma)) for rational gamma >= 0, exactly.

    For gamma <= 1 the Taylor series of exp(-gamma) alternates with decreasing
    terms, so its partial sums bracket it: S_1 <= S_3 <= ... <= exp(-gamma) <=
    ... <= S_2 <= S_0.  Sum until a lower and an upper bound have the same floor
    after scaling by 2**k (for gamma > 0, exp(-gamma) is irrational, so they
    eventually do).  For gamma > 1, exp(-gamma) = exp(-1)**q exp(-r) with
    q = floor(gamma): multiply the bounds on the two factors, with more digits
    each time until the floor is certain.
    """
    if gamma <= 1:
        return _exp_neg_floor_unit(gamma, k)
    q = math.floor(gamma)
    guard = 64
    while True:
        w = k + guard
        a, b = _exp_neg_floor_unit(Fraction(1), w), _exp_neg_floor_unit(gamma - q, w)
        lo = (a**q * b) >> (w * q + guard)
        hi = ((a + 1) ** q * (b + 1)) >> (w * q + guard)
        if lo == hi:
            return lo
        guard *= 2


def _exp_neg_floor_unit(gamma: Fraction, k: int) -> int:
    """floor(2**k exp(-gamma)) for 0 <= gamma <= 1, by the Taylor series in integers.

    With w = k + g bits, x = floor(2**w gamma), T_0 = 2**w and
    T_j = floor(T_{j-1} x / (2**w j)) up to the first T_J = 0, the sum
    S = T_0 - T_1 + T_2 - ... is within B = 4J + 4 of 2**w exp(-gamma): each
    T_j is below the true term t_j = 2**w gamma**j / j! (every step rounds down,
    and x <= 2**w gamma), and t_j - T_j <= t_{j-1}/(2**w j) + (t_{j-1} - T_{j-1})/j + 1
    <= 2 + (t_{j-1} - T_{j-1})/j stays at most 4; the terms from J on alternate
    and decrease (gamma <= 1), so they add up to at most t_J <= 4.  When S - B
    and S + B agree above the g guard bits, so does the value (irrational for
    gamma > 0, so some g works).
    """
    if gamma == 0:
        return 1 << k
    guard = 32
    while True:
        w = k + guard
        x = (gamma.numerator << w) // gamma.denominator
        term, total, j = 1 << w, 1 << w, 0
        while term:
            j += 1
            term = term * x // (j << w)
            total += -term if j % 2 else term
        bound = 4 * j + 4
        lower, upper = (total - bound) >> guard, (total + bound) >> guard
        if lower == upper:
            return lower
        guard *= 2


def bernoulli_exp_digits(bit: Callable[[], int], gamma: Fraction) -> bool:
    """Bernoulli(exp(−γ)), 0 ≤ γ ≤ 1: a lazy uniform against the digits of exp(−γ).

    Reads one bit (``bit()``) per binary digit of exp(−γ) and stops at the first bit that
    differs (the answer is that digit).  exp(−γ) is irrational for γ > 0, so its expansion
    is unique and never ends; γ = 0 reads nothing.
    """
    if gamma == 0:
        return True
    j = 0
    while True:
        if j % 64 == 0:  # digits come in blocks of 64, as in the core
            k = j + 64
            block = exp_neg_floor(gamma, k)
        digit = (block >> (k - 1 - j)) & 1
        j += 1
        if bit() != digit:
            return digit == 1


def bernoulli_exp_by_digits(bit: Callable[[], int], gamma: Fraction) -> bool:
    """Bernoulli(exp(−γ)), γ ≥ 0: ⌊γ⌋ draws of Bernoulli(exp(−1)), then Bernoulli(exp(−frac))
    by the digits of exp(−frac) (frac = γ − ⌊γ⌋; frac = 0 reads nothing)."""
    whole = math.floor(gamma)
    for _ in range(whole):
        if not bernoulli_exp_digits(bit, Fraction(1)):
            return False
    return bernoulli_exp_digits(bit, gamma - whole)
