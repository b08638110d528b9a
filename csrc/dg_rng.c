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
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#endif
#endif

#if defined(DG_HAVE_GETRANDOM)
typedef long (*dg_getrandom_fn)(void *buf, size_t n, unsigned int flags);

/* The C library's getrandom(3), looked up once at run time (NULL: it has none).  From glibc
 * 2.41 on it reads the kernel's vDSO getrandom where the kernel has one (Linux >= 6.11),
 * without a system call; an older C library makes the system call itself, as we would.
 * Looked up rather than linked: the manylinux wheels are built against a glibc (2.17) that
 * has no getrandom(3), and run on ones that may have the fast one.  (Two threads may both
 * look it up the first time: they find the same pointer.) */
static dg_getrandom_fn libc_getrandom(void)
{
    static dg_getrandom_fn fn;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        void *found = dlsym(RTLD_DEFAULT, "getrandom");
        dg_getrandom_fn cast;
        memcpy(&cast, &found, sizeof cast); /* (a data pointer to a function pointer) */
        __atomic_store_n(&fn, cast, __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&fn, __ATOMIC_RELAXED);
}
#endif

#if defined(DG_HAVE_GETRANDOM)
/* ---- the kernel's vDSO getrandom ----------------------------------------------------------
 * Linux >= 6.11 maps a getrandom into every process (the vDSO): the same CSPRNG as the system
 * call, generated in user space from per-thread state that the kernel keeps fresh (a
 * generation counter it bumps on reseed, memory it wipes on fork and may drop under pressure),
 * without entering the kernel.  glibc >= 2.41's getrandom(3) reads it; an older C library
 * does not, so it is found here as glibc finds it: the symbol in the vDSO's ELF image
 * (getauxval(AT_SYSINFO_EHDR)), its state's size and mapping asked of the function itself
 * (opaque_len = ~0), one state per thread, mapped on the thread's first read and unmapped
 * when it exits (a pthread key's destructor).  Where any step fails the system call is
 * read instead; the vDSO function itself falls back to the system call when it cannot
 * generate (a state in use, a kernel not ready), so its answers are the system call's:
 * bytes read, or a negative errno. */

typedef long (*dg_vgetrandom_fn)(void *buf, size_t n, unsigned int flags, void *state,
                                 size_t state_len);

/* The kernel's struct vgetrandom_opaque_params (include/uapi/linux/random.h). */
struct vgetrandom_params {
    uint32_t size_of_opaque_state, mmap_prot, mmap_flags, reserved[13];
};

static struct {
    dg_vgetrandom_fn fn;              /* NULL: no vDSO getrandom here */
    struct vgetrandom_params params;
    size_t state_bytes;               /* the state's mapping: whole pages */
    pthread_key_t key;                /* each thread's state; its destructor unmaps it */
} vdso;
static pthread_once_t vdso_once = PTHREAD_ONCE_INIT;
/* Which reader dg_fill_os uses: 1 the vDSO where it was found, 0 the C library and the
 * system call (dg_os_set_reader, for tests and benchmarks). */
static int vdso_wanted = 1;

/* A DT_HASH table's entry: 64 bits on s390x and Alpha (their ABIs), 32 elsewhere. */
#if defined(__s390x__) || defined(__alpha__)
typedef uint64_t dg_hash_word;
#else
typedef uint32_t dg_hash_word;
#endif

/* The address of the vDSO's function `name`, or NULL: its ELF image's dynamic symbol table,
 * searched through DT_HASH's count of symbols. */
static void *vdso_symbol(const char *name)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    const ElfW(Ehdr) *eh;
    const ElfW(Phdr) *ph;
    const ElfW(Dyn) *dyn = NULL;
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const dg_hash_word *hash = NULL;
    uintptr_t bias = 0;
    int i, have_load = 0;
    dg_hash_word k;

    if (base == 0)
        return NULL;
    eh = (const ElfW(Ehdr) *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return NULL;
    ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    for (i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !have_load) {
            bias = base + ph[i].p_offset - ph[i].p_vaddr;
            have_load = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(base + ph[i].p_offset);
        }
    }
    if (!have_load || dyn == NULL)
        return NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            sym = (const ElfW(Sym) *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            str = (const char *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_HASH)
            hash = (const dg_hash_word *)(bias + dyn->d_un.d_ptr);
    }
    if (sym == NULL || str == NULL || hash == NULL)
        return NULL;
    for (k = 0; k < hash[1]; k++) /* hash[1]: the number of symbols */
        if (sym[k].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC
            && strcmp(str + sym[k].st_name, name) == 0)
            return (void *)(bias + sym[k].st_value);
    return NULL;
}

