"""Copying and saving: copy.copy / copy.deepcopy / pickle of an Accountant, a composition and
the mechanisms give independent objects in the same state, and an Accountant's JSON ledger
restores one that admits and refuses exactly what the original does.

Every decision is checked against a rule written here: a ρ or pure budget by exact Fraction
sums, an (ε, δ) budget by ``compose(*every release).delta(ε) <= δ``.
"""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from _offer import sensitivity_of, values_for
from dgauss import PrivacyBudgetError, accounting
from dgauss.accounting import Gaussian, Laplace, compose


def pickled(obj, warns: bool = True):
    """``obj`` through pickle and back.  Pickling an Accountant or a mechanism with budget
    left warns (BudgetCopyWarning), as these tests pickle on purpose (``warns``); anything
    else, or a used-up budget, must pickle without it."""
    if warns:
        with pytest.warns(dgauss.BudgetCopyWarning, match="each unpickled copy"):
            blob = pickle.dumps(obj)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", dgauss.BudgetCopyWarning)
            blob = pickle.dumps(obj)
    return pickle.loads(blob)


def has_budget(obj) -> bool:
    """Whether pickling ``obj`` should warn: an Accountant or a mechanism (every one these
    tests pickle has budget left; the tests of the warning itself check the edge)."""
    return isinstance(obj, (dgauss.Accountant, dgauss.GaussianMechanism, dgauss.LaplaceMechanism))


COPIES = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda obj: pickled(obj, has_budget(obj)),
    "json": lambda acc: dgauss.Accountant.from_json(acc.to_json()),
}


def spend(acc: dgauss.Accountant, release) -> bool:
    """Offer ``release`` (an accounting.Gaussian or Laplace with k = 1) to ``acc``: admitted?"""
    try:
        if isinstance(release, Gaussian):
            acc.add_gaussian_noise(
                values_for(release), sigma2=release.sigma2, sensitivity=sensitivity_of(release)
            )
        else:
            acc.add_laplace_noise(
                values_for(release), scale=release.scale, sensitivity=sensitivity_of(release)
            )
    except PrivacyBudgetError:
        return False
    return True


def recorded(release):
    """``release`` as an Accountant records it (the mechanism's own accounting release)."""
    if isinstance(release, Gaussian):
        mech = dgauss.GaussianMechanism(sigma2=release.sigma2, sensitivity=sensitivity_of(release))
    else:
        mech = dgauss.LaplaceMechanism(scale=release.scale, sensitivity=sensitivity_of(release))
    return mech._accounting_release()


def fits(budget: dict, releases: list) -> bool:
    """The rule an Accountant enforces, computed here from its definition."""
    if "rho" in budget:
        return sum((r.rho for r in releases), Fraction(0)) <= Fraction(budget["rho"])
    if "delta" not in budget:
        if not all(isinstance(r, Laplace) for r in releases):
            return False
        total = sum((Fraction(r.k * sum(map(abs, r.sensitivity))) / r.scale for r in releases), 0)
        return total <= Fraction(budget["epsilon"])
    return compose(*releases).delta(budget["epsilon"]) <= Fraction(budget["delta"])


def by_rule(budget: dict, plan: list, made: list | None = None) -> list:
    """What ``fits`` admits of ``plan`` offered in turn after ``made``."""
    made = list(made or [])
    start = len(made)
    for r in plan:
        if fits(budget, [*made, r]):
            made.append(r)
    return made[start:]


BUDGETS = [{"rho": "1/2"}, {"epsilon": "1", "delta": "1e-6"}, {"epsilon": "3/2"}]


def filled(budget: dict, releases: list) -> tuple[dgauss.Accountant, list]:
    """An accountant of ``budget`` offered ``releases`` in turn, and those it admitted."""
    acc = dgauss.Accountant(**budget)
    made = [r for r in releases if spend(acc, r)]
    return acc, made


# ---- copy.copy / copy.deepcopy / pickle / JSON of an Accountant ---------------------------


