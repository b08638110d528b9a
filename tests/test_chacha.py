"""The opt-in user-space CSPRNG, ``rng=dgauss.ChaCha20()`` (csrc/dg_chacha.c,
docs/security.md): the ChaCha20 block function against RFC 8439's test vectors and a
ChaCha20 written here; the fill's fast key erasure against a reference written here; a fresh
key in a forked child, per thread, after a reseed and after 64 MiB; exact samples."""

from __future__ import annotations

import os
import struct
import threading

import numpy as np
import pytest

import dgauss
from dgauss import _core

MASK = 0xFFFFFFFF


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & MASK


def _block(key_words, counter: int, nonce_words) -> list[int]:
    """ChaCha20's block function, RFC 8439 section 2.3, in plain Python."""
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key_words, counter, *nonce_words]
    x = list(state)

    def quarter(a, b, c, d):
        x[a] = (x[a] + x[b]) & MASK
        x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & MASK
        x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & MASK
        x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & MASK
        x[b] = _rotl(x[b] ^ x[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12), quarter(1, 5, 9, 13), quarter(2, 6, 10, 14), quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15), quarter(1, 6, 11, 12), quarter(2, 7, 8, 13), quarter(3, 4, 9, 14)
    return [(a + b) & MASK for a, b in zip(x, state, strict=True)]


def _words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


@pytest.fixture(params=[0, 1], ids=["portable", "avx2"])
def kernel(request):
    """Each block kernel the fills may use (the AVX2 one where the CPU has it), set for the
    test and the default put back after."""
    if _core.chacha_kernel(request.param) is None:
        pytest.skip("this CPU cannot run the AVX2 kernel")
    try:
        yield request.param
    finally:
        _core.chacha_kernel(-1)


def test_the_kernel_is_set_and_asked_for():
    """0 and 1 set the kernel, -2 only asks, -1 puts back the default (AVX2 where the CPU
    has it, unless built for its AVX-512); a kernel the CPU cannot run is refused."""
    default = _core.chacha_kernel(-1)
    assert default in (0, 1)
    try:
        assert _core.chacha_kernel(0) == 0
        assert _core.chacha_kernel(-2) == 0
        if _core.chacha_kernel(1) is None:
            assert _core.chacha_kernel(-2) == 0 and default == 0
        else:
            assert _core.chacha_kernel(-2) == 1
    finally:
        assert _core.chacha_kernel(-1) == default


def test_the_block_function_is_rfc_8439s(kernel):
    """RFC 8439 section 2.3.2's test vector, and section A.1's first (key 0, nonce 0)."""
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    got = _core.chacha20_blocks(key, 1, nonce, 1)
    assert got.hex() == (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    )
    zero = _core.chacha20_blocks(bytes(32), 0, bytes(12), 1)
    assert zero.hex().startswith("76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7")


@pytest.mark.parametrize("nblocks", [1, 3, 8, 9, 17])
@pytest.mark.parametrize("counter", [0, 7, 0xFFFFFFFE])
def test_every_lane_is_the_block_function(nblocks, counter, kernel):
    """Eight blocks are computed at once (one vector lane each): each is the plain block
    function at its own counter (wrapping at 2^32, as RFC 8439's 32-bit counter does)."""
    rng = np.random.default_rng(nblocks * 1000 + counter % 1000)
    key, nonce = rng.bytes(32), rng.bytes(12)
    got = _words(_core.chacha20_blocks(key, counter, nonce, nblocks))
    want = []
    for j in range(nblocks):
        want += _block(_words(key), (counter + j) & MASK, _words(nonce))
    assert got == want


def _reference_stream(key: bytes, nwords: int) -> list[int]:
    """Fast key erasure as docs/security.md states it: a key makes 32 blocks (nonce 0,
    counters 0-31); block 0's first 32 bytes are the next key, the other 2016 bytes are
    output, in order; the output of key after key is one stream, read as 64-bit
    little-endian words: its first nwords."""
    out = b""
    while len(out) < 8 * nwords:
        chunk = b"".join(struct.pack("<16I", *_block(_words(key), c, [0, 0, 0])) for c in range(32))
        key, out = chunk[:32], out + chunk[32:]
    return list(struct.unpack(f"<{nwords}Q", out[: 8 * nwords]))


