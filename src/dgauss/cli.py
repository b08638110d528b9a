"""The ``dgauss`` command line: draw exact discrete Gaussian or Laplace noise, and account for it.

::

    dgauss sample --sigma2 100 -n 10000000                 # throughput run
    dgauss sample --sigma2 1/3 -n 10000000000 -o noise.npy  # stream to disk
    dgauss sample --laplace 7/3 --mu 5 -n 1000 -o noise.txt
    dgauss calibrate --eps 1 --delta 1e-6 --k 100           # sigma2 / scale for a target
    dgauss account --sigma2 2500 --k 100                    # delta(eps) and eps(delta)
    dgauss account --laplace 35.36 --k 100 --eps 1,2

Samples are drawn in chunks, so memory stays bounded for any ``-n``.  A
``.npy`` path gets an int64 array written chunk by chunk after a header for
the full shape; a ``.txt`` path gets one decimal integer per line, for
samples of any size.  The summary (rate, mean, sample variance) is computed
from exact integer sums.
"""

from __future__ import annotations

import argparse
import contextlib
import decimal
import itertools
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import gmpy2
import numpy as np

import dgauss
from dgauss import _params, accounting

#: Exit status for a usage error (as argparse uses), an I/O or randomness
#: failure, and an interrupt (128 + SIGINT).
EXIT_USAGE = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130

DEFAULT_CHUNK = 1 << 20

#: Significant digits of the mean and variance in the summary.
SUMMARY_DIGITS = 6

_INT64_MAX = (1 << 63) - 1

Write = Callable[[np.ndarray], None]


@dataclass(frozen=True)
class Distribution:
    """A validated sampling request: which sampler, its exact parameter and centre.

    Attributes
    ----------
    symbol : str
        ``"N_Z"`` or ``"Lap_Z"``, for the summary.
    option : str
        The command-line option that gave the parameter.
    text : str
        The parameter as typed, for the summary.
    param : fractions.Fraction
        The parameter's exact value.
    mu : int
        The centre.
    sampler : callable
        :func:`dgauss.sample_gaussian` or :func:`dgauss.sample_laplace`.
    int64_default : bool
        Whether the sampler's default dtype is int64 for these parameters.
    """

    symbol: str
    option: str
    text: str
    param: Fraction
    mu: int
    sampler: Callable[..., np.ndarray]
    int64_default: bool

    @property
    def label(self) -> str:
        """The distribution in the summary's notation, e.g. ``N_Z(0, 100)``."""
        return f"{self.symbol}({_digits(self.mu)}, {self.text})"

    def draw(self, size: int, rng: np.random.Generator | None, workers: int = 1) -> np.ndarray:
        """Draw ``size`` samples in the sampler's default dtype, on ``workers`` threads."""
        return self.sampler(self.param, size, mu=self.mu, rng=rng, workers=workers)


