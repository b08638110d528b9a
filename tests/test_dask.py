"""dgauss.dask: lazy exact noise for Dask collections, on local schedulers and on a real
distributed cluster (two worker processes, started here and torn down)."""

import logging
import os
import signal
import time
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import dgauss  # noqa: E402
import dgauss.dask as dgd  # noqa: E402
from _python import run_python  # noqa: E402
from _stats import ALPHA, chi2_gof, gaussian_pmf, laplace_pmf  # noqa: E402
from dgauss.mechanisms import PrivacyBudgetError  # noqa: E402

INT64_MAX = (1 << 63) - 1


def child_rng(seed: np.random.SeedSequence, i: int) -> np.random.Generator:
    """Block i's generator as docs/dask.md states it: child i of a fresh copy of the seed."""
    fresh = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)
    return np.random.Generator(np.random.PCG64(fresh.spawn(i + 1)[i]))


def blocks_of(x: np.ndarray, chunk: int) -> list[np.ndarray]:
    return [x[i : i + chunk] for i in range(0, x.size, chunk)]


# ---- sampling -----------------------------------------------------------------------------


def test_sample_is_lazy_with_the_asked_blocks():
    x = dgd.sample_gaussian(100, (10, 7), chunks=(4, 3))
    assert isinstance(x, da.Array)
    assert x.shape == (10, 7) and x.chunks == ((4, 4, 2), (3, 3, 1)) and x.dtype == np.int64
    values = x.compute(scheduler="sync")
    assert values.shape == (10, 7) and values.dtype == np.int64


def test_seeded_blocks_are_the_seeds_children_in_c_order():
    seed = np.random.SeedSequence(2024)
    x = dgd.sample_gaussian(Fraction(7, 3), (6, 4), chunks=(3, 2), rng=seed)
    got = x.compute(scheduler="sync")
    for i, (r, c) in enumerate(np.ndindex(2, 2)):
        block = dgauss.sample_gaussian(Fraction(7, 3), (3, 2), rng=child_rng(seed, i))
        np.testing.assert_array_equal(got[3 * r : 3 * r + 3, 2 * c : 2 * c + 2], block)


def test_seeded_is_the_same_on_every_local_scheduler_and_an_int_seed_works():
    make = lambda rng: dgd.sample_laplace(5, 40_000, chunks=7_000, rng=rng)
    a = make(np.random.SeedSequence(11)).compute(scheduler="sync")
    b = make(np.random.SeedSequence(11)).compute(scheduler="threads")
    c = make(11).compute(scheduler="threads", num_workers=2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, make(12).compute(scheduler="sync"))


def test_seeded_noise_does_not_depend_on_the_blocks_being_computed():
    seed = np.random.SeedSequence(5)
    x = dgd.sample_gaussian(100, 1000, chunks=100, rng=seed)
    whole = x.compute(scheduler="sync")
    np.testing.assert_array_equal(x[700:800].compute(scheduler="sync"), whole[700:800])


def test_two_os_random_arrays_are_never_merged_by_dask():
    # same arguments: with OS randomness they must get different keys, or Dask would compute
    # one array and use it twice
    x = dgd.sample_gaussian(100, 50_000, chunks=10_000)
    y = dgd.sample_gaussian(100, 50_000, chunks=10_000)
    assert x.name != y.name
    a, b, difference = dask.compute(x, y, x - y, scheduler="sync")  # each block drawn once
    assert not np.array_equal(a, b) and difference.any()
    np.testing.assert_array_equal(a - b, difference)


def test_large_variance_gives_object_blocks_of_exact_ints():
    x = dgd.sample_gaussian("1e200", 6, chunks=4)
    assert x.dtype == object
    values = x.compute(scheduler="sync")
    assert all(type(v) is int for v in values)
    assert max(abs(v) for v in values) > INT64_MAX  # beyond int64, never wrapped
    assert dgd.sample_laplace(2**41, 3, chunks=2).dtype == object
    assert dgd.sample_gaussian(100, 3, chunks=2, dtype=object).compute().dtype == object


