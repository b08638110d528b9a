# cython: language_level=3
"""Declarations of the C layer under csrc/ (bit source and bottom primitives)."""

from libc.stdint cimport uint8_t, uint64_t, int64_t
from dgauss._gmp cimport mpz_t, mpz_ptr, mpz_srcptr

cdef extern from "dg_rng.h" nogil:
    enum:
        DG_OK
        DG_ERR_ENTROPY
        DG_ERR_EXHAUSTED
        DG_ERR_OVERFLOW
        DG_ERR_LIMIT
        DG_ERR_RESTART
        DG_ERR_RAW_BITS
        DG_ERR_DECISION
        DG_ERR_CALLBACK

    ctypedef int (*dg_fill_fn)(void *ctx, uint64_t *words, size_t n) noexcept nogil

    ctypedef struct dg_decider
    ctypedef struct dg_rng:
        dg_fill_fn fill
        void *ctx
        int status
        int os_errno
        uint64_t bits_taken
        unsigned avail
        uint64_t bit_budget
        dg_decider *decider
        int stop_at_restart

    ctypedef struct dg_os_ctx:
        int err
    ctypedef struct dg_os_script:
        dg_os_ctx os
        int fail_after, fail_count, fail_errno, fake
        uint64_t fake_next, fake_calls
        const uint64_t *prefix
        uint64_t first, nprefix

    void dg_rng_init(dg_rng *rng, dg_fill_fn fill, void *ctx,
                     uint64_t *buf, size_t cap, size_t first_block)
    void dg_rng_wipe(dg_rng *rng)
    int dg_rng_preload_pair(dg_rng *a, dg_rng *b, size_t n)
    int dg_fill_os(void *ctx, uint64_t *words, size_t n)
    int dg_os_reader()
    int dg_os_set_reader(int which)
    int dg_fill_scripted(void *ctx, uint64_t *words, size_t n)
    uint64_t dg_bits_used(const dg_rng *rng)
    int dg_bit(dg_rng *rng)
    uint64_t dg_bits(dg_rng *rng, unsigned k)

cdef extern from "dg_ahead.h" nogil:
    ctypedef struct dg_ahead
    int dg_ahead_cpus()
    int dg_ahead_idle_cpu()
    dg_ahead *dg_ahead_start(dg_fill_fn fill, void *ctx, uint64_t expected)
    int dg_fill_ahead(void *ctx, uint64_t *words, size_t n)
    void dg_ahead_stop(dg_ahead *a)

cdef extern from "dg_chacha.h" nogil:
    ctypedef struct dg_chacha:
        uint64_t blocks_left
        int keyed
        int err
        dg_fill_fn key_fill
        void *key_ctx
    dg_chacha *dg_chacha_new()
    void dg_chacha_free(dg_chacha *st)
    void dg_chacha_forget(dg_chacha *st)
    int dg_fill_chacha(void *ctx, uint64_t *words, size_t n)
    void dg_chacha_set_key(dg_chacha *st, const unsigned int *key)
    void dg_chacha20_blocks(const unsigned int *key, unsigned int counter,
                            const unsigned int *nonce, unsigned int *out, size_t nblocks)
    int dg_chacha_kernel(int which)

cdef extern from "dg_prim.h" nogil:
    uint64_t DG_BERNOULLI_DMAX
    enum:
        DG_WANT_NONE
        DG_WANT_BERNOULLI
        DG_WANT_UNIFORM
        DG_WANT_BERNOULLI_EXP
    ctypedef struct dg_decider:
        const uint64_t *outcomes
        size_t count, pos
        int want
        mpz_t want_a, want_b
    int dg_fair_bit(dg_rng *rng)
    bint dg_mul_u64(uint64_t a, uint64_t b, uint64_t *r)
    bint dg_add_u64(uint64_t a, uint64_t b, uint64_t *r)
    bint dg_add_i64(int64_t a, int64_t b, int64_t *r)
    int dg_uniform_u64(dg_rng *rng, uint64_t m, uint64_t *out)
    int dg_uniform_u64_kp(dg_rng *rng, uint64_t m, unsigned k, uint64_t p, uint64_t *out)
    int dg_uniform_mpz(dg_rng *rng, mpz_srcptr m, mpz_ptr out)
    ctypedef struct dg_split:
        unsigned long r
        unsigned kh
        uint64_t top
        mpz_t low_digits
    int dg_uniform_split_u64(dg_rng *rng, uint64_t m, unsigned r, uint64_t *h, uint64_t *low)
    int dg_uniform_split_mpz(dg_rng *rng, mpz_srcptr m, const dg_split *sp, uint64_t *h, mpz_ptr low)
    int dg_bits_mpz(dg_rng *rng, unsigned long r, mpz_ptr out)
    int dg_bernoulli_u64(dg_rng *rng, uint64_t n, uint64_t d)
    int dg_bernoulli_mpz(dg_rng *rng, mpz_srcptr n, mpz_srcptr d, mpz_ptr rem)
    ctypedef unsigned long long dg_u128     # unsigned __int128 (C arithmetic only; never a Python object)
    bint dg_mul_u128(dg_u128 a, dg_u128 b, dg_u128 *r)
    int dg_bernoulli_u128(dg_rng *rng, dg_u128 n, dg_u128 d)
    void dg_mpz_set_u128(mpz_ptr z, dg_u128 v)
    bint dg_mpz_get_u128(mpz_srcptr z, dg_u128 *v)
    enum:
        DG_DIGITS_MATCH
    int dg_compare_digits(dg_rng *rng, uint64_t p, unsigned left)
    int dg_decide_bernoulli_exp_mpz(dg_rng *rng, mpz_srcptr n, mpz_srcptr d)

