"""Composing the leaves of the PLD route: convolution by FFT with each entry's floating-point
error bounded and carried (:func:`_convolve`, :func:`_merge`, and :func:`_product`, the powers
of several leaves in one transform), the negligible ends of each result dropped and charged
(:func:`_truncate`), and a program's coordinates composed into one node (:func:`_composed`,
by :func:`_composed_leaves`'s cheaper of a product and a tree of merges).

Steps 2 to 4 of the PLD route (:mod:`._composition`); the error analysis:
``docs/accounting.md``, *Composing a program*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dgauss import _pool
from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._laws import _Law
from dgauss.accounting._leaves import _leaf, _Node
from dgauss.accounting._pld_settings import (
    _DROP,
    _LOG_DROP,
    _NEG_INF,
    _U,
    _WINDOW,
    PLD_MAX_LENGTH,
    PLD_MAX_POINTS,
    _float_up,
)
from dgauss.accounting._programs import _Coordinate


def _fft_length(n: int) -> int:
    """The smallest 2^i·3^j·5^k ≥ n: a transform of that length is about as fast per point
    as a power of two's (pocketfft's radix-3 and -5 passes), and pads less (a power of two
    doubles the work of a vector just past one)."""
    best = 1 << (n - 1).bit_length()
    five = 1
    while five < best:
        three = five
        while three < best:
            m = three
            while m < n:
                m *= 2
            best = min(best, m)
            three *= 3
        five *= 5
    return best


def _fft_error(n: int) -> float:
    """Entrywise error bound of an FFT convolution of length n, per unit of ‖a‖₁‖b‖₁."""
    return 80 * max(1, (n - 1).bit_length()) * _U


def _convolve(a: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, float]:
    """The convolution of a and b (b None: of a with itself, one transform fewer), and a
    bound on each entry's rounding error per unit of ‖a‖₁‖b‖₁ (the inputs nonnegative)."""
    other = a if b is None else b
    n = len(a) + len(other) - 1
    if min(len(a), len(other)) <= 64:
        return np.convolve(a, other), 2 * min(len(a), len(other)) * _U
    size = _fft_length(n)
    fa = np.fft.rfft(a, size)
    fb = fa if b is None else np.fft.rfft(b, size)
    return np.fft.irfft(fa * fb, size)[:n], _fft_error(size)


def _merge(a: _Node, b: _Node) -> _Node:
    n = len(a.v) + len(b.v) - 1
    if n > PLD_MAX_LENGTH:  # before allocating: the route is left out instead
        raise ArithmeticError(f"a composed vector of {n} points exceeds the PLD route's budget")
    na, nb = float(a.v.sum()), float(b.v.sum())
    na_true, nb_true = na + a.err * len(a.v), nb + b.err * len(b.v)
    v, rounding = _convolve(a.v, b.v if b is not a else None)
    err = a.err * nb_true + b.err * na_true + rounding * na_true * nb_true
    np.maximum(v, 0.0, out=v)
    top = float(v.max())
    if top <= 0:
        top = 1.0
    v /= top
    err = err / top * (1 + 4 * _U)
    kappa = _float_up(a.kappa + b.kappa + math.log(top))
    slack = a.kappa_slack + b.kappa_slack + 16 * _U * (abs(a.kappa) + abs(b.kappa) + abs(kappa))
    dropped = float(np.logaddexp(a.dropped, b.dropped))
    merged = _Node(
        a.lo + b.lo,
        v,
        kappa,
        err,
        dropped,
        a.log_mgf + b.log_mgf,
        a.law + b.law,
        slack,
    )
    return _truncate(merged)


