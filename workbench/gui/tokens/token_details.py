"""Everything about one token: id, rank, readable and GPT-2 forms, bytes, its merge and ties.

The merge tree is built from the tokenizer alone (every token's first making merge), so an
imported GPT-2 file gets a tree too; the pair count and the tie count come from the run store
when the tokenizer is a stored run. `sigJumpToRank(rank)` asks the window to show the merge.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QFormLayout, QLabel, QPushButton, QTreeView, QVBoxLayout, QWidget

from workbench.engine.byte_mapping import to_mapped
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.merge_tree import ID_ROLE, tree_item
from workbench.store import RunStore, readable


def token_bytes(tok: Tokenizer, tid: int) -> bytes:
    """Bytes of an ordinary or special token (b"" for an unknown id)."""
    found = tok.vocab.get(tid)
    if found is not None:
        return found
    for name, special in tok.special_tokens.items():
        if special == tid:
            return name.encode()
    return b""


def merge_parts(tok: Tokenizer, tid: int) -> tuple[int, int] | None:
    """The (left, right) ids of the first merge that makes `tid`; None for bytes and specials."""
    if tid in tok.special_tokens.values() or tid not in tok.vocab:
        return None
    rank = tok.token_rank(tid)
    return tok.merges[rank] if 0 <= rank < len(tok.merges) else None


def build_tree_item(tok: Tokenizer, tid: int) -> QStandardItem:
    """`·the  (id 262, rank 6)` with its two parts as children, down to single bytes."""

    def describe(t: int) -> tuple[str, tuple[int, int] | None]:
        rank = tok.token_rank(t) if t in tok.vocab else -2
        what = "byte" if rank == -1 else ("special" if rank == -2 else f"rank {rank:,}")
        return f"{readable(token_bytes(tok, t))}   (id {t}, {what})", merge_parts(tok, t)

    return tree_item(tid, describe)


def ties_text(ties: int, rule: str) -> str:
    """What the ties line says: `3 other pairs tied on this count; rule: lexicographic`."""
    if ties <= 0:
        return f"no tie (rule: {rule})"
    noun = "pair" if ties == 1 else "pairs"
    return f"{ties:,} other {noun} tied on this count; rule: {rule}"


class TokenDetails(QWidget):
    """The details pane; `show_token(tid)` fills it, `sigJumpToRank` on the jump button."""

    sigJumpToRank = Signal(int)
    sigShowToken = Signal(int)  # a tree node was activated: show that token instead

    FIELDS = ("id", "rank", "readable", "GPT-2 form", "bytes", "decoded", "pair count", "ties")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tok: Tokenizer | None = None
        self._store: RunStore | None = None
        self._run_id: int | None = None
        self._rule = "lexicographic"
        self._rank = -1
        self.token_id: int | None = None
        form = QFormLayout()
        self.labels: dict[str, QLabel] = {}
        for name in self.FIELDS:
            label = QLabel("—", self)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setWordWrap(True)
            self.labels[name] = label
            form.addRow(name, label)
        self.jump_button = QPushButton("Show in merge list", self, enabled=False)
        self.jump_button.clicked.connect(lambda: self.sigJumpToRank.emit(self._rank))
        self.tree_model = QStandardItemModel(self)
        self.tree_model.setHorizontalHeaderLabels(["merge tree"])
        self.tree = QTreeView(self)
        self.tree.setModel(self.tree_model)
        self.tree.activated.connect(self._on_tree_activated)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.jump_button)
        layout.addWidget(self.tree, 1)

    def set_source(
        self, tok: Tokenizer | None, store: RunStore | None = None, run_id: int | None = None
    ) -> None:
        same_run = store is self._store and run_id == self._run_id and run_id is not None
        self._tok, self._store, self._run_id = tok, store, run_id
        if same_run:  # a replay or the scrubber: the run's rule is known, no query per step
            self.clear()
            return
        self._rule = "lexicographic"
        if store is not None and run_id is not None:
            self._rule = str(store.get_run(run_id).settings.get("tie_break", "lexicographic"))
        self.clear()

    def clear(self) -> None:
        self.token_id = None
        for label in self.labels.values():
            label.setText("—")
        self.tree_model.removeRows(0, self.tree_model.rowCount())
        self.jump_button.setEnabled(False)

    def show_token(self, tid: int) -> None:
        tok = self._tok
        if tok is None or tid == self.token_id:
            return
        self.token_id = tid
        raw = token_bytes(tok, tid)
        is_special = tid in tok.special_tokens.values()
        self._rank = -1 if is_special or tid not in tok.vocab else tok.token_rank(tid)
        rank_text = "special token" if is_special else ("single byte" if self._rank < 0 else "")
        values = {
            "id": str(tid),
            "rank": rank_text
            or f"{self._rank:,} (merge {self._rank + 1:,} of {len(tok.merges):,})",
            "readable": readable(raw),
            "GPT-2 form": to_mapped(raw),
            "bytes": raw.hex(" ").upper(),
            "decoded": repr(raw.decode("utf-8", "backslashreplace")),
            "pair count": "—",
            "ties": "—",
        }
        merge = self._stored_merge(tid)
        if merge is not None:
            values["pair count"] = f"{merge.count:,}"
            values["ties"] = ties_text(merge.ties, self._rule)
        elif self._rank >= 0:
            values["pair count"] = "not recorded (not a stored run)"
        for name, value in values.items():
            self.labels[name].setText(value)
        self.jump_button.setEnabled(self._rank >= 0)
        self.tree_model.removeRows(0, self.tree_model.rowCount())
        self.tree_model.appendRow(build_tree_item(tok, tid))
        self.tree.expandAll()

    def _stored_merge(self, tid: int):
        if self._store is None or self._run_id is None or self._rank < 0:
            return None
        return self._store.merge_by_id(self._run_id, tid)

    def _on_tree_activated(self, index: QModelIndex) -> None:
        tid = index.data(ID_ROLE)
        if tid is not None:
            self.sigShowToken.emit(int(tid))
