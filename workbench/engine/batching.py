"""Grouping many items (texts, documents) into runs of about a given size, and a pool of threads
that outlives a call to work through the runs.

A task per short text costs the pool more than the text's encoding; runs of at least `target`
characters keep that cost small while leaving enough runs to balance threads. The pool's threads
stay between calls because what a thread keeps (a tokenizer's piece cache, its output buffer) is
worth most when it is warm: fresh threads per call would merge every piece anew each time.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def runs_of(items: Iterable[T], size: Callable[[T], int], target: int) -> list[list[T]]:
    """Consecutive items in runs whose sizes add up to at least `target` (the last may be less).

    `runs_of(["ab", "c", "de", "f"], len, 3) -> [["ab", "c"], ["de", "f"]]`
    """
    runs: list[list[T]] = [[]]
    total = 0
    for item in items:
        if total >= target:
            runs.append([])
            total = 0
        runs[-1].append(item)
        total += size(item)
    return runs


class RunPool:
    """`map` over runs on the calling thread plus helper threads kept between calls.

    Helpers are started on first use (as many as a call asks for, minus the caller) and stopped
    by `close()`, or when the pool is collected; a later call starts them again. The caller works
    too, so `threads=2` adds one thread, and what the caller keeps per thread is used as well.
    """

    def __init__(self, name: str = "runs") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._helpers = 0
        self._stop: weakref.finalize | None = None
        self._pid = os.getpid()

    def map(self, work: Callable[[T], R], runs: Sequence[T], threads: int) -> list[R]:
        """`[work(run) for run in runs]` on up to `threads` threads, in order; raises the
        exception of the first failing run (the runs before it are all done)."""
        helpers = min(threads, len(runs)) - 1
        if helpers <= 0:
            return [work(run) for run in runs]
        executor = self._executor_for(helpers)
        results: list[R | None] = [None] * len(runs)
        errors: dict[int, BaseException] = {}
        stop_at = [len(runs)]  # no run at or past it starts: one before it failed
        order = itertools.count()  # next() is atomic: each run is taken once

        def drain() -> None:
            for i in order:
                if i >= stop_at[0]:
                    return
                try:
                    results[i] = work(runs[i])
                except Exception as exc:  # the lowest failing run wins, whatever finishes first
                    errors[i] = exc
                    stop_at[0] = min(stop_at[0], i)

        futures = [executor.submit(drain) for _ in range(helpers)]
        try:
            drain()
        finally:
            # Every run is taken by now, unless the caller was interrupted: then none starts.
            stop_at[0] = -1
            for future in futures:  # a helper may still be on its last run: wait for it
                future.result()
        if errors:
            raise errors[min(errors)]
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the helper threads (waiting for them); the next `map` starts new ones."""
        with self._lock:
            executor, self._executor, self._helpers = self._executor, None, 0
            if self._stop is not None:
                self._stop.detach()
                self._stop = None
        if executor is not None:
            executor.shutdown(wait=True)

    def _executor_for(self, helpers: int) -> ThreadPoolExecutor:
        with self._lock:
            # A forked child has the executor but not its threads: a task would wait for ever.
            if self._pid != os.getpid():
                self._executor, self._stop, self._pid = None, None, os.getpid()
            if self._executor is None or self._helpers < helpers:
                old, old_stop = self._executor, self._stop
                self._executor = ThreadPoolExecutor(helpers, thread_name_prefix=self._name)
                self._helpers = helpers
                # Collected with its owner: the idle helpers are told to end, not left waiting.
                self._stop = weakref.finalize(self, self._executor.shutdown, wait=False)
                if old is not None and old_stop is not None:
                    old_stop.detach()
                    old.shutdown(wait=False)
            return self._executor
