# The paper's three rejection loops, in order: Algorithm 1 Bernoulli(exp(-gamma)),
# Algorithm 2 the discrete Laplace, Algorithm 3 the discrete Gaussian (Canonne, Kamath &
# Steinke 2020, Section 5), over GMP with machine-word fast paths.  Included by _core.pyx
# (one compilation unit: the loops inline into the batch loops).  No floating point.
#
# The chain, named as in the paper (Section 5):
#
#     uniform(m), Bernoulli(n/d)          csrc/dg_prim.c  (bottom primitives)
#     Bernoulli(exp(-g)) by its digits    csrc/dg_exp.c   (g = 1, H 2**r/t, Algorithm 3's fraction)
#     bernoulli_exp    Bernoulli(exp(-g))  Algorithm 1
#     geometric_exp1   Geometric(1 - 1/e)  inner loop of Algorithm 2
#     laplace_attempt  U, D, V, B          Algorithm 2 up to the factors that need U's low bits
#     dg_geometric_exp    X by inversion   csrc/dg_exp.h (t <= INVERSION_MAX)
#     discrete_laplace   Lap_Z(t/s)        Algorithm 2
#     discrete_gaussian  N_Z(0, sigma^2)   Algorithm 3
#
# Every step has a machine-word path and a GMP path that read the same bits for
# the same values, so the samplers switch to GMP exactly where a number stops
# fitting in a word, sample by sample, without changing any output.  No floating
# point is used anywhere in this file.
#
# Algorithm 2 draws U = H 2**r + L with H < 2**HIGH_BITS first and U's low bits
# L last, and splits D ~ Bernoulli(exp(-U/t)) into independent factors
# Bernoulli(exp(-H 2**r/t)) (by its digits, from a table by H) and
# Bernoulli(exp(-L/t)).  Algorithm 3 accepts at the block start a = H 2**r + tV
# (|Y| = a + L) by the digits of exp(-gamma(a)) (cached by block) before L is
# read, and afterwards by one Bernoulli(exp(-L (2a + L) / (2 sigma^2))), which is
# D's second factor times the rest of the acceptance.  So an attempt rejected
# before L is read never reads it, and t <= 2**HIGH_BITS (r = 0) is the paper's
# algorithm with every Bernoulli(exp(-g)) by digits.  Every Bernoulli(exp(-1)) is
# drawn by the digits of 1/e, and when t <= INVERSION_MAX, Algorithm 2's
# X = U + tV ~ Geometric(1 - exp(-1/t)) is drawn in one inversion against a
# table of thresholds exp(-x/t).  dgauss.reference does the same, so the two
# still read the same bits.

cdef enum:
    ACCEPT_CACHE_PER_T = 8      # Algorithm 3 caches the blocks with V < 8 (P(V >= 8) = exp(-8))

cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define dg_prefetch(p) __builtin_prefetch(p)
    #else
    #define dg_prefetch(p) ((void)(p))
    #endif
    """
    void dg_prefetch(const void *p) nogil


# --------------------------------------------------------------------------
# State shared by one call: scratch integers, parameters, bit source
# --------------------------------------------------------------------------

cdef struct Work:
    # Algorithm 1 on GMP integers
    mpz_t bn, dk, rem, whole, frac
    # Algorithm 2: a block's start a and U's low bits L once they leave the word path; the sample
    mpz_t a, low, y
    # Algorithm 3: (a d t - n)^2, and the last factor's numerator d L (2a + L), with 2a + L
    mpz_t num, two_a_l
    # output conversion
    mpz_t out

cdef struct LaplaceParams:
    bint small          # t, s < 2**63: the word path
    bint t_small        # t < 2**63: `t` holds it
    uint64_t t, s
    mpz_t T, S
    bint s_one          # s = 1 (always in Algorithm 3)
    bint inversion      # t <= INVERSION_MAX: X = U + t V in one inversion, from `geo`
    dg_geometric_table geo
    # otherwise U = H 2**r + L: H < 2**HIGH_BITS first, U's low bits L last
    unsigned long r
    unsigned t_k        # r = 0: bitlength(t - 1) and t - 1's digits at the top of t_p (uniform(t))
    uint64_t t_p
    uint64_t blocks     # H's values: floor((t - 1) / 2**r) + 1
    dg_split split      # t - 1's digits, for uniform_split on GMP (r > 0, t >= 2**63)
    dg_exp_table exp_h  # D's first factor: the digits of exp(-H 2**r / t), by H
    const void *warm    # Algorithm 3's cache (Params.accept), or NULL: fetched once H is known

cdef enum AcceptState:
    ACCEPT_DIGITS = 1   # gamma has a fractional part; `prefix` holds its digits
    ACCEPT_WHOLE = 2    # gamma is an integer
    ACCEPT_HUGE = 3     # floor(gamma) >= 2**64 (known; the value itself is not kept)

cdef struct Acceptance:
    # Algorithm 3's acceptance at one block start a: exp(-gamma) = exp(-1)**whole * exp(-frac)
    AcceptState state
    uint64_t whole      # floor(gamma)
    uint64_t prefix     # floor(2**64 exp(-frac)), frac = gamma - floor(gamma) > 0

cdef struct AcceptEntry:
    # an Acceptance in Algorithm 3's cache, 16 bytes (four to a cache line): tag = 0 while
    # unknown, else whole * 4 + state (ACCEPT_HUGE: whole = 0); blocks with
    # 2**62 <= floor(gamma) < 2**64 are not cached
    uint64_t tag
    uint64_t prefix

cdef struct Params:
    mpz_t N, D          # the parameter as given: gamma, scale t/s, or sigma^2 = N/D
    bint fixed_point    # digit words by 128-bit fixed point where it decides (False: all by
                        # GMP -- the same words, for tests)
    LaplaceParams lap   # Algorithm 2's t/s (for the Gaussian: t = floor(sigma) + 1, s = 1)
    # Algorithm 3's acceptance at a: gamma(a) = (a d t - n)^2 / (2 n d t^2), cached by block
    bint small          # n, d t fit a word and 2 n d t^2 <= 2**63
    uint64_t n, dt, den
    mpz_t DT, DEN
    AcceptEntry *accept # accept_len entries, by Block.index
    uint64_t accept_len
    # the last factor, Bernoulli(exp(-d L (2a + L) / (2n))): on two words when d, 2n fit them
    bint low_words      # d < 2**64, 2n < 2**127
    bint d_one          # d = 1
    uint64_t d
    dg_u128 two_n
    mpz_t TWO_N

cdef struct Block:
    # Algorithm 2's X = a + L before the factors that need L: a = H 2**r + t V, the smallest
    # X of its block, and L < 2**r, U's low bits, read last (when `low_read`); the sign B.
    # On words (a, low), or, when `big`, in Work.a (built from h, v when first needed:
    # `a_ready`) and Work.low.
    bint big
    bint a_ready
    bint x_ready        # Work.y = X = a + L on GMP (block_x), made once per attempt
    bint low_read
    bint neg
    uint64_t a, low
    uint64_t h, v
    uint64_t index      # the block in Algorithm 3's cache: H ACCEPT_CACHE_PER_T + V (X by inversion)

cdef struct Value:
    # one sample: (-1)**neg * mag on the word path, else the signed Work.y
    bint big
    bint neg
    uint64_t mag


cdef void _work_init(Work *w) noexcept nogil:
    mpz_init(w.bn); mpz_init(w.dk); mpz_init(w.rem); mpz_init(w.whole); mpz_init(w.frac)
    mpz_init(w.a); mpz_init(w.low); mpz_init(w.y); mpz_init(w.num); mpz_init(w.two_a_l); mpz_init(w.out)

cdef void _work_clear(Work *w) noexcept nogil:
    mpz_clear(w.bn); mpz_clear(w.dk); mpz_clear(w.rem); mpz_clear(w.whole); mpz_clear(w.frac)
    mpz_clear(w.a); mpz_clear(w.low); mpz_clear(w.y); mpz_clear(w.num); mpz_clear(w.two_a_l); mpz_clear(w.out)

cdef void _params_init(Params *p) noexcept nogil:
    mpz_init(p.N); mpz_init(p.D); mpz_init(p.lap.T); mpz_init(p.lap.S)
    mpz_init(p.lap.split.low_digits); mpz_init(p.DT); mpz_init(p.DEN); mpz_init(p.TWO_N)

cdef void _params_clear(Params *p) noexcept nogil:
    mpz_clear(p.N); mpz_clear(p.D); mpz_clear(p.lap.T); mpz_clear(p.lap.S)
    mpz_clear(p.lap.split.low_digits); mpz_clear(p.DT); mpz_clear(p.DEN); mpz_clear(p.TWO_N)


cdef inline bint _fits_word(mpz_srcptr z) noexcept nogil:
    """0 <= z < 2**63: small enough for every word path."""
    return mpz_sgn(z) >= 0 and mpz_sizeinbase(z, 2) <= 63


cdef inline int bernoulli_exp1(dg_rng *rng) noexcept nogil:
    """Bernoulli(exp(-1)), by comparison with the binary digits of 1/e."""
    return dg_bernoulli_exp_digits(rng, DG_EXP_M1_PREFIX, 1, 1)


# --------------------------------------------------------------------------
# Algorithm 1: Bernoulli(exp(-gamma)), gamma = n/d >= 0
# --------------------------------------------------------------------------

cdef enum RatioSize:
    RATIO_WORD = 0      # n, d < 2**64
    RATIO_TWO_WORDS = 1 # n, d < 2**127
    RATIO_GMP = 2

cdef struct Ratio:
    # gamma = n/d with 0 <= gamma <= 1, in the smallest of three representations
    RatioSize size
    uint64_t n, d
    dg_u128 n2, d2
    mpz_srcptr N
    mpz_srcptr D


cdef inline int bernoulli_over_k(dg_rng *rng, Ratio *g, uint64_t k, Work *w) noexcept nogil:
    """Bernoulli(gamma/k): on one word while d*k <= 2**63, on two while d*k fits them,
    else on GMP (all three read the same bits)."""
    cdef uint64_t dk
    cdef dg_u128 dk2
    if g.size == RATIO_WORD:
        if dg_mul_u64(g.d, k, &dk) and dk <= DG_BERNOULLI_DMAX:
            return dg_bernoulli_u64(rng, g.n, dk)
        return dg_bernoulli_u128(rng, g.n, <dg_u128>g.d * k)      # < 2**128
    if g.size == RATIO_TWO_WORDS:
        if dg_mul_u128(g.d2, k, &dk2):
            return dg_bernoulli_u128(rng, g.n2, dk2)
        dg_mpz_set_u128(w.bn, g.n2)
        dg_mpz_set_u128(w.dk, g.d2)
        mpz_mul_ui(w.dk, w.dk, k)
        return dg_bernoulli_mpz(rng, w.bn, w.dk, w.rem)
    if k == 1:
        return dg_bernoulli_mpz(rng, g.N, g.D, w.rem)
    mpz_mul_ui(w.dk, g.D, k)
    return dg_bernoulli_mpz(rng, g.N, w.dk, w.rem)


cdef inline int bernoulli_exp_unit(dg_rng *rng, Ratio *g, Work *w) noexcept nogil:
    """Algorithm 1 for gamma in [0, 1]: K <- 1; while Bernoulli(gamma/K): K <- K + 1; return [K odd]."""
    cdef uint64_t k = 1
    cdef int a
    while True:
        a = bernoulli_over_k(rng, g, k, w)
        if a != 1:
            break
        if k == UINT64_MAX:
            rng.status = DG_ERR_LIMIT
            return -1
        k += 1
    if a < 0:
        return -1
    return <int>(k & 1)


cdef int bernoulli_exp1_times(dg_rng *rng, dg_u128 count) noexcept nogil:
    """Algorithm 1's integer part: `count` draws of Bernoulli(exp(-1)), stopping at the first
    0; 1 when all were 1, else 0, or -1 when the bit source failed."""
    cdef dg_u128 i = 0
    cdef int a
    while i < count:
        a = bernoulli_exp1(rng)
        if a != 1:
            return a
        i += 1
    return 1


cdef int bernoulli_exp1_times_mpz(dg_rng *rng, mpz_ptr count) noexcept nogil:
    """bernoulli_exp1_times for a count on GMP (counted down to 0 in place)."""
    cdef int a
    while mpz_sgn(count) > 0:
        a = bernoulli_exp1(rng)
        if a != 1:
            return a
        mpz_sub_ui(count, count, 1)
    return 1


cdef int bernoulli_exp_u64(dg_rng *rng, uint64_t n, uint64_t d, Work *w) noexcept nogil:
    """Bernoulli(exp(-n/d)) on words; requires 1 <= d <= 2**63.

    Returns 1, 0, or -1 when the bit source failed.
    """
    cdef Ratio g
    cdef int a
    if n == d:
        return bernoulli_exp1(rng)
    if n < d:
        g.size = RATIO_WORD
        g.n = n
        g.d = d
        return bernoulli_exp_unit(rng, &g, w)
    # gamma > 1: floor(gamma) draws of Bernoulli(exp(-1)), then exp(-(gamma - floor(gamma)))
    a = bernoulli_exp1_times(rng, n // d)
    if a != 1:
        return a
    return bernoulli_exp_u64(rng, n % d, d, w)


cdef int bernoulli_exp_u128(dg_rng *rng, dg_u128 n, dg_u128 d, Work *w) noexcept nogil:
    """Bernoulli(exp(-n/d)) on two words, 1 <= d < 2**127 (the word path when both fit one)."""
    cdef Ratio g
    cdef int a
    if (n >> 64) == 0 and d <= DG_BERNOULLI_DMAX:
        return bernoulli_exp_u64(rng, <uint64_t>n, <uint64_t>d, w)
    if n == d:
        return bernoulli_exp1(rng)
    if n < d:
        g.size = RATIO_TWO_WORDS
        g.n2 = n
        g.d2 = d
        return bernoulli_exp_unit(rng, &g, w)
    a = bernoulli_exp1_times(rng, n // d)
    if a != 1:
        return a
    return bernoulli_exp_u128(rng, n % d, d, w)


cdef int bernoulli_exp(dg_rng *rng, mpz_srcptr n, mpz_srcptr d, Work *w) noexcept nogil:
    """Bernoulli(exp(-n/d)) for any n >= 0, d >= 1; on one or two words when both fit.

    n and d must not be w.bn, w.dk, w.rem, w.whole or w.frac.
    """
    cdef Ratio g
    cdef dg_u128 n2, d2
    cdef int a
    if mpz_fits_ulong_p(n) and _fits_word(d):
        return bernoulli_exp_u64(rng, mpz_get_ui(n), mpz_get_ui(d), w)
    if dg_mpz_get_u128(n, &n2) and dg_mpz_get_u128(d, &d2):
        return bernoulli_exp_u128(rng, n2, d2, w)
    a = mpz_cmp(n, d)
    if a == 0:
        return bernoulli_exp1(rng)
    if a < 0:
        g.size = RATIO_GMP
        g.N = n
        g.D = d
        return bernoulli_exp_unit(rng, &g, w)
    mpz_fdiv_qr(w.whole, w.frac, n, d)
    a = bernoulli_exp1_times_mpz(rng, w.whole)
    if a != 1:
        return a
    # w.frac < d: this call ends in bernoulli_exp_unit, which leaves w.frac alone
    return bernoulli_exp(rng, w.frac, d, w)


# --------------------------------------------------------------------------
# Algorithm 2: the discrete Laplace Lap_Z(t/s)
# --------------------------------------------------------------------------

cdef int geometric_exp1(dg_rng *rng, Work *w, uint64_t *v) noexcept nogil:
    """V ~ Geometric(1 - exp(-1)): count Bernoulli(exp(-1)) successes before the first failure."""
    cdef int a
    cdef uint64_t count = 0
    while True:
        a = bernoulli_exp1(rng)
        if a != 1:
            v[0] = count
            return a        # 0, or -1 when the bit source failed
        if count == UINT64_MAX:
            rng.status = DG_ERR_LIMIT
            return -1
        count += 1


cdef inline bint stop_at_restart(dg_rng *rng) noexcept nogil:
    """A rejection is about to restart the loop: stop here if the (testing) source asks to."""
    if rng.stop_at_restart:
        rng.status = DG_ERR_RESTART
        return True
    return False


cdef inline int digits_prefix(dg_rng *rng, uint64_t prefix) noexcept nogil:
    """Bernoulli(exp(-g)) by its binary digits, the first 64 of which are `prefix`: 1 or 0 when
    they decide (uniform digits below or above them), -1 when the bit source failed, or
    DG_DIGITS_MATCH when all 64 matched (probability 2**-64; always in decision mode): then
    digits_tail finishes on GMP."""
    if rng.decider != NULL:
        return DG_DIGITS_MATCH
    return dg_compare_digits(rng, prefix, 64)


cdef inline int digits_tail(dg_rng *rng, mpz_srcptr n, mpz_srcptr d) noexcept nogil:
    """The rest of Bernoulli(exp(-n/d)) by its digits after digits_prefix matched, on GMP
    (in decision mode: the one decision the tape holds for it)."""
    if rng.decider != NULL:
        return dg_decide_bernoulli_exp_mpz(rng, n, d)
    return dg_exp_digits_tail_mpz(rng, n, d)


cdef int bernoulli_exp_high(dg_rng *rng, LaplaceParams *lp, Work *w, uint64_t h) noexcept nogil:
    """D's first factor, Bernoulli(exp(-H 2**r / t)) for 0 < H 2**r < t, by its digits
    (the first 64 from the table)."""
    cdef int c = digits_prefix(rng, dg_exp_table_prefix(&lp.exp_h, h))
    if c != DG_DIGITS_MATCH:
        return c
    mpz_set_ui(w.num, h)
    mpz_mul_2exp(w.num, w.num, lp.r)
    return digits_tail(rng, w.num, lp.T)


cdef inline int read_low(dg_rng *rng, LaplaceParams *lp, Work *w, Block *blk) noexcept nogil:
    """Read L, U's low bits (r free bits), unless they are read already; 0 or -1."""
    if blk.low_read:
        return 0
    blk.low_read = True
    if blk.big:
        return dg_bits_mpz(rng, lp.r, w.low)
    blk.low = dg_bits(rng, <unsigned>lp.r)     # 1 <= r <= 62 on words
    return 0 if rng.status == DG_OK else -1


