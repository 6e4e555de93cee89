"""Compare tokenizers side by side on one text: counts, and the places where they cut differently.

Entry 0 is the tokenizer the panel shows (this run, or a prefix of it); more come from another
stored run or a tokenizer file (GPT-2's vocab.json + merges.txt, tokenizer.json, .tiktoken, ...).
A token is marked (bold, wavy underline) when one of its edges is not a cut of every other
tokenizer: `differing_tokens` in `encoded.py`. Loading files and encoding run in `JobLane`s.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.elided_label import fit_width
from workbench.gui.table_model import ListTableModel
from workbench.gui.tokens.encoded import Encoded, TokenTable, differing_tokens, encode_text
from workbench.gui.tokens.highlight import TokenHighlighter
from workbench.gui.tokens.jobs import TOKENS_GATE, JobLane
from workbench.gui.tokens.reference_menu import ReferenceButton
from workbench.gui.tokens.tokens_view import to_display
from workbench.store import RunStore

_HEADERS = ("tokenizer", "tokens", "bytes/token", "tokens cut differently")
COL_NAME, COL_TOKENS, COL_PER, COL_DIFF = range(4)


@dataclass
class CompareRow:
    label: str
    tokenizer: Tokenizer
    encoded: Encoded | None = None
    differs: np.ndarray | None = None
    run_id: int | None = None  # the stored run it was made from (dropped when it is deleted)


def compare_texts(
    rows: list[tuple[str, TokenTable]], text: str
) -> list[tuple[Encoded, np.ndarray]]:
    """Encode `text` with every table and mark each one's tokens that others cut differently."""
    encoded = [encode_text(table, text) for _, table in rows]
    return [
        (enc, differing_tokens(enc, [o for j, o in enumerate(encoded) if j != i]))
        for i, enc in enumerate(encoded)
    ]


class CompareModel(ListTableModel):
    """One row per tokenizer: its label, token count, bytes/token, tokens cut differently."""

    headers = _HEADERS

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[CompareRow] = []

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ):
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        row = self.rows[index.row()]
        enc = row.encoded
        col = index.column()
        if col == COL_NAME:
            return row.label
        if enc is None:
            return "…"
        if col == COL_TOKENS:
            return f"{len(enc):,}"
        if col == COL_PER:
            return f"{enc.bytes_per_token:.2f}"
        if col == COL_DIFF:
            n = int(row.differs.sum()) if row.differs is not None else 0
            share = 100 * n / len(enc) if len(enc) else 0.0
            return f"{n:,} ({share:.0f}%)"
        return None

    def set_rows(self, rows: list[CompareRow]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def refresh_values(self) -> None:
        if self.rows:
            self.dataChanged.emit(
                self.index(0, 0), self.index(len(self.rows) - 1, len(_HEADERS) - 1)
            )


class _Pane(QWidget):
    """One tokenizer's read-only coloured copy of the text."""

    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(f"<b>{html.escape(label)}</b>", self)
        self.edit = QPlainTextEdit(self, readOnly=True)
        self.highlighter = TokenHighlighter(self.edit.document())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.edit, 1)


