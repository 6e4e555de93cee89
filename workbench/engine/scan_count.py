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
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import regex

from workbench.engine import scanner
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import check_not_binary, is_jsonl, jsonl_texts, read_chunks, safe_cut
from workbench.engine.errors import CancelledError, CorpusError
from workbench.engine.specials import specials_bytes_regex

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
                tables, documents = _count_file(
                    path, preset, specials, reach, pool, workers, cancel
                )
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


def _count_file(path, preset, specials, reach, pool, workers, cancel) -> tuple[list[Table], int]:
    units = _jsonl_units(path, specials) if is_jsonl(path) else _text_units(path, specials, reach)
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
    path: Path, specials: regex.Pattern | None, reach: int
) -> Iterator[tuple[_Unit, int]]:
    """Units of a plain text file (one document)."""
    pending = bytearray()  # grows in place: a long stretch without a cut point stays linear
    searched = 0  # pending[:searched] holds no cut point
    lines = 0
    first = True
    for chunk in read_chunks(path, UNIT_BYTES):
        if first:
            first = False
            check_not_binary(path, chunk)
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        pending += chunk
        if len(pending) < UNIT_BYTES:
            continue
        # after an ASCII letter that whitespace follows: no preset piece crosses that point
        cut = safe_cut(pending, _CUT, specials, reach, max(0, searched - 2))
        if cut == 0:
            searched = len(pending)
            continue
        data, pending, searched = bytes(pending[:cut]), pending[cut:], 0
        _check_utf8(path, data, lines)
        lines += data.count(b"\n")
        yield _unit(data, specials), 0
    data = bytes(pending)
    del pending  # the last unit may be the whole file: keep one copy, not two
    _check_utf8(path, data, lines)
    yield _unit(data, specials), 1


def _jsonl_units(path: Path, specials: regex.Pattern | None) -> Iterator[tuple[_Unit, int]]:
    """Units of a JSONL file: each record's text is a document of its own."""
    parts: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    size = 0
    documents = 0
    for _, text in jsonl_texts(path):
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
