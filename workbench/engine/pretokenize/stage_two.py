"""SuperBPE's stage-2 word table: how the corpus is counted for it, and its memory bound.

The counting settings are the run's with `patterns.superbpe.STAGE2_PATTERN` through the `regex`
counter (which cuts long files after a newline, where no stage-2 piece runs on). Stage-2 pieces
are lines or long parts of them, mostly unique, and the trainer's memory grows with their
distinct bytes: `cap_pieces` keeps the most frequent up to a bound and reports what it left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.patterns.superbpe import MAX_DISTINCT_BYTES, STAGE2_PATTERN
from workbench.engine.pretokenize.words import WordTable


def stage2_config(config: TrainConfig) -> TrainConfig:
    """The settings to count the corpus with for stage 2."""
    return replace(config, pattern=STAGE2_PATTERN, pretokenizer="regex")


@dataclass(frozen=True)
class CappedPieces:
    """A word table cut to a memory bound, and what was left out."""

    words: WordTable
    dropped_pieces: int  # distinct pieces left out
    dropped_bytes: int  # corpus bytes they held (count-weighted)
    total_bytes: int  # corpus bytes of the whole table

    @property
    def dropped_share(self) -> float:
        return self.dropped_bytes / self.total_bytes if self.total_bytes else 0.0


def cap_pieces(words: WordTable, max_distinct_bytes: int = MAX_DISTINCT_BYTES) -> CappedPieces:
    """Keep the most frequent distinct pieces (ties: shorter first, then table order) while
    their bytes add up to at most `max_distinct_bytes`; the trainer's memory grows with them."""
    lengths = np.diff(words.offsets)
    total = int((lengths * words.counts).sum())
    if int(lengths.sum()) <= max_distinct_bytes:
        return CappedPieces(words, 0, 0, total)
    order = np.lexsort((np.arange(len(words)), lengths, -words.counts))
    kept = order[np.cumsum(lengths[order]) <= max_distinct_bytes]
    kept.sort()  # table order, as counted
    mask = np.zeros(len(words), dtype=bool)
    mask[kept] = True
    starts = words.offsets[:-1][mask]
    keep_lengths = lengths[mask]
    offsets = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(keep_lengths, out=offsets[1:])
    take = np.repeat(starts - offsets[:-1], keep_lengths) + np.arange(int(offsets[-1]))
    table = WordTable.from_arrays(words.data[take], offsets, words.counts[mask])
    dropped = total - table.total_bytes
    return CappedPieces(table, len(words) - kept.size, dropped, total)
