"""Token bytes as one line of text a person can read and search: `readable(b" the") == "·the"`.

Whitespace gets a visible glyph (space `·`, tab `→`, newline `⏎`, carriage return `␍`), other
control bytes and every byte that is not part of a complete UTF-8 character show as `<E2>`, so a
token cut in the middle of a character (`b"\\xe2\\x80"`) still reads as something. The form is for
display and substring search only; the bytes stay the record (a token that literally contains
`·` or `<E2>` reads the same as the whitespace or byte it stands for, so search by hex to be exact).
"""

from __future__ import annotations

import functools

_GLYPHS = {" ": "·", "\t": "→", "\n": "⏎", "\r": "␍"}


@functools.cache
def _char_table() -> dict[int, str]:
    """Code point -> replacement, for str.translate.

    `surrogateescape` decodes each stray byte 0x80-0xFF to U+DC80-U+DCFF, so those code points
    are exactly the bytes that were not part of a valid character.
    """
    table: dict[int, str] = {ord(c): glyph for c, glyph in _GLYPHS.items()}
    for b in [*range(0x20), 0x7F]:
        table.setdefault(b, f"<{b:02X}>")
    for b in range(0x80, 0x100):
        table[0xDC00 + b] = f"<{b:02X}>"
    return table


def readable(token: bytes) -> str:
    """b" the" -> "·the"; b"\\xe2\\x80" -> "<E2><80>"; b"\\n\\n" -> "⏎⏎"."""
    return token.decode("utf-8", "surrogateescape").translate(_char_table())


def readable_query(text: str) -> str:
    """What a typed search string looks like in readable form: " the" -> "·the".

    Only whitespace is mapped; a query is text, so it has no partial characters to escape.
    """
    return text.translate({ord(c): glyph for c, glyph in _GLYPHS.items()})
