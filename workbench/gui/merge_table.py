"""The merge list: a lazy table over the run store, searchable and sortable while training runs.

Every matching merge has a row from the start (`rowCount` is the match count, so the scroll bar
is true and Ctrl+End goes straight to the newest merges), but a row's data is read only when a
view asks for it, a page of `PAGE` rows at a time, and cached. In rank order a page is a keyset
read (`rank > ?`), as cheap at the end as at the start; a sort by count, length or token (a
click on the header) is SQLite's ORDER BY with an offset, so nothing loads the whole run. While
a run trains the window tells the model how many merges exist (`note_total`): rows are added at
the end, and pages a sort may have reshuffled are read again.

The search box understands: plain text (a substring of the readable form; a typed space finds
`·`), `/regex/` (on the real text: `/\\sthe/` and `/ the/` find ` the`), `hex:e2 80` or
`0xe280`, `id:300` or `#300`, and `len:3` / `len:3-5`.

With `read_in_background()` (the window's list does this) a page that is not cached is read by
a `PageReader` on its own connection: `data()` answers at once with a placeholder and the rows
are refreshed (`dataChanged`) when the page arrives. Each run, filter or sort (or a reshuffle as
training goes on) is a new generation, and pages of an older one are dropped on arrival, so the
list never shows rows of an old order. `merge_at` still reads at once, for callers that need the
merge now (a selection, a test); a bare model (no reader) reads every page at once as before.

Rows of merges made since `highlight_from` (the last +1/+10/+100, or teaching mode's newest)
are tinted, so the merges just made stand out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont

from workbench.display import readable
from workbench.engine.patterns.superbpe import is_superword
from workbench.gui.merge_pages import PageAnswer, PageReader
from workbench.gui.table_model import ListTableModel
from workbench.store import RunStore, StoredMerge

PAGE = 256
RANK, ID, TOKEN, LEFT, RIGHT, COUNT, LENGTH = range(7)
# "bytes", not "length": a token's length is counted in bytes (the search's len: too).
HEADERS = ("rank", "id", "token", "left", "right", "count", "bytes")
# Header clicks sort by these columns (the store's order names); id follows rank.
SORTABLE = {RANK: "rank", ID: "rank", TOKEN: "token", COUNT: "count", LENGTH: "length"}
RECENT = QColor(255, 214, 102, 90)  # merges of the last step
NEWEST = QColor(255, 183, 3, 150)  # the newest merge
LATER = QColor(150, 150, 150)  # merges after the replay's k: not made yet at that point
SUPERWORD = QColor(114, 9, 183, 110)  # a SuperBPE superword (crosses a space): its token cell
BASE_TOKEN = "(base token)"  # a part from an extension run's base whose bytes are not at hand
_ROLES = frozenset(
    int(role)
    for role in (
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.TextAlignmentRole,
        Qt.ItemDataRole.FontRole,
        Qt.ItemDataRole.ForegroundRole,
        Qt.ItemDataRole.BackgroundRole,
        Qt.ItemDataRole.ToolTipRole,
        Qt.ItemDataRole.UserRole,
    )
)  # the roles `data` answers
PENDING = "…"  # shown in text columns while a row's page is being read
_INDEX = QModelIndex | QPersistentModelIndex
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
MONO_COLUMNS = (TOKEN, LEFT, RIGHT)
_LEFT_ALIGNED = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_RIGHT_ALIGNED = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
# A row's cells as the view paints them are kept for this many rows at most (the rows in view
# and a little scrolling); past it the cache starts afresh.
MAX_CACHED_ROWS = 2048
# A row's cached cells: its rank, and per column the roles that do not depend on the replay's k
# or the tint of the newest merges (display text, font, alignment, a superword's background).
RowCells = tuple[int | None, tuple[dict[int, object], ...]]


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

    parse_search("the") -> text="the"; parse_search("/^ t/") -> regex="^ t";
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
    if len(text) >= 2 and text.lstrip().startswith("/") and text.rstrip().endswith("/"):
        # Not stripped inside the slashes: `/ the/` means a space then "the".
        body = text.lstrip()[1:]
        return MergeFilter((("regex", body[: len(body.rstrip()) - 1]),))
    return MergeFilter((("text", text),))  # not stripped: " the" means "·the"


def read_page(
    store: RunStore, run_id: int, order: str, merge_filter: MergeFilter, total: int, number: int
) -> list[StoredMerge]:
    """Page `number` of a run's merges as filtered and ordered (any thread, any connection)."""
    first = number * PAGE
    if not merge_filter and order == "rank":
        return store.merges(run_id, after_rank=first - 1, limit=PAGE)
    if not merge_filter and order == "newest":
        high = total - 1 - first
        return store.merges(run_id, after_rank=max(high - PAGE, -1), limit=min(PAGE, high + 1))[
            ::-1
        ]
    return store.search(run_id, order=order, limit=PAGE, offset=first, **merge_filter.kwargs)


