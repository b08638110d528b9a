"""Two lanes: an int64 batch by inversion from the OS reads two streams at once.

csrc/dg_inv.h (DG_INV_FILL): with the OS source, sample i of a call's int64 batch by inversion
comes from a first stream when i is even and from a second, independent one when i is odd,
each stream read by the contract's rule (docs/contract.md, item 9) exactly as a single
stream is.  The fast path reads each stream through a bit position into its buffer (no
cur/avail bookkeeping) and hands anything unusual (a draw past R's 64th bit, a refill, an
int64 overflow) to the one-at-a-time draw on that lane.  So each lane's samples must be
exactly what a tape of that lane's words gives, in order, wherever the batch is cut into
stretches or slices.

The scripted OS source (dgauss._sources.ScriptedOS, fake=True) serves SplitMix64 words
0, 1, ... to the first lane and LANE_2_FAKE_WORD, ... to the second through the same buffered
read loop as the OS, and ``prefix`` puts chosen words at the start of either lane.  Each test
states which lane it exercises; a planted bug (lanes swapped, a lane reusing the other's bits,
the step past bit 64 finished from the wrong lane) fails them.
"""

from __future__ import annotations

import errno
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _fake_os import fill_in_slices, lane_words
from dgauss import _core, reference
from dgauss._kinds import Kind
from dgauss._sources import ScriptedOS, Tape

INV = "inversion"
SAMPLERS = {"gaussian": dgauss.sample_gaussian, "laplace": dgauss.sample_laplace}

#: (distribution, parameter): plain and blocked tables of both, integer and not.
CASES = [
    ("gaussian", Fraction(1, 4)),
    ("gaussian", Fraction(10)),
    ("gaussian", Fraction(7, 3)),
    ("gaussian", Fraction(10**6)),  # blocked
    ("gaussian", Fraction(196609, 3)),  # blocked, just past 2**16
    ("laplace", Fraction(7, 3)),
    ("laplace", Fraction(200)),
    ("laplace", Fraction(1000)),  # blocked, L (L - 1) <= t
    ("laplace", Fraction(30001, 3)),  # blocked
]


def expected(kind, param, n, mu=0, prefixes=((), ())):
    """The batch two lanes must give: each lane's samples from a tape of its words."""
    sampler = SAMPLERS[kind]
    out = np.empty(n, dtype=np.int64)
    for lane in (0, 1):
        count = (n + 1 - lane) // 2
        words = lane_words(lane, 80 * count + 64, prefixes[lane])
        tape = Tape.from_words(words)
        out[lane::2] = sampler(param, count, mu=mu, rng=tape, method="inversion")
    return out


