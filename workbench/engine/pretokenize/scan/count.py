"""Counting a corpus's pre-tokens with the Numba scanner (the presets' fast path).

The same documents, segments and pieces as the regex path in `pretokenize.py`, without ever
making a Python string per piece: files are read as bytes, checked as UTF-8, cut into units of
work at points where no preset piece can cross (after an ASCII letter that a space, tab or
newline follows, never inside a special token), split on special tokens into segments, and
counted by the scanner in threads (its kernels release the GIL). Each unit's count table is
folded into one growing table as soon as it is counted (`count_fold`), so memory stays bounded
by the table of unique pieces however large a file is. A large file is counted into a table of
its own until it has been read to the end, so a file that turns out bad halfway can be dropped
whole. Small plain files go in packs that reader threads read and check while earlier packs
are counted.
"""

from __future__ import annotations

import operator
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import regex

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.readers import columnar, meter, streams_only
from workbench.engine.corpus.reading import (
    TextPack,
    check_not_binary,
    check_utf8,
    is_jsonl,
    jsonl_texts,
    read_chunks,
    read_text_pack,
    safe_cut,
)
from workbench.engine.errors import CancelledError, CorpusError
from workbench.engine.pretokenize.scan import entry as scanner
from workbench.engine.pretokenize.scan.fold import CountTable
from workbench.engine.pretokenize.specials import specials_bytes_regex

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
    files: Sequence[str | os.PathLike],
    config: TrainConfig,
    stats,
    progress: Callable[[int, int], None] | None,
    cancel: Callable[[], bool] | None,
    workers: int,
    sizes: list[int] | None = None,
    more: Callable[[int], bool] | None = None,
) -> Table:
    """(buf, offsets, counts) of all pieces of all files; fills `stats` as it goes.

    `sizes[i]` may be -1 (not listed): the file is sized by reading it, and progress counts
    such files at the mean size of those read so far. Small plain files are read in packs by
    reader threads while the counting threads count earlier packs: per file the cost is a few
    system calls, its checks run over the whole pack (so a bad file is still known, and dropped
    whole, before any of it is counted). `more(n)`: the listing is still growing (`files` and
    `sizes` are its lists); it waits until the listing holds more than n files (True) or ends."""
    preset = config.pattern_string
    specials = specials_bytes_regex(config.special_tokens)
    reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
    names = files if more is not None else list(map(os.fspath, files))
    if sizes is None:
        sizes = [os.stat(n).st_size for n in names]
    workers = max(1, workers)
    meter_ = _Progress(sizes, progress)
    with ThreadPoolExecutor(workers) as pool, ThreadPoolExecutor(READERS) as readers:
        tables = _Tables(pool, preset, workers)
        reading: deque[tuple[Future, int, int]] = deque()  # packs being read, in order

        def read(start: int, end: int) -> Future:
            return readers.submit(_read_pack, names, start, end, specials)

        def take_pack() -> None:
            future, start, end = reading.popleft()
            pack, unit = future.result()
            for exc in pack.errors:
                if config.on_bad_file == "stop":
                    raise exc
                stats.skipped.append(str(exc))
            stats.documents += pack.offsets.shape[0] - 1
            if unit is not None:
                tables.submit(unit)
            stop = start + pack.read
            meter_.advance(start, stop, pack.disk_bytes)
            if pack.big:  # a file larger than a pack: streamed, in its place in the order
                stream(stop)
                stop += 1
            if stop < end:  # the rest of the pack, next
                reading.appendleft((read(stop, end), stop, end))

        def stream(i: int) -> None:
            size = meter_.sized(i, names[i])
            try:
                with meter.metering(progress, meter_.done, size, meter_.total()):
                    units = file_units(Path(names[i]), specials, reach, config)
                    file_table, documents = _count_file(units, preset, pool, workers, cancel)
                stats.documents += documents
                tables.drain()
                tables.total.add_all(file_table)
            except CorpusError as exc:
                if config.on_bad_file == "stop":
                    raise
                stats.skipped.append(str(exc))
            meter_.advance(i, i + 1, size)

        def cancelled() -> None:
            if cancel is not None and cancel():
                raise CancelledError("pre-tokenizing cancelled")

        try:
            i = 0
            ended = more is None  # whether the listing is complete
            while True:
                cancelled()
                most = meter_.pack_files()
                # While the walk goes on, packs are full, but for a reader left idle: it takes
                # what is listed once that is a first pack's worth (the walk sets the pace).
                least = min(most, FIRST_PACK_FILES)
                if not ended and len(names) < i + least and not reading:
                    # nothing to take meanwhile: wait for files to read, or the end
                    ended = not more(i + least - 1)  # type: ignore[misc]
                idle = _busy(reading) < READERS and len(names) >= i + least
                whole = ended or len(names) >= i + most or idle
                if i < len(names) and whole and len(reading) <= workers:  # one ahead per reader
                    end = _pack_end(names, sizes, i, most)
                    if end > i:
                        reading.append((read(i, end), i, end))
                        i = end
                        continue
                    while reading:  # the files before this one first, in order
                        take_pack()
                    stream(i)
                    i += 1
                elif reading:
                    if (i < len(names) or not ended) and not _oldest_read(reading):
                        continue  # a reader is free for the next files
                    take_pack()
                elif ended and i == len(names):
                    break
        finally:
            for future, _, _ in reading:
                future.cancel()
        return tables.finish()


