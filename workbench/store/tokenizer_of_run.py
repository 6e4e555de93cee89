"""A stored run turned into the `Tokenizer` it made: the one home of "stored run -> tokenizer".

The run's merges come from the store in rank order; its pattern and special tokens from its
settings. The CLI (`runs export`, `eval run:ID`), the Tokens tab and the Evaluate tab all call
`tokenizer_of_run`. Imported on demand (it pulls in the Numba engine, which `runs list` and the
store's own users do not need).
"""

from __future__ import annotations

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import resolve
from workbench.store.models import RunInfo
from workbench.store.runs import RunStore


def tokenizer_of_run(store: RunStore, run_id: int) -> Tokenizer:
    """The tokenizer of every merge run `run_id` has stored so far."""
    return tokenizer_of(store.get_run(run_id), store.merges_as_pairs(run_id))


def tokenizer_of(run: RunInfo, pairs: list[tuple[bytes, bytes]]) -> Tokenizer:
    """The tokenizer of `pairs` (a run's merges) with `run`'s pattern and special tokens."""
    settings = run.settings
    specials = tuple(settings.get("special_tokens") or ())
    return Tokenizer.from_merges(pairs, resolve(settings.get("pattern")), specials)


def merge_counts(store: RunStore, run_id: int) -> np.ndarray:
    """The pair count each merge had when it was made, by rank (int64)."""
    merges = store.merges(run_id, after_rank=-1, limit=max(1, store.merge_count(run_id)))
    return np.array([m.count for m in merges], dtype=np.int64)
