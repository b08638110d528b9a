"""``dgauss calibrate``: the noise that gives a target (eps, delta), by three routes."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from fractions import Fraction

from dgauss import accounting
from dgauss.cli import _ledger
from dgauss.cli._common import (
    _QUERIES_HELP,
    INTERVAL_ALPHA,
    _accounting_errors,
    _add_query_options,
    _grid_text,
    _large_delta_warning,
    _one_line_errors,
    _or_none,
    _queries,
    _relative,
    _table,
    _utility,
)
from dgauss.cli._io import _digits


def _add_calibrate(commands: argparse._SubParsersAction) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="the noise that gives (eps, delta)-DP: discrete Gaussian (exact and zCDP "
        "accounting) beside the discrete Laplace",
        description="Print, for a target (eps, delta) over K queries, the smallest noise parameter "
        "(4 significant digits) that provably reaches it, and from which every larger one "
        "does, by three routes: the "
        "discrete Gaussian with exact accounting (Theorems 7 and 15), the discrete "
        "Gaussian with zCDP accounting (Corollary 13), and the discrete Laplace; with "
        "each one's noise variance, standard deviation and 95% interval. "
        "Parameters are exact rationals: '1', '0.5', '1/3', '1e-6'. " + _QUERIES_HELP,
    )
    calibrate.set_defaults(command=run_calibrate)
    calibrate.add_argument(
        "--eps", "--epsilon", metavar="EPS", help="the target epsilon, > 0 (required)"
    )
    calibrate.add_argument(
        "--delta", metavar="DELTA", help="the target delta, 0 < DELTA < 1, e.g. 1e-6 (required)"
    )
    _add_query_options(calibrate)
    _ledger.add_calibrate_options(calibrate)
    _one_line_errors(calibrate)


@dataclass(frozen=True)
class Route:
    """One row of ``calibrate``: a mechanism, its calibrated parameter and its utility."""

    name: str
    symbol: str
    param: Fraction
    variance: float | None  # None: beyond the float range
    width: int  # the interval is [-width, width]


def run_calibrate(args: argparse.Namespace) -> int:
    """Carry out ``dgauss calibrate``; see :func:`main` for the exit status."""
    if args.ledger is not None:
        return _ledger.run_calibrate(args)
    _large_delta_warning("calibrate", args.delta)
    return _accounting_errors("calibrate", lambda: _calibration(args))


def _calibration(args: argparse.Namespace) -> list[str]:
    """The lines ``calibrate`` prints."""
    missing = [name for name, value in (("--eps", args.eps), ("--delta", args.delta)) if not value]
    if missing:
        raise ValueError(
            f"{' and '.join(missing)} required: the target (or --ledger FILE: what is left "
            "of its budget)"
        )
    queries = _queries(args)
    eps, delta = args.eps.strip(), args.delta.strip()
    sens, k = queries.sensitivity, queries.k
    gauss = [
        (
            "discrete Gaussian, exact",
            accounting.calibrate_gaussian(eps, delta, sens, k, method="exact", round_up_safe=True),
        ),
        (
            "discrete Gaussian, zCDP",
            accounting.calibrate_gaussian(eps, delta, sens, k, method="zcdp"),
        ),
    ]
    routes = [
        Route(
            name,
            "sigma2",
            s,
            _or_none(accounting.gaussian_variance, s),
            accounting.gaussian_interval(s, INTERVAL_ALPHA)[1],
        )
        for name, s in gauss
    ]
    scale = accounting.calibrate_laplace(eps, delta, queries.l1, k)
    routes.append(
        Route(
            "discrete Laplace",
            "scale",
            scale,
            _or_none(accounting.laplace_variance, scale),
            accounting.laplace_interval(scale, INTERVAL_ALPHA)[1],
        )
    )

    confidence = f"{float(100 * (1 - INTERVAL_ALPHA)):g}% interval"
    header = ["route", "parameter", "variance", "std dev", confidence]
    rows = [
        [
            r.name,
            f"{r.symbol} = {_grid_text(r.param)}",
            _utility(r.variance),
            _utility(None if r.variance is None else math.sqrt(r.variance)),
            "+-" + _digits(r.width),
        ]
        for r in routes
    ]
    laplace_note = (
        f" (l1 norm {queries.l1} for the Laplace)" if isinstance(queries.sensitivity, tuple) else ""
    )
    lines = [
        f"dgauss calibrate: (eps, delta) = ({eps}, {delta}) over {queries.describe()}{laplace_note}"
    ]
    if not isinstance(queries.sensitivity, tuple) and queries.sensitivity > 1:
        # a bound: each noise accounts its own norm's ball
        lines.append(
            f"  (a bound: the Gaussian accounts every integer difference vector of l2 norm "
            f"<= {queries.sensitivity}, the Laplace of l1 norm <= {queries.l1})"
        )
    lines += _table(header, rows, right=(2, 3, 4))
    exact, zcdp, laplace = (r.variance for r in routes)
    if exact is not None and zcdp is not None:
        lines.append(f"  exact accounting needs {_relative(exact, zcdp, 'zCDP')}")
    if laplace is not None and exact is not None:
        lines.append(
            "  the discrete Laplace needs "
            f"{_relative(laplace, exact, 'the exact discrete Gaussian')}"
        )
    lines.append(
        f"  (each parameter is the smallest with {accounting.GRID_DIGITS} significant digits "
        "from which every larger one"
    )
    lines.append("   provably reaches the target: round up freely;")
    lines.append("   variance and std dev are per coordinate of each query)")
    smallest = accounting.calibrate_gaussian(eps, delta, sens, k, method="exact")
    if smallest != routes[0].param:
        lines.append(
            f"  note: sigma2 = {_grid_text(smallest)} alone also reaches the target, but some "
            f"values between it and {_grid_text(routes[0].param)} do not"
        )
        lines.append("   (at large eps the exact delta is not monotone in sigma2)")
    return lines
