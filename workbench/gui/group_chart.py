"""A parity-aware run's fifth chart: each group's held-out compression after every merge, the
group worst compressed now named in the title.

It takes the whole bottom row of the charts while such a run is shown (live from
`MergeBatch.parity`, stored from the run's statistics via `session.parity.group_curves`) and
leaves the layout otherwise, so classic runs look as before. Drawn on the charts' timer like
the others; group names come from the user's data, so they are escaped (pyqtgraph renders
titles and legend entries as HTML).
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pyqtgraph as pg

from workbench.engine.events import MergeBatch

TITLE = "Compression by group"
HELP = (
    "Parity-aware BPE: bytes per token of each group's held-out lines (every 10th line) after "
    "each merge. Each merge is the most frequent pair of the group lowest here at that moment "
    "(Foroutan et al., 2025), so the curves are pulled together; the title names the group "
    "worst compressed now."
)
# `workbench.session.parity.STATS_KEY`: where a parity-aware run keeps its record in the run's
# stats (a test checks they agree; importing that module here is what this avoids).
PARITY_STATS_KEY = "parity"
COLOURS = ("#4cc9f0", "#f72585", "#90be6d", "#f9c74f", "#b5179e", "#f8961e", "#43aa8b", "#ffffff")


class GroupCurves:
    """The per-group compression plot of one `pg.GraphicsLayoutWidget`."""

    def __init__(self, layout: pg.GraphicsLayoutWidget) -> None:
        self.layout = layout
        self.plot = pg.PlotItem(title=TITLE)
        self.plot.setToolTip(f"<b>{TITLE}</b><br>{HELP}")
        self.plot.setLabel("bottom", "merges made")
        self.plot.setLabel("left", "bytes / token (held out)")
        self.plot.setMenuEnabled(False)
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.setClipToView(True)
        # Columns: six groups in one column would run off a short plot. The curves lie close
        # together by design (that is parity), so each entry carries its group's figure too.
        self.legend = self.plot.addLegend(offset=(-10, -10), labelTextColor="#dddddd", colCount=3)
        self.shown = False
        self.names: tuple[str, ...] = ()
        self.dev_bytes = np.zeros(0, dtype=np.int64)
        self._rows: list[np.ndarray] = []  # (merges, groups) blocks of held-out tokens
        self._curves: list[pg.PlotDataItem] = []
        self._dirty = False

    # --- feeding -------------------------------------------------------------------------
    def reset(self) -> None:
        self._rows = []
        self.names = ()
        self.plot.clear()
        self.legend.clear()
        self._curves = []
        if self.shown:
            self.layout.removeItem(self.plot)
            self.shown = False

    def add(self, batch: MergeBatch) -> None:
        record = batch.parity
        if record is None or not len(batch):
            return
        if record.groups != self.names:
            self._start(record.groups, record.dev_bytes)
        self._rows.append(np.asarray(record.dev_tokens, dtype=np.int64))
        self._dirty = True

    def load_stored(self, stats: Any) -> None:
        """A stored run's curves (nothing for a classic run or an unreadable record)."""
        if not isinstance(stats, dict) or PARITY_STATS_KEY not in stats:
            # A classic run: no need to import the parity modules on the UI thread (the first
            # import took 5 ms from bytecode, 50 ms from source, in the turn opening a run).
            return
        from workbench.session.parity import group_curves

        record = group_curves(stats)
        if record is None:
            return
        self._start(tuple(record["groups"]), np.array(record["dev_bytes"], dtype=np.int64))
        tokens = np.array(record["dev_tokens"], dtype=np.int64).reshape(-1, len(self.names))
        self._rows = [tokens]
        self._dirty = True

    def _start(self, names: tuple[str, ...], dev_bytes: np.ndarray) -> None:
        self.reset()
        self.names = names
        self.dev_bytes = np.asarray(dev_bytes, dtype=np.int64)
        for i, name in enumerate(names):
            pen = pg.mkPen(COLOURS[i % len(COLOURS)], width=1.5)
            self._curves.append(self.plot.plot(pen=pen, name=html.escape(name)))
        # the bottom row, across both columns
        self.layout.addItem(self.plot, row=2, col=0, colspan=2)
        self.shown = True

    # --- drawing -------------------------------------------------------------------------
    def rates(self) -> np.ndarray:
        """(merges, groups) bytes per token; the blocks joined once per redraw."""
        if not self._rows:
            return np.zeros((0, len(self.names)))
        if len(self._rows) > 1:
            self._rows = [np.concatenate(self._rows)]
        return self.dev_bytes[None, :] / np.maximum(self._rows[0], 1)

    def worst(self) -> str | None:
        """The group lowest after the last merge (ties: the first, as the trainer breaks them)."""
        rates = self.rates()
        if not len(rates):
            return None
        last = self._rows[0][-1]
        # exact, as the trainer compares: bytes_a * tokens_b < bytes_b * tokens_a
        best = 0
        for g in range(1, len(self.names)):
            if self.dev_bytes[g] * last[best] < self.dev_bytes[best] * last[g]:
                best = g
        return self.names[best]

    def redraw(self) -> None:
        if not self._dirty or not self.shown:
            return
        self._dirty = False
        rates = self.rates()
        x = np.arange(1, len(rates) + 1)
        for g, curve in enumerate(self._curves):
            curve.setData(x, rates[:, g])
        if len(rates):
            for (_, label), name, rate in zip(
                self.legend.items, self.names, rates[-1], strict=True
            ):
                label.setText(f"{html.escape(name)} {rate:.3f}")
        worst = self.worst()
        title = TITLE if worst is None else f"{TITLE} — worst now: {html.escape(worst)}"
        self.plot.setTitle(title)
        if len(rates):
            self.plot.setYRange(float(rates.min()) * 0.98, float(rates.max()) * 1.02, padding=0)
            self.plot.setXRange(0, len(rates), padding=0)
