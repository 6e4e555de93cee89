"""Token groups as HTML: the one HTML renderer of how a tokenizer splits a text (the `render`
command, the Tokens tab's Share, the notebook display). No Qt: `render` adds the PNG.

A group is one token, or the run of tokens that split one character between them (byte-level BPE
can cut `é` = C3 A9 in two): the viewer never prints U+FFFD for half a character, it shows the
whole character once and lists every token's bytes (`<C3>`, `<A9>`) in the title. A
user-perceived character made of several code points (a flag, a ZWJ family) is one group too.
Colours and glyphs come from `workbench.display`, so this page, the PNG and the window look alike.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.display import CR, grapheme_bounds, show_bytes, token_rgb

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import Tokenizer


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


# The spans' look, for the page's <style> (`_SPAN_STYLE` is also inlined where no <style> reaches).
_SPAN_STYLE = "border-radius:3px;margin-right:1px;padding:1px 0"


def to_html(groups: list[TokenGroup], title: str = "tokens") -> str:
    """A standalone page: one `<span data-ids="...">` per group, coloured by its first id (in
    alternating shades, so two equal tokens side by side stay apart); the root `<div>` lists
    every id in `data-all-ids`. A group of several tokens is underlined (dotted)."""
    style = f"body{{font-family:monospace;white-space:pre-wrap;line-height:1.7}}.t{{{_SPAN_STYLE}}}"
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head>\n<body><h3>{html.escape(title)}</h3>"
        f"{tokens_div(groups)}</body></html>\n"
    )


def tokens_div(groups: list[TokenGroup], inline_style: bool = False) -> str:
    """`to_html`'s `<div class='tokens'>` alone, to embed in another page (a notebook's
    output: `inline_style` puts the spans' look on each span, where no <style> reaches)."""
    spans = []
    for number, group in enumerate(groups):
        red, green, blue = token_rgb(group.ids[0], bool(number & 1))
        ids = " ".join(map(str, group.ids))
        tip = html.escape(
            " | ".join(f"{i}: {s}" for i, s in zip(group.ids, group.shown, strict=True))
        )
        split = ";text-decoration:underline dotted #c0392b" if len(group.ids) > 1 else ""
        text = html.escape(group.text).replace("\r", CR)
        look = f"{_SPAN_STYLE};" if inline_style else ""
        spans.append(
            f'<span class="t" data-ids="{ids}" title="{tip}" '
            f'style="{look}background:#{red:02x}{green:02x}{blue:02x}{split}">{text}</span>'
        )
    every = " ".join(str(i) for group in groups for i in group.ids)
    block = "font-family:monospace;white-space:pre-wrap;line-height:1.7" if inline_style else ""
    style = f" style='{block}'" if block else ""
    return f"<div class='tokens' data-all-ids='{every}'{style}>{''.join(spans)}</div>"


def render_html(tokenizer: Tokenizer, text: str, title: str = "tokens", **specials: Any) -> str:
    """The page `to_html` makes for `text` cut by `tokenizer` (`specials` as for
    `token_groups`)."""
    return to_html(token_groups(tokenizer, text, **specials), title)
