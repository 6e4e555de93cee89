"""`scanner.classify` against a plain reference: the class of each character of the text's
"surrogateescape" decoding at its first byte, _CONT at the others. The kernel classifies eight
bytes at a time and writes the bytes after a non-ASCII one twice, so the inputs put ASCII,
multi-byte characters and invalid bytes at every position of an eight-byte step and near the
end of the data."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.engine.pretokenize import scan as scanner

# ASCII of every class, 2-, 3- and 4-byte characters, and bytes that start no valid sequence:
# a lone continuation byte, a cut-off lead, an overlong form, a surrogate, and 0xFF.
PARTS = [b"a", b"Z", b"7", b"!", b" ", b"\r", b"\n", b"\t", "é".encode(), "中".encode()]
PARTS += ["\u3000".encode(), "𝔘".encode(), b"\x80", b"\xc3", b"\xe4\xb8", b"\xc0\xaf"]
PARTS += [b"\xed\xa0\x80", b"\xff", b"\xf4\x90\x80\x80", "ʰ".encode()]


def reference(data: bytes) -> np.ndarray:
    flags = scanner.kernel_tables()[0]
    out = np.empty(len(data), dtype=np.uint8)
    i = 0
    for char in data.decode("utf-8", "surrogateescape"):
        raw = char.encode("utf-8", "surrogateescape")
        cp = ord(char) if len(raw) > 1 or raw[0] < 0x80 else 0xDC00 + raw[0]
        out[i] = flags[cp]
        out[i + 1 : i + len(raw)] = scanner._CONT
        i += len(raw)
    return out


def classified(data: bytes) -> np.ndarray:
    array = np.frombuffer(data, dtype=np.uint8)
    cls = np.full(len(data), 0xEE, dtype=np.uint8)  # a value no class has: every byte is written
    scanner.classify(array, scanner.kernel_tables()[0], cls)
    return cls


@pytest.mark.parametrize("seed", range(4))
def test_classify_matches_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        data = b"".join(rng.choice(PARTS) for _ in range(rng.randint(0, 24)))
        for start in range(0, min(len(data), 9)):  # every alignment, every distance to the end
            part = data[start:]
            assert classified(part).tolist() == reference(part).tolist(), part


def test_classify_ascii_words_then_one_other_byte() -> None:
    """A non-ASCII or invalid byte at each position of an eight-byte step, then ASCII again."""
    for other in (b"\xc3\xa9", b"\xe4\xb8\xad", b"\x80", b"\xf0\x9d\x94\x98", b"\xe4\xb8"):
        for k in range(17):
            data = b"ab cd" * 4
            data = data[:k] + other + data[k:]
            assert classified(data).tolist() == reference(data).tolist(), data
