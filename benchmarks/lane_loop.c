/*
 * lane_loop.c -- the enveloped fused step (csrc/dg_inv.h, dg_env_fused) alone, on 1, 2 and 4
 * lanes drawn in turns, each lane its own 16 KiB buffer of OS bytes read round and round: the
 * CPU's cost of a sample with nothing else around it (no reading, no Python, no fallbacks).
 * Built and run by bench_lane_loop.py, which writes the tables of one parameter as
 *
 *   DIR/meta   "count k gaussian"
 *   DIR/thr    count + 2 little-endian uint64 words (the stage's thresholds)
 *   DIR/ones   count + 1 bytes, J(b)
 *
 * Usage: lane_loop DIR GUIDE_BITS... ; prints one line a guide size:
 *   "g ns(1 lane) ns(2 lanes) ns(4 lanes)", each the best of ROUNDS rounds taken in turns.
 * A step the fused step cannot take (about one in 100) skips 64 bits here; in the package it
 * is drawn by dg_env_attempts or step by step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "dg_inv.h"

#define WORDS 2048                          /* 16 KiB a lane, as dgauss reads the OS */
#define END ((uint64_t)(WORDS - 1) * 64)
#define ROUNDS 25
#define SAMPLES (1L << 22)
#define MAX_GUIDES 8

static uint64_t lane_bufs[4][WORDS] __attribute__((aligned(64)));
static int64_t out[1 << 16];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

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
    double start = now();
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
    return (now() - start) / SAMPLES * 1e9;
}

static void *read_file(const char *dir, const char *name, size_t size)
{
    char path[4096];
    void *data = malloc(size ? size : 1);
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL || data == NULL || fread(data, 1, size, f) != size) {
        fprintf(stderr, "lane_loop: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    static const int lanes[3] = {1, 2, 4};
    unsigned long count, k;
    int gaussian, guides = argc - 2, a, b, round;
    double best[MAX_GUIDES][3];
    dg_env ev[MAX_GUIDES];
    char path[4096];
    FILE *f;
    if (argc < 3 || guides > MAX_GUIDES) {
        fprintf(stderr, "usage: lane_loop DIR GUIDE_BITS... (at most %d)\n", MAX_GUIDES);
        return 2;
    }
    snprintf(path, sizeof path, "%s/meta", argv[1]);
    f = fopen(path, "r");
    if (f == NULL || fscanf(f, "%lu %lu %d", &count, &k, &gaussian) != 3) {
        fprintf(stderr, "lane_loop: cannot read %s\n", path);
        return 1;
    }
    fclose(f);
    const uint64_t *thr = read_file(argv[1], "thr", (count + 2) * 8);
    const uint8_t *ones = read_file(argv[1], "ones", count + 1);
    for (a = 0; a < guides; a++) {
        unsigned g = (unsigned)atoi(argv[a + 2]);
        uint32_t *guide = malloc(((size_t)1 << g) * 4);
        if (g < 4 || g > 20 || guide == NULL)
            return 2;
        memset(&ev[a], 0, sizeof ev[a]);
        dg_inv_init(&ev[a].stage, thr, count, guide, g);
        ev[a].ones = ones;
        ev[a].k = (unsigned)k;
        ev[a].gaussian = gaussian;
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
