"""The pure-Python reference oracle: Algorithms 1-3 in ``fractions.Fraction``.

This module is the readable specification of dgauss's samplers and the test
oracle for the compiled core: the algorithms of Canonne, Kamath & Steinke, "The
Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Section 5, with the
same exact refinements as the core -- every Bernoulli(exp(-g)) with g <= 1 by the
digits of exp(-g), X = U + tV by inversion for t <= INVERSION_MAX, U = H 2**r + L
with U's low bits read last, Algorithm 3's acceptance factored at the block start
-- so that the two, fed the same bits, return the same samples.  Sampling by
inversion (``method="inversion"``) is :mod:`dgauss._reference_inversion`, written
from the contract with thresholds of its own (MPFR intervals): the oracle shares
none of the compiled path's helpers, only the neutral modules (docs/design.md).
The pseudo-code exactly as printed is :mod:`dgauss.textbook`; the bit-consumption
contract both follow is docs/contract.md (the one place it is written out).

The public functions take the same arguments as :func:`dgauss.sample_gaussian`,
:func:`dgauss.sample_laplace` and :func:`dgauss.sample_bernoulli_exp`, and
share their parameter checking.  They run about a thousand times slower.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dgauss import _driver, _exact, _methods
from dgauss import _reference_inversion as inversion
from dgauss._exact import exp_neg_floor  # the digits of exp(-gamma), shared with production
from dgauss._kinds import Kind
from dgauss._sources import DecisionTape, Exhausted, Restart, ScriptedOS, Tape

__all__ = [
    "BitStream",
    "uniform",
    "bernoulli",
    "fair_bit",
    "exp_neg_floor",
    "bernoulli_exp_digits",
    "bernoulli_exp",
    "bernoulli_exp_by_digits",
    "geometric_by_inversion",
    "geometric_exp1",
    "split_bits",
    "uniform_split",
    "Block",
    "laplace_attempt",
    "discrete_laplace",
    "discrete_gaussian",
    "discrete_gaussian_by_inversion",
    "discrete_laplace_by_inversion",
    "sample_gaussian",
    "sample_laplace",
    "sample_bernoulli_exp",
    "fill",
    "open_stream",
]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

#: Algorithm 2 draws U's top HIGH_BITS bits H first and its low bits L last (:func:`split_bits`);
#: the compiled core tabulates the digits of exp(-H 2**r/t), at most 2**HIGH_BITS words.
HIGH_BITS = 12

#: When t is at most this, Algorithm 2 draws X = U + tV ~ Geometric(1 - exp(-1/t)) in one
#: inversion (:func:`geometric_by_inversion`) instead of its U, D and V loops.
INVERSION_MAX = 8


class BitStream:
    """Random bits from a source of 64-bit words, most significant bit first.

    ``budget`` (a number of bits) makes the stream finite: reading past it
    raises :class:`dgauss.testing.Exhausted`.
    """

    decisions = False
    stop_at_restart = False

    def decide(self, request: tuple, limit: int) -> int:
        """Only a :class:`DecisionStream` takes decisions (``decisions`` is False here)."""
        raise TypeError("a bit stream reads bits; it takes no decisions")

    def __init__(self, next_word: Callable[[], int], budget: int | None = None):
        self._next_word = next_word
        self._word = 0  # the current word; its low `_avail` bits are unread
        self._avail = 0
        self._budget = budget
        self.words_taken = 0
        self._bits_taken = 0  # bits of the words taken (the last word of a tape may be short)

    def bits(self, k: int) -> int:
        """The next ``k`` bits as an integer, first bit most significant."""
        value = 0
        while k > 0:
            if self._avail == 0:
                self._take_word()
            take = min(k, self._avail)
            self._avail -= take
            value = (value << take) | ((self._word >> self._avail) & ((1 << take) - 1))
            k -= take
        return value

    def _take_word(self) -> None:
        if self._budget == 0:
            raise Exhausted()
        self._word = self._next_word()
        self._avail = 64
        self.words_taken += 1
        if self._budget is not None:
            if self._budget < 64:  # the last, partial word of a tape: its top bits
                self._word >>= 64 - self._budget
                self._avail = self._budget
            self._budget -= self._avail
        self._bits_taken += self._avail

    def bit(self) -> int:
        return self.bits(1)

    @property
    def bits_used(self) -> int:
        return self._bits_taken - self._avail


class DecisionStream:
    """Testing only: outcomes of the primitives from a :class:`dgauss.testing.DecisionTape`.

    uniform, bernoulli, bernoulli_exp_digits and fair_bit take their outcomes from here instead of
    reading bits (see DecisionTape); the samplers above them run unchanged.
    """

    decisions = True

    def __init__(self, tape):
        self._outcomes = [int(o) for o in tape.outcomes]
        self._pos = 0
        self.stop_at_restart = tape.stop_at_restart
        self.bits_used = 0

    def decide(self, request: tuple, limit: int) -> int:
        if self._pos == len(self._outcomes):
            raise Exhausted(request)
        outcome = self._outcomes[self._pos]
        self._pos += 1
        if outcome >= limit:
            raise ValueError("a decision tape outcome is outside its primitive's range")
        return outcome

    def bits(self, k: int) -> int:
        raise RuntimeError("a sampler read raw bits in decision mode")

    bit = bits


def uniform(bits: BitStream, m: int) -> int:
    """Uniform on {0, ..., m-1}: k = bitlength(m-1) bits by rejection, each try
    compared with m-1 one bit per digit and abandoned at its first bit above m-1's
    (:func:`uniform_split` with r = 0)."""
    if m == 1:
        return 0
    if bits.decisions:
        return bits.decide(("uniform", m), m)
    return uniform_split(bits, m, 0)[0]


def bernoulli(bits: BitStream, p: Fraction) -> bool:
    """Bernoulli(p), 0 <= p, by comparing a lazy uniform U in [0, 1) with p."""
    n, d = p.numerator, p.denominator
    if n >= d:
        return True
    if bits.decisions:
        return n != 0 and bits.decide(("bernoulli", p), 2) == 1
    r = n
    while r != 0:
        r *= 2
        digit = r >= d  # the next binary digit of p
        if digit:
            r -= d
        if bits.bit() != digit:
            return digit  # U < p exactly when U has 0 where p has 1
    return False


def fair_bit(bits: BitStream) -> int:
    """Bernoulli(1/2) as one raw bit."""
    if bits.decisions:
        return bits.decide(("bernoulli", Fraction(1, 2)), 2)
    return bits.bit()


def bernoulli_exp_digits(bits: BitStream, gamma: Fraction) -> bool:
    """Bernoulli(exp(-gamma)), 0 <= gamma <= 1: a lazy uniform against the digits of
    exp(-gamma), one bit per digit, stopping at the first that differs
    (:func:`dgauss._exact.bernoulli_exp_digits`); in decision mode, one decision."""
    if gamma != 0 and bits.decisions:
        return bits.decide(("bernoulli_exp", gamma), 2) == 1
    return _exact.bernoulli_exp_digits(bits.bit, gamma)


def restart(bits: BitStream) -> None:
    """A rejection: the loop starts again from its initial state (testing sources may stop here)."""
    if bits.stop_at_restart:
        raise Restart()


def bernoulli_exp(bits: BitStream, gamma: Fraction) -> bool:
    """Algorithm 1: Bernoulli(exp(-gamma)), gamma >= 0 rational (exp(-1) by its digits)."""
    if gamma == 1:
        return bernoulli_exp_digits(bits, gamma)
    if gamma < 1:
        k = 1
        while bernoulli(bits, gamma / k):
            k += 1
        return k % 2 == 1
    for _ in range(math.floor(gamma)):
        if not bernoulli_exp_digits(bits, Fraction(1)):
            return False
    return bernoulli_exp(bits, gamma - math.floor(gamma))


def bernoulli_exp_by_digits(bits: BitStream, gamma: Fraction) -> bool:
    """Bernoulli(exp(-gamma)), gamma >= 0: Algorithm 1's floor(gamma) draws of
    Bernoulli(exp(-1)), then Bernoulli(exp(-frac)) by the digits of exp(-frac)
    instead of Algorithm 1's loop (frac = gamma - floor(gamma); frac = 0 reads nothing)."""
    whole = math.floor(gamma)
    for _ in range(whole):
        if not bernoulli_exp_digits(bits, Fraction(1)):
            return False
    return bernoulli_exp_digits(bits, gamma - whole)


