"""How a discrete Gaussian sample's work varies with its value: inversion next to rejection.

Run from the repository (``PYTHONPATH=src`` or an installed dgauss)::

    python benchmarks/timing_by_value.py            # about a minute
    python benchmarks/timing_by_value.py --quick    # about 10 s

For each sigma2 (default 1, 100, 10**4, 10**6) and each ``method`` ("inversion",
"rejection"), samples are grouped by |x - mu| in units of sigma (0-1, 1-2, 2-3, 3-4 and 4
or more sigma, by exact integer comparison; mu = 0), and for each group it prints:

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
from fractions import Fraction
from pathlib import Path

import numpy as np

from dgauss import _core
from dgauss._kinds import Kind
from dgauss.testing import Tape

GAUSSIAN = Kind.DISCRETE_GAUSSIAN
SIGMA2 = [1, 100, 10**4, 10**6]
METHODS = ("inversion", "rejection")
BUCKETS = ["0-1σ", "1-2σ", "2-3σ", "3-4σ", "≥4σ"]


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


def bucket(values: np.ndarray, sigma2: Fraction) -> np.ndarray:
    """floor(|x| / sigma), capped at 4, in integers: isqrt(floor(x^2 / sigma2))."""
    n, d = sigma2.numerator, sigma2.denominator
    return np.array(
        [min(4, math.isqrt(int(v) * int(v) * d // n)) for v in values.tolist()], dtype=np.int64
    )


def information(sigma2: Fraction):
    """-log2 P[X = x] as a function of arrays x, and P[bucket] for the five buckets."""
    s2 = float(sigma2)
    reach = int(40 * math.sqrt(s2)) + 10
    xs = np.arange(-reach, reach + 1)
    log_w = -(xs.astype(float) ** 2) / (2 * s2)
    log_z = float(np.log(np.exp(log_w).sum()))
    probs = np.exp(log_w - log_z)
    per_bucket = np.bincount(bucket(xs, sigma2), weights=probs, minlength=5)

    def info(x: np.ndarray) -> np.ndarray:
        return (x.astype(float) ** 2 / (2 * s2) + log_z) / math.log(2)

    return info, per_bucket


# ---- drawing with bits known --------------------------------------------------------------


def draw_singly(sigma2: Fraction, method: str, n: int, gen: np.random.Generator) -> dict:
    """n samples, one ``fill`` call each on a seeded tape, each call timed and followed by a
    timed empty call: values, bits read, each sample's bit string and the call times."""
    num, den = sigma2.numerator, sigma2.denominator
    pilot = np.empty(10_000, dtype=np.int64)
    mean_bits = _core.fill(GAUSSIAN, num, den, 0, None, pilot, method=method) / pilot.size
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
        _core.fill(GAUSSIAN, num, den, 0, None, one, method=method)
    gc.disable()
    try:
        for i in range(n):
            starts[i] = tape.position
            t0 = clock()
            used[i] = _core.fill(GAUSSIAN, num, den, 0, tape, one, method=method)
            t1 = clock()
            _core.fill(GAUSSIAN, num, den, 0, tape, none, method=method)
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
    sigma2: Fraction,
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
    num, den = sigma2.numerator, sigma2.denominator
    found: dict[int, list] = {b: [] for b in wanted}
    pilot = np.empty(10_000, dtype=np.int64)
    mean_bits = _core.fill(GAUSSIAN, num, den, 0, None, pilot, method=method) / pilot.size
    scanned = 0
    while scanned < max_samples and any(len(found[b]) < k for b, k in wanted.items()):
        words = gen.integers(0, 2**64, int(batch * 2 * mean_bits / 64) + 256, dtype=np.uint64)
        tape = tape_of_words(words)
        out = np.empty(batch, dtype=np.int64)
        _core.fill(GAUSSIAN, num, den, 0, tape, out, method=method)
        scanned += batch
        groups = bucket(out, sigma2)
        everything = None
        for i in np.flatnonzero(np.isin(groups, list(wanted))).tolist():
            b = int(groups[i])
            if len(found[b]) >= wanted[b]:
                continue
            edges = []
            for k in (i, i + 1):
                tape.position = 0
                part = np.empty(k, dtype=np.int64)
                edges.append(_core.fill(GAUSSIAN, num, den, 0, tape, part, method=method))
            assert part[-1] == out[i]
            everything = bits_of(words) if everything is None else everything
            found[b].append((int(out[i]), edges[1] - edges[0], everything[edges[0] : edges[1]]))
    return found


