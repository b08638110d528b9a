# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled core of dgauss: validated parameters in, a NumPy array of samples out.

The paper's Algorithms 1-3 (Canonne, Kamath & Steinke 2020, Section 5) are in
_algorithms.pxi, included here so that they inline into the batch loops; the
bit source and the other primitives are plain C in csrc/; the conversion of
GMP integers to Python ints is _pylong.h.  This file sets up one call (_Job):
the parameters, the tables, the bit source; then `fill` loops over the output
with the GIL released, checking for signals between stretches.

This module is private: parameters arrive already validated and reduced
(dgauss._params).  The bit-consumption contract it shares with
dgauss.reference is docs/contract.md.
"""

from cpython.long cimport PyLong_FromLong
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport uint8_t, uint64_t, int64_t, INT64_MAX, UINT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

cimport numpy as cnp
from numpy.random cimport bitgen_t

from dgauss._gmp cimport *
from dgauss._csrc cimport *

import errno as _errno
import functools
import math as _math
import os as _os
import threading as _threading
from collections import OrderedDict
from fractions import Fraction

import numpy as np

from dgauss import _inversion, _kinds, _methods, _sources

cnp.import_array()

# What `fill` samples: the values of dgauss._kinds.Kind (checked below)
cdef enum Kind:
    KIND_BERNOULLI_EXP = 0
    KIND_DISCRETE_LAPLACE = 1
    KIND_DISCRETE_GAUSSIAN = 2
    KIND_BERNOULLI = 3      # the primitive Bernoulli(n/d), for dgauss.testing
    KIND_UNIFORM = 4        # the primitive uniform(m) (parameter m/1), for dgauss.testing

if ({k.name: int(k) for k in _kinds.Kind} != {
        "BERNOULLI_EXP": KIND_BERNOULLI_EXP, "DISCRETE_LAPLACE": KIND_DISCRETE_LAPLACE,
        "DISCRETE_GAUSSIAN": KIND_DISCRETE_GAUSSIAN, "BERNOULLI": KIND_BERNOULLI,
        "UNIFORM": KIND_UNIFORM}):
    raise ImportError("dgauss._core was built for other sampler codes than dgauss._kinds")

cdef enum:
    # blocked inversion's first step: a guide of 2**12 entries (16 KiB, in L1): faster than
    # dg_inv_guide_bits's about four a word (2**15-2**16), as the words that R usually falls
    # between are the first few hundred (a C harness: 7.4 against 8.4 ns a sample at scale 10**4,
    # 8.2 against 8.8 at 10**6; docs/performance.md)
    BLOCKED_GUIDE_BITS = 12
    # the Laplace's residual (L - 1 <= 2**14 - 1 words, a few per cent of the draws): a guide of
    # at most 2**12 entries, a few words scanned a use; four a word took 0.05-0.07 ms more to
    # build at scales 10**6 and 2**20 and drew no faster (docs/performance.md)
    RESIDUAL_GUIDE_BITS = 12
    ENV_GUIDE_BITS = 13
    OS_BUFFER_WORDS = 2048     # 16 KiB: the largest single read from the OS
    OS_FIRST_BLOCK = 4         # the first read is small: scalar calls stay cheap
    CHUNK = 1 << 20            # at most this many samples per GIL-free stretch, and
    STRETCH_NS = 20000000      # about this long (20 ms): signals are checked between stretches
    CHECK_MAX = 4096           # the clock is read at least every this many samples
    INVERSION_FIRST_CHECK = 256    # and first after this many by inversion (fill_inversion)
    OBJECT_CHUNK = 4096        # at most this many samples per stretch when Python ints are
                               # made (with the GIL): fewer hand-overs of the GIL between threads
    OBJECT_CHUNK_BYTES = 1 << 20   # and about this many bytes of GMP values per stretch

#: When t is at most this, Algorithm 2 draws X = U + tV by inversion (dg_exp.h).
INVERSION_MAX = DG_INVERSION_MAX

dg_exp_init()

#: floor(2**64 / e), the first 64 binary digits of exp(-1) (a constant in dg_exp.h)
EXP_M1_PREFIX = DG_EXP_M1_PREFIX

cdef extern from "<stdlib.h>" nogil:
    void *aligned_alloc(size_t alignment, size_t size)

include "_algorithms.pxi"


cdef struct State:
    dg_rng rng
    Work w
    Params p
    int kind
    mpz_t mu
    int64_t mu64
    bint mu_small
    bint mu_zero
    # by inversion (method="inversion", dgauss._inversion): |X| from the table `inv`, or for a
    # large parameter by blocked inversion from `lb` (when blocked); then the sign
    bint inversion
    dg_inv_table inv
    bint blocked
    dg_blocked lb
    # past blocked inversion's range: enveloped inversion (envelope_draw, dg_env_fill)
    bint enveloped
    dg_env env
    # an int64 batch by inversion from the OS draws in two lanes (dg_inv.h, DG_INV_FILL):
    # out[2j] from rng, out[2j + 1] from rng2, a second OS stream of its own
    # (sample i of the job's batches from lane (i + phase) % 2, phase = the parity of the
    # samples drawn before: where a stretch or a slice ends changes no sample)
    bint lanes
    dg_rng rng2
    unsigned phase
    void *owner         # the _Job (a borrowed Python object), for the step past R's 64th bit



# --------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------

cdef int magnitude_past_64(State *s, dg_inv_pending *pend, uint64_t *y) noexcept nogil:
    """|X| when R's first 64 bits pend.r do not decide it (probability about 2**-64): the rule
    of dgauss._inversion.invert from R's 65th bit, with the GIL, on exact thresholds (for
    blocked inversion, from the step pend.stage, the block's start pend.base; for enveloped
    inversion, the block index B)."""
    with gil:
        job = <_Job>s.owner
        bits = _RngBits.__new__(_RngBits)
        (<_RngBits>bits).rng = &s.rng
        try:
            if s.blocked:
                y[0] = job.continuation(bits, a=pend.r, j=64, stage=pend.stage, base=pend.base)
            else:
                y[0] = job.continuation(bits, a=pend.r, j=64)
            return 0
        except _BitsFailed:
            return -1
        except BaseException as exc:
            job.error = exc
            s.rng.status = DG_ERR_CALLBACK
            return -1


cdef int envelope_accept(State *s, uint64_t b, uint64_t u) noexcept nogil:
    """Enveloped inversion's acceptance, Bernoulli(exp(-gamma)) by digits (docs/contract.md,
    items 5 and 9), gamma = u (2Lb + u) / (2 sigma^2) or u / scale: 1, 0, or -1 when the bit
    source failed.  R's first J(b) bits go one at a time (a 0 accepts: exp(-gamma)'s first
    J(b) digits are 1; J = 0 past the table's blocks: the same bits, one at a time); past
    them, exp(-gamma)'s digits on GMP (128-bit fixed point where it decides them)."""
    cdef Params *p = &s.p
    cdef Work *w = &s.w
    cdef unsigned j = s.env.ones[b] if b <= s.env.stage.count else 0, i
    cdef int c
    cdef uint64_t prefix
    cdef mpz_srcptr den
    if u == 0:
        return 1                        # gamma = 0: nothing read
    for i in range(j):
        c = dg_bit(&s.rng)
        if s.rng.status != DG_OK:
            return -1
        if c == 0:
            return 1
    # gamma = num / den: u d / n (Laplace) or u (2Lb + u) d / (2n) (Gaussian), on GMP
    mpz_set_ui(w.num, u)
    if s.kind == KIND_DISCRETE_GAUSSIAN:
        mpz_set_ui(w.bn, b)
        mpz_mul_2exp(w.bn, w.bn, s.env.k + 1)
        mpz_add_ui(w.bn, w.bn, u)
        mpz_mul(w.num, w.num, w.bn)
        den = &p.TWO_N[0]
    else:
        den = &p.N[0]
    mpz_mul(w.num, w.num, p.D)
    if j > 0:                           # gamma <= 2**-j < 1: digits j + 1 .. 64, then GMP's
        prefix = dg_exp_neg_prefix_mpz(w.num, den, p.fixed_point)
        c = dg_compare_digits(&s.rng, prefix << j, 64 - j)
        return c if c != DG_DIGITS_MATCH else dg_exp_digits_tail_mpz(&s.rng, w.num, den)
    mpz_fdiv_qr(w.whole, w.frac, w.num, den)
    c = bernoulli_exp1_times_mpz(&s.rng, w.whole)
    if c != 1 or mpz_sgn(w.frac) == 0:
        return c
    prefix = dg_exp_neg_prefix_mpz(w.frac, den, p.fixed_point)
    c = dg_compare_digits(&s.rng, prefix, 64)
    return c if c != DG_DIGITS_MATCH else dg_exp_digits_tail_mpz(&s.rng, w.frac, den)


