"""The Accountant's preparation on a background thread (``Accountant._prepare_ahead``): while
the zCDP route still admits, it composes the program the releases are heading for and
certifies ahead, so that the admissions past the zCDP route need no composition of their own.

What must hold whatever the thread does or when it ends: every program admitted fits by the
plain rule (``compose`` of every release, computed here), a full budget is full by the plain
rule too, a failing preparation changes no decision, and copies never share a thread.
(Speed is measured in benchmarks/bench_accounting.py --only accountant, not here.)
"""

from __future__ import annotations

import math
import pickle
import sys
import threading
from fractions import Fraction

import pytest

import dgauss
from dgauss import _accountant
from dgauss.accounting import Gaussian, Laplace, cdp_rho, compose
from test_accountant_grouped import as_recorded, offer

BUDGET = {"epsilon": "1", "delta": "1e-6"}
KINDS = [Gaussian(1600), Laplace(60), Gaussian(2800)]


def fill(acc: dgauss.Accountant, composed: list) -> list:
    """Offer KINDS round robin until each is refused; what was admitted (as recorded)."""
    made, refused = [], set()
    i = 0
    while len(refused) < len(KINDS):
        kind = KINDS[i % len(KINDS)]
        i += 1
        if kind in refused:
            continue
        if offer(acc, kind):
            made.append(as_recorded(kind))
        else:
            refused.add(kind)
    return made


def counting(monkeypatch) -> list:
    """The sizes of the programs composed in the foreground (Accountant._composes)."""
    sizes: list = []
    real = _accountant.Accountant._composes

    def counted(self, program, look_ahead=False):
        sizes.append(sum(program.counts.values()))
        return real(self, program, look_ahead)

    monkeypatch.setattr(_accountant.Accountant, "_composes", counted)
    return sizes


@pytest.fixture
def small_preparation(monkeypatch):
    """Prepare from 30 releases on (the default waits for 100, slower to test)."""
    monkeypatch.setattr(_accountant, "_PREPARE_WORTH", 30)


def test_the_preparation_admits_past_the_zcdp_route_and_the_budget_ends_full(
    small_preparation, monkeypatch
):
    sizes = counting(monkeypatch)
    acc = dgauss.Accountant(**BUDGET)
    made = fill(acc, sizes)
    assert acc._prepared_at >= 30  # a preparation ran
    if acc._preparing is not None:  # one started by a late admission may still be at work
        acc._preparing.join(120)
        assert not acc._preparing.is_alive()  # it ends (no thread is left spinning)
    # what was admitted fits, and nothing more of any kind would (the plain rule, here)
    assert compose(*made).delta(1) <= 1e-6
    for kind in KINDS:
        assert compose(*made, as_recorded(kind)).delta(1) > 1e-6, kind
    # the releases past the zCDP route came in through the prepared certificate: the
    # foreground composed nothing before them
    zcdp_end = acc._zcdp_fits
    admitted_by_zcdp, rho = 0, Fraction(0)
    for release in made:
        rho += release.rho
        if rho <= zcdp_end:
            admitted_by_zcdp += 1
    assert admitted_by_zcdp < len(made)  # past the zCDP route
    assert not sizes or min(sizes) > admitted_by_zcdp + 1, (sizes, admitted_by_zcdp, len(made))

    # without the preparation, the first release past the zCDP route is composed for
    monkeypatch.setattr(_accountant, "_PREPARE_WORTH", 10**9)
    sizes.clear()
    plain = dgauss.Accountant(**BUDGET)
    made_plain = fill(plain, sizes)
    assert sizes and min(sizes) == admitted_by_zcdp + 1
    assert abs(len(made_plain) - len(made)) <= len(KINDS)  # both full, by valid bounds


def test_a_failing_preparation_changes_no_decision(small_preparation, monkeypatch):
    """The thread raises: the admissions decide as with no preparation at all."""

    real = _accountant.Accountant._composition_fits

    def broken(self, composition):
        if threading.current_thread() is not threading.main_thread():
            raise MemoryError("planted")
        return real(self, composition)

    monkeypatch.setattr(_accountant.Accountant, "_composition_fits", broken)
    acc = dgauss.Accountant(**BUDGET)
    made = fill(acc, [])
    monkeypatch.setattr(_accountant, "_PREPARE_WORTH", 10**9)
    plain = dgauss.Accountant(**BUDGET)
    assert fill(plain, []) == made
    assert compose(*made).delta(1) <= 1e-6


def test_a_false_certificate_from_the_thread_is_caught(small_preparation, monkeypatch):
    """Planted: the thread hands over a certificate of a program that does not fit.  The
    accountant trusts its certificates, so this must show in the checks above: the budget
    overspent by the plain rule."""
    real = _accountant.Accountant._prepare

    def lying(self, edge):
        real(self, edge)
        if self._prepared is not None:
            base, _ = self._prepared
            huge = edge.plus()
            for unit, n in edge.counts.items():
                huge.add(unit, 4 * n)
            self._prepared = (base, _accountant._Certificate(huge, 1e-7, -16.0))

    monkeypatch.setattr(_accountant.Accountant, "_prepare", lying)
    acc = dgauss.Accountant(**BUDGET)
    made = fill(acc, [])
    assert compose(*made).delta(1) > 1e-6  # the plain rule sees it


