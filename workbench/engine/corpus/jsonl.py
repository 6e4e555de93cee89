"""The records of a JSONL file (the `.jsonl` of any compression), streamed: each line's JSON
object, its line number and the text of one field, bad lines raising CorpusError naming the line.

Segments and documents are left to `documents`."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.engine.corpus.opening import read_chunks
from workbench.engine.errors import CorpusError


def jsonl_texts(path: Path, field: str = "text") -> Iterator[tuple[int, str]]:
    """(line number, text) of each record of a JSONL file, streamed; blank lines are skipped.

    A line that is not UTF-8, not JSON, or has no `field` string raises CorpusError naming it."""
    for number, _, text in jsonl_records(path, field):
        yield number, text


def jsonl_records(path: Path, field: str = "text") -> Iterator[tuple[int, dict[str, Any], str]]:
    """(line number, record, its text) of each record of a JSONL file, as `jsonl_texts`."""
    pending = b""
    number = 0
    chunks = read_chunks(path)
    while True:
        chunk = next(chunks, b"")
        pending += chunk
        lines = pending.split(b"\n")
        pending = lines.pop() if chunk else b""
        for raw in lines:
            number += 1
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if raw.strip():
                record, text = _record_text(path, number, raw, field)
                yield number, record, text
        if not chunk:
            return


def _record_text(
    path: Path, number: int, raw: bytes, field: str = "text"
) -> tuple[dict[str, Any], str]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"invalid UTF-8 (byte 0x{raw[exc.start]:02X})"
        raise CorpusError(str(path), message, number) from None
    try:
        # Integers are kept as their digits: the record's other fields may hold numbers longer
        # than int() accepts (4,300 digits), and only "text" is read.
        record = json.loads(line, parse_int=str)
    except json.JSONDecodeError as exc:
        raise CorpusError(str(path), f"not valid JSON ({exc.msg})", number) from None
    except RecursionError:
        raise CorpusError(str(path), "JSON nested too deeply", number) from None
    text = record.get(field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        raise CorpusError(str(path), f'no "{field}" string in this record', number)
    # A \ud800-style escape can give a lone surrogate, which is not a character and has no
    # UTF-8; only escapes can, so the check runs only on lines that hold one.
    if "\\u" in line:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(text[exc.start])
            message = f"the text holds a lone surrogate (\\u{code:04x}), not a character"
            raise CorpusError(str(path), message, number) from None
    return record, text
