"""The Accountant groups identical releases and admits by the cheapest certified bound: its
decisions must be those of the plain rule -- compose every release made plus the new one and
compare its δ at ε with the budget -- computed here from scratch with ``compose(*all)``.

(Speed is measured in benchmarks/bench_accounting.py --only accountant, not here.)
"""

from __future__ import annotations

import json
import math
import pickle
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from _offer import sensitivity_of, values_for
from dgauss import PrivacyBudgetError, accounting
from dgauss.accounting import Gaussian, Laplace, compose


def _pickled(acc):
    """A pickled copy (with the warning that a budget with some left gives)."""
    with pytest.warns(dgauss.BudgetCopyWarning):
        return pickle.loads(pickle.dumps(acc))


def offer(acc: dgauss.Accountant, release) -> bool:
    """Offer one release to ``acc`` through the public API: admitted?"""
    sens = sensitivity_of(release)
    try:
        if isinstance(release, Gaussian):
            acc.add_gaussian_noise(values_for(release), sigma2=release.sigma2, sensitivity=sens)
        else:
            acc.add_laplace_noise(values_for(release), scale=release.scale, sensitivity=sens)
    except PrivacyBudgetError:
        return False
    return True


def as_recorded(release):
    sens = sensitivity_of(release)
    if isinstance(release, Gaussian):
        return dgauss.GaussianMechanism(
            sigma2=release.sigma2, sensitivity=sens
        )._accounting_release()
    return dgauss.LaplaceMechanism(scale=release.scale, sensitivity=sens)._accounting_release()


def plain_rule(budget: dict, releases: list) -> bool:
    """The rule before grouping: the composition of every release, read as a user reads it."""
    if "rho" in budget:
        return sum((r.rho for r in releases), Fraction(0)) <= Fraction(budget["rho"])
    if "delta" not in budget:
        return all(isinstance(r, Laplace) for r in releases) and sum(
            (r.epsilon for r in releases), Fraction(0)
        ) <= Fraction(budget["epsilon"])
    return compose(*releases).delta(budget["epsilon"]) <= Fraction(budget["delta"])


def run(budget: dict, sequence: list) -> tuple[dgauss.Accountant, list, list]:
    """Offer ``sequence`` to a new accountant: it, what it admitted, and each decision checked
    against the plain rule."""
    acc = dgauss.Accountant(**budget)
    made: list = []
    for release in sequence:
        release = as_recorded(release)
        expected = plain_rule(budget, [*made, release])
        assert offer(acc, release) == expected, (made, release)
        if expected:
            made.append(release)
    assert acc.spent.releases == tuple(made)
    return acc, made, sequence


# a few kinds, so that kinds repeat (the grouping, the caches and the look-ahead act), with
# the same σ² under two sensitivities and the same scale at two sensitivities
POOL = [
    Gaussian(40),
    Gaussian(40, [1, 1]),
    Gaussian(40, 2),
    Gaussian("97.3"),
    Gaussian(15),
    Laplace(6),
    Laplace(6, 2),
    Laplace("13.5"),
    Laplace(40),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(POOL), min_size=1, max_size=14),
    st.sampled_from([("1", "1e-6"), ("2", "1e-3"), ("1/2", "1e-9"), ("3", "1e-60")]),
)
def test_an_epsilon_delta_budget_decides_as_composing_every_release(sequence, budget):
    acc, made, _ = run({"epsilon": budget[0], "delta": budget[1]}, sequence)
    if made:  # the readout: the composition of every release, never above the budget
        everything = compose(*made)
        eps, delta = Fraction(budget[0]), Fraction(budget[1])
        assert acc.spent.delta(eps) <= everything.delta(eps) and acc.spent.delta(eps) <= delta
        assert acc.spent.rho == everything.rho
        assert acc.spent.delta(eps / 2) == everything.delta(eps / 2)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(POOL), min_size=1, max_size=40),
    st.sampled_from(["1/10", "1", "1/3"]),
)
def test_a_rho_budget_decides_by_the_exact_sum(sequence, rho):
    acc, made, _ = run({"rho": rho}, sequence)
    assert acc.remaining.rho == Fraction(rho) - sum((r.rho for r in made), Fraction(0))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=40), st.sampled_from(["1", "5/2"]))
