"""An Accountant asked for the same release again (the same exact arguments, an int64 array,
every other keyword at its default) admits it on its running exact sums, without setting a
mechanism up again (``_Known``).  Its decisions must be those of the general way: the same
releases admitted or refused, with the same errors, the same exact totals, the same ledger.

Each test offers one sequence to two accountants: one as it is, and a reference whose
``_remember`` keeps nothing, so that every one of its calls goes the general way (a
mechanism set up, ``_spend`` deciding by ``_admits``).  For ρ and pure budgets the
decisions are also checked against the plain rule, a running sum of Fractions here.

(Speed is measured in benchmarks/bench.py --small, not here.)
"""

from __future__ import annotations

import copy
import json
import pickle
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dgauss
from dgauss import PrivacyBudgetError, _accountant
from dgauss.accounting import Gaussian, L2Ball, Laplace


def _general(acc: dgauss.Accountant) -> dgauss.Accountant:
    """``acc`` made to remember nothing: every call the general way."""
    acc._remember = lambda key, mech: None  # type: ignore[method-assign]
    return acc


def _call(acc: dgauss.Accountant, offer: tuple, values) -> tuple:
    """One offer ("gaussian" or "laplace", its keywords) on ``values``: ("ok", dtype, shape)
    or (the error's type, its message)."""
    kind, kwargs = offer
    add = acc.add_gaussian_noise if kind == "gaussian" else acc.add_laplace_noise
    try:
        out = add(values, **kwargs)
    except (PrivacyBudgetError, ValueError, TypeError, OverflowError) as exc:
        return type(exc), str(exc)
    return "ok", out.dtype, out.shape


def _state(acc: dgauss.Accountant) -> tuple:
    """Everything an admission records, exactly."""
    program = acc._program
    return (
        list(acc._releases),
        dict(program.counts),
        program.rho,
        program.pure,
        program.gaussians,
        acc._admitted_here,
    )


def _same_offers(budget: dict, offers: list, sizes: list | None = None) -> list:
    """Offer ``offers`` (on arrays of ``sizes``, 10 by default) to an accountant and to a
    general-way reference of the same ``budget``; check that every outcome and every state
    after it are identical; return the outcomes, and how many offers the first accountant
    decided the general way (``_spend``: the first of each key, and those the running sums
    did not admit at once)."""
    fast, ref = dgauss.Accountant(**budget), _general(dgauss.Accountant(**budget))
    general, spend = [], fast._spend
    fast._spend = lambda r: general.append(r) or spend(r)  # type: ignore[method-assign]
    outcomes = []
    for i, offer in enumerate(offers):
        n = 10 if sizes is None else sizes[i % len(sizes)]
        values = np.arange(n, dtype=np.int64)
        got, want = _call(fast, offer, values), _call(ref, offer, values.copy())
        assert got == want, (i, offer)
        assert _state(fast) == _state(ref), (i, offer)
        outcomes.append(got[0])
    assert not ref._known and fast._known  # the reference went the general way only
    assert fast.to_json() == ref.to_json()
    assert fast.spent.rho == ref.spent.rho
    assert repr(fast) == repr(ref) and repr(fast.remaining) == repr(ref.remaining)
    return outcomes, len(general)


def _rho_of(offer: tuple, n: int = 10) -> Fraction:
    """The exact ρ of an offer (for the plain rule, computed here)."""
    kind, kwargs = offer
    if kind == "gaussian":
        sens = kwargs.get("sensitivity", 1)
        return Fraction(sens * sens) / (2 * Fraction(kwargs["sigma2"]))
    eps = Fraction(kwargs.get("sensitivity", 1)) / Fraction(kwargs["scale"])
    return eps * eps / 2


def test_the_known_way_is_taken_and_sets_nothing_up(monkeypatch):
    """The comparisons below test the known way only if it is taken: after the first call,
    the same call neither sets a mechanism up nor goes through ``_spend`` while it fits."""
    acc = dgauss.Accountant(rho=10**6)
    counts = np.arange(10, dtype=np.int64)
    acc.add_gaussian_noise(counts, sigma2=100)
    spends, setups = [], []
    monkeypatch.setattr(acc, "_spend", lambda r: spends.append(r))
    monkeypatch.setattr(_accountant, "GaussianMechanism", lambda **kw: setups.append(kw) or 1 / 0)
    for _ in range(5):
        out = acc.add_gaussian_noise(counts, sigma2=100)
        assert out.dtype == np.int64 and out.shape == (10,)
    assert spends == [] and setups == []
    assert len(acc._releases) == 6 and acc._program.rho == Fraction(6, 200)


