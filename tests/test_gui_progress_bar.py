"""The status bar's and the corpus panel's progress bars paint in a later turn of the event
loop: a `setValue` that repainted at once flushed every waiting widget of the window (the merge
list, the charts) inside the turn of the timer that set it."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QObject  # noqa: E402
from PySide6.QtWidgets import QProgressBar, QVBoxLayout, QWidget  # noqa: E402

from workbench.gui.progress_bar import LazyProgressBar  # noqa: E402


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def _shown_with_a_neighbour(qtbot, bar: QProgressBar) -> tuple[PaintCounter, QWidget, QWidget]:
    top = QWidget()
    layout = QVBoxLayout(top)
    neighbour = QWidget()
    layout.addWidget(bar)
    layout.addWidget(neighbour)
    qtbot.addWidget(top)
    top.show()
    qtbot.waitExposed(top)
    bar.setRange(0, 100)
    qtbot.wait(50)  # the first paints are done
    counter = PaintCounter()
    bar.installEventFilter(counter)
    neighbour.installEventFilter(counter)
    return counter, neighbour, top  # the caller keeps `top` alive


def test_qt_s_own_bar_paints_inside_set_value(qtbot):
    # What LazyProgressBar avoids (if Qt stops doing this, the class can go).
    counter, neighbour, _top = _shown_with_a_neighbour(qtbot, bar := QProgressBar())
    neighbour.update()
    bar.setValue(50)
    assert counter.paints >= 1


def test_the_lazy_bar_takes_the_value_and_paints_in_a_later_turn(qtbot):
    counter, neighbour, _top = _shown_with_a_neighbour(qtbot, bar := LazyProgressBar())
    neighbour.update()
    bar.setValue(50)
    assert bar.value() == 50
    assert counter.paints == 0  # nothing painted inside this turn
    qtbot.waitUntil(lambda: counter.paints >= 1)  # later
    bar.setValue(50)  # unchanged: nothing to paint
    assert bar.value() == 50


def test_the_window_s_bars_are_lazy(qtbot, tmp_path):
    from gui_fixtures import close_window, make_window

    window = make_window(tmp_path / "s.ini", tmp_path / "runs.db")
    qtbot.addWidget(window)
    assert isinstance(window.status.progress, LazyProgressBar)
    assert isinstance(window.corpus_panel.progress, LazyProgressBar)
    close_window(qtbot, window)
