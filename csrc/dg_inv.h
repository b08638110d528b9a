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
 * fixed point with a proven error bound (dg_inv.c), dg_laplace_direct_words
 * those of the discrete Laplace.  For large parameters both are drawn by
 * blocked inversion (dg_blocked_draw: a table of two thresholds a block, then
 * k raw bits or a block's residual), its words from dg_gauss_blocked_words and
 * dg_lap_blocked_words.  Nothing here uses floating point.
 */
#ifndef DG_INV_H
#define DG_INV_H

#include <stdint.h>

#include "dg_exp.h"
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
 * X ~ N_Z(0, sigma^2) (weight 2), or of the one-sided B, P[B = b] proportional to
 * exp(-b**2 / (2 sigma^2)), b >= 0 (weight 1: enveloped inversion's block index), into
 * thr[1 .. K] (thr[0] = 2**64 - 1, thr[K + 1] = 0), from e = floor(2**128 exp(-1/(2 sigma^2)))
 * and q = floor(2**128 exp(-1/sigma^2)); n/d >= sigma^2 (only the bound on the sums' rest
 * reads it), n, d < 2**62 and n/d <= 2**24, and `cap` >= K + 2 words.  Returns K, or -1 when
 * some word is not decided by the error bound (then compute them exactly another way), or
 * -2 when cap is too small.
 */
int64_t dg_gauss_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned weight,
                       uint64_t *thr, uint64_t cap);

/* The geometric's words floor(2**64 p**x) from e1 = floor(2**128 p) (dg_inv.c). */
uint64_t dg_geometric_words(dg_u128 e1, uint64_t count, uint64_t *thr, uint8_t *undecided);

/* The guide's bits for K thresholds: about two entries per threshold, 4 .. 16 bits. */
unsigned dg_inv_guide_bits(uint64_t count);

/* Fills `guide` (2**g entries) for the K + 2 words `thr` (K <= DG_GUIDE_MAX_COUNT) and
 * sets up `tab`; dg_inv_init_shift buckets by r >> shift instead of by r's top g bits, for
 * words below 2**(g + shift) (and r then below that too). */
void dg_inv_init(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                 unsigned g);
void dg_inv_init_shift(dg_inv_table *tab, const uint64_t *thr, uint64_t count, uint32_t *guide,
                       unsigned g, unsigned shift);

/* Points `tab` at words and a guide that dg_inv_init(_shift) filled before (nothing written
 * to them: tables are shared by threads). */
static inline void dg_inv_attach(dg_inv_table *tab, const uint64_t *thr, uint64_t count,
                                 const uint32_t *guide, unsigned shift)
{
    tab->thr = thr;
    tab->count = count;
    tab->guide = guide;
    tab->shift = shift;
}

/* Y for the 64 bits r, or 0 bits decided: returns the bits needed (1..64), or 65 when
 * r equals a word. */
static DG_HOT_INLINE unsigned dg_inv_word(const dg_inv_table *tab, uint64_t r, uint64_t *y)
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

/* floor(a b / 2**128) for a, b < 2**128. */
static inline dg_u128 dg_mul_fix(dg_u128 a, dg_u128 b)
{
    uint64_t ah = (uint64_t)(a >> 64), al = (uint64_t)a;
    uint64_t bh = (uint64_t)(b >> 64), bl = (uint64_t)b;
    dg_u128 ll = (dg_u128)al * bl;
    dg_u128 m1 = (dg_u128)ah * bl + (ll >> 64);
    dg_u128 m2 = (dg_u128)al * bh + (uint64_t)m1;
    return (dg_u128)ah * bh + (m1 >> 64) + (m2 >> 64);
}

/* floor(2**64 T_x) exactly, scale n/d, from GMP (when the fixed-point bound does not decide it). */
uint64_t dg_laplace_word_exact(uint64_t n, uint64_t d, uint64_t x);

/* The words of T_1 .. T_count into thr[1 .. K], K the last non-zero (thr[0] = 2**64 - 1,
 * thr[K + 1] = 0; count + 2 words), e1 = floor(2**128 exp(-d/n)); returns K. */
uint64_t dg_laplace_direct_words(uint64_t n, uint64_t d, dg_u128 e1, uint64_t count,
                                 uint64_t *thr);

/*
 * Blocked inversion (docs/contract.md, item 9): |X| - 1 = Lb + U, L = 2**k.  `stage` holds the
 * words of theta_{2b+1} = T_{1+Lb} and theta_{2b+2} (below it by L times a mass no larger than
 * the block's smallest probability) for b < nb, then of T_x for x > L nb (nb = UINT64_MAX: no
 * end).  s = #{theta > R}: Y = 0 for s = 0; for s = 2b + 1, Y = 1 + Lb + U with U the next k
 * raw bits; for s = 2b + 2, U is drawn against block b's residual: `resid` when every block
 * has the same (the discrete Laplace), else the `rcount` words at rwords + b (rcount + 2)
 * (rwords[.. + 0] = 2**64 - 1, rwords[.. + rcount + 1] = 0; the discrete Gaussian); for
 * s > 2 nb, Y = L nb + s - 2 nb.
 */
typedef struct dg_blocked {
    dg_inv_table stage;
    dg_inv_table resid;
    const uint64_t *rwords;
    uint64_t nb, rcount;
    unsigned k;
} dg_blocked;

/*
 * The discrete Laplace's words, scale t = n/d in [2**8, 2**20], L = 2**k (k <= 15; the choice
 * is dgauss._inversion.laplace_blocks'), c = L - ceil(L (L - 1)/t): theta_{2b+1} = T_{1+Lb},
 * theta_{2b+2} = T_{1+Lb+c} for every b, and one residual rho_u = F(u)/F(0), u = 1 .. L - 1,
 * F(u) = L (p**u - p**L) - (L - u)(1 - p**c).
 * e1 = floor(2**128 p), pl = floor(2**128 p**L): stage words into thr[1 .. K1] (thr[0] =
 * 2**64 - 1, thr[K1 + 1] = 0; `cap` words at most), the residual's into rthr[1 .. L - 1]
 * (rthr[0] = 2**64 - 1, rthr[L] = 0); `pu` is scratch of L + 1 dg_u128.  Returns K1, -1 when
 * the fixed-point bound leaves a residual word undecided (then compute them exactly another
 * way), or -2 when cap is too small.
 */
int64_t dg_lap_blocked_words(uint64_t n, uint64_t d, dg_u128 e1, dg_u128 pl, unsigned k,
                             uint64_t c, uint64_t *thr, uint64_t cap, uint64_t *rthr,
                             dg_u128 *pu);

/*
 * The discrete Gaussian's words, sigma^2 = n/d (n, d < 2**62, n/d <= 2**24), L = 2**k, nb
 * blocks, from e and q as for dg_gauss_words: theta_{2b+1} = T_{1+Lb},
 * theta_{2b+2} = T_{1+Lb} - L P[|X| = L(b+1)] (b < nb), then T_x for x > L nb, into
 * thr[1 .. K1] (thr[0] = 2**64 - 1, thr[K1 + 1] = 0, `cap` words at most), and block b's
 * residual rho_{b,u} = N_u/N_0, N_u = sum_{v=u}^{L-2} (w_{1+Lb+v} - w_{L(b+1)}),
 * w_y = exp(-y**2 / (2 sigma^2)), u = 1 .. L - 2, into rwords + b L as above (rcount = L - 2;
 * nb L words).  `tlo`, `thi` are scratch of `tcap` dg_u128 (about 10 sigma + 64).  Returns
 * K1, -1 when a stage word is not decided by the bound (then compute them another way), or
 * -2 when cap or tcap is too small.  A residual word the bound does not decide is computed
 * exactly (dg_gauss_resid_word_exact).
 */
int64_t dg_gauss_blocked_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned k,
                               uint64_t nb, uint64_t *thr, uint64_t cap, uint64_t *rwords,
                               dg_u128 *tlo, dg_u128 *thi, uint64_t tcap);