cdef int envelope_draw(State *s, Value *v) noexcept nogil:
    """X by enveloped inversion (docs/contract.md, item 9; dgauss._inversion.enveloped_draw),
    step by step: the block index b by the rule, U (k raw bits), the acceptance, the sign;
    a rejection, or X = 0 with the sign 1, starts again.  0, or -1 with the status set."""
    cdef uint64_t b, u
    cdef unsigned k = s.env.k
    cdef int rc, neg
    cdef dg_inv_pending pend
    while True:
        rc = dg_inv_draw(&s.rng, &s.env.stage, &b, &pend.r)
        if rc == DG_INV_UNDECIDED:
            rc = magnitude_past_64(s, &pend, &b)
        if rc < 0:
            return -1
        u = dg_bits(&s.rng, k)
        if s.rng.status != DG_OK:
            return -1
        rc = envelope_accept(s, b, u)
        if rc < 0:
            return -1
        if rc == 0:
            continue
        neg = dg_bit(&s.rng)
        if s.rng.status != DG_OK:
            return -1
        if b == 0 and u == 0 and neg:
            continue
        if b < (<uint64_t>1 << (62 - k)):
            v.big = False
            v.mag = (b << k) + u
            v.neg = neg
        else:                           # beyond int64's reach: exactly, on GMP
            v.big = True
            mpz_set_ui(s.w.y, b)
            mpz_mul_2exp(s.w.y, s.w.y, k)
            mpz_add_ui(s.w.y, s.w.y, u)
            if neg:
                mpz_neg(s.w.y, s.w.y)
        return 0


