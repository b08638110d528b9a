/*
 * bench_tables.h -- what the C harnesses of bench_lane_loop.py share: the clock, and one
 * parameter's enveloped-inversion tables as the script writes them from dgauss's
 *
 *   DIR/meta   "count k gaussian"
 *   DIR/thr    count + 2 little-endian uint64 words (the stage's thresholds)
 *   DIR/ones   count + 1 bytes, J(b)
 *   DIR/cmul   "high low cshift" (the acceptance's scale factor, its two 64-bit halves)
 *
 * made into a dg_env (csrc/dg_inv.h) with a guide of any size.  A file that cannot be read
 * ends the program with a message naming it.
 */
#ifndef BENCH_TABLES_H
#define BENCH_TABLES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dg_inv.h"

static double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static FILE *bench_open(const char *dir, const char *name, const char *mode)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, mode);
    if (f == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    return f;
}

static void *bench_read(const char *dir, const char *name, size_t size)
{
    FILE *f = bench_open(dir, name, "rb");
    void *data = malloc(size);
    if (data == NULL || fread(data, 1, size, f) != size) {
        fprintf(stderr, "cannot read %s/%s\n", dir, name);
        exit(1);
    }
    fclose(f);
    return data;
}

/* The tables in DIR as a dg_env whose guide has 2**g entries (4 <= g <= 20). */
static void bench_env(const char *dir, unsigned g, dg_env *ev)
{
    unsigned long count, k, high, low;
    unsigned cshift;
    int gaussian;
    FILE *f = bench_open(dir, "meta", "r");
    if (fscanf(f, "%lu %lu %d", &count, &k, &gaussian) != 3) {
        fprintf(stderr, "cannot read %s/meta\n", dir);
        exit(1);
    }
    fclose(f);
    f = bench_open(dir, "cmul", "r");
    if (fscanf(f, "%lu %lu %u", &high, &low, &cshift) != 3) {
        fprintf(stderr, "cannot read %s/cmul\n", dir);
        exit(1);
    }
    fclose(f);
    uint32_t *guide = malloc(((size_t)1 << g) * 4);
    if (g < 4 || g > 20 || guide == NULL) {
        fprintf(stderr, "guide bits must be 4 .. 20, got %u\n", g);
        exit(2);
    }
    memset(ev, 0, sizeof *ev);
    dg_inv_init(&ev->stage, bench_read(dir, "thr", (count + 2) * 8), count, guide, g);
    ev->ones = bench_read(dir, "ones", count + 1);
    ev->k = (unsigned)k;
    ev->gaussian = gaussian;
    ev->cmul = ((dg_u128)high << 64) | low;
    ev->cshift = cshift;
}

#endif /* BENCH_TABLES_H */
