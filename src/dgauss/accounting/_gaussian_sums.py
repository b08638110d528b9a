"""Rigorous enclosures of the discrete Gaussian's sums, for :mod:`dgauss.accounting`.

Write f(y) = exp(−y²/(2s)) for the unnormalised N_Z(0, s) mass.  Everything the
accounting needs is one of

* the normaliser  Θ(s) = Σ_{y∈ℤ} f(y)                     (:func:`log_normaliser`)
* a tail          Σ_{y≥m} f(y)                             (:func:`log_tail`, ``eps=None``)
* Theorem 7's sum Σ_{y≥m} f(y)·(1 − exp(ε − Δ(2y + Δ)/(2s)))  (:func:`log_tail`)

each returned as an :class:`~dgauss._interval.Interval` around its natural
logarithm, so that values like e^(−10^99) are represented.  Three methods, each
with every error term bounded and added:

* **Poisson summation** for Θ when s is not small: Θ = √(2πs)·Σ_u e^(−2π²su²)
  (the paper's Fact 20 and Eq. 28), a handful of terms.
* **Direct summation** of the terms with a geometric bound on the rest, when
  few terms matter (small s, or a tail far enough out that f falls fast).
* **Euler–Maclaurin** on [m, ∞) otherwise (s large: O(1) work at any s):
  Σ_{y≥m} h(y) = ∫_m^∞ h + h(m)/2 − Σ_{k=1}^{q} B_{2k}/(2k)!·h^{(2k−1)}(m) + R,
  |R| ≤ 2ζ(2q)/(2π)^{2q}·∫_m^∞ |h^{(2q)}|.  The derivatives are Hermite
  polynomials, f^{(j)}(x) = (−1)^j s^{−j/2} He_j(x/√s) f(x), and the integral of
  |h^{(2q)}| is bounded two ways: over the whole line by Cauchy–Schwarz,
  ∫|f^{(p)}| ≤ s^{(1−p)/2}·√(2π·p!), and on [a, ∞) with a ≥ p√s by
  |He_p(t)| ≤ t^p e^{p²/(2t²)} ≤ √e·t^p, which gives
  ∫_a^∞ |f^{(p)}| ≤ √e·s^{−p}·a^p f(a)/(a/s − p/a).

The sums are scaled by F = f(max(m, 0)) internally, so no intermediate value
leaves MPFR's exponent range however large s or m is.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from math import comb, factorial, isqrt

import gmpy2
from gmpy2 import mpfr

from dgauss._interval import Arith, Interval

#: Direct summation is used when it needs at most this many terms (~7 µs each;
#: Euler–Maclaurin costs about as much as 100–150 terms).
DIRECT_MAX_TERMS = 150

#: Terms direct summation may take when Euler–Maclaurin's remainder is too large
#: (small s), and with ``allow_slow``.
DIRECT_FALLBACK_TERMS = 50_000
DIRECT_SLOW_TERMS = 1_000_000

#: Largest Euler–Maclaurin order tried (p = 2q).
EM_MAX_ORDER = 80

#: Above z = a/√(2s) = ERFC_ASYMPTOTIC_Z, the Gaussian tail integral is taken
#: from erfc's asymptotic series (whose partial sums enclose it) instead of
#: MPFR's erfc, whose result would leave the exponent range.
ERFC_ASYMPTOTIC_Z2 = Fraction(1 << 22)


# --------------------------------------------------------------------------
# Normaliser (Poisson summation or direct)
# --------------------------------------------------------------------------
def _theta_moment(c: Interval, power: int) -> Interval:
    """Σ_{u≥1} u^power·e^(−c·u²), with the tail bounded geometrically."""
    ar = c.ar
    eps = mpfr(2) ** (-ar.bits - 8)
    total = ar.q(0)
    u = 1
    term = (-c).exp()
    while True:
        total = total + term
        # Terms after u + 1 fall by at most rho = ((u+2)/(u+1))^power·e^(−c(2u+3)) each.
        nxt = (c * (-((u + 1) ** 2))).exp() * ((u + 1) ** power)
        rho = (c * (-(2 * u + 3))).exp() * Fraction(u + 2, u + 1) ** power
        if rho.hi < 0.5 and nxt.hi <= eps * max(total.lo, mpfr(1)):
            tail = nxt / (1 - rho)
            return Interval(total.lo, ar.up.add(total.hi, tail.hi), ar)
        term = nxt
        u += 1


def _excess(a: Interval) -> Interval:
    """c = Σ_{j≥1} e^{−aj²} + Σ_{j≥2} e^{−a(j²−j)}: θ(r) ≤ e^{−ar²}(1 + e^{−a(1−2r)} + c) on
    [0, ½], used by both lattice bounds (the second sum is ≤ e^{−2a}/(1 − e^{−4a})).

    For a < 1 (σ² below 1/(2π²)), c > e^{−a} > 1/4 and the lattice bounds give up; the
    sum itself would need about 1/√a terms, so only its first term is computed then."""
    if a.hi < 1:
        return Interval((-a).exp().lo, mpfr("inf"), a.ar)
    return _theta_moment(a, 0) + (a * -2).exp() / (1 - (a * -4).exp())


def _poisson(s: Fraction) -> bool:
    """Whether Poisson summation converges faster than the direct sum (2π²s ≥ 1/(2s))."""
    return s >= Fraction(1, 6)


def _rate(s: Fraction, ar: Arith) -> Interval:
    """c in Θ's faster form, 1 + 2Σ_{u≥1} e^{−cu²}: 2π²s (Poisson summation) or 1/(2s) (direct)."""
    return ar.pi() * ar.pi() * (2 * s) if _poisson(s) else ar.q(1 / (2 * s))