static void vdso_unmap(void *state)
{
    munmap(state, vdso.state_bytes);
}

static void vdso_find(void)
{
    /* x86-64 and LoongArch name it __vdso_getrandom; arm64, PowerPC and s390 __kernel_getrandom */
    static const char *const names[] = {"__vdso_getrandom", "__kernel_getrandom"};
    long page = sysconf(_SC_PAGESIZE);
    void *found = NULL;
    dg_vgetrandom_fn fn;
    size_t i;

    for (i = 0; i < sizeof names / sizeof *names && found == NULL; i++)
        found = vdso_symbol(names[i]);
    if (found == NULL || page <= 0)
        return;
    memcpy(&fn, &found, sizeof fn); /* (a data pointer to a function pointer) */
    memset(&vdso.params, 0, sizeof vdso.params);
    if (fn(NULL, 0, 0, &vdso.params, ~(size_t)0) != 0 || vdso.params.size_of_opaque_state == 0
        || vdso.params.size_of_opaque_state > (uint32_t)page)
        return;
    if (pthread_key_create(&vdso.key, vdso_unmap) != 0)
        return;
    vdso.state_bytes = (size_t)page;
    vdso.fn = fn;
}

/* This thread's vDSO state, mapped on its first read; NULL where there is no vDSO
 * getrandom or the mapping failed (the caller then makes the system call). */
static void *vdso_state(void)
{
    void *state;
    pthread_once(&vdso_once, vdso_find);
    if (vdso.fn == NULL)
        return NULL;
    state = pthread_getspecific(vdso.key);
    if (state != NULL)
        return state;
    state = mmap(NULL, vdso.state_bytes, (int)vdso.params.mmap_prot,
                 (int)vdso.params.mmap_flags, -1, 0);
    if (state == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(vdso.key, state) != 0) {
        munmap(state, vdso.state_bytes);
        return NULL;
    }
    return state;
}
#endif

int dg_os_reader(void)
{
#if defined(DG_HAVE_GETRANDOM)
    if (__atomic_load_n(&vdso_wanted, __ATOMIC_RELAXED) && vdso_state() != NULL)
        return 2;
    return libc_getrandom() != NULL ? 1 : 0;
#else
    return -1;
#endif
}

int dg_os_set_reader(int which)
{
#if defined(DG_HAVE_GETRANDOM)
    if (which == 2) {
        pthread_once(&vdso_once, vdso_find);
        if (vdso.fn == NULL)
            return -1;
        __atomic_store_n(&vdso_wanted, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&vdso_wanted, 0, __ATOMIC_RELAXED);
    }
    return dg_os_reader();
#else
    (void)which;
    return -1;
#endif
}

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

void dg_rng_wipe(dg_rng *rng)
{
    if (rng->buf != NULL && rng->len > 0)
        memset(rng->buf, 0, rng->len * sizeof *rng->buf);
    rng->cur = 0;
    rng->avail = 0;
}

