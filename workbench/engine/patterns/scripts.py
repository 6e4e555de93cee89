"""A language guess from a text's dominant Unicode script, for grouping documents that carry no
language label (parity-aware BPE's `--parity-by script`).

Only letters count (digits, spaces and punctuation are shared by every script), each by its
UTF-8 bytes: a Han character carries about what a Latin word does, and bytes are what a
byte-level tokenizer pays for (a Chinese man page with its roff markup in ASCII is Han). The ranges are
the main blocks of each script (Unicode 16.0 block boundaries), not every code point's Script
property: enough to tell Latin from Cyrillic from Han, which is all a grouping needs. Two
scripts that share Han are told apart by their own letters: kana (at least a twentieth of the Han
and kana letters: Chinese text may quote a katakana name) makes a text Japanese.
"""

from __future__ import annotations

import functools

import numpy as np

# (first, last, script) over the blocks each script lives in, sorted by first code point.
_BLOCKS: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "Latin"),
    (0x0061, 0x007A, "Latin"),
    (0x00C0, 0x024F, "Latin"),  # Latin-1 letters, Extended-A/B (the two signs inside are rare)
    (0x0370, 0x03FF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"),
    (0x0530, 0x058F, "Armenian"),
    (0x0590, 0x05FF, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0750, 0x077F, "Arabic"),
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"),
    (0x0B80, 0x0BFF, "Tamil"),
    (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"),
    (0x0D00, 0x0D7F, "Malayalam"),
    (0x0E00, 0x0E7F, "Thai"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, "Hangul"),
    (0x1E00, 0x1EFF, "Latin"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x3040, 0x30FF, "Kana"),
    (0x3130, 0x318F, "Hangul"),
    (0x3400, 0x4DBF, "Han"),
    (0x4E00, 0x9FFF, "Han"),
    (0xAC00, 0xD7AF, "Hangul"),
    (0xF900, 0xFAFF, "Han"),
    (0xFF66, 0xFF9F, "Kana"),  # half-width katakana
    (0x20000, 0x3134F, "Han"),
)
UNKNOWN = "Unknown"  # no letters of any listed script


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    starts = np.array([b[0] for b in _BLOCKS], dtype=np.int64)
    ends = np.array([b[1] for b in _BLOCKS], dtype=np.int64)
    names = tuple(sorted({b[2] for b in _BLOCKS}))
    return starts, ends, names


def script_counts(text: str) -> dict[str, int]:
    """The UTF-8 bytes of `text`'s letters in each script's blocks (scripts with none left out)."""
    starts, ends, names = _tables()
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    block = np.searchsorted(starts, cps, side="right") - 1
    inside = (block >= 0) & (cps <= ends[np.maximum(block, 0)])
    width = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    found = np.bincount(block[inside], weights=width[inside], minlength=len(_BLOCKS))
    counts: dict[str, int] = {}
    for (_, _, name), n in zip(_BLOCKS, found.tolist(), strict=True):
        if n:
            counts[name] = counts.get(name, 0) + int(n)
    return counts


def dominant_script(text: str) -> str:
    """The script with the most letter bytes (ties: the name first in alphabetical order), named as
    a language where a script is one (`Japanese` for Han with enough kana, `Korean` for Hangul),
    or `Unknown`."""
    counts = script_counts(text)
    kana = counts.pop("Kana", 0)
    if kana and kana * 20 >= kana + counts.get("Han", 0):
        counts["Japanese"] = counts.pop("Han", 0) + kana
    if "Hangul" in counts:
        counts["Korean"] = counts.pop("Hangul")
    if not counts:
        return UNKNOWN
    return min(counts, key=lambda name: (-counts[name], name))
