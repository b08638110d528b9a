"""Privacy accounting for the discrete Gaussian and discrete Laplace: exact, and never optimistic.

Sections 2–4 of Canonne, Kamath & Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), as functions:

* zCDP ↔ (ε, δ) — Corollary 13 with the optimal α (Eqs. 18–22):
  :func:`cdp_delta`, :func:`cdp_eps`, :func:`cdp_rho`, and the classic
  :func:`cdp_delta_standard`.
* The discrete Gaussian — :func:`gaussian_rho` (Theorems 4, 14), the exact δ
  of one query (Theorem 7) and of k queries with a sensitivity vector
  (Theorem 15): :func:`gaussian_delta`, :func:`gaussian_epsilon`.
* The discrete Laplace — :func:`laplace_epsilon`, and the exact δ of its
  k-fold composition (Eq. 49, attained): :func:`laplace_delta`.
* Calibration — :func:`calibrate_gaussian`, :func:`calibrate_laplace`.
* Utility — :func:`gaussian_variance`, :func:`laplace_variance`,
  :func:`gaussian_pmf`, :func:`gaussian_cdf`, :func:`gaussian_sf`,
  :func:`gaussian_interval`, :func:`laplace_interval`.

**Rigour contract.**  Every number is computed with interval arithmetic over
MPFR (directed rounding; no Python float decides a bound) and then rounded to
the safe side: a returned δ or ε is never below the truth, a returned ρ never
above it, and a calibrated σ² or scale never gives less privacy than asked.
A δ is within a relative 1e−9 of the truth (far closer in practice) except
where a docstring says otherwise; a δ below the smallest positive float is
returned as that float (5e−324, still an upper bound), and every δ has a
``log=True`` twin returning an upper bound on ln δ.  Parameters are exact
rationals, as for the samplers: int, ``Fraction``, gmpy2 ``mpz``/``mpq``,
``Decimal``, ``str`` (``"1e-6"``, ``"1/3"``) or a finite float taken at its
exact binary value, with a numerator and a denominator of at most
:data:`MAX_BITS` = 16,384 bits each (so a δ down to 10^−4932).  Bad values raise
``ValueError`` (``TypeError`` for a wrong type) naming the parameter and its
allowed range.

How the exact δ is computed (details in ``docs/accounting.md``): Theorem 7's
sum Σ_{y≥m} p(y)(1 − e^{ε − Δ(2y+Δ)/(2σ²)}) is enclosed by direct summation
with a geometric tail bound, or by Euler–Maclaurin with a bounded remainder,
so the work does not grow with σ (σ² = 10^100 takes milliseconds); the
normaliser comes from Poisson summation.  For k queries with a difference
vector μ whose nonzero entries share one magnitude a (a scalar sensitivity,
or ±1 histograms), Poisson summation shows that the privacy loss of the n = k·|supp μ|
coordinates is that of one query with variance nσ² and sensitivity n·a, up to
a relative factor (1 ± E) with E an explicit theta-series bound
(E < 1e−30 for σ² ≥ 4 at n = 100); that factor is applied to the safe side.
Vectors with several magnitudes reduce the same way, with E bounded by a
piecewise integral of a product of theta functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from typing import TypeAlias

import gmpy2
import numpy as np
from gmpy2 import mpfr

from dgauss import _params
from dgauss._interval import Arith, Interval
from dgauss.accounting._gaussian_sums import (
    convolution_delta,
    log_normaliser,
    log_tail,
    theorem7_log_delta,
    variance,
)
from dgauss.accounting._lattice_bounds import (
    LATTICE_FINE_ENOUGH,
    _anchors,
    lattice_error_bound_ball,
    lattice_error_bound_vector,
)
from dgauss.accounting._neighbours import Contributions, L2Ball, NeighbourSet, norm2

__all__ = [
    "cdp_delta",
    "cdp_delta_standard",
    "cdp_eps",
    "cdp_rho",
    "gaussian_rho",
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_epsilon",
    "laplace_delta",
    "calibrate_gaussian",
    "calibrate_laplace",
    "gaussian_variance",
    "laplace_variance",
    "gaussian_pmf",
    "gaussian_cdf",
    "gaussian_sf",
    "gaussian_interval",
    "laplace_interval",
    "GRID_DIGITS",
    "MAX_BITS",
]

Number: TypeAlias = int | float | str | Fraction | gmpy2.mpz | gmpy2.mpq
Sensitivity: TypeAlias = int | Sequence[int] | NeighbourSet

#: Significant decimal digits of a calibrated σ² or scale (rounded up).
GRID_DIGITS = 4

#: Most composed queries accepted (beyond, the sums over compositions take seconds and more).
MAX_K = 10**7

#: Largest numerator/denominator accepted for an accounting parameter, in bits (16,384: a δ
#: down to 10^−4932, a σ² up to about 10^4932); beyond, a ValueError names this limit.
MAX_BITS = 1 << 14

#: Precisions tried, in bits, until an enclosure is tight enough.
_PRECISIONS = (128, 256, 512, 1024, 2048, 4096, 8192)

#: An enclosure of ln δ is tight enough when its width is below this (δ to ~1e−12).
_LOG_WIDTH = mpfr(2) ** -40

_AR = Arith(128)  # for the O(1) formulas (zCDP, Laplace); immutable, shareable
_NEAR = gmpy2.context(precision=64)


# ==========================================================================
# Parameters
# ==========================================================================
def _bounded(q: Fraction, name: str) -> Fraction:
    if max(q.numerator.bit_length(), q.denominator.bit_length()) > MAX_BITS:
        raise ValueError(
            f"{name} has a numerator or denominator over {MAX_BITS} bits, the accounting's "
            "limit (dgauss.accounting.MAX_BITS: e.g. a delta of at least 1e-4932)"
        )
    return q


def _rational(value, name: str) -> Fraction:
    return _bounded(_params.to_fraction(value, name), name)


def _positive(value, name: str) -> Fraction:
    return _bounded(_params.positive(value, name), name)


def _nonnegative(value, name: str) -> Fraction:
    return _bounded(_params.nonnegative(value, name), name)


def _probability(value, name: str, allow_zero: bool = False) -> Fraction:
    q = _rational(value, name)
    low_ok = q >= 0 if allow_zero else q > 0
    if not (low_ok and q < 1):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {_params.show(value)}")
    return q


def _count(value, name: str) -> int:
    """An integer from 1 to MAX_K; every refusal says so (not what a general rational is)."""
    try:
        k = _params.integer(value, name)
    except TypeError:
        raise TypeError(
            f"{name} must be an integer from 1 to {MAX_K}, not {type(value).__name__}"
        ) from None
    except ValueError:
        k = 0
    if not 1 <= k <= MAX_K:
        raise ValueError(f"{name} must be an integer from 1 to {MAX_K}, got {_params.show(value)}")
    return k


def _scalar(value):
    """A 0-d NumPy array as the scalar it holds (a scalar sensitivity, not a sequence)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def _sensitivity(value, vector_ok: bool = True) -> tuple[int, ...]:
    """A positive int, or (vector_ok) a non-empty sequence of ints not all zero.

    NumPy integers and 0-d arrays are scalars here (``np.array(2)`` is 2, not a sequence).
    """
    value = _scalar(value)
    if isinstance(value, NeighbourSet):
        if value.norm1 is None:
            raise TypeError(
                f"sensitivity {value!r} bounds an ℓ2 norm, not what this needs: pass the ℓ1 "
                "bound (a positive int)"
            )
        return (value.norm1,)
    if isinstance(value, (bytes, bytearray, memoryview)):  # not a vector of byte codes
        raise TypeError(
            "sensitivity must be a positive integer"
            + (" or a sequence of integers" if vector_ok else "")
            + f", not {type(value).__name__}"
        )
    if isinstance(value, str) or not isinstance(value, Iterable):
        q = _rational(value, "sensitivity")
        if q.denominator != 1 or q < 1:
            raise ValueError(
                "sensitivity must be a positive integer"
                + (" or a sequence of integers" if vector_ok else "")
                + f", got {_params.show(value)}"
            )
        return (q.numerator,)
    if not vector_ok:
        raise TypeError("sensitivity must be a positive integer here, not a sequence")
    entries = []
    for item in value:
        q = _rational(item, "sensitivity")
        if q.denominator != 1:
            raise ValueError(f"sensitivity entries must be integers, got {_params.show(item)}")
        entries.append(q.numerator)
    if not entries:
        raise ValueError("sensitivity must not be an empty sequence")
    if not any(entries):
        raise ValueError("sensitivity must have a nonzero entry (all zero means no privacy loss)")
    return tuple(entries)


def _gaussian_sensitivity(value) -> tuple[int, ...] | NeighbourSet:
    """A Gaussian sensitivity: an int Δ is the ℓ2 ball L2Ball(Δ) (Δ = 1 is exactly the unit
    vectors, kept as (1,)); a sequence is exactly that difference vector; a
    :class:`~dgauss.accounting.Contributions` as it is."""
    value = _scalar(value)
    if isinstance(value, Contributions):
        return value
    if isinstance(value, L2Ball):
        ball = value
    else:
        mu = _sensitivity(value)
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            ball = L2Ball(mu[0])  # a scalar
        else:
            return mu
    return (1,) if ball.radius == 1 else ball


