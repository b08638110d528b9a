/*
 * dg_rng.h -- the bit source every dgauss sampler reads.
 *
 * One small struct, passed by pointer to every sampler (the numpy.random
 * `bitgen_t` pattern).  It knows nothing of Python: words come from a fill
 * callback (the OS CSPRNG here, a NumPy BitGenerator from the Cython layer).
 *
 * Bit-consumption contract (mirrored by dgauss.reference):
 *   - randomness arrives as 64-bit words w0, w1, ... taken strictly in order,
 *     one word only when the previous one is used up;
 *   - bits are read from each word most significant first;
 *   - dg_bits(k) returns the next k bits as an integer, first bit most
 *     significant, so reading k bits at once equals reading them one by one;
 *   - each public call opens a fresh stream: unread bits of its last word are
 *     dropped when the call returns and never reused.
 *
 * Errors are sticky: after a failed fill, `status` stays non-zero, every read
 * returns 0 bits, and each sampler loop checks `status` so that it stops.
 */
#ifndef DG_RNG_H
#define DG_RNG_H

#include <stddef.h>
#include <stdint.h>

enum dg_status {
    DG_OK = 0,
    DG_ERR_ENTROPY = 1,   /* the OS refused randomness (errno in os_errno) */
    DG_ERR_EXHAUSTED = 2, /* a finite bit source (a test tape) ran out */
    DG_ERR_OVERFLOW = 3,  /* a sample does not fit the requested dtype */
    DG_ERR_LIMIT = 4,     /* a loop counter would pass 2**64 - 1 (never seen) */
    /* testing (dgauss.testing): */
    DG_ERR_RESTART = 5,   /* stopped at a rejection-loop restart, as asked */
    DG_ERR_RAW_BITS = 6,  /* a raw bit was read in decision mode */
    DG_ERR_DECISION = 7,  /* a decision outside the primitive's range */
    DG_ERR_CALLBACK = 8   /* the caller's own step failed (dgauss._core keeps the exception) */
};

struct dg_decider;        /* decision mode: see dg_prim.h */

/* Writes n words into `words`; returns DG_OK or a dg_status code. */
typedef int (*dg_fill_fn)(void *ctx, uint64_t *words, size_t n);

typedef struct dg_rng {
    dg_fill_fn fill;
    void *ctx;
    uint64_t *buf;       /* words fetched but not started */
    size_t cap;          /* capacity of buf, in words */
    size_t block;        /* words asked for on the next fill; grows 2x up to cap */
    size_t pos, len;     /* buf[pos:len] are unread */
    uint64_t cur;        /* unread bits of the current word, left-aligned */
    unsigned avail;      /* how many bits of cur are unread */
    int status;          /* DG_OK or the first error */
    int os_errno;        /* errno of a failed OS read */
    uint64_t bits_taken; /* bits of the words started so far (bits used = bits_taken - avail) */
    uint64_t bit_budget; /* bits a finite source still has (UINT64_MAX: unlimited) */
    struct dg_decider *decider; /* testing: primitives take outcomes from here */
    int stop_at_restart; /* testing: a rejection loop stops with DG_ERR_RESTART */
} dg_rng;

/* `first_block` words are fetched by the first fill, then twice as many each
 * time up to `cap`.  With cap == 1 the source is lazy: no word is taken from
 * the callback before it is needed (required for NumPy generators, so that
 * the compiled core and the oracle leave a generator in the same state). */
void dg_rng_init(dg_rng *rng, dg_fill_fn fill, void *ctx,
                 uint64_t *buf, size_t cap, size_t first_block);

/* Zero the words fetched into the buffer and the current word: the bits a stream has read
 * (from which the samples drawn could be told) do not stay in memory after it.  Only the
 * buffer's first `len` words were ever written (fills start at 0 and grow). */
void dg_rng_wipe(dg_rng *rng);

/* Fill callback reading the operating system's CSPRNG (getrandom(2), or
 * getentropy(3) / /dev/urandom where that is missing).  Retries short reads
 * and EINTR; any other failure returns DG_ERR_ENTROPY with errno in
 * ((dg_os_ctx *)ctx)->err.  `ctx` may be NULL. */
typedef struct dg_os_ctx { int err; } dg_os_ctx;
int dg_fill_os(void *ctx, uint64_t *words, size_t n);