/* floor(2**64 rho_{b,u}) of the discrete Gaussian's block starting at y0 = 1 + Lb into *w,
 * exactly (GMP): 0, or -1 when 2**16 bits do not decide it (never seen). */
int dg_gauss_resid_word_exact(uint64_t n, uint64_t d, uint64_t y0, unsigned k, uint64_t u,
                              uint64_t *w);

/* A table without a guide (a block's residual: a few words), and its word function. */
typedef struct dg_inv_list {
    const uint64_t *thr;    /* thr[0] = 2**64 - 1, thr[1 .. count], thr[count + 1] = 0 */
    uint64_t count;
} dg_inv_list;

static inline unsigned dg_inv_list_word(const dg_inv_list *tab, uint64_t r, uint64_t *y)
{
    const uint64_t *thr = tab->thr;
    uint64_t lo = 1;
    unsigned below, above;
    while (thr[lo] > r)                     /* thr[count + 1] = 0 stops it */
        lo++;
    *y = lo - 1;
    if (thr[lo] == r)
        return 65;
    below = (unsigned)__builtin_clzll(r ^ thr[lo]);
    above = (lo > 1) ? (unsigned)__builtin_clzll(r ^ thr[lo - 1]) : 0;
    return 1 + (below > above ? below : above);
}

/*
 * The usual case of a draw: R's next 64 bits are the rest of cur (1 .. 63 bits) and the top
 * of the next buffered word, which can be looked at before it is taken (no bit budget).
 */
#define DG_INV_PEEKS(rng) \
    ((rng)->avail > 0 && (rng)->avail < 64 && (rng)->pos < (rng)->len && \
     (rng)->bit_budget == UINT64_MAX)

