/*
 * dg_prim.h -- the two primitives at the bottom of the paper's chain:
 * a uniform integer and Bernoulli(n/d).  Algorithms 1-3 (Bernoulli(exp(-g)),
 * discrete Laplace, discrete Gaussian) are built on these in dgauss/_core.pyx.
 *
 * Each comes twice: on machine words (the fast path) and on GMP integers.
 * Both versions read exactly the same bits for the same values, so a sampler
 * may switch between them at any point without changing its output.
 *
 * uniform(m), m >= 1:   m == 1 gives 0 and reads nothing; otherwise, with
 *     k = bit length of m - 1, draw x = k bits by rejection, deciding each
 *     try as early as its bits allow: compare the bits with the k binary
 *     digits of m - 1, one bit per digit.  At the first bit that differs, a
 *     1 (x > m - 1) ends the try and a new one starts; a 0 (x < m - 1) makes
 *     the remaining bits free: they are read and x returned.  When no bit
 *     differs, x = m - 1.  A try that succeeds reads k bits, one that fails
 *     stops at its first bit above m - 1's, so a draw reads k + O(1) bits on
 *     average instead of up to 2k.
 * bernoulli(n, d), 0 <= n, 1 <= d:   n >= d gives 1 and reads nothing.
 *     Otherwise a uniform U in [0, 1) is compared lazily with p = n/d: walk
 *     the binary expansion of p (r = 2r; digit = r >= d; r -= digit*d), read
 *     one bit per digit, and stop at the first bit that differs from the
 *     digit, returning the digit (U < p exactly when U's first differing bit
 *     is 0 where p's is 1).  When the remainder r reaches 0 every later digit
 *     of p is 0, so U >= p: return 0 without reading.  Expected bits: <= 2.
 *     The bits read depend only on the value n/d, never on its representation.
 *     (The word version gets 64 digits per division and compares them with
 *     the random bits a word at a time, reading exactly these bits; the GMP
 *     version takes its first digits, up to 64, from one division of the top
 *     words of n and d, and walks on only past them.)
 *
 * Return value: the result (>= 0), or -1 when the bit source failed
 * (rng->status says why).
 */
#ifndef DG_PRIM_H
#define DG_PRIM_H

#include <gmp.h>
#include <limits.h>
#include <stdint.h>

#include "dg_rng.h"

#if ULONG_MAX < UINT64_MAX
#error "dgauss needs a 64-bit unsigned long (LP64) to pass words to GMP"
#endif
#if GMP_NUMB_BITS != 64
#error "dgauss reads GMP integers a 64-bit limb at a time"
#endif

/* Largest denominator the word Bernoulli accepts: r < d keeps 2r < 2**64. */
#define DG_BERNOULLI_DMAX (UINT64_C(1) << 63)