def geometric_by_inversion(bits: BitStream, t: int) -> int:
    """X ~ Geometric(1 - exp(-1/t)), P(X >= x) = exp(-x/t), by inversion.

    X = #{x >= 1 : R < exp(-x/t)} for a lazy uniform R = 0.b1 b2 ... in [0, 1):
    read one bit at a time and stop at the first j such that no threshold
    exp(-x/t) has the same first j binary digits as R (each threshold is
    irrational, so it lies strictly inside one dyadic interval of every length).
    Then R is in [a, a + 1) / 2**j with no threshold inside, and X counts the
    thresholds above it: those with floor(2**j exp(-x/t)) > a (the rule of
    :func:`dgauss._reference_inversion.rule`).  In decision mode, X is its
    equivalent: Bernoulli(exp(-1/t)) successes before a failure.
    """
    if bits.decisions:
        x = 0
        while bits.decide(("bernoulli_exp", Fraction(1, t)), 2) == 1:
            x += 1
        return x
    return inversion.rule(bits.bit, inversion.geometric(Fraction(t)))


def geometric_exp1(bits: BitStream) -> int:
    """V ~ Geometric(1 - exp(-1)), the inner loop of Algorithm 2."""
    v = 0
    while bernoulli_exp_digits(bits, Fraction(1)):
        v += 1
    return v


