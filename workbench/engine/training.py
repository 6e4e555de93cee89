"""Training end to end: corpus -> word table -> merges, for the CLI, tests and the store.

result = train_files(["corpus.txt"], TrainConfig(vocab_size=1000))
result.merge_pairs()   # [(b" ", b"t"), (b"h", b"e"), ...]
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from workbench.engine.config import TrainConfig
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize import CorpusStats, count_corpus, count_texts
from workbench.engine.trainer import BpeTrainer


@dataclass
class TrainResult:
    trainer: BpeTrainer
    stats: CorpusStats
    timings: dict[str, float] = field(default_factory=dict)

    def merge_pairs(self) -> list[tuple[bytes, bytes]]:
        return self.trainer.merge_pairs()

    @property
    def config(self) -> TrainConfig:
        return self.trainer.config


def train_files(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    on_batch: Callable[[MergeBatch], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    batch_seconds: float | None = None,
    workers: int | None = None,
) -> TrainResult:
    """Pre-tokenize the files and train to `config.vocab_size` (or until no pair is left)."""
    start = time.perf_counter()
    counted = count_corpus(paths, config, progress=progress, workers=workers)
    timings = {"pretokenize": time.perf_counter() - start}
    return _train(counted.words, counted.stats, config, on_batch, batch_seconds, timings)


def train_texts(texts: Iterable[str], config: TrainConfig) -> TrainResult:
    """Train on documents given as strings."""
    start = time.perf_counter()
    words = count_texts(texts, config)
    timings = {"pretokenize": time.perf_counter() - start}
    stats = CorpusStats(
        pieces=words.total_pieces, unique_pieces=len(words), bytes=words.total_bytes
    )
    return _train(words, stats, config, None, None, timings)


def _train(words, stats, config, on_batch, batch_seconds, timings) -> TrainResult:
    start = time.perf_counter()
    trainer = BpeTrainer(words, config)
    timings["index"] = time.perf_counter() - start
    start = time.perf_counter()
    for batch in trainer.batches(batch_seconds=batch_seconds):
        if on_batch is not None:
            on_batch(batch)
    timings["merge"] = time.perf_counter() - start
    return TrainResult(trainer, stats, timings)
