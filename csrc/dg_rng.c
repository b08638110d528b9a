/* dg_rng.c -- word buffer and the OS fill callback.  See dg_rng.h. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "dg_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/syscall.h>
#if defined(SYS_getrandom)
#define DG_HAVE_GETRANDOM 1
#endif
#endif

void dg_rng_init(dg_rng *rng, dg_fill_fn fill, void *ctx,
                 uint64_t *buf, size_t cap, size_t first_block)
{
    memset(rng, 0, sizeof *rng);
    rng->fill = fill;
    rng->ctx = ctx;
    rng->buf = buf;
    rng->cap = cap;
    rng->block = (first_block == 0 || first_block > cap) ? cap : first_block;
    rng->bit_budget = UINT64_MAX;
}

int dg_rng_next_word(dg_rng *rng)
{
    if (rng->status != DG_OK)
        return -1;
    if (rng->bit_budget == 0) {
        rng->status = DG_ERR_EXHAUSTED;
        return -1;
    }
    if (rng->pos == rng->len) {
        int rc = rng->fill(rng->ctx, rng->buf, rng->block);
        if (rc != DG_OK) {
            rng->status = rc;
            rng->cur = 0;
            rng->avail = 0;
            return -1;
        }
        rng->pos = 0;
        rng->len = rng->block;
        if (rng->block < rng->cap)
            rng->block = (rng->block > rng->cap / 2) ? rng->cap : 2 * rng->block;
    }
    rng->cur = rng->buf[rng->pos++];
    rng->avail = 64;
    if (rng->bit_budget != UINT64_MAX) {
        /* a finite source: its last word may hold fewer than 64 bits */
        if (rng->bit_budget < 64)
            rng->avail = (unsigned)rng->bit_budget;
        rng->bit_budget -= rng->avail;
    }
    rng->bits_taken += rng->avail;
    return 0;
}

uint64_t dg_bits_spanning(dg_rng *rng, unsigned k)
{
    uint64_t v = 0;
    unsigned take;
    while (k > 0) {
        if (rng->avail == 0 && dg_rng_next_word(rng) < 0)
            return 0;
        take = (k < rng->avail) ? k : rng->avail;
        v = (take == 64) ? rng->cur : (v << take) | (rng->cur >> (64 - take));
        rng->cur = (take == 64) ? 0 : rng->cur << take;
        rng->avail -= take;
        k -= take;
    }
    return v;
}

/* ---- the operating system's CSPRNG ---------------------------------- */

/* Read all of buf from /dev/urandom, retrying short reads and EINTR. */
static int read_urandom(unsigned char *p, size_t n, int *err)
{
    int fd;
    do {
        fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        *err = errno;
        return DG_ERR_ENTROPY;
    }
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            *err = (got < 0) ? errno : EIO;
            close(fd);
            return DG_ERR_ENTROPY;
        }
        p += got;
        n -= (size_t)got;
    }
    close(fd);
    return DG_OK;
}

/* ---- test hooks (dgauss._core._os_test_hook), not API ------------------
 * fail_after >= 0: that many more fills succeed, then `fail_count` fills fail
 * with `fail_errno`.  fake: reads return the little-endian bytes of the words
 * splitmix64(0), splitmix64(1), ... (as tests/test_randomness.py computes
 * them) at most 7 at a time, and every third read fails with EINTR, so the tests can check that
 * short reads are joined and interrupted reads retried, never taken as data,
 * and that the buffered OS path reads the bits a tape of those words gives.
 * The tests run these hooks from one thread. */
static struct {
    int fail_after, fail_count, fail_errno;
    int fake;
    uint64_t fake_next, fake_calls;
} dg_os_hook = {-1, 0, 0, 0, 0, 0};

void dg_os_test_hook(int fail_after, int fail_count, int fail_errno, int fake)
{
    dg_os_hook.fail_after = fail_after;
    dg_os_hook.fail_count = fail_count;
    dg_os_hook.fail_errno = fail_errno;
    dg_os_hook.fake = fake;
    dg_os_hook.fake_next = 0;
    dg_os_hook.fake_calls = 0;
}

static int injected_failure(void)
{
    if (dg_os_hook.fail_after < 0 || dg_os_hook.fail_count == 0)
        return 0;
    if (dg_os_hook.fail_after > 0) {
        dg_os_hook.fail_after--;
        return 0;
    }
    dg_os_hook.fail_count--;
    return 1;
}

/* Word j of the fake source: Steele, Lea and Flood's SplitMix64 output j. */
static uint64_t splitmix64(uint64_t j)
{
    uint64_t z = (j + 1) * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* One read attempt: bytes read (possibly fewer than n), or -1 with errno. */
static long os_read(unsigned char *p, size_t n)
{
    if (dg_os_hook.fake) {
        size_t i, k = n < 7 ? n : 7;
        if (++dg_os_hook.fake_calls % 3 == 0) {
            errno = EINTR;
            return -1;
        }
        for (i = 0; i < k; i++, dg_os_hook.fake_next++)
            p[i] = (unsigned char)(splitmix64(dg_os_hook.fake_next / 8) >> (8 * (dg_os_hook.fake_next % 8)));
        return (long)k;
    }
#if defined(DG_HAVE_GETRANDOM)
    return syscall(SYS_getrandom, p, n, 0);
#else
    return -2; /* use read_urandom */
#endif
}

int dg_fill_os(void *ctx, uint64_t *words, size_t n)
{
    unsigned char *p = (unsigned char *)words;
    size_t left = n * sizeof(uint64_t);
    int err = 0;
    int rc = DG_OK;

    if (injected_failure()) {
        err = dg_os_hook.fail_errno;
        rc = DG_ERR_ENTROPY;
    }
    while (rc == DG_OK && left > 0) {
        long got = os_read(p, left);
        if (got == -2 || (got < 0 && errno == ENOSYS)) { /* no getrandom(2) */
            rc = read_urandom(p, left, &err);
            break;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            err = (got < 0) ? errno : EIO;
            rc = DG_ERR_ENTROPY;
            break;
        }
        p += got;
        left -= (size_t)got;
    }
    if (rc != DG_OK) {
        memset(words, 0, n * sizeof(uint64_t)); /* never leave stale bits */
        if (ctx != NULL)
            ((dg_os_ctx *)ctx)->err = err;
    }
    return rc;
}
