"""``--ledger FILE``: one privacy budget spent across ``dgauss`` runs.

The ledger is exactly an :class:`dgauss.Accountant`'s saved form
(:meth:`~dgauss.Accountant.to_json`): the budget and every release made, each parameter an
exact rational.  ``dgauss account --ledger FILE --init --eps E --delta D`` (or ``--eps E``
alone, or ``--rho R``) creates it, once; ``dgauss noise --ledger FILE`` admits a release only
if everything released plus it fits the budget (the Accountant's own rule) and records it;
``dgauss account --ledger FILE`` prints the certified guarantee of everything released;
``dgauss calibrate --ledger FILE --k K`` the least noise with which K more releases fit.
``noise`` never creates a ledger: a mistyped path would otherwise open a fresh budget.

A release goes in this order, so that no output is ever out while its release is
unrecorded:

1. the options and the whole input are checked (a bad cell spends nothing);
2. an exclusive lock is taken on ``FILE.lock`` (``fcntl.flock``; the kernel drops it when
   the process ends, however it ends), waiting at most ``--lock-timeout`` seconds;
3. the ledger is read and the release admitted, or refused: exit status 3, nothing written;
4. the ledger with the release is written to a temporary file beside it, fsynced and renamed
   over it (``os.replace``; then the folder is fsynced), and the lock is dropped;
5. the noise is drawn and the output written (``-o``: whole or not at all).

A run killed before the rename in step 4 leaves the ledger as it was and has drawn nothing;
from the rename on, the release is recorded whether or not the output gets written: if the
draw or the output fails, the budget stays spent (the safe side) and the run says so.
Readers (``account``, ``calibrate``) take no lock: the rename shows them the ledger before or
after a release, never half of one.
"""

from __future__ import annotations

import argparse
import contextlib
import decimal
import json
import math
import os
import re
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import dgauss
from dgauss import accounting
from dgauss._rounding import PRIVACY_DIGITS, _delta_text, _rounded_up
from dgauss.cli._common import (
    EXIT_FAILURE,
    INTERVAL_ALPHA,
    _describe,
    _grid_text,
    _or_none,
    _queries,
    _rho_text,
    _table,
    _utility,
    _values,
)
from dgauss.cli._io import _digits

#: Exit status of a release the ledger refuses (it does not fit what is left of the budget).
EXIT_REFUSED = 3

#: The lock file beside a ledger: FILE + this suffix (kept: removing it would race).
LOCK_SUFFIX = ".lock"

#: Seconds a run waits for another's lock on the ledger, by default.
DEFAULT_LOCK_TIMEOUT = 60.0

#: Seconds between two tries of the lock.
_POLL = 0.05


class LedgerError(Exception):
    """The ledger cannot be used (missing, not a ledger, locked too long, unwritable):
    reported in one line, exit status 1."""


class Refused(Exception):
    """The release does not fit what is left of the budget: exit status 3."""


# ---- options -------------------------------------------------------------------------


def _seconds(text: str) -> float:
    """argparse type: a number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _add_lock_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help="with --ledger: wait at most this long for another run's lock on the ledger "
        f"(default {DEFAULT_LOCK_TIMEOUT:g}), then fail",
    )


def add_noise_options(parser: argparse.ArgumentParser, positive_int) -> None:
    """``noise``'s --ledger, --k, --share and --lock-timeout."""
    parser.add_argument(
        "--ledger",
        metavar="FILE",
        help="spend from the privacy ledger FILE (made by 'dgauss account --ledger FILE "
        "--init ...'): the release is admitted only if everything released plus it fits the "
        "budget, and recorded before the noise is drawn; a refused release writes nothing "
        f"and exits with status {EXIT_REFUSED}",
    )
    parser.add_argument(
        "--k",
        type=positive_int,
        default=1,
        metavar="K",
        help="this release is one of K planned ones: calibrate the noise so that all K "
        "together meet the target (--epsilon/--delta or --rho; with --ledger and no target, "
        "the ledger's budget)",
    )
    parser.add_argument(
        "--share",
        type=positive_int,
        metavar="K",
        help="with --ledger: this release is one of K equal ones that fit what is left of "
        "the ledger's budget (the least noise that fits, found under the ledger's lock)",
    )
    _add_lock_timeout(parser)


