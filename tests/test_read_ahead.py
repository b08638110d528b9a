"""A second CPU for a large batch from the OS: split between two threads, or read ahead.

A batch without ``workers`` of at least ``split_from`` samples (2^17), where a second CPU is
idle, is split between two threads each reading its own stream of the OS
(``_core.os_threads``); a batch on one thread reads the OS ahead.  The tests of the split
come last; the others turn it off to test the reading ahead.

Reading the OS ahead: a large batch takes its words from a reader thread's ring.

csrc/dg_ahead.h: a batch of at least ``_core.read_ahead_from`` samples from the OS starts a
thread that reads the source in 16 KiB chunks while the batch computes, and the batch's
streams take their next words from it.  Only *when* words are read changes: the words and
their order are the source's, so a scripted source read ahead gives exactly the samples it
gives read directly (one lane; with two, both lanes take the first lane's words in turn,
deterministically), its failures surface as the same OSError, nothing read stays in memory,
and the laws are the laws.  Each test checks that the reader really ran (a count of batches
read ahead), so none passes by reading directly.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _core, _driver, _pool
from dgauss._sources import ScriptedOS

pytestmark = pytest.mark.skipif(_core.cpus() < 2, reason="reads ahead only with two CPUs")

SAMPLERS = {"gaussian": dgauss.sample_gaussian, "laplace": dgauss.sample_laplace}
#: (distribution, parameter, method): tables plain, blocked and enveloped, and the loops.
CASES = [
    ("gaussian", Fraction(10), "inversion"),
    ("gaussian", Fraction(10**6), "inversion"),
    ("gaussian", Fraction(10**8), "inversion"),
    ("gaussian", Fraction(2**100), "inversion"),
    ("gaussian", Fraction(7, 3), "rejection"),
    ("laplace", Fraction(30001, 3), "inversion"),
    ("laplace", Fraction(2**40), "inversion"),
    ("laplace", Fraction(5, 2), "rejection"),
]
FROM = 1000  # the smallest batch read ahead here (the default is 65,536: too slow for tests)


@pytest.fixture(autouse=True)
def small_batches_read_ahead():
    # (a test run keeps every CPU busy; no split, whose threads read directly)
    old = _core.read_ahead(FROM, when_busy=True, split_from=-1)
    yield
    _core.read_ahead(**old)


def draws(kind, param, n, method, **script):
    """(samples read ahead, samples read directly, how many batches read ahead)."""
    runs = _core.read_ahead_runs()
    ahead = SAMPLERS[kind](param, n, rng=ScriptedOS(read_ahead=True, **script), method=method)
    ran = _core.read_ahead_runs() - runs
    direct = SAMPLERS[kind](param, n, rng=ScriptedOS(**script), method=method)
    assert _core.read_ahead_runs() - runs == ran  # (the direct call did not)
    return ahead, direct, ran


@pytest.mark.parametrize("kind, param, method", CASES, ids=str)
@pytest.mark.parametrize("n", [FROM, 4099, 60001])
def test_one_lane_read_ahead_draws_what_it_draws_read_directly(kind, param, method, n):
    """The words, in order, are the source's: the same samples both ways (60,001 samples
    cross many 16 KiB chunks of the ring, and a chunk's end inside a read)."""
    ahead, direct, ran = draws(kind, param, n, method, fake=True, lanes=1)
    assert ran == 1
    assert ahead.tolist() == direct.tolist()


def test_a_batch_below_the_size_reads_directly():
    runs = _core.read_ahead_runs()
    dgauss.sample_gaussian(10**8, FROM - 1, rng=ScriptedOS(fake=True, read_ahead=True))
    dgauss.sample_gaussian(10**8, FROM - 1)
    assert _core.read_ahead_runs() == runs
    dgauss.sample_gaussian(10**8, FROM)
    assert _core.read_ahead_runs() == runs + 1