def _truncate(node: _Node) -> _Node:
    """Drop the ends of a node's vector whose mass is negligible, recording it as dropped.

    Two bounds on an end's true tilted mass, whichever drops more on each side:

    * measured: Σ (value + error) over it, while below _DROP of the whole;
    * the law's: the node's vector is (up to earlier drops, which only remove mass) the
      convolution of its leaves, i.e. at most Π_j M̄_j times the law of a sum of
      independent variables, leaf j's supported on an interval of width w_j, with a
      variance and a reach from its mean bounded from its vector.  Beyond its mean ± t
      (:meth:`_Law.reach`: Hoeffding's t = √(Σw_j²·ln(1/_DROP)/2) or Bennett's, whichever
      is smaller) each side holds at most _DROP of it: in the units of ``dropped``
      (mass / Π M̄_j) that is _DROP exactly, whatever the FFT's error floor, which stops
      the measured bound from cutting anything in long compositions.  (Bennett's is the
      shorter past a few dozen leaves: about √(2·ln(1/_DROP)·Σ Var) where Hoeffding's has
      √(Σw_j²/4), and a Gaussian leaf is 20 standard deviations wide.)
    """
    v = node.v
    n = len(v)
    upper = v + node.err
    total = float(upper.sum())
    limit = _DROP * total
    head = np.cumsum(upper)
    tail = np.cumsum(upper[::-1])
    i = int(np.searchsorted(head, limit, side="right"))
    k = int(np.searchsorted(tail, limit, side="right"))
    law = node.law
    i_h = max(0, math.floor(law.mean - law.reach(False)) - node.lo)  # below mean − t
    k_h = max(0, n - 1 - (math.ceil(law.mean + law.reach(True)) - node.lo))  # above mean + t
    pieces = []  # ln of each dropped part's mass / Π_{j∈node} M̄_j
    if i_h > i:
        i = i_h
        pieces.append(_LOG_DROP)
    elif i and head[i - 1] > 0:
        pieces.append(_float_up(math.log(float(head[i - 1]) * 1.0001) + node.kappa - node.log_mgf))
    if k_h > k:
        k = k_h
        pieces.append(_LOG_DROP)
    elif k and tail[k - 1] > 0:
        pieces.append(_float_up(math.log(float(tail[k - 1]) * 1.0001) + node.kappa - node.log_mgf))
    if i + k >= n - 1 or i + k == 0:
        return node
    dropped = node.dropped
    for piece in pieces:
        dropped = float(np.logaddexp(dropped, piece))
    kept = v[i : n - k].copy()
    return _Node(
        node.lo + i,
        kept,
        node.kappa,
        node.err,
        dropped,
        node.log_mgf,
        node.law,
        node.kappa_slack,
    )


#: A level of merges runs on every core when its vectors add up to this many points.
_PARALLEL_POINTS = 1 << 16


def _threads(tasks: int, points: int) -> int:
    """How many threads ``tasks`` merges over vectors of ``points`` points in all get."""
    return _pool.cores() if tasks > 1 and points >= _PARALLEL_POINTS else 1


def _transform_error(n: int) -> float:
    """Relative ℓ2 error bound of one real FFT of length n, forward or inverse: 25·⌈log₂ n⌉·u,
    five times the classical radix-2 bound (as the convolution's 80 is three transforms'
    and a product's)."""
    return 25 * max(1, (n - 1).bit_length()) * _U


def _spectrum_power(f: np.ndarray, k: int) -> np.ndarray:
    """f^k entrywise, by repeated squaring."""
    result, base = None, f
    while True:
        if k & 1:
            if result is None:
                result = base.copy() if base is f else base
            else:
                result = result * base
        k >>= 1
        if not k:
            assert result is not None
            return result
        base = base * base


@dataclass
class _Factor:
    """One leaf's part of a product: its normalised vector's spectrum raised to its count."""

    spectrum: np.ndarray
    top: float  # an upper bound on the transform's largest modulus (at least 1)
    scale: float  # the leaf's vector sum S (the normalised vector is v / S)
    err: float  # entrywise error bound of the normalised vector (against the true one / S)
    mass: float  # an upper bound on the true normalised vector's ℓ1 mass


