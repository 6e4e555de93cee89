"""The GPT-2 byte-to-unicode mapping used by vocab.json, merges.txt and tokenizer.json.

Printable Latin-1 bytes map to themselves; the other 68 bytes map, in byte order, to U+0100
onward, so a mapped token never holds a real space: `bytes_to_unicode()[32] == "Ġ"`.
"""

from __future__ import annotations

import functools


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@functools.cache
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def to_mapped(token: bytes) -> str:
    """b" the" -> "Ġthe"."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def from_mapped(text: str) -> bytes:
    """ "Ġthe" -> b" the"; raises KeyError on a character outside the mapping."""
    table = unicode_to_bytes()
    return bytes(table[c] for c in text)


@functools.cache
def hf_byte_order() -> tuple[int, ...]:
    """Rank of each byte in Hugging Face's initial alphabet (sorted by mapped code point).

    HF `BpeTrainer` gives base ids in that order and breaks count ties on the smallest id pair,
    so the `hf` tie-break compares bytes through this table.
    """
    table = bytes_to_unicode()
    ordered = sorted(range(256), key=lambda b: ord(table[b]))
    rank = [0] * 256
    for position, b in enumerate(ordered):
        rank[b] = position
    return tuple(rank)