def test_copies_and_pickles_made_while_preparing_do_not_share_the_thread(small_preparation):
    acc = dgauss.Accountant(**BUDGET)
    sequence = [KINDS[i % 3] for i in range(60)]
    for kind in sequence:
        assert offer(acc, kind)
        if acc._preparing is not None:
            break
    assert acc._preparing is not None
    with pytest.warns(dgauss.BudgetCopyWarning):  # the budget has some left
        pickled = pickle.loads(pickle.dumps(acc))
    twins = [acc.__copy__(), pickled]
    for twin in twins:
        assert twin._preparing is None and twin._prepared is None
        assert twin.spent.releases == acc.spent.releases
    acc._preparing.join()
    # each goes on alone, and all end within the budget
    for who in [acc, *twins]:
        fill(who, [])
        assert compose(*who.spent.releases).delta(1) <= 1e-6


def test_a_restored_ledger_spent_once_starts_no_thread(small_preparation, monkeypatch):
    """A command-line run restores the ledger and admits one release: no thread for that."""
    acc = dgauss.Accountant(**BUDGET)
    made = fill(acc, [])
    assert acc._prepared_at > 0  # this one prepared
    data = dgauss.Accountant(**BUDGET)
    for release in made[: len(made) // 2]:
        assert offer(data, release)
    restored = dgauss.Accountant.from_json(data.to_json())
    for kind in KINDS:
        assert offer(restored, kind)
        assert restored._preparing is None and restored._prepared_at == 0


@pytest.mark.parametrize(
    "epsilon, delta",
    [
        ("1", "1e-12"),
        pytest.param("20", "1e-300", marks=pytest.mark.slow),  # 75 s
        pytest.param("60", "1e-100", marks=pytest.mark.slow),
    ],
)
@pytest.mark.long
def test_prepared_admissions_of_l2_balls_fit_by_the_plain_rule(
    small_preparation, monkeypatch, epsilon, delta
):
    """Hostile: ℓ2-ball sensitivities (the worst vectors' programs: no PLD to merge into),
    a Laplace of sensitivity 3, large ε and tiny δ.  Whatever the preparation hands over,
    what is admitted fits by the plain rule (compose of every release, in logs: δ may be
    below the smallest float) and one more release of any kind would not."""
    monkeypatch.setattr(_accountant, "_PREPARE_WORTH", 20)
    rho = cdp_rho(epsilon, delta) / 24  # about 24 releases fill the zCDP route
    kinds = [
        Gaussian(f"{4 / (2 * rho):.4g}", 2),  # ‖v‖₂ ≤ 2: the ball's worst vectors
        Laplace(f"{3 / math.sqrt(2 * rho):.4g}", 3),
        Gaussian(f"{1 / (2 * rho):.4g}"),
    ]
    monkeypatch.setattr(sys.modules[__name__], "KINDS", kinds)
    acc = dgauss.Accountant(epsilon=epsilon, delta=delta)
    made = fill(acc, [])
    assert acc._prepared_at >= 20  # a preparation ran
    log_budget = math.log(float(delta))
    assert compose(*made).delta(epsilon, log=True) <= log_budget
    for kind in kinds:
        assert compose(*made, as_recorded(kind)).delta(epsilon, log=True) > log_budget, kind


def catch_ups(monkeypatch) -> list:
    """Per catch-up (Accountant._advance_base bringing the kept distribution up to the
    releases made): how many releases it merged, from the largest base it could use."""
    gaps: list = []
    real = _accountant.Accountant._advance_base

    def counted(self):
        program = self._program
        bases = [
            b[0]
            for b in (self._base, *self._prepared_bases)
            if b is not None and b[1] is not None and b[0].within(program)
        ]
        if bases and all(b.counts != program.counts for b in bases):
            largest = max(sum(b.counts.values()) for b in bases)
            gaps.append(sum(program.counts.values()) - largest)
        return real(self)

    monkeypatch.setattr(_accountant.Accountant, "_advance_base", counted)
    return gaps


def test_the_first_offer_past_the_prepared_certificate_merges_from_short_of_it(
    small_preparation, monkeypatch
):
    """The preparation hands over, besides its composition, one of the program short of its
    certificate's edge (_accountant._short_of): the offer that leaves the certificate merges
    the releases since that one, not every release made inside the certificate.  Without
    it (_SHORT_OF_EDGE = 1: nothing short), that offer merges several times as many; both
    runs admit by valid bounds and end full by the plain rule."""
    runs = {}
    for short in (_accountant._SHORT_OF_EDGE, Fraction(1)):
        monkeypatch.setattr(_accountant, "_SHORT_OF_EDGE", short)
        gaps = catch_ups(monkeypatch)
        acc = dgauss.Accountant(**BUDGET)
        made = fill(acc, [])
        assert compose(*made).delta(1) <= 1e-6
        for kind in KINDS:
            assert compose(*made, as_recorded(kind)).delta(1) > 1e-6, kind
        if short < 1:
            shorts = [
                b for b in acc._prepared_bases if b[0].counts != acc._prepared_bases[0][0].counts
            ]
            assert shorts  # the preparation handed a short program over
        runs[short] = gaps
        monkeypatch.undo()
        monkeypatch.setattr(_accountant, "_PREPARE_WORTH", 30)
    with_short, without = runs[_accountant._SHORT_OF_EDGE], runs[Fraction(1)]
    assert with_short and without, runs
    assert max(with_short) * 4 <= max(without), runs
