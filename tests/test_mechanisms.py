"""dgauss.mechanisms: the noise added, the guarantee reported, inputs, overflow, the accountant."""

import re
import threading
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from _stats import ALPHA, chi2_gof, gaussian_pmf, laplace_pmf
from dgauss import accounting
from dgauss.accounting._closed_forms import _grid_step
from dgauss.mechanisms import PrivacyBudgetError

N = 100_000


def gen(seed=0):
    return np.random.default_rng(seed)


# ---- the noise actually added ------------------------------------------------------------


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 4, 100], ids=str)
def test_gaussian_noise_has_the_mechanisms_distribution(sigma2):
    counts = np.arange(N, dtype=np.int64) % 50
    mech = dgauss.GaussianMechanism(sigma2=sigma2)
    noise = mech(counts, rng=gen(1)) - counts
    assert chi2_gof(noise, gaussian_pmf(Fraction(sigma2)))[2] > ALPHA


def test_gaussian_goodness_of_fit_has_power():
    counts = np.zeros(N, dtype=np.int64)
    noise = dgauss.GaussianMechanism(sigma2=105)(counts, rng=gen(2))
    assert chi2_gof(noise, gaussian_pmf(Fraction(100)))[2] < ALPHA


@pytest.mark.parametrize("scale", [Fraction(1, 2), 3, 20], ids=str)
def test_laplace_noise_has_the_mechanisms_distribution(scale):
    counts = np.full(N, 7, dtype=np.int32)
    noise = dgauss.LaplaceMechanism(scale=scale)(counts, rng=gen(3)) - 7
    assert chi2_gof(noise, laplace_pmf(Fraction(scale)))[2] > ALPHA
    assert chi2_gof(noise, laplace_pmf(Fraction(scale) * Fraction(11, 10)))[2] < ALPHA


def test_noise_is_one_batch_drawn_before_the_values():
    """The noise equals sample_* on the same generator: drawn in one batch, whatever the
    values (so their size and content cannot change which bits make which noise)."""
    values = np.array([5, -3, 2**40, 0, 17] * 200, dtype=np.int64)
    noisy = dgauss.add_gaussian_noise(values, sigma2=50, rng=gen(4))
    assert (noisy - values).tolist() == dgauss.sample_gaussian(50, values.size, rng=gen(4)).tolist()
    noisy = dgauss.add_laplace_noise(values.astype(np.int16) % 100, scale=3, rng=gen(5))
    expect = values.astype(np.int16) % 100 + dgauss.sample_laplace(3, values.size, rng=gen(5))
    assert noisy.tolist() == expect.tolist()


# ---- the guarantee reported --------------------------------------------------------------


@pytest.mark.parametrize("sens,k", [(1, 1), (3, 2), ((1, -2, 2), 5)], ids=str)
def test_gaussian_reports_what_accounting_computes(sens, k):
    mech = dgauss.GaussianMechanism(sigma2="37/2", sensitivity=sens, k=k)
    mu = (sens,) if isinstance(sens, int) else sens
    assert mech.rho == Fraction(k * sum(x * x for x in mu)) / (2 * Fraction(37, 2))
    assert mech.delta(1) == accounting.gaussian_delta("37/2", 1, sens, k)
    assert mech.epsilon("1e-6") == accounting.gaussian_epsilon("37/2", "1e-6", sens, k)
    assert mech.interval(0.05) == accounting.gaussian_interval("37/2", 0.05)


@pytest.mark.parametrize("method", ["exact", "zcdp"])
def test_gaussian_calibration_never_flatters(method):
    mech = dgauss.GaussianMechanism(epsilon=1, delta="1e-6", k=3, accounting=method)
    assert mech.sigma2 == accounting.calibrate_gaussian(1, "1e-6", k=3, method=method)
    assert mech.delta(1) <= 1e-6
    assert dgauss.GaussianMechanism(rho="1/8", sensitivity=2, k=3).sigma2 == Fraction(3 * 4 * 8, 2)


