"""Seeded noise on an engine that computes its pieces in any order (Dask blocks, Spark
partitions): a SeedSequence as a picklable triple, and piece i's generator, its i-th child.
Seeded noise is for tests and simulations only; ``rng=None`` (the OS CSPRNG) is the default.
"""

from __future__ import annotations

import numpy as np

SeedLike = np.random.SeedSequence | int | None


def picklable_seed(rng: object, runner: str, pieces: str) -> tuple | None:
    """``rng`` as the picklable (entropy, spawn_key, pool_size) of a SeedSequence, or None.

    ``runner`` names where the OS CSPRNG is read ("worker", "executor") and ``pieces`` what is
    computed in any order ("the blocks of a Dask collection"), for the error message."""
    if rng is None:
        return None
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError("rng must be None, a numpy.random.SeedSequence or an int seed, not bool")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"rng, an int seed, must be non-negative, got {rng}")
        rng = np.random.SeedSequence(int(rng))
    if not isinstance(rng, np.random.SeedSequence):
        piece = pieces.split(" of ")[0].removeprefix("the ").rstrip("s")
        raise TypeError(
            f"rng must be None (the OS CSPRNG on each {runner}), a numpy.random.SeedSequence or "
            f"an int seed, not {type(rng).__name__}: a Generator is one sequential stream, and "
            f"{pieces} are computed in any order, so each {piece} takes the child of a "
            "SeedSequence named by its index"
        )
    return (rng.entropy, tuple(rng.spawn_key), rng.pool_size)


def child_rng(seed: tuple | None, index: int) -> np.random.Generator | None:
    """Piece ``index``'s generator: the ``index``-th child of the seed, or None (the OS)."""
    if seed is None:
        return None
    entropy, spawn_key, pool_size = seed
    child = np.random.SeedSequence(entropy, spawn_key=(*spawn_key, index), pool_size=pool_size)
    return np.random.Generator(np.random.PCG64(child))
