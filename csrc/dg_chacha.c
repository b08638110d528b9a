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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DG_CHACHA_AVX2 1
#include <immintrin.h>
#endif

#define LANES 8  /* blocks computed at once (8 x 32-bit lanes: one AVX2 vector per row) */

typedef uint32_t lanes_t __attribute__((vector_size(4 * LANES)));

/* The state's first four words, "expand 32-byte k" (RFC 8439 section 2.3). */
static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QUARTER(a, b, c, d)                                                                  \
    do {                                                                                     \
        a += b; d ^= a; d = ROTL(d, 16);                                                     \
        c += d; b ^= c; b = ROTL(b, 12);                                                     \
        a += b; d ^= a; d = ROTL(d, 8);                                                      \
        c += d; b ^= c; b = ROTL(b, 7);                                                      \
    } while (0)

/* A column round and a diagonal round (RFC 8439 section 2.3) of the state x[16], by the
 * quarter-round `Q`: both kernels' schedule. */
#define DOUBLE_ROUND(Q, x)                                                                   \
    do {                                                                                     \
        Q(x[0], x[4], x[8], x[12]);                                                          \
        Q(x[1], x[5], x[9], x[13]);                                                          \
        Q(x[2], x[6], x[10], x[14]);                                                         \
        Q(x[3], x[7], x[11], x[15]);                                                         \
        Q(x[0], x[5], x[10], x[15]);                                                         \
        Q(x[1], x[6], x[11], x[12]);                                                         \
        Q(x[2], x[7], x[8], x[13]);                                                          \
        Q(x[3], x[4], x[9], x[14]);                                                          \
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
#define DG_CHACHA_CLONES 1
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void chacha_lanes(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                         uint32_t *key_out, unsigned char *out)
{
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
    for (i = 0; i < 10; i++) /* 20 rounds */
        DOUBLE_ROUND(QUARTER, x);
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

#ifdef DG_CHACHA_AVX2
/* chacha_lanes for AVX2 in intrinsics, the same bytes: GCC spills the state of the form above
 * compiled for AVX2 and rotates by shifts, where this form rotates by 16 and 8 with one byte
 * shuffle and transposes by interleaves straight into the stores; 1.3-1.4x the bytes a
 * second here (docs/performance.md).  Picked where the CPU has AVX2, unless it has AVX-512
 * and the form above was built for it too (GCC's target_clones), whose rotate instruction
 * serves that form (best_kernel). */
#define ADD8 _mm256_add_epi32
#define XOR8 _mm256_xor_si256
#define ROT8(x, n) _mm256_or_si256(_mm256_slli_epi32(x, n), _mm256_srli_epi32(x, 32 - (n)))
#define QUARTER8(a, b, c, d)                                                                 \
    do {                                                                                     \
        a = ADD8(a, b); d = XOR8(d, a); d = _mm256_shuffle_epi8(d, rot16);                   \
        c = ADD8(c, d); b = XOR8(b, c); b = ROT8(b, 12);                                     \
        a = ADD8(a, b); d = XOR8(d, a); d = _mm256_shuffle_epi8(d, rot8);                    \
        c = ADD8(c, d); b = XOR8(b, c); b = ROT8(b, 7);                                      \
    } while (0)

/* Rows a0 .. a7 (a_i: word `first` + i of blocks 0 .. 7) stored as each block's 8 words
 * from byte `first` * 4 of the block; with key_out, block 0's words 0-7 go there instead
 * and the rest of the output is 32 bytes earlier (as chacha_lanes). */
#define STORE8(a0, a1, a2, a3, a4, a5, a6, a7, first)                                        \
    do {                                                                                     \
        __m256i t0 = _mm256_unpacklo_epi32(a0, a1), t1 = _mm256_unpackhi_epi32(a0, a1);      \
        __m256i t2 = _mm256_unpacklo_epi32(a2, a3), t3 = _mm256_unpackhi_epi32(a2, a3);      \
        __m256i t4 = _mm256_unpacklo_epi32(a4, a5), t5 = _mm256_unpackhi_epi32(a4, a5);      \
        __m256i t6 = _mm256_unpacklo_epi32(a6, a7), t7 = _mm256_unpackhi_epi32(a6, a7);      \
        __m256i u[8];                                                                        \
        u[0] = _mm256_unpacklo_epi64(t0, t2); u[1] = _mm256_unpackhi_epi64(t0, t2);          \
        u[2] = _mm256_unpacklo_epi64(t1, t3); u[3] = _mm256_unpackhi_epi64(t1, t3);          \
        u[4] = _mm256_unpacklo_epi64(t4, t6); u[5] = _mm256_unpackhi_epi64(t4, t6);          \
        u[6] = _mm256_unpacklo_epi64(t5, t7); u[7] = _mm256_unpackhi_epi64(t5, t7);          \
        for (l = 0; l < 4; l++) { /* u[l]: block l's 4 words (low half), l + 4's (high) */   \
            __m256i lo = _mm256_permute2x128_si256(u[l], u[l + 4], 0x20);                    \
            __m256i hi = _mm256_permute2x128_si256(u[l], u[l + 4], 0x31);                    \
            if (l == 0 && (first) == 0 && key_out != NULL)                                   \
                _mm256_storeu_si256((__m256i *)key_out, lo);                                 \
            else                                                                             \
                _mm256_storeu_si256((__m256i *)(out + 64 * l + 4 * (first) - skip), lo);     \
            _mm256_storeu_si256((__m256i *)(out + 64 * (l + 4) + 4 * (first) - skip), hi);   \
        }                                                                                    \
    } while (0)

__attribute__((target("avx2"))) static void chacha_lanes_avx2(const uint32_t key[8],
                                                              uint32_t counter,
                                                              const uint32_t nonce[3],
                                                              uint32_t *key_out,
                                                              unsigned char *out)
{
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12,
                                           13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15,
                                           12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
                                          3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const size_t skip = key_out != NULL ? 32 : 0;
    uint32_t input[16]; /* the state's words, as chacha_lanes's (the counter: block 0's) */
    __m256i x[16];
    int i, l;
    memcpy(input, sigma, sizeof sigma);
    memcpy(input + 4, key, 32);
    input[12] = counter;
    memcpy(input + 13, nonce, 12);
    for (i = 0; i < 16; i++)
        x[i] = _mm256_set1_epi32((int)input[i]);
    x[12] = ADD8(x[12], step);
    for (i = 0; i < 10; i++) /* 20 rounds */
        DOUBLE_ROUND(QUARTER8, x);
    for (i = 0; i < 16; i++) /* plus the input */
        x[i] = ADD8(x[i], _mm256_set1_epi32((int)input[i]));
    x[12] = ADD8(x[12], step);
    memset(input, 0, sizeof input);
    STORE8(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], 0); /* (key read: key_out may be key) */
    STORE8(x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15], 8);
    memset(x, 0, sizeof x);
    __asm__ __volatile__("" : : "r"(x), "r"(input) : "memory");
    _mm256_zeroall(); /* the registers held the key (spills below the frame: burn_stack) */
}
#endif

