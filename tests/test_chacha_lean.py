"""The lean path of small calls from a ``dgauss.ChaCha20`` (docs/security.md): a scalar or a
batch of up to LEAN_MAX samples with every other argument at its default draws with a job
kept per thread, keyed also on the thread's ChaChaState of that ChaCha20.  Checked here:
it draws exactly what the general path draws from a state keyed alike (first call and a
kept job's later calls); another ChaCha20, a reseed, a forked child and other threads key
afresh; the kept jobs hold no unread words; and the samples have the law's mean and
variance at the lean sizes."""

from __future__ import annotations

import math
import os
import threading

import numpy as np
import pytest

import dgauss
from dgauss import _core, _driver
from dgauss._kinds import DISCRETE_GAUSSIAN, DISCRETE_LAPLACE

#: (sampler, kind, parameter): the lean path's benchmark parameters, and a small one
CASES = [
    (dgauss.sample_gaussian, DISCRETE_GAUSSIAN, 10**8),
    (dgauss.sample_gaussian, DISCRETE_GAUSSIAN, 2**100),
    (dgauss.sample_laplace, DISCRETE_LAPLACE, 10**8),
    (dgauss.sample_laplace, DISCRETE_LAPLACE, 2**40),
    (dgauss.sample_gaussian, DISCRETE_GAUSSIAN, 100),
]


def _keyed(key: bytes) -> dgauss.ChaCha20:
    """A ChaCha20 whose calling thread's state is keyed by hand (testing hook)."""
    source = dgauss.ChaCha20()
    source._state().set_key(key)
    return source


def _kept_states() -> list:
    """The ChaChaStates this thread's kept jobs read (the eighth item of their keys)."""
    return [key[7] for key in _core.cached_jobs()[0] if len(key) == 8]


def _method(kind: int, param: int, size: int | None) -> str:
    """The method the lean path takes for this call (asked twice: the first ask of a
    parameter warms it, as a first call does)."""
    _driver.lean(kind, param, 0, 1 if size is None else size)
    found = _driver.lean(kind, param, 0, 1 if size is None else size)
    assert found is not None
    return found[4]


@pytest.mark.parametrize("size", [None, 1, 7, 1000])
@pytest.mark.parametrize("sampler, kind, param", CASES)
def test_the_lean_path_draws_what_the_general_path_draws(sampler, kind, param, size):
    """Three calls the lean way from a ChaCha20 keyed by hand (the first makes the kept
    job, the others restart it) equal three calls the general way (an explicit method)
    from a twin keyed alike; both states then continue alike (the same words were read).
    The control: a twin under another key draws otherwise (where a repeat by chance is
    unlikely)."""
    key = bytes(range(40, 72))
    lean, twin, other = _keyed(key), _keyed(key), _keyed(bytes(32))
    method = _method(kind, param, size)
    for _ in range(3):
        got = sampler(param, size, rng=lean)
        assert any(s is lean._state() for s in _kept_states())  # it went the lean way
        want = sampler(param, size, rng=twin, method=method)
        assert type(got) is type(want)
        assert np.array_equal(got, want)
        if param >= 10**8 or (size or 1) >= 7:  # (a narrow law's scalar may repeat)
            assert not np.array_equal(got, sampler(param, size, rng=other, method=method))
    assert lean._state().words(4).tolist() == twin._state().words(4).tolist()