/* Checked word arithmetic: 1 and *r = a op b when it fits, else 0. */
static inline int dg_mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
static inline int dg_add_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline int dg_add_i64(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

#define DG_COLD __attribute__((noinline, cold))
/* A step of a batch loop the compiler must not leave out of line (dg_inv.h's fused steps). */
#define DG_HOT_INLINE inline __attribute__((always_inline))

/* Decision mode (testing; see below), out of line so that the bit loops stay tight. */
DG_COLD int dg_decide_uniform_u64(dg_rng *rng, uint64_t m, uint64_t *out);
DG_COLD int dg_decide_bernoulli_u64(dg_rng *rng, uint64_t n, uint64_t d);
DG_COLD int dg_decide_fair_bit(dg_rng *rng);
DG_COLD int dg_decide_bernoulli_exp(dg_rng *rng, uint64_t n, uint64_t d);
DG_COLD int dg_decide_bernoulli_exp_mpz(dg_rng *rng, const mpz_t n, const mpz_t d);

/* `out` must not be `m` */
int dg_uniform_mpz(dg_rng *rng, const mpz_t m, mpz_t out);
/* `rem` is scratch, distinct from n and d */
int dg_bernoulli_mpz(dg_rng *rng, const mpz_t n, const mpz_t d, mpz_t rem);

/* Two-word integers (unsigned __int128): the numbers of Algorithms 1 and 3
 * between the word path and GMP. */
#ifndef __SIZEOF_INT128__
#error "dgauss needs a compiler with unsigned __int128"
#endif
typedef unsigned __int128 dg_u128;

#define DG_U128_MAX (~(dg_u128)0)

static inline int dg_mul_u128(dg_u128 a, dg_u128 b, dg_u128 *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* Bernoulli(n/d), 1 <= d; the same bits as dg_bernoulli_u64 and dg_bernoulli_mpz. */
int dg_bernoulli_u128(dg_rng *rng, dg_u128 n, dg_u128 d);

static inline void dg_mpz_set_u128(mpz_t z, dg_u128 v)
{
    mpz_set_ui(z, (unsigned long)(v >> 64));
    mpz_mul_2exp(z, z, 64);
    mpz_add_ui(z, z, (unsigned long)v);
}

/* v = z when 0 <= z < 2**127 (1), else 0. */
static inline int dg_mpz_get_u128(const mpz_t z, dg_u128 *v)
{
    if (mpz_sgn(z) < 0 || mpz_sizeinbase(z, 2) > 127)
        return 0;
    *v = (dg_u128)mpz_getlimbn(z, 1) << 64 | mpz_getlimbn(z, 0);
    return 1;
}

/* q = floor(n 2**64 / d), *r = n 2**64 mod d, for n < d (so q < 2**64). */
static inline uint64_t dg_div_shift64(uint64_t n, uint64_t d, uint64_t *r)
{
#if defined(__x86_64__)
    uint64_t q, rem;
    __asm__("divq %4" : "=a"(q), "=d"(rem) : "a"((uint64_t)0), "d"(n), "rm"(d));
    *r = rem;
    return q;
#else
    unsigned __int128 x = (unsigned __int128)n << 64;
    *r = (uint64_t)(x % d);
    return (uint64_t)(x / d);
#endif
}

/*
 * Compare the next random bits with the `left` (1..64) binary digits at the
 * top of `p`, a word at a time, reading bits only up to the first difference.
 * Returns that digit of p (0 or 1), DG_DIGITS_MATCH when all `left` matched
 * (all of them read), or -1 when the bit source failed; *read is the number
 * of bits read (the first difference's position + 1, or `left`).
 */
#define DG_DIGITS_MATCH 2
static inline int dg_compare_digits_at(dg_rng *rng, uint64_t p, unsigned left, unsigned *read)
{
    uint64_t diff = rng->cur ^ p;
    unsigned m, pos = (diff != 0) ? (unsigned)__builtin_clzll(diff) : 64, done = 0;
    if (pos < rng->avail && pos < left) {
        /* the usual case: the first difference lies among this word's unread bits */
        rng->cur = (rng->cur << pos) << 1;
        rng->avail -= pos + 1;
        *read = pos + 1;
        return (int)((p >> (63 - pos)) & 1);
    }
    for (;;) {
        if (rng->avail == 0 && dg_rng_next_word(rng) < 0)
            return -1;
        m = rng->avail < left ? rng->avail : left;
        diff = rng->cur ^ p;
        if (m < 64)
            diff &= ~(UINT64_MAX >> m);
        if (diff != 0) {
            pos = (unsigned)__builtin_clzll(diff);      /* first difference, < m */
            rng->cur = (pos == 63) ? 0 : rng->cur << (pos + 1);
            rng->avail -= pos + 1;
            *read = done + pos + 1;
            return (int)((p >> (63 - pos)) & 1);
        }
        rng->cur = (m == 64) ? 0 : rng->cur << m;
        rng->avail -= m;
        p = (m == 64) ? 0 : p << m;
        left -= m;
        done += m;
        if (left == 0) {
            *read = done;
            return DG_DIGITS_MATCH;
        }
    }
}

static inline int dg_compare_digits(dg_rng *rng, uint64_t p, unsigned left)
{
    unsigned read;
    return dg_compare_digits_at(rng, p, left, &read);
}

/*
 * One try of uniform(m)'s rejection on a chunk of c (1..64) bits whose
 * digits in m - 1 are the top c bits of `p`: DG_DIGITS_MATCH (*x = those
 * digits), 1 (below them: *x is the chunk, its free bits read too), 0
 * (above: the try failed) or -1 (the bit source failed).
 */
static inline int dg_uniform_chunk(dg_rng *rng, uint64_t p, unsigned c, uint64_t *x)
{
    unsigned read, rest, used;
    uint64_t top, d;
    int r;
    if (c <= rng->avail) {
        /* the whole chunk is in this word: look at it before taking its bits (below or
         * equal: all c; above: up to the first digit that differs) */
        top = rng->cur >> (64 - c);
        d = p >> (64 - c);
        used = (top <= d) ? c : (unsigned)__builtin_clzll(rng->cur ^ p) + 1;
        rng->cur = (used == 64) ? 0 : rng->cur << used;
        rng->avail -= used;
        *x = top;
        return (top < d) ? 1 : (top == d) ? DG_DIGITS_MATCH : 0;
    }
    r = dg_compare_digits_at(rng, p, c, &read);
    if (r == DG_DIGITS_MATCH) {
        *x = p >> (64 - c);
    } else if (r == 1) {
        /* the bits agreed with p's first read - 1 digits, then a 0 where p has a 1 */
        top = (read == 1) ? 0 : p & ~(UINT64_MAX >> (read - 1));
        *x = top >> (64 - c);
        rest = c - read;
        if (rest > 0)
            *x |= dg_bits(rng, rest);
        if (rng->status != DG_OK)
            return -1;
    }
    return r;
}

/* The word versions are inline: they run in every sampler's innermost loop.
 * uniform(m) for m >= 2 with k = bitlength(m - 1) and p = (m - 1) << (64 - k) given
 * (callers drawing often from one m compute them once). */
static inline int dg_uniform_u64_kp(dg_rng *rng, uint64_t m, unsigned k, uint64_t p, uint64_t *out)
{
    unsigned used;
    uint64_t x;
    int r;
    if (__builtin_expect(rng->decider != NULL, 0))
        return dg_decide_uniform_u64(rng, m, out);
    for (;;) {
        if (k <= rng->avail) {
            /* the whole try is in this word: look at it before taking its bits (the look
             * in dg_uniform_chunk, with one comparison against m instead of three against
             * m - 1's digits: 3% of a sample at sigma^2 = 10^6, so kept apart) */
            x = rng->cur >> (64 - k);
            used = (x < m) ? k : (unsigned)__builtin_clzll(rng->cur ^ p) + 1;
            rng->cur = (used == 64) ? 0 : rng->cur << used;
            rng->avail -= used;
            if (x < m) {
                *out = x;
                return 0;
            }
        } else {
            r = dg_uniform_chunk(rng, p, k, out);
            if (r != 0)
                return r < 0 ? -1 : 0;
        }
    }
}

static inline int dg_uniform_u64(dg_rng *rng, uint64_t m, uint64_t *out)
{
    unsigned k;
    if (m <= 1) {
        *out = 0;
        return 0;
    }
    k = 64u - (unsigned)__builtin_clzll(m - 1);   /* m >= 2 */
    return dg_uniform_u64_kp(rng, m, k, (m - 1) << (64 - k), out);
}

/*
 * uniform(m) in two parts, U = H 2**r + L with 1 <= r < bitlength(m - 1):
 * the tries of uniform(m), except that a try below m - 1 within H's digits
 * (its first bitlength(m - 1) - r) reads only the rest of H and leaves L, r
 * free bits, unread for the caller (dg_bits, dg_bits_mpz).  A try that matches
 * m - 1 through H's digits goes on through L's digits, as uniform(m) does.
 * Returns 0 (H in *h, L unread), 1 (H and L read), or -1 when the bit source
 * failed.  In decision mode U is one uniform(m) decision, split (1).
 */
static inline int dg_uniform_split_u64(dg_rng *rng, uint64_t m, unsigned r, uint64_t *h,
                                       uint64_t *low)
{
    unsigned k, kh;
    int c;
    if (__builtin_expect(rng->decider != NULL, 0)) {
        if (dg_decide_uniform_u64(rng, m, h) < 0)
            return -1;
        *low = *h & ((UINT64_C(1) << r) - 1);
        *h >>= r;
        return 1;
    }
    k = 64u - (unsigned)__builtin_clzll(m - 1);
    kh = k - r;
    for (;;) {
        c = dg_uniform_chunk(rng, ((m - 1) >> r) << (64 - kh), kh, h);
        if (c == 1 || c < 0)
            return c < 0 ? -1 : 0;
        if (c == 0)
            continue;
        /* H matched m - 1's: L's digits decide the try */
        c = dg_uniform_chunk(rng, (m - 1) << (64 - r), r, low);
        if (c != 0)
            return c < 0 ? -1 : 1;
    }
}

/* m - 1's digits for dg_uniform_split_mpz: H's and L's */
typedef struct dg_split {
    unsigned long r;        /* L's bits, >= 1 */
    unsigned kh;            /* H's bits: bitlength(m - 1) - r, 1..64 */
    uint64_t top;           /* floor((m - 1) / 2**r) */
    mpz_t low_digits;       /* (m - 1) mod 2**r */
} dg_split;

/* dg_uniform_split_mpz after H's first try, which matched m - 1's digits when
 * `matched` (H in *h) and else failed (or was not made). */
int dg_uniform_split_mpz_from(dg_rng *rng, const mpz_t m, const dg_split *sp, uint64_t *h,
                              mpz_t low, int matched);

/* dg_uniform_split_u64 for m of any size (L in `low`); H's tries inline while they lie
 * in the current word */
static inline int dg_uniform_split_mpz(dg_rng *rng, const mpz_t m, const dg_split *sp,
                                       uint64_t *h, mpz_t low)
{
    int c = 0;
    if (__builtin_expect(rng->decider == NULL, 1)) {
        while (sp->kh <= rng->avail) {
            c = dg_uniform_chunk(rng, sp->top << (64 - sp->kh), sp->kh, h);
            if (c == 1)
                return 0;
            if (c == DG_DIGITS_MATCH)
                break;
        }
    }
    return dg_uniform_split_mpz_from(rng, m, sp, h, low, c == DG_DIGITS_MATCH);
}

/* out = the next r bits, first bit most significant; 0, or -1 when the bit source failed. */
int dg_bits_mpz(dg_rng *rng, unsigned long r, mpz_t out);

/*
 * requires 1 <= d <= DG_BERNOULLI_DMAX.  The digits of n/d come 64 at a time
 * (one division) and are compared with the random bits a word at a time,
 * reading exactly the bits of the one-digit-at-a-time walk described above:
 * up to the first difference, or up to p's last 1 digit when p's expansion
 * ends.
 */
static inline int dg_bernoulli_u64(dg_rng *rng, uint64_t n, uint64_t d)
{
    uint64_t p, r;
    unsigned left;
    int c;
    if (n >= d)
        return 1;
    if (__builtin_expect(rng->decider != NULL, 0))
        return dg_decide_bernoulli_u64(rng, n, d);
    while (n != 0) {
        p = dg_div_shift64(n, d, &r);       /* the next 64 digits; p != 0 unless r != 0 */
        left = (r != 0) ? 64 : 64 - (unsigned)__builtin_ctzll(p);
        c = dg_compare_digits(rng, p, left);
        if (c != DG_DIGITS_MATCH)
            return c;
        n = r;
    }
    return 0;
}

/* Bernoulli(1/2) as one raw bit (the discrete Laplace's sign); -1 on failure. */
static inline int dg_fair_bit(dg_rng *rng)
{
    int b;
    if (__builtin_expect(rng->decider != NULL, 0))
        return dg_decide_fair_bit(rng);
    b = dg_bit(rng);
    return rng->status == DG_OK ? b : -1;
}

/*
 * Decision mode, for dgauss.testing only.  With rng->decider set, the three
 * primitives above read no bits: each takes its outcome from `outcomes`
 * (0/1 for a Bernoulli, 0..m-1 for uniform(m)), in call order; so does
 * Bernoulli(exp(-n/d)) by digits (dg_exp.h), as one decision.  The cases that
 * read nothing in bit mode (uniform(1), p = 0, p >= 1) take no outcome here
 * either.  When the list is used up, the primitive records what it asked for
 * in `want` (p = want_a/want_b, exp(-want_a/want_b), or m = want_a) and fails with
 * DG_ERR_EXHAUSTED, so that a checker can branch on every outcome with its
 * exact probability.
 */
enum { DG_WANT_NONE = 0, DG_WANT_BERNOULLI = 1, DG_WANT_UNIFORM = 2, DG_WANT_BERNOULLI_EXP = 3 };

typedef struct dg_decider {
    const uint64_t *outcomes;
    size_t count, pos;
    int want;
    mpz_t want_a, want_b;
} dg_decider;

#endif /* DG_PRIM_H */
