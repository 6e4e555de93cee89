"""Vocabulary scrubber: a slider over merge rank k; the text is re-cut by the first k merges.

Merges are a prefix-stable sequence, so `tokenizer.prefix(k)` is the tokenizer a run had after
k merges -- no retraining. The curve shows bytes per token of the current text at evenly spaced
k (computed in a `JobLane` thread) with a line at the slider's k, so the user sees where more
merges stop paying off on this text.

The chart's paint (4-7 ms) is a costly job of the UI thread (`paint_turns`): it landed in the
turn that showed the Tokens tab (with the text boxes' paint) or took a new cut's answer, which
made 20-27 ms of CPU in one turn. So a new curve is drawn, and the chart first painted when the
tab is shown, in a turn of its own.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPaintEvent, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QVBoxLayout, QWidget

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.elided_label import fit_width
from workbench.gui.paint_turns import TURNS, TurnJob
from workbench.gui.tokens.jobs import TOKENS_GATE, JobLane

CURVE_POINTS = 24
CURVE_MAX_CHARS = 20_000  # the curve encodes the text CURVE_POINTS times: keep it cheap


def compression_curve(
    tok: Tokenizer, text: str, points: int = CURVE_POINTS, cancel: threading.Event | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(k values, bytes per token at each k) for `text`; `k` spans 0..len(merges).

    `compression_curve(t, "aaaa")` with one merge `a+a`: k=[0, 1], bytes/token=[1.0, 2.0].
    """
    total = len(tok.merges)
    ks = np.unique(np.linspace(0, total, num=min(points, total + 1)).astype(np.int64))
    n_bytes = len(text.encode("utf-8"))
    values = np.full(len(ks), np.nan)
    for i, k in enumerate(ks.tolist()):
        if cancel is not None and cancel.is_set():
            break
        count = len(tok.prefix(k).encode_array(text, allowed_special="all"))
        values[i] = n_bytes / count if count else 0.0
    return ks, values