class Moments:
    """Exact running sums of ``x - mu`` and ``(x - mu)**2`` over all samples seen.

    The sums are Python ints, so samples of any size are summed without
    overflow or rounding; an int64 chunk is summed in NumPy when its largest
    square times its length fits in int64, which is exact too.

    Parameters
    ----------
    mu : int
        The centre subtracted before summing (the variance does not depend on
        it, and centring keeps the sums small).
    """

    def __init__(self, mu: int) -> None:
        self.mu = mu
        self.count = 0
        self.total = 0
        self.total_sq = 0

    def add(self, chunk: np.ndarray) -> None:
        """Add one chunk of samples (int64 or object array of ints)."""
        centred = chunk - self.mu
        if centred.dtype == np.int64 and centred.size:
            peak = int(np.abs(centred).max())
            if peak * peak * centred.size <= _INT64_MAX:
                self.total += int(centred.sum())
                self.total_sq += int(centred @ centred)
                self.count += centred.size
                return
        values = centred.tolist()
        self.total += sum(values)
        self.total_sq += sum(v * v for v in values)
        self.count += len(values)

    def mean(self) -> Fraction | None:
        """The exact sample mean, or None before any sample."""
        if self.count == 0:
            return None
        return self.mu + Fraction(self.total, self.count)

    def variance(self) -> Fraction | None:
        """The exact sample variance (divisor ``count - 1``), or None below two samples."""
        if self.count < 2:
            return None
        return (self.total_sq - Fraction(self.total * self.total, self.count)) / (self.count - 1)


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

    def update(self, done: int, elapsed: float) -> None:
        """Redraw the bar for ``done`` samples after ``elapsed`` seconds."""
        if not self.enabled:
            return
        filled = self.WIDTH * done // self.total
        percent = 100 * done // self.total
        rate = done / elapsed / 1e6 if elapsed > 0 else 0.0
        bar = "#" * filled + "." * (self.WIDTH - filled)
        sys.stderr.write(f"\r[{bar}] {percent:3d}%  {rate:.1f} M samples/s")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


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
        a result), 130 if interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version or a usage error, already reported
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        status = args.command(args)
        sys.stdout.flush()
    except OSError as exc:  # stdout closed (``| head``) or full (``> /dev/full``)
        with contextlib.suppress(OSError):  # and do not fail again at interpreter exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"dgauss: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    return status


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dgauss`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="dgauss",
        description="Exact discrete Gaussian and discrete Laplace noise for differential privacy, "
        "and its privacy accounting.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {dgauss.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    sample = commands.add_parser(
        "sample",
        help="draw samples, optionally streaming them to a .npy or .txt file",
        description="Draw exact samples in chunks and print the rate, mean and sample variance. "
        "Parameters are exact rationals: '100', '1/3', '2.5', '1e100'.",
    )
    sample.set_defaults(command=run_sample)
    _add_noise_choice(sample, "sample", "mu, ")
    sample.add_argument(
        "-n",
        dest="count",
        metavar="N",
        required=True,
        type=_nonnegative_int,
        help="number of samples (any size; use -o to keep them)",
    )
    sample.add_argument(
        "-o",
        dest="output",
        metavar="PATH",
        help="write the samples to PATH: .npy (int64) or .txt (one integer "
        "per line, any size); without -o they are discarded",
    )
    sample.add_argument("--mu", default="0", metavar="MU", help="the integer centre (default 0)")
    sample.add_argument(
        "--seed",
        type=_nonnegative_int,
        metavar="S",
        help="use numpy.random.default_rng(S): reproducible, for tests and "
        "simulations only, never to protect real data (default: the "
        "operating system's CSPRNG)",
    )
    sample.add_argument(
        "--chunk",
        type=_positive_int,
        default=DEFAULT_CHUNK,
        metavar="C",
        help=f"samples drawn per call (default {DEFAULT_CHUNK:,})",
    )
    sample.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="W",
        help="threads per chunk: a positive int, or -1 for every core (default 1; "
        "needs the OS CSPRNG, not --seed)",
    )
    sample.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is shown only when stderr is a terminal)",
    )
    _add_calibrate(commands)
    _add_account(commands)
    _add_noise(commands)
    return parser


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


def run_sample(args: argparse.Namespace) -> int:
    """Carry out ``dgauss sample``; see :func:`main` for the exit status."""
    try:
        dist = _distribution(args)
        _check_output(args.output, dist)
    except (ValueError, TypeError) as exc:
        print(f"dgauss sample: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    rng = None
    if args.seed is not None:
        if args.workers != 1:
            print(
                "dgauss sample: error: --workers needs the OS CSPRNG: --seed gives one "
                "sequential stream, which threads cannot share reproducibly",
                file=sys.stderr,
            )
            return EXIT_USAGE
        rng = np.random.default_rng(args.seed)
        print(
            "dgauss: warning: --seed makes the noise reproducible; never use seeded "
            "output to protect real data",
            file=sys.stderr,
        )

    moments = Moments(dist.mu)
    progress = Progress(
        args.count,
        enabled=(not args.no_progress and sys.stderr.isatty() and args.count > args.chunk),
    )
    start = time.perf_counter()
    try:
        with _open_output(args.output, args.count) as write:
            for size in _chunk_sizes(args.count, args.chunk):
                chunk = dist.draw(size, rng, args.workers)
                write(chunk)
                moments.add(chunk)
                progress.update(moments.count, time.perf_counter() - start)
    except OSError as exc:
        progress.close()
        print(f"dgauss: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except MemoryError:
        progress.close()
        print(
            f"dgauss sample: error: --chunk {args.chunk} samples do not fit in memory; "
            "give a smaller --chunk",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except KeyboardInterrupt:
        progress.close()
        unwritten = f"; {args.output} was not written" if args.output else ""
        print(f"dgauss: interrupted after {moments.count:,} samples{unwritten}", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.close()
    print("\n".join(_summary(dist, moments, time.perf_counter() - start, args.output)))
    return 0


def _distribution(args: argparse.Namespace) -> Distribution:
    """The validated request; ValueError/TypeError naming the bad option otherwise."""
    mu = _params.integer(args.mu, "--mu")
    if args.sigma2 is not None:
        sigma2 = _params.positive(args.sigma2, "--sigma2")
        return Distribution(
            "N_Z",
            "--sigma2",
            args.sigma2.strip(),
            sigma2,
            mu,
            dgauss.sample_gaussian,
            _params.gaussian_int64_safe(sigma2, mu),
        )
    scale = _params.positive(args.laplace, "--laplace")
    return Distribution(
        "Lap_Z",
        "--laplace",
        args.laplace.strip(),
        scale,
        mu,
        dgauss.sample_laplace,
        _params.laplace_int64_safe(scale, mu),
    )


def _check_output(path: str | None, dist: Distribution) -> None:
    """ValueError unless ``path`` is None, a .txt path, or a .npy path for int64 samples."""
    if path is None:
        return
    suffix = _suffix(path)
    if suffix not in (".npy", ".txt"):
        raise ValueError(f"-o {path}: the output must be a .npy or .txt path")
    if suffix == ".npy" and not dist.int64_default:
        bound = "2**100" if dist.symbol == "N_Z" else "2**40"
        raise ValueError(
            f"-o {path}: {dist.label} samples may not fit the int64 of a .npy file "
            f"(that needs {dist.option} <= {bound} and |mu| <= 2**62); "
            "write to a .txt path instead"
        )


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


@contextlib.contextmanager
def _open_output(path: str | None, count: int) -> Iterator[Write]:
    """A function writing one chunk to ``path`` (checked already), or discarding it.

    The chunks go to a temporary file beside ``path``, renamed over it only when the
    run completes: a failed or interrupted run leaves an existing file untouched and
    no partial one (a ``.npy`` header would otherwise claim the full count).
    """
    if path is None:
        yield lambda chunk: None
        return
    fd, temporary = tempfile.mkstemp(
        prefix=".dgauss-", suffix=_suffix(path), dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        if _suffix(path) == ".npy":
            with os.fdopen(fd, "wb") as f:
                header = {"descr": "<i8", "fortran_order": False, "shape": (count,)}
                np.lib.format.write_array_header_1_0(f, header)
                yield lambda chunk: chunk.astype("<i8", copy=False).tofile(f)
        else:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                yield lambda chunk: f.writelines(line + "\n" for line in _decimal_lines(chunk))
        mask = os.umask(0)  # mkstemp made it 0600; give it the usual mode
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _decimal_lines(chunk: np.ndarray) -> list[str]:
    """The samples in decimal, one string each."""
    if chunk.dtype == np.int64:
        return [str(v) for v in chunk.tolist()]
    return [_digits(v) for v in chunk.tolist()]


def _digits(value: int) -> str:
    """``value`` in decimal; unlike ``str``, gmpy2 has no limit on the number of digits."""
    return gmpy2.mpz(value).digits()


def _chunk_sizes(count: int, chunk: int) -> Iterator[int]:
    """``count`` split into sizes ``chunk, chunk, ..., remainder``."""
    full, rest = divmod(count, chunk)
    yield from itertools.repeat(chunk, full)
    if rest:
        yield rest


def _summary(dist: Distribution, moments: Moments, elapsed: float, path: str | None) -> list[str]:
    """The lines printed at the end of a run."""
    rate = moments.count / max(elapsed, 1e-9) / 1e6
    destination = f"written to {path}" if path else "not kept (use -o PATH to save them)"
    return [
        f"dgauss: {moments.count:,} samples of {dist.label} in {elapsed:.2f} s: "
        f"{rate:.2f} million samples/s",
        f"  mean {_approx(moments.mean())}, sample variance {_approx(moments.variance())}",
        f"  {destination}",
    ]


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
    return _int_at_least(text, 0)


def _workers(text: str) -> int:
    """argparse type: a positive int or -1 (every core)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if (value < 1 and value != -1) or value > _params.MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"must be a positive int up to {_params.MAX_WORKERS} or -1 (every core), got {text!r}"
        )
    return value


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def _int_at_least(text: str, low: int) -> int:
    """argparse type: an int >= ``low`` (argparse adds the option's name to the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {text!r}")
    return value


# ---- calibrate and account: the privacy accounting ---------------------------

#: The interval ``calibrate`` prints holds the noise with probability 1 - INTERVAL_ALPHA.
INTERVAL_ALPHA = Fraction(1, 20)

#: Significant digits of a printed delta or epsilon, always rounded up.
PRIVACY_DIGITS = 4

#: Significant digits of a printed variance or standard deviation.
UTILITY_DIGITS = 6

#: The epsilons and deltas ``account`` reports when none are given.
DEFAULT_EPS = "0.5,1,2,4,8"
DEFAULT_DELTA = "1e-5,1e-6,1e-9"

#: A float delta below this is recomputed from its logarithm (``log=True``), so that
#: e.g. 7.4e-549 is printed instead of the float floor 5e-324.
TINY_DELTA = 1e-300

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


def _add_calibrate(commands: argparse._SubParsersAction) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="the noise that gives (eps, delta)-DP: discrete Gaussian (exact and zCDP "
        "accounting) beside the discrete Laplace",
        description="Print, for a target (eps, delta) over K queries, the smallest noise parameter "
        "(4 significant digits) that provably reaches it by three routes: the "
        "discrete Gaussian with exact accounting (Theorems 7 and 15), the discrete "
        "Gaussian with zCDP accounting (Corollary 13), and the discrete Laplace; with "
        "each one's noise variance, standard deviation and 95% interval. "
        "Parameters are exact rationals: '1', '0.5', '1/3', '1e-6'. " + _QUERIES_HELP,
    )
    calibrate.set_defaults(command=run_calibrate)
    calibrate.add_argument("--eps", required=True, metavar="EPS", help="the target epsilon, > 0")
    calibrate.add_argument(
        "--delta", required=True, metavar="DELTA", help="the target delta, 0 < DELTA < 1, e.g. 1e-6"
    )
    _add_query_options(calibrate)
    _one_line_errors(calibrate)


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


def _add_query_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k",
        type=_positive_int,
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


def _queries(args: argparse.Namespace) -> Queries:
    """``--k`` and ``--sensitivity``; ValueError naming the option otherwise."""
    text = args.sensitivity.strip()
    parts = [part.strip() for part in text.split(",")]
    hint = "a positive integer or a comma-separated vector such as 1,-1,2"
    if len(parts) == 1:
        value = _params.integer(text, "--sensitivity")
        if value < 1:
            raise ValueError(f"--sensitivity must be {hint}, got {_params.show(args.sensitivity)}")
        return Queries(args.k, text, value, value)
    if not all(parts):
        raise ValueError(f"--sensitivity must be {hint}, got {_params.show(args.sensitivity)}")
    entries = tuple(_params.integer(part, "--sensitivity") for part in parts)
    if not any(entries):
        raise ValueError("--sensitivity must have a nonzero entry (all zero means no privacy loss)")
    return Queries(args.k, ",".join(parts), entries, sum(abs(e) for e in entries))


def _option_message(exc: Exception) -> str:
    """The accounting's error message, with its parameter's name replaced by the option's."""
    text = str(exc)
    match = re.match(r"(\w+)\b", text)
    if match and match.group(1) in _OPTION_OF:
        return _OPTION_OF[match.group(1)] + text[match.end() :]
    return text


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
    return _accounting_errors("calibrate", lambda: _calibration(args))


def _calibration(args: argparse.Namespace) -> list[str]:
    """The lines ``calibrate`` prints."""
    queries = _queries(args)
    eps, delta = args.eps.strip(), args.delta.strip()
    sens, k = queries.sensitivity, queries.k
    gauss = [
        (
            "discrete Gaussian, exact",
            accounting.calibrate_gaussian(eps, delta, sens, k, method="exact"),
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
    lines += _table(header, rows, right=(2, 3, 4))
    exact, zcdp, laplace = (r.variance for r in routes)
    if exact is not None and zcdp is not None:
        lines.append(f"  exact accounting needs {_relative(exact, zcdp)} variance than zCDP")
    if laplace is not None and exact is not None:
        lines.append(
            f"  the discrete Laplace needs {_relative(laplace, exact)} variance than "
            "the exact discrete Gaussian"
        )
    lines.append(
        f"  (each parameter is the smallest with {accounting.GRID_DIGITS} significant digits "
        "that provably reaches the target;"
    )
    lines.append("   variance and std dev are per coordinate of each query)")
    return lines


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


def _relative(value: float, reference: float) -> str:
    """'13.1% less' or '69.0% more': ``value`` against ``reference``."""
    change = 100 * (value - reference) / reference
    return f"{abs(change):.1f}% {'more' if change > 0 else 'less'}"


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


def _pad(value: decimal.Decimal, digits: int) -> decimal.Decimal:
    """``value`` with trailing zeros up to ``digits`` significant digits (17.9 -> 17.90)."""
    exponent = value.adjusted() - digits + 1
    current = value.as_tuple().exponent  # an int for a finite value ('n', 'N', 'F' otherwise)
    if value != 0 and isinstance(current, int) and current > exponent:
        with decimal.localcontext() as ctx:
            ctx.prec = max(ctx.prec, digits + 2)
            ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
            return value.quantize(decimal.Decimal(1).scaleb(exponent))
    return value


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


def run_account(args: argparse.Namespace) -> int:
    """Carry out ``dgauss account``; see :func:`main` for the exit status."""
    return _accounting_errors("account", lambda: _account(args))


def _values(text: str) -> list[str]:
    """A comma-separated list, each entry stripped (an empty one is left for the accounting
    to refuse by name)."""
    return [part.strip() for part in text.split(",")]


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


def _rho_text(rho: Fraction) -> str:
    """rho as a short fraction and its decimal, or its decimal alone."""
    approx = _approx(rho)
    if len(str(rho.numerator)) + len(str(rho.denominator)) <= 20:
        exact = str(rho)
        return exact if exact == approx else f"{exact} ({approx})"
    return approx


def _delta_text(delta: Callable[..., float], *args: object) -> str:
    """delta(*args) rounded up, or from delta(*args, log=True) when it is below TINY_DELTA."""
    value = delta(*args, log=False)
    if value >= TINY_DELTA or value == 0:
        return _rounded_up(value)
    return _rounded_up_from_log(delta(*args, log=True))


def _rounded_up(value, digits: int = PRIVACY_DIGITS) -> str:
    """``value`` (a float or Fraction >= 0) rounded up to ``digits`` significant digits."""
    q = Fraction(value)
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_CEILING
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        up = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)
    return _short(up)


def _rounded_up_from_log(log_value: float, digits: int = PRIVACY_DIGITS) -> str:
    """e**log_value rounded up to ``digits`` significant digits, at any magnitude (7.4e-549);
    beyond a million decimal places, as ``e^-1.797e308``."""
    if log_value < -2e6:
        return "e^" + _rounded_up(log_value, digits)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        ln10 = decimal.Decimal(10).ln()
        log10 = decimal.Decimal(log_value) / ln10
        exponent = int(log10.to_integral_value(rounding=decimal.ROUND_FLOOR))
        # the mantissa in [1, 10), nudged up past the computation's own rounding
        mantissa = ((log10 - exponent) * ln10).exp() * (1 + decimal.Decimal(10) ** -40)
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_CEILING
        mantissa = +mantissa
        if mantissa >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return _short(mantissa.scaleb(exponent))


def _short(value: decimal.Decimal) -> str:
    """A Decimal with PRIVACY_DIGITS significant digits: positional near 1, else like 1.755e-8."""
    if value == 0:
        return "0"
    with decimal.localcontext() as ctx:
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        value = _pad(value, PRIVACY_DIGITS)
        if -4 <= value.adjusted() < 6:
            return f"{value:f}"
        mantissa = value.scaleb(-value.adjusted())
        return f"{mantissa:f}e{value.adjusted()}"


# ==========================================================================
# dgauss noise: release a column of counts (or a .npy array) with noise
# ==========================================================================

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


class InputError(Exception):
    """A problem with the input file: reported in one line, exit status 1."""


def _add_noise(commands: argparse._SubParsersAction) -> None:
    noise = commands.add_parser(
        "noise",
        help="release counts with exact noise: a CSV column (or a .npy array) in, noisy out",
        description="Add discrete Gaussian (default) or discrete Laplace (--laplace) noise "
        "to integer counts: the named --column(s) of a CSV file with a header (the other "
        "columns are kept as they are), or a .npy integer array. Set the noise in "
        "exactly one way: --sigma2, --rho or --epsilon with --delta for the Gaussian; "
        "--scale or --epsilon [--delta] with --laplace. The guarantee (as rho and as "
        "(eps, delta)) and the 95%% error bars go to stderr; the data to -o (.csv or "
        ".npy, written whole or not at all) or to stdout as CSV. The noise comes from "
        "the operating system's CSPRNG.",
    )
    noise.set_defaults(command=run_noise)
    noise.add_argument("input", metavar="INPUT", help="a .csv file with a header, or a .npy file")
    noise.add_argument(
        "--column",
        action="append",
        metavar="NAME",
        help="a CSV column of integers to noise (repeat for several; required for CSV)",
    )
    noise.add_argument("--laplace", action="store_true", help="discrete Laplace noise")
    noise.add_argument("--sigma2", metavar="S", help="Gaussian: the variance parameter")
    noise.add_argument("--rho", metavar="R", help="Gaussian: a zCDP target rho > 0")
    noise.add_argument("--scale", metavar="T", help="Laplace: the scale t > 0")
    noise.add_argument("--epsilon", metavar="E", help="an (eps, delta) target: eps > 0")
    noise.add_argument(
        "--delta", metavar="D", help="with --epsilon: 0 < D < 1 (Laplace: default 0, pure DP)"
    )
    noise.add_argument(
        "--accounting",
        choices=("exact", "zcdp"),
        default="exact",
        help="Gaussian with --epsilon: calibrate by exact accounting (default) or by zCDP",
    )
    noise.add_argument(
        "--sensitivity",
        default="1",
        metavar="N",
        help="one person's effect on all the noised values together: a positive int, "
        "l2 for the Gaussian, l1 for the Laplace (default 1)",
    )
    noise.add_argument(
        "--clip-min", metavar="LO", help="clip the noisy values below at LO, e.g. 0 for counts"
    )
    noise.add_argument("-o", "--output", metavar="PATH", help="write here (.csv or .npy)")
    _one_line_errors(noise)


def run_noise(args: argparse.Namespace) -> int:
    """Carry out ``dgauss noise``; see :func:`main` for the exit status."""
    try:
        mech = _noise_mechanism(args)
        clip = (
            None
            if args.clip_min is None
            else (_params.integer(args.clip_min.strip(), "--clip-min"), None)
        )
        _check_noise_output(args)
    except (ValueError, TypeError) as exc:
        print(f"dgauss noise: error: {_noise_option_message(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        table = _read_noise_input(args)
        released = table.noised(mech, clip)
        for line in _noise_report(mech, args, table.count):
            print(line, file=sys.stderr)
        _write_noise_output(args, released)
    except InputError as exc:
        print(f"dgauss noise: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("dgauss noise: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _noise_option_message(exc: Exception) -> str:
    text = str(exc)
    for name, option in (
        ("sigma2", "--sigma2"),
        ("rho", "--rho"),
        ("scale", "--scale"),
        ("eps", "--epsilon"),
        ("epsilon", "--epsilon"),
        ("delta", "--delta"),
        ("sensitivity", "--sensitivity"),
    ):
        text = (
            re.sub(rf"\b{name}=?(?=\b)", option, text, count=1) if text.startswith(name) else text
        )
    return text


def _noise_mechanism(args: argparse.Namespace):
    sens = _params.integer(args.sensitivity.strip(), "--sensitivity")
    if sens < 1:
        raise ValueError(f"--sensitivity must be a positive integer, got {args.sensitivity!r}")
    if args.laplace:
        if args.sigma2 is not None or args.rho is not None:
            raise ValueError(
                "--sigma2 and --rho set Gaussian noise; with --laplace use --scale or --epsilon"
            )
        if (args.scale is None) == (args.epsilon is None):
            raise ValueError(
                "with --laplace, set the noise in exactly one way: --scale or --epsilon [--delta]"
            )
        if args.scale is not None:
            if args.delta is not None:
                raise ValueError("--delta goes with --epsilon, not with --scale")
            return dgauss.LaplaceMechanism(scale=args.scale.strip(), sensitivity=sens)
        delta = "0" if args.delta is None else args.delta.strip()
        return dgauss.LaplaceMechanism(epsilon=args.epsilon.strip(), delta=delta, sensitivity=sens)
    if args.scale is not None:
        raise ValueError("--scale sets Laplace noise: add --laplace, or use --sigma2")
    given = [
        o
        for o, v in (("--sigma2", args.sigma2), ("--rho", args.rho), ("--epsilon", args.epsilon))
        if v is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "set the noise in exactly one way: --sigma2, --rho, or --epsilon with "
            "--delta" + (f" (got {', '.join(given)})" if given else "")
        )
    if args.delta is not None and args.epsilon is None:
        raise ValueError("--delta goes with --epsilon")
    if args.epsilon is not None and args.delta is None:
        raise ValueError(
            "--epsilon needs --delta (0 < D < 1) for the Gaussian; for pure eps-DP use --laplace"
        )
    return dgauss.GaussianMechanism(
        sigma2=None if args.sigma2 is None else args.sigma2.strip(),
        rho=None if args.rho is None else args.rho.strip(),
        epsilon=None if args.epsilon is None else args.epsilon.strip(),
        delta=None if args.delta is None else args.delta.strip(),
        sensitivity=sens,
        accounting=args.accounting,
    )


def _check_noise_output(args: argparse.Namespace) -> None:
    if args.output is not None and _suffix(args.output) not in (".csv", ".npy"):
        raise ValueError(f"-o must end in .csv or .npy, got {args.output!r}")
    is_npy = _suffix(args.input) == ".npy"
    if is_npy and args.column:
        raise ValueError("--column is for CSV input; a .npy input is noised whole")
    if not is_npy and not args.column:
        raise ValueError("name the CSV column(s) to noise with --column")


@dataclass
class _NoiseTable:
    """The input: a CSV (header, rows of strings, the noised columns' indices) or an array."""

    header: list[str] | None
    rows: list[list[str]] | None
    columns: list[int]
    array: np.ndarray | None

    @property
    def count(self) -> int:
        if self.array is not None:
            return int(self.array.size)
        assert self.rows is not None
        return len(self.rows) * len(self.columns)

    def noised(self, mech, clip) -> _NoiseTable:
        if self.array is not None:
            return _NoiseTable(None, None, [], mech(self.array, clip=clip, overflow="object"))
        assert self.rows is not None
        values = [int(row[j]) for row in self.rows for j in self.columns]
        noisy = mech(np.array(values, dtype=object), clip=clip, overflow="object")
        rows = [list(row) for row in self.rows]
        it = iter(noisy.tolist())
        for row in rows:
            for j in self.columns:
                row[j] = str(next(it))
        return _NoiseTable(self.header, rows, self.columns, None)


def _read_noise_input(args: argparse.Namespace) -> _NoiseTable:
    import csv

    path = args.input
    if not os.path.isfile(path):
        raise InputError(f"no such file: {path}")
    if _suffix(path) == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InputError(f"{path} is not a readable .npy array: {exc}") from None
        if array.dtype.kind not in "iu":
            raise InputError(f"{path} holds {array.dtype} values; counts must be integers")
        return _NoiseTable(None, None, [], array)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read {path} as CSV: {exc}") from None
    if not header:
        raise InputError(f"{path} is empty: a CSV file needs a header row")
    names = [h.strip() for h in header]
    columns = []
    for name in args.column:
        if name not in names:
            raise InputError(f"no column {name!r} in {path}; its columns are: {', '.join(names)}")
        columns.append(names.index(name))
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InputError(
                f"{path}, line {number}: {len(row)} fields where the header has {len(header)}"
            )
        for j in columns:
            cell = row[j].strip()
            if not _INTEGER.match(cell):
                raise InputError(
                    f"{path}, line {number}, column {names[j]!r}: {row[j]!r} is not an integer "
                    "(counts are never rounded)"
                )
            row[j] = cell
    if not rows:
        raise InputError(f"{path} has a header but no rows")
    return _NoiseTable(header, rows, columns, None)


def _noise_report(mech, args: argparse.Namespace, count: int) -> list[str]:
    delta = "1e-6" if args.delta is None or args.laplace else args.delta.strip()
    if isinstance(mech, dgauss.GaussianMechanism):
        lines = [
            f"dgauss noise: N_Z(0, sigma2) on {count} values, sigma2 = {_approx(mech.sigma2)}"
            f", sensitivity {mech.sensitivity}",
            f"  zCDP: rho = {_rho_text(mech.rho)}",
            f"  (eps, delta): eps = {_rounded_up(mech.epsilon(delta))} at delta = {delta}",
        ]
        if args.epsilon is not None:
            eps = args.epsilon.strip()
            at = _delta_text(accounting.gaussian_delta, mech.sigma2, eps, mech.sensitivity)
            lines.append(f"  delta = {at} at eps = {eps}")
    else:
        lines = [
            f"dgauss noise: Lap_Z(scale) on {count} values, scale = {_approx(mech.scale)}"
            f", sensitivity {mech.sensitivity}",
            f"  pure eps = {_rounded_up(mech.epsilon())}; zCDP: rho = {_rho_text(mech.rho)}",
        ]
        if args.delta not in (None, "0"):
            lines.append(
                f"  eps = {_rounded_up(mech.epsilon(args.delta.strip()))} at delta = {args.delta}"
            )
    lo, hi = mech.interval(0.05)
    lines.append(f"  95% error bars: each released value is within +-{hi} of the truth")
    if args.clip_min is not None:
        lines.append(f"  clipped below at {args.clip_min} (post-processing)")
    return lines


def _write_noise_output(args: argparse.Namespace, table: _NoiseTable) -> None:
    import csv
    import io

    path = args.output
    if path is not None and _suffix(path) == ".npy":
        array = table.array
        if array is None:
            assert table.rows is not None
            array = np.array([[row[j] for j in table.columns] for row in table.rows], dtype=object)
            array = np.array([[int(v) for v in r] for r in array.tolist()], dtype=object)
            if len(table.columns) == 1:
                array = array[:, 0]
        if array.dtype == object:
            if not all(-(2**63) <= int(v) < 2**63 for v in array.ravel()):
                raise InputError("a released value does not fit int64; write .csv instead")
            array = array.astype(np.int64)
        _atomic(path, "wb", lambda f: np.save(f, array, allow_pickle=False))
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if table.array is not None:
        writer.writerow(["value"])
        writer.writerows([v] for v in table.array.ravel().tolist())
    else:
        assert table.header is not None and table.rows is not None
        writer.writerow(table.header)
        writer.writerows(table.rows)
    text = buffer.getvalue()
    if path is None:
        sys.stdout.write(text)
    else:
        _atomic(path, "w", lambda f: f.write(text))


def _atomic(path: str, mode: str, write: Callable) -> None:
    """Write to a temporary file beside ``path``, then rename it over ``path``: a failure
    leaves an existing file as it was and no partial one."""
    fd, temporary = tempfile.mkstemp(
        prefix=".dgauss-", suffix=_suffix(path), dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
