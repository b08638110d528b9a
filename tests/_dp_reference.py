"""Independent reference ("truth") for the tests of :mod:`dgauss.accounting`.

Nothing here imports dgauss.  Everything is computed in mpmath at high precision
(``DPS`` decimal digits, raised where a quantity needs more) straight from the
definitions in Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
Privacy" (Sections 2-4):

* the discrete Gaussian pmf ``exp(-y²/2s)/N(s)`` with ``N(s)`` summed over all
  integers (or, for huge ``s``, by the Jacobi theta / Poisson identity
  ``N(s) = sqrt(2πs)·(1 + 2Σ_k exp(-2π²sk²))``);
* δ of Theorem 7 by summing ``p(y)(1 - exp(ε - Δ(2y+Δ)/2s))`` over ``y ≥ m``;
* δ of Theorem 15 / k-fold composition from the exact distribution of
  ``W = Σ_j μ_j Y_j``, obtained by convolving the discrete Gaussian pmfs in
  fixed point (integers scaled by 2**FIX_BITS, multiplied with Kronecker
  substitution over gmpy2 integers).  Every rounding and truncation only
  *removes* probability mass, so the missing mass (1 − Σ P) is known exactly and
  the truth lies in ``[lo, lo + missing]``;
* Corollary 13 by minimising g(α) of Eq. (18), located by bisection on the
  sign of g'(α) of Eq. (19), parameterised by u = log(α−1) so that α → 1 and
  α → ∞ are both reachable;
* the discrete Laplace composition as E[max(0, 1 − e^{ε − L})] with the privacy
  loss L a sum of k independent ±ε0 variables (Eq. 23 form, binomial sum).

Functions return mpmath ``mpf`` values (not floats) so that tests can compare
in log space where a float would underflow.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import gmpy2
import mpmath
from mpmath import mp, mpf

DPS = 80  # the tests run with mp.dps = DPS (set by a fixture in test_accounting.py)

#: fixed-point resolution of the convolution reference
FIX_BITS = 256


def Q(x) -> Fraction:
    """Exact rational of an int / Fraction / float (binary value) / str."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        return Fraction(x)
    if isinstance(x, mpf):
        return Fraction(*_mpf_to_frac(x))
    return Fraction(x)


def M(x) -> mpf:
    """mpf of an exact rational (rounded to the working precision)."""
    q = Q(x)
    return mpf(q.numerator) / q.denominator


# ---------------------------------------------------------------------------
# discrete Gaussian
# ---------------------------------------------------------------------------


@functools.cache
def _normaliser_direct(s: Fraction) -> mpf:
    """Σ_{n∈Z} exp(-n²/(2s)) summed term by term until terms < 1e-100 of the sum."""
    with mp.workdps(DPS + 10):
        two_s = 2 * M(s)
        total = mpf(1)
        n = 1
        while True:
            term = mpmath.exp(-mpf(n * n) / two_s)
            total += 2 * term
            # tail beyond n is ≤ 2·term·Σ_j exp(-j(2n+1)/2s) ≤ 2 term /(1-exp(-(2n+1)/2s))
            if n * n > 2 * float(s) and term < mpf(10) ** -100 * total:
                break
            n += 1
        return +total


@functools.cache
def _normaliser_theta(s: Fraction) -> mpf:
    """The same sum by Poisson summation: sqrt(2πs)(1 + 2Σ_{k≥1} exp(-2π²sk²))."""
    with mp.workdps(DPS + 10):
        sm = M(s)
        corr = mpf(0)
        k = 1
        while True:
            term = mpmath.exp(-2 * mpmath.pi**2 * sm * k * k)
            corr += term
            if term < mpf(10) ** -(DPS + 20):
                break
            k += 1
        return mpmath.sqrt(2 * mpmath.pi * sm) * (1 + 2 * corr)


def normaliser(s) -> mpf:
    s = Q(s)
    return _normaliser_direct(s) if s <= 4000 else _normaliser_theta(s)