def split_bits(t: int, high_bits: int = HIGH_BITS) -> int:
    """r: Algorithm 2 draws U = H 2**r + L with H < 2**high_bits first and L < 2**r last
    (tests lower ``high_bits`` to split small t, in the core and here alike)."""
    if not 1 <= high_bits <= HIGH_BITS:
        raise ValueError(f"high_bits must be in [1, {HIGH_BITS}], got {high_bits!r}")
    return max(0, (t - 1).bit_length() - high_bits)


def uniform_split(bits: BitStream, m: int, r: int) -> tuple:
    """uniform(m) as (H, L) with U = H 2**r + L, L possibly unread: (H, None).

    The tries of :func:`uniform`, except that when a try falls below m - 1
    within H's digits (its first bitlength(m - 1) - r), only the rest of H is
    read: L is then r free bits, left for :meth:`Block.read_low`.  A try that
    matches m - 1 through H's digits goes on through L's, and L is read.
    """
    if bits.decisions:
        return divmod(uniform(bits, m), 1 << r)
    if m == 1:
        return 0, 0
    k = (m - 1).bit_length()
    while True:
        x = 0
        for i in reversed(range(k)):  # digit i of m - 1, most significant first
            digit = ((m - 1) >> i) & 1
            b = bits.bit()
            x = 2 * x + b
            if b != digit:
                break
        else:
            return divmod(x, 1 << r)  # x = m - 1
        if b < digit:  # below m - 1: the other i bits are free
            if i >= r:  # read the rest of H; L stays unread
                return (x << (i - r)) | bits.bits(i - r), None
            return divmod((x << i) | bits.bits(i), 1 << r)


class Block:
    """Algorithm 2's X = a + L before its last factors: a = H 2**r + tV, the smallest X
    of its block, and L < 2**r, U's low bits (None until read); the sign B."""

    __slots__ = ("a", "low", "r", "negative")

    def __init__(self, a: int, low: int | None, r: int, negative: int):
        self.a, self.low, self.r, self.negative = a, low, r, negative

    def read_low(self, bits: BitStream) -> int:
        """L, reading its r free bits if they are still unread."""
        if self.low is None:
            self.low = bits.bits(self.r)
        return self.low