cdef inline int by_inversion(State *s, Value *v) noexcept nogil:
    """X by inversion (dg_inv.h): |X| against the thresholds P[|X| >= x], then the sign, one
    bit (1: negative); past blocked inversion's range, envelope_draw."""
    cdef uint64_t y
    cdef dg_inv_pending pend
    cdef int rc
    if s.enveloped:
        return envelope_draw(s, v)
    if s.blocked:
        rc = dg_blocked_draw(&s.rng, &s.lb, &y, &pend)
    else:
        rc = dg_inv_draw_one(&s.rng, &s.inv, &y, &pend)
    if rc == DG_INV_UNDECIDED:
        rc = magnitude_past_64(s, &pend, &y)
    if rc < 0:
        return -1
    return signed(s, y, v)


cdef inline int signed(State *s, uint64_t y, Value *v) noexcept nogil:
    """v = +-y, the sign one bit when y > 0 (1: negative): 0, or -1 with the status set."""
    v.big = False
    v.mag = y
    v.neg = False
    if y != 0:
        v.neg = dg_bit(&s.rng)
        if s.rng.status != DG_OK:
            return -1
    return 0


cdef inline int draw(State *s, Value *v) noexcept nogil:
    cdef int b
    if s.inversion:
        return by_inversion(s, v)
    if s.kind == KIND_DISCRETE_GAUSSIAN:
        return discrete_gaussian(&s.rng, &s.p, &s.w, v)
    if s.kind == KIND_DISCRETE_LAPLACE:
        return discrete_laplace(&s.rng, &s.p.lap, &s.w, v)
    if s.kind == KIND_UNIFORM:
        v.big = True
        v.neg = False
        return dg_uniform_mpz(&s.rng, s.p.N, s.w.y)
    if s.kind == KIND_BERNOULLI:
        b = dg_bernoulli_mpz(&s.rng, s.p.N, s.p.D, s.w.rem)
    else:
        b = bernoulli_exp(&s.rng, s.p.N, s.p.D, &s.w)
    v.big = False
    v.neg = False
    v.mag = <uint64_t>b
    return -1 if b < 0 else 0


cdef void value_to_mpz(State *s, Value *v, mpz_ptr out) noexcept nogil:
    """out = v + mu (Work.y is scratch afterwards)."""
    if v.big:
        if s.mu_zero:
            mpz_swap(out, s.w.y)
        else:
            mpz_add(out, s.w.y, s.mu)
    else:
        mpz_set_ui(out, v.mag)
        if v.neg:
            mpz_neg(out, out)
        mpz_add(out, out, s.mu)