/*
 * The draw, for a table type T and its word function WORD (dg_inv_word, dg_inv_list_word):
 *   NAME(rng, tab, &y, &r): Y into y: 0; -1 when the bit source failed; DG_INV_UNDECIDED
 *   with R's first 64 bits in r (consumed), when they do not decide.
 * R's 64 bits may run into the next word; a finite source's short last word goes one bit at
 * a time (NAME_bitwise): the first j with need <= j is the rule's stopping point, as a
 * smaller need would have shown at an earlier j (the bits after R's first j cannot move a
 * threshold past R).
 */
#define DG_INV_DRAW(NAME, T, WORD)                                                         \
static int NAME##_bitwise(dg_rng *rng, const T *tab, uint64_t known, unsigned have,         \
                          uint64_t *y, uint64_t *r)                                         \
{                                                                                           \
    unsigned j = have;                                                                      \
    uint64_t a = known;                                                                     \
    int b;                                                                                  \
    while (j < 64) {                                                                        \
        b = dg_bit(rng);                                                                    \
        if (rng->status != DG_OK)                                                           \
            return -1;                                                                      \
        a |= (uint64_t)b << (63 - j);                                                       \
        j++;                                                                                \
        if (WORD(tab, a, y) <= j)                                                           \
            return 0;                                                                       \
    }                                                                                       \
    *r = a;                                                                                 \
    return DG_INV_UNDECIDED;                                                                \
}                                                                                           \
                                                                                            \
static inline int NAME(dg_rng *rng, const T *tab, uint64_t *y, uint64_t *r)                \
{                                                                                           \
    uint64_t first, next;                                                                   \
    unsigned need, have, more;                                                              \
    if (rng->avail == 0 && dg_rng_next_word(rng) < 0)                                       \
        return -1;                                                                          \
    if (DG_INV_PEEKS(rng)) {                                                                \
        next = rng->buf[rng->pos];                                                          \
        *r = rng->cur | (next >> rng->avail);                                               \
        need = WORD(tab, *r, y);                                                            \
        if (need <= rng->avail) {                                                           \
            rng->cur = rng->cur << need;    /* need <= avail < 64 */                        \
            rng->avail -= need;                                                             \
            return 0;                                                                       \
        }                                                                                   \
        more = (need <= 64 ? need : 64) - rng->avail;   /* 1 .. 63 bits of the next word */ \
        rng->pos++;                                                                         \
        rng->bits_taken += 64;                                                              \
        rng->cur = next << more;                                                            \
        rng->avail = 64 - more;                                                             \
        return need <= 64 ? 0 : DG_INV_UNDECIDED;                                           \
    }                                                                                       \
    need = WORD(tab, rng->cur, y);  /* unread bits as zeros: valid if need <= avail */      \
    if (need <= rng->avail) {                                                               \
        rng->cur = (need == 64) ? 0 : rng->cur << need;                                     \
        rng->avail -= need;                                                                 \
        return 0;                                                                           \
    }                                                                                       \
    have = rng->avail;              /* R's first 64 bits run into the next word */          \
    first = rng->cur;                                                                       \
    if (have < 64) {                                                                        \
        if (dg_rng_next_word(rng) < 0)                                                      \
            return -1;                                                                      \
        if (rng->avail < 64 - have)                                                         \
            return NAME##_bitwise(rng, tab, first, have, y, r);                             \
        *r = first | (rng->cur >> have);                                                    \
        need = WORD(tab, *r, y);                                                            \
        if (need <= 64) {                                                                   \
            need -= have;                                                                   \
            rng->cur = (need == 64) ? 0 : rng->cur << need;                                 \
            rng->avail -= need;                                                             \
            return 0;                                                                       \
        }                                                                                   \
        rng->cur <<= 64 - have;     /* 1 <= have < 64 */                                    \
        rng->avail -= 64 - have;                                                            \
        return DG_INV_UNDECIDED;                                                            \
    }                                                                                       \
    *r = first;                                                                             \
    rng->cur = 0;                                                                           \
    rng->avail = 0;                                                                         \
    return DG_INV_UNDECIDED;                                                                \
}

DG_INV_DRAW(dg_inv_draw, dg_inv_table, dg_inv_word)
DG_INV_DRAW(dg_inv_list_draw, dg_inv_list, dg_inv_list_word)

/*
 * Where a draw stopped when R's first 64 bits did not decide (DG_INV_UNDECIDED): those bits r
 * (consumed), the step (1: the table's rule, or blocked inversion's first step; 2: blocked
 * inversion's residual, r being R''s bits) and what is known of Y (base = 1 + Lb at step 2).
 */
typedef struct dg_inv_pending {
    uint64_t r, base;
    int stage;
} dg_inv_pending;

static inline int dg_inv_draw_one(dg_rng *rng, const dg_inv_table *tab, uint64_t *y,
                                  dg_inv_pending *pend)
{
    pend->stage = 1;
    pend->base = 0;
    return dg_inv_draw(rng, tab, y, &pend->r);
}