def test_a_rho_budget_to_its_last_bit_admits_as_the_plain_rule():
    """ρ = 1/200 a release (σ² = 100): a budget of exactly 7 of them admits 7, refuses the
    8th and every one after, with the general way's message."""
    offers = [("gaussian", {"sigma2": 100})] * 10
    outcomes, general = _same_offers({"rho": Fraction(7, 200)}, offers)
    assert outcomes == ["ok"] * 7 + [PrivacyBudgetError] * 3
    assert general == 1 + 3  # the first call, and the refusals (in the general way's words)


def test_mixed_kinds_parameters_and_types_decide_as_the_plain_rule():
    """Gaussian and Laplace releases, a parameter given as an int, a str and a Fraction
    (one exact value, three keys: one kind in the ledger), sensitivities 1 and 2 (an ℓ2
    ball, cut to the values noised), denominators that do not divide each other (the
    common denominator grows mid-way), up to and past the budget's edge; a smaller
    release admitted after a refusal."""
    offers = [
        ("gaussian", {"sigma2": 3}),
        ("gaussian", {"sigma2": "3"}),
        ("laplace", {"scale": 7}),
        ("gaussian", {"sigma2": Fraction(3)}),
        ("gaussian", {"sigma2": "35.7"}),
        ("laplace", {"scale": "7.5", "sensitivity": 2}),
        ("gaussian", {"sigma2": 5, "sensitivity": 2}),
        ("gaussian", {"sigma2": "35.7"}),
        ("gaussian", {"sigma2": 3}),
        ("gaussian", {"sigma2": 5, "sensitivity": 2}),
        ("gaussian", {"sigma2": 3}),
        ("gaussian", {"sigma2": 1000}),
        ("laplace", {"scale": 7}),
        ("gaussian", {"sigma2": 1000}),
    ] * 3
    budget = Fraction(13, 10)
    outcomes, general = _same_offers({"rho": budget}, offers, sizes=[1, 3, 10])
    assert general < len(offers) - 10  # some admitted the known way
    total, plain = Fraction(0), []
    for offer in offers:
        fits = total + _rho_of(offer) <= budget
        total += _rho_of(offer) if fits else 0
        plain.append("ok" if fits else PrivacyBudgetError)
    assert outcomes == plain
    assert PrivacyBudgetError in outcomes and outcomes[-1] == "ok"  # the edge was reached


def test_a_pure_budget_admits_laplace_by_its_exact_sum_and_refuses_gaussians():
    offers = [
        ("laplace", {"scale": 3}),
        ("gaussian", {"sigma2": 100}),
        ("laplace", {"scale": "4.5", "sensitivity": 2}),
        ("laplace", {"scale": 3}),
        ("laplace", {"scale": 3}),
        ("laplace", {"scale": 3}),
        ("laplace", {"scale": 100}),
    ] * 2
    budget = Fraction(3, 2)
    outcomes, general = _same_offers({"epsilon": budget}, offers)
    assert general < len(offers)
    total, plain = Fraction(0), []
    for kind, kwargs in offers:
        eps = Fraction(kwargs.get("sensitivity", 1)) / Fraction(kwargs.get("scale", 1))
        fits = kind == "laplace" and total + eps <= budget
        total += eps if fits else 0
        plain.append("ok" if fits else PrivacyBudgetError)
    assert outcomes == plain
    assert outcomes[1] == PrivacyBudgetError


