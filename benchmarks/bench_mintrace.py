"""The reconciliation of marginal tables beside hierarchicalforecast's MinTraceSparse.

    PYTHONPATH=src /work/hf-venv/bin/python benchmarks/bench_mintrace.py [--towns 7901]

The release of ``bench_marginals.py`` (its ``tree()``, the same draws for the same
``--seed``): ``--towns`` towns in provinces of about 74 and regions of about 5 provinces,
18 age groups × 2 sexes a town (284,436 detail cells at the default), Poisson(20) counts,
released with Gaussian noise of one variance, 481.9, per cell: town × age × sex (the
detail), town totals, province × age × sex, region × age × sex and the nation's total.

With one variance for every cell, the generalised least-squares estimate that
``dgauss._marginals.solve`` computes is the ordinary least-squares projection
ỹ = S (SᵀS)⁻¹ Sᵀ ŷ, S (scipy.sparse, rows: every released cell, aggregates first;
columns: the detail's cells) summing the detail to every released cell.  That is what
``hierarchicalforecast.methods.MinTraceSparse(method="ols")`` computes (weights W = I:
equal weights, as equal variances give; "wls_struct" would weight each cell by the
number of detail cells it sums, which these variances are not), by an iterative solve
(scipy's BiCGSTAB) of SᵀS x = Sᵀ ŷ that stops at ‖SᵀS x − Sᵀ ŷ‖₂ ≤ 10⁻⁵ ‖Sᵀ ŷ‖₂ and whose
exit code it does not check.  Both are timed (wall clock; best of 3 when a run takes
under 60 s, else one run) and MinTraceSparse's reconciled values are compared with dgauss's
on each released table.  Also printed: how many products with SᵀS its BiCGSTAB made, and its
exit code (a further, untimed run); and, for reference, the same BiCGSTAB solve at a
relative tolerance of 10⁻¹² (timed likewise).  ‖Sᵀ ŷ‖ is dominated by the nation's cell (it
enters every entry of Sᵀ ŷ), so 10⁻⁵ of it is reached within a few products, far from ỹ.

The exact answer, independently: SᵀS x = Sᵀ ŷ solved directly.  SᵀS itself is dense (the
nation's row of S sums every detail cell: (284,436)² entries), but S's rows for the detail
are the identity, so SᵀS = I + AᵀA with A the aggregates' rows, and by Woodbury's identity
x = b − Aᵀ (I + A Aᵀ)⁻¹ A b (b = Sᵀ ŷ): a sparse direct solve (SuperLU, the factorisation
of scipy.sparse.linalg.spsolve, kept for two steps of iterative refinement) of a system of
one unknown per aggregate cell (12,474 at the default).  Printed: the residuals
‖SᵀS x − Sᵀ ŷ‖∞ / ‖Sᵀ ŷ‖∞ of every answer, and the direct answer's largest distance from
dgauss's on each released table.

How it runs.  hierarchicalforecast is not a dependency of dgauss: it lives in its own
virtual environment (``python3 -m venv /work/hf-venv``, ``pip install hierarchicalforecast
gmpy2``; gmpy2 is dgauss's own runtime dependency).  dgauss is not installed there:
``PYTHONPATH=src`` puts the checkout's package, with its compiled core built in place, on
the path (the same CPython and NumPy as the development environment, so the core imports
as it is); nothing is rebuilt or copied.  Run from the checkout's root.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import hierarchicalforecast
import numpy as np
import scipy
from hierarchicalforecast.methods import MinTraceSparse
from scipy import sparse
from scipy.sparse import linalg

import dgauss
from bench_marginals import tree
from dgauss._marginals import Margin, solve

DIMS = (18, 2)  # age groups × sexes
VARIANCE = 481.9  # the noise's variance per released cell
BEST_OF_UNDER = 60.0  # seconds: a run shorter than this is repeated, the best of 3 kept


def release(towns: int, seed: int) -> tuple[list[int], list[np.ndarray], list[Margin]]:
    """The levels' sizes, the parents, and the noisy tables of ``bench_marginals.py``'s
    census-shaped release (the same random draws, in the same order, for the same seed)."""
    rng = np.random.default_rng(seed)
    sizes, parents = tree(towns, None, rng)
    x = rng.poisson(20, size=(towns, *DIMS)).astype(np.float64)

    def noisy(a: np.ndarray) -> np.ndarray:
        return a + rng.normal(0, VARIANCE**0.5, a.shape)

    margins = [
        Margin(0, (0, 1), noisy(x), VARIANCE),
        Margin(0, (), noisy(x.sum(axis=(1, 2))), VARIANCE),
    ]
    z = x
    for lv, p in enumerate(parents, start=1):
        z = np.stack(
            [np.bincount(p, weights=z[:, i, j], minlength=sizes[lv]) for i, j in np.ndindex(DIMS)],
            axis=-1,
        ).reshape(-1, *DIMS)
        top = lv == len(sizes) - 1
        values = z.sum(axis=(1, 2)) if top else z
        margins.append(Margin(lv, () if top else (0, 1), noisy(values), VARIANCE))
    return sizes, parents, margins


def name(m: Margin) -> str:
    """The table's name: its areas (towns, provinces, regions, the nation) and variables."""
    area = ("town", "province", "region", "nation")[m.level]
    if not m.axes:
        return "nation total" if m.level == 3 else f"{area} totals"
    return f"{area} × age × sex" + (" (detail)" if m.level == 0 else "")


