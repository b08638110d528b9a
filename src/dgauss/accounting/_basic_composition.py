"""The basic-composition route of :class:`~dgauss.accounting.Composition`.

Each release keeps its own guarantee and the guarantees add up: every Laplace release at its
pure ε (δ = 0), the Gaussian releases grouped by (σ², μ or ℓ2 ball) at the rest of ε, as the
smaller of their exact δ's added up (a share of ε each) and Corollary 13 at their ρ
(``docs/accounting.md``, *Composing a program*).  The functions read a program's releases
only; :class:`Composition` names the route "basic composition" and keeps the smallest δ of
its routes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import gmpy2
from gmpy2 import mpfr

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._neighbours import NeighbourSet, norm2
from dgauss.accounting._releases import Laplace, Release

#: The basic-composition route sums the groups' exact δ's when there are at most this many
#: (σ², μ) groups of Gaussian releases (each costs a closed form); beyond, their zCDP bound.
_BASIC_EXACT_MAX = 3

#: A group of Gaussian releases: (σ², μ or ℓ2 ball, Σk).
Group = tuple[Fraction, tuple[int, ...] | NeighbourSet, int]


def _continuous_log_delta(rho: Fraction, eps: Fraction) -> float:
    """ln δ(ε) of the continuous Gaussian mechanism at ρ (Balle–Wang), to about 30 digits:
    an estimate only (choosing whether to compute a bound), never a bound itself."""
    ctx = gmpy2.context(precision=160)
    mu = ctx.sqrt(ctx.mul(2, mpfr(rho, 160)))
    e = mpfr(eps, 160)
    a = ctx.sub(ctx.div(mu, 2), ctx.div(e, mu))
    b = ctx.sub(ctx.minus(ctx.div(mu, 2)), ctx.div(e, mu))
    root2 = ctx.sqrt(mpfr(2, 160))
    first = ctx.erfc(ctx.div(ctx.minus(a), root2))
    second = ctx.mul(ctx.exp(e), ctx.erfc(ctx.div(ctx.minus(b), root2)))
    value = ctx.sub(first, second)
    if value <= 0:  # lost to cancellation: the first term alone overestimates it
        value = first
    return float(ctx.log(ctx.div(value, 2)))


def basic_parts(releases: Sequence[Release]) -> tuple[Fraction, list[Group]]:
    """The Laplace releases' pure ε in all, and the Gaussian releases grouped by
    (σ², μ or ℓ2 ball) with their k added up."""
    pure = Fraction(0)
    groups: dict[tuple[Fraction, tuple[int, ...] | NeighbourSet], int] = {}
    for r in releases:
        if isinstance(r, Laplace):
            pure += r.epsilon
        else:
            key = (r.sigma2, r.sensitivity)
            groups[key] = groups.get(key, 0) + r.k
    return pure, [(s, mu, k) for (s, mu), k in sorted(groups.items(), key=str)]


def basic_log_delta(
    releases: Sequence[Release], e: Fraction, unless_above: mpfr | None = None
) -> mpfr | None:
    """Basic composition of each release's own guarantee: every Laplace release at its
    pure ε (δ = 0), the Gaussian releases at ε_G = ε − Σ pure ε, as the smaller of
    (a) each (σ², μ) group's exact δ (Theorem 15; an ℓ2-ball group's bound over every
    concatenation, as :func:`gaussian_delta`'s) at a share w_g·ε_G, w_g ∝ √ρ_g (fixed
    by the program), added up, when there are at most _BASIC_EXACT_MAX groups, and
    (b) Corollary 13 at the Gaussians' ρ.  None when ε_G < 0.  Non-increasing in ε.

    (a) costs a closed form per group: with ``unless_above`` (the other routes' best),
    it is skipped where the continuous Gaussian's δ of one group (σ² ≥ 1, close to the
    discrete one) is already 4 times above it: the sum cannot win there."""
    pure, groups = basic_parts(releases)
    if not groups or e < pure:
        return None
    e_g = e - pure
    rho_g = sum((k * norm2(mu) / (2 * s) for s, mu, k in groups), Fraction(0))
    best = cf._cdp_log_delta(rho_g, e_g)
    if (
        unless_above is not None
        and len(groups) <= _BASIC_EXACT_MAX
        and all(s >= 1 for s, _, _ in groups)
    ):
        shares = basic_weights(groups) if len(groups) > 1 else [Fraction(1)]
        guess = max(
            _continuous_log_delta(k * norm2(mu) / (2 * s), e_g * w)
            for (s, mu, k), w in zip(groups, shares, strict=True)
        )
        if guess - math.log(4) > unless_above:
            return best
    if len(groups) == 1:
        s, mu, k = groups[0]
        return min(best, cf._worst_log_delta(s, e_g, mu, k))
    if len(groups) <= _BASIC_EXACT_MAX:
        up = cf._AR.up
        parts = [
            cf._worst_log_delta(s, e_g * w, mu, k)
            for (s, mu, k), w in zip(groups, basic_weights(groups), strict=True)
        ]
        parts = [x for x in parts if x > mpfr("-inf")]
        if not parts:
            return mpfr("-inf")
        top = max(parts)
        total = mpfr(0)
        for x in parts:
            total = up.add(total, up.exp(up.sub(x, top)))
        best = min(best, up.add(top, up.log(total)))
    return best


def basic_weights(groups: list[Group]) -> list[Fraction]:
    """Shares of ε_G ∝ √ρ_g (equal where a ρ is past the float range)."""
    roots = [math.sqrt(cf._approx(k * norm2(mu) / (2 * s))) for s, mu, k in groups]
    if not all(0 < r < math.inf for r in roots):
        roots = [1.0] * len(groups)
    total = sum(map(Fraction, roots), Fraction(0))
    return [Fraction(r) / total for r in roots]


def basic_epsilon(
    releases: Sequence[Release],
    log_delta: Callable[[Fraction], mpfr | None],
    target: mpfr,
    best: Fraction,
) -> Fraction | None:
    """The smallest ε of the basic-composition route, when it is below ``best``.

    ``log_delta`` is the route's ln δ at an ε (:meth:`Composition._basic_log_delta`, which
    reads :func:`basic_log_delta`)."""
    if log_delta(best) is None:
        return None
    good = best
    found = log_delta(good)
    if found is None or found > target:
        return None  # this route cannot beat the others
    pure, _ = basic_parts(releases)

    def log_delta_hi(e_g: Fraction) -> mpfr:
        value = log_delta(pure + e_g)
        return mpfr(0) if value is None else value

    return pure + cf._smallest_eps(log_delta_hi, target, good - pure)
