"""`scanner.classify`'s 32-byte vector steps (mixed, and ASCII-only after an all-ASCII one) against the plain reference of
test_scanner_classify.py: every well-formed and malformed 2-, 3- and 4-byte sequence at every
offset of a step, before and after its end, in ASCII and in CJK text, and cut off at every length
(the step needs 2 bytes before and 2 after its 32, so the ends are the byte-by-byte path's)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_scanner_classify import PARTS, classified, reference

from workbench.engine.pretokenize import scan as scanner

# Boundary values of each UTF-8 form, and the malformed ones next to them.
VALID = [
    b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xe1\x80\x80", b"\xec\xbf\xbf", b"\xed\x9f\xbf",
    b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
    "中".encode(), "é".encode(), "\u3000".encode(), "\u2028".encode(), "ー".encode(),
]  # fmt: skip
INVALID = [
    b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2", b"\xdf\x41", b"\xe0\x80\x80",
    b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xe4\xb8", b"\xe4", b"\xe4\x41\x80",
    b"\xc3\xa9\x80", b"\xe4\xb8\xad\xbf", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80",
    b"\xf0\x90\x80", b"\xfe", b"\xff",
]  # fmt: skip
BACKGROUNDS = [
    b"ab cd, 12\r\n\t" * 12,
    "日本語のテキスト한국어".encode() * 4,
    "é ñ x".encode() * 16,
]


def test_ascii_ranges_are_the_tables_classes() -> None:
    assert scanner.ascii_classes_by_ranges().tolist() == scanner.kernel_tables()[0][:128].tolist()


@pytest.mark.parametrize("background", BACKGROUNDS)
@pytest.mark.parametrize("sequence", VALID + INVALID)
def test_a_sequence_at_every_offset_of_a_step(background: bytes, sequence: bytes) -> None:
    for k in range(110):  # after up to three all-ASCII steps, or mixed ones
        data = background[:k] + sequence + background[k:]
        data = data.decode("utf-8", "surrogateescape").encode("utf-8", "surrogateescape")
        assert classified(data).tolist() == reference(data).tolist(), data


@pytest.mark.parametrize("background", BACKGROUNDS)
def test_cut_off_at_every_length(background: bytes) -> None:
    """Whatever the last bytes hold (a character cut anywhere), up to two steps and a bit."""
    for sequence in VALID + INVALID:
        data = background[:30] + sequence + background[30:40] + sequence + background
        for end in range(len(data) if len(data) < 110 else 110):
            part = data[:end]
            assert classified(part).tolist() == reference(part).tolist(), part


@pytest.mark.parametrize("seed", range(3))
def test_long_random_mixes_from_every_start(seed: int) -> None:
    rng = random.Random(seed)
    parts = PARTS + VALID + INVALID + ["中".encode()] * 10 + [b"a"] * 10
    for _ in range(40):
        data = b"".join(rng.choice(parts) for _ in range(rng.randint(20, 90)))
        for start in range(0, 34):
            part = data[start:]
            assert classified(part).tolist() == reference(part).tolist(), part


def test_a_long_text_is_classified_like_the_reference() -> None:
    text = ("中文 text, 日本語のテキスト, 한국어 텍스트 и русский 12345 🙂\n" * 40).encode()
    array = np.frombuffer(text, dtype=np.uint8)
    assert classified(text).tolist() == reference(text).tolist()
    assert array.shape[0] > 1000


def _near_utf8(rng: random.Random, valid: float) -> bytes:
    """A character's bytes, well-formed with about the probability `valid` (4-byte leads F5-F7,
    C0 and C1, and the odd byte that is no continuation make the rest)."""
    kind = rng.randrange(4)
    if kind == 0:
        return bytes([rng.randrange(0x80)])
    if rng.random() > valid:
        return bytes([rng.randrange(0x80, 0x100)])
    first = rng.randrange(*((0xC2, 0xE0), (0xE0, 0xF0), (0xF0, 0xF5))[kind - 1])  # kind + 1 bytes
    if rng.random() > valid:
        first = rng.choice((0xC0, 0xC1, 0xF5, 0xF7))
    tail = [rng.randrange(0x80, 0xC0) if rng.random() < valid else rng.randrange(0x100)]
    tail += [rng.randrange(0x80, 0xC0) if rng.random() < valid else rng.randrange(0x100)]
    tail += [rng.randrange(0x80, 0xC0) if rng.random() < valid else rng.randrange(0x100)]
    return bytes([first, *tail[:kind]])


@pytest.mark.parametrize("valid", [0.8, 0.99])
@pytest.mark.parametrize("seed", range(3))
def test_random_bytes_near_utf8(seed: int, valid: float) -> None:
    """Bytes that are mostly UTF-8: cut-off, overlong and stray forms wherever they fall."""
    rng = random.Random(seed)
    for _ in range(150):
        data = b"".join(_near_utf8(rng, valid) for _ in range(rng.randint(10, 120)))
        assert classified(data).tolist() == reference(data).tolist(), data