@pytest.mark.parametrize(
    "sizes",
    [[1], [252], [253], [3, 200, 1, 59], [64, 188, 252, 520, 2048, 5], [251, 1, 1, 600, 4]],
)
def test_the_fill_is_one_stream_whatever_the_fill_sizes(sizes, kernel):
    """Words drawn in fills of several sizes are the reference's stream: a fill inside a
    key's output (1, 60 words), to its last word (252) or one past it (253); a fill that
    takes whole keys' output straight (520, 2048 words) or what waits in the state first.
    What waits in the state is the rest of the last key's output."""
    state = _core.ChaChaState()
    key = bytes(range(100, 132))
    state.set_key(key)
    got: list[int] = []
    for n in sizes:
        got += state.words(n).tolist()
        assert state.waiting == (-8 * len(got)) % 2016
    assert got == _reference_stream(key, sum(sizes))


def test_a_state_keys_itself_from_the_os_and_two_states_differ():
    a, b = _core.ChaChaState(), _core.ChaChaState()
    assert not a.keyed
    wa, wb = a.words(8), b.words(8)
    assert a.keyed and b.keyed
    assert len(set(wa.tolist()) | set(wb.tolist())) == 16


def test_forget_and_the_reseed_interval_key_afresh_from_the_os():
    """After forget() (dgauss.ChaCha20.reseed) the next fill takes a new key from the OS and
    drops the output waiting; once blocks_left runs out, the next key's blocks are made
    under a new OS key: in neither case does the stream continue as the hand-set key's."""
    key = bytes(range(32))
    stream = _reference_stream(key, 600)
    state = _core.ChaChaState()
    state.set_key(key)
    assert state.words(60).tolist() == stream[:60]
    state.forget()
    assert not state.keyed and state.waiting == 0
    assert state.words(60).tolist() != stream[60:120]
    assert state.keyed
    state = _core.ChaChaState()
    state.set_key(key)
    assert state.words(252).tolist() == stream[:252]  # one key's output: none waits
    state.blocks_left = 31  # fewer than a key's 32 blocks
    assert state.words(60).tolist() != stream[252:312]
    assert state.keyed and state.blocks_left > 31
    # and the controls: without either, the stream continues as the reference says
    state = _core.ChaChaState()
    state.set_key(key)
    state.words(60)
    assert state.words(192).tolist() == stream[60:252]
    assert state.words(60).tolist() == stream[252:312]


def test_reseed_reaches_every_thread_once():
    src = dgauss.ChaCha20()
    state = src._state()
    state.set_key(bytes(32))
    before = state.words(4).tolist()  # (under the known key)
    src.reseed()
    again = src._state()
    assert again is state and not state.keyed  # forgotten, to be keyed on its next fill
    assert src._state().words(4).tolist() != before


def _in_a_child(draw, nbytes: int) -> bytes:
    """The bytes ``draw()`` returns in a forked child (at most ``nbytes``), read here."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, draw())
        finally:
            os._exit(0)
    os.close(write)
    child = b""
    while len(child) < nbytes:
        chunk = os.read(read, nbytes - len(child))
        if not chunk:
            break
        child += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return child


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
# (Python 3.12 warns of fork() beside threads, the helper pool's here; the child only draws
# from its own state, which holds no lock, and leaves by os._exit)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_never_repeats_its_parents_bits():
    """Parent and child both draw after a fork: the child keys afresh (its state page is
    wiped on fork, and the pid is checked), so the two streams share no word.  The control:
    a state keyed like the parent's does repeat them, so equality would have been seen."""
    src = dgauss.ChaCha20()
    state = src._state()
    state.set_key(bytes(range(7, 39)))
    child = _in_a_child(lambda: src._state().words(64).tobytes(), 512)
    parent = state.words(64).tobytes()
    assert len(child) == 512
    assert set(np.frombuffer(child, np.uint64)).isdisjoint(np.frombuffer(parent, np.uint64))
    twin = _core.ChaChaState()
    twin.set_key(bytes(range(7, 39)))
    assert twin.words(64).tobytes() == parent  # what a child without the fresh key would draw


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_state_a_forked_child_inherits_keys_afresh():
    """The C state itself, not dgauss.ChaCha20's per-process lookup: a child that draws from
    the very state object its parent keyed (its key and the output waiting in it) draws
    none of the parent's next words, which are the hand-set key's stream (the control)."""
    key = bytes(range(50, 82))
    state = _core.ChaChaState()
    state.set_key(key)
    state.words(1)  # the rest of the key's output now waits in the state
    child = _in_a_child(lambda: state.words(64).tobytes(), 512)
    parent = state.words(64).tolist()
    assert parent == _reference_stream(key, 65)[1:]
    assert len(child) == 512
    assert set(np.frombuffer(child, np.uint64).tolist()).isdisjoint(parent)


