"""Checking bytes as corpus text: no NUL near the start (a binary file), valid UTF-8 (the error
naming the line of the first bad byte), also decoded chunk by chunk (`Utf8Decoder`).

Reading the bytes is left to `opening` and `packs`."""

from __future__ import annotations

import codecs
from pathlib import Path

from workbench.engine.errors import CorpusError


def check_utf8(path: Path, data: bytes, lines_before: int) -> None:
    """CorpusError naming the line of the first byte that is not UTF-8 (`lines_before`: the
    newlines of the file before `data`)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + data.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            str(path), f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", line
        ) from None


def check_not_binary(path: Path, head: bytes) -> None:
    """A NUL byte near the start of a file means it is not text."""
    if b"\0" in head[:8192]:
        raise CorpusError(str(path), "looks like a binary file (it holds NUL bytes)")


class Utf8Decoder:
    """Strict incremental UTF-8 that reports the line of the first bad byte."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.lines = 1
        self.first = True

    def decode(self, chunk: bytes, final: bool = False) -> str:
        if self.first and chunk:
            self.first = False
            check_not_binary(self.path, chunk)
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[3:]
        held = self.decoder.getstate()[0]  # the start of a character cut by the last chunk
        try:
            text = self.decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            data = held + chunk  # what exc.start counts in (`held` holds no newline)
            line = self.lines + data.count(b"\n", 0, max(exc.start, 0))
            raise CorpusError(
                str(self.path), f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", line
            ) from None
        self.lines += chunk.count(b"\n")
        return text
