"""Algorithm 2's X = U + tV by inversion when t <= INVERSION_MAX.

X ~ Geometric(1 - exp(-1/t)) is drawn as the number of thresholds exp(-x/t),
x >= 1, above a lazy uniform R.  The core compares R's next 64 bits with a
table of threshold words and falls back to one bit at a time with GMP on a
64-bit tie (or R's 64 bits all zero); the oracle always reads one bit at a
time.  These tests check the table against the oracle (fixed point and GMP
forced), force the fallback with tapes, tie the two to the same bits, and
prove the distribution at the bit level with the tape-enumeration checker.
"""

from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _parity import assert_parity
from dgauss import _core, reference
from dgauss._kinds import Kind
from dgauss.testing import Tape, check, enumerate_sampler


def test_inversion_limit_is_shared():
    assert _core.INVERSION_MAX == reference.INVERSION_MAX == 8


def _thresholds(t):
    """floor(2**64 exp(-x/t)) for x = 1, 2, ... up to the last non-zero word (the oracle)."""
    words, x = [], 1
    while (w := reference.exp_neg_floor(Fraction(x, t), 64)) > 0:
        words.append(w)
        x += 1
    return words


def test_threshold_words_match_oracle(fixed_point):
    for t in range(1, reference.INVERSION_MAX + 1):
        assert _core.geometric_thresholds(t, fixed_point) == _thresholds(t), t


def test_threshold_table_rejects_t_out_of_range():
    for t in (0, reference.INVERSION_MAX + 1):
        with pytest.raises(ValueError, match="t must be in"):
            _core.geometric_thresholds(t)


def _bits(words):
    return "".join(format(int(w), "064b") for w in words)


def _run_both(kind, num, tape_bits, count):
    """Core and oracle on the same tape: (samples, bits used) from each; they must agree."""
    results = []
    for fill in (_core.fill, reference.fill):
        out = np.empty(count, dtype=object)
        used = fill(kind, num, 1, 0, Tape(tape_bits), out)
        results.append((out.tolist(), used))
    assert results[0] == results[1]
    return results[0]


@pytest.mark.parametrize("t", [1, 2, 5, 8])
def test_tie_with_a_threshold_runs_the_slow_path(t):
    """R's first 64 bits equal a threshold word: the word comparison cannot decide, and
    the bit-at-a-time GMP path reads on.  Random continuations land on both sides."""
    thresholds = _thresholds(t)
    gen = np.random.default_rng(t)
    seen = set()
    last = len(thresholds)
    for x in (2, 3, last // 2, last - 1, last):
        for _ in range(4):
            tape = format(thresholds[x - 1], "064b") + _bits(gen.integers(0, 2**64, 4, np.uint64))
            (value,), used = _run_both(Kind.DISCRETE_LAPLACE, t, tape, 1)
            assert used >= 66  # bit 65 was read
            below = thresholds[x] if x < last else 0
            if thresholds[x - 2] != thresholds[x - 1] != below:
                # R lies next to exp(-x/t) only: X is x - 1 or x (x >= 2: never a restart)
                assert abs(value) in (x - 1, x)
                seen.add(abs(value) - x)
    assert seen == {-1, 0}


@pytest.mark.parametrize("t", [1, 8])
def test_r_all_zero_for_64_bits_runs_the_slow_path(t):
    """R < 2**-64: below every table word; X is decided by GMP digits further on."""
    n_nonzero = len(_thresholds(t))
    for lead in (1, 20):
        tape = (
            "0" * (64 + lead)
            + "1"
            + _bits(np.random.default_rng(lead).integers(0, 2**64, 4, np.uint64))
        )
        (value,), used = _run_both(Kind.DISCRETE_LAPLACE, t, tape, 1)
        assert abs(value) > n_nonzero and used > 65 + lead


def test_a_tie_spanning_two_words_after_an_earlier_draw():
    """The second draw's R starts k bits into a word, so its 64 bits span two words, and
    they tie with a threshold: the slow path starts from 64 - k known bits plus the next word."""
    t = 2
    words = np.random.default_rng(9).integers(0, 2**64, 1, np.uint64)
    (v,), k = _run_both(Kind.DISCRETE_LAPLACE, t, _bits(words), 1)
    assert 1 <= k <= 40
    first = _bits(words)[:k]  # exactly the bits of the first draw
    thresholds = _thresholds(t)
    gen = np.random.default_rng(3)
    for x in (2, 3, 20):
        for _ in range(4):
            tape = (
                first
                + format(thresholds[x - 1], "064b")
                + _bits(gen.integers(0, 2**64, 4, np.uint64))
            )
            (a, b), used = _run_both(Kind.DISCRETE_LAPLACE, t, tape, 2)
            assert a == v and abs(b) in (x - 1, x) and used >= k + 65


@pytest.mark.parametrize(
    "scale", [1, 2, Fraction(7, 3), Fraction(8, 5), 8, 9, Fraction(17, 2)], ids=str
)
def test_laplace_parity_around_the_limit(scale):
    """t <= 8 by inversion (with s > 1 too), t = 9 and 17 by U, D and V: core and oracle agree."""
    assert_parity(Kind.DISCRETE_LAPLACE, scale, 500)


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 1, 10, 63, 64], ids=str)
def test_gaussian_parity_around_the_limit(sigma2):
    """t = floor(sigma) + 1: 1, 2, 4, 8 (inversion) and 9 (U, D, V)."""
    a = dgauss.sample_gaussian(sigma2, 500, rng=np.random.default_rng(4))
    b = reference.sample_gaussian(sigma2, 500, rng=np.random.default_rng(4))
    assert a.tolist() == b.tolist()


def test_inversion_reads_other_bits_than_u_d_v():
    """The limit matters: parity at t <= 8 proves the core inverts there, since the oracle
    without inversion reads other bits."""
    words = np.random.default_rng(12).integers(0, 2**64, size=64, dtype=np.uint64)
    used_inversion = reference.fill(
        Kind.DISCRETE_LAPLACE, 8, 1, 0, Tape.from_words(words), np.empty(50, dtype=object)
    )
    saved = reference.INVERSION_MAX
    reference.INVERSION_MAX = 0
    try:
        used_udv = reference.fill(
            Kind.DISCRETE_LAPLACE, 8, 1, 0, Tape.from_words(words), np.empty(50, dtype=object)
        )
    finally:
        reference.INVERSION_MAX = saved
    assert used_inversion != used_udv


@pytest.mark.parametrize("t", [1, 2, 8])
@pytest.mark.long
def test_inversion_is_exact_on_bit_tapes(t):
    """The checker enumerates the compiled inversion's bit tapes (table words, word
    spanning and all): every probability of Lap_Z(t) is within its bounds."""
    enumeration = enumerate_sampler("laplace", t, level="bits", target=1e-4)
    result = check(enumeration, "laplace", t)
    assert result.ok, result.report()


@pytest.mark.slow
def test_oracle_inversion_is_exact_on_bit_tapes():
    """The oracle's bit-at-a-time inversion, the same check (10 s: in the slow suite)."""
    enumeration = enumerate_sampler("laplace", 1, oracle=True, level="bits", target=1e-4)
    result = check(enumeration, "laplace", 1)
    assert result.ok, result.report()
