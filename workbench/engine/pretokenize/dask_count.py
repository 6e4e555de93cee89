"""Counting a corpus on a Dask cluster: the same word table as `count_corpus`, from many machines.

    count_on_dask(paths, config, "tcp://scheduler:8786")   # or "local:4" for a LocalCluster

Plan: one task per file, per few row groups of a Parquet file, or per byte range of a large
uncompressed text file, its ends moved forward to the first safe cut (after an ASCII letter that
a space, tab or newline follows, never inside a special token: where the local reader cuts), so
neighbouring ranges agree on their boundary without talking to each other. Each task runs the
Numba counter (`scan_count`) and returns a compact partial table (bytes + offsets + int64 counts).
Partial tables are summed in a tree of fan-in 8, first within a file (so a file found bad in its
tenth range is dropped whole, or stops the count, as locally), then across files. Nothing is
pruned before the global sum. Combiners are submitted as soon as their inputs are and with a
higher priority, so finished partials are folded as they arrive instead of piling up.

Workers must reach the same paths (a shared filesystem) and have bpe-workbench installed.
Needs `dask[distributed]` (`pip install "bpe-workbench[dask]"`) and a preset pattern (the scanner).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import regex

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import units
from workbench.engine.corpus.listing import list_files
from workbench.engine.corpus.opening import is_jsonl
from workbench.engine.corpus.readers import columnar, compressed
from workbench.engine.corpus.readers.optional import require
from workbench.engine.errors import CancelledError, ConfigError, CorpusError
from workbench.engine.patterns.specials import specials_bytes_regex
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.engine.pretokenize.scan import count as scan_count
from workbench.engine.pretokenize.words import WordTable

TASK_BYTES = 64 << 20  # text per task: a few seconds of counting, a few MB of partial table
FAN_IN = 8
_CUT = regex.compile(rb"[A-Za-z](?=[ \t\n])")  # the local reader's cut, searched forwards
_EMPTY = (np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64))


@dataclass(frozen=True)
class Task:
    """One unit of work: a whole file, some of a Parquet file's row groups, or a byte range."""

    path: str
    size: int  # bytes of input it covers (for progress)
    row_groups: tuple[int, ...] | None = None
    start: int | None = None  # byte range [start, end) of a text file
    end: int | None = None
    file_size: int = 0


@dataclass
class Partial:
    """A partial word table and what is known of the input it covers."""

    table: tuple[np.ndarray, np.ndarray, np.ndarray] = _EMPTY
    documents: int = 0
    newlines: int = 0  # of a byte range, to turn a later range's line numbers into the file's
    error: tuple[str, str, int | None] | None = None  # (path, message, line) of a bad file
    skipped: list[str] = field(default_factory=list)
    fatal_error: tuple[str, str, int | None] | None = None  # the bad file that stops the count


def _corpus_error(error: tuple[str, str, int | None]) -> CorpusError:
    return CorpusError(*error)


def _message(exc: CorpusError) -> tuple[str, str, int | None]:
    where = f"{exc.path}:{exc.line}" if exc.line is not None else exc.path
    return exc.path, str(exc)[len(where) + 2 :], exc.line


# --- planning -------------------------------------------------------------------------------
def plan(files: list[Path], config: TrainConfig, task_bytes: int = TASK_BYTES) -> list[list[Task]]:
    """The tasks of each file, in order."""
    specials = specials_bytes_regex(config.special_tokens)
    reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
    planned = []
    for path in files:
        size = path.stat().st_size
        if columnar.is_parquet(path):
            planned.append(_row_group_tasks(path, size, task_bytes))
        elif size > task_bytes and _plain_text(path):
            planned.append(_range_tasks(path, size, task_bytes, specials, reach))
        else:
            planned.append([Task(str(path), size)])
    return planned


def _plain_text(path: Path) -> bool:
    """Uncompressed text that is one document: the only kind cut into byte ranges."""
    return not (compressed.is_compressed(path) or is_jsonl(path) or columnar.is_columnar(path))