int dg_rng_preload_pair(dg_rng *a, dg_rng *b, size_t n)
{
    int rc;
    if (n == 0 || 2 * n > a->cap || n > b->cap || a->len != 0 || b->len != 0)
        return DG_OK; /* (not fresh, or too large: each stream fills as it goes) */
    rc = a->fill(a->ctx, a->buf, 2 * n);
    if (rc != DG_OK) {
        a->status = b->status = rc;
        return rc;
    }
    memcpy(b->buf, a->buf + n, n * sizeof *a->buf);
    memset(a->buf + n, 0, n * sizeof *a->buf); /* b's words are b's alone */
    a->pos = b->pos = 0;
    a->len = b->len = n;
    a->block = b->block = (n > a->cap / 2) ? a->cap : 2 * n;
    return DG_OK;
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

/* Without the vDSO's own function (dg_os_set_reader(0)), reads of at most this many bytes go
 * through the C library's getrandom(3), which reads the vDSO from glibc 2.41 on, and larger
 * ones make the system call (docs/performance.md, *The vDSO getrandom*). */
#define DG_LIBC_READ_MAX 256

/* One read of at most n bytes from getrandom(2), through the vDSO where the kernel has it:
 * bytes read, or -1 with errno; -2 when this system has no getrandom(2). */
static long getrandom_read(void *arg, unsigned char *p, size_t n)
{
    (void)arg;
#if defined(DG_HAVE_GETRANDOM)
    dg_getrandom_fn libc;
    if (__atomic_load_n(&vdso_wanted, __ATOMIC_RELAXED)) {
        void *state = vdso_state();
        if (state != NULL) {
            long got = vdso.fn(p, n, 0, state, vdso.params.size_of_opaque_state);
            if (got >= 0)
                return got;
            errno = (int)-got;
            return -1;
        }
    }
    libc = libc_getrandom();
    if (libc != NULL && n <= DG_LIBC_READ_MAX)
        return libc(p, n, 0);
    return syscall(SYS_getrandom, p, n, 0);
#else
    (void)p;
    (void)n;
    return -2;
#endif
}

/* n words from `read`, joining short reads and retrying EINTR, or from /dev/urandom when
 * getrandom(2) is missing (-2 or ENOSYS).  On failure the words are zeroed (never stale
 * bits) and errno goes to ((dg_os_ctx *)ctx)->err. */
static int fill_words(dg_read_fn read, void *arg, void *ctx, uint64_t *words, size_t n)
{
    unsigned char *p = (unsigned char *)words;
    size_t left = n * sizeof(uint64_t);
    int err = 0;
    int rc = DG_OK;

    while (left > 0) {
        long got = read(arg, p, left);
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
        memset(words, 0, n * sizeof(uint64_t));
        if (ctx != NULL)
            ((dg_os_ctx *)ctx)->err = err;
    }
    return rc;
}

int dg_fill_os(void *ctx, uint64_t *words, size_t n)
{
    return fill_words(getrandom_read, NULL, ctx, words, n);
}

/* ---- a scripted OS source, for tests (dgauss.testing.ScriptedOS) ------------------------
 * Per call: nothing here is global, and dg_fill_os above cannot be made to read anything
 * but the OS. */

/* Word j of the fake source: Steele, Lea and Flood's SplitMix64 output j. */
static uint64_t splitmix64(uint64_t j)
{
    uint64_t z = (j + 1) * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* fake: the little-endian bytes of splitmix64(0), splitmix64(1), ..., at most 7 per read,
 * and every third read interrupted (EINTR); else the OS. */
static long scripted_read(void *arg, unsigned char *p, size_t n)
{
    dg_os_script *s = (dg_os_script *)arg;
    size_t i, k = n < 7 ? n : 7;
    if (!s->fake)
        return getrandom_read(NULL, p, n);
    if (++s->fake_calls % 3 == 0) {
        errno = EINTR;
        return -1;
    }
    for (i = 0; i < k; i++, s->fake_next++) {
        uint64_t j = s->fake_next / 8;
        uint64_t w = (j >= s->first && j - s->first < s->nprefix) ? s->prefix[j - s->first]
                                                                 : splitmix64(j);
        p[i] = (unsigned char)(w >> (8 * (s->fake_next % 8)));
    }
    return (long)k;
}

int dg_fill_scripted(void *ctx, uint64_t *words, size_t n)
{
    dg_os_script *s = (dg_os_script *)ctx;
    if (s->fail_after >= 0 && s->fail_count > 0) {
        if (s->fail_after > 0) {
            s->fail_after--;
        } else {
            s->fail_count--;
            memset(words, 0, n * sizeof(uint64_t));
            s->os.err = s->fail_errno;
            return DG_ERR_ENTROPY;
        }
    }
    return fill_words(scripted_read, s, &s->os, words, n);
}
