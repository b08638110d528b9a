"""Where bits come from: the OS by default, fork- and thread-safe; failures raise."""

import errno
import os
import threading
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _fake_os import splitmix64
from _python import run_python
from dgauss import reference
from dgauss.testing import ScriptedOS, Tape


def test_default_source_is_not_reproducible():
    a = dgauss.sample_gaussian(10**6, 64)
    b = dgauss.sample_gaussian(10**6, 64)
    assert a.tolist() != b.tolist()  # equal with probability < 2**-600


def test_seeded_generator_is_reproducible_and_advances():
    g = np.random.default_rng(7)
    first = dgauss.sample_gaussian(100, 50, rng=g)
    second = dgauss.sample_gaussian(100, 50, rng=g)
    assert first.tolist() != second.tolist()
    assert first.tolist() == dgauss.sample_gaussian(100, 50, rng=np.random.default_rng(7)).tolist()


_FORK_CHILD_DRAWS_FRESH_BITS = """
import os
import numpy as np
import dgauss

dgauss.sample_gaussian(10**6, 3)  # the parent has used the source before forking
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:  # child
    try:
        os.write(write_end, dgauss.sample_gaussian(10**6, 64).tobytes())
    finally:
        os._exit(0)
os.close(write_end)
parent = dgauss.sample_gaussian(10**6, 64)
data = b""
while len(data) < 64 * 8:
    chunk = os.read(read_end, 4096)
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
child = np.frombuffer(data, dtype=np.int64)
assert child.size == 64, child.size
assert child.tolist() != parent.tolist(), "the child repeated the parent's bits"
print("fresh")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_draws_fresh_bits():
    # in a fresh interpreter: this process may hold other tests' threads (Dask's pools), and
    # forking a multi-threaded process may deadlock the child (test_robustness tests that case)
    out = run_python(_FORK_CHILD_DRAWS_FRESH_BITS)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fresh"


def test_threads_with_own_generators_match_serial_runs():
    """Concurrent calls share no state: each thread gets exactly what it would get alone."""
    seeds = range(4)
    expected = {
        s: [
            dgauss.sample_gaussian(1000, 20_000, rng=np.random.default_rng(s)).tolist()
            for _ in range(1)
        ]
        for s in seeds
    }
    got = {}

    def work(seed):
        got[seed] = [dgauss.sample_gaussian(1000, 20_000, rng=np.random.default_rng(seed)).tolist()]

    threads = [threading.Thread(target=work, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_threads_on_os_source_get_distinct_valid_samples():
    results = []

    def work():
        results.append(dgauss.sample_gaussian(100, 200_000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert len({r[:64].tobytes() for r in results}) == 4
    for r in results:  # variance of N_Z(0, 100) is within 1e-9 of 100; 200k samples: sd 0.32
        assert abs(r.var() - 100) < 3


def test_shared_generator_is_locked():
    """Threads sharing one generator never take the same words (NumPy's lock is held per call)."""
    g = np.random.Generator(np.random.PCG64(8))
    results = []

    def work():
        for _ in range(20):
            results.append(tuple(dgauss.sample_laplace(10**6, 8, rng=g).tolist()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80 and len(set(results)) == 80


@pytest.mark.parametrize("sampler", [dgauss.sample_gaussian, dgauss.sample_laplace])
def test_entropy_failure_raises(sampler):
    """A failed read of the OS source raises OSError with its errno (the scripted OS source
    runs the OS path's buffer and read loop, failing where told)."""
    with pytest.raises(OSError) as info:
        sampler(100, 1000, rng=ScriptedOS(fail_after=0, fail_count=1, fail_errno=errno.EIO))
    assert info.value.errno == errno.EIO
    # the same path without the failure: the script reads the OS
    assert sampler(100, 1000, rng=ScriptedOS()).shape == (1000,)


def test_entropy_failure_mid_batch_returns_nothing():
    """A batch whose later reads fail raises as a whole; no partly filled array escapes."""
    script = ScriptedOS(fail_after=3, fail_count=1, fail_errno=errno.EAGAIN)
    with pytest.raises(OSError) as info:
        dgauss.sample_gaussian(10**100, 2000, rng=script)  # needs far more than 3 reads
    assert info.value.errno == errno.EAGAIN
    with pytest.raises(OSError):
        dgauss.sample_gaussian(100, 10**6, rng=script)  # each call starts from the script


@pytest.mark.parametrize(
    "sampler,param,n,method",
    [
        (dgauss.sample_gaussian, 10, 5000, "rejection"),
        (dgauss.sample_gaussian, 10**100, 3000, "auto"),
        (dgauss.sample_laplace, 10**30 + 7, 3000, "auto"),
        (dgauss.sample_laplace, Fraction(10**40, 3), 2000, "auto"),
        (dgauss.sample_gaussian, 10, 20000, "inversion"),
        (dgauss.sample_gaussian, 10**6, 20000, "inversion"),
        (dgauss.sample_laplace, Fraction(7, 3), 20000, "inversion"),
        (dgauss.sample_laplace, 10**4, 20000, "inversion"),
    ],
)
def test_os_path_reads_the_bits_of_a_tape(sampler, param, n, method):
    """The fake OS source serves the bytes of known words at most 7 per read, every third
    read interrupted: the samples must equal those drawn from a tape of exactly those words.
    So short reads are joined, interrupted reads retried (never taken as data), and the
    buffered OS path (its refills, its inline word crossings in dg_bits, the inversion's look
    at the next buffered word) reads the bits the one-word-at-a-time tape path reads, at a
    small sigma^2 and where U's low bits span words.  An int64 batch by inversion is drawn
    from one stream here (lanes=1); tests/test_lanes.py checks the two lanes the OS gets."""
    words = [splitmix64(j) for j in range(60 * n)]
    expected = sampler(param, n, rng=Tape.from_words(words), method=method)
    got = sampler(param, n, rng=ScriptedOS(fake=True, lanes=1), method=method)
    assert got.tolist() == expected.tolist()


def test_oracle_reads_the_os_by_default():
    a = reference.sample_gaussian(10**6, 16)
    b = reference.sample_gaussian(10**6, 16)
    assert a.tolist() != b.tolist()


def _kernel_at_least(major: int, minor: int) -> bool:
    import re

    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return found is not None and (int(found[1]), int(found[2])) >= (major, minor)


def test_the_os_is_read_through_the_vdso_where_the_kernel_has_one():
    """On Linux >= 6.11 on x86-64 (where the kernel always builds it) the OS source calls the
    kernel's vDSO getrandom itself; else the C library's getrandom(3) where glibc has one
    (2.25 on), the system call, or /dev/urandom."""
    import platform
    import sys

    from dgauss import _core

    reader = _core.os_reader()
    libc, version = platform.libc_ver()
    linux = sys.platform.startswith("linux")
    if linux and platform.machine() == "x86_64" and _kernel_at_least(6, 11):
        assert reader == "vDSO getrandom"
    elif linux and libc == "glibc" and version and reader != "vDSO getrandom":
        major, minor = (int(x) for x in version.split(".")[:2])
        assert reader == ("getrandom(3)" if (major, minor) >= (2, 25) else "getrandom(2)")
    else:
        assert reader in ("vDSO getrandom", "getrandom(3)", "getrandom(2)", "urandom")


@pytest.fixture
def os_reader(request):
    """Each OS reader this system has, set process-wide for the test, the default after."""
    from dgauss import _core

    default = _core.os_reader()
    try:
        yield _core.os_reader(request.param)
    except ValueError:
        pytest.skip("this kernel has no vDSO getrandom")
    finally:
        _core.os_reader("vDSO getrandom" if default == "vDSO getrandom" else "getrandom(3)")


@pytest.mark.parametrize("os_reader", ["vDSO getrandom", "getrandom(3)"], indirect=True)
def test_each_os_reader_gives_threads_distinct_samples_of_the_law(os_reader):
    results = []

    def work():
        results.append(dgauss.sample_gaussian(10**8, 100_000, workers=1))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r[:16].tobytes() for r in results}) == 3
    for r in results:  # sd of the sample variance / 10^8: sqrt(2 / 10^5) = 0.0045
        assert abs(r.var() / 10**8 - 1) < 0.03
    # the ChaCha20's keys come from the same reader
    assert dgauss.sample_gaussian(1, 8, rng=dgauss.ChaCha20()).shape == (8,)


def _droppable_bytes() -> int:
    """Bytes of this process's mappings the kernel may drop (VM_DROPPABLE: "dp" in smaps),
    the kind the vDSO's states live in."""
    total = size = 0
    with open("/proc/self/smaps") as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1]) * 1024
            elif line.startswith("VmFlags:") and " dp" in line:
                total += size
    return total


def test_a_threads_vdso_state_is_unmapped_when_it_exits():
    """One state a thread, mapped on its first read and unmapped at its exit: 200 threads
    that read one after another leave no more than the states of the threads alive."""
    from dgauss import _core

    if _core.os_reader() != "vDSO getrandom":
        pytest.skip("the OS source does not read the vDSO here")
    dgauss.sample_gaussian(1, 1)  # this thread's state
    before = _droppable_bytes()
    assert before > 0
    for _ in range(200):
        t = threading.Thread(target=dgauss.sample_gaussian, args=(1, 1))
        t.start()
        t.join()
    assert _droppable_bytes() <= before + 8 * os.sysconf("SC_PAGESIZE")


def test_a_reader_that_is_not_there_is_refused():
    from dgauss import _core

    with pytest.raises(ValueError, match="which must be"):
        _core.os_reader("getrandom(2)")
