"""workers=: batches shared out over threads slice by slice, each thread with its own OS bits."""

import errno
import itertools
import os
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _python import run_python
from _stats import ALPHA, chi2_gof, gaussian_pmf, laplace_pmf
from dgauss import _core, _driver, _pool, reference
from dgauss._kinds import Kind
from dgauss.testing import ScriptedOS


@pytest.mark.parametrize("workers", [2, 3, -1])
def test_parallel_batch_has_the_right_distribution(workers):
    x = dgauss.sample_gaussian(Fraction(5, 2), 400_000, workers=workers)
    assert x.shape == (400_000,) and x.dtype == np.int64
    assert chi2_gof(x, gaussian_pmf(Fraction(5, 2)))[2] > ALPHA


def test_slices_are_independent_streams():
    """No stretch of the output repeats (threads sharing or copying a bit stream would repeat one
    wherever their slices start, so every 16-sample window is compared, not fixed quarters)."""
    x = dgauss.sample_laplace(10**6, 8 * _driver.MIN_SLICE, workers=4)
    windows = np.lib.stride_tricks.sliding_window_view(x, 16)
    assert len({w.tobytes() for w in windows}) == len(windows)


def test_the_stream_test_catches_a_repeated_stream():
    """The check above fails when two slices start from the same bits."""
    x = dgauss.sample_laplace(10**6, 8 * _driver.MIN_SLICE, rng=np.random.default_rng(3))
    y = np.concatenate([x[:5000], x[:5000], x[10000:]])  # a slice replayed
    windows = np.lib.stride_tricks.sliding_window_view(y, 16)
    assert len({w.tobytes() for w in windows}) < len(windows)


def test_every_sampler_and_dtype_takes_workers():
    assert dgauss.sample_bernoulli_exp("1/2", (2, _driver.MIN_SLICE), workers=2).shape == (
        2,
        _driver.MIN_SLICE,
    )
    big = dgauss.sample_gaussian(10**100, 2 * _driver.MIN_SLICE, workers=2)
    assert big.dtype == object and all(type(v) is int for v in big[:: _driver.MIN_SLICE // 4])
    assert reference.sample_gaussian(1, 5, workers=2).shape == (5,)  # small: one thread


def test_failure_in_any_slice_raises():
    """One thread's source fails after 4 reads (the others read the OS): the batch raises."""
    script = ScriptedOS(fail_after=4, fail_count=1, fail_errno=errno.EIO)
    calls = itertools.count()

    def fill(kind, num, den, mu, source, out, next_slice=None, **options):
        mine = script if next(calls) == 0 else source
        return _core.fill(kind, num, den, mu, mine, out, next_slice)

    n = 8 * _driver.MIN_SLICE
    with pytest.raises(OSError) as info:
        _driver.draw(fill, Kind.DISCRETE_GAUSSIAN, Fraction(100), n, 0, None, np.int64, 4)
    assert info.value.errno == errno.EIO


@pytest.mark.parametrize(
    "workers,error",
    [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)],
)
def test_bad_workers(workers, error):
    with pytest.raises(error, match="workers"):
        dgauss.sample_gaussian(1, 10, workers=workers)


def test_seeded_generator_refuses_several_workers():
    with pytest.raises(ValueError, match="workers"):
        dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0), workers=2)
    # one worker with a seed stays reproducible
    a = dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0), workers=1)
    assert a.tolist() == dgauss.sample_gaussian(1, 10, rng=np.random.default_rng(0)).tolist()


@pytest.mark.parametrize("fill", [_core.fill, reference.fill], ids=["core", "oracle"])
def test_fill_takes_only_the_slices_it_is_given(fill):
    """With next_slice, fill writes exactly the slices it takes, from one stream, and no other
    element; next_slice needs the OS source."""
    out = np.full(40, np.iinfo(np.int64).min)  # a value N_Z(0, 1) never takes
    taken = iter([(3, 9), (20, 21), (30, 40)])
    bits = fill(Kind.DISCRETE_GAUSSIAN, 1, 1, 0, None, out, lambda: next(taken, None))
    filled = out != np.iinfo(np.int64).min
    assert filled.tolist() == [3 <= i < 9 or i == 20 or 30 <= i < 40 for i in range(40)]
    assert bits > 0
    with pytest.raises(ValueError, match="next_slice"):
        fill(Kind.DISCRETE_GAUSSIAN, 1, 1, 0, np.random.PCG64(0), out, lambda: None)