@pytest.mark.parametrize("how", COPIES)
def test_the_issue_s_copy_spends_only_its_own_budget(how):
    """The issue: after copy.copy(acc) spent ρ = 0.5, the original read "2 releases, ρ =
    0.25", remaining 3/4, and refused a 0.5 release.  Now each spends only its own."""
    acc = dgauss.Accountant(rho=1)
    acc.add_gaussian_noise([1], rho="1/4")
    other = COPIES[how](acc)
    other.add_gaussian_noise([1], rho="1/2")
    assert acc.spent.rho == Fraction(1, 4) and acc.remaining.rho == Fraction(3, 4)
    assert len(acc.spent.releases) == 1 and "The release (with" in acc.report()
    assert "ρ = 0.2500" in acc.report()
    assert other.spent.rho == Fraction(3, 4) and other.remaining.rho == Fraction(1, 4)
    assert "The 2 releases" in other.report() and "ρ = 0.7500" in other.report()
    acc.add_gaussian_noise([1], rho="1/2")  # the original can still afford it
    acc.add_gaussian_noise([1], rho="1/4")
    assert acc.remaining.rho == 0 and other.remaining.rho == Fraction(1, 4)
    with pytest.raises(PrivacyBudgetError):
        other.add_gaussian_noise([1], rho="1/2")
    other.add_gaussian_noise([1], rho="1/4")  # each refuses and admits by its own total


@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: ",".join(b))
@pytest.mark.parametrize("how", COPIES)
def test_a_copy_is_independent_and_consistent(how, budget):
    plan = [recorded(r) for r in (Laplace(4), Laplace(6, 2), Laplace(8), Gaussian(30), Laplace(5))]
    acc, made = filled(budget, plan)
    assert made and made == by_rule(budget, plan)
    before = (acc.report(), repr(acc), acc.remaining, acc.spent.rho)
    other = COPIES[how](acc)
    assert (other.report(), repr(other), other.remaining, other.spent.rho) == before
    more = [recorded(r) for r in (Laplace(3), Laplace(40), Laplace(12, 2), Laplace(100))]
    other_made = [r for r in more if spend(other, r)]
    assert other_made == by_rule(budget, more, made) and other_made, "it could afford some"
    assert fits(budget, made + other_made)
    assert other.spent.rho == sum((r.rho for r in made + other_made), Fraction(0))
    assert (acc.report(), repr(acc), acc.remaining, acc.spent.rho) == before  # untouched
    assert acc.spent.releases == tuple(made)
    # and the reverse: the original's spending leaves the copy as it was
    after = (other.report(), other.remaining, other.spent.rho)
    assert [spend(acc, r) for r in more] == [r in other_made for r in more]
    assert (other.report(), other.remaining, other.spent.rho) == after


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_of_copies_and_threads_hold_their_own_lock(how):
    """A copy's check-and-spend is atomic on its own: 8 threads on the copy, 8 on the
    original, each reaching exactly its budget (a shared or missing lock would break one)."""
    import threading

    acc = dgauss.Accountant(rho=1)
    acc.add_gaussian_noise([1], rho="1/4")
    twin = COPIES[how](COPIES[how](acc))
    admitted = {id(acc): 0, id(twin): 0}
    guard = threading.Lock()

    def run(target):
        for _ in range(10):
            if spend(target, Gaussian(32)):  # ρ = 1/64
                with guard:
                    admitted[id(target)] += 1

    threads = [threading.Thread(target=run, args=(t,)) for t in (acc, twin) * 8]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert admitted == {id(acc): 48, id(twin): 48}
    assert acc.spent.rho == twin.spent.rho == 1


# ---- the JSON ledger -----------------------------------------------------------------------


