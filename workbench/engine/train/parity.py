"""Parity-aware BPE (Foroutan et al., 2025, "Parity-Aware Byte-Pair Encoding: Improving
Cross-lingual Fairness in Tokenization", arXiv 2508.04796): the corpus comes in groups
(languages), each with a held-out (dev) part; at every merge the group whose dev part is worst
compressed is found, and the pair merged is the most frequent pair in that group's training
counts (the paper's greedy rule). The merge then applies to every group's text, as the
tokenizer will.

- Compression of a group = its dev bytes / its dev tokens (bytes per token, 1.0 before any
  merge; higher is better). The worst group has the lowest; ties between groups go to the one
  first in name order. The figures are exact integers compared by cross-multiplication.
- Within the chosen group the tie-break is the classic trainer's LEX rule (the greatest
  `(left bytes, right bytes)` among equal counts), so with one group this trainer makes exactly
  the classic trainer's merges.
- A group with no pair left (or whose best pair is below `min_frequency`) is passed over for
  the next worst; training ends when no group has a pair ("min_frequency" if some group was
  passed over for it, else "max_token_length" if pairs over a cap were left, else "no_pairs").
- `max_token_length` and `max_token_chars`: a pair whose token would be longer (in bytes, or
  in characters as `char_count` counts them) is never a candidate nor a tie, as in the classic
  trainer; training that ends with only such pairs left says "max_token_length".
- The moving-window variant (`config.parity_window` W > 0, the paper's "window" variant, its
  defaults W = 100 and alpha = 2): a group chosen more than alpha x W / groups times in the last W
  merges gives way to the next worst (exactly: count x groups > alpha x W); when every group with
  a pair is over its share, the worst with a pair is taken.
- The held-out part is every `HELD_OUT_EVERY`-th line of a group's text (lines counted across
  its documents in order), so a group of one file is split as well as one of many records.

Everything is kept incrementally, as in `py_trainer` (not recounted per merge): per-group pair
counts with a lazy max-heap each, one pair -> words index over every group's training and dev
words, and per-group dev token counts, changed only in the words that hold the merged pair.
`tests/test_parity.py` checks it against a slow reference that recounts everything per merge.
Pure Python: a few thousand merges on a few MB per group take seconds (see
`benchmarks/variants.py`); the merge loop's cost is in the words that hold each pair.
"""

from __future__ import annotations

import heapq
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.groups import corpus_files, file_documents
from workbench.engine.corpus.readers import meter
from workbench.engine.errors import ConfigError, CorpusError
from workbench.engine.events import MergeBatch

# HELD_OUT_EVERY is re-exported: the held-out rule lives with the counting (`group_counts`)
from workbench.engine.pretokenize.group_counts import HELD_OUT_EVERY as HELD_OUT_EVERY
from workbench.engine.pretokenize.group_counts import GroupCounter, pooled, scans, split_lines
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.py_trainer import PythonMerges, _descending, _holds

Pair = tuple[int, int]


@dataclass(frozen=True)
class GroupWords:
    """One group's training and held-out word tables."""

    name: str
    train: WordTable
    dev: WordTable


@dataclass(frozen=True)
class ParityRecord:
    """What a batch of parity-aware merges did to each group (`MergeBatch.parity`)."""

    groups: tuple[str, ...]
    dev_bytes: np.ndarray  # int64 per group
    chosen: np.ndarray  # int32 per merge: the group whose pair was merged
    dev_tokens: np.ndarray  # int64 (merges, groups): each group's dev tokens after each merge

    def compression(self) -> np.ndarray:
        """Bytes per token of each group after each merge, (merges, groups)."""
        return self.dev_bytes[None, :] / np.maximum(self.dev_tokens, 1)