def laplace_attempt(bits: BitStream, t: int, s: int, high_bits: int = HIGH_BITS) -> Block | None:
    """One attempt of Algorithm 2 up to the factors that need U's low bits.

    U, D ~ Bernoulli(exp(-U/t)), V and the sign B, with U = H 2**r + L and D
    taken in two independent factors, Bernoulli(exp(-H 2**r/t)) here and
    Bernoulli(exp(-L/t)) by the caller once L is read.  Returns None when the
    attempt is rejected (D's first factor is 0, or B = 1 and Y = 0: zero would
    be counted twice).
    """
    if t <= INVERSION_MAX:
        return _signed(bits, geometric_by_inversion(bits, t), 0, 0, s)
    r = split_bits(t, high_bits)
    h, low = uniform_split(bits, t, r)
    if not bernoulli_exp_digits(bits, Fraction(h << r, t)):
        return None
    v = geometric_exp1(bits)
    return _signed(bits, (h << r) + t * v, low, r, s)


def _signed(bits: BitStream, a: int, low: int | None, r: int, s: int) -> Block | None:
    """B ~ Bernoulli(1/2), rejecting B = 1 with Y = floor((a + L)/s) = 0 (L read now if a < s)."""
    block = Block(a, low, r, fair_bit(bits))
    if block.negative and a < s and (a + block.read_low(bits)) // s == 0:
        return None
    return block


def discrete_laplace(bits: BitStream, t: int, s: int, high_bits: int = HIGH_BITS) -> int:
    """Algorithm 2: one sample of Lap_Z(t/s), integers s, t >= 1."""
    while True:
        block = laplace_attempt(bits, t, s, high_bits)
        if block is not None:
            low = block.read_low(bits)
            if bernoulli_exp(bits, Fraction(low, t)):  # D's second factor
                y = (block.a + low) // s  # X = U + tV; Y = floor(X/s)
                return -y if block.negative else y
        restart(bits)


def discrete_gaussian(bits: BitStream, sigma2: Fraction, high_bits: int = HIGH_BITS) -> int:
    """Algorithm 3: one sample of N_Z(0, sigma2), rational sigma2 > 0.

    Y ~ Lap_Z(t) is accepted with probability exp(-gamma(|Y|)), gamma(y) =
    (y - sigma2/t)**2 / (2 sigma2).  With |Y| = a + L (:func:`laplace_attempt`),
    L/t + gamma(a + L) = gamma(a) + L (2a + L) / (2 sigma2), so the acceptance
    at a is drawn before L is read, and one Bernoulli covers D's second factor
    and the rest of the acceptance after.
    """
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(sigma) + 1
    while True:
        block = laplace_attempt(bits, t, 1, high_bits)
        if block is not None:
            a = block.a
            if bernoulli_exp_by_digits(bits, (a - sigma2 / t) ** 2 / (2 * sigma2)):
                low = block.read_low(bits)
                if bernoulli_exp(bits, low * (2 * a + low) / (2 * sigma2)):
                    y = a + low
                    return -y if block.negative else y
        restart(bits)


def discrete_gaussian_by_inversion(bits: BitStream, sigma2: Fraction) -> int:
    """X ~ N_Z(0, sigma2) by inversion (``method="inversion"``, docs/contract.md item 9): |X|
    by the rule against the thresholds P[|X| >= x], or from sigma2 = 2**16 on by blocked
    inversion, then, when |X| > 0, the sign: one bit, 1 meaning negative; above sigma2 = 2**24,
    X by enveloped inversion.  The thresholds are the oracle's own, by MPFR interval
    arithmetic (:mod:`dgauss._reference_inversion`)."""
    if sigma2 > _methods.GAUSSIAN_BLOCKED_MAX:
        return inversion.enveloped(bits.bit, True, sigma2)
    magnitude = inversion.gaussian_magnitude(bits.bit, sigma2)
    return -magnitude if magnitude and bits.bit() else magnitude


def discrete_laplace_by_inversion(bits: BitStream, scale: Fraction) -> int:
    """X ~ Lap_Z(0, scale) by inversion (``method="inversion"``, docs/contract.md item 9): |X|
    by the rule against the thresholds P[|X| >= x], or from scale 2**8 on by blocked
    inversion, then, when |X| > 0, the sign: one bit, 1 meaning negative; above scale 2**20,
    X by enveloped inversion (:mod:`dgauss._reference_inversion`)."""
    if scale > _methods.LAPLACE_BLOCKED_MAX:
        return inversion.enveloped(bits.bit, False, scale)
    magnitude = inversion.laplace_magnitude(bits.bit, scale)
    return -magnitude if magnitude and bits.bit() else magnitude


