"""Share a view: the coloured split as an HTML file and a PNG.

The brief asks for `workbench/render.py` (the drawing `bpe-workbench render` uses). When that
module offers `render_html(tokenizer, text)` and `render_png(tokenizer, text, path)` they are
used, so the window and the CLI draw the same thing; until then this module draws it itself:
one `<span data-id=…>` per token (split characters as one group carrying all its ids) inside
`<div data-ids="…">`, and the PNG is that HTML laid out by a QTextDocument.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtGui import QColor, QImage, QPainter, QTextDocument

from workbench.engine.tokenizer import Tokenizer
from workbench.gui.tokens.colors import color_hex
from workbench.gui.tokens.encoded import Encoded, TokenTable, encode_text

_GLYPHS = {" ": "·", "\t": "→", "\n": "⏎<br>", "\r": "␍"}


def _render_module():
    try:
        from workbench import render  # the shared drawing, when it exists
    except ImportError:
        return None
    if hasattr(render, "render_html") and hasattr(render, "render_png"):
        return render
    return None


def _chars(text: str) -> str:
    return "".join(_GLYPHS.get(c, html.escape(c)) for c in text)


def split_html(enc: Encoded, title: str = "") -> str:
    """HTML of the coloured split; `data-ids` on the root lists `encode`'s ids in order."""
    ids = enc.ids.tolist()
    groups = enc.group.tolist()
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title or 'token split')}</title></head>",
        "<body style='font-family: monospace; font-size: 14px; line-height: 1.6'>",
        f"<p>{html.escape(title)} — {len(ids):,} tokens, {enc.n_bytes:,} bytes</p>",
        f"<div data-ids='{' '.join(map(str, ids))}'>",
    ]
    i = 0
    while i < len(ids):
        j = i + 1
        while j < len(ids) and groups[j] == groups[i]:
            j += 1
        chars = enc.text[int(enc.char_start[i]) : int(enc.char_end[j - 1])]
        group_ids = " ".join(map(str, ids[i:j]))
        colour = color_hex(ids[i], bool(groups[i] & 1))
        style = f"background-color:{colour}"
        if j - i > 1 or enc.splits_char[i]:
            style += "; text-decoration: underline dotted #c0392b"
        attrs = f"data-id='{group_ids}' title='{group_ids}' style='{style}'"
        parts.append(f"<span {attrs}>{_chars(chars)}</span>")
        i = j
    parts.append("</div></body></html>")
    return "".join(parts)


def save_html(tok: Tokenizer, text: str, path: str | Path, title: str = "") -> Path:
    path = Path(path)
    shared = _render_module()
    if shared is not None:
        path.write_text(shared.render_html(tok, text), encoding="utf-8")
    else:
        path.write_text(split_html(encode_text(TokenTable(tok), text), title), encoding="utf-8")
    return path


def save_png(
    tok: Tokenizer, text: str, path: str | Path, title: str = "", width: int = 900
) -> Path:
    path = Path(path)
    shared = _render_module()
    if shared is not None:
        shared.render_png(tok, text, path)
        return path
    doc = QTextDocument()
    doc.setHtml(split_html(encode_text(TokenTable(tok), text), title))
    doc.setTextWidth(width)
    size = doc.size()
    image = QImage(int(size.width()) + 1, int(size.height()) + 1, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    doc.drawContents(painter)
    painter.end()
    if not image.save(str(path)):
        raise OSError(f"could not write {path}")
    return path


__all__ = ["save_html", "save_png", "split_html"]