def test_the_ledger_is_readable_and_exact():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise([3], sigma2="35.7")
    acc.add_gaussian_noise([3], sigma2=Fraction(10**30 + 1, 3), sensitivity=[1, -2])
    text = acc.to_json()
    data = json.loads(text)
    assert data["format"] == "dgauss Accountant ledger" and data["version"] == 1
    assert data["budget"] == {"epsilon": "1", "delta": "1/1000000"}
    assert data["releases"] == [
        {"kind": "gaussian", "sigma2": "357/10", "sensitivity": [1], "k": 1},
        {"kind": "gaussian", "sigma2": f"{10**30 + 1}/3", "sensitivity": [1, -2], "k": 1},
    ]
    assert "." not in text.split('"releases"')[1]  # no float anywhere in the releases
    assert len(text.splitlines()) == 9  # one line per release
    back = dgauss.Accountant.from_json(text)
    assert back.spent.releases == acc.spent.releases and back.to_json() == text
    assert dgauss.Accountant.from_json(text.encode()).to_json() == text  # bytes too


@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: ",".join(b))
def test_an_empty_ledger_round_trips(budget):
    acc = dgauss.Accountant(**budget)
    back = dgauss.Accountant.from_json(acc.to_json())
    assert back.to_json() == acc.to_json() and back.remaining == acc.remaining
    assert back.report() == acc.report()


def releases_strategy(laplace_only: bool = False):
    gauss = st.builds(
        Gaussian,
        st.fractions(min_value=Fraction(1, 2), max_value=400, max_denominator=40),
        st.sampled_from([1, 2, (1, 1), (2, -1)]),
    ).map(recorded)
    lap = st.builds(
        Laplace,
        st.fractions(min_value=Fraction(1, 3), max_value=60, max_denominator=30),
        st.sampled_from([1, 2, 3]),
    ).map(recorded)
    return st.lists(lap if laplace_only else st.one_of(gauss, lap), min_size=1, max_size=12)


@pytest.mark.long
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(releases_strategy(), releases_strategy(), st.sampled_from(["1/4", "2", "1/50"]))
def test_json_round_trips_of_a_rho_budget_decide_the_same(first, then, rho):
    budget = {"rho": rho}
    acc, made = filled(budget, first)
    back = dgauss.Accountant.from_json(acc.to_json())
    assert back.to_json() == acc.to_json() and back.spent.releases == tuple(made)
    assert back.remaining == acc.remaining and back.report() == acc.report()
    for r in then:  # the two decide alike, and as the rule does
        expected = fits(budget, [*made, r])
        assert spend(acc, r) == expected == spend(back, r)
        if expected:
            made.append(r)
    assert acc.to_json() == back.to_json()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(releases_strategy(laplace_only=True), releases_strategy(), st.sampled_from(["1", "5/2"]))
def test_json_round_trips_of_a_pure_budget_decide_the_same(first, then, eps):
    budget = {"epsilon": eps}
    acc, made = filled(budget, first)
    spent = sum((r.epsilon for r in made), Fraction(0))
    back = pickled(dgauss.Accountant.from_json(acc.to_json()), spent < Fraction(eps))
    assert back.remaining == acc.remaining and back.report() == acc.report()
    for r in then:
        expected = fits(budget, [*made, r])
        assert spend(acc, r) == expected == spend(back, r)
        if expected:
            made.append(r)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from([Gaussian(20), Gaussian(45), Laplace(6), Laplace(9, 2)]), max_size=6),
    st.lists(st.sampled_from([Gaussian(20), Gaussian(12), Laplace(6), Laplace(3)]), max_size=6),
)
def test_json_round_trips_of_an_epsilon_delta_budget_decide_the_same(first, then):
    budget = {"epsilon": "1", "delta": "1e-5"}
    acc, made = filled(budget, first)
    back = dgauss.Accountant.from_json(acc.to_json())
    assert back.spent.releases == tuple(made)
    assert back.report() == acc.report() and back.remaining == acc.remaining
    for r in then:
        expected = fits(budget, [*made, r])
        assert spend(acc, r) == expected == spend(back, r)
        if expected:
            made.append(r)


