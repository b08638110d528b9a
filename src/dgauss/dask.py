"""Exact noise past one machine: lazy Dask arrays of samples, and noised Dask arrays,
DataFrames and Series, computed block by block wherever Dask runs them.

Needs the optional extra: ``pip install 'dgauss[dask]'`` (dask, distributed and zarr).

>>> import dgauss.dask
>>> x = dgauss.dask.sample_gaussian(100, (4, 6), chunks=(2, 3))   # nothing drawn yet
>>> x.numblocks, x.dtype
((2, 2), dtype('int64'))

Every promise of the in-memory API holds block by block:

* **Exact**: each block is filled by the compiled samplers, exactly as
  :func:`dgauss.sample_gaussian` would fill it.
* **One release, one guarantee**: ``add_gaussian_noise`` / ``add_laplace_noise`` (and a
  mechanism's or an :class:`~dgauss.Accountant`'s methods, which take Dask collections too)
  count the whole collection as **one** release, whose sensitivity is that of the whole
  collection, not of a block.  Every argument is checked and the release is counted (an
  Accountant refuses an overspend with :class:`~dgauss.PrivacyBudgetError`) before the graph is
  built; nothing is drawn until the collection is computed.  The values themselves are read
  only then: a value off the lattice of ``granularity``, a missing value or an overflow
  raises when its block is computed, after the release was counted.
* **Randomness**: with ``rng=None`` (the default) each block reads the operating system's
  CSPRNG on the worker that computes it, so no two blocks share bits, across threads,
  processes, forks and machines.  With ``rng`` a :class:`numpy.random.SeedSequence` (or an int
  seed), block *i* (in C order over the block grid; partition *i* of a DataFrame) draws from
  ``SeedSequence(entropy, spawn_key=(*spawn_key, i))`` -- ``seed.spawn(n)[i]`` of a fresh
  sequence -- so the result is reproducible whatever the scheduler and the number of workers.
  Seeded noise is for tests and simulations only, never to protect real data.
* **Dtypes are fixed before anything runs**: int64 where every value plus its noise is
  checked to fit (a block that does not raises ``OverflowError``); object blocks of exact
  Python ints where the noise can outgrow int64 (σ² > 2¹⁰⁰, scale > 2⁴⁰), for object inputs, and
  with ``overflow="object"``; float64 with a ``granularity``.

**Compute noise once.**  With OS randomness, a block that is computed again gets fresh
noise: two computations of one noised collection (or a block retried after a worker died)
are two noisings of the same cells, and publishing both lets an observer average the noise
away.  Draw once and keep the result: ``noisy = noisy.persist()``, or write it
(``noisy.to_zarr(...)``, ``to_parquet``) and publish what was written.  A block computed a
second time warns with :class:`NoiseRecomputedWarning` (on a ``distributed`` cluster, on the
client, whichever workers drew it); see docs/dask.md for what that check cannot see.
"""

from __future__ import annotations

from dgauss import _inputs, _mechanism
from dgauss._lazy import NoiseRecomputedWarning, sample_gaussian, sample_laplace
from dgauss._lazy import SeedLike as SeedLike  # what ``rng`` may be, in the samplers' signatures

NoiseRecomputedWarning.__module__ = __name__  # its name in warnings and filters

__all__ = [
    "sample_gaussian",
    "sample_laplace",
    "add_gaussian_noise",
    "add_laplace_noise",
    "NoiseRecomputedWarning",
]


def add_gaussian_noise(values, **kwargs):
    """A Dask array, DataFrame or Series plus N_Z(0, σ²) noise on every value, lazily: one
    release of a :class:`~dgauss.GaussianMechanism` over the whole collection (the keywords
    as :func:`dgauss.add_gaussian_noise`; ``rng`` as in :func:`sample_gaussian`; no ``out``).
    The sensitivity is one person's effect on the whole collection."""
    _require_dask(values)
    return _mechanism.add_gaussian_noise(values, **kwargs)


def add_laplace_noise(values, **kwargs):
    """A Dask array, DataFrame or Series plus Lap_Z(t) noise on every value, lazily: one
    release of a :class:`~dgauss.LaplaceMechanism` (keywords as
    :func:`dgauss.add_laplace_noise`; ``rng`` as in :func:`sample_gaussian`)."""
    _require_dask(values)
    return _mechanism.add_laplace_noise(values, **kwargs)


def _require_dask(values) -> None:
    if not _inputs._is_dask(values):
        raise TypeError(
            "dgauss.dask noises Dask collections; for an in-memory "
            f"{type(values).__name__} use dgauss.add_gaussian_noise / add_laplace_noise"
        )