def test_laplace_reports_what_accounting_computes():
    mech = dgauss.LaplaceMechanism(epsilon="0.5", delta=0, sensitivity=2, k=2)
    assert mech.scale == accounting.calibrate_laplace("0.5", 0, 2, 2) == 8
    assert mech.rho == 2 * Fraction(2, 8) ** 2 / 2
    assert mech.epsilon() == accounting.laplace_epsilon(8, 2, 2) == 0.5
    assert mech.delta("0.4") == accounting.laplace_delta(8, "0.4", 2, 2) > 0
    assert mech.interval(0.1) == accounting.laplace_interval(8, 0.1)
    approx = dgauss.LaplaceMechanism(epsilon=1, delta="1e-5")
    assert approx.delta(1) <= 1e-5 and approx.scale <= 1


# ---- bad parameters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,error,name",
    [
        ({}, ValueError, "exactly one way"),
        ({"sigma2": 1, "rho": 1}, ValueError, "exactly one way"),
        ({"rho": 1, "epsilon": 1, "delta": 0.1}, ValueError, "exactly one way"),
        ({"delta": 0.1}, ValueError, "delta"),
        ({"epsilon": 1}, ValueError, "delta"),
        ({"epsilon": 1, "delta": 1}, ValueError, "delta"),
        ({"epsilon": 1, "delta": 0}, ValueError, "delta"),
        ({"epsilon": 0, "delta": 0.1}, ValueError, "eps"),
        ({"sigma2": -1}, ValueError, "sigma2"),
        ({"sigma2": 0}, ValueError, "sigma2"),
        ({"rho": -1}, ValueError, "rho"),
        ({"sigma2": 1, "sensitivity": 0}, ValueError, "sensitivity"),
        ({"sigma2": 1, "sensitivity": -2}, ValueError, "sensitivity"),
        ({"sigma2": 1, "sensitivity": 1.5}, ValueError, "sensitivity"),
        ({"sigma2": 1, "sensitivity": True}, TypeError, "sensitivity"),
        ({"sigma2": 1, "sensitivity": ()}, ValueError, "sensitivity"),
        ({"sigma2": 1, "sensitivity": (0, 0)}, ValueError, "sensitivity"),
        ({"sigma2": 1, "k": 0}, ValueError, "k"),
        ({"sigma2": 1, "k": 1.5}, (TypeError, ValueError), "k"),
        ({"sigma2": 1, "accounting": "rdp"}, ValueError, "accounting"),
        ({"sigma2": 1, "granularity": 0}, ValueError, "granularity"),
    ],
)
def test_bad_gaussian_parameters_name_themselves(kwargs, error, name):
    with pytest.raises(error, match=name):
        dgauss.GaussianMechanism(**kwargs)


@pytest.mark.parametrize(
    "kwargs,error,name",
    [
        ({}, ValueError, "exactly one way"),
        ({"scale": 1, "epsilon": 1}, ValueError, "exactly one way"),
        ({"scale": 1, "delta": 0.1}, ValueError, "delta"),
        ({"epsilon": -1}, ValueError, "eps"),
        ({"epsilon": 1, "delta": 1}, ValueError, "delta"),
        ({"scale": 1, "sensitivity": (1, 2)}, (TypeError, ValueError), "sensitivity"),
        ({"scale": 1, "sensitivity": 0}, ValueError, "sensitivity"),
    ],
)
def test_bad_laplace_parameters_name_themselves(kwargs, error, name):
    with pytest.raises(error, match=name):
        dgauss.LaplaceMechanism(**kwargs)


@pytest.mark.parametrize(
    "values,kwargs,error,name",
    [
        (np.array([1.0, 2.0]), {}, TypeError, "granularity"),
        ([1.5, 2.5], {}, TypeError, "granularity"),
        (np.array([True, False]), {}, TypeError, "bool"),
        (True, {}, TypeError, "bool"),
        ("12", {}, TypeError, "values"),
        (np.array(["a"]), {}, TypeError, "values"),
        (np.array([1, 2], dtype=object), {"clip": (3, 1)}, ValueError, "clip"),
        (np.array([1, 2]), {"clip": 5}, TypeError, "clip"),
        (np.array([1, 2]), {"overflow": "wrap"}, ValueError, "overflow"),
        (np.array([1, 2]), {"out": np.empty(3, np.int64)}, ValueError, "out"),
        (np.array([1, 2]), {"out": np.empty(2, np.int32)}, TypeError, "out"),
        (np.array([1, 2]), {"out": [0, 0]}, TypeError, "out"),
        (np.array([1, "x"], dtype=object), {}, TypeError, "values"),
    ],
)
def test_bad_inputs_name_themselves(values, kwargs, error, name):
    with pytest.raises(error, match=name):
        dgauss.GaussianMechanism(sigma2=4)(values, **kwargs)


