"""The four live charts: pair count by rank, bytes per token, merges per second, token lengths.

Batches only append to `ChartData`; a QTimer redraws at most `REDRAW_MS` apart and only when
something changed, so a run making 50k merges a second costs a few `setData` calls a second,
never one per merge. Curves clip to the view and downsample by peak so long runs stay cheap.
Hovering a chart shows the merge under the cursor in the line below the charts.

Painting is the real cost, not the data: pyqtgraph repaints the whole view whenever an axis
range moves, and drawing the eight axes' tick labels takes tens of milliseconds. So autorange is
off and each range grows in steps (`grown_limit`: 1.5x with a round number, whole decades on the
log axis); between steps only the curves' own rectangles are repainted.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics, QShowEvent
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QVBoxLayout, QWidget

from workbench.display import readable
from workbench.engine.events import MergeBatch
from workbench.engine.patterns.superbpe import is_superword
from workbench.gui.buffers import MAX_LENGTH_BIN, ChartData
from workbench.gui.elided_label import ElidedLabel
from workbench.gui.group_chart import GroupCurves
from workbench.gui.help import CHART_HELP
from workbench.gui.paint_turns import TURNS, TurnJob

REDRAW_MS = 200
HOVER_HINT = "Hover a chart to see its merge."
# Axis ranges moved per redraw: each costs ~2.5 ms of pyqtgraph's range handling and as much
# again to repaint its labels; three made turns of 15-20 ms of CPU (a run's end, 200k merges).
MOVES_PER_FRAME = 2
_PEN = pg.mkPen("#4cc9f0", width=1)
_PEN_2 = pg.mkPen("#f72585", width=1)
_PEN_3 = pg.mkPen("#90be6d", width=1)


def grown_limit(value: float) -> float:
    """A round upper limit with room to grow: 1.5x `value`, rounded up to 1, 2 or 5 x 10^k.

    grown_limit(70) -> 200; grown_limit(1000) -> 2000; grown_limit(0) -> 1.
    """
    if value <= 0:
        return 1.0
    target = value * 1.5
    decade = 10 ** math.floor(math.log10(target))
    for step in (1, 2, 5, 10):
        if step * decade >= target:
            return float(step * decade)
    return float(10 * decade)


class _Range:
    """One axis's range, moved only when the data leaves it (see the module docstring)."""

    def __init__(self, plot: pg.PlotItem, axis: str, log: bool = False) -> None:
        self.plot, self.axis, self.log = plot, axis, log
        self.low: float | None = None
        self.high: float | None = None

    def reset(self) -> None:
        self.low = self.high = None

    def fit(self, low: float, high: float) -> bool:
        """Grow the range to hold [low, high]; True if it moved (an axis repaint)."""
        if self.log:
            low, high = math.floor(math.log10(max(low, 1))), math.ceil(math.log10(max(high, 1)))
            # At least three decades: over one or two, pyqtgraph labels the minor ticks too
            # and they pile up (2·10⁴ 3·10⁴ ... 9·10⁵ on top of each other).
            # Downwards, where the counts go as the run goes on (the top stays on the data).
            low = max(min(low, high - 3), 0)
            high = max(high, low + 3)
        else:
            low = min(low, 0.0)
            high = grown_limit(high) if self.high is None or high > self.high else self.high
        if self.low is not None and self.high is not None:
            if low >= self.low and high <= self.high:
                return False
            low, high = min(low, self.low), max(high, self.high)
        self.low, self.high = low, high
        self._apply(low, high)
        return True

    def exact(self, low: float, high: float) -> None:
        """Span [low, high] itself (the run's end), not a grown round limit."""
        if self.log:
            self.reset()
            self.fit(low, high)  # whole decades are already tight on a log axis
            return
        self.low, self.high = min(low, 0.0), _exact_limit(high)
        self._apply(self.low, self.high)

    def _apply(self, low: float, high: float) -> None:
        if self.axis == "x":
            self.plot.setXRange(low, high, padding=0)
        else:
            self.plot.setYRange(low, high, padding=0)


