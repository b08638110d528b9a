"""Parameter checking shared by the compiled API and the reference oracle.

Every public parameter goes through here once per call and comes out as an
exact ``fractions.Fraction`` (or ``int``), or raises a ``TypeError`` /
``ValueError`` that names the parameter and what it accepts.  Nothing is
rounded: a float is taken at its exact binary value.
"""
from __future__ import annotations

import decimal
import math
import numbers
import operator
import re
from fractions import Fraction
from typing import Optional, Tuple, Union

import numpy as np

from dgauss import _sources

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

#: Largest decimal exponent accepted in a str or Decimal parameter.
MAX_DECIMAL_EXPONENT = 1_000_000

ACCEPTED = "an int, fractions.Fraction, gmpy2 mpz/mpq, decimal.Decimal, str or finite float"

_NUMBER = re.compile(
    r"""\s*[+-]?(?:
        \d+\s*/\s*\d+                                    # 1/3
      | (?:\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?  # 2.5, 1e100
    )\s*$""",
    re.VERBOSE,
)

Rational = Union[int, Fraction, decimal.Decimal, float, str]


def to_fraction(value, name: str) -> Fraction:
    """``value`` as an exact Fraction, or TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {ACCEPTED}, not bool")
    if isinstance(value, (int, np.integer) + _GMPY_INT):
        result = Fraction(int(value))
    elif isinstance(value, Fraction):
        result = value
    elif isinstance(value, _GMPY_RAT):
        result = Fraction(int(value.numerator), int(value.denominator))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        result = Fraction(float(value))
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be finite, got {value!r}")
        if abs(value.as_tuple().exponent) > MAX_DECIMAL_EXPONENT:
            raise ValueError(f"{name}: decimal exponent beyond ±{MAX_DECIMAL_EXPONENT} is not supported")
        result = Fraction(value)
    elif isinstance(value, str):
        result = _parse_str(value, name)
    elif isinstance(value, numbers.Rational):
        result = Fraction(int(value.numerator), int(value.denominator))
    else:
        raise TypeError(f"{name} must be {ACCEPTED}, not {type(value).__name__}")
    if (result.numerator.bit_length() > MAX_PARAM_BITS
            or result.denominator.bit_length() > MAX_PARAM_BITS):
        raise ValueError(f"{name} has a numerator or denominator over {MAX_PARAM_BITS} bits; "
                         "dgauss refuses it rather than risk exhausting memory")
    return result


def _parse_str(text: str, name: str) -> Fraction:
    match = _NUMBER.match(text)
    if match is None:
        raise ValueError(f"{name} must be a number such as '1/3', '2.5' or '1e100', got {text!r}")
    if match.group(1) is not None and abs(int(match.group(1))) > MAX_DECIMAL_EXPONENT:
        raise ValueError(f"{name}: decimal exponent beyond ±{MAX_DECIMAL_EXPONENT} is not supported")
    try:
        result = Fraction(text.strip().replace(" ", ""))
    except (ValueError, ZeroDivisionError) as exc:
        raise ValueError(f"{name} could not be read as a rational number ({exc}), got {text!r}") from None
    return result


def positive(value, name: str) -> Fraction:
    """A rational > 0."""
    result = to_fraction(value, name)
    if result <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return result


def nonnegative(value, name: str) -> Fraction:
    """A rational >= 0."""
    result = to_fraction(value, name)
    if result < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return result


def integer(value, name: str) -> int:
    """A rational whose value is an integer, as an int."""
    result = to_fraction(value, name)
    if result.denominator != 1:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return result.numerator


def shape(size) -> Optional[Tuple[int, ...]]:
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
            raise TypeError("size must be None, a non-negative int or a tuple of them, "
                            f"not {type(dim).__name__}") from None
        if dim < 0:
            raise ValueError(f"size must be non-negative, got {size!r}")
        result.append(dim)
    return tuple(result)


def bit_generator(rng):
    """None (the OS CSPRNG), the numpy BitGenerator behind ``rng``, or a testing tape."""
    if rng is None or isinstance(rng, _sources.SOURCES):
        return rng
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator
    if isinstance(rng, np.random.BitGenerator):
        return rng
    raise TypeError("rng must be None (the OS CSPRNG), a numpy.random.Generator or a "
                    f"numpy.random.BitGenerator, not {type(rng).__name__}")


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