/* Y by blocked inversion: 0, -1 when the bit source failed, or DG_INV_UNDECIDED (*pend). */
static inline int dg_blocked_draw(dg_rng *rng, const dg_blocked *lb, uint64_t *y,
                                  dg_inv_pending *pend)
{
    uint64_t s, b, u, base;
    dg_inv_list block;
    int c = dg_inv_draw(rng, &lb->stage, &s, &pend->r);
    if (c != 0) {
        pend->stage = 1;
        pend->base = 0;
        return c;
    }
    if (s == 0) {
        *y = 0;
        return 0;
    }
    b = (s - 1) >> 1;
    if (b >= lb->nb) {                      /* past the blocks: one threshold a value */
        *y = (lb->nb << lb->k) + s - 2 * lb->nb;
        return 0;
    }
    base = 1 + (b << lb->k);
    if (s & 1) {                            /* the block's uniform part: k raw bits */
        u = dg_bits(rng, lb->k);
        if (rng->status != DG_OK)
            return -1;
    } else {                                /* its residual: the rule on a fresh R' */
        if (lb->rwords == NULL) {
            c = dg_inv_draw(rng, &lb->resid, &u, &pend->r);
        } else {
            block.thr = lb->rwords + b * (lb->rcount + 2);
            block.count = lb->rcount;
            c = dg_inv_list_draw(rng, &block, &u, &pend->r);
        }
        if (c != 0) {
            pend->stage = 2;
            pend->base = base;
            return c;
        }
    }
    *y = base + u;
    return 0;
}

/* Consumes n bits, 1 <= n <= 64, where DG_INV_PEEKS holds (a branch, not a select: the
 * branch lets the next draw start before this one's bits are counted). */
static inline void dg_inv_skip(dg_rng *rng, unsigned n)
{
    unsigned more;
    if (n <= rng->avail) {                  /* n <= avail < 64 */
        rng->cur <<= n;
        rng->avail -= n;
        return;
    }
    more = n - rng->avail;                  /* 1 .. 63 bits of the next word */
    rng->cur = rng->buf[rng->pos++] << more;
    rng->bits_taken += 64;
    rng->avail = 64 - more;
}

/* X = +-y from the sign bit: 0, or -1 when the bit source failed. */
static inline int dg_inv_sign(dg_rng *rng, uint64_t y, int64_t *x)
{
    *x = (int64_t)y;                        /* Y < 2**62 in the ranges dgauss._inversion allows */
    if (y != 0 && dg_bit(rng))
        *x = -*x;
    return rng->status == DG_OK ? 0 : -1;
}

/*
 * The signed draws of a batch: X = +-Y, the sign the bit after Y's (1: negative) when Y > 0.
 * The fused steps take R's next 64 bits r: when Y, its sign bit and, for blocked inversion's
 * uniform part, the k bits of U all lie in r, *x = +-Y and the number of bits they take
 * (1 .. 64), to be consumed at once, the same bits in the same order as the steps one by one;
 * else 0 (nothing is consumed: the steps one by one then).  DG_INV_DRAW_SIGNED looks at r
 * across the next buffered word in the usual case (DG_INV_PEEKS); a lane (below) by its bit
 * position.
 */
static inline unsigned dg_inv_fused(const dg_inv_table *tab, uint64_t r, int64_t *x)
{
    uint64_t y, nonzero, neg;
    unsigned need = dg_inv_word(tab, r, &y);
    if (need >= 64)
        return 0;
    nonzero = y != 0;
    neg = ((r << need) >> 63) & nonzero;    /* the sign: the bit after Y's, when Y > 0 */
    *x = (int64_t)((y ^ (0 - neg)) + neg);
    return need + (unsigned)nonzero;
}

static inline unsigned dg_blocked_fused(const dg_blocked *lb, uint64_t r, int64_t *x)
{
    uint64_t s, t, y, neg;
    unsigned k = lb->k, need = dg_inv_word(&lb->stage, r, &s);
    if (!((s & 1) && (s >> 1) < lb->nb && need + k < 64))
        return 0;                           /* s = 2b + 1: the uniform part, 1 <= k < 64 */
    t = r << need;
    y = 1 + ((s >> 1) << k) + (t >> (64 - k));
    neg = (t >> (63 - k)) & 1;
    *x = (int64_t)((y ^ (0 - neg)) + neg);
    return need + k + 1;
}

/* A signed draw: 0, -1 when the bit source failed, or DG_INV_UNDECIDED (*pend). */
#define DG_INV_DRAW_SIGNED(NAME, T, FUSED, ONE)                                              \
static inline int NAME(dg_rng *rng, const T *tab, int64_t *x, dg_inv_pending *pend)         \
{                                                                                           \
    uint64_t y;                                                                             \
    unsigned n;                                                                             \
    int c;                                                                                  \
    if (rng->avail == 0 && dg_rng_next_word(rng) < 0)                                       \
        return -1;                                                                          \
    if (DG_INV_PEEKS(rng)) {                                                                \
        n = FUSED(tab, rng->cur | (rng->buf[rng->pos] >> rng->avail), x);                   \
        if (n != 0) {                                                                       \
            dg_inv_skip(rng, n);                                                            \
            return 0;                                                                       \
        }                                                                                   \
    }                                                                                       \
    c = ONE(rng, tab, &y, pend);                                                            \
    return c != 0 ? c : dg_inv_sign(rng, y, x);                                             \
}