def test_a_pure_budget_decides_by_the_exact_sum(sequence, eps):
    acc, made, _ = run({"epsilon": eps}, sequence)
    used = sum((r.epsilon for r in made), Fraction(0))
    assert acc.spent.epsilon(0) == float(used) or acc.spent.epsilon(0) >= used
    assert "ε = " in acc.report() or not made


@pytest.mark.long
def test_a_long_run_of_repeated_kinds_past_the_zcdp_route():
    """Three kinds repeated until the budget is full: the zCDP route admits the first ones,
    then compositions and the look-ahead's certified larger programs; each decision is the
    plain rule's, and the last admitted program's δ (composed here) is within the budget."""
    budget = {"epsilon": "1", "delta": "1e-6"}
    kinds = [Gaussian(400), Laplace(30), Gaussian(700)]
    sequence = [kinds[i % 3] for i in range(120)]
    acc, made, _ = run(budget, sequence)
    assert 20 < len(made) < 120
    rho_total = sum((r.rho for r in made), Fraction(0))
    assert rho_total > Fraction(accounting.cdp_rho(1, "1e-6"))  # past what zCDP admits
    assert compose(*made).delta(1) <= 1e-6
    assert acc._base is not None  # a composition was kept to merge the next releases into
    for kind in kinds:  # full: nothing more of any kind
        assert not offer(acc, kind)


def test_grouping_keeps_sensitivities_and_kinds_apart():
    """Gaussian(40) with sensitivity 1, 2 and [1, 1] are three kinds (ρ 1/80, 1/20, 1/40),
    and a Laplace of scale 40 is not a Gaussian of σ² 40."""
    acc = dgauss.Accountant(rho="1/8")
    for release in (Gaussian(40), Gaussian(40, 2), Gaussian(40, [1, 1]), Laplace(40)):
        assert offer(acc, release)
    expected = Fraction(1, 80) + Fraction(1, 20) + Fraction(1, 40) + Fraction(1, 3200)
    assert acc.spent.rho == expected
    assert not offer(acc, Gaussian(40, 2))  # 1/20 more would pass 1/8
    assert offer(acc, Gaussian(40))  # 1/80 fits
    assert acc.spent.rho == expected + Fraction(1, 80)


def test_k_fold_ledger_releases_group_with_single_ones():
    """A ledger release with k = 3 and three single releases of its kind are the same program."""
    single = dgauss.Accountant(epsilon=2, delta="1e-6")
    for _ in range(3):
        assert offer(single, Gaussian(30))
    data = json.loads(single.to_json())
    data["releases"] = [{"kind": "gaussian", "sigma2": "30", "sensitivity": [1], "k": 3}]
    folded = dgauss.Accountant.from_json(json.dumps(data))
    for candidate in (Gaussian(30), Gaussian(9), Laplace(3), Gaussian(30)):
        assert offer(single, candidate) == offer(folded, candidate)
    assert single.spent.delta(2) == folded.spent.delta(2)


@pytest.fixture
def eager_look_ahead(monkeypatch):
    """Look ahead on programs of any length (it waits for long ones, which are slow here)."""
    from dgauss import _accountant

    monkeypatch.setattr(_accountant, "_LOOK_AHEAD_WORTH", 0)


def certified_accountant() -> dgauss.Accountant:
    """An accountant past the zCDP route whose look-ahead certified a larger program."""
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    kinds = [Gaussian(400), Laplace(30)]
    i = 0
    while acc._certificate is None:
        assert offer(acc, kinds[i % 2]), "the budget filled before a certificate"
        i += 1
    return acc


def test_a_certificate_is_saved_checked_and_restored(eager_look_ahead):
    acc = certified_accountant()
    text = acc.to_json()
    data = json.loads(text)
    assert "certified" in data
    certified = compose(
        *(
            Gaussian(e["sigma2"], k=e["k"])
            if e["kind"] == "gaussian"
            else Laplace(e["scale"], k=e["k"])
            for e in data["certified"]
        )
    )
    assert certified.delta(1) <= 1e-6  # the certified program fits, checked here
    for how in (
        lambda a: dgauss.Accountant.from_json(a.to_json()),
        _pickled,
    ):
        back = how(acc)
        assert back.to_json() == text
        plan = [Gaussian(400), Laplace(30)] * 30 + [Gaussian(9)]
        first = [offer(acc.__copy__(), r) for r in plan[:1]]
        assert first == [offer(back.__copy__(), r) for r in plan[:1]]
        twin = acc.__copy__()
        assert [offer(twin, r) for r in plan] == [offer(back, r) for r in plan]