def gaussian_pmf(y: int, s) -> mpf:
    s = Q(s)
    return mpmath.exp(-M(Fraction(y * y) / (2 * s))) / normaliser(s)


def gaussian_sf(x: int, s) -> mpf:
    """P[Y > x] for an integer x, by direct summation (symmetry for x < 0)."""
    s = Q(s)
    if x < 0:
        return 1 - gaussian_sf(
            -x - 1, s
        )  # P[Y > x] = 1 - P[Y <= x] = 1 - P[Y >= -x] = 1 - P[Y > -x-1]
    with mp.workdps(DPS + 10):
        two_s = 2 * M(s)
        total = mpf(0)
        y = x + 1
        while True:
            term = mpmath.exp(-(mpf(y) ** 2) / two_s)
            total += term
            if y * y > 2 * float(s) and term < mpf(10) ** -100 * total:
                break
            y += 1
        return total / normaliser(s)


def gaussian_cdf(x: int, s) -> mpf:
    """P[Y <= x]; for x < 0 it is P[Y >= -x] = P[Y > -x-1] (no cancellation)."""
    return 1 - gaussian_sf(x, s) if x >= 0 else gaussian_sf(-x - 1, s)


def gaussian_variance(s) -> mpf:
    """E[Y²] by direct summation (s ≤ ~1e4)."""
    s = Q(s)
    with mp.workdps(DPS + 10):
        two_s = 2 * M(s)
        total = mpf(0)
        y = 1
        while True:
            term = mpf(y) ** 2 * mpmath.exp(-(mpf(y) ** 2) / two_s)
            total += 2 * term
            if y * y > 4 * float(s) + 4 and term < mpf(10) ** -100 * total:
                break
            y += 1
        return total / normaliser(s)


def gaussian_abs_le(w: int, s) -> mpf:
    """P[|Y| <= w]."""
    if w < 0:
        return mpf(0)
    return 1 - 2 * gaussian_sf(w, s)


def theorem7_delta(s, eps, delta_sens: int = 1) -> mpf:
    """Theorem 7: Σ_{y ≥ m} p(y)(1 − exp(ε − Δ(2y+Δ)/(2s))), m = floor(εs/Δ − Δ/2) + 1.

    Works for any s (huge s through the theta normaliser) provided the tail from
    m decays within a few million terms.
    """
    s, eps, D = Q(s), Q(eps), int(delta_sens)
    thr = eps * s / D - Fraction(D, 2)
    m = math.floor(thr) + 1
    digits = DPS + 10 + len(str(abs(m)))  # y²/2s must be exact to ~DPS digits
    with mp.workdps(digits):
        sm, em = M(s), M(eps)
        two_s = 2 * sm
        total = mpf(0)
        y = m
        while True:
            w = mpmath.exp(-(mpf(y) ** 2) / two_s)
            factor = -mpmath.expm1(em - M(Fraction(D * (2 * y + D)) / (2 * s)))
            term = w * factor
            total += term
            # once y > 0 the weights fall at least geometrically with ratio exp(-(2y+1)/2s)
            if y > 0 and y > m:
                ratio = mpmath.exp(-mpf(2 * y + 1) / two_s)
                tail_bound = w * ratio / (1 - ratio)
                if tail_bound < mpf(10) ** -100 * total:
                    break
            y += 1
        result = total / normaliser(s)
    return +result


# ---- k-fold / vector sensitivity via fixed-point convolution ---------------


@functools.cache
def _pmf_fixed(s: Fraction):
    """(offset, [floor(p(y)·2^B)]) for y = offset..-offset, dropping terms < 2^-B·1e-3."""
    B = FIX_BITS
    with mp.workdps(100):
        two_s = 2 * M(s)
        N = normaliser(s)
        scale = mpf(2) ** B
        vals = []
        y = 0
        while True:
            p = mpmath.exp(-(mpf(y) ** 2) / two_s) / N
            v = int(mpmath.floor(p * scale)) - 1  # -1: stay below the truth despite mpf rounding
            if v <= 0:
                break
            vals.append(v)
            y += 1
    Y = len(vals) - 1
    table = vals[:0:-1] + vals  # y = -Y..Y
    return -Y, table


