/*
 * dg_ahead.h -- reading a bit source ahead, on a thread of its own.
 *
 * On one thread the time of a sample drawn from the OS is the time of the system call for
 * the bits it reads *plus* the time of the computing.  A reader thread that fills a ring of
 * chunks from the source while the sampler computes makes it the larger of the two: on a
 * machine with two cores or more, a large batch then runs at the rate the OS hands out its
 * bits whenever the computing is faster than the reading.
 *
 * The words are the source's words, in the source's order: dg_fill_ahead hands them out
 * exactly as the source's own fill would have (the bit-consumption contract of dg_rng.h is
 * unchanged; a test reads a scripted source both ways and gets the same samples).  Only when
 * they are read changes.  What a batch does not use is read ahead and dropped, as the unread
 * words of a stream's last fill are: at most `expected` words before the consumer asks, then
 * one chunk at a time.
 *
 * Security: the ring lives on pages of their own marked MADV_WIPEONFORK (a forked child sees
 * them zeroed), each chunk is zeroed once the consumer has copied it out, and the whole ring
 * is zeroed when the reading stops.  The reader thread runs with every signal blocked.
 * Errors: the source's first failure is handed out in place of the chunk it failed to read,
 * and the reader stops there; the source's own context (dg_os_ctx) keeps its errno.
 *
 * C only: it knows nothing of Python.
 */
#ifndef DG_AHEAD_H
#define DG_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "dg_rng.h"

#define DG_AHEAD_CHUNK_WORDS 2048 /* 16 KiB a read (the OS source's largest single read) */
#define DG_AHEAD_CHUNKS 16        /* at most 256 KiB read ahead */

typedef struct dg_ahead dg_ahead;

/* How many CPUs this process may run on (sched_getaffinity; 1 when it cannot tell). */
int dg_ahead_cpus(void);

/* Whether a reader thread would find a CPU of its own now: two or more CPUs, and fewer
 * threads runnable on the machine (the caller among them, /proc/loadavg) than CPUs; 1 when
 * the load cannot be read.  Where every CPU is busy the reader would take turns with the
 * sampler on one, and reading ahead costs more than it saves. */
int dg_ahead_idle_cpu(void);

/* Start reading `fill(ctx, ...)` ahead: a reader thread fills chunks of DG_AHEAD_CHUNK_WORDS
 * words, at most DG_AHEAD_CHUNKS ahead of the consumer, and no more than `expected` words in
 * all before the consumer waits for more (UINT64_MAX: as far as the ring allows).  NULL when
 * the thread or the memory cannot be had: the caller then reads the source itself. */
dg_ahead *dg_ahead_start(dg_fill_fn fill, void *ctx, uint64_t expected);

/* Fill callback (dg_fill_fn, ctx a dg_ahead): the next n words of the source, in order,
 * waiting for the reader where it is behind; the source's error (the words zeroed) once the
 * chunk it failed on is reached.  One consumer thread only. */
int dg_fill_ahead(void *ctx, uint64_t *words, size_t n);

/* Stop the reader thread (after the read it is in, if any), wait for it, zero and release
 * the ring.  NULL is fine. */
void dg_ahead_stop(dg_ahead *a);

#endif
