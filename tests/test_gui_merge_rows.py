"""The merge list paints its rows itself (merge_rows.py): what a person sees in it — every
row's text, the replay's grey, a step's tint, the selection, nothing spilling into the next
column — comes without a call into the model per cell."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import no_qthread_left  # noqa: E402, F401  (autouse fixture)
from PySide6.QtCore import QRect  # noqa: E402
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPalette  # noqa: E402

from workbench.gui.merge_list import MergeListPanel  # noqa: E402
from workbench.gui.merge_table import NEWEST, RANK, TOKEN  # noqa: E402
from workbench.store import RunStore  # noqa: E402
from workbench.store.synthetic import synthetic_batches  # noqa: E402

N = 600


@pytest.fixture
def panel(qtbot, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    run_id = store.create_run("synthetic")
    with store.writer(run_id) as writer:
        for batch in synthetic_batches(N, batch_size=300, seed=3):
            writer.write(batch)
    widget = MergeListPanel()
    qtbot.addWidget(widget)
    widget.resize(700, 500)
    widget.show()
    qtbot.waitExposed(widget)
    widget.set_run(store, run_id, N)
    widget.follow.setChecked(False)
    widget.view.scrollToTop()
    widget.view.viewport().repaint()  # asks for the pages in view
    qtbot.waitUntil(
        lambda: all(widget.model.cached_text(row, TOKEN) is not None for row in range(30)),
        timeout=30_000,
    )
    yield widget
    widget.close()
    store.close()


def _shot(panel) -> QImage:
    return panel.view.viewport().grab().toImage()


def _band(panel, row: int, column: int | None = None) -> QRect:
    """The viewport rectangle of a row (or of one of its cells)."""
    view = panel.view
    y, height = view.rowViewportPosition(row), view.rowHeight(row)
    if column is None:
        return QRect(0, y, view.viewport().width(), height)
    header = view.horizontalHeader()
    return QRect(header.sectionViewportPosition(column), y, header.sectionSize(column), height)


def _darkest(image: QImage, area: QRect) -> int:
    return min(
        QColor(image.pixel(x, y)).value()
        for x in range(area.left(), area.right() + 1)
        for y in range(area.top() + 1, area.bottom())
    )


def _share(image: QImage, area: QRect, color: QColor) -> float:
    """The share of the area's pixels within a few steps of `color`."""
    hits = total = 0
    for x in range(area.left(), area.right() + 1):
        for y in range(area.top(), area.bottom() + 1):
            pixel = QColor(image.pixel(x, y))
            total += 1
            hits += all(
                abs(a - b) <= 8 for a, b in zip(pixel.getRgb()[:3], color.getRgb()[:3], strict=True)
            )
    return hits / total


def test_rows_paint_without_asking_the_model_cell_by_cell(qtbot, panel, monkeypatch):
    asked = []
    model = type(panel.model)
    monkeypatch.setattr(model, "multiData", lambda *args: asked.append(args))
    monkeypatch.setattr(model, "data", lambda *args: asked.append(args))
    image = _shot(panel)
    assert asked == []
    text = QColor(panel.view.palette().color(QPalette.ColorRole.Text)).value()
    for row in range(3):  # every column of the rows in view has its text
        for column in range(panel.model.columnCount()):
            assert _darkest(image, _band(panel, row, column)) < text + 90, (row, column)


def test_a_replay_greys_later_merges_and_a_step_is_tinted(qtbot, panel):
    panel.show_replay(5)  # the first 5 merges made; the later ones greyed
    panel.view.scrollToTop()
    image = _shot(panel)
    made, later = _darkest(image, _band(panel, 4)), _darkest(image, _band(panel, 5))
    assert made < 60 and later > made + 60
    panel.show_replay(None)
    panel.model.set_highlight(N - 1)
    panel.view.scrollToBottom()
    image = _shot(panel)
    newest = QColor(NEWEST)
    base = QColor(panel.view.palette().color(QPalette.ColorRole.Base))
    # The tint is see-through: what shows is NEWEST over the base colour.
    alpha = newest.alphaF()
    seen = QColor(
        *(
            round(n * alpha + b * (1 - alpha))
            for n, b in zip(newest.getRgb()[:3], base.getRgb()[:3], strict=True)
        )
    )
    assert _share(image, _band(panel, N - 1, RANK), seen) > 0.5
    assert _share(image, _band(panel, N - 2, RANK), seen) == 0


