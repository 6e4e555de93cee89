r"""Code-point classes pinned to one Unicode version (that of tiktoken and Hugging Face).

The `regex` package follows the newest Unicode (17,000+ code points unassigned in 16.0 are
letters or numbers to it), while tiktoken 0.14 and Hugging Face tokenizers 0.23 carry Unicode
16.0.0. So the classes come from `_unicode_data.py`, generated once by
`scripts/gen_unicode_tables.py` from `unicodedata2==16.0.0`, and serve two users:

- the scanner's tables: one uint8 of bit flags per code point (1.1 MB), e.g.
  `flags[ord("a")] == L | LOWERISH`, plus the code points `(?i:x)` matches for the contraction
  letters (`ſ` U+017F matches `s`);
- `stand_in(text)`: for the `regex` engine (custom patterns, `--regex-pretokenizer`), the text
  with each code point `regex` may see otherwise (`SKEW`: unassigned in 16.0, or recategorised
  since) replaced by one it sees as Unicode 16.0 does: a noncharacter (U+FDD0, never assigned,
  so never a letter, number, mark or space) for an unassigned one, a stable code point of the
  16.0 category for a recategorised one. One code point for one, so spans stay valid.

`tests/test_unicode_tables.py` checks every code point against tiktoken's engine.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from workbench.engine.patterns import _unicode_data as data

UNICODE_VERSION = data.UNICODE_VERSION
RECATEGORISED: dict[int, str] = data.RECATEGORISED  # code point -> its 16.0 category
N_CODE_POINTS = 0x110000

# Bit flags, one uint8 per code point. UPPERISH / LOWERISH are o200k's two case classes; Lm, Lo and
# M belong to both, and M is not \p{L} (so a combining mark is "other" for gpt2 and cl100k).
L = 1  # \p{L}
N = 2  # \p{N}
S = 4  # \s
UPPERISH = 8  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
LOWERISH = 16  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]

# Property names a pattern may use, as unions of general categories.
GROUPS: dict[str, tuple[str, ...]] = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"),
    "M": ("Mn", "Mc", "Me"),
    "N": ("Nd", "Nl", "No"),
    **{name: (name,) for name in data.CATEGORIES},
}
_BITS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (L, GROUPS["L"]),
    (N, GROUPS["N"]),
    (UPPERISH, ("Lu", "Lt", "Lm", "Lo", *GROUPS["M"])),
    (LOWERISH, ("Ll", "Lm", "Lo", *GROUPS["M"])),
)
CONTRACTION_LETTERS = "stremvld"  # the letters of 's 't 're 've 'm 'll 'd


class ClassTables(NamedTuple):
    """The scanner's tables: per-code-point flags and the case-insensitive letter matches.

    `fold_cps[k]` matches the lowercase ASCII letter `fold_letters[k]` under `(?i:...)`; the list
    holds both cases of each letter plus the few non-ASCII extras (`ſ` for `s`).
    """

    flags: np.ndarray  # uint8[0x110000]
    fold_cps: np.ndarray  # int32[k], sorted
    fold_letters: np.ndarray  # uint8[k]


def parse_ranges(spelled: str) -> list[tuple[int, int]]:
    """'41-5A B5' -> [(0x41, 0x5A), (0xB5, 0xB5)] (inclusive)."""
    spans = []
    for word in spelled.split():
        first, _, last = word.partition("-")
        spans.append((int(first, 16), int(last or first, 16)))
    return spans


@functools.cache
def ranges(name: str) -> tuple[tuple[int, int], ...]:
    """Sorted, merged inclusive ranges of a class: a category ("Lu"), a group ("L") or "s"."""
    if name == "s":
        return tuple(parse_ranges(data.WHITE_SPACE))
    spans = sorted(span for cat in GROUPS[name] for span in parse_ranges(data.CATEGORIES[cat]))
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and merged[-1][1] >= first - 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def compute_tables() -> ClassTables:
    """The scanner's tables from the pinned ranges (a few milliseconds)."""
    flags = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for first, last in ranges("s"):
        flags[first : last + 1] |= S
    for bit, cats in _BITS:
        for cat in cats:
            for first, last in parse_ranges(data.CATEGORIES[cat]):
                flags[first : last + 1] |= bit
    fold_cps = np.array([cp for cp, _ in data.FOLDS], dtype=np.int32)
    fold_letters = np.array([letter for _, letter in data.FOLDS], dtype=np.uint8)
    return ClassTables(flags, fold_cps, fold_letters)


@functools.cache
def skew_table() -> np.ndarray:
    table = np.zeros(N_CODE_POINTS, dtype=np.bool_)
    for first, last in parse_ranges(data.SKEW):
        table[first : last + 1] = True
    return table


def has_skew(text: str) -> bool:
    """True when `text` holds a code point the `regex` package may classify otherwise than
    Unicode 16.0 (unassigned in 16.0, or recategorised since): `has_skew("a\u0558") -> True`."""
    if text.isascii():
        return False
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return bool(skew_table()[points].any())


# A stable code point of each category, for recategorised code points (`RECATEGORISED`).
_CATEGORY_STAND_INS = {
    "Lu": 0x0100, "Ll": 0x0101, "Lt": 0x01C5, "Lm": 0x02B0, "Lo": 0x05D0, "Mn": 0x0300,
    "Mc": 0x0903, "Me": 0x20DD, "Nd": 0x0660, "Nl": 0x2160, "No": 0x00B2,
}  # fmt: skip
UNASSIGNED_STAND_IN = 0xFDD0  # a noncharacter: Cn in every Unicode version


def stand_in(text: str) -> str:
    """`text` as `regex` should see it to classify like Unicode 16.0 (see the module doc);
    the same object when nothing needs replacing. `stand_in("a\u0558") -> "a\ufdd0"`."""
    if not has_skew(text):
        return text
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    out = points.copy()
    out[skew_table()[points]] = UNASSIGNED_STAND_IN
    for cp, category in RECATEGORISED.items():
        out[points == cp] = _CATEGORY_STAND_INS.get(category, UNASSIGNED_STAND_IN)
    return out.tobytes().decode("utf-32-le", "surrogatepass")


@functools.cache
def tables() -> ClassTables:
    """The tables for this process (built once)."""
    return compute_tables()