/* The kernel in use (dg_chacha_kernel): 0 chacha_lanes, 1 chacha_lanes_avx2; -1 not
 * chosen yet (the first block chooses the best the CPU has). */
static int kernel = -1;

static int runs_avx2(void)
{
#ifdef DG_CHACHA_AVX2
    return __builtin_cpu_supports("avx2") != 0; /* (a bit of a mask, not 1) */
#else
    return 0;
#endif
}

static int best_kernel(void)
{
#ifdef DG_CHACHA_CLONES
    if (__builtin_cpu_supports("avx512f")) /* chacha_lanes's AVX-512 build: a rotate */
        return 0;
#endif
    return runs_avx2();
}

static int kernel_in_use(void)
{
    int k = __atomic_load_n(&kernel, __ATOMIC_RELAXED);
    if (k < 0) {
        k = best_kernel();
        __atomic_store_n(&kernel, k, __ATOMIC_RELAXED);
    }
    return k;
}

int dg_chacha_kernel(int which)
{
    if (which == 1 && !runs_avx2())
        return -1;
    if (which == 0 || which == 1 || which == -1)
        __atomic_store_n(&kernel, which >= 0 ? which : best_kernel(), __ATOMIC_RELAXED);
    return kernel_in_use();
}

/* LANES blocks, as chacha_lanes, by the kernel in use. */
static void chacha_block8(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                          uint32_t *key_out, unsigned char *out)
{
#ifdef DG_CHACHA_AVX2
    if (kernel_in_use() == 1) {
        chacha_lanes_avx2(key, counter, nonce, key_out, out);
        return;
    }
#endif
    chacha_lanes(key, counter, nonce, key_out, out);
}

/* Zero the stack below the caller's frame, where the kernels' frames were: the compilers
 * keep part of the working state there (copies of the key among it), which the
 * kernels' own wipes do not reach. */
__attribute__((noinline)) static void burn_stack(void)
{
    unsigned char area[2048]; /* (the kernels' frames: 584-1,544 bytes with GCC 12 -O3) */
    memset(area, 0, sizeof area);
    __asm__ __volatile__("" : : "r"(area) : "memory");
}


void dg_chacha20_blocks(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t *out, size_t nblocks)
{
    uint32_t batch[16 * LANES];
    while (nblocks > 0) {
        size_t k = nblocks < LANES ? nblocks : LANES;
        chacha_block8(key, counter, nonce, NULL, (unsigned char *)batch);
        memcpy(out, batch, k * 64);
        out += 16 * k;
        counter += LANES;
        nblocks -= k;
    }
    memset(batch, 0, sizeof batch);
    __asm__ __volatile__("" : : "r"(batch) : "memory");
    burn_stack();
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
    chacha_block8(key, 0, nonce, st->key, out);
    out += 64 * LANES - 32;
    for (b = LANES; b < DG_CHACHA_KEY_BLOCKS; b += LANES) {
        chacha_block8(key, b, nonce, NULL, out);
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
    int rc = DG_OK, made = 0;

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
        made = 1;
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
    if (made)
        burn_stack();
    if (rc != DG_OK)
        memset(words, 0, n * sizeof(uint64_t));
    return rc;
}
