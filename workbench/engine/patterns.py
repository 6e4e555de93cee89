"""Pre-tokenization patterns: the presets and checked custom regexes.

Pieces are always exactly `regex.findall(pinned(pattern), text)`: `pinned` spells `\\p{L}`,
`\\p{N}`, `\\p{M}`, their categories (`\\p{Lu}`...) and `\\d` as explicit Unicode 16.0 sets, the
version tiktoken and Hugging Face carry (the `regex` package's own tables are newer). What it
leaves to `regex`: `\\P{..}` and `\\D` inside a set, `\\w`, `\\b`, scripts and other properties.

A pattern must cover every character (a piece or part of one): `\\p{L}+` alone would drop
punctuation and digits, and "Hello, world 123!" would encode as "Helloworld". `check_coverage`
refuses such patterns, naming what they lose; `compile_pattern` calls it, so training settings
and tokenizer files go through the same check. Digit groups use `\\p{N}{1,3}` (not the
possessive `{1,3}+` of tiktoken's newer strings) because Hugging Face runs Split patterns with
Oniguruma, where the possessive form mis-splits digit runs; the pieces are the same in `regex`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import regex

from workbench.engine import unicode_classes as uc
from workbench.engine.errors import PatternError

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


# Loose names (case, spaces, underscores ignored) of the classes `pinned` spells out.
_PROPERTY_NAMES: dict[str, str] = {
    **{name.lower(): name for name in uc.GROUPS},
    "letter": "L",
    "mark": "M",
    "combiningmark": "M",
    "number": "N",
    "uppercaseletter": "Lu",
    "lowercaseletter": "Ll",
    "titlecaseletter": "Lt",
    "modifierletter": "Lm",
    "otherletter": "Lo",
    "nonspacingmark": "Mn",
    "spacingmark": "Mc",
    "enclosingmark": "Me",
    "decimalnumber": "Nd",
    "letternumber": "Nl",
    "othernumber": "No",
}
_PROPERTY = regex.compile(r"\\([pP])(?:\{([^}]*)\}|([A-Za-z]))")


def _class_name(spelled: str) -> str | None:
    key = regex.sub(r"[\s_-]", "", spelled).lower()
    for prefix in ("gc=", "generalcategory=", "general_category="):
        key = key.removeprefix(prefix)
    return _PROPERTY_NAMES.get(key)


@functools.lru_cache(maxsize=64)
def pinned(pattern: str) -> str:
    r"""`pattern` with its Unicode classes spelled out at Unicode 16.0 (see the module docstring).

    `pinned(r"\p{N}+")` -> `[\u0030-\u0039\u00B2-...]+`; inside a set only the ranges go in:
    `[^\s\p{N}]` -> `[^\s\u0030-\u0039...]`. Escaped backslashes and `\Q...\E` are respected.
    """
    out: list[str] = []
    i, in_set, n = 0, False, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            match = _PROPERTY.match(pattern, i)
            name = _class_name(match.group(2) or match.group(3)) if match else None
            if match and name is not None and not (in_set and match.group(1) == "P"):
                body = uc.class_set(name)
                if in_set:
                    out.append(body)
                else:
                    out.append(f"[{'^' if match.group(1) == 'P' else ''}{body}]")
                i = match.end()
                continue
            if nxt in "dD" and not (in_set and nxt == "D"):
                body = uc.class_set("Nd")
                out.append(body if in_set else f"[{'^' if nxt == 'D' else ''}{body}]")
                i += 2
                continue
            if nxt == "Q":  # \Q...\E: literal text, copied as is
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if not in_set and c == "[":
            in_set = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a literal
                out.append("]")
                i += 1
            continue
        if in_set and c == "]":
            in_set = False
        out.append(c)
        i += 1
    return "".join(out)


# Characters of every kind a pattern must keep: ASCII, Latin-1, marks, CJK, digits of other
# scripts, emoji, every kind of line break and space.
_COVERAGE_PROBE = (
    "".join(map(chr, range(0x20, 0x7F)))
    + "\t\n\r\x0b\x0c\x85\xa0\u2028\u3000\x00\x7f"
    + "éÉßĳ\u0301\u0663²½Ⅻ中文ひらがなカタカナ한국어العربيةעבריתΩЖ€£¥©®™…—–“”‘’«»¡¿"
    + "\U0001f600\U0001f44d\u200d\ufeff\U0010ffff"
)
COVERAGE_TIMEOUT = 2.0


def lost_characters(compiled: regex.Pattern | PinnedPattern) -> str:
    r"""The probe characters that no match of `compiled` covers (in the whole probe, or alone).

    `lost_characters(regex.compile(r"\p{L}+"))` starts `" !\"#$%&'()*+,-./0123456789"`.
    """
    lost: dict[str, None] = {}
    for text in (_COVERAGE_PROBE, *_COVERAGE_PROBE):
        covered = bytearray(len(text))
        for match in compiled.finditer(text, timeout=COVERAGE_TIMEOUT):
            covered[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
        lost.update((text[k], None) for k, flag in enumerate(covered) if not flag)
    return "".join(lost)


def check_coverage(pattern: str, compiled: regex.Pattern | PinnedPattern) -> None:
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


def _short(pattern: str, limit: int = 60) -> str:
    return repr(pattern if len(pattern) <= limit else pattern[:limit] + "...")


class PinnedPattern:
    """A compiled pattern that matches with Unicode 16.0 classes (see `pinned`).

    The spelled-out sets are many times slower in `regex` than its built-in classes, and they
    only matter for text holding a code point whose class differs (`uc.has_skew`), so other text
    goes to the pattern as written. Methods are those of `regex.Pattern` the workbench uses.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._fast = regex.compile(pattern)
        spelled = pinned(pattern)
        self._exact = self._fast if spelled == pattern else regex.compile(spelled)

    def _for(self, text: str) -> regex.Pattern:
        if self._exact is self._fast or not uc.has_skew(text):
            return self._fast
        return self._exact

    def findall(self, text: str, *args: Any, **kwargs: Any) -> list[Any]:
        return self._for(text).findall(text, *args, **kwargs)

    def finditer(self, text: str, *args: Any, **kwargs: Any) -> Iterator[regex.Match]:
        return self._for(text).finditer(text, *args, **kwargs)

    def fullmatch(self, text: str, *args: Any, **kwargs: Any) -> regex.Match | None:
        return self._for(text).fullmatch(text, *args, **kwargs)

    def search(self, text: str, *args: Any, **kwargs: Any) -> regex.Match | None:
        return self._for(text).search(text, *args, **kwargs)

    def match(self, text: str, *args: Any, **kwargs: Any) -> regex.Match | None:
        return self._for(text).match(text, *args, **kwargs)


@functools.lru_cache(maxsize=64)
def compile_pattern(spec: str | None) -> PinnedPattern:
    """Compile a preset or custom pattern (pinned to Unicode 16.0), with a clear error if it
    cannot serve: it does not compile, it can match the empty string (`findall` would emit empty
    pieces, and other engines loop on them), or it drops characters (`check_coverage`).
    """
    pattern = resolve(spec)
    try:
        compiled = PinnedPattern(pattern)
    except regex.error as exc:
        raise PatternError(f"the pattern does not compile: {exc}") from None
    try:
        empty = compiled.fullmatch("", timeout=COVERAGE_TIMEOUT) is not None or any(
            m.group() == "" for m in compiled.finditer("a 1 !\n", timeout=COVERAGE_TIMEOUT)
        )
    except TimeoutError:
        empty = False  # reported by check_coverage below
    if empty:
        raise PatternError("the pattern can match the empty string; every piece must be non-empty")
    check_coverage(pattern, compiled)
    return compiled