def test_a_stopped_slice_ends_at_its_next_stretch():
    """Once the slices are stopped (another thread's error or Ctrl-C), a thread ends its
    slice at the end of its stretch (about 20 ms by the clock, read after 1, 2, 4, …
    samples), not after the slice: of 4,000 samples of ~0.6 ms each (the Laplace of
    test_robustness's Ctrl-C test), at most 64 are drawn; not stopped, all of 40 are."""
    scale = Fraction(10**300000 + 7, 10**300000)
    dgauss.sample_laplace(scale, 1)  # (the set-up, off the test's clock)

    class Slices:
        def __init__(self, n, stopped):
            self.n, self.stopped, self.given = n, stopped, False

        def __call__(self):
            if self.given:
                return None
            self.given = True
            return 0, self.n

    unset = np.iinfo(np.int64).min
    for n, stopped in ((4000, True), (40, False)):
        out = np.full(n, unset)
        _core.fill(
            Kind.DISCRETE_LAPLACE,
            scale.numerator,
            scale.denominator,
            0,
            None,
            out,
            Slices(n, stopped),
        )
        drawn = int(np.sum(out != unset))
        assert (1 <= drawn <= 64) if stopped else drawn == n, (n, drawn)


def test_slices_taken_by_racing_threads_cover_the_batch_once():
    """The slices threads take from one next_slice partition the batch, whoever takes them."""
    import threading

    count = 1_000_003
    next_slice = _driver._Slices(count, 8)
    taken, lock = [], threading.Lock()

    def worker():
        while (s := next_slice()) is not None:
            with lock:
                taken.append(s)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken.sort()
    assert taken[0][0] == 0 and taken[-1][1] == count
    assert all(a[1] == b[0] for a, b in itertools.pairwise(taken))
    assert all(stop > start for start, stop in taken)


