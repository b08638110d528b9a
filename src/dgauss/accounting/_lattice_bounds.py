"""The lattice error E of a sum of discrete Gaussians, for :mod:`dgauss.accounting`.

A weighted sum W = Σ_j μ_j Y_j of independent N_Z(0, s) is not exactly N_Z(0, s‖μ‖²):
Poisson summation gives P[W = w] ∝ e^{−w²/(2s‖μ‖²)}·(1 + R(w)) with |R| ≤ E, a sum over the
nonzero vectors of a lattice.  This module bounds E from above (``docs/accounting.md``,
*Theorem 15* and *The ℓ2 ball*):

* :func:`lattice_error_bound` for k equal weights, :func:`lattice_error_bound_vector` for
  any weights (by pieces of the theta integral, :func:`_lattice_error_bound_pieces`);
* :func:`lattice_error_bound_blocks` and :func:`lattice_error_bound_ball`: one bound over
  every concatenation of k blocks of an ℓ2 ball (the uniform bound), through the anchors
  every primitive concatenation contains (:func:`_anchors`);
* the cells of the σ² axis (:func:`_cell_floor`) at whose floor a bound is computed once and
  kept for every σ² of the cell (E falls as σ² grows).

The sums' own enclosures (Θ, tails, Theorem 7's sum) are in :mod:`._gaussian_sums`.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from functools import reduce as functools_reduce
from itertools import combinations_with_replacement
from math import factorial
from math import gcd as math_gcd

from gmpy2 import mpfr

from dgauss._interval import Arith, Interval
from dgauss.accounting._gaussian_sums import _excess

#: Most terms of the lattice error bound summed before giving up on it.
LATTICE_MAX_TERMS = 20000

#: A lattice error E this small is returned at once (ln((1+E)/(1−E)) ≈ 2E is then far below
#: the 2^−40 the accounting resolves).
NEGLIGIBLE_E = mpfr(2) ** -1000


def _integer_distance(b: int, u: Fraction, v: Fraction) -> Fraction:
    """The distance from the interval [b·u, b·v] to the nearest integer (0 when it holds one)."""
    x0, x1 = b * u, b * v
    if x0.__floor__() != x1.__floor__() or x0.denominator == 1:
        return Fraction(0)
    return min(x0 - x0.__floor__(), x0.__ceil__() - x0, x1 - x1.__floor__(), x1.__ceil__() - x1)


def lattice_error_bound(n: int, s: Fraction) -> mpfr | None:
    """An upper bound E on the relative error of Σ of n i.i.d. N_Z(0, s) against N_Z(0, ns).

    Poisson summation gives P[S_n = w] ∝ e^{−w²/(2ns)}·(1 + R(w)) with
    |R(w)| ≤ E = Σ_{v ∈ A*_{n−1}, v≠0} e^{−a|v|²}, a = 2π²s (docs/accounting.md).
    Bounding the lattice's theta series through 1 + E = √(an/π)∫θ(r)^n dr gives
    E ≤ Σ_{i=1}^{n} C(n,i)·2^{i−1}·(A_i + c^i), A_i = 2e^{−a·i(n−i)/n}, or for i > n/2
    the smaller of that and √(an/π)e^{−an/4},
    c = Σ_{j≥1} e^{−aj²} + Σ_{j≥2} e^{−a(j²−j)}.  Returns None when the bound is ≥ 1/2.
    """
    if n <= 1:
        return mpfr(0)
    ar = Arith(64)
    a = ar.pi() * ar.pi() * (2 * s)
    c = _excess(a)
    if c.hi >= 0.25:
        return None
    far = ((a * n) / ar.pi()).sqrt() * (a * Fraction(-n, 4)).exp()
    # Σ_{i>n/2} C(n,i)·2^{i−1}·(far + c^i) ≤ 3^n·far/2 + 2^n·(2c)^{⌊n/2⌋+1}/2
    upper_half = (ar.q(3) ** n * far + ar.q(2) ** n * (c * 2) ** (n // 2 + 1)) * Fraction(1, 2)
    # For i ≤ n/2, term_i ≤ 2x^i/i! with x = 2n·max(e^{−a/2}, c), so the terms
    # after i (up to n/2) sum to at most 2x^{i+1}/(i+1)!·e^x.
    x = ar.point(max((a * Fraction(-1, 2)).exp().hi, c.hi)) * (2 * n)
    total = ar.q(0)
    binom = ar.q(1)  # C(n, i)·2^{i−1}, updated as an interval (no huge integers)
    for i in range(1, min(n, LATTICE_MAX_TERMS) + 1):
        binom = binom * Fraction(n - i + 1, i) * (2 if i > 1 else 1)
        # ∫_0^{1/2} e^{−a(nr² − 2ir + i)} dr ≤ ∫_ℝ (any i) = √(π/(an))·e^{−a·i(n−i)/n}; for
        # i > n/2 the integrand's peak r = i/n lies beyond 1/2, so also ≤ e^{−an/4}/2.
        near = (a * Fraction(-i * (n - i), n)).exp().scale2(1)
        term = (far if 2 * i > n and far.hi < near.hi else near) + c**i
        total = total + term * binom
        if total.hi >= 0.5:
            return None
        if 2 * i < n:
            rest = x ** (i + 1) / factorial(i + 1) * x.exp() * 2 + upper_half
            if rest.hi <= total.hi * mpfr(2) ** -40:
                return ar.up.add(total.hi, rest.hi)
            if ar.up.add(total.hi, rest.hi) <= NEGLIGIBLE_E:
                # at large s·n both are below 64-bit MPFR's exponent range (e^{−2π²s}):
                # the relative test never passes, and E is negligible anyway
                return ar.up.add(total.hi, rest.hi)
    if n > LATTICE_MAX_TERMS:
        return None
    return total.hi


#: Pieces of each region in the general lattice bound (see lattice_error_bound_vector):
#: a coarse pass first, the fine one only when the coarse bound is not already negligible.
LATTICE_PIECES = (16, 64)


#: The lattice error is first bounded at σ² rounded down to this many significant bits (a
#: cell of the σ² axis at most 1/16 wide, relatively), where it is remembered for every σ² of
#: the cell: E falls as σ² grows, so a bound at the cell's floor holds across it.
LATTICE_CELL_BITS = 5

#: The cell's bound is kept when it is at most this (its effect on ln δ, about 2E, is then far
#: below the 2^−40 the accounting resolves); otherwise E is bounded at σ² itself.
LATTICE_CELL_ENOUGH = mpfr(2) ** -48


#: Then E is bounded (erfc and all) at the floor of a cell of this many bits (at most 1/128
#: wide, relatively), kept when at most LATTICE_FINE_ENOUGH: the E-route's δ is then within
#: a relative 2^−30 < 10^−9 of the truth (what the accuracy promises), whatever σ² in the cell.
LATTICE_FINE_BITS = 8
LATTICE_FINE_ENOUGH = mpfr(2) ** -31


def _cell_floor(s: Fraction, bits: int = LATTICE_CELL_BITS) -> Fraction:
    """The largest number with ``bits`` significant bits (give or take one) that is ≤ s > 0."""
    shift = bits - (s.numerator.bit_length() - s.denominator.bit_length())
    scaled = s * Fraction(2) ** shift  # in [2^(bits-1), 2^(bits+1))
    return Fraction(scaled.numerator // scaled.denominator) / Fraction(2) ** shift


def lattice_error_bound_vector(counts: dict[int, int], s: Fraction) -> mpfr | None:
    """An upper bound on the lattice error E of :func:`_lattice_error_bound_pieces` at σ² = s
    (None when none below 1/2 is found).

    The true E = Σ_{v ∈ Λ, v ≠ 0} e^{−2π²s|v|²} falls as s grows, so a bound at any
    a ≤ s bounds E(s).  So E is bounded at the floor a of s's cell, remembered for every σ²
    of the cell: cheaply (:func:`_lattice_error_bound_cheap`) on an octave, kept when at most
    :data:`LATTICE_CELL_ENOUGH`, then on a cell of :data:`LATTICE_CELL_BITS` bits, kept when
    at most :data:`LATTICE_FINE_ENOUGH`; then in full on a cell of :data:`LATTICE_FINE_BITS`
    bits, kept when at most LATTICE_FINE_ENOUGH; else at s itself.  (A calibration asks at
    tens of σ², most in one or two cells.)  The coarse pass of pieces is kept when at most
    2^−48.
    """
    items = tuple(sorted(counts.items()))
    if sum(n for _, n in items) <= 1:
        return mpfr(0)
    if set(counts) != {1}:
        for bits, enough in ((1, LATTICE_CELL_ENOUGH), (LATTICE_CELL_BITS, LATTICE_FINE_ENOUGH)):
            floor = _cell_floor(s, bits)  # an octave first (E is often e^−100 and less)
            if floor == s:
                break
            coarse = _lattice_error_bound_cheap(items, floor)
            if coarse is not None and coarse <= enough:
                return coarse
        floor = _cell_floor(s, LATTICE_FINE_BITS)
        if floor != s:
            fine = _lattice_error_bound_cached(items, floor)
            if fine is not None and fine <= LATTICE_FINE_ENOUGH:
                return fine
    return _lattice_error_bound_cached(items, s)


@lru_cache(maxsize=256)
def _lattice_error_bound_cheap(items, s: Fraction) -> mpfr | None:
    """:func:`_lattice_error_bound_pieces` with the coarse pieces and erfc bounded by
    e^{−x²}/(x√π) (no erfc evaluated): looser, about ten times faster."""
    return _lattice_error_bound_pieces(dict(items), s, LATTICE_PIECES[0], cheap=True)


@lru_cache(maxsize=256)
def _lattice_error_bound_cached(items, s: Fraction) -> mpfr | None:
    """lattice_error_bound_vector, remembered: ε searches and plots ask again at the same σ²."""
    counts = dict(items)
    if sum(counts.values()) <= 1:
        return mpfr(0)
    if set(counts) == {1}:
        return lattice_error_bound(counts[1], s)
    bound = None
    for pieces in LATTICE_PIECES:
        bound = _lattice_error_bound_pieces(counts, s, pieces)
        if bound is not None and bound <= LATTICE_CELL_ENOUGH:
            return bound
    return bound


def _lattice_error_bound_pieces(
    counts: dict[int, int], s: Fraction, pieces: int, cheap: bool = False
) -> mpfr | None:
    """E for W' = Σ_j μ'_j Y_j, μ' primitive with counts[b] entries of magnitude b.

    As for :func:`lattice_error_bound`, P[W' = w] ∝ e^{−w²/(2sS)}(1 + R(w)), S = ‖μ'‖²,
    |R| ≤ E = Σ_{v ∈ Λ, v≠0} e^{−a|v|²} with Λ the projection of ℤ^N onto μ'^⊥ and
    a = 2π²s; and 1 + E = √(aS/π)·2∫_0^{1/2} Φ(r) dr, Φ(r) = Π_b θ(b·r)^{n_b}.

    * On 0 ≤ r ≤ r1 = 1/(2·b_max), θ(x) ≤ e^{−ax²}(1 + e^{−a(1−2|x|)} + c) gives
      Φ ≤ e^{−aSr²}·e^{B(r)}, B(r) = Σ_b n_b(e^{−a(1−2br)} + c), increasing in r.  The
      part e^{−aSr²} integrates to at most the 1; the rest, e^{−aSr²}(e^B − 1) ≤
      e^{−aSr²}·B(r)·e^{B(t)} on a piece [·, t], is a sum of Gaussians integrated
      exactly (erfc) piece by piece.
    * On r1 ≤ r ≤ 1/2, on each piece θ(b·r) ≤ θ(d_b), d_b the least distance of b·r to
      ℤ over the piece (θ falls with that distance): ∫ ≤ Σ width·Π_b θ(d_b)^{n_b}.

    Each region is cut into ``pieces`` pieces.  Returns None when the bound is ≥ 1/2.

    ``cheap``: each Gaussian integral over a piece is bounded by the tail beyond the piece's
    end nearest the centre, erfc(x) ≤ e^{−x²}/(x√π) (x > 0), or by the whole line when the
    piece holds the centre: no erfc is evaluated (they cost most of the time).
    """
    ar = Arith(64)
    a = ar.pi() * ar.pi() * (2 * s)
    c = _excess(a)
    if c.hi >= 0.25:
        return None
    S = sum(b * b * n for b, n in counts.items())
    r1 = Fraction(1, 2 * max(counts))
    root = (a * S).sqrt()
    front = (ar.pi() / (a * S)).sqrt() * Fraction(1, 2)  # (1/2)√(π/(aS))

    whole = front.scale2(1)  # ∫_ℝ e^{−aS r²} dr = √(π/(aS))
    sqrt_pi = ar.pi().sqrt()

    def gauss(centre: Fraction, u: Fraction, v: Fraction) -> Interval:
        """∫_u^v e^{−aS(r − centre)²} dr (upper end tight)."""
        if cheap:
            near = u - centre if u >= centre else centre - v if v <= centre else None
            if near is None or near == 0:
                return Interval(mpfr(0), whole.hi, ar)
            x = root * near  # > 0: ∫ ≤ front·erfc(x) ≤ front·e^{−x²}/(x√π)
            tail = (-(x * x)).exp() / (x * sqrt_pi) * front
            return Interval(mpfr(0), min(tail.hi, whole.hi), ar)
        hi = (root * (u - centre)).erfc()
        lo = (root * (v - centre)).erfc()
        return Interval(mpfr(0), ar.up.mul(front.hi, ar.up.sub(hi.hi, lo.lo)), ar)

    def b_at(r: Fraction) -> Interval:
        total = ar.q(0)
        for b, n in counts.items():
            total = total + ((a * (2 * b * r - 1)).exp() + c) * n
        return total

    # ∫_0^{r1} e^{−aSr²}(e^{B} − 1): piece [u, v] ≤ e^{B(v)}·∫ e^{−aSr²}B(r)
    inner = ar.q(0)
    width = r1 / pieces
    for i in range(pieces):
        u, v = i * width, (i + 1) * width
        piece = ar.q(0)
        for b, n in counts.items():
            # e^{−aSr²}·e^{−a(1−2br)} = e^{−a(1 − b²/S)}·e^{−aS(r − b/S)²}
            piece = piece + (a * Fraction(-(S - b * b), S)).exp() * gauss(Fraction(b, S), u, v) * n
        piece = piece + c * gauss(Fraction(0), u, v) * sum(counts.values())
        inner = inner + piece * b_at(v).exp()
    # ∫_{r1}^{1/2} Φ by pieces
    outer = ar.q(0)
    width = (Fraction(1, 2) - r1) / pieces
    for i in range(pieces):
        u, v = r1 + i * width, r1 + (i + 1) * width
        log_value = ar.q(0)
        for b, n in counts.items():
            d = _integer_distance(b, u, v)
            # ln θ(d) ≤ −a·d² + ln(1 + e^{−a(1−2d)} + c), in logs: e^{−a·d²} may underflow
            log_theta = ar.q(-d * d) * a + (1 + (a * (2 * d - 1)).exp() + c).log()
            log_value = log_value + log_theta * n
        outer = outer + log_value.exp() * width
    total = (inner + outer) * root.scale2(1) / ar.pi().sqrt()  # × 2√(aS/π)
    if total.hi >= 0.5:
        return None
    return total.hi


# --------------------------------------------------------------------------
# One bound on the lattice error for every concatenation of k blocks (an ℓ2 ball's k queries)
# --------------------------------------------------------------------------
def _anchors(blocks: tuple[tuple[int, ...], ...], k: int) -> list[tuple[int, ...]]:
    """The multisets (as tuples of block indices) of at most min(k, 1 + ω) blocks whose
    entries have gcd 1, ω the most distinct primes of one block's gcd.

    Every multiset of k blocks whose entries have gcd 1 contains one: take any block v1,
    h = gcd(v1); for each prime p of h some block of the multiset has an entry not divisible
    by p; v1 with those has gcd 1 (it divides h, and no prime of h divides it).
    """

    def primes(n: int) -> int:
        count, p = 0, 2
        while p * p <= n:
            if n % p == 0:
                count += 1
                while n % p == 0:
                    n //= p
            p += 1
        return count + (n > 1)

    most = 1 + max(primes(math_gcd(*v)) for v in blocks)
    found: list[tuple[int, ...]] = []
    for size in range(1, min(k, most) + 1):
        for pick in combinations_with_replacement(range(len(blocks)), size):
            if math_gcd(*(x for i in pick for x in blocks[i])) != 1:
                continue
            # an anchor holding a smaller one adds nothing (its bound is at most that one's)
            if not any(all(pick.count(i) >= anchor.count(i) for i in anchor) for anchor in found):
                found.append(pick)
    return found


def lattice_error_bound_blocks(
    blocks: tuple[tuple[int, ...], ...], k: int, s: Fraction, pieces: int = 16, cheap: bool = True
) -> mpfr | None:
    """One upper bound on the lattice error E (as in :func:`_lattice_error_bound_pieces`) of
    *every* primitive vector μ' that concatenates k of the ``blocks`` (repetition allowed),
    all blocks of one squared norm N, so that S = ‖μ'‖² = k·N for all of them.  None when the
    bound is ≥ 1/2 or no such μ' is primitive.

    With Φ_v(r) = Π_{b ∈ v} θ(b·r), 1 + E_μ' = √(aS/π)·2∫_0^{1/2} Π_i Φ_{v_i}(r) dr, and the
    bound of :func:`_lattice_error_bound_pieces` is, piece by piece, a sum over the blocks:

    * on [0, r1], r1 = 1/(2·b_max) (b_max over every block), the piece is at most
      e^{B_μ(t)}·∫ e^{−aSr²}B_μ(r) dr with B_μ = Σ_i B_{v_i}: at most
      e^{k·max_v B_v(t)}·k·max_v ∫ e^{−aSr²}B_v(r) dr (S is the same for every μ');
    * on [r1, 1/2], ln Φ_μ ≤ Σ_i L_{v_i} (L_v the piece's bound on ln Φ_v); μ' primitive
      contains an anchor (:func:`_anchors`) M, so Σ_i L_{v_i} ≤ Σ_{v ∈ M} L_v + (k − |M|)·max_v L_v,
      and the largest over the anchors bounds every μ'.

    ``cheap``: erfc bounded as in :func:`_lattice_error_bound_pieces`.
    """
    ar = Arith(64)
    a = ar.pi() * ar.pi() * (2 * s)
    c = _excess(a)
    if c.hi >= 0.25:
        return None
    anchors = _anchors(blocks, k)
    if not anchors:
        return None
    counts = []
    for block in blocks:
        d: dict[int, int] = {}
        for x in block:
            d[x] = d.get(x, 0) + 1
        counts.append(d)
    S = k * sum(x * x for x in blocks[0])
    b_max = max(max(block) for block in blocks)
    r1 = Fraction(1, 2 * b_max)
    root = (a * S).sqrt()
    front = (ar.pi() / (a * S)).sqrt() * Fraction(1, 2)
    whole = front.scale2(1)
    sqrt_pi = ar.pi().sqrt()
    up = ar.up

    def gauss(centre: Fraction, u: Fraction, v: Fraction) -> mpfr:
        """An upper bound on ∫_u^v e^{−aS(r − centre)²} dr."""
        if v <= centre:  # mirror: the erfc of positive arguments (no cancellation near 2)
            u, v = 2 * centre - v, 2 * centre - u
        if cheap:
            near = u - centre if u >= centre else None
            if near is None or near == 0:
                return whole.hi
            x = root * near
            tail = (-(x * x)).exp() / (x * sqrt_pi) * front
            return min(tail.hi, whole.hi)
        hi = (root * (u - centre)).erfc()
        lo = (root * (v - centre)).erfc()
        return up.mul(front.hi, up.sub(hi.hi, lo.lo))

    sizes = [sum(d.values()) for d in counts]
    magnitudes = sorted({b for d in counts for b in d})
    # the factor e^{−a(1 − b²/S)} of each magnitude's Gaussian in B(r)·e^{−aSr²}
    weight = {b: (a * Fraction(-(S - b * b), S)).exp().hi for b in magnitudes}
    inner = mpfr(0)
    width = r1 / pieces
    for i in range(pieces):
        u, v = i * width, (i + 1) * width
        g0 = up.mul(c.hi, gauss(Fraction(0), u, v))
        term = {b: up.mul(weight[b], gauss(Fraction(b, S), u, v)) for b in magnitudes}
        grows = {b: ((a * (2 * b * v - 1)).exp() + c).hi for b in magnitudes}
        most_piece, most_b = mpfr(0), mpfr(0)
        for d, size in zip(counts, sizes, strict=True):
            piece, b_at = up.mul(g0, size), mpfr(0)
            for b, n in d.items():
                piece = up.add(piece, up.mul(term[b], n))
                b_at = up.add(b_at, up.mul(grows[b], n))
            most_piece, most_b = max(most_piece, piece), max(most_b, b_at)
        grow = ar.point(up.mul(most_b, k)).exp().hi
        inner = up.add(inner, up.mul(up.mul(most_piece, k), grow))
    outer = mpfr(0)
    width = (Fraction(1, 2) - r1) / pieces
    for i in range(pieces):
        u, v = r1 + i * width, r1 + (i + 1) * width
        log_theta = {}
        for b in magnitudes:
            dist = _integer_distance(b, u, v)
            # ln θ(d) ≤ −a·d² + ln(1 + e^{−a(1−2d)} + c)
            log_theta[b] = (ar.q(-dist * dist) * a + (1 + (a * (2 * dist - 1)).exp() + c).log()).hi
        logs = []
        for d in counts:
            total_log = mpfr(0)
            for b, n in d.items():
                total_log = up.add(total_log, up.mul(log_theta[b], n))
            logs.append(total_log)
        most = max(logs)
        best = max(
            up.add(
                functools_reduce(up.add, (logs[j] for j in anchor), mpfr(0)),
                up.mul(most, k - len(anchor)),
            )
            for anchor in anchors
        )
        outer = up.add(outer, up.mul(ar.point(best).exp().hi, ar.q(width).hi))
    total = ar.point(up.add(inner, outer)) * root.scale2(1) / sqrt_pi
    if total.hi >= 0.5:
        return None
    return total.hi


def lattice_error_bound_ball(
    blocks: tuple[tuple[int, ...], ...], k: int, s: Fraction
) -> mpfr | None:
    """:func:`lattice_error_bound_blocks` at σ² = s, through cells of the σ² axis as in
    :func:`lattice_error_bound_vector` (every E_μ' falls as σ² grows, so their largest does)."""
    for bits, enough in ((1, LATTICE_CELL_ENOUGH), (LATTICE_CELL_BITS, LATTICE_FINE_ENOUGH)):
        floor = _cell_floor(s, bits)
        if floor == s:
            break
        coarse = _blocks_cached(blocks, k, floor)
        if coarse is not None and coarse <= enough:
            return coarse
    floor = _cell_floor(s, LATTICE_FINE_BITS)
    if floor != s:
        fine = _blocks_cached(blocks, k, floor)
        if fine is not None and fine <= LATTICE_FINE_ENOUGH:
            return fine
    return _blocks_cached(blocks, k, s)


@lru_cache(maxsize=256)
def _blocks_cached(blocks, k: int, s: Fraction) -> mpfr | None:
    return lattice_error_bound_blocks(blocks, k, s, LATTICE_PIECES[0], cheap=True)
