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

from dgauss import _chacha, _inversion, _kinds, _sources

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
    J(b) digits are 1); past them, exp(-gamma)'s digits on GMP (128-bit fixed point where it
    decides them)."""
    cdef Params *p = &s.p
    cdef Work *w = &s.w
    cdef unsigned j = s.env.ones[b] if b < s.env.nones else s.env.ones_past, i
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


cdef int fill_bitgen(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Words from a NumPy BitGenerator, one next_uint64 per word."""
    cdef bitgen_t *bg = <bitgen_t *>ctx
    cdef size_t i
    for i in range(n):
        words[i] = bg.next_uint64(bg.state)
    return DG_OK


cdef struct TapeWords:
    const uint64_t *words
    size_t count, pos

cdef int fill_tape(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Words from a testing Tape (its bit budget stops reads past its last bit)."""
    cdef TapeWords *tape = <TapeWords *>ctx
    cdef size_t i
    for i in range(n):
        if tape.pos == tape.count:
            return DG_ERR_EXHAUSTED
        words[i] = tape.words[tape.pos]
        tape.pos += 1
    return DG_OK


cdef int fill_refuse(void *ctx, uint64_t *words, size_t n) noexcept nogil:
    """Decision mode reads no bits: any read is a sampler bug."""
    return DG_ERR_RAW_BITS


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
# One call
# --------------------------------------------------------------------------

_EXP_E = {}     # (t, r) -> floor(2**128 exp(-2**r / t)), the base of Algorithm 2's tables
_EXP_E_MAX = 256


cdef object _exp_e(object t, unsigned long r):
    """floor(2**128 exp(-2**r / t)) (GMP), remembered for the last few (t, r)."""
    cdef mpz_t z, n, d
    e = _EXP_E.get((t, r))
    if e is None:
        mpz_init(z)
        mpz_init(n)
        mpz_init(d)
        try:
            mpz_set_ui(n, 1)
            mpz_mul_2exp(n, n, r)
            int_to_mpz(d, t)
            dg_exp_neg_floor_mpz(z, n, d, 128)
            e = mpz_to_int(z)
        finally:
            mpz_clear(z)
            mpz_clear(n)
            mpz_clear(d)
        if len(_EXP_E) >= _EXP_E_MAX:
            _EXP_E.clear()
        _EXP_E[(t, r)] = e
    return e


#: Algorithm 2 draws U's top HIGH_BITS bits H first and its low bits L last.
HIGH_BITS = 12


def split_bits(t, high_bits=HIGH_BITS):
    """r, the number of U's low bits that Algorithm 2 reads last, for t >= 1 (with U's top
    `high_bits` bits first; tests lower it to split small t)."""
    if not 1 <= high_bits <= HIGH_BITS:
        raise ValueError(f"high_bits must be in [1, {HIGH_BITS}], got {high_bits!r}")
    return max(0, (t - 1).bit_length() - high_bits)


cdef uint64_t *_laplace_setup(LaplaceParams *lp, object t, unsigned long high_bits,
                              bint fixed_point) except NULL:
    """U = H 2**r + L and the table of D's first factor: returns its `blocks` words (zeroed,
    filled on first use), which the caller frees."""
    cdef uint64_t *words
    r = split_bits(t, high_bits)        # Python ints here: r may pass 64
    lp.r = r
    lp.blocks = ((t - 1) >> r) + 1
    if r == 0:
        lp.t_k = (t - 1).bit_length()                   # t > INVERSION_MAX >= 2: k >= 1
        lp.t_p = (t - 1) << (64 - lp.t_k)
    if r > 0 and not lp.t_small:
        lp.split.r = r
        lp.split.kh = (t - 1).bit_length() - r
        lp.split.top = lp.blocks - 1
        int_to_mpz(lp.split.low_digits, (t - 1) & ((1 << r) - 1))
    e = _exp_e(t, r)
    words = <uint64_t *>calloc(lp.blocks, sizeof(uint64_t))
    if words == NULL:
        raise MemoryError()
    dg_exp_table_init(&lp.exp_h, lp.T, r, e >> 64, e & 0xFFFFFFFFFFFFFFFF, words, fixed_point)
    return words


def exp_neg_floor(uint64_t n, uint64_t d, unsigned long k):
    """floor(2**k exp(-n/d)) for n >= 0, d >= 1, n/d <= 2**16 (for tests of the digits the core uses)."""
    cdef mpz_t z
    if d == 0 or n // d > 2**16:
        raise ValueError("need n >= 0, d >= 1, n/d <= 2**16")
    mpz_init(z)
    dg_exp_neg_floor(z, n, d, k)
    v = mpz_to_int(z)
    mpz_clear(z)
    return v


def exp_neg_prefix(n, d, bint fixed_point=True):
    """floor(2**64 exp(-n/d)) for integers 0 < n <= d, as the core computes it (128-bit
    fixed point, GMP when that cannot decide, or GMP alone when not fixed_point; words or
    GMP integers): for tests."""
    cdef mpz_t zn, zd
    if not 0 < n <= d:
        raise ValueError("need 0 < n <= d")
    if d < 2**64:
        return dg_exp_neg_prefix(n, d, fixed_point)
    mpz_init(zn)
    mpz_init(zd)
    try:
        int_to_mpz(zn, n)
        int_to_mpz(zd, d)
        return dg_exp_neg_prefix_mpz(zn, zd, fixed_point)
    finally:
        mpz_clear(zn)
        mpz_clear(zd)


cdef inline dg_u128 _u128(v):
    return (<dg_u128>(<uint64_t>(v >> 64)) << 64) | <uint64_t>(v & 0xFFFFFFFFFFFFFFFF)


def exp_neg_prefix_fix(x_fix, slack=1):
    """The fixed-point step alone: floor(2**64 exp(-x)) for every x in
    [x_fix, x_fix + slack) / 2**128, or None when it cannot decide: for tests."""
    cdef uint64_t w
    if not 0 <= x_fix < 2**128:
        raise ValueError("x_fix must be in [0, 2**128)")
    if not 1 <= slack < 2**128:
        raise ValueError("slack must be in [1, 2**128)")
    if dg_exp_neg_prefix_fix(_u128(x_fix), _u128(slack), &w):
        return w
    return None


def geometric_thresholds(uint64_t t, bint fixed_point=True):
    """Algorithm 2's inversion thresholds floor(2**64 exp(-x/t)), x = 1 .. K (the last
    non-zero), as the core computes them (fixed point with a GMP fallback, or GMP alone
    when not fixed_point): for tests."""
    cdef dg_geometric_table g
    cdef uint64_t *thr
    if not 1 <= t <= DG_INVERSION_MAX:
        raise ValueError(f"t must be in [1, {DG_INVERSION_MAX}]")
    thr = <uint64_t *>malloc(dg_geometric_table_size(t) * sizeof(uint64_t))
    if thr == NULL:
        raise MemoryError()
    try:
        e = _exp_e(t, 0)
        dg_geometric_table_init(&g, t, e >> 64, e & 0xFFFFFFFFFFFFFFFF, thr, fixed_point)
        return [thr[x] for x in range(1, g.count + 1)]
    finally:
        free(thr)


def exp_table(t, h_values, bint fixed_point=True):
    """The words floor(2**64 exp(-H 2**r / t)) of Algorithm 2's table for t (r = split_bits(t))
    at the given H (1 <= H < blocks), as the core computes them (fixed point with a GMP
    fallback, or GMP alone when not fixed_point): for tests."""
    cdef LaplaceParams lp
    cdef uint64_t *words = NULL
    if not t > DG_INVERSION_MAX:
        raise ValueError(f"t must be above {DG_INVERSION_MAX}")
    mpz_init(lp.T)
    mpz_init(lp.split.low_digits)
    try:
        int_to_mpz(lp.T, t)
        lp.t_small = _fits_word(lp.T)
        words = _laplace_setup(&lp, t, HIGH_BITS, fixed_point)
        out = []
        for h in h_values:
            if not 1 <= h < lp.blocks:
                raise ValueError(f"H must be in [1, {lp.blocks})")
            out.append(dg_exp_table_prefix(&lp.exp_h, h))
        return out
    finally:
        mpz_clear(lp.T)
        mpz_clear(lp.split.low_digits)
        free(words)

class _BitsFailed(Exception):
    """The bit source failed under a Python step (its status says why)."""


cdef class _RngBits:
    """bit() for dgauss._inversion: the next bit of one call's stream (the GIL held)."""
    cdef dg_rng *rng

    def __call__(self):
        cdef int b = dg_bit(self.rng)
        if self.rng.status != DG_OK:
            raise _BitsFailed()
        return b


