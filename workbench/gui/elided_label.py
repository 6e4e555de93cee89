"""A one-line label that never widens the window: a long text is cut with "…" to fit.

A plain QLabel asks its layout for room for its whole text, and a long status line or hover
readout then grows the window past the screen (1400 -> 1591 px). This label asks for almost
nothing, shows what fits, and keeps the whole text in its tooltip.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MIN_WIDTH = 40


def plain_tip(text: str) -> str:
    """A tooltip that shows `text` as it is: Qt renders a tooltip as HTML when it merely looks
    like markup, so a folder named `<img src=x>` would become a picture. Escaped inside a
    paragraph, it is rich text whose visible words are exactly `text`."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>"


class ElidedLabel(QLabel):
    """`ElidedLabel("a long line")`; `full_text()` is what was set, `text()` what shows."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._own_tip = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def full_text(self) -> str:
        return self._full

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        self._full = text
        self._elide()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 (Qt override)
        self._own_tip = tip
        super().setToolTip(tip)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(MIN_WIDTH, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        width = min(self.fontMetrics().horizontalAdvance(self._full) + 4, 400)
        return QSize(max(width, MIN_WIDTH), super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(
            self._full, Qt.TextElideMode.ElideRight, max(self.width(), MIN_WIDTH)
        )
        super().setText(shown)
        elided = shown != self._full
        super().setToolTip(plain_tip(self._full) if elided and not self._own_tip else self._own_tip)


def fit_width(label: QLabel) -> QLabel:
    """Let a (rich-text) label take only the width its layout gives it: a longer text is cut
    at the edge instead of widening the window. For plain text, `ElidedLabel` reads better."""
    label.setSizePolicy(QSizePolicy.Policy.Ignored, label.sizePolicy().verticalPolicy())
    label.setMinimumWidth(MIN_WIDTH)
    return label