cdef int value_to_i64(State *s, Value *v, int64_t *out) noexcept nogil:
    """*out = v + mu, or DG_ERR_OVERFLOW when that is outside int64."""
    cdef uint64_t neg = <uint64_t>v.neg
    if not v.big and s.mu_small and v.mag <= <uint64_t>INT64_MAX + neg:
        # v is an int64 (-2**63 included), so v + mu fits or truly overflows; the sign is
        # applied without a branch on it (a coin flip): -mag is (mag ^ ~0) + 1 mod 2**64
        return DG_OK if dg_add_i64(<int64_t>((v.mag ^ (0 - neg)) + neg), s.mu64, out) else DG_ERR_OVERFLOW
    # beyond: exactly, on GMP (2**63 + mu fits for mu < 0)
    value_to_mpz(s, v, s.w.out)
    if not mpz_fits_slong_p(s.w.out):
        return DG_ERR_OVERFLOW
    out[0] = mpz_get_si(s.w.out)
    return DG_OK


cdef struct Stretch:
    # how long a GIL-free stretch runs: until STRETCH_NS have passed, by the clock, read after
    # 1, 2, 4, ... samples and then every CHECK_MAX: so Ctrl-C is seen within about 2 STRETCH_NS
    # however long a sample takes (parameters of millions of bits), at a negligible cost
    # when samples take nanoseconds.  Where a stretch ends changes no sample.
    int64_t deadline
    Py_ssize_t next_check, interval


cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef inline void stretch_start(Stretch *st, Py_ssize_t first=1) noexcept nogil:
    """A stretch whose clock is first read after `first` samples (then 2 first, 4 first, ...)."""
    st.deadline = now_ns() + STRETCH_NS
    st.next_check = first
    st.interval = first


cdef inline bint stretch_over(Stretch *st, Py_ssize_t i) noexcept nogil:
    """True when the stretch has run its time (checked only at sample counts next_check)."""
    if i < st.next_check:
        return False
    if now_ns() >= st.deadline:
        return True
    if st.interval < CHECK_MAX:
        st.interval *= 2
    st.next_check = i + st.interval
    return False


cdef int fill_native(State *s, char *out, bint is_bool, Py_ssize_t n,
                     Py_ssize_t *done) noexcept nogil:
    """Up to n samples into a bool or int64 buffer, for one stretch: *done of them; a status."""
    cdef Py_ssize_t i
    cdef Value v
    cdef int rc
    cdef Stretch st
    stretch_start(&st)
    done[0] = 0
    for i in range(n):
        if stretch_over(&st, i):
            return DG_OK
        if draw(s, &v) < 0:
            return s.rng.status
        if is_bool:
            (<cnp.npy_bool *>out)[i] = <cnp.npy_bool>v.mag
        else:
            rc = value_to_i64(s, &v, &(<int64_t *>out)[i])
            if rc != DG_OK:
                return rc
        done[0] = i + 1
    return DG_OK


