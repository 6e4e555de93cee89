"""Colours tokens in a QTextDocument through QSyntaxHighlighter, one block (line) at a time.

Why a highlighter and not ExtraSelections or cursor formats: the highlighter's formats are layout
overlays, so the text (and the undo stack of an editor the user types in) is untouched, and Qt
calls `highlightBlock` for a changed line only. Positions are UTF-16 (`QTextBlock.position()`),
which is why `Encoded` carries `u16_start`/`u16_end`.

While the text differs from what was encoded (the user is typing, the worker has not answered
yet), blocks stay plain rather than take colours that would land on the wrong characters.
"""

from __future__ import annotations

import bisect
import time

import numpy as np
from PySide6.QtGui import QSyntaxHighlighter, QTextDocument

from workbench.gui.paint_turns import TURNS, TurnJob
from workbench.gui.tokens.colors import token_format
from workbench.gui.tokens.encoded import Encoded


class TokenHighlighter(QSyntaxHighlighter):
    """Backgrounds by token id over a document whose text is `encoded.text`.

    A 100 KB text has ~450 blocks and ~25k tokens: colouring all of it takes ~120 ms of Python,
    more than half the re-render budget. So `set_encoded` colours from the first visible block
    on for `SYNC_MS`, and the rest in `SLICE_MS` slices from a zero-delay timer: what the user
    sees is coloured at once, the rest a few event-loop turns later (`pending()` says if any).
    """

    SYNC_MS = 20.0
    # Its slices share event-loop turns with the strip's (`RangeHighlighter`) and the charts'
    # paints: 12 ms made 40-60 ms turns; 6 ms still ran to ~11 ms (the budget is checked per
    # line, and Qt lays the last one out after it); 4 ms and the strip's 4 made replay turns
    # of 18-20 ms of the UI thread's CPU with the rest of a frame, so 3.
    SLICE_MS = 3.0
    colouring = False  # True while this highlighter re-formats blocks (no text changes then)

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._encoded: Encoded | None = None
        self._lists: tuple[list, ...] = ()
        self._queue: list[int] = []  # block numbers still to colour
        # The rest is coloured a slice at a time in turns of their own (`paint_turns`).
        self._job = TurnJob(self._slice, self)

    @property
    def encoded(self) -> Encoded | None:
        return self._encoded

    def set_encoded(
        self,
        encoded: Encoded | None,
        differs: np.ndarray | None = None,
        first_block: int = 0,
        sync_ms: float | None = None,
    ) -> None:
        """Show `encoded` (None: plain); `differs` marks tokens cut differently elsewhere;
        `sync_ms`: how long to colour at once (default `SYNC_MS`), the rest in slices."""
        self._encoded = encoded
        if encoded is None:
            self._lists = ()
            self._queue = []
            self.rehighlight()
            return
        n = len(encoded)
        diff = differs.tolist() if differs is not None else [False] * n
        # One format per group: a character or a grapheme cluster cut between tokens is
        # painted in its first token's colour, since a format change inside a cluster would
        # break it into separate glyphs (a flag into two letters); the dotted underline marks it.
        first_of_group = np.searchsorted(encoded.group, encoded.group, side="left")
        self._lists = (
            encoded.ids[first_of_group].tolist(),
            encoded.u16_start.tolist(),
            encoded.u16_end.tolist(),
            (encoded.splits_char | encoded.splits_cluster).tolist(),
            (encoded.group & 1).astype(bool).tolist(),
            diff,
        )
        count = self.document().blockCount()
        first_block = min(max(first_block, 0), count - 1)
        # Reversed so that pop() gives the first visible block first, then the rest in order.
        order = [*range(first_block, count), *range(first_block)]
        self._queue = order[::-1]
        self._slice(self.SYNC_MS if sync_ms is None else sync_ms)

    def pending(self) -> bool:
        return bool(self._queue)

    def finish(self) -> None:
        """Colour every remaining block now (tests, exports)."""
        self._slice(float("inf"))

    def _slice(self, budget_ms: float | None = None) -> None:
        budget = (budget_ms if budget_ms is not None else self.SLICE_MS) / 1000
        deadline = time.perf_counter() + budget
        doc = self.document()
        self.colouring = True  # the document reports each block's new formats as a change
        try:
            while self._queue and time.perf_counter() < deadline:
                block = doc.findBlockByNumber(self._queue.pop())
                if block.isValid():
                    self.rehighlightBlock(block)
        finally:
            self.colouring = False
        # The next slice, or another costly job, waits for a turn of its own.
        TURNS.spent(time.perf_counter() - deadline + budget)
        if self._queue:
            self._job.request()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        enc = self._encoded
        if enc is None or not self._lists or len(enc) == 0:
            return
        doc = self.document()
        if doc.characterCount() - 1 != int(enc.u16_end[-1]):
            return  # stale: the document changed since it was encoded
        ids, u_start, u_end, partial, alt, differs = self._lists
        block = self.currentBlock()
        start = block.position()
        end = start + block.length()  # includes the block separator (a newline in the text)
        first = bisect.bisect_right(u_end, start)
        last = bisect.bisect_left(u_start, end, lo=first)
        set_format = self.setFormat
        for k in range(first, last):
            a = u_start[k] if u_start[k] > start else start
            b = u_end[k] if u_end[k] < end else end
            if b > a:
                # Alternate by group, so the tokens of one split character share one shade.
                set_format(a - start, b - a, token_format(ids[k], alt[k], partial[k], differs[k]))


