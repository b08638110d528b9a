"""Random sources for testing: bit tapes, decision tapes, a scripted OS source; and the
base class of the user-space CSPRNG (:class:`KeyedSource`, whose one kind is
:class:`dgauss.ChaCha20`), by which the compiled core knows it without importing it.

Tapes are accepted as ``rng`` by the compiled core and by the oracle
(:mod:`dgauss.reference`); :class:`ScriptedOS` by the compiled core only.  All
are re-exported by :mod:`dgauss.testing`.  Each is a per-call source: nothing
here changes what a call with ``rng=None`` reads (the operating system).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np


class KeyedSource:
    """A user-space CSPRNG the compiled core reads through a per-thread state: a subclass
    (:class:`dgauss.ChaCha20`) gives ``_state()``, the calling thread's ``_core`` state.
    The core tests for this class, so that it need not import the subclass's module (which
    imports the core)."""

    def _state(self):  # pragma: no cover - every subclass gives its own
        raise NotImplementedError


class Exhausted(Exception):
    """A finite source ran out before the draw finished.

    Distinct from every other error a sampler can raise.  ``request`` says what
    the sampler was asking for when it ran out: ``None`` for a bit tape (one
    more bit), ``("bernoulli", p)`` with ``p`` a Fraction, or ``("uniform", m)``
    for a decision tape.
    """

    def __init__(self, request: tuple[str, Fraction | int] | None = None):
        super().__init__(
            f"the tape ran out (next request: {request})" if request else "the tape ran out of bits"
        )
        self.request = request


class Restart(Exception):
    """The draw reached a rejection-loop restart, and the source asked to stop there.

    Algorithms 2 and 3 restart from their initial state when they reject, so a
    draw that restarts continues exactly like a fresh one (a regeneration point).
    """


class Tape:
    """A finite bit string served under the bit-consumption contract.

    Parameters
    ----------
    bits : str or iterable of 0/1
        The bits, first bit first, e.g. ``"0110"`` or ``[0, 1, 1, 0]``.

    Notes
    -----
    Like a NumPy generator, a tape is consumed by whole 64-bit words: each call
    starts at the next unused word (``position``) and leaves the unread bits of
    its last word behind.  Reading past the last bit raises :class:`Exhausted`.
    """

    kind = "bits"

    def __init__(self, bits: str | Iterable[int]):
        if isinstance(bits, str):
            if not set(bits) <= {"0", "1"}:
                raise ValueError("bits must be a string of '0' and '1'")
            nbits, value = len(bits), int(bits or "0", 2)
        else:
            values = tuple(bits)
            if not set(values) <= {0, 1}:
                raise ValueError("bits must be 0 or 1")
            nbits, value = len(values), 0
            for b in values:
                value = (value << 1) | b
        self._set(value, nbits)

    def _set(self, value: int, nbits: int) -> None:
        nwords = -(-nbits // 64)
        value <<= 64 * nwords - nbits  # first bit at the top of the first word
        self.nbits = nbits
        self.words = np.array(
            [(value >> (64 * (nwords - 1 - i))) & 0xFFFFFFFFFFFFFFFF for i in range(nwords)],
            dtype=np.uint64,
        )
        self.position = 0

    @classmethod
    def from_int(cls, value: int, nbits: int) -> Tape:
        """The tape of the ``nbits``-bit binary expansion of ``value`` (0 <= value < 2**nbits)."""
        if not 0 <= value < (1 << nbits) or nbits < 0:
            raise ValueError("value must be in [0, 2**nbits)")
        tape = cls.__new__(cls)
        tape._set(value, nbits)
        return tape

    @classmethod
    def from_words(cls, words: Iterable[int]) -> Tape:
        """A tape holding whole 64-bit words, in order."""
        tape = cls.from_int(0, 0)
        tape.words = np.array(list(words), dtype=np.uint64)
        tape.nbits = 64 * tape.words.size
        return tape

    @property
    def bits_left(self) -> int:
        return max(0, self.nbits - 64 * self.position)

    def __repr__(self) -> str:
        return f"Tape(nbits={self.nbits}, position={self.position})"


class DecisionTape:
    """Outcomes for the sampling primitives, in call order (testing only).

    With a decision tape the samplers read no bits: each call of a primitive
    takes the next outcome instead, 0/1 for a Bernoulli(p) (including the
    discrete Laplace's sign, Bernoulli(1/2), and Bernoulli(exp(-g)) drawn by
    the digits of exp(-g)) and 0..m-1 for uniform(m).  The cases that read
    nothing from a bit source (p = 0, p >= 1, m = 1) take no outcome.  When the
    outcomes run out, :class:`Exhausted` reports the next request.  With
    ``stop_at_restart``, a rejection-loop restart raises :class:`Restart`.

    This is how :func:`dgauss.testing.enumerate_decisions` checks the samplers
    built on the primitives; the primitives' own use of bits is checked on bit
    tapes.
    """

    kind = "decisions"

    def __init__(self, outcomes: Iterable[int], stop_at_restart: bool = True):
        self.outcomes = np.array([int(o) for o in outcomes], dtype=np.uint64)
        self.stop_at_restart = bool(stop_at_restart)

    def __repr__(self) -> str:
        return f"DecisionTape({self.outcomes.tolist()}, stop_at_restart={self.stop_at_restart})"


class ScriptedOS:
    """The compiled core's operating-system source with faults and fake bytes, for one call.

    The words go through the same buffered path and read loop as ``rng=None``
    (csrc/dg_rng.c), but from this object's script: after ``fail_after`` successful
    refills (``-1``: never), ``fail_count`` refills fail with ``fail_errno``; and with
    ``fake=True`` the bytes read are those of the SplitMix64 words 0, 1, 2, ... (see
    ``tests/test_randomness.py``) in reads of at most 7 bytes, every third read
    interrupted by EINTR.  Without ``fake`` the bytes are the operating system's.
    Only the call it is passed to is affected (each call starts from the script).

    An int64 batch by inversion reads the OS in two lanes (csrc/dg_inv.h, DG_INV_FILL):
    sample i from the first stream when i is even, from a second stream of its own when i
    is odd.  With ``lanes=2`` (as ``rng=None``) each lane's source follows the script, the
    second's fake words being SplitMix64 words LANE_2_FAKE_WORD, LANE_2_FAKE_WORD + 1, ...;
    ``lanes=1`` draws such a batch from the first stream alone.  ``prefix`` = (first, second)
    replaces the first fake words of each lane's stream by the given 64-bit words (so that a
    test can place a chosen word, say one that ties a threshold, in either lane).

    With ``read_ahead=True`` a batch as large as those the OS source reads ahead for
    (``dgauss._core.read_ahead_from``) reads this script ahead too, on the reader thread
    (csrc/dg_ahead.h), both lanes taking their words from the first lane's script in turn.
    """

    def __init__(
        self,
        *,
        fail_after: int = -1,
        fail_count: int = 0,
        fail_errno: int = 5,
        fake: bool = False,
        lanes: int = 2,
        prefix: tuple[Sequence[int], Sequence[int]] = ((), ()),
        read_ahead: bool = False,
    ):
        for name, value in (
            ("fail_after", fail_after),
            ("fail_count", fail_count),
            ("fail_errno", fail_errno),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 2**31:
                raise ValueError(f"{name} must be an int in [-1, 2**31), got {value!r}")
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes not in (1, 2):
            raise ValueError(f"lanes must be 1 or 2, got {lanes!r}")
        self.fail_after, self.fail_count, self.fail_errno = fail_after, fail_count, fail_errno
        self.fake = bool(fake)
        self.lanes = lanes
        self.read_ahead = bool(read_ahead)
        if len(prefix) != 2:
            raise ValueError("prefix must be two sequences of words, one a lane")
        self.prefix = tuple(_words(w, "prefix") for w in prefix)


def _words(words: Iterable[int], name: str) -> np.ndarray:
    """The 64-bit words as a uint64 array, or a ValueError naming ``name``."""
    words = list(words)
    if not all(isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 2**64 for w in words):
        raise ValueError(f"{name} must hold ints in [0, 2**64)")
    return np.array(words, dtype=np.uint64)


#: The second lane's first fake word (ScriptedOS).
LANE_2_FAKE_WORD = 1 << 32

SOURCES = (Tape, DecisionTape, ScriptedOS)
