"""The status bar: stage, merges done of the target, merges per second, elapsed and time left.

Refreshed from the window's timer a few times a second, never per batch. The rate is taken over
the last few seconds (`RateMeter`), so it follows the trainer as merges get cheaper.
"""

from __future__ import annotations

import collections
import time

from PySide6.QtWidgets import QLabel, QSizePolicy, QStatusBar

from workbench.gui.elided_label import ElidedLabel
from workbench.gui.progress_bar import LazyProgressBar

RATE_WINDOW = 3.0


def clock(seconds: float) -> str:
    """75.2 -> "1:15"; 3725 -> "1:02:05"."""
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class RateMeter:
    """Merges per second over the last `RATE_WINDOW` seconds of training time."""

    def __init__(self) -> None:
        self.samples: collections.deque[tuple[float, int]] = collections.deque()
        self.active = 0.0  # training seconds before the current stretch
        self._since: float | None = None

    def start(self, merges: int) -> None:
        self._since = time.perf_counter()
        self.samples.clear()
        self.samples.append((self._since, merges))

    def stop(self) -> None:
        if self._since is not None:
            self.active += time.perf_counter() - self._since
        self._since = None

    def reset(self) -> None:
        self.__init__()

    def note(self, merges: int) -> None:
        now = time.perf_counter()
        self.samples.append((now, merges))
        while len(self.samples) > 2 and now - self.samples[0][0] > RATE_WINDOW:
            self.samples.popleft()

    def rate(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, m0), (t1, m1) = self.samples[0], self.samples[-1]
        return (m1 - m0) / (t1 - t0) if t1 > t0 else 0.0

    def elapsed(self) -> float:
        running = time.perf_counter() - self._since if self._since is not None else 0.0
        return self.active + running


class TrainingStatus:
    """The labels in the window's status bar."""

    def __init__(self, bar: QStatusBar) -> None:
        self.stage = ElidedLabel("Ready")  # a long message is cut, never widens the window
        self.merges = QLabel("")
        self.rate = QLabel("")
        self.elapsed = QLabel("")
        self.left = QLabel("")
        self.progress = LazyProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setTextVisible(False)
        # The numbers keep room for their widest text (short: they never crowd the window),
        # so a label neither clips "merges" nor shifts as digits arrive; only the stage line
        # gives way, cut with "…".
        widest = (
            (self.merges, "9,999,999 / 9,999,999 merges"),
            (self.rate, "999,999 merges/s"),
            (self.elapsed, "elapsed 9:99:99"),
            (self.left, "left ~9:99:99"),
        )
        for widget, text in widest:
            widget.setMinimumWidth(widget.fontMetrics().horizontalAdvance(text) + 8)
            widget.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Preferred)
        bar.addWidget(self.stage, 1)
        for widget in (self.merges, self.rate, self.elapsed, self.left, self.progress):
            bar.addPermanentWidget(widget)

    def clear(self) -> None:
        """No run shown (a new corpus): the numbers go, they were the last run's."""
        for widget in (self.merges, self.rate, self.elapsed, self.left):
            widget.setText("")
        self.progress.setValue(0)

    def show(self, done: int, target: int, meter: RateMeter, running: bool) -> None:
        self.merges.setText(f"{done:,} / {target:,} merges")
        rate = meter.rate() if running else 0.0
        self.rate.setText(f"{rate:,.0f} merges/s" if running else "")
        self.elapsed.setText(f"elapsed {clock(meter.elapsed())}")
        if running and rate > 0 and target > done:
            self.left.setText(f"left ~{clock((target - done) / rate)}")
        else:
            self.left.setText("")
        self.progress.setRange(0, max(target, 1))
        self.progress.setValue(min(done, target))