def test_a_tampered_certificate_is_refused_or_ignored(eager_look_ahead):
    acc = certified_accountant()
    data = json.loads(acc.to_json())
    # one release of the ledger left out of the certified program: refused
    bad = json.loads(json.dumps(data))
    for entry in bad["certified"]:
        entry["k"] = 1
    bad["releases"] = bad["releases"] + bad["releases"]
    with pytest.raises(ValueError, match="certified program does not contain"):
        dgauss.Accountant.from_json(json.dumps(bad))
    # a certified program that does not fit: not used (the releases are checked alone)
    huge = json.loads(json.dumps(data))
    huge["certified"][0]["k"] *= 4
    back = dgauss.Accountant.from_json(json.dumps(huge))
    assert back._certificate is None and back.spent.releases == acc.spent.releases
    assert "certified" not in json.loads(back.to_json())
    # a certified program in a ρ ledger: refused
    rho = json.loads(dgauss.Accountant(rho=1).to_json())
    rho["certified"] = []
    with pytest.raises(ValueError, match="only an \\(epsilon, delta\\) ledger"):
        dgauss.Accountant.from_json(json.dumps(rho))


def test_releases_inside_a_certificate_are_within_the_budget(eager_look_ahead):
    """Every program admitted through the certificate fits by the plain rule too (checked
    here), and the readout at the budget's ε stays within it."""
    acc = certified_accountant()
    made = list(acc.spent.releases)
    inside = acc._certificate.program.counts
    kinds = [Gaussian(400), Laplace(30)]
    for i in range(200):
        release = as_recorded(kinds[i % 2])
        if acc._certificate is None or acc._program.counts.get(release, 0) >= inside.get(
            release, 0
        ):
            break
        assert offer(acc, release)
        made.append(release)
        assert compose(*made).delta(1) <= 1e-6
        assert acc.spent.delta(1) <= 1e-6


def test_calibration_agrees_with_the_plain_rule_after_many_releases():
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    made = []
    for _ in range(40):
        for release in (Gaussian(4000), Laplace(200)):
            assert offer(acc, release)
            made.append(as_recorded(release))
    s = acc.calibrate_gaussian()
    assert compose(*made, Gaussian(s)).delta(1) <= 1e-6
    below = s - s / 1000  # the grid step below (4 significant digits) does not fit
    assert compose(*made, Gaussian(below)).delta(1) > 1e-6 or s.numerator < 1000


@pytest.mark.parametrize("eps, delta", [("1", "1e-6"), ("2", "1e-400")])
def test_the_zcdp_facts_answer_as_the_route_does(eps, delta):
    """The accountant remembers the largest ρ the zCDP route certified and the smallest it
    did not: in any order of questions, each answer is the route's own (computed here)."""
    from dgauss.accounting import _closed_forms as cf

    acc = dgauss.Accountant(epsilon=eps, delta=delta)
    e, d = Fraction(eps), Fraction(delta)
    edge = Fraction(accounting.cdp_rho(e, d)) if d > Fraction(10) ** -300 else Fraction(1, 1000)
    questions = [edge * Fraction(n, 64) for n in (64, 1, 200, 63, 65, 128, 66, 62, 2, 100, 64)]
    for rho in questions:
        log_hi = cf._cdp_log_delta(rho, e)
        if d >= Fraction(10) ** -300:
            expected = cf._delta_out(log_hi, False) <= d
        else:
            expected = cf._delta_out(log_hi, True) <= cf._AR.q(d).log().lo
        assert acc._zcdp_certifies(rho) == expected, rho
    assert acc._zcdp_fits is not None and acc._zcdp_fails is not None


def test_a_certificate_admits_exactly_what_is_inside_it():
    """Planted: a certificate that (falsely) says 'the releases so far plus two more
    Gaussian(50) fit'.  The accountant trusts it for exactly those two, no more, and decides
    everything else by the plain rule."""
    from dgauss._accountant import _Certificate

    budget = {"epsilon": "1", "delta": "1e-6"}
    acc, made, _ = run(budget, [Gaussian(50)] * 40)  # full: 50 is refused now
    assert not offer(acc, Gaussian(50))
    planted = acc._program.plus(as_recorded(Gaussian(50)))
    planted.add(as_recorded(Gaussian(50)))
    acc._certificate = _Certificate(planted, 1e-7, -16.0)
    acc._refused.clear()
    assert offer(acc, Gaussian(50)) and offer(acc, Gaussian(50))  # inside: admitted
    assert not offer(acc, Gaussian(50))  # one past it: the plain rule (refused)
    assert acc._certificate is not None
    assert not offer(acc, Laplace(1))  # another kind: the plain rule


