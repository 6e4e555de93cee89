"""Numpy buffers the live charts draw from: appended per batch, read per redraw.

Kept free of Qt so the arithmetic is tested on its own. A `GrowingArray` doubles its capacity
when full, so appending n values costs O(n) overall and the charts can hand pyqtgraph a view
(`array[:n]`) without copying.
"""

from __future__ import annotations

import collections
import time

import numpy as np

from workbench.engine.events import MergeBatch
from workbench.gui.let_go import let_go

MAX_LENGTH_BIN = 64  # tokens longer than this share the last histogram bar


class GrowingArray:
    """An append-only 1-D array: `a.extend([1, 2]); a.view() -> array([1, 2])`."""

    def __init__(self, dtype: type | np.dtype = np.float64, capacity: int = 1024) -> None:
        self._data = np.empty(capacity, dtype=dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, values: np.ndarray | list) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        need = self._size + len(values)
        if need > len(self._data):
            capacity = len(self._data)
            while capacity < need:
                capacity *= 2
            grown = np.empty(capacity, dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : need] = values
        self._size = need

    def view(self) -> np.ndarray:
        return self._data[: self._size]

    @property
    def capacity(self) -> int:
        """Values it holds before it next doubles."""
        return len(self._data)

    def clear(self) -> None:
        self._size = 0


class ChartData:
    """Everything the four charts show, for one run.

    `corpus_bytes` turns the trainer's `corpus_tokens` into bytes per token; it is 0 until the
    corpus statistics are known (then that chart stays empty rather than dividing by zero).
    """

    # One merges/s point per batch, each averaged over the last RATE_WINDOW seconds: steadier
    # than one batch (~50 ms of kernel) on its own, yet a sub-second run on the demo corpus
    # still draws a line rather than a dot (a point per 0.25 s gave it one or two).
    RATE_WINDOW = 0.25
    # A rate over less time than this is noise: the few cheap merges of a +100 step (or the
    # first batch after a pause) made in a millisecond read as 90,000 merges/s.
    MIN_RATE_SPAN = 0.02

    def __init__(self) -> None:
        self.rank = GrowingArray(np.float64)
        self.count = GrowingArray(np.float64)
        self.bytes_per_token = GrowingArray(np.float64)
        self.rate_time = GrowingArray(np.float64)
        self.rate = GrowingArray(np.float64)
        self.length_counts = np.zeros(MAX_LENGTH_BIN + 1, dtype=np.int64)
        self.tokens: list[bytes] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.new_id: list[int] = []
        self.corpus_bytes = 0
        self._clock_start: float | None = None
        self.timed = False  # a batch timed as it arrived came since the reset (a live run)
        # (time, merges) after recent batches, oldest first, reaching back RATE_WINDOW seconds
        self._rate_marks: collections.deque[tuple[float, int]] = collections.deque()
        self._active_seconds = 0.0

    def reset(self, corpus_bytes: int = 0) -> None:
        # A 200k-merge run's four lists took ~6 ms to free in the turn that opens another run:
        # they are freed on a thread of their own (`let_go`), not in the UI thread's turn.
        old = [self.tokens, self.left, self.right, self.new_id]
        self.__init__()
        let_go(old)
        self.corpus_bytes = corpus_bytes

    @property
    def n(self) -> int:
        return len(self.rank)

    def add(self, batch: MergeBatch, now: float | None = None, timed: bool = True) -> None:
        """Append one batch; `now` (perf_counter seconds) is injectable for tests; a stored
        run replayed from history is not `timed` (its merges/s would be the replay's)."""
        now = time.perf_counter() if now is None else now
        ranks = np.arange(batch.start_rank, batch.end_rank, dtype=np.float64)
        self.rank.extend(ranks)
        self.count.extend(batch.count)
        if self.corpus_bytes:
            tokens = np.maximum(np.asarray(batch.corpus_tokens, dtype=np.float64), 1.0)
            self.bytes_per_token.extend(self.corpus_bytes / tokens)
        lengths = np.fromiter((len(t) for t in batch.tokens), dtype=np.int64, count=len(batch))
        self.length_counts += np.bincount(
            np.minimum(lengths, MAX_LENGTH_BIN), minlength=MAX_LENGTH_BIN + 1
        )
        self.tokens.extend(batch.tokens)
        self.left.extend(batch.left.tolist())
        self.right.extend(batch.right.tolist())
        self.new_id.extend(batch.new_id.tolist())
        if timed:
            self.timed = True
            self._sample_rate(now)

    def pause_clock(self) -> None:
        """Stop the merges/s clock so a pause does not read as a slow stretch."""
        if self._clock_start is not None:
            self._active_seconds += time.perf_counter() - self._clock_start
        self._clock_start = None
        self._rate_marks.clear()

    def _sample_rate(self, now: float) -> None:
        marks = self._rate_marks
        if self._clock_start is None:
            self._clock_start = now
            marks.clear()
            marks.append((now, self.n))
            return
        # Keep the newest mark that is at least a window old as the base; drop older ones.
        while len(marks) > 1 and now - marks[1][0] >= self.RATE_WINDOW:
            marks.popleft()
        base_time, base_n = marks[0]
        if now - base_time >= self.MIN_RATE_SPAN:
            self.rate_time.extend([self._active_seconds + now - self._clock_start])
            self.rate.extend([(self.n - base_n) / (now - base_time)])
        marks.append((now, self.n))

    def index_at(self, x: float) -> int | None:
        """The merge index nearest to rank `x`, or None when there are no merges yet."""
        if not self.n:
            return None
        return int(min(max(round(x), 0), self.n - 1))