cdef extern from "dg_exp.h" nogil:
    uint64_t DG_EXP_M1_PREFIX
    int dg_exp_neg_prefix_fix(dg_u128 x_fix, dg_u128 slack, uint64_t *prefix)
    ctypedef struct dg_exp_table:
        unsigned long shift
    void dg_exp_init()
    void dg_exp_neg_floor(mpz_ptr out, uint64_t n, uint64_t d, unsigned long k)
    void dg_exp_neg_floor_mpz(mpz_ptr out, mpz_srcptr n, mpz_srcptr d, unsigned long k)
    uint64_t dg_exp_neg_prefix(uint64_t n, uint64_t d, int fixed_point)
    uint64_t dg_exp_neg_prefix_mpz(mpz_srcptr n, mpz_srcptr d, int fixed_point)
    int dg_exp_digits_tail_mpz(dg_rng *rng, mpz_srcptr n, mpz_srcptr d)
    void dg_exp_table_init(dg_exp_table *tab, mpz_srcptr t, unsigned long shift, uint64_t e_hi,
                           uint64_t e_lo, uint64_t *prefix, int fixed_point)
    uint64_t dg_exp_table_prefix(dg_exp_table *tab, uint64_t u)
    enum:
        DG_INVERSION_MAX
    ctypedef struct dg_geometric_table:
        uint64_t t
        uint64_t count
    uint64_t dg_geometric_table_size(uint64_t t)
    void dg_geometric_table_init(dg_geometric_table *g, uint64_t t, uint64_t e_hi, uint64_t e_lo, uint64_t *thr,
                                 int fixed_point)
    int dg_geometric_exp(dg_rng *rng, const dg_geometric_table *g, uint64_t *out)
    int dg_bernoulli_exp_digits(dg_rng *rng, uint64_t prefix, uint64_t n, uint64_t d)

cdef extern from "dg_inv.h" nogil:
    ctypedef struct dg_inv_table:
        const uint64_t *thr
        uint64_t count
        unsigned shift
    enum:
        DG_INV_UNDECIDED
    uint64_t DG_GUIDE_MAX_COUNT
    unsigned dg_inv_guide_bits(uint64_t count)
    void dg_inv_init(dg_inv_table *tab, const uint64_t *thr, uint64_t count, unsigned int *guide,
                     unsigned g)
    void dg_inv_init_shift(dg_inv_table *tab, const uint64_t *thr, uint64_t count,
                           unsigned int *guide, unsigned g, unsigned shift)
    void dg_inv_attach(dg_inv_table *tab, const uint64_t *thr, uint64_t count,
                       const unsigned int *guide, unsigned shift)
    unsigned dg_inv_word(const dg_inv_table *tab, uint64_t r, uint64_t *y)
    int dg_inv_draw(dg_rng *rng, const dg_inv_table *tab, uint64_t *y, uint64_t *r)
    int64_t dg_gauss_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned weight,
                           uint64_t *thr, uint64_t cap)
    uint64_t dg_geometric_words(dg_u128 e1, uint64_t count, uint64_t *thr, uint8_t *undecided)
    ctypedef struct dg_env:
        dg_inv_table stage
        const uint8_t *ones
        unsigned k
        int gaussian
        dg_u128 cmul
        unsigned cshift
    ctypedef struct dg_blocked:
        dg_inv_table stage
        dg_inv_table resid
        const uint64_t *rwords
        uint64_t nb, rcount
        unsigned k
    ctypedef struct dg_inv_pending:
        uint64_t r, base
        int stage
    uint64_t dg_laplace_word_exact(uint64_t n, uint64_t d, uint64_t x)
    uint64_t dg_laplace_direct_words(uint64_t n, uint64_t d, dg_u128 e1, uint64_t count,
                                     uint64_t *thr)
    int64_t dg_lap_blocked_words(uint64_t n, uint64_t d, dg_u128 e1, dg_u128 pl, unsigned k,
                                 uint64_t c, uint64_t *thr, uint64_t cap, uint64_t *rthr,
                                 dg_u128 *pu)
    int dg_inv_draw_one(dg_rng *rng, const dg_inv_table *tab, uint64_t *y, dg_inv_pending *pend)
    int64_t dg_gauss_blocked_words(uint64_t n, uint64_t d, dg_u128 e, dg_u128 q, unsigned k,
                                   uint64_t nb, uint64_t *thr, uint64_t cap, uint64_t *rwords,
                                   dg_u128 *tlo, dg_u128 *thi, uint64_t tcap)
    int dg_gauss_resid_word_exact(uint64_t n, uint64_t d, uint64_t y0, unsigned k, uint64_t u,
                                  uint64_t *w)
    int dg_blocked_draw(dg_rng *rng, const dg_blocked *lb, uint64_t *y, dg_inv_pending *pend)
    size_t dg_inv_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_inv_table *tab,
                       int64_t mu, int64_t *out, size_t n, int *rc, dg_inv_pending *pend,
                       int *lane)
    size_t dg_blocked_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_blocked *lb,
                           int64_t mu, int64_t *out, size_t n, int *rc, dg_inv_pending *pend,
                           int *lane)
    unsigned dg_env_fused(const dg_env *ev, const uint64_t *buf, uint64_t at, uint64_t end,
                          int64_t *x)
    size_t dg_env_fill(dg_rng *rng, dg_rng *rng2, unsigned phase, const dg_env *ev,
                       int64_t mu, int64_t *out, size_t n, int *rc, dg_inv_pending *pend,
                       int *lane)
