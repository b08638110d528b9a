"""Enveloped inversion: sigma2 in (2**24, 2**100], scale in (2**20, 2**40] (docs/contract.md,
item 9; dgauss._inversion.Envelope).

What is shown here, and how each test can fail:

1. *The law.*  The algorithm in Python (``dgauss._inversion.enveloped_attempt``, the core's
   step past bit 64) is run on every bit string up to a depth (an enumeration, small
   envelopes where it ends): each value's mass must not exceed its exact probability (mpmath,
   50 digits), and the paths cut at the depth must be the rest.
   A wrong acceptance exponent, a sign bias or a missing restart on -0 puts some value above
   its probability (``test_the_enumeration_has_power`` plants each).
2. *The tables.*  The core's block-index words (128-bit fixed point) equal the exact Python
   words and an independent mpmath evaluation of P[B >= b]; its J(b) table (closed-form
   breakpoints) equals ``Envelope.leading_ones`` per block, and each J(b) holds: the first J(b)
   digits of exp(-gamma(b, L - 1)) are 1 (mpmath).
3. *The bits.*  The core reads the oracle's bits: seeded generators across the range (random
   parameters too), object arrays, shifts; the two lanes' fused step against tapes of each
   lane's words and against the oracle, with the rare paths forced by chosen words: R's first
   J(b) bits all 1 (exp(-gamma)'s digits in fixed point), B undecided by R's first 64 bits
   (the step past bit 64 in Python), U = 0 with the sign 1 at b = 0 (the restart on -0).
"""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dgauss
from _fake_os import lane_words
from _parity import assert_same, both
from dgauss import _core, _inversion, reference
from dgauss._exact import exp_neg_floor
from dgauss._kinds import Kind
from dgauss._sources import ScriptedOS, Tape

GAUSS, LAP = int(Kind.DISCRETE_GAUSSIAN), int(Kind.DISCRETE_LAPLACE)

#: Edges, integers and not, and the issue's examples.
GAUSSIANS = [
    Fraction(2**24 + 1),
    Fraction(3 * 2**24 + 1, 3),
    Fraction(10**8),
    Fraction(10**12),
    Fraction(10**20),
    Fraction(3 * 2**90 + 1, 7),
    Fraction(2**100),
]
LAPLACES = [Fraction(2**20 + 1), Fraction(10**8, 3), Fraction(10**8), Fraction(2**40)]


