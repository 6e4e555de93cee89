"""Pre-tokenization patterns: the presets and checked custom regexes.

Pieces are always exactly `regex.findall(pattern, text)`. Digit groups use `\\p{N}{1,3}` (not the
possessive `{1,3}+` of tiktoken's newer strings) because Hugging Face runs Split patterns with
Oniguruma, where the possessive form mis-splits digit runs; the pieces are the same in `regex`.
"""

from __future__ import annotations

import functools

import regex

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


@functools.lru_cache(maxsize=64)
def compile_pattern(spec: str | None) -> regex.Pattern:
    """Compile a preset or custom pattern, with a clear error if it cannot serve.

    A pattern that matches the empty string would make `findall` emit empty pieces (and loop on
    them in other engines), so it is refused up front.
    """
    pattern = resolve(spec)
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        raise PatternError(f"the pattern does not compile: {exc}") from None
    if compiled.fullmatch("") is not None or any(
        m.group() == "" for m in compiled.finditer("a 1 !\n")
    ):
        raise PatternError("the pattern can match the empty string; every piece must be non-empty")
    return compiled