def ledger(**changes) -> str:
    """A valid ledger (ρ = 1, two releases), with fields changed (None deletes one)."""
    data = {
        "format": "dgauss Accountant ledger",
        "version": 1,
        "budget": {"rho": "1"},
        "releases": [
            {"kind": "gaussian", "sigma2": "2", "sensitivity": [1], "k": 1},
            {"kind": "laplace", "scale": "4", "sensitivity": [1], "k": 1},
        ],
    }
    for key, value in changes.items():
        if key.startswith("r0_") or key.startswith("r1_"):
            entry = data["releases"][int(key[1])]
            field = key[3:]
            if value is None:
                del entry[field]
            else:
                entry[field] = value
        elif value is None:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


def test_the_valid_ledger_of_the_corruption_cases_is_valid():
    acc = dgauss.Accountant.from_json(ledger())
    assert acc.spent.rho == Fraction(1, 4) + Fraction(1, 32)


@pytest.mark.parametrize(
    "text, match",
    [
        ("{", "not valid JSON"),
        ("[]", "must be a JSON object"),
        (ledger(format="dgauss ledger"), "format must be"),
        (ledger(version=2), "unknown ledger version 2"),
        (ledger(version="1"), "unknown ledger version '1'"),
        (ledger(version=True), "unknown ledger version True"),
        (ledger(version=1.0), "unknown ledger version 1.0"),
        (ledger(budget=None), "lacks the field.*'budget'"),
        (ledger(releases=None), "lacks the field.*'releases'"),
        (ledger(extra="x"), "unknown field.*'extra'"),
        (ledger(budget={"delta": "1e-6"}), "budget must hold"),
        (ledger(budget={"rho": "1", "epsilon": "1"}), "budget must hold"),
        (ledger(budget={"rho": 0.5}), "budget.rho must be an exact rational.*never a float"),
        (ledger(budget={"rho": "-1"}), "rho must be > 0"),
        (ledger(budget={"epsilon": "1", "delta": "1"}), r"delta must lie in \(0, 1\)"),
        (ledger(budget=["rho", "1"]), "budget must be a JSON object"),
        (ledger(releases={"kind": "gaussian"}), "releases must be a list"),
        (ledger(r0_kind="uniform"), 'release 0 must be an object with "kind"'),
        (ledger(r0_kind=None), 'release 0 must be an object with "kind"'),
        (ledger(r1_sigma2="4"), "release 1 has unknown field.*'sigma2'"),
        (ledger(r1_scale=None), "release 1 lacks the field.*'scale'"),
        (ledger(r0_sigma2=2.0), "release 0: sigma2 must be an exact rational.*never a float"),
        (ledger(r0_sigma2="0"), "release 0: sigma2 must be > 0"),
        (ledger(r0_sigma2="two"), "release 0: sigma2 must be a number"),
        (ledger(r1_scale="1/0"), "release 1: scale has a zero denominator"),
        (ledger(r0_sensitivity=[]), "release 0: sensitivity must be"),
        (ledger(r0_sensitivity=[1.0]), "release 0: sensitivity must be"),
        (ledger(r0_sensitivity=[0, 0]), "release 0: .*sensitivity"),
        (ledger(r1_sensitivity="1"), "release 1: sensitivity must be a positive integer"),
        (ledger(r1_sensitivity=-1), "release 1: sensitivity must be a positive integer"),
        (ledger(r0_k=0), "release 0: k must be an integer from 1"),
        (ledger(r0_k=1.5), "release 0: k must be an integer"),
        (ledger(r0_k=True), "release 0: k must be an integer"),
        (ledger(r0_note="x"), "release 0 has unknown field.*'note'"),
        (ledger(r0_sigma2="1/2"), "releases do not fit its own budget"),  # ρ = 1 + 1/32
        (ledger(budget={"epsilon": "10"}), "releases do not fit its own budget"),  # pure: no G
        (ledger(budget={"epsilon": "1", "delta": "1e-9"}), "do not fit its own budget"),
        (ledger().replace('"sigma2": "2"', '"sigma2": "2", "sigma2": "3"'), "repeats.*sigma2"),
    ],
)
def test_corrupted_ledgers_are_refused_naming_what_is_wrong(text, match):
    with pytest.raises(ValueError, match=match):
        dgauss.Accountant.from_json(text)


