/* dg_prim.c -- uniform integers and Bernoulli(n/d).  See dg_prim.h. */
#include "dg_prim.h"

static unsigned bit_length_u64(uint64_t x)
{
    return x == 0 ? 0 : 64u - (unsigned)__builtin_clzll(x);
}

int dg_uniform_u64(dg_rng *rng, uint64_t m, uint64_t *out)
{
    unsigned k;
    uint64_t x;
    if (m <= 1) {
        *out = 0;
        return 0;
    }
    k = bit_length_u64(m - 1);
    for (;;) {
        x = dg_bits(rng, k);
        if (rng->status != DG_OK)
            return -1;
        if (x < m) {
            *out = x;
            return 0;
        }
    }
}

int dg_uniform_mpz(dg_rng *rng, const mpz_t m, mpz_t out)
{
    size_t k, left;
    unsigned chunk;
    if (mpz_cmp_ui(m, 1) <= 0) {
        mpz_set_ui(out, 0);
        return 0;
    }
    /* bit length of m - 1: one less than m's when m is a power of two */
    k = mpz_sizeinbase(m, 2);
    if (mpz_scan1(m, 0) == k - 1)
        k -= 1;
    for (;;) {
        mpz_set_ui(out, 0);
        left = k;
        while (left > 0) {
            chunk = (left % 64 == 0) ? 64 : (unsigned)(left % 64);
            mpz_mul_2exp(out, out, chunk);
            mpz_add_ui(out, out, dg_bits(rng, chunk));
            left -= chunk;
        }
        if (rng->status != DG_OK)
            return -1;
        if (mpz_cmp(out, m) < 0)
            return 0;
    }
}

int dg_bernoulli_u64(dg_rng *rng, uint64_t n, uint64_t d)
{
    uint64_t r = n;
    int digit, b;
    if (n >= d)
        return 1;
    while (r != 0) {
        r <<= 1;
        digit = r >= d;
        if (digit)
            r -= d;
        b = dg_bit(rng);
        if (rng->status != DG_OK)
            return -1;
        if (b != digit)
            return digit;
    }
    return 0;
}

int dg_bernoulli_mpz(dg_rng *rng, const mpz_t n, const mpz_t d, mpz_t rem)
{
    int digit, b;
    if (mpz_cmp(n, d) >= 0)
        return 1;
    mpz_set(rem, n);
    while (mpz_sgn(rem) != 0) {
        mpz_mul_2exp(rem, rem, 1);
        digit = mpz_cmp(rem, d) >= 0;
        if (digit)
            mpz_sub(rem, rem, d);
        b = dg_bit(rng);
        if (rng->status != DG_OK)
            return -1;
        if (b != digit)
            return digit;
    }
    return 0;
}
