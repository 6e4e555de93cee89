"""SuperBPE's stage-2 word table: how the corpus is counted for it, and its memory bound.

The counting settings are the run's with `patterns.superbpe.STAGE2_PATTERN`; the scanner counts
with it (`scan.rules._piece_stage2`, exactly the regex's pieces) unless the run forces the
`regex` package or the native pieces are off. Long files and documents are cut after a newline,
where no stage-2 piece runs on.

Stage-2 pieces are lines or long parts of them, mostly unique, and the memory of counting and
of the trainer grows with their distinct bytes. The bound (`MAX_DISTINCT_BYTES` unless given):

- counting holds it (`scan.fold.CountTable` for the scanner, `piece_bound.PieceBound` for the
  `regex` path): a new distinct piece is admitted only while the distinct pieces' bytes stay
  within it; admitted pieces go on being counted; every occurrence of a piece left out is
  tallied with its bytes;
- a count made without it (a caller's that ignores the bound) is cut afterwards by the same
  rule (`bounded`, `cap_pieces`); continuing a stored run counts within it, with the bound and
  the counter the run recorded (`CappedPieces.max_distinct_bytes`, `counted_by`), because on
  the scanner a large file counted on its own can keep other pieces than the cut afterwards
  once the bound is full, and the continued run must replay the stored merges exactly.

Either way `CappedPieces` says what was left out: piece occurrences, their bytes and the
corpus's bytes, so the loss is reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.patterns.superbpe import MAX_DISTINCT_BYTES, STAGE2_PATTERN
from workbench.engine.pretokenize.counting import count_corpus, count_in_memory
from workbench.engine.pretokenize.results import PretokenizeResult
from workbench.engine.pretokenize.scan.entry import can_count
from workbench.engine.pretokenize.words import WordTable


def stage2_config(config: TrainConfig) -> TrainConfig:
    """The settings to count the corpus with for stage 2 (the run's pre-tokenizer choice
    kept: `auto` scans, `regex` uses the regex package)."""
    return replace(config, pattern=STAGE2_PATTERN, superbpe_transition=0)


@dataclass(frozen=True)
class CappedPieces:
    """A word table within the memory bound, and what was left out."""

    words: WordTable
    dropped_pieces: int  # piece occurrences left out (pre-tokens of the corpus)
    dropped_bytes: int  # corpus bytes they held
    total_bytes: int  # corpus bytes counted (kept and left out)
    max_distinct_bytes: int = 0  # the bound counted within (0: not said)
    counted_by: str = ""  # "scanner" or "regex" (which counter held the bound; "": not said)

    @property
    def dropped_share(self) -> float:
        return self.dropped_bytes / self.total_bytes if self.total_bytes else 0.0


def counted_by(config: TrainConfig) -> str:
    """Which counter counts stage 2 with the run's settings `config`: "scanner" or "regex".
    The two keep other pieces once the bound is full (a large file's, see the module's note),
    so a run records it and is counted again by the same one when continued."""
    scans = config.pretokenizer == "auto" and can_count(STAGE2_PATTERN)
    return "scanner" if scans else "regex"


def count_stage_two(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    workers: int | None = None,
    max_distinct_bytes: int | None = None,
) -> tuple[CappedPieces, PretokenizeResult]:
    """The files under `paths` counted for stage 2 within the bound (`config`: the run's;
    `max_distinct_bytes`: `MAX_DISTINCT_BYTES` unless given)."""
    bound = MAX_DISTINCT_BYTES if max_distinct_bytes is None else max_distinct_bytes
    result = count_corpus(paths, stage2_config(config), progress, cancel, workers, max_bytes=bound)
    return replace(bounded(result, bound), counted_by=counted_by(config)), result


def count_stage_two_documents(
    documents: Any,
    config: TrainConfig,
    progress: Callable[[int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    max_distinct_bytes: int | None = None,
) -> tuple[CappedPieces, PretokenizeResult]:
    """Documents in memory (see `count_in_memory`) counted for stage 2 within the bound."""
    bound = MAX_DISTINCT_BYTES if max_distinct_bytes is None else max_distinct_bytes
    result = count_in_memory(documents, stage2_config(config), progress, cancel, max_bytes=bound)
    return replace(bounded(result, bound), counted_by=counted_by(config)), result


def bounded(result: PretokenizeResult, max_distinct_bytes: int | None = None) -> CappedPieces:
    """The table of a count within the bound (`MAX_DISTINCT_BYTES` unless given): bounded
    while counting, or cut now by the same rule (a count made without the bound)."""
    bound = MAX_DISTINCT_BYTES if max_distinct_bytes is None else max_distinct_bytes
    words = result.words
    if result.dropped_pieces or int(words.offsets[-1]) <= bound:
        total = words.total_bytes + result.dropped_bytes
        return CappedPieces(words, result.dropped_pieces, result.dropped_bytes, total, bound)
    return replace(cap_pieces(words, bound), max_distinct_bytes=bound)


def cap_pieces(words: WordTable, max_distinct_bytes: int = MAX_DISTINCT_BYTES) -> CappedPieces:
    """The bound applied to a whole table, as the scanner applies it while counting: in order
    of first occurrence (the table's), a piece is kept if its bytes fit beside those kept
    before it. A piece too long for the room left never fits later either (the room only
    shrinks), so this keeps exactly the pieces counting within the bound admits."""
    lengths = np.diff(words.offsets)
    total = int((lengths * words.counts).sum())
    if int(lengths.sum()) <= max_distinct_bytes:
        return CappedPieces(words, 0, 0, total)
    mask = _admitted(lengths, max_distinct_bytes)
    kept = np.flatnonzero(mask)
    starts = words.offsets[:-1][mask]
    keep_lengths = lengths[mask]
    offsets = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(keep_lengths, out=offsets[1:])
    take = np.repeat(starts - offsets[:-1], keep_lengths) + np.arange(int(offsets[-1]))
    table = WordTable.from_arrays(words.data[take], offsets, words.counts[mask])
    dropped = total - table.total_bytes
    return CappedPieces(table, int(words.counts[~mask].sum()), dropped, total)


def _admitted(lengths: np.ndarray, max_bytes: int) -> np.ndarray:
    """Which pieces the bound admits, first come first kept: every piece before the first that
    does not fit at once, the rest one by one (only on the paths that count without the
    bound, and only when it is exceeded)."""
    ends = np.cumsum(lengths)
    fits = int(np.searchsorted(ends, max_bytes, side="right"))
    mask = np.zeros(lengths.size, dtype=bool)
    mask[:fits] = True
    used = int(ends[fits - 1]) if fits else 0
    for k, length in enumerate(lengths[fits:].tolist(), start=fits):
        if used + length <= max_bytes:
            mask[k] = True
            used += length
    return mask