def summing_matrix(
    sizes: list[int], parents: list[np.ndarray], margins: list[Margin]
) -> tuple[sparse.csr_matrix, list[Margin], list[slice]]:
    """S (every released cell × the detail's cells, CSR), the tables in S's row order (the
    aggregates from the top down, the detail last, as hierarchicalforecast orders them) and
    each table's rows."""
    towns, cells = sizes[0], math.prod(DIMS)
    bottom = towns * cells
    area = [np.arange(towns)]  # each town's area at every level
    for p in parents:
        area.append(p[area[-1]])
    town = np.repeat(np.arange(towns), cells)
    cell = np.unravel_index(np.tile(np.arange(cells), towns), DIMS)
    order = sorted(margins, key=lambda m: (-m.level, len(m.axes)))
    detail = next(m for m in order if m.level == 0 and len(m.axes) == len(DIMS))
    order.remove(detail)
    order.append(detail)
    rows, spans, start = [], [], 0
    for m in order:
        kept = [DIMS[i] for i in m.axes]
        within = np.ravel_multi_index([cell[i] for i in m.axes], kept) if kept else 0
        rows.append(start + area[m.level][town] * math.prod(kept) + within)
        n = sizes[m.level] * math.prod(kept)
        spans.append(slice(start, start + n))
        start += n
    cols = np.tile(np.arange(bottom), len(order))
    S = sparse.coo_matrix(
        (np.ones(len(cols)), (np.concatenate(rows), cols)), shape=(start, bottom)
    ).tocsr()
    return S, order, spans


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    """The best wall-clock time of 3 runs (of 1 if the first takes 60 s or more), and the
    first run's result."""
    t = time.perf_counter()
    result = run()
    best = time.perf_counter() - t
    if best < BEST_OF_UNDER:
        for _ in range(2):
            t = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t)
    return best, result


def direct(S: sparse.csr_matrix, aggregates: int, y_hat: np.ndarray, refine: int = 2) -> np.ndarray:
    """The solution x of SᵀS x = Sᵀ ŷ (S's last rows the identity) by a sparse direct
    solve: Woodbury's identity, (I + AᵀA)⁻¹ b = b − Aᵀ (I + A Aᵀ)⁻¹ A b with A the
    aggregates' rows of S, (I + A Aᵀ) factorised once (SuperLU), then ``refine`` steps of
    iterative refinement (the nation's cell, ~10⁶ times a detail cell, costs digits)."""
    A = S[:aggregates]
    lu = linalg.splu((sparse.identity(aggregates, format="csc") + A @ A.T).tocsc())
    b = S.T @ y_hat

    def apply(r: np.ndarray) -> np.ndarray:
        return r - A.T @ lu.solve(A @ r)

    x = apply(b)
    for _ in range(refine):
        x += apply(b - S.T @ (S @ x))
    return x