@pytest.mark.parametrize(
    "kind, param",
    [
        (DISCRETE_GAUSSIAN, 10**8),
        (DISCRETE_GAUSSIAN, 2**100),
        (DISCRETE_LAPLACE, 10**8),
        (DISCRETE_LAPLACE, 2**40),
    ],
)
@pytest.mark.parametrize("size", [7, 1000, 4000])
@pytest.mark.parametrize("lean", [True, False])
def test_a_batch_reads_its_chacha20_words_once_a_lane(kind, param, size, lean):
    """A batch by inversion from a ChaCha20 reads each lane's words in one read sized for the
    batch, a function of the parameters and the size only: about 1/2 log2(sigma^2) + 8 bits
    a sample for the Gaussian, log2(scale) + 8 for the Laplace (above what a sample reads:
    19.3, 56.2, 33.1, 46.7 bits here), over the two lanes, plus 2 words each.  So the state
    moves on by exactly those words, whichever way the call goes (a refill would move it
    further: the samples across it are drawn step by step, many times slower)."""
    key = bytes(range(7, 39))
    source, twin = _keyed(key), _keyed(key)
    sampler = dgauss.sample_gaussian if kind == DISCRETE_GAUSSIAN else dgauss.sample_laplace
    method = _method(kind, param, size)
    assert method == "inversion"
    lg = param.bit_length()  # param a power of two or not: log2(param) < lg
    rate = ((lg + 1) // 2 if kind == DISCRETE_GAUSSIAN else lg) + 8
    lane_words = max(rate * size // 128 + 2, 4)
    for _ in range(2):  # a new job, then (lean) the kept one
        if lean:
            sampler(param, size, rng=source)
        else:
            sampler(param, size, rng=source, method=method)
        twin._state().words(2 * lane_words)
        assert source._state().words(4).tolist() == twin._state().words(4).tolist()


def test_a_lean_array_refuses_no_samples_and_other_sources():
    """The lean batch draws one or more samples from the OS or a ChaCha20, nothing else: a
    NumPy generator (seeded: its own stream, the general way) and n = 0 are refused."""
    args = (int(DISCRETE_GAUSSIAN), 100, 1, 0)
    with pytest.raises(ValueError, match="n >= 1"):
        _core.lean_array(*args, np.random.default_rng(1), 5, "inversion")
    with pytest.raises(ValueError, match="n >= 1"):
        _core.lean_array(*args, None, 0, "inversion")
    got = _core.lean_array(*args, dgauss.ChaCha20(), 5, "inversion")
    assert got.dtype == np.int64 and got.shape == (5,) and got.flags.c_contiguous


def test_another_chacha20_and_a_reseed_key_afresh():
    """Two ChaCha20s keyed differently each draw from their own state (two kept jobs); after
    reseed() the kept job's next call reads a new OS key, not the hand-set key's stream
    (which a twin shows it would otherwise have drawn)."""
    key_a, key_b = bytes(range(32)), bytes(range(1, 33))
    a, b = _keyed(key_a), _keyed(key_b)
    twin_a, twin_b = _keyed(key_a), _keyed(key_b)
    p = 2**100
    method = _method(DISCRETE_GAUSSIAN, p, 100)
    xa = dgauss.sample_gaussian(p, 100, rng=a)
    xb = dgauss.sample_gaussian(p, 100, rng=b)
    assert np.array_equal(xa, dgauss.sample_gaussian(p, 100, rng=twin_a, method=method))
    assert np.array_equal(xb, dgauss.sample_gaussian(p, 100, rng=twin_b, method=method))
    states = _kept_states()
    assert any(s is a._state() for s in states) and any(s is b._state() for s in states)
    a.reseed()
    after = dgauss.sample_gaussian(p, 100, rng=a)
    assert a._state().keyed
    continued = dgauss.sample_gaussian(p, 100, rng=twin_a, method=method)
    assert not set(after.tolist()) & set(continued.tolist())
    # the control: without the reseed, b's next call continues its twin's stream
    assert np.array_equal(
        dgauss.sample_gaussian(p, 100, rng=b),
        dgauss.sample_gaussian(p, 100, rng=twin_b, method=method),
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_keys_afresh_on_the_lean_path():
    """After a lean call has kept its job, parent and child each make the same lean call: the
    child draws from a new state (keyed from the OS), so the two share no sample; the
    parent's equals its twin's (the control: equality would have been seen)."""
    key = bytes(range(9, 41))
    source, twin = _keyed(key), _keyed(key)
    p = 2**100
    method = _method(DISCRETE_GAUSSIAN, p, 500)
    dgauss.sample_gaussian(p, 500, rng=source)
    dgauss.sample_gaussian(p, 500, rng=twin, method=method)
    parent_state = source._state()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            fresh = source._state() is not parent_state
            x = dgauss.sample_gaussian(p, 500, rng=source)
            os.write(write, bytes([fresh]) + x.tobytes())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while len(data) < 1 + 8 * 500:
        chunk = os.read(read, 1 + 8 * 500 - len(data))
        if not chunk:
            break
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    assert len(data) == 1 + 8 * 500 and data[0] == 1
    child = np.frombuffer(data[1:], dtype=np.int64)
    parent = dgauss.sample_gaussian(p, 500, rng=source)
    assert np.array_equal(parent, dgauss.sample_gaussian(p, 500, rng=twin, method=method))
    assert not set(child.tolist()) & set(parent.tolist())


def test_threads_keep_jobs_of_their_own_states():
    """Four threads making lean calls with one ChaCha20 at once: each thread's kept jobs read
    that thread's state, and no two threads draw a common sample (σ² = 2^100: a repeat
    by chance has probability below 2^-25)."""
    source = dgauss.ChaCha20()
    barrier = threading.Barrier(4)
    results: dict = {}

    def work(i: int) -> None:
        barrier.wait()
        xs = [dgauss.sample_gaussian(2**100, 200, rng=source) for _ in range(10)]
        xs.append(np.array([dgauss.sample_gaussian(2**100, rng=source) for _ in range(20)]))
        mine = source._state()
        results[i] = (np.concatenate(xs), [s is mine for s in _kept_states()])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(flags == [True] for _, flags in results.values())  # one job, its own state
    values = np.concatenate([x for x, _ in results.values()])
    assert len(np.unique(values)) == len(values) == 4 * 2020


def test_the_kept_jobs_hold_no_unread_words():
    """After lean calls of every size (the words of both lanes read, and the rest of each
    fill's), every word of the kept jobs' buffers is zero; there are ChaCha20 jobs among
    them to check."""
    source = dgauss.ChaCha20()
    for sampler, _, param in CASES:
        for size in (None, 1, 999, 5000):
            sampler(param, size, rng=source)
    keys, nonzero = _core.cached_jobs()
    assert any(len(key) == 8 for key in keys)
    assert nonzero == 0


def _variance(kind: int, param: int) -> float:
    """The law's variance: the discrete Gaussian's is σ² to within a relative
    exp(-2π²σ²) (its Poisson summation) at these σ²; the Laplace's 2r/(1 - r)² with
    r = exp(-1/t)."""
    if kind == DISCRETE_GAUSSIAN:
        return float(param)
    one_minus_r = -math.expm1(-1 / param)
    return 2 * (1 - one_minus_r) / one_minus_r**2


@pytest.mark.parametrize("sampler, kind, param", CASES[:4])
def test_lean_samples_have_the_laws_mean_and_variance(sampler, kind, param):
    """40 lean batches of 1,000 and 4,000 lean scalars: the mean of each set within 5
    standard errors of 0, the variance within 5 of the law's (the fourth moment of these
    laws is below 6·Var², so the variance's standard error is below √(6/n)·Var)."""
    source = dgauss.ChaCha20()
    batches = np.concatenate([sampler(param, 1000, rng=source) for _ in range(40)])
    scalars = np.array([sampler(param, rng=source) for _ in range(4000)])
    var = _variance(kind, param)
    for x in (batches.astype(float), scalars.astype(float)):
        n = len(x)
        assert abs(x.mean()) < 5 * math.sqrt(var / n)
        assert abs(x.var() - var) < 5 * math.sqrt(6 / n) * var
