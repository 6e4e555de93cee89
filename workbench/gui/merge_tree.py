"""The merge tree of one token: how it was built, down to bytes, and what was built from it.

`tree_item` builds the items over a describe function, so it is tested without a store; depth and
size are bounded, so a very long token cannot make the view recurse or allocate without end.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QLabel, QTreeView, QVBoxLayout, QWidget

from workbench.display import readable
from workbench.store import RunStore, StoredMerge

LATER_LIMIT = 200

Lookup = Callable[[int], StoredMerge | None]
# What a tree shows of one token: its label and its (left, right) parts, None for a leaf.
Describe = Callable[[int], tuple[str, tuple[int, int] | None]]

ID_ROLE = Qt.ItemDataRole.UserRole + 1  # each item's token id
RANK_ROLE = Qt.ItemDataRole.UserRole + 2  # a later merge's rank
DEPTH_LIMIT = 64  # deeper parts are summarised (a chain-built long token is this deep)
NODE_LIMIT = 2_000  # a 100 KB token has 200k nodes: show the top of it, say the rest is cut


def byte_label(b: int) -> str:
    """65 -> "A  (byte 0x41)"; 32 -> "·  (byte 0x20)"."""
    return f"{readable(bytes([b]))}  (byte 0x{b:02X})"


def tree_item(token_id: int, describe: Describe) -> QStandardItem:
    """The merge tree of `token_id` down to bytes, as items: the one builder both the merge
    list (labels from the store) and the Tokens tab (labels from a tokenizer) use."""
    budget = [NODE_LIMIT]

    def build(tid: int, depth: int) -> QStandardItem:
        budget[0] -= 1
        label, parts = describe(tid)
        item = QStandardItem(label)
        item.setEditable(False)
        item.setData(tid, ID_ROLE)
        if parts is None:
            return item
        if depth >= DEPTH_LIMIT or budget[0] <= 0:
            cut = QStandardItem("… (deeper parts not shown)")
            cut.setEditable(False)
            item.appendRow(cut)
            return item
        for part in parts:
            item.appendRow(build(part, depth + 1))
        return item

    return build(token_id, 0)


def build_tree(token_id: int, lookup: Lookup) -> QStandardItem:
    """The tree of a stored run's token: a merge row reads "·the  id 301 · rank 45 · count
    1,234", a byte "t  (byte 0x74)"."""

    def describe(tid: int) -> tuple[str, tuple[int, int] | None]:
        if tid < 256:
            return byte_label(tid), None
        merge = lookup(tid)
        if merge is None:
            return f"id {tid} (not in this run)", None
        label = f"{readable(merge.token)}  id {merge.new_id} · rank {merge.rank} · count {merge.count:,}"
        return label, (merge.left_id, merge.right_id)

    return tree_item(token_id, describe)


def later_merges(store: RunStore, run_id: int, token_id: int) -> list[StoredMerge]:
    """Merges that use `token_id` as a part, in rank order (indexed in the store)."""
    return store.merges_using(run_id, token_id, LATER_LIMIT)


class MergeTreePanel(QWidget):
    """The selected token's tree and the later merges that use it; `sigGoToRank(rank)` when
    a node or a later merge is double-clicked (the list then shows that merge)."""

    sigGoToRank = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._store: RunStore | None = None
        self._run_id: int | None = None
        self.tree_model = QStandardItemModel(self)
        self.tree_model.setHorizontalHeaderLabels(["merge tree"])
        self.tree = QTreeView()
        self.tree.setModel(self.tree_model)
        self.tree.setHeaderHidden(True)
        self.later_model = QStandardItemModel(self)
        self.later = QTreeView()
        self.later.setModel(self.later_model)
        self.later.setRootIsDecorated(False)
        self.later.setHeaderHidden(True)
        self.later_title = QLabel("Later merges that use it")
        self.tree.doubleClicked.connect(self._tree_double_clicked)
        self.later.doubleClicked.connect(self._later_double_clicked)
        hint = "Double-click a merge to go to it in the list"
        self.tree.setToolTip(f"How the token is built, down to bytes. {hint}")
        self.tree.setWhatsThis(self.tree.toolTip())
        self.later.setToolTip(f"Merges that use this token as a part. {hint}")
        self.later.setWhatsThis(self.later.toolTip())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Merge tree (select a merge)"))
        layout.addWidget(self.tree, 2)
        layout.addWidget(self.later_title)
        layout.addWidget(self.later, 1)

    def clear(self) -> None:
        """Forget the shown merge, title included (a new run must not show an old count)."""
        self.tree_model.removeRows(0, self.tree_model.rowCount())
        self.later_model.removeRows(0, self.later_model.rowCount())
        self.later_title.setText("Later merges that use it")

    def show_merge(self, store: RunStore, run_id: int, merge: StoredMerge) -> None:
        self.clear()
        self._store, self._run_id = store, run_id
        self.tree_model.appendRow(build_tree(merge.new_id, lambda i: store.merge_by_id(run_id, i)))
        self.tree.expandAll()
        later = later_merges(store, run_id, merge.new_id)
        for m in later:
            item = QStandardItem(f"rank {m.rank}: {readable(m.token)}  (id {m.new_id})")
            item.setEditable(False)
            item.setData(m.rank, RANK_ROLE)
            self.later_model.appendRow(item)
        more = "+" if len(later) == LATER_LIMIT else ""
        self.later_title.setText(f"Later merges that use it ({len(later)}{more})")

    def _tree_double_clicked(self, index: QModelIndex) -> None:
        tid = index.data(ID_ROLE)
        if tid is None or tid < 256 or self._store is None or self._run_id is None:
            return  # a byte is no merge
        merge = self._store.merge_by_id(self._run_id, int(tid))
        if merge is not None:
            self.sigGoToRank.emit(merge.rank)

    def _later_double_clicked(self, index: QModelIndex) -> None:
        rank = index.data(RANK_ROLE)
        if rank is not None:
            self.sigGoToRank.emit(int(rank))
