"""Help: the short illustrated guide, About with versions, and the words behind every chart.

The guide is rich text in a dialog; its pictures are drawn here at run time (the token chips by
`workbench.render`, the merge steps with QPainter), so nothing is downloaded or shipped. The
chart explanations (`CHART_HELP`) are also the charts' tooltips and "What's this?" texts, so
the guide and the window say the same thing.
"""

from __future__ import annotations

import platform
import sqlite3
from importlib import metadata

from PySide6.QtCore import QRectF, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QFont,
    QImage,
    QKeySequence,
    QPainter,
    QShortcut,
    QTextDocument,
)
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

import workbench
from workbench.display import GLYPH_LEGEND, token_rgb

CHART_HELP = {
    "Pair count at merge": (
        "How often the merged pair occurred in the corpus when it was merged, by merge rank "
        "(0 is the first merge; log scale). It falls steeply: the first merges join pairs seen millions of times, "
        "late ones pairs seen a few dozen times. A flat tail means the vocabulary is spending "
        "tokens on rare pieces."
    ),
    "Compression": (
        "Bytes per token over the whole corpus after each number of merges made (1 is after "
        "the first merge): 1.0 before any merge, higher is better. The curve flattens as merges find ever rarer pairs; where it stops rising "
        "much, more vocabulary buys little."
    ),
    "Speed": (
        "Merges per second over training time. Merges get cheaper as the run goes on (each "
        "touches fewer words), so the rate usually climbs. A stored run keeps no timings: "
        'opened again, this chart is titled "not stored" until the run is continued.'
    ),
    "Token lengths": (
        "How many tokens of each length in bytes the vocabulary has so far (merged tokens "
        "only). Long tokens are whole words and runs of spaces."
    ),
}

COLUMN_HELP = {
    "rank": "the order of the merge: rank 0 was made first",
    "id": "the new token's id (256 + rank, unless a merge made an existing token again)",
    "token": "the new token's bytes, readable (see the glyphs below)",
    "left / right": "the two tokens that were joined, with their ids",
    "count": "how often the pair occurred when it was merged",
    "bytes": "the token's length in bytes (what the search's len:3-5 counts)",
}

SHORTCUTS = (
    ("Ctrl+Enter", "Train"),
    ("Ctrl+P", "Pause"),
    ("Ctrl+R", "Resume"),
    ("Ctrl+.", "Stop"),
    ("Ctrl+1 / 2 / 3", "+1 / +10 / +100 merges"),
    ("Ctrl+O", "Open corpus files"),
    ("Ctrl+E", "Export the open run's tokenizer"),
    ("Ctrl+End (in the merge list)", "the newest merge"),
    ("F1", "This guide"),
    ("Shift+F1", "What's this? — then click any chart or control"),
)

_STEPS = [
    ["l", "o", "w", "·", "l", "o", "w", "e", "r"],
    ["lo", "w", "·", "lo", "w", "e", "r"],
    ["low", "·", "low", "e", "r"],
    ["low", "·", "low", "er"],
]
_NOTES = ["the bytes", "merge l + o → lo", "merge lo + w → low", "merge e + r → er"]


def merge_steps_image(width: int = 560) -> QImage:
    """The guide's picture: "low lower" cut ever coarser as three merges are made."""
    row_h, pad = 34, 8
    image = QImage(width, pad * 2 + row_h * len(_STEPS), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    mono = QFont("DejaVu Sans Mono", 12)
    plain = QFont("DejaVu Sans", 10)
    ids: dict[str, int] = {}
    for row, (tokens, note) in enumerate(zip(_STEPS, _NOTES, strict=True)):
        y = pad + row * row_h
        x = pad
        painter.setFont(mono)
        metrics = painter.fontMetrics()
        for token in tokens:
            tid = ids.setdefault(token, len(ids) * 7 + 3)
            w = metrics.horizontalAdvance(token) + 10
            rect = QRectF(x, y, w, row_h - 8)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(*token_rgb(tid)))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setPen(QColor("#111111"))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, token)
            x += w + 3
        painter.setFont(plain)
        painter.setPen(QColor("#555555"))
        painter.drawText(
            QRectF(x + 16, y, width - x - 16, row_h - 8), Qt.AlignmentFlag.AlignVCenter, note
        )
    painter.end()
    return image