DG_INV_DRAW_SIGNED(dg_inv_draw_signed, dg_inv_table, dg_inv_fused, dg_inv_draw_one)
DG_INV_DRAW_SIGNED(dg_blocked_draw_signed, dg_blocked, dg_blocked_fused, dg_blocked_draw)

/*
 * A lane: a buffered source (no bit budget, no error) read through one bit position P into
 * its buffer instead of cur/avail/pos, so that consuming n bits is P += n, without a branch.
 * The bits are the same: the next unread bit is bit P % 64 (from the top) of buf[P / 64],
 * and R's next 64 bits are that word shifted up, joined with the next word's top bits, while
 * both words are buffered (P < dg_lane_end).  dg_lane_leave puts the position back into
 * cur/avail/pos (and counts the words started), so the steps one by one go on from there.
 */
static inline int dg_lane_ok(const dg_rng *rng)
{
    return rng->bit_budget == UINT64_MAX && rng->status == DG_OK;
}

static inline uint64_t dg_lane_enter(const dg_rng *rng)
{
    return (uint64_t)rng->pos * 64 - rng->avail;    /* cur = buf[pos - 1] << (64 - avail) */
}

static inline uint64_t dg_lane_end(const dg_rng *rng)
{
    return rng->len > 0 ? (uint64_t)(rng->len - 1) * 64 : 0;
}

static inline uint64_t dg_lane_r(const uint64_t *buf, uint64_t at)
{
    const uint64_t *w = buf + (at >> 6);
    unsigned sh = (unsigned)(at & 63);
    return (w[0] << sh) | ((w[1] >> 1) >> (63 - sh));
}

/* How many steps of at most `step` bits each can start at bit `at` or after and still find
 * their `reach` bits past their 64 before `end` (each step's start + reach < end). */
static inline size_t dg_lane_steps(uint64_t at, uint64_t end, uint64_t reach, uint64_t step)
{
    return at + reach < end ? (size_t)((end - at - reach - 1) / step) + 1 : 0;
}

static inline void dg_lane_leave(dg_rng *rng, uint64_t at)
{
    size_t pos = (size_t)((at + 63) >> 6);          /* the words started */
    rng->bits_taken += (uint64_t)(pos - rng->pos) * 64;
    rng->pos = pos;
    rng->avail = (unsigned)((uint64_t)pos * 64 - at);
    rng->cur = rng->avail != 0 ? rng->buf[pos - 1] << (64 - rng->avail) : 0;
}

/*
 * A batch: out[i] = mu + X_i for i = 0 .. n - 1 (DRAW: a signed draw above, FUSED its fused
 * step on a lane, which reads at most 64 + REACH bits and consumes at most STEP: 64 for one
 * word's Y and sign, 128 for the enveloped step's B, then U, R' and the sign from the next
 * 64).  With rng2 == NULL every sample comes from rng, in order.  With a second source
 * rng2, out[i] comes from rng when i + phase is even and from rng2 when it is odd, each
 * source's samples in order from its own bits (phase carries a batch on across calls): two
 * independent streams (dgauss gives each its own OS stream, as it gives each thread one),
 * whose draws are independent chains of loads and shifts that the CPU overlaps (one thread
 * draws faster: docs/performance.md).  The usual sample is the fused step on a lane; the rest
 * (a draw the fused step cannot take, a refill, an int64 overflow) go one at a time through
 * DRAW.  The two lanes' loop runs as many pairs as both buffers surely hold (dg_lane_steps)
 * between end checks: 3-4% fewer instructions a sample.
 * Returns how many were written; stops early with *rc = -1 when a bit source failed,
 * DG_ERR_OVERFLOW when mu + X leaves int64, or DG_INV_UNDECIDED when a draw's 64 bits do not
 * decide (*pend says where it stopped: the caller finishes that sample, number `returned`,
 * its sign included, from source *lane (0: rng, 1: rng2), then goes on).  `out` aliases
 * nothing else, so the lanes' positions stay in registers.
 */
