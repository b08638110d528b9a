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

    v_lo = recip(239, z_hi, 0);
    v_hi = recip(239, z_lo, 1);

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
 * L (hi_u - lo_L) - (L - u)(2**112 - hi_c)) (< 2**127 for L <= 2**15); with z the bit length of
 * F_lo(0), V_lo = floor(2**(z + 126) / F_hi(0)) and V_hi = ceil(2**(z + 126) / F_lo(0)) (<= 2**127),
 * floor(2**64 F(u)/F(0)) lies between floor(mul_fix(F_lo(u), V_lo) / 2**(z - 66)) and
 * floor((mul_fix(F_hi(u), V_hi) + 1) / 2**(z - 66)), as for the Gaussian.
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
    dg_u128 cb, lo_u, hi_u, lo_l, hi_l, lo_c, hi_c, x, y, f0_lo, f0_hi, f_lo, f_hi, v_lo, v_hi;
    unsigned z, sh;
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
    f0_lo = L * (lo_c - hi_l);
    f0_hi = L * (hi_c - lo_l);
    if (hi_l >= lo_c || f0_lo == 0)
        return -1;
    z = 128 - (unsigned)((f0_lo >> 64) ? __builtin_clzll((uint64_t)(f0_lo >> 64))
                                       : 64 + __builtin_clzll((uint64_t)f0_lo));
    if (z < 66)
        return -1;
    sh = z - 66;
    v_lo = recip(z + 126, f0_hi, 0);
    v_hi = recip(z + 126, f0_lo, 1);
    for (u = 1; u < L; u++) {
        lo_u = LO112(u);
        hi_u = HI112(u);
        x = L * (lo_u - hi_l);                          /* lo_u > hi_l: p**u - p**L >> 2**-100 */
        y = (L - u) * (one - lo_c);
        if (lo_u <= hi_l || x <= y)
            return -1;
        f_lo = x - y;
        f_hi = L * (hi_u - lo_l) - (L - u) * (one - hi_c);
        f_lo = mul_fix(f_lo, v_lo) >> sh;
        f_hi = (mul_fix(f_hi, v_hi) + 1) >> sh;
        if (f_lo != f_hi || f_lo == 0 || (f_lo >> 64) != 0)
            return -1;
        rthr[u] = (uint64_t)f_lo;
    }
#undef LO112
#undef HI112
    return (int64_t)s;
}
