/*
 * fill_threads.c -- the package's batch loop for enveloped inversion (csrc/dg_inv.h,
 * dg_env_fill: two lanes, the fused step, dg_env_attempts, refills) in C, on one thread and
 * split between two, each thread with two lanes of its own that read the OS (dg_fill_os,
 * 16 KiB at a time) or, with "pool", copy 16 KiB of OS bytes read once (the loop without the
 * reading).  What a batch costs with no Python around it, beside what dgauss's own call takes.
 * Built and run by bench_lane_loop.py, which writes the tables of one parameter into DIR
 * (bench_tables.h).
 * Usage: fill_threads DIR GUIDE_BITS SAMPLES os|pool ; prints "ns(1 thread) ns(2 threads)", ns a sample
 * of wall time, each the best of ROUNDS rounds taken in turns.  A draw that dgauss would
 * finish step by step (about one in 10**6) skips 64 bits of its lane here.
 */
#include <pthread.h>
#include <sys/random.h>

#include "bench_tables.h"

#define WORDS 2048                          /* 16 KiB a lane, as dgauss reads the OS */
#define ROUNDS 9
#define POOL_WORDS 8192

static dg_env ev;
static uint64_t pool[POOL_WORDS];

/* A lane's source with "pool": the pool's words round and round from *ctx on. */
static int pool_fill(void *ctx, uint64_t *words, size_t n)
{
    size_t *at = ctx, take;
    while (n > 0) {
        take = POOL_WORDS - *at < n ? POOL_WORDS - *at : n;
        memcpy(words, pool + *at, take * 8);
        *at = (*at + take) % POOL_WORDS;
        words += take;
        n -= take;
    }
    return DG_OK;
}

typedef struct {
    int64_t *out;
    size_t n;
    int from_os;
} job;

static void *fill(void *arg)
{
    job *j = arg;
    uint64_t *b1 = malloc(WORDS * 8), *b2 = malloc(WORDS * 8);
    dg_os_ctx os1 = {0}, os2 = {0};
    size_t at1 = 0, at2 = POOL_WORDS / 2, i = 0, got;
    unsigned phase = 0;
    dg_inv_pending pend;
    dg_rng r1, r2, *r;
    int rc, lane;
    if (b1 == NULL || b2 == NULL)
        exit(1);
    dg_rng_init(&r1, j->from_os ? dg_fill_os : pool_fill, j->from_os ? (void *)&os1 : &at1, b1,
                WORDS, WORDS);
    dg_rng_init(&r2, j->from_os ? dg_fill_os : pool_fill, j->from_os ? (void *)&os2 : &at2, b2,
                WORDS, WORDS);
    while (i < j->n) {
        got = dg_env_fill(&r1, &r2, phase, &ev, 0, j->out + i, j->n - i, &rc, &pend, &lane);
        i += got;
        phase = (phase + (unsigned)got) & 1;
        if (rc == DG_INV_UNDECIDED) {
            r = lane ? &r2 : &r1;
            dg_bits(r, 32);
            dg_bits(r, 32);
            j->out[i++] = 0;
            phase ^= 1;
        } else if (rc != 0) {
            fprintf(stderr, "fill_threads: status %d\n", rc);
            exit(1);
        }
    }
    dg_rng_wipe(&r1);
    dg_rng_wipe(&r2);
    free(b1);
    free(b2);
    return NULL;
}

int main(int argc, char **argv)
{
    int round, from_os;
    size_t n;
    double best1 = 1e9, best2 = 1e9, t;
    pthread_t a, b;
    if (argc != 5 || (strcmp(argv[4], "os") != 0 && strcmp(argv[4], "pool") != 0)) {
        fprintf(stderr, "usage: fill_threads DIR GUIDE_BITS SAMPLES os|pool\n");
        return 2;
    }
    n = (size_t)atol(argv[3]);
    from_os = strcmp(argv[4], "os") == 0;
    int64_t *out = calloc(n, 8);
    if (n < 2 || out == NULL)
        return 2;
    dg_exp_init();
    bench_env(argv[1], (unsigned)atoi(argv[2]), &ev);
    for (size_t i = 0; i < sizeof pool; i += 256)
        if (getrandom((char *)pool + i, 256, 0) != 256)
            return 1;
    for (round = 0; round < ROUNDS; round++) {
        job one = {out, n, from_os}, half1 = {out, n / 2, from_os},
            half2 = {out + n / 2, n - n / 2, from_os};
        double start = bench_now();
        fill(&one);
        t = (bench_now() - start) / (double)n * 1e9;
        best1 = t < best1 ? t : best1;
        start = bench_now();
        if (pthread_create(&a, NULL, fill, &half1) != 0
                || pthread_create(&b, NULL, fill, &half2) != 0)
            return 1;
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        t = (bench_now() - start) / (double)n * 1e9;
        best2 = t < best2 ? t : best2;
    }
    printf("%.2f %.2f\n", best1, best2);
    return 0;
}
