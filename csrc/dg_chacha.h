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
 *   - fast key erasure: each key makes DG_CHACHA_KEY_BLOCKS blocks at once (nonce 0,
 *     counters 0, 1, ...), the first 32 bytes of block 0 become the next key and are never
 *     output, the rest is output in order (what a fill does not take waits in the state
 *     and is zeroed as it is handed out), and a fill's working copies are wiped, so the
 *     state never holds what could recompute bits already handed out; the words are one
 *     stream, whatever the sizes of the fills that take them;
 *   - fork: the state lives on a page of its own marked MADV_WIPEONFORK (a child sees it
 *     zeroed, hence unkeyed), and every fill checks as well that no fork came between the
 *     keying and the fill: by a count of forks that a pthread_atfork handler bumps in the
 *     child where the page is marked, else (an older kernel) by the process id;
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

/* Blocks (64 bytes) made under one key: 32 (2 KiB), all at once; the first 32 bytes of
 * block 0 are the next key, the other DG_CHACHA_OUT bytes are output, in order. */
#define DG_CHACHA_KEY_BLOCKS 32
#define DG_CHACHA_OUT (64 * DG_CHACHA_KEY_BLOCKS - 32)

typedef struct dg_chacha {
    uint32_t key[8];
    uint64_t blocks_left; /* blocks until the next key from the OS */
    long pid;             /* the process that keyed it */
    unsigned long forks;  /* the forks seen (dg_chacha.c's count) when it was keyed */
    int wipes;            /* 1: the page is marked MADV_WIPEONFORK (a child sees 0) */
    int keyed;            /* 0: the next fill keys it from the OS (a child sees 0) */
    int err;              /* errno of a failed OS read */
    /* for tests: where keys come from (NULL: the OS, dg_fill_os; a child sees NULL) */
    int (*key_fill)(void *ctx, uint64_t *words, size_t n);
    void *key_ctx;
    /* the last key's output not handed out yet: its last `avail` bytes (the bytes before
     * them, handed out, are zero) */
    size_t avail;
    unsigned char out[DG_CHACHA_OUT];
} dg_chacha;

/* A new, unkeyed state on a page of its own (MADV_WIPEONFORK where the kernel has it);
 * NULL when memory is short. */
dg_chacha *dg_chacha_new(void);

/* Wipe and release a state (NULL is fine). */
void dg_chacha_free(dg_chacha *st);

/* Forget the key and the output waiting: the next fill keys the state afresh from the OS. */
void dg_chacha_forget(dg_chacha *st);

/* Fill callback (dg_fill_fn): n words of ChaCha20 output, keying from the OS first when
 * needed.  DG_ERR_ENTROPY (errno in st->err) when the OS refuses; the words are then 0. */
int dg_fill_chacha(void *ctx, uint64_t *words, size_t n);

/* For tests: how many bytes of the last key's output wait in the state. */
size_t dg_chacha_waiting(const dg_chacha *st);

/* For tests: key the state with the given key (as if the OS had given it; the output
 * waiting is dropped). */
void dg_chacha_set_key(dg_chacha *st, const uint32_t key[8]);

/* For tests: ChaCha20 blocks counter, counter + 1, ... (nblocks of them, 16 words each)
 * under key and nonce, as RFC 8439 section 2.3 defines them. */
void dg_chacha20_blocks(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t *out, size_t nblocks);

/* The block kernel the fills use: 0 the portable one (GCC's vector extensions; built for
 * AVX-512, AVX2 and the baseline where GCC picks at load time), 1 the AVX2 one (the
 * default on x86-64 with AVX2, unless the portable one was built for the CPU's AVX-512).  For tests: which = 0 or 1 sets it (-1
 * returned when the CPU cannot run 1), -1 puts back the default, any other value only
 * asks; returns the kernel now in use.  Both make the same bytes. */
int dg_chacha_kernel(int which);

#endif
