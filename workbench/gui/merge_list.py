"""The merges tab: search box, lazy merge table, and the selected token's merge tree.

Search runs as the user types, debounced (`SEARCH_DELAY_MS`) so a fast typist causes one query,
not one per key; the count of matches shows beside the box ("No matches" over an empty table).
Header clicks sort (the store sorts: see merge_table.py). While training runs, `poke()` (from
the window's timer) counts a search's new matches and, with "Follow newest" on, keeps the newest
merge in view. A legend under the box says what the display glyphs stand for.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QItemSelection, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QFontMetrics, QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.display import GLYPH_LEGEND
from workbench.gui.elided_label import ElidedLabel
from workbench.gui.merge_rows import RowPainter
from workbench.gui.merge_table import (
    COUNT,
    HEADERS,
    ID,
    LEFT,
    LENGTH,
    RANK,
    RIGHT,
    TOKEN,
    MergeTableModel,
    parse_search,
)
from workbench.gui.merge_tree import MergeTreePanel
from workbench.gui.paint_turns import TURNS, TurnJob
from workbench.store import RunStore, StoreError

SEARCH_DELAY_MS = 150
CELL_PADDING = 12  # a cell's margins on both sides, with a little slack
# "id token" in the left/right columns is cut (with an ellipsis) past this many characters,
# so a long part never pushes the token column out of sight.
MAX_PART_CHARS = 9
# The token column is never narrower than this many characters (a default window shows a
# 12-character token whole), nor wider than the longest token in view up to the maximum.
TOKEN_MIN_CHARS = 12
TOKEN_MAX_CHARS = 13
MIN_DIGITS = 5  # rank and id columns
SEARCH_HELP = (
    "<b>Search the merges</b><br>"
    "<code>the</code> — tokens containing “the” (a typed space finds <code>·</code>)<br>"
    "<code>/regex/</code> — a regular expression on the real text: <code>/^ t/</code> and "
    "<code>/\\sthe/</code> find “ the”<br>"
    "<code>hex:e2 80</code> — raw bytes · <code>id:300</code> or <code>#300</code> · "
    "<code>len:3-5</code> — bytes in the token<br><br>"
    "<b>Display glyphs</b>: " + GLYPH_LEGEND.replace("<", "&lt;")
)
# Rows measured per arriving page, as Qt's own precision default: a filtered page's left/right
# parts may each need a store lookup, and the first rows are the ones in view.
FIT_ROWS = 64
# LEFT and RIGHT share what is left (stretched), so a long part is cut, never a bare "…".
_FITTED = (RANK, ID, TOKEN, COUNT, LENGTH)
# Rows in view changed this recently and not painted since: their paint comes in the next turn
# (older than this, the change was somewhere Qt had nothing to repaint for).
PAINT_DUE_S = 0.05


class MergeTableView(QTableView):
    """The merge list's table. Its paint is a costly job of the UI thread (`paint_turns`):
    `painted_at` (perf_counter seconds) is when its rows last painted, and `paint_pending()`
    says that rows in view changed since, so the charts and the Tokens tab keep their own
    work out of the turn it paints in."""

    painted_at = 0.0
    changed_at = 0.0  # when rows in view last changed (or it scrolled)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows = RowPainter()
        TURNS.watch(self, self.paint_pending)
        self.verticalScrollBar().valueChanged.connect(lambda _value: self.note_change())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802  (Qt's name)
        started = time.perf_counter()
        model = self.model()
        if isinstance(model, MergeTableModel):
            self._rows.paint(self, model, event.rect())  # see merge_rows.py: why not Qt's
        else:
            super().paintEvent(event)
        self.painted_at = time.perf_counter()
        TURNS.spent(self.painted_at - started)

    def note_change(self, first: int = 0, last: int = -1) -> None:
        """Rows `first..last` (-1: to the end) changed: a paint is due if any is in view."""
        viewport = self.viewport()
        if not viewport.isVisible():
            return
        top = self.rowAt(0)
        bottom = self.rowAt(viewport.height() - 1)
        if top >= 0 and (last >= 0 and last < top or bottom >= 0 and first > bottom):
            return  # out of view: Qt repaints nothing for it
        self.changed_at = time.perf_counter()

    def paint_pending(self) -> bool:
        viewport = self.viewport()
        return (
            self.changed_at > self.painted_at
            and time.perf_counter() - self.changed_at < PAINT_DUE_S
            and viewport.updatesEnabled()
            and viewport.isVisible()
        )


class MergeListPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = MergeTableModel(parent=self)
        self.model.read_in_background()  # the UI thread never waits for a page
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search: text · /regex/ · hex:e2 80 · id:300 · len:3-5")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip(SEARCH_HELP)
        self.message = ElidedLabel()
        self.message.setObjectName("searchMessage")
        self.count_label = QLabel()
        self.count_label.setObjectName("matchCount")
        self.follow = QCheckBox("Follow newest")
        self.follow.setToolTip("Keep the newest merge in view as training adds merges")
        self.follow.toggled.connect(lambda on: on and self.scroll_to_newest())
        self.legend = ElidedLabel(GLYPH_LEGEND)
        small = self.legend.font()
        small.setPointSizeF(small.pointSizeF() * 0.85)
        self.legend.setFont(small)
        self.legend.setObjectName("glyphLegend")
        self.legend.setToolTip(SEARCH_HELP)
        self.view = MergeTableView()
        self.view.setModel(self.model)
        self.model.dataChanged.connect(
            lambda top, bottom, *_: self.view.note_change(top.row(), bottom.row())
        )
        self.model.rowsInserted.connect(
            lambda _parent, first, last: self.view.note_change(first, last)
        )
        self.model.modelReset.connect(self.view.note_change)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().hide()
        # Rows of one fixed height: Qt never asks the model for a row's size hint.
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.view.verticalHeader().setDefaultSectionSize(20)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSortIndicator(RANK, Qt.SortOrder.AscendingOrder)
        self.no_matches = QLabel("No matches", self.view.viewport())
        self.no_matches.setTextFormat(Qt.TextFormat.PlainText)  # it quotes the typed search
        self.no_matches.setObjectName("noMatches")
        self.no_matches.setStyleSheet("color: #888; font-size: 15px; padding: 12px")
        self.no_matches.hide()
        self._size_columns()
        self._release_job = TurnJob(self._release_paint, self)
        self._show_rows_job = TurnJob(self._show_rows, self)
        self.tree = MergeTreePanel()
        self.tree.sigGoToRank.connect(self.show_rank)
        self.view.horizontalHeader().sortIndicatorChanged.connect(self._sorted)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.apply_search)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self.view.selectionModel().selectionChanged.connect(self._selection_changed)
        # A merge the user picks (a click, the arrow keys) stays in view: following the newest
        # would scroll it away at the next tick of a run.
        self.view.selectionModel().currentChanged.connect(
            lambda *_: self.view.hasFocus() and self.follow.setChecked(False)
        )
        self.model.modelReset.connect(self._show_count)
        self.model.rowsInserted.connect(self._show_count)

        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.count_label)
        top.addWidget(self.follow)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.setSpacing(2)
        left_layout.addLayout(top)
        left_layout.addWidget(self.message)
        left_layout.addWidget(self.legend)
        left_layout.addWidget(self.view, 1)
        self.message.hide()
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(left)
        split.addWidget(self.tree)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

    def _size_columns(self) -> None:
        """Columns fit their text as pages arrive, measured here rather than by Qt.

        Not ResizeToContents: that mode re-measures rows through the model (a Python `data()`
        call per cell and role) whenever rows arrive or the viewport resizes; the first page
        landing mid-run cost the UI thread 40-80 ms while the worker competed for the GIL.
        Here the first rows of an arriving page are measured once (only rows already read:
        fitting never reads a page itself), from the model's strings
        with a font metric (under a millisecond), and while the list grows columns only widen,
        so they do not jitter; a new run or search fits them afresh.
        """
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        for column in (LEFT, RIGHT):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        self.model.modelReset.connect(self._fit_all_columns)
        self.model.rowsInserted.connect(
            lambda _parent, first, last: self._fit_columns(first, last, grow_only=True)
        )
        self.model.sigPageArrived.connect(
            lambda first, last: self._fit_columns(first, last, grow_only=True)
        )
        self._fit_all_columns()

    def _fit_all_columns(self) -> None:
        self._fit_columns(0, self.model.rowCount() - 1, grow_only=False)

    def _fit_columns(self, first: int, last: int, grow_only: bool) -> None:
        """Size the fitted columns for rows `first..last` and their header labels."""
        header = self.view.horizontalHeader()
        plain = self.view.fontMetrics()
        mono = QFontMetrics(self.model.mono_font)
        label = header.fontMetrics()
        for column in _FITTED:
            # Digits have one width in ordinary fonts and every glyph one width in a monospace
            # font, so the longest string is the widest: measure just that one.
            longest = max(
                (
                    text
                    for row in range(first, last + 1)[:FIT_ROWS]
                    if (text := self.model.cached_text(row, column)) is not None
                ),
                key=len,
                default="",
            )
            # Every row exists from the start, and a search or a sort puts small numbers
            # first: size the number columns for the largest the run can hold.
            widest = self._widest_number(column)
            if len(widest) > len(longest):
                longest = widest
            metrics = plain
            if column in (LEFT, RIGHT):
                longest, metrics = longest[:MAX_PART_CHARS], mono
            elif column == TOKEN:
                metrics = mono
                longest = longest[:TOKEN_MAX_CHARS].ljust(TOKEN_MIN_CHARS, "m")
            width = CELL_PADDING + max(
                metrics.horizontalAdvance(longest), label.horizontalAdvance(HEADERS[column])
            )
            if column == TOKEN:
                width += header.style().pixelMetric(header.style().PixelMetric.PM_HeaderMarkSize)
            if not grow_only or width > header.sectionSize(column):
                header.resizeSection(column, width)

    def _widest_number(self, column: int) -> str:
        model = self.model
        # At least five digits: while a run trains, the store (and so a search's pages) runs
        # ahead of the total the window has been told.
        if column == RANK:
            return "9" * max(len(str(max(model.total - 1, 0))), MIN_DIGITS)
        if column == ID:
            return "9" * max(len(str(model.total + 255)), MIN_DIGITS)
        if column == COUNT and model.store is not None and model.run_id is not None:
            # The first merge's pair is the most frequent there was; later counts are smaller.
            first = model.store.merges(model.run_id, limit=1)
            return f"{first[0].count:,}" if first else ""
        return ""

    def token_column_chars(self) -> float:
        """How many monospace characters the token column shows (the screenshot test)."""
        mono = QFontMetrics(self.model.mono_font)
        width = self.view.horizontalHeader().sectionSize(TOKEN) - CELL_PADDING
        return width / mono.horizontalAdvance("m")

    def shutdown(self) -> None:
        """Stop the model's page reader (the window's close calls this)."""
        self.model.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)

    def set_run(self, store: RunStore | None, run_id: int | None, total: int = 0) -> None:
        self.model.set_run(store, run_id, total)
        self.tree.clear()
        self.apply_search()

    def clear_search(self) -> None:
        """Empty the search box (a new run: the last run's search would show "No matches"
        while the new run trains)."""
        self._timer.stop()
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.apply_search()

    def apply_search(self) -> None:
        """Run the search box's query now (the debounce timer calls this)."""
        self._timer.stop()
        try:
            merge_filter = parse_search(self.search.text())
            if merge_filter != self.model.filter:
                self.tree.clear()  # its row is gone from the list (the selection too)
            self.model.set_filter(merge_filter)
        except (ValueError, StoreError) as exc:
            self.message.setText(str(exc))
            self.message.setStyleSheet("color: #e5383b")
            self.message.show()
            return
        self.message.setStyleSheet("")
        self.message.setText("")
        self.message.hide()
        self.poke()

    def _show_count(self, *_: object) -> None:
        model = self.model
        searching = bool(model.filter) and model.run_id is not None
        if model.run_id is None:
            text = ""
        elif searching:
            n = model.matches
            text = "No matches" if n == 0 else f"{n:,} match{'es' if n != 1 else ''}"
        else:
            text = f"{model.total:,} merges"
        self.count_label.setText(text)
        self.no_matches.setVisible(searching and model.matches == 0)
        if self.no_matches.isVisible():
            self.no_matches.setText(f"No matches for “{self.search.text()}”")
            self.no_matches.adjustSize()
            # Scrolling moves the viewport's children with the rows: put it back on top.
            self.no_matches.move(0, 0)

    def hold_paint(self, ms: int) -> None:
        """Let the list's rows wait `ms` before they paint (the charts paint in this turn).

        Qt paints every widget waiting for it in one turn: rows that a page or a scroll left
        to repaint (~6-10 ms) joined the charts' repaint (~10-15 ms with their new data) in
        one long pause. With the viewport's updates off its repaints are put off, and turning
        them back on repaints it whole in a later turn of its own."""
        viewport = self.view.viewport()
        if viewport.updatesEnabled() and viewport.isVisible():
            viewport.setUpdatesEnabled(False)
            # Then it waits its turn among the other costly jobs (`paint_turns`).
            QTimer.singleShot(ms, self, self._release_job.request)

    def paint_rows_later(self) -> None:
        """The rows of a run just opened paint in a later turn of their own (`paint_turns`),
        not in this one's window update with the charts' reset: the viewport is hidden until
        then. (Turning its updates off is not enough: the scroll bar or a column that changes
        with the new run repaints it anyway.)"""
        viewport = self.view.viewport()
        if self.view.isVisible() and viewport.isVisible():
            viewport.hide()
            self._show_rows_job.request()

    def _show_rows(self) -> None:
        self.view.viewport().show()
        self.view.note_change()  # so the next costly job waits for that paint

    def settled(self) -> bool:
        """No page on its way and the rows in view painted since they last changed."""
        viewport = self.view.viewport()
        return (
            not self.model.pages_pending()
            and not self._show_rows_job.pending()
            and viewport.updatesEnabled()
            and not self.view.paint_pending()
        )

    def _release_paint(self) -> None:
        self.view.viewport().setUpdatesEnabled(True)  # which asks for a repaint of it all
        self.view.note_change()  # so the next costly job waits for that paint

    def poke(self) -> None:
        """Count a search's new matches; with Follow newest on, keep the newest merge in view."""
        self.model.refresh_matches()
        self._show_count()
        if self.follow.isChecked():
            self.scroll_to_newest()

    def scroll_to_newest(self) -> None:
        model = self.model
        if not model.rowCount():
            return
        if model.order == "newest":
            self.view.scrollToTop()
        elif model.order == "rank":
            self.view.scrollToBottom()

    def select_rank(self, rank: int) -> bool:
        """Select and show merge `rank` if the list (as searched and sorted) holds it."""
        row = self.model.row_of_rank(rank)
        if row is None:
            return False
        self.view.selectRow(row)
        self.view.scrollTo(self.model.index(row, 0))
        return True

    def show_replay(self, k: int | None) -> None:
        """A replay at merge k: later merges greyed and the k-th in view (None: over)."""
        self.model.set_replay(k)
        if k is None:
            return
        self.follow.setChecked(False)  # else the next tick scrolls to the newest
        model = self.model
        if model.filter or model.order not in ("rank", "newest"):
            return  # finding the row of a rank in a search or a sort reads the store
        row = model.row_of_rank(max(k - 1, 0))
        if row is not None:
            self.view.scrollTo(
                self.model.index(row, 0), QAbstractItemView.ScrollHint.PositionAtCenter
            )

    def _sorted(self, column: int, _order: Qt.SortOrder) -> None:
        """A sort by anything but rank shows the top of the sorted list: Follow newest would
        keep the view where the newest merge is (the bottom), so it is turned off."""
        if column not in (RANK, ID):
            self.follow.setChecked(False)
            self.view.scrollToTop()

    def show_rank(self, rank: int) -> None:
        """Clear the search and select merge `rank` (the Tokens tab asks for this)."""
        if self.search.text():
            self.search.clear()
            self.apply_search()
        self.follow.setChecked(False)  # else the next tick scrolls away from it
        self.select_rank(rank)

    def _selection_changed(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = selected.indexes()
        model = self.model
        if not indexes or model.store is None or model.run_id is None:
            return
        self.tree.show_merge(model.store, model.run_id, model.merge_at(indexes[0].row()))
