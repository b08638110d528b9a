"""uniform(m) reads the bits the contract prescribes: tries of k = bitlength(m-1)
bits, each abandoned at its first bit above m-1's, the rest of a try free once a
bit falls below m-1's.  Hand-made tapes pin the rule (on words and on GMP
integers, across word boundaries); equal generators show core and oracle agree
for m of every size; the distribution itself is enumerated in test_exactness."""

import numpy as np
import pytest

from dgauss import _core, reference
from dgauss._kinds import Kind
from dgauss.testing import Tape

WHO = [_core.fill, reference.fill]


def _draw(fill, m, bits):
    """One uniform(m) from the tape `bits`: (value, bits used)."""
    out = np.empty(1, dtype=object)
    used = fill(Kind.UNIFORM, m, 1, 0, Tape(bits), out)
    return int(out[0]), used


R64 = "1011001110001111000011111000001111110000000111111110000000001111"  # 64 free bits

CASES = [
    # m, tape, value, why
    (
        5,
        "11" + "011",
        3,
        "m-1 = 100: the try '11' is above at its 2nd bit; '0' is below, '11' free",
    ),
    (5, "101" + "100", 4, "'101' above at its 3rd bit; '100' equals m-1"),
    (6, "100", 4, "m-1 = 101: below at the 3rd bit, nothing left to read"),
    (6, "0" + "11", 3, "below at the 1st bit: the other two bits are free"),
    (5, "11" * 31 + "011", 3, "31 failed tries, then a try across the word boundary"),
    (5, "11" * 31 + "101" + "100", 4, "a failed try across the word boundary"),
    (2, "1", 1, "m-1 = 1: k = 1, never above"),
    (
        2**64 + 1,
        "11" + "0" + R64,
        int(R64, 2),
        "m-1 = 2^64: above at bit 2; then below, 64 free bits across a word",
    ),
    (2**64 + 1, "1" + "0" * 64, 2**64, "m-1 itself, 65 bits"),
    (
        3 * 2**64,
        "11" + "10" + "1" * 63 + "0",
        3 * 2**64 - 2,
        "m-1 = 10 1^64: above at bit 2; then below at the very last bit",
    ),
    (
        3 * 2**64,
        "10" + "1" * 60 + "01" + "01",
        (2 << 64) + ((2**60 - 1) << 4) + 0b0101,
        "below at bit 63, the last 3 bits free",
    ),
    (2**128, R64 + R64[::-1], int(R64 + R64[::-1], 2), "m a power of two: every try succeeds"),
    (
        2**130 + 3,
        "1" + "0" * 127 + "1" + "1" + "0" * 130,
        2**130,
        "m-1 = 1 0^128 10: above at bit 129 (in the 3rd word); then below at bit 130, 1 bit free",
    ),
]


@pytest.mark.parametrize("fill", WHO, ids=["core", "oracle"])
@pytest.mark.parametrize(
    "m, tape, value, why", CASES, ids=[f"m={c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_uniform_reads_the_contracts_bits(fill, m, tape, value, why):
    assert _draw(fill, m, tape) == (value, len(tape)), why


SIZES = [
    2,
    3,
    7,
    1000,
    2**63 - 1,
    2**63,
    2**63 + 1,
    2**64 - 1,
    2**64,
    2**64 + 1,
    2**65 - 1,
    3 * 2**64,
    2**100 + 12345,
    10**50 + 1,
    3**200,
]


@pytest.mark.parametrize("m", SIZES, ids=str)
def test_core_and_oracle_agree_on_generators(m):
    results = []
    for fill in WHO:
        gen = np.random.PCG64(m % 2**32)
        out = np.empty(400, dtype=object)
        used = fill(Kind.UNIFORM, m, 1, 0, gen, out)
        results.append((out.tolist(), used, gen.random_raw(4).tolist()))
    assert results[0] == results[1]
    assert all(0 <= x < m for x in results[0][0])


def test_a_failed_try_costs_a_few_bits_not_k():
    # t = 10^50 + 1 (sigma^2 = 10^100): k = 167 and a try fails with probability 0.47;
    # rereading whole tries would average 1.87 * 167 = 312 bits per draw.
    m, n = 10**50 + 1, 4000
    out = np.empty(n, dtype=object)
    used = _core.fill(Kind.UNIFORM, m, 1, 0, np.random.PCG64(7), out)
    assert 167 <= used / n < 172
