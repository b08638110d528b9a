/* dg_exp.c -- exact binary digits of exp(-n/d).  See dg_exp.h. */
#include "dg_exp.h"

/*
 * floor(2**k exp(-x)), x = n/d in [0, 1], from the Taylor series in fixed
 * point with w = k + g bits:  T_0 = 2**w,  T_j = floor(T_{j-1} n / (d j)),
 * S = T_0 - T_1 + T_2 - ...  up to the first T_J = 0.
 *
 * Error bound.  Let t_j = 2**w x**j / j! (the true terms, decreasing since
 * x <= 1) and e_j = t_j - T_j.  Then 0 <= e_j <= e_{j-1} x/j + 1 <= j.  The
 * true value V = sum (-1)**j t_j differs from S by at most
 * sum_{j<J} e_j + |sum_{j>=J} (-1)**j t_j| <= J(J-1)/2 + t_J <= J(J+1)/2
 * (an alternating series with decreasing terms is within its first term, and
 * t_J = e_J <= J).  So V lies in [S - B, S + B] with B = J(J+1)/2, and when
 * both ends agree above the g guard bits, so does V.  As exp(-x) is
 * irrational for x > 0, V is never exactly on a boundary: some g works.
 */
void dg_exp_neg_floor(mpz_t out, uint64_t n, uint64_t d, unsigned long k)
{
    mpz_t term, sum, lo, hi;
    unsigned long guard = 64, j;
    if (n == 0) {
        mpz_set_ui(out, 1);
        mpz_mul_2exp(out, out, k);
        return;
    }
    mpz_inits(term, sum, lo, hi, NULL);
    for (;;) {
        mpz_set_ui(term, 1);
        mpz_mul_2exp(term, term, k + guard);
        mpz_set(sum, term);
        for (j = 1; mpz_sgn(term) != 0; j++) {
            mpz_mul_ui(term, term, n);
            mpz_fdiv_q_ui(term, term, d);
            mpz_fdiv_q_ui(term, term, j);       /* floor(floor(a/d)/j) = floor(a/(dj)) */
            if (j & 1)
                mpz_sub(sum, sum, term);
            else
                mpz_add(sum, sum, term);
        }
        j -= 1;                                 /* J: the index of the first zero term */
        mpz_sub_ui(lo, sum, j * (j + 1) / 2);
        mpz_add_ui(hi, sum, j * (j + 1) / 2);
        mpz_fdiv_q_2exp(lo, lo, guard);
        mpz_fdiv_q_2exp(hi, hi, guard);
        if (mpz_cmp(lo, hi) == 0)
            break;
        guard *= 2;
    }
    mpz_set(out, lo);
    mpz_clears(term, sum, lo, hi, NULL);
}

uint64_t dg_exp_neg_prefix(uint64_t n, uint64_t d)
{
    mpz_t f;
    uint64_t w;
    mpz_init(f);
    dg_exp_neg_floor(f, n, d, 64);      /* < 2**64 as exp(-n/d) < 1 */
    w = mpz_get_ui(f);
    mpz_clear(f);
    return w;
}

/* ---- the table for Algorithm 2 --------------------------------------- */

/* floor(a b / 2**128): the product of two fixed-point numbers in [0, 1). */
static dg_u128 mul_fix(dg_u128 a, dg_u128 b)
{
    uint64_t ah = (uint64_t)(a >> 64), al = (uint64_t)a;
    uint64_t bh = (uint64_t)(b >> 64), bl = (uint64_t)b;
    dg_u128 ll = (dg_u128)al * bl;
    dg_u128 m1 = (dg_u128)ah * bl + (ll >> 64);             /* < 2**128 */
    dg_u128 m2 = (dg_u128)al * bh + (uint64_t)m1;           /* < 2**128 */
    return (dg_u128)ah * bh + (m1 >> 64) + (m2 >> 64);
}

void dg_exp_table_init(dg_exp_table *tab, uint64_t t, uint64_t e_hi, uint64_t e_lo,
                       uint64_t *prefix)
{
    tab->t = t;
    tab->e = ((dg_u128)e_hi << 64) | e_lo;
    tab->prefix = prefix;
}

/*
 * 2**128 exp(-u/t) from e = floor(2**128 exp(-1/t)) by square-and-multiply,
 * each product rounded down.  Every computed value X is a lower bound on its
 * true value x (a product of lower bounds, rounded down), and with a, b <= 1
 * the error of a product is at most err(a) + err(b) + 1 units.  So with
 * err(e) < 1: err(e**m) < 2m - 1 gives err(e**2m) < 2(2m - 1) + 1 and
 * err(e**(m+1)) < 2m - 1 + 2, i.e. err(e**u) < 2u - 1 for every u >= 1, and
 * x lies in [X, X + 2u - 1).  When X and X + 2u - 1 agree in their top 64 bits,
 * those are floor(2**64 exp(-u/t)); otherwise (probability about u/2**63)
 * the word is computed exactly with GMP.
 */
int dg_exp_test_force_exact = 0;      /* test hook: take the GMP path for every word */

uint64_t dg_exp_table_compute(dg_exp_table *tab, uint64_t u)
{
    dg_u128 x = tab->e;
    int bit = 62 - __builtin_clzll(u);     /* below u's leading 1 */
    uint64_t w;
    for (; bit >= 0; bit--) {
        x = mul_fix(x, x);
        if ((u >> bit) & 1)
            x = mul_fix(x, tab->e);
    }
    w = (uint64_t)(x >> 64);
    if ((uint64_t)((x + 2 * (dg_u128)u - 1) >> 64) != w || dg_exp_test_force_exact)
        w = dg_exp_neg_prefix(u, tab->t);
    tab->prefix[u] = w;
    return w;
}

/* ---- digits past the first 64 ---------------------------------------- */

int dg_exp_digits_tail(dg_rng *rng, uint64_t n, uint64_t d)
{
    mpz_t digits;
    unsigned long j, k = 64;    /* j digits compared; `digits` = floor(2**k exp(-n/d)) */
    int b, digit;
    mpz_init(digits);
    for (j = 64;; j++) {
        if (j == k) {
            k *= 2;
            dg_exp_neg_floor(digits, n, d, k);
        }
        digit = mpz_tstbit(digits, k - 1 - j);
        b = dg_bit(rng);
        if (rng->status != DG_OK || b != digit)
            break;
    }
    mpz_clear(digits);
    return rng->status != DG_OK ? -1 : digit;
}