/* How the OS is read: 2 through the kernel's vDSO getrandom (Linux >= 6.11), found and
 * called here; 1 through the C library's getrandom(3) for reads of up to 256 bytes (glibc
 * >= 2.41: the vDSO's) and the system call for larger ones; 0 by the getrandom(2) system
 * call; -1 from /dev/urandom. */
int dg_os_reader(void);

/* For tests and benchmarks, process-wide: read the OS through the vDSO (which = 2, the
 * default where there is one) or not (any other value: as dg_os_reader's 1 or 0).  Returns
 * dg_os_reader() after, or -1 when 2 was asked and there is no vDSO getrandom. */
int dg_os_set_reader(int which);

/* One read of at most n bytes: bytes read, or -1 with errno, or -2 for "no getrandom(2)". */
typedef long (*dg_read_fn)(void *arg, unsigned char *p, size_t n);

/* For tests, per call: an OS source that, after `fail_after` successful fills (>= 0),
 * fails `fail_count` of them with `fail_errno`; and, when `fake`, reads the bytes of the
 * SplitMix64 words 0, 1, 2, ... in short reads, every third interrupted by EINTR, through
 * the loop dg_fill_os uses (so tests can check that short reads are joined and interrupted
 * reads retried, never taken as data).  ctx is a dg_os_script.  fake_next is the next
 * byte's index (word fake_next / 8); the words from `first` on are prefix[0 .. nprefix)
 * before SplitMix64's (so a test can place chosen words in a stream). */
typedef struct dg_os_script {
    dg_os_ctx os;
    int fail_after, fail_count, fail_errno, fake;
    uint64_t fake_next, fake_calls;
    const uint64_t *prefix;
    uint64_t first, nprefix;
} dg_os_script;
int dg_fill_scripted(void *ctx, uint64_t *words, size_t n);

/* Two fresh streams of one source (two lanes of the OS): their first `n` words each from
 * one call of a's fill (one system call, not two), as if each had filled `n` words itself;
 * the next fills grow from there.  Nothing happens unless both are fresh and 2n fits a's
 * buffer.  DG_OK, or the fill's error (then both streams carry it). */
int dg_rng_preload_pair(dg_rng *a, dg_rng *b, size_t n);

/* Refill `cur` with the next word (fewer than 64 bits when bit_budget runs
 * low; DG_ERR_EXHAUSTED when it is 0).  Returns 0, or -1 with status set. */
int dg_rng_next_word(dg_rng *rng);

static inline uint64_t dg_bits_used(const dg_rng *rng)
{
    return rng->bits_taken - rng->avail;
}

/* The next bit (0 or 1); 0 after an error, with status set. */
static inline int dg_bit(dg_rng *rng)
{
    int b;
    if (rng->avail == 0 && dg_rng_next_word(rng) < 0)
        return 0;
    b = (int)(rng->cur >> 63);
    rng->cur <<= 1;
    rng->avail--;
    return b;
}

/* Slow path of dg_bits: the k bits span words (any number of them, since
 * the last word of a finite source may hold fewer than 64 bits). */
uint64_t dg_bits_spanning(dg_rng *rng, unsigned k);

/* The next k bits, 1 <= k <= 64, first bit most significant; 0 after an
 * error, with status set. */
static inline uint64_t dg_bits(dg_rng *rng, unsigned k)
{
    uint64_t v, w;
    unsigned b;
    if (k > rng->avail) {
        if (rng->pos == rng->len || rng->bit_budget != UINT64_MAX || rng->status != DG_OK)
            return dg_bits_spanning(rng, k);
        /* the usual crossing: the rest of cur, then the top b bits of the next buffered
         * word (dg_rng_next_word's bookkeeping, inline) */
        b = k - rng->avail;                                 /* 1 <= b <= 64 */
        v = (rng->avail == 0) ? 0 : (rng->cur >> (64 - rng->avail)) << b;
        w = rng->buf[rng->pos++];
        rng->bits_taken += 64;
        rng->cur = (b == 64) ? 0 : w << b;
        rng->avail = 64 - b;
        return v | (w >> (64 - b));
    }
    v = rng->cur >> (64 - k);
    rng->cur = (k == 64) ? 0 : rng->cur << k;
    rng->avail -= k;
    return v;
}

#endif /* DG_RNG_H */
