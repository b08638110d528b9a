/*
 * dg_chacha.c -- ChaCha20 with fast key erasure, keyed from the OS (see dg_chacha.h).
 */
#define _GNU_SOURCE
#include "dg_chacha.h"

#include <pthread.h>
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

/* Vector shuffles with constant indices into the 2 LANES words of a and b. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUFFLE(a, b, ...) __builtin_shuffle(a, b, (lanes_t){__VA_ARGS__})
#endif

/* Transpose the 8 x 8 words r[0..7] (r[i][l]: word i of block l) in place, so that r[l]
 * holds block l's 8 words in order: three rounds of interleaves, each one AVX2 instruction
 * a pair of rows (unpack 32-bit words, unpack 64-bit words, exchange 128-bit halves).  GCC
 * compiles the plain loop `out[16 l + i] = r[i][l]` into one scalar extract a word. */
static inline void transpose8(lanes_t r[8])
{
    lanes_t t[8], u[8];
    int i;
    for (i = 0; i < 8; i += 2) { /* t[i]: words i, i + 1 of blocks 0, 1, 4, 5; t[i + 1]: of 2, 3, 6, 7 */
        t[i] = SHUFFLE(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = SHUFFLE(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (i = 0; i < 8; i += 4) { /* u[i + j]: words i .. i + 3 of blocks j, j + 4 */
        u[i] = SHUFFLE(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = SHUFFLE(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = SHUFFLE(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = SHUFFLE(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (i = 0; i < 4; i++) { /* r[j]: words 0-7 of block j */
        r[i] = SHUFFLE(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = SHUFFLE(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* LANES blocks (counters counter .. counter + LANES - 1) in RFC 8439's byte order (block
 * after block, little-endian words).  The state's 16 rows each hold one word of every
 * block, so each step is one vector operation (GCC and Clang vector extensions; a compiler
 * without them is not supported); the rows are transposed back to blocks at the end and
 * written by whole-vector stores.  With key_out NULL, the 64 LANES bytes go to out; else
 * block 0's first 32 bytes go to key_out (which may be key: it is written last) and the
 * other 64 LANES - 32 bytes to out.  With GCC on x86-64 glibc, built for AVX-512, AVX2 and
 * the baseline (SSE2) and chosen at load time (an ifunc: musl has none); elsewhere for the
 * target the compiler is given. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void chacha_lanes(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                         uint32_t *key_out, unsigned char *out)
{
    static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    const lanes_t zero = {0}, step = {0, 1, 2, 3, 4, 5, 6, 7};
    const size_t skip = key_out != NULL ? 32 : 0;
    lanes_t x[16];
    int i;
    size_t l;
    for (i = 0; i < 4; i++)
        x[i] = zero + sigma[i];
    for (i = 0; i < 8; i++)
        x[4 + i] = zero + key[i];
    x[12] = step + counter;
    for (i = 0; i < 3; i++)
        x[13 + i] = zero + nonce[i];
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
    /* plus the input (made again from the arguments: nothing else holds the key) */
    for (i = 0; i < 4; i++)
        x[i] += sigma[i];
    for (i = 0; i < 8; i++)
        x[4 + i] += key[i];
    x[12] += step + counter;
    for (i = 0; i < 3; i++)
        x[13 + i] += nonce[i];
    transpose8(x);     /* x[l]: words 0-7 of block l */
    transpose8(x + 8); /* x[8 + l]: words 8-15 of block l */
    if (key_out != NULL)
        memcpy(key_out, &x[0], 32);
    else
        memcpy(out, &x[0], 32);
    memcpy(out + 32 - skip, &x[8], 32);
    for (l = 1; l < LANES; l++) { /* (a memcpy of a vector: one unaligned store) */
        memcpy(out + 64 * l - skip, &x[l], 32);
        memcpy(out + 64 * l + 32 - skip, &x[8 + l], 32);
    }
    /* the working state held the key: wipe it (the compiler must not drop the stores) */
    memset(x, 0, sizeof x);
    __asm__ __volatile__("" : : "r"(x) : "memory");
}

void dg_chacha20_blocks(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t *out, size_t nblocks)
{
    uint32_t batch[16 * LANES];
    while (nblocks > 0) {
        size_t k = nblocks < LANES ? nblocks : LANES;
        chacha_lanes(key, counter, nonce, NULL, (unsigned char *)batch);
        memcpy(out, batch, k * 64);
        out += 16 * k;
        counter += LANES;
        nblocks -= k;
    }
    memset(batch, 0, sizeof batch);
    __asm__ __volatile__("" : : "r"(batch) : "memory");
}

/* Forks this process has come through: bumped in the child of every fork(2) made through
 * the C library (a pthread_atfork handler), so that a fill tells a fork since the keying
 * by a load rather than a getpid() system call (about 0.2 us here, a good share of a small
 * call's fills).  Relied on only for states whose page the kernel wipes in a child
 * (MADV_WIPEONFORK), which covers a fork the count misses (a raw clone). */
static unsigned long forks;
static int counting; /* the handler is registered */
static pthread_once_t count_once = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
    forks++;
}

static void count_forks(void)
{
    counting = pthread_atfork(NULL, NULL, count_fork) == 0;
}

dg_chacha *dg_chacha_new(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = page > 0 && (size_t)page >= sizeof(dg_chacha) ? (size_t)page : 4096;
    int wipes = 0;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    pthread_once(&count_once, count_forks);
#ifdef MADV_WIPEONFORK
    wipes = madvise(p, size, MADV_WIPEONFORK) == 0; /* (older kernels: the pid check alone) */
#endif
    ((dg_chacha *)p)->wipes = wipes && counting;
    return (dg_chacha *)p; /* anonymous pages are zero: unkeyed */
}

/* Whether a fork came between the keying of st and now (see forks). */
static int forked_since_keyed(const dg_chacha *st)
{
    return st->wipes ? st->forks != forks : st->pid != (long)getpid();
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
    memset(st->out, 0, sizeof st->out);
    st->avail = 0;
    st->keyed = 0;
    __asm__ __volatile__("" : : "r"(st) : "memory");
}

size_t dg_chacha_waiting(const dg_chacha *st)
{
    return st->avail;
}

void dg_chacha_set_key(dg_chacha *st, const uint32_t key[8])
{
    if (st->avail > 0) { /* (a new key drops what the last one left) */
        memset(st->out, 0, sizeof st->out);
        st->avail = 0;
    }
    memcpy(st->key, key, sizeof st->key);
    st->keyed = 1;
    st->pid = (long)getpid();
    st->forks = forks;
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

/* The next key's DG_CHACHA_KEY_BLOCKS blocks, LANES at a time: block 0's first 32 bytes
 * replace st->key before anything is output, the other DG_CHACHA_OUT bytes go to out. */
static void make_key_blocks(dg_chacha *st, unsigned char *out)
{
    static const uint32_t nonce[3] = {0, 0, 0};
    uint32_t key[8], b;
    memcpy(key, st->key, sizeof key);
    chacha_lanes(key, 0, nonce, st->key, out);
    out += 64 * LANES - 32;
    for (b = LANES; b < DG_CHACHA_KEY_BLOCKS; b += LANES) {
        chacha_lanes(key, b, nonce, NULL, out);
        out += 64 * LANES;
    }
    st->blocks_left -= DG_CHACHA_KEY_BLOCKS;
    memset(key, 0, sizeof key);
    __asm__ __volatile__("" : : "r"(key) : "memory");
}

int dg_fill_chacha(void *ctx, uint64_t *words, size_t n)
{
    dg_chacha *st = (dg_chacha *)ctx;
    unsigned char *dst = (unsigned char *)words;
    size_t left = n * sizeof(uint64_t);
    int rc = DG_OK;

    /* A state keyed before a fork (in a parent: a child whose page was not wiped) keys
     * afresh.  Checked once a call: a fork during this call happens in another thread, and
     * the child has only the forking thread, so this call never continues in a child. */
    if (st->keyed && forked_since_keyed(st))
        dg_chacha_forget(st);
    while (left > 0) {
        if (st->avail > 0) { /* the last key's output first, zeroed as it is handed out */
            unsigned char *src = st->out + sizeof st->out - st->avail;
            size_t k = left < st->avail ? left : st->avail;
            memcpy(dst, src, k);
            memset(src, 0, k);
            st->avail -= k;
            dst += k;
            left -= k;
            continue;
        }
        if (!st->keyed || st->blocks_left < DG_CHACHA_KEY_BLOCKS) {
            rc = key_from_os(st);
            if (rc != DG_OK)
                break;
        }
        if (left >= DG_CHACHA_OUT) { /* straight into words */
            make_key_blocks(st, dst);
            dst += DG_CHACHA_OUT;
            left -= DG_CHACHA_OUT;
        } else { /* into the state, handed out from there */
            make_key_blocks(st, st->out);
            st->avail = DG_CHACHA_OUT;
        }
    }
    __asm__ __volatile__("" : : "r"(st) : "memory");
    if (rc != DG_OK)
        memset(words, 0, n * sizeof(uint64_t));
    return rc;
}
