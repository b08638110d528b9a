"""benchmarks/microdata.py at a tiny size: its data are what it says, its release path runs
and is consistent, and the Dask path tabulates the same tables as the in-memory one."""

import sys
from pathlib import Path

import numpy as np
import pytest

import dgauss

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import microdata  # noqa: E402

ROWS, PER, SEED = 20_000, 7_000, 5


@pytest.fixture(scope="module")
def geo():
    return microdata.Geography(SEED)


@pytest.fixture(scope="module")
def frame(geo):
    return microdata.microdata(ROWS, PER, SEED, geo)


def test_the_data_are_census_shaped(frame, geo):
    assert len(frame) == ROWS
    assert {c: t for c, t in frame.dtypes.items()} == {
        c: np.dtype(t) for c, t in microdata.COLUMNS.items()
    }
    rows = frame.groupby("pid").size()
    assert rows.min() >= 1 and rows.max() <= 5  # a partition's ids never reach the next's
    assert set(rows.unique()) == {1, 2, 3, 4, 5}
    # one age and sex a person; municipalities may differ; provinces by the public map
    per = frame.groupby("pid")[["age", "sex", "municipality"]].nunique()
    assert (per[["age", "sex"]] == 1).all().all() and (per["municipality"] > 1).any()
    assert (frame["province"].to_numpy() == geo.province_of[frame["municipality"]]).all()
    assert frame["municipality"].between(0, microdata.MUNICIPALITIES - 1).all()
    assert len(np.unique(geo.province_of)) == microdata.PROVINCES
    # the same seed makes the same rows; another seed others
    assert frame.equals(microdata.microdata(ROWS, PER, SEED, geo))
    assert not frame.equals(microdata.microdata(ROWS, PER, SEED + 1, geo))


def test_the_parents_follow_the_product_order(geo):
    detail, municipality = geo.parents()
    keys = geo.keys()["detail"]
    assert len(detail) == microdata.MUNICIPALITIES * microdata.AGES * microdata.SEXES
    # the product's cell j has municipality keys["municipality"][j // 36]
    j = np.array([0, 35, 36, 287_999])
    assert (detail[j] == keys["municipality"][j // 36]).all()
    assert len(municipality) == microdata.MUNICIPALITIES


def test_the_script_runs_and_prints_its_table(capsys):
    argv = ["--rows", str(ROWS), "--partition", str(PER), "--seed", str(SEED), "--simulate"]
    assert microdata.main([*argv, "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    for step in ("baseline", "tabulate detail", "noise 3 tables", "reconcile to integers"):
        assert f"| {step}" in out
    assert "tabulate detail (bounded) / groupby:" in out
    assert "satisfy (ε, δ)-differential privacy with ε = 1" in out
    assert "σ² for each of the 3 releases: 4819/10" in out  # Contributions(max_rows=3), k=3


@pytest.mark.long
def test_dask_tabulates_the_same_tables(frame, geo):
    pytest.importorskip("dask.dataframe")
    ddf = microdata.dask_microdata(ROWS, PER, SEED, geo)
    assert ddf.npartitions == 3
    for name, keys in geo.keys().items():
        kw = dict(person="pid", max_rows=3, seed=SEED)
        here = dgauss.tabulate(frame, list(keys), keys, **kw)
        there = dgauss.tabulate(ddf, list(keys), keys, **kw)
        assert (here.values == there.values).all(), name
        assert here.trimmed == there.trimmed > 0


def test_bad_options_are_refused():
    with pytest.raises(SystemExit):
        microdata.main(["--rows", "0"])
    with pytest.raises(SystemExit):
        microdata.main(["--dask", "--tumult"])


def test_tumult_is_skipped_with_a_note_where_it_does_not_import(capsys):
    try:
        import tmlt.analytics  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("tmlt.analytics imports here: the path would run Spark")
    argv = ["--rows", "3000", "--seed", str(SEED), "--simulate", "--tumult"]
    assert microdata.main(argv) == 0
    out = capsys.readouterr().out
    assert "--tumult: skipped, tmlt.analytics does not import" in out
    assert "| tumult" not in out
