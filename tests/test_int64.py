"""int64 output: never wrapped, never truncated; the default dtype follows the documented rule."""

from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _fake_os import fill_in_slices, splitmix64
from _parity import assert_same, both
from dgauss import _core, reference
from dgauss._kinds import Kind
from dgauss._sources import ScriptedOS, Tape

INT64_MAX = 2**63 - 1


def test_int64_at_huge_sigma2_raises_overflow():
    for sampler in (dgauss.sample_gaussian, reference.sample_gaussian):
        with pytest.raises(OverflowError, match="int64"):
            sampler(10**100, 10, dtype=np.int64, rng=np.random.default_rng(0))


def test_default_dtype_at_huge_sigma2_is_exact_python_ints():
    x = dgauss.sample_gaussian(10**100, 100, rng=np.random.default_rng(0))
    assert x.dtype == object
    assert all(type(v) is int for v in x)
    assert max(abs(v) for v in x) > 2**63  # these would not fit int64
    assert (
        x.tolist() == reference.sample_gaussian(10**100, 100, rng=np.random.default_rng(0)).tolist()
    )


@pytest.mark.parametrize(
    "sigma2,mu,expected",
    [
        (2**100, 0, np.int64),
        (2**100 + 1, 0, object),
        (1, 2**62, np.int64),
        (1, 2**62 + 1, object),
        (1, -(2**62) - 1, object),
    ],
)
def test_default_dtype_rule_gaussian(sigma2, mu, expected):
    assert dgauss.sample_gaussian(sigma2, 2, mu=mu).dtype == np.dtype(expected)


@pytest.mark.parametrize(
    "scale,expected", [(2**40, np.int64), (2**40 + 1, object), ("1/3", np.int64)]
)
def test_default_dtype_rule_laplace(scale, expected):
    assert dgauss.sample_laplace(scale, 2).dtype == np.dtype(expected)


def test_mu_at_int64_edge_overflows_instead_of_wrapping():
    """mu = 2**63 - 1 plus positive noise leaves int64: OverflowError, not a wrapped negative."""
    with pytest.raises(OverflowError):
        dgauss.sample_laplace(1, 1000, mu=INT64_MAX, dtype=np.int64, rng=np.random.default_rng(1))
    exact = dgauss.sample_laplace(1, 1000, mu=INT64_MAX, rng=np.random.default_rng(1))
    assert exact.dtype == object and max(exact) > INT64_MAX


def test_values_that_fit_are_kept_even_with_mu_outside_int64():
    """mu = 2**63 with a negative offset fits int64: the exact path decides per sample."""
    x = dgauss.sample_laplace(1, 50, mu=2**63, dtype=object, rng=np.random.default_rng(2))
    fits = [v for v in x if v <= INT64_MAX]
    assert fits  # about half the samples are below the centre
    with pytest.raises(OverflowError):
        dgauss.sample_laplace(1, 50, mu=2**63, dtype=np.int64, rng=np.random.default_rng(2))


def test_int64_min_is_representable():
    """-2**63 fits int64 and must not be reported as overflow (nor must anything above it)."""
    mu = -(2**63) + 1
    exact = dgauss.sample_gaussian("1/4", 200, mu=mu, dtype=object, rng=np.random.default_rng(3))
    assert min(exact) == -(2**63)  # this seed hits the edge and never goes below it
    for sampler in (dgauss.sample_gaussian, reference.sample_gaussian):
        x = sampler("1/4", 200, mu=mu, dtype=np.int64, rng=np.random.default_rng(3))
        assert x.tolist() == exact.tolist()


@pytest.mark.parametrize(
    "mu",
    [
        2**63,
        -(2**63) - 2,
        2**64,
        -(2**64),
        2**128 - 1,
        2**1023,
        -(2**1024),
        2**1024 + 2**64 + 5,
        -(3**1500),
    ],
    ids=lambda mu: f"{'-' if mu < 0 else ''}{abs(mu).bit_length()}bits",
)
def test_object_values_are_exact_at_every_size(mu):
    # GMP -> Python int at every size; the noise at scale 1/2 is small (|noise| >= 40 has
    # probability e^-80), so any wrong word shows.
    x = dgauss.sample_laplace(Fraction(1, 2), 3000, mu=mu, rng=np.random.default_rng(1))
    assert x.dtype == object and all(type(v) is int for v in x)
    noise = {v - mu for v in x}
    assert {-1, 0, 1} <= noise and max(abs(v) for v in noise) < 40


