"""The merge list does not paint in the turn in which the charts take new data (Qt would paint
both in that one turn): its rows wait a little and then repaint whole."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import QEvent, QObject  # noqa: E402

from workbench.gui.main_window import LIST_AFTER_CHARTS_S  # noqa: E402


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def test_a_charts_redraw_puts_the_lists_paint_off_then_it_paints_whole(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.tabs.setCurrentIndex(0)
    viewport = window.merge_list.view.viewport()
    qtbot.waitUntil(viewport.isVisible)
    counter = PaintCounter()
    viewport.installEventFilter(counter)
    window.charts.sigRedrawn.emit()  # what redraw_if_dirty says before it sets the curves
    assert not viewport.updatesEnabled()
    viewport.update()  # a page arriving now: its rows wait
    qtbot.wait(int(LIST_AFTER_CHARTS_S * 1000 / 3))
    assert counter.paints == 0
    qtbot.waitUntil(viewport.updatesEnabled, timeout=2000)
    qtbot.waitUntil(lambda: counter.paints >= 1, timeout=2000)


def test_the_charts_redraw_after_the_list_painted_not_in_its_turn(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.tabs.setCurrentIndex(0)
    table = window.merge_list.view
    qtbot.waitUntil(table.viewport().isVisible)
    table.viewport().repaint()  # the list paints now
    assert window.charts.defer_redraw() > 0
    redrawn: list[bool] = []
    window.charts.sigRedrawn.connect(lambda: redrawn.append(True))
    window.charts.mark_dirty()
    window.charts.redraw_if_dirty()
    assert redrawn == []  # put off, still to do
    qtbot.waitUntil(lambda: redrawn == [True], timeout=2000)


def test_a_redraw_is_put_off_for_a_bounded_time_only(qtbot):
    from workbench.gui import charts as charts_module

    charts = charts_module.ChartsPanel()
    qtbot.addWidget(charts)
    charts.show()
    qtbot.waitExposed(charts)
    charts.defer_redraw = lambda: 0.05  # a neighbour that paints all the time
    redrawn: list[bool] = []
    charts.sigRedrawn.connect(lambda: redrawn.append(True))
    charts.mark_dirty()
    charts.redraw_if_dirty()
    assert redrawn == []
    qtbot.waitUntil(lambda: redrawn == [True], timeout=int(charts_module.MAX_DEFER_S * 1000) + 2000)