def test_two_lanes_take_one_stream_in_turn_deterministically():
    """Two lanes read ahead take their words from the first lane's script as each refills:
    the same samples every time, not those of two separate streams, and the lanes differ."""
    n = 20001
    first, direct, ran = draws("gaussian", Fraction(10**8), n, "inversion", fake=True)
    again = dgauss.sample_gaussian(
        10**8, n, rng=ScriptedOS(fake=True, read_ahead=True), method="inversion"
    )
    assert ran == 1
    assert first.tolist() == again.tolist()
    assert first.tolist() != direct.tolist()  # (lane 1 read its own stream directly)
    assert first[0::2].tolist() != first[1::2].tolist()


@pytest.mark.parametrize("fail_after", [0, 1, 2, 5])
@pytest.mark.parametrize("kind, param, method", [CASES[2], CASES[3], CASES[4], CASES[6]], ids=str)
def test_a_failed_read_ahead_raises_the_sources_oserror(kind, param, method, fail_after):
    """The OS refusing on the reader thread raises the OSError (with its errno) the direct
    read raises, wherever in the batch it happens; and the next call draws again."""
    script = dict(fail_after=fail_after, fail_count=1 << 20, fail_errno=errno.EIO, lanes=1)
    runs = _core.read_ahead_runs()
    with pytest.raises(OSError) as caught:
        SAMPLERS[kind](param, 60001, rng=ScriptedOS(read_ahead=True, **script), method=method)
    assert caught.value.errno == errno.EIO
    assert "could not read randomness" in str(caught.value)
    assert _core.read_ahead_runs() == runs + 1
    assert SAMPLERS[kind](param, 60001, method=method).shape == (60001,)


def test_nothing_read_ahead_stays_in_the_kept_jobs():
    """The words of a batch read ahead are zeroed with the job's own (cached_jobs counts the
    non-zero words of the kept jobs' buffers)."""
    runs = _core.read_ahead_runs()
    for param in (10**8, 2**40):
        dgauss.sample_gaussian(param, 50001, method="inversion")
        dgauss.sample_laplace(param, 50001, method="rejection")
    assert _core.read_ahead_runs() == runs + 4
    assert _core.cached_jobs()[1] == 0


@pytest.mark.parametrize("kind, param", [("gaussian", 10**8), ("laplace", 2**40)])
def test_the_os_read_ahead_draws_the_law(kind, param):
    """200,000 samples from the OS read ahead: mean and variance within 5 standard errors
    of the law's (variance σ² for the Gaussian; 2e^{1/t}/(e^{1/t}-1)^2 ≈ 2t² for the
    Laplace at large t), and the mass within one scale of 0."""
    n = 200_000
    runs = _core.read_ahead_runs()
    x = SAMPLERS[kind](param, n).astype(np.float64)
    assert _core.read_ahead_runs() == runs + 1
    var = float(param) if kind == "gaussian" else 2.0 * float(param) ** 2
    sd = var**0.5
    assert abs(x.mean()) < 5 * sd / n**0.5
    kurtosis = 3.0 if kind == "gaussian" else 6.0
    assert abs(x.var() / var - 1) < 5 * ((kurtosis - 1) / n) ** 0.5
    # P[|X| <= σ] = erf(1/√2) for the Gaussian, P[|X| <= t] = 1 - 1/e for the Laplace (to
    # far below the tolerance at these scales)
    within = float(np.mean(np.abs(x) <= (sd if kind == "gaussian" else float(param))))
    p = 0.6826894921370859 if kind == "gaussian" else 1 - np.exp(-1.0)
    assert abs(within - p) < 5 * (p * (1 - p) / n) ** 0.5


