/* dg_inv.c -- inversion tables: the guide, the bit-by-bit start, the Gaussian's words.  See dg_inv.h. */
#include <gmp.h>

#include "dg_inv.h"

unsigned dg_inv_guide_bits(uint64_t count)
{
    unsigned g = 1;
    while (g < 16 && (UINT64_C(1) << g) < 2 * count)
        g++;
    return g < 4 ? 4 : g;
}

void dg_inv_init(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                 unsigned g)
{
    unsigned shift = 64 - g, below, above;
    uint64_t h, r, x = count + 1;       /* thr[count + 1] = 0 <= every r */
    for (h = 0; h < (UINT64_C(1) << g); h++) {
        while (x > 1 && (thr[x - 1] >> shift) <= h)
            x--;
        guide[h] = (uint32_t)x;
        if ((thr[x] >> shift) < h) {    /* no word in the bucket: its neighbours differ above bit g */
            r = h << shift;
            below = (unsigned)__builtin_clzll(r ^ thr[x]);
            above = (x > 1) ? (unsigned)__builtin_clzll(r ^ thr[x - 1]) : 0;
            guide[h] |= DG_GUIDE_DECIDED | (uint32_t)(1 + (below > above ? below : above)) << 24;
        }
    }
    tab->thr = thr;
    tab->count = count;
    tab->guide = guide;
    tab->shift = shift;
}

/* The first j with need <= j is the rule's stopping point: a smaller need would have
 * shown at an earlier j, as the bits after R's first j cannot move a threshold past R. */
int dg_inv_draw_bitwise(dg_rng *rng, const dg_inv_table *tab, uint64_t known, unsigned have,
                        uint64_t *y, uint64_t *r)
{
    unsigned j = have;
    uint64_t a = known;
    int b;
    while (j < 64) {
        b = dg_bit(rng);
        if (rng->status != DG_OK)
            return -1;
        a |= (uint64_t)b << (63 - j);
        j++;
        if (dg_inv_word(tab, a, y) <= j)
            return 0;
    }
    *r = a;
    return DG_INV_UNDECIDED;
}

/* floor(a b / 2**128) for a, b < 2**128 (as in dg_exp.c). */
static dg_u128 mul_fix(dg_u128 a, dg_u128 b)
{
    uint64_t ah = (uint64_t)(a >> 64), al = (uint64_t)a;
    uint64_t bh = (uint64_t)(b >> 64), bl = (uint64_t)b;
    dg_u128 ll = (dg_u128)al * bl;
    dg_u128 m1 = (dg_u128)ah * bl + (ll >> 64);
    dg_u128 m2 = (dg_u128)al * bh + (uint64_t)m1;
    return (dg_u128)ah * bh + (m1 >> 64) + (m2 >> 64);
}

/* Sums are kept in units of 2**-SUM_BITS: Z = 1 + 2 S_1 < 2**14 for sigma^2 <= 2**24, so
 * 2 Z 2**SUM_BITS < 2**127. */
#define SUM_BITS 112
#define STOP_UNITS (UINT64_C(1) << 28)     /* the rest below 2**-84: T_x < 2**-83 beyond */

/*
 * The terms w_k = exp(-c k^2), c = d/(2n), by the recurrence of
 * dgauss._inversion._gaussian_bounds in units of 2**-128: W_1 = e, R_1 = e q, W_{k+1} =
 * W_k R_k, R_{k+1} = R_k q, every product rounded down, so that W_k is a lower bound with
 * error below k^2 + k - 1 units.  Each term goes into the sums as lo_k = floor(W_k / 2**16)
 * and hi_k = floor((W_k + k^2 + k) / 2**16) + 1 (so lo_k <= 2**112 w_k < hi_k), until the
 * bound on the rest, hi_k (1 + 2n / (d (2k + 1))) >= sum_{k' >= k} 2**112 w_k', is below
 * STOP_UNITS (the ratio of consecutive terms from k on is at most exp(-c(2k + 1)), and
 * 1 / (1 - exp(-y)) <= 1 + 1/y).
 */
typedef struct gauss_terms {
    uint64_t n, d, k;
    dg_u128 e, q, w, r;
} gauss_terms;

static void terms_start(gauss_terms *t, uint64_t n, uint64_t d, dg_u128 e, dg_u128 q)
{
    t->n = n;
    t->d = d;
    t->e = e;
    t->q = q;
    t->k = 1;
    t->w = e;
    t->r = mul_fix(e, q);
}

/* lo_k, hi_k of the current term and the bound on the rest from it; 1 when the rest is
 * below STOP_UNITS (then the term is not used), else 0. */