class CompareView(QWidget):
    """Side-by-side comparison; the panel calls `set_primary` and `set_text`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._store: RunStore | None = None
        self._text = ""
        self._tables: dict[int, TokenTable] = {}
        self.model = CompareModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setMaximumHeight(96)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.runs = QComboBox(self)
        self.add_run_button = QPushButton("Add run", self)
        self.add_run_button.clicked.connect(self._add_selected_run)
        self.add_file_button = QPushButton("Add tokenizer file…", self)
        self.add_file_button.clicked.connect(self._add_file_dialog)
        self.reference_button = ReferenceButton("Add reference", self)
        self.reference_button.sigChosen.connect(self.add_reference)
        self.remove_button = QPushButton("Remove", self)
        self.remove_button.clicked.connect(self._remove_selected)
        self.status = QLabel("", self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # file names, load errors
        fit_width(self.status)  # a long line is cut, never widens the window
        self.panes = QSplitter(Qt.Orientation.Horizontal, self)
        bar = QHBoxLayout()
        for w in (
            self.runs,
            self.add_run_button,
            self.reference_button,
            self.add_file_button,
            self.remove_button,
        ):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table)
        layout.addWidget(self.panes, 1)
        self._lane = JobLane(self, gate=TOKENS_GATE)
        self._lane.sigResult.connect(self._on_encoded)
        self._lane.sigError.connect(self.status.setText)
        self._lane.sigWaiting.connect(self.status.setText)
        self._loader = JobLane(self)
        self._loader.sigResult.connect(lambda r: self.add_tokenizer(*r))
        self._loader.sigError.connect(lambda m: self.status.setText(f"cannot load: {m}"))

    # ----- API ------------------------------------------------------------------------------

    @property
    def rows(self) -> list[CompareRow]:
        return self.model.rows

    def set_store(self, store: RunStore | None) -> None:
        self._store = store
        self.runs.clear()
        self.runs.setEnabled(store is not None)
        self.add_run_button.setEnabled(store is not None)
        if store is not None:
            for run in store.list_runs():
                self.runs.addItem(f"#{run.id} {run.name} ({run.vocab_size:,})", run.id)

    def set_primary(self, label: str, tok: Tokenizer, run_id: int | None = None) -> None:
        rows = list(self.rows)
        row = CompareRow(label, tok, run_id=run_id)
        if rows:
            rows[0] = row
        else:
            rows.append(row)
        self._set_rows(rows)

    def add_tokenizer(self, label: str, tok: Tokenizer) -> None:
        self._set_rows([*self.rows, CompareRow(label, tok)])

    def add_file(self, path: str | Path) -> None:
        """Load a tokenizer file in the background, then add it."""
        path = Path(path)
        self.status.setText(f"loading {path.name}…")
        self._loader.submit(lambda: (path.name, formats.load(path)))

    def add_reference(self, name: str) -> None:
        """Add a built-in reference (gpt2, cl100k, o200k), loaded in the background."""
        from workbench.evaluate.references import load_reference

        self.status.setText(f"loading {name}…")
        self._loader.submit(lambda: (name, load_reference(name)))

    def add_run(self, run_id: int) -> None:
        store = self._store
        if store is None:
            return
        from workbench.store.tokenizer_of_run import tokenizer_of_run

        run = store.get_run(run_id)
        row = CompareRow(
            f"run #{run.id} {run.name}", tokenizer_of_run(store, run_id), run_id=run_id
        )
        self._set_rows([*self.rows, row])

    def forget_run(self, run_id: int) -> None:
        """Run `run_id` was deleted: its rows go (the primary too), and the run list follows."""
        rows = [r for r in self.rows if r.run_id != run_id]
        if self.rows and self.rows[0].run_id == run_id:
            rows = []  # the others were compared with it; with it gone, start afresh
        if rows != self.rows:
            self._set_rows(rows)
        self.set_store(self._store)

    def remove(self, row: int) -> None:
        if 0 < row < len(self.rows):  # the primary stays
            rows = list(self.rows)
            del rows[row]
            self._set_rows(rows)

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._encode()

    def busy(self) -> bool:
        return self._lane.busy() or self._loader.busy()

    def shutdown(self) -> None:
        self._loader.shutdown()
        self._lane.shutdown()

    # ----- internals --------------------------------------------------------------------------

    def _set_rows(self, rows: list[CompareRow]) -> None:
        self.model.set_rows(rows)
        while self.panes.count() > len(rows):
            self.panes.widget(self.panes.count() - 1).deleteLater()
            self.panes.widget(self.panes.count() - 1).setParent(None)
        for i, row in enumerate(rows):
            if i < self.panes.count():
                self.panes.widget(i).title.setText(f"<b>{html.escape(row.label)}</b>")
            else:
                self.panes.addWidget(_Pane(row.label, self.panes))
        self._encode()

    def _encode(self) -> None:
        rows, text = list(self.rows), self._text
        if not rows:
            return
        self.status.setText("encoding…")
        alive = self._table_keys()
        for key in [k for k in self._tables if k not in alive]:
            del self._tables[key]
        # The job gets its own dict: the UI thread owns `_tables` (a job still running from an
        # earlier edit must not add to it while this thread reads it) and adds the job's new
        # tables when its result arrives.
        known = dict(self._tables)

        def job() -> tuple[
            list[CompareRow], list[tuple[Encoded, np.ndarray]], dict[int, TokenTable]
        ]:
            named = []
            for r in rows:
                table = known.get(id(r.tokenizer))
                if table is None:
                    table = known[id(r.tokenizer)] = TokenTable(r.tokenizer)
                named.append((r.label, table))
            return rows, compare_texts(named, text), known

        self._lane.submit(job, patterns=tuple(dict.fromkeys(r.tokenizer.pattern for r in rows)))

    def _table_keys(self) -> set[int]:
        """The keys of `_tables` the rows shown now use (by tokenizer identity)."""
        return {id(r.tokenizer) for r in self.rows}

    def _on_encoded(self, result) -> None:
        rows, pairs, known = result
        alive = self._table_keys()
        for key, table in known.items():
            if key in alive:
                self._tables.setdefault(key, table)
        if rows != self.rows:
            return
        for i, (row, (enc, differs)) in enumerate(zip(rows, pairs, strict=True)):
            row.encoded, row.differs = enc, differs
            pane = self.panes.widget(i)
            pane.edit.setPlainText(to_display(enc.text))
            pane.highlighter.set_encoded(enc, differs)
        self.model.refresh_values()
        self.status.setText(
            "bold, wavy underline: a token edge the other tokenizers do not cut at"
            if len(rows) > 1
            else ""
        )

    def _add_selected_run(self) -> None:
        run_id = self.runs.currentData()
        if run_id is not None:
            self.add_run(int(run_id))

    def _add_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a tokenizer file", "", "Tokenizers (*.json *.txt *.tiktoken *.model)"
        )
        if path:
            self.add_file(path)

    def _remove_selected(self) -> None:
        index = self.table.currentIndex()
        if index.isValid():
            self.remove(index.row())
