"""The word table: unique pre-tokens as one flat byte buffer + offsets + int64 counts.

The merge loop works on this table, never on the corpus, so its size (not the corpus size)
bounds the trainer's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WordTable:
    """`data[offsets[i]:offsets[i + 1]]` is word i's bytes; it occurs `counts[i]` times."""

    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len = words + 1
    counts: np.ndarray  # int64

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> WordTable:
        """{b"the": 3, b"a": 1} -> a table of two words (order kept)."""
        words = list(counts)
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(words), dtype=np.uint8).copy()
        values = np.fromiter(counts.values(), dtype=np.int64, count=len(words))
        return cls(data, offsets, values)

    @classmethod
    def from_arrays(cls, data: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> WordTable:
        return cls(
            np.ascontiguousarray(data, dtype=np.uint8),
            np.ascontiguousarray(offsets, dtype=np.int64),
            np.ascontiguousarray(counts, dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.counts)

    def word(self, i: int) -> bytes:
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    @property
    def total_pieces(self) -> int:
        return int(self.counts.sum())

    @property
    def total_bytes(self) -> int:
        return int((np.diff(self.offsets) * self.counts).sum())

    def most_common(self, n: int) -> list[tuple[bytes, int]]:
        """The n most frequent words, most frequent first (ties: table order)."""
        n = min(n, len(self))
        if n <= 0:
            return []
        top = np.argpartition(-self.counts, n - 1)[:n] if n < len(self) else np.arange(len(self))
        top = top[np.lexsort((top, -self.counts[top]))]
        return [(self.word(int(i)), int(self.counts[i])) for i in top]

    def to_dict(self) -> dict[bytes, int]:
        return {self.word(i): int(self.counts[i]) for i in range(len(self))}
