"""An extended composition read without forming the merge (accounting._readouts._Extended).

The Accountant merges each offer into the composition it keeps.  The merge of the kept
root with the offer's node is not formed: δ of it is read from the root's suffix sums, in
time linear in the node.  These tests hold that reading against the merge formed (the
same two vectors convolved by FFT, then read point by point): each reading's upper bound
must lie above the other's lower bound, at every ε, and the exact truth (80-digit
convolutions) below the upper bound."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from dgauss.accounting import Gaussian, Laplace, _leaves, _programs, _readouts, compose


def random_kinds(rng: random.Random, count: int) -> list:
    kinds = []
    for _ in range(count):
        if rng.random() < 0.6:
            sigma2 = Fraction(rng.randint(1, 4000), rng.randint(1, 4))
            kinds.append(Gaussian(sigma2, rng.choice([1, 1, 2, [1, 2]]), k=rng.randint(1, 30)))
        else:
            scale = Fraction(rng.randint(1, 400), rng.randint(1, 4))
            kinds.append(Laplace(scale, rng.choice([1, 1, 3]), k=rng.randint(1, 20)))
    return kinds


def bounds(readout, e: Fraction) -> tuple[float, float]:
    return readout.log_delta_low_at(e), readout.log_delta_at(e)


@pytest.mark.parametrize("seed", range(12))
def test_the_suffix_sum_reading_brackets_the_formed_merge(seed):
    """Random programs (Gaussian and Laplace kinds, vector sensitivities) extended by a few
    releases: the reading from suffix sums and the formed merge's reading enclose each
    other (lower ≤ the other's upper) at ε from a tenth to ten times the tilt's, where δ
    runs from near 1 to e^-300 and below; the upper bounds agree within 20% where the
    masses are far above the formed merge's FFT error floor."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(6):
        kinds = random_kinds(rng, rng.randint(1, 5))
        more = [rng.choice(kinds) for _ in range(rng.randint(1, 6))]
        eps = Fraction(rng.choice([1, 2, 5, "0.3", "0.05", 10]))
        pld = compose(*kinds)._shared_grid_pld(eps)
        if pld is None:
            continue
        lazy = pld.extended(_programs._coordinates(more))
        assert isinstance(lazy, _readouts._Extended)
        formed = lazy._merged()
        for factor in (Fraction(1, 10), Fraction(1, 2), 1, 2, 3, 10):
            e = eps * factor
            lazy_lo, lazy_up = bounds(lazy, e)
            formed_lo, formed_up = bounds(formed, e)
            assert lazy_lo <= formed_up + 1e-12 and formed_lo <= lazy_up + 1e-12, (e, kinds)
            assert lazy_lo <= lazy_up
            if formed_lo > -200:
                assert abs(lazy_up - formed_up) < 0.2
            checked += 1
    assert checked >= 12


def hand_node(lo: int, values: list[float], err: float, kappa: float):
    v = np.asarray(values, dtype=np.float64)
    law = _leaves._leaf_law(v, lo, err)
    return _leaves._Node(lo, v, kappa, err, -math.inf, 0.0, law, 0.0)


@pytest.mark.parametrize("alpha", [0.0, 0.7, 3.0])
@pytest.mark.parametrize("seed", range(4))
def test_the_reading_is_the_double_sum_on_hand_made_vectors(alpha, seed):
    """Two short vectors on the grid h = 1/2 (so that counting one point too many or too few
    past ε moves δ by a third or more), with error bounds and scales: the reading's upper
    bound lies above Σ_{i,j} (r_i + e)(q_j + e)·e^{κ−αg}(1 − e^{ε−g}) over g = g_i + g_j > ε,
    summed here term by term at 40 digits, and within 1e-6 of it; its lower bound below the
    same sum of (r_i − e)⁺(q_j − e)⁺, and as close.  At ε on grid points, between them, and
    below every point."""
    import mpmath

    rng = random.Random(seed)
    h = 0.5
    root = hand_node(
        rng.randint(-8, 2), [rng.random() for _ in range(rng.randint(3, 40))], 1e-6, 0.3
    )
    node = hand_node(
        rng.randint(-4, 4), [rng.random() for _ in range(rng.randint(1, 25))], 2e-6, -1.1
    )
    base = _readouts._PLD.of_root(root, alpha, h)
    lazy = _readouts._Extended(base, node)

    def double_sum(eps: float, sign: int) -> mpmath.mpf:
        total = mpmath.mpf(0)
        for i, r in enumerate(root.v):
            for j, q in enumerate(node.v):
                g = mpmath.mpf(root.lo + i + node.lo + j) * h
                if g <= eps:
                    continue
                mass = max(mpmath.mpf(r) + sign * root.err, 0) * max(
                    mpmath.mpf(q) + sign * node.err, 0
                )
                total += (
                    mass
                    * mpmath.exp(root.kappa + node.kappa - alpha * g)
                    * (1 - mpmath.exp(eps - g))
                )
        return total

    for eps in (-20.0, -1.5, -0.25, 0.0, 0.5, 1.0, 1.3, 2.75, 4.0):
        with mpmath.workdps(40):  # (the precision of this test alone)
            up, lo = double_sum(eps, 1), double_sum(eps, -1)
        got_up, got_lo = lazy.log_delta(eps), lazy.log_delta_low(eps)
        if up == 0:
            assert got_up == -math.inf and got_lo == -math.inf
            continue
        assert float(mpmath.log(up)) <= got_up <= float(mpmath.log(up)) + 1e-6, eps
        assert float(mpmath.log(lo)) - 1e-6 <= got_lo <= float(mpmath.log(lo)), eps


@pytest.mark.long
def test_a_long_run_of_single_extensions_forms_the_merge_and_stays_above_the_truth():
    """Extending release by release, as an Accountant at its budget's edge does: once the
    node outgrows a share of the root the merge is formed and extension continues from
    it; every bound stays above the exact δ (80-digit convolution, tests/_compose_reference)
    and within 10% of a fresh composition."""
    from _compose_reference import composed_delta

    base = [Gaussian(3), Laplace(2)]
    extra = [Gaussian(5), Laplace(3), Gaussian(3), Gaussian(4)] * 3
    e = Fraction(2)
    step = compose(*base)._shared_grid_pld(e)
    program = list(base)
    bases = set()
    for release in extra:
        step = step.extended(_programs._coordinates([release]))
        assert step is not None
        bases.add(id(step.base))
        program.append(release)
    reference = [
        ("gaussian", r.sigma2, r.sensitivity, r.k)
        if isinstance(r, Gaussian)
        else ("laplace", r.scale, r.sensitivity, r.k)
        for r in program
    ]
    low, high = composed_delta(reference, e)
    bound = math.exp(step.log_delta_at(e))
    assert bound >= high and high - low < 1e-9 * high
    # (the kept tilt and grid are those of the first two releases: looser than afresh)
    assert bound <= compose(*program).delta(e) * 1.1
    assert len(bases) > 1  # the merge was formed on the way


def test_reading_far_from_the_tilt_falls_back_to_the_formed_merge():
    """At an ε where the suffix sums' common scales leave no range (δ far below e^-600 of
    them) the reading forms the merge and reads it: the same answer as the formed one."""
    kinds = [Gaussian(50, k=3), Laplace(4)]
    lazy = (
        compose(*kinds)
        ._shared_grid_pld(Fraction(1))
        .extended(_programs._coordinates([Gaussian(50)]))
    )
    e = Fraction(60)
    assert lazy.log_delta_at(e) == lazy._merged().log_delta_at(e)
