"""Core against oracle on seeded NumPy generators: the same samples, the same bits used, and
the generators left in the same state (both took exactly the same 64-bit words)."""

from fractions import Fraction

import numpy as np

from dgauss import _core, reference


def both(kind, param, n, mu=0, dtype=np.int64, bitgen=np.random.PCG64, seed=2024, **options):
    """Run core and oracle on equal generators (``options``, e.g. method, to both fills);
    return their outputs, bits used, generators."""
    param = Fraction(param)
    results = []
    for fill in (_core.fill, reference.fill):
        gen = bitgen(seed)
        out = np.empty(n, dtype=dtype)
        bits = fill(kind, param.numerator, param.denominator, mu, gen, out, **options)
        results.append((out, bits, gen))
    return results


def assert_same(results):
    (core, core_bits, core_gen), (ref, ref_bits, ref_gen) = results
    assert core.tolist() == ref.tolist()
    assert core_bits == ref_bits
    assert core_gen.random_raw(8).tolist() == ref_gen.random_raw(8).tolist()


def assert_parity(kind, param, n, seeds=range(3), **options):
    """assert_same for each seed."""
    for seed in seeds:
        assert_same(both(kind, param, n, seed=seed, **options))
