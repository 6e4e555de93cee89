"""A corpus file's documents as text segments: a file, or a JSONL or columnar record, is a
document; its text comes out as *segments*, stretches between special tokens, cut where the
pre-tokenizer must break anyway, so a large file streams in bounded memory and pre-tokenizing the
segments gives exactly the pieces of the whole document.

The cut rule: right after a letter that a space, tab or newline follows (no preset pattern
matches across that point: the letter's piece ends there and the whitespace starts anew), or at
a special token. A custom pattern gives no such promise, so there a document is cut only at its
special tokens. Bad input raises `CorpusError` naming the file (and line)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AnyStr

import regex

from workbench.engine.corpus.jsonl import jsonl_records
from workbench.engine.corpus.opening import is_jsonl, read_chunks
from workbench.engine.corpus.readers import columnar
from workbench.engine.corpus.text_checks import Utf8Decoder
from workbench.engine.patterns.specials import specials_regex, split_on_specials

CHUNK_CHARS = 1 << 22  # ~4 MB of text per segment at most (when a cut point exists)
_SAFE_CUT = regex.compile(r"(?r)\p{L}(?=[ \t\n])")


@dataclass
class Segmenter:
    """Cuts document text into segments between special tokens, at safe points."""

    specials: tuple[str, ...]
    cut_inside: bool  # whether the pattern allows cuts at letter-whitespace points
    # Another cut rule a pattern promises (a reverse regex; a cut at a match's end), or None.
    boundary: regex.Pattern | None = None

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
        boundary = self.boundary or (_SAFE_CUT if self.cut_inside else None)
        if boundary is None:
            return 0
        reach = max((len(t) for t in self.specials), default=0)
        return safe_cut(buffer, boundary, pattern, reach)


def safe_cut(
    buffer: AnyStr,
    boundary: regex.Pattern,
    specials: regex.Pattern | None,
    reach: int,
    start: int = 0,
) -> int:
    """The last end of a `boundary` match (a reverse pattern) in `buffer` (text or bytes) that
    no special token spans, or 0. `reach`: the longest special token, in the buffer's units.

    Subtle: a special token may start near the end of the buffer and finish in text not read
    yet, where no search can see it; so never cut later than `len(buffer) - reach + 1`: any
    special starting before that point lies wholly inside the buffer.
    `start`: where to stop looking back. A caller that found no cut in a shorter buffer passes
    that buffer's length minus 2 (a match and its lookahead), so a long stretch without a
    cut point is searched once, not once per chunk appended to it (quadratic)."""
    end = min(len(buffer), len(buffer) - reach + 1)
    while True:
        m = boundary.search(buffer, start, end)
        if m is None:
            return 0
        cut = m.end()
        if specials is None or not any(
            t.start() < cut < t.end()
            for t in specials.finditer(buffer, max(0, cut - reach), cut + reach, overlapped=True)
        ):
            return cut
        end = m.start()


def _stream_text(
    chunks: Iterable[str], segmenter: Segmenter, chunk_chars: int | None = None
) -> Iterator[str]:
    """Segments of one document given as successive text chunks."""
    chunk_chars = CHUNK_CHARS if chunk_chars is None else chunk_chars
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
    yield Document(path, None, _stream_text(text_chunks(path), segmenter))


def holds_records(path: Path) -> bool:
    """Whether the file's documents are records (JSONL, Parquet, Arrow), not the file whole."""
    return columnar.is_columnar(path) or is_jsonl(path)


def text_chunks(path: Path) -> Iterator[str]:
    """A plain text file's text in bounded chunks as read (cut anywhere; the last may be "")."""
    decoder = Utf8Decoder(path)
    for chunk in read_chunks(path):
        yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def _jsonl_documents(path: Path, segmenter: Segmenter, field: str) -> Iterator[Document]:
    for number, record, text in jsonl_records(path, field):
        yield Document(path, number, iter(segmenter.split(text)), record)