cdef class _InvTable:
    """The words and guide of one parameter's inversion table (arrays the C table points into)."""
    cdef readonly object thr, guide
    cdef readonly uint64_t count
    cdef readonly unsigned guide_bits
    cdef readonly bint fixed_point     # the words came from dg_gauss_words (else _inversion)

    @property
    def nbytes(self):
        return self.thr.nbytes + self.guide.nbytes


#: Inversion tables by (sigma^2, fixed_point), least recently used first, at most
#: INV_CACHE_BYTES in all: built once per parameter, shared by threads and calls.
_INV_TABLES = OrderedDict()
_INV_LOCK = _threading.Lock()
INV_CACHE_BYTES = 64 << 20


cdef dg_u128 _exp_floor_128(object n, object d) except? 0:
    """floor(2**128 exp(-n/d)) (GMP), or 0 when exp(-n/d) < 2**-128 (n/d >= 0.7 * 128)."""
    cdef mpz_t z, a, b
    if 10 * n >= 7 * 128 * d:
        return 0
    mpz_init(z)
    mpz_init(a)
    mpz_init(b)
    try:
        int_to_mpz(a, n)
        int_to_mpz(b, d)
        dg_exp_neg_floor_mpz(z, a, b, 128)
        return _u128(mpz_to_int(z))
    finally:
        mpz_clear(z)
        mpz_clear(a)
        mpz_clear(b)


