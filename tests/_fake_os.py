"""The fake OS source's words (dgauss._sources.ScriptedOS(fake=True), csrc/dg_rng.c), and a
batch filled in given slices (as threads take them)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dgauss import _core
from dgauss._kinds import Kind
from dgauss._sources import LANE_2_FAKE_WORD


def splitmix64(j: int) -> int:
    """Word j of the fake OS source: Steele, Lea and Flood's SplitMix64 output j."""
    m = 2**64 - 1
    z = (j + 1) * 0x9E3779B97F4A7C15 & m
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & m
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & m
    return z ^ (z >> 31)


def lane_words(lane: int, count: int, prefix=()) -> list[int]:
    """The first ``count`` words the scripted source serves lane 0 or 1 (``prefix`` first)."""
    first = 0 if lane == 0 else LANE_2_FAKE_WORD
    return [*prefix, *(splitmix64(first + j) for j in range(len(prefix), count))]


def fill_in_slices(kind: Kind, param: Fraction, out: np.ndarray, slices, source, **kw) -> int:
    """dgauss._core.fill of ``out`` (mu = 0) in the (start, stop) ``slices``, in order, as one
    job (next_slice); returns the bits used."""
    it = iter(slices)
    param = Fraction(param)
    return _core.fill(
        int(kind),
        param.numerator,
        param.denominator,
        0,
        source,
        out,
        next_slice=lambda: next(it, None),
        **kw,
    )
