/* dg_prim.c -- uniform integers and Bernoulli(n/d).  See dg_prim.h. */
#include "dg_prim.h"

/* ---- decision mode (testing) ----------------------------------------- */

/* The next outcome, which must be below `limit`; -1 when there is none. */
static int next_outcome(dg_rng *rng, int want, uint64_t limit, uint64_t *out)
{
    dg_decider *dec = rng->decider;
    if (rng->status != DG_OK)
        return -1;
    if (dec->pos == dec->count) {
        dec->want = want;
        rng->status = DG_ERR_EXHAUSTED;
        return -1;
    }
    *out = dec->outcomes[dec->pos++];
    if (*out >= limit) {
        rng->status = DG_ERR_DECISION;
        return -1;
    }
    return 0;
}

static int decide_bernoulli(dg_rng *rng)
{
    uint64_t b;
    return next_outcome(rng, DG_WANT_BERNOULLI, 2, &b) < 0 ? -1 : (int)b;
}

/* Out of line and cold, so that the bit-mode loops stay tight. */
DG_COLD int dg_decide_uniform_u64(dg_rng *rng, uint64_t m, uint64_t *out)
{
    mpz_set_ui(rng->decider->want_a, m);
    return next_outcome(rng, DG_WANT_UNIFORM, m, out);
}

static DG_COLD int decide_uniform_mpz(dg_rng *rng, const mpz_t m, mpz_t out)
{
    uint64_t x;
    mpz_set(rng->decider->want_a, m);
    if (next_outcome(rng, DG_WANT_UNIFORM, UINT64_MAX, &x) < 0)
        return -1;
    mpz_set_ui(out, x);
    if (mpz_cmp(out, m) >= 0) {
        rng->status = DG_ERR_DECISION;
        return -1;
    }
    return 0;
}

DG_COLD int dg_decide_bernoulli_u64(dg_rng *rng, uint64_t n, uint64_t d)
{
    if (n == 0)
        return 0;
    mpz_set_ui(rng->decider->want_a, n);
    mpz_set_ui(rng->decider->want_b, d);
    return decide_bernoulli(rng);
}

static DG_COLD int decide_bernoulli_mpz(dg_rng *rng, const mpz_t n, const mpz_t d)
{
    if (mpz_sgn(n) == 0)
        return 0;
    mpz_set(rng->decider->want_a, n);
    mpz_set(rng->decider->want_b, d);
    return decide_bernoulli(rng);
}

DG_COLD int dg_decide_bernoulli_exp_mpz(dg_rng *rng, const mpz_t n, const mpz_t d)
{
    uint64_t b;
    mpz_set(rng->decider->want_a, n);
    mpz_set(rng->decider->want_b, d);
    return next_outcome(rng, DG_WANT_BERNOULLI_EXP, 2, &b) < 0 ? -1 : (int)b;
}

DG_COLD int dg_decide_bernoulli_exp(dg_rng *rng, uint64_t n, uint64_t d)
{
    uint64_t b;
    mpz_set_ui(rng->decider->want_a, n);
    mpz_set_ui(rng->decider->want_b, d);
    return next_outcome(rng, DG_WANT_BERNOULLI_EXP, 2, &b) < 0 ? -1 : (int)b;
}

int dg_decide_fair_bit(dg_rng *rng)
{
    mpz_set_ui(rng->decider->want_a, 1);
    mpz_set_ui(rng->decider->want_b, 2);
    return decide_bernoulli(rng);
}

/* Limb i of c - minus_one (c >= 1; z = the index of c's lowest non-zero limb). */
static uint64_t digit_limb(const mpz_t c, size_t i, size_t z, int minus_one)
{
    if (!minus_one)
        return (uint64_t)mpz_getlimbn(c, (mp_size_t)i);
    if (i < z)
        return UINT64_MAX;
    return (uint64_t)mpz_getlimbn(c, (mp_size_t)i) - (i == z);
}

/*
 * One try of uniform's rejection on k bits against the k digits of
 * c - minus_one, written a limb at a time from the top into xp: 1 (x is at
 * most them; any free bits read), 0 (above: the try failed), -1.
 */
static int uniform_try(dg_rng *rng, size_t k, const mpz_t c, size_t z, int minus_one,
                       mp_limb_t *xp)
{
    size_t left = k;
    unsigned w;
    uint64_t x;
    int r = DG_DIGITS_MATCH;
    while (left > 0 && r == DG_DIGITS_MATCH) {
        w = (left % 64 == 0) ? 64 : (unsigned)(left % 64);   /* the top limb: k mod 64 bits */
        r = dg_uniform_chunk(rng, digit_limb(c, (left - 1) / 64, z, minus_one) << (64 - w),
                             w, &x);
        if (r <= 0)
            return r;
        xp[(left - 1) / 64] = x;
        left -= w;
    }
    /* below the digits before the last limb: the rest of x is free */
    for (; left > 0; left -= 64)
        xp[(left - 1) / 64] = dg_bits(rng, 64);
    return rng->status == DG_OK ? 1 : -1;
}

