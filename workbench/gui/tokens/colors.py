"""Token colours as Qt formats: the same id gets the same colour in every view and every run.

The colour itself comes from `workbench.display.token_rgb` (shared with the HTML and PNG
renders); neighbouring *tokens* alternate lightness so two equal ids side by side stay apart.
Formats are cached: a 100 KB text has ~25k tokens but only a few thousand distinct keys.
"""

from __future__ import annotations

import functools

from PySide6.QtGui import QColor, QFont, QTextCharFormat

from workbench.display import token_hex, token_rgb


def token_color(token_id: int, alternate: bool = False) -> QColor:
    """Pastel background for `token_id` (`workbench.display.token_rgb`, the one colour rule);
    `alternate` is a shade darker (odd positions)."""
    return QColor(*token_rgb(token_id, alternate))


color_hex = token_hex


@functools.lru_cache(maxsize=65536)
def token_format(token_id: int, alternate: bool, partial: bool, differs: bool) -> QTextCharFormat:
    """The character format of one token.

    `partial`: the token cuts a UTF-8 character (drawn with a red dotted underline, so the user
    sees why the colours of one character look shared). `differs`: in a comparison, the token's
    edges are not shared by the other tokenizers (bold, orange wavy underline).
    """
    fmt = QTextCharFormat()
    fmt.setBackground(token_color(token_id, alternate))
    fmt.setForeground(QColor("#111111"))
    if partial:
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)
        fmt.setUnderlineColor(QColor("#c0392b"))
    if differs:
        fmt.setFontWeight(QFont.Weight.Bold)
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        fmt.setUnderlineColor(QColor("#e67e22"))
    return fmt


@functools.cache
def annotation_format() -> QTextCharFormat:
    """Ids and byte annotations in the token strip: small and grey, so the text leads."""
    fmt = QTextCharFormat()
    fmt.setForeground(QColor("#666666"))
    fmt.setVerticalAlignment(QTextCharFormat.VerticalAlignment.AlignSubScript)
    return fmt
