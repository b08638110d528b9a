/*
 * dg_inv.h -- sampling by inversion against a table of threshold words.
 *
 * A distribution on {0, 1, 2, ...} with thresholds T_x = P[Y >= x] (x >= 1,
 * decreasing to 0) is sampled as Y = #{x >= 1 : R < T_x} for a uniform
 * R = 0.b1 b2 ... in [0, 1), read lazily: reading stops at the first j at
 * which no threshold has the same first j binary digits as R (no x with
 * floor(2**j T_x) = R's first j bits).  Y is then the number of thresholds
 * whose first j digits exceed R's.  dgauss._inversion.invert is that rule one
 * bit at a time; here the first 64 digits of every threshold with T_x >= 2**-64
 * are a table of words, R's next 64 bits are one word r, and a guide table on
 * r's top g bits finds the thresholds next to r in about one step.  Only the
 * two thresholds next to r can share the most digits with R (they are sorted),
 * so the rule needs 1 + max(clz(r ^ thr[i - 1]), clz(r ^ thr[i])) bits, and
 * exactly that many are consumed.  When r equals a word (R shares 64 digits
 * with a threshold, or r = 0 and R is below every word: probability about
 * (K + 1) 2**-64) the caller goes on bit by bit with more digits
 * (dgauss._core calls dgauss._inversion.invert from bit 65).
 *
 * dg_gauss_words computes the words of the discrete Gaussian's |X| in 128-bit
 * fixed point with a proven error bound (dg_inv.c).  Nothing here uses
 * floating point.
 */
#ifndef DG_INV_H
#define DG_INV_H

#include <stdint.h>

#include "dg_prim.h"
#include "dg_rng.h"

typedef struct dg_inv_table {
    const uint64_t *thr;    /* K + 2 words: thr[0] unused, thr[x] = floor(2**64 T_x), thr[K + 1] = 0 */
    uint64_t count;         /* K: the last x with a non-zero word */
    const uint32_t *guide;  /* 2**g entries, by R's top g bits h: see DG_GUIDE_* */
    unsigned shift;         /* 64 - g */
} dg_inv_table;

/*
 * A guide entry: the first x >= 1 with thr[x] >> (64 - g) <= h (bits 0..23), and, when no
 * word has top bits h (DG_GUIDE_DECIDED), the answer for every r in the bucket: Y = x - 1,
 * read in DG_GUIDE_NEED(entry) <= g bits (r's top g bits decide how many digits it shares
 * with its two neighbours, whose top g bits differ from h).  So most draws read one entry
 * and no word: at sigma^2 = 1e6, K = 9155 words in 2**15 buckets.
 */
#define DG_GUIDE_DECIDED (UINT32_C(1) << 31)
#define DG_GUIDE_INDEX(e) ((e) & UINT32_C(0xFFFFFF))
#define DG_GUIDE_NEED(e) (((e) >> 24) & 0x7F)
#define DG_GUIDE_MAX_COUNT (UINT32_C(0xFFFFFF) - 1)

/* Returned by dg_inv_draw when R's first 64 bits do not decide: they are in *r, consumed. */
#define DG_INV_UNDECIDED 1

/*
 * The words floor(2**64 T_x) of the discrete Gaussian's |X|, T_x = P[|X| >= x] for
 * X ~ N_Z(0, n/d), into thr[1 .. K] (thr[0] = 2**64 - 1, thr[K + 1] = 0), from
 * e = floor(2**128 exp(-d/(2n))) and q = floor(2**128 exp(-d/n)); needs n, d < 2**62 and
 * n/d <= 2**24, and `cap` >= K + 2 words.  Returns K, or -1 when some word is not decided
 * by the error bound (then compute them exactly another way), or -2 when cap is too small.
 */
int64_t dg_gauss_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, uint64_t *thr, uint64_t cap);