class MergeTableModel(ListTableModel):
    """Merges of one run, read lazily from a RunStore, optionally filtered and sorted."""

    headers = HEADERS
    sigPageArrived = Signal(int, int)  # first and last row of a page read in the background

    def __init__(self, store: RunStore | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self.store = store
        self.run_id: int | None = None
        self.filter = MergeFilter()
        self.order = "rank"  # a store order name: rank, newest, count, -count, ...
        self._count = 0  # rows (matches)
        self._pages: dict[int, list[StoredMerge]] = {}
        self._total = 0  # merges known to exist (unfiltered)
        self._names: dict[int, str] = {}
        # An extension run's base tokens by id (its ids 0..255 need not be the bytes), and
        # its base's merge count: its own ranks are shown after the base's.
        self._start_tokens: dict[int, bytes] = {}
        self._rank_offset = 0
        self._base_ids_unnamed = 0  # ids below it: a base token whose bytes are not at hand
        self.highlight_from: int | None = None  # ranks >= this are tinted
        self.replay_at: int | None = None  # a replay at merge k: ranks >= k are greyed
        self.stale = False  # a search's count is behind `note_total`
        self.mono_font = QFont("monospace")
        self.mono_font.setStyleHint(QFont.StyleHint.Monospace)
        self._generation = 0  # bumped when the run, filter or sort changes
        # Bumped when training reshuffles a sort: pages read before stay on show (`_stale`, the
        # same order a moment ago) until their fresh read arrives, so a sorted list that grows
        # faster than a page is read never sits on placeholders.
        self._version = 0
        self._stale: dict[int, list[StoredMerge]] = {}
        self._reader: PageReader | None = None
        # What each painted row shows, by row (see `row_cells`): a repaint (a replay's step,
        # a scroll, a page arriving beside it) looks cells up instead of formatting them again.
        self._cells: dict[int, RowCells] = {}

    def read_in_background(self) -> None:
        """Read uncached pages off the UI thread from now on (call `shutdown` when done)."""
        if self._reader is None:
            self._reader = PageReader(self)
            self._reader.sigPage.connect(self._page_arrived)

    def shutdown(self) -> None:
        """Stop the background reader (waits for a running read); pages then read at once."""
        if self._reader is not None:
            self._reader.shutdown()
            self._reader = None

    def pages_pending(self) -> bool:
        return self._reader is not None and self._reader.busy()

    def _drop_pages(self) -> None:
        """Cached pages and pages in flight belong to another run, filter or sort."""
        self._pages = {}
        self._stale = {}
        self._cells = {}
        self._generation += 1
        if self._reader is not None:
            self._reader.forget()

    def _reshuffle(self, keep: dict[int, list[StoredMerge]]) -> None:
        """Merges were added: pages but `keep` may have moved. Read them again (and with a
        background reader show the old ones meanwhile)."""
        if self._reader is not None:
            self._stale.update((n, p) for n, p in self._pages.items() if n not in keep)
            self._reader.forget()
        self._pages = keep
        self._cells = {row: cells for row, cells in self._cells.items() if row // PAGE in keep}
        self._version += 1

    # --- what to show ----------------------------------------------------------------------
    def set_run(self, store: RunStore | None, run_id: int | None, total: int = 0) -> None:
        self.beginResetModel()
        self.store = store
        self.run_id = run_id
        self._drop_pages()
        self._names = {}
        self._total = total if store is not None and run_id is not None else 0
        self.highlight_from = None
        self._count = self._matches()
        self.endResetModel()

    def set_start_tokens(
        self, vocab: dict[int, bytes] | None, base_merges: int = 0, first_new_id: int = 0
    ) -> None:
        """The tokens a run starts from when they are not the 256 bytes (an extension run's
        base, with `base_merges` merges: the run's ranks are shown after them), so its
        merges' parts are named; None: the bytes. A stored extension run opened later gives
        no vocab but its `first_new_id`: its base's tokens are then named as such, not as the
        bytes their ids would be in a classic run."""
        self._start_tokens = vocab or {}
        self._rank_offset = base_merges
        self._base_ids_unnamed = first_new_id if not vocab else 0
        self._cells = {}
        if self.rowCount():
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, 0))

    @property
    def rank_offset(self) -> int:
        """The base's merges an extension run's ranks are shown after (0: not one)."""
        return self._rank_offset

    def set_filter(self, merge_filter: MergeFilter) -> None:
        """Show only matching merges (raises StoreError for a bad regex or hex string before
        anything changes, leaving the old rows in place)."""
        count = self._matches(merge_filter)
        self.beginResetModel()
        self.filter = merge_filter
        self._drop_pages()
        self._count = count
        self.endResetModel()

    def set_order(self, order: str) -> None:
        self.beginResetModel()
        self.order = order
        self._drop_pages()
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """A header click: the store sorts (see the module docstring)."""
        key = SORTABLE.get(column)
        if key is None:
            return
        descending = order == Qt.SortOrder.DescendingOrder
        if key == "rank":
            self.set_order("newest" if descending else "rank")
        else:
            self.set_order(("-" if descending else "") + key)

    def note_total(self, total: int) -> None:
        """More merges exist now (training went on). Unfiltered, their rows are added at once;
        a search is counted again by `refresh_matches` (the panel's timer), not per batch."""
        if total <= self._total:
            return
        self._total = total
        if self.filter:
            self.stale = True
            return
        self._grow_to(total)

    def refresh_matches(self) -> None:
        """Count a search's matches again after training went on (`note_total`)."""
        if self.stale:
            self.stale = False
            self._grow_to(self._matches())

    def _grow_to(self, count: int) -> None:
        if count <= self._count:
            return
        if self.order == "rank" and not self.filter:
            # Pages wholly before the old end stay true; a partial last page is read again.
            self._reshuffle({n: p for n, p in self._pages.items() if len(p) == PAGE})
        else:
            self._reshuffle({})  # newest first or a sort puts new merges anywhere: read again
        self.beginInsertRows(QModelIndex(), self._count, count - 1)
        self._count = count
        self.endInsertRows()
        if self.order != "rank" or self.filter:
            self.dataChanged.emit(self.index(0, 0), self.index(count - 1, len(HEADERS) - 1))

    def set_replay(self, k: int | None) -> None:
        """Grey the merges from rank `k` on (a replay showing the first k; None: none)."""
        if k == self.replay_at:
            return
        self.replay_at = k
        if self._count:
            self.dataChanged.emit(
                self.index(0, 0),
                self.index(self._count - 1, len(HEADERS) - 1),
                [Qt.ItemDataRole.ForegroundRole],
            )

    def set_highlight(self, from_rank: int | None) -> None:
        """Tint merges from rank `from_rank` on (None: no tint)."""
        self.highlight_from = from_rank
        if self._count:
            self.dataChanged.emit(self.index(0, 0), self.index(self._count - 1, len(HEADERS) - 1))

    @property
    def total(self) -> int:
        return self._total

    @property
    def matches(self) -> int:
        return self._count

    def merge_at(self, row: int) -> StoredMerge:
        page = self._pages.get(row // PAGE)
        if page is None:
            page = self._pages[row // PAGE] = self._read_page(row // PAGE)
        return page[row % PAGE]

    def cached_merge(self, row: int) -> StoredMerge | None:
        """The merge at `row` if its page is at hand; else None, and with a background reader
        the page is asked for (`dataChanged` follows when it arrives)."""
        number = row // PAGE
        page = self._pages.get(number)
        if page is None:
            if self._reader is None:
                return self.merge_at(row)
            self._request(number)
            page = self._stale.get(number)
            if page is None:
                return None
        return page[row % PAGE]  # IndexError past a short page (the store is behind)

    def _rank_of_row(self, row: int) -> int | None:
        """A row's rank without its page: known in unfiltered rank or newest order."""
        if self.filter:
            return None
        if self.order == "rank":
            return row
        if self.order == "newest":
            return self._total - 1 - row
        return None

    def _request(self, number: int) -> None:
        assert self._reader is not None and self.store is not None and self.run_id is not None
        run_id, order, merge_filter, total = self.run_id, self.order, self.filter, self._total
        self._reader.request(
            (self._generation, self._version, number),
            self.store,
            run_id,
            lambda store: read_page(store, run_id, order, merge_filter, total, number),
        )

    def _page_arrived(self, answer: PageAnswer) -> None:
        generation, version, number = answer.key
        if generation != self._generation:
            return  # read for an older run, filter or sort
        if version == self._version:
            self._pages[number] = answer.merges
            self._stale.pop(number, None)
        else:  # read before merges were added: on show until the fresh read (asked by data())
            self._stale[number] = answer.merges
        self._names.update(answer.names)
        first = number * PAGE
        last = min(first + PAGE, self._count) - 1
        for row in range(first, first + PAGE):
            self._cells.pop(row, None)  # a stale page's rows, or placeholders
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(HEADERS) - 1))
            self.sigPageArrived.emit(first, last)

    def row_of_rank(self, rank: int) -> int | None:
        """The row showing merge `rank` (unfiltered rank order: a sum; else a search)."""
        if not self.filter and self.order == "rank":
            return rank if 0 <= rank < self._count else None
        if not self.filter and self.order == "newest":
            return self._count - 1 - rank if 0 <= rank < self._count else None
        for row in range(self._count):
            if self.merge_at(row).rank == rank:
                return row
        return None

    # --- reading ---------------------------------------------------------------------------
    def _matches(self, merge_filter: MergeFilter | None = None) -> int:
        merge_filter = self.filter if merge_filter is None else merge_filter
        if self.store is None or self.run_id is None:
            return 0
        if not merge_filter:
            return self._total
        return min(self._total, self.store.search_count(self.run_id, **merge_filter.kwargs))

    def _read_page(self, number: int) -> list[StoredMerge]:
        assert self.store is not None and self.run_id is not None
        page = read_page(self.store, self.run_id, self.order, self.filter, self._total, number)
        self._names.update((m.new_id, readable(m.token)) for m in page)
        return page

    # --- Qt model API ----------------------------------------------------------------------
    def rowCount(self, parent: _INDEX = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self._count

    def data(self, index: _INDEX, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        # A view asks ~10 roles per visible cell on every repaint (a replay's or a live run's
        # ticks); the roles this model never answers are turned away before any other call.
        if role not in _ROLES:
            return None
        if not index.isValid() or index.row() >= self._count:
            return None
        row, role = index.row(), int(role)
        entry = self.row_cells(row)
        rank, cells = entry
        if role in (_FOREGROUND, _BACKGROUND):
            return self.tint(role, rank, cells[index.column()])
        if role == Qt.ItemDataRole.ToolTipRole or role == Qt.ItemDataRole.UserRole:
            try:
                merge = self.cached_merge(row)
            except IndexError:
                return None
            if merge is None:
                return None
            if role == Qt.ItemDataRole.UserRole:
                return merge.rank
            if index.column() != TOKEN:
                return None
            kind = "\nsuperword: it crosses a space (SuperBPE)" if is_superword(merge.token) else ""
            return f"bytes: {merge.token.hex(' ')}\nties at merge: {merge.ties}{kind}"
        return cells[index.column()].get(role)

    def multiData(self, index: QModelIndex, roleDataSpan: Any) -> None:  # noqa: N802, N803
        """Every role a delegate paints a cell with, in one call (Qt 6's delegates ask this
        way): one Python call per painted cell instead of one per cell and role, and the
        row's cells are looked up, not formatted (`row_cells`). The merge list's own view paints
        without it (`merge_rows.py`); Qt still asks this way for what else reads cells."""
        row = index.row()
        if not index.isValid() or row >= self._count:
            return
        rank, cells = self.row_cells(row)
        cell = cells[index.column()]
        for role_data in roleDataSpan:
            role = role_data.role()
            if role in (_FOREGROUND, _BACKGROUND):
                value = self.tint(role, rank, cell)
            else:
                value = cell.get(role)
            if value is not None:
                role_data.setData(value)

    def tint(self, role: int, rank: int | None, cell: dict[int, object]) -> object:
        """A cell's foreground (grey past the replay's k) or background (the merges just made,
        else its own: a superword's mark): worked out per paint from the row's rank."""
        if role == _FOREGROUND:
            replay_at = self.replay_at
            if replay_at is not None and rank is not None and rank >= replay_at:
                return LATER
            return None
        highlight = self.highlight_from
        if highlight is not None and rank is not None and rank >= highlight:
            return NEWEST if rank == self._total - 1 else RECENT
        return cell.get(_BACKGROUND)

    def row_cells(self, row: int) -> RowCells:
        """A row's rank and cells: cached once its page is at hand (the cache is emptied when
        pages are dropped or re-read), made afresh while it is on its way."""
        entry = self._cells.get(row)
        if entry is not None:
            return entry
        try:
            merge = self.cached_merge(row)
        except IndexError:  # past a short page: the store is behind
            merge, missing = None, True
        else:
            missing = False
        rank = merge.rank if merge is not None else self._rank_of_row(row)
        cells = []
        for column in range(len(HEADERS)):
            mono = column in MONO_COLUMNS
            cell: dict[int, object] = {_ALIGN: _LEFT_ALIGNED if mono else _RIGHT_ALIGNED}
            if mono:
                cell[_FONT] = self.mono_font
            if merge is not None:
                cell[_DISPLAY] = self._display(merge, column)
                if column == TOKEN and is_superword(merge.token):
                    cell[_BACKGROUND] = SUPERWORD
            elif mono and not missing:
                cell[_DISPLAY] = PENDING
            cells.append(cell)
        entry = (None if missing else rank), tuple(cells)
        if merge is not None:
            if len(self._cells) >= MAX_CACHED_ROWS:
                self._cells = {}
            self._cells[row] = entry
        return entry

    def token_name(self, token_id: int) -> str:
        """Readable form of any token id: bytes directly, merged tokens from the store (cached;
        in rank order the parts of a row are always on an earlier page, so misses are rare)."""
        start = self._start_tokens.get(token_id)  # an extension run's base tokens
        if start is not None:
            return readable(start)
        if token_id < self._base_ids_unnamed:  # a stored extension run's base, not loaded
            return BASE_TOKEN
        if token_id < 256:
            return readable(bytes([token_id]))
        name = self._names.get(token_id)
        if name is None:
            merge = None
            if self.store is not None and self.run_id is not None:
                merge = self.store.merge_by_id(self.run_id, token_id)
            name = readable(merge.token) if merge is not None else "?"
            self._names[token_id] = name
        return name

    def text(self, row: int, column: int) -> str:
        """What cell (row, column) shows, without a trip through Qt (for measuring)."""
        return self._display(self.merge_at(row), column)

    def cached_text(self, row: int, column: int) -> str | None:
        """What cell (row, column) shows if its page is at hand (column fitting), else None."""
        page = self._pages.get(row // PAGE)
        if page is None or row % PAGE >= len(page):
            return None
        return self._display(page[row % PAGE], column)

    def _display(self, merge: StoredMerge, column: int) -> str:
        if column == RANK:
            return str(merge.rank + self._rank_offset)
        if column == ID:
            return str(merge.new_id)
        if column == TOKEN:
            # From the bytes, not the stored readable form: older stores used other glyphs.
            return readable(merge.token)
        if column == LEFT:
            return f"{merge.left_id} {self.token_name(merge.left_id)}"
        if column == RIGHT:
            return f"{merge.right_id} {self.token_name(merge.right_id)}"
        if column == COUNT:
            return f"{merge.count:,}"
        return str(merge.length)
