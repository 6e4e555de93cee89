"""Replays a stored run into the charts a page per timer tick, so opening a run with many
thousands of merges never holds the UI thread for more than one page read.

The store keeps the corpus's token count after each merge, so a replayed run shows the same
compression curve as it did live.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, QTimer

from workbench.engine.events import MergeBatch
from workbench.gui.charts import ChartsPanel
from workbench.store import RunInfo, RunStore, StoredMerge

PAGE = 2000


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


def superbpe_of(settings: dict) -> tuple[int, int]:
    """(transition, special tokens) of a stored run's settings; (0, 0) for a classic run or
    settings this app did not write."""
    transition = settings.get("superbpe_transition", 0)
    specials = settings.get("special_tokens") or ()
    if not isinstance(transition, int) or transition <= 0 or not isinstance(specials, list):
        return 0, 0
    return transition, len(specials)


class HistoryLoader(QObject):
    def __init__(self, charts: ChartsPanel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.charts = charts
        self.store: RunStore | None = None
        self.run_id: int | None = None
        self.after = -1
        self.timer = QTimer(self)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._next_page)

    def load(self, store: RunStore, run: RunInfo) -> None:
        self.charts.reset(int(run.stats.get("bytes", 0) or 0))
        self.charts.set_transition(*superbpe_of(run.settings))
        self.store, self.run_id, self.after = store, run.id, -1
        self.timer.start()

    def cancel(self) -> None:
        self.timer.stop()
        self.store = None

    @property
    def loading(self) -> bool:
        return self.timer.isActive()

    def _next_page(self) -> None:
        if self.store is None or self.run_id is None:
            self.timer.stop()
            return
        page = self.store.merges(self.run_id, after_rank=self.after, limit=PAGE)
        if not page:
            self.timer.stop()
            self.charts.fit_to_data()
            return
        batch = batch_from_stored(page)
        self.charts.data.add(batch, timed=False)
        self.charts.note_transition(batch)
        self.charts.mark_dirty()
        self.after = page[-1].rank
