"""A corpus file's documents as *units* of bytes to count: whole documents or stretches of one,
each with the (starts, ends) of its segments (the stretches between special tokens), checked as
UTF-8 and cut only where no preset piece can cross (after an ASCII letter that a space, tab or
newline follows, never inside a special token). Every format: packs of small plain files, a
plain file streamed (or a byte range of it, for a Dask task), JSONL and columnar records.

What the pieces are is left to the counters (`pretokenize.scan`, `pretokenize.dask_count`);
the regex path reads text segments (`documents`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import regex

from workbench.engine.corpus.documents import safe_cut
from workbench.engine.corpus.jsonl import jsonl_texts
from workbench.engine.corpus.opening import is_jsonl, read_chunks
from workbench.engine.corpus.packs import TextPack, read_text_pack
from workbench.engine.corpus.readers import columnar
from workbench.engine.corpus.text_checks import check_not_binary, check_utf8
from workbench.engine.errors import CorpusError

UNIT_BYTES = 2 << 20  # bytes per unit of work: enough to amortise a call, small for memory


class _Cut:
    """An ASCII letter that a space, tab or newline follows: no preset piece crosses the point
    after it. Duck-types the reverse regex `(?r)[A-Za-z](?=[ \t\n])` for `safe_cut`, found with
    numpy a window at a time from the end: the regex engine crawls a long run of letters (a
    base64 blob) byte by byte, at about 0.2 s per MB."""

    WINDOW = 1 << 16

    class Match:
        def __init__(self, at: int) -> None:
            self.at = at

        def start(self) -> int:
            return self.at

        def end(self) -> int:
            return self.at + 1

    def search(self, buffer: bytes | bytearray, pos: int, endpos: int) -> _Cut.Match | None:
        """The last match in buffer[pos:endpos] (its lookahead within endpos too), or None."""
        hi = endpos
        while hi - pos >= 2:
            lo = max(pos, hi - self.WINDOW)
            window = np.frombuffer(buffer, dtype=np.uint8, count=hi - lo, offset=lo)
            folded = window[:-1] | 0x20  # ASCII letters to lowercase
            after = window[1:]
            hits = np.flatnonzero(
                (folded >= 0x61)
                & (folded <= 0x7A)
                & ((after == 0x20) | (after == 0x09) | (after == 0x0A))
            )
            if hits.size:
                return _Cut.Match(lo + int(hits[-1]))
            hi = lo + 1  # the window's first byte may still start a match with the byte before
        return None


_CUT = _Cut()
# SuperBPE's stage-2 pieces may span spaces but always end at a newline (`patterns.superbpe`):
# the stage-2 count cuts after a newline only (a reverse regex, for `safe_cut`).
_NEWLINE_CUT = regex.compile(rb"(?r)\n")
_BOM = b"\xef\xbb\xbf"


class Unit:
    """Bytes to count and the (starts, ends) of their segments."""

    __slots__ = ("data", "starts", "ends")

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> None:
        self.data = data
        self.starts = starts
        self.ends = ends


def read_pack(
    names: list[str], start: int, end: int, specials: regex.Pattern | None
) -> tuple[TextPack, Unit | None]:
    """The pack read from `names[start]` and the unit of its good files (None if none): run by
    a reader thread; each file is a document and at least one segment."""
    pack = read_text_pack(names, start, end, UNIT_BYTES)
    if pack.offsets.shape[0] < 2:
        return pack, None
    return pack, records_unit(pack.data, pack.offsets, specials)


def file_units(
    path: Path,
    specials: regex.Pattern | None,
    reach: int,
    text_column: str = "text",
    jsonl_field: str = "text",
    after_newline: bool = False,
) -> Iterator[tuple[Unit, int]]:
    """(unit, documents completed) of one whole file, whatever its format. `after_newline`:
    a long plain file is cut after a newline only (SuperBPE's stage 2), not after a letter."""
    if columnar.is_columnar(path):
        return record_units(columnar.text_blocks(path, text_column), specials)
    if is_jsonl(path):
        return jsonl_units(path, specials, jsonl_field)
    return text_units(path, specials, reach, after_newline=after_newline)


def range_units(
    path: Path,
    start: int,
    end: int,
    size: int,
    specials: regex.Pattern | None,
    reach: int,
    newlines: list[int] | None = None,
) -> Iterator[tuple[Unit, int]]:
    """Units of bytes [start, end) of an uncompressed text file, both ends safe cuts (or the
    file's ends): a Dask task's share of a large file. `newlines[0]` counts the lines read."""

    def chunks() -> Iterator[bytes]:
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                left = end - start
                while left > 0:
                    chunk = handle.read(min(UNIT_BYTES, left))
                    if not chunk:
                        raise CorpusError(str(path), "the file shrank while it was read")
                    left -= len(chunk)
                    if newlines is not None:
                        newlines[0] += chunk.count(b"\n")
                    yield chunk
        except OSError as exc:
            raise CorpusError(str(path), f"cannot read: {exc.strerror or exc}") from None

    return text_units(path, specials, reach, chunks(), head=start == 0, tail=end >= size)


def segment_bounds(data: bytes, specials: regex.Pattern | None, base: int = 0):
    """(starts, ends) of the stretches of data between special tokens, offset by `base`."""
    if specials is None:
        return [base], [base + len(data)]
    starts, ends = [base], []
    for m in specials.finditer(data):
        ends.append(base + m.start())
        starts.append(base + m.end())
    ends.append(base + len(data))
    return starts, ends


def _unit(data: bytes, specials: regex.Pattern | None) -> Unit:
    starts, ends = segment_bounds(data, specials)
    return Unit(data, np.array(starts, np.int64), np.array(ends, np.int64))


def text_units(
    path: Path,
    specials: regex.Pattern | None,
    reach: int,
    chunks: Iterable[bytes] | None = None,
    head: bool = True,
    tail: bool = True,
    after_newline: bool = False,
) -> Iterator[tuple[Unit, int]]:
    """Units of a plain text file (one document), or of `chunks`, a stretch of it that starts
    at its beginning (`head`) or a safe cut, and ends at its end (`tail`) or a safe cut. Line
    numbers in errors count from the stretch's start. `after_newline`: cut only after a newline
    (SuperBPE's stage-2 pieces cross the presets' cut points, never a newline)."""
    boundary = _NEWLINE_CUT if after_newline else _CUT
    pending = bytearray()  # grows in place: a long stretch without a cut point stays linear
    searched = 0  # pending[:searched] holds no cut point
    lines = 0
    first = head
    for chunk in read_chunks(path, UNIT_BYTES) if chunks is None else chunks:
        if first:
            first = False
            check_not_binary(path, chunk)
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        pending += chunk
        if len(pending) < UNIT_BYTES:
            continue
        # after an ASCII letter that whitespace follows: no preset piece crosses that point
        cut = safe_cut(pending, boundary, specials, reach, max(0, searched - reach - 2))
        if cut == 0:
            searched = len(pending)
            continue
        with memoryview(pending) as view:
            data = bytes(view[:cut])  # one copy (a slice of a bytearray would be two)
        del pending[:cut]  # in place: CPython moves the start of a bytearray, no copy
        searched = 0
        check_utf8(path, data, lines)
        lines += data.count(b"\n")
        yield _unit(data, specials), 0
    data = bytes(pending)
    del pending  # the last unit may be the whole file: keep one copy, not two
    check_utf8(path, data, lines)
    yield _unit(data, specials), 1 if tail else 0


def record_units(
    blocks: Iterator[tuple[bytes, np.ndarray]], specials: regex.Pattern | None
) -> Iterator[tuple[Unit, int]]:
    """Units of (text, document offsets) blocks: each record a document of its own."""
    for data, offsets in blocks:
        yield records_unit(data, offsets, specials), len(offsets) - 1


def records_unit(data: bytes, offsets: np.ndarray, specials: regex.Pattern | None) -> Unit:
    """A unit of records laid end to end (record k is data[offsets[k]:offsets[k+1]]), each
    split on the special tokens into segments of its own."""
    if specials is None or specials.search(data) is None:  # one segment a record
        return Unit(data, offsets[:-1].copy(), offsets[1:].copy())
    starts: list[int] = []
    ends: list[int] = []
    edges = offsets.tolist()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        s, e = segment_bounds(data[a:b], specials, a)
        starts.extend(s)
        ends.extend(e)
    return Unit(data, np.array(starts, np.int64), np.array(ends, np.int64))


def jsonl_units(
    path: Path, specials: regex.Pattern | None, field: str = "text"
) -> Iterator[tuple[Unit, int]]:
    """Units of a JSONL file: each record's text is a document of its own."""
    parts: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    size = 0
    documents = 0
    for _, text in jsonl_texts(path, field):
        data = text.encode("utf-8")
        s, e = segment_bounds(data, specials, size)
        starts.extend(s)
        ends.extend(e)
        parts.append(data)
        size += len(data)
        documents += 1
        if size >= UNIT_BYTES:
            yield Unit(b"".join(parts), np.array(starts), np.array(ends)), documents
            parts, starts, ends, size, documents = [], [], [], 0, 0
    yield Unit(b"".join(parts), np.array(starts, np.int64), np.array(ends, np.int64)), documents
