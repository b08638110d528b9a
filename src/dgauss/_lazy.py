"""The Dask path of dgauss (public through :mod:`dgauss.dask`, whose docstring says what it
promises): lazy sampled arrays, one task a block, and the lazy release of a noised Dask
collection, which :mod:`dgauss._dispatch` hands here.  It imports the in-memory path
(:mod:`dgauss._inputs`), never the modules that dispatch to it.
"""

from __future__ import annotations

import secrets
import threading
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "dgauss.dask needs Dask: pip install 'dgauss[dask]' (dask and distributed)"
    ) from exc

from dgauss import _driver, _inputs, _params, _seeds
from dgauss._kinds import Kind

#: What ``rng`` may be: None (the OS CSPRNG), or a seed that names every block's stream.
SeedLike = _seeds.SeedLike


class NoiseRecomputedWarning(UserWarning):
    """A block of OS-random noise was computed a second time: it differs from the first."""


# ==========================================================================
# Randomness per block
# ==========================================================================


def _seed(rng: SeedLike) -> tuple | None:
    """``rng`` as a picklable seed (:func:`dgauss._seeds.picklable_seed`), or None."""
    return _seeds.picklable_seed(rng, "worker", "the blocks of a Dask collection")


_block_rng = _seeds.child_rng  # piece i's generator: the seed's i-th child, or None (the OS)


#: The topic under which a distributed worker reports each block of OS noise it has drawn.
_TOPIC = "dgauss-noise-drawn"
_drawn_blocks: set[tuple[str, int]] = set()  # (collection, block) heard of in this process
_warned: set[str] = set()  # collections warned about (once each)
_watching: set[str] = set()  # the ids of the distributed clients that hear of drawn blocks
_lock = threading.Lock()


def _drawn(name: str, index: int, seed: tuple | None) -> None:
    """Block ``index`` of collection ``name`` has been drawn here.  With OS randomness, a
    distributed worker reports it to the client (:func:`_watch`), which checks across every
    worker; elsewhere (threads, the sync scheduler) the check is this process's.  A seeded
    block repeats itself: nothing to check."""
    if seed is not None:
        return
    worker = _distributed_worker()
    if worker is not None:
        worker.log_event(_TOPIC, [name, index])
    else:
        _check_once(name, index)


def _check_once(name: str, index: int) -> None:
    """Warn (once per collection) when block ``index`` of ``name`` is drawn a second time."""
    with _lock:
        again = (name, index) in _drawn_blocks and name not in _warned
        _drawn_blocks.add((name, index))
        if again:
            _warned.add(name)
    if again:
        warnings.warn(
            f"block {index} of the noised collection {name!r} was computed again, with fresh "
            "OS noise: publishing both noisings of a cell lets an observer average the noise "
            "away; persist the noised collection (.persist(), .to_zarr(...)) and use that",
            NoiseRecomputedWarning,
            stacklevel=3,
        )


def _distributed_worker():
    """The distributed worker running this task, or None."""
    try:
        from distributed import get_worker
    except ImportError:
        return None
    try:
        return get_worker()
    except ValueError:  # not in a distributed task
        return None


def _watch(seed: tuple | None) -> None:
    """With OS randomness and a distributed client current, have that client hear of every
    block its workers draw (:func:`_drawn`), so that a block drawn twice warns on the client,
    whichever workers drew it."""
    if seed is not None:
        return
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):  # no distributed, or no client: local schedulers
        return
    with _lock:
        if client.id in _watching:
            return
        _watching.add(client.id)
    client.subscribe_topic(_TOPIC, _heard)


def _heard(event) -> None:
    """A worker's report of a drawn block, on the client: (timestamp, [name, index])."""
    _, (name, index) = event
    _check_once(name, index)


def _name(prefix: str, seed: tuple | None, *parts) -> str:
    """A collection's key name: unique per call with OS randomness (two noisings must never be
    merged into one by Dask), the same for the same seed and arguments (the same values)."""
    if seed is None:
        return f"{prefix}-{secrets.token_hex(16)}"
    return f"{prefix}-{tokenize(seed, *parts)}"


# ==========================================================================
# Sampling
# ==========================================================================


@dataclass(frozen=True)
class _Draw:
    """What every block of one sampled array needs (one picklable object per task)."""

    kind: int
    param: Fraction
    mu: int
    dtype: np.dtype
    seed: tuple | None
    name: str


def _sample_block(draw: _Draw, shape: tuple[int, ...], index: int) -> np.ndarray:
    from dgauss import _core  # the compiled core, on the worker

    rng = _block_rng(draw.seed, index)
    block = _driver.draw(_core.fill, draw.kind, draw.param, shape, draw.mu, rng, draw.dtype)
    _drawn(draw.name, index, draw.seed)
    return block


