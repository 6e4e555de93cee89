"""Counting a corpus's pre-tokens with the Numba scanner (the presets' fast path).

The same documents, segments and pieces as the regex path in `pretokenize.py`, without ever
making a Python string per piece: files are read as bytes, checked as UTF-8, cut into units of
work at points where no preset piece can cross (after an ASCII letter that a space, tab or
newline follows, never inside a special token), split on special tokens into segments, and
counted by the scanner in threads (its kernels release the GIL). The per-unit count tables are
merged in Numba. A file is counted into tables of its own until it has been read to the end, so
a file that turns out bad halfway can be dropped whole.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import regex

from workbench.engine import scanner
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import _read_chunks, check_not_binary, is_jsonl, jsonl_texts, safe_cut
from workbench.engine.errors import CancelledError, CorpusError
from workbench.engine.readers import columnar
from workbench.engine.specials import specials_bytes_regex

UNIT_BYTES = 2 << 20  # bytes per unit of work: enough to amortise a call, small for memory
_CUT = regex.compile(rb"(?r)[A-Za-z](?=[ \t\n])")
_BOM = b"\xef\xbb\xbf"

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


class _Unit:
    """Bytes to count and the (starts, ends) of their segments."""

    __slots__ = ("data", "starts", "ends")

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> None:
        self.data = data
        self.starts = starts
        self.ends = ends


def count_with_scanner(
    files: list[Path],
    config: TrainConfig,
    stats,
    progress: Callable[[int, int], None] | None,
    cancel: Callable[[], bool] | None,
    workers: int,
) -> Table:
    """(buf, offsets, counts) of all pieces of all files; fills `stats` as it goes."""
    preset = config.pattern_string
    specials = specials_bytes_regex(config.special_tokens)
    reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
    total = sum(f.stat().st_size for f in files)
    done = 0
    merged: list[Table] = []
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for path in files:
            if cancel is not None and cancel():
                raise CancelledError("pre-tokenizing cancelled")
            try:
                units = file_units(path, specials, reach, config)
                tables, documents = _count_file(units, preset, pool, workers, cancel)
            except CorpusError as exc:
                if config.on_bad_file == "stop":
                    raise
                stats.skipped.append(str(exc))
            else:
                stats.documents += documents
                merged.extend(tables)
                if len(merged) >= 16:  # bound memory: fold the tables as they pile up
                    merged = [scanner.merge_count_tables(merged)]
            done += path.stat().st_size
            if progress is not None:
                progress(done, total)
    if not merged:
        return np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64)
    return scanner.merge_count_tables(merged)


def file_units(
    path: Path, specials: regex.Pattern | None, reach: int, config: TrainConfig
) -> Iterator[tuple[_Unit, int]]:
    """(unit, documents completed) of one whole file, whatever its format."""
    if columnar.is_columnar(path):
        return record_units(columnar.text_blocks(path, config.text_column), specials)
    if is_jsonl(path):
        return _jsonl_units(path, specials, config.jsonl_field)
    return _text_units(path, specials, reach)


def range_units(
    path: Path,
    start: int,
    end: int,
    size: int,
    specials: regex.Pattern | None,
    reach: int,
    newlines: list[int] | None = None,
) -> Iterator[tuple[_Unit, int]]:
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

    return _text_units(path, specials, reach, chunks(), head=start == 0, tail=end >= size)


def count_units(units: Iterable[tuple[_Unit, int]], preset: str) -> tuple[Table, int]:
    """One table and the documents of units counted here, one after another (a Dask task)."""
    tables: list[Table] = []
    documents = 0
    for unit, docs in units:
        documents += docs
        tables.append(_count_unit(unit, preset))
        if len(tables) >= 16:
            tables = [scanner.merge_count_tables(tables)]
    if not tables:
        return (np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64)), documents
    return scanner.merge_count_tables(tables), documents


def _count_file(units, preset, pool, workers, cancel) -> tuple[list[Table], int]:
    in_flight: deque[Future] = deque()
    tables: list[Table] = []
    documents = 0
    try:
        for unit, docs in units:
            documents += docs
            if cancel is not None and cancel():
                raise CancelledError("pre-tokenizing cancelled")
            in_flight.append(pool.submit(_count_unit, unit, preset))
            if len(in_flight) > workers:  # one queued per thread: memory stays flat
                tables.append(in_flight.popleft().result())
        while in_flight:
            tables.append(in_flight.popleft().result())
    finally:
        for future in in_flight:
            future.cancel()
    return tables, documents


def _count_unit(unit: _Unit, preset: str) -> Table:
    return scanner.count_pieces_arrays(unit.data, preset, (unit.starts, unit.ends))


def _segments(data: bytes, specials: regex.Pattern | None, base: int = 0):
    """(starts, ends) of the stretches of data between special tokens, offset by `base`."""
    if specials is None:
        return [base], [base + len(data)]
    starts, ends = [base], []
    for m in specials.finditer(data):
        ends.append(base + m.start())
        starts.append(base + m.end())
    ends.append(base + len(data))
    return starts, ends


def _unit(data: bytes, specials: regex.Pattern | None) -> _Unit:
    starts, ends = _segments(data, specials)
    return _Unit(data, np.array(starts, np.int64), np.array(ends, np.int64))


def _check_utf8(path: Path, data: bytes, lines_before: int) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + data.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            str(path), f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", line
        ) from None


def _text_units(
    path: Path,
    specials: regex.Pattern | None,
    reach: int,
    chunks: Iterable[bytes] | None = None,
    head: bool = True,
    tail: bool = True,
) -> Iterator[tuple[_Unit, int]]:
    """Units of a plain text file (one document), or of `chunks`, a stretch of it that starts
    at its beginning (`head`) or a safe cut, and ends at its end (`tail`) or a safe cut. Line
    numbers in errors count from the stretch's start."""
    pending = b""
    lines = 0
    first = head
    for chunk in _read_chunks(path, UNIT_BYTES) if chunks is None else chunks:
        if first:
            first = False
            check_not_binary(path, chunk)
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        pending += chunk
        if len(pending) < UNIT_BYTES:
            continue
        # after an ASCII letter that whitespace follows: no preset piece crosses that point
        cut = safe_cut(pending, _CUT, specials, reach)
        if cut == 0:
            continue
        data, pending = pending[:cut], pending[cut:]
        _check_utf8(path, data, lines)
        lines += data.count(b"\n")
        yield _unit(data, specials), 0
    _check_utf8(path, pending, lines)
    yield _unit(pending, specials), 1 if tail else 0