def test_threads_draw_from_states_of_their_own():
    """Eight threads drawing with one ChaCha20 at once get one state each and share no word."""
    src = dgauss.ChaCha20()
    results: dict = {}
    states: dict = {}
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        states[i] = src._state()
        results[i] = np.concatenate([src._state().words(500) for _ in range(20)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in states.values()}) == 8
    words = np.concatenate(list(results.values()))
    assert len(np.unique(words)) == len(words) == 8 * 20 * 500


def _law_variance(gaussian: bool, param: float) -> float:
    """Var of N_Z(0, σ²) (by its pmf, summed) or of the discrete Laplace of scale t."""
    if gaussian:
        y = np.arange(-60 * int(param**0.5) - 10, 60 * int(param**0.5) + 11, dtype=float)
        p = np.exp(-(y**2) / (2 * param))
        return float((p * y**2).sum() / p.sum())
    r = np.exp(-1 / param)
    return 2 * r / (1 - r) ** 2


@pytest.mark.parametrize(
    "gaussian, param, method",
    [(True, 100, "auto"), (True, 10**6, "auto"), (False, 30, "auto"), (True, 1 / 3, "rejection")],
)
def test_samples_drawn_with_it_have_the_laws_variance(gaussian, param, method):
    """The samplers are the same; only the bits' origin changes: 40,000 samples' mean is
    within 5 standard errors of 0 and their variance within 5 of the law's (the fourth
    moment of these laws is at most 7·Var², the Laplace's about 6·Var², so the variance's
    standard error is below √(6/n)·Var)."""
    from fractions import Fraction

    n = 40_000
    value = Fraction(param).limit_denominator(1000)
    sampler = dgauss.sample_gaussian if gaussian else dgauss.sample_laplace
    x = sampler(value, size=n, rng=dgauss.ChaCha20(), method=method).astype(float)
    var = _law_variance(gaussian, float(value))
    assert abs(x.mean()) < 5 * (var / n) ** 0.5
    assert abs(x.var() - var) < 5 * (6 / n) ** 0.5 * var


def test_it_is_accepted_where_the_os_source_is_and_copies_key_afresh():
    import copy
    import pickle

    src = dgauss.ChaCha20()
    out = dgauss.sample_gaussian(100, size=10_000, rng=src, workers=2)
    assert out.dtype == np.int64 and len(np.unique(out)) > 20
    assert isinstance(dgauss.sample_laplace(3, rng=src), int)
    mech = dgauss.GaussianMechanism(sigma2=100)
    assert mech(np.zeros(5, dtype=np.int64), rng=src).shape == (5,)
    for other in (copy.copy(src), copy.deepcopy(src), pickle.loads(pickle.dumps(src))):
        assert isinstance(other, dgauss.ChaCha20) and other is not src
        assert other._state() is not src._state()


@pytest.mark.parametrize("errno_value", [5, 11])
def test_a_failing_os_read_raises_and_draws_nothing(errno_value):
    """When the OS refuses a key (EIO, EAGAIN: a scripted source in its place), the fill
    raises OSError with that errno and leaves the state unkeyed; a state with a key keeps
    drawing until it needs a new one."""
    state = _core.ChaChaState()
    state.fail_keying(errno_value)
    with pytest.raises(OSError) as caught:
        state.words(4)
    assert caught.value.errno == errno_value and not state.keyed
    keyed = _core.ChaChaState()
    keyed.set_key(bytes(32))
    keyed.fail_keying(errno_value)
    assert len(keyed.words(100)) == 100  # no key needed yet
    keyed.forget()
    with pytest.raises(OSError):
        keyed.words(1)
