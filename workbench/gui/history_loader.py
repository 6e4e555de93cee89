"""Replays a stored run into the charts without holding the UI thread: the merges are read and
checked in a background lane (its own connection to the store), then handed to the charts a
few pages per event-loop turn. An extension run's base is loaded again in a lane of its own
(from its stored record, checked against its fingerprint: `store.tokenizer_of_run`), so the
merge list can name the base's tokens (`sigBase`).

The store keeps the corpus's token count after each merge, so a replayed run shows the same
compression curve as it did live.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from workbench.engine.events import MergeBatch
from workbench.gui.charts import ChartsPanel
from workbench.gui.gc_pause import collector_paused, pause_collector, resume_collector
from workbench.gui.tokens.jobs import JobLane
from workbench.store import RunInfo, RunStore, StoredMerge
from workbench.store.errors import StoreError

PAGE = 2000
# How long one event-loop turn may spend handing pages to the charts: adding a page is ~5-10
# ms of list and numpy appends, and the budget is checked before each page, so a turn adds one
# page or two (8 ms made turns of ~18 ms under load).
TURN_BUDGET_S = 0.004
START_WAIT_S = 0.5  # the longest the read waits for the merge list's first rows (`load`)


def batch_from_stored(merges: list[StoredMerge]) -> MergeBatch:
    """Stored merges (consecutive ranks) as a MergeBatch the charts can take."""
    return MergeBatch(
        start_rank=merges[0].rank,
        left=np.array([m.left_id for m in merges], dtype=np.int32),
        right=np.array([m.right_id for m in merges], dtype=np.int32),
        new_id=np.array([m.new_id for m in merges], dtype=np.int32),
        count=np.array([m.count for m in merges], dtype=np.int64),
        is_new=np.array([m.is_new for m in merges], dtype=np.bool_),
        ties=np.array([m.ties for m in merges], dtype=np.int64),
        corpus_tokens=np.array([m.corpus_tokens or 0 for m in merges], dtype=np.int64),
        tokens=tuple(m.token for m in merges),
        vocab_size=0,
        seconds=0.0,
    )


def transition_rank(stats: dict) -> int | None:
    """The first stage-2 merge of a stored SuperBPE run (`RunSession` records it), or None:
    a classic run, one stopped before stage 2, or statistics this app did not write."""
    superbpe = stats.get("superbpe")
    rank = superbpe.get("transition_rank") if isinstance(superbpe, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None


def read_pages(
    store: RunStore | None, path: Path | None, run_id: int, cancel: threading.Event
) -> list[MergeBatch] | None:
    """Every merge of run `run_id` as pages of `PAGE` (None: cancelled meanwhile). Reads
    through a connection of its own when the store has a file, so the window's store is never
    locked while a long run is read."""
    own = RunStore(path) if path is not None else None
    reader = own or store
    if reader is None:
        raise ValueError("read_pages needs a store or its path")
    try:
        with collector_paused():  # no full collections walking the pages meanwhile (`gc_pause`)
            pages, after = [], -1
            while not cancel.is_set():
                page = reader.merges(run_id, after_rank=after, limit=PAGE)
                if not page:
                    return pages
                pages.append(batch_from_stored(page))
                after = page[-1].rank
            return None
    finally:
        if own is not None:
            own.close()


def base_vocab(run: RunInfo, path: Path | None) -> dict[int, bytes] | str:
    """Extension run `run`'s base tokens by id, loaded again from its record and checked against
    its fingerprint; or why they cannot be (the base file gone or changed: one line)."""
    from workbench.store.tokenizer_of_run import base_of_run

    try:
        base = base_of_run(run, path)
    except StoreError as exc:
        return str(exc)
    return dict(base.vocab) if base is not None else "it extends no tokenizer"


class HistoryLoader(QObject):
    """`load(store, run)` fills the charts with a stored run; `loading` until they have it all,
    then `sigLoaded(run id)`. For an extension run, `sigBase(run id, base tokens by id | why
    not)` follows."""

    sigBase = Signal(int, object)
    sigLoaded = Signal(int)

    def __init__(self, charts: ChartsPanel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.charts = charts
        self.base_run: int | None = None  # the extension run whose base is being loaded
        # Loading a base builds its tokenizer (the encoder's tables): on a first start it
        # waits for the helper compiling the encoder rather than compiling it here too.
        self.base_lane = JobLane(self, encodes=True)
        self.base_lane.sigResult.connect(self._on_base)
        self.base_lane.sigError.connect(self._on_base_error)
        self.run_id: int | None = None
        self._pages: list[MergeBatch] = []
        self._collector_paused = False
        self._reading = False
        self._caption = ""
        self.lane = JobLane(self, encodes=False)
        self.lane.sigResult.connect(self._on_read)
        self.lane.sigError.connect(self._on_error)
        self.timer = QTimer(self)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._next_pages)
        self._start: Callable[[], None] | None = None  # the read, while it waits for `after`
        self._after: Callable[[], bool] | None = None
        self._start_by = 0.0
        self._start_timer = QTimer(self)
        self._start_timer.setInterval(10)
        self._start_timer.timeout.connect(self._start_when_ready)

    def load(
        self,
        store: RunStore,
        run: RunInfo,
        caption: str,
        after: Callable[[], bool] | None = None,
    ) -> None:
        """Fill the charts with `run`; `caption` names it (with the wait while it is read).

        With `after`, the read starts once `after()` says so (asked every 10 ms, for at most
        `START_WAIT_S`): the window lets the merge list's first rows paint first. The read is
        Python in another thread, and each cell the list paints calls into Python: with the
        GIL passed back and forth at each call, the list's paint took 30-45 ms, not 5."""
        self.charts.reset(int(run.stats.get("bytes", 0) or 0), keep_axes=True)
        self.charts.set_transition(transition_rank(run.stats))
        self.charts.groups.load_stored(run.stats)  # a parity-aware run's per-group curves
        self._caption = caption
        self.charts.caption.setText(f"{caption} — reading its {run.merge_count:,} merges…")
        self.timer.stop()
        self.run_id, self._pages, self._reading = run.id, [], True
        # The charts' columns grow by the run's merges on this thread: no full collection
        # walks them meanwhile; they are frozen when the last page is in (`gc_pause`).
        self._pause_collector()
        self._note_base(run)  # its base is loaded with the merges, in `_read`
        self._start = lambda: self._read(store, run)
        self._start_by = time.perf_counter() + START_WAIT_S
        self._after = after
        self._start_timer.start()
        self._start_when_ready()

    def _start_when_ready(self) -> None:
        if self._start is None:
            self._start_timer.stop()
            return
        if self._after is not None and not self._after() and time.perf_counter() < self._start_by:
            return
        start, self._start = self._start, None
        self._start_timer.stop()
        start()

    def _read(self, store: RunStore, run: RunInfo) -> None:
        path, run_id = store.path, run.id
        self.lane.submit(
            lambda cancel: (
                run_id,
                read_pages(store if path is None else None, path, run_id, cancel),
            ),
            cancellable=True,
        )
        self._load_base(store, run)

    def _note_base(self, run: RunInfo) -> None:
        """`base_run` is `run`'s id when it extends a base to load again (`base_loading` from
        now on), else None; a record this app did not write is said at once (`sigBase`), never
        loaded."""
        from workbench.store.tokenizer_of_run import base_record

        self.base_run = None
        try:
            record = base_record(run)
        except StoreError as exc:
            self.sigBase.emit(run.id, str(exc))
            return
        if record is not None:
            self.base_run = run.id

    def _load_base(self, store: RunStore, run: RunInfo) -> None:
        if self.base_run != run.id:
            return
        path, run_id = store.path, run.id
        self.base_lane.submit(lambda: (run_id, base_vocab(run, path)))

    def _on_base(self, result: tuple[int, dict[int, bytes] | str]) -> None:
        run_id, vocab = result
        if run_id == self.base_run:  # else cancelled, or another run opened meanwhile
            self.base_run = None
            self.sigBase.emit(run_id, vocab)

    def _on_base_error(self, message: str) -> None:
        if self.base_run is not None:
            run_id, self.base_run = self.base_run, None
            self.sigBase.emit(run_id, message)

    @property
    def base_loading(self) -> bool:
        return self.base_run is not None

    def cancel(self) -> None:
        """Stop feeding the charts; a read under way is told to stop and its answer dropped."""
        self.timer.stop()
        self._start_timer.stop()
        self._start = None
        self.lane.cancel_event.set()
        self.base_lane.cancel_event.set()
        self.run_id, self._pages, self._reading = None, [], False
        self.base_run = None
        self._resume_collector()

    def _pause_collector(self) -> None:
        if not self._collector_paused:
            self._collector_paused = True
            pause_collector()

    def _resume_collector(self) -> None:
        if self._collector_paused:
            self._collector_paused = False
            resume_collector()

    def shutdown(self) -> None:
        """Cancel and wait for the readers (at close: nothing may outlive the window)."""
        self.cancel()
        self.lane.shutdown()
        self.base_lane.shutdown()

    @property
    def loading(self) -> bool:
        return self._reading or self.timer.isActive()

    def _on_read(self, result: tuple[int, list[MergeBatch] | None]) -> None:
        run_id, pages = result
        if not self._reading or run_id != self.run_id or pages is None:
            return  # cancelled, or another run was opened meanwhile
        self._reading = False
        self._pages = pages[::-1]  # pop() from the end gives them in rank order
        self.timer.start()

    def _on_error(self, message: str) -> None:
        self._reading = False
        self._resume_collector()
        self.charts.caption.setText(f"Cannot read the run's merges: {message}")

    def _next_pages(self) -> None:
        if not self._pages:
            # Every page is in: fitting the axes (~6 ms at 200k merges) takes a turn of its
            # own rather than the one that added the last pages.
            self.timer.stop()
            self.charts.fit_to_data()
            self.charts.caption.setText(self._caption)
            self._resume_collector()
            if self.run_id is not None:
                self.sigLoaded.emit(self.run_id)
            return
        deadline = time.perf_counter() + TURN_BUDGET_S
        while self._pages and time.perf_counter() < deadline:
            self.charts.data.add(self._pages.pop(), timed=False)
            self.charts.mark_dirty()