@pytest.mark.parametrize("kind, param", CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("n", [1, 2, 7, 20001])
@pytest.mark.long
def test_each_lane_reads_its_own_stream_in_order(kind, param, n):
    """Samples 0, 2, 4, ... are lane 0's stream drawn one after another, 1, 3, 5, ... lane
    1's; n = 20,001 crosses many refills of both buffers and the pieces the clock cuts."""
    got = SAMPLERS[kind](param, n, rng=ScriptedOS(fake=True), method="inversion")
    assert got.tolist() == expected(kind, param, n).tolist()


@pytest.mark.parametrize("kind, param", [CASES[2], CASES[3], CASES[7]], ids=lambda v: str(v))
def test_each_lane_is_the_oracles_draw_on_its_words(kind, param):
    """The same against the pure-Python oracle (dgauss.reference) on each lane's words, so
    the lanes are checked against code that shares nothing with the core."""
    n = 201
    got = SAMPLERS[kind](param, n, rng=ScriptedOS(fake=True), method="inversion")
    oracle = reference.sample_gaussian if kind == "gaussian" else reference.sample_laplace
    for lane in (0, 1):
        tape = Tape.from_words(lane_words(lane, 40 * n))
        want = oracle(param, (n + 1 - lane) // 2, rng=tape, method="inversion")
        assert got[lane::2].tolist() == want.tolist()


@pytest.mark.parametrize("kind, param", CASES[2:4] + CASES[-2:], ids=lambda v: str(v))
def test_one_lane_is_the_single_stream(kind, param):
    """lanes=1: the whole batch from lane 0's stream, as a tape of its words gives it."""
    n = 5001
    got = SAMPLERS[kind](param, n, rng=ScriptedOS(fake=True, lanes=1), method="inversion")
    want = SAMPLERS[kind](param, n, rng=Tape.from_words(lane_words(0, 80 * n)), method="inversion")
    assert got.tolist() == want.tolist()


def test_the_lanes_are_different_streams():
    """Lane 1 does not repeat lane 0's bits: the two halves differ (a lane given the
    other's stream would make them equal)."""
    got = dgauss.sample_gaussian(10, 4000, rng=ScriptedOS(fake=True), method="inversion")
    assert got[0::2].tolist() != got[1::2].tolist()
    os_draw = dgauss.sample_gaussian(10, 4000, method="inversion")
    assert os_draw[0::2].tolist() != os_draw[1::2].tolist()


@pytest.mark.parametrize("mu", [-(2**40) - 3, 17])
def test_a_shift_is_added_in_both_lanes(mu):
    got = dgauss.sample_laplace(Fraction(30001, 3), 3001, mu=mu, rng=ScriptedOS(fake=True))
    assert got.tolist() == expected("laplace", Fraction(30001, 3), 3001, mu=mu).tolist()


@pytest.mark.parametrize(
    "slices", [[(0, 3), (3, 10), (10, 11), (11, 4000)], [(0, 1999), (1999, 4000)]]
)
def test_where_a_slice_ends_changes_no_sample(slices):
    """A batch filled in slices of odd lengths (as threads take them, next_slice) keeps
    sample i on lane i % 2: the lanes' phase is carried across slices."""
    out = np.empty(4000, dtype=np.int64)
    fill_in_slices(Kind.DISCRETE_GAUSSIAN, 10**6, out, slices, ScriptedOS(fake=True), method=INV)
    assert out.tolist() == expected("gaussian", Fraction(10**6), 4000).tolist()


def _tie_word(kind, param):
    """A first-step word of the table (R's 64 bits equal to it do not decide |X|)."""
    table = (_core.gauss_table if kind == "gaussian" else _core.laplace_table)(
        param.numerator, param.denominator
    )
    return int(table.thr[3])


def _tie_at_sample(kind, param, lane, m):
    """Lane ``lane``'s first words, so that its sample m starts with R's 64 bits equal to a
    threshold word: the bits its samples 0 .. m - 1 read (from a tape of the lane's usual
    words), then the tie, then the usual words' next bits."""
    words = lane_words(lane, 64 * (m + 4))
    out = np.empty(m, dtype=np.int64)
    used = (
        _core.fill(
            int(KINDS[kind]),
            param.numerator,
            param.denominator,
            0,
            Tape.from_words(words),
            out,
            method="inversion",
        )
        if m
        else 0
    )
    stream = int("".join(format(w, "064b") for w in words), 2)
    total = 64 * len(words)
    head = stream >> (total - used) if used else 0
    tail = stream & ((1 << (total - used - 64)) - 1)  # the bits after the next 64
    bits = (((head << 64) | _tie_word(kind, param)) << (total - used - 64)) | tail
    return [(bits >> (64 * (len(words) - 1 - j))) & (2**64 - 1) for j in range(len(words))]


KINDS = {"gaussian": Kind.DISCRETE_GAUSSIAN, "laplace": Kind.DISCRETE_LAPLACE}


@pytest.mark.parametrize("kind, param", [CASES[1], CASES[3], CASES[6], CASES[8]], ids=str)
@pytest.mark.parametrize("lane", [0, 1])
@pytest.mark.parametrize("m", [0, 1, 37])
def test_a_64_bit_tie_in_either_lane(kind, param, lane, m):
    """R's 64 bits equal to a threshold word at the lane's sample m (its first, or one the
    fast loop meets mid-batch): the draw goes on past bit 64 from that lane's bits (the step
    in Python), its sign from that lane, and both lanes go on in order."""
    prefix = _tie_at_sample(kind, param, lane, m)
    prefixes = (prefix, ()) if lane == 0 else ((), prefix)
    n = 301
    got = SAMPLERS[kind](param, n, rng=ScriptedOS(fake=True, prefix=prefixes), method="inversion")
    assert got.tolist() == expected(kind, param, n, prefixes=prefixes).tolist()


def test_the_bits_used_are_both_lanes():
    """_core.fill's bits used = the two lanes' bits, each as its tape reports it."""
    n = 1001
    out = np.empty(n, dtype=np.int64)
    used = _core.fill(
        int(Kind.DISCRETE_GAUSSIAN), 100, 1, 0, ScriptedOS(fake=True), out, method="inversion"
    )
    total = 0
    for lane in (0, 1):
        part = np.empty((n + 1 - lane) // 2, dtype=np.int64)
        total += _core.fill(
            int(Kind.DISCRETE_GAUSSIAN),
            100,
            1,
            0,
            Tape.from_words(lane_words(lane, 40 * n)),
            part,
            method="inversion",
        )
    assert used == total


def test_an_overflow_in_the_second_lane_raises():
    """mu + X outside int64 raises OverflowError from whichever lane draws the sample.  Lane
    0's first word 2**64 - 1 (R above every threshold) gives X = 0, so mu + X fits; lane 1's
    first word 2**62 (R = 0.01000...) gives |X| > 0 with a sign bit 0, so mu + X overflows."""
    top = 2**63 - 1
    prefixes = ([2**64 - 1], [2**62])
    for scale in (Fraction(7, 3), Fraction(30001, 3)):
        src = ScriptedOS(fake=True, prefix=prefixes)
        one = dgauss.sample_laplace(scale, 1, mu=top, rng=src, dtype=np.int64, method=INV)
        assert one.tolist() == [top]
        with pytest.raises(OverflowError):
            dgauss.sample_laplace(scale, 2, mu=top, rng=src, dtype=np.int64, method=INV)


def test_a_failed_read_in_a_lane_raises():
    """A refill that fails in either lane raises OSError with its errno."""
    src = ScriptedOS(fail_after=2, fail_count=1, fail_errno=errno.EAGAIN)
    with pytest.raises(OSError) as info:
        dgauss.sample_gaussian(10**6, 10**5, rng=src, method="inversion")
    assert info.value.errno == errno.EAGAIN


@pytest.mark.parametrize("bad", [0, 3, True, 2.0])
def test_lanes_must_be_one_or_two(bad):
    with pytest.raises(ValueError, match="lanes"):
        ScriptedOS(lanes=bad)


def test_prefix_words_are_checked():
    with pytest.raises(ValueError, match="prefix"):
        ScriptedOS(prefix=([2**64], ()))
    with pytest.raises(ValueError, match="prefix"):
        ScriptedOS(prefix=([1],))
