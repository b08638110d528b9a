"""The ``dgauss`` command line: draw exact discrete Gaussian or Laplace noise, and account for it.

::

    dgauss sample --sigma2 100 -n 10000000                 # throughput run
    dgauss sample --sigma2 1/3 -n 10000000000 -o noise.npy  # stream to disk
    dgauss sample --laplace 7/3 --mu 5 -n 1000 -o noise.txt
    dgauss calibrate --eps 1 --delta 1e-6 --k 100           # sigma2 / scale for a target
    dgauss account --sigma2 2500 --k 100                    # delta(eps) and eps(delta)
    dgauss account --laplace 35.36 --k 100 --eps 1,2
    dgauss tabulate people.csv --by region --key region=north,south --sigma2 4  # a noisy table

Samples are drawn in chunks, so memory stays bounded for any ``-n``.  A
``.npy`` path gets an int64 array written chunk by chunk after a header for
the full shape; a ``.txt`` path gets one decimal integer per line, for
samples of any size.  The summary (rate, mean, sample variance) is computed
from exact integer sums.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

import dgauss
from dgauss._rounding import PRIVACY_DIGITS, TINY_DELTA, _rounded_up, _rounded_up_from_log
from dgauss.cli._common import (
    EXIT_FAILURE,
    EXIT_PIPE,
    EXIT_USAGE,
    Progress,
    Terminated,
    _grid_text,
    _terminations,
)
from dgauss.cli.account import _add_account
from dgauss.cli.calibrate import _add_calibrate
from dgauss.cli.noise import _add_noise
from dgauss.cli.sample import Distribution, Moments, _add_sample
from dgauss.cli.tabulate import _add_tabulate

__all__ = ["main", "build_parser"]

# names reached as dgauss.cli.X by tests and benchmarks
_REEXPORTED = (
    Distribution,
    Moments,
    Progress,
    EXIT_USAGE,
    PRIVACY_DIGITS,
    TINY_DELTA,
    _grid_text,
    _rounded_up,
    _rounded_up_from_log,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dgauss`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 for a usage error, 1 if writing the
        output or reading randomness failed (or the accounting could not compute
        a result), 3 if ``noise --ledger`` refused a release that does not fit the
        ledger's budget (nothing drawn or written), 130 if interrupted (Ctrl-C),
        143 on SIGTERM and 129 on SIGHUP (128 + the signal; no partial or temporary
        file is left), 141 (128 + SIGPIPE) when the reader of stdout went away
        (``| head -1``): quietly, but for ``noise``, which says on stderr which noise its
        release was made with.
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # an option the subcommand does not know: its own usage, not the top one
            getattr(args, "subparser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version or a usage error, already reported
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    name = getattr(args, "subparser", parser).prog
    with _terminations():
        try:
            status = args.command(args)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader went away (``| head -1``): end quietly
            _stdout_to_devnull()
            return EXIT_PIPE
        except OSError as exc:  # stdout full (``> /dev/full``) or another write failure
            _stdout_to_devnull()
            print(f"dgauss: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_FAILURE
        except Terminated as signalled:  # a command that says no more than this
            print(f"{name}: terminated by {signalled.name}", file=sys.stderr)
            return signalled.status
    return status


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit fails no more."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dgauss`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="dgauss",
        description="Exact discrete Gaussian and discrete Laplace noise for differential privacy, "
        "and its privacy accounting.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {dgauss.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    _add_sample(commands)
    _add_calibrate(commands)
    _add_account(commands)
    _add_noise(commands)
    _add_tabulate(commands)
    for command in commands.choices.values():  # for its usage line on an unknown option
        command.set_defaults(subparser=command)
    return parser