def test_values_off_the_lattice_are_refused_never_rounded():
    mech = dgauss.GaussianMechanism(sigma2=4, granularity=0.5)
    with pytest.raises(ValueError, match="granularity"):
        mech(np.array([0.5, 0.75]))
    with pytest.raises(ValueError, match="granularity"):  # 0.3 is no multiple of the double 0.1
        dgauss.add_gaussian_noise([0.3], sigma2=4, granularity=0.1)
    with pytest.raises(ValueError, match="finite"):
        mech(np.array([np.inf]))


# ---- inputs and outputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
)
def test_every_integer_dtype_gives_int64_and_keeps_the_input(dtype):
    values = np.array([0, 1, 2, 100], dtype=dtype)
    before = values.copy()
    noisy = dgauss.add_gaussian_noise(values, sigma2=10**6, rng=gen(6))
    assert noisy.dtype == np.int64 and noisy.shape == values.shape
    assert (values == before).all() and values.dtype == dtype
    assert (noisy < 0).any()  # uint8 counts may go negative: nothing wraps
    expect = before.astype(object) + dgauss.sample_gaussian(10**6, 4, rng=gen(6)).astype(object)
    assert noisy.tolist() == expect.tolist()


def test_scalars_lists_shapes_and_big_ints():
    assert type(dgauss.add_gaussian_noise(5, sigma2=4)) is int
    assert dgauss.add_laplace_noise([1, 2, 3], scale=2).shape == (3,)
    grid = dgauss.add_gaussian_noise(np.zeros((3, 4), dtype=np.int32), sigma2=1)
    assert grid.shape == (3, 4) and grid.dtype == np.int64
    big = np.array([10**30, -(10**40)], dtype=object)
    noisy = dgauss.add_gaussian_noise(big, sigma2=100, rng=gen(7))
    noise = dgauss.sample_gaussian(100, 2, rng=gen(7))
    expect = [10**30 + int(noise[0]), -(10**40) + int(noise[1])]
    assert noisy.dtype == object and noisy.tolist() == expect
    assert dgauss.add_gaussian_noise([2**70], sigma2=1).dtype == object
    huge = dgauss.add_gaussian_noise(np.array([1, 2]), sigma2="1e200")
    assert huge.dtype == object and all(type(v) is int for v in huge)


def test_out_and_in_place():
    values = np.array([10, 20, 30], dtype=np.int64)
    out = np.empty(3, dtype=np.int64)
    result = dgauss.add_gaussian_noise(values, sigma2=4, out=out, rng=gen(8))
    assert result is out and values.tolist() == [10, 20, 30]
    noise = dgauss.sample_gaussian(4, 3, rng=gen(8))
    assert out.tolist() == (values + noise).tolist()
    same = dgauss.add_gaussian_noise(values, sigma2=4, out=values, rng=gen(8))
    assert same is values and values.tolist() == out.tolist()


def test_clip_and_granularity():
    counts = np.zeros(1000, dtype=np.int64)
    clipped = dgauss.add_gaussian_noise(counts, sigma2=100, clip=(0, None))
    assert clipped.min() == 0 and clipped.max() > 0
    both = dgauss.add_gaussian_noise(counts, sigma2=100, clip=(-3, 3))
    assert set(both.tolist()) <= set(range(-3, 4))
    halves = dgauss.add_gaussian_noise([0.5, 1.5, -2.0], sigma2=4, granularity=0.5, rng=gen(9))
    lattice = dgauss.sample_gaussian(4, 3, rng=gen(9))
    assert halves.dtype == np.float64
    assert halves.tolist() == [(1 + lattice[0]) / 2, (3 + lattice[1]) / 2, (-4 + lattice[2]) / 2]
    tenths = dgauss.add_gaussian_noise([3], sigma2=4, granularity="1/10", rng=gen(9))
    assert tenths.tolist() == [float(Fraction(30 + int(lattice[0]), 10))]


