"""Parameters: every accepted type means the same exact value; bad input gets a named error."""

import decimal
import numbers
import subprocess
import sys
import time
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

import dgauss
from dgauss import _params, reference

SAMPLERS = [
    (dgauss.sample_gaussian, "sigma2"),
    (dgauss.sample_laplace, "scale"),
    (reference.sample_gaussian, "sigma2"),
    (reference.sample_laplace, "scale"),
]


@pytest.mark.parametrize(
    "value",
    [
        Fraction(5, 2),
        "5/2",
        "2.5",
        " 25e-1 ",
        2.5,
        decimal.Decimal("2.5"),
        gmpy2.mpq(5, 2),
        np.float32(2.5),
    ],
    ids=repr,
)
def test_equal_values_give_equal_samples(value):
    expected = dgauss.sample_gaussian(Fraction(5, 2), 200, rng=np.random.default_rng(1))
    got = dgauss.sample_gaussian(value, 200, rng=np.random.default_rng(1))
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "value", [100, "100", "1e2", np.int64(100), gmpy2.mpz(100), 100.0, Fraction(300, 3)], ids=repr
)
def test_integer_values(value):
    expected = dgauss.sample_laplace(100, 50, rng=np.random.default_rng(2))
    assert (
        dgauss.sample_laplace(value, 50, rng=np.random.default_rng(2)).tolist() == expected.tolist()
    )


def test_float_is_taken_at_its_exact_binary_value():
    """0.1 is not 1/10: the exact binary value of the double is used, as documented."""
    exact = Fraction(0.1)
    assert exact != Fraction(1, 10)
    a = dgauss.sample_bernoulli_exp(0.1, 300, rng=np.random.default_rng(3))
    b = dgauss.sample_bernoulli_exp(exact, 300, rng=np.random.default_rng(3))
    assert a.tolist() == b.tolist()


def test_laplace_scale_is_reduced_to_lowest_terms():
    a = dgauss.sample_laplace(Fraction(4, 2), 300, rng=np.random.default_rng(4))
    b = dgauss.sample_laplace("6/3", 300, rng=np.random.default_rng(4))
    c = dgauss.sample_laplace(2, 300, rng=np.random.default_rng(4))
    assert a.tolist() == b.tolist() == c.tolist()


BAD_PARAMETER = [
    (0, ValueError),
    (-1, ValueError),
    ("-1/3", ValueError),
    (Fraction(0), ValueError),
    (float("nan"), ValueError),
    (float("inf"), ValueError),
    (float("-inf"), ValueError),
    (decimal.Decimal("NaN"), ValueError),
    (decimal.Decimal("Infinity"), ValueError),
    ("inf", ValueError),
    ("nan", ValueError),
    ("abc", ValueError),
    ("", ValueError),
    ("1/0", ValueError),
    ("1e", ValueError),
    ("0x10", ValueError),
    ("1e99999999", ValueError),
    (None, TypeError),
    (1 + 0j, TypeError),
    (True, TypeError),
    (np.bool_(True), TypeError),
    ([1], TypeError),
    (b"1", TypeError),
]


@pytest.mark.parametrize("sampler,name", SAMPLERS, ids=lambda x: getattr(x, "__module__", x))
@pytest.mark.parametrize("value,error", BAD_PARAMETER, ids=repr)
def test_bad_distribution_parameter(sampler, name, value, error):
    with pytest.raises(error, match=name):
        sampler(value, 3)


@pytest.mark.parametrize(
    "value,error",
    [
        (-1, ValueError),
        ("-1/2", ValueError),
        (float("nan"), ValueError),
        (None, TypeError),
        (True, TypeError),
        (1j, TypeError),
    ],
    ids=repr,
)
def test_bad_gamma(value, error):
    for sampler in (dgauss.sample_bernoulli_exp, reference.sample_bernoulli_exp):
        with pytest.raises(error, match="gamma"):
            sampler(value)


@pytest.mark.parametrize(
    "size,error",
    [
        (-1, ValueError),
        (2.5, TypeError),
        ("3", TypeError),
        ((2, -1), ValueError),
        (True, TypeError),
        ((2, 2.0), TypeError),
        ([3], TypeError),
    ],
    ids=repr,
)
def test_bad_size(size, error):
    with pytest.raises(error, match="size"):
        dgauss.sample_gaussian(1, size)


@pytest.mark.parametrize(
    "mu,error",
    [
        (0.5, ValueError),
        ("1/2", ValueError),
        (None, TypeError),
        (True, TypeError),
        (float("inf"), ValueError),
    ],
    ids=repr,
)
def test_bad_mu(mu, error):
    for sampler in (dgauss.sample_gaussian, dgauss.sample_laplace, reference.sample_gaussian):
        with pytest.raises(error, match="mu"):
            sampler(1, 3, mu=mu)


def test_integral_mu_of_any_type():
    expected = dgauss.sample_gaussian(1, 20, mu=5, rng=np.random.default_rng(6))
    for mu in ("5", 5.0, Fraction(10, 2), gmpy2.mpz(5), np.int8(5)):
        assert (
            dgauss.sample_gaussian(1, 20, mu=mu, rng=np.random.default_rng(6)).tolist()
            == expected.tolist()
        )