def test_mu_is_added_exactly():
    seed = np.random.SeedSequence(3)
    x = dgd.sample_gaussian(4, 20, chunks=5, mu=10**6, rng=seed).compute(scheduler="sync")
    y = dgd.sample_gaussian(4, 20, chunks=5, rng=seed).compute(scheduler="sync")
    np.testing.assert_array_equal(x - y, 10**6)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"size": None, "chunks": 2}, ValueError, "size"),
        ({"size": 10, "chunks": None}, ValueError, "chunks"),
        ({"size": 10, "chunks": 20, "sigma2": 0}, ValueError, "sigma2"),
        ({"size": 10, "chunks": 2, "sigma2": float("nan")}, ValueError, "sigma2"),
        ({"size": -1, "chunks": 2}, ValueError, "size"),
        ({"size": 10, "chunks": 2, "rng": np.random.default_rng(0)}, TypeError, "SeedSequence"),
        ({"size": 10, "chunks": 2, "rng": -3}, ValueError, "rng"),
        ({"size": 10, "chunks": 2, "rng": True}, TypeError, "rng"),
        ({"size": 10, "chunks": 2, "mu": 0.5}, ValueError, "mu"),
        ({"size": 10, "chunks": 2, "dtype": np.int32}, (TypeError, ValueError), "dtype"),
        ({"size": (3, 4), "chunks": (2, 2, 2)}, ValueError, "chunks"),
        ({"size": 10, "chunks": "auto", "sigma2": "1e200"}, ValueError, "chunks"),
    ],
)
def test_bad_sampling_arguments_are_refused_by_name(kwargs, error, words):
    kwargs = {"sigma2": 100, **kwargs}
    with pytest.raises(error, match=words):
        dgd.sample_gaussian(kwargs.pop("sigma2"), kwargs.pop("size"), **kwargs)


# ---- noising arrays -----------------------------------------------------------------------


def test_noising_adds_the_blocks_sample_to_each_value():
    counts = da.arange(1000, chunks=128)
    seed = np.random.SeedSequence(9)
    noisy = dgauss.add_gaussian_noise(counts, sigma2=25, rng=seed).compute(scheduler="sync")
    noise = dgd.sample_gaussian(25, 1000, chunks=128, rng=seed).compute(scheduler="sync")
    np.testing.assert_array_equal(noisy - np.arange(1000), noise)


def test_dgauss_dask_functions_refuse_in_memory_values():
    with pytest.raises(TypeError, match="dgauss.add_gaussian_noise"):
        dgd.add_gaussian_noise(np.arange(3), sigma2=1)
    with pytest.raises(TypeError, match="add_laplace_noise"):
        dgd.add_laplace_noise([1, 2], scale=1)


@pytest.mark.parametrize(
    "values, kwargs, error, words",
    [
        (da.ones(4, chunks=2, dtype=float), {}, TypeError, "granularity"),
        (da.ones(4, chunks=2, dtype=bool), {}, TypeError, "bool"),
        (da.ones(4, chunks=2, dtype="U3"), {}, TypeError, "integers"),
        (da.ones(4, chunks=2, dtype=int), {"out": np.empty(4)}, TypeError, "out="),
        (da.ones(4, chunks=2, dtype=int), {"columns": ["a"]}, TypeError, "columns="),
        (da.ones(4, chunks=2, dtype=int), {"clip": (3, 1)}, ValueError, "clip"),
        (da.ones(4, chunks=2, dtype=int), {"overflow": "wrap"}, ValueError, "overflow"),
        (da.ones(4, chunks=2, dtype=int), {"rng": np.random.default_rng()}, TypeError, "rng"),
    ],
)
def test_bad_noising_arguments_are_refused_before_the_release_counts(values, kwargs, error, words):
    acc = dgauss.Accountant(rho=1)
    with pytest.raises(error, match=words):
        acc.add_gaussian_noise(values, rho=Fraction(1, 2), **kwargs)
    assert acc.spent.releases == ()
    acc.add_gaussian_noise(da.ones(4, chunks=2, dtype=int), rho=1)  # the whole budget is left


def test_the_accountant_counts_the_whole_collection_once_before_anything_runs():
    acc = dgauss.Accountant(epsilon=1, delta=Fraction(1, 10**6))
    counts = da.zeros((400, 300), chunks=(100, 100), dtype=np.int64)  # 12 blocks
    sigma2 = acc.calibrate_gaussian()
    noisy = acc.add_gaussian_noise(counts, sigma2=sigma2)  # a graph, nothing computed
    assert isinstance(noisy, da.Array)
    assert len(acc.spent.releases) == 1  # one release, not one per block
    assert acc.spent.delta(1) <= 1e-6
    with pytest.raises(PrivacyBudgetError):
        acc.add_gaussian_noise(counts, sigma2=sigma2)
    assert len(acc.spent.releases) == 1
    # the noise is that of the one release's sigma^2
    noise = noisy.compute(scheduler="threads").ravel()
    assert chi2_gof(noise, gaussian_pmf(sigma2))[2] > ALPHA


