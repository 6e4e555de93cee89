"""Encoding text that arrives in pieces (a file's lines, a generator) in bounded memory.

    for tid in encode_iterable(tokenizer, open("big.txt", encoding="utf-8")): ...

gives the ids of `tokenizer.encode` on the whole concatenation, while holding only a stretch of
text at a time. The stream is cut where encoding the two sides apart changes nothing, by the
corpus reader's rule (`corpus.safe_cut`): right after a letter that a space, tab or newline
follows (no preset pattern's piece crosses that point), or right after an allowed special token
(split out as its own id); never where any special token, allowed or not, could span the cut.

With a custom pattern (or a custom splitter) there is no such promise inside text, so the stream
is cut only after allowed special tokens: memory is then bounded only if they occur.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import regex

from workbench.engine.corpus.documents import _SAFE_CUT, safe_cut  # the reader's cut rule, shared
from workbench.engine.encode.validation import special_rules
from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.regexes import preset_name
from workbench.engine.patterns.specials import specials_regex

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import AllowedSpecial, DisallowedSpecial, Tokenizer

HOLD_CHARS = 1 << 16  # characters gathered before looking for a cut (then encoded in one call):
# 64K keeps a stream's peak near 1 MB (256K: 9 MB, the encoder's buffers and cache grow with it)


def encode_iterable(
    tokenizer: Tokenizer,
    texts: Iterable[str],
    allowed_special: AllowedSpecial = frozenset(),
    disallowed_special: DisallowedSpecial = "all",
    hold_chars: int = HOLD_CHARS,
) -> Iterator[int]:
    """The ids of `"".join(texts)`, one at a time; specials as for `Tokenizer.encode`."""
    for part in stream_parts(tokenizer, texts, allowed_special, disallowed_special, hold_chars):
        yield from tokenizer.encode(part, allowed_special, disallowed_special)


def stream_parts(
    tokenizer: Tokenizer,
    texts: Iterable[str],
    allowed_special: AllowedSpecial = frozenset(),
    disallowed_special: DisallowedSpecial = "all",
    hold_chars: int = HOLD_CHARS,
) -> Iterator[str]:
    """`"".join(texts)` in parts of about `hold_chars` that `tokenizer` encodes apart exactly as
    it encodes the whole (for callers that encode several parts at once, or check them first)."""
    allowed, _ = special_rules(tokenizer.special_tokens, allowed_special, disallowed_special)
    cutter = StreamCutter(
        tuple(tokenizer.special_tokens),
        allowed,
        tokenizer.splitter != "custom" and preset_name(tokenizer.pattern) is not None,
    )
    return cutter.parts(texts, hold_chars)


class StreamCutter:
    """Cuts a stream of strings into parts that encode as the whole does.

    `StreamCutter((), (), True).cut("one two thr")` -> 7 (after "two": "thr" may go on).
    """

    def __init__(self, specials: tuple[str, ...], allowed: tuple[str, ...], cut_inside: bool):
        self.every = specials_regex(tuple(sorted(specials)))
        self.allowed = specials_regex(tuple(sorted(allowed)))
        self.reach = max(map(len, specials), default=0)
        self.cut_inside = cut_inside

    def parts(self, texts: Iterable[str], hold_chars: int) -> Iterator[str]:
        """The stream in parts of about `hold_chars` or more (as long as it takes to find a
        cut); their concatenation is the stream's."""
        held: list[str] = []
        size = 0
        look_at = hold_chars
        for number, text in enumerate(texts, 1):
            if not isinstance(text, str):
                raise TokenizerError(
                    f"encode_iterable: item {number} is {type(text).__name__}, not str"
                )
            held.append(text)
            size += len(text)
            if size < look_at:
                continue
            buffer = "".join(held)
            cut = self.cut(buffer)
            rest = buffer[cut:]
            if cut > 0:
                yield buffer[:cut]
            held, size = [rest], len(rest)
            # Nowhere to cut (yet): look again only once the text held has doubled, so a long
            # stretch without a cut point costs linear time, not one search per item.
            look_at = max(hold_chars, 2 * size)
        if size:
            yield "".join(held)

    def cut(self, buffer: str) -> int:
        """The last position where `buffer` may be cut before more text is appended, or 0."""
        at_special = self._after_allowed(buffer)
        inside = safe_cut(buffer, _SAFE_CUT, self.every, self.reach) if self.cut_inside else 0
        return max(at_special, inside)

    def _after_allowed(self, buffer: str) -> int:
        """The end of the last allowed special that more text cannot lengthen and that no
        other special token overlaps."""
        if self.allowed is None:
            return 0
        ends = [m.end() for m in self.allowed.finditer(buffer)]
        for end in reversed(ends):
            if end <= len(buffer) - self.reach and not self._spanned(buffer, end):
                return end
        return 0

    def _spanned(self, buffer: str, cut: int) -> bool:
        assert isinstance(self.every, regex.Pattern)
        window = self.every.finditer(
            buffer, max(0, cut - self.reach), cut + self.reach, overlapped=True
        )
        return any(m.start() < cut < m.end() for m in window)
