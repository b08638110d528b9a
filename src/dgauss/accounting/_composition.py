"""The privacy of a whole release program: composition of discrete Gaussian and Laplace releases.

A program is a list of releases, each :class:`Gaussian` (N_Z(0, σ²) noise) or :class:`Laplace`
(Lap_Z(t) noise) on an integer query whose values on neighbouring inputs differ by the
release's sensitivity (an int Δ, or a difference vector μ), answered ``k`` times.
:func:`compose` returns a :class:`Composition` whose δ(ε) is the smallest of every valid route:

* **Theorem 15** (exact) when every release is Gaussian with one σ²;
* **Eq. 49** (exact for Δ = 1; Kairouz–Oh–Viswanath's optimal bound otherwise) when every
  release is Laplace with one scale and one scalar sensitivity;
* **pure DP**: δ = 0 once ε ≥ Σ k‖μ‖₁/t, when every release is Laplace;
* **zCDP**: Corollary 13 at ρ = Σ ρ_i (a pure ε-DP Laplace release counts as ε²/2);
* **basic composition**: every Laplace release at its pure ε, the Gaussians' own exact δ
  (or their zCDP) at the rest of ε;
* **PLD**: the privacy-loss distribution of the product mechanism, computed with rigorous
  one-sided rounding (below), for any mix: atom by atom for small programs (exact), on a
  grid otherwise.

The PLD route (derivation in ``docs/accounting.md``, *Composing a program*):

1. Each coordinate's privacy loss L = ln P(o)/Q(o) under P is a discrete distribution
   (Gaussian: L = (m² − 2my)/(2σ²), y ~ N_Z(0, σ²); Laplace: Δ + 1 atoms).  Each atom is
   split between the two grid points around it (spacing h) so that both its P-mass and its
   Q-mass (P-mass·e^{−ℓ}) are kept: "connecting the dots".  The hockey-stick curve of the
   result is the chord of the true, convex curve (in e^ε), so the gridded pair dominates the
   true one in Blackwell's order, and so does the composition of gridded pairs (apply the
   garbling coordinate by coordinate).  Its δ is never below the truth.
2. To compute a δ far below 1e−16 without losing it to floating-point error, every mass is
   tilted by e^{αℓ} (α near the saddle point of ε): convolution commutes with the tilt, so
   the composed tilted masses are convolved once by FFT and untilted at the end.
3. Mass far out in the tilted tails is dropped and accounted for by a Chernoff bound:
   (1 − e^{ε−x})₊ ≤ c_α e^{α(x−ε)} with c_α = α^α/(1+α)^{1+α}, so a dropped part adds at most
   c_α e^{−αε}·(its tilted mass)·Π_j M̄_j(α), M̄_j ≥ E[e^{αL̃_j}] (measured on the gridded
   leaf).  An end is dropped when its measured mass is negligible, or when Hoeffding's or
   Bennett's bound over the leaves (their supports, variances) says it is (the FFT's error
   floor hides the first in long compositions).
4. Each convolution's floating-point error is bounded entrywise (FFT error analysis,
   generously inflated) and carried; every entry is used as (value + bound).

The grid spacing h is chosen from the error of connecting the dots (about n·h²·λ(λ+1)/4
relative, λ the slope of ln δ, n the coordinates) to aim at 0.05%: a relative 1e−3 of
the truth where the grid fits the work budget (the tests check it against exact
computations), looser but still an upper bound where it does not.  That estimate assumes a
smooth loss: near a pure ε or on a heavy atom at a tiny δ the error is of first order in h,
and what is proved is δ_PLD(ε) ≤ δ(ε − n·h) (each gridded loss is within h of its atom).

One answer per question: the grid that answers at ε is a function of ε only (its bucket on a
fixed ladder of tilts, :class:`._grids._Ladder`), and bounds are carried across buckets' edges
so that δ never rises with ε (:meth:`Composition._pld_log_delta`).

The composition's rooms: the releases (:mod:`._releases`) and a program's coordinates
(:mod:`._programs`); the leaves (:mod:`._leaves`), their composition (:mod:`._convolution`)
and the tail bounds that cut it (:mod:`._laws`); the grid for each ε (:mod:`._grids`); the
readouts (:mod:`._readouts`, and the exact atoms, :mod:`._enumerated`); the settings they
share (:mod:`._pld_settings`); the basic-composition route (:mod:`._basic_composition`).
This module: :class:`Composition`, which reads every route, and :func:`compose`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from gmpy2 import mpfr

from dgauss.accounting import _closed_forms as cf
from dgauss.accounting._basic_composition import basic_epsilon, basic_log_delta
from dgauss.accounting._enumerated import _Enumerated
from dgauss.accounting._grids import _Ladder, _power_of_two
from dgauss.accounting._neighbours import Contributions, NeighbourSet
from dgauss.accounting._pld_settings import _PLD_MAX_EPS, PLD_MAX_ATOMS, PLD_MAX_SIGMA2
from dgauss.accounting._programs import _Coordinate, _coordinates, _vector_of, _worst_programs
from dgauss.accounting._readouts import _PLD, _Readout
from dgauss.accounting._releases import Gaussian, Laplace, Release

__all__ = ["Composition", "compose"]


#: Most earlier grids asked for the bound carried into a bucket (see _pld_log_delta).
_CARRY_MAX = 8


class Composition:
    """The composed privacy of a release program; see :func:`compose`."""

    def __init__(self, releases: Sequence[Release]) -> None:
        self.releases: tuple[Release, ...] = tuple(releases)
        #: with an ℓ2-ball release: the programs of its worst-case vectors (δ is their largest),
        #: or None when there are too many to list and the zCDP route answers alone
        self._cases: list[Composition] | None = None
        self._zcdp_only = False
        #: (σ², ball, k in all) when the program is one ℓ2-ball release (every release
        #: Gaussian with that σ² and that ball): the "ℓ2 ball" route, gaussian_delta's bound
        self._ball = self._one_ball()
        if any(
            isinstance(r, Gaussian) and isinstance(r.sensitivity, NeighbourSet) for r in releases
        ):
            programs = _worst_programs(self.releases)
            self._zcdp_only = programs is None
            self._cases = None if programs is None else [Composition(p) for p in programs]
            self._coords: list[_Coordinate] = []
        else:
            self._coords = _coordinates(self.releases)
        self._cache: dict[tuple, _Readout | None] = {}
        self._lock = threading.Lock()
        self._ladder_found: _Ladder | None = None
        # the PLD route enumerates atoms in floats: only for parameters well inside their range
        self._in_range = all(
            2.0**-30 < cf._approx(c.param) < (PLD_MAX_SIGMA2 if c.gaussian else 2.0**60)
            and c.m <= PLD_MAX_ATOMS
            for c in self._coords
        )

    # ---- exact quantities -------------------------------------------------------------
    @property
    def rho(self) -> Fraction:
        """The zCDP total ρ = Σ ρ_i, exactly (a Laplace release counts as ε²/2 per query)."""
        return sum((r.rho for r in self.releases), Fraction(0))

    @property
    def pure_epsilon(self) -> Fraction | None:
        """Σ k‖μ‖₁/t when every release is Laplace (pure DP, δ = 0), else None."""
        if all(isinstance(r, Laplace) for r in self.releases):
            return sum((r.epsilon for r in self.releases if isinstance(r, Laplace)), Fraction(0))
        return None

    def __repr__(self) -> str:
        return "compose(" + ", ".join(map(repr, self.releases)) + ")"

    # ---- copying and pickling ---------------------------------------------------------
    # The releases are immutable; the lock and the cache of composed grids are not state:
    # a copy gets a lock of its own and its own dict of the grids computed so far (each grid
    # is read-only once built, so the two may share them); a pickle leaves the grids out
    # (they can weigh megabytes, and are recomputed on demand).
    def __getstate__(self) -> dict:
        return {"releases": self.releases}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["releases"])  # type: ignore[misc]

    def __copy__(self) -> Composition:
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        with self._lock:
            new._cache = dict(self._cache)
        return new

    def __deepcopy__(self, memo: dict) -> Composition:
        return self.__copy__()  # nothing mutable is shared, as for a shallow copy

    def _shared_grid_pld(self, epsilon: Fraction) -> _PLD | None:
        """A PLD of this program that more releases can be merged into (:meth:`_PLD.extended`):
        one already computed on a power-of-two grid, else a new one; None out of range, or
        when the program has an ℓ2-ball release (its δ is the largest over several programs,
        not one PLD)."""
        if not self._in_range or self._cases is not None or self._zcdp_only:
            return None
        with self._lock:
            for pld in getattr(self, "_cache", {}).values():
                if isinstance(pld, _PLD) and _power_of_two(pld.h):
                    return pld
        ef = float(epsilon) if epsilon < _PLD_MAX_EPS else _PLD_MAX_EPS
        return _PLD.on_shared_grid(self._coords, ef)

    def _grids_no_finer(self, epsilon: Fraction, h: float) -> bool:
        """Whether every bound this composition could give on δ(ε) other than basic
        composition and zCDP comes from grids of spacing at least h (h a power of 2): the
        PLD route alone answers (several kinds of release, none an ℓ2 ball), and neither
        the exact atoms nor a lattice are among the grids its bucket and the earlier ones
        read.  The ladder's spacings are powers of 2 too, so each of those grids is h's
        coarsened, and its gridded δ̃ at least h's (connecting the dots on nested grids)."""
        if not _power_of_two(h) or epsilon >= _PLD_MAX_EPS:
            return False
        if self._cases is not None or self._zcdp_only or not self._in_range:
            return False
        if self.pure_epsilon is not None or self._one_sigma2() is not None:
            return False
        if self._one_scale() is not None:
            return False
        ef = float(epsilon)
        if Fraction(ef) > epsilon:
            ef = math.nextafter(ef, -math.inf)  # as _other_routes reads it
        ladder = self._ladder()
        j = ladder.bucket(ef)
        # the bucket's spacing is the smallest of buckets 0 … j (they never grow with j)
        return not ladder.exact and not ladder.on_lattice[j] and ladder.h[j] >= h

    # ---- routes ----------------------------------------------------------------------
    def _one_ball(self) -> tuple[Fraction, NeighbourSet, int] | None:
        """(σ², ball, Σk) when every release is Gaussian with one σ² and one ℓ2 ball (one
        k-fold ball release however it was split), and Σk ≤ MAX_K; else None."""
        found = {
            (r.sigma2, r.sensitivity)
            for r in self.releases
            if isinstance(r, Gaussian) and isinstance(r.sensitivity, NeighbourSet)
        }
        if len(found) != 1 or len(self.releases) != sum(
            isinstance(r, Gaussian) and isinstance(r.sensitivity, NeighbourSet)
            for r in self.releases
        ):
            return None
        ((s, ball),) = found
        assert isinstance(ball, NeighbourSet)
        k = sum(r.k for r in self.releases)
        return (s, ball, k) if k <= cf.MAX_K else None

    def _ball_log_delta(self, e: Fraction) -> tuple[mpfr, bool] | None:
        """The "ℓ2 ball" route of a one-ball program: an upper bound on ln δ over every
        concatenation of k vectors of the ball, the bound :func:`gaussian_delta` returns
        (``docs/accounting.md``, *The ℓ2 ball*), and whether it is tight (within a relative
        2^−30 of the truth: the worst programs listed could not do better).  With the worst
        programs listed (``self._cases``), only the uniform bound (the cases read the list).

        A ball with a ``coordinates`` limit is inside the unbounded ball of its radius, so
        that one's bound bounds it too (never tight for it: the limit may lower the truth);
        it serves where the limited ball's own vectors have several norms (no uniform bound
        of their own) and are too many to list."""
        if self._ball is None:
            return None
        s, ball, k = self._ball
        whole = ball.relaxed()
        if self._cases is None:
            value = cf._worst_log_delta(s, e, ball, k)
            if ball != whole:
                value = min(value, cf._worst_log_delta(s, e, whole, k))
            return value, False
        found = cf._ball_log_delta(s, e, ball, k)
        if found is None and ball != whole:
            found = cf._ball_log_delta(s, e, whole, k)
            return None if found is None else (found[0], False)
        return found

    def _worst_case(self, e: Fraction) -> tuple[mpfr, str]:
        """The largest (ln δ bound, route) over the listed programs, taken in decreasing ρ:
        one whose zCDP bound (Corollary 13 at its exact ρ) is at most the largest found cannot
        raise it and is skipped."""
        assert self._cases is not None
        found: tuple[mpfr, str] | None = None
        for case in sorted(self._cases, key=lambda c: c.rho, reverse=True):
            if found is not None and cf._cdp_log_delta(case.rho, e) <= found[0]:
                continue
            bound = case._best(e)
            if found is None or bound[0] > found[0]:
                found = bound
        assert found is not None
        return found

    def _set_route(self) -> str:
        """The name of the one-set route: "ℓ2 ball", or "contributions" for a
        :class:`~dgauss.accounting.Contributions` release."""
        assert self._ball is not None
        return "contributions" if isinstance(self._ball[1], Contributions) else "ℓ2 ball"

    def _one_sigma2(self) -> tuple[Fraction, tuple[int, ...], int] | None:
        if not all(isinstance(r, Gaussian) for r in self.releases):
            return None
        if len({r.sigma2 for r in self.releases if isinstance(r, Gaussian)}) != 1:
            return None
        first = self.releases[0]
        assert isinstance(first, Gaussian)
        groups = {_vector_of(r) for r in self.releases}
        if len(groups) == 1:
            return first.sigma2, _vector_of(first), sum(r.k for r in self.releases)
        if sum(r.k * len(_vector_of(r)) for r in self.releases) > 10**5:
            return None
        mu = tuple(x for r in self.releases for _ in range(r.k) for x in _vector_of(r))
        return first.sigma2, mu, 1

    def _one_scale(self) -> tuple[Fraction, int, int] | None:
        if not all(isinstance(r, Laplace) for r in self.releases):
            return None
        keys = {(r.scale, r.sensitivity) for r in self.releases if isinstance(r, Laplace)}
        if len(keys) != 1:
            return None
        (scale, sens) = keys.pop()
        if len(sens) != 1:
            return None
        return scale, abs(sens[0]), sum(r.k for r in self.releases)

    def _pld(self, alpha: float, h: float, a: Fraction | None) -> _Readout | None:
        """The grid at (α, h, a) (h = 0: the exact atoms at α), or None where the route
        cannot build it; cached (a grid is a function of its key: the cache changes no
        answer)."""
        key = (alpha, h, a)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        try:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                found: _Readout | None = (
                    _Enumerated(self._coords, alpha) if h == 0 else _PLD(self._coords, alpha, h, a)
                )
        except (ArithmeticError, MemoryError, ValueError, OverflowError):
            found = None
        with self._lock:
            while len(self._cache) >= 8:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = found
        return found

    def _ladder(self) -> _Ladder:
        with self._lock:
            found = self._ladder_found
        if found is None:
            with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
                found = _Ladder(self._coords)
            with self._lock:
                self._ladder_found = found
        return found

    def _pld_log_delta(self, eps: float) -> float | None:
        """The PLD route's upper bound on ln δ at a float ε: a function of ε only, and
        non-increasing in it.

        With bucket j's grid g_j (:class:`_Ladder`) and b_j its readout, the route answers
        F(ε) = min(b_j(ε), T_j), where T_j = min_{i<j} b_i(e_{i+1}) carries every earlier
        bucket's bound at its right end e_{i+1} (valid at ε ≥ e_{i+1}, as δ falls with ε).
        Within a bucket F falls with ε, and at an edge the set only grows: F never rises
        (empty buckets, whose edges coincide, answer no ε and are skipped).
        T_j need not be computed when b_j(ε) is below a lower bound L_j(e_j) on the gridded
        δ̃_j(e_j): each b_i(e_{i+1}) ≥ δ̃_i(e_{i+1}) ≥ δ̃_j(e_{i+1}) ≥ δ̃_j(e_j) (an earlier grid
        is coarser, or the same lattice: its pair dominates), so T_j ≥ L_j(e_j).  Likewise
        the walk back stops at bucket i once what it carried is ≤ L_i(e_i).
        """
        ladder = self._ladder()
        j = ladder.bucket(eps)
        grid = self._pld(*ladder.grid(j))
        value = grid.log_delta(eps) if grid is not None else math.inf
        if j == 0 or (grid is not None and value <= grid.log_delta_low(ladder.left(j))):
            return value if value < math.inf else None
        carried = math.inf
        asked = 0
        for i in range(j - 1, -1, -1):
            if i > 0 and ladder.edges[i - 1] == ladder.edges[i]:
                continue  # an empty bucket answers no ε: nothing to carry from it
            if asked == _CARRY_MAX:
                break
            asked += 1
            earlier = self._pld(*ladder.grid(i))
            if earlier is None:
                continue
            carried = min(carried, earlier.log_delta(ladder.left(i + 1)))
            if i == 0 or carried <= earlier.log_delta_low(ladder.left(i)):
                break
        found = min(value, carried)
        return found if found < math.inf else None

    # ---- basic composition (:mod:`._basic_composition`) -----------------------------
    def _basic_log_delta(self, e: Fraction, unless_above: mpfr | None = None) -> mpfr | None:
        """The basic-composition route's upper bound on ln δ at ε (:func:`basic_log_delta`);
        None when the Laplace releases' pure ε is above ε."""
        return basic_log_delta(self.releases, e, unless_above)

    def _routes_log_delta(self, e: Fraction) -> dict[str, mpfr]:
        routes = self._other_routes(e)
        basic = self._basic_log_delta(e, min(routes.values()))
        if basic is not None:
            routes["basic composition"] = basic
        return routes

    def _other_routes(self, e: Fraction) -> dict[str, mpfr]:
        routes: dict[str, mpfr] = {}
        rho = self.rho
        routes["zCDP"] = cf._cdp_log_delta(rho, e) if rho > 0 else mpfr(0)
        pure = self.pure_epsilon
        if pure is not None and e >= pure:
            routes["pure DP"] = mpfr("-inf")
            return routes
        one = self._one_sigma2()
        if one is not None:
            s, mu, k = one
            routes["Theorem 15"] = cf._gaussian_log_delta(s, e, mu, k)
        lap = self._one_scale()
        if lap is not None:
            t, sens, k = lap
            bound = cf._laplace_log_delta(t, e, sens, k)
            routes["Eq. 49"] = mpfr("-inf") if bound is None else bound
        if "Theorem 15" not in routes and not (lap is not None and sens == 1) and self._in_range:
            # ε as a float rounded down keeps the bound valid (δ falls with ε)
            ef = float(e) if e < _PLD_MAX_EPS else _PLD_MAX_EPS
            if Fraction(ef) > e:
                ef = math.nextafter(ef, -math.inf)
            found = self._pld_log_delta(ef)
            if found is not None and not math.isnan(found):
                routes["PLD"] = mpfr(min(found, 0.0))
        return routes

    def _best(self, e: Fraction) -> tuple[mpfr, str]:
        if self._cases is not None or self._zcdp_only:
            ball = self._ball_log_delta(e)
            if ball is not None and ball[1]:
                return ball[0], self._set_route()  # tight: as gaussian_delta, the list not read
            if self._cases is not None:  # the worst of the set's vectors
                found = self._worst_case(e)
            else:
                found = cf._cdp_log_delta(self.rho, e), "zCDP"
                if ball is None:  # a mix: basic composition, each group its own bound
                    basic = self._basic_log_delta(e, found[0])
                    if basic is not None and basic < found[0]:
                        found = basic, "basic composition"
            if ball is not None and ball[0] < found[0]:
                return ball[0], self._set_route()
            return found
        routes = self._routes_log_delta(e)
        name = min(routes, key=lambda k: routes[k])
        return routes[name], name

    # ---- the public readout ----------------------------------------------------------
    def delta(self, epsilon, log: bool = False) -> float:
        """δ(ε) of the whole program, rounded up: never below the true δ of the product
        mechanism (both neighbouring directions: the noise is symmetric, so they agree).

        The smallest of every valid route (:func:`compose`).  ``log=True`` returns an upper
        bound on ln δ (−inf when δ = 0), for δ below the float range.

        A function of ``epsilon`` only (not of earlier calls or other threads), and
        non-increasing in it.  Accuracy: within 10^−7 of the truth where the PLD route
        enumerates the atoms (small programs), aimed at 0.1% on its grid; near a pure ε or
        with ε on a heavy atom at a tiny δ the grid's guarantee is δ(ε) ≤ δ_true(ε − n·h)
        (n coordinates, spacing h; ``docs/accounting.md``).
        """
        e = cf._nonnegative(epsilon, "epsilon")
        log_hi, _ = self._best(e)
        if log_hi == mpfr("-inf"):
            return -math.inf if log else 0.0
        return cf._delta_out(log_hi, log)

    def route(self, epsilon) -> str:
        """The name of the route that gives :meth:`delta` at ``epsilon``: ``"Theorem 15"``,
        ``"Eq. 49"``, ``"pure DP"``, ``"PLD"``, ``"basic composition"``, ``"zCDP"``, or
        ``"ℓ2 ball"`` (a program that is one ℓ2-ball release, bounded over every
        concatenation of its vectors as :func:`gaussian_delta` bounds it; ``"contributions"``
        the same for one :class:`~dgauss.accounting.Contributions` release).  With an ℓ2-ball
        release whose worst programs are listed, the route of the worst of them."""
        e = cf._nonnegative(epsilon, "epsilon")
        return self._best(e)[1]

    def epsilon(self, delta) -> float:
        """The smallest ε (rounded up, certified) whose δ(ε) is at most ``delta``.

        Certified by this object's own :meth:`delta`: ``delta(epsilon(d)) <= d`` always, and
        ``delta(e) > d`` for ``e < epsilon(d)/1.001`` (each route's smallest ε is found to a
        relative 1e−9 or better on its own non-increasing bound, and the smallest that
        :meth:`delta` certifies is returned).  0 < ``delta`` < 1; ``delta`` = 0 gives the pure
        ε of an all-Laplace program (``ValueError`` otherwise).
        """
        d = cf._probability(delta, "delta", allow_zero=True)
        pure = self.pure_epsilon
        if d == 0:
            if pure is None:
                raise ValueError(
                    "delta must lie in (0, 1) for a program with a Gaussian release "
                    "(only an all-Laplace program has delta = 0)"
                )
            return cf._float_up(pure)
        return cf._float_up(self._epsilon_fraction(d))

    def _epsilon_fraction(self, d: Fraction) -> Fraction:
        """The smallest ε (a Fraction) at which :meth:`delta` certifies ``d``.

        Each route's own smallest ε is found (to a relative 2^−36 for the closed forms,
        1e−9 for the PLD route, on its own non-increasing bound) and the smallest that
        the whole readout certifies is returned: δ is the minimum over routes, so its
        threshold is the smallest of theirs.  With an ℓ2-ball release, the largest over
        its worst-case programs (or the zCDP route alone)."""
        if self._cases is not None or self._zcdp_only:
            return self._ball_epsilon(d)
        target = self._target(d)
        rho = self.rho
        candidates: list[Fraction] = []
        zc = cf._exact(mpfr(cf._cdp_eps_interval(rho, d).hi, 64)) + Fraction(1, 2**40)
        candidates.append(max(zc, Fraction(0)))
        if self.pure_epsilon is not None:
            candidates.append(self.pure_epsilon)
        one = self._one_sigma2()
        if one is not None:
            s, mu, k = one
            candidates.append(
                cf._smallest_eps(lambda e: cf._gaussian_log_delta(s, e, mu, k), target, zc)
            )
        lap = self._one_scale()
        if lap is not None:
            t, sens, k = lap

            def lap_hi(e: Fraction) -> mpfr:
                bound = cf._laplace_log_delta(t, e, sens, k)
                return mpfr("-inf") if bound is None else bound

            candidates.append(cf._smallest_eps(lap_hi, target, Fraction(k * sens) / t))
        if one is None and not (lap is not None and sens == 1) and self._in_range:
            found = self._pld_epsilon(float(target), min(candidates))
            if found is not None:
                candidates.append(found)
        found = self._basic_epsilon(target, min(candidates))
        if found is not None:
            candidates.append(found)
        # certify with the whole readout, as a float rounded up is what is returned
        for e in sorted(set(candidates)):
            up = cf._float_up(e)
            if up == math.inf or self._best(Fraction(up))[0] <= target:
                return e  # (ε = +inf, past the floats, is an upper bound with no question)
        raise AssertionError("no route certified its own epsilon")  # pragma: no cover

    def _ball_epsilon(self, d: Fraction) -> Fraction:
        """:meth:`_epsilon_fraction` with an ℓ2-ball release: the smallest of the worst
        programs' ε (or the zCDP route's, with none listed) and the "ℓ2 ball" route's, that
        :meth:`delta`'s readout certifies (δ is the smaller of the two bounds, so its
        threshold is the smaller of theirs)."""
        zc = cf._exact(mpfr(cf._cdp_eps_interval(self.rho, d).hi, 64)) + Fraction(1, 2**40)
        zc = max(zc, Fraction(0))
        if self._ball is None:
            if self._cases is not None:
                return self._cases_epsilon(d, self._cases)
            basic = self._basic_epsilon(self._target(d), zc)  # a mix: zCDP or basic
            if basic is not None and basic < zc:
                up = cf._float_up(basic)
                if up == math.inf or self._best(Fraction(up))[0] <= self._target(d):
                    return basic
            return zc
        target = self._target(d)

        def ball_hi(e: Fraction) -> mpfr:
            found = self._ball_log_delta(e)
            return mpfr(0) if found is None else found[0]

        candidates = {zc}
        if ball_hi(zc) <= target:  # else it cannot beat zCDP (both non-increasing in ε)
            candidates.add(cf._smallest_eps(ball_hi, target, zc))
        ball_eps = min(candidates)
        at = self._ball_log_delta(ball_eps)
        if self._cases is not None and not (at is not None and at[1]):
            candidates.add(self._cases_epsilon(d, self._cases))  # the list may do better
        for e in sorted(candidates):
            up = cf._float_up(e)
            if up == math.inf or self._best(Fraction(up))[0] <= target:
                return e
        return max(candidates)  # (zCDP's ε, or the cases' checked on each case)

    def _cases_epsilon(self, d: Fraction, cases: list[Composition]) -> Fraction:
        """The smallest ε certified for every worst case: the largest of their ε's, checked
        (and raised until certified) on each case's own δ bound."""
        target = self._target(d)
        eps = max(case._epsilon_fraction(d) for case in cases)
        for _ in range(64):
            if all(case._best(eps)[0] <= target for case in cases):
                return eps
            eps += eps * Fraction(1, 2**20) + Fraction(1, 2**40)
        zc = cf._exact(mpfr(cf._cdp_eps_interval(self.rho, d).hi, 64)) + Fraction(1, 2**40)
        return max(eps, zc)  # zCDP at the ball's ρ bounds every case

    @staticmethod
    def _target(d: Fraction) -> mpfr:
        """ln d rounded down to a float, and to ln of d rounded down to a float: a bound
        ≤ it reads back as a δ ≤ d (and an ln δ ≤ ln d) after :func:`cf._delta_out`."""
        log_d = cf._AR.q(d).log().lo
        d_float = cf._float_down(d)
        if d_float >= 2.2250738585072014e-308:
            log_d = min(log_d, cf._AR.dn.log(mpfr(d_float)))
        return mpfr(cf._float_down(log_d))

    def _basic_epsilon(self, target: mpfr, best: Fraction) -> Fraction | None:
        """The smallest ε of the basic-composition route, when it is below ``best``."""
        return basic_epsilon(self.releases, self._basic_log_delta, target, best)

    def _pld_epsilon(self, target: float, start: Fraction) -> Fraction | None:
        """The smallest float ε ≤ ``start`` (to a relative 1e−9) at which the PLD route's
        bound (:meth:`_pld_log_delta`, non-increasing) is ≤ ``target``; None if none."""
        hi = cf._float_down(min(start, Fraction(_PLD_MAX_EPS)))
        value = self._pld_log_delta(0.0)
        if value is not None and value <= target:
            return Fraction(0)
        ladder = self._ladder()

        def threshold(readout, lo: float, hi: float, rel: float) -> float:
            """The smallest ε in (lo, hi] (to ``rel``) with readout(ε) ≤ target, given
            readout(hi) ≤ target (non-increasing readouts)."""
            while hi - lo > rel * hi:
                mid = (lo + hi) / 2
                value = readout(mid)
                if value is not None and value <= target:
                    hi = mid
                else:
                    lo = mid
            return hi

        # a first bucket from the saddle-point estimate; then the threshold on that bucket
        # grid's own readout (cheap), moving to the bucket of the threshold found
        i = int(np.searchsorted(-ladder.guess, -target, side="left"))
        guess = min(hi, float(ladder.edges[i])) if i < len(ladder.edges) else hi
        guess = guess if guess > 0 else hi
        for _ in range(4):
            grid = self._pld(*ladder.grid(ladder.bucket(guess)))
            if grid is None or grid.log_delta(hi) > target:
                break
            moved = threshold(grid.log_delta, 0.0, hi, 1e-6)
            done = ladder.bucket(moved) == ladder.bucket(guess)
            guess = moved
            if done:
                break
        # bracket the guess on the route's readout, then bisect
        value = self._pld_log_delta(guess)
        step = 1e-6
        if value is not None and value <= target:
            top, low = guess, guess
            while low > 0:
                low = max(0.0, guess * (1 - step)) if step < 1 else 0.0
                value = self._pld_log_delta(low)
                if value is None or value > target:
                    break
                top, step = low, step * 8
        else:
            low, top = guess, guess
            while True:
                if top >= hi:
                    return None  # the route does not reach the target below hi
                top = min(hi, guess * (1 + step))
                value = self._pld_log_delta(top)
                if value is not None and value <= target:
                    break
                low, step = top, step * 8
        return Fraction(threshold(self._pld_log_delta, low, top, 1e-9))


