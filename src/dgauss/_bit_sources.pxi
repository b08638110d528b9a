# Included by _core.pyx.  The bit sources' fill functions for NumPy generators and tapes
# (csrc/dg_rng.h's dg_fill_fn), and a source that always fails.

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