def test_threads_each_read_ahead_their_own_batches():
    """Four threads drawing large batches at once each start their own reader: every batch
    is whole, of the law's scale, and no two are equal."""
    out: dict[int, np.ndarray] = {}

    def work(i):
        out[i] = dgauss.sample_gaussian(10**8, 30001)

    runs = _core.read_ahead_runs()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _core.read_ahead_runs() == runs + 4
    assert len({tuple(v[:50].tolist()) for v in out.values()}) == 4
    assert all(0.9 < v.astype(float).std() / 10**4 < 1.1 for v in out.values())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_a_batch_reads_ahead_draws_afresh():
    """Fork while another thread's batch is reading ahead: the child draws (its own reader;
    nothing of the parent's is left waiting), and not the parent's samples."""
    dgauss.sample_gaussian(2**100, 2 * FROM)  # the table is built before (its lock is free)
    result = {}
    runs = _core.read_ahead_runs()

    def work():
        result["x"] = dgauss.sample_gaussian(2**100, 2_000_001)

    t = threading.Thread(target=work)
    t.start()
    while _core.read_ahead_runs() == runs and t.is_alive():
        time.sleep(0)  # until the batch has started its reader
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw, report, leave at once
        try:
            os.close(r)
            y = dgauss.sample_gaussian(2**100, 100_001)
            os.write(w, y[:8].tobytes())
        finally:
            os._exit(0)
    os.close(w)
    child = None
    try:
        ready, _, _ = select.select([r], [], [], 120)
        child = np.frombuffer(os.read(r, 64), dtype=np.int64) if ready else None
    finally:
        os.close(r)
        if child is None:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        t.join()
    assert child is not None, "the child did not draw within 120 s"
    assert child.shape == (8,)
    assert result["x"].shape == (2_000_001,)
    assert child.tolist() != result["x"][:8].tolist()


def test_read_ahead_checks_its_arguments():
    with pytest.raises(ValueError, match="samples must be -1 or a count"):
        _core.read_ahead(-2)
    with pytest.raises(ValueError, match="split_from must be -1 or a count"):
        _core.read_ahead(FROM, split_from=-2)


def test_where_every_cpu_is_busy_a_batch_reads_directly():
    """Without when_busy, a batch reads ahead only while a CPU is idle: two processes kept
    spinning on a two-CPU machine make the next batch read directly."""
    if _core.cpus() != 2:
        pytest.skip("the busy machine is made for two CPUs")
    _core.read_ahead(FROM, when_busy=False)
    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while _core.idle_cpu() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the spinners are running
        busy = not _core.idle_cpu()
        runs = _core.read_ahead_runs()
        dgauss.sample_gaussian(10**8, 2 * FROM)
        read_ahead = _core.read_ahead_runs() - runs
        _core.read_ahead(FROM, when_busy=False, split_from=SPLIT)
        split = _core.os_threads(10 * SPLIT)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert busy and read_ahead == 0 and split == 1


# ---- the split between two threads -----------------------------------------------

SPLIT = 2 * _driver.MIN_SLICE  # the smallest batch the driver gives two threads


@pytest.fixture
def split_batches(monkeypatch):
    """Batches from SPLIT samples on split (every CPU busy or not); the pool's calls
    counted: shares[-1] is the threads of the last batch shared out."""
    shares: list[int] = []

    def share(work, threads, stop):
        shares.append(threads)
        return real_share(work, threads, stop)

    real_share = _pool.share
    monkeypatch.setattr(_pool, "share", share)
    _core.read_ahead(FROM, when_busy=True, split_from=SPLIT)
    return shares


def test_os_threads_gives_two_from_split_from_on():
    _core.read_ahead(FROM, when_busy=True, split_from=SPLIT)
    assert [_core.os_threads(n) for n in (0, SPLIT - 1, SPLIT, 10**9)] == [1, 1, 2, 2]
    _core.read_ahead(FROM, when_busy=True, split_from=-1)
    assert _core.os_threads(10**9) == 1
    _core.read_ahead(FROM, when_busy=True, split_from=0)
    assert _core.os_threads(0) == 2


