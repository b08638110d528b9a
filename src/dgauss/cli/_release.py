"""One release from the command line (``dgauss noise``, ``dgauss tabulate``): the options
checked, the release made, and each way it can end said on stderr with its exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dgauss.cli import _ledger
from dgauss.cli._common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Terminated,
    _large_delta_warning,
)
from dgauss.cli._csv import InputError
from dgauss.cli._io import Output

#: What a release's ``check`` returns, for its ``make`` and ``report`` (:func:`_release`).
_Checked = TypeVar("_Checked")


@dataclass
class Release:
    """What one release from the command line has made so far (:func:`_release`): for the
    lines that say what was released, and for the messages of a run cut short.

    Attributes
    ----------
    output : Output or None
        Where ``-o`` is written (whole or not at all); None for stdout.
    mech : GaussianMechanism or LaplaceMechanism or None
        The noise, once known (the ledger's, once the release is recorded).
    table : Any
        What is noised, once read: the command's own (its input, or the exact table).
    ledger : Accountant or None
        The ledger's accountant, once the release is recorded in ``--ledger``.
    """

    output: Output | None
    mech: Any = None
    table: Any = None
    ledger: Any = None


def _release(
    command: str,
    args: argparse.Namespace,
    check: Callable[[], _Checked],
    option_message: Callable[[Exception], str],
    make: Callable[[_Checked, Release], int | None],
    report: Callable[[_Checked, Release], list[str]],
    *,
    ended: Callable[[], None] | None = None,
    stdout_begun: Callable[[], bool] | None = None,
) -> int:
    """Carry out one release of ``dgauss COMMAND``: every option checked, then the release
    made, each failure said on stderr and turned into its exit status.

    Parameters
    ----------
    command : str
        The command (``noise``, ``tabulate``), as its messages name it.
    args : argparse.Namespace
        Its options (``--delta``, ``--ledger`` and ``-o`` are read here).
    check : callable
        Checks every option, nothing read yet, and returns what ``make`` and ``report``
        take.  A ValueError or TypeError is a usage error (its message through
        ``option_message``), a ledger's error a failure.
    option_message : callable
        A usage error's message in the options' names.
    make : callable
        Reads, records the release in ``--ledger`` before any noise is drawn (setting
        :attr:`Release.ledger`), draws and writes.  Returns None once the output is written
        whole, or an exit status to end with at once (a usage error that the data show).
    report : callable
        The lines on stderr that say what was released: after a run that ended well, and
        after one whose reader of stdout left.
    ended : callable, optional
        Called once ``make`` has ended, well or not, before any message (a progress bar's
        line ends there).
    stdout_begun : callable, optional
        Whether the output on stdout has begun (for the message of a run interrupted).

    Returns
    -------
    int
        0; 2 for a usage error; 1 for a bad input, an output that could not be written or a
        ledger's error; 3 when the ledger refused the release; 130 if interrupted; 128 + the
        signal on SIGTERM or SIGHUP.  A closed stdout (its reader left) is said with what
        was released, and its BrokenPipeError raised again (status 141 in
        :func:`dgauss.cli.main`).
    """
    typed_delta = args.delta  # (the ledger may set --delta to its budget's)
    try:
        checked = check()
    except (ValueError, TypeError) as exc:
        print(f"dgauss {command}: error: {option_message(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except _ledger.LedgerError as exc:
        print(f"dgauss {command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    _large_delta_warning(command, typed_delta)
    run = Release(None if args.output is None else Output(args.output))
    written = False
    try:
        try:
            status = make(checked, run)
            if status is not None:
                return status
            written = True
        finally:
            if ended is not None:
                ended()  # before any message
            if run.ledger is not None and not written:
                print(
                    f"dgauss {command}: the release is recorded in the ledger {args.ledger} but "
                    "its output was not written: its budget stays spent (the safe side)",
                    file=sys.stderr,
                )
    except (InputError, _ledger.LedgerError) as exc:
        print(f"dgauss {command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except _ledger.Refused as exc:
        print(f"dgauss {command}: refused: {exc}", file=sys.stderr)
        return _ledger.EXIT_REFUSED
    except BrokenPipeError:  # the reader left (``| head``): the release was made all the same
        print(
            f"dgauss {command}: stdout was closed before the output was complete (its reader "
            "left); the release was made, with this noise:",
            file=sys.stderr,
        )
        for line in report(checked, run):
            print(line, file=sys.stderr)
        raise  # status 141, as for any tool whose reader left
    except (KeyboardInterrupt, Terminated) as stop:
        if run.output is not None:
            fate = run.output.fate()
        elif stdout_begun is not None and stdout_begun():
            fate = "the output on stdout may be incomplete"
        else:
            fate = "nothing was written"
        how = "interrupted" if isinstance(stop, KeyboardInterrupt) else f"terminated by {stop.name}"
        print(f"dgauss {command}: {how}; {fate}", file=sys.stderr)
        return EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt) else stop.status
    for line in report(checked, run):
        print(line, file=sys.stderr)
    return 0
