"""Small calls: the remembered parameter checks (dgauss._driver.checked), the lean path of a
one-sample call (dgauss._driver.lean, dgauss._core.draw_one) and the jobs each thread keeps
for the OS source (dgauss._core.fill, JOB_CACHE).

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
from _stats import ALPHA, chi2_gof, gaussian_pmf, laplace_pmf
from dgauss import _core, _driver, _methods
from dgauss._kinds import DISCRETE_GAUSSIAN, DISCRETE_LAPLACE


@pytest.fixture(autouse=True)
def empty_check_cache():
    _driver._checked_cache.clear()
    _driver._lean_cache.clear()


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
    for _ in range(2):  # the second call restarts the kept job (both lanes read at once)
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


# ---- the mechanisms' set-up, remembered per exact arguments (_remembered_set_up) --------


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


# ---- the lean path of one sample from the OS ---------------------------------------------


@pytest.mark.parametrize(
    "draw, kind, param, mu",
    [
        (dgauss.sample_gaussian, DISCRETE_GAUSSIAN, "7/3", 0),
        (dgauss.sample_gaussian, DISCRETE_GAUSSIAN, Fraction(40000, 3), -5),
        (dgauss.sample_laplace, DISCRETE_LAPLACE, "5/2", 3),
    ],
)
def test_lean_scalars_follow_the_law(draw, kind, param, mu):
    """20,000 one-sample calls (the lean path after the first) against the exact pmf."""
    assert _driver.lean(kind, param, mu) is not None
    x = np.array([draw(param, mu=mu) for _ in range(20_000)]) - mu
    pmf = (
        gaussian_pmf(Fraction(param)) if kind == DISCRETE_GAUSSIAN else laplace_pmf(Fraction(param))
    )
    assert chi2_gof(x, pmf)[2] > ALPHA
    keys, nonzero = _core.cached_jobs()
    assert nonzero == 0  # the words read were zeroed when each call ended


def test_lean_is_the_general_path_resolved_once():
    """lean() gives draw_one the exact parameter, the method "auto" resolves to for one
    sample and int64; None where the general path must answer (a law past int64, a float or
    a bool argument, which are never remembered)."""
    # σ² = 0.1 and scale 7/2 have small tables (inversion even for one sample); σ² = 10^20
    # is past the inversion's range
    gaussian, laplace = int(DISCRETE_GAUSSIAN), int(DISCRETE_LAPLACE)
    assert _driver.lean(DISCRETE_GAUSSIAN, "0.1", 0) == (gaussian, 1, 10, 0, "inversion")
    assert _driver.lean(DISCRETE_LAPLACE, Fraction(7, 2), 2) == (laplace, 7, 2, 2, "inversion")
    assert _driver.lean(DISCRETE_GAUSSIAN, 10**20, -1) == (gaussian, 10**20, 1, -1, "rejection")
    assert _driver.lean(DISCRETE_GAUSSIAN, 10**40, 0) is None  # object output
    assert _driver.lean(DISCRETE_GAUSSIAN, 10, 2**70) is None
    assert _driver.lean(DISCRETE_GAUSSIAN, 0.1, 0) is None
    assert _driver.lean(DISCRETE_GAUSSIAN, 2, True) is None
    assert type(dgauss.sample_gaussian(10**40)) is int
    assert dgauss.sample_gaussian(10, mu=2**70) - 2**70 < 10**4
    # the same σ² given as another type or value is its own entry, with its own answer
    assert _driver.lean(DISCRETE_GAUSSIAN, "1/3", 0)[1:3] == (1, 3)
    assert _driver.lean(DISCRETE_GAUSSIAN, Fraction(1, 3), 0)[1:3] == (1, 3)
    assert _driver.lean(DISCRETE_GAUSSIAN, 3, 0)[1:3] == (3, 1)


@pytest.mark.parametrize(
    "draw, param, mu, error, words",
    [
        (dgauss.sample_gaussian, -1, 0, ValueError, "sigma2"),
        (dgauss.sample_gaussian, "abc", 0, ValueError, "sigma2"),
        (dgauss.sample_gaussian, 0, 0, ValueError, "sigma2"),
        (dgauss.sample_laplace, "-2/3", 0, ValueError, "scale"),
        (dgauss.sample_gaussian, 4, "x", ValueError, "mu"),
        (dgauss.sample_laplace, 4, Fraction(1, 2), ValueError, "mu"),
    ],
)
def test_the_lean_path_refuses_what_the_general_one_does(draw, param, mu, error, words):
    """A bad argument is refused by name, first time and after good calls were remembered
    (it is never remembered itself)."""
    for _ in range(2):
        with pytest.raises(error, match=words):
            draw(param, mu=mu)
        draw(4, mu=0)
        draw("4", mu=1)


@pytest.mark.parametrize(
    "kind, param",
    [
        (DISCRETE_GAUSSIAN, Fraction(1)),
        (DISCRETE_GAUSSIAN, Fraction(100)),
        (DISCRETE_GAUSSIAN, Fraction(10**6, 7)),
        (DISCRETE_GAUSSIAN, Fraction(2**30)),  # past the inversion's range
        (DISCRETE_LAPLACE, Fraction(1000)),
        (DISCRETE_LAPLACE, Fraction(2**62 + 1, 2**30)),  # words not in fixed point
    ],
)
def test_a_lean_batch_resolves_the_method_by_the_documented_rule(kind, param):
    """ "auto" is inversion inside the range, with fixed-point words, for a batch of at least
    a quarter as many samples as the table has words beyond 1,024 (written out here):
    lean() picks it at a parameter's first call for each count around that edge as the
    general path does; from the second call at the parameter on, inversion at every count
    wherever inversion can draw it (the table is worth building: _driver.warmed)."""
    gaussian = kind == DISCRETE_GAUSSIAN
    inside, words, table = _methods._facts(gaussian, param)
    edge = max(0, -(-(table - 1024) // 4))
    for count in {1, 2, max(1, edge - 1), max(1, edge), edge + 1, 5000, _driver.LEAN_MAX}:
        expected = "inversion" if inside and words and 4 * count + 1024 >= table else "rejection"
        _driver._lean_cache.clear()
        assert _driver.lean(kind, param, 0, count)[4] == expected
        assert _methods.resolve(gaussian, param, "auto", count) == expected
        again = "inversion" if inside and words else "rejection"
        assert _driver.lean(kind, param, 0, count)[4] == again
    if inside and words and edge > 1:  # the second call changes something here
        _driver._lean_cache.clear()
        assert _driver.lean(kind, param, 0, 1)[4] == "rejection"
        assert _driver.lean(kind, param, 0, 1)[4] == "inversion"


def test_a_mechanism_draws_a_parameter_by_inversion_from_its_second_call(monkeypatch):
    """A mechanism's lean release takes "auto"'s method on its first call (100 counts at
    scale 1,000: rejection, the table of about 3,000 words not yet worth it) and inversion
    on the later ones (the samples' law is the same either way: the methods are exact)."""
    from dgauss import _inputs

    methods = []

    class Recorded:
        def __getattr__(self, name):
            return getattr(_core, name)

        def noised_int64(self, kind, num, den, mu, method, values):
            methods.append(method)
            return _core.noised_int64(kind, num, den, mu, method, values)

    monkeypatch.setattr(_inputs, "_core_module", Recorded())
    mech = dgauss.LaplaceMechanism(scale=1000, k=3)
    values = np.zeros(100, dtype=np.int64)
    for _ in range(3):
        mech(values)
    assert methods == ["rejection", "inversion", "inversion"]


@pytest.mark.parametrize("size", [1, 7, 1000, 1 << 16])
def test_lean_batches_follow_the_law(size):
    """Batches drawn the lean way (an int size up to LEAN_MAX), by rejection or inversion as
    the size decides: int64 arrays of the size, the pmf's law over 30,000 samples."""
    param = Fraction(53, 2)
    calls = -(-30_000 // size)
    x = np.concatenate([dgauss.sample_gaussian(param, size) for _ in range(calls)])
    assert x.dtype == np.int64 and len(x) == calls * size
    assert chi2_gof(x, gaussian_pmf(param))[2] > ALPHA


@pytest.mark.parametrize("size", [0, (3,), np.int64(5), _driver.LEAN_MAX + 1, (2, 3)])
def test_other_sizes_go_the_general_way(size):
    x = dgauss.sample_laplace(4, size)
    shape = (size,) if isinstance(size, (int, np.integer)) else size
    assert x.shape == tuple(int(n) for n in shape) and x.dtype == np.int64


# ---- the mechanisms' lean releases (_inputs._lean_release, _lean_add) -----------------


class TapeCore:
    """The compiled core with ``fill`` writing a known tape (the lean release's noise)."""

    def __init__(self):
        self.calls = 0

    def fill(self, kind, num, den, mu, rng, out, method):
        self.calls += 1
        out[:] = 3 * np.arange(out.size) - 7

    add_int64_checked = staticmethod(_core.add_int64_checked)

    def noised_int64(self, kind, num, den, mu, method, values):
        """As _core.noised_int64 (whose sum and overflow are tested on their own below),
        with the tape's noise."""
        noise = np.empty(values.size, dtype=np.int64)
        self.fill(kind, num, den, mu, None, noise, method)
        bad = _core.add_int64_checked(noise, np.ascontiguousarray(values).reshape(-1))
        return noise.reshape(values.shape), bad


@pytest.fixture
def tape(monkeypatch):
    from dgauss import _inputs

    core = TapeCore()
    monkeypatch.setattr(_inputs, "_core_module", core)
    return core


def tape_of(shape) -> np.ndarray:
    return (3 * np.arange(int(np.prod(shape))) - 7).reshape(shape)


@pytest.mark.parametrize(
    "values",
    [
        np.arange(10, dtype=np.int64),
        np.arange(12, dtype=np.int64).reshape(3, 4).T,  # not C-ordered
        np.arange(20, dtype=np.int64)[::3],  # strided
        np.array(5, dtype=np.int64),  # 0-d
        np.full(4, -(2**62), dtype=np.int64),
    ],
)
@pytest.mark.parametrize(
    "release",
    [
        lambda v: dgauss.GaussianMechanism(sigma2=100)(v),
        lambda v: dgauss.LaplaceMechanism(scale="5/2")(v),
        lambda v: dgauss.add_gaussian_noise(v, sigma2="7/3"),
        lambda v: dgauss.add_laplace_noise(v, scale=4),
        lambda v: dgauss.add_gaussian_noise(v, sigma2=4, sensitivity=2),  # via a mechanism
        lambda v: dgauss.add_laplace_noise(v, epsilon=1),
    ],
)
def test_a_lean_release_adds_its_draw_to_the_values(tape, values, release):
    """An int64 array with every keyword at its default is noised the lean way: one fill of
    the values' size, added exactly, in the values' shape (0-d stays 0-d); the values are
    left as they were."""
    before = values.copy()
    got = release(values)
    assert tape.calls == 1
    assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == values.shape
    assert np.array_equal(got, before + tape_of(values.shape))
    assert np.array_equal(values, before)


@pytest.mark.parametrize(
    "call",
    [
        lambda v: dgauss.add_gaussian_noise(v.astype(np.int32), sigma2=4),
        lambda v: dgauss.add_gaussian_noise(v, sigma2=4, granularity=1),
        lambda v: dgauss.add_gaussian_noise(v, sigma2=4, clip=(0, 5)),
        lambda v: dgauss.add_gaussian_noise(v, sigma2=10**40),  # object noise
        lambda v: dgauss.add_laplace_noise(list(v), scale=4),
        lambda v: dgauss.GaussianMechanism(sigma2=4)(v, rng=np.random.default_rng(1)),
        lambda v: dgauss.GaussianMechanism(sigma2=4)(v, overflow="object"),
    ],
)
def test_other_releases_go_the_general_way(tape, call):
    """A keyword set, another dtype or input type, a law past int64: the general way (the
    tape is never read), with its own result."""
    call(np.arange(6, dtype=np.int64))
    assert tape.calls == 0


def test_a_lean_release_is_counted_before_its_draw_and_refused_after_its_last(tape):
    mech = dgauss.GaussianMechanism(sigma2=9, k=2)
    values = np.zeros(3, dtype=np.int64)
    mech(values)
    mech(values)
    with pytest.raises(dgauss.PrivacyBudgetError, match="k=2"):
        mech(values)
    assert tape.calls == 2


@pytest.mark.parametrize(
    "release",
    [
        lambda v: dgauss.GaussianMechanism(sigma2=9)(v),
        lambda v: dgauss.add_laplace_noise(v, scale=9),
    ],
)
def test_a_lean_release_that_leaves_int64_raises_the_general_error(tape, release):
    """A value plus its noise past int64: OverflowError after the draw, as the general way
    says it, and the values untouched."""
    values = np.array([2**63 - 1, 5, 2**63 - 1], dtype=np.int64)  # noise -7, -4, -1: fits
    assert np.array_equal(release(values), values + tape_of(3))
    values = np.array([0, 0, 0, 2**63 - 2], dtype=np.int64)  # noise -7, -4, -1, +2
    before = values.copy()
    with pytest.raises(OverflowError, match="leaves int64"):
        release(values)
    assert np.array_equal(values, before)


@pytest.mark.parametrize(
    "make, bad, words",
    [
        (lambda p: dgauss.add_gaussian_noise(np.zeros(3, np.int64), sigma2=p), -1, "sigma2"),
        (lambda p: dgauss.add_gaussian_noise(np.zeros(3, np.int64), sigma2=p), "x", "sigma2"),
        (lambda p: dgauss.add_laplace_noise(np.zeros(3, np.int64), scale=p), 0, "scale"),
        (lambda p: dgauss.add_laplace_noise(np.zeros(3, np.int64), scale=p), True, "scale"),
    ],
)
def test_a_lean_add_refuses_as_the_mechanism_does(make, bad, words):
    """A bad parameter gets the mechanism's own error, after good calls were remembered."""
    for _ in range(2):
        with pytest.raises((ValueError, TypeError), match=words) as lean_error:
            make(bad)
        make(4)
    kind = dgauss.GaussianMechanism if "sigma2" in words else dgauss.LaplaceMechanism
    with pytest.raises(lean_error.type) as direct:
        kind(**{words: bad})
    assert str(direct.value) == str(lean_error.value)


@pytest.mark.parametrize(
    "release, pmf",
    [
        (lambda v: dgauss.GaussianMechanism(sigma2="53/2", k=10**6)(v), "gaussian"),
        (lambda v: dgauss.add_laplace_noise(v, scale="5/2"), "laplace"),
    ],
)
def test_lean_releases_follow_the_law(release, pmf):
    """3,000 lean releases on 10 zeros: the noise follows the exact pmf."""
    values = np.zeros(10, dtype=np.int64)
    x = np.concatenate([release(values) for _ in range(3000)])
    law = gaussian_pmf(Fraction(53, 2)) if pmf == "gaussian" else laplace_pmf(Fraction(5, 2))
    assert chi2_gof(x, law)[2] > ALPHA


@pytest.mark.parametrize(
    "param, method", [(100, "inversion"), (10**6, "inversion"), (3, "rejection")]
)
def test_a_kept_jobs_first_os_read_is_sized_by_its_last_call(param, method):
    """A thread's kept job notes the OS bits per sample its last call read; the next call's
    first read is sized for its batch at that rate plus a quarter (so a batch of 1,000 is
    one read, not reads of 4, 8, 16, ... words), never less than 4 words and never more than
    the buffer's 2,048."""
    from dgauss import _core

    kind = int(DISCRETE_GAUSSIAN)
    out = np.empty(1000, dtype=np.int64)
    _core.fill(kind, param, 1, 0, None, out, method=method)
    last_bits, last_samples, words = _core.first_read(kind, param, 1, 0, method, 1000)
    assert last_samples == 1000
    used = _core.fill(kind, param, 1, 0, None, out, method=method)  # bits this call read
    assert abs(last_bits - used) < 0.5 * used  # the rate of a call of the same size
    lanes = 2 if method == "inversion" else 1
    need = last_bits * 1000 / last_samples / lanes / 64
    assert need <= words <= 1.25 * (need + 1000 / lanes / 64) + 2  # (the rate rounded up)
    assert _core.first_read(kind, param, 1, 0, method, 1)[2] == 4
    assert _core.first_read(kind, param, 1, 0, method, 10**7)[2] == 2048


def test_noised_int64_adds_the_noise_or_names_the_first_sum_that_leaves_int64():
    """_core.noised_int64 (the mechanisms' lean release: noise drawn and added in one call):
    values of any C-ordered shape come back plus noise of the law; where a sum leaves int64
    the array holds the noise alone (every earlier sum undone) and the first such index is
    returned.  With every value at INT64_MAX a sum leaves int64 exactly where the noise is
    positive."""
    from dgauss import _core

    kind = int(DISCRETE_GAUSSIAN)
    values = np.arange(6000, dtype=np.int64).reshape(20, 300)
    out, bad = _core.noised_int64(kind, 100, 1, 0, "inversion", values)
    assert bad == -1 and out.shape == values.shape and out.dtype == np.int64
    noise = (out - values).reshape(-1)
    assert abs(noise.mean()) < 0.5 and 90 < noise.var() < 110  # N_Z(0, 100): Var ≈ 100
    top = np.full(64, np.iinfo(np.int64).max, dtype=np.int64)
    for _ in range(20):
        out, bad = _core.noised_int64(kind, 100, 1, 0, "rejection", top)
        assert 0 <= bad < 64  # (every noise <= 0: probability about 0.52^64)
        assert out[bad] > 0 and (out[:bad] <= 0).all()  # the noise, and where it overflows
        assert (top == np.iinfo(np.int64).max).all()  # values untouched
    out, bad = _core.noised_int64(kind, 100, 1, 0, "inversion", values.T)  # not C-ordered
    assert bad == -1 and out.shape == values.T.shape and out.flags.c_contiguous
    assert 90 < (out - values.T).var() < 110
    with pytest.raises(ValueError):
        _core.noised_int64(kind, 100, 1, 0, "inversion", values.astype(np.int32))


def test_the_two_lanes_read_words_of_their_own_when_read_at_once():
    """A kept job's restart reads both lanes' first words in one OS call
    (dg_rng_preload_pair): lane 0 draws the even samples, lane 1 the odd ones, so were the
    lanes given the same words, every pair (x[2j], x[2j+1]) would be equal.  At σ² = 10^6 two
    independent draws are equal with probability about 1/(2√π·1000) < 3·10^-4: over 800
    pairs a handful at most."""
    for _ in range(2):
        dgauss.sample_gaussian(10**6, size=8, method="inversion")
    equal = 0
    for _ in range(100):
        x = dgauss.sample_gaussian(10**6, size=8, method="inversion")
        equal += int((x[0::2] == x[1::2]).sum())
    assert equal <= 5
