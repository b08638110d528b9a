/*
 * dg_exp.h -- Bernoulli(exp(-g)) by comparison with the binary digits of exp(-g).
 *
 * For a rational 0 < g <= 1, p = exp(-g) is irrational (Lindemann), so its
 * binary expansion p = 0.p1 p2 p3 ... is unique and never ends.  Bernoulli(p)
 * compares a lazy uniform U = 0.b1 b2 ... with p: read one bit per digit, stop
 * at the first j with b_j != p_j and return p_j (U < p exactly when U has 0
 * where p has 1).  It reads 2 bits on average, and the bits it reads depend
 * only on p: this is the Bernoulli(n/d) primitive of dg_prim.h applied to an
 * irrational p, and it reads exactly the bits that primitive would.
 *
 * The first 64 digits are one word, floor(2**64 p), taken from a table or a
 * constant and compared with the random bits a word at a time (the bits are
 * still consumed only up to the first difference).  Digits beyond the 64th,
 * needed with probability 2**-64, are computed exactly with GMP.
 *
 * dgauss uses this for Bernoulli(exp(-1)) (Algorithms 1 and 2), for
 * Algorithm 2's Bernoulli(exp(-H 2**r / t)) (U's top part H, a table below)
 * and for the fractional part of Algorithm 3's acceptance; the small factors
 * left once U's low bits are read go through Algorithm 1 (dgauss/_core.pyx).  The same comparison, with many thresholds
 * at once, draws Algorithm 2's X ~ Geometric(1 - exp(-1/t)) by inversion when
 * t <= DG_INVERSION_MAX (below).  dgauss.reference computes the same digits
 * from exact rational bounds.
 *
 * Nothing here uses floating point.
 */
#ifndef DG_EXP_H
#define DG_EXP_H

#include <gmp.h>
#include <stdint.h>

#include "dg_prim.h"
#include "dg_rng.h"

/* dg_u128: see dg_prim.h */

/* floor(2**64 / e): the first 64 binary digits of exp(-1) (the tests check it against GMP). */
#define DG_EXP_M1_PREFIX UINT64_C(0x5E2D58D8B3BCDF1A)


/* out = floor(2**k exp(-n/d)) exactly, for n >= 0, d >= 1 (GMP). */
void dg_exp_neg_floor(mpz_t out, uint64_t n, uint64_t d, unsigned long k);
void dg_exp_neg_floor_mpz(mpz_t out, const mpz_t n, const mpz_t d, unsigned long k);

/* Fills the constants of dg_exp_neg_prefix_fix; call once before any other function here. */
void dg_exp_init(void);

/*
 * The first 64 digits floor(2**64 exp(-x)) in 128-bit fixed point (a product
 * of four table words and a three-term series, dg_exp.c), for every real x in
 * [x_fix, x_fix + slack) / 2**128, 0 <= x < 1: 1 and *prefix when the proven
 * error interval decides them, else 0 (then use GMP).  slack = 1 when
 * x_fix = floor(2**128 x).
 */
int dg_exp_neg_prefix_fix(dg_u128 x_fix, dg_u128 slack, uint64_t *prefix);

/* floor(2**64 exp(-n/d)), the first 64 digits, for 0 < n <= d: the fixed
 * point above, or GMP when it cannot decide. */
uint64_t dg_exp_neg_prefix(uint64_t n, uint64_t d, int fixed_point);
uint64_t dg_exp_neg_prefix_mpz(const mpz_t n, const mpz_t d, int fixed_point);

/*
 * Algorithm 2's table: digits of p_u = exp(-u 2**shift / t) for u = 1 .. size - 1,
 * where u 2**shift < t (U's top part H, dgauss/_core.pyx), computed on first use
 * from e = floor(2**128 exp(-2**shift / t)): e**u in 128-bit fixed point, every
 * product rounded down, is a lower bound within 2u - 1 units of 2**128 p_u (the
 * proof is in dg_exp.c); when that interval straddles a multiple of 2**64 the
 * word is computed with GMP instead.
 */
typedef struct dg_exp_table {
    unsigned long shift;
    mpz_srcptr t;       /* kept alive by the caller */
    dg_u128 e;          /* floor(2**128 exp(-2**shift / t)) */
    uint64_t *prefix;   /* floor(2**64 p_u), or 0 while not computed (p_u > 1/e) */
    int fixed_point;    /* 0: every word by GMP (the same words; for tests) */
} dg_exp_table;

/* `prefix` must hold `size` zeroed words, (size - 1) 2**shift < t;
 * e_hi 2**64 + e_lo = floor(2**128 exp(-2**shift / t)). */
void dg_exp_table_init(dg_exp_table *tab, const mpz_t t, unsigned long shift, uint64_t e_hi,
                       uint64_t e_lo, uint64_t *prefix, int fixed_point);
uint64_t dg_exp_table_compute(dg_exp_table *tab, uint64_t u);


/* floor(2**64 exp(-u 2**shift / t)) for 1 <= u < size. */
static inline uint64_t dg_exp_table_prefix(dg_exp_table *tab, uint64_t u)
{
    uint64_t w = tab->prefix[u];
    return w != 0 ? w : dg_exp_table_compute(tab, u);
}

