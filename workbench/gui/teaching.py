"""Teaching mode: watch merges happen one at a time, at a speed a class can follow.

`TeachingPanel` sits under the charts: a speed control (merges per second from 1 up, or full
speed), the newest merge in words (`·t` + `h` → `·th`), and a short sample of the corpus cut
by the tokenizer of the merges so far, with the places the newest token now covers marked.

The pace is set here, not in the trainer: `TeachingDriver` asks the window for `n` more merges
per tick (the worker's step request, as +1/+10/+100 do), waits until the worker has answered
(the run is paused again) and only then schedules the next tick. So Pause simply stops the
ticks, a step by hand works in between, and nothing races the worker.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from workbench.display import NEWLINE, readable, show_whitespace, token_hex
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.elided_label import ElidedLabel
from workbench.render import token_groups
from workbench.store import StoredMerge

MIN_TICK_MS = 50  # above 20 merges/s a tick makes several merges rather than ticking faster
MAX_SPEED = 100_000
SAMPLE_CHARS = 360
NEWEST_STYLE = "background-color:#ffb703; font-weight:bold; text-decoration: underline"


# Teaching mode's samples come from the start of the corpus: 64 KB by paragraph, searched
# for a piece that shows the newest merge (a substring search, well under a millisecond).
SAMPLE_READ_BYTES = 65_536


def first_long(paragraphs: list[str]) -> str:
    """The first paragraph longer than a title line (teaching's first sample)."""
    long = [p for p in paragraphs if len(p) > 120]
    return (long or paragraphs or [""])[0]


def corpus_paragraphs(paths: list[Path]) -> list[str]:
    """The start of the corpus (read as training reads it), by paragraph."""
    from workbench.engine.corpus.lines import corpus_lines

    lines: list[str] = []
    size = 0
    for _path, line in corpus_lines(paths):
        if isinstance(line, str):
            lines.append(line)
            size += len(line)
        if size >= SAMPLE_READ_BYTES or len(lines) > 2000:
            break
    return [p.strip() for p in "".join(lines).split("\n\n") if p.strip()]


def tick_plan(speed: int) -> tuple[int, int]:
    """(milliseconds between ticks, merges per tick) for `speed` merges per second.

    tick_plan(1) -> (1000, 1); tick_plan(5) -> (200, 1); tick_plan(200) -> (50, 10).
    """
    speed = max(1, speed)
    interval = max(1000 // speed, MIN_TICK_MS)
    return interval, max(1, round(speed * interval / 1000))


def sample_around(pool: list[str], token: bytes, width: int = SAMPLE_CHARS) -> str | None:
    """A piece of the corpus (`pool`: its first paragraphs) where `token` occurs, about
    `width` characters with the occurrence early on, or None when no paragraph holds it."""
    text = token.decode("utf-8", errors="ignore")
    if not text.strip():
        return None
    for paragraph in pool:
        at = paragraph.find(text)
        if at < 0:
            continue
        # Start at the line the token is on (or a little before it in a long line).
        line_start = paragraph.rfind("\n", 0, at) + 1
        start = max(line_start, at - width // 3)
        return paragraph[start : start + width]
    return None


def sample_html(tok: Tokenizer, text: str, newest: bytes | None) -> tuple[str, int]:
    """`text` cut by `tok` as coloured spans, tokens equal to `newest` marked; returns the HTML
    and how many places the newest token covers."""
    parts, places = [], 0
    for number, group in enumerate(token_groups(tok, text)):
        token = tok.decode_bytes(group.ids)
        shown = html.escape(show_whitespace(group.text, keep=" "))
        if newest is not None and token == newest:
            places += 1
            parts.append(f'<span style="{NEWEST_STYLE}">{shown}</span>')
        else:
            colour = token_hex(group.ids[0], bool(number & 1))
            parts.append(f'<span style="background-color:{colour}">{shown}</span>')
    body = "".join(parts).replace(NEWLINE, NEWLINE + "<br>")
    style = "font-family: monospace; line-height: 150%; white-space: pre-wrap"
    return f'<div style="{style}">{body}</div>', places


TIE_RULES = {
    "lexicographic": "the pair with the greatest (left, right) bytes wins",
    "hf": "the pair Hugging Face's BpeTrainer would take wins",
}


def why_chosen(merge: StoredMerge, following: StoredMerge | None, tie_break: str) -> str:
    """Why merge `merge` was made, in words: its count and the runner-up's, the ties and the
    rule that settled them, and the merge that came next (the best pair once this one was made).
    A run stored before runner-ups were recorded says so rather than guess."""
    count = f"{merge.count:,} time{'s' if merge.count != 1 else ''}"
    text = f"Why: its pair occurred {count} when it was merged, more than any other"
    if merge.runner_up is None:
        text += " (this run did not record the runner-up's count)"
    elif merge.runner_up == 0:
        text += ": no other pair was left"
    else:
        text += f": the runner-up had {merge.runner_up:,}"
    if merge.ties:
        others = f"{merge.ties:,} other pair{'s' if merge.ties != 1 else ''}"
        rule = TIE_RULES.get(tie_break, f"the {tie_break} rule decides")
        text = (
            f"Why: its pair occurred {count}; {others} occurred as often, and the tie-break"
            f" chose it ({tie_break}: {rule})"
        )
    if following is not None:
        text += (
            f". Next: “{readable(following.token)}” ({following.count:,} times once this"
            " merge was made)"
        )
    return text + "."


@dataclass(frozen=True)
class SampleCut:
    """The sample cut by `tok` (whose newest merge is `newest_pair`), ready to show."""

    tok: Tokenizer
    newest_pair: tuple[bytes, bytes] | None
    text: str  # the sample: moved to where the newest merge occurs, unless pinned
    page: str  # HTML
    line: str  # "Merge 12: “t” + “h” → “th”  (3 places in the sample)"
    generation: int  # the panel's sample generation it was cut from


class TeachingPanel(QWidget):
    """The speed control, the newest merge and the live sample (see the module docstring)."""

    sigModeChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.enabled_box = QCheckBox("Teaching mode")
        self.enabled_box.setToolTip(
            "Train slowly, merge by merge: the newest merge is highlighted in the list and "
            "in the sample below. Pause, +1/+10/+100 and Resume work as usual."
        )
        self.speed = QSpinBox()
        self.speed.setRange(1, MAX_SPEED)
        self.speed.setValue(5)
        self.speed.setSuffix(" merges/s")
        self.speed.setGroupSeparatorShown(True)
        self.speed.setToolTip("How many merges a second teaching mode makes")
        self.full_speed = QCheckBox("full speed")
        self.full_speed.toggled.connect(lambda on: self.speed.setEnabled(not on))
        self.newest = ElidedLabel("Train to watch the merges arrive.")
        self.newest.setObjectName("newestMerge")
        bigger = self.newest.font()
        bigger.setPointSizeF(bigger.pointSizeF() * 1.15)
        bigger.setBold(True)
        self.newest.setFont(bigger)
        self.why = QLabel("")
        self.why.setObjectName("whyMerge")
        self.why.setWordWrap(True)
        self.why.setTextFormat(Qt.TextFormat.PlainText)  # tokens' text, shown as it is
        self.why.setToolTip(
            "Why the newest merge was made: BPE joins the most frequent pair of neighbouring"
            " tokens; among pairs of equal count the tie-break rule chooses"
        )
        self.own_sample = QPushButton("Your sample…")
        self.own_sample.setToolTip(
            "Paste a text of your own to watch the merges cut it (it stays until you go back"
            " to the corpus)"
        )
        self.own_sample.clicked.connect(self._ask_sample)
        self.corpus_sample = QPushButton("Corpus sample")
        self.corpus_sample.setToolTip(
            "Back to pieces of the corpus, chosen to show each new merge where it occurs"
        )
        self.corpus_sample.clicked.connect(self.unpin)
        self.corpus_sample.setEnabled(False)
        self.sample = QTextBrowser()
        self.sample.setObjectName("teachingSample")
        self.sample.setToolTip(
            "A short piece of the corpus cut by the merges made so far; the token the newest "
            "merge made is highlighted where it now appears."
        )
        bar = QHBoxLayout()
        bar.addWidget(self.enabled_box)
        bar.addWidget(self.speed)
        bar.addWidget(self.full_speed)
        bar.addStretch(1)
        bar.addWidget(self.own_sample)
        bar.addWidget(self.corpus_sample)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.newest)
        layout.addWidget(self.why)
        layout.addWidget(self.sample, 1)
        self.enabled_box.toggled.connect(self.sigModeChanged)
        self._text = ""
        self._pool: list[str] = []  # the start of the corpus, by paragraph
        self.pinned = False  # the user's own sample: never swapped for another
        self._last: tuple[Tokenizer, tuple[bytes, bytes] | None] | None = None
        self._sample_gen = 0  # +1 whenever the sample is set anew: a cut of the old is stale

    @property
    def teaching(self) -> bool:
        return self.enabled_box.isChecked()

    def sample_text(self) -> str:
        """The sample as given (the start of the corpus)."""
        return self._text

    def set_pool(self, paragraphs: list[str]) -> None:
        """The start of the corpus, by paragraph: where a sample showing the newest merge is
        looked for when the one shown does not hold it."""
        self._pool = list(paragraphs)

    def use_text(self, text: str) -> None:
        """The user's own sample (kept until `unpin`)."""
        self.pinned = True
        self.corpus_sample.setEnabled(True)
        self._sample_gen += 1
        self._text = text[: SAMPLE_CHARS * 4]
        self._recut()

    def unpin(self) -> None:
        self.pinned = False
        self.corpus_sample.setEnabled(False)
        self._sample_gen += 1
        self._text = (self._pool or [""])[0][:SAMPLE_CHARS]
        self._recut()

    def _ask_sample(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        text, ok = QInputDialog.getMultiLineText(self, "Your sample", "Text to cut:", self._text)
        if ok and text.strip():
            self.use_text(text)

    def _recut(self) -> None:
        if self._last is not None:
            self.show_tokenizer(*self._last)
        else:
            self.sample.setPlainText(self._text)

    def set_sample(self, text: str) -> None:
        """The corpus text to cut (its first few hundred characters)."""
        self.pinned = False
        self.corpus_sample.setEnabled(False)
        self._last = None
        self._sample_gen += 1
        self._text = text[:SAMPLE_CHARS]
        self.sample.setPlainText(self._text)
        self.newest.setText("Train to watch the merges arrive.")
        self.why.setText("")

    def explain(self, merge: StoredMerge | None, following: StoredMerge | None, rule: str) -> None:
        """Say why the newest merge was made (None: no merge yet)."""
        self.why.setText("" if merge is None else why_chosen(merge, following, rule))

    def show_tokenizer(self, tok: Tokenizer, newest_pair: tuple[bytes, bytes] | None) -> None:
        """Cut the sample with `tok`; `newest_pair` is the last merge's (left, right)."""
        self.apply(self.prepare(tok, newest_pair))

    def prepare(self, tok: Tokenizer, newest_pair: tuple[bytes, bytes] | None) -> SampleCut:
        """The sample cut by `tok`, as `apply` shows it: no Qt, so a background lane may make
        it (a replay does: encoding the sample takes the UI thread up to ~20 ms)."""
        text, generation = self._text, self._sample_gen
        newest = None if newest_pair is None else newest_pair[0] + newest_pair[1]
        if newest is not None and not self.pinned:
            shown = text.encode("utf-8", errors="ignore")
            if newest not in shown:  # look for a piece of the corpus that shows it
                elsewhere = sample_around(self._pool, newest)
                if elsewhere is not None:
                    text = elsewhere
        page, places = sample_html(tok, text, newest)
        if newest_pair is None:
            line = "No merges yet: the sample is all single bytes."
            return SampleCut(tok, newest_pair, text, page, line, generation)
        left, right = (readable(part) for part in newest_pair)
        where = f"{places} place{'s' if places != 1 else ''} in the sample" if places else ""
        line = f"Merge {len(tok.merges):,}: “{left}” + “{right}” → “{readable(newest)}”" + (
            f"  ({where})" if where else "  (not in this sample)"
        )
        return SampleCut(tok, newest_pair, text, page, line, generation)

    def apply(self, cut: SampleCut) -> None:
        """Show a cut `prepare` made (unless the sample was set anew since: then nothing)."""
        if cut.generation != self._sample_gen:
            return
        self._last = (cut.tok, cut.newest_pair)
        self._text = cut.text
        self.sample.setHtml(cut.page)
        self.newest.setText(cut.line)


class TeachingDriver(QObject):
    """Paces a run: `sigStep(n)` asks the window for n more merges (None: the rest at full
    speed). The window calls `worker_idle()` whenever the worker is paused again."""

    sigStep = Signal(object)

    def __init__(self, panel: TeachingPanel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.running = False
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False
        self.timer.stop()

    def worker_idle(self, can_go_on: bool) -> None:
        """The worker is paused (after a tick or a step by hand): schedule the next tick."""
        if not self.running:
            return
        if not can_go_on:
            self.stop()
            return
        interval, _n = tick_plan(self.panel.speed.value())
        self.timer.start(0 if self.panel.full_speed.isChecked() else interval)

    def _tick(self) -> None:
        if not self.running:
            return
        if self.panel.full_speed.isChecked():
            self.running = False  # the rest in one go; the run ends as an ordinary one
            self.sigStep.emit(None)
            return
        self.sigStep.emit(tick_plan(self.panel.speed.value())[1])