def add_account_options(parser: argparse.ArgumentParser) -> None:
    """``account``'s --ledger, --init, --rho and --lock-timeout."""
    parser.add_argument(
        "--ledger",
        metavar="FILE",
        help="print the certified guarantee of everything released from the privacy ledger "
        "FILE, and what is left; with --init, create it",
    )
    parser.add_argument(
        "--init",
        action="store_true",
        help="with --ledger: create the ledger with the budget --eps E --delta D ((eps, "
        "delta)-DP), --eps E alone (pure DP) or --rho R (zCDP); an existing ledger is never "
        "replaced",
    )
    parser.add_argument("--rho", metavar="R", help="with --ledger --init: a zCDP budget rho > 0")
    _add_lock_timeout(parser)


def add_calibrate_options(parser: argparse.ArgumentParser) -> None:
    """``calibrate``'s --ledger."""
    parser.add_argument(
        "--ledger",
        metavar="FILE",
        help="instead of --eps/--delta: the least noise with which --k more releases fit "
        "what is left of the privacy ledger FILE, composed exactly with its releases",
    )


# ---- the file --------------------------------------------------------------------------


def _path(given: str) -> str:
    """The ledger's real path (a symlink is followed: the lock and the rename are of the
    file it names)."""
    return os.path.realpath(given)


def _read(path: str, shown: str) -> dgauss.Accountant:
    """The accountant the ledger at ``path`` describes; LedgerError saying what is wrong."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise LedgerError(
            f"no ledger {shown}; create it first with 'dgauss account --ledger {shown} --init "
            "--eps E --delta D' (or --eps E, or --rho R)"
        ) from None
    except OSError as exc:
        raise LedgerError(f"cannot read the ledger {shown}: {exc.strerror or exc}") from None
    try:
        return dgauss.Accountant.from_json(text)
    except (ValueError, TypeError) as exc:
        raise LedgerError(f"{shown} is not a usable ledger: {exc}") from None


def _budget(acc: dgauss.Accountant) -> dict[str, Fraction]:
    """The ledger's budget as its saved form states it: {"epsilon", "delta"}, {"epsilon"}
    or {"rho"}, exact."""
    head = json.loads(acc.to_json())["budget"]
    return {key: Fraction(value) for key, value in head.items()}


def _write(path: str, acc: dgauss.Accountant, shown: str) -> None:
    """Replace the ledger at ``path`` by ``acc``'s, atomically and durably: a temporary file
    in the same folder, fsynced, renamed over it, and the folder fsynced.  The old file's mode
    is kept (a new one gets 0666 less the umask)."""
    folder = os.path.dirname(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder
        )
    except OSError as exc:
        raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(acc.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable, where folders sync
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def _locked(path: str, shown: str, timeout: float, command: str) -> Iterator[None]:
    """Hold the exclusive lock on ``path + LOCK_SUFFIX`` (``fcntl.flock``), waiting at most
    ``timeout`` seconds (saying so once on stderr); LedgerError after that."""
    import fcntl  # POSIX, as every platform dgauss is built for

    lock = path + LOCK_SUFFIX
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise LedgerError(
            f"cannot open the ledger's lock file {lock}: {exc.strerror or exc}"
        ) from None
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if time.monotonic() >= deadline:
                raise LedgerError(
                    f"gave up after {timeout:g} s waiting for the ledger {shown}: another run "
                    f"holds its lock {lock} (--lock-timeout); nothing was released or recorded"
                )
            if not told:
                print(
                    f"dgauss {command}: waiting for the ledger {shown} (another run holds {lock})",
                    file=sys.stderr,
                    flush=True,
                )
                told = True
            time.sleep(_POLL)
        yield
    finally:
        os.close(fd)  # drops the lock


# ---- dgauss noise --------------------------------------------------------------------


def _text(q: Fraction) -> str:
    """An exact rational for an option's text: a short decimal (1e-6, 0.5) when it is one."""
    d = q.denominator
    for prime in (2, 5):
        while d % prime == 0:
            d //= prime
    if d == 1:
        with decimal.localcontext() as ctx:
            ctx.prec = 60
            exact = (decimal.Decimal(q.numerator) / q.denominator).normalize()
        if len(exact.as_tuple().digits) <= 20:
            return f"{exact:f}" if -4 <= exact.adjusted() < 12 else f"{exact:e}"
    return str(q)


