# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled core of dgauss: Algorithms 1-3 of Canonne, Kamath & Steinke (2020).

The chain, named as in the paper (Section 5):

    uniform(m), Bernoulli(n/d)          csrc/dg_prim.c  (bottom primitives)
    Bernoulli(exp(-g)) by its digits    csrc/dg_exp.c   (g = 1, H 2**r/t, Algorithm 3's fraction)
    bernoulli_exp    Bernoulli(exp(-g))  Algorithm 1
    geometric_exp1   Geometric(1 - 1/e)  inner loop of Algorithm 2
    laplace_attempt  U, D, V, B          Algorithm 2 up to the factors that need U's low bits
    dg_geometric_exp    X by inversion   csrc/dg_exp.h (t <= INVERSION_MAX)
    laplace          Lap_Z(t/s)          Algorithm 2
    gaussian         N_Z(0, sigma^2)     Algorithm 3

Every step has a machine-word path and a GMP path that read the same bits for
the same values, so the samplers switch to GMP exactly where a number stops
fitting in a word, sample by sample, without changing any output.  No floating
point is used anywhere in this file.

Algorithm 2 draws U = H 2**r + L with H < 2**HIGH_BITS first and U's low bits
L last, and splits D ~ Bernoulli(exp(-U/t)) into independent factors
Bernoulli(exp(-H 2**r/t)) (by its digits, from a table by H) and
Bernoulli(exp(-L/t)).  Algorithm 3 accepts at the block start a = H 2**r + tV
(|Y| = a + L) by the digits of exp(-gamma(a)) (cached by block) before L is
read, and afterwards by one Bernoulli(exp(-L (2a + L) / (2 sigma^2))), which is
D's second factor times the rest of the acceptance.  So an attempt rejected
before L is read never reads it, and t <= 2**HIGH_BITS (r = 0) is the paper's
algorithm with every Bernoulli(exp(-g)) by digits.  Every Bernoulli(exp(-1)) is
drawn by the digits of 1/e, and when t <= INVERSION_MAX, Algorithm 2's
X = U + tV ~ Geometric(1 - exp(-1/t)) is drawn in one inversion against a
table of thresholds exp(-x/t).  dgauss.reference does the same, so the two
still read the same bits.

This module is private: parameters arrive already validated and reduced
(dgauss._params).  `fill` writes samples into a 1-D contiguous array with the
GIL released, holding the NumPy BitGenerator's lock when one is used.
"""

from cpython.long cimport PyLong_FromLong
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport uint64_t, int64_t, INT64_MAX, UINT64_MAX
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset

cimport numpy as cnp
from numpy.random cimport bitgen_t

from dgauss._gmp cimport *
from dgauss._csrc cimport *

import errno as _errno
import os as _os
from fractions import Fraction

import numpy as np

from dgauss import _sources

cnp.import_array()

# What `fill` samples.
cdef enum Kind:
    KIND_BERNOULLI_EXP = 0
    KIND_LAPLACE = 1
    KIND_GAUSSIAN = 2
    KIND_BERNOULLI = 3      # the primitive Bernoulli(n/d), for dgauss.testing
    KIND_UNIFORM = 4        # the primitive uniform(m) (parameter m/1), for dgauss.testing

BERNOULLI_EXP = KIND_BERNOULLI_EXP
LAPLACE = KIND_LAPLACE
GAUSSIAN = KIND_GAUSSIAN
BERNOULLI = KIND_BERNOULLI
UNIFORM = KIND_UNIFORM

cdef enum:
    OS_BUFFER_WORDS = 2048     # 16 KiB: the largest single read from the OS
    OS_FIRST_BLOCK = 4         # the first read is small: scalar calls stay cheap
    CHUNK = 65536              # samples per GIL-free stretch (signals checked between)
    OBJECT_CHUNK = 4096        # at most this many samples per stretch when Python ints are
                               # made (with the GIL): fewer hand-overs of the GIL between threads
    OBJECT_CHUNK_BYTES = 1 << 20   # and about this many bytes of GMP values per stretch

#: When t is at most this, Algorithm 2 draws X = U + tV by inversion (dg_exp.h).
INVERSION_MAX = DG_INVERSION_MAX

dg_exp_init()

#: floor(2**64 / e), the first 64 binary digits of exp(-1) (a constant in dg_exp.h)
EXP_M1_PREFIX = DG_EXP_M1_PREFIX

cdef enum:
    ACCEPT_CACHE_PER_T = 8      # Algorithm 3 caches the blocks with V < 8 (P(V >= 8) = exp(-8))

cdef extern from "<stdlib.h>" nogil:
    void *aligned_alloc(size_t alignment, size_t size)

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

cdef struct Acceptance:
    # Algorithm 3's acceptance at one block start a: exp(-gamma) = exp(-1)**whole * exp(-frac)
    AcceptState state
    uint64_t whole      # floor(gamma)
    uint64_t prefix     # floor(2**64 exp(-frac)), frac = gamma - floor(gamma) > 0

cdef struct AcceptEntry:
    # an Acceptance in Algorithm 3's cache, 16 bytes (four to a cache line): tag = 0 while
    # unknown, else whole * 4 + state; blocks with whole >= 2**62 are not cached
    uint64_t tag
    uint64_t prefix

cdef struct Params:
    mpz_t N, D          # the parameter as given: gamma, scale t/s, or sigma^2 = N/D
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

cdef struct State:
    dg_rng rng
    Work w
    Params p
    int kind
    mpz_t mu
    int64_t mu64
    bint mu_small
    bint mu_zero


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
    while mpz_sgn(w.whole) > 0:
        a = bernoulli_exp1(rng)
        if a != 1:
            return a
        mpz_sub_ui(w.whole, w.whole, 1)
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


cdef int bernoulli_exp_high(dg_rng *rng, LaplaceParams *lp, Work *w, uint64_t h) noexcept nogil:
    """D's first factor, Bernoulli(exp(-H 2**r / t)) for 0 < H 2**r < t, by its digits
    (the first 64 from the table)."""
    cdef int c
    if rng.decider == NULL:
        c = dg_compare_digits(rng, dg_exp_table_prefix(&lp.exp_h, h), 64)
        if c != DG_DIGITS_MATCH:
            return c
    # decision mode, or all 64 digits matched (probability 2**-64): on GMP
    mpz_set_ui(w.num, h)
    mpz_mul_2exp(w.num, w.num, lp.r)
    if rng.decider != NULL:
        return dg_decide_bernoulli_exp_mpz(rng, w.num, lp.T)
    return dg_exp_digits_tail_mpz(rng, w.num, lp.T)


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


cdef int laplace(dg_rng *rng, LaplaceParams *lp, Work *w, Value *out) noexcept nogil:
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


cdef bint acceptance_of(Params *p, Work *w, Block *blk, Acceptance *e) noexcept nogil:
    """*e for the block start a; False (e untouched) when floor(gamma(a)) does not fit a word."""
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
                e.prefix = dg_exp_neg_prefix(r, p.den)
                e.state = ACCEPT_DIGITS
            return True
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
    if not dg_exp_neg_prefix_fix(x_fix, 1, &e.prefix):
        gamma_numerator(p, w, blk)          # the fixed point cannot decide: the fraction on GMP
        mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
        e.prefix = dg_exp_neg_prefix_mpz(w.frac, p.DEN)
    return True


cdef int fraction_by_digits(dg_rng *rng, Params *p, Work *w, Block *blk, uint64_t prefix) noexcept nogil:
    """Bernoulli(exp(-frac)), frac = gamma(a) - floor(gamma(a)) > 0, by its digits (first 64 = prefix)."""
    cdef int c
    if rng.decider == NULL:
        c = dg_compare_digits(rng, prefix, 64)
        if c != DG_DIGITS_MATCH:
            return c
    # decision mode, or all 64 digits matched (probability 2**-64): the fraction on GMP
    gamma_numerator(p, w, blk)
    mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
    if rng.decider != NULL:
        return dg_decide_bernoulli_exp_mpz(rng, w.frac, p.DEN)
    return dg_exp_digits_tail_mpz(rng, w.frac, p.DEN)


cdef int accept_huge(dg_rng *rng, Params *p, Work *w, Block *blk) noexcept nogil:
    """The acceptance when floor(gamma(a)) >= 2**64: its Bernoulli(exp(-1)) draws counted on GMP."""
    cdef int c
    gamma_numerator(p, w, blk)
    mpz_fdiv_qr(w.whole, w.frac, w.num, p.DEN)
    while mpz_sgn(w.whole) > 0:
        c = bernoulli_exp1(rng)
        if c != 1:
            return c
        mpz_sub_ui(w.whole, w.whole, 1)
    # reached with probability exp(-2**64): kept exact all the same
    if mpz_sgn(w.frac) == 0:
        return 1
    return fraction_by_digits(rng, p, w, blk, dg_exp_neg_prefix_mpz(w.frac, p.DEN))


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
    else:
        if not acceptance_of(p, w, blk, &e):
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


cdef int gaussian(dg_rng *rng, Params *p, Work *w, Value *out) noexcept nogil:
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


# --------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------

cdef inline int draw(State *s, Value *v) noexcept nogil:
    cdef int b
    if s.kind == KIND_GAUSSIAN:
        return gaussian(&s.rng, &s.p, &s.w, v)
    if s.kind == KIND_LAPLACE:
        return laplace(&s.rng, &s.p.lap, &s.w, v)
    if s.kind == KIND_UNIFORM:
        v.big = True
        v.neg = False
        return dg_uniform_mpz(&s.rng, s.p.N, s.w.y)
    if s.kind == KIND_BERNOULLI:
        b = dg_bernoulli_mpz(&s.rng, s.p.N, s.p.D, s.w.rem)
    else:
        b = bernoulli_exp(&s.rng, s.p.N, s.p.D, &s.w)
    v.big = False
    v.neg = False
    v.mag = <uint64_t>b
    return -1 if b < 0 else 0


cdef void value_to_mpz(State *s, Value *v, mpz_ptr out) noexcept nogil:
    """out = v + mu (Work.y is scratch afterwards)."""
    if v.big:
        if s.mu_zero:
            mpz_swap(out, s.w.y)
        else:
            mpz_add(out, s.w.y, s.mu)
    else:
        mpz_set_ui(out, v.mag)
        if v.neg:
            mpz_neg(out, out)
        mpz_add(out, out, s.mu)


cdef int value_to_i64(State *s, Value *v, int64_t *out) noexcept nogil:
    """*out = v + mu, or DG_ERR_OVERFLOW when that is outside int64."""
    cdef uint64_t neg = <uint64_t>v.neg
    if not v.big and s.mu_small and v.mag <= <uint64_t>INT64_MAX + neg:
        # v is an int64 (-2**63 included), so v + mu fits or truly overflows; the sign is
        # applied without a branch on it (a coin flip): -mag is (mag ^ ~0) + 1 mod 2**64
        return DG_OK if dg_add_i64(<int64_t>((v.mag ^ (0 - neg)) + neg), s.mu64, out) else DG_ERR_OVERFLOW
    # beyond: exactly, on GMP (2**63 + mu fits for mu < 0)
    value_to_mpz(s, v, s.w.out)
    if not mpz_fits_slong_p(s.w.out):
        return DG_ERR_OVERFLOW
    out[0] = mpz_get_si(s.w.out)
    return DG_OK


cdef int fill_native(State *s, char *out, bint is_bool, Py_ssize_t n) noexcept nogil:
    """n samples into a bool or int64 buffer; a status code."""
    cdef Py_ssize_t i
    cdef Value v
    cdef int rc
    for i in range(n):
        if draw(s, &v) < 0:
            return s.rng.status
        if is_bool:
            (<cnp.npy_bool *>out)[i] = <cnp.npy_bool>v.mag
        else:
            rc = value_to_i64(s, &v, &(<int64_t *>out)[i])
            if rc != DG_OK:
                return rc
    return DG_OK


cdef int fill_mpz(State *s, mpz_t *out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef Value v
    for i in range(n):
        if draw(s, &v) < 0:
            return s.rng.status
        value_to_mpz(s, &v, out[i])
    return DG_OK


cdef int fill_bitgen(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Words from a NumPy BitGenerator, one next_uint64 per word."""
    cdef bitgen_t *bg = <bitgen_t *>ctx
    cdef size_t i
    for i in range(n):
        words[i] = bg.next_uint64(bg.state)
    return DG_OK


cdef struct TapeWords:
    const uint64_t *words
    size_t count, pos

cdef int fill_tape(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Words from a testing Tape (its bit budget stops reads past its last bit)."""
    cdef TapeWords *tape = <TapeWords *>ctx
    cdef size_t i
    for i in range(n):
        if tape.pos == tape.count:
            return DG_ERR_EXHAUSTED
        words[i] = tape.words[tape.pos]
        tape.pos += 1
    return DG_OK


cdef int fill_refuse(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Decision mode reads no bits: any read is a sampler bug."""
    return DG_ERR_RAW_BITS


# --------------------------------------------------------------------------
# Python integers <-> GMP
# --------------------------------------------------------------------------

cdef int int_to_mpz(mpz_ptr z, object v) except -1:
    cdef bytes b
    if -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        mpz_set_si(z, <long>v)
        return 0
    a = -v if v < 0 else v
    b = a.to_bytes((a.bit_length() + 7) // 8, "big")
    mpz_import(z, len(b), 1, 1, 1, 0, <const char *>b)
    if v < 0:
        mpz_neg(z, z)
    return 0


cdef extern from *:
    """
    #include <gmp.h>

    /* Python ints from GMP limbs.  CPython before 3.12 lays an int out as
     * base-2**PyLong_SHIFT digits, least significant first, with the sign in
     * the size: the digits are written in place.  Other versions (or the test
     * hook dg_int_by_bytes) go through CPython's own conversion of a
     * little-endian two's-complement byte string. */
    #if PY_VERSION_HEX < 0x030C0000 && !defined(Py_LIMITED_API) && !defined(PYPY_VERSION)
    #define DG_INT_DIGITS 1
    #else
    #define DG_INT_DIGITS 0
    #endif
    static int dg_int_by_bytes = !DG_INT_DIGITS;

    static PyObject *dg_int_from_bytes(const mp_limb_t *p, size_t n, int negative)
    {
        uint64_t small[17];
        uint64_t *b = (n + 1 <= 17) ? small : (uint64_t *)PyMem_Malloc((n + 1) * 8);
        uint64_t carry = 1;
        size_t i;
        PyObject *v;
        if (b == NULL)
            return PyErr_NoMemory();
        for (i = 0; i < n; i++) {
            b[i] = negative ? ~(uint64_t)p[i] + carry : (uint64_t)p[i];
            carry = negative && carry && b[i] == 0;
        }
        b[n] = negative ? UINT64_MAX : 0;   /* the sign word */
    #if PY_BIG_ENDIAN
        for (i = 0; i <= n; i++)
            b[i] = __builtin_bswap64(b[i]);
    #endif
    #if PY_VERSION_HEX >= 0x030D0000
        v = PyLong_FromNativeBytes(b, (n + 1) * 8, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
    #else
        v = _PyLong_FromByteArray((const unsigned char *)b, (n + 1) * 8, 1, 1);
    #endif
        if (b != small)
            PyMem_Free(b);
        return v;
    }

    /* (-1)**negative * the n >= 1 limbs p, least significant first, p[n - 1] != 0 */
    static PyObject *dg_int_from_limbs(const mp_limb_t *p, size_t n, int negative)
    {
    #if DG_INT_DIGITS
        if (!dg_int_by_bytes) {
            size_t bits = n * 64 - (size_t)__builtin_clzll(p[n - 1]);
            Py_ssize_t nd = (Py_ssize_t)((bits + PyLong_SHIFT - 1) / PyLong_SHIFT), k;
            PyLongObject *v;
            if ((size_t)nd > (size_t)PY_SSIZE_T_MAX / PyLong_SHIFT)
                return PyErr_NoMemory();
            v = _PyLong_New(nd);
            if (v == NULL)
                return NULL;
            uint64_t acc = 0, next;     /* `have` bits of p not yet in a digit */
            unsigned have = 0;
            size_t w = 0;
            for (k = 0; k < nd; k++) {
                if (have >= PyLong_SHIFT) {
                    v->ob_digit[k] = (digit)(acc & PyLong_MASK);
                    acc >>= PyLong_SHIFT;
                    have -= PyLong_SHIFT;
                } else {                /* the digit takes the next limb's low bits too */
                    next = (w < n) ? (uint64_t)p[w++] : 0;
                    v->ob_digit[k] = (digit)((acc | next << have) & PyLong_MASK);
                    acc = next >> (PyLong_SHIFT - have);
                    have += 64 - PyLong_SHIFT;
                }
            }
            if (negative)
                Py_SET_SIZE(v, -nd);
            return (PyObject *)v;
        }
    #endif
        return dg_int_from_bytes(p, n, negative);
    }
    """
    object dg_int_from_limbs(const mp_limb_t *p, size_t n, int negative)
    int dg_int_by_bytes


cdef object mpz_to_int(mpz_srcptr z):
    if mpz_fits_slong_p(z):
        return PyLong_FromLong(mpz_get_si(z))
    return dg_int_from_limbs(mpz_limbs_read(z), mpz_size(z), mpz_sgn(z) < 0)


def _int_test_hook(v, bint by_bytes):
    """Test hook: v through GMP and back (mpz_to_int), by the byte conversion when by_bytes.
    Returns (the int, whether the digit writer exists on this Python)."""
    global dg_int_by_bytes
    cdef mpz_t z
    cdef int saved = dg_int_by_bytes
    mpz_init(z)
    try:
        int_to_mpz(z, v)
        dg_int_by_bytes = by_bytes or saved
        return mpz_to_int(z), not saved
    finally:
        dg_int_by_bytes = saved
        mpz_clear(z)


# --------------------------------------------------------------------------
# One call
# --------------------------------------------------------------------------

_EXP_E = {}     # (t, r) -> floor(2**128 exp(-2**r / t)), the base of Algorithm 2's tables
_EXP_E_MAX = 256


cdef object _exp_e(object t, unsigned long r):
    """floor(2**128 exp(-2**r / t)) (GMP), remembered for the last few (t, r)."""
    cdef mpz_t z, n, d
    e = _EXP_E.get((t, r))
    if e is None:
        mpz_init(z)
        mpz_init(n)
        mpz_init(d)
        try:
            mpz_set_ui(n, 1)
            mpz_mul_2exp(n, n, r)
            int_to_mpz(d, t)
            dg_exp_neg_floor_mpz(z, n, d, 128)
            e = mpz_to_int(z)
        finally:
            mpz_clear(z)
            mpz_clear(n)
            mpz_clear(d)
        if len(_EXP_E) >= _EXP_E_MAX:
            _EXP_E.clear()
        _EXP_E[(t, r)] = e
    return e


#: Algorithm 2 draws U's top HIGH_BITS bits H first and its low bits L last.
HIGH_BITS = 12
cdef unsigned long _high_bits = HIGH_BITS     # a test hook may lower it (_split_test_hook)


def split_bits(t):
    """r, the number of U's low bits that Algorithm 2 reads last, for t >= 1."""
    return max(0, (t - 1).bit_length() - _high_bits)


cdef uint64_t *_laplace_setup(LaplaceParams *lp, object t) except NULL:
    """U = H 2**r + L and the table of D's first factor: returns its `blocks` words (zeroed,
    filled on first use), which the caller frees."""
    cdef uint64_t *words
    r = split_bits(t)           # Python ints here: r may pass 64
    lp.r = r
    lp.blocks = ((t - 1) >> r) + 1
    if r == 0:
        lp.t_k = (t - 1).bit_length()                   # t > INVERSION_MAX >= 2: k >= 1
        lp.t_p = (t - 1) << (64 - lp.t_k)
    if r > 0 and not lp.t_small:
        lp.split.r = r
        lp.split.kh = (t - 1).bit_length() - r
        lp.split.top = lp.blocks - 1
        int_to_mpz(lp.split.low_digits, (t - 1) & ((1 << r) - 1))
    e = _exp_e(t, r)
    words = <uint64_t *>calloc(lp.blocks, sizeof(uint64_t))
    if words == NULL:
        raise MemoryError()
    dg_exp_table_init(&lp.exp_h, lp.T, r, e >> 64, e & 0xFFFFFFFFFFFFFFFF, words)
    return words


def exp_neg_floor(uint64_t n, uint64_t d, unsigned long k):
    """floor(2**k exp(-n/d)) for n >= 0, d >= 1, n/d <= 2**16 (for tests of the digits the core uses)."""
    cdef mpz_t z
    if d == 0 or n // d > 2**16:
        raise ValueError("need n >= 0, d >= 1, n/d <= 2**16")
    mpz_init(z)
    dg_exp_neg_floor(z, n, d, k)
    v = mpz_to_int(z)
    mpz_clear(z)
    return v


def exp_neg_prefix(n, d):
    """floor(2**64 exp(-n/d)) for integers 0 < n <= d, as the core computes it (128-bit
    fixed point, GMP when that cannot decide; words or GMP integers): for tests."""
    cdef mpz_t zn, zd
    if not 0 < n <= d:
        raise ValueError("need 0 < n <= d")
    if d < 2**64:
        return dg_exp_neg_prefix(n, d)
    mpz_init(zn)
    mpz_init(zd)
    try:
        int_to_mpz(zn, n)
        int_to_mpz(zd, d)
        return dg_exp_neg_prefix_mpz(zn, zd)
    finally:
        mpz_clear(zn)
        mpz_clear(zd)


cdef inline dg_u128 _u128(v):
    return (<dg_u128>(<uint64_t>(v >> 64)) << 64) | <uint64_t>(v & 0xFFFFFFFFFFFFFFFF)


def exp_neg_prefix_fix(x_fix, slack=1):
    """The fixed-point step alone: floor(2**64 exp(-x)) for every x in
    [x_fix, x_fix + slack) / 2**128, or None when it cannot decide: for tests."""
    cdef uint64_t w
    if not 0 <= x_fix < 2**128:
        raise ValueError("x_fix must be in [0, 2**128)")
    if not 1 <= slack < 2**128:
        raise ValueError("slack must be in [1, 2**128)")
    if dg_exp_neg_prefix_fix(_u128(x_fix), _u128(slack), &w):
        return w
    return None


def geometric_thresholds(uint64_t t):
    """Algorithm 2's inversion thresholds floor(2**64 exp(-x/t)), x = 1 .. K (the last
    non-zero), as the core computes them (fixed point with a GMP fallback): for tests."""
    cdef dg_geometric_table g
    cdef uint64_t *thr
    if not 1 <= t <= DG_INVERSION_MAX:
        raise ValueError(f"t must be in [1, {DG_INVERSION_MAX}]")
    thr = <uint64_t *>malloc(dg_geometric_table_size(t) * sizeof(uint64_t))
    if thr == NULL:
        raise MemoryError()
    try:
        e = _exp_e(t, 0)
        dg_geometric_table_init(&g, t, e >> 64, e & 0xFFFFFFFFFFFFFFFF, thr)
        return [thr[x] for x in range(1, g.count + 1)]
    finally:
        free(thr)


def exp_table(t, h_values):
    """The words floor(2**64 exp(-H 2**r / t)) of Algorithm 2's table for t (r = split_bits(t))
    at the given H (1 <= H < blocks), as the core computes them (fixed point with a GMP
    fallback): for tests."""
    cdef LaplaceParams lp
    cdef uint64_t *words = NULL
    if not t > DG_INVERSION_MAX:
        raise ValueError(f"t must be above {DG_INVERSION_MAX}")
    mpz_init(lp.T)
    mpz_init(lp.split.low_digits)
    try:
        int_to_mpz(lp.T, t)
        lp.t_small = _fits_word(lp.T)
        words = _laplace_setup(&lp, t)
        out = []
        for h in h_values:
            if not 1 <= h < lp.blocks:
                raise ValueError(f"H must be in [1, {lp.blocks})")
            out.append(dg_exp_table_prefix(&lp.exp_h, h))
        return out
    finally:
        mpz_clear(lp.T)
        mpz_clear(lp.split.low_digits)
        free(words)

cdef class _Job:
    """Everything one public call needs: parameters, scratch space, one bit stream."""
    cdef State s
    cdef uint64_t *buf
    cdef dg_os_ctx os_ctx
    cdef mpz_t *vals
    cdef TapeWords tape
    cdef dg_decider decider
    cdef uint64_t *exp_h    # Algorithm 2's table of digits
    cdef AcceptEntry *accept # Algorithm 3's cache of digits
    cdef uint64_t *geo_thr  # Algorithm 2's thresholds for the inversion
    cdef object source      # keeps a tape's arrays alive while C points into them
    cdef Py_ssize_t obj_chunk   # samples per stretch into an object array (vals has this many)

    def __cinit__(self):
        _work_init(&self.s.w)
        _params_init(&self.s.p)
        mpz_init(self.s.mu)
        mpz_init(self.decider.want_a)
        mpz_init(self.decider.want_b)
        self.buf = NULL
        self.vals = NULL
        self.exp_h = NULL
        self.accept = NULL
        self.geo_thr = NULL
        self.obj_chunk = 1

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.vals != NULL:
            for i in range(self.obj_chunk):
                mpz_clear(self.vals[i])
            free(self.vals)
        free(self.buf)
        free(self.exp_h)
        free(self.accept)
        free(self.geo_thr)
        mpz_clear(self.decider.want_a)
        mpz_clear(self.decider.want_b)
        mpz_clear(self.s.mu)
        _params_clear(&self.s.p)
        _work_clear(&self.s.w)

    cdef int setup(self, int kind, object num, object den, object mu, object source) except -1:
        cdef Params *p = &self.s.p
        cdef bitgen_t *bg
        self.s.kind = kind
        int_to_mpz(p.N, num)
        int_to_mpz(p.D, den)
        if kind == KIND_LAPLACE:
            mpz_set(p.lap.T, p.N)
            mpz_set(p.lap.S, p.D)
        elif kind == KIND_GAUSSIAN:
            # t = floor(sqrt(n/d)) + 1 = isqrt(floor(n/d)) + 1, exactly
            mpz_fdiv_q(p.lap.T, p.N, p.D)
            mpz_sqrt(p.lap.T, p.lap.T)
            mpz_add_ui(p.lap.T, p.lap.T, 1)
            mpz_set_ui(p.lap.S, 1)
            mpz_mul(p.DT, p.D, p.lap.T)
            mpz_mul(p.DEN, p.DT, p.lap.T)
            mpz_mul(p.DEN, p.DEN, p.N)
            mpz_mul_2exp(p.DEN, p.DEN, 1)
            p.small = (_fits_word(p.N) and _fits_word(p.DT)
                       and mpz_cmp_ui(p.DEN, DG_BERNOULLI_DMAX) <= 0)
            if p.small:
                p.n = mpz_get_ui(p.N)
                p.dt = mpz_get_ui(p.DT)
                p.den = mpz_get_ui(p.DEN)
            mpz_mul_2exp(p.TWO_N, p.N, 1)
            p.low_words = mpz_fits_ulong_p(p.D) and dg_mpz_get_u128(p.TWO_N, &p.two_n)
            p.d_one = mpz_cmp_ui(p.D, 1) == 0
            if p.low_words:
                p.d = mpz_get_ui(p.D)
        p.lap.t_small = _fits_word(p.lap.T)
        p.lap.small = p.lap.t_small and _fits_word(p.lap.S)
        p.lap.s_one = mpz_cmp_ui(p.lap.S, 1) == 0
        if p.lap.t_small:
            p.lap.t = mpz_get_ui(p.lap.T)
        if p.lap.small:
            p.lap.s = mpz_get_ui(p.lap.S)
        p.lap.inversion = p.lap.t_small and p.lap.t <= DG_INVERSION_MAX
        if p.lap.inversion and (kind == KIND_LAPLACE or kind == KIND_GAUSSIAN):
            self.geo_thr = <uint64_t *>malloc(dg_geometric_table_size(p.lap.t) * sizeof(uint64_t))
            if self.geo_thr == NULL:
                raise MemoryError()
            e = _exp_e(p.lap.t, 0)
            dg_geometric_table_init(&p.lap.geo, p.lap.t, e >> 64, e & 0xFFFFFFFFFFFFFFFF,
                                    self.geo_thr)
            p.lap.blocks = p.lap.t
        elif kind == KIND_LAPLACE or kind == KIND_GAUSSIAN:
            self.exp_h = _laplace_setup(&p.lap, mpz_to_int(p.lap.T))
        if kind == KIND_GAUSSIAN:
            p.accept_len = ACCEPT_CACHE_PER_T * p.lap.blocks
            # on cache lines, so that one block's 8 entries take two of them
            self.accept = <AcceptEntry *>aligned_alloc(64, p.accept_len * sizeof(AcceptEntry))
            if self.accept == NULL:
                raise MemoryError()
            memset(self.accept, 0, p.accept_len * sizeof(AcceptEntry))
            p.accept = self.accept
            if not p.lap.inversion:
                p.lap.warm = self.accept

        int_to_mpz(self.s.mu, mu)
        self.s.mu_small = mpz_fits_slong_p(self.s.mu)
        self.s.mu_zero = mpz_sgn(self.s.mu) == 0
        self.s.mu64 = mpz_get_si(self.s.mu) if self.s.mu_small else 0
        # a sample is about t/s + |mu| (or below N for uniform): stretches into an object array
        # keep about OBJECT_CHUNK_BYTES of GMP values, however large the values are
        value_bits = max(<Py_ssize_t>mpz_sizeinbase(p.lap.T, 2) - <Py_ssize_t>mpz_sizeinbase(p.lap.S, 2),
                         <Py_ssize_t>mpz_sizeinbase(self.s.mu, 2),
                         <Py_ssize_t>mpz_sizeinbase(p.N, 2) if kind == KIND_UNIFORM else 0) + 72
        self.obj_chunk = max(1, min(OBJECT_CHUNK, OBJECT_CHUNK_BYTES // (value_bits // 8 + 16)))

        self.source = source
        cdef size_t cap = OS_BUFFER_WORDS if source is None else 1
        self.buf = <uint64_t *>malloc(cap * sizeof(uint64_t))
        if self.buf == NULL:
            raise MemoryError()
        cdef dg_rng *rng = &self.s.rng
        if source is None:
            dg_rng_init(rng, dg_fill_os, &self.os_ctx, self.buf, cap, OS_FIRST_BLOCK)
        elif isinstance(source, _sources.Tape):
            self.tape.words = <const uint64_t *>cnp.PyArray_DATA(source.words)
            self.tape.count = source.words.size
            self.tape.pos = min(source.position, source.words.size)
            dg_rng_init(rng, fill_tape, &self.tape, self.buf, 1, 1)
            rng.bit_budget = source.bits_left
        elif isinstance(source, _sources.DecisionTape):
            self.decider.outcomes = <const uint64_t *>cnp.PyArray_DATA(source.outcomes)
            self.decider.count = source.outcomes.size
            self.decider.pos = 0
            self.decider.want = DG_WANT_NONE
            dg_rng_init(rng, fill_refuse, NULL, self.buf, 1, 1)
            rng.decider = &self.decider
            rng.stop_at_restart = source.stop_at_restart
        else:
            bg = <bitgen_t *>PyCapsule_GetPointer(source.capsule, "BitGenerator")
            # lazy: one word at a time, so a generator is left exactly where the oracle leaves it
            dg_rng_init(rng, fill_bitgen, bg, self.buf, 1, 1)
        return 0

    cdef int raise_status(self, int rc) except -1:
        if rc == DG_ERR_ENTROPY:
            err = self.os_ctx.err or _errno.EIO
            raise OSError(err, "dgauss could not read randomness from the operating system: "
                          + _os.strerror(err))
        if rc == DG_ERR_OVERFLOW:
            raise OverflowError("a sample does not fit in int64; pass dtype=object "
                                "to get exact Python ints")
        if rc == DG_ERR_LIMIT:
            raise RuntimeError("a rejection loop counter reached 2**64 - 1")
        if rc == DG_ERR_EXHAUSTED:
            raise _sources.Exhausted(self.pending_request())
        if rc == DG_ERR_RESTART:
            raise _sources.Restart()
        if rc == DG_ERR_RAW_BITS:
            raise RuntimeError("a sampler read raw bits in decision mode")
        if rc == DG_ERR_DECISION:
            raise ValueError("a decision tape outcome is outside its primitive's range")
        raise RuntimeError(f"dgauss core failed with status {rc}")

    cdef object pending_request(self):
        """What the primitive that exhausted a decision tape asked for (None for bits)."""
        if self.s.rng.decider == NULL:
            return None
        if self.decider.want == DG_WANT_UNIFORM:
            return ("uniform", mpz_to_int(self.decider.want_a))
        if self.decider.want == DG_WANT_BERNOULLI_EXP:
            return ("bernoulli_exp", Fraction(mpz_to_int(self.decider.want_a),
                                              mpz_to_int(self.decider.want_b)))
        return ("bernoulli", Fraction(mpz_to_int(self.decider.want_a), mpz_to_int(self.decider.want_b)))

    cdef int run(self, cnp.ndarray out) except -1:
        cdef Py_ssize_t n = out.shape[0], i = 0, m, k, item
        cdef int rc = DG_OK
        cdef char *data
        cdef bint is_bool
        cdef object[:] po
        if out.dtype.kind == "O":
            po = out
            if self.vals == NULL:
                self.vals = <mpz_t *>malloc(self.obj_chunk * sizeof(mpz_t))
                if self.vals == NULL:
                    raise MemoryError()
                for k in range(self.obj_chunk):
                    mpz_init(self.vals[k])
            while i < n and rc == DG_OK:
                m = min(self.obj_chunk, n - i)
                with nogil:
                    rc = fill_mpz(&self.s, self.vals, m)
                if rc == DG_OK:
                    for k in range(m):
                        po[i + k] = mpz_to_int(self.vals[k])
                i += m
                PyErr_CheckSignals()
        else:
            data = <char *>cnp.PyArray_DATA(out)
            is_bool = out.dtype.kind == "b"
            item = out.itemsize
            while i < n and rc == DG_OK:
                m = min(CHUNK, n - i)
                with nogil:
                    rc = fill_native(&self.s, data + i * item, is_bool, m)
                i += m
                PyErr_CheckSignals()
        if rc != DG_OK:
            self.raise_status(rc)
        return 0


def fill(int kind, object num, object den, object mu, object source, cnp.ndarray out,
         object next_slice=None):
    """Fill the 1-D contiguous array `out` (int64, bool or object) with samples.

    kind: BERNOULLI_EXP (parameter gamma = num/den), LAPLACE (scale num/den) or
    GAUSSIAN (sigma^2 = num/den); num/den reduced, validated by the caller.
    mu is added to each sample (ignored for BERNOULLI_EXP).  source is None
    for the OS CSPRNG, a numpy.random.BitGenerator (its lock is held for the
    whole call), or a testing Tape / DecisionTape (dgauss.testing).  With
    `next_slice` (OS source only), only the slices out[start:stop] it returns
    are filled, one after another from one bit stream, until it returns None:
    threads sharing one next_slice share out the work as they go.  Returns the
    number of random bits consumed.
    """
    if out.ndim != 1 or not out.flags.c_contiguous:
        raise ValueError("out must be a 1-D C-contiguous array")
    if out.dtype.kind not in "Oib" or (out.dtype.kind == "i" and out.dtype.itemsize != 8):
        raise TypeError("out must have dtype int64, bool or object")
    if next_slice is not None and source is not None:
        raise ValueError("next_slice needs source=None (the OS CSPRNG)")
    cdef _Job job = _Job()
    job.setup(kind, num, den, mu, source)
    if isinstance(source, np.random.BitGenerator):
        with source.lock:
            job.run(out)
        return dg_bits_used(&job.s.rng)
    try:
        if next_slice is None:
            job.run(out)
        else:
            for start, stop in iter(next_slice, None):
                job.run(out[start:stop])
    finally:
        if isinstance(source, _sources.Tape):
            source.position = job.tape.pos
    return dg_bits_used(&job.s.rng)


def _object_chunk_test_hook(int kind, object num, object den, object mu=0):
    """Test hook, not API: samples per stretch into an object array for these parameters."""
    cdef _Job job = _Job()
    job.setup(kind, num, den, mu, None)
    return job.obj_chunk


def _split_test_hook(unsigned long high_bits=HIGH_BITS):
    """Test hook, not API: draw U's top `high_bits` bits first (1..HIGH_BITS), so that small t
    split too; call with no argument to restore HIGH_BITS."""
    global _high_bits
    if not 1 <= high_bits <= HIGH_BITS:
        raise ValueError(f"high_bits must be in [1, {HIGH_BITS}]")
    _high_bits = high_bits


def _exp_test_hook(bint force_exact):
    """Test hook, not API: compute every table word of Algorithm 2 with GMP (the
    fallback of the fixed-point path), or not."""
    global dg_exp_test_force_exact
    dg_exp_test_force_exact = force_exact


def _os_test_hook(int fail_after=-1, int fail_count=0, int fail_errno=_errno.EIO, bint fake=False):
    """Test hook, not API: after `fail_after` successful OS reads, fail `fail_count`
    of them with `fail_errno`; `fake` serves the bytes of the SplitMix64 words
    0, 1, 2, ... in short reads interrupted by EINTR (csrc/dg_rng.c).  Call with no arguments to restore the real source."""
    dg_os_test_hook(fail_after, fail_count, fail_errno, fake)
