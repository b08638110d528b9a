"""Bernoulli(exp(-g)) by the binary digits of exp(-g): the digits, their table, and the fallbacks.

The core compares random bits with floor(2**64 exp(-g)) a word at a time and
computes later digits with GMP; Algorithm 2's table of exp(-u/t) comes from
128-bit fixed point with a GMP fallback.  The oracle computes every digit from
exact rational bounds.  These tests check the words against the oracle and
force each fallback.
"""

import functools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _core, _driver, reference
from dgauss._kinds import Kind
from dgauss.testing import Tape


def test_oracle_exp_digits_against_mpfr():
    """The oracle's floor(2**k exp(-gamma)) (an integer Taylor series with a proven bound)
    against MPFR with directed rounding, an independent computation: gamma rounded up and
    exp rounded down bound the value from below, the reverse from above."""
    import gmpy2

    rng = random.Random(17)
    cases = [(Fraction(1), 64), (Fraction(1, 2**300), 64), (Fraction(2**64 - 1, 2**64), 128)]
    for _ in range(400):
        d = rng.randrange(1, 2 ** rng.choice([2, 20, 64, 130, 600]))
        cases.append((Fraction(rng.randrange(0, 3 * d), d), rng.choice([1, 64, 65, 128, 300])))
    # gamma = -ln(w/2**64) to 300 bits: 2**64 exp(-gamma) within 2**-230 of the integer w,
    # so the series must refine its guard bits before it may answer
    with gmpy2.context(precision=500):
        for _ in range(60):
            w = rng.randrange(2**64 * 37 // 100, 2**64 - 1)
            x = gmpy2.floor(-gmpy2.log(gmpy2.mpfr(w) / 2**64) * 2**300) + rng.randrange(2)
            cases.append((Fraction(int(x), 2**300), 64))
    checked = 0
    for gamma, k in cases:
        bounds = []
        for up in (True, False):  # lower bound: gamma up, exp down
            with gmpy2.context(precision=k + 400, round=gmpy2.RoundUp if up else gmpy2.RoundDown):
                g = gmpy2.mpfr(gamma.numerator) / gamma.denominator
            with gmpy2.context(precision=k + 400, round=gmpy2.RoundDown if up else gmpy2.RoundUp):
                bounds.append(int(gmpy2.floor(gmpy2.exp(-g) * 2**k)))
        if bounds[0] == bounds[1]:
            checked += 1
            assert reference.exp_neg_floor(gamma, k) == bounds[0], (gamma, k)
    assert checked > 0.95 * len(cases)


@pytest.mark.parametrize("k", [1, 2, 63, 64, 65, 128, 200, 1000])
def test_exp_neg_floor_matches_oracle(k):
    rng = random.Random(k)
    cases = [(0, 1), (1, 1), (1, 2), (2, 3), (4095, 4096), (1, 4096), (2**63 - 1, 2**63)]
    cases += [(rng.randrange(1, d + 1), d) for d in (rng.randrange(1, 2**63) for _ in range(20))]
    for n, d in cases:
        assert _core.exp_neg_floor(n, d, k) == reference.exp_neg_floor(Fraction(n, d), k), (n, d)


def test_exp_m1_constant_is_the_first_word_of_1_over_e():
    """Every Bernoulli(exp(-1)) compares with the constant DG_EXP_M1_PREFIX (dg_exp.h)."""
    assert (
        _core.EXP_M1_PREFIX
        == reference.exp_neg_floor(Fraction(1), 64)
        == _core.exp_neg_floor(1, 1, 64)
    )


def test_exp_neg_floor_is_the_floor():
    """Independent of both implementations: 2**k exp(-1) lies in [f, f + 1) (e from its series)."""
    k = 300
    f = _core.exp_neg_floor(1, 1, k)
    # 1/e between partial sums of sum (-1)^j / j!, far tighter than 2**-300
    lo = sum(Fraction((-1) ** j, math.factorial(j)) for j in range(101))
    hi = lo + Fraction(1, math.factorial(101))
    assert f <= lo * 2**k and hi * 2**k < f + 1


def test_table_words_match_oracle(fixed_point):
    """floor(2**64 exp(-H 2**r/t)) for every H below 80 blocks and samples above, r = 0 up to
    t = 4096 (the table of exp(-U/t)) and past it, on words and on GMP."""
    rng = random.Random(7)
    ts = (
        list(range(9, 80))
        + [1000, 1001, 4095, 4096, 4097, 10**6 + 1, 2**63 + 1, 10**50 + 1]
        + rng.sample(range(80, 4096), 6)
    )
    for t in ts:
        r = reference.split_bits(t)
        blocks = ((t - 1) >> r) + 1
        hs = (
            list(range(1, blocks))
            if blocks < 80
            else sorted(rng.sample(range(1, blocks), 60)) + [blocks - 1]
        )
        want = [reference.exp_neg_floor(Fraction(h << r, t), 64) for h in hs]
        assert _core.exp_table(t, hs, fixed_point) == want, t


def test_forced_table_fallback_gives_the_same_samples():
    """Every table word from GMP instead of fixed point: the same samples, the same bits."""
    runs = []
    for fixed_point in (True, False):
        fill = functools.partial(_core.fill, fixed_point=fixed_point)
        gen = np.random.default_rng(5)
        runs.append(_driver.sample(fill, Kind.DISCRETE_GAUSSIAN, 1000, 3000, 0, gen, None).tolist())
    assert runs[0] == runs[1]
    assert runs[0] == reference.sample_gaussian(1000, 3000, rng=np.random.default_rng(5)).tolist()


def _digits(gamma, count):
    """The first `count` binary digits of exp(-gamma), as a bit string."""
    k = count
    return format(reference.exp_neg_floor(Fraction(gamma), k), f"0{k}b")[-k:]


@pytest.mark.parametrize("match", [0, 5, 63, 64, 65, 127, 128, 130, 300])
def test_digits_past_the_first_word(match):
    """A tape that agrees with 1/e for `match` digits, then differs: the answer is that
    digit, read after exactly match + 1 bits, by core and oracle alike (match >= 64 runs
    the GMP digits)."""
    digits = _digits(1, match + 1)
    next_digit = digits[match]
    tape_bits = digits[:match] + ("1" if next_digit == "0" else "0")
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=np.bool_)
        used = fill(Kind.BERNOULLI_EXP, 1, 1, 0, Tape(tape_bits + "1" * 64), out)
        assert bool(out[0]) == (next_digit == "1")
        assert used == match + 1