@pytest.mark.parametrize(
    "base, more, eps",
    [
        ([Gaussian(3), Laplace(2)], [Gaussian(5), Gaussian(3)], "1"),
        ([Gaussian("2.5", [1, 2])], [Laplace(3, 2), Gaussian("2.5", [1, 2])], "2"),
        ([Laplace(2), Laplace(5)], [Gaussian(7), Laplace(2), Laplace(9)], "1/2"),
        ([Gaussian(4)], [Laplace("1.5")], "4"),
    ],
)
def test_a_composition_extended_release_by_release_stays_above_the_truth(base, more, eps):
    """The incremental hook: the PLD of a small program, extended by more releases one at a
    time on its own tilt and grid, bounds the true δ of the larger program (exact convolution
    at 80 digits, tests/_compose_reference.py) and is within a few % of a fresh composition."""
    from _compose_reference import composed_delta
    from dgauss.accounting import _programs

    e = Fraction(eps)
    program = list(base)
    pld = compose(*program)._shared_grid_pld(e)
    assert pld is not None
    for release in more:
        pld = pld.extended(_programs._coordinates([release]))
        assert pld is not None
        program.append(release)
        reference = [
            (
                "gaussian" if isinstance(r, Gaussian) else "laplace",
                r.sigma2 if isinstance(r, Gaussian) else r.scale,
                r.sensitivity,
                r.k,
            )
            for r in program
        ]
        low, high = composed_delta(reference, e)
        bound = math.exp(pld.log_delta_at(e))
        assert bound >= low and high - low < 1e-9 * high  # above the truth, well enclosed
        fresh = compose(*program).delta(e)
        assert bound <= fresh * 1.05 + 1e-300


def primes(count: int, start: int) -> list[int]:
    found: list[int] = []
    n = start
    while len(found) < count:
        if all(n % p for p in range(2, int(n**0.5) + 1)):
            found.append(n)
        n += 1
    return found


def test_many_distinct_parameters_compose_and_are_admitted():
    """150 Gaussians with distinct prime σ²: the common lattice of their losses, 1/(2Πσ²),
    is below the float range (float(a) = 0 raised ZeroDivisionError in compose, which the
    accountant took as a refusal).  Now the PLD route answers, below the zCDP bound, and an
    accountant admits them all, as the plain rule does."""
    releases = [Gaussian(p) for p in primes(150, 20_000)]
    program = compose(*releases)
    rho = program.rho
    assert program.route(1) == "PLD"
    assert 0 < program.delta(1) <= accounting.cdp_delta(rho, 1)
    acc = dgauss.Accountant(epsilon=1, delta=Fraction(program.delta(1)) * 2)
    assert all(offer(acc, r) for r in releases)  # (the plain rule admits each prefix too)
    assert acc.spent.delta(1) <= program.delta(1)


@pytest.mark.parametrize(
    "kinds, n",
    [
        ([Gaussian(900), Gaussian(1300), Laplace(45), Gaussian(2000)], 60),
        ([Gaussian(300 + 7 * i) if i % 5 else Laplace(20 + i) for i in range(40)], 40),
        ([Gaussian("512.5", [1, 2]), Laplace(70, 2)], 30),
    ],
)
def test_a_merged_bound_is_never_below_a_fresh_composition(kinds, n):
    """The accountant admits on a merged bound (the kept PLD with the new releases merged in,
    at the kept tilt and grid): it must be an upper bound.  A fresh composition is within
    0.1% of the truth here (docs/accounting.md), so the merged ln δ may not be below it by
    more than that.  (It may be far above: the accountant refuses only on a lower bound,
    test_a_refusal_without_composing_is_a_fresh_compositions.)  Checked on programs grown
    by 1 release and by 20%."""
    from dgauss.accounting import _programs

    sequence = [kinds[i % len(kinds)] for i in range(n)]
    base_n = int(0.8 * n)
    pld = compose(*sequence[:base_n])._shared_grid_pld(Fraction(1))
    assert pld is not None
    for extra in (1, n - base_n):
        merged = pld.extended(_programs._coordinates(sequence[base_n : base_n + extra]))
        fresh = compose(*sequence[: base_n + extra]).delta(1, log=True)
        assert merged.log_delta_at(Fraction(1)) >= fresh - 2e-3