def test_an_approximate_budget_decides_as_the_general_way():
    """(ε, δ): Laplace releases alone by their pure ε; then Gaussian ones by the zCDP route
    (the known way reads only a ρ it saw certified) and past it by a composition."""
    offers = [("laplace", {"scale": 20})] * 3 + [
        ("gaussian", {"sigma2": 150}),
        ("gaussian", {"sigma2": "150"}),
        ("laplace", {"scale": 20}),
    ] * 8
    outcomes, general = _same_offers({"epsilon": 1, "delta": "1e-6"}, offers)
    assert outcomes[:12] == ["ok"] * 12 and outcomes[-3:] == [PrivacyBudgetError] * 3
    assert general <= len(offers) - 5  # some admitted the known way (zCDP, pure ε)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, 5), min_size=1, max_size=30),
    budget=st.fractions(Fraction(1, 100), 2),
    pure=st.booleans(),
)
def test_any_sequence_decides_as_the_general_way_and_the_plain_rule(picks, budget, pure):
    kinds = [
        ("laplace", {"scale": 4}),
        ("laplace", {"scale": "2.5", "sensitivity": 3}),
        ("laplace", {"scale": Fraction(11, 3)}),
        ("gaussian", {"sigma2": 9}),
        ("gaussian", {"sigma2": "1.7"}),
        ("gaussian", {"sigma2": Fraction(9), "sensitivity": 2}),
    ]
    offers = [kinds[i] for i in picks]
    outcomes, _ = _same_offers({"epsilon" if pure else "rho": budget}, offers, sizes=[1, 10])
    total, plain = Fraction(0), []
    for kind, kwargs in offers:
        if pure and kind == "gaussian":
            cost, fits = Fraction(0), False
        elif pure:
            cost = Fraction(kwargs.get("sensitivity", 1)) / Fraction(kwargs["scale"])
            fits = total + cost <= budget
        else:
            cost = _rho_of((kind, kwargs))
            fits = total + cost <= budget
        total += cost if fits else 0
        plain.append("ok" if fits else PrivacyBudgetError)
    assert outcomes == plain


def test_a_new_array_is_checked_as_the_general_way_checks_it():
    """A known call on another array: a float array, a 2-d one, an empty one, one larger
    than the lean way draws, an int32 one, a list: each as the general way takes it or
    refuses it, spending as it spends."""
    arrays = [
        np.arange(10, dtype=np.int64),
        np.zeros(10),
        np.arange(12, dtype=np.int64).reshape(3, 4),
        np.zeros(0, dtype=np.int64),
        np.zeros(dgauss._driver.LEAN_MAX + 1, dtype=np.int64),
        np.arange(10, dtype=np.int32),
        np.arange(10, dtype=np.int64)[::2],
        np.arange(10, dtype=np.int64).astype(">i8"),
        [1, 2, 3],
        np.arange(10, dtype=np.int64),
    ]
    fast, ref = dgauss.Accountant(rho=1), _general(dgauss.Accountant(rho=1))
    for values in arrays:
        for acc in (fast, ref):
            try:
                out = acc.add_gaussian_noise(values, sigma2=100)
                got = ("ok", np.asarray(out).dtype, np.shape(out))
            except (ValueError, TypeError) as exc:
                got = (type(exc), str(exc))
            if acc is fast:
                first = got
        assert first == got
        assert _state(fast) == _state(ref)
    assert len(fast._releases) == len(arrays) - 1  # only the floats refused


def test_an_overflow_after_the_draw_leaves_the_release_spent_either_way():
    top = np.full(1000, np.iinfo(np.int64).max, dtype=np.int64)
    fast, ref = dgauss.Accountant(rho=1), _general(dgauss.Accountant(rho=1))
    for acc in (fast, ref):
        acc.add_gaussian_noise(np.zeros(3, dtype=np.int64), sigma2=100)  # now known
        with pytest.raises(OverflowError):
            acc.add_gaussian_noise(top, sigma2=100)
    assert _state(fast) == _state(ref) and len(fast._releases) == 2


def test_bad_arguments_raise_the_same_on_a_known_call():
    """A known key never hides a check: a refused parameter, a bool, an unhashable one, a
    keyword off its default, each refused (or taken) as on a fresh accountant."""
    acc = dgauss.Accountant(rho=1)
    counts = np.arange(4, dtype=np.int64)
    acc.add_gaussian_noise(counts, sigma2=100)
    acc.add_laplace_noise(counts, scale=10)
    for kwargs in (
        {"sigma2": 0},
        {"sigma2": True},
        {"sigma2": [100]},
        {"sigma2": 100, "sensitivity": 0},
        {"sigma2": 100, "overflow": "wrap"},
        {"sigma2": 100, "accounting": "nope", "epsilon": 1},
        {"sigma2": 100, "granularity": "0"},
    ):
        fresh = dgauss.Accountant(rho=1)
        want = _call(fresh, ("gaussian", kwargs), counts)
        before = _state(acc)
        assert _call(acc, ("gaussian", kwargs), counts) == want
        assert want[0] != "ok"  # every one of them is refused
        assert _state(acc) == before
    for kwargs in ({"scale": -1}, {"scale": 10, "delta": "0.5"}, {"scale": 10, "sensitivity": [1]}):
        want = _call(dgauss.Accountant(rho=1), ("laplace", kwargs), counts)
        assert _call(acc, ("laplace", kwargs), counts) == want


