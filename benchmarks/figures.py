"""Regenerate the figures of Canonne, Kamath & Steinke (NeurIPS 2020) from dgauss.accounting.

Run from the repository root (matplotlib is the optional extra ``plots``:
``pip install '.[plots]'`` or ``python3 -m pip install matplotlib``)::

    PYTHONPATH=src python3 benchmarks/figures.py                 # all figures -> docs/figures/
    PYTHONPATH=src python3 benchmarks/figures.py --out /tmp/figs
    PYTHONPATH=src python3 benchmarks/figures.py --only fig4 fig5

It prints one line per figure (path and seconds) and takes well under three minutes.
Every privacy number comes from :mod:`dgauss.accounting`; the continuous and rounded
Gaussian comparison curves, the analytic bound (5) and the normalising constant of
Figure 3 are computed here with :mod:`mpmath` (they are plots, not certified values).

Figures ("Figure n" is the paper's numbering; sensitivity Δ = 1 throughout):

``fig1_delta_vs_eps.png`` -- Figure 1, δ as a function of ε ∈ [0, 5] for one query,
    σ = 1 and σ = 10 (the paper does not state its σ): the exact δ of the discrete Gaussian
    (Theorem 7, ``accounting.gaussian_delta``), the exact δ of the continuous Gaussian
    (Balle & Wang: Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)), the analytic bound (5), the
    standard zCDP conversion exp(−(ε−ρ)²/4ρ) (``cdp_delta_standard``) and the improved
    conversion of Corollary 13 (``cdp_delta``), ρ = 1/(2σ²).  δ is drawn on a log scale (as
    log10, since it falls below the smallest float for σ = 10); the lower panels show each
    curve divided by the exact discrete δ.  For σ = 10, ε is sampled on εσ² ∈ ℤ: δ(ε) has a
    kink every 1/σ² in ε, which a coarser grid would alias into a sawtooth.
    Bound (5) as printed is *not* an upper bound: the proof of Lemma 11 takes
    P[Y > εσ²/Δ + Δ/2] as P[Y ≥ ⌊εσ²/Δ + Δ/2⌋] where the index should be the ceiling.  For
    σ = 1 it falls below the exact δ on about a third of the ε in (½, 5] (ε = 1.30: 0.0839 <
    0.0857; near ε = 1.5 it is negative).  The figure draws it as printed (dotted) and, thin,
    with the ceiling, which is a valid but much looser bound; the script prints where the
    printed one fails.

``fig2_tails.png`` -- Figure 2, utility.  Left: the tails P[X ≥ x] of the discrete
    (``gaussian_sf``), rounded and continuous Gaussians with σ = 1, with the subgaussian
    bound exp(−x²/2σ²) of Corollary 17.  Right: the variance of each, divided by σ², as a
    function of σ (discrete: ``gaussian_variance``).

``fig3_normaliser.png`` -- Figure 3, the normalising constant Σ_n exp(−n²/2σ²) against
    σ with the bounds (38) (used for σ ≥ 1/√(2π)) and (39) (σ < 1/√(2π)) of Fact 20 and
    the continuous constant √(2πσ²); right panel: the relative gap of each to the exact sum
    (mpmath, 150 digits).  At σ = 1/√(2π) the two pairs of bounds coincide (2π²σ² =
    1/(2σ²) = π, √(2πσ²) = 1), so the switch is a kink in the upper bound (see the zoom),
    not the discontinuity the paper's caption mentions.

``fig4_gauss_vs_laplace.png`` -- Figure 4, discrete Gaussian against discrete Laplace
    for k counting queries.  Left: k = 100 queries, noise variance 50² each; δ(ε) of the
    Gaussian through zCDP (ρ = k/2σ² = 0.02, ``cdp_delta``) and of the Laplace whose
    variance is 2500 (``laplace_delta`` with k = 100, exact optimal composition).
    Right: privacy fixed at (1, 10⁻⁶); the variance per query needed for k = 1..100
    (``calibrate_gaussian(..., method="zcdp")``, ``calibrate_laplace``).

``fig5_exact_vs_zcdp.png`` -- not in the paper: Figure 4 redrawn with the exact
    multivariate accounting of Theorem 15 beside the zCDP curve.  Left adds the exact δ
    of the 100-fold composition (``gaussian_delta(2500, ε, k=100)``); right adds the
    exact-calibrated Gaussian (``method="exact"``) and the percentage of noise variance it
    saves over zCDP calibration at each k (lower right panel).

The script ends with a table of the accounting calls it made: count, total time and the
slowest call with its arguments and result.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit(
        "figures.py needs matplotlib: pip install '.[plots]' (or python3 -m pip install matplotlib)"
    )

import mpmath
import numpy as np

from dgauss import accounting

ROOT = Path(__file__).resolve().parent.parent
DPI = 110
LN10 = math.log(10.0)

# The colours keep one meaning across figures.
C_DISCRETE = "tab:blue"
C_CONT = "tab:orange"
C_ROUNDED = "tab:green"
C_BOUND5 = "tab:purple"
C_CDP_STD = "tab:red"
C_CDP = "tab:brown"
C_LAPLACE = "tab:red"
C_EXACT = "tab:green"


# --------------------------------------------------------------------------- helpers

_T0 = time.perf_counter()


def progress(msg: str) -> None:
    print(f"  [{time.perf_counter() - _T0:6.1f}s] {msg}", flush=True)


class Timer:
    """Times calls into dgauss.accounting by name.

    Keeps the count, the total time and the slowest call (with its inputs).
    """

    def __init__(self) -> None:
        self.stats: dict[str, list] = {}

    def __call__(self, name: str, fn: Callable, *args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        dt = time.perf_counter() - t
        s = self.stats.setdefault(name, [0, 0.0, 0.0, None])
        s[0] += 1
        s[1] += dt
        if s[3] is None or dt > s[2]:
            s[2] = dt
            s[3] = (args, kwargs, out)
        return out

    def report(self) -> None:
        print("accounting calls (count, total s, slowest s: call -> result):")
        for name, (n, tot, worst, (args, kwargs, out)) in sorted(
            self.stats.items(), key=lambda kv: -kv[1][1]
        ):
            call = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
            print(f"  {name:<20} {n:5d} {tot:8.2f} {worst:8.3f}: {name}({call}) -> {out!r}")


ACC = Timer()


def log10_delta_axis(ax, label: str = "δ (log scale)") -> None:
    """The y axis holds log10(δ); label its integer ticks as powers of ten."""
    ax.yaxis.set_major_locator(MaxNLocator(nbins=7, integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"$10^{{{int(round(v))}}}$"))
    ax.set_ylabel(label)


def clean_log10(v: np.ndarray, floor: float = -1e5) -> np.ndarray:
    """NaN for log10 values that stand for δ = 0 (−inf, or a huge negative sentinel)."""
    v = np.asarray(v, dtype=float).copy()
    v[~np.isfinite(v) | (v < floor)] = np.nan
    return v


def mp_log10(x) -> float:
    """log10 of a non-negative mpmath number; -inf for 0 or negative (a failed subtraction)."""
    return float(mpmath.log10(x)) if x > 0 else -math.inf


def norm_sf(x) -> mpmath.mpf:
    """P[G > x] for G ~ N(0, 1), in mpmath (no underflow)."""
    return mpmath.erfc(mpmath.mpf(x) / mpmath.sqrt(2)) / 2


def save(fig, out: Path, name: str) -> Path:
    path = out / name
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- Figure 1


def continuous_delta(sigma: float, eps: float, sens: int = 1) -> mpmath.mpf:
    """Exact δ(ε) of the continuous Gaussian mechanism (Balle & Wang 2018, Thm 8)."""
    s, e, d = mpmath.mpf(sigma), mpmath.mpf(eps), mpmath.mpf(sens)
    return norm_sf(-(d / (2 * s) - e * s / d)) - mpmath.exp(e) * norm_sf(d / (2 * s) + e * s / d)


def bound5_delta(sigma2: float, eps: float, sens: int = 1, *, ceil_second: bool = False):
    """The analytic bound (5) (= Lemma 11, Eq. (11)); None where its hypotheses fail.

    As printed, both tails are taken at a floor.  The proof of Lemma 11 writes
    P[Y > εσ²/Δ + Δ/2] = P[Y ≥ m] with m = ⌊εσ²/Δ + Δ/2⌋, but for non-integer εσ²/Δ + Δ/2
    the right index is m + 1 = ⌈εσ²/Δ + Δ/2⌉, and with the floor the printed (5) falls below
    the exact δ (it is even negative: σ = 1, ε = 1.49 gives (5) ≈ −0.0032 while δ ≈ 0.0407).
    ceil_second=True takes the second tail at the ceiling: a valid, but much looser, bound.
    """
    s2, e, d = mpmath.mpf(sigma2), mpmath.mpf(eps), mpmath.mpf(sens)
    if not e > d * d / (2 * s2):
        return None
    lo, hi = e * s2 / d - d / 2, e * s2 / d + d / 2
    if (lo >= 0 and lo == mpmath.floor(lo)) or (hi >= 0 and hi == mpmath.floor(hi)):
        return None
    s = mpmath.sqrt(s2)
    c = 1 - 1 / (mpmath.sqrt(2 * mpmath.pi * s2) + 1)
    second = mpmath.ceil(hi) if ceil_second else mpmath.floor(hi)
    return norm_sf(mpmath.floor(lo) / s) - c * mpmath.exp(e) * norm_sf(second / s)


def fig1(out: Path) -> Path:
    sigmas = [1, 10]
    fig, axes = plt.subplots(
        2, 2, figsize=(12, 8), sharex="col", gridspec_kw={"height_ratios": [2.2, 1]}
    )
    for col, sigma in enumerate(sigmas):
        sigma2 = sigma * sigma
        rho = Fraction(1, 2 * sigma2)
        # δ(ε) has a kink each time εσ² − ½ crosses an integer (period 1/σ² in ε); for σ = 10 a grid
        # coarser than that would alias it, so ε runs over the grid εσ² ∈ ℤ (midway between kinks).
        eps = np.linspace(0.0, 5.0, 201) if sigma2 < 40 else np.arange(0, 5 * sigma2 + 1) / sigma2
        curves: dict[str, np.ndarray] = {}
        # exact discrete Gaussian (Theorem 7); eps is passed as a str so it is the decimal value
        curves["exact"] = clean_log10(
            [
                ACC("gaussian_delta", accounting.gaussian_delta, sigma2, f"{e:.4f}", log=True)
                / LN10
                for e in eps
            ]
        )
        with mpmath.workdps(60):
            curves["cont"] = np.array([mp_log10(continuous_delta(sigma, e)) for e in eps])
            b5 = [bound5_delta(sigma2, e) for e in eps]
            curves["bound5"] = np.array([np.nan if b is None else mp_log10(b) for b in b5])
            b5c = [bound5_delta(sigma2, e, ceil_second=True) for e in eps]
            curves["bound5c"] = np.array([np.nan if b is None else mp_log10(b) for b in b5c])
        curves["std"] = clean_log10(
            [
                ACC("cdp_delta_standard", accounting.cdp_delta_standard, rho, f"{e:.4f}", log=True)
                / LN10
                for e in eps
            ]
        )
        curves["cdp"] = clean_log10(
            [ACC("cdp_delta", accounting.cdp_delta, rho, f"{e:.4f}", log=True) / LN10 for e in eps]
        )
        progress(f"fig1: sigma = {sigma}: {len(eps)} values of eps from 0 to 5")
        # (5) as printed is not an upper bound: count where it falls below the exact δ (or below 0).
        valid = np.array([b is not None for b in b5])
        below = valid & np.isfinite(curves["exact"]) & ~(curves["bound5"] >= curves["exact"] - 1e-9)
        if below.any():
            i = int(np.argmax(below))
            exact_i = mpmath.mpf(10) ** curves["exact"][i]
            progress(
                f"fig1: sigma = {sigma}: bound (5) as printed is below the exact delta at "
                f"{int(below.sum())} of {int(valid.sum())} eps where it applies "
                f"(first: eps = {eps[i]:.4f}, (5) = {mpmath.nstr(b5[i], 4)}, "
                f"exact = {mpmath.nstr(exact_i, 4)})"
            )
        cbelow = (
            np.isfinite(curves["exact"])
            & np.isfinite(curves["bound5c"])
            & ~(curves["bound5c"] >= curves["exact"] - 1e-9)
        )
        if cbelow.any():
            progress(
                f"fig1: sigma = {sigma}: WARNING: the corrected (5) is below the exact delta "
                f"at {int(cbelow.sum())} eps"
            )

        styles = [
            ("std", "zCDP, standard bound exp(−(ε−ρ)²/4ρ)", dict(color=C_CDP_STD, ls="--")),
            ("cdp", "zCDP, Corollary 13", dict(color=C_CDP, ls="-.")),
            (
                "bound5",
                "analytic bound (5) as printed (not a bound: dips below exact)",
                dict(color=C_BOUND5, ls=":", lw=2),
            ),
            (
                "bound5c",
                "(5) with its 2nd tail at ⌈εσ²+½⌉ (a valid bound)",
                dict(color=C_BOUND5, ls="-", lw=0.9, alpha=0.6),
            ),
            ("cont", "continuous Gaussian, exact (Balle–Wang)", dict(color=C_CONT, ls="-", lw=1.5)),
            (
                "exact",
                "discrete Gaussian, exact (Theorem 7)",
                dict(color=C_DISCRETE, ls="-", lw=2.5, alpha=0.8),
            ),
        ]
        top, bottom = axes[0, col], axes[1, col]
        for key, label, st in styles:
            top.plot(eps, curves[key], label=label, **st)
            bottom.plot(eps, (curves[key] - curves["exact"]), **st)
        top.set_title(f"σ = {sigma} (σ² = {sigma2}, ρ = 1/(2σ²) = {float(rho):g}), Δ = 1")
        log10_delta_axis(top)
        top.grid(True, alpha=0.3)
        top.legend(fontsize=8.5, loc="lower left")
        bottom.axhline(0, color="k", lw=0.6)
        bottom.set_xlabel(
            "ε"
            if sigma2 < 40
            else "ε (sampled where εσ² ∈ ℤ, midway between the kinks of the exact δ)"
        )
        bottom.set_ylabel("log10(δ / exact discrete δ)")
        bottom.grid(True, alpha=0.3)
        lo = np.nanmin(np.concatenate([curves[k] - curves["exact"] for k in ("cont",)]))
        hi = np.nanmax(
            np.concatenate([curves[k] - curves["exact"] for k in ("std", "cdp", "bound5")])
        )
        lo = min(
            lo, -0.6
        )  # show where (5) as printed falls below the exact δ (the curve leaves the panel)
        bottom.set_ylim(min(-0.1, lo * 1.1), hi * 1.05 + 0.1)
        top.set_xlim(0, 5)
    fig.suptitle(
        "Figure 1 (Canonne–Kamath–Steinke): approximate (ε, δ)-DP of one query "
        "with discrete Gaussian noise"
    )
    fig.tight_layout()
    return save(fig, out, "fig1_delta_vs_eps.png")


# --------------------------------------------------------------------------- Figure 2


def rounded_variance(sigma: float) -> float:
    """Var[round(G)] for G ~ N(0, σ²) (floats, summed to 40σ)."""
    r2 = sigma * math.sqrt(2)
    return sum(
        n * n * (math.erfc((n - 0.5) / r2) - math.erfc((n + 0.5) / r2))
        for n in range(1, int(40 * sigma) + 12)
    )


def fig2(out: Path) -> Path:
    sigma = 1
    sigma2 = sigma * sigma
    xmax = 6.0
    x = np.linspace(1e-3, xmax, 1200)
    # For x > 0 and integer-valued X, P[X >= x] = P[X >= ceil(x)] = P[X > ceil(x) - 1].
    ints = np.arange(0, int(math.ceil(xmax)) + 1)
    disc_sf = {int(m): ACC("gaussian_sf", accounting.gaussian_sf, int(m), sigma2) for m in ints}
    c = np.ceil(x).astype(int)
    discrete = np.array([disc_sf[int(m) - 1] for m in c])
    rounded = np.array([0.5 * math.erfc((m - 0.5) / (sigma * math.sqrt(2))) for m in c])
    cont = np.array([0.5 * math.erfc(v / (sigma * math.sqrt(2))) for v in x])
    subg = np.exp(-x * x / (2 * sigma2))

    sig = np.linspace(0.1, 4.0, 79)
    var_r = np.array([rounded_variance(s) for s in sig])
    var_d = np.array(
        [ACC("gaussian_variance", accounting.gaussian_variance, f"{s * s:.6f}") for s in sig]
    )
    var_d_sig2 = var_d / np.array([float(Fraction(f"{s * s:.6f}")) for s in sig])
    progress(f"fig2: tails at {len(ints)} integers, variance at {len(sig)} values of sigma")

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8))
    a.semilogy(x, subg, color="0.5", ls="--", label="subgaussian bound exp(−x²/2σ²) (Cor. 17)")
    a.semilogy(x, rounded, color=C_ROUNDED, lw=2, label="rounded Gaussian ⌊G⌉")
    a.semilogy(x, discrete, color=C_DISCRETE, lw=2, label="discrete Gaussian N_Z(0, σ²)")
    a.semilogy(x, cont, color=C_CONT, lw=1.5, label="continuous Gaussian N(0, σ²)")
    a.set_xlabel("x")
    a.set_ylabel("P[X ≥ x] (log scale)")
    a.set_title(f"Tails, σ = {sigma}")
    a.set_xlim(0, xmax)
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=9, loc="lower left")

    b.plot(sig, var_r / sig**2, color=C_ROUNDED, lw=2, label="rounded Gaussian")
    b.axhline(1.0, color=C_CONT, lw=1.5, label="continuous Gaussian (= σ²)")
    b.plot(sig, var_d_sig2, color=C_DISCRETE, lw=2, label="discrete Gaussian")
    b.set_xlabel("σ")
    b.set_ylabel("Var[X] / σ²")
    b.set_title("Variance")
    b.set_xlim(0, sig[-1])
    b.set_ylim(0, 1.42)
    b.grid(True, alpha=0.3)
    b.legend(fontsize=9, loc="lower right")
    fig.suptitle(
        "Figure 2 (Canonne–Kamath–Steinke): tails and variance of continuous, "
        "discrete and rounded Gaussians"
    )
    fig.tight_layout()
    return save(fig, out, "fig2_tails.png")


# --------------------------------------------------------------------------- Figure 3


def normaliser(sigma) -> mpmath.mpf:
    """Σ_n exp(−n²/2σ²), summed directly to below the working precision."""
    s2 = 2 * mpmath.mpf(sigma) ** 2
    tot, n = mpmath.mpf(1), 1
    eps = mpmath.mpf(2) ** (-mpmath.mp.prec - 10)
    while True:
        t = mpmath.exp(-n * n / s2)
        tot += 2 * t
        if t < eps * tot:
            return tot
        n += 1


def fig3(out: Path) -> Path:
    sig = np.linspace(0.01, 1.5, 299)
    cut = 1 / math.sqrt(2 * math.pi)
    rows = []
    with mpmath.workdps(150):  # the lower bound (38) is tight to ~2·exp(−8π²σ²) ≈ 1e-77 at σ = 1.5
        for s in sig:
            S = mpmath.mpf(s)
            exact = normaliser(S)
            root = mpmath.sqrt(2 * mpmath.pi) * S
            a = mpmath.exp(-2 * mpmath.pi**2 * S**2)
            b = mpmath.exp(-1 / (2 * S**2))
            lo38, hi38 = root * (1 + 2 * a), root * (1 + 2 * a) + a
            lo39, hi39 = 1 + 2 * b, 1 + 2 * b + root * b
            lo, hi = (lo38, hi38) if s >= cut else (lo39, hi39)
            rows.append(
                [
                    float(exact),
                    float(root),
                    float(lo),
                    float(hi),
                    mp_log10((exact - lo) / exact),
                    mp_log10((hi - exact) / exact),
                    mp_log10(abs(root - exact) / exact),
                ]
            )
    r = np.array(rows)
    progress(f"fig3: exact sum at {len(sig)} values of sigma")

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8))
    a.plot(sig, r[:, 3], color=C_CONT, lw=1.8, label="upper bound, Fact 20 ((39) | (38))")
    a.plot(sig, r[:, 2], color=C_ROUNDED, lw=1.8, label="lower bound, Fact 20 ((39) | (38))")
    a.plot(sig, r[:, 1], color=C_CDP_STD, lw=1.2, ls="--", label="√(2πσ²) (continuous Gaussian)")
    a.plot(sig, r[:, 0], color=C_DISCRETE, lw=2.2, ls=":", label="exact Σₙ exp(−n²/2σ²)")
    a.axvline(cut, color="0.5", lw=0.8, ls=":")
    a.text(cut + 0.02, 2.6, "σ = 1/√(2π)", fontsize=8, color="0.35")
    a.set_xlabel("σ")
    a.set_ylabel("normalising constant")
    a.set_xlim(0, sig[-1])
    a.set_ylim(0, 4.2)
    a.set_title("Bounds (Fact 20) and the exact sum")
    a.grid(True, alpha=0.3)
    a.legend(fontsize=9, loc="upper left")
    # Zoom on the switch between (39) and (38): both pairs of bounds agree at σ = 1/√(2π)
    # (there 2π²σ² = 1/(2σ²) = π and √(2πσ²) = 1), so the switch is a kink, not a jump.
    z = a.inset_axes([0.53, 0.06, 0.44, 0.36])
    m = (sig >= 0.25) & (sig <= 0.65)
    z.plot(sig[m], r[m, 3], color=C_CONT, lw=1.5)
    z.plot(sig[m], r[m, 2], color=C_ROUNDED, lw=1.5)
    z.plot(sig[m], r[m, 1], color=C_CDP_STD, lw=1, ls="--")
    z.plot(sig[m], r[m, 0], color=C_DISCRETE, lw=2, ls=":")
    z.axvline(cut, color="0.5", lw=0.8, ls=":")
    z.set_xlim(0.25, 0.65)
    z.set_ylim(0.95, 1.75)
    z.tick_params(labelsize=7)
    z.set_title("zoom", fontsize=8, pad=2)
    z.grid(True, alpha=0.3)

    b.plot(sig, r[:, 5], color=C_CONT, lw=1.8, label="upper bound: (bound − exact) / exact")
    b.plot(sig, r[:, 4], color=C_ROUNDED, lw=1.8, label="lower bound: (exact − bound) / exact")
    b.plot(
        sig, r[:, 6], color=C_CDP_STD, lw=1.2, ls="--", label="√(2πσ²): |√(2πσ²) − exact| / exact"
    )
    b.axvline(cut, color="0.5", lw=0.8, ls=":")
    b.set_xlabel("σ")
    log10_delta_axis(b, "relative gap (log scale)")
    b.set_xlim(0, sig[-1])
    b.set_ylim(max(-320.0, math.floor(np.nanmin(r[:, 4:][np.isfinite(r[:, 4:])])) - 3), 3)
    b.set_title("Relative gap to the exact sum")
    b.grid(True, alpha=0.3)
    b.legend(fontsize=9, loc="lower right")
    fig.suptitle(
        "Figure 3 (Canonne–Kamath–Steinke): the normalising constant Σₙ exp(−n²/2σ²) against σ"
    )
    fig.tight_layout()
    return save(fig, out, "fig3_normaliser.png")


# --------------------------------------------------------------------------- Figure 4 / 5 data

K = 100
SIGMA2 = 2500
KS = [1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100]
EPS4 = np.round(np.linspace(0.0, 3.5, 141), 6)
_DATA: dict[str, object] = {}


def laplace_scale_for_variance(target: float) -> float:
    """The Laplace scale t with laplace_variance(t) = target, by bisection (variance ≈ 2t²)."""
    lo, hi = 1e-3, 2.0 * math.sqrt(target) + 10.0
    assert (
        ACC("laplace_variance", accounting.laplace_variance, lo)
        < target
        < ACC("laplace_variance", accounting.laplace_variance, hi)
    )
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if ACC("laplace_variance", accounting.laplace_variance, mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


def left_data(with_exact: bool) -> dict[str, object]:
    """Figure 4 left: δ(ε) for k = 100 queries of variance 2500 (the exact curve only for fig5)."""
    d = _DATA.setdefault("left", {})
    eps_s = [f"{e:.6f}" for e in EPS4]  # decimal strings: the accounting takes them exactly
    if "zcdp" not in d:
        rho = Fraction(K, 2 * SIGMA2)
        t = laplace_scale_for_variance(SIGMA2)
        d["t"] = t
        d["lap_var"] = ACC("laplace_variance", accounting.laplace_variance, t)
        d["lap_pure_eps"] = K * ACC("laplace_epsilon", accounting.laplace_epsilon, t)
        d["zcdp"] = clean_log10(
            [ACC("cdp_delta", accounting.cdp_delta, rho, e, log=True) / LN10 for e in eps_s]
        )
        d["lap"] = clean_log10(
            [
                ACC("laplace_delta", accounting.laplace_delta, t, e, k=K, log=True) / LN10
                for e in eps_s
            ]
        )
        progress(
            f"fig4: left panel, zCDP and Laplace at {len(EPS4)} values of eps "
            f"(Laplace scale t = {t:.6f})"
        )
    if with_exact and "exact" not in d:
        d["exact"] = clean_log10(
            [
                ACC("gaussian_delta[k=100]", accounting.gaussian_delta, SIGMA2, e, k=K, log=True)
                / LN10
                for e in eps_s
            ]
        )
        progress(
            "fig5: left panel, exact delta of the 100-fold composition "
            f"at {len(EPS4)} values of eps"
        )
    return d  # type: ignore[return-value]


def right_data(with_exact: bool) -> dict[str, object]:
    """Figure 4 right: variance per query at (1, 1e-6) for the k in KS.

    The exact calibration is computed only for fig5.
    """
    d = _DATA.setdefault("right", {})
    if "zcdp" not in d:
        zc, lp = [], []
        for k in KS:
            s2 = ACC(
                "calibrate_gaussian[zcdp]",
                accounting.calibrate_gaussian,
                1,
                "1e-6",
                k=k,
                method="zcdp",
            )
            zc.append(ACC("gaussian_variance", accounting.gaussian_variance, s2))
            t = ACC("calibrate_laplace", accounting.calibrate_laplace, 1, "1e-6", k=k)
            lp.append(ACC("laplace_variance", accounting.laplace_variance, t))
        d["zcdp"], d["lap"] = np.array(zc), np.array(lp)
        progress(f"fig4: right panel, zCDP and Laplace calibration at {len(KS)} values of k")
    if with_exact and "exact" not in d:
        ex = []
        for k in KS:
            s2 = ACC(
                "calibrate_gaussian[exact]",
                accounting.calibrate_gaussian,
                1,
                "1e-6",
                k=k,
                method="exact",
            )
            ex.append(ACC("gaussian_variance", accounting.gaussian_variance, s2))
        d["exact"] = np.array(ex)
        progress(f"fig5: right panel, exact calibration at {len(KS)} values of k")
    return d  # type: ignore[return-value]


def _sci(log10v: float) -> str:
    """10**log10v as '2.06e-05', without underflow."""
    if not math.isfinite(log10v):
        return "0"
    e = math.floor(log10v)
    return f"{10 ** (log10v - e):.3g}e{e:+03d}"


def _left_panel(ax, L, with_exact: bool) -> None:
    eps = EPS4
    i1 = int(np.argmin(np.abs(eps - 1.0)))
    ax.axvline(1.0, color="0.6", lw=0.6)
    series = [
        (
            "lap",
            C_LAPLACE,
            "-",
            f"discrete Laplace, scale t = {L['t']:.3f}, variance 2500 (exact composition)",
        ),
        ("zcdp", C_DISCRETE, "-", "discrete Gaussian, σ² = 2500 (zCDP, Corollary 13)"),
    ]
    if with_exact:
        series.append(("exact", C_EXACT, "--", "discrete Gaussian, σ² = 2500 (exact, Theorem 15)"))
    for key, col, ls, label in series:
        ax.plot(
            eps,
            L[key],
            color=col,
            lw=2,
            ls=ls,
            label=f"{label}\n    δ at ε = 1: {_sci(L[key][i1])}",
        )
        ax.plot([eps[i1]], [L[key][i1]], "o", color=col, ms=5)
    ax.axvline(L["lap_pure_eps"], color=C_LAPLACE, lw=0.8, ls=":")
    ax.text(
        L["lap_pure_eps"] + 0.04,
        -2,
        f"Laplace:\npure DP\nat ε = {L['lap_pure_eps']:.2f}",
        fontsize=8,
        color=C_LAPLACE,
        ha="left",
        va="top",
    )
    ax.set_xlabel("ε")
    log10_delta_axis(ax)
    ax.set_xlim(0, eps[-1])
    fin = np.concatenate([L["zcdp"], L["lap"]])
    fin = fin[np.isfinite(fin)]
    ax.set_ylim(max(-120, math.floor(np.min(fin)) - 2), 0.5)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("k = 100 counting queries, noise variance 50² each")


def _right_axes(ax, xlabel: bool = True) -> None:
    if xlabel:
        ax.set_xlabel("number of counting queries k")
    ax.set_ylabel("variance of the noise per query")
    ax.set_xlim(0, 101)
    ax.grid(True, alpha=0.3)
    ax.set_title("privacy fixed at (ε, δ) = (1, 10⁻⁶)")


def fig4(out: Path) -> Path:
    L = left_data(with_exact=False)
    R = right_data(with_exact=False)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12.5, 5))
    _left_panel(a, L, with_exact=False)
    b.plot(KS, R["lap"], "o-", color=C_LAPLACE, ms=4, label="discrete Laplace (exact composition)")
    b.plot(KS, R["zcdp"], "o-", color=C_DISCRETE, ms=4, label="discrete Gaussian (zCDP)")
    _right_axes(b)
    ratio = R["lap"][-1] / R["zcdp"][-1]
    less = [k for k, l, g in zip(KS, R["lap"], R["zcdp"], strict=True) if l < g]
    b.text(
        0.97,
        0.05,
        f"k = 100: Laplace {R['lap'][-1]:.1f}, Gaussian {R['zcdp'][-1]:.1f}\n"
        f"(Laplace needs {100 * (ratio - 1):.0f}% more variance)\n"
        + (
            f"Laplace needs less at k ∈ {{{', '.join(map(str, less))}}}"
            if less
            else "Gaussian needs less at every k"
        ),
        transform=b.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
        bbox=dict(boxstyle="round", fc="white", ec="0.7"),
    )
    b.legend(fontsize=9, loc="upper left")
    fig.suptitle(
        "Figure 4 (Canonne–Kamath–Steinke): discrete Gaussian against discrete Laplace noise"
    )
    fig.tight_layout()
    return save(fig, out, "fig4_gauss_vs_laplace.png")


def fig5(out: Path) -> Path:
    L = left_data(with_exact=True)
    R = right_data(with_exact=True)
    saving = 100.0 * (1.0 - R["exact"] / R["zcdp"])
    fig = plt.figure(figsize=(12.5, 6))
    gs = fig.add_gridspec(2, 2, height_ratios=[2.3, 1])
    a = fig.add_subplot(gs[:, 0])
    b = fig.add_subplot(gs[0, 1])
    c = fig.add_subplot(gs[1, 1], sharex=b)
    _left_panel(a, L, with_exact=True)
    b.plot(KS, R["lap"], "o-", color=C_LAPLACE, ms=4, label="discrete Laplace (exact composition)")
    b.plot(
        KS, R["zcdp"], "o-", color=C_DISCRETE, ms=4, label="discrete Gaussian (zCDP calibration)"
    )
    b.plot(
        KS, R["exact"], "s--", color=C_EXACT, ms=4, label="discrete Gaussian (exact calibration)"
    )
    _right_axes(b, xlabel=False)
    plt.setp(b.get_xticklabels(), visible=False)
    b.legend(fontsize=8.5, loc="upper left")
    less_z = [k for k, l, g in zip(KS, R["lap"], R["zcdp"], strict=True) if l < g]
    less_x = [k for k, l, g in zip(KS, R["lap"], R["exact"], strict=True) if l < g]
    b.text(
        0.97,
        0.05,
        "Laplace needs less variance than the Gaussian at\n"
        f"k ∈ {{{', '.join(map(str, less_z))}}} (zCDP), "
        f"k ∈ {{{', '.join(map(str, less_x))}}} (exact)",
        transform=b.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
        bbox=dict(boxstyle="round", fc="white", ec="0.7"),
    )
    c.plot(KS, saving, "s-", color=C_EXACT, ms=4)
    c.set_xlabel("number of counting queries k")
    c.set_ylabel("variance saved\nvs zCDP (%)")
    c.set_ylim(0, max(20.0, float(np.max(saving)) * 1.25))
    c.grid(True, alpha=0.3)
    c.annotate(
        f"{saving[-1]:.2f}% at k = 100\n(variance {R['exact'][-1]:.1f} vs {R['zcdp'][-1]:.1f})",
        (KS[-1], saving[-1]),
        textcoords="offset points",
        xytext=(-8, -30),
        ha="right",
        fontsize=8.5,
    )
    fig.suptitle(
        "Figure 4 redrawn with exact accounting (Theorem 15) "
        "beside the paper's zCDP curves (not in the paper)"
    )
    fig.tight_layout()
    return save(fig, out, "fig5_exact_vs_zcdp.png")


# --------------------------------------------------------------------------- main

FIGURES = {"fig1": fig1, "fig2": fig2, "fig3": fig3, "fig4": fig4, "fig5": fig5}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        default=str(ROOT / "docs" / "figures"),
        help="output directory (default: docs/figures)",
    )
    ap.add_argument("--only", nargs="+", choices=sorted(FIGURES), help="draw only these figures")
    ap.add_argument(
        "--quiet-calls", action="store_true", help="do not print the per-call timing summary"
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(FIGURES)
    t_all = time.perf_counter()
    for name in names:
        t = time.perf_counter()
        path = FIGURES[name](out)
        print(f"{name}: {path} ({time.perf_counter() - t:.1f}s)", flush=True)
    print(f"total: {time.perf_counter() - t_all:.1f}s")
    if not args.quiet_calls:
        ACC.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