def _spread(table, mu):
    """pmf of mu·Y from pmf of Y (|mu| > 0): stride |mu|, mirrored if mu < 0."""
    a = abs(mu)
    if mu < 0:
        table = table[::-1]
    if a == 1:
        return list(table)
    out = [0] * ((len(table) - 1) * a + 1)
    out[::a] = table
    return out


def _kron_convolve(a, b):
    """Fixed-point convolution: c_i = floor(Σ a_j b_{i-j} / 2^B), via one big product."""
    B = FIX_BITS
    n = min(len(a), len(b))
    slot_bits = 2 * B + n.bit_length() + 2
    slot_bytes = (slot_bits + 7) // 8
    pa = gmpy2.mpz(int.from_bytes(b"".join(x.to_bytes(slot_bytes, "little") for x in a), "little"))
    pb = gmpy2.mpz(int.from_bytes(b"".join(x.to_bytes(slot_bytes, "little") for x in b), "little"))
    prod = int(pa * pb)
    length = len(a) + len(b) - 1
    raw = prod.to_bytes(length * slot_bytes, "little")
    out = [
        int.from_bytes(raw[i * slot_bytes : (i + 1) * slot_bytes], "little") >> B
        for i in range(length)
    ]
    return out


class LossDistribution:
    """Exact (up to a known missing mass) distribution of W = Σ μ_j Y_j over k copies of μ.

    Privacy loss Z = (k‖μ‖² + 2W)/(2s)  (Eq. 26), δ(ε) = E[max(0, 1 − e^{ε−Z})] (Eq. 23).
    """

    def __init__(self, s, mu, k: int = 1):
        s = Q(s)
        if isinstance(mu, int):
            mu = [mu]
        coords = [int(m) for m in mu for _ in range(k) if m != 0]
        self.s = s
        self.norm2 = sum(m * m for m in coords)
        off0, table = _pmf_fixed(s)
        offset, dist = 0, [1 << FIX_BITS]
        for m in coords:
            spread = _spread(table, m)
            offset += off0 * abs(m)
            dist = _kron_convolve(dist, spread)
            # trim zero ends
            lo = 0
            while dist[lo] == 0:
                lo += 1
            hi = len(dist)
            while dist[hi - 1] == 0:
                hi -= 1
            offset += lo
            dist = dist[lo:hi]
        self.offset = offset
        self.dist = dist
        total = sum(dist)
        self.missing = mpf((1 << FIX_BITS) - total) / mpf(2) ** FIX_BITS  # ≥ 0, exact
        assert self.missing >= 0

    def delta_interval(self, eps):
        """(lo, hi) with lo ≤ δ_true ≤ hi."""
        s, eps = self.s, Q(eps)
        with mp.workdps(DPS):
            em = M(eps)
            two_s = 2 * M(s)
            scale = mpf(2) ** FIX_BITS
            # contributing w: norm2 + 2w > 2 s eps
            wmin = math.floor((2 * s * eps - self.norm2) / 2) + 1
            total = mpf(0)
            start = max(0, wmin - self.offset)
            for i in range(start, len(self.dist)):
                p = self.dist[i]
                if p == 0:
                    continue
                w = self.offset + i
                z = (self.norm2 + 2 * w) / two_s
                total += p * -mpmath.expm1(em - z)
            lo = total / scale
            return lo, lo + self.missing

    def delta(self, eps) -> mpf:
        lo, hi = self.delta_interval(eps)
        return (lo + hi) / 2

    def epsilon(self, delta) -> mpf:
        """smallest ε ≥ 0 with δ(ε) ≤ delta.

        δ(ε) is continuous and strictly decreasing while > 0.
        """
        return epsilon_for_delta(self.delta, delta)


@functools.lru_cache(maxsize=64)
def loss_distribution(s, mu, k=1) -> LossDistribution:
    return LossDistribution(s, list(mu) if isinstance(mu, tuple) else mu, k)


