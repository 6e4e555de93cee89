"""Reading a corpus: files and folders (recursing), plain text of any extension, `.jsonl` (the
`text` field of each line) and the `.gz` forms of both; `.zst`/`.xz`/`.bz2`, Parquet, Arrow files
and saved Hugging Face datasets come from `readers/` (hooked in here where marked).

A file, or a JSONL record, is a document. Text comes out as *segments*: stretches between
special tokens, cut where the pre-tokenizer must break anyway, so a large file streams in
bounded memory and pre-tokenizing the segments gives exactly the pieces of the whole document.
The cut rule: right after a letter that a space, tab or newline follows (no preset pattern
matches across that point: the letter's piece ends there and the whitespace starts anew), or at
a special token. A custom pattern gives no such promise, so there a document is cut only at its
special tokens.

Bad input raises `CorpusError` naming the file (and line): a binary file, invalid UTF-8, an
unreadable path, a JSONL line that is not JSON or has no text.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AnyStr

import regex

from workbench.engine.errors import CorpusError
from workbench.engine.readers import columnar, compressed, datasets
from workbench.engine.specials import specials_regex, split_on_specials

CHUNK_CHARS = 1 << 22  # ~4 MB of text per segment at most (when a cut point exists)
_SAFE_CUT = regex.compile(r"(?r)\p{L}(?=[ \t\n])")


def list_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files named or under the folders named, folders walked in sorted order.

    Hidden files and folders (a leading dot) inside a folder are passed over."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                files.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
        elif path.exists():
            files.append(path)
        else:
            raise CorpusError(str(path), "no such file or folder")
    return datasets.without_dataset_metadata(files)  # readers hook: saved HF datasets


def fingerprint(files: Iterable[Path]) -> str:
    """A cheap identity of a corpus: paths, sizes and modification times, hashed."""
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def is_jsonl(path: Path) -> bool:
    return compressed.plain_name(path.name).lower().endswith(".jsonl")  # any compression


def _open_binary(path: Path) -> io.BufferedIOBase:
    try:
        if compressed.opens_here(path):  # readers hook: .zst, .xz, .bz2
            return compressed.open_compressed(path)  # type: ignore[return-value]
        if path.name.lower().endswith(".gz"):
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb")  # noqa: SIM115 - closed by the caller's with-block
    except OSError as exc:
        raise CorpusError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _read_chunks(path: Path, size: int = 1 << 22) -> Iterator[bytes]:
    """The file's bytes in chunks (decompressed), with read errors as CorpusError."""
    with _open_binary(path) as stream:
        while True:
            try:
                chunk = stream.read(size)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise CorpusError(str(path), f"cannot read: {exc}") from None
            if not chunk:
                return
            yield chunk


class _Decoder:
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
        try:
            text = self.decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            line = self.lines + chunk.count(b"\n", 0, max(exc.start, 0))
            raise CorpusError(
                str(self.path), f"invalid UTF-8 (byte 0x{chunk[exc.start]:02X})", line
            ) from None
        self.lines += chunk.count(b"\n")
        return text


@dataclass
class Segmenter:
    """Cuts document text into segments between special tokens, at safe points."""

    specials: tuple[str, ...]
    cut_inside: bool  # whether the pattern allows cuts at letter-whitespace points

    def split(self, text: str) -> list[str]:
        """All segments of a whole text."""
        return split_on_specials(text, self.specials)

    def cut(self, buffer: str) -> int:
        """A position where `buffer` may be cut before more text is appended (0: nowhere)."""
        pattern = specials_regex(self.specials)
        if pattern is not None:
            # after the last special token that cannot grow into a longer one with more text
            longest = max(len(s) for s in self.specials)
            last = None
            for m in pattern.finditer(buffer):
                last = m
            if last is not None and last.end() <= len(buffer) - longest:
                return last.end()
        if not self.cut_inside:
            return 0
        reach = max((len(t) for t in self.specials), default=0)
        return safe_cut(buffer, _SAFE_CUT, pattern, reach)


