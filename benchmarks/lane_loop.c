/*
 * lane_loop.c -- the enveloped fused step (csrc/dg_inv.h, dg_env_fused) alone, on 1, 2 and 4
 * lanes drawn in turns, each lane its own 16 KiB buffer of OS bytes read round and round: the
 * CPU's cost of a sample with nothing else around it (no reading, no Python, no fallbacks).
 * Built and run by bench_lane_loop.py, which writes the tables of one parameter into DIR
 * (bench_tables.h).
 * Usage: lane_loop DIR GUIDE_BITS... ; prints one line a guide size:
 *   "g ns(1 lane) ns(2 lanes) ns(4 lanes)", each the best of ROUNDS rounds taken in turns.
 * A step the fused step cannot take (about one in 100) skips 64 bits here; in the package it
 * is drawn by dg_env_attempts or step by step.
 */
#include <sys/random.h>

#include "bench_tables.h"

#define WORDS 2048                          /* 16 KiB a lane, as dgauss reads the OS */
#define END ((uint64_t)(WORDS - 1) * 64)
#define ROUNDS 25
#define SAMPLES (1L << 22)
#define MAX_GUIDES 8

static uint64_t lane_bufs[4][WORDS] __attribute__((aligned(64)));
static int64_t out[1 << 16];

#define STEP(L)                                                         \
    do {                                                                \
        n = dg_env_fused(ev, lane_bufs[L], p[L], END, &x);              \
        if (n == 0)                                                     \
            n = 64;                                                     \
        else                                                            \
            out[(i + (L)) & 0xFFFF] = x;                                \
        p[L] += n;                                                      \
        if (p[L] + 192 >= END)                                          \
            p[L] = 0;                                                   \
    } while (0)

/* ns a sample over SAMPLES samples on `lanes` lanes (built as dgauss's batches are). */
DG_FILL_CLONES
static double run(const dg_env *ev, int lanes)
{
    uint64_t p[4] = {0, 0, 0, 0};
    unsigned n;
    int64_t x = 0;
    long i;
    double start = bench_now();
    if (lanes == 1) {
        for (i = 0; i < SAMPLES; i++)
            STEP(0);
    } else if (lanes == 2) {
        for (i = 0; i < SAMPLES; i += 2) {
            STEP(0);
            STEP(1);
        }
    } else {
        for (i = 0; i < SAMPLES; i += 4) {
            STEP(0);
            STEP(1);
            STEP(2);
            STEP(3);
        }
    }
    return (bench_now() - start) / SAMPLES * 1e9;
}

int main(int argc, char **argv)
{
    static const int lanes[3] = {1, 2, 4};
    int guides = argc - 2, a, b, round;
    double best[MAX_GUIDES][3];
    dg_env ev[MAX_GUIDES];
    if (argc < 3 || guides > MAX_GUIDES) {
        fprintf(stderr, "usage: lane_loop DIR GUIDE_BITS... (at most %d)\n", MAX_GUIDES);
        return 2;
    }
    for (a = 0; a < guides; a++) {
        bench_env(argv[1], (unsigned)atoi(argv[a + 2]), &ev[a]);
        for (b = 0; b < 3; b++)
            best[a][b] = 1e9;
    }
    for (b = 0; b < 4; b++)
        if (getrandom(lane_bufs[b], sizeof lane_bufs[b], 0) != (ssize_t)sizeof lane_bufs[b])
            return 1;
    for (round = 0; round < ROUNDS; round++)
        for (a = 0; a < guides; a++)
            for (b = 0; b < 3; b++) {
                double t = run(&ev[a], lanes[b]);
                if (t < best[a][b])
                    best[a][b] = t;
            }
    for (a = 0; a < guides; a++)
        printf("%s %.2f %.2f %.2f\n", argv[a + 2], best[a][0], best[a][1], best[a][2]);
    return 0;
}
