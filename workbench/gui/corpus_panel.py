"""The corpus tab: which files, their statistics, the most frequent pre-tokens, and a preview.

Statistics come from the worker (counting runs off the UI thread, with progress and Cancel).
The preview only splits the first few kilobytes of the first files, which is cheap enough to
redo on every keystroke of a custom pattern, so it runs here.
"""

from __future__ import annotations

import html
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from workbench.display import readable
from workbench.engine.corpus.preview import preview_text
from workbench.engine.errors import WorkbenchError
from workbench.engine.patterns.regexes import compile_pattern
from workbench.engine.patterns.specials import split_on_specials
from workbench.gui.progress_bar import LazyProgressBar
from workbench.gui.table_model import ListTableModel
from workbench.gui.worker import CorpusReport

PREVIEW_FILES = 3
PREVIEW_CHARS = 1500
PIECE_COLOURS = ("#264653", "#2a4d69", "#3d405b", "#4a3f5c", "#1d4e4e", "#4d3b3b")
_INDEX = QModelIndex | QPersistentModelIndex


def _walk_sorted(folder: Path) -> Iterator[Path]:
    """Files under `folder` in sorted order, lazily (a huge folder is never listed whole)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _walk_sorted(Path(entry.path))
        elif entry.is_file():
            yield Path(entry.path)


def first_files(paths: list[Path], n: int = PREVIEW_FILES) -> list[Path]:
    """The first `n` files, looking inside folders (sorted, so the preview is stable)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += itertools.islice(_walk_sorted(path), n - len(found))
        elif path.is_file():
            found.append(path)
        if len(found) >= n:
            break
    return found[:n]


def read_head(path: Path, chars: int = PREVIEW_CHARS) -> str:
    """The first `chars` characters of a text file (invalid bytes replaced: preview only)."""
    packed = preview_text(path, chars)  # compressed, Parquet or Arrow: their text, not bytes
    if packed is not None:
        return packed
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read(chars)
    except OSError as exc:
        return f"(cannot read {path.name}: {exc.strerror})"


def preview_html(texts: list[str], pattern: str, specials: tuple[str, ...] = ()) -> str:
    """Each text split into pre-tokens, pieces on alternating backgrounds, whitespace visible.

    preview_html(["a b"], "gpt2") holds the pieces "a" and "·b" as two spans.
    """
    compiled = compile_pattern(pattern)
    out = []
    for text in texts:
        spans = []
        for stretch in split_on_specials(text, specials):
            for i, piece in enumerate(compiled.findall(stretch)):
                shown = html.escape(readable(piece.encode("utf-8")))
                colour = PIECE_COLOURS[i % len(PIECE_COLOURS)]
                spans.append(f'<span style="background:{colour}">{shown}</span>')
                if piece.endswith("\n"):
                    spans.append("<br>")
        out.append("".join(spans))
    body = '<hr style="border-color:#555">'.join(out)
    return f'<div style="font-family: monospace; color: #f1f1f1; line-height: 150%">{body}</div>'


class TopPiecesModel(ListTableModel):
    """The corpus's most frequent pre-tokens: rank, piece (readable), count."""

    headers = ("#", "pre-token", "count")

    def set_pieces(self, pieces: list[tuple[bytes, int]] | tuple[tuple[bytes, int], ...]) -> None:
        self.set_rows(pieces)

    def data(self, index: _INDEX, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or role not in (
            Qt.ItemDataRole.DisplayRole,
            Qt.ItemDataRole.TextAlignmentRole,
        ):
            return None
        piece, count = self.rows[index.row()]
        if role == Qt.ItemDataRole.TextAlignmentRole:
            left = index.column() == 1
            return int(Qt.AlignmentFlag.AlignLeft if left else Qt.AlignmentFlag.AlignRight)
        return (str(index.row() + 1), readable(piece), f"{count:,}")[index.column()]


class CorpusPanel(QWidget):
    """Statistics, top pre-tokens and preview for the current corpus."""

    sigOpenFiles = Signal()
    sigOpenFolder = Signal()
    sigCancel = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.paths: list[Path] = []
        self.title = QLabel("No corpus")
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # it names files and folders
        self.title.setWordWrap(True)
        self.title.setObjectName("corpusTitle")
        open_files = QPushButton("Open files…")
        open_folder = QPushButton("Open folder…")
        open_files.setToolTip(
            "Open corpus files: text, JSONL, Parquet, Arrow, compressed (.gz, .zst) (Ctrl+O)"
        )
        open_folder.setToolTip("Open a folder: every readable file under it is the corpus")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        self.progress = LazyProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        open_files.clicked.connect(self.sigOpenFiles)
        open_folder.clicked.connect(self.sigOpenFolder)
        self.cancel.clicked.connect(self.sigCancel)

        self.stats: dict[str, QLabel] = {}
        form = QFormLayout()
        for key, label in (
            ("files", "Files"),
            ("documents", "Documents"),
            ("bytes", "Bytes"),
            ("pieces", "Pre-tokens"),
            ("unique_pieces", "Unique pre-tokens"),
            ("seconds", "Counted in"),
            ("skipped", "Skipped"),
        ):
            self.stats[key] = QLabel("–")
            self.stats[key].setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            form.addRow(label, self.stats[key])
        self.top_model = TopPiecesModel(self)
        self.top_view = QTableView()
        self.top_view.setModel(self.top_model)
        self.top_view.verticalHeader().hide()
        self.top_view.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.preview = QTextBrowser()
        self.preview.setStyleSheet("background: #12161f")

        buttons = QHBoxLayout()
        for button in (open_files, open_folder, self.cancel):
            buttons.addWidget(button)
        buttons.addWidget(self.progress, 1)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addLayout(form)
        left_layout.addWidget(QLabel("Most frequent pre-tokens"))
        left_layout.addWidget(self.top_view, 1)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(QLabel("Pre-tokenization preview (first documents)"))
        right_layout.addWidget(self.preview, 1)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(buttons)
        layout.addWidget(split, 1)

    def set_paths(self, paths: list[Path], title: str) -> None:
        self.paths = list(paths)
        self.title.setText(title)
        self.top_model.set_pieces([])
        for label in self.stats.values():
            label.setText("–")

    def set_counting(self, counting: bool) -> None:
        self.cancel.setEnabled(counting)
        if counting:
            self.progress.setRange(0, 0)  # busy until the first progress report
            self.progress.setFormat("counting…")
        else:
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
            self.progress.setFormat("")

    def set_progress(self, done: int, total: int) -> None:
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setFormat(f"counting… {100 * done // total}%")

    def show_report(self, report: CorpusReport) -> None:
        self.set_counting(False)
        s = self.stats
        s["files"].setText(f"{report.files:,}")
        s["documents"].setText(f"{report.documents:,}")
        s["bytes"].setText(f"{report.bytes:,}")
        s["pieces"].setText(f"{report.pieces:,}")
        s["unique_pieces"].setText(f"{report.unique_pieces:,}")
        s["seconds"].setText(f"{report.seconds:.2f} s")
        s["skipped"].setText("\n".join(report.skipped) if report.skipped else "none")
        self.top_model.set_pieces(report.top)

    def update_preview(self, pattern: str, specials: tuple[str, ...] = ()) -> None:
        texts = [read_head(p) for p in first_files(self.paths)]
        try:
            self.preview.setHtml(preview_html(texts, pattern, specials))
        except WorkbenchError as exc:
            self.preview.setPlainText(str(exc))