def _exact_limit(high: float) -> float:
    """A little headroom over the data's top, so the last point is not on the frame."""
    return high * 1.03 if high > 0 else 1.0


RANK_AXIS = "rank (first merge = 0)"  # rank counts from 0 (the merge list's first column)
MADE_AXIS = "merges made"  # from 1


# Short: a longer title widens its column of the chart grid and squeezes the other one.
UNTIMED_TITLE = "Speed (not stored)"


def _plot(layout: pg.GraphicsLayoutWidget, title: str, x: str, y: str) -> pg.PlotItem:
    plot = layout.addPlot(title=title)
    plot.setToolTip(f"<b>{title}</b><br>{CHART_HELP[title]}")
    plot.setLabel("bottom", x)
    plot.setLabel("left", y)
    # No grid: a grid makes each axis item cover the plot area, so every curve update would
    # repaint the axes' tick labels too (the most expensive thing on screen).
    plot.setClipToView(True)
    plot.setDownsampling(auto=True, mode="peak")
    plot.setMenuEnabled(False)
    plot.disableAutoRange()
    _fixed_tick_space(plot)
    return plot


def _fixed_tick_space(plot: pg.PlotItem) -> None:
    """Room for tick labels fixed once, not grown and shrunk with them.

    By default an axis resizes to its widest tick label: when a run's ranges move, a new label
    a few pixels wider or narrower re-lays out the whole chart grid, and every axis of the four
    charts then lays out and paints its ticks again (8-15 ms of the UI thread in one turn, many
    times while a stored run opens). The widest label these charts show is five or six
    characters ("1e+06" on the log count axis, "45000" merges/s, the SI prefix taking the rest).
    """
    metrics = QFontMetrics(plot.getAxis("left").font())
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setStyle(
            autoExpandTextSpace=False,
            autoReduceTextSpace=False,
            tickTextWidth=metrics.horizontalAdvance("000000"),
            tickTextHeight=metrics.height(),
        )