def noise_mechanism(args: argparse.Namespace, make: Callable[[], object]):
    """``noise``'s mechanism from its options (``make()``, noise.py's own), after checking
    --ledger, --k and --share (ValueError naming the option; LedgerError if the ledger that
    --k needs cannot be read).  With --k and no target, the target is the ledger's budget.
    None for --share: its noise is calibrated under the ledger's lock (:func:`record`)."""
    noise = {
        "--sigma2": args.sigma2,
        "--rho": args.rho,
        "--scale": args.scale,
        "--epsilon": args.epsilon,
        "--delta": args.delta,
    }
    given = [option for option, value in noise.items() if value is not None]
    if args.share is not None:
        if args.ledger is None:
            raise ValueError(
                "--share K splits what is left of a ledger's budget: add --ledger FILE"
            )
        if given or args.k != 1:
            raise ValueError(
                "--share K sets the noise from what is left of the ledger; drop "
                + ", ".join(given + (["--k"] if args.k != 1 else []))
            )
        # check every other option now, with a stand-in parameter never used to draw
        stand_in = "scale" if args.laplace else "sigma2"
        setattr(args, stand_in, "1")
        try:
            make()
        finally:
            setattr(args, stand_in, None)
        return None
    if args.k != 1:
        if args.sigma2 is not None or args.scale is not None:
            set_by = "--sigma2" if args.sigma2 is not None else "--scale"
            raise ValueError(
                f"--k calibrates the noise for K releases from a target; {set_by} sets it "
                "already ('dgauss account' prints the guarantee of K such releases)"
            )
        if not given:
            if args.ledger is None:
                raise ValueError(
                    "--k K needs the target of all K releases together: --epsilon with "
                    "--delta, or --rho (or --ledger FILE: its budget)"
                )
            _target_from_ledger(args)
    return make()


def _target_from_ledger(args: argparse.Namespace) -> None:
    """Set --epsilon/--delta or --rho to the ledger's whole budget (for --k K)."""
    shown = args.ledger
    budget = _budget(_read(_path(shown), shown))
    if "rho" in budget:
        if args.laplace:
            raise ValueError(
                "--laplace --k K with a zCDP ledger: give --scale or --epsilon, or use --share K"
            )
        args.rho = _text(budget["rho"])
        return
    if "delta" not in budget and not args.laplace:
        raise ValueError(
            f"the ledger {shown} has a pure-DP budget, which admits only --laplace releases"
        )
    args.epsilon = _text(budget["epsilon"])
    if "delta" in budget:
        args.delta = _text(budget["delta"])


def record(
    args: argparse.Namespace, mech, count: int, make: Callable[[], object]
) -> tuple[object, dgauss.Accountant]:
    """Admit one release of ``mech`` on ``count`` values against the ledger and record it,
    under the ledger's lock (steps 2-4 of the module docstring); for --share, calibrate the
    noise first (``make()`` with --sigma2 or --scale set).  Returns the mechanism to draw with
    and the accountant after the release.  Refused or LedgerError: nothing is written."""
    shown = args.ledger
    path = _path(shown)
    with _locked(path, shown, args.lock_timeout, "noise"):
        acc = _read(path, shown)
        if args.share is not None:
            mech = _share(args, acc, count, make)
        # exactly what Accountant.add_*_noise spends for ``count`` values, checked before any
        # noise is drawn; the mechanism's own count of releases is left for the draw
        release = mech._accounting_release(count)
        try:
            acc._spend(release)
        except dgauss.PrivacyBudgetError as exc:
            raise Refused(f"{exc} (the ledger {shown} and the output are untouched)") from None
        _write(path, acc, shown)
    return mech, acc


