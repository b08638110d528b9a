"""Hostile input: any parameter of any type either works exactly or raises a named error.

Property-based (hypothesis) over every accepted parameter type and shape, plus
the documented limits: extreme parameters work or are refused within bounded
time and memory (checked in a subprocess under an address-space limit, so a
GMP abort or a hang would fail the test instead of the test run).
"""

import decimal
import subprocess
import sys
import textwrap
from fractions import Fraction

import gmpy2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import _params, reference
from dgauss.testing import Exhausted, Tape

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.complex_numbers(allow_nan=True),
    st.integers(),
    st.fractions(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.text(alphabet="0123456789+-./eE _", max_size=30),
    st.integers().map(gmpy2.mpz),
    st.fractions().map(lambda q: gmpy2.mpq(q.numerator, q.denominator)),
    st.lists(st.integers(), max_size=3),
    st.binary(max_size=5),
)
shapes = st.one_of(
    st.none(),
    st.integers(-3, 6),
    st.tuples(st.integers(-1, 3), st.integers(0, 3)),
    st.floats(0, 4),
    st.text(max_size=3),
    st.booleans(),
)


def _expected_shape(size):
    return () if size is None else (size,) if isinstance(size, int) else size


@SETTINGS
@given(param=anything, size=shapes, mu=anything)
def test_any_input_samples_or_names_the_problem(param, size, mu):
    for sampler, name in ((dgauss.sample_gaussian, "sigma2"), (dgauss.sample_laplace, "scale")):
        try:
            out = sampler(param, size, mu=mu, rng=np.random.default_rng(0))
        except (TypeError, ValueError) as exc:
            assert any(word in str(exc) for word in (name, "mu", "size")), str(exc)
            continue
        value = _params.to_fraction(param, name)
        assert value > 0
        if size is None:
            assert type(out) is int
        else:
            assert out.shape == _expected_shape(size)
            assert out.dtype in (np.int64, object)


@SETTINGS
@given(gamma=anything, size=shapes)
def test_any_gamma_samples_or_names_the_problem(gamma, size):
    try:
        out = dgauss.sample_bernoulli_exp(gamma, size, rng=np.random.default_rng(0))
    except (TypeError, ValueError) as exc:
        assert "gamma" in str(exc) or "size" in str(exc), str(exc)
        return
    assert _params.to_fraction(gamma, "gamma") >= 0
    assert type(out) is bool if size is None else out.dtype == np.bool_


positive_rationals = st.fractions(
    min_value=Fraction(1, 10**6), max_value=10**30, max_denominator=10**40
)


@SETTINGS
@given(sigma2=positive_rationals, mu=st.integers(-(2**70), 2**70), seed=st.integers(0, 2**32))
def test_core_matches_oracle_on_random_parameters(sigma2, mu, seed):
    a = dgauss.sample_gaussian(sigma2, 3, mu=mu, rng=np.random.PCG64(seed))
    b = reference.sample_gaussian(sigma2, 3, mu=mu, rng=np.random.PCG64(seed))
    assert a.tolist() == b.tolist()
    a = dgauss.sample_laplace(sigma2, 3, mu=mu, rng=np.random.PCG64(seed))
    b = reference.sample_laplace(sigma2, 3, mu=mu, rng=np.random.PCG64(seed))
    assert a.tolist() == b.tolist()


@SETTINGS
@given(
    bits=st.text(alphabet="01", max_size=200), scale=st.sampled_from(["1/3", "7/3", 10, 2**70 + 1])
)
def test_core_matches_oracle_on_random_tapes(bits, scale):
    """Same tape: same value, or both run out; and both leave the tape at the same word."""
    results = []
    for sampler in (
        dgauss.sample_laplace,
        reference.sample_laplace,
        dgauss.sample_gaussian,
        reference.sample_gaussian,
    ):
        tape = Tape(bits)
        try:
            results.append((sampler(scale, rng=tape), tape.position))
        except Exhausted:
            results.append(("exhausted", tape.position))
    assert results[0] == results[1] and results[2] == results[3]


@pytest.mark.parametrize(
    "value",
    [decimal.Decimal("1" * 5000), "1" * 5000, "9" * 100000 + "/7"],
    ids=lambda v: str(v)[:8],
)
def test_long_numbers_are_read_exactly(value):
    """Past Python's 4300-digit int conversion limit, parameters are still exact."""
    expected = Fraction(int(gmpy2.mpz(str(value).split("/")[0])), 7 if "/" in str(value) else 1)
    assert _params.to_fraction(value, "sigma2") == expected


LIMITS = textwrap.dedent("""
    import resource, sys
    from fractions import Fraction
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import dgauss
    case = sys.argv[1]
    def expect_error(f, *args):
        try:
            f(*args)
        except (ValueError, MemoryError) as exc:
            print(type(exc).__name__)
        else:
            raise SystemExit("accepted")
    if case == "sigma2 = 10**100000":
        print(max(abs(v) for v in dgauss.sample_gaussian(10**100000, 20)).bit_length())
    elif case == "million-digit denominator":
        print(dgauss.sample_gaussian(Fraction(1, 10**1000000), 3).tolist())
        print(dgauss.sample_laplace(Fraction(10**1000000 + 1, 10**1000000), 3).tolist())
        print(dgauss.sample_bernoulli_exp(Fraction(10**1000000 + 1, 10**1000000 - 1), 3).tolist())
    elif case == "largest accepted parameter":
        big = Fraction(2**(1 << 22) - 1, 2**(1 << 22) - 3)
        print(dgauss.sample_gaussian(big, 2).tolist(), dgauss.sample_laplace(big, 2).tolist())
    elif case == "too many bits":
        expect_error(dgauss.sample_gaussian, 2**(1 << 22))
        expect_error(dgauss.sample_laplace, "1e99999999")
        expect_error(dgauss.sample_bernoulli_exp, "9" * 2000000)
    elif case == "size near memory limits":
        expect_error(dgauss.sample_gaussian, 1, 10**13)
        expect_error(dgauss.sample_gaussian, 10**200, 10**12)
        expect_error(dgauss.sample_bernoulli_exp, 1, (10**6, 10**6, 10**6))
    print("done")
""")


@pytest.mark.parametrize(
    "case",
    [
        "sigma2 = 10**100000",
        "million-digit denominator",
        "largest accepted parameter",
        "too many bits",
        "size near memory limits",
    ],
)
def test_documented_limits(case):
    """Each case finishes within 120 s under a 3 GiB address-space limit, no abort."""
    done = subprocess.run(
        [sys.executable, "-c", LIMITS, case], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-500:]
    assert done.stdout.strip().endswith("done")