# ==========================================================================
# Safe-side rounding to float
# ==========================================================================
def _approx(x) -> float:
    """x as a float, for choices only (a starting point, a tilt), never for a bound:
    ±inf past the float range, 0.0 below it."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _float_up(x) -> float:
    """The smallest float >= x: +inf past the float range (a valid upper bound on an ε)."""
    f = _approx(x)
    if f < x:
        f = math.nextafter(f, math.inf)
    return f


def _float_up_finite(x, what: str) -> float:
    """:func:`_float_up` for a value that must be reported as it is (a variance): past the
    float range it raises OverflowError saying so."""
    f = _float_up(x)
    if math.isinf(f):
        raise OverflowError(f"{what} is {gmpy2.mpfr(x, 30)}, beyond the float range")
    return f


def _float_down(x) -> float:
    """The largest float <= x."""
    f = _approx(x)
    if f > x:
        f = math.nextafter(f, -math.inf)
    return f


def _delta_out(log_hi, log: bool) -> float:
    """A δ from an upper bound on ln δ: the bound itself, or e^bound rounded up (never 0)."""
    log_hi = min(log_hi, mpfr(0))
    if log:
        return _float_up(log_hi)
    return _float_up(_AR.up.exp(log_hi)) or 5e-324


def _exact(x: mpfr) -> Fraction:
    """An MPFR number as the exact rational it is."""
    n, d = x.as_integer_ratio()
    return Fraction(int(n), int(d))


def _enclose(compute: Callable[[Arith, bool], Interval]) -> Interval | None:
    """compute(ar, allow_slow) at rising precision until ln δ's enclosure is tight.

    Returns the tightest enclosure found (rigorous whatever its width), or None if
    no precision produced one.
    """
    best = None
    for bits in _PRECISIONS:
        try:
            found = compute(Arith(bits), bits == _PRECISIONS[-1])
        except ArithmeticError:
            continue
        if best is None or found.abs_width() < best.abs_width():
            best = found
        if found.abs_width() <= _LOG_WIDTH:
            break
    return best


def _enclose_or_raise(compute: Callable[[Arith, bool], Interval], what: str) -> Interval:
    """:func:`_enclose`, raising ArithmeticError (not returning None) when it finds nothing."""
    found = _enclose(compute)
    if found is None:
        raise ArithmeticError(f"{what} not enclosed at any precision up to {_PRECISIONS[-1]} bits")
    return found


# ==========================================================================
# zCDP → (ε, δ): Corollary 13
# ==========================================================================
def _log_ratio(u: Interval) -> Interval:
    """log(u/(1+u)) = log(1 − 1/α), α = 1 + u; as −log1p(1/u) when u > 1, where the
    difference log u − log(1+u) would cancel (u ~ 1e300 when ρ ~ δ²)."""
    if u.lo > 1:
        return -((1 / u).log1p())
    return u.log() - u.log1p()


def _g(u: Interval, rho: Interval, eps: Interval) -> Interval:
    """Eq. 18 at α = 1 + u: g = u(αρ − ε) + u·log(u/(1+u)) − log(1+u); δ ≤ e^g for every u > 0.

    Written in u = α − 1 so that α close to 1 (ρ ≫ ε) loses nothing.
    """
    log1p_u = u.log1p()
    return u * ((u + 1) * rho - eps) + u * _log_ratio(u) - log1p_u


def _newton_root(f, df, lo: mpfr, hi: mpfr, x: mpfr) -> mpfr:
    """A root of the increasing function f in (lo, hi), from x: Newton's steps, bisection
    (geometric when the bracket spans many octaves) whenever a step leaves the bracket.
    Stops once a step is below 2^−26 relative: Newton's error is then about its square."""
    ctx = _NEAR
    tol = mpfr(2) ** -26
    for _ in range(300):
        nxt = ctx.sub(x, ctx.div(f(x), df(x)))
        if not lo < nxt < hi or nxt != nxt:
            nxt = ctx.sqrt(ctx.mul(lo, hi)) if ctx.mul(lo, 4) < hi else ctx.div(ctx.add(lo, hi), 2)
        value = f(nxt)
        if value < 0:
            lo = nxt
        else:
            hi = nxt
        if abs(ctx.sub(nxt, x)) <= ctx.mul(nxt, tol) or value == 0:
            return nxt
        x = nxt
    return x


def _cdp_u(rho: Fraction, eps: Fraction) -> mpfr | None:
    """u* = α* − 1 for the minimiser α* of Eq. 18: the root of Eq. 19,
    g'(α) = (2α − 1)ρ − ε + log(1 − 1/α), in u.  Returns None when u* < 2^−60
    (ρ ≫ ε; δ is then 1 to within 2^−59).

    This only picks the point at which :func:`_g` evaluates a bound that holds at
    every α > 1, so it needs accuracy, not rigour: it runs in machine floats when
    ρ and ε fit them comfortably (the common case, a few µs), in MPFR otherwise.
    """
    r, e = _approx(rho), _approx(eps)
    if 1e-250 < r < 1e250 and e < 1e250 and (e == 0 or e > 1e-250):
        u = _cdp_u_float(r, e)
        return None if u is None else mpfr(u)
    return _cdp_u_mpfr(mpfr(rho, 64), mpfr(eps, 64))


def _cdp_u_float(r: float, e: float) -> float | None:
    """_cdp_u in machine floats (Newton on Eq. 19 in u, bracketed by Eqs. 21–22)."""

    def g1(u):
        ratio = -math.log1p(1 / u) if u > 1 else math.log(u) - math.log1p(u)
        return (2 * u + 1) * r - e + ratio

    lo = (e - r) / (2 * r)
    hi = max((e + 1 - r) / (2 * r), 1.0)
    if not lo > 0:
        lo = 2.0**-60
        if g1(lo) >= 0:
            return None
    # one fixed-point step of α = (ε + ρ − log(1 − 1/α))/(2ρ) ≈ (ε + ρ + 1/α)/(2ρ)
    u = (e + r + 1 / (lo + 1)) / (2 * r) - 1
    if not lo < u < hi:
        u = hi
    for _ in range(200):
        step = g1(u) / (2 * r + 1 / (u * (u + 1)))
        nxt = u - step
        if not lo < nxt < hi:
            nxt = math.sqrt(lo * hi) if 4 * lo < hi else (lo + hi) / 2
        if g1(nxt) < 0:
            lo = nxt
        else:
            hi = nxt
        if abs(nxt - u) <= nxt * 2.0**-26:
            return nxt
        u = nxt
    return u


def _cdp_u_mpfr(r: mpfr, e: mpfr) -> mpfr | None:
    """_cdp_u in MPFR, for parameters beyond the float range."""
    ctx = _NEAR

    def g1(u):
        return ctx.add(ctx.sub(ctx.mul(ctx.add(ctx.mul(2, u), 1), r), e), _near_log_ratio(u))

    def g2(u):
        return ctx.add(ctx.mul(2, r), ctx.div(1, ctx.mul(u, ctx.add(u, 1))))

    # Eqs. 21–22: α* ∈ ((ε+ρ)/(2ρ), max((ε+ρ+1)/(2ρ), 2)); below, g' → −∞ as u → 0.
    hi = max(ctx.div(ctx.sub(ctx.add(e, 1), r), ctx.mul(2, r)), mpfr(1))
    lo = ctx.div(ctx.sub(e, r), ctx.mul(2, r))
    if not lo > 0:
        lo = mpfr(2) ** -60
        if g1(lo) >= 0:
            return None
    return _newton_root(g1, g2, lo, hi, hi)


def _cdp_log_delta(rho: Fraction, eps: Fraction) -> mpfr:
    """An upper bound on ln δ of Corollary 13 (≤ 0): Eq. 18's g at u*, rounded up.

    The same sum as :func:`_g`, written out with directed rounding for speed:
    u > 0 is exact, so every term is monotone in ρ and ε.
    """
    u = _cdp_u(rho, eps)
    if u is None:
        return mpfr(0)
    dn, up = _AR.dn, _AR.up
    rho_hi = up.div(gmpy2.mpz(rho.numerator), gmpy2.mpz(rho.denominator))
    eps_lo = dn.div(gmpy2.mpz(eps.numerator), gmpy2.mpz(eps.denominator))
    log1p_lo = dn.log1p(u)
    first = up.mul(u, up.sub(up.mul(up.add(u, 1), rho_hi), eps_lo))  # u((u+1)ρ − ε)
    if u > 1:  # u·log(u/(1+u))
        second = up.mul(u, up.minus(dn.log1p(dn.div(1, u))))
    else:
        second = up.mul(u, up.sub(up.log(u), log1p_lo))
    g = up.sub(up.add(first, second), log1p_lo)  # − log(1+u)
    return min(g, mpfr(0))


