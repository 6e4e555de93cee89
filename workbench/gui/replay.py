"""Replay a run: a timeline (slider and Play at a chosen speed) over the merges of the open run.

At merge k the window shows the state after the first k merges: the charts mark k, the merge
list greys the merges after it, and the Tokens tab cuts its text with `Tokenizer.prefix(k)`.
`ReplayClock` is the arithmetic (no Qt): how far a replay has got after so many seconds at so
many merges a second; `ReplayBar` is the widget, ticking at screen rate while it plays.
"""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSlider, QToolButton, QWidget

FRAME_MS = 33  # ~30 frames a second: the screen's pace, never the merges'
SPEEDS = (10, 100, 1_000, 10_000, 100_000)  # merges a second
DEFAULT_SPEED = 1_000


class ReplayClock:
    """`k` merges shown of `total`; `advance(seconds)` moves k on at `speed` merges a second
    (a fraction of a merge is carried to the next frame, so 10/s at 30 frames is exact)."""

    def __init__(self, total: int = 0, speed: float = DEFAULT_SPEED) -> None:
        self.total = total
        self.k = total
        self.speed = speed
        self._carry = 0.0

    def rewind_if_done(self) -> None:
        """Play at the end starts again from merge 0."""
        if self.k >= self.total:
            self.k = 0
            self._carry = 0.0

    def seek(self, k: int) -> None:
        self.k = min(max(k, 0), self.total)
        self._carry = 0.0

    def advance(self, seconds: float) -> int:
        self._carry += self.speed * max(seconds, 0.0)
        step = int(self._carry)
        self._carry -= step
        self.k = min(self.total, self.k + step)
        return self.k

    @property
    def done(self) -> bool:
        return self.k >= self.total


class ReplayBar(QWidget):
    """`sigRank(k)`: show the run as it was after its first k merges (k == total: all)."""

    sigRank = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.clock = ReplayClock()
        self.play_button = QToolButton(self)
        self.play_button.setText("▶ Replay")
        self.play_button.setToolTip("Play the run's merges from the start at the chosen speed")
        self.play_button.clicked.connect(self.toggle)
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setToolTip(
            "The run after its first k merges: charts marked, later merges greyed in the list,"
            " the Tokens tab's text cut with those k merges"
        )
        self.slider.valueChanged.connect(self._slider_moved)
        self.slider.setMinimumWidth(120)
        self.speed = QComboBox(self)
        for speed in SPEEDS:
            self.speed.addItem(f"{speed:,} merges/s", speed)
        self.speed.setCurrentIndex(SPEEDS.index(DEFAULT_SPEED))
        self.speed.setToolTip("How fast Replay plays")
        self.speed.currentIndexChanged.connect(
            lambda _i: setattr(self.clock, "speed", float(self.speed.currentData()))
        )
        self.label = QLabel(self)
        self.label.setMinimumWidth(
            self.label.fontMetrics().horizontalAdvance("9,999,999 / 9,999,999 merges") + 8
        )
        for widget in (self.play_button, self.slider, self.speed, self.label):
            widget.setWhatsThis(widget.toolTip() or "How many merges the replay shows")
        self.timer = QTimer(self)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self._frame)
        self._elapsed = QElapsedTimer()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.play_button)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.speed)
        layout.addWidget(self.label)
        self.set_total(0)

    @property
    def k(self) -> int:
        return self.clock.k

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def set_total(self, total: int) -> None:
        """A run of `total` merges is open (or none, 0): the timeline shows all of it."""
        self.stop()
        self.clock.total = total
        self.clock.seek(total)
        self.slider.blockSignals(True)
        self.slider.setRange(0, total)
        self.slider.setValue(total)
        self.slider.blockSignals(False)
        self._show_label()
        self.setEnabled(total > 0)

    def toggle(self) -> None:
        if self.playing:
            self.stop()
            # A playing replay moves the costlier views only a few times a second: paused,
            # they all catch up with k (the window's handler does all at rest).
            self._emit()
        else:
            self.play()

    def play(self) -> None:
        if self.clock.total <= 0:
            return
        self.clock.rewind_if_done()
        self._elapsed.start()
        self.timer.start()
        self.play_button.setText("❚❚ Pause")
        self._emit()

    def stop(self) -> None:
        self.timer.stop()
        self.play_button.setText("▶ Replay")

    def seek(self, k: int) -> None:
        """Show the run after its first `k` merges (the slider does this when dragged)."""
        self.slider.setValue(k)

    def _slider_moved(self, k: int) -> None:
        self.clock.seek(k)
        self._emit()

    def _frame(self) -> None:
        seconds = self._elapsed.restart() / 1000
        self.clock.advance(seconds)
        self.slider.blockSignals(True)
        self.slider.setValue(self.clock.k)
        self.slider.blockSignals(False)
        if self.clock.done:
            self.stop()  # first: the last frame is drawn as a replay at rest
        self._emit()

    def _emit(self) -> None:
        self._show_label()
        self.sigRank.emit(self.clock.k)

    def _show_label(self) -> None:
        self.label.setText(f"{self.clock.k:,} / {self.clock.total:,}")
        self.label.setToolTip(
            f"the first {self.clock.k:,} of the run's {self.clock.total:,} merges"
        )