cdef mpz_srcptr block_a(LaplaceParams *lp, Work *w, Block *blk) noexcept nogil:
    """Work.a = a = H 2**r + t V on GMP, built on first use."""
    if not blk.a_ready:
        mpz_set_ui(w.a, blk.h)
        mpz_mul_2exp(w.a, w.a, lp.r)
        if blk.v != 0:
            mpz_addmul_ui(w.a, lp.T, blk.v)
        blk.a_ready = True
    return w.a


cdef mpz_srcptr block_x(LaplaceParams *lp, Work *w, Block *blk) noexcept nogil:
    """Work.y = X = a + L on GMP (a block on words copied in), made once; L must be read."""
    if not blk.x_ready:
        if blk.big:
            block_a(lp, w, blk)
        else:
            mpz_set_ui(w.a, blk.a)
            mpz_set_ui(w.low, blk.low)
        mpz_add(w.y, w.a, w.low)
        blk.x_ready = True
    return w.y


cdef bint below_s(LaplaceParams *lp, Work *w, Block *blk, bint with_low) noexcept nogil:
    """a < s (Y = floor(X/s) may be 0), or, with_low, a + L < s (Y is 0); a + L < s needs a < s."""
    if not blk.big:
        return blk.a + (blk.low if with_low else 0) < lp.s     # a < s < 2**63 and L < 2**62
    if not blk.a_ready and lp.s_one and (blk.h != 0 or blk.v != 0):
        return False                                            # a >= 1 = s
    if with_low:
        return mpz_cmp(block_x(lp, w, blk), lp.S) < 0
    return mpz_cmp(block_a(lp, w, blk), lp.S) < 0


