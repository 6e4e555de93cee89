"""Names are shown as they are (issue 33): a folder, file or run named like markup —
`<img src=x>` — is never rendered as HTML in a label or a tooltip of the window."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import Qt as GuiQt  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402

from workbench.gui.elided_label import ElidedLabel, plain_tip  # noqa: E402

MARKUP = "<img src=x><b>bold</b>"


def shown_text(label: QLabel) -> str:
    """The words a person reads in `label`, as Qt would render it."""
    text = label.text()
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text)
    )
    if not rich:
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def tip_text(tip: str) -> str:
    if not GuiQt.mightBeRichText(tip):
        return tip
    doc = QTextDocument()
    doc.setHtml(tip)
    return doc.toPlainText()


def test_a_plain_tip_reads_as_the_text_itself(qapp):
    for text in (MARKUP, "a & b", "line one\nline two", "plain"):
        assert tip_text(plain_tip(text)) == text
    label = ElidedLabel(MARKUP * 20)
    label.resize(60, 20)
    label.setText(MARKUP * 20)  # cut: the whole text goes to the tooltip
    assert tip_text(label.toolTip()) == MARKUP * 20


def test_a_corpus_folder_named_like_markup_is_shown_literally(qtbot, window, tmp_path):
    folder = tmp_path / MARKUP.replace("/", "∕")  # a path cannot hold "/"
    folder.mkdir()
    (folder / "a.txt").write_text(" ".join(f"w{i % 89}y{i % 11}" for i in range(3000)))
    window.load_corpus([folder])
    name = folder.name
    assert name in shown_text(window.corpus_panel.title)
    assert name in shown_text(window.controls.corpus_summary)
    assert name in tip_text(window.controls.toolTip())
    train_to(qtbot, window, 256 + 20)
    run = window.store.get_run(window.run_id)
    assert name in run.name
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == window.run_id, timeout=60_000)
    assert name in shown_text(panel.source)
    compare = panel.compare
    assert name in shown_text(compare.panes.widget(0).title)
    window.open_run(run.id)
    assert name in window.charts.caption.full_text()
    assert window.charts.caption.textFormat() == Qt.TextFormat.PlainText


def test_a_tokenizer_file_named_like_markup_is_shown_literally(qtbot, window, tmp_path):
    panel = window.tokens.panel
    missing = tmp_path / "<img src=x>.json"
    panel.open_tokenizer_file(missing)
    assert missing.name in shown_text(panel.source)
    qtbot.waitUntil(lambda: "cannot open" in panel.source.text(), timeout=10_000)
    assert "<img" in shown_text(panel.source)