def _oldest_read(reading: deque[tuple[Future, int, int]]) -> bool:
    """Whether the first pack asked for is read, else waiting until some pack is (a reader is
    then free), or LOOK_AGAIN seconds while one is free already (the walk may list more)."""
    waiting = [future for future, _, _ in reading if not future.done()]
    if reading[0][0] not in waiting:
        return True
    timeout = LOOK_AGAIN if len(waiting) < READERS else None
    futures.wait(waiting, timeout, futures.FIRST_COMPLETED)
    return reading[0][0].done()


def _busy(reading: deque[tuple[Future, int, int]]) -> int:
    """How many of the packs asked for are still being read."""
    return sum(not future.done() for future, _, _ in reading)


PACK_FILES = 16384  # files per pack at most (fewer when they are large: UNIT_BYTES a pack)
FIRST_PACK_FILES = 1024  # before any file is read: small, so counting starts early
READERS = 2  # threads reading packs of small files (their system calls release the GIL)
LOOK_AGAIN = 0.002  # seconds between looks at the listing while a reader is idle


class _Progress:
    """Bytes done and the total to report: the listed sizes, and for files not sized by the
    listing (-1) the mean size of the files read so far, so the total settles as they are read
    and equals the bytes done at the end. The listing may grow meanwhile."""

    def __init__(self, sizes: list[int], callback: Callable[[int, int], None] | None) -> None:
        self.sizes = sizes
        self.callback = callback
        self.listed = 0  # sizes[:listed] are in the two counts below
        self.unknown_left = 0
        self.known_left = 0
        self.done = 0
        self.files_done = 0

    def _catch_up(self) -> None:
        if len(self.sizes) > self.listed:
            part = self.sizes[self.listed :]
            unknown = part.count(-1)
            self.unknown_left += unknown
            self.known_left += sum(part) + unknown
            self.listed += len(part)

    def total(self) -> int:
        self._catch_up()
        mean = self.done / self.files_done if self.files_done else 0
        return self.done + self.known_left + round(self.unknown_left * mean)

    def pack_files(self) -> int:
        """Files for the next pack: 3/4 of UNIT_BYTES at the mean size so far, so a pack seldom
        reaches the reader's limit of UNIT_BYTES and leaves a sliver of files for another."""
        if not self.files_done:
            return FIRST_PACK_FILES
        mean = max(1, self.done // self.files_done)
        return max(16, min(PACK_FILES, UNIT_BYTES * 3 // 4 // mean))

    def sized(self, i: int, name: str) -> int:
        """File i's size, asked of the system if the listing left it out."""
        self._catch_up()
        if self.sizes[i] < 0:
            try:
                self.sizes[i] = os.stat(name).st_size
            except OSError:
                self.sizes[i] = 0  # its reader reports the problem
            self.unknown_left -= 1
            self.known_left += self.sizes[i]
        return self.sizes[i]

    def advance(self, start: int, stop: int, disk_bytes: int) -> None:
        """Files [start, stop) are done, `disk_bytes` read from them."""
        self._catch_up()
        part = self.sizes[start:stop]
        unknown = part.count(-1)
        self.unknown_left -= unknown
        self.known_left -= sum(part) + unknown
        self.done += disk_bytes
        self.files_done += stop - start
        if self.callback is not None:
            self.callback(self.done, self.total())


def _pack_end(names: list[str], sizes: list[int], start: int, most: int) -> int:
    """The end of the pack of plain text files from `start` (== start: stream that file): at
    most `most` files, their listed sizes summing to about UNIT_BYTES, none listed larger."""
    end = min(len(names), start + most)
    suffix, plain = _suffix_kind(names[start])
    if not plain:
        return start
    if suffix and _all_end_with(names[start:end], suffix):  # the usual case, at C speed
        alike = end
    elif suffix:  # most files share the first one's suffix: checked up to the first not
        same = list(map(operator.methodcaller("endswith", suffix), names[start:end]))
        alike = start + (same.index(False) if False in same else len(same))
    else:
        alike = start + 1
    for k in range(alike, end):  # the rest one by one
        if not _suffix_kind(names[k])[1]:
            end = k
            break
    if max(sizes[start:end]) <= 0:  # none sized (sized by reading), or all empty
        return end
    total = 0
    for k in range(start, end):
        size = sizes[k]
        if size > UNIT_BYTES:
            return k
        total += max(size, 0)
        if total >= UNIT_BYTES:
            return k + 1
    return end


def _all_end_with(names: list[str], suffix: str) -> bool:
    """Whether every name ends with `suffix`, from one count over the names joined by NULs
    (no name holds one): each "suffix NUL" found is a name's end. Twice as quick as asking
    each name, and a pack's worth of names is asked for every pack."""
    return ("\0".join(names) + "\0").count(suffix + "\0") == len(names)


_WHOLE_BY_SUFFIX: dict[str, bool] = {}


def _suffix_kind(name: str) -> tuple[str, bool]:
    """(the name's last suffix, whether that makes it plain text: not compressed, columnar or
    JSONL), cached per suffix (pathlib's name parsing costs microseconds a file)."""
    tail = name[name.rfind(os.sep) + 1 :]
    dot = tail.rfind(".")
    suffix = tail[dot:] if dot >= 0 else ""
    key = suffix.lower()
    kind = _WHOLE_BY_SUFFIX.get(key)
    if kind is None:
        probe = Path("x" + key)
        kind = _WHOLE_BY_SUFFIX[key] = not streams_only(probe) and not is_jsonl(probe)
    return suffix, kind


def _read_pack(
    names: list[str], start: int, end: int, specials: regex.Pattern | None
) -> tuple[TextPack, _Unit | None]:
    """The pack read from `names[start]` and the unit of its good files (None if none): run by
    a reader thread; each file is a document and at least one segment."""
    pack = read_text_pack(names, start, end, UNIT_BYTES)
    if pack.offsets.shape[0] < 2:
        return pack, None
    return pack, _records_unit(pack.data, pack.offsets, specials)


class _Tables:
    """The count table of whole documents, each unit's table folded in as it is counted; units
    counted in the pool with one queued per thread."""

    def __init__(self, pool: ThreadPoolExecutor, preset: str, workers: int) -> None:
        self.pool = pool
        self.preset = preset
        self.workers = workers
        self.in_flight: deque[Future] = deque()
        self.total = CountTable()

    def submit(self, unit: _Unit) -> None:
        self.in_flight.append(self.pool.submit(_count_unit, unit, self.preset))
        if len(self.in_flight) > self.workers:
            self.total.add(self.in_flight.popleft().result())

    def drain(self) -> None:
        """Fold every unit submitted so far (before a streamed file's table: pieces stay in
        order of first occurrence however the packs fall)."""
        while self.in_flight:
            self.total.add(self.in_flight.popleft().result())

    def finish(self) -> Table:
        self.drain()
        return self.total.table()


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
    total = CountTable()
    documents = 0
    for unit, docs in units:
        documents += docs
        total.add(_count_unit(unit, preset))
    return total.table(), documents


def _count_file(units, preset, pool, workers, cancel) -> tuple[CountTable, int]:
    """The file's own table (folded into the corpus's only once the file is known good)."""
    in_flight: deque[Future] = deque()
    table = CountTable()
    documents = 0
    try:
        for unit, docs in units:
            documents += docs
            if cancel is not None and cancel():
                raise CancelledError("pre-tokenizing cancelled")
            in_flight.append(pool.submit(_count_unit, unit, preset))
            del unit  # held by its task only: freed as soon as it is counted
            if len(in_flight) > workers:  # one queued per thread: memory stays flat
                table.add(in_flight.popleft().result())
        while in_flight:
            table.add(in_flight.popleft().result())
    finally:
        for future in in_flight:
            future.cancel()
    return table, documents


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
        cut = safe_cut(pending, _CUT, specials, reach, max(0, searched - reach - 2))
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
) -> Iterator[tuple[_Unit, int]]:
    """Units of (text, document offsets) blocks: each record a document of its own."""
    for data, offsets in blocks:
        yield _records_unit(data, offsets, specials), len(offsets) - 1


def _records_unit(data: bytes, offsets: np.ndarray, specials: regex.Pattern | None) -> _Unit:
    """A unit of records laid end to end (record k is data[offsets[k]:offsets[k+1]]), each
    split on the special tokens into segments of its own."""
    if specials is None or specials.search(data) is None:  # one segment a record
        return _Unit(data, offsets[:-1].copy(), offsets[1:].copy())
    starts: list[int] = []
    ends: list[int] = []
    edges = offsets.tolist()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        s, e = _segments(data[a:b], specials, a)
        starts.extend(s)
        ends.extend(e)
    return _Unit(data, np.array(starts, np.int64), np.array(ends, np.int64))


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