def test_pandas_round_trip():
    pd = pytest.importorskip("pandas")
    series = pd.Series([5, 0, 12], index=["a", "b", "c"], name="n", dtype="int32")
    noisy = dgauss.add_gaussian_noise(series, sigma2=4)
    assert isinstance(noisy, pd.Series) and noisy.name == "n"
    assert list(noisy.index) == ["a", "b", "c"] and noisy.dtype == np.int64
    frame = pd.DataFrame({"m": [1, 2], "f": [3, 4]}, index=[10, 20])
    out = dgauss.add_laplace_noise(frame, scale=2)
    assert list(out.columns) == ["m", "f"] and list(out.index) == [10, 20]
    assert frame.to_numpy().tolist() == [[1, 3], [2, 4]]


# ---- overflow ----------------------------------------------------------------------------


def test_int64_edges_raise_or_give_exact_ints():
    top = np.full(200, np.iinfo(np.int64).max)
    with pytest.raises(OverflowError, match="overflow='object'"):
        dgauss.add_gaussian_noise(top, sigma2=100, rng=gen(10))
    exact = dgauss.add_gaussian_noise(top, sigma2=100, rng=gen(10), overflow="object")
    noise = dgauss.sample_gaussian(100, 200, rng=gen(10))
    assert exact.dtype == object
    assert exact.tolist() == [2**63 - 1 + int(x) for x in noise]
    bottom = np.full(200, np.iinfo(np.int64).min)
    with pytest.raises(OverflowError):
        dgauss.add_laplace_noise(bottom, scale=10)
    unsigned = np.array([2**64 - 1, 5], dtype=np.uint64)
    with pytest.raises(OverflowError):
        dgauss.add_gaussian_noise(unsigned, sigma2=1)
    noisy = dgauss.add_gaussian_noise(unsigned, sigma2=1, overflow="object", rng=gen(11))
    noise = dgauss.sample_gaussian(1, 2, rng=gen(11))
    assert noisy.tolist() == [2**64 - 1 + int(noise[0]), 5 + int(noise[1])]


def test_an_overflow_leaves_the_callers_out_untouched():
    out = np.zeros(200, dtype=np.int64)
    with pytest.raises(OverflowError):
        dgauss.add_gaussian_noise(np.full(200, 2**63 - 1), sigma2=100, out=out)
    # the noise went into out first; on overflow it holds the noise, not a wrapped sum
    assert np.abs(out).max() < 200


# ---- releases and the accountant ---------------------------------------------------------


def test_a_mechanism_covers_k_releases():
    mech = dgauss.GaussianMechanism(sigma2=4, k=2)
    mech([1])
    mech([1])
    with pytest.raises(PrivacyBudgetError, match="k=2"):
        mech([1])


def test_accountant_adds_up_and_refuses_before_drawing():
    acc = dgauss.Accountant(rho=1)
    acc.add_gaussian_noise([1, 2], rho="1/4")
    acc.add_laplace_noise([1, 2], epsilon=1)  # counts as 1/2
    assert acc.spent.rho == Fraction(3, 4) and acc.remaining.rho == Fraction(1, 4)
    generator = gen(12)
    state = generator.bit_generator.state
    with pytest.raises(PrivacyBudgetError, match="nothing was drawn"):
        acc.add_gaussian_noise([1, 2], rho="1/2", rng=generator)
    assert generator.bit_generator.state == state
    assert acc.spent.rho == Fraction(3, 4) and acc.remaining.rho == Fraction(1, 4)
    acc.add_gaussian_noise([1], sigma2=2)  # rho = 1/4: exactly what is left
    assert acc.remaining.rho == 0
    # the readout is the exact composition, never above the zCDP one
    program = accounting.compose(
        accounting.Gaussian(2), accounting.Laplace(1), accounting.Gaussian(2)
    )
    assert acc.spent.epsilon("1e-6") == program.epsilon("1e-6") <= accounting.cdp_eps(1, "1e-6")
    assert acc.spent.delta(3) == program.delta(3) <= accounting.cdp_delta(1, 3)


def test_accountant_with_an_epsilon_delta_budget_uses_exact_gaussian_composition():
    sigma2 = accounting.calibrate_gaussian(1, "1e-6", k=2)
    assert Fraction(2, 2 * sigma2) > Fraction(accounting.cdp_rho(1, "1e-6"))  # zCDP says no
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise([3], sigma2=sigma2)
    acc.add_gaussian_noise([3], sigma2=sigma2)  # the exact joint delta allows the second
    with pytest.raises(PrivacyBudgetError):
        acc.add_gaussian_noise([3], sigma2=sigma2)
    assert acc.spent.delta(1) <= 1e-6 and acc.spent.epsilon("1e-6") <= 1