cdef inline int laplace_attempt(dg_rng *rng, LaplaceParams *lp, Work *w, Block *blk) noexcept nogil:
    """One attempt of Algorithm 2 up to the factors that need U's low bits.

    U = H 2**r + L, D ~ Bernoulli(exp(-U/t)) as Bernoulli(exp(-H 2**r/t)) now and
    Bernoulli(exp(-L/t)) once L is read (independent factors), V, and the sign B
    (dgauss.reference.laplace_attempt).  Returns 1 with the block in *blk, 0 when the
    attempt is rejected (D's first factor is 0, or B = 1 and Y = 0), or -1 when the
    bit source failed.
    """
    cdef uint64_t h, v, tv
    cdef bint low_in_mpz = False
    cdef int c
    blk.x_ready = False
    if lp.inversion:
        # t <= INVERSION_MAX: X in one inversion against the digits of exp(-x/t)
        if dg_geometric_exp(rng, &lp.geo, &blk.a) < 0:
            return -1
        blk.low = 0
        blk.low_read = True
        blk.index = blk.a
        blk.big = not lp.small
        if blk.big:
            mpz_set_ui(w.a, blk.a)
            mpz_set_ui(w.low, 0)
            blk.a_ready = True
    else:
        if lp.r == 0:
            c = dg_uniform_u64_kp(rng, lp.t, lp.t_k, lp.t_p, &h)    # t <= 2**HIGH_BITS: U = H
            blk.low = 0
            c = -1 if c < 0 else 1
        elif lp.t_small:
            c = dg_uniform_split_u64(rng, lp.t, <unsigned>lp.r, &h, &blk.low)
        else:
            c = dg_uniform_split_mpz(rng, lp.T, &lp.split, &h, w.low)
            low_in_mpz = True
        if c < 0:
            return -1
        blk.low_read = c == 1
        if lp.warm != NULL:     # the lines of Algorithm 3's cache for this H (V < 4 on the first)
            dg_prefetch(<const AcceptEntry *>lp.warm + h * ACCEPT_CACHE_PER_T)
        if h != 0:
            c = bernoulli_exp_high(rng, lp, w, h)
            if c <= 0:
                return c
        if geometric_exp1(rng, w, &v) < 0:
            return -1
        blk.index = h * ACCEPT_CACHE_PER_T + v if v < ACCEPT_CACHE_PER_T else UINT64_MAX
        # a = H 2**r + t V: on words, or on GMP when first needed (block_a)
        blk.big = not (lp.small and dg_mul_u64(lp.t, v, &tv) and dg_add_u64(tv, h << lp.r, &blk.a))
        if blk.big:
            blk.h = h
            blk.v = v
            blk.a_ready = False
            if blk.low_read and not low_in_mpz:
                mpz_set_ui(w.low, blk.low)
    # B ~ Bernoulli(1/2) is one raw bit; B = 1 with Y = 0 is rejected (it would count 0 twice)
    c = dg_fair_bit(rng)
    if c < 0:
        return -1
    blk.neg = c
    # B and a < s tested together, without a branch on the coin B (a < s is rare)
    if (c & (blk.big | (blk.a < lp.s))) and below_s(lp, w, blk, False):
        if read_low(rng, lp, w, blk) < 0:
            return -1
        if below_s(lp, w, blk, True):
            return 0
    return 1