@pytest.mark.parametrize("t,u", [(9, 5), (4096, 4095)])
def test_laplace_table_digits_past_the_first_word(t, u):
    """Algorithm 2 with U = u, then 70 bits agreeing with exp(-u/t): D is decided by bit 71,
    as that digit says (D = 1: V = 0, sign +, Y = u; D = 0: restart with U = 0, Y = 0)."""
    k = (t - 1).bit_length()
    digits = _digits(Fraction(u, t), 71)
    accept = digits[70] == "1"
    rest = "1" + "0" if accept else "0" * k + "1" + "0"  # V = 0 (1/e starts 0.01), sign +
    tape = format(u, f"0{k}b") + digits[:70] + ("0" if accept else "1") + rest
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=object)
        assert fill(Kind.DISCRETE_LAPLACE, t, 1, 0, Tape(tape), out) == len(tape)
        assert out[0] == (u if accept else 0)


@pytest.mark.parametrize("scale", [4095, 4096, 4097], ids=str)
def test_laplace_parity_at_the_table_limit(scale):
    """t = 4096 tabulates exp(-U/t), t = 4097 splits U (r = 1): core and oracle agree on both."""
    for seed in range(2):
        a = dgauss.sample_laplace(scale, 400, rng=np.random.default_rng(seed))
        b = reference.sample_laplace(scale, 400, rng=np.random.default_rng(seed))
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("sigma2", [4095**2, 4096**2 - 1, 4096**2], ids=str)
def test_gaussian_parity_at_the_table_limit(sigma2):
    """t = floor(sigma) + 1 = 4096 (r = 0) and 4097 (r = 1)."""
    a = dgauss.sample_gaussian(sigma2, 300, rng=np.random.default_rng(3))
    b = reference.sample_gaussian(sigma2, 300, rng=np.random.default_rng(3))
    assert a.tolist() == b.tolist()