def gaussian_delta(s, eps, mu=1, k=1):
    """(lo, hi) bracketing the exact δ; Theorem 7 for scalar k=1, convolution otherwise."""
    if isinstance(mu, int) and k == 1:
        d = theorem7_delta(s, eps, abs(mu))
        # truncation of the tail and normaliser: relative error < 1e-90
        return d * (1 - mpf(10) ** -90), d * (1 + mpf(10) ** -90)
    key = tuple(mu) if not isinstance(mu, int) else mu
    return loss_distribution(Q(s), key, k).delta_interval(eps)


# ---- continuous Gaussian (Balle & Wang) ------------------------------------


def continuous_gaussian_log_delta(s, eps, D=1, dps=250) -> mpf:
    """ln of Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) at `dps` digits."""
    with mp.workdps(dps):
        sigma = mpmath.sqrt(M(s))
        e = M(eps)
        a = mpf(D) / (2 * sigma) - e * sigma / D
        b = -mpf(D) / (2 * sigma) - e * sigma / D
        val = mpmath.ncdf(a) - mpmath.exp(e) * mpmath.ncdf(b)
        return +mpmath.log(val)


# ---------------------------------------------------------------------------
# zCDP -> approximate DP (Corollary 13)
# ---------------------------------------------------------------------------


def _dps_for(*xs) -> int:
    mag = max((abs(mpmath.log10(abs(M(x)))) if Q(x) != 0 else 0) for x in xs)
    return DPS + int(mag) + 10


def _alpha_parts(u):
    """α = 1 + t, t = e^u; returns (t, log(1 − 1/α), log α) without cancellation:
    log(1 − 1/α) = log(t/(1+t)) = u − log1p(e^u) for u ≤ 0, −log1p(e^−u) for u > 0."""
    t = mpmath.exp(u)
    la = mpmath.log1p(t)
    l1 = u - la if u <= 0 else -mpmath.log1p(mpmath.exp(-u))
    return t, l1, la


def _bisect_u(sign_fn, iters_bits=230, guess=None):
    """Root in u of an increasing function given by sign_fn(u) -> mpf, by bracketing (outward
    from `guess`, doubling the step) + bisection."""
    g = mpf(0) if guess is None else mpf(guess)
    lo, hi = g - 1, g + 1
    step = mpf(2)
    while sign_fn(lo) > 0:
        lo -= step
        step *= 2
    step = mpf(2)
    while sign_fn(hi) < 0:
        hi += step
        step *= 2
    # bisection until the bracket is tiny relative to |u| (or absolutely tiny)
    while True:
        mid = (lo + hi) / 2
        if sign_fn(mid) > 0:
            hi = mid
        else:
            lo = mid
        if hi - lo < mpf(2) ** -iters_bits * max(1, abs(mid)):
            return lo, hi


@functools.lru_cache(maxsize=4096)
def _cdp_log_delta(rho: Fraction, eps: Fraction) -> mpf:
    with mp.workdps(_dps_for(rho, eps if eps else 1)):
        r, e = M(rho), M(eps)

        def gprime(u):
            t, l1, la = _alpha_parts(u)
            alpha = 1 + t
            return (2 * alpha - 1) * r - e + l1

        def g(u):
            t, l1, la = _alpha_parts(u)
            alpha = 1 + t
            return t * (alpha * r - e) + t * l1 - la

        # starting guess: α ≈ (ε+ρ)/2ρ when that is > 1 (Eq. 21), else u ≈ ε − ρ (α → 1)
        a0 = (e + r) / (2 * r)
        guess = mpmath.log(a0 - 1) if a0 > 2 else min(mpf(0), e - r)
        lo, hi = _bisect_u(gprime, guess=guess)
        val = min(g(lo), g(hi), g((lo + hi) / 2))
        return +val


def cdp_log_delta(rho, eps) -> mpf:
    """ln δ of Corollary 13 (Eq. 18): min over α > 1 of g(α).  Always < 0."""
    return _cdp_log_delta(Q(rho), Q(eps))


