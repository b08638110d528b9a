/*
 * dg_chacha.c -- ChaCha20 with fast key erasure, keyed from the OS (see dg_chacha.h).
 */
#define _GNU_SOURCE
#include "dg_chacha.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dg_rng.h"

#define LANES 8  /* blocks computed at once (8 x 32-bit lanes: one AVX2 vector per row) */

typedef uint32_t lanes_t __attribute__((vector_size(4 * LANES)));

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QUARTER(a, b, c, d)                                                                  \
    do {                                                                                     \
        a += b; d ^= a; d = ROTL(d, 16);                                                     \
        c += d; b ^= c; b = ROTL(b, 12);                                                     \
        a += b; d ^= a; d = ROTL(d, 8);                                                      \
        c += d; b ^= c; b = ROTL(b, 7);                                                      \
    } while (0)

/* LANES blocks (counters counter .. counter + LANES - 1) into out, block after block: the
 * state's 16 rows each hold one word of every block, so each step is one vector operation
 * (GCC and Clang vector extensions; a compiler without them is not supported).  With GCC on
 * x86-64 glibc, built for AVX-512, AVX2 and the baseline (SSE2) and chosen at load time (an
 * ifunc: musl has none); elsewhere for the target the compiler is given. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void chacha_lanes(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                         uint32_t *out)
{
    static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    lanes_t x[16], in[16];
    int i, l;
    for (i = 0; i < 16; i++) {
        uint32_t v = i < 4 ? sigma[i] : i < 12 ? key[i - 4] : i == 12 ? 0 : nonce[i - 13];
        for (l = 0; l < LANES; l++)
            in[i][l] = v;
    }
    for (l = 0; l < LANES; l++)
        in[12][l] = counter + (uint32_t)l;
    for (i = 0; i < 16; i++)
        x[i] = in[i];
    for (i = 0; i < 10; i++) { /* 20 rounds: a column round and a diagonal round each */
        QUARTER(x[0], x[4], x[8], x[12]);
        QUARTER(x[1], x[5], x[9], x[13]);
        QUARTER(x[2], x[6], x[10], x[14]);
        QUARTER(x[3], x[7], x[11], x[15]);
        QUARTER(x[0], x[5], x[10], x[15]);
        QUARTER(x[1], x[6], x[11], x[12]);
        QUARTER(x[2], x[7], x[8], x[13]);
        QUARTER(x[3], x[4], x[9], x[14]);
    }
    for (i = 0; i < 16; i++)
        x[i] += in[i];
    for (l = 0; l < LANES; l++)
        for (i = 0; i < 16; i++)
            out[16 * l + i] = x[i][l];
    /* the working state held the key: wipe it (the compiler must not drop the stores) */
    memset(x, 0, sizeof x);
    memset(in, 0, sizeof in);
    __asm__ __volatile__("" : : "r"(x), "r"(in) : "memory");
}

void dg_chacha20_blocks(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t *out, size_t nblocks)
{
    uint32_t batch[16 * LANES];
    while (nblocks > 0) {
        size_t k = nblocks < LANES ? nblocks : LANES;
        chacha_lanes(key, counter, nonce, batch);
        memcpy(out, batch, k * 64);
        out += 16 * k;
        counter += LANES;
        nblocks -= k;
    }
    memset(batch, 0, sizeof batch);
    __asm__ __volatile__("" : : "r"(batch) : "memory");
}

dg_chacha *dg_chacha_new(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = page > 0 && (size_t)page >= sizeof(dg_chacha) ? (size_t)page : 4096;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_WIPEONFORK
    (void)madvise(p, size, MADV_WIPEONFORK); /* (older kernels: the pid check alone) */
#endif
    return (dg_chacha *)p; /* anonymous pages are zero: unkeyed */
}

void dg_chacha_free(dg_chacha *st)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = page > 0 && (size_t)page >= sizeof(dg_chacha) ? (size_t)page : 4096;
    if (st == NULL)
        return;
    memset(st, 0, sizeof *st);
    __asm__ __volatile__("" : : "r"(st) : "memory");
    munmap(st, size);
}

void dg_chacha_forget(dg_chacha *st)
{
    memset(st->key, 0, sizeof st->key);
    st->keyed = 0;
    __asm__ __volatile__("" : : "r"(st) : "memory");
}

void dg_chacha_set_key(dg_chacha *st, const uint32_t key[8])
{
    memcpy(st->key, key, sizeof st->key);
    st->keyed = 1;
    st->pid = (long)getpid();
    st->blocks_left = DG_CHACHA_RESEED_BLOCKS;
}

/* Key from the OS: 32 bytes of getrandom(2) (dg_fill_os: short reads joined, EINTR retried). */
static int key_from_os(dg_chacha *st)
{
    uint64_t fresh[4];
    dg_os_ctx os = {0};
    int rc = st->key_fill != NULL ? st->key_fill(st->key_ctx, fresh, 4) : dg_fill_os(&os, fresh, 4);
    if (rc != DG_OK) {
        st->err = st->key_fill != NULL ? ((dg_os_ctx *)st->key_ctx)->err : os.err;
        dg_chacha_forget(st);
        return rc;
    }
    dg_chacha_set_key(st, (const uint32_t *)fresh);
    memset(fresh, 0, sizeof fresh);
    __asm__ __volatile__("" : : "r"(fresh) : "memory");
    return DG_OK;
}

int dg_fill_chacha(void *ctx, uint64_t *words, size_t n)
{
    static const uint32_t nonce[3] = {0, 0, 0};
    dg_chacha *st = (dg_chacha *)ctx;
    uint32_t batch[16 * LANES];
    unsigned char *dst = (unsigned char *)words;
    size_t left = n * sizeof(uint64_t);
    int rc = DG_OK;

    while (left > 0) {
        if (!st->keyed || st->pid != (long)getpid() || st->blocks_left < LANES) {
            rc = key_from_os(st);
            if (rc != DG_OK)
                break;
        }
        /* LANES blocks under the current key; the first 32 bytes are the next key */
        chacha_lanes(st->key, 0, nonce, batch);
        st->blocks_left -= LANES;
        memcpy(st->key, batch, sizeof st->key);
        size_t k = left < sizeof batch - 32 ? left : sizeof batch - 32;
        memcpy(dst, (unsigned char *)batch + 32, k);
        dst += k;
        left -= k;
    }
    memset(batch, 0, sizeof batch);
    __asm__ __volatile__("" : : "r"(batch) : "memory");
    if (rc != DG_OK)
        memset(words, 0, n * sizeof(uint64_t));
    return rc;
}
