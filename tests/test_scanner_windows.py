"""gpt2's scan 32 bytes at a time (piece starts from the kinds of the characters before, at
and after each byte) against `regex.findall`: random ASCII over the alphabet of the rules' cases
(spaces, other whitespace, apostrophes and contraction letters, letters, digits, punctuation),
ASCII mixed with characters of two to four bytes (whitespace, letters, digits, marks, others) and
invalid UTF-8, pieces ending at every offset from the data's end and from a 32-byte step,
and counting with short output blocks and segments cut anywhere."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.engine import scanner
from workbench.engine.patterns import PRESETS, compile_pattern

ASCII_UNITS = [" ", "\n", "\t", "'", "s", "t", "l", "v", "e", "A", "1", ".", "ab"]
# Characters of 2-4 bytes: letters (é, 中, 𝐀), whitespace (NBSP and NEL: \s but not " ";
# U+3000, U+2028), a digit (½), a combining mark and an emoji ("other").
OTHER_UNITS = ["é", "中", "𝐀", "\u00a0", "\x85", "\u3000", "\u2028", "½", "\u0301", "😀"]
HYPOTHESIS = settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def expected(text: str, preset: str = "gpt2") -> list[str]:
    return compile_pattern(PRESETS[preset]).findall(text)


def scanned(text: str, preset: str = "gpt2") -> list[str]:
    return [p.decode("utf-8") for p in scanner.pieces(text.encode("utf-8"), preset)]


def counted(data: bytes, preset: str, edges: list[int]) -> dict[bytes, int]:
    starts = np.array(edges[:-1], dtype=np.int64)
    ends = np.array(edges[1:], dtype=np.int64)
    buf, offsets, counts = scanner.count_pieces_arrays(data, preset, (starts, ends))
    return {buf[offsets[k] : offsets[k + 1]].tobytes(): int(counts[k]) for k in range(len(counts))}


def counter(data: bytes, preset: str, edges: list[int]) -> Counter[bytes]:
    pattern = compile_pattern(PRESETS[preset])
    want: Counter[bytes] = Counter()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        want.update(p.encode("utf-8") for p in pattern.findall(data[a:b].decode("utf-8")))
    return want


@HYPOTHESIS
@given(st.lists(st.sampled_from(ASCII_UNITS), max_size=200).map("".join))
def test_random_ascii_matches_regex(text: str) -> None:
    assert scanned(text) == expected(text)


@HYPOTHESIS
@given(st.lists(st.sampled_from(ASCII_UNITS + OTHER_UNITS), max_size=120).map("".join))
def test_random_ascii_with_non_ascii_matches_regex(text: str) -> None:
    for preset in scanner.PRESETS_SCANNABLE:
        assert scanned(text, preset) == expected(text, preset), preset


def test_every_offset_from_the_start_and_the_end() -> None:
    """The same text after 0-39 bytes of each kind and cut 0-39 bytes short: every piece end
    falls at every offset of a 32-byte step and of the data's last bytes."""
    rng = random.Random(7)
    for _ in range(40):
        body = "".join(rng.choice(ASCII_UNITS) for _ in range(rng.randint(10, 40)))
        for lead in ["x", " ", "\n", ".", "1", "é"]:
            for k in range(40):
                text = lead * k + body
                assert scanned(text) == expected(text), text
                cut = body[: max(0, len(body) - k)]
                assert scanned(cut) == expected(cut), cut


def test_long_mixed_texts_match_regex() -> None:
    """Stretches of ASCII of every length between non-ASCII characters (seeded)."""
    rng = random.Random(20261123)
    for _ in range(100):
        parts = []
        for _ in range(rng.randint(1, 30)):
            parts.append("".join(rng.choice(ASCII_UNITS) for _ in range(rng.randint(0, 24))))
            parts.append(rng.choice(OTHER_UNITS) * rng.randint(1, 3))
        text = "".join(parts)
        assert scanned(text) == expected(text), text


def test_corpora_with_non_ascii_sprinkled_in(corpora: Path) -> None:
    """Real English with a non-ASCII character every few dozen bytes, at random places."""
    rng = random.Random(5)
    text = (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8")[:60_000]
    chars = list(text)
    for at in sorted(rng.sample(range(len(chars)), 1500), reverse=True):
        chars.insert(at, rng.choice(OTHER_UNITS))
    mixed = "".join(chars)
    for sample in (text, mixed):
        assert scanned(sample) == expected(sample)


@pytest.mark.parametrize("preset", scanner.PRESETS_SCANNABLE)
def test_counts_in_short_blocks_and_segments(preset: str) -> None:
    """More pieces than one output block of the counting kernel holds, in segments cut at random
    characters: a segment's end ends a piece even inside an ASCII stretch."""
    rng = random.Random(11)
    units = ASCII_UNITS * 4 + OTHER_UNITS
    data = "".join(rng.choice(units) for _ in range(6000)).encode("utf-8")
    starts_of_chars = [i for i, b in enumerate(data) if b & 0xC0 != 0x80]
    for cuts in (0, 3, 200):
        edges = [0, *sorted(rng.sample(starts_of_chars[1:], cuts)), len(data)]
        assert counted(data, preset, edges) == counter(data, preset, edges), cuts


def test_invalid_utf8_mixed_in() -> None:
    """Bytes that start no well-formed character are one "other" character each (as the
    "surrogateescape" decoding has them), wherever they fall in a step."""
    rng = random.Random(9)
    units = [u.encode("utf-8") for u in ASCII_UNITS + OTHER_UNITS] + [b"\x80", b"\xff", b"\xc3"]
    pattern = compile_pattern(PRESETS["gpt2"])
    for _ in range(300):
        data = b"".join(rng.choice(units) for _ in range(rng.randint(0, 120)))
        text = data.decode("utf-8", "surrogateescape")
        want = [p.encode("utf-8", "surrogateescape") for p in pattern.findall(text)]
        assert scanner.pieces(data, "gpt2") == want, data