def cdp_delta(rho, eps) -> mpf:
    return mpmath.exp(cdp_log_delta(rho, eps))


def cdp_delta_standard_log(rho, eps) -> mpf:
    r, e = M(rho), M(eps)
    if e < r:
        return mpf(0)
    return -((e - r) ** 2) / (4 * r)


@functools.lru_cache(maxsize=4096)
def _cdp_eps(rho: Fraction, delta: Fraction) -> mpf:
    """smallest ε ≥ 0 with Cor.13 δ ≤ delta.

    g is linear in ε: g(α; ε) = G(α) − (α−1)ε, so ε(α) = (G(α) + L)/(α−1), L = ln(1/δ),
    is the ε at which this α certifies δ; minimise over α.  Its derivative vanishes
    where H(α) = (α−1)²ρ + ln α = L, and H is increasing, so this is the minimum.
    """
    with mp.workdps(_dps_for(rho, delta)):
        r = M(rho)
        L = -mpmath.log(M(delta))

        def H(u):
            t = mpmath.exp(u)
            return t * t * r + mpmath.log1p(t) - L

        def eps_at(u):
            t, l1, la = _alpha_parts(u)
            alpha = 1 + t
            G = t * alpha * r + t * l1 - la
            return (G + L) / t

        lo, hi = _bisect_u(H)
        val = min(eps_at(lo), eps_at(hi), eps_at((lo + hi) / 2))
        return max(mpf(0), +val)


def cdp_eps(rho, delta) -> mpf:
    return _cdp_eps(Q(rho), Q(delta))


#: _illinois's default relative tolerance, made once at import (as a default argument was)
_ILLINOIS_REL = mpf(10) ** -45


def _illinois(f, lo, hi, rel=_ILLINOIS_REL):
    """Root of a continuous f with f(lo) <= 0 < f(hi) (either orientation of lo < hi or lo > hi):
    Illinois regula falsi.  Returns (a, b) with f(a) <= 0 < f(b) and |a − b| tiny."""
    flo, fhi = f(lo), f(hi)
    assert flo <= 0 < fhi, (lo, hi, flo, fhi)
    side = 0
    for _ in range(500):
        mid = (lo * fhi - hi * flo) / (fhi - flo)
        if not (min(lo, hi) < mid < max(lo, hi)):
            mid = (lo + hi) / 2
        fm = f(mid)
        if fm > 0:
            hi, fhi = mid, fm
            if side == -1:
                flo /= 2
            side = -1
        else:
            lo, flo = mid, fm
            if side == 1:
                fhi /= 2
            side = 1
        if abs(hi - lo) <= rel * max(abs(lo), abs(hi), mpf(10) ** -30):
            return lo, hi
    raise AssertionError("no convergence")


def epsilon_for_delta(delta_fn, delta) -> mpf:
    """smallest ε ≥ 0 with delta_fn(ε) ≤ delta; the returned value is the upper bracket end
    (delta_fn there is ≤ delta), so it is never below the truth by more than the tolerance."""
    target = M(delta)
    if delta_fn(mpf(0)) <= target:
        return mpf(0)
    hi = mpf(1)
    while delta_fn(hi) > target:
        hi *= 2
    # f(ε) = target − δ(ε): negative below the root, positive above it
    a, b = _illinois(lambda e: target - delta_fn(e), mpf(0), hi)
    return b


def theorem7_epsilon(s, delta, D=1) -> mpf:
    return epsilon_for_delta(lambda e: theorem7_delta(s, Q(e), D), delta)