cdef int fill_inversion(State *s, int64_t *out, Py_ssize_t n, Py_ssize_t *done) noexcept nogil:
    """fill_native for int64 by inversion: the same samples, drawn by dg_inv_fill /
    dg_blocked_fill (C loops, about a third faster than a draw per call through `draw`) in pieces
    between which the stretch's clock is read (first after INVERSION_FIRST_CHECK samples: a
    draw by inversion takes at most microseconds, and a small batch then runs in one piece),
    in two lanes when s.lanes; a draw past R's 64th bit (from the lane it belongs to), or a
    value outside int64 (mu far from 0), is finished here."""
    cdef Py_ssize_t i = 0, m, got
    cdef int rc = 0, lane = 0, status
    cdef bint failed
    cdef uint64_t y
    cdef dg_inv_pending pend
    cdef dg_rng *rng2
    cdef Value v
    cdef Stretch st
    stretch_start(&st, INVERSION_FIRST_CHECK)
    done[0] = 0
    while i < n:
        if stretch_over(&st, i):
            return DG_OK
        m = min(n - i, st.next_check - i) if st.next_check > i else 1
        rng2 = &s.rng2 if s.lanes else NULL
        if s.enveloped:
            got = <Py_ssize_t>dg_env_fill(&s.rng, rng2, s.phase, &s.env, s.mu64, out + i,
                                          <size_t>m, &rc, &pend, &lane)
        elif s.blocked:
            got = <Py_ssize_t>dg_blocked_fill(&s.rng, rng2, s.phase, &s.lb, s.mu64, out + i,
                                              <size_t>m, &rc, &pend, &lane)
        else:
            got = <Py_ssize_t>dg_inv_fill(&s.rng, rng2, s.phase, &s.inv, s.mu64, out + i,
                                          <size_t>m, &rc, &pend, &lane)
        i += got
        done[0] = i
        s.phase ^= got & 1
        if rc == 0:
            continue
        if rc == DG_ERR_OVERFLOW:
            return rc
        if lane:                    # the sample is lane 1's: finish it from rng2's bits
            swap_lanes(s)
        if rc != DG_INV_UNDECIDED:
            failed = True
        elif s.enveloped:           # handed back whole (dg_env_draw_signed): step by step
            failed = envelope_draw(s, &v) < 0
        else:                       # sample i, from R's 65th bit on
            failed = magnitude_past_64(s, &pend, &y) < 0 or signed(s, y, &v) < 0
        status = s.rng.status
        if lane:                    # (the lanes back in place, failed or not)
            swap_lanes(s)
        if failed:
            return status
        rc = value_to_i64(s, &v, &out[i])
        if rc != DG_OK:
            return rc
        i += 1
        done[0] = i
        s.phase ^= 1
    return DG_OK


cdef inline void swap_lanes(State *s) noexcept nogil:
    """Exchanges the two lanes' sources (the steps past bit 64 read s.rng)."""
    cdef dg_rng t = s.rng
    s.rng = s.rng2
    s.rng2 = t


cdef int fill_mpz(State *s, mpz_t *out, Py_ssize_t n, Py_ssize_t *done) noexcept nogil:
    """Up to n samples into GMP integers, for one stretch: *done of them; a status."""
    cdef Py_ssize_t i
    cdef Value v
    cdef Stretch st
    stretch_start(&st)
    done[0] = 0
    for i in range(n):
        if stretch_over(&st, i):
            return DG_OK
        if draw(s, &v) < 0:
            return s.rng.status
        value_to_mpz(s, &v, out[i])
        done[0] = i + 1
    return DG_OK


include "_bit_sources.pxi"

# --------------------------------------------------------------------------
# Python integers <-> GMP
# --------------------------------------------------------------------------

