"""The merges tab: search box, lazy merge table, and the selected token's merge tree.

Search runs as the user types, debounced (`SEARCH_DELAY_MS`) so a fast typist causes one query,
not one per key. Each query asks the store for one page only. While training runs, `poke()` (from
the window's timer) pulls in the next page when the view is scrolled to the bottom, so the list
grows like a log without the model re-reading what it has.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

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
from workbench.store import RunStore, StoreError

SEARCH_DELAY_MS = 150
CELL_PADDING = 12  # a cell's margins on both sides, with a little slack
# "id token" in the left/right columns is cut (with an ellipsis) past this many characters,
# so a long part never pushes the token column out of sight.
MAX_PART_CHARS = 12
# Rows measured per arriving page, as Qt's own precision default: a filtered page's left/right
# parts may each need a store lookup, and the first rows are the ones in view.
FIT_ROWS = 64
_FITTED = (RANK, ID, LEFT, RIGHT, COUNT, LENGTH)  # TOKEN stretches over what is left


class MergeListPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = MergeTableModel(parent=self)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search: text · /regex/ · hex:e2 80 · id:300 · len:3-5")
        self.search.setClearButtonEnabled(True)
        self.message = QLabel()
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setDefaultSectionSize(20)
        self._size_columns()
        self.tree = MergeTreePanel()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.apply_search)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self.view.selectionModel().selectionChanged.connect(self._selection_changed)

        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.message)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addLayout(top)
        left_layout.addWidget(self.view, 1)
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
        Here the first rows of an arriving page are measured once, from the model's strings
        with a font metric (under a millisecond), and while the list grows columns only widen,
        so they do not jitter; a new run or search fits them afresh.
        """
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(TOKEN, QHeaderView.ResizeMode.Stretch)
        self.model.modelReset.connect(self._fit_all_columns)
        self.model.rowsInserted.connect(
            lambda _parent, first, last: self._fit_columns(first, last, grow_only=True)
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
                (self.model.text(row, column) for row in range(first, last + 1)[:FIT_ROWS]),
                key=len,
                default="",
            )
            metrics = plain
            if column in (LEFT, RIGHT):
                longest, metrics = longest[:MAX_PART_CHARS], mono
            width = CELL_PADDING + max(
                metrics.horizontalAdvance(longest), label.horizontalAdvance(HEADERS[column])
            )
            if not grow_only or width > header.sectionSize(column):
                header.resizeSection(column, width)

    def set_run(self, store: RunStore | None, run_id: int | None, total: int = 0) -> None:
        self.model.set_run(store, run_id, total)
        self.tree.clear()
        self.apply_search()

    def apply_search(self) -> None:
        """Run the search box's query now (the debounce timer calls this)."""
        self._timer.stop()
        try:
            merge_filter = parse_search(self.search.text())
            self.model.set_filter(merge_filter)
        except (ValueError, StoreError) as exc:
            self.message.setText(str(exc))
            self.message.setStyleSheet("color: #e5383b")
            return
        self.message.setStyleSheet("")
        self.message.setText("")
        self.poke()

    def poke(self) -> None:
        """Fetch the next page if the user is looking at the end of the list."""
        bar = self.view.verticalScrollBar()
        if (bar.maximum() == 0 or bar.value() >= bar.maximum() - 2) and self.model.canFetchMore():
            self.model.fetchMore()

    def show_rank(self, rank: int) -> None:
        """Clear the search, load pages up to `rank` (keyset: cheap) and select its row."""
        if self.search.text():
            self.search.clear()
            self.apply_search()
        model = self.model
        while (not model.rowCount() or model.merge_at(model.rowCount() - 1).rank < rank) and (
            model.canFetchMore()
        ):
            model.fetchMore()
        for row in range(model.rowCount()):
            if model.merge_at(row).rank == rank:
                self.view.selectRow(row)
                self.view.scrollTo(model.index(row, 0))
                return

    def _selection_changed(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = selected.indexes()
        model = self.model
        if not indexes or model.store is None or model.run_id is None:
            return
        self.tree.show_merge(model.store, model.run_id, model.merge_at(indexes[0].row()))