def _share(args: argparse.Namespace, acc: dgauss.Accountant, count: int, make):
    """The mechanism of one of --share K equal releases that fit what is left: the
    Accountant's calibration, for the sensitivity this release is recorded with."""
    stand_in = "scale" if args.laplace else "sigma2"
    setattr(args, stand_in, "1")
    probe = make()
    try:
        if args.laplace:
            param = acc.calibrate_laplace(probe.sensitivity, args.share)
        else:
            sens = probe._accounting_release(count).sensitivity
            param = acc.calibrate_gaussian(sens, args.share)
    except dgauss.PrivacyBudgetError as exc:
        setattr(args, stand_in, None)
        raise Refused(f"{exc} (the ledger {args.ledger} and the output are untouched)") from None
    setattr(args, stand_in, str(param))
    return make()


def noise_lines(args: argparse.Namespace, mech, acc: dgauss.Accountant | None) -> list[str]:
    """What ``noise`` adds to its report: the plan of --k or --share, and the ledger's total."""
    lines = []
    if getattr(mech, "k", 1) > 1:
        lines.append(
            f"  one of k = {mech.k} planned releases: rho and (eps, delta) above are of all "
            f"{mech.k} together;"
        )
        lines.append(f"  this one alone: rho = {_rho_text(mech.rho / mech.k)}")
    if args.share is not None:
        lines.append(f"  one of {args.share} equal release(s) that fit what was left of the ledger")
    if acc is not None:  # the composed delta is account's: a fresh composition may take seconds
        budget, n = _budget(acc), len(acc.spent.releases)
        lines.append(
            f"  ledger {args.ledger}: recorded as release {n}; "
            f"{'it fits' if n == 1 else f'all {n} fit'} its {_budget_words(budget)}"
        )
        lines.append(
            f"  (zCDP: rho = {_rho_text(acc.spent.rho)} in all; the composed guarantee: "
            f"dgauss account --ledger {args.ledger})"
        )
    return lines


def _spent_text(acc: dgauss.Accountant) -> str:
    """The certified total of the ledger's releases against its budget, in the budget's
    terms (rounded up)."""
    budget, spent = _budget(acc), acc.spent
    n = len(spent.releases)
    everything = "the release" if n == 1 else f"all {n} releases"
    if "rho" in budget:
        rho = _text(budget["rho"])
        return f"{everything}: rho = {_rounded_up(spent.rho)} of the budget's {rho}"
    eps = budget["epsilon"]
    if "delta" not in budget:
        return f"{everything}: eps = {_rounded_up(spent.epsilon(0))} of the budget's {_text(eps)}"
    return (
        f"{everything}: delta = {_delta_text(spent.delta, eps)} at eps = {_text(eps)}, of "
        f"the budget's delta = {_text(budget['delta'])}"
    )


# ---- dgauss account --------------------------------------------------------------------


def wanted(args: argparse.Namespace) -> bool:
    """Whether ``account`` was asked about a ledger."""
    return args.ledger is not None or args.init or args.rho is not None


