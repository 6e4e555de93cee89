"""A pure-Python BPE trainer for the first seconds of a first start (LEX tie-break only).

On a machine whose Numba cache is empty, the merge-loop kernels take several seconds to compile.
A small run need not wait for them: this trainer makes the same merges, with the same ids,
counts, tie figures and corpus token counts as the kernels in LEX mode (`_train_kernels`), in
plain Python, until `starting_trainer.StartingTrainer` hands the run over to the kernels. It is
slow (a Python loop per occurrence) and is only chosen for small word tables.

What it mirrors, rule by rule (see `_train_kernels`):
- the best pair has the highest live count; among equal counts the greatest (left bytes, right
  bytes), bytes ordered as Python orders them (a shorter prefix is smaller);
- `ties` is the number of other pairs whose live count equals the best count, up to
  `tie_limit` (every pair with a live count has a heap entry at that count in the kernel);
- `runner_up` is the highest live count among the other pairs (the best count when there are
  ties, 0 when no other pair is left), computed, like `ties`, only when `tie_limit` > 0 (-1
  otherwise);
- a merge whose bytes already exist as a token reuses that token's id (`is_new` False);
- occurrences are replaced left to right (`aaa` with (a, a) -> `aa a`), neighbours' counts move
  from the old pairs to the new ones, and the merged pair's count drops to 0;
- with a max token length, a pair whose token would be longer is never a candidate nor a tie
  (the kernel never gives it a heap entry), and training ends with "max_token_length" when only
  such pairs are left.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.char_count import utf8_chars

Pair = tuple[int, int]

# Status words, as `trainer.STOP_REASONS` names the kernel's codes.
_VOCAB, _NO_PAIRS, _MIN_FREQUENCY = "vocab_size", "no_pairs", "min_frequency"
_CAPPED = "max_token_length"


def _descending(token: bytes) -> tuple[int, ...]:
    """A key that sorts byte strings in reverse order in a min-heap: each byte flipped, then a
    marker above every flipped byte, so a prefix sorts after the longer strings it starts."""
    return (*(255 - b for b in token), 256)


class PythonMerges:
    """What the Python trainers (`PyTrainer`, `parity.ParityTrainer`) share: the figures
    BpeTrainer answers, from `merges`, `vocab`, `config` and `_tokens`, and the two rules of their
    heaps, from `_cap` (None: no max token length) and `_keys` (each token's tie-break key)."""

    merges: list[tuple[int, int]]
    vocab: list[bytes]
    config: TrainConfig
    _tokens: int
    _cap: int | None
    _keys: list

    @property
    def n_merges(self) -> int:
        return len(self.merges)

    @property
    def n_tokens(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return self.n_tokens + len(self.config.special_tokens)

    @property
    def corpus_tokens(self) -> int:
        return self._tokens

    def merge_pairs(self) -> list[tuple[bytes, bytes]]:
        return [(self.vocab[a], self.vocab[b]) for a, b in self.merges]

    def _allowed(self, pair: Pair) -> bool:
        """Whether merging `pair` keeps within the max token length (in bytes, and in characters
        as `char_count` counts them)."""
        left, right = self.vocab[pair[0]], self.vocab[pair[1]]
        cap, cap_chars = self._cap, self.config.max_token_chars
        if cap is not None and len(left) + len(right) > cap:
            return False
        return (
            not cap_chars
            or len(left) + len(right) <= cap_chars
            or (utf8_chars(left + right) <= cap_chars)
        )

    def _entry(self, pair: Pair, count: int) -> tuple:
        return (-count, self._keys[pair[0]], self._keys[pair[1]], pair)


class PyTrainer(PythonMerges):
    """Byte-level BPE over a word table in LEX mode, with `BpeTrainer`'s interface."""

    def __init__(self, words: WordTable, config: TrainConfig, tie_limit: int) -> None:
        if config.tie_break == "hf":
            raise ValueError("the Python trainer reproduces the LEX tie-break only")
        self.config = config
        self.tie_limit = tie_limit
        self.merges: list[Pair] = []
        self.merge_ids: list[int] = []
        self.vocab: list[bytes] = [bytes([b]) for b in range(256)]
        self.stop_reason: str | None = None
        self.kernel_seconds = 0.0
        self._cap = config.max_token_length or None
        self._ids = {token: i for i, token in enumerate(self.vocab)}
        self._keys = [_descending(token) for token in self.vocab]
        data = words.data.tobytes()
        edges = words.offsets.tolist()
        self._words = [list(data[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        self._counts = words.counts.tolist()
        self._tokens = sum(len(w) * c for w, c in zip(self._words, self._counts, strict=True))
        self._live: dict[Pair, int] = {}
        self._holders: dict[Pair, set[int]] = {}
        self._at_count: dict[int, int] = {}  # live count -> pairs that have it
        for w, (word, count) in enumerate(zip(self._words, self._counts, strict=True)):
            for pair in zip(word, word[1:], strict=False):
                self._live[pair] = self._live.get(pair, 0) + count
                self._holders.setdefault(pair, set()).add(w)
        for pair, count in self._live.items():
            if self._allowed(pair):
                self._at_count[count] = self._at_count.get(count, 0) + 1
        self._heap = [
            self._entry(pair, count) for pair, count in self._live.items() if self._allowed(pair)
        ]
        heapq.heapify(self._heap)

    # -- training --------------------------------------------------------------------------------

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        """Up to n more merges (fewer if training ends), as one batch."""
        target = self.config.vocab_size if target_vocab_size is None else target_vocab_size
        target_tokens = target - len(self.config.special_tokens)
        start = time.perf_counter()
        start_rank = len(self.merges)
        rows: list[tuple[int, int, int, int, bool, int, int, int]] = []
        self.stop_reason = None
        while len(rows) < max(int(n), 0):
            if len(self.vocab) >= target_tokens:
                self.stop_reason = _VOCAB
                break
            best = self._best()
            if best is None:
                self.stop_reason = _CAPPED if self._capped_left() else _NO_PAIRS
                break
            count = self._live[best]
            if count < self.config.min_frequency:
                self.stop_reason = _MIN_FREQUENCY
                break
            ties = min(self._at_count[count] - 1, self.tie_limit) if self.tie_limit > 0 else 0
            runner = -1
            if self.tie_limit > 0:
                runner = count if ties > 0 else self._runner_up(best)
            new, is_new = self._merge(best)
            rows.append((best[0], best[1], new, count, is_new, ties, self._tokens, runner))
        seconds = time.perf_counter() - start
        self.kernel_seconds += seconds
        columns = list(zip(*rows, strict=True)) if rows else [()] * 8
        return MergeBatch(
            start_rank=start_rank,
            left=np.array(columns[0], dtype=np.int32),
            right=np.array(columns[1], dtype=np.int32),
            new_id=np.array(columns[2], dtype=np.int32),
            count=np.array(columns[3], dtype=np.int64),
            is_new=np.array(columns[4], dtype=np.bool_),
            ties=np.array(columns[5], dtype=np.int64),
            corpus_tokens=np.array(columns[6], dtype=np.int64),
            tokens=tuple(self.vocab[new] for new in columns[2]),
            vocab_size=self.vocab_size,
            seconds=seconds,
            runner_up=np.array(columns[7], dtype=np.int64),
        )

    # -- the merge loop's parts ------------------------------------------------------------------

    def _capped_left(self) -> bool:
        """Whether pairs with count are left that only the max token length holds back."""
        return any(c > 0 and not self._allowed(p) for p, c in self._live.items())

    def _best(self) -> Pair | None:
        """The pair with the highest live count (ties: greatest bytes); stale entries are
        re-filed at their live count, or dropped at 0."""
        heap = self._heap
        while heap:
            stale, _, _, pair = heap[0]
            live = self._live.get(pair, 0)
            if -stale == live:
                return pair if live > 0 else None
            if live > 0:
                heapq.heapreplace(heap, self._entry(pair, live))
            else:
                heapq.heappop(heap)
        return None

    def _runner_up(self, best: Pair) -> int:
        """The highest live count among pairs other than `best` (on top of the heap now).

        The heap is lazy: a pair whose count fell keeps its old, higher entry, and a rise
        pushes a new one, so every live pair has an entry at least as high as its live count.
        A walk that reads each entry's live count and skips entries not above the best so far
        therefore misses nothing (the kernel's `_heap._runner_up` walks the same way)."""
        heap, live = self._heap, self._live
        n = len(heap)
        found = 0
        stack = [1, 2]
        while stack:
            i = stack.pop()
            if i >= n or -heap[i][0] <= found:
                continue
            pair = heap[i][3]
            if pair != best:
                found = max(found, live.get(pair, 0))
            stack += (2 * i + 1, 2 * i + 2)
        return found

    def _set(self, pair: Pair, count: int) -> None:
        """Give `pair` a new live count, keeping the count -> pairs tally (for ties)."""
        old = self._live.get(pair, 0)
        self._live[pair] = count
        if not self._allowed(pair):  # never a candidate, so never a tie either
            return
        if old > 0:
            self._at_count[old] -= 1
        if count > 0:
            self._at_count[count] = self._at_count.get(count, 0) + 1

    def _merge(self, pair: Pair) -> tuple[int, bool]:
        left, right = pair
        merged = self.vocab[left] + self.vocab[right]
        new = self._ids.get(merged)
        is_new = new is None
        if new is None:
            new = len(self.vocab)
            self.vocab.append(merged)
            self._ids[merged] = new
            self._keys.append(_descending(merged))
        gained: dict[Pair, None] = {}  # pairs that gained count, in order
        live, holders = self._live, self._holders

        def move(old: Pair, fresh: Pair, count: int, w: int) -> None:
            self._set(old, live[old] - count)
            self._set(fresh, live.get(fresh, 0) + count)
            holders.setdefault(fresh, set()).add(w)
            gained[fresh] = None

        replaced = 0
        for w in list(holders[pair]):
            word = self._words[w]
            if not _holds(word, left, right):
                continue  # a stale holder: an earlier merge took the pair out of this word
            count = self._counts[w]
            out: list[int] = []
            r, n = 0, len(word)
            while r < n:
                s = word[r]
                if s == left and r + 1 < n and word[r + 1] == right:
                    if out:
                        move((out[-1], left), (out[-1], new), count, w)
                    if r + 2 < n:
                        move((right, word[r + 2]), (new, word[r + 2]), count, w)
                    out.append(new)
                    r += 2
                    replaced += count
                else:
                    out.append(s)
                    r += 1
            self._words[w] = out
        self._set(pair, 0)
        for fresh in gained:
            if live[fresh] > 0 and self._allowed(fresh):
                heapq.heappush(self._heap, self._entry(fresh, live[fresh]))
        self._tokens -= replaced
        self.merges.append(pair)
        self.merge_ids.append(new)
        return new, is_new


def _holds(word: list[int], left: int, right: int) -> bool:
    """Whether (left, right) is adjacent somewhere in `word`."""
    start = 0
    while True:
        try:
            i = word.index(left, start)
        except ValueError:
            return False
        if i + 1 < len(word) and word[i + 1] == right:
            return True
        start = i + 1