def _rational_digits(p: Fraction, count: int) -> str:
    return format(p.numerator * 2**count // p.denominator, f"0{count}b")[-count:]


@pytest.mark.parametrize(
    "gamma",
    [
        Fraction(1, 3),
        Fraction(5, 7),
        Fraction(2**62, 2**62 + 1),
        Fraction(3, 2**40),
        Fraction(1, 2**62),
    ],
    ids=str,
)
@pytest.mark.parametrize("match", [0, 5, 63, 64, 65, 130])
def test_word_bernoulli_past_the_first_word(gamma, match):
    """Algorithm 1's first draw is Bernoulli(gamma): a tape agreeing with gamma's digits for
    `match` digits, then differing.  The word primitive takes 64 digits per division, so
    this crosses its word boundary (and the end of 3/2**40's expansion); core and oracle
    must read the same bits and agree."""
    digits = _rational_digits(gamma, match + 1)
    tape = digits[:match] + ("1" if digits[match] == "0" else "0")
    tail = format(int(np.random.default_rng(match).integers(0, 2**63)), "064b") * 4
    results = []
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=np.bool_)
        used = fill(
            Kind.BERNOULLI_EXP, gamma.numerator, gamma.denominator, 0, Tape(tape + tail), out
        )
        results.append((bool(out[0]), used))
    assert results[0] == results[1]


def _primitive_digits(n: int, d: int, count: int) -> str:
    return format(n * 2**count // d, f"0{count}b")[-count:]


@pytest.mark.parametrize(
    "n,d",
    [
        (3**80 + 2**70, 3**81),  # odd d of two limbs: the expansion never ends
        (2**100 - 3, 2**101 + 6),  # even d: v = 1, no multiple of 2**63 near Q
        (7 * 3**50, 32 * 3**50),  # 7/32 unreduced, d of two limbs: ends at digit 5
        (5 * 3**90, 8 * 3**90),  # 5/8 unreduced: ends at digit 3
        (3**80 + 1, 2 * 3**80),  # 1/2 + 1/d: Q's candidates straddle 2**63, L = 0
        (2**64 + 1, 2**129),  # d's low limb is 0: the walk decides alone
        (1, 3**100),  # Q = 0: p < 2**-64
        (3**60, 3**60 * 2**40 + 3**60),  # 1/(2**40 + 1) unreduced
    ],
    ids=["odd-d", "even-d", "ends-5", "ends-3", "L=0", "low-limb-0", "Q=0", "unreduced"],
)
@pytest.mark.parametrize("match", [0, 1, 3, 5, 40, 60, 61, 62, 63, 64, 65, 130])
def test_gmp_bernoulli_first_digits_from_the_top_words(n, d, match):
    """Bernoulli(n/d) on GMP integers takes its first digits from the top 64 bits of n and d
    (one division) and falls back to the digit walk on a tie, when the expansion may end
    within 64 digits, or when the estimate cannot tell: tapes agreeing with n/d for `match`
    digits, then differing (or ending, for a terminating expansion), must give the walk's
    value and bits used, on n/d unreduced, as Algorithm 1 passes them."""
    digits = _primitive_digits(n, d, match + 1)
    tape = digits[:match] + ("1" if digits[match] == "0" else "0")
    tail = format(int(np.random.default_rng(match).integers(0, 2**63)), "064b") * 4
    results = []
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=np.bool_)
        used = fill(Kind.BERNOULLI, n, d, 0, Tape(tape + tail), out)
        results.append((bool(out[0]), used))
    assert results[0] == results[1]
    # the bits read depend only on n/d: the reduced ratio reads the same
    f = Fraction(n, d)
    out = np.empty(1, dtype=np.bool_)
    used = _core.fill(Kind.BERNOULLI, f.numerator, f.denominator, 0, Tape(tape + tail), out)
    assert (bool(out[0]), used) == results[0]  # out read after the fill, not before


