# cython: language_level=3
"""The GMP functions dgauss uses, declared by hand (linked against the system libgmp)."""

cdef extern from "gmp.h" nogil:
    ctypedef struct __mpz_struct:
        pass
    ctypedef __mpz_struct mpz_t[1]
    ctypedef __mpz_struct *mpz_ptr
    ctypedef const __mpz_struct *mpz_srcptr
    ctypedef unsigned long mp_limb_t

    void mpz_init(mpz_ptr)
    void mpz_clear(mpz_ptr)
    void mpz_set(mpz_ptr, mpz_srcptr)
    void mpz_swap(mpz_ptr, mpz_ptr)
    void mpz_set_ui(mpz_ptr, unsigned long)
    void mpz_set_si(mpz_ptr, long)
    unsigned long mpz_get_ui(mpz_srcptr)
    long mpz_get_si(mpz_srcptr)
    int mpz_fits_ulong_p(mpz_srcptr)
    int mpz_fits_slong_p(mpz_srcptr)
    int mpz_sgn(mpz_srcptr)
    int mpz_cmp(mpz_srcptr, mpz_srcptr)
    int mpz_cmp_ui(mpz_srcptr, unsigned long)
    size_t mpz_sizeinbase(mpz_srcptr, int)
    unsigned long mpz_getlimbn(mpz_srcptr, long)
    size_t mpz_size(mpz_srcptr)
    const mp_limb_t *mpz_limbs_read(mpz_srcptr)
    void mpz_add(mpz_ptr, mpz_srcptr, mpz_srcptr)
    void mpz_add_ui(mpz_ptr, mpz_srcptr, unsigned long)
    void mpz_sub(mpz_ptr, mpz_srcptr, mpz_srcptr)
    void mpz_sub_ui(mpz_ptr, mpz_srcptr, unsigned long)
    void mpz_mul(mpz_ptr, mpz_srcptr, mpz_srcptr)
    void mpz_mul_ui(mpz_ptr, mpz_srcptr, unsigned long)
    void mpz_mul_2exp(mpz_ptr, mpz_srcptr, unsigned long)
    void mpz_addmul_ui(mpz_ptr, mpz_srcptr, unsigned long)
    void mpz_neg(mpz_ptr, mpz_srcptr)
    void mpz_abs(mpz_ptr, mpz_srcptr)
    void mpz_fdiv_q(mpz_ptr, mpz_srcptr, mpz_srcptr)
    void mpz_fdiv_qr(mpz_ptr, mpz_ptr, mpz_srcptr, mpz_srcptr)
    void mpz_sqrt(mpz_ptr, mpz_srcptr)
    void mpz_import(mpz_ptr, size_t count, int order, size_t size, int endian,
                    size_t nails, const void *op)
    void *mpz_export(void *rop, size_t *countp, int order, size_t size, int endian,
                     size_t nails, mpz_srcptr op)