class ChartsPanel(QWidget):
    """Live charts over a `ChartData`; `sigHoverMerge(index)` when the cursor is over a merge."""

    sigHoverMerge = Signal(int)
    sigRedrawn = Signal()  # the curves take new data or the axes move: they paint this turn
    drawn_at = 0.0  # when the curves last took new data (their repaint follows in that turn)

    @staticmethod
    def defer_redraw() -> float:
        """Seconds to put a redraw off by (the window's merge list painted in this turn)."""
        return 0.0

    _exact_pending: list = []  # axes a `fit_to_data` has still to span, with their bounds

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.data = ChartData()
        self._dirty = False
        # The curves have data they have not drawn: a redraw that only moves axes (the end of
        # a run's `fit_to_data`) leaves it set, so the curves still take the last batches.
        self._curves_behind = False
        self._redraw_job = TurnJob(self._redraw_now, self)  # a redraw put off (`paint_turns`)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("#12161f")
        self.graphics.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.count_plot = _plot(self.graphics, "Pair count at merge", RANK_AXIS, "count")
        self.count_plot.setLogMode(y=True)
        self.bpt_plot = _plot(self.graphics, "Compression", MADE_AXIS, "bytes / token")
        self.graphics.nextRow()
        self.rate_plot = _plot(self.graphics, "Speed", "seconds training", "merges / s")
        self.length_plot = _plot(self.graphics, "Token lengths", "bytes", "tokens")
        self.length_plot.setClipToView(False)
        self.groups = GroupCurves(self.graphics)  # parity-aware runs only: a row of its own
        # Early in a run this axis spans a fraction of a second; plain 0.1, 0.2 read better
        # than pyqtgraph's "100, 200 (x0.001)".
        self.rate_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self._next_range = 0
        self.ranges = [
            _Range(self.count_plot, "x"),
            _Range(self.count_plot, "y", log=True),
            _Range(self.bpt_plot, "x"),
            _Range(self.bpt_plot, "y"),
            _Range(self.rate_plot, "x"),
            _Range(self.rate_plot, "y"),
            _Range(self.length_plot, "x"),
            _Range(self.length_plot, "y"),
        ]
        self.count_curve = self.count_plot.plot(pen=_PEN)
        self.bpt_curve = self.bpt_plot.plot(pen=_PEN_2)
        # Symbols too: a short run has only a few rate samples, and one point draws no line.
        self.rate_curve = self.rate_plot.plot(
            pen=_PEN_3, symbol="o", symbolSize=4, symbolBrush="#90be6d", symbolPen=None
        )
        self._rate_untimed = False  # the Speed chart says a stored run has no timings
        self.length_bars = pg.BarGraphItem(x=[], height=[], width=0.8, brush="#b5179e")
        self.length_plot.addItem(self.length_bars)
        self.markers = [pg.InfiniteLine(angle=90, pen=pg.mkPen("#ffffff55")) for _ in range(2)]
        for plot, marker in zip((self.count_plot, self.bpt_plot), self.markers, strict=True):
            marker.hide()
            plot.addItem(marker, ignoreBounds=True)
        # SuperBPE's transition: where stage 2 (superwords) starts, on both merge charts.
        self.transition_lines = [
            pg.InfiniteLine(
                angle=90,
                pen=pg.mkPen("#ffb703", width=1, style=Qt.PenStyle.DashLine),
                label="t",
                labelOpts={"position": 0.92, "color": "#ffb703"},
            )  # fmt: skip
            for _ in range(2)
        ]
        for plot, line in zip((self.count_plot, self.bpt_plot), self.transition_lines, strict=True):
            line.hide()
            plot.addItem(line, ignoreBounds=True)
        self.transition_rank: int | None = None
        self.base_merges: int | None = None  # an extension run's: its ranks count new merges
        self._labels_set = False  # the merge charts' x labels say which `base_merges` they count
        self.hover_label = ElidedLabel(HOVER_HINT)
        self.hover_label.setObjectName("hoverLabel")
        # Which run the charts show: after a new corpus is loaded they are cleared and say so,
        # never the last run's curves under the new corpus's name.
        self.caption = ElidedLabel("No run yet: press Train")
        self.caption.setObjectName("chartsCaption")
        self.graphics.setWhatsThis(
            "".join(f"<p><b>{name}</b>: {text}</p>" for name, text in CHART_HELP.items())
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.graphics, 1)
        layout.addWidget(self.hover_label)
        self._empty_ranges()
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw_if_dirty)
        self.timer.start()

    # --- feeding -------------------------------------------------------------------------
    def reset(
        self, corpus_bytes: int = 0, caption: str | None = None, keep_axes: bool = False
    ) -> None:
        """Empty charts (a new run, a stored run, a new corpus); the hover line forgets too.

        `keep_axes`: the axes stay where they are until the data moves them (a stored run
        being loaded, whose `fit_to_data` follows): setting the empty ranges first repainted
        every axis in the turn that opened the run (~35 ms), only to move them all again."""
        self.data.reset(corpus_bytes)
        self.groups.reset()
        self.hover_label.setText(HOVER_HINT)
        for marker in self.markers:
            marker.hide()
        self.set_transition(None)
        self.set_extension(None)
        if caption is not None:
            self.caption.setText(caption)
        self._exact_pending = []
        self._dirty = self._curves_behind = True
        self._say_untimed(keep_axes)  # only a stored run is loaded with its axes kept
        if keep_axes:
            return
        for axis_range in self.ranges:
            axis_range.reset()
        self._empty_ranges()

    def _say_untimed(self, untimed: bool) -> None:
        """Title the Speed chart for a run without timings (a stored run: merges/s are not
        stored, and a blank chart under the last run's axes read as a fault), or plainly."""
        if untimed != self._rate_untimed:  # a new title re-lays the chart out: only on change
            self._rate_untimed = untimed
            self.rate_plot.setTitle(UNTIMED_TITLE if untimed else "Speed")

    def _empty_ranges(self) -> None:
        """Plausible axes before the first merge (a log axis over 1..10 shows odd minor ticks);
        the first data replaces them."""
        self.count_plot.setXRange(0, 1000, padding=0)
        self.count_plot.setYRange(0, 5, padding=0)  # 1 .. 10^5, in decades
        self.bpt_plot.setXRange(0, 1000, padding=0)
        self.bpt_plot.setYRange(0, 5, padding=0)
        self.rate_plot.setXRange(0, 10, padding=0)
        self.rate_plot.setYRange(0, 10_000, padding=0)
        self.length_plot.setXRange(0, 16, padding=0)
        self.length_plot.setYRange(0, 1000, padding=0)
        self.redraw_if_dirty()

    def set_transition(self, rank: int | None) -> None:
        """Draw SuperBPE's transition line at merge `rank`, the first merge of stage 2 (None:
        none). A live run's batches say where it is (`note_transition`); a stored run's
        statistics hold it."""
        self.transition_rank = rank
        if rank is None:
            for line in self.transition_lines:
                line.hide()
            return
        self.transition_lines[0].setValue(rank)
        self.transition_lines[1].setValue(rank)  # merges made before stage 2's first one
        for line in self.transition_lines:
            line.setToolTip(f"SuperBPE transition: superwords from merge rank {rank:,}")
            line.show()

    def set_extension(self, base_merges: int | None) -> None:
        """An extension run (its base has `base_merges` merges; None: not one): the merge
        charts count the new merges, which their axes say, so merge 0 there is the base's
        merge `base_merges` in the merge list."""
        # Unchanged (every reset says None): setting the same label again re-lays the axis out
        # and repaints both charts (~2.5 ms of the turn that opens a run).
        if base_merges == self.base_merges and self._labels_set:
            return
        self.base_merges, self._labels_set = base_merges, True
        if base_merges is None:
            rank, made = RANK_AXIS, MADE_AXIS
        else:
            # Short enough for the axis at the default size; the hover line gives both ranks.
            rank = f"rank after the base's {base_merges:,}"
            made = f"merges after the base's {base_merges:,}"
        self.count_plot.setLabel("bottom", rank)
        self.bpt_plot.setLabel("bottom", made)

    def note_transition(self, batch: MergeBatch) -> None:
        """Place the transition line when a batch says stage 2 has begun."""
        if batch.stage_start is not None and self.transition_rank is None:
            self.set_transition(batch.stage_start)

    def set_corpus_bytes(self, corpus_bytes: int) -> None:
        self.data.corpus_bytes = corpus_bytes

    def add_batch(self, batch: MergeBatch) -> None:
        """Cheap: appends to buffers; the timer draws."""
        self.data.add(batch)
        self.groups.add(batch)
        self.note_transition(batch)
        self._dirty = self._curves_behind = True

    def pause_clock(self) -> None:
        self.data.pause_clock()

    def mark_dirty(self) -> None:
        self._dirty = self._curves_behind = True

    # --- drawing -------------------------------------------------------------------------
    def redraw_if_dirty(self) -> None:
        # Behind another tab the curves would only be recomputed for nobody to see; the data
        # keeps growing and `showEvent` draws it all when the tab comes back.
        if not self._dirty or not self.isVisible():
            return
        if self.defer_redraw() > 0:
            # Another widget painted just now: this turn is spent. The redraw waits in the
            # queue of costly jobs (`paint_turns`), which runs it in a turn of its own.
            self._redraw_job.request()
            return
        self._redraw_now()

    def _redraw_now(self) -> None:
        if not self._dirty or not self.isVisible():
            return
        self._dirty = False
        if self._exact_pending:  # a fit at the run's end still going: it moves the axes
            self._fit_exact()
            if self._curves_behind and not self._dirty:  # new data: the next free turn draws it
                self._dirty = True
                self._redraw_job.request()
            return
        self._draw_curves()
        self._fit_ranges()

    def _draw_curves(self) -> None:
        """The curves take the data (no axis moves)."""
        self._curves_behind = False
        self.drawn_at = time.perf_counter()
        TURNS.spent()  # the curves paint in this turn, later
        self.sigRedrawn.emit()  # the curves repaint in this turn
        d = self.data
        self.count_curve.setData(d.rank.view(), d.count.view())
        n_bpt = len(d.bytes_per_token)
        self.bpt_curve.setData(d.rank.view()[:n_bpt] + 1, d.bytes_per_token.view())
        self.rate_curve.setData(d.rate_time.view(), d.rate.view())
        if self._rate_untimed and self.data.timed:  # a stored run continued: timed from here
            self._say_untimed(False)
        lengths = np.nonzero(d.length_counts)[0]
        self.length_bars.setOpts(x=lengths, height=d.length_counts[lengths])
        self.groups.redraw()

    def fit_to_data(self) -> None:
        """At a run's end (or a stored run loaded): every axis spans its data, without the
        room the growing steps left for merges that are not coming.

        `MOVES_PER_FRAME` axes now (the merge charts' x axes first), the rest on the next
        redraws: all eight at once repainted every chart in one turn (~45 ms for 32k merges).
        New data not drawn yet (a stored run's merges: ~5-8 ms at 200k, and as much again to
        paint) is drawn now, if the turn is free, without moving an axis (not grown by steps,
        `_fit_ranges`, only to be moved again here): the axes follow from the next free turn."""
        if self._dirty and self.isVisible() and self.defer_redraw() <= 0:
            self._draw_curves()
            self._set_exact()
            self._dirty = bool(self._exact_pending)
            if self._dirty:
                self._redraw_job.request()
            return
        self._set_exact()
        if self._dirty:
            self.redraw_if_dirty()  # its first axes (or in the next free turn), curves after
        else:
            self._fit_exact()

    def _set_exact(self) -> None:
        self._exact_pending = [
            (axis_range, wanted)
            for axis_range, wanted in zip(self.ranges, self._wanted_bounds(), strict=True)
            if wanted is not None
        ]

    def _fit_exact(self) -> None:
        """Span the next `MOVES_PER_FRAME` axes of a `fit_to_data` exactly."""
        now, self._exact_pending = (
            self._exact_pending[:MOVES_PER_FRAME],
            self._exact_pending[MOVES_PER_FRAME:],
        )
        if now:
            self.sigRedrawn.emit()  # the moved axes repaint in this turn
        for axis_range, wanted in now:
            axis_range.exact(*wanted)
        if self._exact_pending:
            # The rest in the next free turns (`paint_turns`), not a redraw tick (200 ms) apart.
            self._dirty = True
            self._redraw_job.request()

    def settle(self) -> None:
        """Draw now with every axis caught up, for a still picture (a screenshot) where no
        later frame will move the axes that `MOVES_PER_FRAME` left behind."""
        self._dirty = self._curves_behind = True
        # Drawn here, not through `redraw_if_dirty`: that only queues a redraw when the turn
        # is taken (`defer_redraw`), so the picture could show the axes a frame behind.
        self._redraw_job.cancel()
        # Each pass spans some axes of a fit still going, or draws and moves some: bounded.
        for _ in range(2 * len(self.ranges) + 2):
            if not self._dirty or not self.isVisible():
                return
            self._redraw_now()

    def _fit_ranges(self) -> None:
        """Move at most `MOVES_PER_FRAME` axes per redraw, taking turns: each move repaints
        that axis's labels, and a frame that moved all eight would be the longest pause of the
        run. The others catch up on the next ticks (a curve may run past its axis briefly)."""
        wanted = self._wanted_bounds()
        n = len(self.ranges)
        moved = 0
        for step in range(n):
            i = (self._next_range + step) % n
            if wanted[i] is not None and self.ranges[i].fit(*wanted[i]):
                moved += 1
                if moved == MOVES_PER_FRAME:
                    self._next_range = (i + 1) % n
                    self._dirty = True  # come back for the axes still behind
                    return

    def _wanted_bounds(self) -> list[tuple[float, float] | None]:
        d = self.data
        counts = d.count.view()
        bpt = d.bytes_per_token.view()
        lengths = np.nonzero(d.length_counts)[0]
        return [
            (0, d.n) if d.n else None,
            (float(counts.min()), float(counts.max())) if d.n else None,
            (0, len(bpt)) if len(bpt) else None,
            (0, float(bpt.max())) if len(bpt) else None,
            (0, float(d.rate_time.view()[-1])) if len(d.rate) else None,
            (0, float(d.rate.view().max())) if len(d.rate) else None,
            (0, float(lengths.max()) + 1) if len(lengths) else None,
            (0, float(d.length_counts.max())) if len(lengths) else None,
        ]

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.redraw_if_dirty()

    def show_replay(self, k: int | None) -> None:
        """A replay at merge k: both merge charts marked where the run stood after k merges,
        and the line below says which merge that was (None: the replay is over)."""
        if k is None or not self.data.n:
            for marker in self.markers:
                marker.hide()
            self.hover_label.setText(HOVER_HINT)
            self._cache_curves(False)
            return
        # While the markers move (30 times a second when playing), the curves under them stay
        # as they are: painted once into a pixmap, each repaint of a marker's strip is a copy
        # instead of drawing 32k points again.
        self._cache_curves(True)
        last = min(max(k, 1), self.data.n) - 1  # the k-th merge has rank k - 1
        self.markers[0].setValue(last)
        self.markers[1].setValue(last + 1)  # the Compression chart counts merges made
        for marker in self.markers:
            marker.show()
        self.hover_label.setText(
            f"replay: after {k:,} merges — " + self.describe(last) if k else "replay: no merges"
        )

    def _cache_curves(self, on: bool) -> None:
        mode = (
            QGraphicsItem.CacheMode.DeviceCoordinateCache if on else QGraphicsItem.CacheMode.NoCache
        )
        for item in (self.count_curve.curve, self.bpt_curve.curve):
            if item.cacheMode() != mode:
                item.setCacheMode(mode)

    # --- hover ---------------------------------------------------------------------------
    def _on_mouse_moved(self, pos: QPointF) -> None:
        for plot, offset, marker in (
            (self.count_plot, 0, self.markers[0]),
            (self.bpt_plot, -1, self.markers[1]),
        ):
            if plot.sceneBoundingRect().contains(pos):
                x = plot.vb.mapSceneToView(pos).x() + offset
                index = self.data.index_at(x)
                if index is not None and index < self.data.n:
                    marker.setValue(index - offset)
                    marker.show()
                    self.hover_label.setText(self.describe(index))
                    self.sigHoverMerge.emit(index)
                return
        for marker in self.markers:
            marker.hide()

    def describe(self, index: int) -> str:
        """One line for merge `index`: rank, ids, readable token, count and compression."""
        d = self.data
        token = readable(d.tokens[index])
        rank = f"rank {index}"
        if self.base_merges is not None:  # the merge list's rank, after the base's merges
            rank = f"new merge {index} (rank {self.base_merges + index:,})"
        text = (
            f"{rank} · id {d.new_id[index]} = {d.left[index]} + {d.right[index]}"
            f" · “{token}” · count {int(d.count.view()[index]):,}"
        )
        if index < len(d.bytes_per_token):
            text += f" · {d.bytes_per_token.view()[index]:.3f} bytes/token"
        if is_superword(d.tokens[index]):
            text += " · superword"
        if self.transition_rank is not None:
            stage = 2 if index >= self.transition_rank else 1
            text += f" · SuperBPE stage {stage}"
        return text


__all__ = ["ChartsPanel", "MAX_LENGTH_BIN"]
