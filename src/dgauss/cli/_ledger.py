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
2. an exclusive lock is taken on the ledger file itself (``fcntl.flock`` on its inode; the
   kernel drops it when the process ends, however it ends), waiting at most
   ``--lock-timeout`` seconds; the path is then checked to still name the file locked (else
   another run replaced it meanwhile, and the new file is locked instead), and a file with
   several names (hard links) is refused;
3. the ledger is read from the locked file and the release admitted, or refused: exit
   status 3, nothing written;
4. the ledger with the release is written to a temporary file beside it, fsynced and renamed
   over it (``os.replace``; then the folder is fsynced), and the lock is dropped;
5. the noise is drawn and the output written (``-o``: whole or not at all).

A run killed before the rename in step 4 leaves the ledger as it was and has drawn nothing;
from the rename on, the release is recorded whether or not the output gets written: if the
draw or the output fails, the budget stays spent (the safe side) and the run says so.
Readers (``account``, ``calibrate``) take no lock: the rename shows them the ledger before or
after a release, never half of one.

**One ledger whatever its name.**  The lock is the file's, not its name's: a symbolic link,
``dir/../FILE``, a bind mount or any other spelling reaches the same inode, so every run
contends for the same lock and reads the same releases (the path is also resolved with
``os.path.realpath``, so that the rename replaces the file a symlink names, not the symlink).
A hard link cannot be made safe this way: a write replaces the file under one name only, after
which the names are two ledgers, each admitting the whole budget.  So a release through a
ledger with ``st_nlink > 1`` is refused (checked under the lock, and again just before the
rename), telling the user to remove the other names.  Why not a lock file ``FILE.lock`` beside
it (what earlier versions used): each name of the file has its own, so two names are not
serialized at all.  The old lock file is not also taken: it would only matter for a run of an
earlier version at the very same time as this one on the same ledger (two dgauss versions
installed side by side and used at once, which docs/ledger.md tells users not to do), and
taking it too would leave a ``FILE.lock`` beside every name a ledger is used by, for that case
alone.

**Creation** (``account --init``) needs no lock: the ledger is written whole to a temporary
file, fsynced, locked, then given its name by ``os.link``, which fails if the name exists (so
of two ``--init`` at once exactly one succeeds, the other saying the ledger exists), and the
temporary name is removed before the lock is dropped (a release that opens the new ledger
meanwhile waits, then sees one name).  Where the file system has no hard links, the name is
created with ``O_CREAT | O_EXCL`` and written under the lock.

**Hostile files.**  The ledger is opened without blocking (``O_NONBLOCK``: a FIFO never
hangs the run) and must be a regular file (a folder, FIFO, device or socket is refused before
it is read); at most :data:`MAX_LEDGER_BYTES` are read (a larger file is refused, so an
endless or enormous file is never read whole); JSON nested too deeply, a wrong type or value
anywhere, or a file the Accountant does not accept, is one line: ``FILE is not a usable
ledger: ...``, exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import decimal
import json
import math
import os
import re
import stat
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

#: The largest ledger file read, in bytes (16 MiB: some 200,000 releases at about 70 bytes
#: each); a larger file is refused rather than read.
MAX_LEDGER_BYTES = 16 * 1024 * 1024

#: The longest error detail quoted from a bad ledger (a 10,000-digit number is cut).
_DETAIL_CHARS = 300

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


def _add_lock_timeout(parser: argparse.ArgumentParser, waits: bool = True) -> None:
    parser.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help="with --ledger: wait at most this long for another run's lock on the ledger "
        f"(default {DEFAULT_LOCK_TIMEOUT:g}), then fail"
        if waits
        else "accepted as noise accepts it; account never waits (it reads without a lock, "
        "and --init creates the ledger in one step)",
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
    _add_lock_timeout(parser, waits=False)


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


