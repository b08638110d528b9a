"""Algorithms 1–3 of Canonne, Kamath & Steinke exactly as printed.

The page to read beside the paper.  Fraction arithmetic, and the two primitives every
exact sampler needs — uniform(m) on {0, …, m − 1} and Bernoulli(p) for rational p —
taken from :mod:`dgauss.reference`, so these functions draw from a
:class:`~dgauss.reference.BitStream` (or a testing tape).  They are slow (no fast paths)
and read bits differently from the compiled core and the oracle (which draw exp(−γ) by
its digits, U's low bits last, …); they exist to be *obviously* the paper's algorithms.
``tests/test_textbook.py`` proves them by the same tape enumeration as the rest.
``restart(bits)`` marks each rejection — a no-op on real randomness; it lets the
enumeration merge the loop's identical restarts.

>>> from fractions import Fraction
>>> from dgauss import reference, textbook
>>> import numpy as np
>>> bits = reference.open_stream(np.random.PCG64(1))
>>> isinstance(textbook.discrete_gaussian(bits, Fraction(2)), int)
True
"""

import math
from fractions import Fraction

from dgauss.reference import BitStream, bernoulli, restart, uniform


def bernoulli_exp(bits: BitStream, gamma: Fraction) -> bool:
    """Algorithm 1: Bernoulli(exp(−γ)) for rational γ ≥ 0."""
    if gamma <= 1:
        k = 1
        while True:
            a = bernoulli(bits, gamma / k)
            if not a:
                break
            k = k + 1
        return k % 2 == 1
    for _ in range(gamma.numerator // gamma.denominator):  # ⌊γ⌋ times
        b = bernoulli_exp(bits, Fraction(1))
        if not b:
            return False
    return bernoulli_exp(bits, gamma - gamma.numerator // gamma.denominator)


def discrete_laplace(bits: BitStream, t: int, s: int = 1) -> int:
    """Algorithm 2: the discrete Laplace with scale t/s (integers s, t ≥ 1)."""
    while True:
        u = uniform(bits, t)
        d = bernoulli_exp(bits, Fraction(u, t))
        if not d:
            restart(bits)
            continue
        v = 0
        while True:
            a = bernoulli_exp(bits, Fraction(1))
            if not a:
                break
            v = v + 1
        x = u + t * v
        y = x // s
        b = bernoulli(bits, Fraction(1, 2))
        if b and y == 0:
            restart(bits)
            continue
        return -y if b else y  # (1 − 2B)·Y


def discrete_gaussian(bits: BitStream, sigma2: Fraction) -> int:
    """Algorithm 3: the discrete Gaussian N_Z(0, σ²) for rational σ² > 0."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # ⌊σ⌋ + 1, no float
    while True:
        y = discrete_laplace(bits, t)
        c = bernoulli_exp(bits, (abs(y) - sigma2 / t) ** 2 / (2 * sigma2))
        if c:
            return y
        restart(bits)