@pytest.mark.parametrize("kind, param", [("gaussian", 10**8), ("laplace", 2**40)])
def test_a_large_default_batch_is_split_between_two_threads(kind, param, split_batches):
    """A batch of SPLIT samples runs on two threads, which read the OS directly (no
    reader); one sample fewer, on one thread that reads ahead; and the split batch draws
    the law (mean and variance within 5 standard errors; the Laplace's variance
    2e^{1/t}/(e^{1/t}-1)^2 ≈ 2t² at this t)."""
    runs = _core.read_ahead_runs()
    x = SAMPLERS[kind](param, SPLIT).astype(np.float64)
    assert split_batches == [2] and _core.read_ahead_runs() == runs
    SAMPLERS[kind](param, SPLIT - 1)
    assert split_batches == [2] and _core.read_ahead_runs() == runs + 1
    var = float(param) if kind == "gaussian" else 2.0 * float(param) ** 2
    assert abs(x.mean()) < 5 * (var / SPLIT) ** 0.5
    kurtosis = 3.0 if kind == "gaussian" else 6.0
    assert abs(x.var() / var - 1) < 5 * ((kurtosis - 1) / SPLIT) ** 0.5


def test_a_split_batch_draws_two_streams_not_one(split_batches):
    """The two threads' slices are not the same samples (each reads its own stream)."""
    x = dgauss.sample_gaussian(2**100, SPLIT)
    assert split_batches == [2]
    head = x[: SPLIT // 2]
    assert len(np.unique(x)) > SPLIT - 10 and head.tolist() != x[SPLIT // 2 :].tolist()


def test_only_a_call_without_workers_from_the_os_is_split(split_batches):
    """workers=1 keeps one thread (which reads ahead), a scripted source and a seeded
    generator draw on one thread what they draw (the same twice), a ChaCha20 stays on one
    thread, and noising an array splits as a sampler's call does."""
    runs = _core.read_ahead_runs()
    dgauss.sample_gaussian(10**8, SPLIT, workers=1)
    assert split_batches == [] and _core.read_ahead_runs() == runs + 1
    for make in (lambda: ScriptedOS(fake=True), lambda: np.random.default_rng(7)):
        a = dgauss.sample_gaussian(10**8, SPLIT, rng=make())
        b = dgauss.sample_gaussian(10**8, SPLIT, rng=make())
        assert split_batches == [] and a.tolist() == b.tolist()
    dgauss.sample_gaussian(10**8, SPLIT, rng=dgauss.ChaCha20())
    assert split_batches == []
    counts = np.zeros(SPLIT, dtype=np.int64)
    noised = dgauss.add_gaussian_noise(counts, sigma2=10**8)
    assert split_batches == [2] and noised.shape == (SPLIT,)


def test_a_split_batch_keeps_every_shape_dtype_and_out(split_batches):
    """The split serves every output the one-thread call does: a 2-D int64 array, exact
    Python ints beyond int64's range (σ² = 10^100), Bernoulli's bools, and noise added into
    a caller's ``out``; each on two threads, every element written."""
    x = dgauss.sample_gaussian(10**6, (2, SPLIT // 2))
    assert x.shape == (2, SPLIT // 2) and x.dtype == np.int64 and 0.9 < x.std() / 1000 < 1.1
    big = dgauss.sample_gaussian(10**100, SPLIT)
    assert big.dtype == object and all(type(v) is int for v in big[:: SPLIT // 64])
    assert max(abs(v) for v in big) > 2**63  # (σ = 10^50: none fits int64 but by chance)
    bits = dgauss.sample_bernoulli_exp(Fraction(1, 2), SPLIT)
    assert bits.dtype == np.bool_ and 0.55 < bits.mean() < 0.66  # exp(-1/2) = 0.6065
    counts = np.full(SPLIT, 10**6, dtype=np.int64)
    out = np.full(SPLIT, np.iinfo(np.int64).min)
    noised = dgauss.add_laplace_noise(counts, scale=10, out=out)
    assert noised is out and abs(out.mean() - 10**6) < 1 and out.min() > 10**6 - 1000
    assert split_batches == [2, 2, 2, 2]
