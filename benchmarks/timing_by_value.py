"""How a discrete Gaussian or Laplace sample's work varies with its value, by both methods.

Run from the repository (``PYTHONPATH=src`` or an installed dgauss)::

    python benchmarks/timing_by_value.py            # about a minute
    python benchmarks/timing_by_value.py --quick    # about 10 s
    python benchmarks/timing_by_value.py --quick --laplace         # Lap_Z(0, t) only
    python benchmarks/timing_by_value.py --sigma2 100 --laplace 1e4  # both

For each sigma2 of N_Z(0, sigma2) (``--sigma2``; default 1, 100, 10**4, 10**6, when
``--laplace`` is not given) and each scale t of Lap_Z(0, t) (``--laplace``; given without
values 100, 10**4, 10**6: t >= 2**8 is blocked inversion, docs/contract.md item 9), and
each ``method`` ("inversion", "rejection"), samples are grouped by |x - mu| (mu = 0), by
exact integer comparison: for the Gaussian in units of sigma (0-1, 1-2, 2-3, 3-4 and 4 or
more sigma), for the Laplace in units of t (0-1, 1-2, 2-4, 4-8 and 8 or more t); one table
per distribution.  For each group it prints:

* **bits**: the mean number of random bits the compiled core read per sample
  (``dgauss._core.fill`` returns the count), next to the mean of -log2 P[X = x] over the
  group's values, the information in the value itself.
* **ns, alone** and **ns, mixed**: time per sample, measured by replaying the group's own
  random bits through the sampler at batch speed.  The samples are first drawn one per
  ``fill`` call from a seeded bit tape (``dgauss.testing.Tape``), which gives each one's
  exact bit string; groups with fewer than 300 (``--quick``: 100) samples are topped up by
  scanning batches and cutting out each wanted sample's bits (batches of i and of i + 1
  samples from the same start read exactly that sample's bits more).  "Alone": the
  group's bit strings, cycled to a few 10**4 samples, concatenated into one tape and
  filled as one batch.  "Mixed": the same group samples shuffled 1:1 into the
  unconditioned stream, minus that stream alone: the cost of such a sample among typical
  neighbours (branch history, caches), a difference of two timings, hence noisier.  Each
  timing is the best of several batches, the batches taking turns, and every replayed
  value is checked against the one first drawn, so the clock times the very computation
  that produced the values, with no per-call overhead.  A tape is read one 64-bit word
  per callback where the OS source reads 16 KiB per system call; the "all" row gives the
  unconditioned stream replayed from a tape and drawn from the OS source ("OS:"): the
  difference is what the source costs.
* Under the table, a cross-check from the same one-sample calls: the mean
  ``perf_counter_ns`` time of a one-sample ``fill`` minus that of an empty one (the same
  set-up, no sample) interleaved with it, ± its standard error.  The set-up takes
  microseconds and jitters by about as much, so this cannot resolve the few-ns
  differences the replay shows; it is printed to show that.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from dgauss import _core
from dgauss._kinds import Kind
from dgauss.testing import Tape

SIGMA2 = [1, 100, 10**4, 10**6]
SCALES = [100, 10**4, 10**6]
METHODS = ("inversion", "rejection")
KINDS = {"gaussian": Kind.DISCRETE_GAUSSIAN, "laplace": Kind.DISCRETE_LAPLACE}
BUCKETS = {
    "gaussian": ["0-1σ", "1-2σ", "2-3σ", "3-4σ", "≥4σ"],
    "laplace": ["0-1t", "1-2t", "2-4t", "4-8t", "≥8t"],
}


# ---- bit tapes -------------------------------------------------------------------------


def tape_of_words(words: np.ndarray, nbits: int | None = None) -> Tape:
    """A Tape holding ``words`` (uint64), its first ``nbits`` bits readable (default: all)."""
    tape = Tape.from_int(0, 0)
    tape.words = np.ascontiguousarray(words, dtype=np.uint64)
    tape.nbits = 64 * tape.words.size if nbits is None else nbits
    return tape


def bits_of(words: np.ndarray) -> np.ndarray:
    """The bits of ``words``, first bit first, as a uint8 array of 0/1."""
    return np.unpackbits(words.astype(">u8").view(np.uint8))


def tape_of_bits(bits: np.ndarray, gen: np.random.Generator) -> Tape:
    """A Tape of ``bits`` then at least 64 random bits (never read by a replay: room for a
    sampler that looks at the next word before knowing it will not need it)."""
    pad = 64 + (-bits.size) % 64
    full = np.concatenate([bits, gen.integers(0, 2, pad, dtype=np.uint8)])
    return tape_of_words(np.packbits(full).view(">u8").astype(np.uint64))


# ---- the distribution --------------------------------------------------------------------


@dataclass(frozen=True)
class Dist:
    """N_Z(0, param = sigma2) ("gaussian") or Lap_Z(0, param = t) ("laplace")."""

    name: str
    param: Fraction

    def fill(self, source, out: np.ndarray, method: str) -> int:
        """``_core.fill`` for this distribution: fills ``out``, returns the bits read."""
        n, d = self.param.numerator, self.param.denominator
        return _core.fill(KINDS[self.name], n, d, 0, source, out, method=method)

    def __str__(self) -> str:
        return f"sigma2={self.param}" if self.name == "gaussian" else f"laplace t={self.param}"


def bucket(values: np.ndarray, dist: Dist) -> np.ndarray:
    """The group of each value, in integers.  Gaussian: floor(|x| / sigma), capped at 4,
    = isqrt(floor(x^2 / sigma2)).  Laplace: the bit length of floor(|x| / t), capped at 4
    (0, 1, 2-3, 4-7, 8 or more t)."""
    n, d = dist.param.numerator, dist.param.denominator
    gaussian = dist.name == "gaussian"
    return np.array(
        [
            min(4, math.isqrt(v * v * d // n) if gaussian else (abs(v) * d // n).bit_length())
            for v in values.tolist()
        ],
        dtype=np.int64,
    )


def information(dist: Dist):
    """-log2 P[X = x] as a function of arrays x, and P[bucket] for the five buckets."""
    q = float(dist.param)
    if dist.name == "gaussian":  # -log P[X = x] = x^2 / (2 sigma2) + log_z, summed numerically
        energy = lambda x: x.astype(float) ** 2 / (2 * q)
        reach = int(40 * math.sqrt(q)) + 10
        xs = np.arange(-reach, reach + 1)
        log_w = -energy(xs)
        log_z = float(np.log(np.exp(log_w).sum()))
        probs = np.exp(log_w - log_z)
        per_bucket = np.bincount(bucket(xs, dist), weights=probs, minlength=5)
    else:  # P[X = x] = (1 - p) / (1 + p) p^|x|, P[|X| >= m] = 2 p^m / (1 + p) (m >= 1)
        energy = lambda x: np.abs(x).astype(float) / q
        p = math.exp(-1 / q)
        log_z = math.log1p(p) - math.log(-math.expm1(-1 / q))
        starts = [math.ceil(2**b * dist.param) for b in range(4)]  # groups 1-4 start here
        tails = [1.0] + [2 * math.exp(-m / q) / (1 + p) for m in starts] + [0.0]
        per_bucket = np.subtract(tails[:-1], tails[1:])

    def info(x: np.ndarray) -> np.ndarray:
        return (energy(x) + log_z) / math.log(2)

    return info, per_bucket


# ---- drawing with bits known --------------------------------------------------------------


def draw_singly(dist: Dist, method: str, n: int, gen: np.random.Generator) -> dict:
    """n samples, one ``fill`` call each on a seeded tape, each call timed and followed by a
    timed empty call: values, bits read, each sample's bit string and the call times."""
    pilot = np.empty(10_000, dtype=np.int64)
    mean_bits = dist.fill(None, pilot, method) / pilot.size
    words = gen.integers(0, 2**64, int(n * (2 * mean_bits / 64 + 2)) + 64, dtype=np.uint64)
    tape = tape_of_words(words)
    one, none = np.empty(1, dtype=np.int64), np.empty(0, dtype=np.int64)
    values = np.empty(n, dtype=np.int64)
    used = np.empty(n, dtype=np.int64)
    starts = np.empty(n, dtype=np.int64)
    t_call = np.empty(n, dtype=np.int64)
    t_empty = np.empty(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for _ in range(200):  # warm-up: the table, the caches, the branch predictors
        dist.fill(None, one, method)
    gc.disable()
    try:
        for i in range(n):
            starts[i] = tape.position
            t0 = clock()
            used[i] = dist.fill(tape, one, method)
            t1 = clock()
            dist.fill(tape, none, method)
            t2 = clock()
            values[i], t_call[i], t_empty[i] = one[0], t1 - t0, t2 - t1
    finally:
        gc.enable()
    everything = bits_of(words)
    segments = [
        everything[64 * s : 64 * s + b] for s, b in zip(starts.tolist(), used.tolist(), strict=True)
    ]
    return {
        "values": values,
        "bits": used,
        "segments": segments,
        "t_call": t_call,
        "t_empty": t_empty,
    }


def scan(
    dist: Dist,
    method: str,
    wanted: dict[int, int],
    max_samples: int,
    gen: np.random.Generator,
    batch: int = 16_384,
) -> dict[int, list]:
    """Samples of the buckets in ``wanted`` (bucket: how many), with their bit strings, from
    batches on seeded tapes: (value, bits, bit string) per sample.  A sample at index i of a
    batch read the bits from B_i to B_{i+1}, the counts that batches of i and i + 1 samples
    from the same start return."""
    found: dict[int, list] = {b: [] for b in wanted}
    pilot = np.empty(10_000, dtype=np.int64)
    mean_bits = dist.fill(None, pilot, method) / pilot.size
    scanned = 0
    while scanned < max_samples and any(len(found[b]) < k for b, k in wanted.items()):
        words = gen.integers(0, 2**64, int(batch * 2 * mean_bits / 64) + 256, dtype=np.uint64)
        tape = tape_of_words(words)
        out = np.empty(batch, dtype=np.int64)
        dist.fill(tape, out, method)
        scanned += batch
        groups = bucket(out, dist)
        everything = None
        for i in np.flatnonzero(np.isin(groups, list(wanted))).tolist():
            b = int(groups[i])
            if len(found[b]) >= wanted[b]:
                continue
            edges = []
            for k in (i, i + 1):
                tape.position = 0
                part = np.empty(k, dtype=np.int64)
                edges.append(dist.fill(tape, part, method))
            assert part[-1] == out[i]
            everything = bits_of(words) if everything is None else everything
            found[b].append((int(out[i]), edges[1] - edges[0], everything[edges[0] : edges[1]]))
    return found


def replay(
    dist: Dist,
    method: str,
    streams: dict[str, tuple[list[int], list[np.ndarray]]],
    repeats: int,
    gen: np.random.Generator,
) -> dict[str, float]:
    """ns per sample of one batch re-reading each stream's bit strings (values, bit strings),
    the best of ``repeats``, the streams taking turns; every value is checked."""
    jobs = {}
    for name, (values, segments) in streams.items():
        tape = tape_of_bits(np.concatenate(segments), gen)
        jobs[name] = (tape, np.array(values, dtype=np.int64), np.empty(len(values), np.int64))
    best = dict.fromkeys(streams, math.inf)
    for _ in range(repeats):
        for name, (tape, expected, out) in jobs.items():
            tape.position = 0
            start = time.perf_counter_ns()
            dist.fill(tape, out, method)
            best[name] = min(best[name], time.perf_counter_ns() - start)
            if not np.array_equal(out, expected):
                raise AssertionError(f"replay of {dist} {method} gave other values")
    return {name: best[name] / len(streams[name][0]) for name in streams}


def group_timing(
    dist: Dist,
    method: str,
    group: tuple[list[int], list[np.ndarray]],
    background: tuple[list[int], list[np.ndarray]],
    size: int,
    repeats: int,
    gen: np.random.Generator,
) -> dict[str, float]:
    """A group's ns/sample two ways: "alone", a batch of ``size`` of its samples (cycled);
    "mixed", the extra time its ``size`` samples add when shuffled into ``size`` samples of
    the unconditioned stream (``background``), over that stream alone: the cost of such a
    sample where its neighbours are typical (branch history, caches)."""
    values, segments = group
    alone = [i % len(values) for i in range(size)]
    slots = np.zeros(2 * size, dtype=bool)
    slots[gen.choice(2 * size, size, replace=False)] = True
    picks, kept = iter(alone), iter(range(size))
    mixed = [("g", next(picks)) if g else ("b", next(kept)) for g in slots.tolist()]
    pool = {"g": group, "b": background}
    times = replay(
        dist,
        method,
        {
            "alone": ([values[i] for i in alone], [segments[i] for i in alone]),
            "background": (background[0][:size], background[1][:size]),
            "mixed": (
                [pool[w][0][i] for w, i in mixed],
                [pool[w][1][i] for w, i in mixed],
            ),
        },
        repeats,
        gen,
    )
    return {
        "alone": times["alone"],
        "background": times["background"],
        "mixed": 2 * times["mixed"] - times["background"],
    }


def os_ns(dist: Dist, method: str, size: int, repeats: int) -> float:
    """ns/sample of a batch from the OS source (rng=None), best of ``repeats``."""
    out = np.empty(size, dtype=np.int64)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter_ns()
        dist.fill(None, out, method)
        best = min(best, time.perf_counter_ns() - start)
    return best / size


# ---- one (distribution, parameter, method) -------------------------------------------------


def measure(dist: Dist, method: str, quick: bool, seed: int) -> dict:
    q = dist.param
    key = [seed, q.numerator, q.denominator, METHODS.index(method)]  # the Gaussian's, as before
    gen = np.random.default_rng(key + ([] if dist.name == "gaussian" else [1]))
    n_single = 20_000 if quick else 100_000
    wanted_per_bucket = 100 if quick else 300
    replay_size = 20_000 if quick else 50_000
    repeats = 3 if quick else 7
    info, p_bucket = information(dist)

    single = draw_singly(dist, method, n_single, gen)
    groups = bucket(single["values"], dist)
    short = {
        b: wanted_per_bucket - int((groups == b).sum())
        for b in range(5)
        if (groups == b).sum() < wanted_per_bucket and p_bucket[b] > 0  # not an empty group
    }
    extra = scan(dist, method, short, 2_000_000 if quick else 10_000_000, gen) if short else {}

    overhead = single["t_empty"]
    background = (single["values"].tolist(), single["segments"])
    result: dict = {
        "distribution": dist.name,
        ("sigma2" if dist.name == "gaussian" else "t"): str(q),
        "method": method,
        "bits_all": float(single["bits"].mean()),
        "info_all": float(info(single["values"]).mean()),
        "os_ns_all": os_ns(dist, method, replay_size, repeats),
        "n_single": n_single,
        "empty_call_ns": {"mean": float(overhead.mean()), "sd": float(overhead.std())},
        "buckets": [],
    }
    for b in range(5):
        mine = np.flatnonzero(groups == b)
        values = single["values"][mine].tolist() + [v for v, _, _ in extra.get(b, [])]
        bits = single["bits"][mine].tolist() + [k for _, k, _ in extra.get(b, [])]
        segments = [single["segments"][i] for i in mine] + [s for _, _, s in extra.get(b, [])]
        row = {"bucket": BUCKETS[dist.name][b], "p": float(p_bucket[b]), "n": len(values)}
        if values:
            row.update(
                bits=float(np.mean(bits)),
                info=float(info(np.array(values)).mean()),
                **group_timing(
                    dist, method, (values, segments), background, replay_size, repeats, gen
                ),
            )
            if mine.size >= 2:
                calls = single["t_call"][mine]
                row["single_ns"] = float(calls.mean() - overhead.mean())
                row["single_se"] = float(
                    math.sqrt(calls.var() / mine.size + overhead.var() / overhead.size)
                )
        result["buckets"].append(row)
    result["background_ns"] = float(
        np.median([r["background"] for r in result["buckets"] if "background" in r])
    )
    return result


# ---- report --------------------------------------------------------------------------


def _label(q: Fraction) -> str:
    if q.denominator == 1 and q.numerator >= 10**4 and str(q.numerator).rstrip("0") == "1":
        return f"10^{len(str(q.numerator)) - 1}"
    return str(q)


def _name(r: dict) -> str:
    """A result's row label: sigma2 for the Gaussian, "laplace t=..." for the Laplace."""
    if r["distribution"] == "gaussian":
        return _label(Fraction(r["sigma2"]))
    return f"laplace t={r['t']}"


def table(results: list[dict]) -> str:
    """One table per distribution, one row per (parameter, bucket), inversion next to
    rejection."""
    by = {(_name(r), r["method"]): r for r in results}
    titles = [
        "σ²",
        "\\|x − μ\\|",
        "P",
        "−log2 P[X=x]",
        *(f"{m} bits" for m in METHODS),
        *(f"{m} ns, mixed" for m in METHODS),
        *(f"{m} ns, alone" for m in METHODS),
        "n (" + " / ".join(m[:3] for m in METHODS) + ")",
    ]
    lines: list[str] = []
    current = ""  # the distribution of the table being written

    def cell(r: dict | None, key: str, fmt: str) -> str:
        return fmt.format(r[key]) if r is not None and r.get(key) is not None else "n/a"

    for s in dict.fromkeys(map(_name, results)):
        ours = [by.get((s, m)) for m in METHODS]
        first = next(r for r in ours if r is not None)
        if first["distribution"] != current:  # a new table
            current = first["distribution"]
            titles[0] = "σ²" if current == "gaussian" else "distribution"
            lines += [""] if lines else []
            lines += ["| " + " | ".join(titles) + " |", "|---|---|" + "---:|" * (len(titles) - 2)]
        for b in range(5):
            rows = [r["buckets"][b] if r else None for r in ours]
            cells = [s, first["buckets"][b]["bucket"], f"{first['buckets'][b]['p']:.2g}"]
            cells.append(cell(next(r for r in rows if r is not None), "info", "{:.1f}"))
            cells += [cell(r, "bits", "{:.1f}") for r in rows]
            cells += [cell(r, "mixed", "{:.1f}") for r in rows]
            cells += [cell(r, "alone", "{:.1f}") for r in rows]
            cells.append(" / ".join(cell(r, "n", "{}") for r in rows))
            lines.append("| " + " | ".join(cells) + " |")
        cells = [s, "all", "1", cell(first, "info_all", "{:.1f}")]
        cells += [cell(r, "bits_all", "{:.1f}") for r in ours]
        cells += [cell(r, "background_ns", "{:.1f}") for r in ours]
        cells += [cell(r, "os_ns_all", "OS: {:.1f}") for r in ours]
        cells.append(" / ".join(cell(r, "n_single", "{}") for r in ours))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def notes(results: list[dict]) -> str:
    """What the columns are, and the single-call cross-check with its noise."""
    checks = []
    kinds = dict.fromkeys(r["distribution"] for r in results)
    for r in results:
        excess = [b.get("single_ns") for b in r["buckets"]]
        spread = [b.get("single_se") for b in r["buckets"]]
        shown = ", ".join(
            f"{v:.0f}±{e:.0f}" if v is not None else "n/a"
            for v, e in zip(excess, spread, strict=True)
        )
        checks.append(
            ("σ² = " if r["distribution"] == "gaussian" else "")
            + f"{_name(r)} {r['method']}: {shown} "
            f"(empty call {r['empty_call_ns']['mean'] / 1e3:.1f} µs, "
            f"sd {r['empty_call_ns']['sd'] / 1e3:.1f})"
        )
    return (
        "bits: mean random bits read per sample. −log2 P[X=x]: the mean information of the "
        "group's values (what an ideal exact sampler would read for them on average). "
        "ns, alone: one batch made only of the group's samples, replayed from a tape of their "
        "own bits (best of several batches). ns, mixed: the time the group's samples add when "
        "shuffled 1:1 into the unconditioned stream, over that stream alone (so their "
        "neighbours, branch history and caches are typical); it is a difference of two "
        "timings, noisier than 'alone'. 'all' row: the unconditioned stream replayed from a "
        "tape ('mixed' column) and drawn from the OS source ('alone' column, 'OS:').\n\n"
        "Cross-check, ns per group "
        + " / ".join(f"{BUCKETS[d][0]} … {BUCKETS[d][-1]}" for d in kinds)
        + ": mean time of a one-sample fill call minus "
        "that of an empty call interleaved with it (± standard error); the per-call "
        "set-up (several µs, jittering by µs) swamps the differences above:\n"
        + "\n".join(f"- {c}" for c in checks)
        + "\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (about 20 s)")
    parser.add_argument("--sigma2", nargs="+", default=None, help=f"default: {SIGMA2}")
    parser.add_argument(
        "--laplace",
        nargs="*",
        default=None,
        metavar="SCALE",
        help=f"scales t of Lap_Z(0, t) (no values: {SCALES}); without --sigma2, no Gaussian",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the bit tapes")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    scales = SCALES if args.laplace == [] else args.laplace or []
    dists = [Dist("gaussian", Fraction(s)) for s in args.sigma2 or ([] if scales else SIGMA2)]
    dists += [Dist("laplace", Fraction(t)) for t in scales]
    results = []
    for dist in dists:
        for method in METHODS:
            start = time.perf_counter()
            try:
                results.append(measure(dist, method, args.quick, args.seed))
            except ValueError as exc:  # a method this parameter does not allow
                print(f"# {dist} {method}: {exc}", file=sys.stderr)
                continue
            print(
                f"# {dist} {method}: {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    report = table(results) + "\n" + notes(results)
    print(report)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
