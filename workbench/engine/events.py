"""What the trainer hands out: batches of merge events.

A batch is columnar (numpy arrays) so that a window, a store writer or a CLI can take thousands
of merges a second without one Python object per merge; `MergeBatch.events()` gives the
per-merge view when that is handier.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class MergeEvent:
    """One merge: `left` + `right` -> `new_id` (whose bytes are `token`), seen `count` times.

    `rank` counts merges from 0. `new_id` is 256 + the number of distinct tokens made before,
    except when the merged bytes are already a token (two merge paths to the same bytes, e.g.
    `a`+`bc` and `ab`+`c`): then the existing id is reused, as Hugging Face does, and `is_new`
    is False. `ties` is how many other pairs had the same count when this one won (0 = none), counted
    up to the trainer's `tie_limit` (a figure equal to it means "that many or more").
    `runner_up` is the count of the best pair that lost (equal to `count` when `ties` > 0; 0 when
    no other pair was left; -1 when not computed: a trainer without explanations). Both count
    only pairs the trainer may merge: not those over `max_token_length`, nor, in SuperBPE's
    stage 2, those its rules refuse.
    """

    rank: int
    new_id: int
    left_id: int
    right_id: int
    token: bytes
    count: int
    is_new: bool = True
    ties: int = 0
    runner_up: int = -1


@dataclass(frozen=True, slots=True)
class MergeBatch:
    """Consecutive merges `start_rank .. start_rank + len - 1`, as parallel arrays."""

    start_rank: int
    left: np.ndarray  # int32
    right: np.ndarray  # int32
    new_id: np.ndarray  # int32
    count: np.ndarray  # int64, pair count at the moment of the merge
    is_new: np.ndarray  # bool
    ties: np.ndarray  # int64
    corpus_tokens: np.ndarray  # int64, tokens the whole corpus takes after each merge
    tokens: tuple[bytes, ...]  # bytes of each merge's token
    vocab_size: int  # tokens after the last merge here: bytes + merged + special tokens
    seconds: float  # wall time the kernel spent on this batch
    # Training in stages (SuperBPE): the rank of the first merge of the last stage, once that
    # stage has begun (every batch from then on carries it); None for one-stage training.
    stage_start: int | None = None
    # int64, the best losing pair's count at each merge (see `MergeEvent`); None from a source
    # that does not know it (a run stored before it was recorded)
    runner_up: np.ndarray | None = None
    # Parity-aware BPE: each group's held-out tokens after each merge (`train.parity.ParityRecord`).
    parity: Any = None

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def end_rank(self) -> int:
        return self.start_rank + len(self.tokens)

    def events(self) -> Iterator[MergeEvent]:
        for i, token in enumerate(self.tokens):
            yield MergeEvent(
                rank=self.start_rank + i,
                new_id=int(self.new_id[i]),
                left_id=int(self.left[i]),
                right_id=int(self.right[i]),
                token=token,
                count=int(self.count[i]),
                is_new=bool(self.is_new[i]),
                ties=int(self.ties[i]),
                runner_up=-1 if self.runner_up is None else int(self.runner_up[i]),
            )
