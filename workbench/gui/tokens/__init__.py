"""Token inspection: how a tokenizer cuts a text, token by token (issue 6).

`TokensPanel` assembles the parts for the main window: the Tokens view (`tokens_view`), token
details with merge tree and ties (`token_details`), the vocabulary scrubber (`scrubber`), the
side-by-side comparison (`compare`), the corpus drill-down (`drilldown`), export with a
round-trip check (`export_dialog`) and share as HTML/PNG (`share`). The window needs only
`set_tokenizer`, `set_corpus_paths`, `sigJumpToRank` and `shutdown` (call it before closing).
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.elided_label import fit_width
from workbench.gui.paint_turns import TurnJob
from workbench.gui.tokens.compare import CompareView
from workbench.gui.tokens.drilldown import DrillDown
from workbench.gui.tokens.encoded import Encoded, TokenTable, encode_text
from workbench.gui.tokens.export_dialog import ExportDialog
from workbench.gui.tokens.jobs import TOKENS_GATE, JobLane
from workbench.gui.tokens.reference_menu import ReferenceButton
from workbench.gui.tokens.scrubber import Scrubber
from workbench.gui.tokens.share import save_html, save_png
from workbench.gui.tokens.strip import Strip, build_strip
from workbench.gui.tokens.token_details import TokenDetails
from workbench.gui.tokens.tokens_view import TokensView
from workbench.store import RunStore

_BuiltStrip = tuple[tuple[bool, bool, bool], Strip]  # the strip's options, and the strip

SAMPLE_CHARS = 4000  # text the export dialog checks the round trip on, besides its own


class TokensPanel(QWidget):
    """The "Tokens" tab. `sigJumpToRank(rank)` asks the window to show a merge in its list."""

    sigJumpToRank = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._base: Tokenizer | None = None
        self._label = ""
        self._store: RunStore | None = None
        self._run_id: int | None = None
        self._compare_dirty = True
        self.export_dialog: ExportDialog | None = None
        self.source = QLabel("no tokenizer: train a run or open a tokenizer file", self)
        # Rich text (the name in bold), so every name or message in it is escaped.
        self.source.setTextFormat(Qt.TextFormat.RichText)
        fit_width(self.source)
        self.open_button = QPushButton("Open tokenizer…", self)
        self.reference_button = ReferenceButton("Reference", self)
        self.export_button = QPushButton("Export…", self, enabled=False)
        self.share_button = QPushButton("Share HTML + PNG…", self, enabled=False)
        self.view = TokensView(self)
        self.scrubber = Scrubber(self)
        self.details = TokenDetails(self)
        self.compare = CompareView(self)
        self.drilldown = DrillDown(self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.view, "Split")
        self.tabs.addTab(self.compare, "Compare")
        side = QTabWidget(self)
        side.addTab(self.details, "Token")
        side.addTab(self.drilldown, "In the corpus")
        self.side_tabs = side
        self._loader = JobLane(self)
        # Cutting the text at k merges (the prefix's tables, then the encode) runs here, off the
        # UI thread; one cut at a time, and of the ks asked meanwhile only the newest is kept.
        self._cutter = JobLane(self, gate=TOKENS_GATE)
        self._cutting = False
        self._pending_rank: int | None = None
        # A cut is shown in an event-loop turn of its own (`paint_turns`), not in the one the
        # merge list or the charts paint in; the newest cut waiting to be shown.
        self._cut_to_show: tuple | None = None
        self._show_cut_job = TurnJob(self._show_cut, self)
        self._layout(side)
        self._connect()

    def _layout(self, side: QTabWidget) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.source, 1)
        for button in (
            self.open_button,
            self.reference_button,
            self.export_button,
            self.share_button,
        ):
            bar.addWidget(button)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.tabs)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.scrubber)
        layout.addWidget(split, 1)

    def _connect(self) -> None:
        self.open_button.clicked.connect(self._open_dialog)
        self.reference_button.sigChosen.connect(self.open_reference)
        self.export_button.clicked.connect(self.open_export_dialog)
        self.share_button.clicked.connect(self._share_dialog)
        self.view.sigEncoded.connect(self._on_encoded)
        self.view.sigTokenHovered.connect(self._on_hover)
        self.view.sigTokenClicked.connect(self._on_click)
        self.scrubber.sigRankChanged.connect(self.set_rank)
        self.details.sigJumpToRank.connect(self.sigJumpToRank)
        self.details.sigShowToken.connect(self._show_token)
        self.tabs.currentChanged.connect(lambda _: self._sync_compare())
        self._loader.sigResult.connect(lambda r: self.set_tokenizer(*r))
        self._loader.sigError.connect(
            lambda m: self.source.setText(f"cannot open: {html.escape(m)}")
        )
        self._cutter.sigResult.connect(self._on_cut)
        self._cutter.sigError.connect(self._on_cut_failed)

    # ----- the window's API ---------------------------------------------------------------------

    def set_tokenizer(
        self,
        tok: Tokenizer,
        source_label: str,
        store: RunStore | None = None,
        run_id: int | None = None,
    ) -> None:
        """Inspect `tok` (a finished or paused run, or an imported file)."""
        self._base, self._label = tok, source_label
        self._store, self._run_id = store, run_id
        # A run's or a file's name is the user's text: shown as it is, never as markup.
        self.source.setText(
            f"<b>{html.escape(source_label)}</b> — {len(tok.merges):,} merges,"
            f" vocab {tok.vocab_size:,}"
        )
        self.scrubber.set_tokenizer(tok)
        self.details.set_source(tok, store, run_id)
        self.compare.set_store(store)
        self.compare.set_primary(source_label, tok, run_id)
        self.view.set_tokenizer(tok)
        self.export_button.setEnabled(True)
        self.share_button.setEnabled(True)

    def forget_run(self, run_id: int) -> None:
        """Run `run_id` was deleted: nothing of it stays on show, here or in Compare."""
        self.compare.forget_run(run_id)
        if self._run_id != run_id:
            return
        self._base, self._label, self._store, self._run_id = None, "", None, None
        self.view.set_tokenizer(None)
        self.scrubber.set_tokenizer(None)
        self.details.set_source(None)
        self.export_button.setEnabled(False)
        self.share_button.setEnabled(False)
        self.source.setText(f"run {run_id} was deleted: train a run or open a tokenizer file")

    def set_corpus_paths(self, paths) -> None:
        self.drilldown.set_corpus_paths(paths)

    def set_text(self, text: str) -> None:
        self.view.set_text(text)

    def set_rank(self, k: int) -> None:
        """Show the tokenizer of the first `k` merges (the scrubber calls this).

        The prefix, its tables and the re-cut text are made in the background; asked again
        while a cut runs, only the newest `k` is cut next, so a playing replay shows the
        newest state it can and the UI thread only paints."""
        if self._base is None:
            return
        if self._cutting:
            self._pending_rank = k
            return
        base, text, options = self._base, self.view.text(), self.view.strip_options()
        self._cutting, self._pending_rank = True, None

        def job() -> tuple[Tokenizer, int, Tokenizer, TokenTable, Encoded, _BuiltStrip]:
            shown = base if k >= len(base.merges) else base.prefix(k)
            table = TokenTable(shown)
            encoded = encode_text(table, text)
            strip = build_strip(encoded, table.bytes_of, *options)
            return base, k, shown, table, encoded, (options, strip)

        self._cutter.submit(job)

    def show_rank(self, k: int) -> None:
        """The scrubber's slider moves to `k` without its debounce, and the text is re-cut."""
        self.scrubber.show_rank(k)
        self.set_rank(k)

    def open_tokenizer_file(self, path: str | Path) -> None:
        """Load a tokenizer file in the background and inspect it."""
        path = Path(path)
        self.source.setText(f"opening {html.escape(path.name)}…")
        self._loader.submit(lambda: (formats.load(path), path.name))

    def open_reference(self, name: str) -> None:
        """Inspect a built-in reference (gpt2, cl100k, o200k), loaded in the background."""
        from workbench.evaluate.references import load_reference

        self.source.setText(f"opening {name}…")
        self._loader.submit(lambda: (load_reference(name), name))

    def open_export_dialog(self) -> ExportDialog | None:
        if self._base is None:
            return None
        self.export_dialog = ExportDialog(self._base, self.view.text()[:SAMPLE_CHARS], parent=self)
        self.export_dialog.show()
        return self.export_dialog

    def share(self, html_path: str | Path) -> tuple[Path, Path]:
        """Write the current split as HTML and, beside it, PNG; returns both paths."""
        tok = self.view.tokenizer or self._base
        if tok is None:
            raise ValueError("no tokenizer to draw with")
        html_path = Path(html_path)
        text = self.view.text()
        title = self._label
        return save_html(tok, text, html_path, title), save_png(
            tok, text, html_path.with_suffix(".png"), title
        )

    @property
    def base_tokenizer(self) -> Tokenizer | None:
        """The whole tokenizer on show (a replay cuts prefixes of it)."""
        return self._base

    @property
    def run_id(self) -> int | None:
        """The stored run whose tokenizer the panel shows (None: a file or a reference)."""
        return self._run_id

    def painting(self) -> bool:
        """A cut under way, or its colours still being laid on the text or the strip: the
        UI thread has turns of work coming here (a replay moves other views meanwhile)."""
        view = self.view
        return (
            self._cutting
            or self._show_cut_job.pending()
            or view.strip_pending()
            or view.highlighter.pending()
            or view.strip_highlighter.pending()
        )

    def busy(self) -> bool:
        parts = (self.view, self.scrubber, self.compare, self.drilldown, self._loader)
        cutting = self._cutting or self._show_cut_job.pending()
        return cutting or any(p.busy() for p in (*parts, self._cutter))

    def shutdown(self) -> None:
        """Wait for every background job of the panel; call before the window closes."""
        self._show_cut_job.cancel()
        parts = (self.view, self.scrubber, self.compare, self.drilldown, self._loader)
        for part in (*parts, self._cutter):
            part.shutdown()
        if self.export_dialog is not None:
            self.export_dialog.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self.shutdown()
        super().closeEvent(event)

    # ----- internals ----------------------------------------------------------------------------

    def _on_cut(
        self, result: tuple[Tokenizer, int, Tokenizer, TokenTable, Encoded, _BuiltStrip]
    ) -> None:
        self._cutting = False
        if result[0] is self._base:  # else: another tokenizer came meanwhile; this cut is stale
            self._cut_to_show = result  # a newer cut waiting replaces an older one
            self._show_cut_job.request()
        self._next_cut()

    def _show_cut(self) -> None:
        result, self._cut_to_show = self._cut_to_show, None
        if result is None:
            return
        base, k, shown, table, enc, strip = result
        if base is not self._base:
            return
        self.view.show_cut(shown, table, enc, strip)
        self.details.set_source(shown, self._store, self._run_id)
        label = self._label if shown is base else f"{self._label} @ {k:,} merges"
        self.compare.set_primary(label, shown, self._run_id)

    def _on_cut_failed(self, message: str) -> None:
        self._cutting = False
        self.view.counts.setText(f"cannot cut at this k: {message}")  # a plain-text label
        self._next_cut()

    def _next_cut(self) -> None:
        if self._pending_rank is not None:
            self.set_rank(self._pending_rank)

    def _on_encoded(self, enc: Encoded) -> None:
        tok = self.view.tokenizer
        if tok is not None:
            k = len(tok.merges)
            self.scrubber.show_compression(k, len(enc), enc.n_bytes, tok.vocab_size)
        self.scrubber.set_text(enc.text)
        self._compare_dirty = True
        self._sync_compare()

    def _sync_compare(self) -> None:
        """The comparison encodes only while its tab is shown (it re-cuts the text N times)."""
        if self.tabs.currentWidget() is self.compare and self._compare_dirty:
            self._compare_dirty = False
            self.compare.set_text(self.view.text())

    def _on_hover(self, enc: Encoded, index: int) -> None:
        self.details.show_token(int(enc.ids[index]))

    def _on_click(self, enc: Encoded, index: int) -> None:
        self._show_token(int(enc.ids[index]))

    def _show_token(self, tid: int) -> None:
        self.details.show_token(tid)
        tok = self.view.tokenizer
        if tok is not None:
            self.drilldown.show_token(tok, tid)

    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a tokenizer file", "", "Tokenizers (*.json *.txt *.tiktoken *.model)"
        )
        if path:
            self.open_tokenizer_file(path)

    def _share_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Share the split", "split.html", "HTML (*.html)"
        )
        if path:
            written = self.share(path)
            self.source.setText("wrote " + " and ".join(p.name for p in written))


__all__ = ["TokensPanel"]