def cdp_delta(rho: Number, eps: Number, *, log: bool = False) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP, by Corollary 13 with the optimal α.

    δ = inf_{α>1} e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α (Eq. 15), the infimum found
    by Newton's method on Eq. 19 and the bound evaluated at that α with directed
    rounding — any α gives a valid bound, so the result is never below Corollary
    13's δ, and within 1e−12 of it relatively.

    Parameters: ``rho`` > 0, ``eps`` >= 0.  ``log=True`` returns an upper bound
    on ln δ instead (≤ 0), for δ below the float range.
    """
    r = _positive(rho, "rho")
    e = _nonnegative(eps, "eps")
    return _delta_out(_cdp_log_delta(r, e), log)


def cdp_delta_standard(rho: Number, eps: Number, *, log: bool = False) -> float:
    """The classic conversion δ = exp(−(ε − ρ)²/(4ρ)) for ε ≥ ρ (δ = 1 otherwise).

    Equivalent to ε = ρ + 2√(ρ log(1/δ)) (Eq. 16).  Looser than :func:`cdp_delta`;
    provided for comparison.  Rounded up; ``log=True`` gives ln δ rounded up.
    """
    r = _positive(rho, "rho")
    e = _nonnegative(eps, "eps")
    if e <= r:
        return _delta_out(mpfr(0), log)
    return _delta_out(_AR.q(-((e - r) ** 2) / (4 * r)).hi, log)


def _cdp_eps_at(u: Interval, rho: Interval, log_inv_delta: Interval) -> Interval:
    """Eq. 13 with τ = αρ, α = 1 + u: ε = αρ + log(u/(1+u)) + (log(1/δ) − log(1+u))/u."""
    log1p_u = u.log1p()
    return (u + 1) * rho + _log_ratio(u) + (log_inv_delta - log1p_u) / u


def _cdp_eps_u(rho: mpfr, log_inv_delta: mpfr) -> mpfr:
    """u = α − 1 minimising ε(α): the root of u²ρ = log(1/δ) − log(1+u) (Newton, bracketed)."""
    ctx = _NEAR
    L = log_inv_delta

    def phi(u):
        return ctx.add(ctx.sub(ctx.mul(ctx.mul(u, u), rho), L), ctx.log1p(u))

    def dphi(u):
        return ctx.add(ctx.mul(ctx.mul(2, u), rho), ctx.div(1, ctx.add(u, 1)))

    hi = ctx.sqrt(ctx.div(L, rho))  # φ(hi) = log(1 + hi) > 0
    lo = min(ctx.div(L, ctx.mul(4, ctx.add(ctx.mul(hi, rho), 1))), ctx.div(hi, 2))
    while phi(lo) >= 0:
        lo = ctx.div(lo, 2)
    return _newton_root(phi, dphi, lo, hi, hi)


def _log_inv(delta: Fraction) -> Interval:
    return -_AR.q(delta).log()


def cdp_eps(rho: Number, delta: Number) -> float:
    """The smallest ε with ρ-zCDP ⇒ (ε, δ)-DP by Corollary 13, rounded up.

    ε = inf_{α>1} αρ + (log(1/δ) + (α−1)log(1 − 1/α) − log α)/(α − 1) (Eq. 13),
    evaluated with directed rounding at the minimising α: never below Corollary
    13's ε, within 1e−12 of it relatively.  ``rho`` > 0; 0 < ``delta`` < 1 (give
    ``delta`` as a string or Fraction, e.g. ``"1e-500"``, below the float range; down to
    ``"1e-4932"``: every parameter has at most :data:`MAX_BITS` = 16,384 bits).
    """
    r = _positive(rho, "rho")
    d = _probability(delta, "delta")
    return _float_up(max(_cdp_eps_interval(r, d).hi, mpfr(0)))


def _cdp_eps_interval(r: Fraction, d: Fraction) -> Interval:
    L = _log_inv(d)
    u = _cdp_eps_u(mpfr(r, 64), mpfr(L.lo, 64))
    return _cdp_eps_at(_AR.point(u), _AR.q(r), L)


def cdp_rho(eps: Number, delta: Number) -> float:
    """The largest ρ with ρ-zCDP ⇒ (ε, δ)-DP by Corollary 13, rounded down.

    Solves ε(ρ) = ε, ε(ρ) = min_α of Eq. 13, by Newton's method (ε(ρ) is concave
    and ∂ε/∂ρ = α*), then evaluates ρ(α) = (ε − log(1−1/α) − (log(1/δ) − log α)/(α−1))/α
    with directed rounding at the final α: any α gives a valid ρ, so the result
    never exceeds the truth.  ``eps`` >= 0, 0 < ``delta`` < 1.  A ρ below the
    smallest positive float (ε = 0 and δ < 1e−162, where ρ ≈ e·δ²/2) rounds down
    to 0.0.
    """
    e = _nonnegative(eps, "eps")
    d = _probability(delta, "delta")
    return _float_down(_cdp_rho_bound(e, d))


def _cdp_rho_bound(e: Fraction, d: Fraction) -> mpfr:
    """A certified lower bound on the largest ρ (an MPFR number > 0)."""
    ctx = _NEAR
    L = _log_inv(d)
    Lm = mpfr(L.lo, 64)
    em = mpfr(e, 64)

    def eps_of(rho):
        u = _cdp_eps_u(rho, Lm)
        value = ctx.add(
            ctx.add(ctx.mul(ctx.add(u, 1), rho), _near_log_ratio(u)),
            ctx.div(ctx.sub(Lm, ctx.log1p(u)), u),
        )
        return value, u

    # Start below the answer (Newton on the concave ε(ρ) then climbs to it):
    # the standard bound's ρ = (√(L+ε) − √L)², smaller still while ε(ρ) > ε.
    rho = ctx.square(ctx.sub(ctx.sqrt(ctx.add(Lm, em)), ctx.sqrt(Lm)))
    if not rho > 0:
        rho = mpfr(Fraction(d) ** 2, 64)
    value, u = eps_of(rho)
    while value > em:
        rho = ctx.div(rho, 4)
        value, u = eps_of(rho)
    for _ in range(100):
        nxt = ctx.add(rho, ctx.div(ctx.sub(em, value), ctx.add(u, 1)))  # ∂ε/∂ρ = α*
        if not nxt > rho:
            break
        rho = nxt
        value, u = eps_of(rho)
        if ctx.sub(em, value) <= ctx.mul(max(em, rho), mpfr(2) ** -52):
            break
    # ρ(α) = (ε − log(1 − 1/α) − (log(1/δ) − log α)/(α − 1))/α at α = 1 + u, rounded down;
    # more bits while the enclosure is not tight (its terms are of one size and cancel).
    bound = None
    for bits in _PRECISIONS:
        ar = Arith(bits)
        uu = ar.point(u)
        L_bits = -ar.q(d).log()
        bound = (ar.q(e) - _log_ratio(uu) - (L_bits - uu.log1p()) / uu) / (uu + 1)
        if bound.lo > 0 and bound.rel_width() <= mpfr(2) ** -50:
            break
    assert bound is not None  # _PRECISIONS is not empty
    return max(bound.lo, mpfr(0))


def _near_log_ratio(u: mpfr) -> mpfr:
    """log(u/(1+u)) in the 64-bit search context (see _log_ratio)."""
    ctx = _NEAR
    if u > 1:
        return ctx.minus(ctx.log1p(ctx.div(1, u)))
    return ctx.sub(ctx.log(u), ctx.log1p(u))


# ==========================================================================
# The discrete Gaussian
# ==========================================================================
def gaussian_rho(sigma2: Number, sensitivity: Sensitivity = 1) -> Fraction:
    """ρ = ‖Δ‖²/(2σ²), exactly: N_Z(0, σ²) noise per coordinate gives ρ-zCDP (Theorems 4, 14).

    ``sensitivity`` is a positive int Δ (an ℓ2 bound: ρ = Δ²/(2σ²) holds for every vector of
    the ball), an :class:`L2Ball`, or the difference vector μ of Theorem 15 (a non-empty
    sequence of ints, not all zero).  Returned as an exact Fraction.
    """
    s = _positive(sigma2, "sigma2")
    return norm2(_gaussian_sensitivity(sensitivity)) / (2 * s)


def _reduced(mu: tuple[int, ...], k: int) -> tuple[int, dict[int, int], int]:
    """Theorem 15's reduction of k copies of μ: g = gcd μ, how many coordinates carry each
    magnitude of μ/g ({b: n_b}), and S = ‖μ/g‖²·k."""
    g = math.gcd(*mu)
    counts: dict[int, int] = {}
    for x in mu:
        if x:
            counts[abs(x) // g] = counts.get(abs(x) // g, 0) + k
    return g, counts, sum(b * b * n for b, n in counts.items())


def _gaussian_log_delta(
    s: Fraction, eps: Fraction, mu: tuple[int, ...], k: int, memo: dict | None = None
) -> mpfr:
    """An upper bound on ln δ for k queries with vector μ.

    Three routes, each rigorous; the smallest upper bound wins:

    * Poisson: W = Σ_j μ_j Y_j over the k·d coordinates is g·W', g = gcd(μ), and W' is
      N_Z(0, s·S), S = ‖μ/g‖²·k, up to a relative factor 1 ± E (docs/accounting.md),
      so δ is Theorem 7's at σ² = s·S, Δ = g·S, times (1 ± E)/(1 ∓ E);
    * convolution: when E is not negligible (small σ², several coordinates) and the
      pmfs are short enough, W's distribution exactly, by fixed-point convolution;
    * zCDP: Theorem 14 + Corollary 13.

    ``memo`` (optional) keeps Theorem 7's enclosures by (g, S) across the vectors of one ball,
    which share them (at one s and ε).
    """
    rho = Fraction(k * sum(x * x for x in mu)) / (2 * s)
    upper = _cdp_log_delta(rho, eps)
    g, counts, S = _reduced(mu, k)
    error = lattice_error_bound_vector(counts, s)
    if error is not None:
        key = (g, S)
        if memo is not None and key in memo:
            found = memo[key]
        else:
            found = _enclose(lambda ar, slow: theorem7_log_delta(s * S, eps, g * S, ar, slow))
            if memo is not None:
                memo[key] = found
        if found is not None:
            e = _AR.point(error)
            correction = ((1 + e) / (1 - e)).log().hi
            upper = min(upper, _AR.up.add(found.hi, correction))
    if (error is None or error > _LOG_WIDTH) and sum(counts.values()) > 1:
        for bits in (256, 1200):
            bounds = convolution_delta(s, eps, mu, k, bits)
            if bounds is None:
                break
            low, high = bounds
            if high > 0:
                upper = min(upper, _AR.up.log(high))
            if low > 0 and _AR.up.sub(_AR.up.log(high), _AR.dn.log(low)) <= _LOG_WIDTH:
                break  # tight: no need for more bits
    return upper


@functools.lru_cache(maxsize=128)
def _ball_classes(ball: L2Ball, k: int) -> tuple[int, tuple[tuple[int, tuple], ...]] | None:
    """(Δ², the classes (g, blocks v/g of the maximal vectors v divisible by g) of k-fold
    concatenations by their gcd g), for :func:`_ball_log_delta`; None when the maximal
    vectors are too many or not all of one norm."""
    blocks = ball.blocks()
    if blocks is None or len({sum(x * x for x in v) for v in blocks}) != 1:
        return None
    classes = []
    for g in range(1, ball.radius + 1):
        part = tuple(tuple(x // g for x in v) for v in blocks if all(x % g == 0 for x in v))
        if not part:
            continue
        if len(part) == 1 and math.gcd(*part[0]) != 1:
            continue  # its concatenation has a larger gcd: another class
        if len(part) > 1 and not _anchors(part, k):
            continue  # no concatenation of these has gcd exactly g
        classes.append((g, part))
    return sum(x * x for x in blocks[0]), tuple(classes)


def _ball_log_delta(
    s: Fraction,
    eps: Fraction,
    ball: NeighbourSet,
    k: int,
    target: mpfr | None = None,
    hint: list | None = None,
) -> tuple[mpfr, bool] | None:
    """An upper bound on ln δ over *every* concatenation of k maximal vectors of the ball,
    without listing them (docs/accounting.md, *The ℓ2 ball*: the uniform route), and whether
    it is tight (every lattice error bound used ≤ 2^−31: within a relative 2^−30 of the
    truth, what listing the vectors could give at best).  None for another set than a ball,
    when the ball's maximal vectors do not all have one norm (a ``coordinates`` limit), are
    too many, or a class's bound fails.

    Every maximal vector has ‖v‖² = Δ², so a concatenation μ with g = gcd μ has
    S = k·Δ²/g², and by Theorem 15's reduction δ(μ) ≤ δ_7(s·S, ε, g·S)·(1 + E_μ)/(1 − E_μ):
    one Theorem 7 sum per g (a divisor of Δ), and one bound on E over every μ of that g
    (:func:`lattice_error_bound_ball` on the blocks v/g, v divisible by g).  Also never above
    the zCDP route.

    With a ``target`` (calibration's question), stops at the zCDP route when it is within the
    target, and at the first class that is tight and above it (evaluating first the class
    ``hint[0]`` that did last): the bound returned is then above the target, as the whole
    one would be.
    """
    if not isinstance(ball, L2Ball):
        return None  # a uniform bound of the ℓ2 ball's only
    found_classes = _ball_classes(ball, k)
    if found_classes is None:
        return None
    square, classes = found_classes
    upper = _cdp_log_delta(Fraction(k * square) / (2 * s), eps)
    if target is not None and upper <= target:
        return upper, True
    if hint:
        classes = tuple(sorted(classes, key=lambda c: c[0] != hint[0]))
    worst, tight = mpfr("-inf"), True
    for g, part in classes:
        S = k * square // (g * g)
        if len(part) == 1:  # one vector: k copies of it, its own bound
            counts: dict[int, int] = {}
            for x in part[0]:
                counts[x] = counts.get(x, 0) + k
            error = lattice_error_bound_vector(counts, s)
        else:
            error = lattice_error_bound_ball(part, k, s)
        if error is None:
            return upper, False  # the zCDP route bounds every vector

        def compute(ar: Arith, slow: bool, v: Fraction = s * S, d: int = g * S) -> Interval:
            return theorem7_log_delta(v, eps, d, ar, slow)

        found = _enclose(compute)
        if found is None:
            return None
        e = _AR.point(error)
        bound = _AR.up.add(found.hi, ((1 + e) / (1 - e)).log().hi)
        worst = max(worst, bound)
        close = error <= LATTICE_FINE_ENOUGH
        tight = tight and close
        if target is not None and close and bound > target and upper > target:
            if hint is not None:
                hint[:] = [g]
            return min(upper, bound), True
    if upper <= worst:
        return upper, tight
    return worst, tight


def _worst_log_delta(
    s: Fraction, eps: Fraction, sensitivity: tuple[int, ...] | NeighbourSet, k: int
) -> mpfr:
    """An upper bound on ln δ over every neighbour ``sensitivity`` admits (k queries).

    A vector is one neighbour pair.  An ℓ2 ball: the uniform route (:func:`_ball_log_delta`)
    when it is tight; else the smaller of it and the largest over the listed maximal vectors
    (:mod:`._neighbours`); with neither, the zCDP route at ρ = k·Δ²/(2σ²), which bounds every
    vector of the ball.
    """
    if isinstance(sensitivity, tuple):
        return _gaussian_log_delta(s, eps, sensitivity, k)
    uniform = _ball_log_delta(s, eps, sensitivity, k)
    if uniform is not None and uniform[1]:
        return uniform[0]
    worst = sensitivity.neighbours(k)
    if worst is None:
        cdp = _cdp_log_delta(Fraction(k * sensitivity.norm2) / (2 * s), eps)
        return cdp if uniform is None else min(cdp, uniform[0])
    listed = _listed_log_delta(s, eps, worst)
    return listed if uniform is None else min(listed, uniform[0])


def _listed_log_delta(s: Fraction, eps: Fraction, worst: list[tuple[tuple[int, ...], int]]) -> mpfr:
    """The largest ln δ bound over listed neighbours (μ, k), each exact (Theorem 15), taken in
    decreasing ‖μ‖: one whose zCDP bound (Theorem 14, Corollary 13: k‖μ‖²/(2σ²) bounds its δ)
    is already at most the largest found cannot raise it and is skipped."""
    memo: dict = {}
    best = mpfr("-inf")
    for mu, kk in sorted(worst, key=lambda w: -w[1] * sum(x * x for x in w[0])):
        rho = Fraction(kk * sum(x * x for x in mu)) / (2 * s)
        if best != mpfr("-inf") and _cdp_log_delta(rho, eps) <= best:
            continue
        best = max(best, _gaussian_log_delta(s, eps, mu, kk, memo))
    return best


def _worst_within(
    s: Fraction,
    eps: Fraction,
    sensitivity: tuple[int, ...] | NeighbourSet,
    k: int,
    target: mpfr,
    hint: list | None = None,
) -> bool:
    """Whether :func:`_worst_log_delta` ≤ ``target``, stopping at the first neighbour that
    fails (calibration's question: half its points fail, usually on the first vector);
    ``hint`` (a list, updated) names the class of the ball's uniform route that failed last."""
    if isinstance(sensitivity, tuple):
        return _gaussian_log_delta(s, eps, sensitivity, k) <= target
    uniform = _ball_log_delta(s, eps, sensitivity, k, target, hint)
    if uniform is not None and (uniform[1] or uniform[0] <= target):
        return uniform[0] <= target
    worst = sensitivity.neighbours(k)
    if worst is None:
        return _cdp_log_delta(Fraction(k * sensitivity.norm2) / (2 * s), eps) <= target
    memo: dict = {}
    return all(
        _cdp_log_delta(Fraction(kk * sum(x * x for x in mu)) / (2 * s), eps) <= target
        or _gaussian_log_delta(s, eps, mu, kk, memo) <= target
        for mu, kk in worst
    )


def gaussian_delta(
    sigma2: Number, eps: Number, sensitivity: Sensitivity = 1, k: int = 1, *, log: bool = False
) -> float:
    """The exact δ(ε) of the discrete Gaussian mechanism, rounded up.

    The mechanism adds N_Z(0, σ²) to each coordinate of an integer-valued query
    whose values on neighbouring inputs differ by at most ``sensitivity`` (a
    positive int Δ, or the difference vector μ of Theorem 15), answered ``k``
    times (composition).  Returned: the smallest δ with (ε, δ)-DP —

    * k = 1, scalar Δ: Theorem 7, δ = P[Y > εσ²/Δ − Δ/2] − e^ε·P[Y > εσ²/Δ + Δ/2];
    * otherwise Theorem 15, δ = E[max(0, 1 − e^{ε − Z})] for the privacy loss Z
      of all k·d coordinates (Eq. 23).  Poisson summation reduces it to Theorem 7
      for one query with σ² scaled by ‖μ/g‖²·k (g = gcd μ), up to a relative
      factor 1 ± E with E an explicit bound applied to the safe side (E < 1e−9
      once σ² ≥ 1.6 at k·d = 100 with one magnitude, σ² ≳ 20 for vectors such as
      (4, 1)).  Where E is larger and the noise pmfs are short (small σ², few
      coordinates) the distribution of the loss is convolved exactly instead;
      where neither is possible (small σ² with many coordinates) the result is
      an upper bound looser by E, and never above the zCDP route.

    The result is never below the true δ and, except as noted, within 1e−9 of it
    relatively; it is also never above :func:`cdp_delta` at ρ = k·‖Δ‖²/(2σ²).  Work
    does not grow with σ (σ² = 10^100 answers in milliseconds).  ``log=True``
    returns an upper bound on ln δ, so that e.g. δ = 7.4e−549 (σ² = 2500, ε = 1)
    is reported; without it such a δ comes back as 5e−324, still an upper bound.

    Parameters: ``sigma2`` > 0, ``eps`` >= 0, ``k`` an integer >= 1.
    """
    s = _positive(sigma2, "sigma2")
    e = _nonnegative(eps, "eps")
    sens = _gaussian_sensitivity(sensitivity)
    kk = _count(k, "k")
    return _delta_out(_worst_log_delta(s, e, sens, kk), log)


def _smallest_eps(
    log_delta_hi: Callable[[Fraction], mpfr], target: mpfr, good: Fraction
) -> Fraction:
    """The smallest ε (to a relative 2^−36) with log_delta_hi(ε) ≤ target, given one that works.

    Regula falsi (Illinois) on φ(ε) = √(−ln δ(ε)) − √(−ln target), which is close to
    linear in ε (ln δ falls like −(εσ)²/2), keeping a bracket [bad, good]; only
    certified points ('good') are ever returned.
    """
    ctx = _NEAR
    root_target = ctx.sqrt(ctx.minus(target))

    def evaluate(e: Fraction):
        """(certified: ln δ(e) ≤ target, exactly compared; φ(e) for interpolation only)."""
        value = log_delta_hi(e)
        root = ctx.sqrt(ctx.minus(value)) if value < 0 else mpfr(0)
        return value <= target, ctx.sub(root, root_target)

    good_ok, f_good = evaluate(good)
    while not good_ok:  # make sure 'good' is certified
        good = good * 2 + 1
        good_ok, f_good = evaluate(good)
    bad = Fraction(0)
    bad_ok, f_bad = evaluate(bad)
    if bad_ok:
        return bad
    side = 0
    for _ in range(200):
        if good - bad <= good * Fraction(1, 2**36):
            break
        # interpolation point, kept away from the ends
        if f_good > f_bad and gmpy2.is_finite(f_good):
            t = ctx.div(ctx.minus(f_bad), ctx.sub(f_good, f_bad))
        else:  # δ = 0 exactly at 'good' (the Laplace): bisect
            t = mpfr(0.5)
        t = min(max(t, mpfr(2) ** -20), 1 - mpfr(2) ** -20)
        mid = Fraction(_exact(mpfr(bad + (good - bad) * _exact(t), 64)))
        if not bad < mid < good:
            mid = (bad + good) / 2
        mid_ok, f_mid = evaluate(mid)
        if mid_ok:
            good, f_good = mid, f_mid
            if side == -1:
                f_bad = ctx.div(f_bad, 2)
            side = -1
        else:
            bad, f_bad = mid, f_mid
            if side == 1:
                f_good = ctx.div(f_good, 2)
            side = 1
    return good


def gaussian_epsilon(
    sigma2: Number, delta: Number, sensitivity: Sensitivity = 1, k: int = 1
) -> float:
    """The smallest ε with :func:`gaussian_delta` (σ², ε, …) ≤ δ, rounded up.

    Same mechanism and accuracy as :func:`gaussian_delta`; found by safeguarded
    regula falsi, and only an ε whose δ upper bound is certified ≤ ``delta`` is
    returned (to a relative 1.5e−11 of the smallest).  ``sigma2`` > 0,
    0 < ``delta`` < 1 (down to ``"1e-4932"``: :data:`MAX_BITS`), ``k`` >= 1.
    """
    s = _positive(sigma2, "sigma2")
    d = _probability(delta, "delta")
    sens = _gaussian_sensitivity(sensitivity)
    kk = _count(k, "k")
    target = _AR.q(d).log().lo
    rho = kk * norm2(sens) / (2 * s)
    start = _exact(mpfr(_cdp_eps_interval(rho, d).hi, 64)) + Fraction(1, 2**40)
    found = _smallest_eps(
        lambda e: _worst_log_delta(s, e, sens, kk), target, max(start, Fraction(0))
    )
    return _float_up(found)


# ==========================================================================
# The discrete Laplace
# ==========================================================================
def laplace_epsilon(scale: Number, sensitivity: int = 1, k: int = 1, delta: Number = 0) -> float:
    """ε of the discrete Laplace Lap_Z(t) (P[x] ∝ e^{−|x|/t}) over ``k`` queries, rounded up.

    With ``delta`` = 0 (the default) the pure ε = k·Δ/t; with 0 < ``delta`` < 1 the
    smallest ε with :func:`laplace_delta` (t, ε, Δ, k) ≤ δ, found as for
    :func:`gaussian_epsilon` (only a certified ε is returned).  ``scale`` t > 0;
    ``sensitivity`` Δ a positive int (ℓ1 sensitivity); ``k`` >= 1.
    """
    t = _positive(scale, "scale")
    (sens,) = _sensitivity(sensitivity, vector_ok=False)
    kk = _count(k, "k")
    d = _probability(delta, "delta", allow_zero=True)
    pure = Fraction(kk * sens) / t
    if d == 0:
        return _float_up(_AR.q(pure).hi)

    def log_delta_hi(e: Fraction) -> mpfr:
        bound = _laplace_log_delta(t, e, sens, kk)
        return mpfr("-inf") if bound is None else bound

    return _float_up(_smallest_eps(log_delta_hi, _AR.q(d).log().lo, pure))


def _laplace_log_delta(t: Fraction, eps: Fraction, delta: int, k: int) -> mpfr | None:
    """Upper bound on ln δ of k-fold Lap_Z(t) with sensitivity Δ (None when δ = 0 exactly).

    δ = (1 + e^{ε0})^{−k} Σ_l C(k,l)·max(0, e^{lε0} − e^{ε + (k−l)ε0}), ε0 = Δ/t (Eq. 49).
    The terms are positive for l > (k + ε/ε0)/2 and log-concave in l, so they are
    summed outward from the largest, until the rest is negligible: writing
    B_l = C(k,l)e^{lε0} and w_l = 1 − e^{ε − (2l−k)ε0} ∈ (0, 1] (increasing), the terms
    above l sum to at most B_l·r/(1 − r) once r = B_{l+1}/B_l < 1, and those below l to
    at most w_l·B_l·q/(1 − q) once q = B_{l−1}/B_l < 1 (both ratios fall away from the
    peak).  Each term is the last one times its exact ratio, B_{l±1}/B_l (a rational
    times e^{±ε0}) and u_{l±1}/u_l = e^{∓2ε0} (u_l = 1 − w_l), in directed rounding, as a
    multiple of the first B (its logarithm taken once): a few multiplications a term, so
    k = 10^7 (about 10^4 terms) takes a tenth of a second.  Where w_l < 1/2 it is
    computed directly, not as 1 − u_l, so that no cancellation widens it.
    """
    e0 = Fraction(delta) / t
    if eps >= k * e0:
        return None
    v = (k + eps / e0) / 2
    first = v.numerator // v.denominator + 1  # first positive term
    ctx = _NEAR
    peak = int(ctx.floor(ctx.div(k + 1, ctx.add(1, ctx.exp(-mpfr(e0, 64))))))  # mode of B_l
    start = min(max(first, peak), k)
    result = None
    for bits in _PRECISIONS[:3]:
        ar = Arith(bits)
        dn, up = ar.dn, ar.up
        E0 = ar.q(e0)
        grow, shrink, fall = E0.exp(), (-E0).exp(), (E0 * -2).exp()  # e^{ε0}, e^{−ε0}, e^{−2ε0}
        negligible = mpfr(2) ** (-(2 * bits) // 3)
        one = mpfr(1)

        def weight(l: int, ar: Arith = ar) -> tuple[mpfr, mpfr]:
            """w_l = −expm1(ε − (2l − k)ε0), enclosed directly."""
            w = -(ar.q(eps - (2 * l - k) * e0).expm1())
            return max(w.lo, mpfr(0)), w.hi

        u_start = ar.q(eps - (2 * start - k) * e0).exp()
        w_lo, w_hi = weight(start)
        s_lo, s_hi = w_lo, w_hi  # Σ (B_l/B_start)·w_l, enclosed
        t_lo = t_hi = one  # B_l/B_start
        u_lo, u_hi = u_start.lo, u_start.hi
        l = start
        while l < k:  # upward: B_l = B_{l−1}·e^{ε0}(k − l + 1)/l
            l += 1
            t_lo = dn.div(dn.mul(dn.mul(t_lo, grow.lo), k - l + 1), l)
            t_hi = up.div(up.mul(up.mul(t_hi, grow.hi), k - l + 1), l)
            u_lo, u_hi = dn.mul(u_lo, fall.lo), up.mul(u_hi, fall.hi)
            w_lo, w_hi = weight(l) if u_hi > 0.5 else (dn.sub(one, u_hi), up.sub(one, u_lo))
            s_lo, s_hi = dn.add(s_lo, dn.mul(t_lo, w_lo)), up.add(s_hi, up.mul(t_hi, w_hi))
            r = up.div(up.mul(grow.hi, k - l), l + 1)  # B_{l+1}/B_l
            if l < k and r < 1:
                rest = up.div(up.mul(t_hi, r), dn.sub(one, r))
                if rest <= dn.mul(s_lo, negligible):
                    s_hi = up.add(s_hi, rest)
                    break
        t_lo = t_hi = one
        u_lo, u_hi = u_start.lo, u_start.hi
        l = start
        while l > first:  # downward: B_l = B_{l+1}·e^{−ε0}(l + 1)/(k − l)
            l -= 1
            t_lo = dn.div(dn.mul(dn.mul(t_lo, shrink.lo), l + 1), k - l)
            t_hi = up.div(up.mul(up.mul(t_hi, shrink.hi), l + 1), k - l)
            u_lo, u_hi = dn.div(u_lo, fall.hi), up.div(u_hi, fall.lo)
            w_lo, w_hi = weight(l) if u_hi > 0.5 else (dn.sub(one, u_hi), up.sub(one, u_lo))
            s_lo, s_hi = dn.add(s_lo, dn.mul(t_lo, w_lo)), up.add(s_hi, up.mul(t_hi, w_hi))
            q = up.div(up.mul(shrink.hi, l), k - l + 1)  # B_{l−1}/B_l
            if l > first and q < 1:
                rest = up.div(up.mul(up.mul(t_hi, w_hi), q), dn.sub(one, q))
                if rest <= dn.mul(s_lo, negligible):
                    s_hi = up.add(s_hi, rest)
                    break
        log_start = (
            _lngamma(ar, k + 1) - _lngamma(ar, start + 1) - _lngamma(ar, k - start + 1)
        ) + E0 * start
        total = Interval(dn.log(s_lo), up.log(s_hi), ar) + log_start
        result = total - (E0 + shrink.log1p()) * k  # − ln (1 + e^{ε0})^k
        if result.abs_width() <= _LOG_WIDTH:
            break
    assert result is not None  # _PRECISIONS[:3] is not empty
    return result.hi


def _lngamma(ar: Arith, n: int) -> Interval:
    """ln Γ(n) for an integer n ≥ 1 (increasing there, correctly rounded by MPFR)."""
    x = gmpy2.mpz(n)
    return Interval(ar.dn.lngamma(x), ar.up.lngamma(x), ar)


def laplace_delta(
    scale: Number, eps: Number, sensitivity: int = 1, k: int = 1, *, log: bool = False
) -> float:
    """δ(ε) of k-fold composition of the discrete Laplace mechanism Lap_Z(t), rounded up.

    With ε0 = Δ/t, δ = (1 + e^{ε0})^{−k}·Σ_{l=0}^{k} C(k,l)·max(0, e^{lε0} − e^{ε+(k−l)ε0})
    (Eq. 49 with δ = 0).  For Δ = 1 the privacy loss takes only the values ±ε0,
    so this is exact; for Δ > 1 it is the optimal composition bound for
    ε0-DP mechanisms (Kairouz–Oh–Viswanath), an upper bound.  δ is exactly 0
    when ε ≥ k·ε0 (then ``log=True`` returns −inf).  Computed in log space;
    ``log=True`` returns an upper bound on ln δ.

    Parameters: ``scale`` t > 0, ``eps`` >= 0, ``sensitivity`` a positive int,
    ``k`` >= 1.
    """
    t = _positive(scale, "scale")
    e = _nonnegative(eps, "eps")
    (delta,) = _sensitivity(sensitivity, vector_ok=False)
    kk = _count(k, "k")
    bound = _laplace_log_delta(t, e, delta, kk)
    if bound is None:
        return -math.inf if log else 0.0
    return _delta_out(bound, log)


def laplace_variance(scale: Number) -> float:
    """Var[Lap_Z(t)] = 2q/(1 − q)², q = e^{−1/t}, exactly (rounded up)."""
    t = _positive(scale, "scale")
    ar = _AR
    q = ar.q(-1 / t).exp()
    one_minus_q = -(ar.q(-1 / t).expm1())
    return _float_up_finite((q.scale2(1) / (one_minus_q * one_minus_q)).hi, "the variance")


def laplace_interval(scale: Number, alpha: Number) -> tuple[int, int]:
    """(−w, w), w the smallest integer with P[|X| ≤ w] ≥ 1 − α for X ~ Lap_Z(t).

    P[|X| > w] = 2q^{w+1}/(1 + q), q = e^{−1/t}.  ``scale`` > 0, 0 < ``alpha`` < 1.
    """
    t = _positive(scale, "scale")
    a = _probability(alpha, "alpha")
    # w is about t·ln(2/α): enough bits to place it to within one integer
    ar = Arith(80 + max(0, (t.numerator // t.denominator).bit_length()))
    inv_t = ar.q(1 / t)
    log_q = -inv_t
    log_two_over = ar.q(2).log() - (log_q.exp() + 1).log()  # ln(2/(1+q))

    def outside_hi(w: int) -> mpfr:  # upper bound on ln P[|X| > w]
        return (log_two_over + log_q * (w + 1)).hi

    target = ar.q(a).log().lo
    # w + 1 ≥ (ln α − ln(2/(1+q)))/ln q
    guess = (log_two_over - ar.q(a).log()) * t
    w = max(int(guess.lo) - 2, 0)
    # the smallest w ≥ this start with outside_hi(w) ≤ target: gallop, then bisect (the guess
    # is within a relative 2^−60 of the answer, which is many integers when t is huge)
    step = 1
    while outside_hi(w + step - 1) > target:
        w, step = w + step, step * 2
    lo, hi = w, w + step - 1  # outside_hi(hi) ≤ target; every w' < lo is known not to work
    while lo < hi:
        mid = (lo + hi) // 2
        if outside_hi(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return (-lo, lo)


# ==========================================================================
# Utility of the discrete Gaussian
# ==========================================================================
def gaussian_variance(sigma2: Number) -> float:
    """Var[N_Z(0, σ²)], exactly (rounded up); it is < σ² (Proposition 21).

    By Poisson summation (Lemma 22) for σ² ≥ 1/6, by direct summation below.
    """
    s = _positive(sigma2, "sigma2")
    return _float_up_finite(variance(s, Arith(192)).hi, "the variance")


def _log_sf(s: Fraction, m: int) -> Interval:
    """ln P[Y ≥ m] for Y ~ N_Z(0, s)."""

    def compute(ar: Arith, slow: bool) -> Interval:
        if m >= 1:
            return log_tail(s, m, ar, allow_slow=slow) - log_normaliser(s, ar)
        # P[Y ≥ m] = 1 − P[Y ≥ 1 − m] (symmetry), and P[Y ≥ 1 − m] ≤ 1/2
        upper = (log_tail(s, 1 - m, ar, allow_slow=slow) - log_normaliser(s, ar)).exp()
        return (-upper).log1p()

    return _enclose_or_raise(compute, "the tail probability")


def _integer_floor(x, name: str) -> int:
    q = _rational(x, name)
    return q.numerator // q.denominator


def gaussian_pmf(x: Number, sigma2: Number) -> float:
    """P[Y = x] for Y ~ N_Z(0, σ²) (0.0 when x is not an integer)."""
    q = _rational(x, "x")
    s = _positive(sigma2, "sigma2")
    if q.denominator != 1:
        return 0.0
    y = q.numerator
    found = _enclose_or_raise(
        lambda ar, slow: ar.q(Fraction(-y * y) / (2 * s)) - log_normaliser(s, ar), "the pmf"
    )
    return float(_AR.near.exp(found.hi))


def gaussian_sf(x: Number, sigma2: Number) -> float:
    """P[Y > x] for Y ~ N_Z(0, σ²), to about 1e−12 relative (any σ², any x)."""
    s = _positive(sigma2, "sigma2")
    m = _integer_floor(x, "x") + 1
    return float(_AR.near.exp(_log_sf(s, m).hi))


def gaussian_cdf(x: Number, sigma2: Number) -> float:
    """P[Y ≤ x] for Y ~ N_Z(0, σ²), to about 1e−12 relative (any σ², any x)."""
    s = _positive(sigma2, "sigma2")
    m = _integer_floor(x, "x")
    # P[Y ≤ m] = P[Y ≥ −m]
    return float(_AR.near.exp(_log_sf(s, -m).hi))


def gaussian_interval(sigma2: Number, alpha: Number) -> tuple[int, int]:
    """(−w, w), w the smallest integer with P[|Y| ≤ w] ≥ 1 − α for Y ~ N_Z(0, σ²).

    Error bars for a released count: the noise lies in [−w, w] with probability
    at least 1 − α.  Certified (an upper bound on P[|Y| > w] is compared with α),
    so a w that only just misses by rounding is never returned.
    ``sigma2`` > 0, 0 < ``alpha`` < 1.
    """
    s = _positive(sigma2, "sigma2")
    a = _probability(alpha, "alpha")
    target = _AR.q(a / 2).log().lo  # P[|Y| > w] = 2·P[Y ≥ w + 1]

    def ok(w: int) -> bool:
        return _log_sf(s, w + 1).hi <= target

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = -1  # ok(lo) is false or lo < 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return (-hi, hi)


# ==========================================================================
# Calibration
# ==========================================================================
def _decimal_digits(n: int) -> int:
    """How many decimal digits the int n ≥ 1 has (no str(): that is limited to 4300 digits)."""
    d = max(1, (n.bit_length() * 30103) // 100000)
    while 10**d <= n:
        d += 1
    while d > 1 and 10 ** (d - 1) > n:
        d -= 1
    return d


def _grid_up(x: Fraction) -> Fraction:
    """The smallest number with GRID_DIGITS significant decimal digits that is >= x > 0."""
    e = _decimal_digits(x.numerator // x.denominator) - GRID_DIGITS if x >= 1 else None
    if e is None:
        e = -GRID_DIGITS
        while x * Fraction(10) ** (-e) < 10 ** (GRID_DIGITS - 1):
            e -= 1
    scaled = x / Fraction(10) ** e
    digits = -((-scaled.numerator) // scaled.denominator)  # ceil
    return Fraction(digits) * Fraction(10) ** e


def _grid_step(x: Fraction, up: bool) -> Fraction:
    """The next grid point above (or below) the grid point x."""
    e = 0
    scaled = x
    while scaled.denominator != 1 or scaled.numerator >= 10**GRID_DIGITS:
        if scaled.denominator != 1:
            scaled *= 10
            e -= 1
        else:
            scaled /= 10
            e += 1
    while scaled.numerator < 10 ** (GRID_DIGITS - 1):
        scaled *= 10
        e -= 1
    d = scaled.numerator + (1 if up else -1)
    if d < 10 ** (GRID_DIGITS - 1):
        d, e = 10**GRID_DIGITS - 1, e - 1
    return Fraction(d) * Fraction(10) ** e


def _smallest_grid(works: Callable[[Fraction], bool], good: Fraction) -> Fraction:
    """The smallest grid point g ≤ good with works(g) found by bisection, given works(good)."""
    bad = _grid_up(good / 2)
    while works(bad):
        good, bad = bad, _grid_up(bad / 2)
    # bisection on grid points between bad and good (geometric midpoints)
    while True:
        below = _grid_step(good, up=False)
        if below <= bad:
            return good
        mid = _grid_up(Fraction(_exact(_NEAR.sqrt(mpfr(bad * good, 64)))))
        if not bad < mid < good:
            mid = below
        if works(mid):
            good = mid
        else:
            bad = mid


#: Most grid points :func:`calibrate_gaussian` checks one by one below the bisection's answer
#: (and, with ``round_up_safe``, above it); past this the bracket is not scanned (a check costs
#: up to 5 ms where the exact convolution route answers).
_SCAN_MAX = 500


#: Intervals of fewer grid steps than this are not split further (the points are checked).
_FEW_STEPS = 16


def _grid_ulp(x: Fraction) -> Fraction:
    """The spacing of the grid just above x > 0."""
    g = _grid_up(x)
    return _grid_step(g, up=True) - g


def _noisy_coordinates(sens: tuple[int, ...] | NeighbourSet, k: int) -> int:
    """At most how many noisy coordinates one person's difference moves over k releases:
    k times a set's ``support`` (min(Δ², c) for a ball: an integer vector of ℓ2 norm ≤ Δ has
    at most Δ² nonzero entries), k·|supp μ| for a vector μ."""
    if isinstance(sens, NeighbourSet):
        return k * sens.support
    return k * sum(1 for x in sens if x)


def _member(sens: tuple[int, ...] | NeighbourSet) -> tuple[int, ...]:
    """One vector the sensitivity admits, for lower bounds: (Δ,) of a ball."""
    return sens.member() if isinstance(sens, NeighbourSet) else sens


def _log_delta_above(
    a: Fraction, b: Fraction, e: Fraction, sens: tuple[int, ...] | NeighbourSet, k: int
) -> mpfr:
    """An upper bound on ln δ(ε) at every σ² in [a, b] (not only at grid points).

    The scaling bound of docs/accounting.md ("Calibration"): for n noisy coordinates,
    δ_s(ε) ≤ (b/a)^{1 + n/2}·δ_b(ε·a/b) for all s in [a, b] — the pmf of n coordinates
    at s is at most (Θ(b)/Θ(a))^n ≤ (b/a)^{n/2} times that at b, and the privacy loss at s
    is at most b/a times that at b, which costs one more factor b/a by concavity of
    1 − e^{−x}.  δ_b is the library's own certified bound (whatever vector it accounts).
    """
    n = _noisy_coordinates(sens, k)
    penalty = (_AR.q(b / a).log() * Fraction(n + 2, 2)).hi
    return _AR.up.add(_worst_log_delta(b, e * a / b, sens, k), penalty)


def _log_delta_below(
    a: Fraction, b: Fraction, e: Fraction, mu: tuple[int, ...], k: int, enough: mpfr
) -> mpfr:
    """A lower bound on the true ln δ(ε) at every σ² = s in [a, b] (−inf when none is
    found); the first found above ``enough`` is returned.

    From the vector μ itself (for a scalar Δ, the vector (Δ,): one of the ball's, so a
    lower bound either way): by Poisson summation (as in :func:`_gaussian_log_delta`)
    δ_s(ε) ≥ δ_7(s·S, ε, g·S)·(1 − E)/(1 + E), δ_7 Theorem 7's one-query δ, g = gcd μ,
    S = k‖μ/g‖², E from :func:`lattice_error_bound_vector` (E falls as s grows, so E(a)
    serves on [a, b]); or from one coordinate alone (a post-processing),
    δ_s(ε) ≥ δ_7(s, ε, max|μ_j|).  Over [a, b], the scaling bound of one query read
    backwards (see :func:`_log_delta_above`) gives δ_7(v, ε, D) ≥ (a/b)^{3/2}·δ_7(v·a/s,
    ε·b/a, D) for v = s·S.
    """
    g, counts, S = _reduced(mu, k)
    penalty = (_AR.q(b / a).log() * Fraction(3, 2)).hi
    eps = e * b / a
    best = mpfr("-inf")
    for whole in (False, True) if sum(counts.values()) > 1 else (False,):
        if whole:  # the cheap one (one coordinate) did not do
            error, variance, shift = lattice_error_bound_vector(counts, a), a * S, g * S
        else:
            error, variance, shift = mpfr(0), a, max(abs(x) for x in mu)
        if error is None or error >= 0.5:
            continue

        def compute(ar: Arith, slow: bool, v: Fraction = variance, d: int = shift) -> Interval:
            return theorem7_log_delta(v, eps, d, ar, slow)

        found = _enclose(compute)
        if found is None:
            continue
        log_r = ((1 + _AR.point(error)) / (1 - _AR.point(error))).log()
        best = max(best, _AR.dn.sub(_AR.dn.sub(found.lo, log_r.hi), penalty))
        if best > enough:
            break
    return best


def _log_delta_near_zero(a: Fraction, e: Fraction, magnitude: int) -> mpfr:
    """A lower bound on the true ln δ(ε) at every σ² in (0, a]: the set {0} of one
    coordinate shifted by D gives δ ≥ p(0)·(1 − e^{ε − D²/(2s)}) ≥ (1 − e^{ε − D²/(2a)})/Θ(a),
    with Θ(a) ≤ 1 + 2q/(1 − q), q = e^{−1/(2a)} (y² ≥ y)."""
    ar = _AR
    exponent = e - Fraction(magnitude * magnitude) / (2 * a)
    if exponent >= 0:
        return mpfr("-inf")
    q = ar.q(-1 / (2 * a)).exp()
    theta = 1 + q.scale2(1) / -(ar.q(-1 / (2 * a)).expm1())  # 1 − q without cancellation
    return ((-(ar.q(exponent).expm1())).log() - theta.log()).lo


def _lattice_floor(e: Fraction, log_delta_hi: mpfr, mu: tuple[int, ...], k: int, top: Fraction):
    """A σ² ≤ top below which no σ² certifies δ: there the true δ alone is above it.

    Covers (0, floor] with (0, a0] (:func:`_log_delta_near_zero`) and intervals [a, b] on
    which :func:`_log_delta_below` exceeds ln δ, widened while they work and narrowed
    while they do not, down to a few grid steps.  Returns 0 when nothing is proven.
    """
    magnitude = max(abs(x) for x in mu)
    a = Fraction(magnitude * magnitude, 2) / (e + 1)
    for _ in range(200):
        if _log_delta_near_zero(a, e, magnitude) > log_delta_hi:
            break
        a /= 2
    else:
        return Fraction(0)
    h = Fraction(1, 4)
    while a < top:
        b = min(_grid_up(a * (1 + h)), top)
        if b <= a:
            break
        if _log_delta_below(a, b, e, mu, k, log_delta_hi) > log_delta_hi:
            a, h = b, min(h * 3 / 2, Fraction(1))
        elif b - a <= _FEW_STEPS * _grid_ulp(a):
            break  # a few grid steps and not proven: the bracket ends here
        else:
            h /= 2
    return min(a, top)


def _grid_below(hi: Fraction, lo: Fraction) -> Iterator[Fraction]:
    """The grid points g with lo < g < hi, downward from the grid point hi."""
    g = _grid_step(hi, up=False)
    while g > lo:
        yield g
        g = _grid_step(g, up=False)


def _smallest_below(works: Callable[[Fraction], bool], found: Fraction, floor: Fraction):
    """The smallest grid point in (floor, found] with works(), given works(found); None when
    more than _SCAN_MAX grid points lie between (then the bisection's found stands)."""
    for i, _ in enumerate(_grid_below(found, floor)):
        if i >= _SCAN_MAX:
            return None
    best = found
    for g in _grid_below(found, floor):
        if works(g):
            best = g
    return best


def _round_up_safe(
    works: Callable[[Fraction], bool],
    found: Fraction,
    zcdp: Fraction,
    e: Fraction,
    sens: tuple[int, ...] | NeighbourSet,
    k: int,
    target: mpfr,
) -> Fraction:
    """The smallest grid point S ≥ found such that every grid point ≥ S gives the target.

    Above zcdp (≥ the continuous zCDP threshold) Corollary 13 certifies every σ² (ρ falls
    as σ² grows).  Below it, intervals [a, top] are proven with :func:`_log_delta_above`,
    downward from zcdp, widened while they work and narrowed while they do not, until
    a few grid steps fail; the grid points left are checked one by one, downward, and S is
    the one above the highest that fails.  More than _SCAN_MAX of them: zcdp (not checked
    one by one).
    """
    top, h = zcdp, Fraction(1, 4)
    while top > found:
        a = max(_grid_up(top / (1 + h)), found)
        if a >= top:
            break
        if _log_delta_above(a, top, e, sens, k) <= target:
            top, h = a, min(h * 3 / 2, Fraction(1))
        elif top - a <= _FEW_STEPS * _grid_ulp(a):
            break  # a few grid steps and not proven: check the grid below one by one
        else:
            h /= 2
    for i, _ in enumerate(_grid_below(top, _grid_step(found, up=False))):
        if i >= _SCAN_MAX:
            return zcdp  # (δ near 1, or small σ² with many coordinates: the bound is weak)
    safe = top
    for g in _grid_below(top, _grid_step(found, up=False)):
        if not works(g):
            return safe
        safe = g
    return safe


def calibrate_gaussian(
    eps: Number,
    delta: Number,
    sensitivity: Sensitivity = 1,
    k: int = 1,
    method: str = "exact",
    *,
    round_up_safe: bool = False,
) -> Fraction:
    """The σ² of N_Z(0, σ²) noise that provably gives (ε, δ)-DP for k queries.

    Returns a σ² with ``GRID_DIGITS`` (4) significant decimal digits for which the
    chosen accounting certifies the target:

    * ``method="exact"``: :func:`gaussian_delta` (σ², ε, sensitivity, k) ≤ δ —
      Theorems 7 and 15 (about 13% less variance than zCDP at k = 100);
    * ``method="zcdp"``: k·‖Δ‖²/(2σ²) ≤ :func:`cdp_rho` (ε, δ) — Theorem 14 and
      Corollary 13, the paper's Figure 4 route.

    The exact δ is **not monotone in σ²** at large ε: Theorem 7's δ is a sawtooth that
    rises within each step of ⌊εσ²/Δ − Δ/2⌋ (for one query, once ε ≳ 2).  For example
    at ε = 8, σ² = 1.313 gives δ = 1.80e−21 but σ² = 1.407 gives δ = 1.13e−20, so a
    σ² that certifies δ = 1e−20 may stop certifying it when rounded up.  Hence:

    * ``round_up_safe=False`` (default): the **smallest** grid σ² that certifies the
      target.  Only this value is certified: a larger σ² need not be.  It is found by
      bisection, then by checking every grid point below down to a proven floor under
      which one query's δ alone (a lower bound on the truth) is above the target; when
      that bracket holds more than 500 grid points (large σ² with many coordinates,
      where δ is in practice monotone) the bisection's value is returned.
    * ``round_up_safe=True`` (what the mechanisms use): the smallest grid σ² S such that
      **every** grid σ² ≥ S also gives (ε, δ)-DP, so S may be rounded up freely (to any
      number of significant digits).  Proven with Corollary 13 above the zCDP value (it
      is monotone), a scaling bound over whole intervals of σ² below it
      (δ_s(ε) ≤ (b/a)^{1 + n/2}·δ_b(ε·a/b) on [a, b], n noisy coordinates; see
      docs/accounting.md), and the library's certified δ at the grid points left (when
      more than 500 are left — δ near 1, or small σ² with many coordinates — the
      ``method="zcdp"`` value is returned).  Never above the ``method="zcdp"`` value.

    The result is an exact ``Fraction`` (e.g. ``Fraction(179, 10)`` for 17.90);
    the noise it gives never falls short of the target.  ``eps`` > 0,
    0 < ``delta`` < 1, ``k`` >= 1, sensitivity as in :func:`gaussian_delta`.
    """
    e = _positive(eps, "eps")
    d = _probability(delta, "delta")
    sens = _gaussian_sensitivity(sensitivity)
    kk = _count(k, "k")
    if method not in ("exact", "zcdp"):
        raise ValueError(f"method must be 'exact' or 'zcdp', got {method!r}")
    rho = _exact(_cdp_rho_bound(e, d))
    needed = kk * norm2(sens) / (2 * rho)
    if needed.numerator.bit_length() - needed.denominator.bit_length() >= MAX_BITS - 8:
        room = MAX_BITS - 9 + (2 * rho).numerator.bit_length() - (2 * rho).denominator.bit_length()
        raise ValueError(
            f"sensitivity is too large for k = {kk} at this (eps, delta): the noise would need "
            f"sigma2 above 2**{MAX_BITS - 8}, past the accounting's limit "
            "(dgauss.accounting.MAX_BITS); sensitivity**2 * k must be at most about "
            f"2**{room}"
        )
    zcdp = _grid_up(needed)
    if method == "zcdp":
        return zcdp
    log_d = _AR.q(d).log()
    target = log_d.lo

    hint: list = []

    def works(s: Fraction) -> bool:
        return _worst_within(s, e, sens, kk, target, hint)

    found = _smallest_grid(works, zcdp)
    # lower bounds on the true δ from one vector the sensitivity admits
    floor = _lattice_floor(e, log_d.hi, _member(sens), kk, found)
    found = _smallest_below(works, found, floor) or found
    if round_up_safe:
        return _round_up_safe(works, found, zcdp, e, sens, kk, target)
    return found


def calibrate_laplace(eps: Number, delta: Number = 0, sensitivity: int = 1, k: int = 1) -> Fraction:
    """The scale t of Lap_Z(t) noise that provably gives (ε, δ)-DP for k queries.

    With ``delta`` = 0 (pure DP) t = k·Δ/ε, rounded up to ``GRID_DIGITS`` (4)
    significant digits; with ``delta`` > 0 the smallest such grid point with
    :func:`laplace_delta` (t, ε, Δ, k) ≤ δ.  Returned as an exact ``Fraction``.
    ``eps`` > 0, 0 <= ``delta`` < 1, ``k`` >= 1, ``sensitivity`` a positive int.
    """
    e = _positive(eps, "eps")
    d = _probability(delta, "delta", allow_zero=True)
    (delta_1,) = _sensitivity(sensitivity, vector_ok=False)
    kk = _count(k, "k")
    pure = _grid_up(Fraction(kk * delta_1) / e)
    if d == 0:
        return pure
    target = _AR.q(d).log().lo

    def works(t: Fraction) -> bool:
        bound = _laplace_log_delta(t, e, delta_1, kk)
        return bound is None or bound <= target

    return _smallest_grid(works, pure)
