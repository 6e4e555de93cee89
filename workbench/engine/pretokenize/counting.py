"""Pre-tokenizing a corpus into counted unique pieces (the word table), on all cores.

`count_corpus(paths, config)` reads the files (see `corpus/`), splits out special tokens,
pre-tokenizes each segment with the pattern and counts the pieces. The pieces of a document are
exactly `regex.findall(pattern, text)` of each stretch between special tokens, whatever the
chunking or the number of processes.

Work goes to spawned processes in batches of segments; results come back in order, so a file
that turns out bad halfway can be dropped whole when the user chose to skip bad files.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from workbench.engine._native.memory import give_back_freed_memory
from workbench.engine.config import TrainConfig, check_workers
from workbench.engine.corpus import memory
from workbench.engine.corpus.documents import Segmenter, read_documents
from workbench.engine.corpus.listing import CorpusListing, CorpusWalk, PathList, list_corpus
from workbench.engine.corpus.opening import is_jsonl, read_small_text
from workbench.engine.corpus.readers import meter, streams_only
from workbench.engine.errors import CancelledError, CorpusError
from workbench.engine.patterns.regexes import preset_name
from workbench.engine.patterns.specials import specials_bytes_regex
from workbench.engine.patterns.superbpe import AFTER_NEWLINE, STAGE2_PATTERN
from workbench.engine.pretokenize import _regex_worker as worker
from workbench.engine.pretokenize import counts_file  # a counts file: a corpus already counted
from workbench.engine.pretokenize.piece_bound import PieceBound
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.engine.pretokenize.scan import can_count
from workbench.engine.pretokenize.scan.count import count_unit_stream, count_with_scanner
from workbench.engine.pretokenize.words import WordTable

BATCH_CHARS = 1 << 21  # text per task: big enough to amortise the hand-over
PARALLEL_FROM_BYTES = 4 << 20  # smaller corpora are faster in one process

Progress = Callable[[int, int], None]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def count_corpus(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    workers: int | None = None,
    max_bytes: int | None = None,
) -> PretokenizeResult:
    """Count the pre-tokens of every document under `paths`.

    Raises CorpusError for a bad file when `config.on_bad_file == "stop"` (otherwise the file
    is left out whole and named in `stats.skipped`), CorpusError when nothing is left to train
    on, and CancelledError as soon as `cancel()` says so. `max_bytes`: a bound on the unique
    pieces' bytes, held while counting (new pieces are left out once it is reached, see
    `scan.fold.CountTable` and `piece_bound`; the result says what was left out)."""
    start = time.perf_counter()
    workers = check_workers(workers) or default_workers()
    paths = list(paths)
    if (counted := counts_file.counts_path(paths)) is not None:
        return counts_file.read_counts(counted, config.pattern_string, config.special_tokens)
    if config.pretokenizer == "auto" and can_count(config.pattern_string):
        return _count_scanning(paths, config, progress, cancel, workers, start, max_bytes)
    listing = list_corpus(paths)
    files = listing.files
    stats = CorpusStats(files=len(files))
    for problem in listing.problems:
        if config.on_bad_file == "stop":
            raise problem
        stats.skipped.append(str(problem))
    stats.skipped.extend(map(str, listing.passed_over))
    if not files:
        raise _nothing_to_read(paths, stats, "no files to read")
    total = sum(listing.sizes)
    tasks = _tasks(listing, config, stats, progress, total)
    counts: Counter[str] = Counter()
    pending: dict[int, Counter[str]] = {}
    bound = None if max_bytes is None else PieceBound(max_bytes)
    if workers > 1 and total >= PARALLEL_FROM_BYTES:
        for result in _in_processes(tasks, workers):
            _take(result, counts, pending, cancel, bound)
    else:
        for task in tasks:
            _take(worker.run_task(task), counts, pending, cancel, bound)
    if not counts:
        raise _nothing_to_read(paths, stats)
    words = WordTable.from_counts({piece.encode("utf-8"): n for piece, n in counts.items()})
    dropped = (0, 0) if bound is None else (bound.dropped, bound.dropped_bytes)
    return _finish(words, stats, files, start, dropped)


def _count_scanning(
    paths: list,
    config: TrainConfig,
    progress: Progress | None,
    cancel: Callable[[], bool] | None,
    workers: int,
    start: float,
    max_bytes: int | None = None,
) -> PretokenizeResult:
    """`count_corpus` with the scanner, reading the files listed while the folders are still
    being walked (in a thread of their own), with the outcome of listing them first: the first
    problem inside a folder stops the run before any bad file does (when bad files stop it),
    and is reported first when they are skipped."""
    walk = CorpusWalk(paths)  # the paths named are checked here
    listing = walk.listing
    stop = config.on_bad_file == "stop"

    def stopped() -> bool:  # polled between units of work
        if stop and listing.problems:
            raise listing.problems[0]
        return cancel is not None and cancel()

    walk.start()
    try:
        table, stats = count_with_scanner(
            listing.names, config, progress, stopped, workers, listing.sizes, walk.more, max_bytes
        )
    except CorpusError:
        walk.finish()
        if listing.problems:  # the first problem of the listing, as if listed before reading
            raise listing.problems[0] from None
        raise
    finally:
        walk.stop()
    walk.finish()
    stopped()
    stats.files = len(listing.names)
    stats.skipped[:0] = [*map(str, listing.problems), *map(str, listing.passed_over)]
    if not listing.names:
        raise _nothing_to_read(paths, stats, "no files to read")
    words = WordTable.from_arrays(*table.table())
    dropped = table.dropped, table.dropped_bytes
    del table  # its hash slots
    give_back_freed_memory()
    if len(words) == 0:
        raise _nothing_to_read(paths, stats)
    return _finish(words, stats, PathList(listing.names), start, dropped)


def _nothing_to_read(
    paths: list, stats: CorpusStats, what: str = "the corpus holds no text to train on"
) -> CorpusError:
    """The error for an empty corpus, carrying the first reason a file was left out, so a
    lone bad file opened in the window says what is wrong with it."""
    where = ", ".join(map(str, paths)) or "(none)"
    if not stats.skipped:
        return CorpusError(where, what)
    more = f" (and {len(stats.skipped) - 1} more)" if len(stats.skipped) > 1 else ""
    return CorpusError(where, f"{what}: all skipped, {stats.skipped[0]}{more}")


def _finish(
    words: WordTable,
    stats: CorpusStats,
    files: Sequence[Path],
    start: float,
    dropped: tuple[int, int] = (0, 0),
) -> PretokenizeResult:
    stats.pieces = words.total_pieces
    stats.unique_pieces = len(words)
    stats.bytes = words.total_bytes
    stats.seconds = time.perf_counter() - start
    return PretokenizeResult(words, stats, files, *dropped)


def _in_processes(tasks: Iterator[tuple], workers: int) -> Iterator[tuple]:
    """Results of the tasks, in order, from spawned processes, with at most two tasks per
    process in flight so memory stays bounded however large the corpus is. A worker that dies
    surfaces as an error (BrokenProcessPool), never as a hang."""
    context = multiprocessing.get_context("spawn")  # no fork: the window's threads stay safe
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        in_flight: deque = deque()
        try:
            for task in tasks:
                in_flight.append(pool.submit(worker.run_task, task))
                if len(in_flight) >= 2 * workers:
                    yield in_flight.popleft().result()
            while in_flight:
                yield in_flight.popleft().result()
        finally:
            for future in in_flight:
                future.cancel()


def _take(
    result: tuple,
    counts: Counter[str],
    pending: dict[int, Counter[str]],
    cancel: Callable[[], bool] | None,
    bound: PieceBound | None = None,
) -> None:
    """Fold one task's counts in: straight into the total, or held until its file is whole
    (within `bound`, if given)."""
    if cancel is not None and cancel():
        raise CancelledError("pre-tokenizing cancelled")
    key, action, part = result
    if key is None:
        if bound is None:
            counts.update(part)
        else:
            bound.add(counts, part)
    elif action == "count":
        if bound is None:
            pending.setdefault(key, Counter()).update(part)
        else:
            bound.add(pending.setdefault(key, Counter()), part, counts, key)
    elif action == "commit":
        counts.update(pending.pop(key, Counter()))  # its new pieces took their room already
        if bound is not None:
            bound.commit(key)
    else:  # "drop": the file went bad after some of it was counted
        pending.pop(key, None)
        if bound is not None:
            bound.release(key)


def _tasks(
    listing: CorpusListing,
    config: TrainConfig,
    stats: CorpusStats,
    progress: Progress | None,
    total: int,
) -> Iterator[tuple]:
    """(key, action, pattern, segments, sources) tasks; `sources[i]` names the file of
    segment i, for messages. Files that fit in one batch are read whole
    (so a bad one is known before any of it is sent) and share batches; a larger file gets
    tasks of its own under its index, then a commit, or a drop if it turns out bad."""
    pattern = config.pattern_string
    segmenter = segmenter_for(config)
    batch: list[str] = []
    sources: list[str] = []
    size = 0
    done = 0
    for index, (path, file_size) in enumerate(zip(listing.files, listing.sizes, strict=True)):
        whole = file_size <= BATCH_CHARS and not streams_only(path)
        try:
            if whole:
                segments, documents = _read_whole(path, segmenter, config)
                stats.documents += documents
                batch.extend(segments)
                sources.extend([str(path)] * len(segments))
                size += sum(map(len, segments))
                if size >= BATCH_CHARS:
                    yield None, "count", pattern, batch, sources
                    batch, sources, size = [], [], 0
            else:
                with meter.metering(progress, done, file_size, total):
                    yield from _stream_file(index, path, segmenter, stats, config)
                yield index, "commit", pattern, [], []
        except CorpusError as exc:
            if config.on_bad_file == "stop":
                raise
            stats.skipped.append(str(exc))
            if not whole:
                yield index, "drop", pattern, [], []
        done += file_size
        if progress is not None:
            progress(done, total)
    if batch:
        yield None, "count", pattern, batch, sources


def segmenter_for(config: TrainConfig) -> Segmenter:
    """Where `config`'s text may be cut so that counting the stretches apart gives exactly the
    pieces of counting it whole: at special tokens, and inside text where the pattern promises."""
    pattern = config.pattern_string
    return Segmenter(
        config.special_tokens,
        cut_inside=preset_name(pattern) is not None,
        # SuperBPE's stage-2 pieces end at each newline: long files stream in bounded memory.
        boundary=AFTER_NEWLINE if pattern == STAGE2_PATTERN else None,
    )


def _read_whole(path: Path, segmenter: Segmenter, config: TrainConfig) -> tuple[list[str], int]:
    if not is_jsonl(path):  # one document: read it in one go (folders of many small files)
        return segmenter.split(read_small_text(path).decode("utf-8")), 1
    segments: list[str] = []
    documents = 0
    for document in read_documents(path, segmenter, config.text_column, config.jsonl_field):
        documents += 1
        for segment in document.segments:
            segments.append(segment)
    return segments, documents


def _stream_file(
    index: int, path: Path, segmenter: Segmenter, stats: CorpusStats, config: TrainConfig
) -> Iterator[tuple]:
    pattern = config.pattern_string
    batch: list[str] = []
    size = 0
    for document in read_documents(path, segmenter, config.text_column, config.jsonl_field):
        stats.documents += 1
        for segment in document.segments:
            batch.append(segment)
            size += len(segment)
            if size >= BATCH_CHARS:
                yield index, "count", pattern, batch, [str(path)] * len(batch)
                batch, size = [], 0
    if batch:
        yield index, "count", pattern, batch, [str(path)] * len(batch)


def count_texts(
    texts: Iterable[str], config: TrainConfig, bound: PieceBound | None = None
) -> WordTable:
    """The word table of documents given as strings (tests, the demo, small inputs), within
    `bound` if given."""
    pattern = config.pattern_string
    segmenter = Segmenter(config.special_tokens, cut_inside=False)
    counts: Counter[str] = Counter()
    for text in texts:
        part = worker.count_segments(pattern, segmenter.split(text))
        if bound is None:
            counts.update(part)
        else:
            bound.add(counts, part)
    return WordTable.from_counts({piece.encode("utf-8"): n for piece, n in counts.items()})


def count_in_memory(
    corpus: Any,
    config: TrainConfig,
    progress: Callable[[int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    workers: int | None = None,
    max_bytes: int | None = None,
) -> PretokenizeResult:
    """Count documents given in memory (see `corpus.memory`: strings, batches of them, a
    Dataset, an arrow table): the same pieces as the same documents in a JSONL file, each
    document a record of its own. Presets go through the scanner on all cores, as files do;
    other patterns through `regex`. `progress(documents done)`; CancelledError as soon as
    `cancel()` says so (polled between units); CorpusError for an item that is not text.
    `max_bytes`: as `count_corpus`'s."""
    start = time.perf_counter()
    workers = check_workers(workers) or default_workers()
    stats = CorpusStats()
    if config.pretokenizer == "auto" and can_count(config.pattern_string):
        specials = specials_bytes_regex(config.special_tokens)
        reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
        after_newline = config.pattern_string == STAGE2_PATTERN  # no cut inside a stage-2 piece
        units = memory.memory_units(
            corpus, specials, reach, config.text_column, progress, after_newline
        )
        table, stats.documents = count_unit_stream(
            units, config.pattern_string, workers, cancel, max_bytes
        )
        words = WordTable.from_arrays(*table.table())
        dropped = table.dropped, table.dropped_bytes
    else:
        texts = memory.memory_texts(corpus, config.text_column, progress)
        bound = None if max_bytes is None else PieceBound(max_bytes)
        words = count_texts(_polled(_counted(texts, stats), cancel), config, bound)
        dropped = (0, 0) if bound is None else (bound.dropped, bound.dropped_bytes)
    if len(words) == 0:
        raise CorpusError(memory.WHERE, "the corpus holds no text to train on")
    return _finish(words, stats, [], start, dropped)


def _counted(texts: Iterable[str], stats: CorpusStats) -> Iterator[str]:
    for text in texts:
        stats.documents += 1
        yield text


def _polled(texts: Iterable[str], cancel: Callable[[], bool] | None) -> Iterator[str]:
    """`texts`, asking `cancel()` every 256 documents."""
    for number, text in enumerate(texts):
        if cancel is not None and number % 256 == 0 and cancel():
            raise CancelledError("pre-tokenizing cancelled")
        yield text
