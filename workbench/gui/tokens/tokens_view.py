"""The Tokens view: type, paste or open a text and see it cut into coloured tokens, live.

Top: the editor, coloured in place (`TokenHighlighter`). Bottom: the token strip (ids, bytes,
whitespace glyphs, split characters as groups). Above both: toggles and the counts.

The editor cannot hold a carriage return (Qt turns `\\r\\n` into a paragraph break), so the view
keeps the true text itself and shows each `\\r` as `⇤` -- one UTF-16 unit for one, so every Qt
position stays the position in the true text. Typing maps `⇤` back to `\\r`. Pasting goes
through the same mapping (a pasted `\\r\\n` keeps its `\\r`), and the view says so.

Short texts are encoded inline at once; long ones after a short pause, in a `JobLane` thread.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QTextOption
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.display import CR, GLYPH_LEGEND, NEWLINE, SPACE, TAB
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.elided_label import fit_width
from workbench.gui.paint_turns import TurnJob
from workbench.gui.tokens.encoded import Encoded, TokenTable, clean_text, encode_text
from workbench.gui.tokens.highlight import RangeHighlighter, TokenHighlighter
from workbench.gui.tokens.jobs import TOKENS_GATE, JobLane
from workbench.gui.tokens.strip import Strip, build_strip

INLINE_CHARS = 4000  # below this, encoding takes < 5 ms: no thread, no delay
DEBOUNCE_MS = 120
CR_GLYPH = CR  # one UTF-16 unit, and in the common fonts (DejaVu lacks ␍)
TEXT_TITLE = "<b>Your text</b> — type or paste; coloured by token"
STRIP_TITLE = "<b>How the tokenizer cuts it</b> — one chip per token (ids, bytes)"


def to_display(text: str) -> str:
    """True text -> what the editor holds (same UTF-16 length)."""
    return text.replace("\r", CR_GLYPH)


def from_display(raw: str) -> str:
    """`QTextDocument.toRawText()` -> true text (paragraph separators are newlines)."""
    return raw.replace("\u2029", "\n").replace(CR_GLYPH, "\r")


def format_counts(enc: Encoded) -> str:
    """The counts line: "no text" rather than a row of zeros for an empty editor."""
    if not enc.text:
        return "no text"
    return (
        f"{len(enc):,} tokens · {len(enc.text):,} chars · {enc.n_bytes:,} bytes · "
        f"{enc.bytes_per_token:.2f} bytes/token · {enc.tokens_per_word:.2f} tokens/word"
    )


# A new cut colours this long at once (~35 lines, most of the visible ones), then in slices:
# its answer's turn also lays out and colours the strip, and 8 ms here made that turn ~19 ms
# in a replay; 4 ms, ~10 ms of the UI thread's CPU with the strip's part.
CUT_SYNC_MS = 3.0


class TextInput(QPlainTextEdit):
    """The editor: a paste keeps carriage returns (as `⇤`) instead of Qt's dropping them, and
    `sigPastedCR(n)` tells the view how many it kept."""

    sigPastedCR = Signal(int)

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt override)
        if not source.hasText():
            super().insertFromMimeData(source)
            return
        text = source.text()
        self.insertPlainText(to_display(text))
        self.sigPastedCR.emit(text.count("\r"))


def _titled(title: str, widget: QWidget, parent: QWidget) -> QWidget:
    """`widget` under a one-line title, so the two text panes say which is which."""
    box = QWidget(parent)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 2, 0, 0)
    layout.setSpacing(2)
    label = QLabel(title, box)
    label.setObjectName("paneTitle")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box


class TokensView(QWidget):
    """Editor + strip + counts for one tokenizer. `sigEncoded(Encoded)` after every render;
    `sigTokenHovered(Encoded, index)` and `sigTokenClicked(Encoded, index)` for the details."""

    sigEncoded = Signal(object)
    sigTokenHovered = Signal(object, int)
    sigTokenClicked = Signal(object, int)
    sigTextChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tokenizer: Tokenizer | None = None
        self._table: TokenTable | None = None
        self._encoded: Encoded | None = None
        self._strip = Strip()
        # A strip built with the cut in the background: (its options, for which encoding, it).
        self._prebuilt: tuple[tuple[bool, bool, bool], Encoded, Strip] | None = None
        # How long the highlighter colours at once; a background cut (a replay, the scrubber)
        # may follow many others, so it colours the visible lines and leaves time for the frame.
        self._sync_ms: float | None = None
        self._requested_at = 0.0
        self._last_text = ""
        self.last_render_ms = 0.0
        self._lane = JobLane(self, gate=TOKENS_GATE)
        # The lane's jobs build the strip too, so the UI thread only paints it; an answer from
        # the lane's thread is shown in an event-loop turn of its own (`paint_turns`), one made
        # inline (a short text as it is typed) at once.
        self._lane.sigResult.connect(self._on_lane_result)
        self._submitting = False
        self._result_to_show: tuple | None = None
        self._show_job = TurnJob(self._show_lane_result, self)
        # A background answer's strip is laid out in a turn after its text's colours (each
        # ~3-5 ms: together they made one long turn); the strip built with it, kept till then.
        self._strip_job = TurnJob(self._render_strip_later, self)
        self._strip_prebuilt: tuple[tuple[bool, bool, bool], Encoded, Strip] | None = None
        self._lane.sigError.connect(self._on_error)
        self._timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._timer.timeout.connect(self.refresh)
        self._build()
        self._lane.sigWaiting.connect(self.counts.setText)  # an encoder compiling: named

    # ----- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.editor = TextInput(self)
        self.editor.sigPastedCR.connect(self._on_paste)
        self.editor.setFont(mono)
        self.editor.setPlaceholderText("Type or paste text here, or open a file…")
        self.editor.setMouseTracking(True)
        self.editor.viewport().installEventFilter(self)
        self.highlighter = TokenHighlighter(self.editor.document())
        self.editor.textChanged.connect(self._on_text_changed)
        self.strip_edit = QPlainTextEdit(self, readOnly=True)
        self.strip_edit.setFont(mono)
        self.strip_edit.setMouseTracking(True)
        self.strip_edit.viewport().installEventFilter(self)
        self.strip_highlighter = RangeHighlighter(self.strip_edit.document())
        # Left to right whatever the text: see strip.py (right-to-left text stays isolated).
        self.strip_edit.setLayoutDirection(Qt.LayoutDirection.LeftToRight)
        option = self.strip_edit.document().defaultTextOption()
        option.setTextDirection(Qt.LayoutDirection.LeftToRight)
        self.strip_edit.document().setDefaultTextOption(option)
        self.paste_note = QLabel("", self)
        self.paste_note.setObjectName("pasteNote")

        self.ids_box = QCheckBox("ids", self)
        self.glyphs_box = QCheckBox(f"whitespace {SPACE}{TAB}{NEWLINE}{CR}", self)
        self.glyphs_box.setToolTip(GLYPH_LEGEND)
        self.bytes_box = QCheckBox("bytes", self)
        for box in (self.ids_box, self.glyphs_box, self.bytes_box):
            box.toggled.connect(self._on_toggle)
        self.open_button = QPushButton("Open text…", self)
        self.open_button.clicked.connect(self._open_dialog)
        self.counts = QLabel("no tokenizer", self)
        self.counts.setTextFormat(Qt.TextFormat.PlainText)  # error messages quote the user's text
        fit_width(self.counts)
        self.counts.setTextInteractionFlags(self.counts.textInteractionFlags())

        bar = QHBoxLayout()
        bar.addWidget(self.open_button)
        for box in (self.ids_box, self.glyphs_box, self.bytes_box):
            bar.addWidget(box)
        bar.addStretch(1)
        bar.addWidget(self.counts)
        splitter = QSplitter(self)
        splitter.setOrientation(splitter.orientation().Vertical)
        splitter.addWidget(_titled(TEXT_TITLE, self.editor, self))
        splitter.addWidget(_titled(STRIP_TITLE, self.strip_edit, self))
        splitter.setSizes([300, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.paste_note)
        self.paste_note.hide()
        layout.addWidget(splitter, 1)

    # ----- public API -----------------------------------------------------------------------------

    @property
    def encoded(self) -> Encoded | None:
        return self._encoded

    @property
    def tokenizer(self) -> Tokenizer | None:
        return self._tokenizer

    @property
    def table(self) -> TokenTable | None:
        return self._table

    def text(self) -> str:
        """The true text (carriage returns included)."""
        doc = self.editor.document()
        raw = doc.toRawText()
        if raw.endswith("\u2029") and len(raw.encode("utf-16-le")) // 2 == doc.characterCount():
            raw = raw[:-1]  # the document's own final separator, not the user's
        return from_display(raw)

    def set_text(self, text: str) -> None:
        self.editor.setPlainText(to_display(text))

    def open_file(self, path: str | Path) -> None:
        data = Path(path).read_bytes()
        self.set_text(data.decode("utf-8", errors="replace"))

    def set_tokenizer(self, tokenizer: Tokenizer | None, table: TokenTable | None = None) -> None:
        """Show the text cut by `tokenizer`; `table` when the caller already built it."""
        self._tokenizer = tokenizer
        self._table = table if table is not None and table.tokenizer is tokenizer else None
        self.refresh()

    def strip_options(self) -> tuple[bool, bool, bool]:
        """What the strip shows (ids, bytes, whitespace glyphs): `build_strip`'s switches."""
        return self.ids_box.isChecked(), self.bytes_box.isChecked(), self.glyphs_box.isChecked()

    def show_cut(
        self,
        tokenizer: Tokenizer,
        table: TokenTable,
        encoded: Encoded,
        strip: tuple[tuple[bool, bool, bool], Strip] | None = None,
    ) -> None:
        """Show a cut made in the background (`encoded`: the text by `tokenizer`), with its
        strip when built there too for the options it names: this thread only paints."""
        self._tokenizer, self._table = tokenizer, table
        self._show(table, encoded, strip, CUT_SYNC_MS)

    def _show(
        self,
        table: TokenTable,
        encoded: Encoded,
        strip: tuple[tuple[bool, bool, bool], Strip] | None,
        sync_ms: float | None,
    ) -> None:
        self._prebuilt = None if strip is None else (strip[0], encoded, strip[1])
        self._sync_ms = sync_ms
        try:
            self._on_result((table, encoded))
        finally:
            self._prebuilt, self._sync_ms = None, None

    def refresh(self) -> None:
        """Encode the current text now (inline when short, else in the lane)."""
        self._timer.stop()
        tok = self._tokenizer
        if tok is None:
            self.highlighter.set_encoded(None)
            return
        text = self.text()
        table = self._table
        self._requested_at = time.perf_counter()
        options = self.strip_options()

        def job() -> tuple[TokenTable, Encoded, tuple[tuple[bool, bool, bool], Strip]]:
            t = table if table is not None else TokenTable(tok)
            encoded = encode_text(t, text)
            return t, encoded, (options, build_strip(encoded, t.bytes_of, *options))

        self._result_to_show = None  # an answer for an older text is not shown
        self._submitting = True
        try:
            self._lane.submit(
                job, inline=len(text) < INLINE_CHARS and table is not None, patterns=(tok.pattern,)
            )
        finally:
            self._submitting = False

    def _on_lane_result(self, result: tuple) -> None:
        self._result_to_show = result
        if self._submitting:
            self._show_job.cancel()
            self._show_lane_result()
        else:
            self._show_job.request()

    def _show_lane_result(self) -> None:
        result, self._result_to_show = self._result_to_show, None
        if result is not None:
            self._show(result[0], result[1], result[2], CUT_SYNC_MS)

    def strip_pending(self) -> bool:
        """The strip of the text on show is still to be laid out (a turn after its colours)."""
        return self._strip_job.pending()

    def busy(self) -> bool:
        jobs = self._show_job.pending() or self._strip_job.pending()
        return self._lane.busy() or self._timer.isActive() or jobs

    def shutdown(self) -> None:
        """Stop the timer and wait for the worker: call before the widget goes away."""
        self._timer.stop()
        self._show_job.cancel()
        self._strip_job.cancel()
        self._lane.shutdown()

    # ----- slots ------------------------------------------------------------------------------

    def _on_text_changed(self) -> None:
        if self.highlighter.colouring:
            return  # formats changed, not the text: reading the whole text would cost more
        text = self.text()
        if text == self._last_text:
            return  # the highlighter re-laid a block: formats changed, the text did not
        self._last_text = text
        self.sigTextChanged.emit()
        if self._tokenizer is None:
            return
        if self.editor.document().characterCount() < INLINE_CHARS and self._table is not None:
            self.refresh()
        else:
            self._timer.start()

    def _on_paste(self, carriage_returns: int) -> None:
        if carriage_returns:
            self.paste_note.setText(
                f"The pasted text has {carriage_returns:,} carriage return"
                f"{'s' if carriage_returns != 1 else ''} (\\r): kept, and shown as {CR_GLYPH}."
            )
            self.paste_note.show()
        else:
            self.paste_note.hide()

    def _on_toggle(self) -> None:
        opt = self.editor.document().defaultTextOption()
        flags = QTextOption.Flag(0)
        if self.glyphs_box.isChecked():
            flags = (
                QTextOption.Flag.ShowTabsAndSpaces | QTextOption.Flag.ShowLineAndParagraphSeparators
            )
        opt.setFlags(flags)
        self.editor.document().setDefaultTextOption(opt)
        self._render_strip()

    def _on_result(self, result: tuple[TokenTable, Encoded]) -> None:
        table, enc = result
        if table.tokenizer is not self._tokenizer:
            return  # answer for a tokenizer we no longer show
        self._table = table
        if enc.text != clean_text(self.text()):
            self._timer.start()  # typed meanwhile: go again
            return
        self._encoded = enc
        first = self.editor.firstVisibleBlock().blockNumber()
        self.highlighter.set_encoded(enc, first_block=first, sync_ms=self._sync_ms)
        self.counts.setText(format_counts(enc))
        if self._submitting:  # made inline, as the user types: all of it at once
            self._render_strip()
        else:
            self._strip_prebuilt = self._prebuilt
            self._strip_job.request()
        self.last_render_ms = (time.perf_counter() - self._requested_at) * 1000
        self.sigEncoded.emit(enc)

    def _on_error(self, message: str) -> None:
        self.counts.setText(f"cannot encode: {message}")

    def _render_strip_later(self) -> None:
        self._prebuilt, self._strip_prebuilt = self._strip_prebuilt, None
        try:
            self._render_strip()
        finally:
            self._prebuilt = None

    def _render_strip(self) -> None:
        self._strip_job.cancel()  # this is the newest strip
        enc, table = self._encoded, self._table
        if enc is None or table is None:
            return
        options, prebuilt = self.strip_options(), self._prebuilt
        if prebuilt is not None and prebuilt[0] == options and prebuilt[1] is enc:
            self._strip = prebuilt[2]
        else:
            self._strip = build_strip(enc, table.bytes_of, *options)
        self.strip_highlighter.clear()
        self.strip_edit.setPlainText(self._strip.text)
        first = self.strip_edit.firstVisibleBlock().blockNumber()
        self.strip_highlighter.set_ranges(self._strip.ranges, first_block=first)

    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a text file")
        if path:
            self.open_file(path)

    # ----- hover and click ----------------------------------------------------------------------

    def token_at_editor(self, position: int) -> int | None:
        enc = self._encoded
        return None if enc is None else enc.token_at_u16(position)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind in (QEvent.Type.MouseMove, QEvent.Type.MouseButtonRelease) and self._encoded:
            index = self._index_under(watched, event.position().toPoint())
            if index is not None:
                if kind == QEvent.Type.MouseMove:
                    self.sigTokenHovered.emit(self._encoded, index)
                else:
                    self.sigTokenClicked.emit(self._encoded, index)
        return super().eventFilter(watched, event)

    def _index_under(self, viewport: QObject, point) -> int | None:
        edit = self.editor if viewport is self.editor.viewport() else self.strip_edit
        cursor = edit.cursorForPosition(point)
        position = cursor.position()
        if edit.cursorRect(cursor).center().x() > point.x() and position > 0:
            position -= 1  # the click was on the character left of the nearest boundary
        if edit is self.editor:
            return self.token_at_editor(position)
        return self._strip.token_at(position)
