"""What the commands share: exit codes, option types, one-line errors, the queries' options,
the rounding-up of printed privacy numbers, and the run of one release (``noise``,
``tabulate``) with its failures."""

from __future__ import annotations

import argparse
import contextlib
import decimal
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import dgauss
from dgauss import _params, accounting
from dgauss._rounding import _pad, _rounded_up

#: Exit status for a usage error (as argparse uses), an I/O or randomness
#: failure, and an interrupt (128 + SIGINT).
EXIT_USAGE = 2


EXIT_FAILURE = 1


EXIT_INTERRUPTED = 130

#: Exit status when the reader of stdout went away (``| head -1``): 128 + SIGPIPE, what a
#: shell reports for a tool that SIGPIPE ended (``yes | head -1`` under ``set -o pipefail``).
EXIT_PIPE = 128 + 13


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (:func:`_terminations`): raised in the main thread like
    KeyboardInterrupt, so that every cleanup runs; the command exits with :attr:`status`.

    Parameters
    ----------
    signum : int
        The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``SIGTERM``."""
        return signal.Signals(self.signum).name

    @property
    def status(self) -> int:
        """The conventional exit status, 128 + the signal's number (143 for SIGTERM)."""
        return 128 + self.signum


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout whole, or raise (BrokenPipeError when the reader went away).

    A large write to a pipe whose reader leaves midway returns short from the buffered
    layer, and ``sys.stdout.write`` drops that count: the rest would be lost without an
    error (exit status 0 after ``| head -1``).  Here every short write is followed up, so
    the closed pipe is seen.
    """
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a plain text stream (a test's StringIO)
        sys.stdout.write(text)
        return
    sys.stdout.flush()  # what print() left in the text layer goes first
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    while data:
        written = buffer.write(data)
        data = data[written if written is not None else 0 :]
    buffer.flush()


#: The signals a run turns into :class:`Terminated` (SIGINT is Python's KeyboardInterrupt).
_TERMINATING = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def _terminations() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while the block runs.

    Only a signal left at its default action is taken over: one that is ignored (``nohup``
    ignores SIGHUP) stays ignored, and so does one an embedding program handles.  Once one
    arrived, further ones are ignored until the block ends, so that the cleanup it starts
    (removing a temporary file) is not cut short.  Outside the main thread, nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken: dict[int, Any] = {}  # the signal -> its previous handler

    def handler(signum: int, frame: object) -> None:
        for number in taken:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated(signum)

    for number in _TERMINATING:
        previous = signal.getsignal(number)
        if previous == signal.SIG_DFL:
            taken[number] = previous
            signal.signal(number, handler)
    try:
        yield
    finally:
        for number, previous in taken.items():
            signal.signal(number, previous)


#: Significant digits of the mean and variance in the summary.
SUMMARY_DIGITS = 6


class Progress:
    """A one-line progress bar on stderr: ``[#####.....]  42%  12.3 M samples/s``.

    Parameters
    ----------
    total : int
        The number of samples the run will draw.
    enabled : bool
        Whether to draw the bar at all.
    """

    WIDTH = 30

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.shown = False

    def update(self, done: int, elapsed: float, note: str | None = None) -> None:
        """Redraw the bar for ``done`` of ``total`` after ``elapsed`` seconds, ending in the
        rate (M samples/s) or in ``note`` (e.g. the step under way)."""
        if not self.enabled:
            return
        filled = self.WIDTH * done // self.total
        percent = 100 * done // self.total
        rate = done / elapsed / 1e6 if elapsed > 0 else 0.0
        bar = "#" * filled + "." * (self.WIDTH - filled)
        tail = note.ljust(24) if note is not None else f"{rate:.1f} M samples/s"
        sys.stderr.write(f"\r[{bar}] {percent:3d}%  {tail}")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _add_noise_choice(parser: argparse.ArgumentParser, verb: str, centre: str) -> None:
    """The required choice of --sigma2 SIGMA2 or --laplace SCALE."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--sigma2",
        metavar="SIGMA2",
        help=f"{verb} the discrete Gaussian N_Z({centre or '0, '}SIGMA2), SIGMA2 > 0",
    )
    which.add_argument(
        "--laplace",
        metavar="SCALE",
        help=f"{verb} the discrete Laplace Lap_Z({centre}SCALE), SCALE > 0",
    )


