"""The corpus fed to a counter in order, as bytes units: packs of small plain files read ahead
by reader threads (each pack checked and made one unit of whole documents) while earlier packs
are counted, and in their place the files to stream (large, compressed, JSONL or columnar: their
units come from `units.file_units`). The listing may still be growing (a `CorpusWalk`): packs
are full while it grows, but for a reader left idle.

`Progress` turns the files done into bytes done and a total that settles as unsized files are
read. Counting the units is left to the consumer (`pretokenize.scan.count`).
"""

from __future__ import annotations

import operator
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import regex

from workbench.engine.corpus import units
from workbench.engine.corpus.opening import is_jsonl
from workbench.engine.corpus.packs import TextPack
from workbench.engine.corpus.readers import streams_only
from workbench.engine.errors import CancelledError

PACK_FILES = 16384  # files per pack at most (fewer when they are large: UNIT_BYTES a pack)
FIRST_PACK_FILES = 1024  # before any file is read: small, so counting starts early
READERS = 2  # threads reading packs of small files (their system calls release the GIL)
LOOK_AGAIN = 0.002  # seconds between looks at the listing while a reader is idle

Reading = deque[tuple[Future, int, int]]  # packs being read, in order: (future, start, end)


@dataclass
class PackRead:
    """Files `start` to `start + pack.read` read as one pack; `unit`: its good files' text to
    count (None when none is good)."""

    start: int
    pack: TextPack
    unit: units.Unit | None


@dataclass
class FileToStream:
    """File `index` is next, to be read as a stream of units of its own."""

    index: int


class CorpusFeed:
    """What to count, in corpus order: `PackRead`s and `FileToStream`s, from `items()`.

    `names`/`sizes` may be a growing listing: `more(n)` waits until it holds more than n files
    (True) or ends (False); None: the lists are complete. `ahead`: packs asked for beyond the
    one being taken (one per counting thread). `cancel()` is polled between steps."""

    def __init__(
        self,
        names: Sequence[str],
        sizes: list[int],
        specials: regex.Pattern | None,
        progress: Progress,
        ahead: int,
        cancel: Callable[[], bool] | None = None,
        more: Callable[[int], bool] | None = None,
    ) -> None:
        self.names = names
        self.sizes = sizes
        self.specials = specials
        self.progress = progress
        self.ahead = ahead
        self.cancel = cancel
        self.more = more
        self.ended = more is None  # whether the listing is complete
        self.next = 0  # the first file not yet asked for
        self.reading: Reading = deque()
        self._readers: ThreadPoolExecutor | None = None

    def items(self) -> Iterator[PackRead | FileToStream]:
        """The corpus in order; closing the generator cancels the packs not yet read."""
        with ThreadPoolExecutor(READERS) as readers:
            self._readers = readers
            try:
                yield from self._steps()
            finally:
                for future, _, _ in self.reading:
                    future.cancel()

    def _steps(self) -> Iterator[PackRead | FileToStream]:
        names = self.names
        while True:
            if self.cancel is not None and self.cancel():
                raise CancelledError("pre-tokenizing cancelled")
            most = self.progress.pack_files()
            if self._may_ask(most):
                end = _pack_end(names, self.sizes, self.next, most)
                if end > self.next:
                    self._ask(self.next, end)
                    self.next = end
                    continue
                while self.reading:  # the files before this one first, in order
                    yield from self._take()
                yield FileToStream(self.next)
                self.next += 1
            elif self.reading:
                if (self.next < len(names) or not self.ended) and not _oldest_read(self.reading):
                    continue  # a reader is free for the next files
                yield from self._take()
            elif self.ended and self.next == len(names):
                return

    def _may_ask(self, most: int) -> bool:
        """Whether to ask for the next pack now (or stream the next file), waiting for the
        listing when nothing else is to be done. While the walk goes on, packs are full, but
        for a reader left idle: it takes what is listed once that is a first pack's worth."""
        names, i, reading = self.names, self.next, self.reading
        least = min(most, FIRST_PACK_FILES)
        if not self.ended and len(names) < i + least and not reading:
            # nothing to take meanwhile: wait for files to read, or the end
            self.ended = not self.more(i + least - 1)  # type: ignore[misc]
        idle = _busy(reading) < READERS and len(names) >= i + least
        whole = self.ended or len(names) >= i + most or idle
        return i < len(names) and whole and len(reading) <= self.ahead

    def _ask(self, start: int, end: int, first: bool = False) -> None:
        """Have a reader read the pack of files `start` to `end`, after the packs asked for
        (or, `first`, before them)."""
        assert self._readers is not None  # set by `items`
        future = self._readers.submit(units.read_pack, self.names, start, end, self.specials)
        if first:
            self.reading.appendleft((future, start, end))
        else:
            self.reading.append((future, start, end))

    def _take(self) -> Iterator[PackRead | FileToStream]:
        """The oldest pack, then (when it stopped at a file larger than a pack) that file, in
        its place in the order; the rest of the files asked for go to a pack of their own."""
        future, start, end = self.reading.popleft()
        pack, unit = future.result()
        yield PackRead(start, pack, unit)
        stop = start + pack.read
        if pack.big:
            yield FileToStream(stop)
            stop += 1
        if stop < end:  # the rest of the pack, next
            self._ask(stop, end, first=True)


def _oldest_read(reading: Reading) -> bool:
    """Whether the first pack asked for is read, else waiting until some pack is (a reader is
    then free), or LOOK_AGAIN seconds while one is free already (the walk may list more)."""
    waiting = [future for future, _, _ in reading if not future.done()]
    if reading[0][0] not in waiting:
        return True
    timeout = LOOK_AGAIN if len(waiting) < READERS else None
    futures.wait(waiting, timeout, futures.FIRST_COMPLETED)
    return reading[0][0].done()


def _busy(reading: Reading) -> int:
    """How many of the packs asked for are still being read."""
    return sum(not future.done() for future, _, _ in reading)


class Progress:
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
        """Files for the next pack: 3/4 of units.UNIT_BYTES at the mean size so far, so a pack seldom
        reaches the reader's limit of units.UNIT_BYTES and leaves a sliver of files for another."""
        if not self.files_done:
            return FIRST_PACK_FILES
        mean = max(1, self.done // self.files_done)
        return max(16, min(PACK_FILES, units.UNIT_BYTES * 3 // 4 // mean))

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
    most `most` files, their listed sizes summing to about units.UNIT_BYTES, none listed larger."""
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
        if size > units.UNIT_BYTES:
            return k
        total += max(size, 0)
        if total >= units.UNIT_BYTES:
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