class _CurvePlot(pg.PlotWidget):
    """The curve's chart; its paint tells `TURNS` it took the turn (the next costly job waits)."""

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802  (Qt's name)
        started = time.perf_counter()
        super().paintEvent(event)
        TURNS.spent(time.perf_counter() - started)


class Scrubber(QWidget):
    """`sigRankChanged(k)` (debounced) when the slider settles on k merges."""

    sigRankChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tok: Tokenizer | None = None
        self._total = 0  # its merges
        self._text = ""
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.valueChanged.connect(self._on_value)
        self.label = QLabel("no tokenizer", self)
        fit_width(self.label)
        self._timer = QTimer(self, singleShot=True, interval=40)
        self._timer.timeout.connect(lambda: self.sigRankChanged.emit(self.slider.value()))
        self.plot = _CurvePlot(self, background="w")
        self.plot.setFixedHeight(130)
        self.plot.setLabel("left", "bytes/token")
        self.plot.setLabel("bottom", "merges k")
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.curve = self.plot.plot(
            [], [], pen=pg.mkPen("#2c7fb8", width=2), symbol="o", symbolSize=4
        )
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d95f02", width=1))
        self.plot.addItem(self.marker)
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        # Said on the chart itself when there is nothing to draw, instead of bare 0..1 axes.
        self.empty = pg.TextItem("", color="#666666", anchor=(0.5, 0.5))
        self.plot.addItem(self.empty, ignoreBounds=True)
        self.plot.setToolTip(
            "Bytes per token of the text above, cut with the first k merges, for k from 0 to"
            " all of them: where the curve flattens, more merges buy little on this text"
        )
        self.plot.setWhatsThis(self.plot.toolTip())
        self.slider.setToolTip("Cut the text with the first k merges only (0: bytes)")
        self.slider.setWhatsThis(self.slider.toolTip())
        self._show_empty()
        self._curve_due: tuple[np.ndarray, np.ndarray] | None = None  # a curve not drawn yet
        self._draw_job = TurnJob(self._draw_curve, self)
        self._show_plot_job = TurnJob(self._show_plot, self)
        self._lane = JobLane(self, gate=TOKENS_GATE)
        self._lane.sigResult.connect(self._on_curve)
        self._lane.sigWaiting.connect(self._on_waiting)  # an encoder compiling: said on the chart
        row = QHBoxLayout()
        row.addWidget(QLabel("merges", self))
        row.addWidget(self.slider, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.label)
        layout.addWidget(self.plot)

    def set_tokenizer(self, tok: Tokenizer | None) -> None:
        """The full tokenizer; the slider resets to all its merges."""
        self._tok = tok
        # Once: `merges` copies the list (~0.7 ms at 200k merges), and the chart asks again.
        self._total = total = len(tok.merges) if tok is not None else 0
        self.slider.blockSignals(True)
        self.slider.setRange(0, total)
        self.slider.setValue(total)
        self.slider.blockSignals(False)
        self.marker.setValue(total)
        self._update_curve()

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._update_curve()

    def show_compression(self, k: int, tokens: int, n_bytes: int, vocab: int) -> None:
        """The label under the slider, once the view has re-cut the text at k merges."""
        if not n_bytes:  # no text: zeros would read as a measurement
            self.label.setText(f"k = {k:,} merges · vocab {vocab:,} · no text to cut yet")
            return
        per = n_bytes / tokens if tokens else 0.0
        self.label.setText(
            f"k = {k:,} merges · vocab {vocab:,} · {tokens:,} tokens · {per:.2f} bytes/token"
        )

    def set_rank(self, k: int) -> None:
        self.slider.setValue(k)

    def show_rank(self, k: int) -> None:
        """Move the slider to `k` without asking for a re-cut (the caller cuts)."""
        self.slider.blockSignals(True)
        self.slider.setValue(k)
        self.slider.blockSignals(False)
        self.marker.setValue(k)

    def busy(self) -> bool:
        """Whether its curve is still being computed in the background (or not drawn yet)."""
        return self._lane.busy() or self._draw_job.pending()

    def shutdown(self) -> None:
        self._timer.stop()
        self._lane.shutdown()
        self._draw_job.cancel()
        self._show_plot_job.cancel()
        self._curve_due = None

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802  (Qt's name)
        """The chart paints in a turn of its own, after the rest of the tab being shown."""
        super().showEvent(event)
        viewport = self.plot.viewport()
        if viewport.isVisible():
            viewport.hide()
            TURNS.spent()  # the tab painting in this turn is the costly job: the chart waits
            self._show_plot_job.request()

    def _show_plot(self) -> None:
        self.plot.viewport().show()

    def _on_value(self, k: int) -> None:
        self.marker.setValue(k)
        self._timer.start()

    def _update_curve(self) -> None:
        tok, text = self._tok, self._text[:CURVE_MAX_CHARS]
        self._draw_job.cancel()  # a curve of the old text or tokenizer is not drawn now
        self._curve_due = None
        if tok is None or not text:
            self.curve.setData([], [])
            self._show_empty()
            return
        self._lane.submit(
            lambda cancel: compression_curve(tok, text, cancel=cancel),
            cancellable=True,
            patterns=(tok.pattern,),
        )

    def _on_curve(self, result: tuple[np.ndarray, np.ndarray]) -> None:
        """Drawn in a turn of its own: the answer often comes in the turn of the text's cut."""
        self._curve_due = result
        self._draw_job.request()

    def _draw_curve(self) -> None:
        if self._curve_due is None:
            return
        (ks, values), self._curve_due = self._curve_due, None
        keep = ~np.isnan(values)
        self.curve.setData(ks[keep], values[keep])
        self.empty.setText("")
        if keep.any():
            top = float(values[keep].max())
            self.plot.setXRange(0, max(float(ks[keep].max()), 1.0), padding=0.02)
            self.plot.setYRange(0, top * 1.1 if top > 0 else 1.0, padding=0)

    def _on_waiting(self, line: str) -> None:
        """The curve waits for the encoder: say so where the curve will be drawn."""
        self._draw_job.cancel()
        self._curve_due = None
        total = self._total
        self.curve.setData([], [])
        self.empty.setText(f"{line};\nthen the bytes/token curve by merges k")
        self.empty.setPos(max(total, 1) / 2, 2.5)
        self.plot.setXRange(0, max(total, 1), padding=0.02)
        self.plot.setYRange(0, 5, padding=0)

    def _show_empty(self) -> None:
        total = self._total
        self.plot.setXRange(0, max(total, 1), padding=0.02)
        self.plot.setYRange(0, 5, padding=0)
        self.empty.setText(
            "type or paste text above to see its bytes/token by merges k"
            if self._tok is not None
            else "no tokenizer: train a run or open one"
        )
        self.empty.setPos(max(total, 1) / 2, 2.5)
