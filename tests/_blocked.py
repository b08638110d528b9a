"""Blocked inversion (docs/contract.md, item 9), shared by test_gaussian_blocked.py and
test_laplace_blocked.py.

Both draw |X| the same way from their own thresholds: step 1, item 9's rule on R against
theta_1 > theta_2 > ..., gives s; s = 0: |X| = 0; s = 2b + 1 (block b's uniform part):
|X| = 1 + Lb + U, U the next k raw bits; s = 2b + 2 (block b's residual): U the rule on a fresh
R' against the block's rho_u; then one sign bit when |X| > 0.  (The Gaussian also has
thresholds past its NB blocks, each giving one |X| in step 1 alone.)  Each file keeps its own
independent model of theta_s and rho_u (the Laplace's, the same rho_u in every block; the
Gaussian's, per block); both derive from :class:`BlockedModel`, which holds the draw above.

What does not depend on the distribution lives here, next to the inversion helpers of
_inversion_tapes: the model's draw (:class:`BlockedModel`), tapes that cross or tie with a
threshold (:func:`cross`, :func:`near`, :func:`theta_r`), the core and oracle on them
(:func:`tape_runner`, :func:`spy_past_64`) and the tape checks written the same way for both
(each branch, ties past bit 64 in both steps, R or R' zero for 64 bits, running out in each
step); the conditional masses inside a window of R (:func:`window_masses`); the chi-square
statistic on the magnitude; the bits read.  A parameter (sigma2 or the scale) is named by the
distribution's ``Kind`` where the core is called.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from gmpy2 import mpq

import _inversion_tapes as tapes
from _inversion_tapes import RunTape, TapeModel, bits, tie
from _stats import chi2_gof
from dgauss import _core, _inversion
from dgauss.testing import Exhausted, Tape

#: Bits of the models' exact floors floor(2**J theta_s), floor(2**J rho_u).
J = 256
ONES = 2**64 - 1


def q(pair) -> tuple[mpq, mpq]:
    """(lo, hi) mpfr bounds as rationals."""
    return mpq(pair[0]), mpq(pair[1])


def mid(pair) -> float:
    """The midpoint of (lo, hi) bounds, as a float."""
    lo, hi = q(pair)
    return float((lo + hi) / 2)


def nd(param) -> tuple[int, int]:
    """A parameter's numerator and denominator (as the core takes them)."""
    param = Fraction(param)
    return param.numerator, param.denominator


# --------------------------------------------------------------------------------------------
# The draw, from a model's thresholds
# --------------------------------------------------------------------------------------------


