"""The token strip: the text laid out token by token, with ids, bytes and whitespace glyphs.

The editor above it shows the text as typed; the strip shows what the tokenizer sees. Tokens that
cut one UTF-8 character are one group: the character once, then each token's bytes in brackets
(`😀[F0 9F|98 80]`), never `�`. Only the first `limit` tokens are laid out: the strip is for
reading, and a 100 KB text's 25k chips would cost the re-render budget for nothing.

Right-to-left text (Hebrew, Arabic) must not reorder the strip: a Hebrew token would otherwise
swap places with its neighbours and its brackets would be mirrored (`]D7 A9[`). So the strip is
an LTR paragraph (the view sets its direction) and each token's characters sit in a first-strong
isolate (FSI..PDI): a Hebrew token reads right to left inside its chip, the chips and the hex
bytes run left to right. Carriage returns are drawn as `⇤` (`workbench.display`).

`build_strip` is plain Python (formats come from `colors`), so it is tested without a widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtGui import QTextCharFormat

from workbench.display import show_whitespace
from workbench.gui.tokens.colors import annotation_format, token_format
from workbench.gui.tokens.encoded import Encoded

STRIP_LIMIT = 1500
FSI, LRI, PDI = "\u2068", "\u2066", "\u2069"  # bidi isolates: see the module docstring


@dataclass
class Strip:
    """Text of the strip plus format ranges in UTF-16 units, and which token each chip is."""

    text: str = ""
    ranges: list[tuple[int, int, QTextCharFormat]] = field(default_factory=list)
    chip_start: list[int] = field(default_factory=list)  # UTF-16, sorted
    chip_end: list[int] = field(default_factory=list)
    chip_token: list[int] = field(default_factory=list)
    truncated: bool = False

    def token_at(self, position: int) -> int | None:
        import bisect

        i = bisect.bisect_right(self.chip_start, position) - 1
        if i >= 0 and position < self.chip_end[i]:
            return self.chip_token[i]
        return None


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0  # UTF-16 units so far
        self.strip = Strip()

    def add(self, text: str, fmt: QTextCharFormat | None = None, token: int | None = None) -> None:
        units = len(text.encode("utf-16-le")) // 2
        if fmt is not None and units:
            self.strip.ranges.append((self.length, self.length + units, fmt))
        if token is not None:
            self.strip.chip_start.append(self.length)
            self.strip.chip_end.append(self.length + units)
            self.strip.chip_token.append(token)
        self.parts.append(text)
        self.length += units


def _label(text: str, glyphs: bool) -> str:
    """How a token's characters read in the strip; line breaks always show (a CR as `⇤`)."""
    return show_whitespace(text) if glyphs else show_whitespace(text, keep=" \t")


def _chip(out: _Builder, text: str, fmt: QTextCharFormat, token: int) -> None:
    """A token's characters, isolated so right-to-left text cannot reorder the strip."""
    out.add(FSI)
    out.add(text, fmt, token=token)
    out.add(PDI)


def build_strip(
    enc: Encoded,
    token_bytes: dict[int, bytes],
    show_ids: bool,
    show_bytes: bool,
    glyphs: bool,
    limit: int = STRIP_LIMIT,
) -> Strip:
    """Lay out the first `limit` tokens of `enc` (see the module docstring)."""
    out = _Builder()
    count = min(len(enc), limit)
    ids = enc.ids.tolist()
    cs, ce = enc.char_start.tolist(), enc.char_end.tolist()
    groups = enc.group.tolist()
    i = 0
    while i < count:
        j = i + 1
        while j < len(enc) and groups[j] == groups[i]:
            j += 1
        alt = bool(groups[i] & 1)
        chars = enc.text[cs[i] : ce[j - 1]]
        if j - i == 1 and not enc.splits_char[i] and not enc.splits_cluster[i]:
            _chip(out, _label(chars, glyphs), token_format(ids[i], alt, False, False), i)
            _annotate(out, ids[i], token_bytes.get(ids[i], b""), show_ids, show_bytes)
        else:
            # A character or cluster cut between tokens: drawn once, whole, then every token's
            # bytes with `|` where one token ends and the next begins.
            _chip(out, _label(chars, glyphs), token_format(ids[i], alt, True, False), i)
            out.add(LRI + "[")
            for k in range(i, j):
                if k > i:
                    out.add("|")
                hexes = token_bytes.get(ids[k], b"").hex(" ").upper()
                out.add(hexes, token_format(ids[k], bool(k & 1), True, False), token=k)
                if show_ids:
                    out.add("\u202f" + str(ids[k]), annotation_format())
            out.add("]" + PDI)
        if "\n" in chars:
            out.add("\n")
        elif show_ids or show_bytes:
            out.add(" ")
        i = j
    out.strip.truncated = count < len(enc)
    if out.strip.truncated:
        out.add(f"\n… {len(enc) - count:,} more tokens (the text above is coloured throughout)")
    out.strip.text = "".join(out.parts)
    return out.strip


def _annotate(out: _Builder, tid: int, raw: bytes, show_ids: bool, show_bytes: bool) -> None:
    if show_ids:
        out.add(LRI + str(tid) + PDI, annotation_format())
    if show_bytes:
        out.add(LRI + " " + raw.hex(" ").upper() + PDI, annotation_format())
