"""Bounded contributions: δ at the worst vector of the set, at the single shift and by zCDP.

Run from a checkout or an installed dgauss (about 30 s on one core)::

    python benchmarks/contributions_table.py

A person with at most m rows (``Contributions(max_rows=m)``), or with at most m rows in at
most c cells and at most r rows a cell (``Contributions(max_rows=m, max_groups=c,
max_rows_per_group=r)``), moves a table of counts by one of the set's maximal vectors (the
partitions of min(m, c·r) into at most c parts each at most r; ``docs/accounting.md``,
*Bounded contributions*).  For m = 1 … 6, each σ² and ε of the grid and each case, the first
tables give

* the set's δ (``gaussian_delta(σ², ε, Contributions(...))``: the worst of its maximal vectors)
  and which vector attains it, found by evaluating every maximal vector on its own;
* δ at the single shift (m,), one cell moved by m (shown only where it differs from the set's);
* the zCDP bound a norm-only accountant gives, Corollary 13 at ρ = ‖μ‖²/(2σ²) for the set's
  largest ‖μ‖² (m² when (m,) is in the set).

The last table gives the least σ² (``calibrate_gaussian``, 4 significant digits) that
certifies (ε, δ) = (1, 10⁻⁶) at the set's worst vector, for the single shift (m,), and by
zCDP at the set's largest norm.  Every δ is printed rounded up (4 digits).  The script fails
(AssertionError) if the set's δ is not the largest of its vectors' δ's.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

from dgauss import accounting as A
from dgauss._rounding import _rounded_up_from_log
from dgauss.accounting import Contributions

ROWS = range(1, 7)
SIGMA2 = ("0.5", "2", "10", "50")
EPSILON = ("0.5", "1", "4")
#: (label, c, r): the bounds beside max_rows = m (None: no bound)
CASES = (("max_rows = m", None, None), ("max_rows = m, c = 3 cells, r = 2 rows a cell", 3, 2))
TARGET = ("1", "1e-6")


def _shown(vector: tuple[int, ...]) -> str:
    """A vector as the page writes it: (2, 1), (3,)."""
    return "(" + ", ".join(map(str, vector)) + ("," if len(vector) == 1 else "") + ")"


def _delta(log_delta: float) -> str:
    """δ from its logarithm, rounded up to 4 significant digits."""
    return _rounded_up_from_log(log_delta)


def delta_rows(c: int | None, r: int | None) -> tuple[list[str], list[str]]:
    """The δ table of one case (Markdown lines) and the rows where the worst vector is not the
    greedy one (the set's largest norm)."""
    lines = [
        "| m | σ² | worst vector | "
        + " | ".join(f"ε = {e}: set (worst) | ε = {e}: zCDP" for e in EPSILON)
        + " |",
        "|---:|---:|---|" + "---:|---:|" * len(EPSILON),
    ]
    odd = []
    for m in ROWS:
        sens = Contributions(max_rows=m, max_groups=c, max_rows_per_group=r)
        vectors = sens.vectors()
        assert vectors is not None
        greedy = sens.member()
        for sigma2 in SIGMA2:
            cells, worst_seen = [], []
            for eps in EPSILON:
                each = {v: A.gaussian_delta(sigma2, eps, list(v), log=True) for v in vectors}
                worst = max(each, key=lambda v: each[v])
                whole = A.gaussian_delta(sigma2, eps, sens, log=True)
                assert whole == each[worst], (m, sigma2, eps, whole, each)
                text = _delta(whole)
                if (m,) != worst:
                    shift = A.gaussian_delta(sigma2, eps, [m], log=True)
                    text += f" [(m,): {_delta(shift)}]"
                rho = Fraction(sens.norm2) / (2 * Fraction(sigma2))
                cells += [text, _delta(A.cdp_delta(rho, eps, log=True))]
                worst_seen.append(worst)
                if worst != greedy:
                    odd.append(f"m = {m}, σ² = {sigma2}, ε = {eps}: {_shown(worst)}")
            named = {_shown(v) for v in worst_seen}
            label = named.pop() if len(named) == 1 else " / ".join(map(_shown, worst_seen))
            lines.append(f"| {m} | {sigma2} | {label} | " + " | ".join(cells) + " |")
    return lines, odd


def calibration_rows() -> list[str]:
    """σ² at TARGET for each case and m: the set's worst vector, (m,), zCDP."""
    eps, delta = TARGET
    head = "| m |"
    rule = "|---:|"
    for label, _, _ in CASES:
        head += f" {label}: worst vector | σ² | (m,) | zCDP | zCDP ÷ worst |"
        rule += "---|---:|---:|---:|---:|"
    lines = [head, rule]
    for m in ROWS:
        row = f"| {m} |"
        for _, c, r in CASES:
            sens = Contributions(max_rows=m, max_groups=c, max_rows_per_group=r)
            exact = A.calibrate_gaussian(eps, delta, sens)
            # the calibrated σ² certifies every maximal vector (the accounting's promise)
            assert all(A.gaussian_delta(exact, eps, list(v)) <= 1e-6 for v in sens.vectors())
            each = {v: A.gaussian_delta(exact, eps, list(v), log=True) for v in sens.vectors()}
            worst = max(each, key=lambda v: each[v])
            shift = A.calibrate_gaussian(eps, delta, [m])
            zcdp = A.calibrate_gaussian(eps, delta, sens, method="zcdp")
            row += f" {_shown(worst)} | {float(exact):g} | {float(shift):g} | "
            row += f"{float(zcdp):g} | {float(zcdp / exact):.3f} |"
        lines.append(row)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.parse_args()
    for label, c, r in CASES:
        lines, odd = delta_rows(c, r)
        print(f"δ, {label} (σ² ∈ {{{', '.join(SIGMA2)}}}, ε ∈ {{{', '.join(EPSILON)}}}):\n")
        print("\n".join(lines))
        if odd:
            print("\nthe worst vector is not the greedy (largest-norm) one at:", "; ".join(odd))
        else:
            print("\nthe worst vector is the greedy (largest-norm) one in every row")
        print()
    print(f"σ² calibrated at (ε, δ) = ({TARGET[0]}, {TARGET[1]}), 4 significant digits:\n")
    print("\n".join(calibration_rows()))


if __name__ == "__main__":
    main()
