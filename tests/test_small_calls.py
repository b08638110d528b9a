"""Small calls: the remembered parameter checks (dgauss._driver.checked) and the jobs each
thread keeps for the OS source (dgauss._core.fill, JOB_CACHE).

What must hold: a remembered check answers only for the very same argument (type and exact
value: True is refused after 1 was accepted); a kept job draws as a new one would (fresh OS
bits each call, nothing read twice, the words read zeroed once the call ends); an error
drops the job; each thread keeps its own; a seeded generator never goes through the cache.
(Speed: benchmarks/bench.py --small, not here.)
"""

from __future__ import annotations

import threading
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _core, _driver
from dgauss._kinds import DISCRETE_GAUSSIAN, DISCRETE_LAPLACE


@pytest.fixture(autouse=True)
def empty_check_cache():
    _driver._checked_cache.clear()


@pytest.mark.parametrize(
    "first, then, error",
    [
        (1, True, TypeError),  # True == 1 and hash(True) == hash(1), but a bool is refused
        (1, np.True_, TypeError),
        (Fraction(1), True, TypeError),
        ("1", "1x", ValueError),
        (2, -2, ValueError),
    ],
)
def test_a_remembered_check_answers_only_for_the_same_argument(first, then, error):
    _driver.checked(DISCRETE_GAUSSIAN, first, 0, None)
    assert _driver._checked_cache  # remembered
    with pytest.raises(error, match="sigma2"):
        _driver.checked(DISCRETE_GAUSSIAN, then, 0, None)
    with pytest.raises(error, match="sigma2"):
        dgauss.sample_gaussian(then)


def test_remembered_checks_give_the_exact_values_of_their_own_arguments():
    cases = [
        ("1/3", Fraction(1, 3)),
        (Fraction(1, 3), Fraction(1, 3)),
        ("0.3333", Fraction(3333, 10**4)),
    ]
    cases += [(10**30 + 1, Fraction(10**30 + 1)), (10**30, Fraction(10**30))]
    for _ in range(2):  # computed, then remembered
        for given, exact in cases:
            value, mu, dtype = _driver.checked(DISCRETE_LAPLACE, given, 0, None)
            assert value == exact and type(value) is Fraction
    # the dtype follows the value (int64 below the bound, exact ints above), per argument
    assert _driver.checked(DISCRETE_GAUSSIAN, 10, 0, None)[2] == np.int64
    assert _driver.checked(DISCRETE_GAUSSIAN, 10**60, 0, None)[2] == np.dtype(object)
    assert _driver.checked(DISCRETE_GAUSSIAN, 10, 10**30, None)[2] == np.dtype(object)
    assert _driver.checked(DISCRETE_GAUSSIAN, 10, 0, object)[2] == np.dtype(object)


def test_a_kept_job_draws_fresh_bits_each_call():
    """Scalars from the OS at one σ²: one job, kept, restarted each call.  Were the stream
    not restarted, or a buffer read twice, calls would repeat one another."""
    draws = [dgauss.sample_gaussian(10**20) for _ in range(300)]
    keys, _ = _core.cached_jobs()
    assert any(key[1:3] == (10**20, 1) for key in keys)
    assert len(set(draws)) == len(draws)  # σ = 10^10: a repeat has chance about 2·10^-6
    arrays = [dgauss.sample_gaussian(10**20, size=8).tolist() for _ in range(50)]
    assert len({tuple(a) for a in arrays}) == 50
    assert len({x for a in arrays for x in a}) == 400


@pytest.mark.parametrize("size", [1, 3, 1000, 100_000])
@pytest.mark.parametrize("draw", [dgauss.sample_gaussian, dgauss.sample_laplace])
def test_the_words_read_are_zeroed_when_the_call_ends(draw, size):
    draw(1000, size=size, method="inversion")
    draw(1000, size=size, method="rejection")
    keys, nonzero = _core.cached_jobs()
    assert len(keys) >= 2
    assert nonzero == 0


