"""Share a view: the coloured split as an HTML file and a PNG.

Both are drawn by `workbench.render` (the drawing `bpe-workbench render` uses), so the window and
the CLI share one renderer: one `<span data-ids=…>` per token group (a split character or one
user-perceived character as one group carrying all its ids), inside a root `<div>` whose
`data-all-ids` lists `encode`'s ids in order.
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.render import render_html, render_png


def save_html(tok: Tokenizer, text: str, path: str | Path, title: str = "") -> Path:
    path = Path(path)
    path.write_text(render_html(tok, text, title or "token split"), encoding="utf-8")
    return path


def save_png(
    tok: Tokenizer, text: str, path: str | Path, title: str = "", width: int = 900
) -> Path:
    """`title` is for the HTML page; the PNG shows the tokens only."""
    return render_png(tok, text, Path(path), width)


__all__ = ["save_html", "save_png"]