cdef int int_to_mpz(mpz_ptr z, object v) except -1:
    cdef bytes b
    if -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        mpz_set_si(z, <long>v)
        return 0
    a = -v if v < 0 else v
    b = a.to_bytes((a.bit_length() + 7) // 8, "big")
    mpz_import(z, len(b), 1, 1, 1, 0, <const char *>b)
    if v < 0:
        mpz_neg(z, z)
    return 0


cdef extern from "_pylong.h":
    object dg_int_from_limbs(const mp_limb_t *p, size_t n, int negative, int by_bytes)
    int DG_INT_DIGITS


cdef object mpz_to_int(mpz_srcptr z, bint by_bytes=False):
    if mpz_fits_slong_p(z):
        return PyLong_FromLong(mpz_get_si(z))
    return dg_int_from_limbs(mpz_limbs_read(z), mpz_size(z), mpz_sgn(z) < 0, by_bytes)


#: Whether this Python has _pylong.h's digit writer (CPython < 3.12)
INT_DIGITS = bool(DG_INT_DIGITS)


def int_roundtrip(v, bint by_bytes=False):
    """v through GMP and back (int_to_mpz, mpz_to_int), by CPython's byte conversion when
    by_bytes, else the fastest path this Python has: for tests."""
    cdef mpz_t z
    mpz_init(z)
    try:
        int_to_mpz(z, v)
        return mpz_to_int(z, by_bytes)
    finally:
        mpz_clear(z)


# --------------------------------------------------------------------------
# The tables (_tables.pxi)
# --------------------------------------------------------------------------

include "_tables.pxi"

include "_os_chacha.pxi"

include "_job.pxi"

# ---- the jobs of small calls, kept per thread -------------------------------------------
# Setting a job up (its parameters in GMP, Algorithm 2's thresholds, the inversion's table
# found) costs 2-5 us, most of a one-sample call.  So each thread keeps the jobs of its
# last JOB_CACHE parameter sets drawn from the OS into an int64 or bool array, keyed on the
# exact integers (num, den, mu) and the options, and starts each call with a fresh stream of
# OS bits (restart_os); the words read are zeroed when the call ends (wipe).  A job set up
# is a function of its key only: what it draws is as if made anew.  Per thread, so no job is
# shared; a forked child may inherit its parent's, which hold no unread bits.  The lean
# calls from a dgauss.ChaCha20 keep theirs likewise, keyed also on the ChaChaState they
# read (the calling thread's of that ChaCha20, its _state()): each call starts fresh
# streams on that state (restart_keyed), so another ChaCha20, another thread's state or a
# forked child's (a new state: _state() checks the process id) never finds the job, and a
# reseed (the same state, forgotten) keys afresh on the call's first read.

JOB_CACHE = 8
_job_local = _threading.local()


cdef dict _thread_jobs():
    """This thread's cached jobs (a dict from key to _Job, oldest first)."""
    try:
        return _job_local.jobs
    except AttributeError:
        _job_local.jobs = {}
        return _job_local.jobs


def first_read(int kind, object num, object den, object mu, object method, Py_ssize_t n):
    """For tests: (OS bits its last call read, the samples it drew, the words of each lane's
    first OS read for n samples) of this thread's cached job for these arguments (None:
    none cached)."""
    cdef _Job job = _thread_jobs().get((kind, num, den, mu, HIGH_BITS, True, method))
    if job is None:
        return None
    return job.last_bits, job.last_samples, job.first_read(n)


def cached_jobs():
    """For tests: the keys of this thread's cached jobs, oldest first, and how many words of
    their OS buffers are not zero (0: every word read was wiped)."""
    cdef _Job job
    jobs = _thread_jobs()
    return list(jobs), sum((<_Job>job).nonzero_words() for job in jobs.values())


cdef _Job _new_job(int kind, object num, object den, object mu, object source,
                   unsigned long high_bits, bint fixed_point, object method, Py_ssize_t n):
    cdef _Job job = _Job()
    inversion = (kind in (KIND_DISCRETE_GAUSSIAN, KIND_DISCRETE_LAPLACE)
                 and _methods.use_inversion(kind == KIND_DISCRETE_GAUSSIAN, num, den,
                                              source, method, n))
    job.setup(kind, num, den, mu, source, high_bits, fixed_point, inversion, n)
    return job


cdef _Job _kept_job(dict jobs, tuple key, Py_ssize_t n, object source=None):
    """This thread's job for `key` (kind, num, den, mu, high_bits, fixed_point, method, and
    for a dgauss.ChaCha20 `source` the state it reads), taken out of its cache and restarted
    on fresh bits (restart_os, or restart_keyed from the state), or a new one on `source`
    (None: the OS)."""
    cdef _Job job = jobs.pop(key, None)
    if job is not None:
        if source is None:
            job.restart_os(n)
        else:
            job.restart_keyed(n)
        return job
    return _new_job(key[0], key[1], key[2], key[3], source, key[4], key[5], key[6], n)


cdef _keep_job(dict jobs, tuple key, _Job job):
    if len(jobs) >= JOB_CACHE:
        del jobs[next(iter(jobs))]
    jobs[key] = job


cdef tuple _lean_key(int kind, object num, object den, object mu, object method,
                     object source):
    """The key of a lean call's kept job: for a dgauss.ChaCha20 `source`, with the calling
    thread's state of it (None: the OS)."""
    if source is None:
        return (kind, num, den, mu, HIGH_BITS, True, method)
    return (kind, num, den, mu, HIGH_BITS, True, method, source._state())


def draw_one(int kind, object num, object den, object mu, object method, object source=None):
    """One sample drawn into int64 from the OS (`source` None) or from a dgauss.ChaCha20,
    returned as a Python int: the same as fill(kind, num, den, mu, source, out,
    method=method) of a one-element int64 `out`, without the array (the lean path of a
    scalar call; the caller checked the parameters, resolved `method` and that the law is
    drawn into int64)."""
    cdef int64_t value = 0
    cdef dict jobs = _thread_jobs()
    cdef tuple key = _lean_key(kind, num, den, mu, method, source)
    cdef _Job job = _kept_job(jobs, key, 1, source)
    try:
        job.run_into(<char *>&value, 1, False)
    finally:
        job.wipe()
    _keep_job(jobs, key, job)
    return value


def lean_array(int kind, object num, object den, object mu, object source, Py_ssize_t n,
               object method):
    """A new int64 array of `n` >= 1 samples drawn with this thread's kept job (the lean path
    of a batch) from the OS (`source` None) or a dgauss.ChaCha20: the samples fill(kind,
    num, den, mu, source, out, method=method) draws into a new array of `n` from the same
    stream or the same state of the ChaCha20; `method` resolved, the parameters checked and
    the law drawn into int64 (the caller's)."""
    if n < 1 or source is not None and not isinstance(source, _sources.KeyedSource):
        raise ValueError("lean_array needs n >= 1 and the OS or a dgauss.ChaCha20")
    cdef cnp.npy_intp size = n
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &size, cnp.NPY_INT64, 0)
    _kept_fill(_lean_key(kind, num, den, mu, method, source), out, source)
    return out