def test_slices_shrink_as_the_batch_runs_out():
    """Guided slices: each is ceil(left / (GUIDE * threads)), never under the tail size but for
    the very last, so that threads on unequal cores run out of work together."""
    count, threads, tail = 1_000_003, 2, 1000
    next_slice = _driver._Slices(count, threads, tail)
    sizes, left = [], count
    while (s := next_slice()) is not None:
        sizes.append(s[1] - s[0])
        assert sizes[-1] == min(
            left, _driver.MAX_SLICE, max(tail, -(-left // (_driver.GUIDE * threads)))
        )
        left -= sizes[-1]
    assert left == 0 and sizes[0] == -(-count // (_driver.GUIDE * threads))
    assert sizes == sorted(sizes, reverse=True) and sizes[-2] == tail and 0 < sizes[-1] <= tail
    assert len(sizes) < 100  # few slices: each costs a GIL round trip
    huge = _driver._Slices(10**10, threads)
    assert huge() == (0, _driver.MAX_SLICE)  # a thread can always stop within 2**22 samples


def test_a_slow_thread_takes_less_of_the_batch():
    """Work goes to whichever thread is free: a thread whose fills are slow (a shared or
    throttled core) takes less of the batch, so the batch ends when the work does."""
    import threading
    import time

    taken, first = {}, []

    def fill(kind, num, den, mu, source, out, next_slice, **options):
        name = threading.current_thread().name
        while (s := next_slice()) is not None:
            first.append(name)
            taken[name] = taken.get(name, 0) + s[1] - s[0]
            time.sleep(
                (s[1] - s[0]) * (2e-6 if name == first[0] else 2e-7)
            )  # first taker 10x slower
        return 0

    count = 4 * _driver.MIN_SLICE
    _driver.draw(fill, Kind.DISCRETE_GAUSSIAN, Fraction(1), count, 0, None, np.dtype(np.int64), 2)
    slow = taken[first[0]]
    assert sum(taken.values()) == count and count - slow > 3 * slow


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_error_in_one_thread_stops_the_others(error):
    """The calling thread works too; when its fill fails (or Ctrl-C interrupts it, which the
    calling thread is the one to see), the helpers take no more slices."""
    import threading
    import time

    taken = []

    def fill(kind, num, den, mu, source, out, next_slice, **options):
        while (s := next_slice()) is not None:
            if threading.current_thread() is threading.main_thread():
                raise error("this slice failed")
            taken.append(s[1] - s[0])
            time.sleep(0.001)
        return 0

    count = 64 * _driver.MIN_SLICE
    with pytest.raises(error, match="this slice failed"):
        _driver.draw(
            fill, Kind.DISCRETE_GAUSSIAN, Fraction(1), count, 0, None, np.dtype(np.int64), 2
        )
    assert sum(taken) < count // 2


# ---- the shared pool of helper threads ---------------------------------------------------


def test_the_helper_pool_is_kept_between_calls(monkeypatch):
    """Batches on several workers share one pool, kept between calls, its threads never more
    than MAX_HELPERS (here 2, on a fresh pool).  (How many it has started depends on timing:
    ThreadPoolExecutor starts a thread when none is idle at the moment of a submit, so the
    count may grow to the cap but not past it.)"""
    monkeypatch.setattr(_pool, "_pool", None)
    monkeypatch.setattr(_pool, "MAX_HELPERS", 2)
    n = 2 * _driver.MIN_SLICE
    dgauss.sample_gaussian(100, n, workers=3)
    pool = _pool.helpers()
    try:
        for _ in range(20):
            assert dgauss.sample_gaussian(100, n, workers=3).shape == (n,)
            assert len(pool._threads) <= 2
        assert _pool.helpers() is pool
    finally:
        pool.shutdown()


def test_threads_calling_at_once_share_the_pool():
    """Eight threads each drawing batches on two workers: every batch is whole and right."""
    n = 2 * _driver.MIN_SLICE
    results: list = []

    def run():
        for _ in range(3):
            results.append(dgauss.sample_laplace(3, n, workers=2))

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 24
    assert all(r.shape == (n,) for r in results)
    assert chi2_gof(np.concatenate(results), laplace_pmf(Fraction(3)))[2] > ALPHA


_FORK_CHILD = """
import os, sys, threading
import numpy as np
import dgauss
from dgauss import _driver, _pool

n = 2 * _driver.MIN_SLICE
dgauss.sample_gaussian(100, n, workers=2)  # the parent's pool is running
parent_pool = _pool.helpers()
hold = threading.Event()
release = threading.Event()

def holder():  # a thread holds the pool's lock across the fork
    with _pool._lock:
        hold.set()
        release.wait()

t = threading.Thread(target=holder)
t.start()
hold.wait()
pid = os.fork()
if pid == 0:
    try:
        x = dgauss.sample_gaussian(100, n, workers=2)
        ok = x.shape == (n,) and _pool.helpers() is not parent_pool and 5 < x.std() < 15
        os._exit(0 if ok else 3)
    except BaseException:
        os._exit(4)
release.set()
t.join()
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_pool():
    """A child forked while the parent's pool runs and a thread holds the pool's lock draws
    on two workers with a pool of its own (the parent's threads are not in the child: one
    reused would never run a task, and a held lock copied would never be released)."""
    done = run_python(_FORK_CHILD, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "0"


def test_a_call_finding_the_pool_busy_does_not_wait_for_it(monkeypatch):
    """With the pool's one thread held by another task, a batch on two workers is drawn by
    the calling thread alone and returns (its queued helper, with nothing left to do, is
    cancelled) instead of waiting for the pool."""
    monkeypatch.setattr(_pool, "_pool", None)
    monkeypatch.setattr(_pool, "MAX_HELPERS", 1)
    release = threading.Event()
    blocker = _pool.helpers().submit(release.wait, 60)
    try:
        done = []
        worker = threading.Thread(
            target=lambda: done.append(
                dgauss.sample_gaussian(100, 4 * _driver.MIN_SLICE, workers=2)
            )
        )
        worker.start()
        worker.join(30)
        assert not worker.is_alive() and done[0].shape == (4 * _driver.MIN_SLICE,)
    finally:
        release.set()
        blocker.result(60)
        _pool.helpers().shutdown()


def test_map_ordered_keeps_the_order_and_raises_the_first_error():
    """_pool.map_ordered (the PLD route's merges): results in the items' order on several
    threads; an error in one item is raised, and the items not yet taken are not run."""
    items = list(range(200))
    assert _pool.map_ordered(lambda x: x * x, items, 3) == [x * x for x in items]
    ran = []

    def fn(x):
        if x == 5:
            raise ZeroDivisionError("item 5")
        time.sleep(0.002)  # so that the other thread cannot race through the list meanwhile
        ran.append(x)
        return x

    with pytest.raises(ZeroDivisionError, match="item 5"):
        _pool.map_ordered(fn, items, 2)
    assert len(ran) < 50  # the rest were not taken (a thread may finish one or two more)