class BlockedModel(TapeModel):
    """The blocked draw of |X| from a model's theta_s and rho_u.  A model gives

    * ``L`` = 2**k and ``k``;
    * ``theta(s)``: (lo, hi) bounds on theta_s (theta_0 = 1), ``theta_floor(s)`` =
      floor(2**J theta_s), ``theta_shares(a, j)``: whether some theta_s has first j digits a,
      ``theta_count(a, j)``: #{s: floor(2**j theta_s) > a};
    * ``rho_rule(bits, b)``: step 2's rule on R' = 0.bits... for block b, (U, bits read) or
      None; ``rho_bounds(b, u)``: (lo, hi) bounds on block b's rho_u (1 for u <= 0, 0 past
      the largest U the residual gives);
    * ``past_blocks(s)``: |X| for an s past the blocks, else None (the default: no threshold
      lies past the blocks, as for the Laplace).

    For the tape helpers of _inversion_tapes, ``rule`` is the whole blocked draw of |X| (steps
    1 and 2) and ``digits(s, i)`` / ``bit(s, i)`` are theta_s's."""

    L: int
    k: int

    def theta(self, s: int):
        raise NotImplementedError

    def theta_floor(self, s: int) -> int:
        raise NotImplementedError

    def theta_shares(self, a: int, j: int) -> bool:
        raise NotImplementedError

    def theta_count(self, a: int, j: int) -> int:
        raise NotImplementedError

    def rho_rule(self, bits: str, b: int) -> tuple[int, int] | None:
        raise NotImplementedError

    def rho_bounds(self, b: int, u: int):
        raise NotImplementedError

    def past_blocks(self, s: int) -> int | None:
        return None

    def theta_word(self, s: int, p: int = 64) -> int:
        """floor(2**p theta_s), p <= J."""
        return self.theta_floor(s) >> (J - p)

    def theta_last(self, p: int = 64) -> int:
        """K: the last s with floor(2**p theta_s) > 0."""
        return self.theta_count(0, p)

    def theta_at_least(self, v: int) -> int:
        """#{s: floor(2**J theta_s) >= v} (v >= 1): the last s with theta_s >= v 2**-J."""
        return self.theta_count(v - 1, J)

    def digits(self, s: int, i: int) -> str:
        """theta_s's first i binary digits."""
        return format(self.theta_floor(s) >> (J - i), f"0{i}b")

    def bit(self, s: int, i: int) -> str:
        return str((self.theta_floor(s) >> (J - i)) & 1)

    def theta_rule(self, bits: str):
        return tapes.inversion_rule(bits, self.theta_shares, self.theta_count, J)

    def blocked(self, bits: str) -> tuple[int, int, int, int] | None:
        """(|X|, bits read before the sign, s, bits read by step 1) for the bits, or None when
        they run out first."""
        found = self.theta_rule(bits)
        if found is None:
            return None
        s, j1 = found
        if s == 0:
            return 0, j1, s, j1
        tail = self.past_blocks(s)
        if tail is not None:
            return tail, j1, s, j1
        b = (s - 1) // 2
        if s % 2:
            if len(bits) < j1 + self.k:
                return None
            u = int(bits[j1 : j1 + self.k], 2)
            return 1 + self.L * b + u, j1 + self.k, s, j1
        found = self.rho_rule(bits[j1:], b)
        if found is None:
            return None
        u, j2 = found
        return 1 + self.L * b + u, j1 + j2, s, j1

    def rule(self, bits: str) -> tuple[int, int] | None:
        found = self.blocked(bits)
        return None if found is None else found[:2]

    def value_masses(self, s: int) -> dict[int, tuple[mpq, mpq]]:
        """Bounds on P[|X| = y | step 1 gives s] for every y it can give: 1 for |X| = 0 (s =
        0) or past the blocks; 1/L for each 1 + Lb + u of a uniform part (s = 2b + 1);
        rho_{b,u} - rho_{b,u+1} for each of a residual's (s = 2b + 2)."""
        if s == 0:
            return {0: (mpq(1), mpq(1))}
        tail = self.past_blocks(s)
        if tail is not None:
            return {tail: (mpq(1), mpq(1))}
        b = (s - 1) // 2
        base = 1 + self.L * b
        if s % 2:
            return {base + u: (mpq(1, self.L), mpq(1, self.L)) for u in range(self.L)}
        out = {}
        for u in range(self.L):
            (r0_lo, r0_hi), (r1_lo, r1_hi) = q(self.rho_bounds(b, u)), q(self.rho_bounds(b, u + 1))
            out[base + u] = (r0_lo - r1_hi, r0_hi - r1_lo)
        return out


# --------------------------------------------------------------------------------------------
# Tapes
# --------------------------------------------------------------------------------------------


def cross(digits: str, below: bool, start: int) -> str:
    """R's first bits against a threshold with these ``digits``: its digits up to the first
    digit at or after ``start`` that is 1 (``below``: R < the threshold there) or 0 (R above
    it), that digit flipped; R then shares all its digits but the last with the threshold."""
    i = digits.index("1" if below else "0", start - 1) + 1
    return digits[: i - 1] + ("0" if below else "1")


def near(floor: int, below: bool, extra: int = 24) -> str:
    """cross for the threshold whose J-bit floor this is, R leaving it at least ``extra``
    digits past its leading 1: within 2**-extra of it relatively, closer than the next
    threshold (neighbouring theta, and rho, are at least about 2**-14 apart relatively for
    the Gaussian; (L / t)**2 >= 2**-12 for the Laplace)."""
    lead = J - floor.bit_length() + 1
    return cross(format(floor, f"0{J}b"), below, lead + extra)


def theta_r(m: BlockedModel, s: int, below: bool) -> str:
    """R's first bits just below (or above) theta_s: near its floor."""
    return near(m.theta_floor(s), below)


def around(m: BlockedModel, s: int) -> str:
    """theta_s's first h digits, 2**-h about its gap to theta_{s+1}: a window of R holding
    theta_s and a neighbour or two."""
    gap = m.theta_floor(s) - m.theta_floor(s + 1)
    return m.digits(s, J - gap.bit_length() + 1)