cdef object _kept_fill(tuple key, cnp.ndarray out, object source):
    """Fill `out` with this thread's kept job for `key` (_kept_job: `source` None, the OS,
    or a dgauss.ChaCha20), the words read zeroed after; the job goes back to the cache
    unless the fill raised.  Returns the number of random bits consumed."""
    cdef dict jobs = _thread_jobs()
    cdef _Job job = _kept_job(jobs, key, out.shape[0], source)
    job.ahead_ok = source is None  # one call's own stream of the OS: reads ahead
    try:
        job.run(out)
        used = dg_bits_used(&job.s.rng) + (dg_bits_used(&job.s.rng2) if job.s.lanes else 0)
        job.read_per_sample(out.shape[0])
    finally:
        job.wipe()
    _keep_job(jobs, key, job)  # (an error above drops the job: it is not put back)
    return used


cdef extern from *:
    bint dg_add_overflow "__builtin_add_overflow" (int64_t a, int64_t b, int64_t *out) nogil


cdef Py_ssize_t add_checked(int64_t *o, const int64_t *v, Py_ssize_t n) noexcept nogil:
    """o += v over n values, unless a sum leaves int64: then o is restored (the sums before it
    fit, so subtracting gives each back exactly) and that first index returned; else -1."""
    cdef Py_ssize_t i, j
    cdef int64_t total
    for i in range(n):
        if dg_add_overflow(o[i], v[i], &total):
            for j in range(i):
                o[j] -= v[j]
            return i
        o[i] = total
    return -1


def noised_int64(int kind, object num, object den, object mu, object method,
                 cnp.ndarray values):
    """(out, bad): a new C-ordered int64 array of ``values``' shape (int64, at least one
    value) holding values + noise drawn from the OS as fill(kind, num, den, mu, None, out,
    method=method) draws a batch that size, in C order (the mechanisms' lean release: the
    caller checked the parameters and resolved ``method``), and bad = -1; or, when a sum
    leaves int64, out holding the noise alone and bad the first such index, in C order
    (the caller raises)."""
    if cnp.PyArray_TYPE(values) != cnp.NPY_INT64:
        raise ValueError("values must be an int64 array")
    if not cnp.PyArray_IS_C_CONTIGUOUS(values):
        values = np.ascontiguousarray(values)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(values), bad
    if n < 1:
        raise ValueError("values must hold at least one value")
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(values), cnp.PyArray_DIMS(values),
                                             cnp.NPY_INT64, 0)
    cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
    cdef const int64_t *v = <const int64_t *>cnp.PyArray_DATA(values)
    cdef dict jobs = _thread_jobs()
    cdef tuple key = (kind, num, den, mu, HIGH_BITS, True, method)
    cdef _Job job = _kept_job(jobs, key, n)
    try:
        job.run_into(<char *>o, n, False)
        job.read_per_sample(n)
    finally:
        job.wipe()
    _keep_job(jobs, key, job)
    with nogil:
        bad = add_checked(o, v, n)
    return out, bad


