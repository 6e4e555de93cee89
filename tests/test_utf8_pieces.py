"""The corpus packs' UTF-8 check decodes a piece at a time (so no single call holds the GIL for
a whole pack) and accepts exactly what one `bytes.decode("utf-8")` accepts."""

from __future__ import annotations

import random

from workbench.engine.corpus import packs


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_piecewise_check_agrees_with_one_decode(monkeypatch):
    monkeypatch.setattr(packs, "_UTF8_PIECE", 64)  # many piece boundaries in small samples
    rng = random.Random(7)
    text = ("héllo wörld ✓ 😀 中文 \U0010ffff " * 30).encode()
    samples = [b"", b"\xff", b"ab\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]
    samples += [text[:cut] for cut in range(0, len(text), 7)]  # cut mid-character too
    for _ in range(2000):
        samples.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))))
    for _ in range(500):
        damaged = bytearray(text[rng.randrange(len(text)) :])
        if damaged:
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        samples.append(bytes(damaged))
    assert any(not _decodes(s) for s in samples) and any(_decodes(s) for s in samples)
    for data in samples:
        assert packs._is_utf8(data) == _decodes(data), data