def _sample(kind: Kind, param, size, chunks, mu, dtype, rng) -> da.Array:
    value, mu, out_dtype = _driver.checked(kind, param, mu, dtype)
    shape = _params.shape(size)
    if shape is None:
        raise ValueError("size must be an int or a tuple of ints (a Dask array has a shape)")
    if chunks is None:
        raise ValueError("chunks must be given: the blocks' shape, as for dask.array")
    try:
        normalized = da.core.normalize_chunks(chunks, shape, dtype=out_dtype)
    except (ValueError, NotImplementedError) as exc:
        raise ValueError(f"chunks={chunks!r} does not fit size {shape}: {exc}") from None
    seed = _seed(rng)
    prefix = "dgauss-" + ("gaussian" if kind == Kind.DISCRETE_GAUSSIAN else "laplace")
    name = _name(prefix, seed, int(kind), value, mu, shape, normalized, out_dtype.str)
    numblocks = tuple(len(c) for c in normalized)
    draw = _Draw(int(kind), value, mu, out_dtype, seed, name)
    _watch(seed)
    graph: dict[Any, Any] = {}
    for index, block_id in enumerate(np.ndindex(*numblocks)):
        block_shape = tuple(c[i] for c, i in zip(normalized, block_id, strict=True))
        graph[(name,) + block_id] = (_sample_block, draw, block_shape, index)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=())
    return da.Array(hlg, name, normalized, meta=np.empty((0,) * len(shape), dtype=out_dtype))


def sample_gaussian(sigma2, size, *, chunks, mu=0, dtype=None, rng: SeedLike = None) -> da.Array:
    r"""A lazy Dask array of independent draws from the discrete Gaussian
    :math:`\mathcal{N}_\mathbb{Z}(\mu, \sigma^2)`, drawn block by block where Dask computes it.

    Parameters
    ----------
    sigma2, mu, dtype
        As in :func:`dgauss.sample_gaussian` (exact rationals; ``dtype`` None gives int64 when
        ``sigma2 <= 2**100`` and ``|mu| <= 2**62``, else object blocks of exact Python ints).
    size : int or tuple of ints
        The array's shape.
    chunks : int, tuple or str
        The blocks' shape, as for :func:`dask.array.ones` (``"auto"`` only for int64).
    rng : None, numpy.random.SeedSequence or int
        None (default): each block reads the OS CSPRNG on the worker that computes it, fresh
        on every computation.  A SeedSequence (or int seed): block *i* draws from the seed's
        *i*-th child, the same values on any scheduler and number of workers; for tests and
        simulations only.

    Returns
    -------
    dask.array.Array
        Of shape ``size`` and blocks ``chunks``; nothing is drawn until it is computed.

    Notes
    -----
    **Exactness.**  Every block is distributed exactly as stated (Algorithm 3 of Canonne,
    Kamath & Steinke 2020, on random bits with integer arithmetic), and the blocks are
    independent.
    """
    return _sample(Kind.DISCRETE_GAUSSIAN, sigma2, size, chunks, mu, dtype, rng)


def sample_laplace(scale, size, *, chunks, mu=0, dtype=None, rng: SeedLike = None) -> da.Array:
    r"""A lazy Dask array of independent draws from the discrete Laplace
    :math:`\mathrm{Lap}_\mathbb{Z}(\mu, t)`, ``scale`` = t; otherwise as
    :func:`sample_gaussian` (int64 when ``scale <= 2**40`` and ``|mu| <= 2**62``)."""
    return _sample(Kind.DISCRETE_LAPLACE, scale, size, chunks, mu, dtype, rng)


# ==========================================================================
# Noising a collection
# ==========================================================================


def _result_dtype(kind_of_values: str, int64_safe: bool, overflow: str, float_out: bool):
    """The dtype of every noised block, fixed before anything runs."""
    if float_out:
        return np.dtype(np.float64)
    if kind_of_values == "O" or not int64_safe or overflow == "object":
        return np.dtype(object)
    return np.dtype(np.int64)


def _check_values_dtype(dtype: np.dtype, g: Fraction | None, name: str) -> None:
    """The in-memory rules on a collection's dtype, checked before the release is counted."""
    if dtype.kind == "b":
        raise TypeError(f"{name} must be integers, not bool (convert with .astype(int))")
    if dtype.kind not in "iufO":
        raise TypeError(f"{name} must be integers, not dtype {dtype}")
    if dtype.kind == "f" and g is None:
        raise TypeError(
            f"{name} are floats: pass granularity=g (values on the lattice g*Z, e.g. "
            "granularity=0.5) or integer counts; floats are never rounded"
        )


def _numpy_kind(dtype) -> str:
    """A pandas column dtype's NumPy kind (an extension dtype's, e.g. Int64 -> "i")."""
    if isinstance(dtype, np.dtype):
        return dtype.kind
    return np.dtype(getattr(dtype, "numpy_dtype", np.dtype(object))).kind


