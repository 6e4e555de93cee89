"""Counting a corpus for a run: files and folders on disk, or documents given as strings.

Both give a `Counted` with the same statistics, so a run trained from a notebook's strings and
one trained from the same text in files are recorded alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

from workbench.engine.config import TrainConfig
from workbench.engine.errors import CorpusError
from workbench.engine.pretokenize.counting import count_corpus, count_texts
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.session import memory
from workbench.session.run import Counted


def count_paths(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    workers: int | None = None,
) -> Counted:
    """Count the files and folders under `paths` (see `engine.pretokenize.count_corpus`)."""
    paths = tuple(str(p) for p in paths)
    with memory.stage("counting the corpus"):
        result = count_corpus(paths, config, progress=progress, cancel=cancel, workers=workers)
    return Counted(result, paths)


def count_documents(texts: Iterable[str], config: TrainConfig) -> Counted:
    """Count documents given as strings; each string is one document."""
    started = time.perf_counter()
    stats = CorpusStats()

    def documents() -> Iterator[str]:
        for number, text in enumerate(texts, 1):
            if not isinstance(text, str):
                raise CorpusError("documents", f"item {number} is {type(text).__name__}, not str")
            stats.documents += 1
            yield text

    with memory.stage("counting the documents"):
        words = count_texts(documents(), config)
    if len(words) == 0:
        raise CorpusError("documents", "the corpus holds no text to train on")
    stats.pieces = words.total_pieces
    stats.unique_pieces = len(words)
    stats.bytes = words.total_bytes
    stats.seconds = time.perf_counter() - started
    return Counted(PretokenizeResult(words, stats, []), ())
