"""Corpus drill-down: where one token occurs in the corpus -- lines in context, counts per file.

`find_token` (no Qt) reads each file with the trainer's readers (`engine.corpus_lines`, so
compressed and JSONL corpora are read as text), keeps only lines holding the token's bytes (a token can only
occur where its bytes do), encodes those lines and counts the lines' tokens equal to the id. Lines
are encoded one by one, so a whitespace token that would span a newline in the whole document is
counted per line: a documented approximation that keeps memory flat on big corpora. It runs in a
`JobLane` thread and stops early when a newer request or `shutdown()` sets its cancel event.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QLabel, QListWidget, QSplitter, QTableView, QVBoxLayout, QWidget

from workbench.display import show_whitespace
from workbench.engine.corpus.lines import corpus_lines
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import CorpusError
from workbench.gui.table_model import ListTableModel
from workbench.gui.tokens.jobs import JobLane
from workbench.store import readable

CONTEXT_LIMIT = 200
CONTEXT_CHARS = 50
_HEADERS = ("file", "occurrences", "lines")


@dataclass
class DrillResult:
    token_id: int
    per_file: list[tuple[str, int, int]] = field(default_factory=list)  # path, count, lines
    contexts: list[str] = field(default_factory=list)
    total: int = 0
    cancelled: bool = False


def _context(line: str, spans: list[tuple[int, int]]) -> str:
    """The line around its first occurrence, occurrences marked «like this»."""
    a, b = spans[0]
    left = max(0, a - CONTEXT_CHARS)
    right = min(len(line), b + CONTEXT_CHARS)
    marked, pos = [], left
    for s, e in spans:
        if s < left or e > right:
            continue
        marked += [line[pos:s], "«", line[s:e], "»"]
        pos = e
    marked.append(line[pos:right])
    text = show_whitespace("".join(marked), keep=" ")
    return ("…" if left else "") + text + ("…" if right < len(line) else "")


def find_token(
    tok: Tokenizer, tid: int, paths: Iterable[str | Path], cancel: threading.Event | None = None
) -> DrillResult:
    """Occurrences of token `tid` in the files under `paths` (see the module docstring)."""
    result = DrillResult(tid)
    needle = tok.decode_bytes([tid])
    current: Path | None = None
    count = lines = 0

    def close_file() -> None:
        if current is not None:
            result.per_file.append((str(current), count, lines))
            result.total += count

    for path, line in corpus_lines(paths):
        if path != current:
            close_file()
            current, count, lines = path, 0, 0
        if cancel is not None and cancel.is_set():
            result.cancelled = True
            return result
        if isinstance(line, CorpusError):
            result.contexts.append(f"{path.name}: not read ({line})")
            continue
        if needle not in line.encode("utf-8"):
            continue
        spans = [
            (s.char_start, s.char_end)
            for s in tok.encode_with_spans(line, allowed_special="all")
            if s.id == tid
        ]
        if not spans:
            continue
        count += len(spans)
        lines += 1
        if len(result.contexts) < CONTEXT_LIMIT:
            result.contexts.append(f"{path.name}: {_context(line, spans)}")
    close_file()
    return result


class FileCountsModel(ListTableModel):
    """Rows: corpus files with the token's occurrences and the lines holding it."""

    headers = _HEADERS

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, int, int]] = []

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ):
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        path, count, lines = self.rows[index.row()]
        return (Path(path).name, f"{count:,}", f"{lines:,}")[index.column()]

    def set_rows(self, rows: list[tuple[str, int, int]]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()


class DrillDown(QWidget):
    """`show_token(tok, tid)` starts a search; `sigResult`-driven; `result` is the last answer."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._paths: list[str] = []
        self.result: DrillResult | None = None
        self._searching = ""
        self.summary = QLabel("no corpus files (set them in the corpus panel)", self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # a token's text, file errors
        self.model = FileCountsModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.contexts = QListWidget(self)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.table)
        split.addWidget(self.contexts)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        self._lane = JobLane(self)
        self._lane.sigResult.connect(self._on_result)
        self._lane.sigError.connect(self.summary.setText)
        # The encoder compiling on a first use: named (and counted down) in place of the search.
        self._lane.sigWaiting.connect(self._on_waiting)

    def set_corpus_paths(self, paths: Iterable[str | Path]) -> None:
        self._paths = [str(p) for p in paths]

    def show_token(self, tok: Tokenizer, tid: int) -> None:
        if not self._paths:
            return
        paths = list(self._paths)
        self._searching = f"searching the corpus for {readable(tok.decode_bytes([tid]))}"
        self.summary.setText(f"{self._searching}…")
        self._lane.submit(
            lambda cancel: find_token(tok, tid, paths, cancel),
            cancellable=True,
            patterns=(tok.pattern,),
        )

    def busy(self) -> bool:
        return self._lane.busy()

    def shutdown(self) -> None:
        self._lane.shutdown()

    def _on_waiting(self, line: str) -> None:
        self.summary.setText(f"{line}; then {self._searching}")

    def _on_result(self, result: DrillResult) -> None:
        self.result = result
        self.model.set_rows(result.per_file)
        self.contexts.clear()
        self.contexts.addItems(result.contexts)
        shown = len(result.contexts)
        self.summary.setText(
            f"token {result.token_id}: {result.total:,} occurrences in {len(result.per_file)} "
            f"files (first {shown} lines shown)"
        )