def _approx(value: Fraction | None) -> str:
    """``value`` to SUMMARY_DIGITS significant digits, at any magnitude (no float overflow)."""
    if value is None:
        return "n/a"
    with decimal.localcontext() as ctx:
        ctx.prec = SUMMARY_DIGITS
        ctx.Emax = decimal.MAX_EMAX
        ctx.Emin = decimal.MIN_EMIN
        quotient = decimal.Decimal(value.numerator) / value.denominator
    return f"{quotient:.{SUMMARY_DIGITS}g}"


def _nonnegative_int(text: str) -> int:
    return _int_option(text, 0)


def _workers(text: str) -> int:
    """argparse type: a positive int or -1 (every core)."""
    try:
        value = _exact_integer(text)
    except ValueError:
        value = 0
    if (value < 1 and value != -1) or value > _params.MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"must be a positive int up to {_params.MAX_WORKERS} or -1 (every core), got {text!r}"
        )
    return value


def _positive_int(text: str) -> int:
    return _int_option(text, 1)


def _count_option(text: str) -> int:
    """argparse type: a count of samples or rows, 0 to INT64_MAX."""
    return _int_option(text, 0, INT64_MAX)


def _chunk_option(text: str) -> int:
    """argparse type: a chunk size, 1 to INT64_MAX."""
    return _int_option(text, 1, INT64_MAX)


def _k_option(text: str) -> int:
    """argparse type: a number of queries, 1 to the accounting's MAX_K."""
    return _int_option(text, 1, accounting.MAX_K)


#: The largest count an integer option takes where it sizes an array or a file (-n, --chunk).
INT64_MAX = (1 << 63) - 1

#: An integer with Python's digit grouping: underscores only between two digits.
_GROUPED = re.compile(r"\s*[+-]?[0-9](?:_?[0-9])*\s*\Z", re.ASCII)

#: What an integer option takes, for its error messages.
INTEGER_FORMS = "an integer such as 1000, 10_000_000 or 1e7"


def _exact_integer(text: str) -> int:
    """An integer as typed on the command line: digits (``10000000``), Python's grouping
    (``10_000_000``), or any exact number of _params whose value is an integer (``1e7``,
    ``1E7``, ``2.5e6``).  Never rounded: ``1.5e0`` is refused.  ValueError saying what was
    found, without the option's name (the caller adds it)."""
    stripped = text.strip()
    if "_" in stripped:
        if not _GROUPED.match(stripped):
            raise ValueError(
                f"must be {INTEGER_FORMS} (an underscore only between two digits), got {text!r}"
            )
        stripped = stripped.replace("_", "")
    try:
        value = _params.to_fraction(stripped, "the value")
    except ValueError:
        raise ValueError(f"must be {INTEGER_FORMS}, got {_params.show(text)}") from None
    if value.denominator != 1:
        raise ValueError(
            f"must be {INTEGER_FORMS}, got {_params.show(text)}, which is not a whole number "
            "(never rounded)"
        )
    return value.numerator


def _int_option(text: str, low: int, high: int | None = None) -> int:
    """argparse type: an integer (:func:`_exact_integer`) from ``low`` to ``high``
    (argparse adds the option's name to the error)."""
    try:
        value = _exact_integer(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {text!r}")
    if high is not None and value > high:
        raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {_params.show(text)}")
    return value


def _integer_text(text: str, name: str) -> int:
    """An integer option that is not an argparse type (--mu, --clip-min, --sensitivity):
    :func:`_exact_integer`, its ValueError naming ``name``."""
    try:
        return _exact_integer(text)
    except ValueError as exc:
        raise ValueError(f"{name} {exc}") from None


#: The interval ``calibrate`` prints holds the noise with probability 1 - INTERVAL_ALPHA.
INTERVAL_ALPHA = Fraction(1, 20)


#: Significant digits of a printed variance or standard deviation.
UTILITY_DIGITS = 6


#: The accounting's parameter names, and the options that give them.
_OPTION_OF = {
    "eps": "--eps",
    "delta": "--delta",
    "k": "--k",
    "sensitivity": "--sensitivity",
    "sigma2": "--sigma2",
    "scale": "--laplace",
}


_QUERIES_HELP = (
    "--k and --sensitivity describe the queries: K answers (composition), each an "
    "integer vector whose values on neighbouring inputs differ by at most the "
    "sensitivity, a positive int or a worst-case difference vector such as 1,-1,2 "
    "(the discrete Laplace takes its l1 norm)."
)


def _add_query_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k",
        type=_k_option,
        default=1,
        metavar="K",
        help="the number of queries answered (composition; default 1)",
    )
    parser.add_argument(
        "--sensitivity",
        default="1",
        metavar="S",
        help="a positive int, or a comma-separated difference vector such as "
        "1,-1,2 (write --sensitivity=-1,2 when it starts with a minus; "
        "default 1)",
    )