def gini(values: Sequence[float]) -> float:
    """The Gini coefficient of non-negative `values` (0: all equal; towards 1: one holds all):
    the mean absolute difference over all ordered pairs, over twice the mean."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or x.sum() == 0:
        return 0.0
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size * x.sum()))


# -- the groups' text ------------------------------------------------------------------------


def split_held_out(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(training texts, held-out texts): every `HELD_OUT_EVERY`-th line (the 10th, 20th, ...
    counted across the texts in order) is held out; each text keeps its other lines."""
    train: list[str] = []
    dev: list[str] = []
    number = 0
    for text in texts:
        kept, held, number = split_lines(text, number)
        if kept:
            train.append(kept)
        if held:
            dev.append(held)
    return train, dev


def count_groups(
    grouped: Mapping[str, Iterable[str]],
    config: TrainConfig,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[GroupWords]:
    """Each group's training and held-out word tables (groups in name order) of documents in
    memory, counted as `count_group_files` counts files; `progress(documents done)`.
    ConfigError for a group too small to hold a line out or to train on."""
    counter = GroupCounter(config, cancel)
    done = 0
    for name, texts in grouped.items():
        for text in texts:
            counter.add(name, text)
            done += 1
            if progress is not None:
                progress(done)
    counter.commit()
    return _group_words(counter)


def count_group_files(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    skipped: list[str] | None = None,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[GroupWords], int]:
    """(each group's word tables, documents) of the files under `paths`, grouped by
    `config.parity_by`, read and counted one document at a time (`group_counts`): memory holds
    the groups' unique pieces, never the corpus. CorpusError names a bad file; with a `skipped`
    list the file is left out whole instead and its message appended there. `progress(bytes
    done, bytes in all)` on disk, as the classic count reports it: inside a file as its
    reader goes, and at each file's end (a bad file's bytes count as done)."""
    counter = GroupCounter(config, cancel)
    files = corpus_files(paths)
    sizes = [_size_on_disk(path) for path, _ in files]
    total, done = sum(sizes), 0
    listed = file_documents(paths, config.parity_by, config.text_column, config.jsonl_field, files)
    for (_, documents), size in zip(listed, sizes, strict=True):
        try:
            with meter.metering(progress, done, size, total):
                for group, text, starts in documents:
                    if starts:
                        counter.start(group)
                    counter.feed(text)
        except CorpusError as exc:
            counter.rollback()
            if skipped is None:
                raise
            skipped.append(str(exc))
        else:
            counter.commit()
        done += size
        if progress is not None:
            progress(done, total)
    return _group_words(counter), counter.documents


def _size_on_disk(path: Path) -> int:
    """The file's bytes for progress (0 when it cannot be sized: its reader says why)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _group_words(counter: GroupCounter) -> list[GroupWords]:
    return [GroupWords(name, *tables) for name, tables in counter.tables().items()]


def pooled_words(groups: Sequence[GroupWords], config: TrainConfig | None = None) -> WordTable:
    """All groups' training words in one table (the run's top pieces and statistics), summed
    by the scanner's table when `config`'s pattern is a preset it counts (no Python object
    per piece), else in a dict."""
    return pooled((g.train for g in groups), config is not None and scans(config))


# -- the trainer -----------------------------------------------------------------------------


def _rows(table: WordTable) -> tuple[list[list[int]], list[int]]:
    data = table.data.tobytes()
    edges = table.offsets.tolist()
    return [
        list(data[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)
    ], table.counts.tolist()


class ParityLoop(PythonMerges):
    """The parity-aware merge loop's rules (which group, which pair, when to stop, what a batch
    says), over whatever keeps the counts: `ParityTrainer` (Python, the reference) and
    `parity_kernels.KernelParityTrainer` (the Numba merge loop's states) implement `_best`,
    `_ties`, `_merge_into`, `_capped_left`, `dev_tokens` and `corpus_tokens`."""

    dev_tokens: list[int]

    def _start(self, groups: Sequence[GroupWords], config: TrainConfig, tie_limit: int) -> None:
        if config.tie_break == "hf":
            raise ConfigError("parity-aware BPE breaks ties lexicographically only")
        if not groups:
            raise ConfigError("parity-aware BPE needs at least one group of documents")
        self.config = config
        self.tie_limit = tie_limit
        self.group_names = tuple(g.name for g in groups)
        self.merges: list[Pair] = []
        self.merge_ids: list[int] = []
        self.chosen: list[int] = []  # the group of each merge
        self.vocab: list[bytes] = [bytes([b]) for b in range(256)]
        self.stop_reason: str | None = None
        self.kernel_seconds = 0.0
        self._batch = 1
        self._cap = config.max_token_length or None
        self._recent: deque[int] = deque(maxlen=max(config.parity_window, 1))
        self._ids = {token: i for i, token in enumerate(self.vocab)}
        self._keys = [_descending(token) for token in self.vocab]
        self.dev_bytes = [g.dev.total_bytes for g in groups]

    # -- what the counts keep -----------------------------------------------------------------

    def _best(self, g: int) -> tuple[int, Pair] | None:
        """(live count, pair) of group g's best pair (ties: greatest bytes), or None."""
        raise NotImplementedError

    def _ties(self, g: int, count: int) -> int:
        """Other pairs of group g at `count`, up to `tie_limit` (0 when it is 0)."""
        raise NotImplementedError

    def _merge_into(self, pair: Pair, new: int) -> None:
        """Merge `pair` into token `new` in every group's training and held-out words."""
        raise NotImplementedError

    def _capped_left(self, g: int) -> bool:
        """Whether group g has pairs with count that only the max token length holds back."""
        raise NotImplementedError

    # -- what it has made (as BpeTrainer; `corpus_tokens`: every group's training and held-out
    # parts) ----------------------------------------------------------------------------------

    def compression(self) -> list[float]:
        """Each group's dev bytes per token now."""
        return [b / t for b, t in zip(self.dev_bytes, self.dev_tokens, strict=True)]

    def worst_order(self) -> list[int]:
        """The groups from worst compressed to best (ties: name order), exactly."""
        n = len(self.group_names)
        order = list(range(n))
        size, tokens = self.dev_bytes, self.dev_tokens  # (read once: the kernels' is a property)
        # insertion sort with exact cross-multiplied comparisons (a handful of groups); a is
        # worse than b when it has fewer bytes per token
        for i in range(1, n):
            j = i
            while j > 0:
                a, b = order[j], order[j - 1]
                if size[a] * tokens[b] >= size[b] * tokens[a]:
                    break
                order[j - 1], order[j] = a, b
                j -= 1
        return order

    # -- training --------------------------------------------------------------------------------

    def batches(
        self,
        target_vocab_size: int | None = None,
        max_merges: int | None = None,
        batch_seconds: float | None = 0.05,
    ) -> Iterator[MergeBatch]:
        """As `BpeTrainer.batches`: a batch about every `batch_seconds` (None: one batch)."""
        made = 0
        while max_merges is None or made < max_merges:
            n = 1 << 30 if batch_seconds is None else self._batch
            if max_merges is not None:
                n = min(n, max_merges - made)
            batch = self.step(n, target_vocab_size)
            made += len(batch)
            if batch_seconds is not None and len(batch):
                per = batch.seconds / len(batch)
                self._batch = max(1, min(4096, int(batch_seconds / max(per, 1e-6))))
            if len(batch):
                yield batch
            if self.stop_reason is not None:
                return

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        """Up to n more merges (fewer if training ends), as one batch."""
        target = self.config.vocab_size if target_vocab_size is None else target_vocab_size
        target_tokens = target - len(self.config.special_tokens)
        start = time.perf_counter()
        start_rank = len(self.merges)
        rows: list[tuple[int, int, int, int, bool, int, int]] = []
        dev_rows: list[list[int]] = []
        self.stop_reason = None
        while len(rows) < max(int(n), 0):
            if len(self.vocab) >= target_tokens:
                self.stop_reason = "vocab_size"
                break
            chosen = self._choose()
            if isinstance(chosen, str):
                self.stop_reason = chosen
                break
            g, count, best = chosen
            ties = self._ties(g, count) if self.tie_limit > 0 else 0
            new, is_new = self._token_of(self.vocab[best[0]] + self.vocab[best[1]])
            self._merge_into(best, new)
            self.merges.append(best)
            self.merge_ids.append(new)
            self.chosen.append(g)
            self._recent.append(g)
            rows.append((best[0], best[1], new, count, is_new, ties, self.corpus_tokens))
            dev_rows.append(list(self.dev_tokens))
        seconds = time.perf_counter() - start
        self.kernel_seconds += seconds
        return self._batch_of(start_rank, rows, dev_rows, seconds)

    def _batch_of(
        self, start_rank: int, rows: list[tuple], dev_rows: list[list[int]], seconds: float
    ) -> MergeBatch:
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        groups = len(self.group_names)
        record = ParityRecord(
            groups=self.group_names,
            dev_bytes=np.array(self.dev_bytes, dtype=np.int64),
            chosen=np.array(self.chosen[start_rank:], dtype=np.int32),
            dev_tokens=np.array(dev_rows, dtype=np.int64).reshape(len(rows), groups),
        )
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
            parity=record,
        )

    # -- the merge loop's parts ------------------------------------------------------------------

    def _choose(self) -> tuple[int, int, Pair] | str:
        """(group, count, pair) to merge, or why none: the worst group with a pair at or above
        the minimum frequency, its best pair."""
        below = False
        empty: list[int] = []
        order = self.worst_order()
        window = self.config.parity_window
        if window:  # groups within their share of the window first, then the rest
            share = self.config.parity_alpha * window
            n = len(self.group_names)
            within = [g for g in order if self._recent.count(g) * n <= share]
            order = within + [g for g in order if g not in within]
        for g in order:
            best = self._best(g)
            if best is None:
                empty.append(g)
                continue
            if best[0] < self.config.min_frequency:
                below = True
                continue
            return g, best[0], best[1]
        if below:
            return "min_frequency"
        capping = self._cap is not None or bool(self.config.max_token_chars)
        capped = capping and any(self._capped_left(g) for g in empty)
        return "max_token_length" if capped else "no_pairs"

    def _token_of(self, merged: bytes) -> tuple[int, bool]:
        """The id of `merged` (a new one unless those bytes are a token already), is it new."""
        old = self._ids.get(merged)
        if old is not None:
            return old, False
        new = len(self.vocab)
        self.vocab.append(merged)
        self._ids[merged] = new
        self._keys.append(_descending(merged))
        return new, True


