"""Privacy numbers as text, rounded up: a δ, ε or ρ printed for a reader (the CLI's tables, an
Accountant's ``repr`` and ``report()``) never reads below the certified bound it shows."""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from fractions import Fraction

#: Significant digits of a printed delta or epsilon, always rounded up.
PRIVACY_DIGITS = 4


#: A float delta below this is recomputed from its logarithm (``log=True``), so that
#: e.g. 7.4e-549 is printed instead of the float floor 5e-324.
TINY_DELTA = 1e-300


def _pad(value: decimal.Decimal, digits: int) -> decimal.Decimal:
    """``value`` with trailing zeros up to ``digits`` significant digits (17.9 -> 17.90)."""
    exponent = value.adjusted() - digits + 1
    current = value.as_tuple().exponent  # an int for a finite value ('n', 'N', 'F' otherwise)
    if value != 0 and isinstance(current, int) and current > exponent:
        with decimal.localcontext() as ctx:
            ctx.prec = max(ctx.prec, digits + 2)
            ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
            return value.quantize(decimal.Decimal(1).scaleb(exponent))
    return value


def _delta_text(delta: Callable[..., float], *args: object) -> str:
    """delta(*args) rounded up, or from delta(*args, log=True) when it is below TINY_DELTA."""
    value = delta(*args, log=False)
    if value >= TINY_DELTA or value == 0:
        return _rounded_up(value)
    return _rounded_up_from_log(delta(*args, log=True))


def _rounded_up(value, digits: int = PRIVACY_DIGITS) -> str:
    """``value`` (a float or Fraction >= 0) rounded up to ``digits`` significant digits;
    ``inf`` (an ε past the float range) as "inf"."""
    if value == math.inf:
        return "inf"
    return _rounded(value, digits, decimal.ROUND_CEILING)


def _rounded_down(value, digits: int = PRIVACY_DIGITS) -> str:
    """``value`` (a float or Fraction >= 0) rounded down to ``digits`` significant digits:
    for what is left of a budget, which must never read larger than it is."""
    return _rounded(value, digits, decimal.ROUND_FLOOR)


def _rounded(value, digits: int, rounding: str) -> str:
    """``value`` at its exact value, rounded once to ``digits`` significant digits."""
    q = Fraction(value)
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = rounding
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        found = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)
    return _short(found)


def _rounded_up_from_log(log_value: float, digits: int = PRIVACY_DIGITS) -> str:
    """e**log_value rounded up to ``digits`` significant digits, at any magnitude (7.4e-549);
    beyond a million decimal places, as ``e^-1.797e308``."""
    if log_value < -2e6:
        return "e^" + _rounded_up(log_value, digits)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        ln10 = decimal.Decimal(10).ln()
        log10 = decimal.Decimal(log_value) / ln10
        exponent = int(log10.to_integral_value(rounding=decimal.ROUND_FLOOR))
        # the mantissa in [1, 10), nudged up past the computation's own rounding
        mantissa = ((log10 - exponent) * ln10).exp() * (1 + decimal.Decimal(10) ** -40)
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_CEILING
        mantissa = +mantissa
        if mantissa >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return _short(mantissa.scaleb(exponent))


def _short(value: decimal.Decimal) -> str:
    """A Decimal with PRIVACY_DIGITS significant digits: positional near 1, else like 1.755e-8."""
    if value == 0:
        return "0"
    with decimal.localcontext() as ctx:
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        value = _pad(value, PRIVACY_DIGITS)
        if -4 <= value.adjusted() < 6:
            return f"{value:f}"
        mantissa = value.scaleb(-value.adjusted())
        return f"{mantissa:f}e{value.adjusted()}"