def _row_group_tasks(path: Path, size: int, task_bytes: int) -> list[Task]:
    try:
        groups = columnar.parquet_row_groups(path)
    except CorpusError:
        return [Task(str(path), size)]  # the task reports the bad file as the reader would
    tasks, batch, batch_bytes = [], [], 0
    total = max(sum(groups), 1)
    for g, group_bytes in enumerate(groups):
        batch.append(g)
        batch_bytes += group_bytes
        if batch_bytes >= task_bytes:
            tasks.append(Task(str(path), size * batch_bytes // total, tuple(batch)))
            batch, batch_bytes = [], 0
    if batch or not tasks:
        tasks.append(Task(str(path), size * batch_bytes // total, tuple(batch)))
    return tasks


def _range_tasks(path, size, task_bytes, specials, reach) -> list[Task]:
    edges = [0]
    for nominal in range(task_bytes, size, task_bytes):
        cut = next_cut(path, max(nominal, edges[-1] + 1), size, specials, reach)
        if cut >= size:
            break
        if cut > edges[-1]:
            edges.append(cut)
    edges.append(size)
    return [
        Task(str(path), b - a, None, a, b, size) for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]


def next_cut(path: Path, at: int, size: int, specials: regex.Pattern | None, reach: int) -> int:
    """The first safe cut at or after byte `at` (the file's size if there is none).

    A cut at p: byte p-1 is an ASCII letter, byte p a space, tab or newline, and no special
    token spans p. Example: in b"ab cd" the cuts are 2 and nothing else."""
    window = max(1 << 16, 4 * reach + 4)
    pos = at
    with open(path, "rb") as handle:
        while pos < size:
            base = max(0, pos - 1 - reach)
            handle.seek(base)
            block = handle.read(window)
            at_end = base + len(block) >= size
            limit = len(block) if at_end else len(block) - reach - 1  # room to check specials
            for m in _CUT.finditer(block, max(0, pos - 1 - base)):
                cut = m.end()
                if cut > limit:
                    break
                if base + cut < pos:
                    continue
                if specials is None or not any(
                    t.start() < cut < t.end()
                    for t in specials.finditer(
                        block, max(0, cut - reach), cut + reach, overlapped=True
                    )
                ):
                    return base + cut
            if at_end:
                break
            pos = base + limit + 1
    return size


# --- work on the workers ----------------------------------------------------------------------
def count_task(task: Task, config: TrainConfig) -> Partial:
    """Count one task's input with the Numba scanner (runs on a worker)."""
    path = Path(task.path)
    specials = specials_bytes_regex(config.special_tokens)
    reach = max((len(t.encode("utf-8")) for t in config.special_tokens), default=0)
    preset = config.pattern_string
    newlines = [0]
    try:
        if task.start is not None and task.end is not None:
            work = units.range_units(
                path, task.start, task.end, task.file_size, specials, reach, newlines
            )
        elif task.row_groups is not None:
            blocks = columnar.text_blocks(path, config.text_column, list(task.row_groups))
            work = units.record_units(blocks, specials)
        else:
            work = units.file_units(path, specials, reach, config.text_column, config.jsonl_field)
        table, documents = scan_count.count_units(work, preset)
    except CorpusError as exc:
        return Partial(error=_message(exc))
    return Partial(table, documents, newlines[0])


def combine_file(*parts: Partial) -> Partial:
    """The parts of one file, in order, as one; the first bad part makes the whole file bad,
    its line number counted from the file's start."""
    tables, documents, newlines = [], 0, 0
    for part in parts:
        if part.error is not None:
            path, message, line = part.error
            return Partial(error=(path, message, None if line is None else line + newlines))
        tables.append(part.table)
        documents += part.documents
        newlines += part.newlines
    return Partial(_merged(tables), documents, newlines)


def combine_files(*parts: Partial, stop_on_bad: bool) -> Partial:
    """Whole files (or sums of them), in order, as one sum; a bad file is left out and named,
    or, when bad files stop the count, remembered as the reason to stop."""
    out = Partial()
    tables = []
    for part in parts:
        if out.fatal_error is not None:
            break
        if part.fatal_error is not None:
            out.fatal_error = part.fatal_error
            break
        if part.error is not None:
            if stop_on_bad:
                out.fatal_error = part.error
                break
            out.skipped.append(str(_corpus_error(part.error)))
            continue
        tables.append(part.table)
        out.documents += part.documents
        out.skipped.extend(part.skipped)
    if out.fatal_error is None:
        out.table = _merged(tables)
    return out


def _merged(tables: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tables = [t for t in tables if len(t[2])]
    return scanner.merge_count_tables(tables) if tables else _EMPTY


# --- the driver -------------------------------------------------------------------------------
class _Tree:
    """Builds an ordered reduction tree of fan-in FAN_IN while leaves are submitted, so each
    combiner is queued right after its inputs."""

    def __init__(self, client, combine: Callable[..., Partial]) -> None:
        self.client = client
        self.combine = combine
        self.levels: list[list] = []

    def add(self, future, level: int = 0) -> None:
        while len(self.levels) <= level:
            self.levels.append([])
        self.levels[level].append(future)
        if len(self.levels[level]) == FAN_IN:
            parts, self.levels[level] = self.levels[level], []
            self.add(
                self.client.submit(self.combine, *parts, priority=10 + level, pure=False), level + 1
            )

    def top(self):
        """The future of the whole sum (the leftover nodes, highest level = earliest first)."""
        remaining = [f for level in reversed(self.levels) for f in level]
        if len(remaining) == 1:
            return remaining[0]
        return self.client.submit(self.combine, *remaining, priority=100, pure=False)


@functools.cache
def _distributed():
    return require("distributed", "dask", "for --dask")


@dataclass
class DaskCluster:
    """A client on `address`, or on a LocalCluster of N worker processes for `local:N`."""

    address: str
    client: object = None
    cluster: object = None

    def __enter__(self):
        distributed = _distributed()
        if self.address.startswith("local:"):
            try:
                workers = int(self.address.split(":", 1)[1])
            except ValueError:
                workers = 0
            if workers < 1:
                raise ConfigError(f"--dask {self.address}: expected local:N with N ≥ 1 workers")
            # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also turns off glibc's
            # adaptive mmap threshold: every multi-MB buffer is then mapped and zeroed afresh, and
            # a 64 MiB task took 6.1-6.5 s instead of 4.2-4.9 s (measured). Our workers keep
            # glibc's defaults.
            import dask

            environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
            environ.pop("MALLOC_TRIM_THRESHOLD_", None)
            with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
                self.cluster = distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=40,  # logging.ERROR
                )
            self.client = distributed.Client(self.cluster)
        else:
            try:
                self.client = distributed.Client(self.address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(
                    f"--dask {self.address}: cannot reach the scheduler ({exc})"
                ) from None
        return self.client

    def __exit__(self, *exc) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def count_on_dask(
    paths: list[str | os.PathLike],
    config: TrainConfig,
    address: str,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    task_bytes: int = TASK_BYTES,
) -> PretokenizeResult:
    """`count_corpus`'s result for `paths`, counted by the workers of a Dask cluster."""
    if not scanner.can_scan(config.pattern_string):
        raise ConfigError("counting on Dask needs a preset pattern (gpt2, cl100k, o200k)")
    _distributed()  # the clear message before any work
    start = time.perf_counter()
    files = [f.resolve() for f in list_files(paths)]
    if not files:
        raise CorpusError(", ".join(map(str, paths)) or "(none)", "no files to read")
    tasks = plan(files, config, task_bytes)
    total = sum(t.size for file_tasks in tasks for t in file_tasks)
    with DaskCluster(address) as client:
        result = _run(client, tasks, config, total, progress, cancel)
    if result.fatal_error is not None:
        raise _corpus_error(result.fatal_error)
    words = WordTable.from_arrays(*result.table)
    if len(words) == 0:
        raise CorpusError(
            ", ".join(map(str, paths)),
            "the corpus holds no text to train on (empty, or all skipped)",
        )
    stats = CorpusStats(files=len(files), documents=result.documents, skipped=result.skipped)
    stats.pieces = words.total_pieces
    stats.unique_pieces = len(words)
    stats.bytes = words.total_bytes
    stats.seconds = time.perf_counter() - start
    return PretokenizeResult(words, stats, files)


def _run(client, tasks, config, total, progress, cancel) -> Partial:
    distributed = _distributed()
    combine = functools.partial(combine_files, stop_on_bad=config.on_bad_file == "stop")
    files_tree = _Tree(client, combine)
    leaves, sizes = [], {}
    for file_tasks in tasks:
        file_tree = _Tree(client, combine_file)
        for task in file_tasks:
            future = client.submit(count_task, task, config, pure=False, priority=0)
            sizes[future.key] = task.size
            leaves.append(future)
            file_tree.add(future)
        files_tree.add(file_tree.top())
    top = files_tree.top()
    # as_completed lets go of each leaf once it is yielded, so a leaf's partial table lives on
    # the workers only until its combiner has read it
    pending = distributed.as_completed(leaves)
    leaves.clear()
    done = 0
    for future in pending:
        done += sizes.pop(future.key, 0)
        del future
        if progress is not None:
            progress(done, total)
        if cancel is not None and cancel():
            client.cancel([top])
            raise CancelledError("pre-tokenizing cancelled")
    return top.result()