def bicgstab_calls(run: Callable[[], Any]) -> list[tuple[int, int]]:
    """Run ``run`` with scipy's BiCGSTAB (as MinTraceSparse calls it) wrapped, and return
    each call's number of products with its matrix (SᵀS: 2 a full iteration) and exit code
    (which MinTraceSparse does not look at), for the calls on a nonzero right-hand side (a
    call on zeros is LinearOperator's probe of the output's dtype)."""
    calls = []
    plain = linalg.bicgstab

    def counted(A: Any, b: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        inner, products = linalg.aslinearoperator(A), [0]

        def matvec(v: np.ndarray) -> np.ndarray:
            products[0] += 1
            return inner.matvec(v)

        wrapped = linalg.LinearOperator(inner.shape, matvec=matvec, dtype=inner.dtype)
        x, code = plain(wrapped, b, *args, **kwargs)
        if np.any(b):
            calls.append((products[0], code))
        return x, code

    linalg.bicgstab = counted
    try:
        run()
    finally:
        linalg.bicgstab = plain
    return calls


def residual(S: sparse.csr_matrix, x: np.ndarray, y_hat: np.ndarray) -> float:
    """‖SᵀS x − Sᵀ ŷ‖∞ / ‖Sᵀ ŷ‖∞: how far x is from solving the normal equations."""
    b = S.T @ y_hat
    return float(np.abs(S.T @ (S @ x) - b).max() / np.abs(b).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towns", type=int, default=7901)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-direct", action="store_true", help="skip the direct solve")
    args = parser.parse_args()

    sizes, parents, margins = release(args.towns, args.seed)
    levels = ", ".join(f"{n:,}" for n in sizes)
    print(f"{len(sizes)} levels of {levels} areas: {sizes[0] * math.prod(DIMS):,} detail cells")
    print(
        f"dgauss {dgauss.__version__}, hierarchicalforecast {hierarchicalforecast.__version__},"
        f" NumPy {np.__version__}, SciPy {scipy.__version__}"
    )
    t = time.perf_counter()
    S, order, spans = summing_matrix(sizes, parents, margins)
    y_hat = np.concatenate([m.values.reshape(-1) for m in order])
    t = time.perf_counter() - t
    print(f"S: {S.shape[0]:,} × {S.shape[1]:,}, {S.nnz:,} nonzeros (built in {t:.2f} s)")

    t_dg, estimates = timed(lambda: solve(sizes, parents, DIMS, margins))
    ours = {id(m): est.reshape(-1) for m, (est, _) in zip(margins, estimates, strict=True)}
    print(f"dgauss._marginals.solve: {t_dg:.3g} s")

    def mintrace() -> dict:
        return MinTraceSparse(method="ols").fit_predict(S=S, y_hat=y_hat[:, None])

    t_mt, result = timed(mintrace)
    theirs = result["mean"][:, 0]
    print(f"MinTraceSparse(method='ols').fit_predict: {t_mt:.3g} s")
    print(f"MinTraceSparse / dgauss: {t_mt / t_dg:.1f}×")
    said = ", ".join(f"{n} product(s) with SᵀS, exit code {c}" for n, c in bicgstab_calls(mintrace))
    print(f"  its BiCGSTAB (stops at ‖residual‖₂ ≤ 1e-5 ‖Sᵀŷ‖₂): {said}")

    print(f"|MinTraceSparse − dgauss| per table (noise's σ per cell: {VARIANCE**0.5:.2f})")
    print(f"  {'':30s} {'largest':>12s} {'mean':>12s}")
    for m, rows in zip(order, spans, strict=True):
        gap = np.abs(theirs[rows] - ours[id(m)])
        print(f"  {name(m):30s} {gap.max():12.3e} {gap.mean():12.3e}")

    bottom = spans[-1]
    x_dg = ours[id(order[-1])]
    print("‖SᵀS x − Sᵀŷ‖∞ / ‖Sᵀŷ‖∞ at the detail x:")
    print(f"  dgauss                          {residual(S, x_dg, y_hat):.3e}")
    print(f"  MinTraceSparse                  {residual(S, theirs[bottom], y_hat):.3e}")
    normal = linalg.LinearOperator((S.shape[1],) * 2, matvec=lambda v: S.T @ (S @ v))
    t, (x_tight, code) = timed(lambda: linalg.bicgstab(normal, S.T @ y_hat, rtol=1e-12, atol=0.0))
    print(
        f"  its BiCGSTAB at rtol 1e-12       {residual(S, x_tight, y_hat):.3e} ({t:.2f} s, exit"
        f" code {code}, largest |− dgauss| {np.abs(x_tight - x_dg).max():.1e})"
    )
    if args.no_direct:
        return
    assert (S[bottom] != sparse.identity(S.shape[1], format="csr")).nnz == 0
    t = time.perf_counter()
    x = direct(S, bottom.start, y_hat)
    t = time.perf_counter() - t
    print(f"  direct (Woodbury, SuperLU)      {residual(S, x, y_hat):.3e} ({t:.2f} s)")
    print(f"|dgauss − direct| on the detail: largest {np.abs(x_dg - x).max():.3e}")
    fitted = S @ x
    print("|dgauss − direct| per table: largest (relative to the table's largest |value|)")
    for m, rows in zip(order, spans, strict=True):
        gap = np.abs(fitted[rows] - ours[id(m)]).max()
        print(f"  {name(m):30s} {gap:12.3e} ({gap / np.abs(fitted[rows]).max():.1e})")


if __name__ == "__main__":
    main()