#define DG_INV_FILL(NAME, T, DRAW, FUSED, REACH, STEP)                                      \
static DG_HOT_INLINE size_t NAME(dg_rng *rng, dg_rng *rng2, unsigned phase,                 \
                                 const T *tab, int64_t mu, int64_t *__restrict out,         \
                                 size_t n, int *rc, dg_inv_pending *pend, int *lane)        \
{                                                                                           \
    size_t i = 0;                                                                           \
    uint64_t p0, p1, end0, end1;                                                            \
    unsigned n0, n1;                                                                        \
    int64_t x0 = 0, x1 = 0, v0, v1;                                                         \
    dg_rng *src;                                                                            \
    int c;                                                                                  \
    *rc = 0;                                                                                \
    *lane = 0;                                                                              \
    while (i < n) {                                                                         \
        if (rng2 == NULL && dg_lane_ok(rng)) {                                              \
            p0 = dg_lane_enter(rng);                                                        \
            end0 = dg_lane_end(rng);                                                        \
            while (i < n && p0 + (REACH) < end0) {                                          \
                n0 = FUSED(tab, rng->buf, p0, end0, &x0);                                   \
                if (n0 == 0 || __builtin_add_overflow(x0, mu, &v0))                         \
                    break;                                                                  \
                p0 += n0;                                                                   \
                out[i++] = v0;                                                              \
            }                                                                               \
            dg_lane_leave(rng, p0);                                                         \
        } else if (rng2 != NULL && ((i + phase) & 1) == 0 && dg_lane_ok(rng)                \
                   && dg_lane_ok(rng2)) {                                                   \
            p0 = dg_lane_enter(rng);                                                        \
            end0 = dg_lane_end(rng);                                                        \
            p1 = dg_lane_enter(rng2);                                                       \
            end1 = dg_lane_end(rng2);                                                       \
            for (;;) {                                                                      \
                size_t m = (n - i) / 2, m0 = dg_lane_steps(p0, end0, REACH, STEP),          \
                       m1 = dg_lane_steps(p1, end1, REACH, STEP);                           \
                m = m0 < m ? m0 : m;                                                        \
                m = m1 < m ? m1 : m;                                                        \
                if (m == 0)                                                                 \
                    break;                                                                  \
                for (; m > 0; m--) {                                                        \
                    n0 = FUSED(tab, rng->buf, p0, end0, &x0);                               \
                    n1 = FUSED(tab, rng2->buf, p1, end1, &x1);                              \
                    if (n0 == 0 || n1 == 0 || __builtin_add_overflow(x0, mu, &v0)           \
                            || __builtin_add_overflow(x1, mu, &v1))                         \
                        goto NAME##_pair_done;  /* neither consumed: i goes one by one */   \
                    p0 += n0;                                                               \
                    p1 += n1;                                                               \
                    out[i] = v0;                                                            \
                    out[i + 1] = v1;                                                        \
                    i += 2;                                                                 \
                }                                                                           \
            }                                                                               \
        NAME##_pair_done:                                                                   \
            dg_lane_leave(rng, p0);                                                         \
            dg_lane_leave(rng2, p1);                                                        \
        }                                                                                   \
        if (i == n)                                                                         \
            break;                                                                          \
        src = (rng2 != NULL && ((i + phase) & 1)) ? rng2 : rng;                             \
        c = DRAW(src, tab, &x0, pend);                                                      \
        if (c != 0) {                                                                       \
            *rc = c;                                                                        \
            *lane = src != rng;                                                             \
            return i;                                                                       \
        }                                                                                   \
        if (__builtin_add_overflow(x0, mu, &out[i])) {                                      \
            *rc = DG_ERR_OVERFLOW;                                                          \
            *lane = src != rng;                                                             \
            return i;                                                                       \
        }                                                                                   \
        i++;                                                                                \
    }                                                                                       \
    return n;                                                                               \
}

/* The fused steps on a lane: R's next 64 bits from bit `at` of buf (dg_lane_r; the lane's
 * bits end at `end`). */
static inline unsigned dg_inv_fused_at(const dg_inv_table *tab, const uint64_t *buf,
                                       uint64_t at, uint64_t end, int64_t *x)
{
    (void)end;
    return dg_inv_fused(tab, dg_lane_r(buf, at), x);
}

static inline unsigned dg_blocked_fused_at(const dg_blocked *lb, const uint64_t *buf,
                                           uint64_t at, uint64_t end, int64_t *x)
{
    (void)end;
    return dg_blocked_fused(lb, dg_lane_r(buf, at), x);
}

DG_INV_FILL(dg_inv_fill_inline, dg_inv_table, dg_inv_draw_signed, dg_inv_fused_at, 0, 64)
DG_INV_FILL(dg_blocked_fill_inline, dg_blocked, dg_blocked_draw_signed, dg_blocked_fused_at, 0,
            64)

/*
 * Enveloped inversion (docs/contract.md, item 9; dgauss._inversion.Envelope): the block index
 * B = b by the rule on `stage` (one-sided thresholds), U the next k raw bits, acceptance
 * Bernoulli(exp(-gamma(b, U))) by digits, the sign bit; a rejection, or Y = Lb + U = 0 with
 * the sign 1, starts again.  ones[b] is J(b) for every b the stage's table gives (b <=
 * stage.count; the Laplace's J is the same in every block): exp(-gamma)'s first J(b) digits
 * are 1 for every U of block b, so R's first 0 among its first J(b) bits accepts, read up to
 * that 0.  gamma = m(b, U) g, m = U (2Lb + U) (`gaussian`) or U, and
 * g = 1/(2 sigma^2) or 1/scale: cmul = floor(2**(128 + cshift) g), in [2**127, 2**128).
 */