def record_units(
    blocks: Iterator[tuple[bytes, np.ndarray]], specials: regex.Pattern | None
) -> Iterator[tuple[_Unit, int]]:
    """Units of (text, document offsets) blocks: each record a document of its own."""
    for data, offsets in blocks:
        documents = len(offsets) - 1
        if specials is None:
            yield _Unit(data, offsets[:-1].copy(), offsets[1:].copy()), documents
            continue
        starts: list[int] = []
        ends: list[int] = []
        edges = offsets.tolist()
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            s, e = _segments(data[a:b], specials, a)
            starts.extend(s)
            ends.extend(e)
        yield _Unit(data, np.array(starts, np.int64), np.array(ends, np.int64)), documents


def _jsonl_units(
    path: Path, specials: regex.Pattern | None, field: str = "text"
) -> Iterator[tuple[_Unit, int]]:
    """Units of a JSONL file: each record's text is a document of its own."""
    parts: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    size = 0
    documents = 0
    for _, text in jsonl_texts(path, field):
        data = text.encode("utf-8")
        s, e = _segments(data, specials, size)
        starts.extend(s)
        ends.extend(e)
        parts.append(data)
        size += len(data)
        documents += 1
        if size >= UNIT_BYTES:
            yield _Unit(b"".join(parts), np.array(starts), np.array(ends)), documents
            parts, starts, ends, size, documents = [], [], [], 0, 0
    yield _Unit(b"".join(parts), np.array(starts, np.int64), np.array(ends, np.int64)), documents