def safe_cut(
    buffer: AnyStr, boundary: regex.Pattern, specials: regex.Pattern | None, reach: int
) -> int:
    """The last end of a `boundary` match (a reverse pattern) in `buffer` (text or bytes) that
    no special token spans, or 0. `reach`: the longest special token, in the buffer's units."""
    end = len(buffer)
    while True:
        m = boundary.search(buffer, 0, end)
        if m is None:
            return 0
        cut = m.end()
        if specials is None or not any(
            t.start() < cut < t.end()
            for t in specials.finditer(buffer, max(0, cut - reach), cut + reach, overlapped=True)
        ):
            return cut
        end = m.start()


def check_not_binary(path: Path, head: bytes) -> None:
    """A NUL byte near the start of a file means it is not text."""
    if b"\0" in head[:8192]:
        raise CorpusError(str(path), "looks like a binary file (it holds NUL bytes)")


def _stream_text(
    chunks: Iterable[str], segmenter: Segmenter, chunk_chars: int = CHUNK_CHARS
) -> Iterator[str]:
    """Segments of one document given as successive text chunks."""
    buffer = ""
    for text in chunks:
        buffer += text
        if len(buffer) >= chunk_chars:
            cut = segmenter.cut(buffer)
            if cut > 0:
                yield from segmenter.split(buffer[:cut])
                buffer = buffer[cut:]
    if buffer:
        yield from segmenter.split(buffer)


@dataclass
class Document:
    """One document's segments (a generator: read it once) and where it came from."""

    path: Path
    line: int | None  # the JSONL line, or None for a whole file
    segments: Iterator[str]
    # A record-based reader's (JSONL, Parquet) other fields, so documents can be grouped by one.
    record: dict[str, Any] | None = None


def read_documents(
    path: Path, segmenter: Segmenter, text_column: str = "text", jsonl_field: str = "text"
) -> Iterator[Document]:
    """The documents of one file. Errors surface as CorpusError while iterating."""
    if columnar.is_columnar(path):  # readers hook: Parquet / Arrow records
        for text in columnar.record_texts(path, text_column):
            yield Document(path, None, iter(segmenter.split(text)))
        return
    if is_jsonl(path):
        yield from _jsonl_documents(path, segmenter, jsonl_field)
        return
    decoder = _Decoder(path)

    def texts() -> Iterator[str]:
        for chunk in _read_chunks(path):
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)

    yield Document(path, None, _stream_text(texts(), segmenter))


def _jsonl_documents(path: Path, segmenter: Segmenter, field: str) -> Iterator[Document]:
    for number, record, text in jsonl_records(path, field):
        yield Document(path, number, iter(segmenter.split(text)), record)


def jsonl_texts(path: Path, field: str = "text") -> Iterator[tuple[int, str]]:
    """(line number, text) of each record of a JSONL file, streamed; blank lines are skipped.

    A line that is not UTF-8, not JSON, or has no `field` string raises CorpusError naming it."""
    for number, _, text in jsonl_records(path, field):
        yield number, text


def jsonl_records(path: Path, field: str = "text") -> Iterator[tuple[int, dict[str, Any], str]]:
    """(line number, record, its text) of each record of a JSONL file, as `jsonl_texts`."""
    pending = b""
    number = 0
    chunks = _read_chunks(path)
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
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(str(path), f"not valid JSON ({exc.msg})", number) from None
    text = record.get(field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        raise CorpusError(str(path), f'no "{field}" string in this record', number)
    return record, text


def corpus_record(paths: Iterable[str | os.PathLike], files: list[Path]) -> dict:
    """What a run store keeps of a corpus, so the run can be continued later if it is unchanged."""
    return {
        "paths": [str(Path(p).resolve()) for p in paths],
        "files": len(files),
        "sizes": sum(f.stat().st_size for f in files),
        "fingerprint": fingerprint(files),
    }
