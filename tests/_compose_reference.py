"""An independent exact computation of a composed δ(ε), for tests of ``accounting.compose``.

Each coordinate's privacy loss is enumerated atom by atom with exact rational positions
(Fractions) and 60-digit masses (mpmath); the product mechanism's loss distribution is the
exact convolution of those (a dictionary keyed by the rational loss), and
δ(ε) = Σ_ℓ p(ℓ)·max(0, 1 − e^{ε−ℓ}).  Gaussian atoms beyond |y| > Y are cut, and their mass
(bounded by a geometric series) is returned as the enclosure's width: the truth lies in
[low, low + cut].  Nothing here shares code with dgauss.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

mpmath.mp.dps = 60


def _gaussian_atoms(s: Fraction, m: int, cut_digits: int = 70):
    # N_Z(0, s): p(y) ∝ exp(−y²/(2s)); loss (m² − 2my)/(2s)
    sm = mpmath.mpf(s.numerator) / s.denominator
    Y = 1
    while mpmath.exp(-(mpmath.mpf(Y) ** 2) / (2 * sm)) > mpmath.mpf(10) ** (-cut_digits):
        Y += 1
    weights = {y: mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * sm)) for y in range(-Y, Y + 1)}
    # normaliser: the sum over all of Z; the part beyond Y is below a geometric series
    inner = mpmath.fsum(weights.values())
    r = mpmath.exp(-(2 * mpmath.mpf(Y) + 1) / (2 * sm))
    tail = 2 * mpmath.exp(-((mpmath.mpf(Y) + 1) ** 2) / (2 * sm)) / (1 - r)
    total_lo, total_hi = inner, inner + tail
    atoms = {}
    for y, w in weights.items():
        loss = Fraction(m * m - 2 * m * y) / (2 * s)
        atoms[loss] = atoms.get(loss, 0) + w / total_hi  # masses rounded down
    cut = 1 - inner / total_hi + (total_hi - total_lo) / total_lo
    return atoms, cut


def _laplace_atoms(t: Fraction, m: int):
    tm = mpmath.mpf(t.numerator) / t.denominator
    r = mpmath.exp(-1 / tm)
    atoms = {}
    for j in range(m + 1):
        loss = Fraction(m - 2 * j) / t
        if j == 0:
            p = 1 / (1 + r)
        elif j == m:
            p = mpmath.exp(-m / tm) / (1 + r)
        else:
            p = mpmath.exp(-j / tm) * (1 - r) / (1 + r)
        atoms[loss] = atoms.get(loss, 0) + p
    return atoms, mpmath.mpf(0)


def _convolve(a, b, keep):
    out: dict = {}
    for la, pa in a.items():
        for lb, pb in b.items():
            p = pa * pb
            if p > keep:
                key = la + lb
                out[key] = out.get(key, 0) + p
    return out


def composed_delta(releases, eps, keep_digits=80, cut_digits=70):
    """(low, high) enclosing δ(ε) of the program; releases are tuples
    ("gaussian" | "laplace", param, sensitivity vector, k).  Gaussian atoms below
    10^-cut_digits and composed masses below 10^-keep_digits are left out (and counted in the
    enclosure's width): for a δ near 10^-d, both must be well past d."""
    keep = mpmath.mpf(10) ** -keep_digits
    dist = {Fraction(0): mpmath.mpf(1)}
    cut = mpmath.mpf(0)
    dropped = mpmath.mpf(0)
    for kind, param, vector, k in releases:
        param = Fraction(param)
        for _ in range(k):
            for x in vector:
                if not x:
                    continue
                if kind == "gaussian":
                    atoms, c = _gaussian_atoms(param, abs(x), cut_digits)
                else:
                    atoms, c = _laplace_atoms(param, abs(x))
                cut += c
                before = mpmath.fsum(dist.values())
                dist = _convolve(dist, atoms, keep)
                dropped += before * mpmath.fsum(atoms.values()) - mpmath.fsum(dist.values())
    e = Fraction(eps)
    em = mpmath.mpf(e.numerator) / e.denominator
    low = mpmath.fsum(
        p * (1 - mpmath.exp(em - mpmath.mpf(l.numerator) / l.denominator))
        for l, p in dist.items()
        if l > e
    )
    return low, low + cut + abs(dropped)
