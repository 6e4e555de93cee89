"""Pre-tokenization as a swappable step of the encoder: text -> piece byte spans.

A splitter is any callable `(text, data) -> (starts, ends)` where `data == text.encode()` and the
result is two int64 arrays of byte offsets into `data`. `RegexSplitter` runs `regex` (exactly the
pieces tiktoken sees): the tokenizer uses it for custom patterns or when asked
(`Tokenizer.with_splitter("regex")`); preset patterns default to the fused Numba scanner, which
does not go through a `Splitter` at all. Any callable can be passed to `with_splitter`.
Text the pattern does not match is not dropped, as tiktoken would drop it:
`patterns.check_coverage` refuses patterns that drop any of a probe's characters, but no probe
settles every text (a pattern from a damaged file can cover each character alone and still skip
a space between two words), so a text whose pieces leave a gap is a TokenizerError that shows
what would be lost (`patterns.first_gap`). A pattern that backtracks catastrophically
(`(a|aa)+$|\\S|\\s` on forty `a`s) would never return: the regex runs under a timeout that
grows with the text (`regex_timeout`), and running out is a TokenizerError naming the pattern
and the text.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.regexes import GAP_ADVICE, compile_pattern, first_gap

# Seconds allowed: a base plus a time per character far beyond any sane pattern's (the slowest
# preset spelled out at Unicode 16.0 needs about 7 microseconds per character).
TIMEOUT_BASE = 10.0
TIMEOUT_PER_CHAR = 20e-6


def regex_timeout(text: str) -> float:
    return TIMEOUT_BASE + TIMEOUT_PER_CHAR * len(text)


Splitter = Callable[[str, bytes], tuple[np.ndarray, np.ndarray]]


def char_to_byte(text: str) -> np.ndarray:
    """Byte offset of every character boundary: `char_to_byte("aé") -> [0, 1, 3]`."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
    offsets = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    return offsets


class RegexSplitter:
    """The reference splitter: `regex.findall(pattern, text)`, as byte spans."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled = compile_pattern(pattern)

    def __call__(self, text: str, data: bytes) -> tuple[np.ndarray, np.ndarray]:
        try:
            return self._split(text, data)
        except TimeoutError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise TokenizerError(
                f"the pattern {self.pattern[:60]!r} took more than {regex_timeout(text):.0f} s on"
                f" the text {shown!r} ({len(text):,} characters): it backtracks catastrophically;"
                " use a simpler pattern"
            ) from None

    def _split(self, text: str, data: bytes) -> tuple[np.ndarray, np.ndarray]:
        timeout = regex_timeout(text)
        pieces = self._compiled.findall(text, timeout=timeout)
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        if int(lengths.sum()) == len(text):  # the usual case: pieces tile the text
            ends = np.cumsum(lengths)
            starts = ends - lengths
        else:
            spans = list(self._compiled.finditer(text, timeout=timeout))
            self._refuse_gap(text, spans)
            table = np.array(spans, dtype=np.int64).reshape(-1, 2)
            starts, ends = table[:, 0].copy(), table[:, 1].copy()
        if len(data) != len(text):
            offsets = char_to_byte(text)
            starts, ends = offsets[starts], offsets[ends]
        return starts, ends

    def _refuse_gap(self, text: str, spans: list[tuple[int, int]]) -> None:
        """Raise if the pieces leave characters of `text` out."""
        at = first_gap(spans, len(text))
        if at is None:
            return
        raise TokenizerError(
            f"the pattern {self.pattern[:60]!r} matches no piece at character {at} of the text"
            f" ({text[at : at + 20]!r}): encoding would lose that text; {GAP_ADVICE}"
        )