@functools.lru_cache(maxsize=1024)
def _cdp_rho(eps: Fraction, delta: Fraction) -> mpf:
    """largest ρ with Cor.13 δ(ρ, ε) ≤ delta.

    For fixed α, g(α; ρ) is linear and increasing in ρ, so g(α; ρ) ≤ −L iff
    ρ ≤ r(α) = (−L + (α−1)ε − (α−1)log(1−1/α) + log α)/(α(α−1)), and the answer is
    max_α r(α).  Its maximiser is where g'(α; r(α)) = 0 (r' has the sign of −g'),
    found by bisection on u = log(α−1); the result is then verified against the
    independent Corollary 13 routine (ln δ(ρ*, ε) must equal ln delta).
    """
    with mp.workdps(DPS + 20):
        e = M(eps)
        L = -mpmath.log(M(delta))

        def r_of(u):
            t, l1, la = _alpha_parts(u)
            alpha = 1 + t
            return (-L + t * e - t * l1 + la) / (alpha * t)

        def phi(u):
            t, l1, la = _alpha_parts(u)
            alpha = 1 + t
            return (2 * alpha - 1) * r_of(u) - e + l1

        lo, hi = _bisect_u(phi)
        rho = max(r_of(lo), r_of(hi))
    # verification by the other route (bisection on g'), to ~1e-30
    check = cdp_log_delta(frac(rho), eps)
    assert abs(check + L) <= mpf(10) ** -30 * max(1, L), (rho, check, -L)
    return rho


def _mpf_to_frac(x):
    """exact (numerator, denominator) of an mpf, without re-rounding it."""
    man, exp = (x if isinstance(x, mpf) else mpf(x)).man_exp
    if exp >= 0:
        return (int(man) << exp, 1)
    return (int(man), 1 << -exp)


def frac(x) -> Fraction:
    """exact Fraction of an mpf."""
    return Fraction(*_mpf_to_frac(x))


def cdp_rho(eps, delta) -> mpf:
    """largest ρ (a lower bracket end, so never above the truth) with δ(ρ, ε) ≤ delta."""
    return _cdp_rho(Q(eps), Q(delta))


# ---------------------------------------------------------------------------
# discrete Laplace
# ---------------------------------------------------------------------------


def laplace_delta(scale, eps, D=1, k=1, dps=DPS) -> mpf:
    """δ of the k-fold composition of ±ε0 privacy loss, ε0 = Δ/t: E[max(0, 1 − e^{ε − L})].

    L = (2l − k)ε0 where l ~ Binomial(k, p), p = P[loss = +ε0] = e^{ε0}/(1 + e^{ε0}).
    Exact for Δ = 1; for Δ > 1 it is the randomized-response upper bound of the spec.
    """
    with mp.workdps(dps):
        e0 = M(Fraction(D) / Q(scale))
        e = M(eps)
        p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
        total = mpf(0)
        for l in range(k + 1):
            loss = (2 * l - k) * e0
            if loss <= e:
                continue
            prob = mpmath.binomial(k, l) * p**l * (1 - p) ** (k - l)
            total += prob * -mpmath.expm1(e - loss)
        return +total


def laplace_delta_exact_pld(scale, eps, D, k=1) -> mpf:
    """The true δ of k-fold discrete Laplace with sensitivity Δ (not the RR bound).

    For one query with q(x) = 0, q(x') = Δ: loss(y) = (|y−Δ| − |y|)/t, which is
    Δ/t for y ≤ 0, −Δ/t for y ≥ Δ, and (Δ − 2y)/t for 0 < y < Δ.  Its pmf in units
    of 1/t is convolved k times (support step 2).
    """
    with mp.workdps(DPS):
        t = M(scale)
        q = mpmath.exp(-1 / t)
        c = (1 - q) / (1 + q)  # P[Y = y] = c q^|y|
        pmf = {}
        p_le0 = c / (1 - q)  # P[Y ≤ 0] = c Σ_{j≥0} q^j
        pmf[D] = p_le0
        p_geD = c * q**D / (1 - q)
        pmf[-D] = pmf.get(-D, 0) + p_geD
        for y in range(1, D):
            pmf[D - 2 * y] = pmf.get(D - 2 * y, 0) + c * q**y
        dist = {0: mpf(1)}
        for _ in range(k):
            new = {}
            for a, pa in dist.items():
                for b, pb in pmf.items():
                    new[a + b] = new.get(a + b, 0) + pa * pb
            dist = new
        e = M(eps)
        total = mpf(0)
        for v, pv in dist.items():
            loss = v / t
            if loss > e:
                total += pv * -mpmath.expm1(e - loss)
        return +total