def _add_noise_setting(parser: argparse.ArgumentParser, delta_help: str) -> None:
    """The options that set a release's noise (``noise``, ``tabulate``): --laplace, then
    --sigma2, --rho, --scale, --epsilon with --delta (its help ``delta_help``), and
    --accounting; :func:`_mechanism` makes the noise they set."""
    parser.add_argument("--laplace", action="store_true", help="discrete Laplace noise")
    parser.add_argument("--sigma2", metavar="S", help="Gaussian: the variance parameter")
    parser.add_argument("--rho", metavar="R", help="Gaussian: a zCDP target rho > 0")
    parser.add_argument("--scale", metavar="T", help="Laplace: the scale t > 0")
    parser.add_argument("--epsilon", "--eps", metavar="E", help="an (eps, delta) target: eps > 0")
    parser.add_argument("--delta", metavar="D", help=delta_help)
    parser.add_argument(
        "--accounting",
        choices=("exact", "zcdp"),
        default="exact",
        help="Gaussian with --epsilon: calibrate by exact accounting (default) or by zCDP",
    )


def _mechanism(
    args: argparse.Namespace, sensitivity: int | accounting.Contributions
) -> dgauss.GaussianMechanism | dgauss.LaplaceMechanism:
    """The noise that the options of :func:`_add_noise_setting` set, already checked to set
    it in one way, for queries of ``sensitivity`` (and ``--k`` of them).

    Parameters
    ----------
    args : argparse.Namespace
        The options, as typed (each value stripped here).
    sensitivity : int or Contributions
        l2 for the Gaussian, l1 for the Laplace.

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        The mechanism (a ValueError or TypeError in the library's words when a value is
        out of its range).
    """
    if args.laplace:
        if args.scale is not None:
            return dgauss.LaplaceMechanism(scale=args.scale.strip(), sensitivity=sensitivity)
        delta = "0" if args.delta is None else args.delta.strip()
        return dgauss.LaplaceMechanism(
            epsilon=args.epsilon.strip(), delta=delta, sensitivity=sensitivity, k=args.k
        )
    return dgauss.GaussianMechanism(
        sigma2=None if args.sigma2 is None else args.sigma2.strip(),
        rho=None if args.rho is None else args.rho.strip(),
        epsilon=None if args.epsilon is None else args.epsilon.strip(),
        delta=None if args.delta is None else args.delta.strip(),
        sensitivity=sensitivity,
        k=args.k,  # > 1 only with --rho or --epsilon: calibrated for all k (_ledger checks)
        accounting=args.accounting,
    )


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` report a usage error in one line (no usage block) and exit 2."""

    def error(message: str):
        parser.exit(EXIT_USAGE, f"{parser.prog}: error: {message} (see '{parser.prog} --help')\n")

    parser.error = error  # type: ignore[method-assign]


@dataclass(frozen=True)
class Queries:
    """The validated ``--k`` and ``--sensitivity``.

    Attributes
    ----------
    k : int
        The number of queries.
    text : str
        ``--sensitivity`` as typed.
    sensitivity : int or tuple of int
        For the Gaussian accounting: a positive int or a difference vector.
    l1 : int
        The l1 norm of the sensitivity, for the discrete Laplace.
    """

    k: int
    text: str
    sensitivity: int | tuple[int, ...]
    l1: int

    def describe(self) -> str:
        queries = "1 query" if self.k == 1 else f"k = {self.k} queries"
        return f"{queries}, sensitivity {self.text}"


#: Most digits of an integer on the command line (Python's int() refuses beyond 4,300).
_MAX_INTEGER_DIGITS = 4000

#: Most bits of such an integer (about 4,200 digits, below Python's limit of 4,300 for str()).
_MAX_INTEGER_BITS = 14_000


def _sensitivity_text(text: str, name: str) -> int | tuple[int, ...]:
    """A sensitivity as typed (``--sensitivity`` or a release spec's S): one positive integer
    (a bound), or a comma-separated difference vector of integers, which may be negative,
    not all zero.  ValueError naming ``name`` and the forms it takes otherwise."""
    parts = [part.strip() for part in text.strip().split(",")]
    hint = (
        "a positive integer (a bound) or a comma-separated difference vector of integers "
        "such as 1,-1,2"
    )
    entries = []
    for part in parts:
        if len(part) > _MAX_INTEGER_DIGITS:
            raise ValueError(f"{name} has an entry of more than {_MAX_INTEGER_DIGITS} digits")
        try:
            entries.append(_exact_integer(part))  # 1e3 and 1_000 too, never rounded
        except ValueError:
            raise ValueError(f"{name} must be {hint}, got {_params.show(text)}") from None
        if entries[-1].bit_length() > _MAX_INTEGER_BITS:  # 1e5000 is short to type
            raise ValueError(f"{name} has an entry over {_MAX_INTEGER_BITS:,} bits")
    if len(parts) == 1:
        value = entries[0]
        if value < 1:
            raise ValueError(
                f"{name} must be {hint}, got {_params.show(text)}: one number is a bound on "
                "the difference, so it is positive (only a vector's entries may be negative)"
            )
        return value
    if not any(entries):
        raise ValueError(f"{name} must have a nonzero entry (all zero means no privacy loss)")
    return tuple(entries)


def _queries(args: argparse.Namespace) -> Queries:
    """``--k`` and ``--sensitivity``; ValueError naming the option otherwise."""
    sens = _sensitivity_text(args.sensitivity, "--sensitivity")
    if isinstance(sens, int):
        return Queries(args.k, str(sens), sens, sens)
    return Queries(args.k, ",".join(map(str, sens)), sens, sum(abs(e) for e in sens))


def _option_message(exc: Exception) -> str:
    """The accounting's error message, with its parameter's name replaced by the option's."""
    text = str(exc)
    match = re.match(r"(\w+)\b", text)
    if match and match.group(1) in _OPTION_OF:
        return _OPTION_OF[match.group(1)] + text[match.end() :]
    return text


#: A δ from this value up draws a warning on stderr (never a refusal) wherever a command takes
#: one.  (ε, δ)-DP holds for a mechanism that publishes each person's record whole with
#: probability δ, so δ must be far below 1/n for n people (10^-6 or less is usual); a
#: command cannot know n (a table's rows are cells, not people), so it warns from 10^-3,
#: where one person in a thousand may be exposed outright.
LARGE_DELTA = Fraction(1, 1000)


def _large_delta_warning(command: str, text: str | None) -> None:
    """One line on stderr for each δ in ``text`` (one value, or a comma-separated list) from
    :data:`LARGE_DELTA` up (below 1: a δ out of range is refused where it is read, as is
    one that is no number)."""
    if text is None:
        return
    for part in _values(text):
        try:
            value = _params.to_fraction(part, "--delta")
        except (ValueError, TypeError):
            continue
        if LARGE_DELTA <= value < 1:
            print(
                f"dgauss {command}: warning: --delta {part} is large: (eps, delta)-DP allows "
                "publishing each person's record outright with probability delta, so delta "
                "should be far below 1/n for n people (1e-6 or less is usual); warned from "
                f"delta >= {_exact_text(LARGE_DELTA)}",
                file=sys.stderr,
            )


def _accounting_errors(command: str, body: Callable[[], list[str]]) -> int:
    """Run ``body`` and print its lines; report a bad parameter or a failure in one line."""
    try:
        lines = body()
    except (ValueError, TypeError) as exc:
        print(f"dgauss {command}: error: {_option_message(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except ArithmeticError as exc:
        print(
            f"dgauss {command}: error: cannot compute this: {_option_message(exc)}", file=sys.stderr
        )
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print(f"dgauss {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print("\n".join(lines))
    return 0


def _or_none(function: Callable[[Fraction], float], value: Fraction) -> float | None:
    """function(value), or None when the result exceeds the float range."""
    try:
        return function(value)
    except OverflowError:
        return None


def _utility(value: float | None) -> str:
    if value is None:
        return "> 1.8e308"
    return f"{value:#.{UTILITY_DIGITS}g}".replace(".e", "e").rstrip(".")


def _relative(value: float, reference: float, name: str) -> str:
    """``value`` against ``reference`` (both > 0), to follow "needs": '13.1% less variance than
    NAME' or '69.0% more …'; as a ratio ('1.2e-42 times the variance of NAME') where the
    percentage would read 100.0% less or over 999%, and 'the same variance as NAME (to 0.05%)'
    where it would read 0.0%."""
    change = 100 * (value - reference) / reference
    shown = f"{abs(change):.1f}"
    if shown == "0.0":
        return f"the same variance as {name} (to within 0.05%)"
    if shown == "100.0" and change < 0 or change > 999:
        return f"{value / reference:.2g} times the variance of {name}"
    return f"{shown}% {'more' if change > 0 else 'less'} variance than {name}"


def _grid_text(value: Fraction) -> str:
    """A calibrated parameter exactly as its decimal (``17.90``: all 4 significant digits),
    or as a fraction when it is no short decimal."""
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    digits = value.numerator * 10**places // value.denominator
    with decimal.localcontext() as ctx:
        ctx.prec = max(len(str(abs(digits))), accounting.GRID_DIGITS) + 2
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        exact = decimal.Decimal(digits).scaleb(-places).normalize()
    exact = _pad(exact, accounting.GRID_DIGITS)
    if -6 <= exact.adjusted() < 12:
        return f"{exact:f}"
    return f"{exact:e}".replace("e+", "e")


def _table(header: list[str], rows: list[list[str]], right: Sequence[int] = ()) -> list[str]:
    """``header`` and ``rows`` in aligned columns, indented; columns in ``right`` flush right."""
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return (
            "  "
            + "   ".join(
                c.rjust(w) if i in right else c.ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()
        )

    return [line(header)] + [line(row) for row in rows]


def _values(text: str) -> list[str]:
    """A comma-separated list, each entry stripped (an empty one is left for the accounting
    to refuse by name)."""
    return [part.strip() for part in text.split(",")]


def _rho_text(rho: Fraction) -> str:
    """rho as a short fraction and its decimal, or its decimal alone."""
    approx = _approx(rho)
    if len(str(rho.numerator)) + len(str(rho.denominator)) <= 20:
        exact = str(rho)
        return exact if exact == approx else f"{exact} ({approx})"
    return approx


def _exact_text(q: Fraction) -> str:
    """q as a terminating decimal when it is one (71.41), else as a fraction (1/3)."""
    d = q.denominator
    for prime in (2, 5):
        while d % prime == 0:
            d //= prime
    if d != 1 or len(str(q)) > 40:
        return str(q) if len(str(q)) <= 40 else _rounded_up(q, 6)
    places = 0
    while (q * 10**places).denominator != 1:
        places += 1
    whole = q * 10**places
    digits = str(abs(whole.numerator)).rjust(places + 1, "0")
    text = digits[: len(digits) - places] + ("." + digits[len(digits) - places :] if places else "")
    return ("-" if q < 0 else "") + text


def _describe(release) -> str:
    sens = release.sensitivity
    if isinstance(sens, accounting.L2Ball):
        text = f"{sens.radius} (l2: the ball's worst vector)"
    elif isinstance(sens, accounting.Contributions):
        text = f"{sens!r} (its worst vector)"
    else:
        text = str(sens[0]) if len(sens) == 1 else ",".join(map(str, sens))
    times = f", k = {release.k}" if release.k != 1 else ""
    if isinstance(release, accounting.Gaussian):
        return (
            f"discrete Gaussian, sigma2 = {_exact_text(release.sigma2)}, sensitivity "
            f"{text}{times}: rho = {_rho_text(release.rho)}"
        )
    return (
        f"discrete Laplace, scale = {_exact_text(release.scale)}, sensitivity {text}"
        f"{times}: pure eps = {_rounded_up(release.epsilon)}"
    )
