"""Counting a corpus's pre-tokens with the Numba scanner (the presets' fast path).

The same documents, segments and pieces as the regex path in `counting.py`, without ever
making a Python string per piece. The corpus comes as bytes units from `corpus.feed` (packs of
small plain files read ahead by reader threads) and `corpus.units` (files streamed); here the
units are counted by the scanner in threads (its kernels release the GIL). Each unit's count
table is folded into one growing table as soon as it is counted (`fold`), so memory stays
bounded by the table of unique pieces however large a file is. A large file is counted into a
table of its own until it has been read to the end, so a file that turns out bad halfway can be
dropped whole.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import regex

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import units
from workbench.engine.corpus.feed import CorpusFeed, FileToStream, PackRead, Progress
from workbench.engine.corpus.readers import meter
from workbench.engine.corpus.units import Unit
from workbench.engine.errors import CancelledError, CorpusError
from workbench.engine.patterns.specials import specials_bytes_regex
from workbench.engine.patterns.superbpe import STAGE2_PATTERN
from workbench.engine.pretokenize.results import CorpusStats
from workbench.engine.pretokenize.scan import entry as scanner
from workbench.engine.pretokenize.scan.fold import CountTable

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


def count_with_scanner(
    files: Sequence[str | os.PathLike],
    config: TrainConfig,
    progress: Callable[[int, int], None] | None,
    cancel: Callable[[], bool] | None,
    workers: int,
    sizes: list[int] | None = None,
    more: Callable[[int], bool] | None = None,
    max_bytes: int | None = None,
) -> tuple[CountTable, CorpusStats]:
    """The count table of all pieces of all files (`CountTable.table()`: buf, offsets, counts),
    and the documents read and files skipped (the rest of the stats is the caller's).
    `max_bytes`: the bound on the unique pieces' bytes (see `CountTable`), or None.

    `sizes[i]` may be -1 (not listed): the file is sized by reading it, and progress counts
    such files at the mean size of those read so far. Small plain files are read in packs by
    reader threads while the counting threads count earlier packs: per file the cost is a few
    system calls, its checks run over the whole pack (so a bad file is still known, and dropped
    whole, before any of it is counted). `more(n)`: the listing is still growing (`files` and
    `sizes` are its lists); it waits until the listing holds more than n files (True) or ends."""
    names = files if more is not None else list(map(os.fspath, files))
    if sizes is None:
        sizes = [os.stat(n).st_size for n in names]
    workers = max(1, workers)
    specials = specials_bytes_regex(config.special_tokens)
    metered = Progress(sizes, progress)
    feed = CorpusFeed(names, sizes, specials, metered, workers, cancel, more)  # type: ignore[arg-type]
    with ThreadPoolExecutor(workers) as pool:
        counter = _Counter(pool, config, workers, metered, names, cancel, specials, max_bytes)  # type: ignore[arg-type]
        with contextlib.closing(feed.items()) as items:
            for item in items:
                if isinstance(item, PackRead):
                    counter.take_pack(item)
                else:
                    counter.stream(item)
        counter.tables.drain()
        return counter.tables.total, counter.stats


class _Counter:
    """The consumer of the feed: counts each pack's unit and each streamed file's units in the
    pool, reports the bad files (or stops at the first), the documents and the progress."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        config: TrainConfig,
        workers: int,
        progress: Progress,
        names: Sequence[str],
        cancel: Callable[[], bool] | None,
        specials: regex.Pattern | None,
        max_bytes: int | None = None,
    ) -> None:
        self.pool = pool
        self.config = config
        self.workers = workers
        self.progress = progress
        self.names = names
        self.cancel = cancel
        self.specials = specials
        self.reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
        self.tables = _Tables(pool, config.pattern_string, workers, max_bytes)
        # SuperBPE's stage-2 pieces run over the letter-space points a long file is cut at
        self.after_newline = config.pattern_string == STAGE2_PATTERN
        self.stats = CorpusStats()

    def _skip(self, exc: CorpusError) -> None:
        if self.config.on_bad_file == "stop":
            raise exc
        self.stats.skipped.append(str(exc))

    def take_pack(self, item: PackRead) -> None:
        pack = item.pack
        for exc in pack.errors:
            self._skip(exc)
        self.stats.documents += pack.offsets.shape[0] - 1
        if item.unit is not None:
            self.tables.submit(item.unit)
        self.progress.advance(item.start, item.start + pack.read, pack.disk_bytes)

    def stream(self, item: FileToStream) -> None:
        i = item.index
        metered = self.progress
        size = metered.sized(i, self.names[i])
        config = self.config
        total = self.tables.total
        try:
            room = None
            if total.max_bytes is not None:
                # the file's own table gets what is left of the bound once every unit before
                # the file is folded in (unbounded, those are folded while the file is counted)
                self.tables.drain()
                room = total.max_bytes - total.unique_bytes
            with meter.metering(metered.callback, metered.done, size, metered.total()):
                file_units = units.file_units(
                    Path(self.names[i]),
                    self.specials,
                    self.reach,
                    config.text_column,
                    config.jsonl_field,
                    self.after_newline,
                )
                file_table, documents = _count_file(
                    file_units, config.pattern_string, self.pool, self.workers, self.cancel, room
                )
            self.stats.documents += documents
            self.tables.drain()
            self.tables.total.add_all(file_table)
        except CorpusError as exc:
            self._skip(exc)
        metered.advance(i, i + 1, size)


class _Tables:
    """The count table of whole documents, each unit's table folded in as it is counted; units
    counted in the pool with one queued per thread."""

    def __init__(
        self, pool: ThreadPoolExecutor, preset: str, workers: int, max_bytes: int | None
    ) -> None:
        self.pool = pool
        self.preset = preset
        self.workers = workers
        self.in_flight: deque[Future] = deque()
        self.total = CountTable(max_bytes)

    def submit(self, unit: Unit) -> None:
        self.in_flight.append(self.pool.submit(_count_unit, unit, self.preset))
        if len(self.in_flight) > self.workers:
            self.total.add(self.in_flight.popleft().result())

    def drain(self) -> None:
        """Fold every unit submitted so far (before a streamed file's table: pieces stay in
        order of first occurrence however the packs fall)."""
        while self.in_flight:
            self.total.add(self.in_flight.popleft().result())


def count_units(units: Iterable[tuple[Unit, int]], preset: str) -> tuple[Table, int]:
    """One table and the documents of units counted here, one after another (a Dask task)."""
    total = CountTable()
    documents = 0
    for unit, docs in units:
        documents += docs
        total.add(_count_unit(unit, preset))
    return total.table(), documents


def count_unit_stream(
    units: Iterable[tuple[Unit, int]],
    preset: str,
    workers: int,
    cancel: Callable[[], bool] | None = None,
    max_bytes: int | None = None,
) -> tuple[CountTable, int]:
    """One table and the documents of a stream of units (documents given in memory), counted
    in `workers` threads with one unit queued per thread, so memory stays bounded however long
    the stream; `cancel()` is polled between units. `max_bytes`: see `CountTable`."""
    with ThreadPoolExecutor(max(1, workers)) as pool:
        table, documents = _count_file(units, preset, pool, max(1, workers), cancel, max_bytes)
    return table, documents


def _count_file(units, preset, pool, workers, cancel, max_bytes=None) -> tuple[CountTable, int]:
    """The file's own table (folded into the corpus's only once the file is known good)."""
    in_flight: deque[Future] = deque()
    table = CountTable(max_bytes)
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


def _count_unit(unit: Unit, preset: str) -> Table:
    return scanner.count_pieces_arrays(unit.data, preset, (unit.starts, unit.ends))
