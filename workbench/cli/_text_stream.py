"""Reading a text file (or standard input) as UTF-8 in chunks, so a command's memory does not
grow with the file: the same strict decoding as `read_text`, one chunk at a time."""

from __future__ import annotations

import codecs
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from workbench.engine.errors import WorkbenchError

CHUNK_BYTES = 1 << 16  # read per call: the size of the parts cut from it (`stream_parts`)


def source_name(source: str) -> str:
    return "standard input" if source == "-" else source


def text_chunks(source: str, chunk_bytes: int | None = None) -> Iterator[str]:
    """The text of FILE (or standard input for `-`) in chunks whose concatenation is the text.

    As `read_text`: no newline translation, no U+FFFD; invalid UTF-8 is an error naming the byte
    offset in the whole file (a character split between two reads is decoded whole)."""
    name = source_name(source)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    try:
        opened: contextlib.AbstractContextManager[BinaryIO] = (
            contextlib.nullcontext(sys.stdin.buffer) if source == "-" else Path(source).open("rb")  # noqa: SIM115 (closed by the `with` below)
        )
    except OSError as exc:
        raise WorkbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0  # bytes read before the current chunk
    with opened as stream:
        while True:
            try:
                data = stream.read(chunk_bytes)
            except OSError as exc:
                raise WorkbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
            pending = decoder.getstate()[0]  # the start of a character the last read split
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                whole = pending + data
                at = offset - len(pending) + exc.start
                raise WorkbenchError(
                    f"{name}: is not UTF-8 text (invalid byte 0x{whole[exc.start]:02X} at byte {at})"
                ) from None
            if text:
                yield text
            if not data:
                return
            offset += len(data)