def test_the_selected_row_is_filled_and_its_text_stays_readable(qtbot, panel):
    panel.view.selectRow(2)
    image = _shot(panel)
    palette = panel.view.palette()
    group = (
        QPalette.ColorGroup.Active if panel.view.isActiveWindow() else QPalette.ColorGroup.Inactive
    )
    fill = palette.color(group, QPalette.ColorRole.Highlight)
    assert _share(image, _band(panel, 2, RANK), fill) > 0.5
    assert _share(image, _band(panel, 1, RANK), fill) == 0


def test_a_long_token_is_cut_inside_its_column(qtbot, panel):
    """Narrowed to a few characters, the token column still shows text, cut (with an
    ellipsis) before its right margin: nothing is drawn over the margin or the next column."""
    panel.view.horizontalHeader().resizeSection(TOKEN, 24)
    image = _shot(panel)
    longest = max(range(10), key=lambda row: len(panel.model.text(row, TOKEN)))
    wide = QFontMetrics(panel.model.mono_font).horizontalAdvance(panel.model.text(longest, TOKEN))
    assert wide > 24  # wider than the column
    cell = _band(panel, longest, TOKEN)
    assert _darkest(image, cell) < 120  # the cut text is shown
    margin = QRect(cell.right() - 2, cell.top(), 2, cell.height())  # left of the grid line
    assert _darkest(image, margin) > 150


def test_a_text_that_fits_its_column_is_shown_whole(qtbot, panel):
    """A column just wide enough for its text (at the view's own font size, as Qt sizes it)
    shows all of it: the ink reaches as far as the text is wide, not one ellipsis short."""
    from workbench.gui.merge_table import LEFT

    view, model = panel.view, panel.model
    text = model.text(0, LEFT)
    font = model.mono_font.resolve(view.font())
    metrics = QFontMetrics(font)
    margin = view.style().pixelMetric(view.style().PixelMetric.PM_FocusFrameHMargin, None, view) + 1
    width = metrics.horizontalAdvance(text) + 2 * margin + 1
    header = view.horizontalHeader()
    for column in range(header.count()):  # the stretched parts' columns: fixed for the test
        header.setSectionResizeMode(column, header.ResizeMode.Interactive)
    header.resizeSection(LEFT, width)
    image = _shot(panel)
    cell = _band(panel, 0, LEFT)
    inked = [
        x
        for x in range(cell.left(), cell.right() - 1)
        for y in range(cell.top() + 2, cell.bottom() - 1)
        if QColor(image.pixel(x, y)).value() < 128
    ]
    last_glyph = metrics.horizontalAdvance(text[-1])
    assert max(inked) >= cell.left() + margin + metrics.horizontalAdvance(text) - last_glyph


def test_a_repaint_right_of_the_last_column_paints_nothing_and_fails_nothing(qtbot, panel):
    """The viewport can be wider than the columns: a part of it with no column, beside a
    selected row, is left as it is (no cell meets it)."""
    header = panel.view.horizontalHeader()
    header.setStretchLastSection(False)
    for column in range(header.count()):
        header.setSectionResizeMode(column, header.ResizeMode.Interactive)
        header.resizeSection(column, 30)
    panel.view.selectRow(0)
    qtbot.wait(20)  # the header lays its sections out
    right = header.sectionViewportPosition(header.count() - 1) + 30
    assert right + 20 < panel.view.viewport().width()
    panel.view.viewport().repaint(QRect(right + 5, 0, 10, 40))
    image = _shot(panel)
    assert _darkest(image, QRect(right + 5, 0, 10, 40)) > 200  # the empty viewport, untouched