def run_account(args: argparse.Namespace, defaults: tuple[str, str]) -> int:
    """``dgauss account --ledger FILE [--init ...]``; ``defaults``: account's --eps and --delta
    lists when not given."""
    from dgauss.cli._common import _accounting_errors

    try:
        return _accounting_errors("account", lambda: _account(args, defaults))
    except LedgerError as exc:
        print(f"dgauss account: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _budget_option_message(exc: Exception) -> str:
    return re.sub(
        r"^(epsilon|delta|rho)\b",
        lambda m: {"epsilon": "--eps"}.get(m.group(1), "--" + m.group(1)),
        str(exc),
    )


def _budget_words(budget: dict[str, Fraction]) -> str:
    if "rho" in budget:
        return f"budget rho = {_text(budget['rho'])} (zCDP)"
    if "delta" in budget:
        return f"budget (eps, delta) = ({_text(budget['epsilon'])}, {_text(budget['delta'])})"
    return f"budget eps = {_text(budget['epsilon'])} (pure DP)"


def _account(args: argparse.Namespace, defaults: tuple[str, str]) -> list[str]:
    if args.ledger is None:
        raise ValueError("--init and --rho go with --ledger FILE (a privacy ledger)")
    other = [
        option
        for option, used in (
            ("--sigma2", args.sigma2 is not None),
            ("--laplace", args.laplace),
            ("--gaussian", args.gaussian),
            ("--program", args.program),
            ("--k", args.k != 1),
            ("--sensitivity", args.sensitivity.strip() != "1"),
        )
        if used
    ]
    if other:
        raise ValueError(
            f"{', '.join(other)}: with --ledger, account prints the ledger's own releases "
            "(release noise with 'dgauss noise --ledger FILE')"
        )
    eps_given, delta_given = args.eps != defaults[0], args.delta != defaults[1]
    if args.init:
        return _init(args, eps_given, delta_given)
    if args.rho is not None:
        raise ValueError("--rho sets a budget: use it with --init")
    shown = args.ledger
    acc = _read(_path(shown), shown)
    lines = _ledger_lines(shown, acc)
    spent = acc.spent
    if spent.releases and (eps_given or delta_given):
        delta_rows = [[e, _delta_text(spent.delta, e), spent.route(e)] for e in _values(args.eps)]
        eps_rows = [[d, _rounded_up(spent.epsilon(d))] for d in _values(args.delta)]
        lines += [""] + _table(["eps", "delta, composed", "route"], delta_rows, right=(1,))
        lines += [""] + _table(["delta", "eps, composed"], eps_rows, right=(1,))
        lines.append(f"  (rounded up to {PRIVACY_DIGITS} significant digits)")
    return lines


def _init(args: argparse.Namespace, eps_given: bool, delta_given: bool) -> list[str]:
    if args.rho is not None and (eps_given or delta_given):
        raise ValueError("set the budget in one way: --rho R, or --eps E [--delta D]")
    if args.rho is None and not eps_given:
        raise ValueError(
            "--init needs the budget: --eps E --delta D ((eps, delta)-DP), --eps E alone "
            "(pure DP) or --rho R (zCDP)"
        )
    try:
        if args.rho is not None:
            acc = dgauss.Accountant(rho=args.rho.strip())
        else:
            acc = dgauss.Accountant(
                epsilon=args.eps.strip(), delta=args.delta.strip() if delta_given else None
            )
    except (ValueError, TypeError) as exc:
        raise ValueError(_budget_option_message(exc)) from None
    shown = args.ledger
    path = _path(shown)
    with _locked(path, shown, args.lock_timeout, "account"):
        if os.path.lexists(path):
            raise LedgerError(
                f"the ledger {shown} exists already: a budget is set once (move the file "
                "away yourself to start another)"
            )
        _write(path, acc, shown)
    return [
        f"dgauss account: created the ledger {shown}: {_budget_words(_budget(acc))}, "
        "nothing released yet"
    ]


def _ledger_lines(shown: str, acc: dgauss.Accountant) -> list[str]:
    """``account --ledger``: the releases, the total, what is left and the guarantee."""
    budget, spent = _budget(acc), acc.spent
    releases = spent.releases
    lines = [f"dgauss account: the ledger {shown}, {_budget_words(budget)}"]
    if not releases:
        return lines + ["  nothing released yet: the whole budget is left"]
    start = 0
    while start < len(releases):  # a run of identical releases is one line
        end = start
        while end + 1 < len(releases) and releases[end + 1] == releases[start]:
            end += 1
        number = f"{start + 1}" if end == start else f"{start + 1}-{end + 1}"
        times = "" if end == start else " each"
        lines.append(f"  {number}. {_describe(releases[start])}{times}")
        start = end + 1
    lines.append(f"  zCDP: rho = {_rho_text(spent.rho)} in all")
    lines.append(f"  spent: {_spent_text(acc)}")
    if "delta" in budget:
        lines.append(f"         (composed by {spent.route(budget['epsilon'])})")
    left = acc.remaining
    if "rho" in budget:
        lines.append(f"  left: rho = {_rounded_down(left.rho)}")
    elif "delta" not in budget:
        lines.append(f"  left: eps = {_rounded_down(left.epsilon)}")
    else:
        lines.append(
            f"  left: eps = {_rounded_down(left.epsilon)} for a further pure-DP release, "
            f"or delta = {_rounded_down(left.delta)} at eps = {_text(budget['epsilon'])}"
        )
        lines.append("        for a further (0, delta) one")
    lines.append(f"  (the noise K more releases need: dgauss calibrate --ledger {shown} --k K)")
    lines += textwrap.wrap(acc.report(), width=96, initial_indent="  ", subsequent_indent="  ")
    return lines


def _rounded_down(value) -> str:
    """``value`` (>= 0) rounded down to PRIVACY_DIGITS significant digits (what is left
    never reads larger than it is)."""
    q = Fraction(value)
    if q == 0:
        return "0"
    with decimal.localcontext() as ctx:
        ctx.prec = PRIVACY_DIGITS
        ctx.rounding = decimal.ROUND_FLOOR
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        down = (decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)).normalize()
    return f"{down:f}" if -4 <= down.adjusted() < 12 else f"{down:e}".replace("e+", "e")