def test_accountant_composes_mixed_programs_exactly():
    """The issue's examples: a Gaussian at (0.5, 5e-7) then a Laplace at ε = 0.5 fit
    (1, 5e-7) by plain composition, so the exact composition admits them; two Gaussians of
    different σ² likewise; a third release that would overspend is refused."""
    sigma2 = accounting.calibrate_gaussian("0.5", "5e-7")
    acc = dgauss.Accountant(epsilon=1, delta="5e-7")
    acc.add_gaussian_noise([3], sigma2=sigma2)
    acc.add_laplace_noise([3], epsilon="0.5")
    assert acc.spent.delta(1) <= 5e-7 and acc.spent.epsilon("5e-7") <= 1
    with pytest.raises(PrivacyBudgetError):
        acc.add_laplace_noise([3], epsilon="0.5")
    two = dgauss.Accountant(epsilon=1, delta="1e-6")
    s1 = accounting.calibrate_gaussian("0.6", "5e-7")
    s2 = accounting.calibrate_gaussian("0.4", "5e-7")
    two.add_gaussian_noise([3], sigma2=s1)
    two.add_gaussian_noise([3], sigma2=s2)
    assert two.spent.route(1) == "PLD" and two.spent.delta(1) <= 1e-6


def test_the_readout_never_exceeds_the_budget_it_enforced():
    """15 Gaussian releases at (0.25, 2.5e-7) fit (1, 1e-6) by Theorem 15; the readout then
    must not claim more than (1, 1e-6) (zCDP's readout said 1.061)."""
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    sigma2 = accounting.calibrate_gaussian("0.25", "2.5e-7")
    admitted = 0
    for _ in range(40):
        try:
            acc.add_gaussian_noise([1], sigma2=sigma2)
        except PrivacyBudgetError:
            break
        admitted += 1
    assert admitted >= 15
    assert acc.spent.epsilon("1e-6") <= 1 and acc.spent.delta(1) <= 1e-6
    assert acc.remaining.delta is not None and acc.remaining.delta >= 0
    pure = dgauss.Accountant(epsilon=1)
    for _ in range(4):
        pure.add_laplace_noise([1], epsilon="0.25")
    assert pure.spent.epsilon(0) == 1.0 and pure.remaining.epsilon == 0
    with pytest.raises(PrivacyBudgetError):
        pure.add_laplace_noise([1], epsilon="0.01")


def test_a_pure_budget_refuses_the_gaussian():
    pure = dgauss.Accountant(epsilon=1)
    with pytest.raises(PrivacyBudgetError, match="only discrete Laplace"):
        pure.add_gaussian_noise([1], sigma2=100)
    with pytest.raises(PrivacyBudgetError):
        pure.calibrate_gaussian()
    assert pure.calibrate_laplace() == 1 and pure.split(4) == 4


def test_calibrate_and_split_give_the_least_noise_that_fits():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_laplace_noise([1], scale=4)
    s = acc.calibrate_gaussian()
    fits = accounting.compose(accounting.Laplace(4), accounting.Gaussian(s))
    assert fits.delta(1) <= 1e-6
    below = _grid_step(s, up=False)  # the next grid point below must not fit
    assert accounting.compose(accounting.Laplace(4), accounting.Gaussian(below)).delta(1) > 1e-6
    acc.add_gaussian_noise([1], sigma2=s)  # and the accountant agrees
    each = dgauss.Accountant(rho=1).split(4)
    assert each == 2  # 4 releases of rho 1/4: sigma2 = 1/(2 * 1/4)
    assert dgauss.Accountant(rho=1).calibrate_laplace(k=2) == 1  # rho = 2 * (1/t)^2 / 2 <= 1


