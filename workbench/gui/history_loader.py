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


def transition_rank(stats: dict) -> int | None:
    """The first stage-2 merge of a stored SuperBPE run (`RunSession` records it), or None:
    a classic run, one stopped before stage 2, or statistics this app did not write."""
    superbpe = stats.get("superbpe")
    rank = superbpe.get("transition_rank") if isinstance(superbpe, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None


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
        self.charts.set_transition(transition_rank(run.stats))
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
        self.charts.data.add(batch_from_stored(page), timed=False)
        self.charts.mark_dirty()
        self.after = page[-1].rank
