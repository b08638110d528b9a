"""Tapes for sampling by inversion (docs/contract.md, item 9), shared by
test_gaussian_inversion.py, test_laplace_inversion.py and the blocked tests
(test_gaussian_blocked.py, test_laplace_blocked.py; their own helpers are in _blocked.py).

Each of those files has its own independent model of a distribution's thresholds T_x (the
Gaussian's ``Exact``, the other files' ``Model``); all derive from :class:`TapeModel`, which
needs from them

* ``rule(bits)``: (|X|, bits read) for R = 0.bits..., or None when the bits run out first;
* ``digits(x, i)``: T_x's first i binary digits, and ``bit(x, i)``: its i-th digit.

What does not depend on the distribution lives here: item 9's rule by bisection on a model's
``shares`` and ``count`` (:func:`inversion_rule`), a model's prediction for a tape
(:meth:`TapeModel.expect`, :meth:`TapeModel.need`), running a bit string through the core and
the oracle against it (:func:`run`, :func:`run_tape`), the tapes themselves (:func:`tie`,
:func:`first_sample`), the tape checks written the same way for every distribution (a tie
starting mid-word, a short last word, running out), and the checks of an enumeration of
tapes (:func:`checked_draw` for dgauss.testing.enumerate_bits, :func:`window_violations`,
:func:`mass_violations`).  The distribution is named by its ``Kind`` and its parameter
(sigma2 or the scale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np

import dgauss
from dgauss import _core, reference
from dgauss.testing import Exhausted, Tape

#: The bit generators the core and the oracle are compared on.
BITGENS = [
    np.random.PCG64,
    np.random.PCG64DXSM,
    np.random.MT19937,
    np.random.Philox,
    np.random.SFC64,
]


class TapeModel:
    """What a model of item 9's rule predicts for tapes, from its ``rule`` alone."""

    def rule(self, bits: str) -> tuple[int, int] | None:
        raise NotImplementedError

    def digits(self, x: int, i: int) -> str:
        raise NotImplementedError

    def bit(self, x: int, i: int) -> str:
        raise NotImplementedError

    def need(self, r: int) -> tuple[int, int | None]:
        """(bits needed, |X|) for R's first 64 bits r: the first deciding j <= 64, else 65."""
        found = self.rule(word_bits(r))
        return (65, None) if found is None else (found[1], found[0])

    def expect(self, bits: str, count: int, mu: int = 0):
        """What a call drawing ``count`` samples from a tape of ``bits`` must return:
        (values, bits used, tape words started), or "exhausted"."""
        pos, values = 0, []
        for _ in range(count):
            found = self.rule(bits[pos:])
            if found is None:
                return "exhausted"
            y, j = found
            pos += j
            if y:
                if pos == len(bits):
                    return "exhausted"
                y = -y if bits[pos] == "1" else y
                pos += 1
            values.append(y + mu)
        return values, pos, -(-pos // 64)


def inversion_rule(bits: str, shares, count, depth: int) -> tuple[int, int] | None:
    """Item 9's rule for R = 0.bits...: (count(a, j), j) at the first j where ``shares(a, j)``
    (some threshold has R's first j digits a) is false, or None when the bits run out first.
    Sharing j digits implies sharing j - 1, so j is found by bisection.  The model knows its
    thresholds to ``depth`` digits (its J): the rule must stop within them."""
    bits = bits[:depth]
    n = len(bits)
    if n == 0:
        return None
    whole = int(bits, 2)

    def shared(j: int) -> bool:
        return shares(whole >> (n - j), j)

    if shared(n):
        assert n < depth, "the model needs more bits"
        return None
    lo, hi = 0, n  # shared(lo) (j = 0: vacuously), not shared(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if shared(mid):
            lo = mid
        else:
            hi = mid
    return count(whole >> (n - hi), hi), hi


def bits(gen: np.random.Generator, k: int) -> str:
    return "".join(map(str, gen.integers(0, 2, k)))


def word_bits(r: int) -> str:
    return format(r, "064b")


def fill(kind, fill_, param, mu: int, src, out: np.ndarray, **options) -> int:
    """``fill_`` (the core's or the oracle's) by inversion: the bits used."""
    param = Fraction(param)
    return fill_(
        kind, param.numerator, param.denominator, mu, src, out, method="inversion", **options
    )


def run(kind, fill_, param, bits: str, count: int, mu: int = 0, dtype=object, **options):
    """One call on a tape of ``bits``: (values, bits used, tape position) or ("exhausted", pos)."""
    tape = Tape(bits)
    out = np.empty(count, dtype=dtype)
    try:
        used = fill(kind, fill_, param, mu, tape, out, **options)
    except Exhausted:
        return "exhausted", tape.position
    return out.tolist(), used, tape.position


def run_tape(kind, model: TapeModel, param, bits: str, count=1, mu=0, variants=()):
    """The core, the core with each of ``variants`` (options of :func:`run`) and the oracle on
    one tape, each checked equal to the model's prediction (running out: Exhausted, with the
    tape past every word); returns the prediction."""
    core = run(kind, _core.fill, param, bits, count, mu)
    for options in variants:
        assert run(kind, _core.fill, param, bits, count, mu, **options) == core, options
    oracle = run(kind, reference.fill, param, bits, count, mu)
    assert core == oracle
    expected = model.expect(bits, count, mu)
    if expected == "exhausted":
        assert core == ("exhausted", -(-len(bits) // 64)), core
    else:
        assert core == expected, (core, expected)
    return expected


#: run_tape for one distribution: (bits, count) -> the prediction.
RunTape = Callable[..., object]


def tie(model: TapeModel, x: int, i: int) -> str:
    """R = T_x's digits 1 .. i - 1, digit i flipped: R shares i - 1 digits with T_x, so ties
    with word x for 64 bits when i > 64 (R > T_x when T_x's digit i is 0)."""
    return model.digits(x, i - 1) + ("1" if model.bit(x, i) == "0" else "0")


def first_sample(model: TapeModel, gen, j: int = 12) -> str:
    """The bits of one sample (with its sign) decided at bit j or a little after."""
    bits_ = tie(model, 1, j) + bits(gen, 40)
    y, used = model.rule(bits_)
    return bits_[: used + (1 if y else 0)]


def ties_mid_word(
    run_tape: RunTape, model: TapeModel, gen, xs, past: tuple[int, ...], pad: int
) -> Iterator[tuple[str, int, str, int]]:
    """An earlier sample read k bits, so R's 64 bits span two tape words.  For each x in
    ``xs``: R tying with word x (differing from T_x first at each bit i in ``past``, > 64:
    bits used >= k + i, the tape position the words those started), then R deciding past the
    first word within its 64 bits (i = 65 - k, 60, 64: bits used >= k + i); last, R's 64
    zeros spanning the words (bits used >= k + 71).  Yields (case, x, R's bits, the second
    sample) for each, case "past", "within" or "zero" (x None), for the caller's checks."""
    first = first_sample(model, gen)
    k = len(first)
    assert 12 <= k < 64
    for x in xs:
        for i in past:
            second = tie(model, x, i) + bits(gen, pad)
            (_, value), used, pos = run_tape(first + second, 2)
            assert used >= k + i and pos == -(-used // 64)
            yield "past", x, second, value
        for i in (64 - k + 1, 60, 64):  # decided past the first word, within R's 64 bits
            second = tie(model, x, i) + bits(gen, 70)
            (_, value), used, _ = run_tape(first + second, 2)
            assert used >= k + i
            yield "within", x, second, value
    second = "0" * 70 + "1" + bits(gen, pad)
    (_, value), used, _ = run_tape(first + second, 2)
    assert used >= k + 71
    yield "zero", None, second, value


def short_last_word(run_tape: RunTape, model: TapeModel, gen, xs, step: int = 1) -> dict:
    """The second sample's R starts k bits into the first word and runs into a finite tape's
    last word of m < k bits (fewer than R's 64 need): the bit-by-bit path.  Every m = 1 ..
    k - 1, for R deciding at its bits 65 - k .. 64 (every ``step``-th) as a tie with T_x, x in
    ``xs``: decided inside the last word (value and bits used as the model says, past bit 64,
    both tape words started) or out of bits.  Returns how often each happened ("decided",
    "exhausted", and "needs R's bit 64": out of bits by just R's last bit)."""
    first = first_sample(model, gen, 14)
    k = len(first)
    have = 64 - k
    outcomes = {"decided": 0, "exhausted": 0, "needs R's bit 64": 0}
    for x in xs:
        for i in range(have + 1, 65, step):
            second = tie(model, x, i) + bits(gen, 70)
            for m in range(1, k):
                result = run_tape((first + second)[: 64 + m], 2)
                if result == "exhausted":
                    outcomes["exhausted"] += 1
                    # R's 64 bits would reach past the tape by one bit
                    outcomes["needs R's bit 64"] += m == k - 1 and model.rule(second)[1] == 64
                    continue
                (_, value), used, pos = result
                assert used > 64 and pos == 2
                outcomes["decided"] += 1
    return outcomes


def running_out(run_tape: RunTape, model: TapeModel, gen) -> list[tuple[str, int]]:
    """A tape ending before the sample is decided: inside R's 64 bits, inside the step past
    bit 64 (a tie with T_2 to bit 100, the zero R), before the sign bit (the tie with the
    sign bit is checked to decide: -|X| with 101 bits); run_tape gives "exhausted" for each
    (core and oracle raise Exhausted and leave the tape past every word).  Returns the
    (bits, count) cases."""
    tie_2 = tie(model, 2, 100)
    values, used, _ = run_tape(tie_2 + "1")
    assert used == 101 and values[0] < 0
    assert run_tape(tie_2) == "exhausted"  # the sign bit is missing
    first = first_sample(model, gen)
    cases = [
        (tie_2[:40], 1),
        (tie_2[:64], 1),
        (tie_2[:80], 1),
        (tie_2[:99], 1),
        ("0" * 64, 1),
        ("0" * 90, 1),
        (first + tie_2[:50], 2),
        (first + tie_2[:70], 2),
        (first + tie_2[:99], 2),
    ]
    for bits_, count in cases:
        assert run_tape(bits_, count) == "exhausted", bits_
    return cases


def same_bits(sampler: str, kind, param, n: int, mu: int, dtype, bitgen, out_dtype) -> int:
    """``sampler`` (e.g. "sample_gaussian") by inversion from dgauss and from the oracle on
    two generators seeded alike: the same values and dtype, the generators left in the same
    state, more than one value where param > 1; then the core's and the oracle's fill on
    ``bitgen(8)`` into ``out_dtype`` arrays: the same bits used, values and generator state.
    Returns the bits used."""
    gens = [np.random.Generator(bitgen(7)) for _ in range(2)]
    options = {"mu": mu, "dtype": dtype, "method": "inversion"}
    core = getattr(dgauss, sampler)(param, n, rng=gens[0], **options)
    ref = getattr(reference, sampler)(param, n, rng=gens[1], **options)
    assert core.dtype == ref.dtype and core.tolist() == ref.tolist()
    after = [gen.bit_generator.random_raw(4).tolist() for gen in gens]
    assert after[0] == after[1]
    values = np.asarray(core, dtype=object) - mu
    assert len(set(values.tolist())) > (1 if param > 1 else 0)
    runs = []
    for fill_ in (_core.fill, reference.fill):
        src = bitgen(8)
        out = np.empty(n, dtype=out_dtype)
        used = fill(kind, fill_, param, mu, src, out)
        runs.append((used, out.tolist(), src.random_raw(2).tolist()))
    assert runs[0] == runs[1]
    return runs[0][0]


def fixed_point_runs_agree(kind, param, n: int) -> None:
    """The core's fill by inversion, n samples into int64 from PCG64(3), on the fixed-point
    words and on the Python words: the same values, bits used and generator state."""
    runs = []
    for fixed_point in (True, False):
        out = np.empty(n, dtype=np.int64)
        src = np.random.PCG64(3)
        used = fill(kind, _core.fill, param, 0, src, out, fixed_point=fixed_point)
        runs.append((out.tolist(), used, src.random_raw()))
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------------------------
# Enumerations of tapes (dgauss.testing.enumerate_bits), checked against a model
# --------------------------------------------------------------------------------------------


def tape_bits(tape: Tape) -> str:
    """The bits of a Tape (what enumerate_bits hands a draw) as a string."""
    n = tape.words.size
    value = 0
    for w in tape.words.tolist():
        value = value << 64 | w
    return format(value >> (64 * n - tape.nbits), f"0{tape.nbits}b") if tape.nbits else ""


def checked_draw(kind, fill_, param, model: TapeModel, head: str = "", move=None, every=1):
    """A draw for enumerate_bits: one draw of ``fill_`` (the core's or the oracle's) by
    inversion on the tape ``head`` + the enumerated bits, checked equal to the model's
    prediction (value, bits used, tape words; or running out: Exhausted for the enumerator)
    on every ``every``-th run and on every running out; ``move``: a planted bug, the value v
    returned as move(v)."""
    runs = [0]

    def draw(tape):
        bits_ = head + tape_bits(tape)
        got = run(kind, fill_, param, bits_, 1)
        runs[0] += 1
        if runs[0] % every == 0 or got[0] == "exhausted":
            want = model.expect(bits_, 1)
            if want == "exhausted":
                assert got[0] == "exhausted", (bits_, got)
            else:
                assert got == want, (bits_, got, want)
        if got[0] == "exhausted":
            raise Exhausted()
        return got[0][0] if move is None else move(got[0][0])

    return draw


def window_violations(masses: dict, e) -> list:
    """For an enumeration ``e`` of the tapes inside a window of R: the values whose enumerated
    (conditional) bounds miss ``masses`` (|X| = y -> rigorous bounds on P[|X| = y | R in the
    window], split evenly between y and -y), or that the window cannot give (not in it)."""
    bad = [v for v in e.mass if abs(v) not in masses]
    for y, (lo, hi) in masses.items():
        for v in (y, -y) if y else (0,):
            share = 2 if y else 1
            e_lo, e_hi = e.bounds(v)
            if e_lo > hi / share or e_hi < lo / share:
                bad.append(v)
    return bad


def mass_violations(model, e, values=None) -> list:
    """For an enumeration ``e`` from R's first bit: the values v whose enumerated bounds miss
    the model's rigorous P[X = v] (``model.mass(|v|)``, halved for v != 0), among ``values``
    (by default every value up to past the largest seen)."""
    if values is None:
        top = max(abs(v) for v in e.mass) + 2
        values = [s * y for y in range(top) for s in ((1, -1) if y else (1,))]
    bad = []
    for v in values:
        lo, hi = model.mass(abs(v))
        if v:
            lo, hi = lo / 2, hi / 2
        e_lo, e_hi = e.bounds(v)
        if e_lo > hi or e_hi < lo:
            bad.append(v)
    return bad
