"""workers=: batches split over threads, each slice with its own OS bit stream."""
import errno
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _api, _core, reference
from _stats import ALPHA, chi2_gof, gaussian_pmf


@pytest.mark.parametrize("workers", [2, 3, -1])
def test_parallel_batch_has_the_right_distribution(workers):
    x = dgauss.sample_gaussian(Fraction(5, 2), 400_000, workers=workers)
    assert x.shape == (400_000,) and x.dtype == np.int64
    assert chi2_gof(x, gaussian_pmf(Fraction(5, 2)))[2] > ALPHA


def test_slices_are_independent_streams():
    """Slices must not repeat each other (a shared or copied buffer would)."""
    x = dgauss.sample_laplace(10**6, 4 * _api.MIN_SLICE, workers=4)
    slices = x.reshape(4, -1)
    assert len({s[:32].tobytes() for s in slices}) == 4


def test_every_sampler_and_dtype_takes_workers():
    assert dgauss.sample_bernoulli_exp("1/2", (2, _api.MIN_SLICE), workers=2).shape == (2, _api.MIN_SLICE)
    big = dgauss.sample_gaussian(10**100, 2 * _api.MIN_SLICE, workers=2)
    assert big.dtype == object and all(type(v) is int for v in big[:: _api.MIN_SLICE // 4])
    assert reference.sample_gaussian(1, 5, workers=2).shape == (5,)  # small: one thread


def test_failure_in_any_slice_raises():
    _core._os_test_hook(fail_after=4, fail_count=1, fail_errno=errno.EIO)
    try:
        with pytest.raises(OSError):
            dgauss.sample_gaussian(100, 8 * _api.MIN_SLICE, workers=4)
    finally:
        _core._os_test_hook()


@pytest.mark.parametrize("workers,error", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                           (True, TypeError), ("2", TypeError)])
def test_bad_workers(workers, error):
    with pytest.raises(error, match="workers"):
        dgauss.sample_gaussian(1, 10, workers=workers)


def test_seeded_generator_refuses_several_workers():
    with pytest.raises(ValueError, match="workers"):
        dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0), workers=2)
    # one worker with a seed stays reproducible
    a = dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0), workers=1)
    assert a.tolist() == dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0)).tolist()
