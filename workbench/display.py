"""How tokens look to a person, in one place: whitespace glyphs, readable bytes, token colours.

Every view (merge list, charts, Tokens tab, corpus preview, HTML and PNG renders, the CLI) takes
its glyphs and colours from here, so a token reads and looks the same everywhere. No Qt: the
store, the CLI and worker threads use it too; Qt views wrap `token_rgb` in a QColor.

Glyphs are chosen from what the common fonts draw (DejaVu has no `␍`, so a carriage return is
`⇤`, "back to the start of the line"; it also differs from the newline's `⏎` at a glance).
"""

from __future__ import annotations

import colorsys
import functools
import re

import regex

SPACE, TAB, NEWLINE, CR = "·", "→", "⏎", "⇤"
GLYPHS = {" ": SPACE, "\t": TAB, "\n": NEWLINE, "\r": CR}
_ALL = str.maketrans(GLYPHS)
_HEX = re.compile(r"\\x([0-9a-f]{2})")
_GOLDEN = 0.618033988749895
_GRAPHEME = regex.compile(r"\X", regex.DOTALL)

GLYPH_LEGEND = (
    f"{SPACE} space   {TAB} tab   {NEWLINE} newline   {CR} carriage return   "
    "<E2> a byte that is not a whole character"
)


@functools.cache
def _byte_table() -> dict[int, str]:
    """Code point -> replacement, for str.translate in `readable`.

    `surrogateescape` decodes each stray byte 0x80-0xFF to U+DC80-U+DCFF, so those code points
    are exactly the bytes that were not part of a valid character.
    """
    table: dict[int, str] = {ord(c): glyph for c, glyph in GLYPHS.items()}
    for b in [*range(0x20), 0x7F]:
        table.setdefault(b, f"<{b:02X}>")
    for b in range(0x80, 0x100):
        table[0xDC00 + b] = f"<{b:02X}>"
    return table


def readable(token: bytes) -> str:
    """Token bytes as one searchable line: b" the" -> "·the"; b"\\xe2\\x80" -> "<E2><80>".

    A token that literally contains `·` or `<E2>` reads the same as what they stand for: the
    bytes stay the record, this form is for display and substring search only.
    """
    return token.decode("utf-8", "surrogateescape").translate(_byte_table())


def readable_query(text: str) -> str:
    """A typed search string in readable form: " the" -> "·the" (only whitespace maps)."""
    return text.translate(_ALL)


def real_text(token: bytes) -> str:
    """Token bytes as the text they are, for a regex: b" the" -> " the". Bytes that are not a
    whole character become lone surrogates (U+DC80..), which no ordinary pattern matches."""
    return token.decode("utf-8", "surrogateescape")


@functools.cache
def _table_keeping(keep: str) -> dict[int, str]:
    return str.maketrans({c: g for c, g in GLYPHS.items() if c not in keep})


def show_whitespace(text: str, keep: str = "") -> str:
    """Whitespace as glyphs, except the characters in `keep`: "a b\\r\\n" -> "a·b⇤⏎";
    show_whitespace("a b\\n", keep=" ") -> "a b⏎"."""
    return text.translate(_table_keeping(keep) if keep else _ALL)


def show_bytes(token: bytes) -> str:
    """Token bytes as text with partial characters in brackets: b'\\xe2\\x80' -> '<E2><80>'."""
    text = token.decode("utf-8", errors="backslashreplace")
    return _HEX.sub(lambda m: f"<{m.group(1).upper()}>", text)


@functools.cache
def _control_table() -> dict[int, str]:
    """Code point -> escape, for `escape_controls`: C0 (tab and newline too), DEL, C1, the
    bidirectional overrides and isolates (which reorder what follows them on screen), and
    the lone surrogates a file name of invalid UTF-8 decodes to (shown as the byte)."""
    table = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
    table.update({c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]})
    table.update({0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)})
    return table


def escape_controls(text: str) -> str:
    """A name or message fit for a terminal line: control characters as Python-style escapes,
    so a crafted file name cannot retitle, clear or recolour the terminal.
    escape_controls("doc\\x1b]0;X\\x07.txt") -> "doc\\\\x1b]0;X\\\\x07.txt" (backslash, x, 1, b)."""
    return text.translate(_control_table())


def grapheme_bounds(text: str) -> list[int]:
    """Character offsets where a user-perceived character (grapheme cluster) starts, plus the
    end: a flag or a ZWJ family is one cluster. grapheme_bounds("a🇫🇷") -> [0, 1, 3]."""
    return [m.start() for m in _GRAPHEME.finditer(text)] + [len(text)]


@functools.lru_cache(maxsize=65536)
def token_rgb(token_id: int, alternate: bool = False) -> tuple[int, int, int]:
    """The pastel colour of a token, the same in every view and every run.

    Hue steps by the golden ratio, so neighbouring ids (often related tokens) look different;
    `alternate` is a shade darker, for the odd one of two equal tokens side by side.
    """
    hue = (token_id * _GOLDEN) % 1.0
    red, green, blue = colorsys.hsv_to_rgb(hue, 0.32, 0.90 if alternate else 1.0)
    return round(red * 255), round(green * 255), round(blue * 255)


def token_hex(token_id: int, alternate: bool = False) -> str:
    """`token_rgb` as "#rrggbb"."""
    return "#{:02x}{:02x}{:02x}".format(*token_rgb(token_id, alternate))
