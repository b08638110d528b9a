"""``dgauss account``: the privacy of given noise, or of a whole release program."""

from __future__ import annotations

import argparse
from fractions import Fraction

from dgauss import _params, accounting
from dgauss.cli._common import (
    _QUERIES_HELP,
    PRIVACY_DIGITS,
    _accounting_errors,
    _add_noise_choice,
    _add_query_options,
    _delta_text,
    _one_line_errors,
    _queries,
    _rho_text,
    _rounded_up,
    _table,
    _values,
)

#: The epsilons and deltas ``account`` reports when none are given.
DEFAULT_EPS = "0.5,1,2,4,8"


DEFAULT_DELTA = "1e-5,1e-6,1e-9"


def _add_account(commands: argparse._SubParsersAction) -> None:
    account = commands.add_parser(
        "account",
        help="the privacy of given noise: delta at several eps and eps at several delta",
        description="Print the privacy of N_Z(0, SIGMA2) or Lap_Z(SCALE) noise on K queries: "
        "delta at each eps and eps at each delta, for the discrete Gaussian by "
        "exact accounting (Theorems 7 and 15) and by zCDP (Corollary 13, rho = "
        "K*|sensitivity|^2/(2*SIGMA2)); for the discrete Laplace by its exact "
        "composition (Eq. 49), with its pure eps = "
        "K*sensitivity/SCALE. Every delta "
        "and eps is rounded up. " + _QUERIES_HELP,
    )
    account.set_defaults(command=run_account)
    _add_noise_choice(account, "account for", "")
    account.add_argument(
        "--eps",
        default=DEFAULT_EPS,
        metavar="LIST",
        help=f"comma-separated eps >= 0 at which to print delta (default {DEFAULT_EPS})",
    )
    account.add_argument(
        "--delta",
        default=DEFAULT_DELTA,
        metavar="LIST",
        help=f"comma-separated 0 < delta < 1 at which to print eps (default {DEFAULT_DELTA})",
    )
    _add_query_options(account)
    _one_line_errors(account)


def run_account(args: argparse.Namespace) -> int:
    """Carry out ``dgauss account``; see :func:`main` for the exit status."""
    return _accounting_errors("account", lambda: _account(args))


def _account(args: argparse.Namespace) -> list[str]:
    """The lines ``account`` prints."""
    queries = _queries(args)
    sens, k = queries.sensitivity, queries.k
    epsilons, deltas = _values(args.eps), _values(args.delta)
    if args.sigma2 is not None:
        sigma2 = args.sigma2.strip()
        rho = k * accounting.gaussian_rho(sigma2, sens)
        lines = [
            f"dgauss account: N_Z(0, {sigma2}) noise on {queries.describe()}",
            f"  zCDP: rho = k*|sensitivity|^2/(2*sigma2) = {_rho_text(rho)}",
        ]
        delta_rows = [
            [
                e,
                _delta_text(accounting.gaussian_delta, sigma2, e, sens, k),
                _delta_text(accounting.cdp_delta, rho, e),
            ]
            for e in epsilons
        ]
        eps_rows = [
            [
                d,
                _rounded_up(accounting.gaussian_epsilon(sigma2, d, sens, k)),
                _rounded_up(accounting.cdp_eps(rho, d)),
            ]
            for d in deltas
        ]
        lines += [""] + _table(["eps", "delta, exact", "delta, zCDP"], delta_rows, right=(1, 2))
        lines += [""] + _table(["delta", "eps, exact", "eps, zCDP"], eps_rows, right=(1, 2))
        lines.append(
            "  (exact: Theorems 7/15; zCDP: Corollary 13; rounded up to "
            f"{PRIVACY_DIGITS} significant digits)"
        )
        return lines
    scale = args.laplace.strip()
    accounting.laplace_epsilon(scale, queries.l1)  # checks --laplace
    pure = Fraction(k * queries.l1) / _params.positive(scale, "--laplace")  # exactly
    lines = [
        f"dgauss account: Lap_Z(0, {scale}) noise on {queries.describe()}",
        f"  pure eps = k*|sensitivity|_1/scale = {_rounded_up(pure)} (delta = 0)",
    ]
    delta_rows = [
        [e, _delta_text(accounting.laplace_delta, scale, e, queries.l1, k)] for e in epsilons
    ]
    eps_rows = [
        [d, _rounded_up(accounting.laplace_epsilon(scale, queries.l1, k, delta=d))] for d in deltas
    ]
    lines += [""] + _table(["eps", "delta, exact"], delta_rows, right=(1,))
    lines += [""] + _table(["delta", "eps, exact"], eps_rows, right=(1,))
    lines.append(
        f"  (exact composition, Eq. 49; rounded up to {PRIVACY_DIGITS} significant digits)"
    )
    return lines