cdef inline void block_value(LaplaceParams *lp, Work *w, Block *blk, Value *out) noexcept nogil:
    """out = (-1)**B floor((a + L) / s)."""
    cdef uint64_t x
    out.neg = blk.neg
    if not blk.big and dg_add_u64(blk.a, blk.low, &x):
        out.big = False
        out.mag = x if lp.s == 1 else x // lp.s
        return
    block_x(lp, w, blk)
    if not lp.s_one:
        mpz_fdiv_q(w.y, w.y, lp.S)
    if blk.neg:
        mpz_neg(w.y, w.y)
    out.big = True


cdef int discrete_laplace(dg_rng *rng, LaplaceParams *lp, Work *w, Value *out) noexcept nogil:
    """One sample of Lap_Z(t/s) into `out`; 0, or -1 when the bit source failed."""
    cdef Block blk
    cdef int c
    while True:
        c = laplace_attempt(rng, lp, w, &blk)
        if c == 1:
            # D's second factor, Bernoulli(exp(-L/t)), by Algorithm 1
            if read_low(rng, lp, w, &blk) < 0:
                return -1
            if not blk.big:
                c = 1 if blk.low == 0 else bernoulli_exp_u64(rng, blk.low, lp.t, w)
            else:
                c = bernoulli_exp(rng, w.low, lp.T, w)
        if c < 0:
            return -1
        if c == 1:
            block_value(lp, w, &blk, out)
            return 0
        if stop_at_restart(rng):
            return -1