# Programs whose fresh composition reads different routes: many kinds on a grid (the
# accountant's refusal without composing applies), Laplace-heavy programs that the exact
# atoms or a lattice answer far below any grid (a guard that let the kept grid refuse them
# refuses what the fresh composition admits), one strong Laplace just past its pure ε, where
# basic composition answers below the grid, and an ℓ2-free vector release.
REFUSAL_PROGRAMS = [
    ([Gaussian(300 + 7 * i) if i % 5 else Laplace(20 + i) for i in range(40)], "1"),
    ([Gaussian(900), Gaussian(1300), Laplace(45), Gaussian(2000)] * 12, "1"),
    (
        [Laplace("5.06", k=2), Laplace("36.46"), Gaussian("1751.13"), Laplace("12.52")]
        + [Laplace("29.97", k=5)],
        "0.9424157303370787",
    ),
    ([Laplace("8.52", k=2), Gaussian("3672.73", k=2), Laplace("22.3", k=2)], "0.855"),
    ([Laplace("0.39", k=2), Gaussian("1272.97", k=5), Gaussian("1084.6")], "5.5476575"),
    ([Laplace(1), Gaussian(10**4), Gaussian(2 * 10**4)], "1.05"),
    ([Gaussian("512.5", [1, 2]), Laplace(70, 2)] * 10, "2"),
]


@pytest.mark.parametrize("program, eps", REFUSAL_PROGRAMS)
@pytest.mark.long
def test_a_refusal_without_composing_is_a_fresh_compositions(program, eps):
    """An offer the kept composition (extended by it) refuses without composing afresh
    (Accountant._grid_refuses) is one the fresh composition refuses too, at budgets just
    above and below the fresh composition's own δ: the plain rule's decision, for every
    release of the program offered once more."""
    from dgauss import _accountant
    from dgauss.accounting import _programs

    e = Fraction(eps)
    base = _accountant._Program()
    for release in program:
        base.add(release)
    pld = base.composition()._shared_grid_pld(e)
    assert pld is not None
    refused_cheaply = 0
    for extra in {_accountant._unit(r) for r in program}:
        candidate = base.plus(extra)
        step = pld.extended(_programs._coordinates([extra]))
        fresh = candidate.composition().delta(e, log=True)
        scale = Fraction(math.exp(fresh))
        for factor in (Fraction(1, 10**6), Fraction(1, 10**3), Fraction(3, 10), 2):
            for budget in (scale * (1 + factor), scale / (1 + factor)):  # fits, and not
                if not 0 < budget < 1:
                    continue
                acc = dgauss.Accountant(epsilon=e, delta=budget)
                refuses = acc._grid_refuses(candidate, step)
                assert not (refuses and acc._composition_fits(candidate.composition())[0])
                refused_cheaply += refuses
    if len(program) >= 40:  # long programs on a grid: the cheap refusal applies
        assert refused_cheaply > 0


@pytest.mark.long
def test_refusals_near_a_full_budget_do_not_compose_afresh(monkeypatch):
    """Sixty kinds offered until the budget is full, then each offered again: the plain
    rule's decisions; and once a composition of the releases made is kept, a refusal merges
    the offer into it instead of composing the program afresh (at most one fresh
    composition for the refusals, and one after a restore, which keeps none)."""
    from dgauss import _accountant

    kinds = [Gaussian(700 + 17 * i) if i % 5 else Laplace(12 + i) for i in range(60)]
    budget = {"epsilon": "1", "delta": "1e-6"}
    acc, made, _ = run(budget, kinds)
    assert len(made) < len(kinds)  # the budget filled
    fresh = []
    real = _accountant.Accountant._composes

    def counted(self, program, look_ahead=False):
        fresh.append(program)
        return real(self, program, look_ahead)

    monkeypatch.setattr(_accountant.Accountant, "_composes", counted)
    restored = _pickled(acc)
    for who in (acc, restored):
        fresh.clear()
        for release in kinds[:20]:
            expected = plain_rule(budget, [*made, release])
            assert offer(who, release) == expected
            assert not expected
        assert len(fresh) <= 1