static int terms_get(const gauss_terms *t, dg_u128 *lo, dg_u128 *hi, dg_u128 *rest)
{
    dg_u128 k = t->k;
    *lo = t->w >> (128 - SUM_BITS);
    *hi = ((t->w + k * k + k) >> (128 - SUM_BITS)) + 1;
    if (*hi >= ((dg_u128)1 << 40))
        return 0;
    *rest = *hi + (*hi * 2 * t->n + t->d * (2 * k + 1) - 1) / (t->d * (2 * k + 1));
    return *rest < STOP_UNITS;
}

static void terms_next(gauss_terms *t)
{
    t->w = mul_fix(t->w, t->r);
    t->r = mul_fix(t->r, t->q);
    t->k++;
}

static dg_u128 mpz_to_u128(const mpz_t z)
{
    return ((dg_u128)mpz_getlimbn(z, 1) << 64) | mpz_getlimbn(z, 0);
}

/*
 * T_x = 2 S_x / Z lies in [2 S_lo / Z_hi, 2 S_hi / Z_lo], with S_lo = sum of lo_k (k >= x),
 * S_hi = the rest's bound + sum of hi_k, Z = 1 + 2 S_1 likewise (units 2**-112).  With
 * V_lo = floor(2**239 / Z_hi) and V_hi = ceil(2**239 / Z_lo) (< 2**128 as Z >= 1):
 * f_lo = floor(mul_fix(2 S_lo, V_lo) / 2**47) <= floor(2**64 T_x) <= f_hi =
 * floor((mul_fix(2 S_hi, V_hi) + 1) / 2**47), since mul_fix(a, b) <= ab / 2**128 <
 * mul_fix(a, b) + 1 and 2 S V / 2**128 ~ 2**111 T_x.  When f_lo = f_hi, that is the word.
 */
int64_t dg_gauss_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, uint64_t *thr, uint64_t cap)
{
    gauss_terms t;
    dg_u128 lo, hi, rest = 0, lo_total = 0, hi_total, z_lo, z_hi, v_lo, v_hi, s_lo, s_hi, f_lo, f_hi;
    uint64_t x, terms = 0;
    mpz_t num, den;

    terms_start(&t, n, d, e, q);
    hi_total = 0;
    for (;;) {
        if (terms_get(&t, &lo, &hi, &rest))
            break;
        lo_total += lo;
        hi_total += hi;
        terms++;
        terms_next(&t);
    }
    hi_total += rest;
    z_lo = ((dg_u128)1 << SUM_BITS) + 2 * lo_total;
    z_hi = ((dg_u128)1 << SUM_BITS) + 2 * hi_total;

    mpz_inits(num, den, NULL);
    mpz_set_ui(num, 1);
    mpz_mul_2exp(num, num, 239);
    dg_mpz_set_u128(den, z_hi);
    mpz_fdiv_q(den, num, den);
    v_lo = mpz_to_u128(den);
    dg_mpz_set_u128(den, z_lo);
    mpz_cdiv_q(den, num, den);
    v_hi = mpz_to_u128(den);
    mpz_clears(num, den, NULL);

    thr[0] = UINT64_MAX;
    s_lo = lo_total;
    s_hi = hi_total;
    terms_start(&t, n, d, e, q);
    for (x = 1;; x++) {
        if (x + 1 >= cap)
            return -2;
        f_lo = mul_fix(2 * s_lo, v_lo) >> 47;
        f_hi = (mul_fix(2 * s_hi, v_hi) + 1) >> 47;
        if (f_lo != f_hi)
            return -1;
        if (f_hi == 0)
            break;
        thr[x] = (uint64_t)f_lo;
        if (x <= terms) {
            terms_get(&t, &lo, &hi, &rest);
            s_lo -= lo;
            s_hi -= hi;
            terms_next(&t);
        } else {
            return -1;      /* not reached: past the terms, T_x < 2**-83 */
        }
    }
    thr[x] = 0;
    return (int64_t)(x - 1);
}

/* ---- the discrete Laplace's three stages (dgauss._inversion.laplace_floors) ---- */

/* floor(2**g / d) (up = 0) or ceil(2**g / d) (up = 1) for 0 < d <= 2**128, as a u128
 * (the caller makes sure it fits); d_is_2_128 stands for d = 2**128. */