/* The comparison from digit 65 on, one bit at a time, digits from GMP. */
int dg_exp_digits_tail(dg_rng *rng, uint64_t n, uint64_t d);
int dg_exp_digits_tail_mpz(dg_rng *rng, const mpz_t n, const mpz_t d);

/*
 * Bernoulli(exp(-n/d)) for 0 < n <= d, given prefix = floor(2**64 exp(-n/d)):
 * 1 or 0, or -1 when the bit source failed.
 */
static inline int dg_bernoulli_exp_digits(dg_rng *rng, uint64_t prefix, uint64_t n, uint64_t d)
{
    int c;
    if (__builtin_expect(rng->decider != NULL, 0))
        return dg_decide_bernoulli_exp(rng, n, d);
    c = dg_compare_digits(rng, prefix, 64);
    return c != DG_DIGITS_MATCH ? c : dg_exp_digits_tail(rng, n, d);
}

/*
 * Geometric(1 - exp(-1/t)) by inversion: X = #{x >= 1 : R < exp(-x/t)} for a
 * uniform R = 0.b1 b2 ... in [0, 1), so P(X >= x) = exp(-x/t).  R is read
 * lazily, one bit per digit in principle: reading stops at the first j such
 * that no threshold exp(-x/t) has the same first j binary digits as R (the
 * thresholds are irrational, so each lies strictly inside one dyadic interval
 * of every length).  dgauss.reference.geometric_by_inversion does exactly
 * this one bit at a time; here the first 64 digits of the thresholds are a
 * table of words and R's next 64 bits are compared with them a word at a time.
 * Algorithm 2 draws X = U + tV this way when t <= DG_INVERSION_MAX.
 */
#define DG_INVERSION_MAX 8

typedef struct dg_geometric_table {
    uint64_t t;
    uint64_t count;         /* K: thr[K] > 0 = thr[K + 1] */
    uint64_t *thr;          /* K + 2 words: thr[x] = floor(2**64 exp(-x/t)); thr[0] unused */
} dg_geometric_table;

/* Words needed for t: K + 2 with K = the last x where exp(-x/t) >= 2**-64. */
uint64_t dg_geometric_table_size(uint64_t t);
/* Fills `thr` (dg_geometric_table_size(t) words) from e_hi 2**64 + e_lo = floor(2**128 exp(-1/t)). */
void dg_geometric_table_init(dg_geometric_table *g, uint64_t t, uint64_t e_hi, uint64_t e_lo,
                             uint64_t *thr, int fixed_point);

/* The bit-at-a-time comparison (GMP thresholds), after the first `nknown`
 * bits of R, given left-aligned in `known`, were taken: for ties at 64 digits. */
int dg_geometric_slow(dg_rng *rng, uint64_t t, uint64_t known, unsigned nknown, uint64_t *out);
DG_COLD int dg_decide_geometric(dg_rng *rng, uint64_t t, uint64_t *out);

/* X for the 64 bits r, or 0 bits decided: returns the bits needed (1..64), or 65 on a tie. */
static inline unsigned dg_geometric_word(const dg_geometric_table *g, uint64_t r, uint64_t *x)
{
    const uint64_t *thr = g->thr;
    uint64_t i = 1;
    unsigned lo, hi;
    while (thr[i] > r)                  /* thr[K + 1] = 0 stops it */
        i++;
    *x = i - 1;
    if (thr[i] == r)                    /* R's 64 bits equal a threshold's (r = 0 included) */
        return 65;
    lo = (unsigned)__builtin_clzll(r ^ thr[i]);
    hi = (i > 1) ? (unsigned)__builtin_clzll(r ^ thr[i - 1]) : 0;
    return 1 + (lo > hi ? lo : hi);
}

/* X ~ Geometric(1 - exp(-1/t)) into *out: 0, or -1 when the bit source failed. */
static inline int dg_geometric_exp(dg_rng *rng, const dg_geometric_table *g, uint64_t *out)
{
    uint64_t r, x, first;
    unsigned need, have;
    if (__builtin_expect(rng->decider != NULL, 0))
        return dg_decide_geometric(rng, g->t, out);
    if (rng->avail == 0 && dg_rng_next_word(rng) < 0)
        return -1;
    need = dg_geometric_word(g, rng->cur, &x);  /* unread bits as zeros: valid if need <= avail */
    if (need <= rng->avail) {
        rng->cur = (need == 64) ? 0 : rng->cur << need;
        rng->avail -= need;
        *out = x;
        return 0;
    }
    /* R's first 64 bits run into the next word */
    have = rng->avail;
    first = rng->cur;
    if (have < 64) {
        if (dg_rng_next_word(rng) < 0)
            return -1;
        r = first | (rng->cur >> have);
        need = dg_geometric_word(g, r, &x);  /* r holds 64 bits of R: a tie (65) needs more */
        if (need <= 64 && need <= have + rng->avail) {
            need -= have;
            rng->cur = (need == 64) ? 0 : rng->cur << need;
            rng->avail -= need;
            *out = x;
            return 0;
        }
        return dg_geometric_slow(rng, g->t, first, have, out);
    }
    rng->cur = 0;
    rng->avail = 0;
    return dg_geometric_slow(rng, g->t, first, 64, out);
}

#endif /* DG_EXP_H */
