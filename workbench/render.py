"""Show how a tokenizer splits a text: token groups, as HTML or painted with QPainter.

A group is one token, or the run of tokens that split one character between them (byte-level BPE
can cut `é` = C3 A9 in two): the viewer never prints U+FFFD for half a character, it shows the
whole character once and lists every token's bytes (`<C3>`, `<A9>`) in the tooltip/title.
A user-perceived character made of several code points (a flag, a ZWJ family) is one group too,
so it is drawn as one glyph. Colours and glyphs come from `workbench.display`, so this page, the
PNG and the window look alike. This is the one HTML renderer: the Tokens tab's Share uses it.
The Qt part is imported lazily so the HTML path (and the engine) never need a display.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.display import CR, NEWLINE, TAB, grapheme_bounds, show_bytes, token_rgb
from workbench.engine.encode.tokenizer import Tokenizer

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


@dataclass(frozen=True, slots=True)
class TokenGroup:
    """Tokens `ids` covering `text` (characters `char_start:char_end` of the source)."""

    ids: tuple[int, ...]
    text: str
    char_start: int
    char_end: int
    shown: tuple[str, ...]  # each token's bytes, readable: b"\xe2\x80" -> "<E2><80>"


def token_groups(tokenizer: Tokenizer, text: str, **specials: Any) -> list[TokenGroup]:
    """Group tokens whose character spans overlap (a character split across tokens) or that
    share one user-perceived character (a flag, an emoji ZWJ sequence).

    `specials`: `allowed_special` / `disallowed_special` as for `Tokenizer.encode` (default:
    "all", since a viewer shows a user's own tokenizer on a user's own text).
    """
    table = tokenizer.decode_table()
    cluster_starts = set(grapheme_bounds(text))
    groups: list[TokenGroup] = []
    run: list = []

    def flush() -> None:
        if run:
            start, end = run[0].char_start, max(s.char_end for s in run)
            ids = tuple(s.id for s in run)
            shown = tuple(show_bytes(table[i]) for i in ids)
            groups.append(TokenGroup(ids, text[start:end], start, end, shown))
            run.clear()

    specials = specials or {"allowed_special": "all"}
    for span in tokenizer.encode_with_spans(text, **specials):
        if (
            run
            and span.char_start >= max(s.char_end for s in run)
            and span.char_start in cluster_starts
        ):
            flush()
        run.append(span)
    flush()
    return groups


def to_html(groups: list[TokenGroup], title: str = "tokens") -> str:
    """A standalone page: one `<span data-ids="...">` per group, coloured by its first id (in
    alternating shades, so two equal tokens side by side stay apart); the root `<div>` lists
    every id in `data-all-ids`. A group of several tokens is underlined (dotted)."""
    spans = []
    for number, group in enumerate(groups):
        red, green, blue = token_rgb(group.ids[0], bool(number & 1))
        ids = " ".join(map(str, group.ids))
        tip = html.escape(
            " | ".join(f"{i}: {s}" for i, s in zip(group.ids, group.shown, strict=True))
        )
        split = ";text-decoration:underline dotted #c0392b" if len(group.ids) > 1 else ""
        text = html.escape(group.text).replace("\r", CR)
        spans.append(
            f'<span class="t" data-ids="{ids}" title="{tip}" '
            f'style="background:#{red:02x}{green:02x}{blue:02x}{split}">{text}</span>'
        )
    every = " ".join(str(i) for group in groups for i in group.ids)
    style = (
        "body{font-family:monospace;white-space:pre-wrap;line-height:1.7}"
        ".t{border-radius:3px;margin-right:1px;padding:1px 0}"
    )
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head>\n<body><h3>{html.escape(title)}</h3>"
        f"<div class='tokens' data-all-ids='{every}'>{''.join(spans)}</div></body></html>\n"
    )


def render_html(tokenizer: Tokenizer, text: str, title: str = "tokens", **specials: Any) -> str:
    """The page `to_html` makes for `text` cut by `tokenizer` (`specials` as for
    `token_groups`)."""
    return to_html(token_groups(tokenizer, text, **specials), title)


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


def _layout(groups: list[TokenGroup], metrics, width: int) -> list[tuple[int, int, int, str, int]]:
    """Boxes `(x, y, w, label, number)`; a newline shows as ⏎ and starts a new line."""
    boxes = []
    pad, line_h = 3, metrics.height() + 6
    x = y = pad
    for number, group in enumerate(groups):
        lines = group.text.split("\n")
        for line, part in enumerate(lines):
            last = line == len(lines) - 1
            label = part.replace("\t", TAB).replace("\r", CR) + ("" if last else NEWLINE)
            if label:
                w = metrics.horizontalAdvance(label) + 2
                if x + w > width - pad and x > pad:
                    x, y = pad, y + line_h
                boxes.append((x, y, w, label, number))
                x += w + 1
            if not last:
                x, y = pad, y + line_h
    return boxes


def paint_groups(painter: QPainter, groups: list[TokenGroup], width: int) -> int:
    """Paint the groups as coloured boxes wrapped to `width`; returns the height used."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor

    metrics = painter.fontMetrics()
    boxes = _layout(groups, metrics, width)
    for x, y, w, label, number in boxes:
        rect = QRectF(x, y, w, metrics.height() + 4)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(*token_rgb(groups[number].ids[0], bool(number & 1))))
        painter.drawRoundedRect(rect, 3, 3)
        painter.setPen(QColor(20, 20, 20))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
    return (boxes[-1][1] if boxes else 0) + metrics.height() + 12


def render_image(groups: list[TokenGroup], width: int = 900) -> QImage:
    """The groups painted offscreen into a white QImage of `width` and the height they need."""
    _ensure_app()
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    font = QFont("monospace", 11)
    probe = QImage(1, 1, QImage.Format.Format_ARGB32)
    painter = QPainter(probe)
    painter.setFont(font)
    height = max(1, _height(groups, painter, width))
    painter.end()
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    paint_groups(painter, groups, width)
    painter.end()
    return image


def _height(groups: list[TokenGroup], painter: QPainter, width: int) -> int:
    metrics = painter.fontMetrics()
    boxes = _layout(groups, metrics, width)
    return (boxes[-1][1] if boxes else 0) + metrics.height() + 12


def render_file(tokenizer: Tokenizer, text: str, out: Path, **specials: Any) -> Path:
    """Write `out` as .html or .png (chosen by suffix); `specials` as for `token_groups`."""
    if out.suffix.lower() == ".png":
        return render_png(tokenizer, text, out, **specials)
    out.write_text(render_html(tokenizer, text, out.stem, **specials), encoding="utf-8")
    return out