def _random_params(seed: int, count: int, low: int, high: int) -> list[Fraction]:
    """Log-uniform in (2**low, 2**high], denominators up to 2**40."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        den = rng.randrange(1, 2**40)
        value = Fraction(int(2 ** rng.uniform(low, high) * den), den)
        out.append(min(Fraction(2**high), max(Fraction(2**low) + Fraction(1, den), value)))
    return out


RANDOM_GAUSSIANS = _random_params(35, 5, 24, 100)
RANDOM_LAPLACES = _random_params(36, 3, 20, 40)
#: (gaussian, parameter) for every parameter above.
EVERY = [(True, p) for p in GAUSSIANS + RANDOM_GAUSSIANS] + [
    (False, p) for p in LAPLACES + RANDOM_LAPLACES
]


def test_ranges_and_blocks():
    """B's parameter lies where the tables are sized for: sigma2 / L**2 in [2**14, 2**16),
    scale / L in [2**6, 2**7); out of range is a ValueError."""
    for sigma2 in GAUSSIANS + RANDOM_GAUSSIANS:
        env = _inversion.envelope(True, sigma2)
        assert env.inner == sigma2 / 4**env.k and 2**14 <= env.inner < 2**16
    for scale in LAPLACES + RANDOM_LAPLACES:
        env = _inversion.envelope(False, scale)
        assert env.inner == scale / 2**env.k and 2**6 <= env.inner < 2**7
    for gaussian, bad in [
        (True, Fraction(2**24)),
        (True, Fraction(2**100 + 1)),
        (False, Fraction(2**20)),
        (False, Fraction(2**40 + 1)),
    ]:
        with pytest.raises(ValueError):
            _inversion.Envelope(gaussian, bad)


# --------------------------------------------------------------------------------------------
# 1. The law, by enumerating bit strings
# --------------------------------------------------------------------------------------------


class _Need(Exception):
    pass


def _small_envelope(gaussian: bool, param: Fraction, k: int) -> _inversion.Envelope:
    """An Envelope of any parameter and block size (the algorithm is the same; the class only
    checks the production range)."""
    env = object.__new__(_inversion.Envelope)
    env.gaussian, env.param, env.k = gaussian, param, k
    env.inner = param / (4**k if gaussian else 2**k)
    return env


def _enumerate(env, depth: int, attempt=None):
    """Every outcome of one attempt (enveloped_attempt) on bit strings of at most ``depth``
    bits: masses by value (None: the draw starts again), and the mass of the strings that
    needed more bits."""
    attempt = attempt or _inversion.enveloped_attempt
    masses: dict[int | None, Fraction] = defaultdict(Fraction)
    cut = Fraction(0)
    stack: list[tuple[int, ...]] = [()]
    while stack:
        prefix = stack.pop()
        it = iter(prefix)

        def bit(it=it):
            for b in it:
                return b
            raise _Need

        try:
            x = attempt(bit, env)
        except _Need:
            if len(prefix) >= depth:
                cut += Fraction(1, 2 ** len(prefix))
            else:
                stack += [prefix + (0,), prefix + (1,)]
            continue
        if next(it, None) is not None:
            raise AssertionError(f"the attempt read fewer bits than {prefix} holds")
        masses[x] += Fraction(1, 2 ** len(prefix))
    return masses, cut


def _pmf(gaussian: bool, param: Fraction):
    """The exact law (mpmath, 50 digits): x -> P[X = x]."""
    mpmath.mp.dps = 50
    p = mpmath.mpf(param.numerator) / param.denominator
    if gaussian:
        z = 1 + 2 * mpmath.nsum(lambda j: mpmath.exp(-(j**2) / (2 * p)), [1, mpmath.inf])
        return lambda x: mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * p)) / z
    q = mpmath.exp(-1 / p)
    return lambda x: (1 - q) / (1 + q) * q ** abs(x)


def _violation(env, depth: int, attempt=None) -> tuple[float, Fraction]:
    """How far the enumerated attempt is from the law, and the cut mass.  An attempt gives x
    with A(x) in [A_f(x), A_f(x) + cut] (A_f: the enumerated mass) and accepts with c in
    [sum A_f, sum A_f + cut]; the draw gives A(x) / c, which must be P[x]: so
    A_f(x) <= P[x] (sum A_f + cut) and A_f(x) + cut >= P[x] sum A_f for every x (and the
    values never seen: P[x] sum A_f <= cut).  Returns the largest breach (<= 0 when exact)."""
    masses, cut = _enumerate(env, depth, attempt)
    pmf = _pmf(env.gaussian, env.param)
    found = {x: mpmath.mpf(m.numerator) / m.denominator for x, m in masses.items() if x is not None}
    total, c = sum(found.values()), mpmath.mpf(cut.numerator) / cut.denominator
    reach = max(abs(x) for x in found) + 5
    breach = max(
        max(found.get(x, 0) - pmf(x) * (total + c), pmf(x) * total - found.get(x, 0) - c)
        for x in range(-reach, reach + 1)
    )
    return float(breach), cut


SMALL = [
    (True, Fraction(8), 1),
    (True, Fraction(25, 2), 1),
    (True, Fraction(40), 2),
    (False, Fraction(3), 1),
    (False, Fraction(7, 2), 2),
]


@pytest.mark.parametrize("gaussian, param, k", SMALL, ids=str)
def test_the_enumerated_law_is_exact(gaussian, param, k):
    """Both bounds hold for every value, with at most 1/4000 of an attempt's mass cut."""
    breach, cut = _violation(_small_envelope(gaussian, param, k), depth=22)
    assert breach <= 1e-40
    assert cut < Fraction(1, 4000)


def _buggy_attempts():
    """enveloped_attempt with one planted bug each."""
    real = _inversion.enveloped_attempt

    def gamma_small(bit, env):
        class Small(_inversion.Envelope):
            __slots__ = ()

            def gamma(self, b, u):
                return super().gamma(b, u) * Fraction(9, 10)

        small = object.__new__(Small)
        small.gaussian, small.param, small.k, small.inner = (
            env.gaussian,
            env.param,
            env.k,
            env.inner,
        )
        return real(bit, small)

    def wrong_block(bit, env):
        class Next(_inversion.Envelope):
            __slots__ = ()

            def gamma(self, b, u):
                return super().gamma(b + 1, u)

        nxt = object.__new__(Next)
        nxt.gaussian, nxt.param, nxt.k, nxt.inner = env.gaussian, env.param, env.k, env.inner
        return real(bit, nxt)

    def keeps_minus_zero(bit, env):  # -0 kept as 0: 0 gets twice its share
        from dgauss._exact import bernoulli_exp_by_digits

        b = _inversion.invert(bit, env.stage_floors)
        u = 0
        for _ in range(env.k):
            u = 2 * u + bit()
        if not bernoulli_exp_by_digits(bit, env.gamma(b, u)):
            return None
        y = (b << env.k) + u
        return -y if bit() else y

    return {
        "gamma 10% small": gamma_small,
        "the next block's gamma": wrong_block,
        "no restart on -0": keeps_minus_zero,
    }