def test_repr_and_report_are_readable():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise([1], sigma2="71.41")
    acc.add_laplace_noise([1], scale=4)
    text = repr(acc)
    assert "epsilon=1, delta=1e-6;" in text and "2 releases" in text
    assert not re.search(r"\d{13}", text)  # no 40-digit Fractions
    report = acc.report()
    assert report.count(".") <= 4 and "(ε, δ)-differential privacy with ε = 1" in report
    delta_text = report.split("δ = ")[1].split(" ")[0]
    assert float(delta_text) >= acc.spent.delta(1)  # published δ rounded up
    assert (
        "ρ = 0.5" in dgauss.Accountant(rho=1).report()
        or "No release" in dgauss.Accountant(rho=1).report()
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"rho": 1, "epsilon": 1},
        {"epsilon": -1},
        {"delta": 0.1},
        {"rho": -1},
        {"epsilon": 1, "delta": 1},
    ],
)
def test_bad_budgets(kwargs):
    with pytest.raises(ValueError):
        dgauss.Accountant(**kwargs)


def test_accountant_is_thread_safe():
    acc = dgauss.Accountant(rho=1)
    done = []

    def spend():
        for _ in range(10):
            try:
                acc.add_gaussian_noise([1], rho="1/64")
                done.append(1)
            except PrivacyBudgetError:
                pass

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 64 and acc.spent.rho == 1


def test_accountant_composes_laplace_releases_as_pure_dp_first():
    """Four Laplace releases at eps/4 fit an (eps, delta) budget by basic composition, though
    zCDP alone (4 * (1/4)^2 / 2 = 1/8 > cdp_rho(1, 1e-6)) would refuse them; a fifth does not."""
    assert Fraction(1, 8) > Fraction(accounting.cdp_rho(1, "1e-6"))
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    for _ in range(4):
        acc.add_laplace_noise([1, 2], scale=4)
    with pytest.raises(PrivacyBudgetError):
        acc.add_laplace_noise([1, 2], scale=4)
    exact = dgauss.Accountant(epsilon=1, delta="0.05")  # one scale: Eq. 49's exact delta
    for _ in range(8):
        exact.add_laplace_noise([1], scale=4)
    with pytest.raises(PrivacyBudgetError):
        exact.add_laplace_noise([1], scale=4)
    assert accounting.laplace_delta(4, 1, 1, 8) <= 0.05 < accounting.laplace_delta(4, 1, 1, 9)


def test_out_may_be_any_view_and_is_checked_before_drawing():
    grid = np.zeros((4, 6), dtype=np.int64)
    values = np.arange(12).reshape(4, 3)
    result = dgauss.add_gaussian_noise(values, sigma2=9, out=grid[:, ::2], rng=gen(13))
    noise = dgauss.sample_gaussian(9, 12, rng=gen(13)).reshape(4, 3)
    assert (grid[:, ::2] == values + noise).all() and (grid[:, 1::2] == 0).all()
    assert result.base is grid
    generator = gen(14)
    state = generator.bit_generator.state
    mech = dgauss.GaussianMechanism(sigma2=4)
    with pytest.raises(TypeError, match="out"):
        mech([1, 2], out=np.empty(2, np.float64), rng=generator)
    assert generator.bit_generator.state == state
    mech([1, 2])  # the refused call did not use up the mechanism's one release


def test_empty_and_zero_dimensional_inputs():
    empty = dgauss.add_gaussian_noise(np.array([], dtype=np.int64), sigma2=1)
    assert empty.shape == (0,) and empty.dtype == np.int64
    zero_d = dgauss.add_laplace_noise(np.array(5), scale=1)
    assert zero_d.shape == () and zero_d.dtype == np.int64


def test_float_kinds_on_a_lattice_are_taken_exactly():
    halves = np.array([0.5, -1.5], dtype=np.float32)
    out = dgauss.add_gaussian_noise(halves, sigma2=1, granularity=0.5, rng=gen(15))
    noise = dgauss.sample_gaussian(1, 2, rng=gen(15))
    assert out.tolist() == [(1 + noise[0]) / 2, (-3 + noise[1]) / 2]
    quarters = np.array([np.longdouble(0.75)])  # slow path: a non-dyadic granularity
    assert dgauss.add_gaussian_noise(quarters, sigma2=1, granularity="3/4").dtype == np.float64
    with pytest.raises(ValueError, match="lattice"):  # 1/3 in a long double is not 1/3
        dgauss.add_gaussian_noise(np.array([np.longdouble(1) / 3]), sigma2=1, granularity="1/3")


# ---- rough edges found by trying it as a new user would --------------------------------


