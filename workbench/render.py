"""Show how a tokenizer splits a text: token groups painted with QPainter (PNG), beside the HTML
of `token_html` (re-exported here).

A group is one token, or the run of tokens that split one character between them (byte-level BPE
can cut `é` = C3 A9 in two): the viewer never prints U+FFFD for half a character, it shows the
whole character once and lists every token's bytes (`<C3>`, `<A9>`) in the tooltip/title.
A user-perceived character made of several code points (a flag, a ZWJ family) is one group too,
so it is drawn as one glyph. Colours and glyphs come from `workbench.display`, so this page, the
PNG and the window look alike. This is the one HTML renderer: the Tokens tab's Share uses it.
The Qt part is imported lazily so the HTML path (and the engine) never need a display.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.display import CR, NEWLINE, TAB, token_rgb
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.token_html import TokenGroup, render_html, token_groups

if TYPE_CHECKING:
    from PySide6.QtGui import QImage, QPainter


# Text a page or picture is drawn for at most, unless asked for more: every token becomes HTML
# and several Python objects, so 24 MB of text made a 727 MB page and took 10 GB; 1 MB makes a
# page of ~31 MB in ~10 s (a 2,000-token vocabulary), already more than a browser shows well.
MAX_BYTES = 1 << 20


def size_refusal(name: str, size: int, max_bytes: int = MAX_BYTES) -> str | None:
    """Why a text of `size` UTF-8 bytes is not drawn, or None when it may be.

    size_refusal("a.txt", 3_000_000) -> "a.txt: 3,000,000 bytes of text, more than render
    draws (1,048,576; --max-bytes N for more, or give part of the text)"."""
    if size <= max_bytes:
        return None
    return (
        f"{name}: {size:,} bytes of text, more than render draws ({max_bytes:,}; "
        "--max-bytes N for more, or give part of the text)"
    )


def render_png(
    tokenizer: Tokenizer, text: str, out: Path, width: int = 900, **specials: Any
) -> Path:
    """`text` cut by `tokenizer`, painted as coloured boxes into the PNG `out`."""
    if not render_image(token_groups(tokenizer, text, **specials), width).save(str(out)):
        raise OSError(f"could not write {out}")
    return out


def _ensure_app() -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    # A QApplication (not a bare QGuiApplication) so the window or a widget test can share it.
    if QApplication.instance() is None:
        _ensure_app.app = QApplication([])  # type: ignore[attr-defined]


PAD = 3  # margin around the picture, in pixels
LINE_GAP = 6  # between wrapped lines, so the token boxes of two lines do not touch


def _paragraphs(groups: list[TokenGroup]) -> list[tuple[str, list[tuple[int, int, int]]]]:
    """The text as drawn, one entry per line of the source: `(text, [(start, end, number)])`.

    Tab, CR and newline are shown as glyphs (a newline's ⏎ ends its line); ranges are in
    UTF-16 units, as Qt counts, and `number` is the group's index (its colour)."""
    paragraphs: list[tuple[str, list[tuple[int, int, int]]]] = []
    parts: list[str] = []
    ranges: list[tuple[int, int, int]] = []
    pos = 0
    for number, group in enumerate(groups):
        lines = group.text.split("\n")
        for line, part in enumerate(lines):
            last = line == len(lines) - 1
            label = part.replace("\t", TAB).replace("\r", CR) + ("" if last else NEWLINE)
            if label:
                units = len(label.encode("utf-16-le")) // 2
                ranges.append((pos, pos + units, number))
                parts.append(label)
                pos += units
            if not last:
                paragraphs.append(("".join(parts), ranges))
                parts, ranges, pos = [], [], 0
    if parts or not paragraphs:
        paragraphs.append(("".join(parts), ranges))
    return paragraphs


def _text_layouts(groups: list[TokenGroup], font, width: int) -> tuple[list, int]:
    """One `QTextLayout` per source line, wrapped to `width`: `([(layout, ranges, y)], height)`.

    A whole line is shaped at once, so letters that join (Arabic, Indic scripts) join across
    token boundaries as they do in the text; drawing token by token showed them isolated."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QTextLayout, QTextOption

    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    laid, y = [], PAD
    for text, ranges in _paragraphs(groups):
        layout = QTextLayout(text, font)
        layout.setTextOption(option)
        layout.beginLayout()
        height = 0.0
        while (line := layout.createLine()).isValid():
            line.setLineWidth(max(width - 2 * PAD, 1))
            line.setPosition(QPointF(0, height))
            height += line.height() + LINE_GAP
        layout.endLayout()
        laid.append((layout, ranges, y))
        y += int(height + 0.5)
    return laid, y + PAD + 6


def _x(line, position: int) -> float:
    at = line.cursorToX(position)
    return float(at[0] if isinstance(at, tuple) else at)


def paint_groups(painter: QPainter, groups: list[TokenGroup], width: int) -> int:
    """Paint the groups as coloured boxes wrapped to `width`; returns the height used.

    Backgrounds are drawn per token, the text per line over them (see `_text_layouts`)."""
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor

    laid, total = _text_layouts(groups, painter.font(), width)
    painter.setPen(Qt.PenStyle.NoPen)
    for layout, ranges, y in laid:
        lines = [layout.lineAt(i) for i in range(layout.lineCount())]
        for start, end, number in ranges:
            painter.setBrush(QColor(*token_rgb(groups[number].ids[0], bool(number & 1))))
            for line in lines:
                lo = max(start, line.textStart())
                hi = min(end, line.textStart() + line.textLength())
                if lo >= hi:
                    continue
                x1, x2 = sorted((_x(line, lo), _x(line, hi)))
                top = y + line.y() - 2
                painter.drawRoundedRect(
                    QRectF(PAD + x1, top, max(x2 - x1, 1.0), line.height() + 4), 3, 3
                )
    painter.setPen(QColor(20, 20, 20))
    for layout, _ranges, y in laid:
        layout.draw(painter, QPointF(PAD, y))
    return total


def render_image(groups: list[TokenGroup], width: int = 900) -> QImage:
    """The groups painted offscreen into a white QImage of `width` and the height they need."""
    _ensure_app()
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    font = QFont("monospace", 11)
    height = max(1, _text_layouts(groups, font, width)[1])
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    paint_groups(painter, groups, width)
    painter.end()
    return image


def render_file(
    tokenizer: Tokenizer,
    text: str,
    out: str | os.PathLike[str],
    png: bool | None = None,
    **specials: Any,
) -> Path:
    """Write `out` as .png or HTML (`png` None: by the suffix); `specials` as for
    `token_groups`. `out` is written by `workbench.output_file`: `-` is standard output, a
    regular file is staged and renamed (a full disk leaves the old one), a link is not followed."""
    from workbench.output_file import write_output, write_output_with

    if png is None:
        png = Path(out).suffix.lower() == ".png"
    if png:
        groups = token_groups(tokenizer, text, **specials)

        def save(path: Path) -> None:
            if not render_image(groups, 900).save(str(path), "PNG"):
                raise OSError(f"could not write {path}")

        write_output_with(out, save)
    else:
        title = "tokens" if str(out) == "-" else Path(out).stem
        write_output(out, render_html(tokenizer, text, title, **specials))
    return Path(out)
