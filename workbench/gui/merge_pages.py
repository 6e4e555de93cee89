"""Pages of the merge list read off the UI thread, on the reader's own SQLite connection.

A page that is not cached yet costs up to ~0.4 s at 200,000 merges (a deep offset under a sort
by token), and the UI thread never waits: the model shows a placeholder and asks this reader,
which runs one read at a time on a `JobLane` thread. The store's WAL lets this connection read
beside the trainer's writer, and it never takes the window store's lock. Requests are deduplicated
(a page running or queued is not asked for twice) and the queue keeps only the most recent few,
newest first, so scrolling fast reads the pages in view rather than every page passed on the way.
Answers carry the model's generation; the model drops those of an older run, sort or filter.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from workbench.display import readable
from workbench.gui.tokens.jobs import JobLane
from workbench.store import RunStore, StoredMerge, StoreError

MAX_QUEUED = 8  # pages waiting; older requests are forgotten (the view asks again if needed)

PageRead = Callable[[RunStore], list[StoredMerge]]


@dataclass(frozen=True)
class PageAnswer:
    key: Hashable  # the request's key: the model's generation and page number
    merges: list[StoredMerge]
    names: dict[int, str]  # readable forms of the page's tokens and their parts


def _names_for(store: RunStore, run_id: int, merges: list[StoredMerge]) -> dict[int, str]:
    """Readable names of the page's tokens and of their left/right parts, so showing the page
    never sends the UI thread to the store for a part (under a sort they are anywhere)."""
    names = {m.new_id: readable(m.token) for m in merges}
    for part in {i for m in merges for i in (m.left_id, m.right_id)}:
        if part >= 256 and part not in names:
            found = store.merge_by_id(run_id, part)
            names[part] = readable(found.token) if found is not None else "?"
    return names


class PageReader(QObject):
    """`request(key, ...)`; `sigPage(PageAnswer)` with that key when the page has been read."""

    sigPage = Signal(object)
    sigError = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lane = JobLane(self, encodes=False)  # store reads only
        self._lane.sigResult.connect(self._done)
        self._lane.sigError.connect(self._failed)
        self._running: Hashable | None = None
        self._queued: dict[Hashable, Callable[[], PageAnswer]] = {}  # oldest first
        self._own: RunStore | None = None  # used only in the lane's thread (and at shutdown)
        self._closed = False

    def request(self, key: Hashable, store: RunStore, run_id: int, read: PageRead) -> None:
        """Read a page (`read` on our connection) unless a request with `key` is pending."""
        if self._closed or key == self._running or key in self._queued:
            return
        self._queued[key] = lambda: self._read(key, store, run_id, read)
        while len(self._queued) > MAX_QUEUED:
            del self._queued[next(iter(self._queued))]
        self._start_next()

    def forget(self) -> None:
        """Drop queued requests (the model's generation changed); a running read finishes and
        its answer is dropped by the model."""
        self._queued.clear()

    def busy(self) -> bool:
        return self._running is not None or bool(self._queued)

    def shutdown(self) -> None:
        """Wait for the running read, then close our connection: nothing outlives the window."""
        self._closed = True
        self._queued.clear()
        self._lane.shutdown()
        self._running = None
        if self._own is not None:
            self._own.close()
            self._own = None

    def _start_next(self) -> None:
        if self._running is not None or not self._queued or self._closed:
            return
        key = next(reversed(self._queued))  # the newest request: most likely still in view
        job = self._queued.pop(key)
        self._running = key
        self._lane.submit(job)

    def _store_for(self, shared: RunStore) -> RunStore:
        """Our own read-only connection to the shared store's file (lane thread only)."""
        if shared.path is None:
            return shared  # an injected connection (tests): its lock keeps it safe
        if self._own is not None and self._own.path != shared.path:
            self._own.close()
            self._own = None
        if self._own is None:
            try:
                self._own = RunStore(shared.path, read_only=True)
            except StoreError:
                return shared
        return self._own

    def _read(self, key: Hashable, shared: RunStore, run_id: int, read: PageRead) -> PageAnswer:
        store = self._store_for(shared)
        merges = read(store)
        return PageAnswer(key, merges, _names_for(store, run_id, merges))

    def _done(self, answer: object) -> None:
        self._running = None
        if not self._closed:
            assert isinstance(answer, PageAnswer)
            self.sigPage.emit(answer)
        self._start_next()

    def _failed(self, message: str) -> None:
        self._running = None
        self.sigError.emit(message)
        self._start_next()