def test_a_mechanism_counts_a_dask_release_against_its_k():
    mech = dgauss.LaplaceMechanism(epsilon=1, k=2)
    x = da.arange(10, chunks=3)
    mech(x)
    mech(x)
    with pytest.raises(PrivacyBudgetError, match="k=2"):
        mech(x)


def test_int64_overflow_raises_at_compute_or_comes_back_exact():
    top = np.full(200, INT64_MAX, dtype=np.int64)
    top[::3] = 0  # some block leaves int64 unless all its ~67 noises at INT64_MAX are <= 0
    near = da.from_array(top, chunks=50)
    noisy = dgauss.add_gaussian_noise(near, sigma2=10**6)
    assert noisy.dtype == np.int64
    with pytest.raises(OverflowError, match="overflow='object'"):
        noisy.compute(scheduler="sync")
    seed = np.random.SeedSequence(1)
    exact = dgauss.add_gaussian_noise(near, sigma2=10**6, overflow="object", rng=seed)
    assert exact.dtype == object
    values = exact.compute(scheduler="sync")
    assert values.dtype == object and all(type(v) is int for v in values)
    assert max(values) > INT64_MAX  # exact, never wrapped
    noise = dgd.sample_gaussian(10**6, 200, chunks=50, rng=seed).compute(scheduler="sync")
    assert [v - int(n) for v, n in zip(values, noise, strict=True)] == top.tolist()


def test_object_values_and_huge_noise_give_object_blocks():
    big = da.from_array(np.array([10**30, -(10**30), 5], dtype=object), chunks=2)
    out = dgauss.add_laplace_noise(big, scale=3).compute(scheduler="sync")
    assert out.dtype == object and abs(out[0] - 10**30) < 10**4
    bad = da.from_array(np.array([1, "x"], dtype=object), chunks=1)
    noisy = dgauss.add_laplace_noise(bad, scale=3)  # values are looked at per block
    with pytest.raises(TypeError, match="integers"):
        noisy.compute(scheduler="sync")
    huge = dgauss.add_gaussian_noise(da.zeros(4, chunks=2, dtype=int), sigma2="1e300")
    assert huge.dtype == object and huge.compute(scheduler="sync").dtype == object


def test_granularity_and_clip_apply_per_block():
    values = da.from_array(np.array([0.5, 1.0, 2.5, 0.0]), chunks=2)
    noisy = dgauss.add_gaussian_noise(values, sigma2=4, granularity=0.5, clip=(0, None))
    out = noisy.compute(scheduler="sync")
    assert noisy.dtype == np.float64 and out.dtype == np.float64
    assert (out >= 0).all() and np.all(out * 2 == np.round(out * 2))
    with pytest.raises(ValueError, match="lattice"):
        dgauss.add_gaussian_noise(values, sigma2=4, granularity=1).compute(scheduler="sync")


# ---- DataFrames and Series ----------------------------------------------------------------


def frame(n=60, partitions=4):
    data = pd.DataFrame(
        {
            "region": [f"r{i % 7}" for i in range(n)],
            "count": np.arange(n, dtype=np.int64) % 13,
            "small": (np.arange(n) % 5).astype(np.int16),
            "share": np.linspace(0, 1, n),
        },
        index=pd.Index([f"cell{i}" for i in range(n)], name="cell"),
    )
    return data, dd.from_pandas(data, npartitions=partitions)


def test_dataframe_columns_are_noised_with_index_and_other_columns_kept():
    _, ddf = frame()
    data = ddf.compute()  # as Dask holds it (its string columns may differ from pandas')
    noisy = dgauss.add_gaussian_noise(ddf, sigma2=9, columns=["count", "small"])
    assert list(noisy.dtypes) == [data.dtypes["region"], np.int64, np.int64, np.float64]
    assert noisy.npartitions == ddf.npartitions and noisy.divisions == ddf.divisions
    out = noisy.compute(scheduler="sync")
    pd.testing.assert_index_equal(out.index, data.index)
    pd.testing.assert_series_equal(out["region"], data["region"])
    pd.testing.assert_series_equal(out["share"], data["share"])
    assert (out["count"] != data["count"]).any() and out["small"].dtype == np.int64


def test_seeded_partitions_each_take_their_own_child():
    data, ddf = frame(n=400, partitions=4)
    seed = np.random.SeedSequence(77)
    noisy = dgauss.add_laplace_noise(ddf, scale=4, columns="count", rng=seed)
    out = noisy.compute(scheduler="sync")
    again = dgauss.add_laplace_noise(ddf, scale=4, columns="count", rng=seed)
    pd.testing.assert_frame_equal(out, again.compute(scheduler="threads"))
    noise = (out["count"] - data["count"]).to_numpy()
    for i, part in enumerate(blocks_of(noise, 100)):  # partition i used the seed's child i
        np.testing.assert_array_equal(part, dgauss.sample_laplace(4, 100, rng=child_rng(seed, i)))