typedef struct dg_env {
    dg_inv_table stage;
    const uint8_t *ones;    /* stage.count + 1 entries */
    unsigned k;
    int gaussian;
    dg_u128 cmul;
    unsigned cshift;
} dg_env;

/* floor(a b / 2**s) for 1 <= s <= 127, when it is below 2**128. */
static inline dg_u128 dg_mul_shift(dg_u128 a, dg_u128 b, unsigned s)
{
    uint64_t ah = (uint64_t)(a >> 64), al = (uint64_t)a, bh = (uint64_t)(b >> 64), bl = (uint64_t)b;
    dg_u128 ll = (dg_u128)al * bl, lh = (dg_u128)al * bh, hl = (dg_u128)ah * bl;
    dg_u128 mid = (ll >> 64) + (uint64_t)lh + (uint64_t)hl;         /* < 3 * 2**64 */
    dg_u128 lo = (mid << 64) | (uint64_t)ll;
    dg_u128 hi = (dg_u128)ah * bh + (lh >> 64) + (hl >> 64) + (mid >> 64);
    return (hi << (128 - s)) | (lo >> s);
}

/*
 * The first 64 digits of exp(-gamma(b, u)) for gamma < 1, in 128-bit fixed point: with
 * m = m(b, u), 2**128 gamma = m g 2**128 lies in [x, x + slack), x = floor(m cmul / 2**cshift),
 * slack = 2 + floor(m / 2**cshift) (cmul is below 2**(128 + cshift) g by less than 1), and
 * dg_exp_neg_prefix_fix gives the digits when its proven error interval decides them:
 * 1 and *prefix, else 0.
 */
static inline int dg_env_prefix(const dg_env *ev, uint64_t b, uint64_t u, uint64_t *prefix)
{
    dg_u128 m = ev->gaussian ? (dg_u128)u * ((b << (ev->k + 1)) + u) : (dg_u128)u;
    return dg_exp_neg_prefix_fix(dg_mul_shift(m, ev->cmul, ev->cshift),
                                 2 + (m >> ev->cshift), prefix);
}

/*
 * The attempts of a draw on a lane, from bit `at` of buf (as dg_inv_fused): an attempt reads B
 * from R's next 64 bits, then U, the acceptance and the sign from the 64 bits after B's (so
 * it needs 128 bits from its start: DG_INV_FILL's REACH).  The acceptance compares those bits
 * with exp(-gamma)'s digits: its first J(b) are 1, and when R's first J(b) bits are 1 too
 * (about 2**-J(b) of the attempts) the first 64 come from dg_env_prefix.  A rejection, or -0,
 * starts the next attempt where this one stopped, while the lane holds its 128 bits (before
 * `end`; up to DG_ENV_TRIES attempts).  *x and the bits taken by the attempts (to be consumed
 * at once), or 0, nothing consumed (dgauss._core then draws the sample step by step, with GMP
 * where the fixed point does not decide exp(-gamma)'s digits).  gamma = 0 (U = 0) reads no
 * bit.  Y = Lb + U < 2**63: b <= the table's count (< 2**16) and k <= 46.
 */
#define DG_ENV_TRIES 4

static unsigned dg_env_attempts(const dg_env *ev, const uint64_t *buf, uint64_t at,
                                uint64_t end, int64_t *x)
{
    uint64_t b, u, r, next, w, t, y, neg, prefix, diff, start = at;
    unsigned k = ev->k, need, used, first, j, tries;
    int accepted;
    for (tries = 0; tries < DG_ENV_TRIES; tries++) {
        r = dg_lane_r(buf, at);
        next = dg_lane_r(buf, at + 64);
        need = dg_inv_word(&ev->stage, r, &b);
        if (need > 64)
            return 0;
        /* the 64 bits after B's */
        w = need == 64 ? next : (r << need) | (next >> (64 - need));
        u = w >> (64 - k);                  /* 1 <= k <= 46 */
        used = k;
        accepted = 1;
        if (u != 0) {                       /* u = 0: gamma = 0, nothing read */
            t = w << k;
            j = ev->ones[b];
            first = (t == UINT64_MAX) ? 64 : (unsigned)__builtin_clzll(~t);    /* R's first 0 */
            if (first >= j) {               /* R's first j digits match exp(-gamma)'s */
                if (j == 0 || !dg_env_prefix(ev, b, u, &prefix))
                    return 0;
                diff = t ^ prefix;
                first = diff != 0 ? (unsigned)__builtin_clzll(diff) : 64;
                accepted = (int)((prefix >> (63 - (first & 63))) & 1);
            }
            if (used + first + 1 >= 64)
                return 0;                   /* undecided in these bits */
            used += first + 1;              /* the first digit where R and exp(-gamma) differ */
        }
        if (accepted) {
            neg = (w << used) >> 63;        /* used < 64 */
            y = (b << k) + u;
            if (y != 0 || !neg) {
                *x = (int64_t)((y ^ (0 - neg)) + neg);
                return (unsigned)(at - start) + need + used + 1;
            }
            used++;                         /* -0: the sign read, start again */
        }
        at += need + used;
        if (at + 64 >= end)
            return 0;
    }
    return 0;
}