# --------------------------------------------------------------------------
# Algorithm 3: the discrete Gaussian N_Z(0, sigma^2), sigma^2 = n/d
# --------------------------------------------------------------------------

cdef void gamma_numerator(Params *p, Work *w, Block *blk) noexcept nogil:
    """w.num = (a d t - n)^2, so that gamma(a) = w.num / p.DEN."""
    if blk.big:
        mpz_set(w.num, block_a(&p.lap, w, blk))
    else:
        mpz_set_ui(w.num, blk.a)
    mpz_mul(w.num, w.num, p.DT)
    mpz_sub(w.num, w.num, p.N)
    mpz_mul(w.num, w.num, w.num)


cdef bint gamma_is_huge(Params *p, Work *w, Block *blk) noexcept nogil:
    """floor(gamma(a)) >= 2**64 shown from sizes alone, without the product (a d t - n)^2
    (millions of bits when sigma^2 is tiny, e.g. 10**-1000000): with b(z) the bit length,
    x = a d t >= 2**(b(a) + b(dt) - 2); when that is at least 2**(b(n) + 1) > 2n, x - n > x/2,
    so gamma = (x - n)^2 / den > 2**(2 (b(a) + b(dt) - 3) - b(den))."""
    cdef size_t ba, bx
    if blk.big:
        ba = mpz_sizeinbase(block_a(&p.lap, w, blk), 2)
    elif blk.a == 0:
        return False
    else:
        ba = 64 - <size_t>__builtin_clzll(blk.a)
    bx = ba + mpz_sizeinbase(p.DT, 2)
    return (bx >= mpz_sizeinbase(p.N, 2) + 3
            and 2 * (bx - 3) >= mpz_sizeinbase(p.DEN, 2) + 64)