@pytest.mark.parametrize("g", [1, "1", 1.0])
def test_granularity_one_accepts_whole_number_floats(g):
    values = np.array([3.0, 0.0, 12.0])
    out = dgauss.add_gaussian_noise(values, sigma2=4, granularity=g, rng=gen(3))
    assert out.dtype == np.float64 and np.all(out == np.floor(out))
    plain = dgauss.add_gaussian_noise(np.array([3, 0, 12]), sigma2=4, rng=gen(3))
    assert out.tolist() == [float(v) for v in plain.tolist()]  # same noise, as floats
    with pytest.raises(ValueError, match="not on the lattice"):
        dgauss.add_gaussian_noise(np.array([2.5]), sigma2=4, granularity=g)
    with pytest.raises(TypeError, match="granularity"):
        dgauss.add_gaussian_noise(values, sigma2=4)  # still refused without one


def test_pandas_missing_values_are_named():
    pd = pytest.importorskip("pandas")
    series = pd.Series([1, None, 3, None], dtype="Int64", name="n")
    with pytest.raises(ValueError, match=r"column 'n' has 2 missing values"):
        dgauss.add_gaussian_noise(series, sigma2=4)
    frame = pd.DataFrame({"m": [1, 2], "f": pd.array([1, pd.NA], dtype="Int64")})
    with pytest.raises(ValueError, match=r"column 'f' has 1 missing value "):
        dgauss.add_laplace_noise(frame, scale=2)
    clean = pd.Series([1, 2, 3], dtype="Int64", name="n")
    assert dgauss.add_gaussian_noise(clean, sigma2=4).tolist() != [None] * 3


def test_dataframe_columns_choose_the_counts_and_keep_the_rest():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {"area": ["a", "b", "c"], "m": [10, 20, 30], "f": [1, 2, 3], "share": [0.1, 0.2, 0.3]},
        index=[7, 8, 9],
    )
    with pytest.raises(ValueError, match=r"column 'area' holds \w+ values, not integer.*columns="):
        dgauss.add_gaussian_noise(frame, sigma2=4)
    out = dgauss.add_gaussian_noise(frame, sigma2=100, columns=["m", "f"], rng=gen(5))
    assert list(out.columns) == list(frame.columns) and list(out.index) == [7, 8, 9]
    assert out["area"].tolist() == ["a", "b", "c"] and out["share"].tolist() == [0.1, 0.2, 0.3]
    assert out["m"].dtype == np.int64 and out["m"].tolist() != [10, 20, 30]
    assert frame["m"].tolist() == [10, 20, 30]  # the input is not modified
    one = dgauss.add_laplace_noise(frame, scale=3, columns="f", rng=gen(6))
    assert one["m"].tolist() == [10, 20, 30]
    with pytest.raises(ValueError, match="'x', which is not a column"):
        dgauss.add_gaussian_noise(frame, sigma2=4, columns=["x"])
    with pytest.raises(TypeError, match="columns="):
        dgauss.add_gaussian_noise(frame["m"], sigma2=4, columns=["m"])
    with pytest.raises(TypeError, match="columns="):
        dgauss.add_gaussian_noise([1, 2], sigma2=4, columns=["m"])
    acc = dgauss.Accountant(rho=1)
    by_acc = acc.add_gaussian_noise(frame, rho="0.5", columns=["m"])
    assert by_acc["f"].tolist() == [1, 2, 3] and acc.spent.rho == Fraction(1, 2)


@pytest.mark.parametrize(
    "function, names",
    [
        (dgauss.add_gaussian_noise, {"sigma2", "rho", "epsilon", "delta", "sensitivity", "k"}),
        (dgauss.add_laplace_noise, {"scale", "epsilon", "delta", "sensitivity", "k"}),
        (dgauss.Accountant(rho=1).add_gaussian_noise, {"sigma2", "rho", "granularity"}),
        (dgauss.Accountant(rho=1).add_laplace_noise, {"scale", "epsilon", "columns"}),
    ],
)
def test_keywords_are_spelled_out(function, names):
    import inspect

    parameters = inspect.signature(function).parameters
    common = {"rng", "out", "clip", "overflow", "workers", "columns", "granularity"}
    assert names | common <= set(parameters)
    assert all(p.kind != p.VAR_KEYWORD for p in parameters.values())
    with pytest.raises(TypeError):
        function([1], sigma=4)