class RangeHighlighter(QSyntaxHighlighter):
    """Formats given as sorted `(start, end, format)` UTF-16 ranges (the token strip).

    Colouring a whole strip at once took ~40 ms for a 20,000-character text, in one event-loop
    turn; like `TokenHighlighter`, `set_ranges` colours from the first visible block for
    `SYNC_MS` and the rest in `SLICE_MS` slices from a zero-delay timer (`pending()` says if
    any are left, `finish()` colours them now).
    """

    SYNC_MS = 2.0  # the visible lines; it shares its turn with the text's colouring
    SLICE_MS = 2.0  # and its slices the turns of the text's (3 ms): the strip is read second

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._starts: list[int] = []
        self._ranges: list = []
        self._queue: list[int] = []  # block numbers still to colour, the next one last
        # The rest is coloured a slice at a time in turns of their own (`paint_turns`).
        self._job = TurnJob(self._slice, self)

    def set_ranges(self, ranges: list, first_block: int = 0) -> None:
        self._ranges = ranges
        self._starts = [r[0] for r in ranges]
        count = self.document().blockCount()
        first_block = min(max(first_block, 0), count - 1)
        self._queue = [*range(first_block, count), *range(first_block)][::-1]
        self._slice(self.SYNC_MS)

    def clear(self) -> None:
        """No ranges, and nothing queued: a new text then lays out without colouring."""
        self._ranges, self._starts, self._queue = [], [], []
        self._job.cancel()

    def pending(self) -> bool:
        return bool(self._queue)

    def finish(self) -> None:
        """Colour every remaining block now (tests, exports)."""
        self._slice(float("inf"))

    def _slice(self, budget_ms: float | None = None) -> None:
        budget = (budget_ms if budget_ms is not None else self.SLICE_MS) / 1000
        deadline = time.perf_counter() + budget
        doc = self.document()
        while self._queue and time.perf_counter() < deadline:
            block = doc.findBlockByNumber(self._queue.pop())
            if block.isValid():
                self.rehighlightBlock(block)
        TURNS.spent(time.perf_counter() - deadline + budget)
        if self._queue:
            self._job.request()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        if not self._ranges:
            return
        block = self.currentBlock()
        start = block.position()
        end = start + block.length()
        i = max(bisect.bisect_right(self._starts, start) - 1, 0)
        while i < len(self._ranges) and self._ranges[i][0] < end:
            a, b, fmt = self._ranges[i]
            a, b = max(a, start), min(b, end)
            if b > a:
                self.setFormat(a - start, b - a, fmt)
            i += 1
