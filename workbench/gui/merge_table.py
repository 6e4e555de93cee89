"""The merge list: a lazy table over the run store, searchable while training runs.

Rows come from the store in keyset pages (`rank > last rank shown`), so showing page 400 costs
the same as page 1 and the model never holds more than the user has scrolled through. While a
run trains, the window tells the model how many merges exist (`note_total`); the view then
fetches more when it is scrolled to the bottom. A filter replaces the rows with the first page
of `store.search(...)` and pages on with `after_rank` the same way.

The search box understands: plain text (a substring of the readable form; a typed space finds
`·`), `/regex/`, `hex:e2 80` or `0xe280`, `id:300` or `#300`, and `len:3` / `len:3-5`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from workbench.display import readable
from workbench.gui.table_model import ListTableModel
from workbench.store import RunStore, StoredMerge

PAGE = 256
RANK, ID, TOKEN, LEFT, RIGHT, COUNT, LENGTH = range(7)
HEADERS = ("rank", "id", "token", "left", "right", "count", "length")
_INDEX = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class MergeFilter:
    """Keyword arguments for `RunStore.search`, parsed from the search box."""

    args: tuple[tuple[str, Any], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.args)

    def __bool__(self) -> bool:
        return bool(self.args)


def _int_range(text: str) -> tuple[int, int]:
    """ "3" -> (3, 3); "3-5" -> (3, 5); raises ValueError."""
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def parse_search(text: str) -> MergeFilter:
    """Search box text -> filter; raises ValueError with a message for a malformed id or length.

    parse_search("the") -> text="the"; parse_search("/^·t/") -> regex="^·t";
    parse_search("#300") -> id_range=(300, 300); parse_search("hex:e2 80") -> hex="e2 80".
    """
    stripped = text.strip()
    if not text:
        return MergeFilter()
    lower = stripped.lower()
    try:
        if lower.startswith("id:") or (lower.startswith("#") and len(lower) > 1):
            return MergeFilter((("id_range", _int_range(stripped.split(":", 1)[-1].lstrip("#"))),))
        if lower.startswith(("len:", "length:")):
            return MergeFilter((("length_range", _int_range(stripped.split(":", 1)[1])),))
    except ValueError:
        raise ValueError(f"not a number or range: {stripped!r} (write id:300 or len:3-5)") from None
    if lower.startswith("hex:"):
        return MergeFilter((("hex", stripped[4:]),))
    if lower.startswith("0x"):
        return MergeFilter((("hex", stripped),))
    if len(stripped) >= 2 and stripped.startswith("/") and stripped.endswith("/"):
        return MergeFilter((("regex", stripped[1:-1]),))
    return MergeFilter((("text", text),))  # not stripped: " the" means "·the"


class MergeTableModel(ListTableModel):
    """Merges of one run, fetched lazily from a RunStore, optionally filtered."""

    headers = HEADERS

    def __init__(self, store: RunStore | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self.store = store
        self.run_id: int | None = None
        self.filter = MergeFilter()
        self.rows: list[StoredMerge] = []
        self._total = 0  # merges known to exist (unfiltered)
        self._exhausted = True  # a filtered listing has returned its last page
        # Views and testers call back into fetchMore from inside an insert or a reset;
        # inserting rows then would nest one change inside another.
        self._fetching = False
        self._names: dict[int, str] = {}
        self.mono_font = QFont("monospace")
        self.mono_font.setStyleHint(QFont.StyleHint.Monospace)

    # --- what to show ----------------------------------------------------------------------
    def set_run(self, store: RunStore | None, run_id: int | None, total: int = 0) -> None:
        self._fetching = True
        self.beginResetModel()
        self.store = store
        self.run_id = run_id
        self.rows = []
        self._names = {}
        self._total = total
        self._exhausted = store is None or run_id is None
        self.endResetModel()
        self._fetching = False

    def set_filter(self, merge_filter: MergeFilter) -> None:
        """Show only matching merges; the first page is fetched at once (raises StoreError
        for a bad regex or hex string, leaving the old rows in place)."""
        first: list[StoredMerge] = []
        if self.store is not None and self.run_id is not None:
            first = self._page(merge_filter, after_rank=-1)
        self._fetching = True
        self.beginResetModel()
        self.filter = merge_filter
        self.rows = first
        self._names.update((m.new_id, m.readable) for m in first)
        self._exhausted = len(first) < PAGE
        self.endResetModel()
        self._fetching = False

    def note_total(self, total: int) -> None:
        """More merges exist now (training went on): an exhausted filter may find more."""
        if total > self._total:
            self._total = total
            self._exhausted = False

    @property
    def total(self) -> int:
        return self._total

    def merge_at(self, row: int) -> StoredMerge:
        return self.rows[row]

    # --- lazy loading ----------------------------------------------------------------------
    def _page(self, merge_filter: MergeFilter, after_rank: int) -> list[StoredMerge]:
        assert self.store is not None and self.run_id is not None
        if merge_filter:
            return self.store.search(
                self.run_id, after_rank=after_rank, limit=PAGE, **merge_filter.kwargs
            )
        return self.store.merges(self.run_id, after_rank=after_rank, limit=PAGE)

    def canFetchMore(self, parent: _INDEX = QModelIndex()) -> bool:  # noqa: B008
        if parent.isValid() or self.store is None or self.run_id is None or self._fetching:
            return False
        if self.filter:
            return not self._exhausted
        return len(self.rows) < self._total

    def fetchMore(self, parent: _INDEX = QModelIndex()) -> None:  # noqa: B008
        if not self.canFetchMore(parent):
            return
        after = self.rows[-1].rank if self.rows else -1
        page = self._page(self.filter, after)
        if self.filter and len(page) < PAGE:
            self._exhausted = True
        if not self.filter and not page:
            self._total = len(self.rows)  # the store has fewer than we were told: trust it
            return
        if not page:
            return
        start = len(self.rows)
        self._fetching = True
        try:
            # Subtle: the last new row is start + n - 1 (Qt's fetchMore example is off by one).
            self.beginInsertRows(QModelIndex(), start, start + len(page) - 1)
            self.rows.extend(page)
            self._names.update((m.new_id, m.readable) for m in page)
            self.endInsertRows()
        finally:
            self._fetching = False

    # --- Qt model API ----------------------------------------------------------------------
    def data(self, index: _INDEX, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        merge = self.rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(merge, column)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if column in (TOKEN, LEFT, RIGHT):
                return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and column in (TOKEN, LEFT, RIGHT):
            return self.mono_font
        if role == Qt.ItemDataRole.ToolTipRole and column == TOKEN:
            return f"bytes: {merge.token.hex(' ')}\nties at merge: {merge.ties}"
        if role == Qt.ItemDataRole.UserRole:
            return merge.rank
        return None

    def token_name(self, token_id: int) -> str:
        """Readable form of any token id: bytes directly, merged tokens from the store (cached;
        in rank order the parts of a row are always on an earlier page, so misses are rare)."""
        if token_id < 256:
            return readable(bytes([token_id]))
        name = self._names.get(token_id)
        if name is None:
            merge = None
            if self.store is not None and self.run_id is not None:
                merge = self.store.merge_by_id(self.run_id, token_id)
            name = merge.readable if merge is not None else "?"
            self._names[token_id] = name
        return name

    def text(self, row: int, column: int) -> str:
        """What cell (row, column) shows, without a trip through Qt (for measuring)."""
        return self._display(self.rows[row], column)

    def _display(self, merge: StoredMerge, column: int) -> str:
        if column == RANK:
            return str(merge.rank)
        if column == ID:
            return str(merge.new_id)
        if column == TOKEN:
            return merge.readable
        if column == LEFT:
            return f"{merge.left_id} {self.token_name(merge.left_id)}"
        if column == RIGHT:
            return f"{merge.right_id} {self.token_name(merge.right_id)}"
        if column == COUNT:
            return f"{merge.count:,}"
        return str(merge.length)