def test_a_ledger_that_fits_only_with_rounding_is_still_checked_exactly():
    """Three releases of ρ = 1/3 fill ρ = 1 exactly; one more 1/(3·10^20) does not fit."""
    acc = dgauss.Accountant(rho=1)
    for _ in range(3):
        acc.add_gaussian_noise([0], sigma2="3/2")
    text = acc.to_json()
    assert dgauss.Accountant.from_json(text).remaining.rho == 0
    tampered = json.loads(text)
    tampered["releases"][0]["sigma2"] = str(Fraction(3, 2) - Fraction(1, 10**20))
    with pytest.raises(ValueError, match="do not fit"):
        dgauss.Accountant.from_json(json.dumps(tampered))


def test_from_json_wants_text():
    with pytest.raises(TypeError, match="str or bytes"):
        dgauss.Accountant.from_json({"version": 1})


def test_an_unknown_pickle_state_is_refused():
    acc = dgauss.Accountant(rho=1)
    with pytest.warns(dgauss.BudgetCopyWarning):
        state = acc.__getstate__()
    with pytest.raises(ValueError, match="state version 99"):
        acc.__setstate__({**state, "version": 99})


# ---- compositions ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_composition_copies_and_pickles_with_the_same_answers(how):
    program = compose(Gaussian("71.41"), Gaussian(300, k=2), Laplace(4, 2))
    asked = [(program.delta(1), program.delta(3, log=True), program.epsilon("1e-9"))]
    twin = COPIES[how](program)
    assert twin.releases == program.releases and twin.rho == program.rho
    answers = (twin.delta(1), twin.delta(3, log=True), twin.epsilon("1e-9"))
    assert [answers] == asked
    assert twin.route(1) == program.route(1) == "PLD"
    fresh = compose(*program.releases)  # and a pickled or copied one is as good as a new one
    assert fresh.delta(2) == twin.delta(2) and fresh.epsilon("1e-3") == twin.epsilon("1e-3")


def test_a_pickled_composition_leaves_its_grids_behind():
    program = compose(*(Gaussian(20 + i) for i in range(6)))
    program.delta(1)
    assert len(pickle.dumps(program)) < 2_000  # the releases only, not megabytes of grids


def test_privacy_loss_pickles_and_copies():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise([1], sigma2=40)
    acc.add_laplace_noise([1], scale=5)
    loss = acc.spent
    for how in ("copy", "deepcopy", "pickle"):
        twin = COPIES[how](loss)
        assert twin.releases == loss.releases and twin.rho == loss.rho
        assert twin.delta(1) == loss.delta(1) and twin.epsilon("1e-6") == loss.epsilon("1e-6")


# ---- mechanisms -------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: dgauss.GaussianMechanism(epsilon=1, delta="1e-6", sensitivity=[1, 2], k=3),
        lambda: dgauss.LaplaceMechanism(scale="5/2", sensitivity=3, k=3, granularity="0.5"),
    ],
    ids=["gaussian", "laplace"],
)
def test_a_mechanism_copy_counts_its_own_releases(how, make):
    mech = make()
    values = [1.0, 2.0] if mech.granularity is not None else [1, 2]
    mech(values)
    twin = COPIES[how](mech)
    assert (
        repr(twin) == repr(mech) and twin.rho == mech.rho and twin.granularity == mech.granularity
    )
    assert twin.delta(1) == mech.delta(1)
    twin(values)
    twin(values)  # the copy had 2 of its k = 3 left
    with pytest.raises(PrivacyBudgetError, match="k=3"):
        twin(values)
    mech(values)  # the original's count is its own: 2 used, one left
    mech(values)
    with pytest.raises(PrivacyBudgetError, match="k=3"):
        mech(values)
    fresh = COPIES[how](make())
    for _ in range(3):
        fresh(values)  # a copy of an unused one covers all k
    with pytest.raises(PrivacyBudgetError):
        fresh(values)


