"""Parameter checking shared by the compiled API and the reference oracle.

Every public parameter goes through here once per call and comes out as an
exact ``fractions.Fraction`` (or ``int``), or raises a ``TypeError`` /
``ValueError`` that names the parameter and what it accepts.  Nothing is
rounded: a float is taken at its exact binary value.
"""

from __future__ import annotations

import decimal
import numbers
import operator
import os
import re
from fractions import Fraction
from typing import Any

import numpy as np

from dgauss import _chacha, _sources

#: gmpy2's integer and rational types, for isinstance (empty without gmpy2)
_GMPY_INT: tuple[type[Any], ...]
_GMPY_RAT: tuple[type[Any], ...]
try:  # gmpy2 is a dependency, but keep parsing usable without it
    import gmpy2

    _GMPY_INT = (type(gmpy2.mpz(0)),)
    _GMPY_RAT = (type(gmpy2.mpq(0)),)
except ImportError:  # pragma: no cover
    _GMPY_INT = ()
    _GMPY_RAT = ()

#: Largest bit length accepted for a parameter's numerator or denominator
#: (about 1.26 million decimal digits).  Bounds the memory GMP may need, so an
#: absurd parameter is refused with an error instead of aborting the process.
MAX_PARAM_BITS = 1 << 22

#: Most threads one call may start (refused beyond, before any sampling: each thread
#: costs a stack, and more threads than cores cannot go faster).
MAX_WORKERS = 1024

#: Largest decimal exponent accepted in a str or Decimal parameter.
MAX_DECIMAL_EXPONENT = 1_000_000

ACCEPTED = "an int, fractions.Fraction, gmpy2 mpz/mpq, decimal.Decimal, str or finite float"

#: The argument types whose values may be remembered (dgauss._driver.checked, a mechanism's
#: set-up): an int, str or Fraction equals another only when it means the same number.  A
#: bool (True == 1, but a bool is refused), a float or a NumPy scalar is checked each time.
EXACT_TYPES = (int, str, Fraction)

# ASCII digits only: str.isdigit-style Unicode digits (full-width '１２') are refused by name.
_RATIO = re.compile(r"\s*([+-]?)([0-9]+)\s*/\s*([0-9]+)\s*$", re.ASCII)
_DECIMAL = re.compile(
    r"\s*([+-]?)(?=\.?[0-9])([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?\s*$", re.ASCII
)

#: Decimal digits that fit in MAX_PARAM_BITS bits (log10(2) < 0.30103).
_MAX_DIGITS = int(MAX_PARAM_BITS * 0.30103) + 2


def show(value) -> str:
    """repr(value) for an error message, shortened (and safe for ints past Python's digit limit)."""
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        q = Fraction(value)
        if max(q.numerator.bit_length(), q.denominator.bit_length()) > 256:
            return (
                f"<{type(value).__name__} with a {q.numerator.bit_length()}-bit numerator "
                f"and a {q.denominator.bit_length()}-bit denominator>"
            )
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + f"... ({len(text)} characters)"


def to_fraction(value, name: str) -> Fraction:
    """``value`` as an exact Fraction, or TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {ACCEPTED}, not bool")
    if isinstance(value, (int, np.integer) + _GMPY_INT):
        result = Fraction(int(value))
    elif isinstance(value, Fraction):
        # a subclass may lie in its comparisons: keep only its numerator and denominator
        result = _ratio(value.numerator, value.denominator, name, value)
    elif isinstance(value, _GMPY_RAT):
        result = Fraction(int(value.numerator), int(value.denominator))
    elif isinstance(value, (float, np.floating)):
        # np.longdouble (and every NumPy float) at its own exact value, not via float64
        if not np.isfinite(value):
            raise ValueError(f"{name} must be finite, got {show(value)}")
        n, d = value.as_integer_ratio()
        result = Fraction(int(n), int(d))
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be finite, got {show(value)}")
        sign, digits, exponent = value.as_tuple()
        result = _decimal_value(
            name, "-" if sign else "", "".join(map(str, digits)), "", str(exponent)
        )
    elif isinstance(value, str):
        result = _parse_str(value, name)
    elif isinstance(value, numbers.Rational):
        result = _ratio(value.numerator, value.denominator, name, value)
    else:
        raise TypeError(f"{name} must be {ACCEPTED}, not {type(value).__name__}")
    if (
        result.numerator.bit_length() > MAX_PARAM_BITS
        or result.denominator.bit_length() > MAX_PARAM_BITS
    ):
        raise ValueError(
            f"{name} has a numerator or denominator over {MAX_PARAM_BITS} bits; "
            "dgauss refuses it rather than risk exhausting memory"
        )
    return result


def _ratio(numerator, denominator, name: str, value) -> Fraction:
    """A plain Fraction from a rational's parts, refusing a zero denominator by name."""
    n, d = int(numerator), int(denominator)
    if d == 0:
        raise ValueError(f"{name} has a zero denominator: {show(value)}")
    return Fraction(n, d)


def _parse_str(text: str, name: str) -> Fraction:
    """'3', '-1/3', '2.5', '.5', '1e100', '25e-1': exact, for numbers of any length up
    to the limits."""
    ratio = _RATIO.match(text)
    if ratio is not None:
        sign, num, den = ratio.groups()
        if not den.strip("0"):
            raise ValueError(f"{name} has a zero denominator: {show(text)}")
        return _decimal_value(name, sign, num, "", "0") / _decimal_value(name, "", den, "", "0")
    match = _DECIMAL.match(text)
    if match is None:
        raise ValueError(
            f"{name} must be a number such as '1/3', '2.5' or '1e100', got {show(text)}"
        )
    sign, whole, frac, exponent = match.groups()
    return _decimal_value(name, sign, whole, frac or "", exponent or "0")


