"""What a person sees at the default size: the window and the Tokens tab rendered offscreen at
1400x900, checked as a picture would be — the token column shows a 12-character token, no
visible widget sits outside the window, and neither a run nor a long message resizes it.

Set WORKBENCH_SHOTS=/some/dir to keep the rendered pictures for a look.
"""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import QRect  # noqa: E402
from PySide6.QtWidgets import QAbstractScrollArea, QWidget  # noqa: E402

SIZE = (1400, 900)


def save(widget: QWidget, name: str) -> None:
    folder = os.environ.get("WORKBENCH_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        widget.grab().save(str(Path(folder) / name))


def _in_scroll_area(widget: QWidget, window: QWidget) -> bool:
    """Content of a scroll area may be larger than the area: it scrolls, it is not cut off."""
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        if isinstance(parent, QAbstractScrollArea) and widget is not parent:
            return widget is not parent.horizontalScrollBar() and widget is not (
                parent.verticalScrollBar()
            )
        parent = parent.parentWidget()
    return False


def outside(window: QWidget) -> list[str]:
    """Visible widgets whose rectangle leaves the window's (laid out past its edge)."""
    frame = QRect(0, 0, window.width(), window.height())
    found = []
    for child in window.findChildren(QWidget):
        if not child.isVisible() or child.isWindow() or _in_scroll_area(child, window):
            continue
        rect = QRect(child.mapTo(window, child.rect().topLeft()), child.size())
        if not frame.contains(rect):
            found.append(f"{type(child).__name__} {child.objectName()} {rect}")
    return found


def test_default_window_shows_a_whole_token_and_keeps_its_size(qtbot, window):
    window.resize(*SIZE)
    qtbot.waitUntil(lambda: window.width() == SIZE[0], timeout=5000)
    window.controls.vocab.setValue(256 + 300)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    qtbot.wait(300)
    assert window.size().toTuple() == SIZE, "a run resized the window"

    panel = window.merge_list
    assert panel.model.rowCount() == 300
    assert panel.token_column_chars() >= 12, "the token column cuts a 12-character token"
    assert not outside(window), outside(window)

    # Long messages are cut to fit, never widen the window.
    long = "a very long message " * 40
    window.status.stage.setText(long)
    window.charts.hover_label.setText(long)
    window.charts.caption.setText(long)
    panel.message.setText(long)
    panel.message.show()
    window.teaching.newest.setText(long)
    window.tokens.panel.source.setText(f"<b>{long}</b>")
    window.tokens.panel.view.counts.setText(long)
    window.tokens.panel.scrubber.label.setText(long)
    qtbot.wait(100)
    assert window.size().toTuple() == SIZE, "a long label resized the window"
    assert window.minimumSizeHint().width() <= SIZE[0]
    save(window, "window-1400x900.png")


def test_tokens_tab_fits_and_labels_its_panes(qtbot, window):
    window.resize(*SIZE)
    window.controls.vocab.setValue(256 + 200)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    tokens = window.tokens.panel
    qtbot.waitUntil(tokens.export_button.isEnabled, timeout=COLD_START_MS)
    window.tabs.setCurrentWidget(tokens)
    tokens.set_text("שלום [hello] مرحبا 👨‍👩‍👧 🇫🇷 line\r\nend")
    qtbot.waitUntil(lambda: tokens.view.encoded is not None, timeout=5000)
    qtbot.wait(200)
    assert window.size().toTuple() == SIZE
    assert not outside(window), outside(window)
    titles = [w.text() for w in tokens.view.findChildren(QWidget, "paneTitle")]
    assert any("Your text" in t for t in titles) and any("tokenizer cuts" in t for t in titles)
    save(window, "tokens-1400x900.png")
