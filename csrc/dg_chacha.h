/*
 * dg_chacha.h -- an opt-in user-space CSPRNG for dgauss: ChaCha20 (RFC 8439) keyed from the
 * operating system, with fast key erasure (Bernstein, 2017).
 *
 * The samplers read the OS by default (dg_fill_os).  This source is used only when a caller
 * passes dgauss.ChaCha20() as rng: it makes the same kind of bits (uniform, independent,
 * unpredictable to anyone without the key) several times faster than getrandom(2), at the
 * cost of keeping a key in the process.  The security argument is in docs/security.md:
 *
 *   - keyed from getrandom(2) (32 bytes) on first use, after a fork, after
 *     DG_CHACHA_RESEED_BLOCKS blocks and when asked (dg_chacha_forget);
 *   - fast key erasure: each key makes up to DG_CHACHA_KEY_BLOCKS blocks (nonce 0,
 *     counters 0, 1, ...; as many as a fill needs), the first 32 bytes of block 0 become
 *     the next key and are never output, and a fill's working copies are wiped when it
 *     returns, so the state never holds what could recompute bits already handed out;
 *   - fork: the state lives on a page of its own marked MADV_WIPEONFORK (a child sees it
 *     zeroed, hence unkeyed), and the keying process's pid is checked on every fill as well;
 *   - threads: a state is never shared (dgauss.ChaCha20 keeps one per thread).
 *
 * It knows nothing of Python.
 */
#ifndef DG_CHACHA_H
#define DG_CHACHA_H

#include <stddef.h>
#include <stdint.h>

/* Blocks (64 bytes) made under keys derived from one OS key before the next OS key: 2^20
 * blocks, 64 MiB. */
#define DG_CHACHA_RESEED_BLOCKS (UINT64_C(1) << 20)

/* Blocks (64 bytes) made under one key at most: 32 (2 KiB, of which 2016 bytes are output,
 * the first 32 being the next key).  A fill stops where its words end: the rest of the
 * key's blocks are never made, and the next fill starts under the next key. */
#define DG_CHACHA_KEY_BLOCKS 32

typedef struct dg_chacha {
    uint32_t key[8];
    uint64_t blocks_left; /* blocks until the next key from the OS */
    long pid;             /* the process that keyed it */
    int keyed;            /* 0: the next fill keys it from the OS (a child sees 0) */
    int err;              /* errno of a failed OS read */
    /* for tests: where keys come from (NULL: the OS, dg_fill_os; a child sees NULL) */
    int (*key_fill)(void *ctx, uint64_t *words, size_t n);
    void *key_ctx;
} dg_chacha;

/* A new, unkeyed state on a page of its own (MADV_WIPEONFORK where the kernel has it);
 * NULL when memory is short. */
dg_chacha *dg_chacha_new(void);

/* Wipe and release a state (NULL is fine). */
void dg_chacha_free(dg_chacha *st);

/* Forget the key: the next fill keys the state afresh from the OS. */
void dg_chacha_forget(dg_chacha *st);

/* Fill callback (dg_fill_fn): n words of ChaCha20 output, keying from the OS first when
 * needed.  DG_ERR_ENTROPY (errno in st->err) when the OS refuses; the words are then 0. */
int dg_fill_chacha(void *ctx, uint64_t *words, size_t n);

/* For tests: key the state with the given key (as if the OS had given it). */
void dg_chacha_set_key(dg_chacha *st, const uint32_t key[8]);

/* For tests: ChaCha20 blocks counter, counter + 1, ... (nblocks of them, 16 words each)
 * under key and nonce, as RFC 8439 section 2.3 defines them. */
void dg_chacha20_blocks(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t *out, size_t nblocks);

#endif