def _decimal_value(name: str, sign: str, whole: str, frac: str, exponent: str) -> Fraction:
    """sign whole.frac x 10**exponent, refusing sizes beyond the limits before building them."""
    magnitude = exponent.lstrip("+-").lstrip("0") or "0"  # '1e+0000000001' is 1e1
    if len(magnitude) > 10 or int(magnitude) > MAX_DECIMAL_EXPONENT:
        raise ValueError(
            f"{name}: decimal exponent beyond ±{MAX_DECIMAL_EXPONENT} is not supported"
        )
    digits = (whole + frac).lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        raise ValueError(
            f"{name} has more than {_MAX_DIGITS} digits; dgauss refuses it "
            "rather than risk exhausting memory"
        )
    # The value is digits·10^(exponent − len(frac) + zeros stripped): refuse a power of ten
    # past the digit limit before building it ('0.' + 3·10^7 zeros + '1' took 37 s).
    shift = int(exponent) - len(frac)
    if digits != "0" and abs(shift) > _MAX_DIGITS:
        raise ValueError(
            f"{name} needs a power of ten beyond 10^±{_MAX_DIGITS}; dgauss refuses "
            "it rather than risk exhausting memory"
        )
    mantissa = int(gmpy2.mpz(digits)) if _GMPY_INT else int(digits)  # gmpy2: no digit limit
    if sign == "-":
        mantissa = -mantissa
    return Fraction(mantissa * 10**shift) if shift >= 0 else Fraction(mantissa, 10**-shift)


def positive(value, name: str) -> Fraction:
    """A rational > 0."""
    result = to_fraction(value, name)
    if result <= 0:
        raise ValueError(f"{name} must be > 0, got {show(value)}")
    return result


def nonnegative(value, name: str) -> Fraction:
    """A rational >= 0."""
    result = to_fraction(value, name)
    if result < 0:
        raise ValueError(f"{name} must be >= 0, got {show(value)}")
    return result


def integer(value, name: str) -> int:
    """A rational whose value is an integer, as an int."""
    result = to_fraction(value, name)
    if result.denominator != 1:
        raise ValueError(f"{name} must be an integer, got {show(value)}")
    return result.numerator


def shape(size) -> tuple[int, ...] | None:
    """``size`` as a shape tuple (None stays None)."""
    if size is None:
        return None
    dims = size if isinstance(size, tuple) else (size,)
    result = []
    for dim in dims:
        if isinstance(dim, (bool, np.bool_)):
            raise TypeError("size must be None, a non-negative int or a tuple of them, not bool")
        try:
            dim = operator.index(dim)
        except TypeError:
            raise TypeError(
                "size must be None, a non-negative int or a tuple of them, "
                f"not {type(dim).__name__}"
            ) from None
        if dim < 0:
            raise ValueError(f"size must be non-negative, got {show(size)}")
        result.append(dim)
    return tuple(result)


def bit_generator(rng):
    """None (the OS CSPRNG), the numpy BitGenerator behind ``rng``, or a testing tape."""
    if rng is None or isinstance(rng, (*_sources.SOURCES, _chacha.ChaCha20)):
        return rng
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator
    if isinstance(rng, np.random.BitGenerator):
        return rng
    raise TypeError(
        "rng must be None (the OS CSPRNG), a dgauss.ChaCha20, a numpy.random.Generator or a "
        f"numpy.random.BitGenerator, not {type(rng).__name__}"
    )


def workers(value, rng) -> int:
    """The number of threads: None or 1 -> 1, -1 -> every core, n >= 1 -> n."""
    if value is None:
        return 1
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("workers must be None, -1 or a positive int, not bool")
    try:
        count = operator.index(value)
    except TypeError:
        raise TypeError(
            f"workers must be None, -1 or a positive int, not {type(value).__name__}"
        ) from None
    if count == -1:
        count = os.cpu_count() or 1
    if count < 1 or count > MAX_WORKERS:
        raise ValueError(
            f"workers must be None, -1 or a positive int up to {MAX_WORKERS}, got {show(value)}"
        )
    if count > 1 and rng is not None and not isinstance(rng, _chacha.ChaCha20):
        raise ValueError(
            "workers > 1 needs rng=None (the OS CSPRNG): a seeded generator or tape is "
            "one sequential stream, and splitting it across threads would make the "
            "result depend on thread scheduling"
        )
    return count


# ---- output dtype ---------------------------------------------------------

#: int64 is the default when |mu| <= 2**62 and sigma2 <= 2**100 (Gaussian) or
#: scale <= 2**40 (Laplace): a sample then leaves int64 with probability below
#: 2**-1000000.  Otherwise the default is an object array of exact Python ints.
INT64_MU_BOUND = 1 << 62
INT64_SIGMA2_BOUND = 1 << 100
INT64_SCALE_BOUND = 1 << 40


def result_dtype(dtype, int64_is_safe: bool) -> np.dtype:
    """The output dtype: ``dtype`` if given (int64 or object), else by the rule above."""
    if dtype is None:
        return np.dtype(np.int64) if int64_is_safe else np.dtype(object)
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be None, numpy.int64 or object, not {dtype!r}") from None
    if resolved == np.dtype(np.int64) or resolved == np.dtype(object):
        return resolved
    raise ValueError(f"dtype must be None, numpy.int64 or object, got {resolved}")


def gaussian_int64_safe(sigma2: Fraction, mu: int) -> bool:
    return sigma2 <= INT64_SIGMA2_BOUND and abs(mu) <= INT64_MU_BOUND


def laplace_int64_safe(scale: Fraction, mu: int) -> bool:
    return scale <= INT64_SCALE_BOUND and abs(mu) <= INT64_MU_BOUND
