"""Pre-tokenization patterns: the presets and checked custom regexes.

Pieces are those of `regex.findall(pattern, text)` as Unicode 16.0 sees the text, the version
tiktoken and Hugging Face carry (the `regex` package's own tables are newer): `compile_pattern`
returns a `PinnedPattern`, which runs `regex` over `unicode_classes.stand_in(text)` when the text
holds a code point `regex` would classify otherwise (unassigned in 16.0, or recategorised), and
gives the spans and pieces of the original text. This holds for any pattern (`\\p{..}`, `\\w`,
scripts), except one that names such a stand-in code point literally.

A pattern must cover every character (a piece or part of one): `\\p{L}+` alone would drop
punctuation and digits, and "Hello, world 123!" would encode as "Helloworld". `check_coverage`
refuses such patterns, naming what they lose; `compile_pattern` calls it, so training settings
and tokenizer files go through the same check. Digit groups use `\\p{N}{1,3}` (not the
possessive `{1,3}+` of tiktoken's newer strings) because Hugging Face runs Split patterns with
Oniguruma, where the possessive form mis-splits digit runs; the pieces are the same in `regex`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import regex

from workbench.engine.errors import PatternError
from workbench.engine.patterns import unicode_classes as uc

GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CL100K = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# No pre-tokenization (minbpe's BasicTokenizer): the whole text is one piece. Written this way
# because it means the same in `regex` and in Hugging Face's Oniguruma.
NO_SPLIT = r"[\s\S]+"

PRESETS: dict[str, str] = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}
DEFAULT_PRESET = "gpt2"


def resolve(spec: str | None) -> str:
    """A preset name or a custom regex -> the pattern string (`None` -> the gpt2 preset)."""
    if spec is None or spec == "":
        return PRESETS[DEFAULT_PRESET]
    return PRESETS.get(spec, spec)


def preset_name(pattern: str) -> str | None:
    """The preset a pattern string is, or None for a custom pattern."""
    for name, text in PRESETS.items():
        if text == pattern:
            return name
    return None


# Characters of every kind a pattern must keep: ASCII, Latin-1, marks, CJK, digits of other
# scripts, emoji, every kind of line break and space.
_COVERAGE_PROBE = (
    "".join(map(chr, range(0x20, 0x7F)))
    + "\t\n\r\x0b\x0c\x85\xa0\u2028\u3000\x00\x7f"
    + "éÉßĳ\u0301\u0663²½Ⅻ中文ひらがなカタカナ한국어العربيةעבריתΩЖ€£¥©®™…—–“”‘’«»¡¿"
    + "\U0001f600\U0001f44d\u200d\ufeff\U0010ffff"
)
COVERAGE_TIMEOUT = 2.0


def lost_characters(compiled: PinnedPattern) -> str:
    r"""The probe characters that no match of `compiled` covers (in the whole probe, or alone).

    `lost_characters(PinnedPattern(r"\p{L}+"))` starts `" !\"#$%&'()*+,-./0123456789"`.
    """
    lost: dict[str, None] = {}
    for text in (_COVERAGE_PROBE, *_COVERAGE_PROBE):
        covered = bytearray(len(text))
        for start, end in compiled.finditer(text, timeout=COVERAGE_TIMEOUT):
            covered[start:end] = b"\x01" * (end - start)
        lost.update((text[k], None) for k, flag in enumerate(covered) if not flag)
    return "".join(lost)


def check_coverage(pattern: str, compiled: PinnedPattern) -> None:
    """Refuse a pattern that drops characters: the text between its matches would vanish."""
    try:
        lost = lost_characters(compiled)
    except TimeoutError:
        raise PatternError(
            f"the pattern {_short(pattern)} is too slow on a short probe text"
            " (catastrophic backtracking?)"
        ) from None
    if lost:
        shown = ", ".join(repr(c) for c in lost[:12]) + (", ..." if len(lost) > 12 else "")
        raise PatternError(
            f"the pattern {_short(pattern)} does not cover every character: text between its"
            f" matches would be lost ({len(lost)} of the probe characters, e.g. {shown});"
            r" add an alternative such as |\s+|\S to keep them"
        )


# The end of every message about text a pattern leaves between its matches in context.
GAP_ADVICE = (
    "use a pattern that covers every character"
    r" (for instance with an alternative |\s+|\S)"
)


def first_gap(spans: Iterable[tuple[int, int]], length: int) -> int | None:
    """Where the first character no span covers starts, for a pattern's matches (in order, not
    overlapping) over a text of `length` characters; None when they tile it. The coverage probe
    cannot settle every text (`\\S+|\\s+(?![0-9])` covers each character, yet skips a space
    before a digit), so the splitter and the counter check the texts themselves."""
    at = 0
    for start, end in spans:
        if start != at:
            return at
        at = end
    return at if at < length else None


def _short(pattern: str, limit: int = 60) -> str:
    return repr(pattern if len(pattern) <= limit else pattern[:limit] + "...")


class PinnedPattern:
    """A compiled pattern that classifies code points as Unicode 16.0 does (module doc).

    Methods are those of `regex.Pattern` the workbench uses; matches are always whole matches
    (as tiktoken and Hugging Face use them), even if the pattern has groups.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled = regex.compile(pattern)

    def finditer(self, text: str, *args: Any, **kwargs: Any) -> Iterator[tuple[int, int]]:
        """(start, end) of each match (character offsets into `text`)."""
        for match in self._compiled.finditer(uc.stand_in(text), *args, **kwargs):
            yield match.span()

    def findall(self, text: str, *args: Any, **kwargs: Any) -> list[str]:
        """The pieces of `text` (substrings of the original, never of the stand-in)."""
        seen = uc.stand_in(text)
        if seen is text and self._compiled.groups == 0:
            return self._compiled.findall(text, *args, **kwargs)
        return [text[a:b] for a, b in self.finditer(text, *args, **kwargs)]

    def fullmatch(self, text: str, *args: Any, **kwargs: Any) -> bool:
        return self._compiled.fullmatch(uc.stand_in(text), *args, **kwargs) is not None


@functools.lru_cache(maxsize=64)
def compile_pattern(spec: str | None) -> PinnedPattern:
    """Compile a preset or custom pattern (seeing Unicode 16.0), with a clear error if it
    cannot serve: it does not compile, it can match the empty string (`findall` would emit empty
    pieces, and other engines loop on them), or it drops characters (`check_coverage`).
    """
    pattern = resolve(spec)
    try:
        compiled = PinnedPattern(pattern)
    except regex.error as exc:
        raise PatternError(f"the pattern does not compile: {exc}") from None
    try:
        empty = compiled.fullmatch("", timeout=COVERAGE_TIMEOUT) or any(
            a == b for a, b in compiled.finditer("a 1 !\n", timeout=COVERAGE_TIMEOUT)
        )
    except TimeoutError:
        empty = False  # reported by check_coverage below
    if empty:
        raise PatternError("the pattern can match the empty string; every piece must be non-empty")
    check_coverage(pattern, compiled)
    return compiled
