"""The merge tree of one token: how it was built, down to bytes, and what was built from it.

`build_tree` is plain Python over a lookup function, so it is tested without a store. Depth is
bounded by the token's length (every merge adds at least one byte), so the recursion is short.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QLabel, QTreeView, QVBoxLayout, QWidget

from workbench.display import readable
from workbench.store import RunStore, StoredMerge

LATER_LIMIT = 200

Lookup = Callable[[int], StoredMerge | None]


def byte_label(b: int) -> str:
    """65 -> "A  (byte 0x41)"; 32 -> "·  (byte 0x20)"."""
    return f"{readable(bytes([b]))}  (byte 0x{b:02X})"


def build_tree(token_id: int, lookup: Lookup) -> QStandardItem:
    """An item for `token_id` whose children are its left and right parts, recursively.

    A merge row reads "·the  id 301 · rank 45 · count 1,234"; a byte reads "t  (byte 0x74)".
    """
    if token_id < 256:
        item = QStandardItem(byte_label(token_id))
        item.setEditable(False)
        return item
    merge = lookup(token_id)
    if merge is None:
        item = QStandardItem(f"id {token_id} (not in this run)")
        item.setEditable(False)
        return item
    item = QStandardItem(
        f"{readable(merge.token)}  id {merge.new_id} · rank {merge.rank} · count {merge.count:,}"
    )
    item.setEditable(False)
    item.appendRow(build_tree(merge.left_id, lookup))
    item.appendRow(build_tree(merge.right_id, lookup))
    return item


def later_merges(store: RunStore, run_id: int, token_id: int) -> list[StoredMerge]:
    """Merges that use `token_id` as a part, in rank order (indexed in the store)."""
    return store.merges_using(run_id, token_id, LATER_LIMIT)


class MergeTreePanel(QWidget):
    """The selected token's tree and the later merges that use it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self.tree_model.appendRow(build_tree(merge.new_id, lambda i: store.merge_by_id(run_id, i)))
        self.tree.expandAll()
        later = later_merges(store, run_id, merge.new_id)
        for m in later:
            item = QStandardItem(f"rank {m.rank}: {readable(m.token)}  (id {m.new_id})")
            item.setEditable(False)
            self.later_model.appendRow(item)
        more = "+" if len(later) == LATER_LIMIT else ""
        self.later_title.setText(f"Later merges that use it ({len(later)}{more})")