# ---- dgauss calibrate ------------------------------------------------------------------


def run_calibrate(args: argparse.Namespace) -> int:
    """``dgauss calibrate --ledger FILE [--k K] [--sensitivity S]``."""
    from dgauss.cli._common import _accounting_errors

    try:
        return _accounting_errors("calibrate", lambda: _calibrate(args))
    except LedgerError as exc:
        print(f"dgauss calibrate: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _calibrate(args: argparse.Namespace) -> list[str]:
    if args.eps is not None or args.delta is not None:
        raise ValueError(
            "--eps and --delta: with --ledger the target is what is left of its budget"
        )
    queries = _queries(args)
    shown = args.ledger
    acc = _read(_path(shown), shown)
    budget = _budget(acc)
    n = len(acc.spent.releases)
    made = "nothing released yet" if n == 0 else f"{n} release{'s' if n != 1 else ''} made"
    header = ["route", "parameter", "variance", "std dev", "95% interval"]
    rows = []
    routes: tuple[tuple[str, str, Any, Any, Any, Any], ...] = (
        (
            "discrete Gaussian",
            "sigma2",
            acc.calibrate_gaussian,
            accounting.gaussian_variance,
            accounting.gaussian_interval,
            queries.sensitivity,
        ),
        (
            "discrete Laplace",
            "scale",
            acc.calibrate_laplace,
            accounting.laplace_variance,
            accounting.laplace_interval,
            queries.l1,
        ),
    )
    for name, symbol, calibrate, variance, interval, sens in routes:
        try:
            param = calibrate(sens, queries.k)
        except dgauss.PrivacyBudgetError as exc:
            why = "a pure-DP budget admits only the Laplace" if "pure" in str(exc) else "none fits"
            rows.append([name, f"none: {why}", "", "", ""])
            continue
        var = _or_none(variance, param)
        rows.append(
            [
                name,
                f"{symbol} = {_grid_text(param)}",
                _utility(var),
                _utility(None if var is None else math.sqrt(var)),
                "+-" + _digits(interval(param, INTERVAL_ALPHA)[1]),
            ]
        )
    return [
        f"dgauss calibrate: the ledger {shown}, {_budget_words(budget)}, {made}",
        f"  the least noise with which {queries.k} more release{'s' if queries.k != 1 else ''}"
        f" (sensitivity {queries.text}) fit{'s' if queries.k == 1 else ''} what is left:",
        *_table(header, rows, right=(2, 3, 4)),
        f"  (each parameter is the smallest with {accounting.GRID_DIGITS} significant digits "
        "with which K more such releases fit,",
        "   composed exactly with the ledger's releases; only that value is certified to fit)",
    ]