def test_series_keeps_its_name_and_index():
    _, ddf = frame()
    data = ddf.compute()
    noisy = dgd.add_gaussian_noise(ddf["count"], rho=1)
    out = noisy.compute(scheduler="sync")
    assert out.name == "count" and out.dtype == np.int64
    pd.testing.assert_index_equal(out.index, data.index)


def test_two_os_noisings_of_one_frame_are_never_merged_by_dask():
    _, ddf = frame(n=400, partitions=4)
    a = dgauss.add_gaussian_noise(ddf, sigma2=100, columns=["count"])
    b = dgauss.add_gaussian_noise(ddf, sigma2=100, columns=["count"])
    first, second = dask.compute(a, b, scheduler="sync")
    assert (first["count"] != second["count"]).any()


def test_dataframe_problems_are_named():
    _, ddf = frame()
    acc = dgauss.Accountant(rho=1)
    with pytest.raises(ValueError, match="'nope'"):
        acc.add_gaussian_noise(ddf, rho=1, columns=["nope"])
    with pytest.raises(ValueError, match="region"):
        acc.add_gaussian_noise(ddf, rho=1)  # the string column is not a count
    with pytest.raises(TypeError, match="floats"):
        acc.add_gaussian_noise(ddf, rho=1, columns=["share"])
    assert acc.spent.releases == ()
    missing = dd.from_pandas(pd.DataFrame({"c": pd.array([1, None, 3], dtype="Int64")}), 2)
    noisy = acc.add_gaussian_noise(missing, rho=1)
    with pytest.raises(ValueError, match="missing value"):
        noisy.compute(scheduler="sync")


# ---- computing noise twice ----------------------------------------------------------------


