"""The scanner's runs (letters, digits, punctuation, whitespace, o200k's upper/lower-case runs)
are found eight class bytes at a time, with a byte loop for the last bytes of the data: runs of
1 to 17 characters, of every class, ending at every distance from the end of the data and from
the eight-byte steps, must still split exactly like `regex.findall`, and count like it when the
text is cut into segments anywhere."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from workbench.engine.patterns.regexes import PRESETS, compile_pattern

from workbench.engine.pretokenize import scan as scanner

# One character per class the runs test: ASCII lower/upper/digit/punctuation/space, \r \n, then
# non-ASCII right after ASCII: é (Ll), ǅ (Lt: upper class only), ʰ (Lm: both case classes), 中
# (Lo), a combining accent (M), NBSP and U+3000 (whitespace of 2 and 3 bytes), ½ (No), the long
# s (folds to "s" in contractions) and an apostrophe.
UNITS = ["a", "Z", "7", "!", " ", "\t", "\r", "\n", "é", "ǅ", "ʰ", "中", "\u0301", "\u00a0"]
UNITS += ["\u3000", "½", "ſ", "'", "/"]
LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17]


def expected(text: str, preset: str) -> list[str]:
    return compile_pattern(PRESETS[preset]).findall(text)


def scanned(text: str, preset: str) -> list[str]:
    return [p.decode("utf-8") for p in scanner.pieces(text.encode("utf-8"), preset)]


def runs_text(rng: random.Random, runs: int) -> str:
    """`runs` runs of one unit repeated 1 to 17 times, sometimes with contractions after them."""
    parts = []
    for _ in range(runs):
        parts.append(rng.choice(UNITS) * rng.choice(LENGTHS))
        if rng.random() < 0.1:
            parts.append(rng.choice(["'s", "'LL", "'ſ", "'Re", "'d"]))
    return "".join(parts)


@pytest.mark.parametrize("preset", scanner.PRESETS_SCANNABLE)
def test_runs_of_every_length_match_regex(preset: str) -> None:
    rng = random.Random(12)
    for _ in range(150):
        text = runs_text(rng, rng.randint(1, 12))
        for start in range(0, len(text), max(1, len(text) // 6)):  # ends nearer the data's end
            part = text[start:]
            assert scanned(part, preset) == expected(part, preset), (preset, part)


@pytest.mark.parametrize("preset", scanner.PRESETS_SCANNABLE)
def test_single_class_runs_at_the_end_of_the_data(preset: str) -> None:
    """A run of n units, alone, after a word and before a newline or the end: n from 1 to 17,
    so every run end falls at every position of an eight-byte step and in the byte loop."""
    for unit in UNITS:
        for n in range(1, 18):
            for text in (unit * n, "x" + unit * n, " " + unit * n + "\n", "A" + unit * n + " b"):
                assert scanned(text, preset) == expected(text, preset), (preset, text)


@pytest.mark.parametrize("preset", scanner.PRESETS_SCANNABLE)
def test_counts_with_segments_cut_anywhere(preset: str) -> None:
    rng = random.Random(3)
    text = runs_text(rng, 400)
    data = text.encode("utf-8")
    # cut at character boundaries (the pipeline never cuts inside a character)
    starts_of_chars = [i for i, b in enumerate(data) if b & 0xC0 != 0x80]
    cuts = sorted(rng.sample(starts_of_chars[1:], 40))
    edges = [0, *cuts, len(data)]
    starts = np.array(edges[:-1], dtype=np.int64)
    ends = np.array(edges[1:], dtype=np.int64)
    buf, offsets, counts = scanner.count_pieces_arrays(data, preset, (starts, ends))
    got = {buf[offsets[k] : offsets[k + 1]].tobytes(): int(counts[k]) for k in range(len(counts))}
    pattern = compile_pattern(PRESETS[preset])
    want: Counter[bytes] = Counter()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        want.update(p.encode("utf-8") for p in pattern.findall(data[a:b].decode("utf-8")))
    assert got == want