@pytest.mark.parametrize("name", list(_buggy_attempts()))
def test_the_enumeration_has_power(name):
    """Each planted bug breaches a bound by far more than the precision (the Laplace's
    gamma is the same in every block, so the block bug is the Gaussian's only)."""
    cases = [SMALL[0]] if name == "the next block's gamma" else [SMALL[0], SMALL[3]]
    for gaussian, param, k in cases:
        breach, _ = _violation(_small_envelope(gaussian, param, k), 16, _buggy_attempts()[name])
        assert breach > 1e-4, (gaussian, breach)


# --------------------------------------------------------------------------------------------
# 2. The tables
# --------------------------------------------------------------------------------------------


def _table(gaussian, param, fixed_point=True):
    make = _core.gauss_table if gaussian else _core.laplace_table
    return make(param.numerator, param.denominator, fixed_point)


def _mpmath_words(env, count: int) -> list[int]:
    """floor(2**64 P[B >= b]), b = 1 .. count + 1, from mpmath (60 digits)."""
    mpmath.mp.dps = 60
    inner = mpmath.mpf(env.inner.numerator) / env.inner.denominator
    if not env.gaussian:
        return [
            int(mpmath.floor(mpmath.ldexp(mpmath.exp(-b / inner), 64))) for b in range(1, count + 2)
        ]
    terms = [mpmath.exp(-(mpmath.mpf(b) ** 2) / (2 * inner)) for b in range(count + 200)]
    tails = [mpmath.mpf(0)] * (len(terms) + 1)
    for b in range(len(terms) - 1, -1, -1):
        tails[b] = tails[b + 1] + terms[b]
    return [int(mpmath.floor(mpmath.ldexp(tails[b] / tails[0], 64))) for b in range(1, count + 2)]


@pytest.mark.parametrize(
    "gaussian, param",
    [(True, p) for p in (GAUSSIANS[0], GAUSSIANS[1], GAUSSIANS[5], RANDOM_GAUSSIANS[0])]
    + [(False, p) for p in (LAPLACES[0], LAPLACES[1], RANDOM_LAPLACES[0])],
    ids=str,
)
def test_block_index_words_are_exact(gaussian, param):
    """Fixed-point words = exact Python words = mpmath's, with the first word past the table
    0 and its last word not (the rule needs every word >= 2**-64)."""
    table = _table(gaussian, param)
    assert table.fixed_point
    words = table.thr.tolist()
    assert words[0] == 2**64 - 1 and words[-1] == 0 and words[-2] > 0
    assert words == _table(gaussian, param, fixed_point=False).thr.tolist()
    env = _inversion.envelope(gaussian, param)
    assert _mpmath_words(env, table.count) == words[1:]


