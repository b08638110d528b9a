/* dg_inv.c -- inversion tables: the guide, the bit-by-bit start, the Gaussian's words.  See dg_inv.h. */
#include <gmp.h>

#include "dg_exp.h"
#include "dg_inv.h"

unsigned dg_inv_guide_bits(uint64_t count)
{
    unsigned g = 1;
    while (g < 16 && (UINT64_C(1) << g) < 4 * count)
        g++;
    return g < 4 ? 4 : g;
}

void dg_inv_init(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                 unsigned g)
{
    dg_inv_init_shift(tab, thr, count, guide, g, 64 - g);
}

void dg_inv_init_shift(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                       unsigned g, unsigned shift)
{
    unsigned below, above;
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

#define mul_fix dg_mul_fix

/* Sums are kept in units of 2**-SUM_BITS: Z = 1 + 2 S_1 < 2**14 for sigma^2 <= 2**24, so
 * 2 Z 2**SUM_BITS < 2**127. */
#define SUM_BITS 112
#define STOP_UNITS (UINT64_C(1) << 28)     /* the rest below 2**-84: T_x < 2**-83 beyond */

static dg_u128 mpz_to_u128(const mpz_t z)
{
    return ((dg_u128)mpz_getlimbn(z, 1) << 64) | mpz_getlimbn(z, 0);
}

/* floor(2**g / d) (up = 0) or ceil(2**g / d) (up = 1) for 0 < d < 2**128 (GMP). */
static dg_u128 recip(unsigned g, dg_u128 d, int up)
{
    mpz_t num, den;
    dg_u128 v;
    mpz_inits(num, den, NULL);
    mpz_set_ui(num, 1);
    mpz_mul_2exp(num, num, g);
    dg_mpz_set_u128(den, d);
    if (up)
        mpz_cdiv_q(num, num, den);
    else
        mpz_fdiv_q(num, num, den);
    v = mpz_to_u128(num);
    mpz_clears(num, den, NULL);
    return v;
}

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


/*
 * T_x = w S_x / Z (w = weight: 2, or 1 one-sided) lies in [w S_lo / Z_hi, w S_hi / Z_lo], with
 * S_lo = sum of lo_k (k >= x), S_hi = the rest's bound + sum of hi_k, Z = 1 + w S_1 likewise
 * (units 2**-112).  With V_lo = floor(2**239 / Z_hi) and V_hi = ceil(2**239 / Z_lo) (< 2**128
 * as Z >= 1): f_lo = floor(mul_fix(w S_lo, V_lo) / 2**47) <= floor(2**64 T_x) <= f_hi =
 * floor((mul_fix(w S_hi, V_hi) + 1) / 2**47), since mul_fix(a, b) <= ab / 2**128 <
 * mul_fix(a, b) + 1 and w S V / 2**128 ~ 2**111 T_x.  When f_lo = f_hi, that is the word.
 */
int64_t dg_gauss_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned weight,
                       uint64_t *thr, uint64_t cap)
{
    gauss_terms t;
    dg_u128 lo, hi, rest = 0, lo_total = 0, hi_total, z_lo, z_hi, v_lo, v_hi, s_lo, s_hi, f_lo, f_hi;
    uint64_t x, terms = 0;

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
    z_lo = ((dg_u128)1 << SUM_BITS) + weight * lo_total;
    z_hi = ((dg_u128)1 << SUM_BITS) + weight * hi_total;

    v_lo = recip(239, z_hi, 0);
    v_hi = recip(239, z_lo, 1);

    thr[0] = UINT64_MAX;
    s_lo = lo_total;
    s_hi = hi_total;
    terms_start(&t, n, d, e, q);
    for (x = 1;; x++) {
        if (x + 1 >= cap)
            return -2;
        f_lo = mul_fix(weight * s_lo, v_lo) >> 47;
        f_hi = (mul_fix(weight * s_hi, v_hi) + 1) >> 47;
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

/*
 * The geometric's words floor(2**64 p**x), x = 1 .. count, from e1 = floor(2**128 p): P_x = e1**x
 * by products rounded down is a lower bound within 2x - 1 units of 2**128 p**x (dg_exp.c's
 * table), so the word is P_x >> 64 when (P_x + 2x - 1) >> 64 agrees; else thr[x] = 0 and
 * undecided[x] = 1 (the caller computes it exactly).  Into thr[1 .. K] up to the last x whose
 * upper bound is not below 2**64 (thr[0] = 2**64 - 1, thr[K + 1] = 0; count + 2 words);
 * returns K.
 */
uint64_t dg_geometric_words(dg_u128 e1, uint64_t count, uint64_t *thr, uint8_t *undecided)
{
    dg_u128 w = e1, top;
    uint64_t x, last = 0;
    thr[0] = UINT64_MAX;
    for (x = 1; x <= count; x++) {
        top = w + 2 * (dg_u128)x - 1;
        if ((top >> 64) == 0)
            break;                      /* p**x < 2**-64, and every later one */
        undecided[x] = (w >> 64) != (top >> 64);
        thr[x] = undecided[x] ? 0 : (uint64_t)(w >> 64);
        last = x;
        w = mul_fix(w, e1);
    }
    thr[last + 1] = 0;
    return last;
}

/*
 * floor(2**64 N/D) for N in [n_lo, n_hi) and D in [d_lo, d_hi] (the residuals' words; units
 * alike, n_hi < 2**127, 2**66 <= d_lo <= d_hi < 2**127).  With z the bit length of d_lo,
 * V = 2**(z + 126)/D lies in [v_lo, v_hi] (v_hi <= 2**127 as D >= 2**(z - 1)), and
 * mul_fix(N, V) ~ 2**(z - 2) N/D, so the word lies between floor(mul_fix(n_lo, v_lo) / 2**sh)
 * and floor((mul_fix(n_hi, v_hi) + 1) / 2**sh), sh = z - 66, as in dg_gauss_words.
 */
typedef struct ratio {
    dg_u128 v_lo, v_hi;
    unsigned sh;
} ratio;

/* 1, or 0 when D is outside the range above. */
static int ratio_setup(ratio *rt, dg_u128 d_lo, dg_u128 d_hi)
{
    unsigned z = 128 - (unsigned)((d_lo >> 64) ? __builtin_clzll((uint64_t)(d_lo >> 64))
                                               : 64 + __builtin_clzll((uint64_t)d_lo));
    if (d_lo == 0 || z < 67 || z > 127 || d_hi < d_lo)
        return 0;
    rt->v_lo = recip(z + 126, d_hi, 0);
    rt->v_hi = recip(z + 126, d_lo, 1);
    rt->sh = z - 66;
    return 1;
}

/* 1 and *w when the bounds decide the word, else 0. */
static int ratio_word(const ratio *rt, dg_u128 n_lo, dg_u128 n_hi, uint64_t *w)
{
    dg_u128 f_lo = mul_fix(n_lo, rt->v_lo) >> rt->sh;
    dg_u128 f_hi = (mul_fix(n_hi, rt->v_hi) + 1) >> rt->sh;
    if (f_lo != f_hi || (f_lo >> 64) != 0)
        return 0;
    *w = (uint64_t)f_lo;
    return 1;
}

/*
 * The blocked inversion's words for the discrete Gaussian (dg_inv.h).  The terms' bounds
 * lo_y <= 2**112 w_y < hi_y (dg_gauss_words) are kept, so that S_x = sum_{y >= x} w_y lies in
 * [sum lo_y, rest + sum hi_y); theta_{2b+2} = 2 (S_{1+Lb} - L w_m) / Z with m = L(b + 1) in
 * [2 (S_lo - L hi_m), 2 (S_hi - L lo_m)] / Z, and its word as dg_gauss_words makes T_x's.
 * A residual difference w_{y0+v} - w_m lies in (lo_{y0+v} - hi_m, hi_{y0+v} - lo_m), so N_u
 * in (sum of those lower ends, sum of the upper), and floor(2**64 N_u/N_0) follows (ratio_word),
 * or, where those do not decide it, from GMP (dg_gauss_resid_word_exact).
 */
int64_t dg_gauss_blocked_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned k,
                               uint64_t nb, uint64_t *thr, uint64_t cap, uint64_t *rwords,
                               dg_u128 *tlo, dg_u128 *thi, uint64_t tcap)
{
    gauss_terms t;
    dg_u128 lo, hi, rest = 0, lo_total = 0, hi_total = 0, z_lo, z_hi, v_lo, v_hi, s_lo, s_hi,
            f_lo, f_hi, n_lo, n_hi, d_lo, d_hi;
    uint64_t L = UINT64_C(1) << k, terms = 0, x, b, m, y0, u, v, s = 0, w, *out;
    ratio rt;

    if (k < 1 || k > 16)
        return -1;
    terms_start(&t, n, d, e, q);
    for (;;) {
        if (terms_get(&t, &lo, &hi, &rest))
            break;
        if (terms + 2 >= tcap)
            return -2;
        terms++;
        tlo[terms] = lo;
        thi[terms] = hi;
        lo_total += lo;
        hi_total += hi;
        terms_next(&t);
    }
    hi_total += rest;
    if ((nb << k) + 1 > terms)              /* the blocks lie inside the terms (4 sigma) */
        return -1;
    z_lo = ((dg_u128)1 << SUM_BITS) + 2 * lo_total;
    z_hi = ((dg_u128)1 << SUM_BITS) + 2 * hi_total;
    v_lo = recip(239, z_hi, 0);
    v_hi = recip(239, z_lo, 1);

#define WORD_OF(SLO, SHI)                                                   \
    do {                                                                    \
        f_lo = mul_fix(2 * (SLO), v_lo) >> 47;                              \
        f_hi = (mul_fix(2 * (SHI), v_hi) + 1) >> 47;                        \
        if (f_lo != f_hi)                                                   \
            return -1;                                                      \
        w = (uint64_t)f_lo;                                                 \
    } while (0)

    thr[0] = UINT64_MAX;
    s_lo = lo_total;                        /* bounds on S_x, x = 1 */
    s_hi = hi_total;
    x = 1;
    for (b = 0; b < nb; b++) {
        for (; x < 1 + (b << k); x++) {
            s_lo -= tlo[x];
            s_hi -= thi[x];
        }
        m = (b + 1) << k;
        if (s + 3 > cap || s_lo < L * thi[m])
            return s + 3 > cap ? -2 : -1;
        WORD_OF(s_lo, s_hi);
        thr[++s] = w;
        WORD_OF(s_lo - L * thi[m], s_hi - L * tlo[m]);
        thr[++s] = w;
    }
    for (; x < 1 + (nb << k); x++) {
        s_lo -= tlo[x];
        s_hi -= thi[x];
    }
    for (;; x++) {                          /* the tail: T_x, x = 1 + L nb, ... */
        if (s + 2 > cap)
            return -2;
        WORD_OF(s_lo, s_hi);
        if (w == 0)
            break;
        thr[++s] = w;
        if (x > terms)
            return -1;                      /* not reached: past the terms, T_x < 2**-83 */
        s_lo -= tlo[x];
        s_hi -= thi[x];
    }
    thr[s + 1] = 0;
#undef WORD_OF

    for (b = 0; b < nb; b++) {
        y0 = 1 + (b << k);
        m = y0 + L - 1;
        out = rwords + b * L;
        out[0] = UINT64_MAX;
        out[L - 1] = 0;
        d_lo = d_hi = 0;                    /* N_0 */
        for (v = 0; v + 1 < L; v++) {
            if (tlo[y0 + v] <= thi[m])
                return -1;                  /* not reached: w_{y0+v} - w_m >> the bounds' width */
            d_lo += tlo[y0 + v] - thi[m];
            d_hi += thi[y0 + v] - tlo[m];
        }
        n_lo = d_lo;
        n_hi = d_hi;
        if (!ratio_setup(&rt, d_lo, d_hi))
            return -1;
        for (u = 1; u + 1 < L; u++) {
            n_lo -= tlo[y0 + u - 1] - thi[m];
            n_hi -= thi[y0 + u - 1] - tlo[m];
            if (!ratio_word(&rt, n_lo, n_hi, &out[u])
                    && dg_gauss_resid_word_exact(n, d, y0, k, u, &out[u]) < 0)
                return -1;
        }
    }
    return (int64_t)s;
}

/*
 * floor(2**64 N_u/N_0) for the block starting at y0 exactly: A_y = floor(2**K w_y) (GMP,
 * w_y = exp(-y**2 d / (2n))) puts each difference 2**K (w_{y0+v} - w_m) in
 * (A_{y0+v} - A_m - 1, A_{y0+v} - A_m + 1); K doubles until both ends of the ratio agree
 * (dgauss._inversion.gaussian_residual_floors): 0, or -1 past RESID_MAX_BITS.
 */
#define RESID_MAX_BITS (1UL << 16)
int dg_gauss_resid_word_exact(uint64_t n, uint64_t d, uint64_t y0, unsigned k, uint64_t u,
                              uint64_t *w)
{
    uint64_t L = UINT64_C(1) << k, v;
    unsigned long K = 192;
    int rc = 0;
    mpz_t a, am, num, den, n_lo, n_hi, d_lo, d_hi, lo, hi;
    mpz_inits(a, am, num, den, n_lo, n_hi, d_lo, d_hi, lo, hi, NULL);
    mpz_set_ui(den, n);
    mpz_mul_2exp(den, den, 1);              /* 2n */
    for (;; K *= 2) {
        mpz_set_ui(num, y0 + L - 1);
        mpz_mul(num, num, num);
        mpz_mul_ui(num, num, d);
        dg_exp_neg_floor_mpz(am, num, den, K);
        mpz_set_ui(n_lo, 0);
        mpz_set_ui(n_hi, 0);
        mpz_set_ui(d_lo, 0);
        mpz_set_ui(d_hi, 0);
        for (v = 0; v + 1 < L; v++) {
            mpz_set_ui(num, y0 + v);
            mpz_mul(num, num, num);
            mpz_mul_ui(num, num, d);
            dg_exp_neg_floor_mpz(a, num, den, K);
            mpz_sub(a, a, am);                  /* A_{y0+v} - A_m */
            mpz_add(d_hi, d_hi, a);
            mpz_add_ui(d_hi, d_hi, 1);
            mpz_add(d_lo, d_lo, a);
            mpz_sub_ui(d_lo, d_lo, 1);
            if (v >= u) {
                mpz_add(n_hi, n_hi, a);
                mpz_add_ui(n_hi, n_hi, 1);
                mpz_add(n_lo, n_lo, a);
                mpz_sub_ui(n_lo, n_lo, 1);
            }
        }
        if (mpz_sgn(d_lo) > 0 && mpz_sgn(n_lo) >= 0) {
            mpz_mul_2exp(lo, n_lo, 64);
            mpz_fdiv_q(lo, lo, d_hi);
            mpz_mul_2exp(hi, n_hi, 64);
            mpz_fdiv_q(hi, hi, d_lo);
            if (mpz_cmp(lo, hi) == 0)
                break;
        }
        if (K >= RESID_MAX_BITS) {          /* never seen: as dgauss._inversion.MAX_GUARD */
            rc = -1;
            break;
        }
    }
    *w = mpz_get_ui(lo);
    mpz_clears(a, am, num, den, n_lo, n_hi, d_lo, d_hi, lo, hi, NULL);
    return rc;
}

/* ---- the discrete Laplace: T_x = 2 p**x / (1 + p), p = exp(-1/scale) ---- */

/*
 * floor(2**64 T_x) exactly, scale = n/d: A = floor(2**k exp(-x d/n)), B = floor(2**k exp(-d/n))
 * give T_x in [2A / (2**k + B + 1), 2(A + 1) / (2**k + B)]; k doubles until both ends have
 * one floor (dgauss._inversion.laplace_floor).
 */
uint64_t dg_laplace_word_exact(uint64_t n, uint64_t d, uint64_t x)
{
    mpz_t a, b, num, den, lo, hi;
    unsigned long k = 128;
    uint64_t w;
    mpz_inits(a, b, num, den, lo, hi, NULL);
    for (;; k *= 2) {
        mpz_set_ui(num, x);
        mpz_mul_ui(num, num, d);
        mpz_set_ui(den, n);
        dg_exp_neg_floor_mpz(a, num, den, k);
        mpz_set_ui(num, d);
        dg_exp_neg_floor_mpz(b, num, den, k);
        mpz_set_ui(den, 1);
        mpz_mul_2exp(den, den, k);
        mpz_add(den, den, b);                   /* 2**k + B */
        mpz_mul_2exp(hi, a, 65);
        mpz_add_ui(den, den, 1);
        mpz_fdiv_q(lo, hi, den);                /* 2**65 A / (2**k + B + 1) */
        mpz_sub_ui(den, den, 1);
        mpz_add_ui(a, a, 1);
        mpz_mul_2exp(hi, a, 65);
        mpz_fdiv_q(hi, hi, den);                /* 2**65 (A + 1) / (2**k + B) */
        if (mpz_cmp(lo, hi) == 0)
            break;
    }
    w = mpz_get_ui(lo);
    mpz_clears(a, b, num, den, lo, hi, NULL);
    return w;
}

/*
 * The first `count` words floor(2**64 T_x), x = 1 .. count, from e1 = floor(2**128 p): into
 * thr[1 .. K] up to the last non-zero one (thr[0] = 2**64 - 1, thr[K + 1] = 0); returns K.
 * P_x = e1**x by products rounded down is a lower bound within 2x - 1 units of 2**-128
 * (dg_exp.c's table), T_x = p**x / D with D = (1 + p)/2 in [D_lo, D_lo + 1) units, and
 * floor(2**64 N/D) lies between floor(mul_fix(N_lo, V_lo) / 2**62) and
 * floor((mul_fix(N_hi, V_hi) + 1) / 2**62) for V_lo = floor(2**254 / (D_lo + 1)),
 * V_hi = ceil(2**254 / D_lo) (< 2**128 as D >= 1/2): as for the Gaussian.  A word the
 * bound does not decide is computed exactly (dg_laplace_word_exact).  `thr` has count + 2 words.
 */
uint64_t dg_laplace_direct_words(uint64_t n, uint64_t d, dg_u128 e1, uint64_t count, uint64_t *thr)
{
    dg_u128 w = e1, d_lo = ((dg_u128)1 << 127) + (e1 >> 1);  /* (2**128 + e1) / 2, rounded down */
    dg_u128 v_lo = recip(254, d_lo + 1, 0), v_hi = recip(254, d_lo, 1), f_lo, f_hi;
    uint64_t x, last = 0;
    thr[0] = UINT64_MAX;
    for (x = 1; x <= count; x++) {
        f_lo = mul_fix(w, v_lo) >> 62;
        f_hi = (mul_fix(w + 2 * (dg_u128)x - 1, v_hi) + 1) >> 62;
        thr[x] = (f_lo == f_hi) ? (uint64_t)f_lo : dg_laplace_word_exact(n, d, x);
        if (thr[x] == 0)
            break;                      /* and every later word: T_x decreases */
        last = x;
        w = mul_fix(w, e1);
    }
    thr[last + 1] = 0;
    return last;
}

/*
 * Blocked inversion's words (dg_inv.h), scale n/d, L = 2**k, from
 *   pu[u] <= 2**128 p**u < pu[u] + 2u   (pu[u] = e1**u, products rounded down: the lemma of
 *            dg_exp.c's table), u = 1 .. L;
 *   cb[b] <= 2**127 C_b < cb[b] + 3b + 3, C_b = 2 p**(Lb) / (1 + p)   (cb[0] =
 *            floor(2**256 / (2**128 + e1 + 1)), within 2 of 2**128 / (1 + p); cb[b] =
 *            mul_fix(cb[b - 1], pl), one more unit and the error of pl each step).
 * The stage's words: T_{1 + Lb + v} = C_b p**(1 + v), v = 0 or c, so V = mul_fix(cb[b], pu[1 + v])
 * <= 2**127 T < V + 3b + 3 + 2(1 + v) + 1 (the error of a product of lower bounds of numbers
 * <= 1 is at most the sum of their errors plus 1), and floor(2**64 T) = V >> 63 when
 * (V + err) >> 63 agrees, else dg_laplace_word_exact.  The residual's: in units of 2**-112,
 * P_u = 2**112 p**u lies in [lo_u, hi_u) = [pu[u] >> 16, ((pu[u] + 2u) >> 16) + 1) (P_0 = 2**112
 * exactly), so F(u) 2**112 lies in [L (lo_u - hi_L) - (L - u)(2**112 - lo_c),
 * L (hi_u - lo_L) - (L - u)(2**112 - hi_c)) (< 2**127 for L <= 2**15), and
 * floor(2**64 F(u)/F(0)) follows (ratio_word).
 */
static uint64_t stage_word(uint64_t n, uint64_t d, dg_u128 cb, uint64_t b, const dg_u128 *pu,
                           uint64_t u, unsigned k)
{
    dg_u128 v = mul_fix(cb, pu[u]);
    dg_u128 err = 3 * (dg_u128)b + 2 * (dg_u128)u + 4;
    if ((uint64_t)(v >> 63) == (uint64_t)((v + err) >> 63))
        return (uint64_t)(v >> 63);
    return dg_laplace_word_exact(n, d, (b << k) + u);
}

int64_t dg_lap_blocked_words(uint64_t n, uint64_t d, dg_u128 e1, dg_u128 pl, unsigned k,
                             uint64_t c, uint64_t *thr, uint64_t cap, uint64_t *rthr,
                             dg_u128 *pu)
{
    uint64_t L = UINT64_C(1) << k, u, b, s = 0, w;
    const dg_u128 one = (dg_u128)1 << 112;
    dg_u128 cb, lo_u, hi_u, lo_l, hi_l, lo_c, hi_c, x, y;
    ratio rt;
    mpz_t num, den;

    if (k < 1 || k > 15)                /* F(u) 2**112 < L 2**112 must fit 128 bits */
        return -1;
    pu[0] = ~(dg_u128)0;
    pu[1] = e1;
    for (u = 2; u <= L; u++)
        pu[u] = mul_fix(pu[u - 1], e1);

    /* cb[0] = floor(2**256 / (2**128 + e1 + 1)) */
    mpz_inits(num, den, NULL);
    mpz_set_ui(num, 1);
    mpz_mul_2exp(num, num, 256);
    dg_mpz_set_u128(den, e1);
    mpz_add_ui(den, den, 1);
    mpz_setbit(den, 128);
    mpz_fdiv_q(num, num, den);
    cb = mpz_to_u128(num);
    mpz_clears(num, den, NULL);

    thr[0] = UINT64_MAX;
    for (b = 0;; b++) {
        if (s + 4 > cap)
            return -2;
        w = stage_word(n, d, cb, b, pu, 1, k);          /* theta_{2b+1} = T_{1+Lb} */
        if (w == 0)
            break;
        thr[++s] = w;
        w = stage_word(n, d, cb, b, pu, 1 + c, k);      /* theta_{2b+2} = T_{1+Lb+c} */
        if (w == 0)
            break;
        thr[++s] = w;
        cb = mul_fix(cb, pl);
    }
    thr[s + 1] = 0;

#define LO112(i) ((i) == 0 ? one : pu[i] >> 16)
#define HI112(i) ((i) == 0 ? one : ((pu[i] + 2 * (dg_u128)(i)) >> 16) + 1)
    lo_l = LO112(L);
    hi_l = HI112(L);
    lo_c = LO112(c);
    hi_c = HI112(c);
    rthr[0] = UINT64_MAX;
    rthr[L] = 0;
    if (hi_l >= lo_c || !ratio_setup(&rt, L * (lo_c - hi_l), L * (hi_c - lo_l)))
        return -1;
    for (u = 1; u < L; u++) {
        lo_u = LO112(u);
        hi_u = HI112(u);
        x = L * (lo_u - hi_l);                          /* lo_u > hi_l: p**u - p**L >> 2**-100 */
        y = (L - u) * (one - lo_c);
        if (lo_u <= hi_l || x <= y
                || !ratio_word(&rt, x - y, L * (hi_u - lo_l) - (L - u) * (one - hi_c), &rthr[u])
                || rthr[u] == 0)
            return -1;
    }
#undef LO112
#undef HI112
    return (int64_t)s;
}

/* The batches (dg_inv.h), each built twice (DG_FILL_CLONES). */
DG_FILL_CLONES
size_t dg_inv_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_inv_table *tab,
                   int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                   dg_inv_pending *pend, int *lane)
{
    return dg_inv_fill_inline(rng, rng2, phase, tab, mu, out, n, rc, pend, lane);
}

DG_FILL_CLONES
size_t dg_blocked_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_blocked *lb,
                       int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                       dg_inv_pending *pend, int *lane)
{
    return dg_blocked_fill_inline(rng, rng2, phase, lb, mu, out, n, rc, pend, lane);
}

DG_FILL_CLONES
size_t dg_env_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_env *ev,
                   int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                   dg_inv_pending *pend, int *lane)
{
    return dg_env_fill_inline(rng, rng2, phase, ev, mu, out, n, rc, pend, lane);
}