def test_threads_spend_a_rho_budget_to_its_last_bit_and_no_further():
    """The known way decides and records in one step (the lock): 4 threads offering the
    same release admit exactly as many as fit, and the totals count each once."""
    acc = dgauss.Accountant(rho=Fraction(150, 200))  # exactly 150 releases of σ² = 100
    counts = np.arange(10, dtype=np.int64)
    acc.add_gaussian_noise(counts, sigma2=100)
    admitted, refused = [], []

    def offer() -> None:
        for _ in range(60):
            try:
                acc.add_gaussian_noise(counts, sigma2=100)
                admitted.append(1)
            except PrivacyBudgetError:
                refused.append(1)

    threads = [threading.Thread(target=offer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 149 and len(refused) == 240 - 149
    assert len(acc._releases) == 150 and acc._program.rho == Fraction(150, 200)
    assert sum(acc._program.counts.values()) == 150 == acc._program.gaussians


def test_copies_and_pickles_spend_on_their_own_after_known_calls():
    counts = np.arange(10, dtype=np.int64)
    acc = dgauss.Accountant(rho=Fraction(5, 200))
    for _ in range(3):
        acc.add_gaussian_noise(counts, sigma2=100)
    with pytest.warns(dgauss.BudgetCopyWarning):
        pickled = pickle.loads(pickle.dumps(acc))
    copies = [copy.copy(acc), copy.deepcopy(acc), pickled]
    for other in copies:
        assert other.to_json() == acc.to_json() and other._program.rho == Fraction(3, 200)
        other.add_gaussian_noise(counts, sigma2=100)
        other.add_gaussian_noise(counts, sigma2=100)
        with pytest.raises(PrivacyBudgetError):
            other.add_gaussian_noise(counts, sigma2=100)
    assert len(acc._releases) == 3  # none of the copies' releases counted here
    restored = dgauss.Accountant.from_json(acc.to_json())
    assert _state(restored)[:5] == _state(acc)[:5]


def test_the_exact_sums_are_those_of_fractions():
    """_Program's totals (numerators over a common denominator) read as the Fraction sums,
    through kinds whose denominators do not divide each other; a pickle keeps them."""
    releases = [
        Gaussian(3),
        Laplace(7),
        Gaussian("35.7", (1, 2)),
        Laplace("2.5", 3, k=4),
        Gaussian(5, L2Ball(2)),
        Gaussian(3),
        Laplace(Fraction(11, 3)),
    ]
    program = _accountant._Program()
    rho = pure = Fraction(0)
    for r in releases:
        program.add(r)
        rho += r.rho
        pure += r.epsilon if isinstance(r, Laplace) else 0
        assert program.rho == rho and program.pure == pure
    back = pickle.loads(pickle.dumps(program))
    assert (back.rho, back.pure, back.counts) == (rho, pure, program.counts)
    assert back.plus(Gaussian(3)).rho == rho + Gaussian(3).rho
    assert program.__getstate__()[1:3] == (rho, pure)  # the pickled form: Fractions


def test_a_release_s_kept_hash_is_never_pickled():
    """Releases keep their hash (looked up at every admission); a pickle leaves it out, as
    another process (another string-hash seed) computes it afresh."""
    r = Gaussian("35.7", (1, 2))
    d = {r: 1}
    assert "_hash" in r.__dict__
    back = pickle.loads(pickle.dumps(r))
    assert "_hash" not in back.__dict__ and back == r and d[back] == 1
    assert "_hash" not in copy.copy(r).__dict__
    assert hash(Laplace(3)) == hash(Laplace("3")) and Laplace(3) != Gaussian(3)
    ledger = json.loads(dgauss.Accountant(rho=1).to_json())
    assert ledger["releases"] == []