def test_gmp_bernoulli_stops_where_an_unreduced_expansion_ends():
    """7 3**50 / (32 3**50) = 7/32 = 0.00111: bits equal to its digits are read up to the last
    1 and no further, although d has two limbs (the top-word estimate must not run)."""
    n, d = 7 * 3**50, 32 * 3**50
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=np.bool_)
        assert fill(Kind.BERNOULLI, n, d, 0, Tape("00111"), out) == 5 and not out[0]
        assert fill(Kind.BERNOULLI, n, d, 0, Tape("0010"), out) == 4 and out[0]


def test_gmp_bernoulli_agrees_on_random_tapes():
    """Random multi-limb n/d (odd and even d, 2-5 limbs) on random tapes, and unreduced
    ending expansions P D / (2**J D) on tapes that follow their J digits to the end (the
    top-word digits provably stop before digit J): same value, same bits."""
    rng = random.Random(11)
    for i in range(600):
        tape = "".join(rng.choice("01") for _ in range(256))
        if i % 3:
            d = rng.randrange(2**64, 2 ** rng.choice([65, 100, 128, 129, 200, 320]))
            d <<= rng.choice([0, 0, 1, 7, 63])
            n = rng.randrange(1, d)
        else:
            odd = rng.randrange(2**64, 2**200) | 1
            j = rng.randrange(1, 65)
            n, d = (rng.randrange(0, 2 ** (j - 1)) * 2 + 1) * odd, odd << j
            tape = _primitive_digits(n, d, j) + tape
        out_c = np.empty(1, dtype=np.bool_)
        out_o = np.empty(1, dtype=np.bool_)
        used_c = _core.fill(Kind.BERNOULLI, n, d, 0, Tape(tape), out_c)
        used_o = reference.fill(Kind.BERNOULLI, n, d, 0, Tape(tape), out_o)
        assert (bool(out_c[0]), used_c) == (bool(out_o[0]), used_o), (n, d)


# --- the first 64 digits of exp(-x) for any x in (0, 1): 128-bit fixed point, GMP fallback ---


def test_fixed_point_prefix_holds_on_its_whole_interval():
    """exp_neg_prefix_fix(X) claims floor(2**64 exp(-x)) for every x in [X, X + 1) / 2**128:
    check both ends against the oracle's exact digits, for X of every size."""
    rng = random.Random(3)
    declined = []
    for i in range(1500):
        x_fix = rng.randrange(1, 2**128) if i % 2 else rng.randrange(1, 2 ** rng.randrange(1, 129))
        w = _core.exp_neg_prefix_fix(x_fix)
        if w is None:
            declined.append(x_fix)
            continue
        assert w == reference.exp_neg_floor(Fraction(x_fix, 2**128), 64), x_fix
        assert w == reference.exp_neg_floor(Fraction(x_fix + 1, 2**128), 64), x_fix
    # it declines only for tiny x (exp(-x) within 11 units of 1) or, with
    # probability about 2**-56, next to a word boundary: never here
    assert declined and max(declined) < 256


@pytest.mark.parametrize("slack", [1, 2, 2**10, 2**40, 2**63], ids=str)
def test_fixed_point_prefix_holds_with_slack(slack):
    """With slack s the claim covers every x in [X, X + s) / 2**128: check both ends, for X
    random and X built from the table's byte boundaries (bytes 0 and 255 at each of the
    four table levels, the 96-bit series part 0, 1 and all ones)."""
    rng = random.Random(slack)
    edges = []
    for level in range(4):
        for byte in (0, 1, 254, 255):
            for r in (0, 1, 2**96 - 1, rng.randrange(2**96)):
                x = rng.randrange(2**128) & ~(0xFF << (120 - 8 * level)) & ~(2**96 - 1)
                edges.append(x | (byte << (120 - 8 * level)) | r)
    cases = edges + [rng.randrange(1, 2**128) for _ in range(300)] + [2**128 - 1, 2**127]
    decided = 0
    for x_fix in cases:
        w = _core.exp_neg_prefix_fix(x_fix, slack)
        if w is None:
            continue
        decided += 1
        last = Fraction((x_fix + slack) * 2**64 - 1, 2**192)  # just below X + s
        assert w == reference.exp_neg_floor(Fraction(x_fix, 2**128), 64), x_fix
        assert w == reference.exp_neg_floor(last, 64), x_fix
    assert decided > 0.9 * len(cases) * (1 - slack / 2**64)  # it declines only where it must