cdef bint acceptance_of(Params *p, Work *w, Block *blk, Acceptance *e) noexcept nogil:
    """*e for the block start a; False (e untouched) when floor(gamma(a)) >= 2**64."""
    cdef uint64_t a, diff, num, r
    cdef dg_u128 x_fix
    if p.small and not blk.big and dg_mul_u64(blk.a, p.dt, &a):
        diff = a - p.n if a >= p.n else p.n - a
        if dg_mul_u64(diff, diff, &num):
            e.whole = num // p.den
            r = num % p.den
            if r == 0:
                e.state = ACCEPT_WHOLE
            else:
                e.prefix = dg_exp_neg_prefix(r, p.den, p.fixed_point)
                e.state = ACCEPT_DIGITS
            return True
    if gamma_is_huge(p, w, blk):
        return False
    # one division: w.whole = floor(2**128 gamma), whose top words are floor(gamma) and whose
    # low two words x_fix put frac = gamma - floor(gamma) in [x_fix, x_fix + 1) / 2**128
    gamma_numerator(p, w, blk)
    mpz_mul_2exp(w.num, w.num, 128)
    mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
    if mpz_sizeinbase(w.whole, 2) > 192:
        return False
    e.whole = mpz_getlimbn(w.whole, 2)
    x_fix = (<dg_u128>mpz_getlimbn(w.whole, 1) << 64) | mpz_getlimbn(w.whole, 0)
    if x_fix == 0 and mpz_sgn(w.frac) == 0:
        e.state = ACCEPT_WHOLE
        return True
    e.state = ACCEPT_DIGITS
    if not (p.fixed_point and dg_exp_neg_prefix_fix(x_fix, 1, &e.prefix)):
        gamma_numerator(p, w, blk)          # the fixed point cannot decide: the fraction on GMP
        mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
        e.prefix = dg_exp_neg_prefix_mpz(w.frac, p.DEN, p.fixed_point)
    return True


cdef int fraction_by_digits(dg_rng *rng, Params *p, Work *w, Block *blk, uint64_t prefix) noexcept nogil:
    """Bernoulli(exp(-frac)), frac = gamma(a) - floor(gamma(a)) > 0, by its digits (first 64 = prefix)."""
    cdef int c = digits_prefix(rng, prefix)
    if c != DG_DIGITS_MATCH:
        return c
    gamma_numerator(p, w, blk)
    mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
    return digits_tail(rng, w.frac, p.DEN)