def compose(*releases: Release) -> Composition:
    """The privacy of a whole release program: the composition of its releases.

    ``releases`` are :class:`Gaussian` and :class:`Laplace` objects (any mix, any σ², scales,
    sensitivities and k).  The result's ``delta(epsilon, log=False)`` is an upper bound on
    the δ of the product mechanism (the hockey-stick divergence of the composed privacy-loss
    distribution, over both neighbouring directions), never below it: the smallest of the
    exact routes where they apply (Theorem 15 for one σ², Eq. 49 for one scale), pure DP,
    zCDP (Corollary 13), basic composition of the releases' own guarantees, and the
    privacy-loss-distribution route with one-sided rounding (``docs/accounting.md``): exact
    atom by atom for small programs, else on a grid aimed at a relative 0.1% of the truth for
    δ down to 1e−300 (and below, with ``log=True``), δ(ε) ≤ δ_true(ε − n·h) where that is not
    met.  ``delta`` is a function of ε only and never rises with it; ``epsilon(delta)`` is
    the smallest ε that ``delta`` certifies and ``rho`` the exact zCDP total.
    ``route(epsilon)`` names the route used.

    Example::

        >>> from dgauss.accounting import compose, Gaussian, Laplace
        >>> program = compose(Gaussian(100), Gaussian(400, k=4), Laplace(10))
        >>> program.rho
        Fraction(3, 200)
    """
    if not releases:
        raise ValueError("compose needs at least one release (Gaussian(...) or Laplace(...))")
    for r in releases:
        if not isinstance(r, (Gaussian, Laplace)):
            raise TypeError(
                f"each release must be accounting.Gaussian or accounting.Laplace, got {r!r}"
            )
    return Composition(releases)
