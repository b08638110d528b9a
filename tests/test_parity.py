"""Core and oracle, fed the same bits, give the same samples and use the same bits.

Each case draws from the compiled core and from dgauss.reference with two
equally seeded NumPy BitGenerators, then compares the samples, the number of
random bits each consumed, and the generators' states afterwards (both must
have taken exactly the same 64-bit words).
"""

from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _parity import assert_same, both
from dgauss import reference
from dgauss._kinds import Kind

SIGMA2 = [
    Fraction(1, 2**64),  # floor(gamma(1)) in [2**62, 2**64): that block is not cached
    Fraction(1, 4),
    1,
    Fraction(5, 2),
    100,
    10**6,
    2 * 10**9,  # word path, with frequent switches to two words for large |Y|
    10**10,
    2**62,  # the acceptance on two words (2 n d t^2 < 2**127)
    2**64,  # just past two words: the acceptance on GMP
    10**20,
    10**40,  # GMP arithmetic; t = floor(sigma) + 1 beyond 2**63 at 10**40
    10**100,
]
SCALES = [
    Fraction(1, 3),
    1,
    Fraction(7, 3),
    1000,
    Fraction(2**70 + 1, 3),
]  # uniform(t) over more than one 64-bit word
GAMMAS = [
    0,
    Fraction(1, 2),
    1,
    Fraction(7, 3),
    20,
    Fraction(2**62, 2**62 + 1),  # d*K passes 2**63 at K = 2: Bernoulli(n/(dK)) on GMP
    Fraction(2**70 + 1, 3),  # floor(gamma) beyond 2**64
    Fraction(2**65 + 1, 2**64 + 3),
]  # numerator and denominator beyond 2**64

BIT_GENERATORS = [np.random.PCG64, np.random.MT19937, np.random.Philox, np.random.SFC64]


@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_gaussian_parity(sigma2):
    n = 300 if sigma2 >= 10**20 else 1500
    assert_same(both(Kind.DISCRETE_GAUSSIAN, sigma2, n, dtype=object))


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_laplace_parity(scale):
    assert_same(both(Kind.DISCRETE_LAPLACE, scale, 1500, dtype=object))


@pytest.mark.parametrize("gamma", GAMMAS, ids=str)
def test_bernoulli_exp_parity(gamma):
    assert_same(both(Kind.BERNOULLI_EXP, gamma, 2000, dtype=np.bool_))


@pytest.mark.parametrize("bitgen", BIT_GENERATORS, ids=lambda b: b.__name__)
def test_parity_across_bit_generators(bitgen):
    """next_uint64 differs from random_raw for some generators: both sides must use next_uint64."""
    assert_same(both(Kind.DISCRETE_GAUSSIAN, Fraction(5, 2), 1000, bitgen=bitgen))


@pytest.mark.parametrize(
    "mu", [0, 1, -1, 2**31, 2**62, -(2**62), 2**63 - 1, 2**63, -(2**63), 2**64, -(2**64)]
)
def test_mu_boundaries_parity(mu):
    assert_same(both(Kind.DISCRETE_LAPLACE, 3, 200, mu=mu, dtype=object))


@pytest.mark.parametrize(
    "kind,param",
    [
        (Kind.DISCRETE_GAUSSIAN, 10**100),
        (Kind.DISCRETE_GAUSSIAN, Fraction(10**41, 7)),
        (Kind.DISCRETE_LAPLACE, Fraction(10**30 + 1, 3)),
    ],
    ids=str,
)
@pytest.mark.parametrize("mu", [0, -5, 2**64, -(3**80)])
def test_huge_values_with_mu_parity(kind, param, mu):
    """Samples beyond a word, with and without a shift: X = a + L made once on GMP
    (in the last factor, or in block_value for the Laplace), then moved (mu = 0) or
    added to mu."""
    assert_same(both(kind, param, 300, mu=mu, dtype=object))


def test_int64_and_object_outputs_agree():
    """The int64 fast output path and the exact object path give the same numbers."""
    a = dgauss.sample_gaussian(100, 2000, rng=np.random.default_rng(5), dtype=np.int64)
    b = dgauss.sample_gaussian(100, 2000, rng=np.random.default_rng(5), dtype=object)
    assert a.dtype == np.int64 and b.dtype == object
    assert a.tolist() == b.tolist()


def test_public_functions_parity():
    """The public wrappers of core and oracle agree too (shapes, scalars, mu)."""
    for core_fn, ref_fn, param in [
        (dgauss.sample_gaussian, reference.sample_gaussian, "5/2"),
        (dgauss.sample_laplace, reference.sample_laplace, "7/3"),
    ]:
        a = core_fn(param, (3, 4), mu=-7, rng=np.random.default_rng(1))
        b = ref_fn(param, (3, 4), mu=-7, rng=np.random.default_rng(1))
        assert a.shape == b.shape == (3, 4) and (a == b).all()
        assert core_fn(param, rng=np.random.default_rng(2)) == ref_fn(
            param, rng=np.random.default_rng(2)
        )
    a = dgauss.sample_bernoulli_exp("1/3", (5,), rng=np.random.default_rng(3))
    b = reference.sample_bernoulli_exp("1/3", (5,), rng=np.random.default_rng(3))
    assert a.dtype == np.bool_ and (a == b).all()


def test_one_stream_per_call_continues_across_chunks():
    """A batch larger than the core's internal chunk is one stream, not restarted per chunk."""
    n = 70_000  # more than one GIL-free chunk (65,536)
    whole = dgauss.sample_bernoulli_exp("1/2", n, rng=np.random.PCG64(9))
    generator = np.random.PCG64(9)
    reference_bits = reference.BitStream(
        lambda: generator.ctypes.next_uint64(generator.ctypes.state)
    )
    expected = [reference.bernoulli_exp(reference_bits, Fraction(1, 2)) for _ in range(n)]
    assert whole.tolist() == expected


def test_bitstream_reads_msb_first_across_words():
    words = iter([0x8000000000000001, 0xF000000000000000])
    bits = reference.BitStream(lambda: next(words))
    assert bits.bit() == 1
    assert bits.bits(62) == 0
    assert bits.bits(3) == 0b111  # last bit of word 0, first two of word 1
    assert bits.bits(2) == 0b11
    assert bits.bits(1) == 0
    assert bits.bits_used == 69
