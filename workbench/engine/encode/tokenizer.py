"""A byte-level BPE tokenizer: vocabulary, ranked merges, pattern, special tokens; encode/decode.

Encoding gives exactly tiktoken's ids for the same ranks and pattern: special tokens are split
out first (longest wins), the rest is cut into pieces by the pattern, and within a piece the
adjacent pair whose concatenated bytes form the lowest-ranked token merges first (leftmost on
ties), after looking the whole piece up. A token's rank is the index of the first merge that
makes it (why the concatenation, not the listed `(left, right)` merge as Hugging Face: `_merge.py`).

Pre-tokenizing: when the pattern is a preset (`scanner.can_scan`), the default is the Numba
scanner fused with the merging (`_scanned.encode_scanned`: one call per text, no Python
object per piece); any other pattern uses `regex`. `Tokenizer(..., splitter="regex")` or
`t.with_splitter("regex")` forces the regex path (tests, or a user who distrusts the scanner); a
callable `Splitter` replaces the pre-tokenizer altogether. All give the same ids.

Not here: files (`formats/`); tables, reused buffers, segment tables (`_core.py`); checks of the
parts (`validation.py`); the kernels (`_tables.py`, `_chars.py`, `_merge.py`, `_scanned.py`).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

import numpy as np

from workbench.engine._native.utf8_text import joined_utf8, utf8
from workbench.engine.batching import RunPool, runs_of
from workbench.engine.encode import _core, _merge, _scanned, _shared_cores
from workbench.engine.encode._core import Core, build_core, give_back, taken
from workbench.engine.encode.interop import TokenizerInterop
from workbench.engine.encode.pieces import RegexSplitter, Splitter, char_to_byte
from workbench.engine.encode.validation import (
    AllowedSpecial,
    DisallowedSpecial,
    check_text,
    check_vocab_merges,
    checked_pattern,
    checked_texts,
    number_specials,
    refuse,
    special_rules,
)
from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.specials import specials_regex
from workbench.engine.pretokenize import scan as scanner

# "auto": the scanner for presets, else regex; "scanner" insists; "regex" forces regex.
SplitterChoice = Literal["auto", "scanner", "regex"] | Splitter


class TokenSpan(NamedTuple):
    """One token of an encoded text; `splits_char` when it starts or ends inside a character."""

    id: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    splits_char: bool


class Tokenizer(TokenizerInterop):
    """Byte-level BPE with tiktoken's encoding; cheap prefixes for "the tokenizer at merge k".

    The names tiktoken and Hugging Face users type, the conversions to their objects and the
    notebook display, `export` and pickling (only the defining data, `state.py`; the per-thread
    buffers and caches are rebuilt on load) come from `TokenizerInterop` (`interop.py`)."""

    def __init__(
        self,
        core: Core,
        *,
        pattern: str,
        special_tokens: dict[str, int],
        max_rank: int,
        splitter: SplitterChoice | None = None,
    ) -> None:
        """`core`: the tables (`_core.build_core`; use `from_*`); `splitter`: `SplitterChoice`."""
        self._core = core
        self.pattern = pattern
        self.special_tokens = dict(special_tokens)
        self._max_rank = max_rank
        self._splitter_choice: SplitterChoice = splitter or "auto"
        # Exactly one of the two is set: the scanner preset code (fused fast path) or a splitter.
        self._scan_code, self._splitter = _core.choose_splitter(pattern, splitter)
        self._vocab: dict[int, bytes] | None = None
        self._decoder: dict[int, bytes] | None = None
        # The scanner path's piece cache, one per thread (a kernel fills it without the GIL):
        # later calls reuse what earlier ones merged, so many small texts cost what one big does.
        self._local = threading.local()
        # encode_batch's helper threads: kept between calls so their piece caches stay warm.
        self._pool = RunPool("bpe-encode")

    # ----- construction -------------------------------------------------------------------

    @classmethod
    def from_merges(
        cls, merges: Iterable[tuple[bytes, bytes]], pattern: str, special_tokens: Sequence[str] = ()
    ) -> Tokenizer:
        """The trainer's ids: bytes are 0..255, each new merged token the next id, specials last.

        `[(b"a", b"b"), (b"ab", b"c"), (b"a", b"bc")]` -> ab=256, abc=257, and the third merge
        reuses 257 (Hugging Face reuses the id too) -- after `(b"b", b"c")` made bc, of course.
        """
        id_of = {bytes([b]): b for b in range(256)}
        made: list[bytes] = []  # the merged tokens, id 256 on
        pairs: list[tuple[int, int]] = []
        results: list[int] = []
        for rank, (left, right) in enumerate(merges):
            for part in (left, right):
                if part not in id_of:
                    raise TokenizerError(f"merge {rank}: {part!r} is not a token at that point")
            merged = left + right
            if merged not in id_of:
                id_of[merged] = 256 + len(made)
                made.append(merged)
            pairs.append((id_of[left], id_of[right]))
            results.append(id_of[merged])
        # Filled in 16k pieces after the loop: grown with `id_of`, one 14 ms step resized both.
        vocab = {b: bytes([b]) for b in range(256)}
        for s in range(0, len(made), _core.PIECE):
            vocab.update(enumerate(made[s : s + _core.PIECE], 256 + s))
        specials = number_specials(special_tokens, len(vocab))
        core = build_core(vocab, pairs, results, trainer_ids=True)
        return cls(
            core,
            pattern=checked_pattern(pattern),
            special_tokens=specials,
            max_rank=len(pairs),
        )

    @classmethod
    def from_trainer(
        cls,
        tokens: Sequence[bytes],
        merges: Sequence[tuple[int, int]],
        results: Sequence[int],
        pattern: str,
        special_tokens: Sequence[str] = (),
    ) -> Tokenizer:
        """What `from_merges` would rebuild from the trainer's byte pairs, taken from the
        trainer's own tables instead (id i is `tokens[i]`, merge r makes `results[r]`): no
        bytes are looked up again, which took most of an export's time."""
        vocab = dict(enumerate(tokens))
        specials = number_specials(special_tokens, len(vocab))
        core = build_core(vocab, list(merges), list(results), trainer_ids=True)
        return cls(
            core,
            pattern=checked_pattern(pattern),
            special_tokens=specials,
            max_rank=len(core.merges),
        )

    @classmethod
    def from_vocab_merges(
        cls,
        vocab: dict[int, bytes],
        merges: Sequence[tuple[int, int]],
        pattern: str,
        special_tokens: dict[str, int] | None = None,
    ) -> Tokenizer:
        """Arbitrary ids (imported files): every check that makes a file trustworthy is here."""
        specials = dict(special_tokens or {})
        results = check_vocab_merges(vocab, merges, specials)
        core = build_core(dict(vocab), list(map(tuple, merges)), results, trainer_ids=False)
        return cls(
            core,
            pattern=checked_pattern(pattern),
            special_tokens=specials,
            max_rank=len(results),
        )

    @classmethod
    def from_ranks(
        cls, ranks: dict[int, bytes], pattern: str, special_tokens: dict[str, int] | None = None
    ) -> Tokenizer:
        """tiktoken's view (id = rank, no merges listed): the merges are rebuilt from the ranks.

        The merge of the r-th multi-byte token is what BPE leaves of its bytes when only the
        r - 1 earlier tokens may be made; more or fewer than two parts is an inconsistent file.
        """
        specials = dict(special_tokens or {})
        core = _shared_cores.checked_core_of_ranks(ranks, specials)
        return cls(
            core,
            pattern=checked_pattern(pattern),
            special_tokens=specials,
            max_rank=len(core.merges),
        )

    def prefix(self, k: int) -> Tokenizer:
        """The tokenizer of the first `k` merges: shares all tables and encodes with a rank cutoff.

        Ids stay those of the full tokenizer; with trainer ids the specials are renumbered to
        follow the prefix's tokens, so `t.prefix(k)` equals `from_merges(merges[:k], ...)`.
        """
        if not 0 <= k <= len(self._core.merges):
            raise TokenizerError(f"prefix {k} is outside 0..{len(self._core.merges)}")
        specials = self.special_tokens
        if self._core.trainer_ids:
            rank = self._core.tok_rank
            made = int(np.count_nonzero((rank >= 0) & (rank < k)))
            names = sorted(specials, key=specials.__getitem__)
            specials = number_specials(names, 256 + made)
        return Tokenizer(
            self._core,
            pattern=self.pattern,
            special_tokens=specials,
            max_rank=k,
            splitter=self._splitter_choice,
        )

    def with_splitter(self, splitter: SplitterChoice) -> Tokenizer:
        """The same tokenizer with another pre-tokenizer: "auto", "scanner", "regex" or a
        `Splitter` callable. `t.with_splitter("regex")` forces the regex engine."""
        return Tokenizer(
            self._core,
            pattern=self.pattern,
            special_tokens=self.special_tokens,
            max_rank=self._max_rank,
            splitter=splitter,
        )

    @property
    def splitter(self) -> str:
        """The pre-tokenizer in use: "scanner", "regex" or "custom"."""
        if self._scan_code is not None:
            return "scanner"
        return "regex" if isinstance(self._splitter, RegexSplitter) else "custom"

    # ----- what it holds ----------------------------------------------------------------------

    @property
    def merges(self) -> list[tuple[int, int]]:
        """Merges as id pairs, in rank order."""
        return self._core.merges[: self._max_rank]

    @property
    def merge_bytes(self) -> list[tuple[bytes, bytes]]:
        vocab = self._core.vocab
        return [(vocab[a], vocab[b]) for a, b in self.merges]

    @property
    def merge_results(self) -> list[int]:
        """The id each merge makes (equal ids where two merges make the same bytes)."""
        return self._core.results[: self._max_rank]

    @property
    def vocab(self) -> dict[int, bytes]:
        """Ordinary tokens (no specials) id -> bytes."""
        if self._vocab is None:
            if self._max_rank == len(self._core.merges):
                self._vocab = self._core.vocab
            else:
                rank = self._core.tok_rank
                self._vocab = {
                    t: b for t, b in self._core.vocab.items() if -1 <= rank[t] < self._max_rank
                }
        return self._vocab

    def token_rank(self, tid: int) -> int:
        """-1 for a single byte, else the index of the first merge that makes the token."""
        return int(self._core.tok_rank[tid])

    @property
    def vocab_size(self) -> int:
        return len(self.vocab) + len(self.special_tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (
            self.vocab == other.vocab
            and self.merges == other.merges
            and self.pattern == other.pattern
            and self.special_tokens == other.special_tokens
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Tokenizer({len(self.vocab)} tokens, {len(self.merges)} merges, "
            f"{len(self.special_tokens)} specials)"
        )

    # ----- encode / decode ------------------------------------------------------------------

    def encode(
        self,
        text: str,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """Token ids of `text`, as tiktoken's `encode`.

        A special token in `text` is encoded as that special only if allowed (`"all"` or a set
        of names); one that is neither allowed nor excused (`disallowed_special=()` encodes the
        rest as ordinary text) raises `DisallowedSpecialError`: text from users or files must not
        turn into control tokens by accident.
        """
        check_text(text)
        allowed = self._specials_for(text, allowed_special, disallowed_special)
        return self._handed_out(self._encode(text, allowed, want_starts=False)[0], lists=True)

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of `text` with every special token encoded as ordinary text."""
        return self.encode(text, allowed_special=(), disallowed_special=())

    def encode_array(
        self,
        text: str,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> np.ndarray:
        """Like `encode`, as an int32 array (no Python int per token)."""
        check_text(text)
        allowed = self._specials_for(text, allowed_special, disallowed_special)
        return self._handed_out(self._encode(text, allowed, want_starts=False)[0], lists=False)

    def encode_with_spans(
        self,
        text: str,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[TokenSpan]:
        """Each token with its byte span in `text.encode()` and character span in `text`.

        A token that ends inside a character (byte-level BPE can cut `é` = C3 A9 in two) covers
        that character in its character span and has `splits_char` set. Specials as in `encode`.
        """
        check_text(text)
        text = _core.clean_text(text)
        allowed = self._specials_for(text, allowed_special, disallowed_special)
        ids, starts, _ = self._encode(text, allowed, want_starts=True)
        lengths = _core.token_lengths(self._core, self.special_tokens, ids)
        if starts is None:  # the scanner tiles the text, so each token starts where the last ended
            starts = np.cumsum(lengths) - lengths
        ends = starts + lengths
        char_start, char_end, split = _core.char_spans(text, char_to_byte(text), starts, ends)
        ids_list = ids.tolist()
        give_back(self._local, "out", ids)
        return [
            TokenSpan(*row[:5], bool(row[5]))
            for row in zip(
                ids_list,
                starts.tolist(),
                ends.tolist(),
                char_start.tolist(),
                char_end.tolist(),
                split.tolist(),
                strict=True,
            )
        ]

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        table = self.decode_table()
        try:
            return b"".join([table[i] for i in ids])
        except KeyError as exc:
            raise TokenizerError(f"token id {exc.args[0]} is not in this tokenizer") from None

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`; bytes that are not valid UTF-8 become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        """The bytes of each token: `[b"hello", b" world"]` (as tiktoken's method of that name)."""
        table = self.decode_table()
        try:
            return [table[i] for i in ids]
        except KeyError as exc:
            raise TokenizerError(f"token id {exc.args[0]} is not in this tokenizer") from None

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[int]]:
        """`encode` of each text, in threads (the kernels release the GIL); keyword arguments
        as tiktoken's `encode_batch`. Raises what `encode` raises for the first failing text."""
        return self._batch(
            checked_texts(texts), num_threads, allowed_special, disallowed_special, True
        )

    def encode_batch_arrays(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[np.ndarray]:
        """`encode_batch` as int32 arrays: no Python int per token, so the threads hardly ever
        wait for one another (a list's ints need the GIL: ~40% of a warm call on English). The
        arrays of one run of texts may be views of one array."""
        return self._batch(
            checked_texts(texts), num_threads, allowed_special, disallowed_special, False
        )

    def close(self) -> None:
        """Stop `encode_batch`'s helper threads now rather than when the tokenizer is collected
        (they are kept between calls so their piece caches stay warm); a later batch starts
        them again. `with tokenizer: ...` closes at the end of the block."""
        self._pool.close()

    def __enter__(self) -> Tokenizer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def rebuilt_merges(self) -> list[tuple[int, int] | None]:
        """For each merge r, the two tokens that BPE with only the first r merges makes of the
        bytes of the token merge r makes, or None when they do not come out as two tokens.

        None means the merges never build that token: the encoder emits it only where a whole
        pre-token equals it (its whole-piece lookup). With merges `b+c`, `a+b`, `c+d`, `ab+cd`,
        `abcd` is None: `a|bc|d` is all the first three merges make of it.
        """
        results = np.array(self.merge_results, dtype=np.int64)
        found = _merge.recover_merges(results, self._core.tables)
        return [None if left < 0 else (int(left), int(right)) for left, right in found.tolist()]

    # ----- internals --------------------------------------------------------------------------

    def _batch(
        self,
        texts: list[str],
        num_threads: int | None,
        allowed_special: AllowedSpecial,
        disallowed_special: DisallowedSpecial,
        lists: bool,
    ) -> list:
        """Each text's ids (lists or int32 arrays) on `num_threads` threads (default: every
        core), in order.

        Texts go out in contiguous runs of 64K-256K characters (a longer text alone; about
        `RUNS_PER_THREAD` runs a thread when there is more), so a batch of many short texts does
        not pay the pool's cost per text while the runs still balance between threads; an
        exception is the first failing text's. Each thread's piece cache is sized for the whole
        batch, not for one short text: one sized for a 64 KB document fills up and restarts
        several times over a batch of them.
        """
        allowed, refused = special_rules(self.special_tokens, allowed_special, disallowed_special)
        threads = num_threads or os.cpu_count() or 1
        total = sum(map(len, texts))

        def run_of(run: list[str]) -> list:
            for text in run:  # the first refused text of the run raises, before any work
                refuse(refused, text)
            if self._scan_code is not None:
                _core.piece_cache(self._local, total)
                return self._encode_run(run, allowed, lists)
            return [
                self._handed_out(self._encode(text, allowed, want_starts=False)[0], lists)
                for text in run
            ]

        target = min(max(total // (_core.RUNS_PER_THREAD * threads), 1 << 16), _core.LONGEST_RUN)
        runs = runs_of(texts, len, target) if texts else []
        # Under 64K characters a single run: a thread would cost more than it saves.
        return [result for done in self._pool.map(run_of, runs, threads) for result in done]

    def _encode_run(self, run: list[str], allowed: tuple[str, ...], lists: bool) -> list:
        """The scanner's ids of each text of `run` from one kernel call over all their bytes:
        a thousand short texts cost one call's overhead, not a thousand.

        Each text is its own segment(s), so its pieces never cross its ends and the ids are
        `encode`'s; an empty segment after each text emits `_end_mark`, which no token has,
        so finding the marks cuts the ids into texts in one vectorised pass.
        """
        mark = self._end_mark
        if allowed:  # specials split out of each text, as `_core.segments` does for one
            parts = [utf8(text)[1] for text in run]
            data = b"".join(parts)
            segments = _core.run_segments(parts, allowed, self.special_tokens, mark)
        else:  # UTF-8 written without the GIL
            data, sizes = joined_utf8(run, self._text_buffer)
            segments = _core.plain_run_segments(sizes, mark)
        ids = self._scan_segments(data, *segments)
        if not allowed:
            give_back(self._local, "text", data)  # read by the kernel, never again
        ends = np.flatnonzero(ids == mark)
        if lists:  # every list in one pass, straight from the reused buffer
            starts = np.concatenate((np.zeros(1, np.int64), ends[:-1] + 1))
            found = self._core.ready_ints.lists(ids, starts, ends)
            give_back(self._local, "out", ids)
            return found
        cuts = ends.tolist()
        kept = ids.copy()  # out of the reused buffer, once for the run
        give_back(self._local, "out", ids)
        return [kept[a + 1 : b] for a, b in zip([-1, *cuts], cuts, strict=False)]

    @functools.cached_property
    def _end_mark(self) -> int:
        """An id that is neither an ordinary token's nor a special's (`_encode_run`)."""
        return _core.end_mark(self.special_tokens, self._core.id_bound)

    def decode_table(self) -> dict[int, bytes]:
        """Every id, specials included -> its bytes (built once, shared: do not modify it)."""
        if self._decoder is None:
            table = dict(self.vocab)
            table.update((tid, name.encode()) for name, tid in self.special_tokens.items())
            self._decoder = table
        return self._decoder

    def _specials_for(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[str, ...]:
        """The specials to split out of `text`; raises if it holds a disallowed one."""
        allowed, refused = special_rules(self.special_tokens, allowed_special, disallowed_special)
        refuse(refused, text)
        return allowed

    def _encode(
        self, text: str, allowed: tuple[str, ...], want_starts: bool
    ) -> tuple[np.ndarray, np.ndarray | None, int]:
        """(ids, each token's byte start or None when tokens tile the bytes, byte length).

        `allowed`: the specials split out as their ids. The ids may be a view of this thread's
        taken output buffer: convert or copy them, then `give_back(self._local, "out", ids)`.
        """
        if self._scan_code is not None:
            return self._encode_scanned(text, allowed)
        text, data = utf8(text)
        assert self._splitter is not None
        matcher = specials_regex(tuple(sorted(allowed))) if allowed else None
        data, starts, ends, special_ids = _core.regex_pieces(
            text, data, matcher, self.special_tokens, self._splitter
        )
        buf = np.frombuffer(data, dtype=np.uint8)
        out_ids = np.empty(len(data) + 1, dtype=np.int32)
        out_starts = np.empty(len(data) + 1 if want_starts else 0, dtype=np.int64)
        count = _merge.encode_pieces(
            buf,
            starts,
            ends,
            special_ids,
            np.int32(self._max_rank),
            self._core.tables,
            out_ids,
            out_starts,
        )
        return out_ids[:count], out_starts[:count], len(data)

    def _encode_scanned(self, text: str, specials: tuple[str, ...]) -> tuple[np.ndarray, None, int]:
        """The fast path: UTF-8 (`_core.text_utf8`), segments around the specials, one kernel call."""
        data = _core.text_utf8(self._local, text)
        ids = self._scan_segments(data, *_core.segments(data, specials, self.special_tokens))
        give_back(self._local, "text", data)  # read by the kernel, never again
        return ids, None, len(data)

    def _scan_segments(
        self,
        data: bytes | np.ndarray,
        seg_starts: np.ndarray,
        seg_ends: np.ndarray,
        seg_ids: np.ndarray,
    ) -> np.ndarray:
        """The ids of `data`'s segments (a special's id, or ordinary text when -1): a view of
        this thread's output buffer, taken until the caller gives it back (`_core.taken`)."""
        flags, fold_cps, fold_letters = scanner.kernel_tables()
        out_ids = taken(self._local, "out", len(data) + len(seg_ids) + 1)  # a segment may be empty
        text = np.frombuffer(data, dtype=np.uint8)
        # Read-only whatever `data` is (bytes, or a reused buffer): a writable array is another
        # type to Numba, a second compilation of the whole encoder (5 s of CPU a preset).
        text.flags.writeable = False
        count = _scanned.ENCODE_SCANNED[self._scan_code](
            text,
            seg_starts,
            seg_ends,
            seg_ids,
            flags,
            fold_cps,
            fold_letters,
            np.int32(self._max_rank),
            self._core.tables,
            _core.seed_for(self._core, self._max_rank),
            _core.piece_cache(self._local, len(data)),
            out_ids,
        )
        return out_ids[:count]

    def _text_buffer(self, size: int) -> np.ndarray:
        """Room for `size` bytes of text: this thread's buffer, taken until given back."""
        return taken(self._local, "text", size)

    def _handed_out(self, ids: np.ndarray, lists: bool) -> list[int] | np.ndarray:
        """`ids` (maybe a view of the taken output buffer) as a list or an array of their own
        (not keeping the worst-case buffer alive), then the buffer given back."""
        found = self._core.ready_ints.one_list(ids) if lists else ids.copy()
        give_back(self._local, "out", ids)
        return found
