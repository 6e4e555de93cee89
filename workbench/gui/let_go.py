"""Large containers the UI thread is done with, freed on a thread of their own, in pieces.

Freeing a container frees its items in one C call on the thread that drops the last reference:
the charts' four lists of a 200k-merge run (tokens and ids) took ~6 ms of the UI thread's turn
when another run replaced it. `let_go` takes them instead; a thread of its own empties each a
piece at a time (`engine.release`), so neither the UI thread's turn nor its wait for the GIL
grows by the whole free. The thread then waits for more rather than ending (see `LetGo`).

Only a container nobody else holds is emptied: one still referenced elsewhere is just dropped
(the other holder frees it later), so handing over a shared list never changes what it holds.
Plain Python threading, no Qt, so the Qt-free chart buffers can use it.
"""

from __future__ import annotations

import collections
import sys
import threading
from typing import Any

from workbench.engine.release import release_in_pieces

# References to a container while the freeing thread checks it: its local name and
# `getrefcount`'s own argument. One more means someone else still holds it.
_SOLE_REFS = 2


class LetGo:
    """Frees what it is given on a thread it starts when needed; the thread waits `idle_s` for
    more before it ends (None: it waits as long as the process runs; `wait` waits until all
    given so far is freed).

    Why it lingers: `Thread.start()` waits until the new thread runs, and the new thread needs
    the GIL for that: opening a stored run while a worker ran Python, the opening turn waited
    ~6 ms in `start()` for a thread to free the last run's charts."""

    def __init__(self, name: str = "bpe-let-go", idle_s: float | None = None) -> None:
        self.name = name
        self.idle_s = idle_s
        self._changed = threading.Condition()
        self._items: collections.deque[Any] = collections.deque()
        self._thread: threading.Thread | None = None
        self._freeing = False  # an item taken from `_items` is being freed

    def __call__(self, items: list[Any]) -> None:
        """Free the objects in `items` off this thread: they are moved out (`items` is left
        empty, under the lock the freeing thread takes too, so it never sees the caller's
        list still holding them). The caller must hold no other reference to them."""
        with self._changed:
            self._items.extend(items)
            items.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            else:
                self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._freeing = False
                if not self._items:
                    self._changed.notify_all()  # all freed: `wait` returns
                    if not self._changed.wait_for(lambda: self._items, self.idle_s):
                        self._thread = None  # idle: the next call starts another
                        return
                item = self._items.popleft()
                self._freeing = True
            if isinstance(item, list | set | dict) and sys.getrefcount(item) == _SOLE_REFS:
                release_in_pieces(item)
            del item

    def busy(self) -> bool:
        """Something given is not freed yet."""
        with self._changed:
            return bool(self._items) or self._freeing

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until everything given so far is freed; False if `timeout` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._items and not self._freeing, timeout)

    def running(self) -> bool:
        """Its thread is alive (freeing, or waiting for more)."""
        with self._changed:
            return self._thread is not None


LET_GO = LetGo()


def let_go(items: list[Any]) -> None:
    """Free the objects in `items` (large lists, sets, dicts; `items` is emptied) on the
    shared `LET_GO` thread."""
    LET_GO(items)