def _missing(shown: str) -> LedgerError:
    return LedgerError(
        f"no ledger {shown}; create it first with 'dgauss account --ledger {shown} --init "
        "--eps E --delta D' (or --eps E, or --rho R)"
    )


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def _open(path: str, shown: str) -> int:
    """A read-only descriptor of the regular file at ``path``; LedgerError if it is missing,
    unreadable or not a regular file.  Never blocks: a special file is refused before it is
    opened, and the open is non-blocking (a FIFO put there meanwhile opens at once, and is
    then refused by its fstat)."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise LedgerError(
                f"{shown} is not a usable ledger: it is {_kind(mode)}, not a regular file"
            )
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise _missing(shown) from None
    except OSError as exc:
        raise LedgerError(f"cannot read the ledger {shown}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LedgerError(
                f"{shown} is not a usable ledger: it is {_kind(mode)}, not a regular file"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _content(fd: int, shown: str) -> bytes:
    """The bytes of the open ledger ``fd``, at most MAX_LEDGER_BYTES (LedgerError if more)."""
    chunks, size = [], 0
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while size <= MAX_LEDGER_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_LEDGER_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise LedgerError(f"cannot read the ledger {shown}: {exc.strerror or exc}") from None
    if size > MAX_LEDGER_BYTES:
        raise LedgerError(
            f"{shown} is not a usable ledger: it is larger than {MAX_LEDGER_BYTES:,} bytes "
            "(a ledger takes about 70 bytes a release), so it is not read"
        )
    return b"".join(chunks)


def _parsed(text: bytes, shown: str) -> dgauss.Accountant:
    """The accountant the ledger ``text`` describes; LedgerError saying what is wrong, in one
    line."""
    try:
        return dgauss.Accountant.from_json(text)
    except RecursionError:
        detail = "its JSON is nested too deeply"
    except (ValueError, TypeError, ArithmeticError) as exc:
        detail = " ".join(str(exc).split())  # one line
        if len(detail) > _DETAIL_CHARS:
            detail = detail[: _DETAIL_CHARS - 5] + " ..."
    raise LedgerError(f"{shown} is not a usable ledger: {detail}")


def _read(path: str, shown: str) -> dgauss.Accountant:
    """The accountant the ledger at ``path`` describes (read without a lock: the rename shows
    the ledger before or after a release); LedgerError saying what is wrong."""
    fd = _open(path, shown)
    try:
        text = _content(fd, shown)
    finally:
        os.close(fd)
    return _parsed(text, shown)


def _budget(acc: dgauss.Accountant) -> dict[str, Fraction]:
    """The ledger's budget as its saved form states it: {"epsilon", "delta"}, {"epsilon"}
    or {"rho"}, exact."""
    head = json.loads(acc.to_json())["budget"]
    return {key: Fraction(value) for key, value in head.items()}


def _new_mode() -> int:
    """The mode of a new file: 0666 less the umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _sync_folder(folder: str) -> None:
    """fsync ``folder`` (a rename or link in it made durable, where folders sync)."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _temporary(path: str, acc: dgauss.Accountant, mode: int, shown: str) -> tuple[int, str]:
    """A temporary file beside ``path`` holding ``acc``'s ledger, fsynced, with ``mode``:
    its descriptor (open) and its path."""
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path)
        )
    except OSError as exc:
        raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
    try:
        data = (acc.to_json() + "\n").encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
        os.fchmod(fd, mode)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
        raise
    return fd, temporary


def _write(path: str, acc: dgauss.Accountant, shown: str, locked: int) -> None:
    """Replace the ledger at ``path`` (open and locked as ``locked``) by ``acc``'s, atomically
    and durably: a temporary file in the same folder, fsynced, renamed over it, and the
    folder fsynced.  The old file's mode is kept."""
    old = os.fstat(locked)
    fd, temporary = _temporary(path, acc, old.st_mode & 0o7777, shown)
    try:
        os.close(fd)
        _single(locked, shown)  # a link made since the lock was taken: still refused
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
        raise
    _sync_folder(os.path.dirname(path))


