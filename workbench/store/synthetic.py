"""Plausible fake merge batches, for the search benchmark and tests that need volume.

Tokens grow the way BPE's do: each merge joins two earlier tokens (short ones more often),
words may start with a space, the right part never does, a few carry multi-byte characters so
partial UTF-8 shows up. Counts fall with rank like a real run's. Deterministic for a seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import numpy as np

from workbench.engine.events import MergeBatch

# Common letters first: earlier pool entries are picked more often.
_ALPHABET = b" etaoinshrdlcumwfgypbvkjxqzTSAMCBIPHDRLNEWFG.,'\n\t0123456789" + bytes(
    [0xC3, 0xA9, 0xE2, 0x80, 0x99]
)
_MAX_LEN = 12


def iter_merges(seed: int = 0) -> Iterator[tuple[int, int, int, bytes, int]]:
    """Endless merges as (left_id, right_id, new_id, token, count), all tokens distinct."""
    rng = random.Random(seed)
    token_of: dict[int, bytes] = {b: bytes([b]) for b in range(256)}
    pool = list(_ALPHABET)
    seen = set(token_of.values())
    rank = 0
    while True:
        left = pool[int(len(pool) * rng.random() ** 3)]
        right = pool[int(len(pool) * rng.random() ** 4)]
        token = token_of[left] + token_of[right]
        too_long = len(token) > min(_MAX_LEN, 2 + rng.expovariate(1 / 5))
        if token[len(token_of[left]) :].startswith(b" ") or too_long or token in seen:
            continue
        seen.add(token)
        new_id = 256 + rank
        yield left, right, new_id, token, int(5e7 / (rank + 20)) + 2
        token_of[new_id] = token
        pool.append(new_id)
        rank += 1


def synthetic_merges(n: int, seed: int = 0) -> list[tuple[int, int, int, bytes, int]]:
    return list(itertools.islice(iter_merges(seed), n))


def synthetic_batches(n: int | None, batch_size: int = 1000, seed: int = 0) -> Iterator[MergeBatch]:
    """Batches of `n` merges in all (None: without end), made as they are asked for."""
    merges = iter_merges(seed) if n is None else itertools.islice(iter_merges(seed), n)
    start = 0
    while chunk := list(itertools.islice(merges, batch_size)):
        yield MergeBatch(
            start_rank=start,
            left=np.array([m[0] for m in chunk], dtype=np.int32),
            right=np.array([m[1] for m in chunk], dtype=np.int32),
            new_id=np.array([m[2] for m in chunk], dtype=np.int32),
            count=np.array([m[4] for m in chunk], dtype=np.int64),
            is_new=np.ones(len(chunk), dtype=bool),
            ties=np.zeros(len(chunk), dtype=np.int64),
            corpus_tokens=np.arange(10_000_000 - start, 10_000_000 - start - len(chunk), -1),
            tokens=tuple(m[3] for m in chunk),
            vocab_size=256 + start + len(chunk),
            seconds=0.0,
        )
        start += len(chunk)