@pytest.mark.parametrize("gaussian, param", EVERY, ids=str)
def test_leading_ones_hold(gaussian, param):
    """The core's J(b) (closed-form breakpoints) = Envelope.leading_ones (per block), and J(b)
    holds: exp(-gamma(b, L - 1)), the block's smallest, has J(b) leading 1 digits (mpmath)."""
    table, env = _table(gaussian, param), _inversion.envelope(gaussian, param)
    assert table.ones.tolist() == [env.leading_ones(b) for b in range(table.count + 1)]
    if gaussian:
        blocks = sorted({0, 1, 2, 7, 100, table.count // 2, table.count})
    else:  # gamma = u / scale: the same in every block
        assert env.leading_ones(10**6) == env.leading_ones(0)
        blocks = [0, 10**6]
    mpmath.mp.dps = 80
    for b in blocks:
        j = env.leading_ones(b)
        assert j >= 1
        g = env.gamma(b, (1 << env.k) - 1)
        smallest = mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator)
        assert int(mpmath.floor(mpmath.ldexp(smallest, j))) == 2**j - 1, (b, j)
        # and J(b) is not far below the most it could claim
        assert int(mpmath.floor(mpmath.ldexp(smallest, j + 2))) != 2 ** (j + 2) - 1, (b, j)


# --------------------------------------------------------------------------------------------
# 3. The bits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gaussian, param", EVERY, ids=str)
@pytest.mark.long
def test_core_reads_the_oracles_bits(gaussian, param):
    """On seeded generators (three kinds): the same samples, bits and generator state."""
    kind = GAUSS if gaussian else LAP
    for bitgen, seed in [(np.random.PCG64, 1), (np.random.Philox, 2), (np.random.SFC64, 3)]:
        assert_same(both(kind, param, 600, bitgen=bitgen, seed=seed, method="inversion"))


def test_object_arrays_and_shifts():
    """Object arrays (a shift past int64) and int64 with a shift: the oracle's values."""
    for kind, param in [(GAUSS, GAUSSIANS[-1]), (LAP, LAPLACES[-1])]:
        for dtype, mu in [(object, 3 * 2**70 + 1), (np.int64, -(2**61) - 5)]:
            assert_same(both(kind, param, 300, mu, dtype, seed=9, method="inversion"))


def test_fixed_point_off_reads_the_same_bits():
    """Tables and digits all from Python/GMP (fixed_point=False): the same run."""
    for kind, param in [(GAUSS, GAUSSIANS[1]), (LAP, LAPLACES[1])]:
        runs = []
        for fixed_point in (True, False):
            gen = np.random.PCG64(4)
            out = np.empty(2000, dtype=np.int64)
            used = _core.fill(
                kind,
                param.numerator,
                param.denominator,
                0,
                gen,
                out,
                fixed_point=fixed_point,
                method="inversion",
            )
            runs.append((out.tolist(), used))
        assert runs[0] == runs[1]


def _sampler(gaussian):
    return dgauss.sample_gaussian if gaussian else dgauss.sample_laplace


def _lanes_match_oracle(gaussian, param, n, prefixes=((), ())):
    """The fused step on two scripted lanes = the oracle on a tape of each lane's words."""
    got = _sampler(gaussian)(
        param, n, rng=ScriptedOS(fake=True, prefix=prefixes), method="inversion"
    )
    oracle = reference.sample_gaussian if gaussian else reference.sample_laplace
    for lane in (0, 1):
        tape = Tape.from_words(lane_words(lane, 2 * n + 16, prefixes[lane]))
        want = oracle(param, (n + 1 - lane) // 2, rng=tape, method="inversion")
        assert got[lane::2].tolist() == want.tolist(), lane
    return got


def _bits_to_words(bits: str, fill_from: int) -> tuple[int, ...]:
    """``bits`` then SplitMix64 words' bits, as 64-bit words (enough for a few samples)."""
    rng = random.Random(fill_from)
    bits += "".join(rng.choice("01") for _ in range(64 * 6 - len(bits) % 64))
    return tuple(int(bits[i : i + 64], 2) for i in range(0, len(bits) - 63, 64))


def _lead(env) -> str:
    """A lane's first sample, whole: B = 1 in its usual bits, U = 1, R''s first digit 0
    (accepted: exp(-gamma)'s first digit is 1) and the sign 0.  A lane draws its first sample
    step by step (its buffer is still empty); bits planted after these are the next sample's,
    which the lane loop's fused step draws (or hands to dg_env_attempts)."""
    return _bits_deciding(env, 1) + format(1, f"0{env.k}b") + "00"


def _planted_match_oracle(gaussian, param, n, prefixes: list[str], seed: int) -> None:
    """The oracle agrees with the lanes on each of ``prefixes``, planted twice: at the lanes'
    first samples (prefix i in lane 0, prefix -1 - i in lane 1: the step-by-step draw), and
    after _lead in lane i % 2, the other lane _lead and random bits (the fused step, whose
    pair of draws goes one by one when either lane's cannot be taken)."""
    env = _inversion.envelope(gaussian, param)
    lead = _lead(env)
    for i, bits in enumerate(prefixes):
        first = _bits_to_words(bits, fill_from=seed + i)
        second = _bits_to_words(prefixes[-1 - i], fill_from=seed + 500 + i)
        _lanes_match_oracle(gaussian, param, n, (first, second))
        fused = _bits_to_words(lead + bits, fill_from=seed + 1000 + i)
        other = _bits_to_words(lead, fill_from=seed + 1500 + i)
        _lanes_match_oracle(gaussian, param, n, (fused, other) if i % 2 == 0 else (other, fused))


def _threshold(env, x: int) -> int:
    """The rule's threshold x >= 1 as a 128-bit word: R between thresholds b + 1 and b
    (2**128 for b = 0) gives B = b."""
    floors = env.stage_floors(128)
    return floors.words[x - 1] if hasattr(floors, "ascending") else floors.word(x)


def _deciding_length(env, bits: str) -> int | None:
    """How many of R's first bits, ``bits``, the rule reads to decide B (None: more)."""
    for j in range(1, len(bits) + 1):
        it = iter(bits[:j])
        try:
            _inversion.invert(lambda it=it: int(next(it)), env.stage_floors)
        except StopIteration:
            continue
        return j
    return None


def _bits_deciding(env, b: int) -> str:
    """R's first bits by which the rule decides B = b (R midway between its thresholds)."""
    above = 1 << 128 if b == 0 else _threshold(env, b)
    mid = format((above + _threshold(env, b + 1)) // 2, "0128b")
    j = _deciding_length(env, mid)
    assert j is not None, "not decided in 128 bits"
    assert _inversion.invert(iter(map(int, mid)).__next__, env.stage_floors) == b
    return mid[:j]


@pytest.mark.parametrize(
    "gaussian, param",
    [(True, GAUSSIANS[2]), (True, GAUSSIANS[-1]), (False, LAPLACES[1]), (False, LAPLACES[-1])],
    ids=str,
)
def test_lanes_take_the_oracles_bits_on_forced_paths(gaussian, param):
    """Chosen bits at a lane's first sample and again at its second (the fused step's): B
    decided in its usual bits, U != 0, then R' with its first J(b) + extra bits 1 (the digits
    of exp(-gamma) needed, in fixed point when dg_env_attempts takes the draw; accepted or
    rejected by the next bits); R' equal to exp(-gamma)'s digits until U and R' to the first
    digit that differs take 62 to 65 bits (dg_env_attempts decides within the 64 bits after
    B's, or hands the draw on); B = 0, U = 0 and the sign 1 (a restart on -0); R's 64 bits
    equal to a block-index word (undecided in R's bits)."""
    env = _inversion.envelope(gaussian, param)
    table = _table(gaussian, param)
    rng = random.Random(11)
    prefixes = []
    for _ in range(24):
        b = rng.choice([0, 1, 3, 40, 200])
        u = format(rng.randrange(1, 1 << env.k), f"0{env.k}b")
        ones = "1" * (env.leading_ones(b) + rng.randrange(0, 3))
        prefixes.append(_bits_deciding(env, b) + u + ones)
    for taken, accept in [(t, a) for t in (62, 63, 64, 65) for a in (True, False)]:
        # U (its first bit 1), R''s first f digits exp(-gamma)'s, then the other digit (0:
        # accepted) and the sign 0: U and R' take k + f + 1 bits, decided in the 64 bits after
        # B's (dg_env_attempts) or not (the draw handed on)
        f = taken - env.k - 1
        while True:
            b, u = rng.choice([1, 3, 40]), rng.randrange(1 << (env.k - 1), 1 << env.k)
            digits = format(exp_neg_floor(env.gamma(b, u), f + 1), f"0{f + 1}b")
            if digits[f] == ("1" if accept else "0"):
                break
        off = "0" if accept else "1"
        prefixes.append(_bits_deciding(env, b) + format(u, f"0{env.k}b") + digits[:f] + off + "0")
    restart = _bits_deciding(env, 0) + "0" * env.k + "1"
    prefixes += [restart, restart + _bits_deciding(env, 0) + "0" * env.k + "1"]
    prefixes += [format(int(table.thr[3]), "064b"), format(int(table.thr[table.count]), "064b")]
    _planted_match_oracle(gaussian, param, 9, prefixes, seed=0)


def _bits_next_to(env, x: int, m: int) -> str | None:
    """R's first m bits: threshold x's first m - 1 digits, then the other digit, when the rule
    decides B with exactly those m bits (None when it needs fewer or more)."""
    digits = format(_threshold(env, x), "0128b")
    bits = digits[: m - 1] + ("1" if digits[m - 1] == "0" else "0")
    return bits if _deciding_length(env, bits) == m else None


def test_draws_at_the_end_of_rs_word_read_the_oracles_bits():
    """At large k (σ² = 2**100: k = 43; Laplace 2**40: k = 34) B's bits, U, R''s first 0 and
    the sign fill about R's 64 bits: a lane's first sample, and again its second (the fused
    step's), starts with B decided in m bits (R next to a threshold), U, f < J(b) ones and a 0
    (U = 0: no acceptance bits, f = 0), so that the draw's bits, m + k + f + 2 (U = 0: one
    fewer), end inside R's word, on its last bit or past it (then the fused step reads them
    from the 64 bits after B's); the oracle on each lane's words agrees."""
    rng = random.Random(17)
    for gaussian, param in [(True, GAUSSIANS[-1]), (False, LAPLACES[-1])]:
        env = _inversion.envelope(gaussian, param)
        prefixes, totals = [], set()
        for total in range(60, 69):
            for x in (1, 2, 3, 7, 30, 100):  # R next to threshold x
                u_zero = x in (3, 100)
                f = 0 if u_zero else rng.randrange(env.leading_ones(1))
                m = total - env.k - f - 2
                bits = _bits_next_to(env, x, m) if m >= 1 else None
                if bits is None:
                    continue
                b = _inversion.invert(iter(map(int, bits)).__next__, env.stage_floors)
                if f >= env.leading_ones(b):
                    continue
                u = 0 if u_zero else rng.randrange(1, 1 << env.k)
                prefixes.append(bits + format(u, f"0{env.k}b") + ("" if u_zero else "1" * f + "0"))
                totals.add(total)
        assert {63, 64, 65, 66} <= totals, totals  # the last bit of R's word and either side
        _planted_match_oracle(gaussian, param, 7, prefixes, seed=0)


@pytest.mark.parametrize(
    "gaussian, param", [(True, GAUSSIANS[0]), (True, GAUSSIANS[-1]), (False, LAPLACES[-1])], ids=str
)
def test_a_block_past_the_table_reads_the_oracles_bits(gaussian, param):
    """R below 2**-128 (zero words, at a lane's first sample and its second): the first
    attempt's block is past the table's last (the rule on the lane's bits says so), where the
    core has no J(b) and compares exp(-gamma)'s digits from the first (the same bits as with
    J(b), only a shortcut of that comparison); the oracle on each lane's words agrees."""
    table, env = _table(gaussian, param), _inversion.envelope(gaussian, param)
    zeros = ["0" * 128, "0" * 192]
    _planted_match_oracle(gaussian, param, 5, zeros, seed=0)
    for seed, prefix in enumerate(zeros):  # past the table whatever bits follow the zeros
        words = _bits_to_words(prefix, fill_from=seed)
        bits = (w >> (63 - i) & 1 for w in words for i in range(64))
        assert _inversion.invert(bits.__next__, env.stage_floors) > table.count


@pytest.mark.parametrize(
    "gaussian, param",
    [(True, p) for p in GAUSSIANS[::2]] + [(False, p) for p in LAPLACES[::2]],
    ids=str,
)
@pytest.mark.long
def test_lanes_agree_with_the_oracle_over_refills(gaussian, param):
    """5,001 samples: many refills of both lanes' buffers and hand-backs of the rare draws."""
    _lanes_match_oracle(gaussian, param, 5001)


def test_one_lane_and_a_slow_source_agree():
    """lanes=1 and a tape (the step-by-step draw) give the lane's samples."""
    for gaussian, param in [(True, GAUSSIANS[4]), (False, LAPLACES[2])]:
        got = _sampler(gaussian)(
            param, 3001, rng=ScriptedOS(fake=True, lanes=1), method="inversion"
        )
        want = _sampler(gaussian)(
            param, 3001, rng=Tape.from_words(lane_words(0, 8000)), method="inversion"
        )
        assert got.tolist() == want.tolist()


def test_auto_draws_by_inversion_across_the_range():
    """ "auto" is inversion here (a batch of 10**4, any parameter of the range, numerator and
    denominator of any size): the same samples as method="inversion"."""
    for sampler, param in [
        (dgauss.sample_gaussian, GAUSSIANS[-1]),
        (dgauss.sample_gaussian, Fraction(2**200 + 1, 2**110)),
        (dgauss.sample_laplace, LAPLACES[-1]),
    ]:
        auto = sampler(param, 10**4, rng=np.random.PCG64(8))
        inv = sampler(param, 10**4, rng=np.random.PCG64(8), method="inversion")
        assert auto.tolist() == inv.tolist()