def laplace_variance(scale) -> mpf:
    """2q/(1−q)², q = e^{−1/t} (Lemma 30)."""
    with mp.workdps(DPS):
        q = mpmath.exp(-1 / M(scale))
        return 2 * q / (1 - q) ** 2


def laplace_variance_direct(scale) -> mpf:
    """E[X²] = 2c Σ_{x≥1} x² q^x summed term by term (small scales only)."""
    with mp.workdps(DPS):
        q = mpmath.exp(-1 / M(scale))
        c = (1 - q) / (1 + q)
        total, x = mpf(0), 1
        while True:
            term = mpf(x) ** 2 * q**x
            total += term
            if x > 10 and term < mpf(10) ** -90 * total:
                return 2 * c * total
            x += 1


def laplace_abs_le(w: int, scale) -> mpf:
    """P[|X| <= w] = 1 − 2 P[X ≥ w+1], P[X ≥ m] = c q^m/(1−q) (c = (1−q)/(1+q))."""
    with mp.workdps(DPS):
        q = mpmath.exp(-1 / M(scale))
        return 1 - 2 * q ** (w + 1) / (1 + q)


def laplace_abs_le_direct(w: int, scale) -> mpf:
    """P[|X| <= w] by summing the pmf c q^|x| over |x| <= w (small w only)."""
    with mp.workdps(DPS):
        q = mpmath.exp(-1 / M(scale))
        c = (1 - q) / (1 + q)
        return c * (1 + 2 * mpmath.fsum(q**x for x in range(1, w + 1)))


def laplace_scale_for_variance(v) -> mpf:
    """t with 2q/(1−q)² = v, q = e^{−1/t} (solved numerically)."""
    with mp.workdps(DPS):
        target = M(v)
        return mpmath.findroot(
            lambda t: 2 * mpmath.exp(-1 / t) / (1 - mpmath.exp(-1 / t)) ** 2 - target,
            mpmath.sqrt(target / 2),
        )


def two_coord_delta_direct(s, mu1: int, mu2: int, eps) -> mpf:
    """δ for two coordinates (μ1, μ2) by direct double summation, no truncation of tiny tails:
    Σ_{y1} p(y1) Σ_{y2 : Z > ε} p(y2)(1 − e^{ε − Z}), Z = (μ1² + μ2² + 2μ1y1 + 2μ2y2)/(2s).
    Y is symmetric, so μ1, μ2 are replaced by |μ1|, |μ2| (> 0).  For tails far below 2^-256."""
    s, eps = Q(s), Q(eps)
    m1, m2 = abs(int(mu1)), abs(int(mu2))
    assert m1 > 0 and m2 > 0
    n2 = m1 * m1 + m2 * m2
    thr = (2 * s * eps - n2) / 2  # need m1 y1 + m2 y2 > thr
    with mp.workdps(DPS + 10):
        two_s = 2 * M(s)
        em = M(eps)
        N = normaliser(s)
        B = int(abs(thr) / min(m1, m2)) + int(40 * math.sqrt(float(s))) + 40
        total = mpf(0)
        edge = mpf(0)
        for y1 in range(-B, B + 1):
            w1 = mpmath.exp(-(mpf(y1) ** 2) / two_s)
            start = math.floor((thr - m1 * y1) / m2) + 1
            inner = mpf(0)
            y2 = start
            while True:
                w2 = mpmath.exp(-(mpf(y2) ** 2) / two_s)
                z = M(Fraction(n2 + 2 * m1 * y1 + 2 * m2 * y2) / (2 * s))
                term = w2 * -mpmath.expm1(em - z)
                inner += term
                if y2 > 0 and y2 > start and w2 < mpf(10) ** -100 * inner:
                    break
                y2 += 1
            t = w1 * inner
            total += t
            if abs(y1) == B:
                edge += t
        assert edge < mpf(10) ** -60 * total, "summation window too small"
        return total / (N * N)