int dg_uniform_mpz(dg_rng *rng, const mpz_t m, mpz_t out)
{
    size_t k, z, n;
    mp_limb_t *xp;
    int r;
    if (mpz_cmp_ui(m, 1) <= 0) {
        mpz_set_ui(out, 0);
        return 0;
    }
    if (__builtin_expect(rng->decider != NULL, 0))
        return decide_uniform_mpz(rng, m, out);
    /* bit length of m - 1: one less than m's when m is a power of two */
    k = mpz_sizeinbase(m, 2);
    z = mpz_scan1(m, 0);
    if (z == k - 1)
        k -= 1;
    n = (k + 63) / 64;
    xp = mpz_limbs_write(out, (mp_size_t)n);
    do
        r = uniform_try(rng, k, m, z / GMP_NUMB_BITS, 1, xp);
    while (r == 0);
    mpz_limbs_finish(out, r < 0 ? 0 : (mp_size_t)n);
    return r < 0 ? -1 : 0;
}

int dg_uniform_split_mpz_from(dg_rng *rng, const mpz_t m, const dg_split *sp, uint64_t *h,
                              mpz_t low, int matched)
{
    size_t n = (sp->r + 63) / 64;
    mp_limb_t *xp;
    int c;
    if (__builtin_expect(rng->decider != NULL, 0)) {
        if (decide_uniform_mpz(rng, m, low) < 0)
            return -1;
        for (*h = 0, c = (int)sp->kh - 1; c >= 0; c--)     /* H: U's bits r .. r + kh - 1 */
            *h = (*h << 1) | (uint64_t)mpz_tstbit(low, sp->r + (unsigned long)c);
        mpz_tdiv_r_2exp(low, low, sp->r);
        return 1;
    }
    for (;; matched = 0) {
        if (!matched) {
            c = dg_uniform_chunk(rng, sp->top << (64 - sp->kh), sp->kh, h);
            if (c == 1 || c < 0)
                return c < 0 ? -1 : 0;
            if (c == 0)
                continue;
        }
        /* H matched m - 1's (probability about 2**-kh): L's digits decide the try */
        xp = mpz_limbs_write(low, (mp_size_t)n);
        c = uniform_try(rng, sp->r, sp->low_digits, 0, 0, xp);
        if (c != 0) {
            mpz_limbs_finish(low, c < 0 ? 0 : (mp_size_t)n);
            return c < 0 ? -1 : 1;
        }
        mpz_limbs_finish(low, 0);
    }
}

int dg_bits_mpz(dg_rng *rng, unsigned long r, mpz_t out)
{
    size_t n = (r + 63) / 64, i;
    mp_limb_t *xp;
    if (n == 0) {
        mpz_set_ui(out, 0);
        return rng->status == DG_OK ? 0 : -1;
    }
    xp = mpz_limbs_write(out, (mp_size_t)n);
    xp[n - 1] = dg_bits(rng, (unsigned)(r - 64 * (n - 1)));    /* the top limb: 1..64 bits */
    for (i = n - 1; i-- > 0;)
        xp[i] = dg_bits(rng, 64);
    mpz_limbs_finish(out, rng->status == DG_OK ? (mp_size_t)n : 0);
    return rng->status == DG_OK ? 0 : -1;
}

/*
 * The first digits of p = n/d for 0 < n < d, d of dn >= 2 limbs, from the top
 * 64 bits of d and n: with s = bitlength(d) - 64, D = floor(d / 2**s) >= 2**63
 * and N = floor(n / 2**s) < D, n/d lies in [N/(D+1), (N+1)/D), so
 * Q = floor(2**64 p) lies in [q - 2, q + 2] with q = floor(2**64 N/D): 2**64 p is
 * below 2**64 N/D + 2**64/D and at least 2**64 N/D - 2**64 p/D, and 2**64/D <= 2.
 * Every value in that range shares its top L bits, and so does Q: they are p's
 * first L digits.  Returns L (0 when N = D: no estimate), the digits at the
 * top of *digits.
 *
 * These digits may stand in for the walk's because they never reach the end
 * of an ending expansion: if p's expansion ends at digit J <= 64 (its last 1),
 * Q = 2**64 p is an integer with lowest 1 bit at digit J, and q <= Q + 1 (the
 * estimate overshoots 2**64 p by less than 2p < 2), so the range holds Q - 1
 * and Q, which differ from digit J on: L < J.  The walk, which stops reading at
 * the end of the expansion, takes over before it.
 */