class ParityTrainer(ParityLoop):
    """Parity-aware byte-level BPE in pure Python, with `PyTrainer`'s interface (LEX tie-break
    only): the reference the kernel trainer (`parity_kernels`) is checked against, and the
    trainer of a first start while the kernels compile."""

    def __init__(
        self, groups: Sequence[GroupWords], config: TrainConfig, tie_limit: int = 100
    ) -> None:
        self._start(groups, config, tie_limit)
        n = len(groups)
        # Every word of every group, training words first; `_group[w]`, `_dev[w]` say whose.
        self._words: list[list[int]] = []
        self._counts: list[int] = []
        self._group: list[int] = []
        self._n_train = 0
        for dev in (False, True):
            for g, group in enumerate(groups):
                words, counts = _rows(group.dev if dev else group.train)
                self._words += words
                self._counts += counts
                self._group += [g] * len(words)
            if not dev:
                self._n_train = len(self._words)
        self.dev_tokens = list(self.dev_bytes)
        self._tokens = sum(g.train.total_bytes + g.dev.total_bytes for g in groups)
        self._live: list[dict[Pair, int]] = [{} for _ in range(n)]
        self._at_count: list[dict[int, int]] = [{} for _ in range(n)]
        self._holders: dict[Pair, set[int]] = {}
        for w, word in enumerate(self._words):
            live = self._live[self._group[w]] if w < self._n_train else None
            for pair in zip(word, word[1:], strict=False):
                if live is not None:
                    live[pair] = live.get(pair, 0) + self._counts[w]
                self._holders.setdefault(pair, set()).add(w)
        self._heaps: list[list[tuple]] = []
        for g in range(n):
            allowed = {p: c for p, c in self._live[g].items() if self._allowed(p)}
            for count in allowed.values():
                self._at_count[g][count] = self._at_count[g].get(count, 0) + 1
            heap = [self._entry(pair, count) for pair, count in allowed.items()]
            heapq.heapify(heap)
            self._heaps.append(heap)

    def _ties(self, g: int, count: int) -> int:
        return min(self._at_count[g][count] - 1, self.tie_limit)

    def _capped_left(self, g: int) -> bool:
        """Whether group g has pairs with count that only the max token length holds back."""
        return any(c > 0 and not self._allowed(p) for p, c in self._live[g].items())

    def _best(self, g: int) -> tuple[int, Pair] | None:
        """Group g's pair with the highest live count (ties: greatest bytes); stale heap
        entries are re-filed at their live count, or dropped at 0."""
        heap, live = self._heaps[g], self._live[g]
        while heap:
            stale, _, _, pair = heap[0]
            count = live.get(pair, 0)
            if -stale == count:
                return (count, pair) if count > 0 else None
            if count > 0:
                heapq.heapreplace(heap, self._entry(pair, count))
            else:
                heapq.heappop(heap)
        return None

    def _set(self, g: int, pair: Pair, count: int) -> None:
        """Give group g's `pair` a new live count, keeping its count -> pairs tally (ties)."""
        live, at = self._live[g], self._at_count[g]
        old = live.get(pair, 0)
        live[pair] = count
        if not self._allowed(pair):  # never a candidate, so never a tie either
            return
        if old > 0:
            at[old] -= 1
        if count > 0:
            at[count] = at.get(count, 0) + 1

    def _merge_into(self, pair: Pair, new: int) -> None:
        left, right = pair
        gained: dict[tuple[int, Pair], None] = {}  # (group, pair) that gained count, in order
        for w in self._holders.pop(pair, ()):
            if _holds(self._words[w], left, right):  # else stale: an earlier merge took it out
                self._rewrite(w, left, right, new, gained)
        for g in range(len(self.group_names)):
            if self._live[g].get(pair, 0):
                self._set(g, pair, 0)
        for g, fresh in gained:
            count = self._live[g][fresh]
            if count > 0 and self._allowed(fresh):
                heapq.heappush(self._heaps[g], self._entry(fresh, count))

    def _rewrite(
        self, w: int, left: int, right: int, new: int, gained: dict[tuple[int, Pair], None]
    ) -> None:
        """Word w with every (left, right) replaced by `new`, left to right; its neighbours'
        pairs moved in its group's counts (training words) and the index."""
        word, holders = self._words[w], self._holders
        count, g, train = self._counts[w], self._group[w], w < self._n_train
        live = self._live[g]

        def move(old: Pair, fresh: Pair) -> None:
            holders.setdefault(fresh, set()).add(w)
            if train:
                self._set(g, old, live[old] - count)
                self._set(g, fresh, live.get(fresh, 0) + count)
                gained[(g, fresh)] = None

        out: list[int] = []
        replaced = 0
        r, n = 0, len(word)
        while r < n:
            s = word[r]
            if s == left and r + 1 < n and word[r + 1] == right:
                if out:
                    move((out[-1], left), (out[-1], new))
                if r + 2 < n:
                    move((right, word[r + 2]), (new, word[r + 2]))
                out.append(new)
                r += 2
                replaced += count
            else:
                out.append(s)
                r += 1
        self._words[w] = out
        self._tokens -= replaced
        if not train:
            self.dev_tokens[g] -= replaced