static dg_u128 recip(unsigned g, dg_u128 d, int d_is_2_128, int up)
{
    mpz_t num, den;
    dg_u128 v;
    mpz_inits(num, den, NULL);
    mpz_set_ui(num, 1);
    mpz_mul_2exp(num, num, g);
    if (d_is_2_128) {
        mpz_set_ui(den, 1);
        mpz_mul_2exp(den, den, 128);
    } else {
        dg_mpz_set_u128(den, d);
    }
    if (up)
        mpz_cdiv_q(num, num, den);
    else
        mpz_fdiv_q(num, num, den);
    v = mpz_to_u128(num);
    mpz_clears(num, den, NULL);
    return v;
}

/*
 * With p = exp(-1/scale), e1 = floor(2**128 p), eL = floor(2**128 p**block): the words of
 *   DG_LAPLACE_HEAD    T_x = p**x / ((1 + p)/2),                 x = 1 .. block,
 *   DG_LAPLACE_BLOCKS  T_v = p**(block v),                       v >= 1,
 *   DG_LAPLACE_OFFSET  T_u = (p**u - p**block) / (1 - p**block),  u = 1 .. block - 1,
 * into thr[1 .. K] up to the last non-zero word (thr[0] = 2**64 - 1, thr[K + 1] = 0).
 * P_m = e**m by products rounded down is a lower bound within 2m - 1 units of 2**-128
 * (dg_exp.c's table).  A ratio N/D with N in [N_lo, N_hi] and D in [D_lo, D_hi] (units
 * 2**-128) has floor(2**64 N/D) between floor(mul_fix(N_lo, V_lo) / 2**s) and
 * floor((mul_fix(N_hi, V_hi) + 1) / 2**s), V_lo = floor(2**(192+s) / D_hi),
 * V_hi = ceil(2**(192+s) / D_lo), as for the Gaussian; s = 62 for HEAD (D >= 1/2) and
 * s = 54 for OFFSET (D = 1 - p**block >= 2**-8.1 for scale <= 2**20).  Returns K, -1 when
 * a bound does not decide a word, -2 when cap is too small.
 */
int64_t dg_laplace_words(int stage, dg_u128 e1, dg_u128 el, uint64_t block, uint64_t *thr,
                         uint64_t cap)
{
    dg_u128 w, base = (stage == DG_LAPLACE_BLOCKS) ? el : e1, n_lo, n_hi, f_lo, f_hi;
    dg_u128 v_lo = 0, v_hi = 0;         /* HEAD and OFFSET: the reciprocal's bounds */
    dg_u128 d_lo = 0, one_minus = ~el;     /* 2**128 - 1 - eL */
    uint64_t m, last = 0;
    unsigned s = 0;
    thr[0] = UINT64_MAX;
    if (stage == DG_LAPLACE_HEAD) {
        s = 62;
        d_lo = ((dg_u128)1 << 127) + (e1 >> 1);         /* (2**128 + e1) / 2, rounded down */
        v_lo = recip(192 + s, d_lo + 1, 0, 0);           /* D <= (2**128 + e1 + 1) / 2 < d_lo + 1 */
        v_hi = recip(192 + s, d_lo, 0, 1);
    } else if (stage == DG_LAPLACE_OFFSET) {
        s = 54;
        v_lo = recip(192 + s, one_minus + 1, el == 0, 0);   /* D <= 2**128 - eL */
        v_hi = recip(192 + s, one_minus, 0, 1);             /* D >= 2**128 - eL - 1 */
    }
    w = base;
    for (m = 1;; m++) {
        if (stage != DG_LAPLACE_BLOCKS && m > (stage == DG_LAPLACE_HEAD ? block : block - 1))
            break;
        if (m + 1 >= cap)
            return -2;
        if (stage == DG_LAPLACE_BLOCKS) {
            f_lo = w >> 64;
            f_hi = (w + 2 * (dg_u128)m - 1) >> 64;
        } else {
            n_lo = w;
            n_hi = w + 2 * (dg_u128)m - 1;
            if (stage == DG_LAPLACE_OFFSET) {
                n_lo = (n_lo > el) ? n_lo - el - 1 : 0;      /* p**u - p**block >= P_u - (eL + 1) */
                n_hi -= el;
            }
            f_lo = mul_fix(n_lo, v_lo) >> s;
            f_hi = (mul_fix(n_hi, v_hi) + 1) >> s;
        }
        if (f_lo != f_hi)
            return -1;
        if (f_lo == 0 && stage == DG_LAPLACE_BLOCKS)
            break;
        thr[m] = (uint64_t)f_lo;
        if (f_lo != 0)
            last = m;
        w = mul_fix(w, base);
    }
    thr[last + 1] = 0;
    return (int64_t)last;
}