static unsigned top_digits(const mp_limb_t *np, mp_size_t nn, const mp_limb_t *dp, mp_size_t dn,
                           uint64_t *digits)
{
    unsigned sh = (unsigned)__builtin_clzll(dp[dn - 1]);
    uint64_t dh = dp[dn - 1], nh = (dn - 1 < nn) ? np[dn - 1] : 0;
    uint64_t nl = (dn - 2 < nn) ? np[dn - 2] : 0, q, r, lo, hi;
    if (sh > 0) {
        dh = (dh << sh) | (dp[dn - 2] >> (64 - sh));
        nh = (nh << sh) | (nl >> (64 - sh));
    }
    if (nh >= dh)
        return 0;
    q = dg_div_shift64(nh, dh, &r);
    lo = (q >= 2) ? q - 2 : 0;
    hi = (q <= UINT64_MAX - 2) ? q + 2 : UINT64_MAX;
    *digits = lo;
    return (lo == hi) ? 64 : (unsigned)__builtin_clzll(lo ^ hi);
}

/*
 * Bernoulli(n/d) for 0 < n < d on limb arrays (nn >= 1 limbs of n, dn of d,
 * r: dn limbs of scratch): the walk of dg_bernoulli_u64, r = n, then r = 2r,
 * digit = [r >= d], r -= digit d, until a bit differs or r = 0; for d of two
 * limbs or more its first digits come from top_digits.
 */
static int bernoulli_limbs(dg_rng *rng, const mp_limb_t *np, mp_size_t nn,
                           const mp_limb_t *dp, mp_size_t dn, mp_limb_t *r)
{
    mp_limb_t top;
    uint64_t digits;
    unsigned skip = 0, read;
    int digit, b, result;
    if (dn >= 2) {
        /* the first L digits at once, compared a word at a time */
        skip = top_digits(np, nn, dp, dn, &digits);
        if (skip > 0) {
            result = dg_compare_digits_at(rng, digits, skip, &read);
            if (result != DG_DIGITS_MATCH)
                return result;      /* a digit, or -1: exactly the walk's bits */
        }
    }
    /* the walk; its first `skip` digits matched above (the expansion goes on past them) */
    mpn_copyi(r, np, nn);
    if (dn > nn)
        mpn_zero(r + nn, dn - nn);
    for (;;) {
        top = mpn_lshift(r, r, dn, 1);  /* r < d, so 2r < 2d: at most one bit above dn limbs */
        digit = top != 0 || mpn_cmp(r, dp, dn) >= 0;
        if (digit)
            mpn_sub_n(r, r, dp, dn);    /* the borrow cancels `top` */
        if (skip > 0) {
            skip--;
            continue;
        }
        b = dg_bit(rng);
        if (rng->status != DG_OK)
            return -1;
        if (b != digit)
            return digit;
        if (mpn_zero_p(r, dn))
            return 0;
    }
}

int dg_bernoulli_mpz(dg_rng *rng, const mpz_t n, const mpz_t d, mpz_t rem)
{
    mp_size_t dn = (mp_size_t)mpz_size(d), nn = (mp_size_t)mpz_size(n);
    int result;
    if (mpz_cmp(n, d) >= 0)
        return 1;
    if (__builtin_expect(rng->decider != NULL, 0))
        return decide_bernoulli_mpz(rng, n, d);
    if (nn == 0)
        return 0;
    result = bernoulli_limbs(rng, mpz_limbs_read(n), nn, mpz_limbs_read(d), dn,
                             mpz_limbs_write(rem, dn));
    mpz_limbs_finish(rem, dn);          /* rem = the last remainder, a valid mpz again */
    return result;
}

static DG_COLD int decide_bernoulli_u128(dg_rng *rng, dg_u128 n, dg_u128 d)
{
    mpz_t nz, dz;
    int c;
    mpz_init(nz);
    mpz_init(dz);
    mpz_import(nz, 2, -1, 8, 0, 0, (uint64_t[2]){(uint64_t)n, (uint64_t)(n >> 64)});
    mpz_import(dz, 2, -1, 8, 0, 0, (uint64_t[2]){(uint64_t)d, (uint64_t)(d >> 64)});
    c = decide_bernoulli_mpz(rng, nz, dz);
    mpz_clears(nz, dz, NULL);
    return c;
}

int dg_bernoulli_u128(dg_rng *rng, dg_u128 n, dg_u128 d)
{
    mp_limb_t np[2] = {(mp_limb_t)n, (mp_limb_t)(n >> 64)};
    mp_limb_t dp[2] = {(mp_limb_t)d, (mp_limb_t)(d >> 64)}, r[2];
    if (n >= d)
        return 1;
    if (d <= DG_BERNOULLI_DMAX)
        return dg_bernoulli_u64(rng, (uint64_t)n, (uint64_t)d);
    if (__builtin_expect(rng->decider != NULL, 0))
        return decide_bernoulli_u128(rng, n, d);
    if (n == 0)
        return 0;
    return bernoulli_limbs(rng, np, np[1] ? 2 : 1, dp, dp[1] ? 2 : 1, r);
}
