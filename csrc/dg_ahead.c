/*
 * dg_ahead.c -- reading a bit source ahead, on a thread of its own (see dg_ahead.h).
 *
 * A single-producer, single-consumer ring of DG_AHEAD_CHUNKS chunks.  `head` counts the
 * chunks the reader has finished, `tail` the ones the consumer has used up; both only grow.
 * The reader owns chunk head % N while head - tail < N, the consumer chunk tail % N while
 * tail < head.  Each side publishes its counter with a release store and reads the other's
 * with an acquire load; it sleeps on a condition variable only after spinning a little (the
 * other side is usually on another core and about to move), and says so in a flag the other
 * side checks, under the mutex, before it signals.
 */
#define _GNU_SOURCE
#include "dg_ahead.h"

#include <pthread.h>
#if defined(__linux__)
#include <sched.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHUNK DG_AHEAD_CHUNK_WORDS
#define NCHUNKS DG_AHEAD_CHUNKS
#define SPINS 256 /* the reader's checks before sleeping: a few microseconds */
/* The consumer waits for a chunk by spinning up to WAIT_SPIN_NS before it sleeps: a chunk
 * takes the OS 40-70 us to fill, and waking a sleeping thread on a VM took 10-30 us of it
 * (a batch bound by the reading ran 20-25% under the rate of its bits); the consumer's CPU
 * has nothing else to do meanwhile (the batch reads ahead only when a CPU is idle). */
#define WAIT_SPIN_NS 1000000
/* A reader that found the ring full sleeps until half of it is free: one wake-up for
 * NCHUNKS / 2 chunks, not one a chunk. */
#define LOW_WATER (NCHUNKS / 2)

struct dg_ahead {
    dg_fill_fn fill;
    void *ctx;
    uint64_t *ring;          /* NCHUNKS chunks, on pages of their own */
    size_t ring_bytes;
    int rc[NCHUNKS];         /* each finished chunk's fill status */
    uint64_t expected;       /* chunks the reader may read before the consumer asks */
    uint64_t head, tail;     /* chunks finished / used up (atomic) */
    size_t pos;              /* words of chunk tail % N already handed out (CHUNK: none held) */
    int status;              /* the consumer's sticky error */
    int stop;                /* the reader must stop (under mu) */
    int done;                /* the reader has stopped (under mu) */
    int reader_sleeps, consumer_sleeps; /* (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t reader_cv, consumer_cv;
    pthread_t thread;
};

int dg_ahead_cpus(void)
{
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    return CPU_COUNT(&set);
#else
    return 1; /* (elsewhere a batch reads the OS itself) */
#endif
}

int dg_ahead_idle_cpu(void)
{
    /* /proc/loadavg: "0.12 0.34 0.56 R/T last-pid", R the threads runnable now (this one
     * among them) */
    char text[128];
    long running = 0;
    int cpus = dg_ahead_cpus();
    FILE *f = fopen("/proc/loadavg", "re");
    if (cpus < 2)
        return 0;
    if (f == NULL)
        return 1;
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    if (sscanf(text, "%*s %*s %*s %ld/", &running) != 1)
        return 1;
    return running < cpus;
}