def test_fixed_point_declines_next_to_a_word_boundary():
    """x = -ln(w / 2**64) puts 2**128 exp(-x) within a unit of the multiple w 2**64: the proven
    interval (-1 to +11 units) straddles it, so the fixed point must decline and GMP decide."""
    import gmpy2

    ctx = gmpy2.get_context()
    ctx.precision = 400
    rng = random.Random(4)
    for _ in range(40):
        w = rng.randrange(2**64 * 37 // 100, 2**64 - 1)  # exp(-x) > 1/e: 0 < x < 1
        x_fix = int(gmpy2.floor(-gmpy2.log(gmpy2.mpfr(w) / 2**64) * 2**128))
        assert _core.exp_neg_prefix_fix(x_fix) is None, w
        want = reference.exp_neg_floor(Fraction(x_fix, 2**128), 64)
        assert want in (w - 1, w)
        assert _core.exp_neg_prefix(x_fix, 2**128) == want


def test_exp_neg_prefix_matches_oracle(fixed_point):
    """Words (d < 2**64, two divisions) and GMP integers (d >= 2**64) alike."""
    rng = random.Random(5)
    cases = [
        (1, 3),
        (1, 2**64 - 1),
        (2**64 - 2, 2**64 - 1),
        (2**63 - 1, 2**63),
        (1, 8),
        (7, 8),
        (10**30, 10**30 + 7),
        (3, 10**40),
        (2**200 - 1, 2**200),
    ]
    for bits in (3, 20, 40, 63, 64, 65, 100, 300):
        d = rng.randrange(2, 2**bits)
        cases.append((rng.randrange(1, d), d))
    for n, d in cases:
        want = reference.exp_neg_floor(Fraction(n, d), 64)
        assert _core.exp_neg_prefix(n, d, fixed_point) == want, (n, d)


# --- Algorithm 3's acceptance by digits (t <= EXP_TABLE_MAX) ---

GAUSSIAN_CASES = [
    1,
    2,
    10,
    Fraction(1, 3),
    Fraction(314159265358979, 10**14),  # 2 n d t^2 > 2**63: the acceptance's numbers on GMP
    Fraction(1, 10**30),  # t = 1 and floor(gamma) >= 2**64 once |Y| >= 1
    4096**2 - 1,  # t = 4096, the last tabulated
]


@pytest.mark.parametrize("sigma2", GAUSSIAN_CASES, ids=str)
def test_gaussian_acceptance_parity(sigma2, fixed_point):
    """Core and oracle, the same generator: the same samples, with every digit word from
    fixed point or (forced) from GMP."""
    fill = functools.partial(_core.fill, fixed_point=fixed_point)
    gen = np.random.default_rng(8)
    a = _driver.sample(fill, Kind.DISCRETE_GAUSSIAN, sigma2, 400, 0, gen, object)
    b = reference.sample_gaussian(sigma2, 400, rng=np.random.default_rng(8), dtype=object)
    assert a.tolist() == b.tolist()


def _tape_for_x(t: int, x: int) -> str:
    """Bits for one pass of Algorithm 2 at t <= INVERSION_MAX giving X = x, sign +: the digits of
    a word R halfway between the thresholds exp(-(x+1)/t) < R < exp(-x/t), cut where inversion
    stops reading, then '0' for the sign."""
    assert t <= reference.INVERSION_MAX
    r = (
        reference.exp_neg_floor(Fraction(x, t), 64)
        + reference.exp_neg_floor(Fraction(x + 1, t), 64)
    ) // 2
    stream = reference.BitStream(iter([r]).__next__)
    assert reference.geometric_by_inversion(stream, t) == x
    return format(r, "064b")[: stream.bits_used] + "0"


@pytest.mark.parametrize("x", [0, 1, 15, 16, 40], ids=lambda x: f"X={x}")
def test_gaussian_acceptance_uncached_and_cached(x):
    """sigma^2 = 2: t = 2, |Y| = X, cached while |Y| < 8t = 16.  Large X forces the uncached
    path; the rest of the tape is random.  Core and oracle read the same bits."""
    tape = _tape_for_x(2, x)
    tail = "".join(
        format(int(w), "064b")
        for w in np.random.default_rng(x).integers(0, 2**63, size=40, dtype=np.uint64)
    )
    results = []
    for fill in (_core.fill, reference.fill):
        out = np.empty(3, dtype=object)
        used = fill(Kind.DISCRETE_GAUSSIAN, 2, 1, 0, Tape(tape + tail), out)
        results.append((out.tolist(), used))
    assert results[0] == results[1]
    # The tape alone is one Laplace draw of exactly x, in the core as in the oracle.
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=object)
        assert fill(Kind.DISCRETE_LAPLACE, 2, 1, 0, Tape(tape), out) == len(tape) and out[0] == x