def guide_html(charts_picture: bool = False) -> str:
    charts = "".join(f"<li><b>{name}</b> — {text}</li>" for name, text in CHART_HELP.items())
    columns = "".join(f"<li><b>{name}</b> — {text}</li>" for name, text in COLUMN_HELP.items())
    keys = "".join(f"<tr><td><code>{k}</code></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
    legend = GLYPH_LEGEND.replace("<", "&lt;")
    return f"""
<h2>What BPE does</h2>
<p>A byte-level BPE tokenizer starts from the 256 bytes. It counts every pair of neighbouring
tokens in the corpus, joins the most frequent pair into a new token, and repeats: each join is
a <i>merge</i>, and the list of merges, in order, is the tokenizer. Common words soon become
single tokens; rare words stay in pieces.</p>
<p><img src="guide:merges"></p>
<h2>Using the window</h2>
<ol>
<li>Open a corpus (File ▸ Open files…, or drop files on the window); the Corpus tab shows what
was read and how the pattern cuts it into pre-tokens.</li>
<li>Set the vocabulary size (at least 257: the 256 bytes and one merge, plus any special
tokens) and press <b>Train</b>. Pause, step +1/+10/+100 and Resume at any time.</li>
<li><b>Teaching mode</b> (under the charts) trains at a speed you choose and shows each merge
in a sample of the corpus.</li>
<li>The <b>Tokens</b> tab cuts any text with the trained tokenizer; <b>Runs</b> keeps every
run.</li>
<li><b>Export</b> the tokenizer: File ▸ Export tokenizer… (Ctrl+E) for the open run, or
select a run in the <b>Runs</b> tab and press Export… (or right-click it). Tick one or more
formats (Hugging Face <code>tokenizer.json</code>, GPT-2 <code>vocab.json</code> +
<code>merges.txt</code>, tiktoken, minbpe) and a folder; <b>Export and check</b> writes them
and reads each back to prove it gives the same ids.</li>
</ol>
<h2>Continuing a run</h2>
<p>A paused run goes on with <b>Resume</b> (to the Vocab size) or <b>+1 / +10 / +100</b>. A
finished run grows too: raise the Vocab size and press Resume, or press +N. A run you stopped,
or one you open from the <b>Runs</b> tab (even after a restart), goes on the same way: its
corpus is read again and its merges replayed (checked against the stored ones) before new
merges are made, so the corpus must not have changed. A run named by the workbench
(“corpus.txt · 8,000”) takes its new size as its name.</p>
<h2>The Tokens tab</h2>
<p>Type or paste any text: it is cut with the open run's tokenizer as you type, each token its
colour. Hover a token for its id, bytes and merge tree; click it to see where it occurs in the
corpus. The <b>merges</b> slider cuts the text with only the first k merges, and the chart
under it shows bytes per token for every k. <b>Open tokenizer…</b> inspects a tokenizer file,
<b>Reference</b> one of OpenAI's (gpt2, cl100k, o200k) when they are on this machine.</p>
<h2>Compare</h2>
<p>The Tokens tab's <b>Compare</b> page cuts the same text with several tokenizers side by side:
add stored runs, tokenizer files or a reference. Token edges that the others do not share are
bold with a wavy underline; the table gives each one's token count and bytes per token.</p>
<h2>Evaluate</h2>
<p>The <b>Evaluate</b> tab answers “which tokenizer is cheaper on my text?”: tick runs (each at
any number of its first merges), files and references, add held-out files or paste text, and
press Evaluate. It reports tokens and bytes per token for each, by file or by a JSONL field,
optionally the token health (tokens never or rarely used) and compression curves, and saves
it all as one HTML page.</p>
<h2>The charts</h2>{'<p><img src="guide:charts"></p>' if charts_picture else ""}<ul>{charts}</ul>
<p>Hover a chart to read the merge under the cursor in the line below the charts.</p>
<h2>The merge list</h2><ul>{columns}</ul>
<p>Click a header to sort. Search with text, <code>/regex/</code> (on the real text:
<code>/^ t/</code> finds tokens starting with a space and t), <code>hex:e2 80</code>,
<code>id:300</code> or <code>len:3-5</code>. “Follow newest” keeps the newest merge in view;
merges made by the last step are tinted.</p>
<p><b>Glyphs</b>: {legend}</p>
<h2>Shortcuts</h2><table cellpadding="3">{keys}</table>
"""


class GuideDialog(QDialog):
    """The guide, in the window (not a browser): F1 or Help ▸ Guide."""

    def __init__(self, parent: QWidget | None = None, charts: QWidget | None = None) -> None:
        """`charts`: the window's charts, pictured as they are now beside their explanations."""
        super().__init__(parent)
        self.setWindowTitle("BPE Workbench — Guide")
        self.browser = QTextBrowser(self)
        document = self.browser.document()
        image = QTextDocument.ResourceType.ImageResource
        document.addResource(image, QUrl("guide:merges"), merge_steps_image())
        if charts is not None:
            picture = (
                charts.grab()
                .toImage()
                .scaledToWidth(560, Qt.TransformationMode.SmoothTransformation)
            )
            document.addResource(image, QUrl("guide:charts"), picture)
        self.browser.setHtml(guide_html(charts_picture=charts is not None))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        # The browser keeps the focus, and a shown (not exec'd) dialog may not have it at
        # all: Escape closes the guide wherever the focus is inside it.
        close = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        close.setContext(Qt.ShortcutContext.WindowShortcut)
        close.activated.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        self.resize(720, 640)


def versions() -> dict[str, str]:
    """The app's version and its key libraries' (what a bug report needs)."""
    import PySide6
    from PySide6 import QtCore

    def dist(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "BPE Workbench": workbench.__version__,  # also right in a checkout without metadata
        "Python": platform.python_version(),
        "PySide6": PySide6.__version__,
        "Qt": QtCore.qVersion(),
        "pyqtgraph": dist("pyqtgraph"),
        "numba": dist("numba"),
        "numpy": dist("numpy"),
        "regex": dist("regex"),
        "SQLite": sqlite3.sqlite_version,
    }


def about_html() -> str:
    rows = "".join(f"<tr><td>{k}</td><td><b>{v}</b></td></tr>" for k, v in versions().items())
    return (
        "<h3>BPE Workbench</h3><p>Train byte-level BPE tokenizers on a real corpus and watch "
        f"every merge arrive.</p><table cellpadding='2'>{rows}</table>"
    )