static inline uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void publish(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The reader may read chunk `head` now: there is room (`room` chunks free at least), and
 * the batch expects it or the consumer is already waiting for it. */
static int may_read(dg_ahead *a, uint64_t head, uint64_t room)
{
    uint64_t tail = load(&a->tail);
    return head - tail <= NCHUNKS - room && (head < a->expected || head == tail);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *reader(void *arg)
{
    dg_ahead *a = (dg_ahead *)arg;
    uint64_t head = 0;
    for (;;) {
        int spins = 0;
        while (!may_read(a, head, 1) && !__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)
               && spins < SPINS) {
            relax();
            spins++;
        }
        pthread_mutex_lock(&a->mu);
        if (!a->stop && !may_read(a, head, 1)) {
            do {
                a->reader_sleeps = 1;
                pthread_cond_wait(&a->reader_cv, &a->mu);
            } while (!a->stop && !may_read(a, head, LOW_WATER));
        }
        a->reader_sleeps = 0;
        int stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        int rc = a->fill(a->ctx, a->ring + (head % NCHUNKS) * CHUNK, CHUNK);
        a->rc[head % NCHUNKS] = rc;
        publish(&a->head, ++head);
        pthread_mutex_lock(&a->mu);
        if (a->consumer_sleeps)
            pthread_cond_signal(&a->consumer_cv);
        pthread_mutex_unlock(&a->mu);
        if (rc != DG_OK)
            break; /* the consumer gets the error when it reaches this chunk */
    }
    pthread_mutex_lock(&a->mu);
    a->done = 1; /* (a consumer never waits past a failed chunk; this keeps it from hanging) */
    if (a->consumer_sleeps)
        pthread_cond_signal(&a->consumer_cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void wipe(void *p, size_t n)
{
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

dg_ahead *dg_ahead_start(dg_fill_fn fill, void *ctx, uint64_t expected)
{
    dg_ahead *a = calloc(1, sizeof *a);
    sigset_t all, old;
    if (a == NULL)
        return NULL;
    a->fill = fill;
    a->ctx = ctx;
    a->expected = expected == UINT64_MAX ? UINT64_MAX : (expected + CHUNK - 1) / CHUNK;
    a->pos = CHUNK;
    a->ring_bytes = (size_t)NCHUNKS * CHUNK * sizeof(uint64_t);
    void *p = mmap(NULL, a->ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        free(a);
        return NULL;
    }
#ifdef MADV_WIPEONFORK
    (void)madvise(p, a->ring_bytes, MADV_WIPEONFORK);
#endif
    a->ring = (uint64_t *)p;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->reader_cv, NULL);
    pthread_cond_init(&a->consumer_cv, NULL);
    /* the reader starts with every signal blocked (they are the calling threads' to take) */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&a->thread, NULL, reader, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&a->consumer_cv);
        pthread_cond_destroy(&a->reader_cv);
        pthread_mutex_destroy(&a->mu);
        munmap(p, a->ring_bytes);
        free(a);
        return NULL;
    }
    return a;
}

/* Wait until the reader has finished chunk `tail` (the consumer's next): 1, or 0 if the
 * reader has stopped without it. */
static int wait_for(dg_ahead *a, uint64_t tail)
{
    int spins = 0, found;
    uint64_t since = 0;
    while (load(&a->head) == tail) {
        relax();
        if (++spins % 64 == 0) {  /* (the clock every 64 pauses, about 1-2 us) */
            uint64_t t = now_ns();
            if (since == 0)
                since = t;
            else if (t - since >= WAIT_SPIN_NS)
                break;
        }
    }
    if (load(&a->head) != tail)
        return 1;
    pthread_mutex_lock(&a->mu);
    if (a->reader_sleeps) /* it waits for room or to be asked: the consumer asks now */
        pthread_cond_signal(&a->reader_cv);
    while (load(&a->head) == tail && !a->done) {
        a->consumer_sleeps = 1;
        pthread_cond_wait(&a->consumer_cv, &a->mu);
    }
    a->consumer_sleeps = 0;
    found = load(&a->head) != tail;
    pthread_mutex_unlock(&a->mu);
    return found;
}

int dg_fill_ahead(void *ctx, uint64_t *words, size_t n)
{
    dg_ahead *a = (dg_ahead *)ctx;
    uint64_t *const start = words;
    const size_t want = n;
    while (n > 0 && a->status == DG_OK) {
        uint64_t tail = __atomic_load_n(&a->tail, __ATOMIC_RELAXED); /* (only this thread writes it) */
        if (a->pos == CHUNK) { /* the next chunk */
            if (!wait_for(a, tail)) {
                a->status = DG_ERR_ENTROPY; /* (not reached: the reader stops only at an
                                               error, which the chunk before says) */
                break;
            }
            a->pos = 0;
            if (a->rc[tail % NCHUNKS] != DG_OK) {
                a->status = a->rc[tail % NCHUNKS];
                break;
            }
        }
        uint64_t *chunk = a->ring + (tail % NCHUNKS) * CHUNK;
        size_t k = CHUNK - a->pos < n ? CHUNK - a->pos : n;
        memcpy(words, chunk + a->pos, k * sizeof(uint64_t));
        words += k;
        n -= k;
        a->pos += k;
        if (a->pos == CHUNK) { /* used up: zero it and hand it back */
            wipe(chunk, CHUNK * sizeof(uint64_t));
            publish(&a->tail, tail + 1);
            pthread_mutex_lock(&a->mu);
            if (a->reader_sleeps && may_read(a, load(&a->head), LOW_WATER))
                pthread_cond_signal(&a->reader_cv);
            pthread_mutex_unlock(&a->mu);
        }
    }
    if (a->status != DG_OK) {
        memset(start, 0, want * sizeof(uint64_t)); /* as the source's fill leaves them */
        return a->status;
    }
    return DG_OK;
}

void dg_ahead_stop(dg_ahead *a)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    __atomic_store_n(&a->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&a->reader_cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    wipe(a->ring, a->ring_bytes);
    munmap(a->ring, a->ring_bytes);
    pthread_cond_destroy(&a->consumer_cv);
    pthread_cond_destroy(&a->reader_cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