def log_normaliser(s: Fraction, ar: Arith) -> Interval:
    """ln Θ(s), Θ(s) = Σ_{y∈ℤ} exp(−y²/(2s)) = √(2πs)·Σ_u e^{−2π²su²} (Poisson summation)."""
    theta = 1 + _theta_moment(_rate(s, ar), 0).scale2(1)
    if _poisson(s):
        theta = (ar.pi() * (2 * s)).sqrt() * theta
    return theta.log()


def variance(s: Fraction, ar: Arith) -> Interval:
    """Σ_y y²·exp(−y²/(2s)) / Θ(s), the variance of N_Z(0, s).

    Directly, the ratio of the two sums; by Poisson summation (Lemma 22) when s ≥ 1/6,
    Var = s − 4π²s²·(2Σ u² e^{−cu²})/(1 + 2Σ e^{−cu²}), c = 2π²s.
    """
    c = _rate(s, ar)
    ratio = _theta_moment(c, 2).scale2(1) / (1 + _theta_moment(c, 0).scale2(1))
    if _poisson(s):
        return ar.q(s) - (ar.pi() * ar.pi() * (4 * s * s)) * ratio
    return ratio


# --------------------------------------------------------------------------
# Tails: Σ_{y≥m} f(y)·w(y), w = 1 or Theorem 7's factor
# --------------------------------------------------------------------------
class _Tail:
    """The sum Σ_{y≥m} h(y), h(y) = f(y) − C·f(y + Δ) (C = e^ε), or h = f when eps is None.

    For y ≥ m, h(y) = f(y)·(1 − exp(x(y))) with x(y) = ε − Δ(2y + Δ)/(2s) < 0.
    Values are scaled by F = f(m0), m0 = max(m, 0).
    """

    def __init__(self, s: Fraction, m: int, eps: Fraction | None, delta: int, ar: Arith):
        self.s, self.m, self.eps, self.delta, self.ar = s, m, eps, delta, ar
        self.m0 = max(m, 0)
        self.shift = Fraction(self.m0 * self.m0, 2 * s)  # ln(1/F)

    def log_coefficient(self, with_eps: bool) -> Fraction:
        """ln of a part's coefficient over F: ln(1/F), or ln(e^ε/F) for the −e^ε part."""
        if not with_eps:
            return self.shift
        assert self.eps is not None  # points() marks with_eps only when eps is given
        return self.shift + self.eps

    # ln of the scaled weight of the point a with coefficient 1 or −e^ε
    def log_weight(self, a: int, with_eps: bool) -> Interval:
        return self.ar.q(self.log_coefficient(with_eps) - Fraction(a * a, 2 * self.s))

    def points(self) -> Iterator[tuple[int, bool]]:
        """(a, sign) pairs: h = Σ sign·e^{log_weight}·f(·)/f(a) shifted to a."""
        yield self.m, False
        if self.eps is not None:
            yield self.m + self.delta, True

    # -- direct summation -------------------------------------------------
    def direct(self, max_terms: int) -> Interval | None:
        ar, s, m = self.ar, self.s, self.m
        eps2 = mpfr(2) ** (-ar.bits)
        t = self.log_weight(m, False).exp()  # f(m)/F
        r = ar.q(-Fraction(2 * m + 1, 2 * s)).exp()  # f(m+1)/f(m)
        w = ar.q(-1 / s).exp()  # ratio of successive ratios
        if self.eps is not None:
            x = ar.q(self.eps - Fraction(self.delta * (2 * m + self.delta), 2 * s))
            dx = ar.q(Fraction(self.delta) / s)
        total = ar.q(0)
        y = m
        for _ in range(max_terms):
            term = t if self.eps is None else t * (-(x.expm1()))
            total = total + term
            t = t * r
            r = r * w
            y += 1
            if self.eps is not None:
                x = x - dx
            if y >= 0 and r.hi < 1:
                tail_hi = ar.up.div(t.hi, ar.dn.sub(1, r.hi))
                if total.lo > 0 and tail_hi <= eps2 * total.lo:
                    return Interval(total.lo, ar.up.add(total.hi, tail_hi), ar)
        return None

    def direct_terms_estimate(self, bits: int) -> int:
        """Roughly how many terms direct summation needs for 2^−bits (a speed choice only)."""
        s, m = self.s, self.m
        depth = Fraction(bits * 7, 10) + 8  # ln(2^bits) + margin
        central = isqrt(int(2 * s * depth) + 1) + 1
        if m <= 0:
            return -m + central
        return min(int(depth * s / m) + 1, central)

    # -- Euler–Maclaurin ----------------------------------------------------
    def log_integral(self, a: int) -> Interval:
        """ln(∫_a^∞ f(x) dx / F)."""
        return log_gauss_tail_integral(a, self.s, self.ar) + self.ar.q(
            self.shift - Fraction(max(a, 0) ** 2, 2 * self.s)
        )

    def euler_maclaurin(self):
        """(enclosure of the scaled sum, the remainder bound used)."""
        ar, s, m = self.ar, self.s, self.m
        sigma = ar.q(s).sqrt()
        # Scaled weights of the two parts of h (the second negative).
        parts = []
        for a, with_eps in self.points():
            parts.append((a, with_eps, self.log_weight(a, with_eps).exp()))
        # Integral term.
        integral = self.log_integral(m).exp()
        if self.eps is not None:
            integral = integral - (self.log_integral(m + self.delta) + ar.q(self.eps)).exp()
        # h(m)/2
        total = integral
        for _a, with_eps, weight in parts:
            total = total + weight * Fraction(-1 if with_eps else 1, 2)
        # Remainder: the lowest even order p = 2q whose bound is below 2^−56 (or 2^−bits/2)
        # of the sum so far (the derivative terms are small beside it), else the best order.
        goal = ar.dn.mul(total.lo, mpfr(2) ** -max(56, ar.bits // 2)) if total.lo > 0 else mpfr(0)
        p, bound = self._best_order(parts, sigma, goal)
        hermite = {}
        for a, _with_eps, _weight in parts:
            hermite[a] = _hermite_values(ar.q(a) / sigma, p)
        bern = _bernoulli_over_factorial(p)
        inv_sigma = 1 / sigma
        inv_sigma2 = inv_sigma * inv_sigma
        scale = inv_sigma  # σ^{−j}, j = 2k − 1
        for k in range(1, p // 2 + 1):
            j = 2 * k - 1
            deriv = ar.q(0)
            for a, with_eps, weight in parts:
                term = weight * hermite[a][j]
                deriv = deriv - term if with_eps else deriv + term
            # f^{(j)} = (−1)^j σ^{−j} He_j f; j odd → −σ^{−j} He_j f
            deriv = -(deriv * scale)
            total = total - deriv * bern[k]
            scale = scale * inv_sigma2
        return Interval(ar.dn.sub(total.lo, bound), ar.up.add(total.hi, bound), ar), bound

    def _best_order(self, parts, sigma: Interval, goal):
        """The lowest even order p ≤ EM_MAX_ORDER whose remainder bound is ≤ goal, else the
        order with the smallest bound; and that bound."""
        ar, s = self.ar, self.s
        two_pi = ar.pi().scale2(1)
        best = None
        # ∫_ℝ |f^{(p)}| ≤ σ^{1−p} √(2π p!)  (Cauchy–Schwarz with ∫He_p² e^{−t²/2} = p!√(2π)).
        # The whole-line bound is on ∫|f^{(p)}|, not scaled by f(a): each part contributes its
        # coefficient over F, 1/F or e^ε/F, i.e. e^{shift} or e^{shift + ε}.
        total_weight = ar.q(0)
        for _a, with_eps, _weight in parts:
            total_weight = total_weight + ar.q(self.log_coefficient(with_eps)).exp()
        sqrt_e = ar.q(1).exp().sqrt()
        for p in range(2, EM_MAX_ORDER + 1, 2):
            zeta = 1 + Fraction(1, 2**p) + Fraction(2, (p - 1) * 2**p)  # ≥ ζ(p)
            lead = ar.q(2 * zeta) / (two_pi**p)
            glob = (
                lead * total_weight * (ar.q(1) / sigma ** (p - 1)) * (two_pi * factorial(p)).sqrt()
            )
            candidates = [glob.hi]
            local = ar.q(0)
            ok = True
            for a, _with_eps, weight in parts:
                if a <= 0 or a * a < p * p * s:
                    ok = False
                    break
                lam = ar.q(Fraction(a) / s - Fraction(p, a))
                local = local + sqrt_e * weight * (ar.q(Fraction(a) / s) ** p) / lam
            if ok:
                candidates.append((lead * local).hi)
            b = min(candidates)
            if best is None or b < best[1]:
                best = (p, b)
            if b <= goal:
                break
        return best

    def enclose(self, allow_slow: bool = False) -> Interval:
        """ln Σ_{y≥m} h(y) (unscaled).

        Direct summation when few terms matter, else Euler–Maclaurin; direct
        summation again (up to DIRECT_FALLBACK_TERMS terms, or DIRECT_SLOW_TERMS
        with ``allow_slow``) when the Euler–Maclaurin remainder is too large.
        Raises ArithmeticError when this precision cannot enclose the sum
        tightly, so that the caller retries with more bits.
        """
        ar = self.ar
        tight = mpfr(2) ** -44  # the accounting wants ln δ to 2^−40

        def unscaled(found: Interval) -> Interval:
            return found.log() - ar.q(self.shift)

        if self.direct_terms_estimate(ar.bits) <= DIRECT_MAX_TERMS:
            found = self.direct(4 * DIRECT_MAX_TERMS)
            if found is not None:
                return unscaled(found)
        em, remainder = self.euler_maclaurin()
        if em.lo > 0 and em.rel_width() <= tight:
            return unscaled(em)
        rounding = ar.up.sub(em.abs_width(), ar.up.mul(remainder, 2))
        if rounding > remainder:
            # Cancellation, not the remainder: more bits will do (the caller retries).
            raise ArithmeticError("tail sum not enclosed at this precision")
        budget = DIRECT_SLOW_TERMS if allow_slow else DIRECT_FALLBACK_TERMS
        if self.direct_terms_estimate(ar.bits) <= budget:
            found = self.direct(budget)
            if found is not None:
                return unscaled(found)
        if em.lo > 0:
            return unscaled(em)  # rigorous, if loose
        raise ArithmeticError("tail sum not enclosed at this precision")


def _hermite_values(t: Interval, p: int) -> list[Interval]:
    """He_0(t) … He_p(t) (probabilists' Hermite), by He_{j+1} = t·He_j − j·He_{j−1}."""
    values = [t.ar.q(1), t]
    for j in range(1, p):
        values.append(t * values[j] - values[j - 1] * j)
    return values


@cache
def _bernoulli_numbers(n_max: int) -> list[Fraction]:
    """B_0 … B_{n_max}, from Σ_{k=0}^{n} C(n+1, k)·B_k = 0 (one pass, exact)."""
    table = [Fraction(1)]
    for n in range(1, n_max + 1):
        table.append(-sum((comb(n + 1, k) * table[k] for k in range(n)), Fraction(0)) / (n + 1))
    return table


def _bernoulli(n: int) -> Fraction:
    """B_n (only even n ≥ 2 are used, where the conventions agree)."""
    return _bernoulli_numbers(max(n, EM_MAX_ORDER))[n]


def _bernoulli_over_factorial(p: int) -> list[Fraction]:
    """[_, B_2/2!, B_4/4!, …, B_p/p!] indexed by k (B_{2k}/(2k)!)."""
    return [Fraction(0)] + [_bernoulli(2 * k) / factorial(2 * k) for k in range(1, p // 2 + 1)]


def log_gauss_tail_integral(a: int, s: Fraction, ar: Arith) -> Interval:
    """ln ∫_a^∞ exp(−x²/(2s)) dx + max(a, 0)²/(2s)  (the log of a scaled Mills ratio)."""
    z2 = Fraction(a * a, 2 * s) if a > 0 else Fraction(0)
    if a > 0 and z2 >= ERFC_ASYMPTOTIC_Z2:
        # erfc(z) = e^{−z²}/(z√π)·Σ_n (−1)^n (2n−1)!!/(2z²)^n; partial sums enclose it
        # (A&S 7.1.24), and σ√(π/2)·e^{−z²}/(z√π) = (s/a)·e^{−a²/(2s)}.
        u = Fraction(s, a * a)  # 1/(2z²)
        target = Fraction(1, 2 ** (ar.bits + 8))
        partial, term, n = Fraction(1), Fraction(1), 0
        while True:
            n += 1
            term = -term * (2 * n - 1) * u
            nxt = partial + term
            if abs(term) <= target:
                lo, hi = min(partial, nxt), max(partial, nxt)
                break
            partial = nxt
        series = Interval(ar.q(lo).lo, ar.q(hi).hi, ar)
        return ar.q(Fraction(s, a)).log() + series.log()
    sigma = ar.q(s).sqrt()
    z = ar.q(a) / (sigma * ar.q(2).sqrt())
    front = (ar.pi() * Fraction(s, 2)).sqrt()  # σ√(π/2)
    return front.log() + z.erfc().log() + ar.q(z2)


# --------------------------------------------------------------------------
# Public entry points of this module
# --------------------------------------------------------------------------
def log_tail(
    s: Fraction,
    m: int,
    ar: Arith,
    eps: Fraction | None = None,
    delta: int = 1,
    allow_slow: bool = False,
) -> Interval:
    """ln Σ_{y≥m} f(y)·w(y): w ≡ 1 (eps None) or w(y) = 1 − exp(ε − Δ(2y+Δ)/(2s)) ≥ 0.

    With eps given, m must be > εs/Δ − Δ/2, so that every weight is positive.
    """
    if eps is not None and not m > eps * s / delta - Fraction(delta, 2):
        raise ValueError("m must lie beyond the privacy-loss threshold")
    return _Tail(s, m, eps, delta, ar).enclose(allow_slow)


def theorem7_log_delta(
    s: Fraction, eps: Fraction, delta: int, ar: Arith, allow_slow: bool = False
) -> Interval:
    """ln δ of Theorem 7: Σ_{y≥m} p(y)(1 − e^{ε − Δ(2y+Δ)/(2s)}), m = ⌊εs/Δ − Δ/2⌋ + 1.

    When m ≤ 0 (ε below about Δ²/(2s): δ is not small) the sum starts left of the centre,
    where Euler–Maclaurin's remainder carries the factor e^ε of its second part and, for
    a large ε (k = 10^7 composed queries), never closes; δ = P[Y ≥ m] − e^ε·P[Y ≥ m + Δ]
    is then computed from tails that start right of the centre (P[Y ≥ a] = 1 − P[Y ≥ 1 − a]
    for a ≤ 0).  Raises ArithmeticError when this precision cannot separate δ from 0.
    """
    v = eps * s / delta - Fraction(delta, 2)
    m = v.numerator // v.denominator + 1
    if m > 0:
        return log_tail(s, m, ar, eps, delta, allow_slow) - log_normaliser(s, ar)
    log_norm = log_normaliser(s, ar)

    def upper_tail(a: int) -> Interval:  # P[Y ≥ a]
        if a >= 1:
            return (log_tail(s, a, ar, allow_slow=allow_slow) - log_norm).exp()
        return 1 - (log_tail(s, 1 - a, ar, allow_slow=allow_slow) - log_norm).exp()

    found = upper_tail(m) - ar.q(eps).exp() * upper_tail(m + delta)
    if not found.lo > 0:
        raise ArithmeticError("δ not separated from 0 at this precision")
    return found.log()


# --------------------------------------------------------------------------
# Exact convolution, for the few coordinates and small σ² where E is not small
# --------------------------------------------------------------------------
#: Most multiply-adds the convolution route may spend (np.convolve on Python ints).
CONVOLUTION_BUDGET = 10_000_000


def convolution_delta(s: Fraction, eps: Fraction, mu, k: int, bits: int = 256):
    """(lower, upper) bounds on δ = E[max(0, 1 − e^{ε − Z})], Z = (‖μ‖²_k + 2W)/(2s),
    by convolving the N_Z(0, s) pmfs of the k·d coordinates exactly; None when over budget.

    Each pmf value is held as a pair of integers ⌊p·2^bits⌋ ≤ p·2^bits ≤ ⌈p·2^bits⌉ and
    convolved exactly (numpy's convolve on Python ints), rescaling down and up after
    each step, so the lower and upper vectors enclose the true distribution of the
    truncated sum.  Each coordinate is truncated to |y| ≤ Y, and the mass cut off,
    at most N·P[|Y| > Y] (bounded geometrically), is added to the upper bound, as
    the weight 1 − e^{ε − Z} is at most 1.  Sign does not matter (Y is symmetric).
    """
    import numpy as np  # a dependency, but only needed here

    ar = Arith(bits + 64)
    weights = sorted(abs(x) for x in mu for _ in range(k) if x)
    n = len(weights)
    Y = isqrt(int(Fraction(14, 10) * s * (bits + 40))) + 2  # e^{−Y²/(2s)} < 2^{−bits−40}
    groups: dict[int, int] = {}  # magnitude -> how many coordinates have it
    for b in weights:
        groups[b] = groups.get(b, 0) + 1
    # multiply-adds: each group's sum of g pmfs, then the groups (spread by b) in turn
    width = 2 * Y + 1
    cost, length = 0, 0
    for b, g in sorted(groups.items()):
        cost += g * g * width * width // 2
        group_length = 2 * b * Y * g + 1
        cost += length * group_length
        length += group_length - 1
    if cost > CONVOLUTION_BUDGET:
        return None
    one = 1 << bits
    log_theta = log_normaliser(s, ar)
    pmf_lo, pmf_hi = [], []
    for y in range(-Y, Y + 1):
        p = (ar.q(Fraction(-y * y, 2 * s)) - log_theta).exp()
        pmf_lo.append(int(gmpy2.floor(ar.dn.mul_2exp(p.lo, bits))))
        pmf_hi.append(int(gmpy2.ceil(ar.up.mul_2exp(p.hi, bits))))
    base_lo = np.array(pmf_lo, dtype=object)
    base_hi = np.array(pmf_hi, dtype=object)

    def rescale(lo, hi):
        return (
            np.array([x >> bits for x in lo], dtype=object),
            np.array([-((-x) >> bits) for x in hi], dtype=object),
        )

    dist = None  # (lo, hi, offset): value index i ↔ w = i − offset
    for b, count in sorted(groups.items()):
        lo, hi = base_lo, base_hi
        for _ in range(count - 1):
            lo, hi = rescale(np.convolve(lo, base_lo), np.convolve(hi, base_hi))
        if b > 1:  # spread b·S: put the values on every b-th place
            spread_lo = np.zeros(b * (len(lo) - 1) + 1, dtype=object)
            spread_hi = np.zeros(b * (len(hi) - 1) + 1, dtype=object)
            spread_lo[::b], spread_hi[::b] = lo, hi
            lo, hi = spread_lo, spread_hi
        offset = (len(lo) - 1) // 2
        if dist is None:
            dist = (lo, hi, offset)
        else:
            new_lo, new_hi = rescale(np.convolve(dist[0], lo), np.convolve(dist[1], hi))
            dist = (new_lo, new_hi, dist[2] + offset)
    assert dist is not None  # groups is not empty: the callers pass a nonzero mu
    lo_vec, hi_vec, offset = dist
    # δ = Σ_w P[W = w]·(1 − e^{ε − (‖μ‖² + 2w)/(2s)}) over w past the threshold
    norm2 = sum(b * b for b in weights)
    acc_lo = acc_hi = 0
    for i in range(len(lo_vec)):
        w = i - offset
        x = eps - Fraction(norm2 + 2 * w, 2 * s)
        if x >= 0:
            continue
        weight = -(ar.q(x).expm1())
        acc_lo += lo_vec[i] * int(gmpy2.floor(ar.dn.mul_2exp(weight.lo, bits)))
        acc_hi += hi_vec[i] * int(gmpy2.ceil(ar.up.mul_2exp(weight.hi, bits)))
    # the truncated mass: P[|Y| > Y] ≤ 2e^{−(Y+1)²/(2s)}/(1 − e^{−(2Y+3)/(2s)})/Θ per coordinate
    tail = (
        ar.q(Fraction(-((Y + 1) ** 2), 2 * s)).exp().scale2(1)
        / (1 - ar.q(Fraction(-(2 * Y + 3), 2 * s)).exp())
        / log_theta.exp()
    ) * n
    lower = ar.dn.div(gmpy2.mpz(acc_lo), gmpy2.mpz(one) ** 2)  # sums carry 2^{2·bits}
    upper = ar.up.add(ar.up.div(gmpy2.mpz(acc_hi), gmpy2.mpz(one) ** 2), tail.hi)
    return lower, upper