cdef object _words_fixed(object key):
    """A table's words (thr[0] .. thr[K + 1]) in 128-bit fixed point (dg_gauss_words,
    dg_laplace_direct_words), or None where that does not apply or cannot decide a word."""
    cdef cnp.ndarray thr
    cdef int64_t count
    cdef dg_u128 e, q
    cdef uint64_t n = 0, d = 0, cap
    cdef uint64_t *words
    family, num, den = key[0], key[1], key[2]
    if not (num < 2**62 and den < 2**62):
        return None
    n, d = num, den
    if family == "gaussian":
        if num > den << 24:
            return None
        e = _exp_floor_128(den, 2 * num)
        q = _exp_floor_128(den, num)
        cap = 16 * (_math.isqrt(num // den) + 1) + 64
        thr = np.empty(cap, dtype=np.uint64)
        words = <uint64_t *>cnp.PyArray_DATA(thr)
        with nogil:
            count = dg_gauss_words(n, d, e, q, 2, words, cap)
        if count < 0:
            return None
    else:
        # T_x = 2 exp(-x/scale) / (1 + p) is below 2**-64 when x/scale >= 46 (> 65 ln 2)
        cap = 46 * (num // den + 1)
        e = _exp_floor_128(den, num)                        # p = exp(-1/scale), scale = num/den
        thr = np.empty(cap + 2, dtype=np.uint64)
        words = <uint64_t *>cnp.PyArray_DATA(thr)
        with nogil:
            count = dg_laplace_direct_words(n, d, e, cap, words)
    return thr[:count + 2].copy()


cdef object _floors(object key):
    """The same words from dgauss._inversion's exact integer bounds."""
    family, num, den = key[0], key[1], key[2]
    if family == "gaussian":
        return _inversion.gaussian_floors(Fraction(num, den), 64).words
    floors = _inversion.LaplaceFloors(Fraction(num, den), 64)
    return [floors.word(x) for x in range(1, floors.first_at_most(0))]


cdef class _BlockedTable:
    """The tables of a blocked inversion (dg_blocked, docs/contract.md item 9): the first step's
    words `thr` and its guide; the discrete Laplace's one residual `rthr` and its guide, or the
    discrete Gaussian's residual of each block, `rwords` (block b's L words at b L); L = 2**k,
    `nb` blocks (None: no end), the Laplace's `cut` c."""
    cdef readonly object thr, guide, rthr, rguide, rwords, nb
    cdef readonly uint64_t count, k, cut
    cdef readonly unsigned guide_bits, rguide_bits
    cdef readonly bint fixed_point     # the words came from 128-bit fixed point (and GMP)

    @property
    def nbytes(self):
        return sum(a.nbytes for a in (self.thr, self.guide, self.rthr, self.rguide, self.rwords)
                   if a is not None)

    cdef void attach(self, dg_blocked *lb):
        """Points lb into the arrays (the guides were filled when the table was built)."""
        memset(lb, 0, sizeof(dg_blocked))
        dg_inv_attach(&lb.stage, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                      <const unsigned int *>cnp.PyArray_DATA(self.guide), 64 - self.guide_bits)
        if self.rwords is None:
            dg_inv_attach(&lb.resid, <const uint64_t *>cnp.PyArray_DATA(self.rthr),
                          (1 << self.k) - 1, <const unsigned int *>cnp.PyArray_DATA(self.rguide),
                          64 - self.rguide_bits)
            lb.rwords = NULL
            lb.nb = UINT64_MAX
        else:
            lb.rwords = <const uint64_t *>cnp.PyArray_DATA(self.rwords)
            lb.rcount = (1 << self.k) - 2
            lb.nb = self.nb
        lb.k = <unsigned>self.k

    cdef void set_stage(self, object thr):
        """The first step's words (thr[0] = 2**64 - 1 .. thr[K + 1] = 0) and their guide."""
        cdef dg_inv_table scratch
        self.thr = thr
        self.count = thr.size - 2
        self.guide_bits = BLOCKED_GUIDE_BITS
        self.guide = np.empty(1 << self.guide_bits, dtype=np.uint32)
        dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                    <unsigned int *>cnp.PyArray_DATA(self.guide), self.guide_bits)


cdef object _aligned_u128(Py_ssize_t count):
    """An array of `count` dg_u128 (as pairs of uint64), 16-byte aligned."""
    a = np.empty(2 * count, dtype=np.uint64)
    if cnp.PyArray_DATA(a) == NULL or (<size_t>cnp.PyArray_DATA(a)) % 16:
        raise MemoryError("an inversion table is not 16-byte aligned")
    return a


cdef _BlockedTable _laplace_blocked_table(object num, object den, bint fixed_point):
    """The _BlockedTable of Lap_Z(0, num/den), LAPLACE_BLOCKED_MIN <= num/den <= 2**20: its words
    by dg_lap_blocked_words (num, den < 2**62 and fixed_point), or where that cannot decide
    one, from dgauss._inversion's exact bounds."""
    cdef _BlockedTable g = _BlockedTable.__new__(_BlockedTable)
    cdef dg_inv_table scratch
    cdef int64_t count = -1
    cdef uint64_t n, d, cap, c
    cdef unsigned k
    cdef dg_u128 e1, pl
    cdef uint64_t *thr_p
    cdef uint64_t *rthr_p
    cdef dg_u128 *pu_p
    scale = Fraction(num, den)
    k, c = _inversion.laplace_blocks(scale)
    big_l = 1 << k
    g.k, g.cut, g.nb = k, c, None
    cap = 2 * 46 * (num // (den * big_l) + 1) + 4
    thr = np.empty(cap, dtype=np.uint64)
    rthr = np.empty(big_l + 1, dtype=np.uint64)
    if fixed_point and num < 2**62 and den < 2**62:
        n, d = num, den
        e1 = _exp_floor_128(den, num)
        pl = _exp_floor_128(den << k, num)
        pu = _aligned_u128(big_l + 1)
        thr_p = <uint64_t *>cnp.PyArray_DATA(thr)
        rthr_p = <uint64_t *>cnp.PyArray_DATA(rthr)
        pu_p = <dg_u128 *>cnp.PyArray_DATA(pu)
        with nogil:
            count = dg_lap_blocked_words(n, d, e1, pl, k, c, thr_p, cap, rthr_p, pu_p)
        if count == -2:
            raise RuntimeError("dg_lap_blocked_words ran out of room (a bug: cap is too small)")
    g.fixed_point = count >= 0
    if count >= 0:
        thr = thr[:count + 2].copy()
    else:
        floors = _inversion.LaplaceFloors(scale, 64, blocks=(k, c))
        thr = np.array([2**64 - 1, *[floors.word(s) for s in range(1, floors.first_at_most(0))], 0],
                       dtype=np.uint64)
        rthr = np.array([2**64 - 1, *_inversion.residual_floors(scale, 64).words, 0],
                        dtype=np.uint64)
    g.set_stage(thr)
    g.rthr = rthr
    g.rguide_bits = min(dg_inv_guide_bits(big_l - 1), <unsigned>RESIDUAL_GUIDE_BITS)
    g.rguide = np.empty(1 << g.rguide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(g.rthr), big_l - 1,
                <unsigned int *>cnp.PyArray_DATA(g.rguide), g.rguide_bits)
    return g


cdef _BlockedTable _gauss_blocked_table(object num, object den, bint fixed_point):
    """The _BlockedTable of N_Z(0, num/den), GAUSSIAN_BLOCKED_MIN <= num/den <= 2**24: its words
    by dg_gauss_blocked_words (num, den < 2**62 and fixed_point), or where that cannot decide
    a first-step word, from dgauss._inversion's exact bounds."""
    cdef _BlockedTable g = _BlockedTable.__new__(_BlockedTable)
    cdef int64_t count = -1
    cdef uint64_t n, d, cap, nb, tcap
    cdef unsigned k
    cdef dg_u128 e, q
    cdef uint64_t *thr_p
    cdef uint64_t *rw_p
    cdef dg_u128 *tlo_p
    cdef dg_u128 *thi_p
    sigma2 = Fraction(num, den)
    k, nb = _inversion.gaussian_blocks(sigma2)
    big_l = 1 << k
    g.k, g.cut, g.nb = k, 0, nb
    root = _math.isqrt(num // den) + 1
    cap = 2 * nb + 12 * root + 64
    tcap = 12 * root + 64
    thr = np.empty(cap, dtype=np.uint64)
    rwords = np.empty(nb * big_l, dtype=np.uint64)
    if fixed_point and num < 2**62 and den < 2**62:
        n, d = num, den
        e = _exp_floor_128(den, 2 * num)
        q = _exp_floor_128(den, num)
        tlo, thi = _aligned_u128(tcap), _aligned_u128(tcap)
        thr_p = <uint64_t *>cnp.PyArray_DATA(thr)
        rw_p = <uint64_t *>cnp.PyArray_DATA(rwords)
        tlo_p = <dg_u128 *>cnp.PyArray_DATA(tlo)
        thi_p = <dg_u128 *>cnp.PyArray_DATA(thi)
        with nogil:
            count = dg_gauss_blocked_words(n, d, e, q, k, nb, thr_p, cap, rw_p, tlo_p, thi_p, tcap)
        if count == -2:
            raise RuntimeError("dg_gauss_blocked_words ran out of room (a bug: cap is too small)")
    g.fixed_point = count >= 0
    if count >= 0:
        thr = thr[:count + 2].copy()
    else:
        thr = np.array(
            [2**64 - 1, *_inversion.gaussian_floors(sigma2, 64, blocks=(k, nb)).words, 0],
            dtype=np.uint64)
        for b in range(nb):
            rwords[b * big_l:(b + 1) * big_l] = [
                2**64 - 1, *_inversion.gaussian_residual_floors(sigma2, b, 64).words, 0]
    g.set_stage(thr)
    g.rwords = rwords
    return g


cdef class _EnvTable:
    """The tables of enveloped inversion (dg_env, docs/contract.md item 9): the block index's
    one-sided words `thr` and their guide, and `ones`, J(b) for b = 0 .. count (the
    Gaussian's; the Laplace's is one number, `ones_past`, for every b); L = 2**k."""
    cdef readonly object thr, guide, ones, cmul
    cdef readonly uint64_t count, k
    cdef readonly unsigned guide_bits, ones_past, cshift
    cdef readonly bint fixed_point     # the words came from 128-bit fixed point (and GMP)
    cdef readonly bint gaussian

    @property
    def nbytes(self):
        return self.thr.nbytes + self.guide.nbytes + self.ones.nbytes

    cdef void attach(self, dg_env *ev):
        """Points ev into the arrays (the guide was filled when the table was built)."""
        memset(ev, 0, sizeof(dg_env))
        dg_inv_attach(&ev.stage, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                      <const unsigned int *>cnp.PyArray_DATA(self.guide), 64 - self.guide_bits)
        ev.ones = <const uint8_t *>cnp.PyArray_DATA(self.ones)
        ev.nones = self.ones.size
        ev.ones_past = self.ones_past
        ev.k = <unsigned>self.k
        ev.gaussian = self.gaussian
        ev.cmul = _u128(self.cmul)
        ev.cshift = self.cshift


cdef object _env_words(object env, bint fixed_point):
    """The block index's words thr[0] .. thr[K + 1] of an Envelope: in 128-bit fixed point
    (dg_gauss_words one-sided, dg_geometric_words) with GMP for a word the bound leaves
    undecided, or None when dg_gauss_words cannot decide one."""
    cdef cnp.ndarray thr, undecided
    cdef int64_t count
    cdef uint64_t n, d, cap
    cdef dg_u128 e, q
    if not fixed_point:
        return None
    inner = env.inner
    if env.gaussian:
        # n/d >= inner, n, d < 2**62: only the bound on the sums' rest reads them
        d = 1 << 40
        n = -(-inner.numerator * d // inner.denominator)
        e = _exp_floor_128(inner.denominator, 2 * inner.numerator)
        q = _exp_floor_128(inner.denominator, inner.numerator)
        cap = 16 * (_math.isqrt(n // d) + 1) + 64
        thr = np.empty(cap, dtype=np.uint64)
        with nogil:
            count = dg_gauss_words(n, d, e, q, 1, <uint64_t *>cnp.PyArray_DATA(thr), cap)
        return None if count < 0 else thr[:count + 2].copy()
    # P[B >= x] = exp(-x/inner) is below 2**-64 when x/inner >= 45 (> 64 ln 2)
    cap = 45 * (inner.numerator // inner.denominator + 1)
    e = _exp_floor_128(inner.denominator, inner.numerator)
    thr = np.empty(cap + 2, dtype=np.uint64)
    undecided = np.zeros(cap + 2, dtype=np.uint8)
    with nogil:
        count = <int64_t>dg_geometric_words(e, cap, <uint64_t *>cnp.PyArray_DATA(thr),
                                            <uint8_t *>cnp.PyArray_DATA(undecided))
    for x in np.flatnonzero(undecided[1:count + 1]) + 1:
        thr[x] = _inversion.geometric_floor(inner, int(x), 64)
    while count > 0 and thr[count] == 0:   # an undecided last word may be 0
        count -= 1
    thr[count + 1] = 0
    return thr[:count + 2].copy()


cdef _EnvTable _env_table(object family, object num, object den, bint fixed_point):
    """The _EnvTable of N_Z(0, num/den) or Lap_Z(0, num/den) past blocked inversion's range:
    the words by _env_words, or from dgauss._inversion's exact bounds; J(b) for every b up to
    the table's count from closed-form breakpoints (J decreases in b)."""
    cdef _EnvTable g = _EnvTable.__new__(_EnvTable)
    cdef dg_inv_table scratch
    gaussian = family == "gaussian"
    env = _inversion.envelope(gaussian, Fraction(num, den))
    thr = _env_words(env, fixed_point)
    g.fixed_point = thr is not None
    if thr is None:
        floors = env.stage_floors(64)
        words = (floors.words if gaussian
                 else [floors.word(x) for x in range(1, floors.first_at_most(0))])
        thr = np.array([2**64 - 1, *words, 0], dtype=np.uint64)
    g.thr = thr
    g.count = thr.size - 2
    g.k = env.k
    g.guide_bits = ENV_GUIDE_BITS
    g.guide = np.empty(1 << g.guide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(g.thr), g.count,
                <unsigned int *>cnp.PyArray_DATA(g.guide), g.guide_bits)
    if gaussian:
        g.ones = _gaussian_ones(env, g.count + 1)
        g.ones_past = 0
    else:
        g.ones = np.zeros(0, dtype=np.uint8)
        g.ones_past = env.leading_ones(0)
    # gamma = m g, g = 1/(2 sigma^2) = d/(2n) or 1/scale = d/n: cmul = floor(2**(128 + s) g)
    # in [2**127, 2**128), s the least with 2**(s + 1) gn >= gd
    g.gaussian = gaussian
    gn, gd = den, (2 * num if gaussian else num)
    shift = max(0, gd.bit_length() - gn.bit_length() - 1)
    while shift > 0 and gn << shift >= gd:
        shift -= 1
    while gn << (shift + 1) < gd:
        shift += 1
    g.cshift = shift
    g.cmul = (gn << (128 + shift)) // gd
    if not (1 <= shift <= 127 and 2**127 <= g.cmul < 2**128):  # not reached: g in [2**-102, 2**-20]
        raise RuntimeError(f"enveloped inversion's scale factor 2**-{shift} is out of range")
    return g


def _gaussian_ones(env, count):
    """J(b), b = 0 .. count - 1, of an Envelope of the Gaussian (dgauss._inversion's
    Envelope.leading_ones): J(b) >= j exactly when 2**j (L - 1)(2Lb + L - 1) <= 2 sigma^2,
    that is b <= (2 sigma^2 / (2**j (L - 1)) - (L - 1)) / (2L), for j = 1 .. MAX_LEADING_ONES."""
    big_l = 1 << env.k
    n, d = env.param.numerator, env.param.denominator
    ones = np.zeros(count, dtype=np.uint8)
    for j in range(1, _inversion.MAX_LEADING_ONES + 1):
        # the largest b with 2**j (L - 1)(2Lb + L - 1) d <= 2n, or -1 if none
        top = (2 * n // ((1 << j) * (big_l - 1) * d) - (big_l - 1))
        last = top // (2 * big_l) if top >= 0 else -1
        if last < 0:
            break
        ones[:min(last + 1, count)] = j
    return ones


cdef object inv_table(object key, bint fixed_point):
    """The inversion table for key = ("gaussian", n, d) or ("laplace", n, d) (cached): words
    by 128-bit fixed point where that decides them, else from dgauss._inversion;
    fixed_point=False takes them all from there (the same words, for tests).  A Laplace
    of scale at least LAPLACE_BLOCKED_MIN, or a Gaussian of sigma^2 at least
    GAUSSIAN_BLOCKED_MIN, gets a _BlockedTable."""
    cdef _InvTable tab
    cdef dg_inv_table scratch
    key = (*key, fixed_point)
    with _INV_LOCK:
        found = _INV_TABLES.get(key)
        if found is not None:
            _INV_TABLES.move_to_end(key)
            return found
    param = Fraction(key[1], key[2])
    if param > (_inversion.GAUSSIAN_BLOCKED_MAX if key[0] == "gaussian"
                else _inversion.LAPLACE_BLOCKED_MAX):
        enveloped = _env_table(key[0], key[1], key[2], fixed_point)
        _cache(key, enveloped)
        return enveloped
    if key[0] == "laplace" and param >= _inversion.LAPLACE_BLOCKED_MIN:
        blocked = _laplace_blocked_table(key[1], key[2], fixed_point)
        _cache(key, blocked)
        return blocked
    if key[0] == "gaussian" and param >= _inversion.GAUSSIAN_BLOCKED_MIN:
        blocked = _gauss_blocked_table(key[1], key[2], fixed_point)
        _cache(key, blocked)
        return blocked
    thr = _words_fixed(key) if fixed_point else None
    tab = _InvTable.__new__(_InvTable)
    tab.fixed_point = thr is not None
    if thr is None:
        thr = np.array([2**64 - 1, *_floors(key), 0], dtype=np.uint64)
    tab.thr = thr
    tab.count = thr.size - 2
    if tab.count > DG_GUIDE_MAX_COUNT:     # not reached: dgauss._inversion.resolve bounds the tables
        raise RuntimeError(f"an inversion table of {tab.count} words is too long for its guide")
    tab.guide_bits = dg_inv_guide_bits(tab.count)
    tab.guide = np.empty(1 << tab.guide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(thr), tab.count,
                <unsigned int *>cnp.PyArray_DATA(tab.guide), tab.guide_bits)
    _cache(key, tab)
    return tab


cdef _cache(object key, object table):
    """Keeps `table` under `key`, dropping the least recently used past INV_CACHE_BYTES."""
    with _INV_LOCK:
        _INV_TABLES[key] = table
        total = sum(t.nbytes for t in _INV_TABLES.values())
        while total > INV_CACHE_BYTES and len(_INV_TABLES) > 1:
            total -= _INV_TABLES.popitem(last=False)[1].nbytes


def gauss_table(num, den, bint fixed_point=True):
    """The inversion table of N_Z(0, num/den)'s |X| (see inv_table): an _InvTable of every
    word, or from GAUSSIAN_BLOCKED_MIN on a _BlockedTable: for tests."""
    return inv_table(("gaussian", num, den), fixed_point)


def laplace_table(num, den, bint fixed_point=True):
    """The inversion table of Lap_Z(0, num/den)'s |X| (see inv_table): an _InvTable of every
    word, or from LAPLACE_BLOCKED_MIN on a _BlockedTable: for tests."""
    return inv_table(("laplace", num, den), fixed_point)


def inversion_word(num, den, uint64_t r, bint laplace=False, bint residual=False):
    """(bits needed or 65, the count of thresholds above r) that the table of N_Z(0, num/den)
    (or Lap_Z(0, num/den)) gives for R's 64 bits r; for blocked inversion, the first step's
    table, or with residual=True the Laplace's residual: for tests."""
    cdef dg_inv_table t
    cdef dg_blocked lb
    cdef uint64_t y
    table = laplace_table(num, den) if laplace else gauss_table(num, den)
    if isinstance(table, _BlockedTable):
        (<_BlockedTable>table).attach(&lb)
        if residual and lb.rwords != NULL:
            raise ValueError("a Gaussian's residuals are one per block: see _BlockedTable.rwords")
        need = dg_inv_word(&lb.resid if residual else &lb.stage, r, &y)
    else:
        tab = <_InvTable>table
        dg_inv_attach(&t, <const uint64_t *>cnp.PyArray_DATA(tab.thr), tab.count,
                      <const unsigned int *>cnp.PyArray_DATA(tab.guide), 64 - tab.guide_bits)
        need = dg_inv_word(&t, r, &y)
    return need, y


def laplace_word_exact(uint64_t num, uint64_t den, uint64_t x):
    """floor(2**64 T_x) of Lap_Z(0, num/den) by GMP alone (dg_laplace_word_exact, the fallback
    of the fixed-point words): for tests."""
    if den == 0 or num == 0 or x == 0:
        raise ValueError("need num, den, x >= 1")
    return dg_laplace_word_exact(num, den, x)


def gauss_resid_word_exact(uint64_t num, uint64_t den, uint64_t y0, unsigned k, uint64_t u):
    """floor(2**64 rho_{b,u}) of N_Z(0, num/den)'s blocked inversion, the residual of the block
    starting at y0 = 1 + Lb (L = 2**k), by GMP alone (dg_gauss_resid_word_exact, the fallback
    of the fixed-point words): for tests."""
    cdef uint64_t w = 0
    if num == 0 or den == 0 or y0 == 0 or not 2 <= k <= 16 or not 1 <= u <= (<uint64_t>1 << k) - 2:
        raise ValueError("need num, den, y0 >= 1, 2 <= k <= 16 and 1 <= u <= 2**k - 2")
    if dg_gauss_resid_word_exact(num, den, y0, k, u, &w) < 0:
        raise RuntimeError("the residual word was not decided with 2**16 bits")
    return w


def laplace_words(num, den, xs):
    """floor(2**64 T_x) for the x in xs as the table of Lap_Z(0, num/den), num/den below
    LAPLACE_BLOCKED_MIN, holds them (0 past its last word): for tests."""
    thr = (<_InvTable?>laplace_table(num, den)).thr
    return [int(thr[x]) if x < thr.size else 0 for x in xs]


cdef void _prefix(dg_os_script *script, cnp.ndarray words):
    """A ScriptedOS lane's first fake words (the source keeps the array alive)."""
    if words.size:
        script.prefix = <const uint64_t *>cnp.PyArray_DATA(words)
        script.nprefix = words.size


def os_reader():
    """How the OS source reads: "getrandom(3)" (the C library's for reads of up to 256 bytes,
    which from glibc 2.41 reads the kernel's vDSO where it has one, and the system call for
    larger ones), "getrandom(2)" (the system call) or "urandom"."""
    return ("urandom", "getrandom(2)", "getrandom(3)")[dg_os_reader() + 1]


cdef class ChaChaState:
    """One thread's state of a :class:`dgauss.ChaCha20` (csrc/dg_chacha.h): made unkeyed,
    keyed from the OS on first use.  Never shared between threads (the Python object keeps
    one per thread)."""
    cdef dg_chacha *st
    cdef dg_os_script script     # for tests: a scripted OS its keys come from (fail_keying)

    def __cinit__(self):
        self.st = dg_chacha_new()
        if self.st == NULL:
            raise MemoryError()

    def __dealloc__(self):
        dg_chacha_free(self.st)

    def forget(self):
        """Forget the key: the next fill keys afresh from the OS."""
        dg_chacha_forget(self.st)

    @property
    def keyed(self):
        return bool(self.st.keyed)

    @property
    def blocks_left(self):
        return self.st.blocks_left

    @blocks_left.setter
    def blocks_left(self, uint64_t value):  # for tests: bring the reseed near
        self.st.blocks_left = value

    def fail_keying(self, int errno_value):
        """For tests: the OS refuses its keys from now on (a scripted source failing with
        errno_value, through the loop the OS source reads with)."""
        memset(&self.script, 0, sizeof(self.script))
        self.script.fail_after = 0
        self.script.fail_count = 1 << 30
        self.script.fail_errno = errno_value
        self.st.key_fill = dg_fill_scripted
        self.st.key_ctx = &self.script

    def set_key(self, bytes key):
        """For tests: key it with these 32 bytes, as if the OS had given them."""
        cdef unsigned int words[8]
        if len(key) != 32:
            raise ValueError("key must be 32 bytes")
        for i in range(8):
            words[i] = int.from_bytes(key[4 * i:4 * i + 4], "little")
        dg_chacha_set_key(self.st, words)
        memset(words, 0, sizeof(words))

    def words(self, Py_ssize_t n):
        """For tests: the next n 64-bit words of this state's output."""
        out = np.zeros(n, dtype=np.uint64)
        cdef uint64_t *p = <uint64_t *>cnp.PyArray_DATA(out)
        cdef int rc
        with nogil:
            rc = dg_fill_chacha(self.st, p, <size_t>n)
        if rc != DG_OK:
            err = self.st.err or _errno.EIO
            raise OSError(err, "dgauss could not read randomness from the operating system: "
                          + _os.strerror(err))
        return out


def chacha20_blocks(bytes key, unsigned int counter, bytes nonce, Py_ssize_t nblocks):
    """For tests: ChaCha20 blocks (RFC 8439, section 2.3) as bytes."""
    cdef unsigned int k[8]
    cdef unsigned int nn[3]
    if len(key) != 32 or len(nonce) != 12 or nblocks < 0:
        raise ValueError("key must be 32 bytes, nonce 12, nblocks >= 0")
    for i in range(8):
        k[i] = int.from_bytes(key[4 * i:4 * i + 4], "little")
    for i in range(3):
        nn[i] = int.from_bytes(nonce[4 * i:4 * i + 4], "little")
    out = np.zeros(16 * nblocks, dtype=np.uint32)
    dg_chacha20_blocks(k, counter, nn, <unsigned int *>cnp.PyArray_DATA(out), <size_t>nblocks)
    return out.astype("<u4").tobytes()


cdef class _Job:
    """Everything one public call needs: parameters, scratch space, its bit stream (two, its
    lanes, for an int64 batch by inversion from the OS)."""
    cdef State s
    cdef uint64_t *buf
    cdef uint64_t *buf2         # the second lane's (State.lanes)
    cdef dg_os_ctx os_ctx, os_ctx2
    cdef dg_os_script script, script2   # a testing ScriptedOS's state for this call (each lane)
    cdef ChaChaState chacha     # a dgauss.ChaCha20's state for this thread (both lanes)
    cdef mpz_t *vals
    cdef TapeWords tape
    cdef dg_decider decider
    cdef uint64_t *exp_h    # Algorithm 2's table of digits
    cdef AcceptEntry *accept # Algorithm 3's cache of digits
    cdef uint64_t *geo_thr  # Algorithm 2's thresholds for the inversion
    cdef object source      # keeps a tape's arrays alive while C points into them
    cdef object table       # the table the inversion reads (kept alive while C points in)
    cdef object continuation    # dgauss._inversion.invert past R's 64th bit
    cdef object error       # the exception of a failed Python step (DG_ERR_CALLBACK)
    cdef Py_ssize_t obj_chunk   # samples per stretch into an object array, at most
    cdef Py_ssize_t nvals       # how many GMP integers vals has: obj_chunk, or fewer for a
                                # smaller array (a scalar inits one, not thousands)
    cdef size_t headroom        # bytes GMP may need during one stretch (reserve)
    cdef uint64_t last_bits     # OS bits its last call read, and how many samples it drew
    cdef uint64_t last_samples  # (0: none yet): restart_os sizes the first read by them

    def __cinit__(self):
        _work_init(&self.s.w)
        _params_init(&self.s.p)
        mpz_init(self.s.mu)
        mpz_init(self.decider.want_a)
        mpz_init(self.decider.want_b)
        self.buf = NULL
        self.buf2 = NULL
        self.vals = NULL
        self.nvals = 0
        self.exp_h = NULL
        self.accept = NULL
        self.geo_thr = NULL
        self.obj_chunk = 1

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.vals != NULL:
            for i in range(self.nvals):
                mpz_clear(self.vals[i])
            free(self.vals)
        free(self.buf)
        free(self.buf2)
        free(self.exp_h)
        free(self.accept)
        free(self.geo_thr)
        mpz_clear(self.decider.want_a)
        mpz_clear(self.decider.want_b)
        mpz_clear(self.s.mu)
        _params_clear(&self.s.p)
        _work_clear(&self.s.w)

    cdef int reserve(self) except -1:
        """MemoryError unless `headroom` bytes can be allocated now: GMP aborts the process when
        an allocation fails, so the memory its numbers may need is tried first, with the GIL
        held, before each stretch (and before the set-up's own arithmetic)."""
        cdef void *probe = malloc(self.headroom)
        if probe == NULL:
            raise MemoryError(
                f"dgauss needs about {self.headroom >> 20} MiB free for the exact arithmetic "
                "of these parameters and could not get it")
        free(probe)
        return 0

    cdef void restart_os(self, Py_ssize_t n):
        """Start a fresh stream of OS bits for the next call of a job set up for the OS
        (``source=None``) as a new job starts: nothing read before is read again, and the
        lanes' phase back at 0 (fill's per-thread jobs).  The first read is sized for ``n``
        samples at the bits per sample the job's last call read, plus a quarter (a read
        costs about as much as 2 KiB of bits: one read where the batch needs no more,
        rather than reads of 4, 8, 16, ... words), at least OS_FIRST_BLOCK words."""
        cdef size_t first = self.first_read(n)
        self.s.phase = 0
        self.os_ctx.err = 0
        dg_rng_init(&self.s.rng, dg_fill_os, &self.os_ctx, self.buf, OS_BUFFER_WORDS, first)
        if self.s.lanes:
            self.os_ctx2.err = 0
            dg_rng_init(&self.s.rng2, dg_fill_os, &self.os_ctx2, self.buf2, OS_BUFFER_WORDS,
                        first)
            if n >= 2 and self.last_samples > 0:  # both lanes will draw: one read for both
                dg_rng_preload_pair(&self.s.rng, &self.s.rng2, first)

    cdef size_t first_read(self, Py_ssize_t n):
        """The first read's words (each lane's) for ``n`` samples (restart_os): n samples
        at the last call's bits per sample, a quarter more, over the lanes, plus 2; from
        OS_FIRST_BLOCK to OS_BUFFER_WORDS.  Integers only (each factor below 2^32 here, so
        the product fits: a larger n or rate is a full buffer anyway)."""
        cdef uint64_t lanes = 2 if self.s.lanes else 1
        cdef uint64_t rate, want
        if self.last_samples == 0 or n <= 0:
            return OS_FIRST_BLOCK
        rate = self.last_bits // self.last_samples + 1  # bits per sample, rounded up
        if rate >= (<uint64_t>1 << 24) or <uint64_t>n >= (<uint64_t>1 << 24):
            return OS_BUFFER_WORDS
        want = rate * <uint64_t>n * 5 // (4 * 64 * lanes) + 2
        if want > OS_BUFFER_WORDS:
            return OS_BUFFER_WORDS
        return want if want > OS_FIRST_BLOCK else OS_FIRST_BLOCK

    cdef void read_per_sample(self, Py_ssize_t n):
        """Note the OS bits the call just made read, and for how many samples (restart_os)."""
        cdef uint64_t used = dg_bits_used(&self.s.rng)
        if self.s.lanes:
            used += dg_bits_used(&self.s.rng2)
        if n > 0:
            self.last_bits, self.last_samples = used, <uint64_t>n

    cdef void wipe(self):
        """Zero the OS words read (the noise just drawn could be told from them) before the
        job waits in the cache (dg_rng_wipe)."""
        dg_rng_wipe(&self.s.rng)
        if self.s.lanes:
            dg_rng_wipe(&self.s.rng2)

    cdef size_t nonzero_words(self):
        """How many words of the OS buffers are not zero (cached_jobs_nonzero_words)."""
        cdef size_t i, found = 0, cap = OS_BUFFER_WORDS
        for i in range(cap):
            found += self.buf[i] != 0
            if self.s.lanes:
                found += self.buf2[i] != 0
        return found

    cdef int setup(self, int kind, object num, object den, object mu, object source,
                   unsigned long high_bits, bint fixed_point, bint inversion=False) except -1:
        cdef Params *p = &self.s.p
        cdef bitgen_t *bg
        # GMP's largest numbers: Algorithm 3's (a d t - n)^2 2**128 and its divisor 2 n d t^2
        # (t about sqrt(n/d)); a Laplace or Bernoulli parameter's n, d; mu; with room for
        # GMP's scratch (a multiplication or division needs a few times its operands)
        operand_bits = (2 * (num.bit_length() + 2 * den.bit_length() + 192)
                        + abs(mu).bit_length() + 256)
        self.headroom = 16 * (operand_bits // 8) + 4 * OBJECT_CHUNK_BYTES
        self.reserve()
        self.s.kind = kind
        p.fixed_point = fixed_point
        int_to_mpz(p.N, num)
        int_to_mpz(p.D, den)
        if kind == KIND_DISCRETE_LAPLACE:
            mpz_set(p.lap.T, p.N)
            mpz_set(p.lap.S, p.D)
        elif kind == KIND_DISCRETE_GAUSSIAN:
            # t = floor(sqrt(n/d)) + 1 = isqrt(floor(n/d)) + 1, exactly
            mpz_fdiv_q(p.lap.T, p.N, p.D)
            mpz_sqrt(p.lap.T, p.lap.T)
            mpz_add_ui(p.lap.T, p.lap.T, 1)
            mpz_set_ui(p.lap.S, 1)
            mpz_mul(p.DT, p.D, p.lap.T)
            mpz_mul(p.DEN, p.DT, p.lap.T)
            mpz_mul(p.DEN, p.DEN, p.N)
            mpz_mul_2exp(p.DEN, p.DEN, 1)
            p.small = (_fits_word(p.N) and _fits_word(p.DT)
                       and mpz_cmp_ui(p.DEN, DG_BERNOULLI_DMAX) <= 0)
            if p.small:
                p.n = mpz_get_ui(p.N)
                p.dt = mpz_get_ui(p.DT)
                p.den = mpz_get_ui(p.DEN)
            mpz_mul_2exp(p.TWO_N, p.N, 1)
            p.low_words = mpz_fits_ulong_p(p.D) and dg_mpz_get_u128(p.TWO_N, &p.two_n)
            p.d_one = mpz_cmp_ui(p.D, 1) == 0
            if p.low_words:
                p.d = mpz_get_ui(p.D)
        p.lap.t_small = _fits_word(p.lap.T)
        p.lap.small = p.lap.t_small and _fits_word(p.lap.S)
        p.lap.s_one = mpz_cmp_ui(p.lap.S, 1) == 0
        if p.lap.t_small:
            p.lap.t = mpz_get_ui(p.lap.T)
        if p.lap.small:
            p.lap.s = mpz_get_ui(p.lap.S)
        p.lap.inversion = p.lap.t_small and p.lap.t <= DG_INVERSION_MAX
        if inversion:
            # by inversion: the tables, none of Algorithms 2-3's
            self.s.inversion = True
            self.s.owner = <void *>self
            param = Fraction(num, den)
            if kind == KIND_DISCRETE_GAUSSIAN:
                self.table = gauss_table(num, den, fixed_point)
                floors = functools.partial(_inversion.gaussian_floors, param)
            else:
                self.table = laplace_table(num, den, fixed_point)
                floors = functools.partial(_inversion.LaplaceFloors, param)
            self.continuation = functools.partial(_inversion.invert, floors_at=floors)
            if isinstance(self.table, _EnvTable):
                (<_EnvTable>self.table).attach(&self.s.env)
                self.s.enveloped = True
                self.continuation = functools.partial(
                    _inversion.invert,
                    floors_at=_inversion.envelope(kind == KIND_DISCRETE_GAUSSIAN, param).stage_floors)
            elif isinstance(self.table, _BlockedTable):
                (<_BlockedTable>self.table).attach(&self.s.lb)
                self.s.blocked = True
                if kind == KIND_DISCRETE_GAUSSIAN:
                    self.continuation = functools.partial(
                        _inversion.gaussian_blocked_magnitude, sigma2=param)
                else:
                    self.continuation = functools.partial(
                        _inversion.laplace_blocked_magnitude, scale=param)
            else:
                tab = <_InvTable>self.table
                dg_inv_attach(&self.s.inv, <const uint64_t *>cnp.PyArray_DATA(tab.thr), tab.count,
                              <const unsigned int *>cnp.PyArray_DATA(tab.guide), 64 - tab.guide_bits)
        elif p.lap.inversion and (kind == KIND_DISCRETE_LAPLACE or kind == KIND_DISCRETE_GAUSSIAN):
            self.geo_thr = <uint64_t *>malloc(dg_geometric_table_size(p.lap.t) * sizeof(uint64_t))
            if self.geo_thr == NULL:
                raise MemoryError()
            e = _exp_e(p.lap.t, 0)
            dg_geometric_table_init(&p.lap.geo, p.lap.t, e >> 64, e & 0xFFFFFFFFFFFFFFFF,
                                    self.geo_thr, fixed_point)
            p.lap.blocks = p.lap.t
        elif kind == KIND_DISCRETE_LAPLACE or kind == KIND_DISCRETE_GAUSSIAN:
            self.exp_h = _laplace_setup(&p.lap, mpz_to_int(p.lap.T), high_bits, fixed_point)
        if kind == KIND_DISCRETE_GAUSSIAN and not inversion:
            p.accept_len = ACCEPT_CACHE_PER_T * p.lap.blocks
            # on cache lines, so that one block's 8 entries take two of them
            self.accept = <AcceptEntry *>aligned_alloc(64, p.accept_len * sizeof(AcceptEntry))
            if self.accept == NULL:
                raise MemoryError()
            memset(self.accept, 0, p.accept_len * sizeof(AcceptEntry))
            p.accept = self.accept
            if not p.lap.inversion:
                p.lap.warm = self.accept

        int_to_mpz(self.s.mu, mu)
        self.s.mu_small = mpz_fits_slong_p(self.s.mu)
        self.s.mu_zero = mpz_sgn(self.s.mu) == 0
        self.s.mu64 = mpz_get_si(self.s.mu) if self.s.mu_small else 0
        # a sample is about t/s + |mu| (or below N for uniform): stretches into an object array
        # keep about OBJECT_CHUNK_BYTES of GMP values, however large the values are
        value_bits = max(<Py_ssize_t>mpz_sizeinbase(p.lap.T, 2) - <Py_ssize_t>mpz_sizeinbase(p.lap.S, 2),
                         <Py_ssize_t>mpz_sizeinbase(self.s.mu, 2),
                         <Py_ssize_t>mpz_sizeinbase(p.N, 2) if kind == KIND_UNIFORM else 0) + 72
        self.obj_chunk = max(1, min(OBJECT_CHUNK, OBJECT_CHUNK_BYTES // (value_bits // 8 + 16)))

        self.source = source
        cdef bint os = source is None or isinstance(source, (_sources.ScriptedOS, _chacha.ChaCha20))
        cdef size_t cap = OS_BUFFER_WORDS if os else 1
        self.buf = <uint64_t *>calloc(cap, sizeof(uint64_t))  # zero: only read words are not
        if self.buf == NULL:
            raise MemoryError()
        cdef dg_rng *rng = &self.s.rng
        # an int64 batch by inversion from the OS draws in two lanes, each with its own stream
        # and buffer (the second is filled only when a batch first draws from it)
        self.s.lanes = os and inversion and (
            source is None or isinstance(source, _chacha.ChaCha20) or source.lanes == 2)
        if self.s.lanes:
            self.buf2 = <uint64_t *>calloc(cap, sizeof(uint64_t))
            if self.buf2 == NULL:
                raise MemoryError()
        if source is None:
            dg_rng_init(rng, dg_fill_os, &self.os_ctx, self.buf, cap, OS_FIRST_BLOCK)
            if self.s.lanes:
                dg_rng_init(&self.s.rng2, dg_fill_os, &self.os_ctx2, self.buf2, cap,
                            OS_FIRST_BLOCK)
        elif isinstance(source, _chacha.ChaCha20):
            self.chacha = source._state()  # this thread's (a fill runs on the thread that made the job)
            dg_rng_init(rng, dg_fill_chacha, self.chacha.st, self.buf, cap, OS_FIRST_BLOCK)
            if self.s.lanes:
                dg_rng_init(&self.s.rng2, dg_fill_chacha, self.chacha.st, self.buf2, cap,
                            OS_FIRST_BLOCK)
        elif isinstance(source, _sources.ScriptedOS):
            memset(&self.script, 0, sizeof(self.script))
            self.script.fail_after = source.fail_after
            self.script.fail_count = source.fail_count
            self.script.fail_errno = source.fail_errno
            self.script.fake = source.fake
            self.script2 = self.script
            self.script2.fake_next = 8 * _sources.LANE_2_FAKE_WORD    # a byte index
            self.script2.first = _sources.LANE_2_FAKE_WORD
            _prefix(&self.script, source.prefix[0])
            _prefix(&self.script2, source.prefix[1])
            dg_rng_init(rng, dg_fill_scripted, &self.script, self.buf, cap, OS_FIRST_BLOCK)
            if self.s.lanes:
                dg_rng_init(&self.s.rng2, dg_fill_scripted, &self.script2, self.buf2, cap,
                            OS_FIRST_BLOCK)
        elif isinstance(source, _sources.Tape):
            self.tape.words = <const uint64_t *>cnp.PyArray_DATA(source.words)
            self.tape.count = source.words.size
            self.tape.pos = min(source.position, source.words.size)
            dg_rng_init(rng, fill_tape, &self.tape, self.buf, 1, 1)
            rng.bit_budget = source.bits_left
        elif isinstance(source, _sources.DecisionTape):
            self.decider.outcomes = <const uint64_t *>cnp.PyArray_DATA(source.outcomes)
            self.decider.count = source.outcomes.size
            self.decider.pos = 0
            self.decider.want = DG_WANT_NONE
            dg_rng_init(rng, fill_refuse, NULL, self.buf, 1, 1)
            rng.decider = &self.decider
            rng.stop_at_restart = source.stop_at_restart
        else:
            bg = <bitgen_t *>PyCapsule_GetPointer(source.capsule, "BitGenerator")
            # lazy: one word at a time, so a generator is left exactly where the oracle leaves it
            dg_rng_init(rng, fill_bitgen, bg, self.buf, 1, 1)
        return 0

    cdef int raise_status(self, int rc) except -1:
        if rc == DG_ERR_ENTROPY:
            err = (self.os_ctx.err or self.os_ctx2.err or self.script.os.err
                   or self.script2.os.err or (self.chacha is not None and self.chacha.st.err)
                   or _errno.EIO)
            raise OSError(err, "dgauss could not read randomness from the operating system: "
                          + _os.strerror(err))
        if rc == DG_ERR_OVERFLOW:
            raise OverflowError("a sample does not fit in int64; pass dtype=object "
                                "to get exact Python ints")
        if rc == DG_ERR_LIMIT:
            raise RuntimeError("a rejection loop counter reached 2**64 - 1")
        if rc == DG_ERR_EXHAUSTED:
            raise _sources.Exhausted(self.pending_request())
        if rc == DG_ERR_RESTART:
            raise _sources.Restart()
        if rc == DG_ERR_RAW_BITS:
            raise RuntimeError("a sampler read raw bits in decision mode")
        if rc == DG_ERR_DECISION:
            raise ValueError("a decision tape outcome is outside its primitive's range")
        if rc == DG_ERR_CALLBACK:
            raise self.error
        raise RuntimeError(f"dgauss core failed with status {rc}")

    cdef object pending_request(self):
        """What the primitive that exhausted a decision tape asked for (None for bits)."""
        if self.s.rng.decider == NULL:
            return None
        if self.decider.want == DG_WANT_UNIFORM:
            return ("uniform", mpz_to_int(self.decider.want_a))
        if self.decider.want == DG_WANT_BERNOULLI_EXP:
            return ("bernoulli_exp", Fraction(mpz_to_int(self.decider.want_a),
                                              mpz_to_int(self.decider.want_b)))
        return ("bernoulli", Fraction(mpz_to_int(self.decider.want_a), mpz_to_int(self.decider.want_b)))

    cdef int reserve_vals(self, Py_ssize_t count) except -1:
        """At least `count` initialised GMP integers in vals (kept for the job's next runs)."""
        cdef Py_ssize_t k
        cdef mpz_t *grown
        if count <= self.nvals:
            return 0
        grown = <mpz_t *>realloc(self.vals, count * sizeof(mpz_t))
        if grown == NULL:
            raise MemoryError()
        self.vals = grown
        for k in range(self.nvals, count):
            mpz_init(self.vals[k])
        self.nvals = count
        return 0

    cdef int run(self, cnp.ndarray out) except -1:
        cdef Py_ssize_t n = out.shape[0], i = 0, m, k, done = 0
        cdef int rc = DG_OK
        cdef object[:] po
        if out.dtype.kind != "O":
            return self.run_into(<char *>cnp.PyArray_DATA(out), n, out.dtype.kind == "b")
        po = out
        self.reserve_vals(min(self.obj_chunk, n))
        while i < n and rc == DG_OK:
            m = min(self.nvals, n - i)
            self.reserve()
            with nogil:
                rc = fill_mpz(&self.s, self.vals, m, &done)
            if rc == DG_OK:
                for k in range(done):
                    po[i + k] = mpz_to_int(self.vals[k])
            i += done
            PyErr_CheckSignals()
        if rc != DG_OK:
            self.raise_status(rc)
        return 0

    cdef int run_into(self, char *data, Py_ssize_t n, bint is_bool) except -1:
        """Fill n int64 (or bool) values at `data`, in chunks, the GIL released for each."""
        cdef Py_ssize_t i = 0, m, done = 0
        cdef Py_ssize_t item = 1 if is_bool else 8
        cdef int rc = DG_OK
        while i < n and rc == DG_OK:
            m = min(CHUNK, n - i)
            self.reserve()
            with nogil:
                if self.s.inversion and self.s.mu_small and not is_bool:
                    rc = fill_inversion(&self.s, <int64_t *>(data + i * item), m, &done)
                else:
                    rc = fill_native(&self.s, data + i * item, is_bool, m, &done)
            i += done
            PyErr_CheckSignals()
        if rc != DG_OK:
            self.raise_status(rc)
        return 0


# ---- the jobs of small calls, kept per thread -------------------------------------------
# Setting a job up (its parameters in GMP, Algorithm 2's thresholds, the inversion's table
# found) costs 2-5 us, most of a one-sample call.  So each thread keeps the jobs of its
# last JOB_CACHE parameter sets drawn from the OS into an int64 or bool array, keyed on the
# exact integers (num, den, mu) and the options, and starts each call with a fresh stream of
# OS bits (restart_os); the words read are zeroed when the call ends (wipe).  A job set up
# is a function of its key only: what it draws is as if made anew.  Per thread, so no job is
# shared; a forked child may inherit its parent's, which hold no unread bits.

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
                 and _inversion.use_inversion(kind == KIND_DISCRETE_GAUSSIAN, num, den,
                                              source, method, n))
    job.setup(kind, num, den, mu, source, high_bits, fixed_point, inversion)
    return job


cdef _Job _kept_job(dict jobs, tuple key, Py_ssize_t n):
    """This thread's job for `key` (kind, num, den, mu, high_bits, fixed_point, method),
    taken out of its cache and restarted on fresh OS bits, or a new one (OS source)."""
    cdef _Job job = jobs.pop(key, None)
    if job is not None:
        job.restart_os(n)
        return job
    return _new_job(key[0], key[1], key[2], key[3], None, key[4], key[5], key[6], n)


cdef _keep_job(dict jobs, tuple key, _Job job):
    if len(jobs) >= JOB_CACHE:
        del jobs[next(iter(jobs))]
    jobs[key] = job


def draw_one(int kind, object num, object den, object mu, object method):
    """One sample drawn from the OS into int64, returned as a Python int: the same as
    fill(kind, num, den, mu, None, out, method=method) of a one-element int64 `out`, without
    the array (the lean path of a scalar call; the caller checked the parameters, resolved
    `method` and that the law is drawn into int64)."""
    cdef int64_t value = 0
    cdef dict jobs = _thread_jobs()
    cdef tuple key = (kind, num, den, mu, HIGH_BITS, True, method)
    cdef _Job job = _kept_job(jobs, key, 1)
    try:
        job.run_into(<char *>&value, 1, False)
    finally:
        job.wipe()
    _keep_job(jobs, key, job)
    return value


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
    threads sharing one next_slice share out the work as they go.  Returns the
    number of random bits consumed.

    method="inversion" draws the discrete Gaussian or Laplace by inversion against its
    thresholds (dgauss._inversion; the parameter must be one dgauss._inversion.resolve allows,
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
            source is None or isinstance(source, (_sources.ScriptedOS, _chacha.ChaCha20))):
        raise ValueError("next_slice needs source=None (the OS CSPRNG) or a dgauss.ChaCha20")
    split_bits(1, high_bits)        # checks high_bits
    cdef _Job job
    cdef dict jobs
    cdef object key
    if source is None and next_slice is None and out.dtype.kind != "O" and method != "auto":
        # a job kept by this thread for this key was set up (and method checked) as it would
        # be now: "inversion" or "rejection" is resolved without the batch's size
        jobs, key = _thread_jobs(), (kind, num, den, mu, high_bits, fixed_point, method)
        job = _kept_job(jobs, key, out.shape[0])
        try:
            job.run(out)
            used = dg_bits_used(&job.s.rng) + (dg_bits_used(&job.s.rng2) if job.s.lanes else 0)
            job.read_per_sample(out.shape[0])
        finally:
            job.wipe()
        _keep_job(jobs, key, job)  # (an error above drops the job: it is not put back)
        return used
    job = _new_job(kind, num, den, mu, source, high_bits, fixed_point, method, out.shape[0])
    if isinstance(source, np.random.BitGenerator):
        with source.lock:
            job.run(out)
        return dg_bits_used(&job.s.rng)
    try:
        if next_slice is None:
            job.run(out)
        else:
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