cdef int accept_huge(dg_rng *rng, Params *p, Work *w, Block *blk) noexcept nogil:
    """The acceptance when floor(gamma(a)) >= 2**64: the first 2**64 of its Bernoulli(exp(-1))
    draws before gamma is computed (one fails first but with probability exp(-2**64)), the
    rest counted on GMP -- the same draws in the same order as Algorithm 1."""
    cdef int c = bernoulli_exp1_times(rng, (<dg_u128>1) << 64)
    if c != 1:
        return c
    # reached with probability exp(-2**64): kept exact all the same
    gamma_numerator(p, w, blk)
    mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
    mpz_set_ui(w.num, 1)
    mpz_mul_2exp(w.num, w.num, 64)
    mpz_sub(w.whole, w.whole, w.num)
    c = bernoulli_exp1_times_mpz(rng, w.whole)
    if c != 1:
        return c
    if mpz_sgn(w.frac) == 0:
        return 1
    return fraction_by_digits(rng, p, w, blk, dg_exp_neg_prefix_mpz(w.frac, p.DEN, p.fixed_point))


cdef int accept_block(dg_rng *rng, Params *p, Work *w, Block *blk) noexcept nogil:
    """Algorithm 3's acceptance at the block start a, Bernoulli(exp(-gamma(a))): Algorithm 1's
    floor(gamma) draws of Bernoulli(exp(-1)), then Bernoulli(exp(-frac)) by its digits
    instead of Algorithm 1's loop; the digits cached by block."""
    cdef Acceptance e
    cdef AcceptEntry *c = NULL
    cdef int b
    if blk.index < p.accept_len:
        c = &p.accept[blk.index]
    if c != NULL and c.tag != 0:
        e.whole = c.tag >> 2
        e.state = <AcceptState>(c.tag & 3)
        e.prefix = c.prefix
        if e.state == ACCEPT_HUGE:
            return accept_huge(rng, p, w, blk)
    else:
        if not acceptance_of(p, w, blk, &e):
            if c != NULL:
                c.tag = ACCEPT_HUGE
            return accept_huge(rng, p, w, blk)
        if c != NULL and e.whole < (<uint64_t>1) << 62:
            c.tag = e.whole << 2 | <uint64_t>e.state
            c.prefix = e.prefix
    b = bernoulli_exp1_times(rng, e.whole)
    if b != 1:
        return b
    if e.state == ACCEPT_WHOLE:
        return 1
    return fraction_by_digits(rng, p, w, blk, e.prefix)


cdef int accept_low(dg_rng *rng, Params *p, Work *w, Block *blk) noexcept nogil:
    """The last factor, once L is read: Bernoulli(exp(-L (2a + L) / (2 sigma^2))) =
    Bernoulli(exp(-d L (2a + L) / (2n))) by Algorithm 1 -- D's second factor exp(-L/t)
    times exp(-(gamma(a + L) - gamma(a))), the rest of the acceptance."""
    cdef dg_u128 num
    if read_low(rng, &p.lap, w, blk) < 0:
        return -1
    if not blk.big:
        if blk.low == 0:
            return 1
        if (p.low_words and dg_mul_u128(2 * <dg_u128>blk.a + blk.low, blk.low, &num)
                and dg_mul_u128(num, p.d, &num)):
            return bernoulli_exp_u128(rng, num, p.two_n, w)
    block_x(&p.lap, w, blk)             # X = a + L, kept for block_value
    mpz_add(w.two_a_l, w.a, w.y)        # 2a + L
    mpz_mul(w.num, w.two_a_l, w.low)
    if not p.d_one:
        mpz_mul(w.num, w.num, p.D)
    return bernoulli_exp(rng, w.num, p.TWO_N, w)


cdef int discrete_gaussian(dg_rng *rng, Params *p, Work *w, Value *out) noexcept nogil:
    """One sample of N_Z(0, n/d) into `out`; 0, or -1 when the bit source failed.

    t = floor(sigma) + 1; Y ~ Lap_Z(t); accept with probability
    exp(-gamma(|Y|)), gamma(y) = (y - sigma^2/t)^2 / (2 sigma^2).  With |Y| = a + L
    (laplace_attempt), L/t + gamma(a + L) = gamma(a) + L (2a + L) / (2 sigma^2): the
    acceptance at a comes before L is read, and one Bernoulli after it covers D's
    second factor and the rest of the acceptance.
    """
    cdef Block blk
    cdef int c
    while True:
        c = laplace_attempt(rng, &p.lap, w, &blk)
        if c == 1:
            c = accept_block(rng, p, w, &blk)
        if c == 1:
            c = accept_low(rng, p, w, &blk)
        if c < 0:
            return -1
        if c == 1:
            block_value(&p.lap, w, &blk, out)
            return 0
        if stop_at_restart(rng):
            return -1
