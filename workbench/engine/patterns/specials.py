"""Splitting text on special tokens before pre-tokenizing.

Special tokens never take part in merges, so the text between them is pre-tokenized on its own.
Where two specials overlap, the longest wins: `split_on_specials("a<|x|>>b", ["<|x|>", "<|x|>>"])`
-> `["a", "b"]`.
"""

from __future__ import annotations

import functools

import regex


@functools.lru_cache(maxsize=32)
def specials_regex(specials: tuple[str, ...]) -> regex.Pattern | None:
    """One alternation of the escaped specials, longest first so the longest wins."""
    if not specials:
        return None
    ordered = sorted(specials, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def split_on_specials(text: str, specials: tuple[str, ...]) -> list[str]:
    """The stretches of `text` between special tokens (empty stretches dropped)."""
    pattern = specials_regex(specials)
    if pattern is None:
        return [text] if text else []
    return [part for part in pattern.split(text) if part]


@functools.lru_cache(maxsize=32)
def specials_bytes_regex(specials: tuple[str, ...]) -> regex.Pattern | None:
    """`specials_regex` over UTF-8 bytes, for the encoder's byte-level fast path.

    Matching bytes finds the same places as matching the text: a special token's UTF-8 starts
    with a lead byte, so it can only match at a character boundary.
    """
    if not specials:
        return None
    ordered = sorted(specials, key=len, reverse=True)
    return regex.compile(b"|".join(regex.escape(s.encode("utf-8")) for s in ordered))
