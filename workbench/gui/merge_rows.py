"""The merge table paints its own rows: one Python call a paint, not one a cell.

Qt's item views paint a cell by asking the model for it (`multiData`: a call from C++ into
Python for each cell in view, ~150 a paint, each wrapping ~14 role objects) and laying its text
out afresh (shaping, eliding). A paint cost the UI thread ~4 ms on an idle machine and ~8 ms of
wall time (16 at worst) while a worker thread ran Python, since every call back into Python may
wait for the GIL; a replay or a live run repaints the list several times a second. Here the view
reads the model's cached row cells directly and draws each cell's text as a `QStaticText`, laid
out once per (text, font, width) and kept: ~0.6 ms a paint idle, ~2.9 ms of wall time beside a
busy thread (`python benchmarks/ui_latency.py` shows the turns). What it draws follows Qt's own
item painting: a cell's background (a tint), the selection over it, the text elided on the right
with the style's margins, left-aligned in the monospace columns and right-aligned in the others,
greyed past a replay's k, and the grid.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QStaticText
from PySide6.QtWidgets import QStyle, QStyleOptionViewItem, QTableView

from workbench.gui.merge_table import MONO_COLUMNS, MergeTableModel

# Laid-out texts kept: a few screens of cells; past it the cache starts afresh.
MAX_TEXTS = 8192


class RowPainter:
    """Paints the rows of a `MergeTableModel` in a `QTableView`'s viewport (see above)."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, bool, int], tuple[QStaticText, float, float]] = {}
        self._fonts: tuple[str, str] = ("", "")

    def paint(self, view: QTableView, model: MergeTableModel, area: QRect) -> None:
        """Paint the cells of `view` that meet `area` (viewport coordinates)."""
        rows = _rows_in(view, model, area)
        if rows is None:
            return
        first, last = rows
        columns = _columns_in(view, model, area)
        if not columns:
            return  # right of the last column: the viewport's own background
        plain = view.font()
        mono = model.mono_font.resolve(plain)  # its size unset: the view's, as Qt's delegate does
        self._check_fonts(plain, mono)
        style = view.style()
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
        palette = view.palette()
        group = (
            QPalette.ColorGroup.Active if view.isActiveWindow() else QPalette.ColorGroup.Inactive
        )
        text_color = palette.color(group, QPalette.ColorRole.Text)
        chosen_color = palette.color(group, QPalette.ColorRole.HighlightedText)
        chosen_fill = palette.color(group, QPalette.ColorRole.Highlight)
        selection = view.selectionModel()
        chosen = {index.row() for index in selection.selectedRows()} if selection else set()
        height = view.verticalHeader().defaultSectionSize()
        top = view.rowViewportPosition(first)
        cells = [model.row_cells(row) for row in range(first, last + 1)]

        painter = QPainter(view.viewport())
        try:
            # Backgrounds first (a tint, then the selection over it), then the text column by
            # column, so the font changes once a column and the pen only when the colour does.
            for k, (rank, row_cells) in enumerate(cells):
                y = top + k * height
                if first + k in chosen:
                    painter.fillRect(columns[0][1], y, _right(columns) - columns[0][1], height,
                                     chosen_fill)  # fmt: skip
                    continue
                for column, x, width in columns:
                    fill = model.tint(_BACKGROUND, rank, row_cells[column])
                    if fill is not None:
                        painter.fillRect(x, y, width, height, fill)
            pen: QColor | None = None
            for column, x, width in columns:
                is_mono = column in MONO_COLUMNS
                painter.setFont(mono if is_mono else plain)
                room = width - 2 * margin
                if room <= 0:
                    continue
                for k, (rank, row_cells) in enumerate(cells):
                    cell = row_cells[column]
                    text = cell.get(_DISPLAY)
                    if not text:
                        continue
                    if first + k in chosen:
                        color = chosen_color
                    else:
                        color = model.tint(_FOREGROUND, rank, cell) or text_color
                    if color is not pen:
                        painter.setPen(color)
                        pen = color
                    static, text_width, text_height = self._laid_out(
                        text, is_mono, room, mono if is_mono else plain
                    )
                    left = x + margin if is_mono else x + width - margin - text_width
                    y = top + k * height + (height - text_height) / 2
                    painter.drawStaticText(QPointF(left, y), static)
            if view.showGrid():
                _grid(painter, view, columns, top, height, len(cells))
        finally:
            painter.end()

    def _laid_out(
        self, text: str, is_mono: bool, room: int, font: QFont
    ) -> tuple[QStaticText, float, float]:
        key = (text, is_mono, room)
        found = self._texts.get(key)
        if found is not None:
            return found
        if len(self._texts) >= MAX_TEXTS:
            self._texts = {}
        shown = QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, room)
        static = QStaticText(shown)
        static.setTextFormat(Qt.TextFormat.PlainText)  # a token is text, never markup
        static.prepare(font=font)
        size = static.size()
        found = self._texts[key] = (static, size.width(), size.height())
        return found

    def _check_fonts(self, plain: QFont, mono: QFont) -> None:
        """Texts laid out in other fonts (a font or zoom change) are dropped."""
        fonts = (plain.key(), mono.key())
        if fonts != self._fonts:
            self._texts = {}
            self._fonts = fonts


_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)


def _rows_in(view: QTableView, model: MergeTableModel, area: QRect) -> tuple[int, int] | None:
    """The first and last rows that meet `area`, or None."""
    count = model.rowCount()
    if count == 0:
        return None
    first = view.rowAt(max(area.top(), 0))
    if first < 0:
        return None  # below the last row
    last = view.rowAt(area.bottom())
    return first, (count - 1 if last < 0 else last)


def _columns_in(
    view: QTableView, model: MergeTableModel, area: QRect
) -> list[tuple[int, int, int]]:
    """(column, x, width) of the shown columns that meet `area`."""
    header = view.horizontalHeader()
    columns = []
    for column in range(model.columnCount()):
        if header.isSectionHidden(column):
            continue
        x, width = header.sectionViewportPosition(column), header.sectionSize(column)
        if x + width > area.left() and x <= area.right():
            columns.append((column, x, width))
    return columns


def _right(columns: list[tuple[int, int, int]]) -> int:
    """Where the last of `columns` (not empty) ends."""
    return columns[-1][1] + columns[-1][2]


def _grid(
    painter: QPainter,
    view: QTableView,
    columns: list[tuple[int, int, int]],
    top: int,
    height: int,
    rows: int,
) -> None:
    """Qt's table grid: a line under each of `rows` rows from `top` and after each column, in
    the style's colour."""
    bottom = top + rows * height
    hint = view.style().styleHint(
        QStyle.StyleHint.SH_Table_GridLineColor, QStyleOptionViewItem(), view
    )
    color = (
        QColor.fromRgba(hint & 0xFFFFFFFF)
        if hint != -1
        else view.palette().color(QPalette.ColorRole.Mid)
    )
    painter.setPen(color)
    left, right = columns[0][1], _right(columns) - 1
    for k in range(rows):
        y = top + (k + 1) * height - 1
        painter.drawLine(left, y, right, y)
    for _column, x, width in columns:
        painter.drawLine(x + width - 1, top, x + width - 1, bottom - 1)