@dataclass(frozen=True)
class _Plan:
    """What every block of one noised collection needs (one picklable object per task, so
    that Dask reads none of it as a key or a task)."""

    kind: int
    param: Fraction
    int64_safe: bool
    granularity: Fraction | None
    clip: tuple[int | None, int | None] | None
    overflow: str
    workers: int | None
    dtype: np.dtype  # of every noised block or column
    seed: tuple | None
    name: str
    numblocks: tuple[int, ...] = ()  # an array's block grid
    columns: list | None = None  # a DataFrame's noised columns (None: all)


def _noise_block(values, plan: _Plan, index: int):
    """One block (an ndarray) or partition (pandas) noised as the in-memory API noises it."""
    prep = _inputs._prepare(values, plan.granularity, columns=plan.columns)
    noised = _inputs._add(
        prep,
        Kind(plan.kind),
        plan.param,
        plan.int64_safe,
        rng=_block_rng(plan.seed, index),
        out=None,
        clip=plan.clip,
        overflow=plan.overflow,
        workers=plan.workers,
        granularity=plan.granularity,
    )
    _drawn(plan.name, index, plan.seed)
    if prep.pandas is None:
        return noised.astype(plan.dtype, copy=False)
    return _as_meta(noised, plan.columns, plan.dtype)


def _as_meta(frame, columns, dtype):
    """A noised pandas partition with its noised columns in the dtype declared for them."""
    if getattr(frame, "ndim", 1) == 1:
        return frame.astype(dtype)
    for c in frame.columns if columns is None else columns:
        frame[c] = frame[c].astype(dtype)
    return frame


def _array_block(block, *, plan: _Plan, block_id=None):
    index = int(np.ravel_multi_index(block_id, plan.numblocks)) if plan.numblocks else 0
    return _noise_block(block, plan, index)


def _partition(part, *, plan: _Plan, partition_info=None):
    return _noise_block(part, plan, partition_info["number"] if partition_info else 0)


def _noised(mech, values, take, rng, out, clip, overflow: str, workers, columns):
    """The lazy noised collection of one release of ``mech`` (see
    :func:`dgauss._inputs._release`): every argument checked, then ``take()``, then the
    graph, one task per block."""
    kind, param, granularity = mech._kind, mech._param, mech.granularity
    if out is not None:
        raise TypeError("out= is not supported for a Dask collection (it is noised lazily)")
    clip_, overflow_ = _inputs._check_clip(clip, granularity), _inputs._check_overflow(overflow)
    seed = _seed(rng)
    _params.workers(workers, _block_rng(seed, 0))  # a seeded block is one stream: 1 worker
    int64_safe = _driver.int64_safe(kind, param)
    float_out = granularity is not None
    common = (int(kind), param, int64_safe, granularity, clip_, overflow_, workers)
    prefix = "dgauss-noise-" + ("gaussian" if kind == Kind.DISCRETE_GAUSSIAN else "laplace")
    if isinstance(values, da.Array):
        if columns is not None:
            raise TypeError("columns= chooses count columns of a DataFrame, not of an array")
        _check_values_dtype(values.dtype, granularity, "values")
        dtype = _result_dtype(values.dtype.kind, int64_safe, overflow_, float_out)
        take()
        _watch(seed)
        plan = _Plan(
            *common,
            dtype=dtype,
            seed=seed,
            name=_name(prefix, seed, values.name, *common),
            numblocks=values.numblocks,
        )
        return da.map_blocks(
            _array_block,
            values,
            plan=plan,
            dtype=dtype,
            name=plan.name,
            meta=np.empty((0,) * values.ndim, dtype=dtype),
        )
    if not hasattr(values, "map_partitions") or not hasattr(values, "_meta"):
        raise TypeError(
            "values must be a Dask array, DataFrame or Series (or an in-memory array for "
            f"dgauss.add_gaussian_noise), not {type(values).__name__}"
        )
    meta = values._meta
    _, chosen = _inputs._pandas_array(meta, granularity, columns)  # names, dtypes (values later)
    parts = [meta] if meta.ndim == 1 else [meta[c] for c in (chosen or meta.columns)]
    kinds = {_numpy_kind(part.dtype) for part in parts}
    dtype = _result_dtype("O" if "O" in kinds else "i", int64_safe, overflow_, float_out)
    take()
    _watch(seed)
    plan = _Plan(
        *common,
        dtype=dtype,
        seed=seed,
        name=_name(prefix, seed, values._name, *common, chosen),
        columns=chosen,
    )
    return values.map_partitions(
        _partition, plan=plan, meta=_as_meta(meta.copy(), chosen, dtype), align_dataframes=False
    )