/* The discrete Laplace's stages (dgauss._inversion.HEAD, BLOCKS, OFFSET): see dg_inv.c. */
#define DG_LAPLACE_HEAD 0
#define DG_LAPLACE_BLOCKS 1
#define DG_LAPLACE_OFFSET 2
int64_t dg_laplace_words(int stage, dg_u128 e1, dg_u128 el, uint64_t block, uint64_t *thr,
                         uint64_t cap);

/* The guide's bits for K thresholds: about two entries per threshold, 4 .. 16 bits. */
unsigned dg_inv_guide_bits(uint64_t count);

/* Fills `guide` (2**g entries) for the K + 2 words `thr` (K <= DG_GUIDE_MAX_COUNT) and
 * sets up `tab`. */
void dg_inv_init(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                 unsigned g);

/* Y for the 64 bits r, or 0 bits decided: returns the bits needed (1..64), or 65 when
 * r equals a word. */
static inline unsigned dg_inv_word(const dg_inv_table *tab, uint64_t r, uint64_t *y)
{
    const uint64_t *thr = tab->thr;
    uint64_t h = r >> tab->shift;
    uint32_t entry = tab->guide[h];
    uint64_t lo, hi, mid;
    unsigned below, above;
    if (entry & DG_GUIDE_DECIDED) {
        *y = DG_GUIDE_INDEX(entry) - 1;
        return DG_GUIDE_NEED(entry);
    }
    lo = DG_GUIDE_INDEX(entry);                            /* thr[x] > r for every x < lo */
    hi = h > 0 ? DG_GUIDE_INDEX(tab->guide[h - 1]) : tab->count + 1;   /* thr[hi] <= r */
    while (hi - lo > 8) {                                  /* a crowded bucket (the far tail) */
        mid = lo + (hi - lo) / 2;
        if (thr[mid] > r)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (thr[lo] > r)
        lo++;
    *y = lo - 1;                                           /* thr[1 .. lo - 1] are above r */
    if (thr[lo] == r)
        return 65;
    below = (unsigned)__builtin_clzll(r ^ thr[lo]);
    above = (lo > 1) ? (unsigned)__builtin_clzll(r ^ thr[lo - 1]) : 0;
    return 1 + (below > above ? below : above);
}

/* The rule one bit at a time from R's bit have + 1 to its 64th, given its first `have`
 * bits (left-aligned in `known`, consumed, not deciding): for a finite source's short
 * last word.  Returns as dg_inv_draw. */
int dg_inv_draw_bitwise(dg_rng *rng, const dg_inv_table *tab, uint64_t known, unsigned have,
                        uint64_t *y, uint64_t *r);

/* Y into *y: 0; -1 when the bit source failed; DG_INV_UNDECIDED with R's first 64 bits in *r. */
static inline int dg_inv_draw(dg_rng *rng, const dg_inv_table *tab, uint64_t *y, uint64_t *r)
{
    uint64_t first;
    unsigned need, have;
    if (rng->avail == 0 && dg_rng_next_word(rng) < 0)
        return -1;
    need = dg_inv_word(tab, rng->cur, y);   /* unread bits as zeros: valid if need <= avail */
    if (need <= rng->avail) {
        rng->cur = (need == 64) ? 0 : rng->cur << need;
        rng->avail -= need;
        return 0;
    }
    /* R's first 64 bits run into the next word */
    have = rng->avail;
    first = rng->cur;
    if (have < 64) {
        if (dg_rng_next_word(rng) < 0)
            return -1;
        if (rng->avail < 64 - have)         /* a finite source's short last word */
            return dg_inv_draw_bitwise(rng, tab, first, have, y, r);
        *r = first | (rng->cur >> have);
        need = dg_inv_word(tab, *r, y);
        if (need <= 64) {
            need -= have;
            rng->cur = (need == 64) ? 0 : rng->cur << need;
            rng->avail -= need;
            return 0;
        }
        rng->cur <<= 64 - have;             /* 1 <= have < 64 */
        rng->avail -= 64 - have;
        return DG_INV_UNDECIDED;
    }
    *r = first;
    rng->cur = 0;
    rng->avail = 0;
    return DG_INV_UNDECIDED;
}

#endif /* DG_INV_H */