def _folded(w: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """w folded modulo n: entry i the sum of w's entries i, i + n, i + 2n, ... (w itself when
    it is at most n long), and m, how many entries each sum has at most.

    A transform of length n reads a vector only modulo n: NumPy's ``rfft(w, n)`` would crop a
    longer w to its first n entries instead, losing its top (at a steep tilt, nearly all of
    its mass).  Folding is a ring map from polynomials to polynomials modulo x^n − 1, so the
    circular convolution of the folded vectors is the linear convolution folded: each entry of
    a window of n consecutive indices is its linear value plus the linear mass outside the
    window that lands on it, which :func:`_product` charges as the alias.  Each sum of m
    nonnegative floats is within (m − 1)·u of its own value."""
    if len(w) <= n:
        return w, 1
    m = -(-len(w) // n)
    padded = np.zeros(m * n)
    padded[: len(w)] = w
    return padded.reshape(m, n).sum(axis=0), m


def _factor(leaf: _Node, count: int, n: int) -> _Factor:
    s = float(leaf.v.sum())
    w = leaf.v / s
    # w = v/S within a rounding: the true vector / S is within err/S (+ that rounding) of w
    err = leaf.err / s * (1 + 2 * _U) + _U * float(w.max())
    mass = (1 + 2 * len(w) * _U) + err * len(w) * (1 + 2 * _U)
    # folded modulo n (a leaf longer than the window the product keeps): each entry sums at
    # most m entries of w, so it is within m·err of the true vector's fold, plus the fold's
    # own rounding, (m − 1)·u of the entry; the ℓ1 masses are the unfolded ones (the computed
    # one within (m − 1)·u more, inside the 2·len(w)·u already allowed, as m ≤ len(w))
    w, m = _folded(w, n)
    if m > 1:
        err = (m * err + m * _U * float(w.max())) * (1 + 4 * _U)
    f = np.fft.rfft(w, n)
    top = max(1.0, float(np.abs(f).max()) * (1 + 4 * _U))
    return _Factor(_spectrum_power(f, count), top, s, err, mass)


def _span(pairs: list[tuple[_Node, int]]) -> tuple[_Law, int, int, int, int]:
    """For leaves taken ``k`` times each: (their sum's law, the support's first and last
    grid index, and the window _product keeps: the support cut to the law's mean ± reach)."""
    laws = [leaf.law.times(k) for leaf, k in pairs]
    law = sum(laws[1:], laws[0])
    first = sum(leaf.lo * k for leaf, k in pairs)
    last = sum((leaf.lo + len(leaf.v) - 1) * k for leaf, k in pairs)
    lo = max(first, math.floor(law.mean - law.reach(False)))
    hi = min(last, math.ceil(law.mean + law.reach(True)))
    return law, first, last, lo, hi


def _transform_cost(n: int) -> float:
    return n * max(1, n.bit_length())


def _composed_leaves(pairs: list[tuple[_Node, int]]) -> _Node:
    """The node of leaves taken k times each: one :func:`_product` of them all where that
    transforms fewer points than a tree would, else each leaf's power in one transform and
    a balanced tree of merges (shortest first, each level's merges on every core where they
    are long enough to pay: NumPy's FFTs release the GIL, and the result does not depend on
    the order they finish in).  The cost model: a product transforms every leaf and its
    result at the whole window's length n (n·log₂ n each); a tree of m powers transforms, level
    by level, about ten times their own windows' points (three transforms a merge, the levels'
    lengths falling by about √2: a few kinds taken many times compose in one product, many
    kinds taken once in a tree)."""
    windows = [_span([pair]) for pair in pairs]
    _, _, _, lo, hi = _span(pairs)
    product = (len(pairs) + 1) * _transform_cost(_fft_length(hi - lo + 1))
    tree = 10 * sum(_transform_cost(_fft_length(w[4] - w[3] + 1)) for w in windows)
    if product <= tree:
        return _product([leaf for leaf, _ in pairs], [k for _, k in pairs])
    points = sum(w[4] - w[3] + 1 for w in windows)
    threads = _threads(len(pairs), points)
    nodes = _pool.map_ordered(lambda p: _product([p[0]], [p[1]]), pairs, threads)
    while len(nodes) > 1:
        nodes.sort(key=lambda node: len(node.v))
        merges = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
        points = sum(len(x.v) + len(y.v) for x, y in merges)
        merged = _pool.map_ordered(lambda p: _merge(*p), merges, _threads(len(merges), points))
        nodes = merged + ([nodes[-1]] if len(nodes) % 2 else [])
    return nodes[0]


def _product(leaves: list[_Node], counts: list[int]) -> _Node:
    """The node of the leaves' convolution, leaf i taken ``counts[i]`` times, in one
    transform: each normalised leaf's spectrum raised to its count, the spectra multiplied,
    one inverse transform.  Its length is cut to the law's mean ± reach (as _truncate would
    cut it), the transform length n holding that window: the circular convolution then adds
    to each entry at most the computed convolution's mass beyond the window, 2·_DROP of the
    whole (the law bounds the computed leaves' sum as well as the true one's).  That needs
    every leaf whole in the transform: one longer than n (at a steep tilt a steep kind's
    window is narrower than its leaf) is folded modulo n first (:func:`_folded`, which the
    circular convolution reads exactly as the linear one folded), never cropped.

    Entrywise error, in units of Π S_i^{k_i} (S_i a leaf's vector sum, w_i = v_i/S_i): the
    inputs', Σ_i k_i·e_i·σ_i^{k_i−1}·Π_{j≠i} σ_j^{k_j} (e_i w_i's entrywise bound, σ_i an
    upper bound on the true and computed normalised masses: telescoping, each factor's ℓ1 at
    most σ); the transforms': with K = Σ k_i, γ = _transform_error(n) and M ≥ 1 bounding
    every computed spectrum's modulus, ‖Ŵ_i − W_i‖₂ ≤ γ·√n·‖w_i‖₂ ≤ γ√n, so the product's
    spectrum is within M^{K−1}·K·γ√n in ℓ2, the complex multiplications add
    (K − 1)·√5·u·M^K·√n (each within √5·u, Brent et al. 2007; a product of K factors by
    repeated squaring or any other order, unrolled, is K − 1 multiplications, each rounding
    factor raised to how often its result recurs), and the inverse (1/√n in ℓ2) γ·M^K: each
    entry within M^{K−1}Kγ + γM^K + (K − 1)√5uM^K (the ℓ2 bound bounds every entry)."""
    pairs = list(zip(leaves, counts, strict=True))
    if pairs == [(leaves[0], 1)]:
        return leaves[0]
    law, first, last, lo, hi = _span(pairs)
    cut = int(lo > first) + int(hi < last)
    length = hi - lo + 1
    if length > PLD_MAX_LENGTH:
        raise ArithmeticError(
            f"a composed vector of {length} points exceeds the PLD route's budget"
        )
    n = _fft_length(length)
    threads = _threads(len(leaves), n * len(leaves)) if n <= 1 << 22 else 1
    factors = _pool.map_ordered(lambda p: _factor(p[0], p[1], n), pairs, threads)
    spectrum = factors[0].spectrum
    for f in factors[1:]:
        spectrum = spectrum * f.spectrum
    x = np.fft.irfft(spectrum, n)
    total = sum(counts)
    top = max(f.top for f in factors)
    gamma = _transform_error(n)
    power = top**total * (1 + 2 * _U)
    if not power < 1e300:
        raise ArithmeticError("the PLD route's product of transforms has no error bound")
    rounding = (power / top * total * gamma + gamma * power + total * 2.25 * _U * power) * 1.01
    inputs, mass = 0.0, 1.0  # the inputs' error and the masses' product, leaf by leaf
    for f, k in zip(factors, counts, strict=True):
        grown = f.mass**k * (1 + 4 * _U)
        inputs = (inputs * grown + mass * k * f.err * f.mass ** (k - 1)) * (1 + 4 * _U)
        mass *= grown
    alias = 2 * _DROP * mass * (1 + 1e-9) if cut else 0.0
    v = x[(lo - first + np.arange(length)) % n]  # entry j: grid index lo + j
    np.maximum(v, 0.0, out=v)
    peak = float(v.max())
    if peak <= 0:
        peak = 1.0
    v /= peak
    err = (inputs + rounding + alias + 1e-300) / peak * (1 + 4 * _U)
    # κ: ln of Π (S_i·e^{κ_i})^{k_i}·peak, its float sum rounded up by a bound on its error
    terms = [
        k * (leaf.kappa + math.log(f.scale))
        for leaf, f, k in zip(leaves, factors, counts, strict=True)
    ]
    terms.append(math.log(peak))
    # each term within a few roundings of its parts (libm's ln within 4 ulp), the sum
    # (math.fsum) within one
    parts = sum(
        k * (abs(leaf.kappa) + abs(math.log(f.scale)))
        for leaf, f, k in zip(leaves, factors, counts, strict=True)
    )
    slop = 16 * _U * (parts + abs(terms[-1])) + 1e-300
    kappa = _float_up(math.fsum(terms) + slop)
    slack = sum(leaf.kappa_slack * k for leaf, k in zip(leaves, counts, strict=True)) + 2 * slop
    slack += 16 * _U * abs(kappa)
    pieces = [math.log(k) + leaf.dropped for leaf, k in pairs if leaf.dropped > _NEG_INF]
    pieces += [_LOG_DROP] * cut
    dropped = _float_up(float(np.logaddexp.reduce(pieces))) if pieces else _NEG_INF
    log_mgf = _float_up(math.fsum(leaf.log_mgf * k for leaf, k in pairs))
    return _truncate(_Node(lo, v, kappa, err, dropped, log_mgf, law, slack))


#: A kept composition keeps at most this many of its extensions' leaves (composed(): each
#: extension by a kind merged before reuses its leaf).
_LEAVES_KEPT = 256


def _composed(
    coords: list[_Coordinate],
    alpha: float,
    h: float,
    a: Fraction | None,
    start: _Node | None,
    leaves_kept: dict | None = None,
) -> _Node:
    """The coordinates' leaves at (α, h) (or on the lattice a) composed into one node, and
    merged into ``start`` (a node composed at the same α and h) when one is given;
    ``leaves_kept``: the leaves built at this (α, h) before, by (kind, parameter, shift)
    (read and added to; a leaf is a function of those and (α, h), and no merge alters
    its inputs)."""
    for c in coords:  # a leaf wider than the budget fails: find out before the work
        p = cf._approx(c.param)
        span = 2 * c.m / p if not c.gaussian else 2 * (_WINDOW * math.sqrt(p) + 1) * c.m / p
        if span / h > 2 * PLD_MAX_POINTS:
            raise ArithmeticError("a coordinate's leaf would exceed the PLD route's budget")
    leaves = []
    for c in coords:
        key = (c.gaussian, c.param, c.m)
        leaf = leaves_kept.get(key) if leaves_kept is not None else None
        if leaf is None:
            leaf = _leaf(c, alpha, h, a)
            if leaf is None:
                raise ArithmeticError("a coordinate is out of the PLD route's range")
            if leaves_kept is not None and len(leaves_kept) < _LEAVES_KEPT:
                leaves_kept[key] = leaf
        leaves.append(leaf)
    # the composed vector, cut by _truncate, spans at most its reach: refuse before the work
    laws = [leaf.law.times(c.count) for c, leaf in zip(coords, leaves, strict=True)]
    laws += [start.law] if start is not None else []
    law = sum(laws[1:], laws[0])
    if law.reach(True) + law.reach(False) > PLD_MAX_LENGTH / 2:
        raise ArithmeticError("the composed vector would exceed the PLD route's budget")
    # the leaves' powers (_composed_leaves), then merged into ``start``
    node = _composed_leaves(list(zip(leaves, [c.count for c in coords], strict=True)))
    return node if start is None else _merge(start, node)