@pytest.mark.parametrize(
    "dtype,error",
    [
        (np.float64, ValueError),
        ("int32", ValueError),
        (np.uint64, ValueError),
        (bool, ValueError),
        ("bogus", TypeError),
    ],
    ids=repr,
)
def test_bad_dtype(dtype, error):
    with pytest.raises(error, match="dtype"):
        dgauss.sample_gaussian(1, 3, dtype=dtype)


@pytest.mark.parametrize("rng", [42, "os", np.random.RandomState(0), np.random, object()], ids=repr)
def test_bad_rng(rng):
    with pytest.raises(TypeError, match="rng"):
        dgauss.sample_gaussian(1, 3, rng=rng)


def test_shapes_and_scalars():
    assert isinstance(dgauss.sample_gaussian(1), int)
    assert isinstance(dgauss.sample_gaussian(1, dtype=np.int64), int)
    assert isinstance(dgauss.sample_bernoulli_exp(1), bool)
    assert dgauss.sample_gaussian(1, 0).shape == (0,)
    assert dgauss.sample_gaussian(1, (2, 0, 3)).shape == (2, 0, 3)
    assert dgauss.sample_laplace(1, (2, 3, 4)).shape == (2, 3, 4)
    assert dgauss.sample_gaussian(1, np.int64(7)).shape == (7,)
    assert dgauss.sample_gaussian(1, ()).shape == ()


def test_oversized_parameters_are_refused_quickly():
    """A parameter too large to handle safely raises instead of hanging or aborting
    (checked in a subprocess)."""
    code = (
        "import dgauss\n"
        "for bad in ['1e99999999', 10 ** 1300000, '1/' + '7' * 1300000]:\n"
        "    try:\n"
        "        dgauss.sample_gaussian(bad, 1)\n"
        "    except ValueError as e:\n"
        "        assert 'sigma2' in str(e), e\n"
        "    else:\n"
        "        raise SystemExit('accepted ' + repr(bad)[:20])\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# ---- hostile inputs found by the issue-16 review: each refused or taken exactly, by name --------
def test_huge_decimal_exponents_are_refused_before_the_number_is_built():
    """'0.000…001' with 3·10^7 zeros (37 s to refuse before) and a 1.26M-digit mantissa with
    e-1000000 are refused at once: their effective exponent is checked before any big number."""
    for text in ["0." + "0" * (3 * 10**7) + "1", "0." + "9" * 1_262_000 + "e-1000000"]:
        start = time.process_time()
        with pytest.raises(ValueError, match="sigma2"):
            _params.to_fraction(text, "sigma2")
        assert time.process_time() - start < 5  # a hang guard: it takes milliseconds


def test_an_exponent_with_leading_zeros_is_read_by_value():
    assert _params.to_fraction("1e+0000000001", "x") == 10
    assert _params.to_fraction("25e-00000000000000001", "x") == Fraction(5, 2)


def test_non_ascii_digits_are_refused_by_name():
    for text in ["１２", "1٫5", "²"]:
        with pytest.raises(ValueError, match="sigma2"):
            _params.to_fraction(text, "sigma2")


class _Hostile(Fraction):
    """A Fraction whose comparisons lie."""

    def __lt__(self, other):
        return False

    def __le__(self, other):
        return False

    def __gt__(self, other):
        return True

    def __ge__(self, other):
        return True


def test_a_fraction_subclass_is_taken_as_its_plain_value():
    value = _params.to_fraction(_Hostile(-5, 1), "gamma")
    assert type(value) is Fraction and value == -5
    with pytest.raises(ValueError, match="gamma"):
        dgauss.sample_bernoulli_exp(_Hostile(-5, 1))


class _ZeroDenominator(numbers.Rational):
    """A numbers.Rational that claims denominator 0."""

    numerator = 1
    denominator = 0
    __abs__ = __add__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = __le__ = __lt__ = __mod__ = (
        __mul__
    ) = __neg__ = __pos__ = __pow__ = __radd__ = __rfloordiv__ = __rmod__ = __rmul__ = __round__ = (
        __rpow__
    ) = __rtruediv__ = __truediv__ = __trunc__ = lambda *a: NotImplemented


def test_a_rational_with_a_zero_denominator_is_refused_by_name():
    with pytest.raises(ValueError, match="scale"):
        _params.to_fraction(_ZeroDenominator(), "scale")


def test_long_double_is_taken_at_its_exact_value():
    third = np.longdouble(1) / np.longdouble(3)
    n, d = third.as_integer_ratio()
    assert _params.to_fraction(third, "sigma2") == Fraction(n, d) != Fraction(float(third))
    huge = np.longdouble(10) ** 4000  # finite, beyond float64
    assert _params.to_fraction(huge, "sigma2") == Fraction(*huge.as_integer_ratio())
    with pytest.raises(ValueError, match="sigma2"):
        _params.to_fraction(np.longdouble("inf"), "sigma2")


def test_absurd_worker_counts_are_refused_before_sampling():
    with pytest.raises(ValueError, match="workers"):
        dgauss.sample_gaussian(1, 10, workers=10**6)
    assert dgauss.sample_gaussian(1, 10, workers=_params.MAX_WORKERS).shape == (10,)


@pytest.mark.parametrize("size", [2**63, (2**40, 2**40), 2**62])
def test_sizes_beyond_any_memory_raise_memory_error(size):
    """As documented, not NumPy's 'Maximum allowed dimension exceeded' ValueError."""
    with pytest.raises(MemoryError, match="too large"):
        dgauss.sample_gaussian(1, size)