def test_a_mechanism_copy_draws_the_same_noise():
    import numpy as np

    mech = dgauss.GaussianMechanism(sigma2="7/3", k=2)
    twin = pickled(mech)
    a = mech(np.zeros(50, dtype=np.int64), rng=np.random.default_rng(5))
    b = twin(np.zeros(50, dtype=np.int64), rng=np.random.default_rng(5))
    assert (a == b).all() and twin.sigma2 == Fraction(7, 3)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_mechanism_saved_after_lean_releases_leaves_their_job_behind(how):
    """A lean release (an int64 array, default keywords) keeps the resolved job on the
    mechanism for this process; a pickle or deep copy carries only the settings and the
    count, and the copy resolves its own job when it draws."""
    import numpy as np

    mech = dgauss.LaplaceMechanism(scale="5/2", k=3)
    mech(np.zeros(4, dtype=np.int64))
    assert "_lean_job" in vars(mech)
    twin = COPIES[how](mech)
    assert "_lean_job" not in vars(twin) and twin._releases.used == 1
    assert twin(np.zeros(4, dtype=np.int64)).shape == (4,)
    assert vars(twin)["_lean_job"] == vars(mech)["_lean_job"]


def test_accounting_releases_pickle():
    for r in (Gaussian("1/3", [1, -2], k=5), Laplace("2.5", 3, k=2)):
        assert pickle.loads(pickle.dumps(r)) == r == copy.deepcopy(r)
        assert accounting.compose(r).rho == r.rho


def test_pickles_made_before_the_split_of_mechanisms_load():
    """A GaussianMechanism (one of its k = 3 releases made), a LaplaceMechanism and an
    Accountant with two releases, pickled by the tree of 7a0eb22 (before mechanisms.py was
    split into _inputs, _mechanism and _accountant; tests/data), load and go on as they
    would have: the counts, the spent privacy and what is left are kept."""
    import pickle
    from pathlib import Path

    blob = (Path(__file__).parent / "data" / "pickles_0.1.0_7a0eb22.pkl").read_bytes()
    old = pickle.loads(blob)
    g, acc = old["gauss"], old["accountant"]
    assert isinstance(g, dgauss.GaussianMechanism) and isinstance(acc, dgauss.Accountant)
    g([1])
    g([1])
    with pytest.raises(dgauss.PrivacyBudgetError):  # the pickled one had made 1 of its 3
        g([1])
    assert abs(acc.spent.delta(1) - 1.041691857803633e-07) < 1e-15
    assert str(old["remaining"]) == "Remaining(epsilon=0.08273 of 1, delta=8.958e-7 of 1e-6)"
    assert str(acc.remaining) == str(old["remaining"])
    assert isinstance(old["laplace"], dgauss.LaplaceMechanism)
    # and what pickles now names the module it always named
    assert b"dgauss.mechanisms" in pickle.dumps(g) and b"dgauss._" not in pickle.dumps(g)


# ---- pickling a budget that is not used up warns ----------------------------------------------