def replay(
    sigma2: Fraction,
    method: str,
    streams: dict[str, tuple[list[int], list[np.ndarray]]],
    repeats: int,
    gen: np.random.Generator,
) -> dict[str, float]:
    """ns per sample of one batch re-reading each stream's bit strings (values, bit strings),
    the best of ``repeats``, the streams taking turns; every value is checked."""
    num, den = sigma2.numerator, sigma2.denominator
    jobs = {}
    for name, (values, segments) in streams.items():
        tape = tape_of_bits(np.concatenate(segments), gen)
        jobs[name] = (tape, np.array(values, dtype=np.int64), np.empty(len(values), np.int64))
    best = dict.fromkeys(streams, math.inf)
    for _ in range(repeats):
        for name, (tape, expected, out) in jobs.items():
            tape.position = 0
            start = time.perf_counter_ns()
            _core.fill(GAUSSIAN, num, den, 0, tape, out, method=method)
            best[name] = min(best[name], time.perf_counter_ns() - start)
            if not np.array_equal(out, expected):
                raise AssertionError(f"replay of sigma2={sigma2} {method} gave other values")
    return {name: best[name] / len(streams[name][0]) for name in streams}


def group_timing(
    sigma2: Fraction,
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
        sigma2,
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


def os_ns(sigma2: Fraction, method: str, size: int, repeats: int) -> float:
    """ns/sample of a batch from the OS source (rng=None), best of ``repeats``."""
    out = np.empty(size, dtype=np.int64)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter_ns()
        _core.fill(GAUSSIAN, sigma2.numerator, sigma2.denominator, 0, None, out, method=method)
        best = min(best, time.perf_counter_ns() - start)
    return best / size


# ---- one (sigma2, method) ------------------------------------------------------------------


def measure(sigma2: Fraction, method: str, quick: bool, seed: int) -> dict:
    gen = np.random.default_rng([seed, sigma2.numerator, sigma2.denominator, METHODS.index(method)])
    n_single = 20_000 if quick else 100_000
    wanted_per_bucket = 100 if quick else 300
    replay_size = 20_000 if quick else 50_000
    repeats = 3 if quick else 7
    info, p_bucket = information(sigma2)

    single = draw_singly(sigma2, method, n_single, gen)
    groups = bucket(single["values"], sigma2)
    short = {
        b: wanted_per_bucket - int((groups == b).sum())
        for b in range(5)
        if (groups == b).sum() < wanted_per_bucket
    }
    extra = scan(sigma2, method, short, 2_000_000 if quick else 10_000_000, gen) if short else {}

    overhead = single["t_empty"]
    background = (single["values"].tolist(), single["segments"])
    result: dict = {
        "sigma2": str(sigma2),
        "method": method,
        "bits_all": float(single["bits"].mean()),
        "info_all": float(info(single["values"]).mean()),
        "os_ns_all": os_ns(sigma2, method, replay_size, repeats),
        "n_single": n_single,
        "empty_call_ns": {"mean": float(overhead.mean()), "sd": float(overhead.std())},
        "buckets": [],
    }
    for b in range(5):
        mine = np.flatnonzero(groups == b)
        values = single["values"][mine].tolist() + [v for v, _, _ in extra.get(b, [])]
        bits = single["bits"][mine].tolist() + [k for _, k, _ in extra.get(b, [])]
        segments = [single["segments"][i] for i in mine] + [s for _, _, s in extra.get(b, [])]
        row = {"bucket": BUCKETS[b], "p": float(p_bucket[b]), "n": len(values)}
        if values:
            row.update(
                bits=float(np.mean(bits)),
                info=float(info(np.array(values)).mean()),
                **group_timing(
                    sigma2, method, (values, segments), background, replay_size, repeats, gen
                ),
            )
            if mine.size >= 2:
                calls = single["t_call"][mine]
                row["single_ns"] = float(calls.mean() - overhead.mean())
                row["single_se"] = float(
                    math.sqrt(calls.var() / mine.size + overhead.var() / overhead.size)
                )
        result["buckets"].append(row)
    result["background_ns"] = float(np.median([r["background"] for r in result["buckets"]]))
    return result


# ---- report --------------------------------------------------------------------------


def _label(q: Fraction) -> str:
    if q.denominator == 1 and q.numerator >= 10**4 and str(q.numerator).rstrip("0") == "1":
        return f"10^{len(str(q.numerator)) - 1}"
    return str(q)


def table(results: list[dict]) -> str:
    """One row per (sigma2, bucket), inversion next to rejection."""
    by = {(r["sigma2"], r["method"]): r for r in results}
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
    lines = ["| " + " | ".join(titles) + " |", "|---|---|" + "---:|" * (len(titles) - 2)]

    def cell(r: dict | None, key: str, fmt: str) -> str:
        return fmt.format(r[key]) if r is not None and r.get(key) is not None else "n/a"

    for s in dict.fromkeys(r["sigma2"] for r in results):
        ours = [by.get((s, m)) for m in METHODS]
        first = next(r for r in ours if r is not None)
        for b in range(5):
            rows = [r["buckets"][b] if r else None for r in ours]
            cells = [_label(Fraction(s)), BUCKETS[b], f"{first['buckets'][b]['p']:.2g}"]
            cells.append(cell(next(r for r in rows if r is not None), "info", "{:.1f}"))
            cells += [cell(r, "bits", "{:.1f}") for r in rows]
            cells += [cell(r, "mixed", "{:.1f}") for r in rows]
            cells += [cell(r, "alone", "{:.1f}") for r in rows]
            cells.append(" / ".join(cell(r, "n", "{}") for r in rows))
            lines.append("| " + " | ".join(cells) + " |")
        cells = [_label(Fraction(s)), "all", "1", cell(first, "info_all", "{:.1f}")]
        cells += [cell(r, "bits_all", "{:.1f}") for r in ours]
        cells += [cell(r, "background_ns", "{:.1f}") for r in ours]
        cells += [cell(r, "os_ns_all", "OS: {:.1f}") for r in ours]
        cells.append(" / ".join(cell(r, "n_single", "{}") for r in ours))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def notes(results: list[dict]) -> str:
    """What the columns are, and the single-call cross-check with its noise."""
    checks = []
    for r in results:
        excess = [b.get("single_ns") for b in r["buckets"]]
        spread = [b.get("single_se") for b in r["buckets"]]
        shown = ", ".join(
            f"{v:.0f}±{e:.0f}" if v is not None else "n/a"
            for v, e in zip(excess, spread, strict=True)
        )
        checks.append(
            f"σ² = {_label(Fraction(r['sigma2']))} {r['method']}: {shown} "
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
        "Cross-check, ns per group 0-1σ … ≥4σ: mean time of a one-sample fill call minus "
        "that of an empty call interleaved with it (± standard error); the per-call "
        "set-up (several µs, jittering by µs) swamps the differences above:\n"
        + "\n".join(f"- {c}" for c in checks)
        + "\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (about 20 s)")
    parser.add_argument("--sigma2", nargs="+", default=None, help=f"default: {SIGMA2}")
    parser.add_argument("--seed", type=int, default=0, help="seeds the bit tapes")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    sigmas = [Fraction(s) for s in (args.sigma2 or SIGMA2)]
    results = []
    for sigma2 in sigmas:
        for method in METHODS:
            start = time.perf_counter()
            try:
                results.append(measure(sigma2, method, args.quick, args.seed))
            except ValueError as exc:  # a method this sigma2 does not allow
                print(f"# sigma2={sigma2} {method}: {exc}", file=sys.stderr)
                continue
            print(
                f"# sigma2={sigma2} {method}: {time.perf_counter() - start:.1f} s",
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
