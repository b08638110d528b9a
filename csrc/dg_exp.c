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
static void exp_neg_floor_unit(mpz_t out, const mpz_t n, const mpz_t d, unsigned long k)
{
    mpz_t term, sum, lo, hi;
    unsigned long guard = 64, j;
    if (mpz_sgn(n) == 0) {
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
            mpz_mul(term, term, n);
            mpz_fdiv_q(term, term, d);
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

/*
 * n > d: exp(-n/d) = exp(-1)**q exp(-r/d), q = floor(n/d), r = n mod d.  With
 * w = k + g bits, A = floor(2**w / e) and B = floor(2**w exp(-r/d)) bound the
 * two factors from below and A + 1, B + 1 from above, so 2**(k+g) exp(-n/d)
 * lies in [A**q B, (A+1)**q (B+1)] / 2**(w q); when both ends agree above the g
 * guard bits, so does the value (irrational, never on a boundary).
 */
void dg_exp_neg_floor_mpz(mpz_t out, const mpz_t n, const mpz_t d, unsigned long k)
{
    mpz_t q, r, one, a, b, lo, hi;
    unsigned long guard = 64, w, qq;
    if (mpz_cmp(n, d) <= 0) {
        exp_neg_floor_unit(out, n, d, k);
        return;
    }
    mpz_inits(q, r, a, b, lo, hi, NULL);
    mpz_init_set_ui(one, 1);
    mpz_fdiv_qr(q, r, n, d);
    qq = mpz_get_ui(q);     /* callers keep n/d far below 2**64 */
    for (;; guard *= 2) {
        w = k + guard;
        exp_neg_floor_unit(a, one, one, w);
        exp_neg_floor_unit(b, r, d, w);
        mpz_pow_ui(lo, a, qq);
        mpz_mul(lo, lo, b);
        mpz_add_ui(a, a, 1);
        mpz_add_ui(b, b, 1);
        mpz_pow_ui(hi, a, qq);
        mpz_mul(hi, hi, b);
        mpz_fdiv_q_2exp(lo, lo, w * qq + guard);
        mpz_fdiv_q_2exp(hi, hi, w * qq + guard);
        if (mpz_cmp(lo, hi) == 0)
            break;
    }
    mpz_set(out, lo);
    mpz_clears(q, r, one, a, b, lo, hi, NULL);
}

void dg_exp_neg_floor(mpz_t out, uint64_t n, uint64_t d, unsigned long k)
{
    mpz_t nz, dz;
    mpz_init_set_ui(nz, n);
    mpz_init_set_ui(dz, d);
    dg_exp_neg_floor_mpz(out, nz, dz, k);
    mpz_clears(nz, dz, NULL);
}

/* ---- the first 64 digits in 128-bit fixed point ---------------------- */

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


/*
 * exp(-x) for 0 <= x < 1 from the bits of x_fix = 2**128 x:
 *   x = a1/2**8 + a2/2**16 + a3/2**24 + a4/2**32 + r/2**128   (a_i bytes, r < 2**96),
 *   exp(-x) = E_1[a1] E_2[a2] E_3[a3] E_4[a4] exp(-r/2**128),
 * with E_i[a] = floor(2**128 exp(-a/2**(8i))) computed exactly once (GMP), and
 * 2**128 - 1 for a = 0 (the true 2**128 does not fit).
 */
#define EXP_LEVELS 4
static dg_u128 exp_level[EXP_LEVELS][256];

void dg_exp_init(void)
{
    mpz_t z;
    unsigned i, a;
    mpz_init(z);
    for (i = 0; i < EXP_LEVELS; i++) {
        exp_level[i][0] = ~(dg_u128)0;
        for (a = 1; a < 256; a++) {
            dg_exp_neg_floor(z, a, UINT64_C(1) << (8 * (i + 1)), 128);
            exp_level[i][a] = ((dg_u128)mpz_getlimbn(z, 1) << 64) | mpz_getlimbn(z, 0);
        }
    }
    mpz_clear(z);
}

/*
 * Errors, in units of 2**-128; every computed value is a lower bound on its
 * true value.
 *  - Products: if A <= a <= 2**128 with a - A < alpha and B <= b <= 2**128
 *    with b - B < beta, then mul_fix(A, B) <= ab/2**128 and
 *    ab/2**128 - mul_fix(A, B) < (a(b - B) + B(a - A))/2**128 + 1 <= alpha + beta + 1.
 *  - Table words: error < 1 each.
 *  - exp(-r/2**128), r < 2**96: the series 2**128 - r + r**2/2**129 - r**3/(6 2**256)
 *    + r**4/(24 2**384) - ... alternates with decreasing terms, so cut after the
 *    cube it is a lower bound T3, within r**4/(24 2**384) < 1/24 below the value.
 *    F = 2**128 - r + s2 - s3 with s2 = floor(r**2/2**129) (exact: c = floor(r**2/2**128),
 *    s2 = floor(c/2)) and s3 = floor((mul_fix(c + 1, r) + 6)/6) >= r**3/(6 2**256)
 *    (as mul_fix(c + 1, r) > r**3/2**256 - 1) and < r**3/(6 2**256) + 1.01
 *    (as mul_fix(c + 1, r) <= r**3/2**256 + r/2**128).  So F <= T3, F > T3 - 2.01,
 *    and 0 <= value - F < 3.  F < 2**128 since s2 < r; r = 0 gives F = 2**128 - 1.
 *  - P = mul_fix(mul_fix(E_1, E_2), mul_fix(E_3, E_4)) is within 3 + 3 + 1 = 7,
 *    and mul_fix(P, F) within 7 + 3 + 1 = 11.
 * So V = mul_fix(P, F) <= 2**128 exp(-x_fix/2**128) < V + 11, and for any real
 * x in [x_fix, x_fix + slack)/2**128 (exp(-x) falls at rate < 1):
 * V - slack < 2**128 exp(-x) < V + 11.  When both ends of that interval have the
 * same top 64 bits, those are the first 64 digits of exp(-x).
 */
#define FIX_ERROR 11

int dg_exp_neg_prefix_fix(dg_u128 x_fix, dg_u128 slack, uint64_t *prefix)
{
    dg_u128 r = x_fix & (((dg_u128)1 << 96) - 1), c, f, v;
    uint64_t s3;
    if (r == 0) {
        f = ~(dg_u128)0;
    } else {
        c = mul_fix(r, r);                          /* < 2**64 */
        s3 = ((uint64_t)mul_fix(c + 1, r) + 6) / 6; /* mul_fix(c + 1, r) < 2**33 */
        f = -r + (c >> 1) - s3;                     /* 2**128 - r + s2 - s3 */
    }
    v = mul_fix(mul_fix(exp_level[0][(unsigned)(x_fix >> 120)],
                        exp_level[1][(unsigned)(x_fix >> 112) & 255]),
                mul_fix(exp_level[2][(unsigned)(x_fix >> 104) & 255],
                        exp_level[3][(unsigned)(x_fix >> 96) & 255]));
    v = mul_fix(v, f);
    if (v < slack || v > ~(dg_u128)0 - FIX_ERROR)
        return 0;           /* x tiny (exp(-x) within 11 units of 1), or a huge slack */
    if ((uint64_t)((v - slack) >> 64) != (uint64_t)((v + FIX_ERROR) >> 64))
        return 0;           /* the interval straddles a multiple of 2**64 */
    *prefix = (uint64_t)((v - slack) >> 64);
    return 1;
}

static uint64_t prefix_exact(const mpz_t n, const mpz_t d)
{
    mpz_t f;
    uint64_t w;
    mpz_init(f);
    dg_exp_neg_floor_mpz(f, n, d, 64);  /* < 2**64 as exp(-n/d) < 1 */
    w = mpz_get_ui(f);
    mpz_clear(f);
    return w;
}

uint64_t dg_exp_neg_prefix(uint64_t n, uint64_t d, int fixed_point)
{
    uint64_t hi, lo, r, w;
    mpz_t nz, dz;
    if (fixed_point && n < d) {
        hi = dg_div_shift64(n, d, &r);          /* floor(2**128 n/d), two words */
        lo = dg_div_shift64(r, d, &r);
        if (dg_exp_neg_prefix_fix(((dg_u128)hi << 64) | lo, 1, &w))
            return w;
    }
    mpz_init_set_ui(nz, n);
    mpz_init_set_ui(dz, d);
    w = prefix_exact(nz, dz);
    mpz_clears(nz, dz, NULL);
    return w;
}

uint64_t dg_exp_neg_prefix_mpz(const mpz_t n, const mpz_t d, int fixed_point)
{
    mpz_t x;
    uint64_t w;
    int ok = 0;
    if (fixed_point && mpz_cmp(n, d) < 0) {
        mpz_init(x);
        mpz_mul_2exp(x, n, 128);
        mpz_fdiv_q(x, x, d);                    /* floor(2**128 n/d) < 2**128 */
        ok = dg_exp_neg_prefix_fix(((dg_u128)mpz_getlimbn(x, 1) << 64) | mpz_getlimbn(x, 0), 1, &w);
        mpz_clear(x);
    }
    return ok ? w : prefix_exact(n, d);
}

/* ---- the table for Algorithm 2 --------------------------------------- */

void dg_exp_table_init(dg_exp_table *tab, const mpz_t t, unsigned long shift, uint64_t e_hi,
                       uint64_t e_lo, uint64_t *prefix, int fixed_point)
{
    tab->fixed_point = fixed_point;
    tab->shift = shift;
    tab->t = t;
    tab->e = ((dg_u128)e_hi << 64) | e_lo;
    tab->prefix = prefix;
}

/*
 * 2**128 exp(-u 2**shift/t) from e = floor(2**128 exp(-2**shift/t)) by square-and-multiply,
 * each product rounded down.  Every computed value X is a lower bound on its
 * true value x (a product of lower bounds, rounded down), and with a, b <= 1
 * the error of a product is at most err(a) + err(b) + 1 units.  So with
 * err(e) < 1: err(e**m) < 2m - 1 gives err(e**2m) < 2(2m - 1) + 1 and
 * err(e**(m+1)) < 2m - 1 + 2, i.e. err(e**u) < 2u - 1 for every u >= 1, and
 * x lies in [X, X + 2u - 1).  When X and X + 2u - 1 agree in their top 64 bits,
 * those are the word; otherwise (probability about u/2**63)
 * the word is computed exactly with GMP.
 */
uint64_t dg_exp_table_compute(dg_exp_table *tab, uint64_t u)
{
    dg_u128 x = tab->e;
    int bit = 62 - __builtin_clzll(u);     /* below u's leading 1 */
    uint64_t w;
    mpz_t n;
    for (; bit >= 0; bit--) {
        x = mul_fix(x, x);
        if ((u >> bit) & 1)
            x = mul_fix(x, tab->e);
    }
    w = (uint64_t)(x >> 64);
    if ((uint64_t)((x + 2 * (dg_u128)u - 1) >> 64) != w || !tab->fixed_point) {
        mpz_init_set_ui(n, u);
        mpz_mul_2exp(n, n, tab->shift);
        w = dg_exp_neg_prefix_mpz(n, tab->t, tab->fixed_point);
        mpz_clear(n);
    }
    tab->prefix[u] = w;
    return w;
}

/* ---- digits past the first 64 ---------------------------------------- */

int dg_exp_digits_tail(dg_rng *rng, uint64_t n, uint64_t d)
{
    mpz_t nz, dz;
    int c;
    mpz_init_set_ui(nz, n);
    mpz_init_set_ui(dz, d);
    c = dg_exp_digits_tail_mpz(rng, nz, dz);
    mpz_clears(nz, dz, NULL);
    return c;
}

int dg_exp_digits_tail_mpz(dg_rng *rng, const mpz_t n, const mpz_t d)
{
    mpz_t digits;
    unsigned long j, k = 64;    /* j digits compared; `digits` = floor(2**k exp(-n/d)) */
    int b, digit;
    mpz_init(digits);
    for (j = 64;; j++) {
        if (j == k) {
            k *= 2;
            dg_exp_neg_floor_mpz(digits, n, d, k);
        }
        digit = mpz_tstbit(digits, k - 1 - j);
        b = dg_bit(rng);
        if (rng->status != DG_OK || b != digit)
            break;
    }
    mpz_clear(digits);
    return rng->status != DG_OK ? -1 : digit;
}

/* ---- Geometric(1 - exp(-1/t)) by inversion ---------------------------- */

uint64_t dg_geometric_table_size(uint64_t t)
{
    return 45 * t + 2;      /* exp(-x/t) < 2**-64 once x > 64 t ln 2 = 44.36 t */
}

/*
 * thr[x] = floor(2**64 exp(-x/t)) from e**x, e = floor(2**128 exp(-1/t)), each
 * product rounded down: a lower bound within 2x - 1 units (as for the table
 * above, e**x = e**(x-1) e), GMP when that interval straddles a word.  Filled
 * up to the first zero word; the rest stay zero.
 */
void dg_geometric_table_init(dg_geometric_table *g, uint64_t t, uint64_t e_hi, uint64_t e_lo,
                             uint64_t *thr, int fixed_point)
{
    dg_u128 e = ((dg_u128)e_hi << 64) | e_lo, p = e;
    uint64_t x, last = dg_geometric_table_size(t) - 1, word;
    mpz_t f;
    mpz_init(f);
    g->t = t;
    g->thr = thr;
    thr[0] = UINT64_MAX;
    for (x = 1; x < last; x++) {
        if (x > 1)
            p = mul_fix(p, e);
        word = (uint64_t)(p >> 64);
        if ((uint64_t)((p + 2 * (dg_u128)x - 1) >> 64) != word || !fixed_point) {
            dg_exp_neg_floor(f, x, t, 64);
            word = mpz_get_ui(f);
        }
        thr[x] = word;
        if (word == 0)
            break;
    }
    g->count = x - 1;
    for (; x <= last; x++)
        thr[x] = 0;
    mpz_clear(f);
}

/* Geometric(1 - exp(-1/t)) as Bernoulli(exp(-1/t)) decisions: successes before a failure. */
DG_COLD int dg_decide_geometric(dg_rng *rng, uint64_t t, uint64_t *out)
{
    uint64_t x = 0;
    int c;
    for (;;) {
        c = dg_decide_bernoulli_exp(rng, 1, t);
        if (c < 0)
            return -1;
        if (c == 0)
            break;
        x++;
    }
    *out = x;
    return 0;
}

/* One bit at a time from bit nknown + 1 on (dgauss.reference.geometric_by_inversion). */
int dg_geometric_slow(dg_rng *rng, uint64_t t, uint64_t known, unsigned nknown, uint64_t *out)
{
    mpz_t a, f;
    unsigned long j = nknown;
    uint64_t x, count = 0;
    int b, c, decided = 0;
    mpz_inits(a, f, NULL);
    if (nknown > 0)
        mpz_set_ui(a, known >> (64 - nknown));
    while (!decided) {
        b = dg_bit(rng);
        if (rng->status != DG_OK)
            break;
        mpz_mul_2exp(a, a, 1);
        mpz_add_ui(a, a, (unsigned long)b);
        j++;
        if (mpz_sgn(a) == 0)
            continue;           /* every exp(-x/t) below 2**-j shares R's digits */
        /* R is in [a, a + 1) / 2**j: count the thresholds above it, unless one is inside */
        decided = 1;
        for (x = 1, count = 0;; x++, count++) {
            dg_exp_neg_floor(f, x, t, j);
            c = mpz_cmp(f, a);
            if (c < 0)
                break;
            if (c == 0) {
                decided = 0;
                break;
            }
        }
    }
    mpz_clears(a, f, NULL);
    if (!decided)
        return -1;
    *out = count;
    return 0;
}