def _pickle_warning(obj) -> warnings.WarningMessage:
    """The one BudgetCopyWarning ``pickle.dumps(obj)`` gives (on this line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pickle.dumps(obj)
    assert len(caught) == 1 and caught[0].category is dgauss.BudgetCopyWarning, caught
    return caught[0]


@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: ",".join(b))
def test_pickling_an_accountant_with_budget_left_warns(budget):
    acc = dgauss.Accountant(**budget)
    acc.add_laplace_noise([1], scale=10)
    found = _pickle_warning(acc)
    assert issubclass(dgauss.BudgetCopyWarning, UserWarning)
    assert found.filename == __file__  # it names the line that pickled, not dgauss's
    text = str(found.message)
    for words in (
        "pickling this Accountant",
        "each unpickled copy",
        "a multiple of it",
        "dgauss.dask",
        "Accountant.to_json()",
        "--ledger",
        "warnings.filterwarnings('ignore', category=dgauss.BudgetCopyWarning)",
    ):
        assert words in text, (words, text)
    if "rho" in budget:  # what is left, rounded down, where it is cheap to know
        assert "rho = 0.495 left" in text  # 1/2 - 1/200 (ρ of Lap(10): 1/200)


def test_a_used_up_budget_pickles_quietly_and_the_edge_is_exact():
    rho = dgauss.Accountant(rho=1)
    rho.add_gaussian_noise([1], rho="1/2")
    rho.add_gaussian_noise([1], rho=Fraction(1, 2) - Fraction(1, 10**30))
    assert "rho = 1e-30 left" in str(_pickle_warning(rho).message)  # a hair left: warns
    rho.add_gaussian_noise([1], rho=Fraction(1, 10**30))
    pure = dgauss.Accountant(epsilon=1)
    pure.add_laplace_noise([1], scale=2)
    assert "epsilon = 0.5 left" in str(_pickle_warning(pure).message)
    pure.add_laplace_noise([1], scale=2)
    gauss = dgauss.GaussianMechanism(sigma2=4, k=2)
    laplace = dgauss.LaplaceMechanism(scale=4)
    assert "its 2 remaining releases (of k=2)" in str(_pickle_warning(gauss).message)
    gauss([1])
    assert "its 1 remaining release (of k=2)" in str(_pickle_warning(gauss).message)
    gauss([1])
    laplace([1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for spent in (rho, pure, gauss, laplace):  # nothing left: a copy can release nothing
            twin = pickle.loads(pickle.dumps(spent))
            with pytest.raises(PrivacyBudgetError):
                if isinstance(twin, dgauss.Accountant):
                    twin.add_laplace_noise([1], scale=10**9)
                else:
                    twin([1])


def test_an_epsilon_delta_budget_always_warns():
    """An (ε, δ) budget is never used up exactly: even after the release that took the most
    it could, a release with more noise still fits, so its pickle warns."""
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    acc.add_gaussian_noise([1], sigma2=acc.calibrate_gaussian())
    assert "(epsilon, delta) budget" in str(_pickle_warning(acc).message)
    acc.add_gaussian_noise([1], sigma2=10**6)  # and indeed a copy could still spend


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copies_in_this_process_do_not_warn(how):
    """copy.copy and copy.deepcopy are made by the caller's own code, in sight: no warning
    (they still spend on their own: the tests above)."""
    mech = dgauss.GaussianMechanism(sigma2=4, k=2)
    objects = [dgauss.Accountant(rho=1), mech, dgauss.LaplaceMechanism(scale=4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        twins = [how(obj) for obj in objects]
    assert twins[1]._releases is not mech._releases and twins[1]._releases.left == 2


def test_a_process_pool_spends_a_copy_per_task_and_the_pickle_warns():
    """What the warning is about, on real processes: an accountant's method sent twice to a
    process pool is pickled twice; each copy spends the whole budget, twice what there is,
    while the original has spent nothing."""
    import concurrent.futures
    import multiprocessing

    acc = dgauss.Accountant(rho=1)
    context = multiprocessing.get_context("spawn")  # no fork of this test process's threads
    with pytest.warns(dgauss.BudgetCopyWarning, match="pickling this Accountant") as caught:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            tasks = [pool.submit(acc.add_gaussian_noise, [5, 7], rho=1) for _ in range(2)]
            results = [task.result(timeout=120) for task in tasks]
    assert [r.shape for r in results] == [(2,), (2,)]  # both admitted: rho = 2 spent in all
    assert len([w for w in caught if w.category is dgauss.BudgetCopyWarning]) >= 1
    assert acc.spent.rho == 0 and acc.remaining.rho == 1
