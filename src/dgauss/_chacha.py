"""An opt-in user-space CSPRNG: ``rng=dgauss.ChaCha20()``.

The samplers read the operating system's CSPRNG by default.  A :class:`ChaCha20` passed as
``rng`` makes the same kind of bits in user space, several times faster than getrandom(2):
ChaCha20 (RFC 8439) keyed with 32 bytes from the OS, with fast key erasure.  What it
guarantees, and what a reviewer checks, is in ``docs/security.md``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from dgauss._sources import KeyedSource

_core: Any = None  # dgauss._core, imported on the first state made

#: Forks this process has been through (bumped in a forked child): a thread's state is
#: made anew after one, without a getpid() system call on every draw.  (A child forked
#: by C code that skips Python's fork hooks keeps the object, whose state the kernel
#: wiped, MADV_WIPEONFORK, and csrc/dg_chacha.c checks the process id of: it keys afresh
#: all the same.)
_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


class ChaCha20(KeyedSource):
    """A cryptographically secure source of random bits in user space, keyed from the OS.

    Pass it as ``rng`` to any sampler or mechanism (``dgauss.sample_gaussian(100, size=n,
    rng=dgauss.ChaCha20())``); keep one and reuse it: each thread that draws with it gets a
    state of its own, keyed on first use with 32 bytes of getrandom(2), and every later call
    in that thread continues from it (no system call per call).  The samples are exactly as
    exact as with the OS source: the samplers are the same, only where the bits come from
    changes.

    Guarantees (``docs/security.md``): **fast key erasure** (a key makes 32 ChaCha20 blocks,
    2 KiB, at once; the first 32 bytes of its block 0 replace it and are never output, the
    rest is output in order, what waits in the state zeroed as it is handed out: the
    process never holds what could recompute bits already drawn);
    **fork safety** (a state lives on a page of its own that a forked child sees zeroed,
    MADV_WIPEONFORK, and the keying process's id is checked on every fill: a child keys
    afresh and never repeats its parent's bits); **thread safety** (one state per thread,
    never shared); **reseeding** (a fresh OS key after 64 MiB from one, and on
    :meth:`reseed`); a failure to read the OS raises :class:`OSError`, as the default
    source does.  It is not a reproducible generator: there is no seed.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._generation = 0  # reseed() bumps it: each thread's state forgets its key once

    def _state(self):
        """This thread's state (made on first use, in the calling thread, and anew in a
        forked child)."""
        try:
            state, forks, generation = self._local.entry
        except AttributeError:
            return self._new_state()
        if forks != _forks:
            return self._new_state()
        if generation != self._generation:
            state.forget()
            self._local.entry = (state, forks, self._generation)
        return state

    def _new_state(self):
        """A new state for this thread (keyed from the OS on its first draw)."""
        global _core
        if _core is None:
            from dgauss import _core  # (not at import: dgauss imports without the core)
        state = _core.ChaChaState()
        self._local.entry = (state, _forks, self._generation)
        return state

    def reseed(self) -> None:
        """Key afresh from the OS: every thread's next draw with this source starts from a
        new key (the old ones are forgotten)."""
        self._generation += 1

    def __repr__(self) -> str:
        return "dgauss.ChaCha20()"

    def __reduce__(self):
        # a copy (or an unpickled one, in another process) keys itself afresh
        return (ChaCha20, ())