@pytest.mark.parametrize("by_bytes", [False, True], ids=["digits", "bytes"])
def test_gmp_to_int_round_trips_at_every_size(by_bytes):
    """Both conversions of GMP limbs to Python ints (digits written in place where CPython
    allows it, else CPython's byte-string conversion) are exact at every size and sign,
    around every limb and digit boundary and past the bytes path's stack buffer."""
    from dgauss import _core

    rng = np.random.default_rng(5)
    values = [2**63, 2**64 - 1, 2**64, 2**128 - 1, 2**1024 - 1, 2**1088, 3**1500]
    for bits in list(range(62, 200)) + [959, 960, 961, 1023, 1024, 1025, 4096]:
        values.append(int(rng.integers(0, 2**62)) << (bits - 62) | 1)  # top bit at `bits`
        values.append(2**bits - 1)
    for v in values:
        for x in (v, -v):
            got = _core.int_roundtrip(x, by_bytes)
            assert type(got) is int and got == x, (x, by_bytes)
    if not by_bytes and not _core.INT_DIGITS:
        pytest.skip("this Python has no digit writer: both runs took the byte path")


@pytest.mark.parametrize(
    "kind,num,den,mu,chunk",
    [
        (Kind.DISCRETE_GAUSSIAN, 10**100, 1, 0, 4096),  # the usual huge case: the largest stretch
        (Kind.DISCRETE_LAPLACE, 1, 10**6, 0, 4096),  # t/s < 1 (no negative size)
        (Kind.DISCRETE_GAUSSIAN, 2 ** (2**21), 1, 0, 7),  # 2**20-bit values
        (Kind.DISCRETE_LAPLACE, 3, 1, 2 ** (2**20), 7),  # small noise on a 2**20-bit mu
        (Kind.DISCRETE_GAUSSIAN, 1, 1, -(2 ** (2**16)), 127),
    ],
    ids=[
        "gaussian-1e100",
        "laplace-1e-6",
        "gaussian-2^2^21",
        "laplace-mu-2^2^20",
        "gaussian-mu-2^2^16",
    ],
)
def test_object_stretches_keep_about_a_mebibyte_of_values(kind, num, den, mu, chunk):
    """Samples go into an object array in stretches (the GIL held for the Python ints): up to
    4096 of them, fewer when values are large, so that GMP keeps about 1 MiB of them."""
    assert _core.object_chunk(kind, num, den, mu) == chunk


@pytest.mark.parametrize("slices", [[(0, 1), (1, 3), (3, 6000)], [(0, 6000)]], ids=str)
@pytest.mark.long
def test_object_slices_growing_give_the_single_streams_samples(slices):
    """A job fills an object array with as many GMP integers as its first slice needs (one
    for a scalar, not 4096) and more when a later slice needs them: the samples are still
    those of one stream (the fake OS source's words read from a tape in one call)."""
    words = [splitmix64(j) for j in range(400 * 6000)]
    want = reference.sample_gaussian(10**100, 6000, rng=Tape.from_words(words))
    out = np.empty(6000, dtype=object)
    fill_in_slices(Kind.DISCRETE_GAUSSIAN, 10**100, out, slices, ScriptedOS(fake=True))
    assert out.tolist() == want.tolist()


@pytest.mark.parametrize(
    "kind,param,n,mu",
    [
        (Kind.DISCRETE_GAUSSIAN, Fraction(5, 2), 9000, 0),
        (Kind.DISCRETE_LAPLACE, 3, 300, 2 ** (2**16)),
    ],
    ids=["4096", "127"],
)
@pytest.mark.long
def test_object_output_across_stretches_parity(kind, param, n, mu):
    """Stretch boundaries (two crossed in each case) lose or repeat no sample and no bit."""
    assert_same(both(kind, param, n, mu=mu, dtype=object))


@pytest.mark.parametrize(
    "sampler", [dgauss.sample_laplace, reference.sample_laplace], ids=["core", "oracle"]
)
def test_a_sample_of_magnitude_2_63_fits_int64_only_when_negative(sampler):
    """Y = +-2**63 from Lap_Z(2**62 + 1), on the machine-word path (t < 2**63): -2**63 is
    INT64_MIN; +2**63 and -2**63 - 1 overflow; -2**63 + 1 and 2**63 - 1 fit."""
    from dgauss.testing import DecisionTape

    # U = 2**62 - 1, D's first factor 1, V's Bernoulli(exp(-1)) draws 1, 0 (V = 1), the sign B,
    # and D's second factor by Algorithm 1 (its first Bernoulli(L/t) 0: accept); |Y| = U + t = 2**63
    tape = lambda sign: DecisionTape([2**62 - 1, 1, 1, 0, sign, 0])
    assert sampler(2**62 + 1, rng=tape(1), dtype=np.int64) == -(2**63)
    assert sampler(2**62 + 1, mu=1, rng=tape(1), dtype=np.int64) == -(2**63) + 1
    assert sampler(2**62 + 1, mu=-1, rng=tape(0), dtype=np.int64) == 2**63 - 1
    for sign, mu in [(0, 0), (1, -1)]:
        with pytest.raises(OverflowError, match="int64"):
            sampler(2**62 + 1, mu=mu, rng=tape(sign), dtype=np.int64)