def fill(int kind, object num, object den, object mu, object source, cnp.ndarray out,
         object next_slice=None, *, unsigned long high_bits=HIGH_BITS, bint fixed_point=True,
         method="rejection"):
    """Fill the 1-D contiguous array `out` (int64, bool or object) with samples.

    kind: BERNOULLI_EXP (parameter gamma = num/den), LAPLACE (scale num/den) or
    GAUSSIAN (sigma^2 = num/den); num/den reduced, validated by the caller.
    mu is added to each sample (ignored for BERNOULLI_EXP).  source is None
    for the OS CSPRNG, a numpy.random.BitGenerator (its lock is held for the
    whole call), or a testing Tape / DecisionTape (dgauss.testing).  With
    `next_slice` (OS source only), only the slices out[start:stop] it returns
    are filled, one after another from one bit stream, until it returns None:
    threads sharing one next_slice share out the work as they go; once its `stopped` (if
    it has one) is true (another thread failed or saw Ctrl-C) a slice ends at its next
    stretch, its rest unfilled.  Returns the number of random bits consumed.

    method="inversion" draws the discrete Gaussian or Laplace by inversion against its
    thresholds (dgauss._inversion; the parameter must be one dgauss._methods.resolve allows,
    and the source one of bits, not a DecisionTape); "rejection" runs Algorithms 2-3; "auto"
    is resolved for len(out) samples.

    For tests, per call: `high_bits` < HIGH_BITS makes Algorithm 2 split U of smaller t
    (it changes which bits are read, as dgauss.reference.HIGH_BITS does for the oracle), and
    fixed_point=False computes every digit word by GMP alone (the same words).
    """
    if out.ndim != 1 or not out.flags.c_contiguous:
        raise ValueError("out must be a 1-D C-contiguous array")
    if out.dtype.kind not in "Oib" or (out.dtype.kind == "i" and out.dtype.itemsize != 8):
        raise TypeError("out must have dtype int64, bool or object")
    if next_slice is not None and not (
            source is None or isinstance(source, (_sources.ScriptedOS, _sources.KeyedSource))):
        raise ValueError("next_slice needs source=None (the OS CSPRNG) or a dgauss.ChaCha20")
    split_bits(1, high_bits)        # checks high_bits
    cdef _Job job
    if source is None and next_slice is None and out.dtype.kind != "O" and method != "auto":
        # a job kept by this thread for this key was set up (and method checked) as it would
        # be now: "inversion" or "rejection" is resolved without the batch's size
        return _kept_fill((kind, num, den, mu, high_bits, fixed_point, method), out, None)
    job = _new_job(kind, num, den, mu, source, high_bits, fixed_point, method, out.shape[0])
    job.ahead_ok = next_slice is None and (
        source is None or isinstance(source, _sources.ScriptedOS) and source.read_ahead)
    if isinstance(source, np.random.BitGenerator):
        with source.lock:
            job.run(out)
        return dg_bits_used(&job.s.rng)
    try:
        if next_slice is None:
            job.run(out)
        else:
            job.halt = next_slice if hasattr(next_slice, "stopped") else None
            for start, stop in iter(next_slice, None):
                job.run(out[start:stop])
    finally:
        if isinstance(source, _sources.Tape):
            source.position = job.tape.pos
    return dg_bits_used(&job.s.rng) + (dg_bits_used(&job.s.rng2) if job.s.lanes else 0)


def object_chunk(int kind, object num, object den, object mu=0):
    """Samples per stretch into an object array for these parameters: for tests."""
    cdef _Job job = _Job()
    job.setup(kind, num, den, mu, None, HIGH_BITS, True)
    return job.obj_chunk




def add_int64_checked(cnp.ndarray out, cnp.ndarray values):
    """out += values for 1-D C-contiguous int64 arrays of one length, in one pass, unless a
    sum leaves int64: then `out` is restored and the first such index returned; else -1."""
    if (out.ndim != 1 or values.ndim != 1 or out.shape[0] != values.shape[0]
            or out.dtype != np.int64 or values.dtype != np.int64
            or not out.flags.c_contiguous or not values.flags.c_contiguous):
        raise ValueError("out and values must be 1-D C-contiguous int64 arrays of one length")
    cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
    cdef const int64_t *v = <const int64_t *>cnp.PyArray_DATA(values)
    cdef Py_ssize_t n = out.shape[0], bad
    with nogil:
        bad = add_checked(o, v, n)
    return bad