def test_an_error_keeps_no_broken_job():
    dgauss.sample_gaussian(100, size=4, method="rejection")
    out = np.zeros(3, dtype=np.int64)
    with pytest.raises(OverflowError, match="int64"):  # about half the draws are > 0
        for _ in range(64):
            _core.fill(DISCRETE_GAUSSIAN, 1, 1, 2**63 - 1, None, out, method="rejection")
    keys, _ = _core.cached_jobs()
    assert (DISCRETE_GAUSSIAN, 1, 1, 2**63 - 1, _core.HIGH_BITS, True, "rejection") not in keys
    # the next call with the same key sets a new job up, and it draws
    assert abs(dgauss.sample_gaussian(100, method="rejection")) < 1000


def test_each_thread_keeps_its_own_jobs():
    found: dict = {}

    def work(i):
        values = [dgauss.sample_gaussian(10**20) for _ in range(200)]
        found[i] = (values, _core.cached_jobs()[0])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [x for values, _ in found.values() for x in values]
    assert len(set(every)) == len(every)  # σ = 10^10: a repeat has chance about 10^-5
    for _, keys in found.values():
        assert any(key[1] == 10**20 for key in keys)


def test_a_seeded_generator_draws_as_without_the_cache():
    """The cache is for the OS only: seeded draws, scalar and batch, are what the oracle
    draws from the same generator."""
    from dgauss import reference

    for sigma2 in (1, 100, 10**6):
        for size in (None, 5):
            ours = dgauss.sample_gaussian(sigma2, size=size, rng=np.random.default_rng(3))
            theirs = reference.sample_gaussian(sigma2, size=size, rng=np.random.default_rng(3))
            assert np.array_equal(np.asarray(ours), np.asarray(theirs)), (sigma2, size)


# ---- the mechanisms' set-up, remembered per exact arguments (mechanisms._set_up) ----------


@pytest.mark.parametrize(
    "cls, good, bad",
    [
        (dgauss.GaussianMechanism, {"sigma2": 100, "k": 1}, {"sigma2": 100, "k": True}),
        (
            dgauss.GaussianMechanism,
            {"sigma2": 1, "sensitivity": 1},
            {"sigma2": 1, "sensitivity": True},
        ),
        (dgauss.GaussianMechanism, {"sigma2": "2"}, {"sigma2": "-2"}),
        (dgauss.LaplaceMechanism, {"scale": 3, "k": 2}, {"scale": 3, "k": True}),
        (dgauss.LaplaceMechanism, {"scale": 3}, {"scale": 3, "sensitivity": [1, 2]}),
    ],
)
def test_a_remembered_set_up_answers_only_for_the_same_arguments(cls, good, bad):
    first = cls(**good)
    again = cls(**good)
    assert repr(again) == repr(first)
    for _ in range(2):
        with pytest.raises((TypeError, ValueError)):
            cls(**bad)


def test_mechanisms_set_up_alike_count_their_releases_apart():
    x = np.zeros(3, dtype=np.int64)
    a = dgauss.GaussianMechanism(sigma2=100, k=2)
    a(x)
    a(x)
    with pytest.raises(dgauss.PrivacyBudgetError):
        a(x)
    b = dgauss.GaussianMechanism(sigma2=100, k=2)  # remembered settings, its own count
    b(x)
    b(x)
    for _ in range(3):  # add_*_noise: a new one-release mechanism each call
        dgauss.add_gaussian_noise(x, sigma2=100)
        dgauss.add_laplace_noise(x, scale=10)


def test_a_remembered_calibration_is_the_calibration():
    from dgauss import accounting

    for _ in range(2):
        g = dgauss.GaussianMechanism(epsilon="1", delta="1e-6", sensitivity=2, k=3)
        assert g.sigma2 == accounting.calibrate_gaussian(
            "1", "1e-6", 2, 3, method="exact", round_up_safe=True
        )
        lap = dgauss.LaplaceMechanism(epsilon="0.5", sensitivity=3)
        assert lap.scale == accounting.calibrate_laplace("0.5", 0, 3, 1)
    # a different argument of the same value in another type is its own entry, same answer
    assert (
        dgauss.GaussianMechanism(epsilon=Fraction(1), delta="1e-6", sensitivity=2, k=3).sigma2
        == g.sigma2
    )
