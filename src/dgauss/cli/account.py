"""``dgauss account``: the privacy of given noise, or of a whole release program."""

from __future__ import annotations

import argparse
import importlib
import json
import re
from fractions import Fraction

from dgauss import _params, accounting
from dgauss._rounding import PRIVACY_DIGITS, _delta_text, _rounded_up
from dgauss.cli import _ledger
from dgauss.cli._common import (
    _QUERIES_HELP,
    _accounting_errors,
    _add_query_options,
    _describe,
    _large_delta_warning,
    _one_line_errors,
    _queries,
    _rho_text,
    _sensitivity_text,
    _table,
    _values,
)

#: The epsilons and deltas ``account`` reports when none are given.
DEFAULT_EPS = "0.5,1,2,4,8"
DEFAULT_DELTA = "1e-5,1e-6,1e-9"

#: A release on the command line: PARAM[:SENSITIVITY][xK], e.g. 71.41, 4:1,-1, 100:2x10.
_SPEC = re.compile(r"\s*(?P<param>[^:x]+?)\s*(?::\s*(?P<sens>[^x]+?))?\s*(?:x\s*(?P<k>\S+))?\s*\Z")

#: The keys a release may have in a --program file.
_RELEASE_KEYS = {"gaussian", "laplace", "sensitivity", "k"}


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
    account.add_argument(
        "--sigma2",
        metavar="SIGMA2",
        help="account for the discrete Gaussian N_Z(0, SIGMA2), SIGMA2 > 0, on --k queries",
    )
    account.add_argument(
        "--laplace",
        metavar="SCALE[:S][xK]",
        action="append",
        help="account for the discrete Laplace Lap_Z(SCALE), SCALE > 0; given once, on --k "
        "queries; given again or beside --gaussian, one release of a program",
    )
    account.add_argument(
        "--gaussian",
        metavar="SIGMA2[:S][xK]",
        action="append",
        help="a release of a program with N_Z(0, SIGMA2) noise, sensitivity S (an int or a "
        "vector such as 1,-1; default 1), K times (default 1); repeat for each release",
    )
    account.add_argument(
        "--program",
        metavar="FILE",
        help='a program as a JSON (or, on Python >= 3.11, TOML) file: {"releases": '
        '[{"gaussian": "71.41", "sensitivity": 1, "k": 4}, {"laplace": "4"}]}',
    )
    account.add_argument(
        "--eps",
        "--epsilon",
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
    _ledger.add_account_options(account)
    _one_line_errors(account)


def _is_program(args: argparse.Namespace) -> bool:
    laplace = args.laplace or []
    return bool(
        args.gaussian
        or args.program
        or len(laplace) > 1
        or any(re.search(r"[:x]", x) for x in laplace)  # a spec, well formed or not
    )


def run_account(args: argparse.Namespace) -> int:
    """Carry out ``dgauss account``; see :func:`main` for the exit status."""
    _large_delta_warning("account", args.delta)  # a budget's (--init) or where eps is read
    if _ledger.wanted(args):
        return _ledger.run_account(args, (DEFAULT_EPS, DEFAULT_DELTA))
    return _accounting_errors("account", lambda: _account(args))


def _account(args: argparse.Namespace) -> list[str]:
    """The lines ``account`` prints."""
    if _is_program(args):
        return _account_program(args)
    if (args.sigma2 is None) == (args.laplace is None):
        raise ValueError(
            "give one of --sigma2 SIGMA2 or --laplace SCALE, or a program (--gaussian, "
            "repeated --laplace, --program FILE)"
        )
    laplace = None if args.laplace is None else str(args.laplace[0])
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
    assert laplace is not None
    scale = laplace.strip()
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


# ---- a whole program -------------------------------------------------------------


def _release(kind: str, param, sens, k, where: str) -> accounting.Gaussian | accounting.Laplace:
    """One release; a ValueError names ``where`` (the option or the file's entry)."""
    try:
        if isinstance(sens, str):
            sens = _sensitivity_text(sens, "sensitivity")
        k = 1 if k is None else k  # a str goes to the accounting, which parses and checks it
        if kind == "gaussian":
            return accounting.Gaussian(param, 1 if sens is None else sens, k)
        return accounting.Laplace(param, 1 if sens is None else sens, k)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _from_option(kind: str, text: str) -> accounting.Gaussian | accounting.Laplace:
    where = f"--{kind} {text}"
    match = _SPEC.match(text)
    if not match:
        raise ValueError(f"{where}: expected PARAM[:SENSITIVITY][xK], e.g. 71.41, 4:1,-1, 100x10")
    return _release(kind, match["param"], match["sens"], match["k"], where)


def _from_file(path: str) -> list:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ValueError(f"--program {path}: {exc.strerror or exc}") from None
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as json_error:
        try:
            tomllib = importlib.import_module("tomllib")  # Python >= 3.11
        except ImportError:
            raise ValueError(
                f"--program {path}: not valid JSON ({json_error}); TOML needs Python >= 3.11"
            ) from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as toml_error:
            raise ValueError(
                f"--program {path}: neither JSON ({json_error}) nor TOML ({toml_error})"
            ) from None
    releases = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(releases, list) or not releases:
        raise ValueError(f"--program {path}: expected a non-empty list 'releases'")
    found = []
    for i, entry in enumerate(releases, 1):
        where = f"--program {path}, release {i}"
        if not isinstance(entry, dict):
            raise ValueError(f'{where}: expected a table/object such as {{"gaussian": "100"}}')
        unknown = sorted(set(entry) - _RELEASE_KEYS)
        if unknown:
            raise ValueError(
                f"{where}: unknown key {unknown[0]!r} (allowed: gaussian or laplace, "
                "sensitivity, k)"
            )
        kinds = [kind for kind in ("gaussian", "laplace") if kind in entry]
        if len(kinds) != 1:
            raise ValueError(f"{where}: give exactly one of 'gaussian' (sigma2) or 'laplace'")
        param = entry[kinds[0]]
        if isinstance(param, float):  # a TOML/JSON float: take its decimal text, not binary
            param = repr(param)
        found.append(_release(kinds[0], param, entry.get("sensitivity"), entry.get("k"), where))
    return found


def _program_size(releases: list) -> str:
    """'3 releases', or '6 releases in 2 entries' when an entry stands for k > 1 of them."""
    total = sum(release.k for release in releases)
    text = f"{total:,} release{'s' if total != 1 else ''}"
    if total != len(releases):
        text += f" in {len(releases):,} entr{'ies' if len(releases) != 1 else 'y'}"
    return text


def _account_program(args: argparse.Namespace) -> list[str]:
    """The lines ``account`` prints for a program of releases."""
    if args.sigma2 is not None:
        raise ValueError("--sigma2: in a program, give each Gaussian release as --gaussian")
    given = [
        option
        for option, used in (
            ("--k", args.k != 1),
            ("--sensitivity", args.sensitivity.strip() != "1"),
        )
        if used
    ]
    if given:
        raise ValueError(
            f"{' and '.join(given)}: in a program, give each release's k and sensitivity in "
            "its spec (SIGMA2[:S][xK], e.g. 100:1,-1x4) or in the file"
        )
    releases = [_from_option("gaussian", x) for x in args.gaussian or []]
    releases += [_from_option("laplace", x) for x in args.laplace or []]
    if args.program:
        releases += _from_file(args.program)
    program = accounting.compose(*releases)
    epsilons, deltas = _values(args.eps), _values(args.delta)
    lines = [f"dgauss account: a program of {_program_size(releases)}"]
    lines += [f"  {i}. {_describe(r)}" for i, r in enumerate(releases, 1)]
    lines.append(f"  zCDP: rho = {_rho_text(program.rho)} in all")
    if program.pure_epsilon is not None:
        lines.append(f"  pure eps = {_rounded_up(program.pure_epsilon)} in all (delta = 0)")
    delta_rows = [[e, _delta_text(program.delta, e), program.route(e)] for e in epsilons]
    eps_rows = [[d, _rounded_up(program.epsilon(d))] for d in deltas]
    lines += [""] + _table(["eps", "delta, composed", "route"], delta_rows, right=(1,))
    lines += [""] + _table(["delta", "eps, composed"], eps_rows, right=(1,))
    lines.append(
        "  (composed: the smallest of Theorem 15, Eq. 49, pure DP, the privacy-loss "
        f"distribution (PLD) and zCDP; rounded up to {PRIVACY_DIGITS} significant digits)"
    )
    return lines