def _create(path: str, acc: dgauss.Accountant, shown: str) -> None:
    """Create the ledger ``path`` holding ``acc``'s, never replacing a file (LedgerError if
    one exists): written whole to a temporary file, which is locked and then linked to
    ``path`` (``os.link`` fails if the name exists, so of two creations at once exactly one
    succeeds); the temporary name goes before the lock is dropped."""
    import fcntl

    exists = LedgerError(
        f"the ledger {shown} exists already: a budget is set once (move the file away "
        "yourself to start another)"
    )
    if os.path.lexists(path):
        raise exists
    fd, temporary = _temporary(path, acc, _new_mode(), shown)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else holds it
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise exists from None
        except OSError:  # a file system without hard links: create the name itself
            _create_in_place(path, acc, shown, exists)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        os.close(fd)
    _sync_folder(os.path.dirname(path))


def _create_in_place(path: str, acc: dgauss.Accountant, shown: str, exists: Exception) -> None:
    """``_create`` where ``os.link`` fails: ``O_CREAT | O_EXCL`` the name (so again only one
    creation succeeds), lock it, write and fsync it."""
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _new_mode())
    except FileExistsError:
        raise exists from None
    except OSError as exc:
        raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = (acc.to_json() + "\n").encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    except OSError as exc:
        raise LedgerError(f"cannot write the ledger {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _single(fd: int, shown: str) -> None:
    """LedgerError unless the open ledger ``fd`` has exactly one name (no hard link)."""
    links = os.fstat(fd).st_nlink
    if links > 1:
        raise LedgerError(
            f"the ledger {shown} has {links} names (hard links), and a release through one "
            "name would leave the others with the old budget: remove the other names (find "
            f"them with: find / -samefile {shown}), then run again; nothing was released or "
            "recorded"
        )


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    then = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (then.st_dev, then.st_ino)


@contextlib.contextmanager
def _locked(path: str, shown: str, timeout: float, command: str) -> Iterator[int]:
    """Hold the exclusive lock on the ledger file at ``path`` itself (``fcntl.flock`` on its
    inode, whatever name reaches it), waiting at most ``timeout`` seconds (saying so once on
    stderr); LedgerError after that.  Yields the open, locked ledger, which ``path`` names
    (another run's rename between the open and the lock is seen, and the new file locked)
    and which has no other name (a hard-linked ledger is refused)."""
    import fcntl  # POSIX, as every platform dgauss is built for

    deadline = time.monotonic() + timeout
    told = False
    while True:
        fd = _open(path, shown)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                except OSError as exc:
                    raise LedgerError(
                        f"cannot lock the ledger {shown}: {exc.strerror or exc} (keep ledgers "
                        "on a local disk); nothing was released or recorded"
                    ) from None
                if time.monotonic() >= deadline:
                    raise LedgerError(
                        f"gave up after {timeout:g} s waiting for the ledger {shown}: another "
                        "run holds its lock (--lock-timeout); nothing was released or recorded"
                    )
                if not told:
                    print(
                        f"dgauss {command}: waiting for the ledger {shown} (another run holds "
                        "its lock)",
                        file=sys.stderr,
                        flush=True,
                    )
                    told = True
                time.sleep(_POLL)
            if _same_file(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced (or moved away) while this run waited: open what is there now
    try:
        _single(fd, shown)
        yield fd
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
    with _locked(path, shown, args.lock_timeout, "noise") as locked:
        acc = _parsed(_content(locked, shown), shown)
        if args.share is not None:
            mech = _share(args, acc, count, make)
        # exactly what Accountant.add_*_noise spends for ``count`` values, checked before any
        # noise is drawn; the mechanism's own count of releases is left for the draw
        release = mech._accounting_release(count)
        try:
            acc._spend(release)
        except dgauss.PrivacyBudgetError as exc:
            raise Refused(f"{exc} (the ledger {shown} and the output are untouched)") from None
        _write(path, acc, shown, locked)
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
    _create(path, acc, shown)
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