@pytest.mark.parametrize("match", [0, 5, 63, 64, 65, 130])
def test_gaussian_acceptance_digits_past_the_first_word(match):
    """sigma^2 = 10 (t = 4), Y = 0: gamma = (10/4)^2/20 = 5/16.  The tape agrees with the digits
    of exp(-5/16) for `match` digits, then differs: accepted (Y = 0) or rejected exactly as that
    digit says, after exactly the same bits in core and oracle (match >= 64: GMP digits)."""
    gamma = Fraction(5, 16)
    digits = _digits(gamma, match + 1)
    tape = _tape_for_x(4, 0) + digits[:match] + ("1" if digits[match] == "0" else "0")
    tail = format(int(np.random.default_rng(match).integers(0, 2**63)), "064b") * 8
    accept = digits[match] == "1"
    results = []
    for fill in (_core.fill, reference.fill):
        out = np.empty(1, dtype=object)
        used = fill(Kind.DISCRETE_GAUSSIAN, 10, 1, 0, Tape(tape + tail), out)
        results.append((out[0], used))
        if accept:
            assert out[0] == 0 and used == len(tape)
        else:
            assert used > len(tape)
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 3), Fraction(5, 2)]
)
def test_bernoulli_exp_by_digits_has_the_law(gamma):
    """dgauss._exact.bernoulli_exp_by_digits (shared by production and the oracle), run on
    every bit string of 14 bits, each of mass 2^-14: the strings that answer True hold
    exp(-gamma) (MPFR, directed) to within the mass of the strings left undecided, and that
    is small.  (A planted digit error, e.g. answering the complement, breaks it.)"""
    from dgauss._exact import bernoulli_exp_by_digits

    depth = 14
    true_count = undecided = 0
    for value in range(1 << depth):
        stream = iter([(value >> (depth - 1 - i)) & 1 for i in range(depth)])
        try:
            answer = bernoulli_exp_by_digits(stream.__next__, gamma)
        except StopIteration:
            undecided += 1
            continue
        true_count += answer
    import gmpy2

    bounds = []
    for up in (True, False):  # the lower bound: gamma rounded up, then exp(-gamma) down
        with gmpy2.context(precision=200, round=gmpy2.RoundUp if up else gmpy2.RoundDown):
            x = gmpy2.mpfr(gamma.numerator) / gamma.denominator
        with gmpy2.context(precision=200, round=gmpy2.RoundDown if up else gmpy2.RoundUp):
            bounds.append(Fraction(*gmpy2.exp(-x).as_integer_ratio()))
    low, high = bounds
    unit = Fraction(1, 1 << depth)
    assert undecided * unit < Fraction(1, 100)
    assert low - undecided * unit <= true_count * unit <= high + undecided * unit