def _os_word() -> int:
    return int.from_bytes(os.urandom(8), "little")


def open_stream(source):
    """The stream one call reads: from the OS (None), a BitGenerator, a Tape or a DecisionTape."""
    if source is None:
        return BitStream(_os_word)
    if isinstance(source, Tape):
        words = iter(source.words[source.position :].tolist())
        return BitStream(lambda: next(words), budget=source.bits_left)
    if isinstance(source, DecisionTape):
        return DecisionStream(source)
    if isinstance(source, ScriptedOS):
        raise TypeError("the oracle has no scripted OS source (it belongs to the compiled core)")
    ct = source.ctypes
    return BitStream(lambda: ct.next_uint64(ct.state))


def fill(
    kind: int,
    num: int,
    den: int,
    mu: int,
    source,
    out: np.ndarray,
    next_slice: Callable[[], tuple[int, int] | None] | None = None,
    *,
    high_bits: int = HIGH_BITS,
    fixed_point: bool = True,
    method: str = "rejection",
) -> int:
    """The oracle's backend, with the same contract as ``dgauss._core.fill`` (``fixed_point``
    is accepted for symmetry: the oracle computes every digit exactly)."""
    if next_slice is not None and source is not None:
        raise ValueError("next_slice needs source=None (the OS CSPRNG)")
    split_bits(1, high_bits)  # checks high_bits
    gaussian = kind == Kind.DISCRETE_GAUSSIAN
    inversion = kind in (Kind.DISCRETE_GAUSSIAN, Kind.DISCRETE_LAPLACE) and (
        _methods.use_inversion(gaussian, num, den, source, method, out.shape[0])
    )
    stream = open_stream(source)
    lock = source.lock if isinstance(source, np.random.BitGenerator) else contextlib.nullcontext()
    param = Fraction(num, den)
    slices = [(0, out.shape[0])] if next_slice is None else iter(next_slice, None)
    with lock, _advancing(source, stream):
        for start, stop in slices:
            for i in range(start, stop):
                if kind == Kind.BERNOULLI_EXP:
                    out[i] = bernoulli_exp(stream, param)
                    continue
                if kind == Kind.BERNOULLI:
                    out[i] = bernoulli(stream, param)
                    continue
                if kind == Kind.UNIFORM:
                    out[i] = uniform(stream, num)
                    continue
                if inversion and gaussian:
                    value = discrete_gaussian_by_inversion(stream, param) + mu
                elif inversion:
                    value = discrete_laplace_by_inversion(stream, param) + mu
                elif gaussian:
                    value = discrete_gaussian(stream, param, high_bits) + mu
                else:
                    value = discrete_laplace(stream, num, den, high_bits) + mu
                if out.dtype != object and not INT64_MIN <= value <= INT64_MAX:
                    raise OverflowError(
                        "a sample does not fit in int64; pass dtype=object to get exact Python ints"
                    )
                out[i] = value
    return stream.bits_used


@contextlib.contextmanager
def _advancing(source, stream):
    """Move a Tape past the words this call started, as a generator would be."""
    try:
        yield
    finally:
        if isinstance(source, Tape):
            source.position += stream.words_taken


def sample_gaussian(sigma2, size=None, *, mu=0, rng=None, dtype=None, workers=None, method="auto"):
    """:func:`dgauss.sample_gaussian`, computed by the oracle (threads give it no speed)."""
    return _driver.sample(
        fill, Kind.DISCRETE_GAUSSIAN, sigma2, size, mu, rng, dtype, workers, method
    )


def sample_laplace(scale, size=None, *, mu=0, rng=None, dtype=None, workers=None, method="auto"):
    """:func:`dgauss.sample_laplace`, computed by the oracle."""
    return _driver.sample(fill, Kind.DISCRETE_LAPLACE, scale, size, mu, rng, dtype, workers, method)


def sample_bernoulli_exp(gamma, size=None, *, rng=None, workers=None):
    """:func:`dgauss.sample_bernoulli_exp`, computed by the oracle."""
    return _driver.sample(fill, Kind.BERNOULLI_EXP, gamma, size, 0, rng, None, workers)