def test_basic_composition_that_fits_stops_a_refusal_without_composing(monkeypatch):
    """The one route besides the grids and zCDP that could admit: when basic composition
    fits, the kept composition does not refuse (no program was found where it beats the
    grid, so the route's answer is planted here)."""
    import gmpy2

    from dgauss import _accountant
    from dgauss.accounting import _composition, _programs

    program, eps = REFUSAL_PROGRAMS[0]
    e = Fraction(eps)
    base = _accountant._Program()
    for release in program:
        base.add(release)
    extra = _accountant._unit(program[1])
    candidate = base.plus(extra)
    step = base.composition()._shared_grid_pld(e).extended(_programs._coordinates([extra]))
    budget = Fraction(math.exp(candidate.composition().delta(e, log=True))) / 2
    acc = dgauss.Accountant(epsilon=e, delta=budget)
    assert acc._grid_refuses(candidate, step)
    fits = gmpy2.mpfr(math.log(budget) - 1)
    monkeypatch.setattr(
        _composition.Composition, "_basic_log_delta", lambda self, e, cap=None: fits
    )
    assert not acc._grid_refuses(candidate, step)


def test_offers_at_the_edge_merge_only_themselves(monkeypatch, eager_look_ahead):
    """Three kinds offered 1,200 times: past the zCDP route, a composition and its
    look-ahead's certificate admit releases without merging; where the certificate ends, the
    kept distribution is brought up to the releases made once (Accountant._advance_base),
    and from then on each offer, admitted or refused, merges itself alone into it (before,
    each merged every release since the last composition).  The budget ends full and within
    its bound."""
    from dgauss import _accountant
    from dgauss.accounting import _readouts

    calls: list[list[int]] = []  # per merge of an offer (_merged): the sizes merged
    real_merged = _accountant.Accountant._merged

    def counted(real):
        def extended(self, more):
            if calls:
                calls[-1].append(sum(c.count for c in more))
            return real(self, more)

        return extended

    def merged(self, release, candidate):
        calls.append([])
        return real_merged(self, release, candidate)

    for kept in (_readouts._PLD, _readouts._Extended):  # a composition, and one extended
        monkeypatch.setattr(kept, "extended", counted(kept.extended))
    monkeypatch.setattr(_accountant.Accountant, "_merged", merged)
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    kinds = [as_recorded(k) for k in (Gaussian(4000), Laplace(300), Gaussian(7000))]
    made = []
    for i in range(1200):
        if offer(acc, kinds[i % 3]):
            made.append(kinds[i % 3])
    assert compose(*made).delta(1) <= 1e-6 and not plain_rule(
        {"epsilon": "1", "delta": "1e-6"}, [*made, kinds[0]]
    )
    # each offer merged itself alone, once the releases made since the last composition
    # were merged in (once, where the certificates ended)
    sizes = [c for c in calls if c]
    advances = [c for c in sizes if c[0] > 1]
    assert advances and all(c[1:] == [1] for c in advances)
    assert len(advances) <= 3 and sum(c == [1] for c in sizes) >= 5


def test_spent_delta_never_rises_with_epsilon_past_the_admitting_bound():
    """An accountant's ``spent`` reads the bound that admitted its last release (a ceiling at
    the budget's ε, below the fresh composition's reading there); that bound holds at every
    larger ε too, so δ read just past the budget's ε is not above δ read at it (it was, by
    the fresh reading, before: a hostile review's finding)."""
    import math

    from dgauss.mechanisms import PrivacyLoss

    releases = [Gaussian(400, k=30), Laplace(40, k=5)]
    fresh = compose(*releases).delta(1)
    ceiling = (Fraction(1), fresh / 2, math.log(fresh / 2))  # as if certified by a merge
    spent = PrivacyLoss(releases, ("approx", Fraction(1), Fraction(1)), ceiling=ceiling)
    eps = [1.0, math.nextafter(1.0, 2.0), 1.5, 3.0]
    read = [spent.delta(e) for e in eps]
    assert read[0] == fresh / 2
    assert all(a >= b for a, b in zip(read, read[1:], strict=False)), read
    logs = [spent.delta(e, log=True) for e in eps]
    assert all(a >= b for a, b in zip(logs, logs[1:], strict=False)), logs
    assert spent.delta(0.5) == compose(*releases).delta(0.5)  # below its ε: the fresh one
