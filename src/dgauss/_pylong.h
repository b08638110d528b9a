/* Python ints from GMP limbs, for dgauss._core's object arrays.
 *
 * Two ways, chosen at compile time:
 *   - bytes: the limbs as a little-endian two's-complement byte string, converted by
 *     CPython itself (PyLong_FromNativeBytes, PEP 757's neighbour, from 3.13; the
 *     private _PyLong_FromByteArray before);
 *   - digits (CPython < 3.12, not the limited API, not PyPy): CPython lays an int
 *     out as base-2**PyLong_SHIFT digits, least significant first, with the sign in
 *     the size, so the digits are written in place: 6-15% faster end to end into
 *     object arrays at sigma^2 = 10^100 and 2^130 on CPython 3.11 (docs/performance.md);
 *     3.12 changed the layout.
 * Both give the same int; tests compare them (dgauss._core.int_roundtrip).
 */
#ifndef DG_PYLONG_H
#define DG_PYLONG_H

#include <Python.h>
#include <stdint.h>
#include <gmp.h>

#if PY_VERSION_HEX < 0x030C0000 && !defined(Py_LIMITED_API) && !defined(PYPY_VERSION)
#define DG_INT_DIGITS 1
#else
#define DG_INT_DIGITS 0
#endif

/* (-1)**negative * the n >= 1 limbs p (least significant first), by CPython's byte
 * conversion. */
static PyObject *dg_int_from_bytes(const mp_limb_t *p, size_t n, int negative)
{
    uint64_t small[17];
    uint64_t *b = (n + 1 <= 17) ? small : (uint64_t *)PyMem_Malloc((n + 1) * 8);
    uint64_t carry = 1;
    size_t i;
    PyObject *v;
    if (b == NULL)
        return PyErr_NoMemory();
    for (i = 0; i < n; i++) {
        b[i] = negative ? ~(uint64_t)p[i] + carry : (uint64_t)p[i];
        carry = negative && carry && b[i] == 0;
    }
    b[n] = negative ? UINT64_MAX : 0; /* the sign word */
#if PY_BIG_ENDIAN
    for (i = 0; i <= n; i++)
        b[i] = __builtin_bswap64(b[i]);
#endif
#if PY_VERSION_HEX >= 0x030D0000
    v = PyLong_FromNativeBytes(b, (n + 1) * 8, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
#else
    v = _PyLong_FromByteArray((const unsigned char *)b, (n + 1) * 8, 1, 1);
#endif
    if (b != small)
        PyMem_Free(b);
    return v;
}

#if DG_INT_DIGITS
/* The same by writing CPython's digits in place. */
static PyObject *dg_int_from_digits(const mp_limb_t *p, size_t n, int negative)
{
    size_t bits = n * 64 - (size_t)__builtin_clzll(p[n - 1]);
    Py_ssize_t nd = (Py_ssize_t)((bits + PyLong_SHIFT - 1) / PyLong_SHIFT), k;
    PyLongObject *v;
    uint64_t acc = 0, next; /* `have` bits of p not yet in a digit */
    unsigned have = 0;
    size_t w = 0;
    if ((size_t)nd > (size_t)PY_SSIZE_T_MAX / PyLong_SHIFT)
        return PyErr_NoMemory();
    v = _PyLong_New(nd);
    if (v == NULL)
        return NULL;
    for (k = 0; k < nd; k++) {
        if (have >= PyLong_SHIFT) {
            v->ob_digit[k] = (digit)(acc & PyLong_MASK);
            acc >>= PyLong_SHIFT;
            have -= PyLong_SHIFT;
        } else { /* the digit takes the next limb's low bits too */
            next = (w < n) ? (uint64_t)p[w++] : 0;
            v->ob_digit[k] = (digit)((acc | next << have) & PyLong_MASK);
            acc = next >> (PyLong_SHIFT - have);
            have += 64 - PyLong_SHIFT;
        }
    }
    if (negative)
        Py_SET_SIZE(v, -nd);
    return (PyObject *)v;
}
#endif

/* (-1)**negative * the n >= 1 limbs p, p[n - 1] != 0: the digit writer where this Python
 * has one, unless by_bytes. */
static PyObject *dg_int_from_limbs(const mp_limb_t *p, size_t n, int negative, int by_bytes)
{
#if DG_INT_DIGITS
    if (!by_bytes)
        return dg_int_from_digits(p, n, negative);
#else
    (void)by_bytes;
#endif
    return dg_int_from_bytes(p, n, negative);
}

#endif /* DG_PYLONG_H */
