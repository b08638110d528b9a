"""One pool of helper threads for the process: batches drawn on several workers
(:mod:`dgauss._driver`) and the PLD route's merges (:mod:`dgauss.accounting._convolution`).

Started on first use and kept (a pool started per call cost about 1 ms), its threads started
as tasks need them, at most :data:`MAX_HELPERS`.  A forked child starts its own: the parent's
threads do not exist there, and the pool's lock may have been held by one of them at the fork.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: Most helper threads the pool starts; a call asking for more, or finding them busy with
#: other calls, runs on those it gets.
MAX_HELPERS = 64

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_lock = threading.Lock()


def helpers() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of helper threads."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                MAX_HELPERS, thread_name_prefix="dgauss-worker"
            )
        return _pool


def _forget() -> None:
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def share(work: Callable[[], object], threads: int, stop: Callable[[], None]) -> None:
    """Run ``work`` on the calling thread and on ``threads - 1`` helpers at once; each call
    of ``work`` takes its tasks from a shared source until none is left.  On an error in any
    of them, ``stop()`` (which should make the others' ``work`` return soon) and re-raise it
    once all have ended.  A helper still queued when the caller's ``work`` returns (the pool
    busy with other calls) has nothing left to do: it is cancelled, never waited for."""

    def guarded() -> None:
        try:
            work()
        except BaseException:
            stop()
            raise

    pending = [helpers().submit(guarded) for _ in range(threads - 1)]
    try:
        guarded()
    finally:
        # (a cancelled future is not 'done' for wait() until a thread picks it up)
        pending = [future for future in pending if not future.cancel()]
        concurrent.futures.wait(pending)
    for future in pending:
        future.result()  # re-raises a helper's error


def map_ordered(fn: Callable[[T], object], items: Sequence[T], threads: int) -> list:
    """[fn(x) for x in items], computed on up to ``threads`` threads (the caller's among
    them), items taken in order as threads finish the last; the first error is raised."""
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    results: list = [None] * len(items)
    lock = threading.Lock()
    state = {"next": 0}

    def take() -> int | None:
        with lock:
            i = state["next"]
            if i >= len(items):
                return None
            state["next"] = i + 1
            return i

    def work() -> None:
        while (i := take()) is not None:
            results[i] = fn(items[i])

    def stop() -> None:
        with lock:
            state["next"] = len(items)

    share(work, min(threads, len(items)), stop)
    return results
