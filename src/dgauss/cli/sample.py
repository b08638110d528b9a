"""``dgauss sample``: draw samples in chunks, optionally streaming them to a file."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

import dgauss
from dgauss import _methods, _params
from dgauss.cli._common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Progress,
    Terminated,
    _add_noise_choice,
    _approx,
    _chunk_option,
    _count_option,
    _integer_text,
    _nonnegative_int,
    _workers,
)
from dgauss.cli._io import (
    _INT64_MAX,
    Output,
    _check_free_space,
    _digits,
    _open_output,
    _suffix,
)

DEFAULT_CHUNK = 1 << 20


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
    method : str
        "inversion" or "rejection", resolved from ``--method``.
    """

    symbol: str
    option: str
    text: str
    param: Fraction
    mu: int
    sampler: Callable[..., np.ndarray]
    int64_default: bool
    method: str = "rejection"

    @property
    def label(self) -> str:
        """The distribution in the summary's notation, e.g. ``N_Z(0, 100)``."""
        return f"{self.symbol}({_digits(self.mu)}, {self.text})"

    def draw(self, size: int, rng: np.random.Generator | None, workers: int = 1) -> np.ndarray:
        """Draw ``size`` samples in the sampler's default dtype, on ``workers`` threads."""
        return self.sampler(
            self.param, size, mu=self.mu, rng=rng, workers=workers, method=self.method
        )


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
        centred = chunk - self.mu if self.mu else chunk
        if centred.dtype == np.int64 and centred.size:
            peak = max(int(centred.max()), -int(centred.min()))
            if peak * peak * centred.size <= _INT64_MAX:  # no sum below can overflow
                self.total += int(centred.sum())
                self.total_sq += int(np.einsum("i,i->", centred, centred))
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


def _add_sample(commands: argparse._SubParsersAction) -> None:
    """The ``sample`` subcommand and its options."""
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
        type=_count_option,
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
        type=_chunk_option,
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
        "--method",
        choices=_methods.METHODS,
        default="auto",
        help="inversion (a table of exact thresholds; the fastest, for sigma2 in [1/64, 2**100] "
        "or scale in [1/64, 2**40]), rejection (the paper's Algorithms 2-3, any parameter), or "
        "auto (default: inversion inside those ranges)",
    )
    sample.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is shown only when stderr is a terminal)",
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

    if args.output is not None:
        try:
            _check_free_space(args.output, args.count)
        except OSError as exc:
            print(f"dgauss sample: error: {exc}", file=sys.stderr)
            return EXIT_FAILURE

    moments = Moments(dist.mu)
    progress = Progress(
        args.count,
        enabled=(not args.no_progress and sys.stderr.isatty() and args.count > args.chunk),
    )
    output = None if args.output is None else Output(args.output)
    start = time.perf_counter()
    drawing = 0.0  # seconds inside the sampler: the rate printed
    try:
        with _open_output(args.output, args.count, output) as write:
            for size in _chunk_sizes(args.count, args.chunk):
                began = time.perf_counter()
                chunk = dist.draw(size, rng, args.workers)
                drawing += time.perf_counter() - began
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
    except (KeyboardInterrupt, Terminated) as stop:
        progress.close()
        fate = "" if output is None else f"; {output.fate()}"
        how = "interrupted" if isinstance(stop, KeyboardInterrupt) else f"terminated by {stop.name}"
        print(f"dgauss sample: {how} after {moments.count:,} samples{fate}", file=sys.stderr)
        return EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt) else stop.status
    progress.close()
    elapsed = time.perf_counter() - start
    try:
        print("\n".join(_summary(dist, moments, drawing, elapsed, args.output)))
    except Terminated as stop:  # after the run: the output is complete
        fate = "" if output is None else f"; {output.fate()}"
        print(
            f"dgauss sample: terminated by {stop.name} after {moments.count:,} samples{fate}",
            file=sys.stderr,
        )
        return stop.status
    return 0


def _distribution(args: argparse.Namespace) -> Distribution:
    """The validated request; ValueError/TypeError naming the bad option otherwise."""
    mu = _integer_text(args.mu, "--mu")
    method = getattr(args, "method", "auto")
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
            _resolve(True, sigma2, method, min(args.count, args.chunk)),
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
        _resolve(False, scale, method, min(args.count, args.chunk)),
    )


def _resolve(gaussian: bool, param: Fraction, method: str, chunk: int) -> str:
    """``--method`` resolved for the parameter and a chunk of ``chunk`` samples (then used for
    every chunk), or a ValueError naming the option."""
    try:
        return _methods.resolve(gaussian, param, method, chunk)
    except ValueError as exc:
        raise ValueError(f"--method: {exc}") from None


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


def _chunk_sizes(count: int, chunk: int) -> Iterator[int]:
    """``count`` split into sizes ``chunk, chunk, ..., remainder``."""
    full, rest = divmod(count, chunk)
    yield from itertools.repeat(chunk, full)
    if rest:
        yield rest


def _summary(
    dist: Distribution, moments: Moments, drawing: float, elapsed: float, path: str | None
) -> list[str]:
    """The lines printed at the end of a run: the sampler's rate (``drawing`` seconds in
    it), and the whole run's time (``elapsed``, writing and summing included)."""
    rate = moments.count / max(drawing, 1e-9) / 1e6
    destination = f"written to {path}" if path else "not kept (use -o PATH to save them)"
    return [
        f"dgauss: {moments.count:,} samples of {dist.label} by {dist.method}: "
        f"{rate:.2f} million samples/s ({drawing:.2f} s sampling, {elapsed:.2f} s in all)",
        f"  mean {_approx(moments.mean())}, sample variance {_approx(moments.variance())}",
        f"  {destination}",
    ]