/*
 * U (w's first k bits) and, when U != 0, R's first 0 after it (63 for all ones): 0 when R's
 * first J(b) bits match exp(-gamma)'s, which only dg_env_attempts decides.
 */
static DG_HOT_INLINE int dg_env_u_first(uint64_t w, unsigned k, unsigned j, uint64_t *u,
                                        unsigned *first)
{
    *u = w >> (64 - k);
    *first = 0;
    if (*u == 0)
        return 1;
    *first = (unsigned)__builtin_clzll(~(w << k) | 1);
    return *first < j;
}

/*
 * The fused step of the lane loops: the usual attempt alone, the same bits as
 * dg_env_attempts's first, when R's first 0 among its first J(b) bits decides the acceptance
 * and nothing starts again; else 0, and DG_INV_FILL draws the sample with DRAW
 * (dg_env_draw_signed: dg_env_attempts, about one sample in 100).  U, the acceptance's bits
 * and the sign come from R's word after B's bits when the bits the draw takes fit there (at
 * k <= 34 all but about one draw in 10**5, at k = 43 all but one in 350), else from the 64
 * bits after B's (choosing by the most a draw could take, k + need + 18 <= 64, the lane
 * loop drew 8.7 ns a sample at sigma^2 = 2**100 on two lanes; now 7.0).  Kept this small,
 * the loop draws 10-15% faster than with dg_env_attempts inline (a C harness, 2**24 + 1 and
 * 10**8: 12.2-12.4 against 14.0 ns a sample).
 */
static DG_HOT_INLINE unsigned dg_env_fused(const dg_env *ev, const uint64_t *buf, uint64_t at,
                                            uint64_t end, int64_t *x)
{
    uint64_t b, u, r = dg_lane_r(buf, at), w, y, neg;
    unsigned k = ev->k, need = dg_inv_word(&ev->stage, r, &b), used = k, first, j;
    (void)end;
    if (need > 64)
        return 0;
    j = ev->ones[b];
    w = r << (need & 63);       /* R's 64 - need bits after B's, then 0s (need = 64: see below) */
    if (!dg_env_u_first(w, k, j, &u, &first))
        return 0;
    if (need + k + first + 2 > 64) {    /* U, R's first 0 or the sign past R's word: what was */
        w = dg_lane_r(buf, at + need);  /* read from the 0s above is read again from here */
        if (!dg_env_u_first(w, k, j, &u, &first) || k + first + 2 > 64)
            return 0;
    }
    if (u != 0)
        used += first + 1;
    neg = (w << used) >> 63;                /* used <= 62 */
    y = (b << k) + u;
    if (y == 0 && neg)
        return 0;
    *x = (int64_t)((y ^ (0 - neg)) + neg);
    return need + used + 1;
}

/*
 * A draw one at a time (DG_INV_FILL's DRAW): dg_env_attempts on this source alone when its
 * buffer holds the bits, else (or when they cannot take the sample) the sample is handed back
 * to dgauss._core, which draws it step by step: DG_INV_UNDECIDED with stage 0, nothing
 * consumed.
 */
static inline int dg_env_draw_signed(dg_rng *rng, const dg_env *ev, int64_t *x,
                                     dg_inv_pending *pend)
{
    uint64_t at, end;
    unsigned n;
    if (dg_lane_ok(rng)) {
        at = dg_lane_enter(rng);
        end = dg_lane_end(rng);
        if (at + 64 < end && (n = dg_env_attempts(ev, rng->buf, at, end, x)) != 0) {
            dg_lane_leave(rng, at + n);
            return 0;
        }
    }
    pend->stage = 0;
    pend->base = 0;
    pend->r = 0;
    return DG_INV_UNDECIDED;
}

DG_INV_FILL(dg_env_fill_inline, dg_env, dg_env_draw_signed, dg_env_fused, 64, 128)

/*
 * The batches of dgauss._core: the loops above, compiled once more for x86-64-v3 (BMI2's
 * shifts, LZCNT) where the CPU has it and chosen at load time (dg_inv.c; 5-10% fewer ns a
 * sample on this project's machines), the same samples from the same bits either way.
 * DG_FILL_CLONES does it: with GCC 12 or later on x86-64 glibc, an ifunc (as dg_chacha.c's
 * blocks); elsewhere one build for the target the compiler is given.
 */
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) \
    && defined(__GLIBC__)
#define DG_FILL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DG_FILL_CLONES
#endif

size_t dg_inv_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_inv_table *tab,
                   int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                   dg_inv_pending *pend, int *lane);
size_t dg_blocked_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_blocked *lb,
                       int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                       dg_inv_pending *pend, int *lane);
size_t dg_env_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_env *ev,
                   int64_t mu, int64_t *__restrict out, size_t n, int *rc,
                   dg_inv_pending *pend, int *lane);

#endif /* DG_INV_H */