def tape_runner(kind, model: Callable[..., BlockedModel]):
    """run_tape(param, bits, count=1, mu=0) for one distribution (``model(param)`` its model):
    the core (into object and int64 arrays, and on the words of fixed_point=False) and the
    oracle on one tape, each = the model's prediction (values, bits used, tape words started;
    or Exhausted with the tape past every word); returns the prediction
    (_inversion_tapes.run_tape)."""

    def run_tape(param, bits_: str, count: int = 1, mu: int = 0):
        variants = [{"dtype": np.int64}, {"fixed_point": False}]
        return tapes.run_tape(kind, model(param), Fraction(param), bits_, count, mu, variants)

    return run_tape


def spy_past_64(monkeypatch, name: str) -> list[tuple[int, int, int, int]]:
    """The calls of dgauss._inversion.<name> (the blocked magnitude: laplace_blocked_magnitude
    or gaussian_blocked_magnitude), as (stage, a, j, base): the core's to go on past R's (stage
    1) or R''s (stage 2) 64th bit, with a = those 64 bits, j = 64 (the core binds it when a
    call starts, so this sees every one).  The oracle has blocked inversion of its own
    (dgauss._reference_inversion) and never calls it."""
    calls: list[tuple[int, int, int, int]] = []
    real = getattr(_inversion, name)
    signature = inspect.signature(real)  # (bit, sigma2 or scale, a=0, j=0, stage=1, base=0)

    def spy(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        given = call.arguments
        calls.append((given["stage"], given["a"], given["j"], given["base"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(_inversion, name, spy)
    return calls


def each_branch(run_tape: RunTape, m: BlockedModel, gen, blocks, residual_cases) -> None:
    """R above theta_1: |X| = 0, no sign bit.  R just below theta_{2b+1}, b in ``blocks``: the
    uniform branch, U = the next k bits as given (0, L - 1, random), then the sign.  R just
    below theta_{2b+2}: the residual branch, R' = r2 for each (U, r2) of
    ``residual_cases(b)``, then the sign.  Each run's value and bits used are the model's, and
    the model takes the intended path."""
    for start in (9, 20, 40, 60):
        r = cross(m.digits(1, J), False, start)
        values, used, _ = run_tape(r + bits(gen, 30), mu=-5)
        assert values == [-5] and used == len(r) and m.blocked(r)[2] == 0
    for b in blocks:
        r = theta_r(m, 2 * b + 1, True)
        for u in (0, m.L - 1, int(gen.integers(m.L))):
            for sign in "01":
                tape = r + format(u, f"0{m.k}b") + sign
                y, j, s, _ = m.blocked(tape + bits(gen, 10))
                assert (s, y, j) == (2 * b + 1, 1 + m.L * b + u, len(tape) - 1)
                values, used, _ = run_tape(tape + bits(gen, 10), mu=7)
                assert values == [7 + (-y if sign == "1" else y)] and used == len(tape)
    for b in blocks:
        r = theta_r(m, 2 * b + 2, True)
        for u, r2 in residual_cases(b):
            tape = r + r2 + "1"
            y, j, s, j1 = m.blocked(tape + bits(gen, 10))
            assert (s, j1, j) == (2 * b + 2, len(r), len(tape) - 1)
            assert y == 1 + m.L * b + u
            values, used, _ = run_tape(tape + bits(gen, 10))
            assert values == [-y] and used == len(tape)


def ties_in_step_1(run_tape: RunTape, m: BlockedModel, thr, picks, gen, past_64) -> list[int]:
    """R's first 64 bits = the core's word thr[s] (= theta_s's first 64 digits) for each s in
    ``picks``, R leaving theta_s at bit i > 64 on either side (i = 65, 66, 100, 129, 180), then
    more bits: the core goes on past bit 64 (the blocked magnitude, stage 1, from those 64
    bits; the oracle from its first bit) and agrees with the model (value and bits used);
    where no other word ties, step 1 decides at bit i, on the side theta_s's digit i says, and
    both sides are seen.  Returns step 1's s for each tape."""
    sides, found = set(), []
    for s in sorted(picks):
        for i in (65, 66, 100, 129, 180):
            past_64.clear()
            r = tie(m, s, i)
            assert int(r[:64], 2) == thr[s]
            tape = r + bits(gen, 90)
            _, _, s_model, j1 = m.blocked(tape)
            _, used, _ = run_tape(tape)
            assert j1 >= i and used >= i
            assert set(past_64) == {(1, thr[s], 64, 0)}, past_64
            if thr[s - 1] != thr[s] != thr[s + 1]:  # no other word ties
                assert j1 == i and s_model == (s - 1 if m.bit(s, i) == "0" else s)
                sides.add(s_model - s)
            found.append(s_model)
    assert sides == {-1, 0}
    return found


def ties_in_the_residual_step(
    run_tape: RunTape, m: BlockedModel, gen, past_64, blocks, us, digits, word
) -> None:
    """s even (R just below theta_{2b+2}, b in ``blocks``), then R''s first 64 bits = the
    core's word ``word(b, u)`` for block b's rho_u (= its first 64 digits, ``digits(b, u)``
    its J digits), u in ``us``, R' leaving rho_u at bit i > 64 (65, 66, 100, 129, 200; a 1 or
    a 0 flipped): the core goes on past R''s 64th bit (stage 2, base 1 + Lb) and agrees with
    the model (value and bits used); both sides of rho_u are seen."""
    seen = set()
    for b in blocks:
        r = theta_r(m, 2 * b + 2, True)
        for u in us:
            for i in (65, 66, 100, 129, 200):
                past_64.clear()
                r2 = cross(digits(b, u), i % 2 == 0, i)  # (flip a 1 or a 0 past 64)
                assert len(r2) >= i and int(r2[:64], 2) == word(b, u)
                tape = r + r2 + bits(gen, 70)
                y, j, s, j1 = m.blocked(tape)
                assert s == 2 * b + 2 and j1 == len(r) and j - j1 == len(r2)
                values, used, _ = run_tape(tape)
                assert used == j + 1 and abs(values[0]) == y
                want = {(2, word(b, u), 64, 1 + m.L * b)}
                assert set(past_64) == want, past_64
                seen.add(y - (1 + m.L * b + u))
    assert seen == {-1, 0}


def r_zero_for_64_bits(run_tape: RunTape, m: BlockedModel, gen, past_64) -> list[tuple]:
    """R < 2**-64 (64 + lead zeros, lead = 0, 1, 10, 63, 100, then a 1): s beyond every word
    (|X| far in the tail, from thresholds past the table), decided past R's bit 64 + lead, the
    core going on at stage 1 from a = 0; value and bits used as the model says.  Returns
    (s, |X|) for each."""
    last = m.theta_last()
    found = []
    for lead in (0, 1, 10, 63, 100):
        past_64.clear()
        tape = "0" * (64 + lead) + "1" + bits(gen, 80)
        y, j, s, j1 = m.blocked(tape)
        assert s > last and j1 >= 65 + lead
        values, used, _ = run_tape(tape)
        assert abs(values[0]) == y and used == j + 1
        assert set(past_64) == {(1, 0, 64, 0)}
        found.append((s, y))
    return found


def r_prime_zero_for_64_bits(run_tape: RunTape, m: BlockedModel, gen, past_64, b) -> set:
    """s = 2b + 2 (R just below theta_{2b+2}), then R' < 2**-64 (64 + lead zeros, lead = 0,
    5, 64, then a 1) and the sign 0: U decided at R''s first 1 (every rho_u of the block is
    above 2**-64), the core going on at stage 2 from a = 0; value and bits used as the model
    says.  Returns the |X| seen (the caller says which U it must be)."""
    r = theta_r(m, 2 * b + 2, True)
    found = set()
    for lead in (0, 5, 64):
        past_64.clear()
        tape = r + "0" * (64 + lead) + "1" + "0"
        y, j, s, _ = m.blocked(tape)
        assert (s, j) == (2 * b + 2, len(tape) - 1)
        values, used, _ = run_tape(tape + bits(gen, 5))
        assert values == [y] and used == len(tape)
        assert set(past_64) == {(2, 0, 64, 1 + m.L * b)}
        found.add(y)
    return found


def short_tapes(m: BlockedModel, gen, r2: str, tie_rho: str) -> dict[str, tuple[str, int, str]]:
    """name -> (a tape with bits to spare, where to cut it, the step the cut falls in: "1",
    "uniform", "residual" or "sign"), in step 1 and in block 1's branches (s = 3, its uniform
    part; s = 4, its residual with R' = ``r2`` just below one of its rho, or ``tie_rho`` tying
    with one to bit 100)."""
    odd = theta_r(m, 3, True)  # s = 3: the uniform branch of block 1
    even = theta_r(m, 4, True)  # s = 4: the residual branch of block 1
    tie_theta = tie(m, 2, 100) + bits(gen, 80)
    u = bits(gen, m.k)
    return {
        "step 1, first word": (odd + u + "1", 15, "1"),
        "step 1, bit 64": (tie_theta, 64, "1"),
        "step 1, past bit 64": (tie_theta, 80, "1"),
        "step 1, R zero": ("0" * 90 + "1" + bits(gen, 40), 90, "1"),
        "uniform bits": (odd + u + "1", len(odd) + m.k - 1, "uniform"),
        "uniform branch's sign": (odd + u + "1", len(odd) + m.k, "sign"),
        "residual, first word": (even + r2 + "1", len(even) + 10, "residual"),
        "residual, past bit 64": (even + tie_rho + "0", len(even) + 90, "residual"),
        "residual, R' zero": (even + "0" * 70 + "11", len(even) + 70, "residual"),
        "residual branch's sign": (even + r2 + "0", len(even + r2), "sign"),
    }


def running_out_in_each_step(run_tape: RunTape, m: BlockedModel, gen, cases, sample) -> None:
    """For each of ``cases`` (as short_tapes gives them), the step the cut falls in is the
    model's (step 1 before its bits read, the branch's before its own, the sign where the
    sample's bits end); the tape cut there runs out: core and oracle raise Exhausted with the
    tape past every word, and so does ``sample(count, rng=Tape(...))``, as a first sample and
    as a second one; the tape with exactly the bits the model says the sample reads is
    decided, one bit fewer is not."""
    first = tapes.first_sample(m, gen)
    for name, (tape, cut, step) in cases.items():
        y, j, s, j1 = m.blocked(tape)
        if cut < j1:
            where = "1"
        elif cut < j:
            where = "uniform" if s % 2 else "residual"
        else:
            where = "sign" if cut == j and y else None
        assert where == step, (name, where)
        whole = j + (1 if y else 0)
        for head, count in (("", 1), (first, 2)):
            assert run_tape(head + tape[:cut], count) == "exhausted", name
            with pytest.raises(Exhausted):
                sample(count, rng=Tape(head + tape[:cut]))
            assert run_tape(head + tape[: whole - 1], count) == "exhausted", name
            values, used, _ = run_tape(head + tape[:whole], count)
            assert used == len(head) + whole and abs(values[-1]) == y, name


# --------------------------------------------------------------------------------------------
# Windows of R
# --------------------------------------------------------------------------------------------


def window_masses(m: BlockedModel, head: str) -> dict[int, tuple[mpq, mpq]]:
    """For R uniform in the window W = [w, w + 1) 2**-h of R's first h bits ``head``: rigorous
    bounds on P[|X| = y | R in W] for every y it can give: with I_s = [theta_{s+1}, theta_s) n W
    (theta_0 = 1), each y that s gives has |I_s| 2**h P[|X| = y | s] (m.value_masses: y = 0
    has |I_0| 2**h; y = 1 + Lb + u has |I_{2b+1}| 2**h / L + |I_{2b+2}| 2**h (rho_{b,u} -
    rho_{b,u+1}); y past the blocks, |I_s| 2**h)."""
    h = len(head)
    w = int(head, 2) if h else 0
    assert w, "a window at 0 holds infinitely many thresholds"
    bottom, top = mpq(w, 1 << h), mpq(w + 1, 1 << h)
    first = m.theta_at_least((w + 1) << (J - h))  # the last s with theta_s >= top, or 0
    last = m.theta_at_least(w << (J - h))  # the last s with theta_s >= bottom
    out: dict[int, tuple[mpq, mpq]] = {}
    for s in range(first, last + 1):
        (a_lo, a_hi), (b_lo, b_hi) = q(m.theta(s)), q(m.theta(s + 1))
        lo = max(mpq(0), min(a_lo, top) - max(b_hi, bottom)) * (1 << h)
        hi = max(mpq(0), min(a_hi, top) - max(b_lo, bottom)) * (1 << h)
        for y, (share_lo, share_hi) in m.value_masses(s).items():
            got = out.get(y, (mpq(0), mpq(0)))
            out[y] = (got[0] + lo * share_lo, got[1] + hi * share_hi)
    return out


def window_violations(m: BlockedModel, e, head: str) -> list:
    """Values whose enumerated (conditional) bounds miss the model's window_masses, or that the
    window cannot give (_inversion_tapes.window_violations)."""
    return tapes.window_violations(window_masses(m, head), e)


# --------------------------------------------------------------------------------------------
# Large samples
# --------------------------------------------------------------------------------------------


def magnitude_keys(x: np.ndarray, width: int) -> np.ndarray:
    """2 (|x| // width) + (x < 0)."""
    return 2 * (np.abs(x) // width) + (x < 0)


def magnitude_pmf(m, width: int, bins: int) -> dict[int, float]:
    """P[key] for key = 2 (|X| // width) + (X < 0), |X| < bins * width, from the model's T_x
    (``m.threshold(x)``: bounds, T_0 = 1)."""
    t = lambda x: mid(m.threshold(x))  # noqa: E731
    zero = 1 - t(1)
    pmf = {}
    for b in range(bins):
        both = t(max(1, b * width)) - t((b + 1) * width)
        pmf[2 * b] = both / 2 + (zero if b == 0 else 0)
        pmf[2 * b + 1] = both / 2
    return pmf


def failed_fits(stats, alpha: float) -> list[tuple]:
    """The chi-square statistics of ``stats`` (name, keys, pmf, the least dof it must have)
    that fail at ``alpha``: (name, stat, dof, p)."""
    failed = []
    for name, keys, pmf, least in stats:
        stat, dof, p = chi2_gof(keys, pmf)
        assert dof >= least, (name, dof)
        if p <= alpha:
            failed.append((name, round(stat, 1), dof, p))
    return failed


# --------------------------------------------------------------------------------------------
# Bits read
# --------------------------------------------------------------------------------------------


def expected_rule_bits(floors: list[int], after: int) -> float:
    """E[bits read] by item 9's rule on thresholds with these J-bit floors (decreasing; the
    next threshold's floor is ``after``, and those past it are below 2**-depth, depth = J -
    after.bit_length() or so): E = sum over j >= 0 of P[R's first j bits shared] =
    sum_j 2**-j (1 + #distinct nonzero floor(2**j theta)), the 1 for a = 0.  A floor F_s
    adds a new nonzero value from the first j at which it is nonzero and differs from the
    next floor F_{s+1} (equal values are consecutive), e_s = max(lead(F_s), first differing
    digit): sum_j 2**-j [j >= e_s] = 2**(1 - e_s).  (Dropped: the thresholds past ``after``,
    and j > J; together below 2**-100 or so.)"""
    total = 2.0  # j = 0, and a = 0 at every j >= 1
    for f, g in zip(floors, [*floors[1:], after], strict=True):
        lead = J - f.bit_length() + 1
        differ = J - (f ^ g).bit_length() + 1
        total += 2.0 ** (1 - max(lead, differ))
    return total


def bits_per_sample(kind, param, want: float, h: float) -> None:
    """The core's count of bits read (fill's return, = the oracle's by the same-bits tests),
    200 calls of 1000 samples from PCG64: the mean is ``want``, the model's exact expectation
    (z < 6 on the calls' spread), at least H(X) = ``h`` (no exact sampler reads less; 0.05 of
    slack) and at most H(X) + 3; and H(X) < want < H(X) + 3."""
    src = np.random.PCG64(41)
    per_call = []
    out = np.empty(1000, dtype=np.int64)
    for _ in range(200):
        per_call.append(_core.fill(kind, *nd(param), 0, src, out, method="inversion") / 1000)
    mean = float(np.mean(per_call))
    se = float(np.std(per_call, ddof=1)) / math.sqrt(len(per_call))
    print(f"{kind.name} {param}: {mean:.4f} bits (model {want:.4f}, se {se:.4f}), H = {h:.4f}")
    assert abs(mean - want) < 6 * se
    assert h - 0.05 < mean < h + 3
    assert h < want < h + 3