def test_computing_os_noise_twice_warns_and_persisting_does_not():
    noisy = dgauss.add_gaussian_noise(da.zeros(100, chunks=25, dtype=int), sigma2=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = noisy.compute(scheduler="sync")
    with pytest.warns(dgd.NoiseRecomputedWarning, match="persist"):
        second = noisy.compute(scheduler="sync")
    assert not np.array_equal(first, second)  # fresh noise: the reason for the warning

    kept = dgauss.add_gaussian_noise(da.zeros(100, chunks=25, dtype=int), sigma2=4)
    kept = kept.persist(scheduler="sync")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = kept.compute(scheduler="sync"), kept.sum().compute(scheduler="sync")
    assert a.sum() == b


def test_seeded_noise_computed_twice_is_the_same_and_does_not_warn():
    x = dgd.sample_gaussian(4, 100, chunks=25, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(x.compute(scheduler="sync"), x.compute(scheduler="sync"))


def test_noise_written_to_zarr_reads_back_as_drawn(tmp_path):
    pytest.importorskip("zarr")
    noisy = dgd.sample_gaussian(100, (300, 200), chunks=(100, 100), rng=4)
    noisy.to_zarr(str(tmp_path / "noise.zarr"))
    back = da.from_zarr(str(tmp_path / "noise.zarr"))
    assert back.dtype == np.int64 and back.chunks == noisy.chunks
    np.testing.assert_array_equal(back.compute(), noisy.compute(scheduler="sync"))


# ---- on a distributed cluster -------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        processes=True,
        n_workers=2,
        threads_per_worker=1,
        dashboard_address=":0",  # any free port
        silence_logs=logging.ERROR,
    )
    with cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


def distinct_blocks(values: np.ndarray, chunk: int) -> bool:
    seen = {block.tobytes() for block in blocks_of(values, chunk)}
    return len(seen) == -(-values.size // chunk)


def test_cluster_blocks_fit_the_distribution_and_are_all_different(client):
    chunk, blocks = 40_000, 8
    x = dgd.sample_gaussian(Fraction(10, 3), chunk * blocks, chunks=chunk)
    values = client.compute(x).result()
    assert values.dtype == np.int64
    assert distinct_blocks(values, chunk)
    pmf = gaussian_pmf(Fraction(10, 3))
    for block in blocks_of(values, chunk):
        assert chi2_gof(block, pmf)[2] > ALPHA
    ran_on = client.run(os.getpid)
    assert len(set(ran_on.values())) == 2  # two worker processes, each reading its own OS


def test_cluster_laplace_noise_of_a_release_fits(client):
    counts = da.from_array(np.arange(200_000, dtype=np.int64) % 9, chunks=50_000)
    noisy = dgauss.add_laplace_noise(counts, epsilon=Fraction(1, 3))
    noise = client.compute(noisy).result() - np.arange(200_000) % 9
    assert chi2_gof(noise, laplace_pmf(Fraction(3)))[2] > ALPHA


def test_cluster_seeded_equals_one_worker_two_workers_and_local_schedulers(client):
    x = dgd.sample_gaussian(100, 120_000, chunks=10_000, rng=np.random.SeedSequence(31))
    two = client.compute(x).result()
    first_worker = sorted(client.scheduler_info()["workers"])[0]
    one = client.compute(x, workers=[first_worker], allow_other_workers=False).result()
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(two, x.compute(scheduler="sync"))
    np.testing.assert_array_equal(two, x.compute(scheduler="processes", num_workers=2))


def test_cluster_values_beyond_int64_come_back_as_object_blocks(client):
    x = dgd.sample_gaussian("1e100", 400, chunks=100)
    values = client.compute(x).result()
    assert values.dtype == object and all(type(v) is int for v in values)
    assert sum(abs(v) > INT64_MAX for v in values) > 350  # σ = 1e50: nearly all of them


def test_cluster_dataframe_keeps_index_and_dtypes(client):
    _, ddf = frame(n=2000, partitions=5)
    data = ddf.compute()
    acc = dgauss.Accountant(rho=1)
    noisy = acc.add_gaussian_noise(ddf, rho=1, columns=["count"])
    out = client.compute(noisy).result()
    pd.testing.assert_index_equal(out.index, data.index)
    assert dict(out.dtypes) == {**dict(data.dtypes), "count": np.dtype(np.int64)}
    pd.testing.assert_series_equal(out["small"], data["small"])
    assert distinct_blocks((out["count"] - data["count"]).to_numpy(), 400)


def test_cluster_recomputation_warns_on_the_client_whichever_worker_drew_it(client):
    x = dgd.sample_gaussian(100, 40, chunks=10)
    first, second = sorted(client.scheduler_info()["workers"])
    with pytest.warns(dgd.NoiseRecomputedWarning, match="persist") as record:
        # every block drawn once on one worker, then again on the other
        client.compute(x, workers=[first], allow_other_workers=False).result()
        client.compute(x, workers=[second], allow_other_workers=False).result()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the workers' reports arrive asynchronously
            if any(issubclass(w.category, dgd.NoiseRecomputedWarning) for w in record):
                break
            time.sleep(0.05)


def test_cluster_persisted_noise_is_drawn_once(client):
    noisy = dgauss.add_gaussian_noise(da.zeros(400, chunks=100, dtype=int), sigma2=4).persist()
    with warnings.catch_warnings(record=True) as record:  # records the client's loop too
        warnings.simplefilter("always")
        cells = client.compute(noisy).result()
        total = client.compute(noisy.sum()).result()
        time.sleep(0.5)  # a report of a second drawing would have arrived
    assert not [w for w in record if issubclass(w.category, dgd.NoiseRecomputedWarning)]
    assert cells.sum() == total


@pytest.mark.long
def test_cluster_a_worker_killed_mid_compute_gives_no_duplicated_block(client):
    chunk, blocks = 1_000_000, 24  # ~0.1 s a block: the kill lands mid-compute
    x = dgd.sample_gaussian(100, chunk * blocks, chunks=chunk)
    pids = client.run(os.getpid)
    future = client.compute(x)
    deadline = time.monotonic() + 30
    while not any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert not future.done()
    victim = sorted(pids)[0]
    with warnings.catch_warnings(record=True):  # blocks it had finished are drawn again: warns
        warnings.simplefilter("always")
        os.kill(pids[victim], signal.SIGKILL)
        values = future.result(timeout=120)
    assert values.shape == (chunk * blocks,)
    assert distinct_blocks(values, chunk)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it
    assert set(client.run(os.getpid).values()) != set(pids.values())


# ---- dask stays optional ------------------------------------------------------------------


def test_dgauss_does_not_import_dask_and_says_how_to_get_it():
    code = (
        "import sys\n"
        "import numpy as np, dgauss\n"
        "dgauss.add_gaussian_noise(np.arange(3), sigma2=1)\n"
        "assert 'dask' not in sys.modules, 'dgauss imported dask'\n"
        "sys.modules['dask'] = None  # as if it were not installed\n"
        "try:\n"
        "    import dgauss.dask\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert "pip install 'dgauss[dask]'" in out.stdout
