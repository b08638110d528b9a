"""The accounting's inputs at their edges: NumPy scalars and 0-d arrays as sensitivities, the
words of a refused k, the 16,384-bit limit on a parameter, and no NumPy warning reaching a
user from an ordinary call."""

import warnings
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import accounting as A
from dgauss.accounting import Gaussian, Laplace, compose

SCALARS = [np.array(2), np.array(2.0), np.int64(2), np.float32(2.0), np.array(2, dtype=object)]


@pytest.mark.parametrize("sens", SCALARS, ids=repr)
def test_a_numpy_scalar_or_0d_array_is_a_scalar_sensitivity(sens):
    """Gaussian(1, sensitivity=np.array(2.0)) failed with 'iteration over a 0-d array'."""
    assert A.gaussian_delta(3, 1, sens) == A.gaussian_delta(3, 1, 2)
    assert A.gaussian_epsilon(3, "1e-6", sens) == A.gaussian_epsilon(3, "1e-6", 2)
    assert A.gaussian_rho(3, sens) == Fraction(2, 3)
    assert A.laplace_delta(3, 0.5, sens, k=2) == A.laplace_delta(3, 0.5, 2, k=2)
    assert Gaussian(1, sensitivity=sens) == Gaussian(1, sensitivity=2)
    assert Laplace(1, sensitivity=sens) == Laplace(1, sensitivity=2)
    assert compose(Gaussian(5, sens), Laplace(4, sens)).delta(1) == compose(
        Gaussian(5, 2), Laplace(4, 2)
    ).delta(1)
    mech = dgauss.GaussianMechanism(sigma2=1, sensitivity=sens)
    assert mech.sensitivity == 2 and mech.rho == 2  # shown as the scalar it is
    assert dgauss.LaplaceMechanism(scale=1, sensitivity=sens).sensitivity == 2
    acc = dgauss.Accountant(rho=10)
    assert acc.calibrate_gaussian(sensitivity=sens) == acc.calibrate_gaussian(sensitivity=2)


@pytest.mark.parametrize("bad", [np.array(0), np.array(-2), np.array(2.5)], ids=repr)
def test_a_bad_0d_sensitivity_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="sensitivity must be a positive integer"):
        A.gaussian_delta(3, 1, bad)
    with pytest.raises(ValueError, match="sensitivity must be a positive integer"):
        Gaussian(1, sensitivity=bad)


def test_a_vector_stays_a_vector():
    assert Gaussian(1, sensitivity=np.array([2])).sensitivity == (2,)
    assert Gaussian(1, sensitivity=np.array([1, -1])).sensitivity == (1, -1)
    assert dgauss.GaussianMechanism(sigma2=1, sensitivity=[2]).sensitivity == (2,)


@pytest.mark.parametrize("k", ["1/3", "abc", "2.5", 2.5, "", 0, -1, 10**7 + 1, "1e8"])
def test_a_refused_k_says_what_k_is(k):
    """The k error suggested '1/3' ('k must be a number such as '1/3', ...')."""
    for call in (
        lambda: A.gaussian_delta(3, 1, k=k),
        lambda: A.laplace_epsilon(3, k=k),
        lambda: Gaussian(3, k=k),
        lambda: dgauss.GaussianMechanism(sigma2=3, k=k),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert "k must be an integer from 1 to 10000000" in str(info.value)
        assert "1/3" not in str(info.value).split("got")[0]


@pytest.mark.parametrize("k", [None, [2], object()])
def test_a_k_of_the_wrong_type_says_what_k_is(k):
    with pytest.raises(TypeError, match="k must be an integer from 1 to 10000000, not"):
        A.gaussian_delta(3, 1, k=k)


def test_k_given_as_a_power_of_ten_is_read():
    assert Gaussian(3, k="1e7").k == 10**7


def test_the_16384_bit_limit_is_named():
    """δ = 10^-4932 is the smallest power of ten accepted: its denominator has 16,384 bits."""
    assert A.MAX_BITS == 16384
    assert (10**4932).bit_length() == 16384 and (10**4933).bit_length() > 16384
    eps = A.gaussian_epsilon(10, "1e-4932")
    assert A.gaussian_delta(10, eps, log=True) <= -4932 * 2.302585092994045
    with pytest.raises(ValueError) as info:
        A.gaussian_epsilon(10, "1e-4933")
    message = str(info.value)
    assert message.startswith("delta ") and "16384 bits" in message and "MAX_BITS" in message
    with pytest.raises(ValueError, match="sigma2 has a numerator or denominator over 16384 bits"):
        A.gaussian_delta(Fraction(1, 3**10400), 1)


@pytest.mark.long
def test_no_numpy_warning_reaches_a_user_from_the_closed_forms():
    """Ordinary calls, NumPy scalars among the parameters, extreme values included: any
    RuntimeWarning (overflow, divide by zero) is an error here."""
    sigma2s = [np.float64(0.5), np.float32(2), np.int64(10), "1e-300", "1e300", np.float64(1e300)]
    epsilons = [0, np.float64(0), 1e-300, 1, 1000, np.float64(1e5), "1e300"]
    deltas = ["1e-300", np.float64(1e-6), 0.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in sigma2s:
            for e in epsilons:
                A.gaussian_delta(s, e)
                A.gaussian_delta(s, e, log=True)
                if s in sigma2s[:3]:  # (at 1e300 the vector's lattice bound takes 15 s)
                    A.gaussian_delta(s, e, [1, 2], k=3)
                A.laplace_delta(s, e, 2, k=3)
                A.cdp_delta(s, e)
            for d in deltas:
                if s in sigma2s[:3]:  # (at 1e±300 its search takes 5-20 s)
                    A.gaussian_epsilon(s, d)
                A.laplace_epsilon(s, 1, 3, delta=d)
                A.cdp_eps(s, d)
            try:
                A.laplace_variance(s)
            except OverflowError:  # the variance of scale 1e300 is beyond the floats: said so
                pass
            A.gaussian_pmf(3, s)
            A.gaussian_sf(np.float64(3), s)
        for e in [np.float64(50), np.float32(0.5)]:
            for d in deltas:
                A.calibrate_gaussian(e, d)
                A.calibrate_laplace(e, d)
                A.cdp_rho(e, d)
        mech = dgauss.GaussianMechanism(epsilon=np.float64(8), delta=np.float64(1e-20))
        mech.delta(np.float64(1e5)), mech.epsilon(np.float64(1e-300)), mech.interval(1e-10)
