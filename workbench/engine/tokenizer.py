"""A byte-level BPE tokenizer: vocabulary, ranked merges, pattern, special tokens; encode/decode.

Encoding gives exactly tiktoken's ids for the same ranks and pattern: special tokens are split
out first (longest wins), the rest is cut into pieces by the pattern, and within a piece the
adjacent pair whose concatenated bytes form the lowest-ranked token merges first (leftmost on
ties), after looking the whole piece up. A token's rank is the index of the first merge that
makes it.

Why the concatenation (tiktoken) and not the listed `(left, right)` merge (Hugging Face): the two
differ only when some bytes can be made in two ways. With merges `b+c`, `a+b`, `ab+c` (-> abc),
`bc+d`, `a+bc` (-> abc again), the text `abcd` becomes `a bc d`; tiktoken then merges `a+bc` at the
rank of `abc` (2) -> `abc d`, while Hugging Face ranks `a+bc` by its own line (4) and merges
`bc+d` first -> `a bcd`. We follow tiktoken because its ids are the contract; the Hugging Face
exporter lists merges in result-rank order (see `formats/hf_json.py`) so the two agree on real text.

Pre-tokenizing: when the pattern is a preset (`scanner.can_scan`), the default is the Numba
scanner fused with the merging (`_encode_kernels.encode_scanned`: one call per text, no Python
object per piece); any other pattern uses `regex`. `Tokenizer(..., splitter="regex")` or
`t.with_splitter("regex")` forces the regex path (tests, or a user who distrusts the scanner); a
callable `Splitter` replaces the pre-tokenizer altogether. All give the same ids.

Not here: reading/writing files (`formats/`).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
import regex

from workbench.engine import _encode_kernels as kernels
from workbench.engine import scanner
from workbench.engine.batching import RunPool, runs_of
from workbench.engine.errors import TokenizerError
from workbench.engine.id_lists import ReadyInts
from workbench.engine.ids import check_dense, check_id
from workbench.engine.patterns import compile_pattern, resolve
from workbench.engine.pieces import RegexSplitter, Splitter, char_to_byte
from workbench.engine.specials import specials_bytes_regex, specials_regex
from workbench.engine.utf8_text import joined_utf8, utf8

# tiktoken's convention: specials in the text are an error unless allowed ("all" or a set);
# `disallowed_special=()` encodes the ones not allowed as ordinary text. ("none": all of them
# as ordinary text, like `encode_ordinary`.)
AllowedSpecial = Literal["all", "none"] | AbstractSet[str] | Sequence[str]
DisallowedSpecial = Literal["all"] | AbstractSet[str] | Sequence[str]
# "auto": the scanner for preset patterns, else regex; "scanner" insists (error on a custom
# pattern); "regex" forces the regex engine; a callable is a custom pre-tokenizer.
SplitterChoice = Literal["auto", "scanner", "regex"] | Splitter


class TokenSpan(NamedTuple):
    """One token of an encoded text; `splits_char` when it starts or ends inside a character."""

    id: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    splits_char: bool


@dataclass(frozen=True, eq=False)
class _Core:
    """Everything prefixes share: built once, never copied by `prefix(k)`."""

    vocab: dict[int, bytes]  # ordinary tokens (no specials)
    merges: list[tuple[int, int]]  # id pairs in rank order
    results: list[int]  # the id each merge makes
    tok_rank: np.ndarray  # per id: -1 byte, first making merge, or NEVER
    arrays: tuple  # (tok_bytes, tok_off, byte_id): what the encoder's tables are built from
    trainer_ids: bool  # ids follow the trainer's convention (from_merges)

    @property
    def id_bound(self) -> int:
        """Ordinary ids are below it (the arena holds a token per id up to it); specials may
        not be."""
        return len(self.arrays[1]) - 1

    @functools.cached_property
    def tables(self) -> tuple:
        """The encoder's tables, built on first use: a tokenizer that is only exported (as after
        training) never compiles or runs the table kernels."""
        tok_bytes, tok_off, byte_id = self.arrays
        capacity = _capacity(len(self.vocab))
        whole = kernels.build_whole_table(tok_bytes, tok_off, self.tok_rank, capacity)
        lefts, rights, made = kernels.collect_splits(
            tok_bytes, tok_off, self.tok_rank, byte_id, whole
        )
        pairs = kernels.build_pair_table(lefts, rights, made, self.tok_rank, _capacity(len(lefts)))
        byte_pairs = kernels.byte_pair_table(lefts, rights, made, tok_bytes, tok_off, self.tok_rank)
        chars = kernels.build_char_tables(tok_bytes, tok_off, self.tok_rank)
        return (tok_bytes, tok_off, self.tok_rank, byte_id, whole, pairs, byte_pairs, chars)

    @functools.cached_property
    def ready_ints(self) -> ReadyInts:
        """The ordinary ids as ready-made Python ints, for the lists `encode` and `encode_batch`
        return (see `id_lists`): 40 bytes an id."""
        return ReadyInts(self.id_bound)


def _capacity(count: int) -> int:
    return max(16, 1 << int(2 * max(count, 1) - 1).bit_length())


def _build_core(
    vocab: dict[int, bytes], merges: list[tuple[int, int]], results: list[int], trainer_ids: bool
) -> _Core:
    # Vectorised: per-token Python loops here took a tenth of a 32k-token export.
    ids = np.fromiter(vocab.keys(), dtype=np.int64, count=len(vocab))
    tokens = list(vocab.values())
    size = int(ids.max()) + 1
    lengths = np.zeros(size, dtype=np.int64)
    lengths[ids] = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    tok_rank = np.full(size, kernels.NEVER, dtype=np.int32)
    byte_id = np.full(256, -1, dtype=np.int32)
    for tid in np.flatnonzero(lengths == 1).tolist():
        byte_id[vocab[tid][0]] = tid
        tok_rank[tid] = -1
    if results:  # the first merge that makes a token gives its rank
        made, first = np.unique(np.asarray(results, dtype=np.int64), return_index=True)
        tok_rank[made] = first
    tok_off = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_off[1:])
    order = np.argsort(ids, kind="stable")  # absent ids have length 0: the arena is in id order
    tok_bytes = np.frombuffer(b"".join([tokens[i] for i in order.tolist()]), dtype=np.uint8)
    return _Core(vocab, merges, results, tok_rank, (tok_bytes, tok_off, byte_id), trainer_ids)


def _clean_text(text: str) -> str:
    """Lone surrogates cannot be UTF-8: replace them, as tiktoken does."""
    return utf8(text)[0]


# Runs a thread gets: the last run to finish leaves the other threads idle for up to its length,
# so more, shorter runs balance better; a run of 64K characters still costs the pool little.
_RUNS_PER_THREAD = 16
# A run is one kernel call: above 256K characters its ids would outgrow the thread's reused
# output buffer (`_REUSED_OUT`), and a fresh one a call costs page faults and unmapping.
_LONGEST_RUN = 1 << 18


_REUSED_OUT = 1 << 20  # ids: a thread keeps at most a 4 MB output buffer between calls
_REUSED_TEXT = 1 << 22  # bytes: and at most a 4 MB text buffer (a run's UTF-8 bound: 4 a character)
# A thread's reused buffers: name -> (dtype, the least it makes, the most it keeps).
_REUSED = {"out": (np.int32, 1 << 16, _REUSED_OUT), "text": (np.uint8, 1 << 18, _REUSED_TEXT)}


def _cache_bits(size: int) -> int:
    """log2 of the piece cache's rows for `size` bytes: a few short texts get a small table;
    2**17 rows (2 MB) hold the ~65k most frequent pieces of a large text."""
    return min(17, max(8, (size // 4).bit_length()))


class Tokenizer:
    """Byte-level BPE with tiktoken's encoding; cheap prefixes for "the tokenizer at merge k"."""

    def __init__(
        self,
        core: _Core,
        pattern: str,
        special_tokens: dict[str, int],
        max_rank: int,
        splitter: SplitterChoice | None = None,
    ) -> None:
        """`splitter`: "auto" (default, also None), "scanner", "regex" or a `Splitter`."""
        self._core = core
        self.pattern = pattern
        self.special_tokens = dict(special_tokens)
        self._max_rank = max_rank
        self._splitter_choice: SplitterChoice = splitter or "auto"
        # Exactly one of the two is set: the scanner preset code (fused fast path) or a splitter.
        self._scan_code: int | None = None
        self._splitter: Splitter | None = None
        if splitter in (None, "auto", "scanner") and scanner.can_scan(pattern):
            self._scan_code = scanner.preset_code(pattern)
        elif splitter == "scanner":
            raise TokenizerError(
                "the scanner only reproduces the gpt2, cl100k and o200k patterns; "
                "use splitter='regex' for a custom pattern"
            )
        elif splitter in (None, "auto", "regex"):
            self._splitter = RegexSplitter(pattern)
        elif callable(splitter):
            self._splitter = splitter
        else:
            raise TokenizerError(f"unknown splitter {splitter!r}: use 'auto', 'scanner' or 'regex'")
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
        vocab = {b: bytes([b]) for b in range(256)}
        id_of = {token: tid for tid, token in vocab.items()}
        pairs: list[tuple[int, int]] = []
        results: list[int] = []
        for rank, (left, right) in enumerate(merges):
            for part in (left, right):
                if part not in id_of:
                    raise TokenizerError(f"merge {rank}: {part!r} is not a token at that point")
            merged = left + right
            if merged not in id_of:
                id_of[merged] = len(vocab)
                vocab[len(vocab)] = merged
            pairs.append((id_of[left], id_of[right]))
            results.append(id_of[merged])
        specials = _number_specials(special_tokens, len(vocab))
        core = _build_core(vocab, pairs, results, trainer_ids=True)
        return cls(core, _checked_pattern(pattern), specials, len(pairs))

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
        specials = _number_specials(special_tokens, len(vocab))
        core = _build_core(vocab, list(merges), list(results), trainer_ids=True)
        return cls(core, _checked_pattern(pattern), specials, len(core.merges))

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
        results = _check_vocab_merges(vocab, merges, specials)
        core = _build_core(dict(vocab), list(map(tuple, merges)), results, trainer_ids=False)
        return cls(core, _checked_pattern(pattern), specials, len(results))

    @classmethod
    def from_ranks(
        cls, ranks: dict[int, bytes], pattern: str, special_tokens: dict[str, int] | None = None
    ) -> Tokenizer:
        """tiktoken's view (id = rank, no merges listed): the merges are rebuilt from the ranks.

        The merge of the r-th multi-byte token is what BPE leaves of its bytes when only the
        r - 1 earlier tokens may be made; more or fewer than two parts is an inconsistent file.
        """
        specials = dict(special_tokens or {})
        _check_vocab_merges(ranks, [], specials, orphans_ok=True)
        order = [tid for tid in sorted(ranks) if len(ranks[tid]) > 1]
        core = _build_core(dict(ranks), [], order, trainer_ids=False)
        pairs = kernels.recover_merges(np.array(order, dtype=np.int64), core.tables)
        for r, (left, _) in enumerate(pairs.tolist()):
            if left < 0:
                raise TokenizerError(
                    f"token {ranks[order[r]]!r} (rank {order[r]}) is not two earlier tokens merged"
                )
        merges = [(int(a), int(b)) for a, b in pairs.tolist()]
        tables = core.tables
        core = _Core(core.vocab, merges, order, core.tok_rank, core.arrays, False)
        core.__dict__["tables"] = tables  # the same ranks and bytes: share, do not rebuild
        return cls(core, _checked_pattern(pattern), specials, len(merges))

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
            specials = _number_specials(names, 256 + made)
        return Tokenizer(self._core, self.pattern, specials, k, self._splitter_choice)

    def with_splitter(self, splitter: SplitterChoice) -> Tokenizer:
        """The same tokenizer with another pre-tokenizer: "auto", "scanner", "regex" or a
        `Splitter` callable. `t.with_splitter("regex")` forces the regex engine."""
        return Tokenizer(self._core, self.pattern, self.special_tokens, self._max_rank, splitter)

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
        text = _clean_text(text)
        allowed = self._specials_for(text, allowed_special, disallowed_special)
        ids, starts, data_len = self._encode(text, allowed, want_starts=True)
        lengths = self._token_lengths(ids)
        if starts is None:  # the scanner tiles the text, so each token starts where the last ended
            starts = np.cumsum(lengths) - lengths
        ends = starts + lengths
        offsets = char_to_byte(text)
        char_start = np.searchsorted(offsets, starts, side="right") - 1
        char_end = np.searchsorted(offsets, ends, side="left")
        on_start = offsets[char_start] == starts
        on_end = offsets[np.minimum(char_end, len(text))] == ends
        split = ~(on_start & on_end)
        ids_list = ids.tolist()
        self._give_back("out", ids)
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
        table = self._decode_table()
        try:
            return b"".join([table[i] for i in ids])
        except KeyError as exc:
            raise TokenizerError(f"token id {exc.args[0]} is not in this tokenizer") from None

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`; bytes that are not valid UTF-8 become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        """The bytes of each token: `[b"hello", b" world"]` (as tiktoken's method of that name)."""
        table = self._decode_table()
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
        return self._batch(list(texts), num_threads, allowed_special, disallowed_special, True)

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
        return self._batch(list(texts), num_threads, allowed_special, disallowed_special, False)

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
        found = kernels.recover_merges(results, self._core.tables)
        return [None if left < 0 else (int(left), int(right)) for left, right in found.tolist()]

    def export(self, format: str, out: str | os.PathLike[str]) -> list[Path]:
        """Write this tokenizer as `format` (gpt2, hf, tiktoken, minbpe) into folder `out`."""
        from workbench.engine import formats

        return formats.export(self, format, out)

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
        `_RUNS_PER_THREAD` runs a thread when there is more), so a batch of many short texts does
        not pay the pool's cost per text while the runs still balance between threads; an
        exception is the first failing text's. Each thread's piece cache is sized for the whole
        batch, not for one short text: one sized for a 64 KB document fills up and restarts
        several times over a batch of them.
        """
        allowed, refused = self._special_rules(allowed_special, disallowed_special)
        threads = num_threads or os.cpu_count() or 1
        total = sum(map(len, texts))

        def run_of(run: list[str]) -> list:
            for text in run:  # the first refused text of the run raises, before any work
                _refuse(refused, text)
            if self._scan_code is not None:
                self._piece_cache(total)
                return self._encode_run(run, allowed, lists)
            return [
                self._handed_out(self._encode(text, allowed, want_starts=False)[0], lists)
                for text in run
            ]

        target = min(max(total // (_RUNS_PER_THREAD * threads), 1 << 16), _LONGEST_RUN)
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
        if allowed:  # specials split out of each text, as `_segments` does for one
            parts = [utf8(text)[1] for text in run]
            data = b"".join(parts)
            sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
            ends = np.cumsum(sizes)
            rows = [self._segments(part, allowed) for part in parts]
            counts = np.array([len(r[0]) + 1 for r in rows])
            shift = np.repeat(ends - sizes, counts)
            seg_starts = np.concatenate([x for r in rows for x in (r[0], [0])]) + shift
            seg_ends = np.concatenate([x for r in rows for x in (r[1], [0])]) + shift
            seg_ids = np.concatenate([x for r in rows for x in (r[2], [mark])])
            at = np.cumsum(counts) - 1  # the marks: empty, at each text's end
            seg_starts[at] = seg_ends[at] = ends
        else:  # text j is segment 2j, its mark 2j + 1; UTF-8 written without the GIL
            data, sizes = joined_utf8(run, self._text_buffer)
            ends = np.cumsum(sizes)
            seg_starts = np.repeat(ends - sizes, 2)
            seg_starts[1::2] = ends
            seg_ends = np.repeat(ends, 2)
            seg_ids = np.tile(np.array([-1, mark], dtype=np.int64), len(run))
        ids = self._scan_segments(data, seg_starts, seg_ends, seg_ids)
        if not allowed:
            self._give_back("text", data)  # read by the kernel, never again
        ends = np.flatnonzero(ids == mark)
        if lists:  # every list in one pass, straight from the reused buffer
            starts = np.concatenate((np.zeros(1, np.int64), ends[:-1] + 1))
            found = self._core.ready_ints.lists(ids, starts, ends)
            self._give_back("out", ids)
            return found
        cuts = ends.tolist()
        kept = ids.copy()  # out of the reused buffer, once for the run
        self._give_back("out", ids)
        return [kept[a + 1 : b] for a, b in zip([-1, *cuts], cuts, strict=False)]

    @functools.cached_property
    def _end_mark(self) -> int:
        """An id that is neither an ordinary token's nor a special's (`_encode_run`)."""
        taken = set(self.special_tokens.values())
        size = self._core.id_bound
        return next(tid for tid in range(size, size + len(taken) + 1) if tid not in taken)

    def _decode_table(self) -> dict[int, bytes]:
        if self._decoder is None:
            table = dict(self.vocab)
            table.update((tid, name.encode()) for name, tid in self.special_tokens.items())
            self._decoder = table
        return self._decoder

    def _token_lengths(self, ids: np.ndarray) -> np.ndarray:
        tok_off = self._core.arrays[1]
        inside = ids < self._core.id_bound
        safe = np.where(inside, ids, 0)
        lengths = np.where(inside, tok_off[safe + 1] - tok_off[safe], 0)
        for name, tid in self.special_tokens.items():
            lengths[ids == tid] = len(name.encode())
        return lengths

    def _names(self, chosen: AllowedSpecial | DisallowedSpecial, what: str) -> tuple[str, ...]:
        if chosen == "all":
            return tuple(self.special_tokens)
        if chosen == "none":
            return ()
        if isinstance(chosen, str):
            raise TokenizerError(f"{what} must be 'all' or a set of special tokens, not {chosen!r}")
        unknown = set(chosen) - set(self.special_tokens)
        if unknown:
            raise TokenizerError(f"not special tokens of this tokenizer: {sorted(unknown)}")
        return tuple(dict.fromkeys(chosen))

    def _specials_for(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[str, ...]:
        """The specials to split out of `text`; raises if it holds a disallowed one."""
        allowed, refused = self._special_rules(allowed_special, disallowed_special)
        _refuse(refused, text)
        return allowed

    def _special_rules(
        self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[tuple[str, ...], regex.Pattern | None]:
        """(the specials to split out, a matcher of the refused ones or None)."""
        allowed = self._names(allowed_special, "allowed_special")
        if allowed_special == "none":  # the older spelling of encode_ordinary
            return (), None
        if disallowed_special == "all":
            disallowed = tuple(t for t in self.special_tokens if t not in set(allowed))
        else:
            disallowed = self._names(disallowed_special, "disallowed_special")
        return allowed, specials_regex(tuple(sorted(disallowed))) if disallowed else None

    def _encode(
        self, text: str, allowed: tuple[str, ...], want_starts: bool
    ) -> tuple[np.ndarray, np.ndarray | None, int]:
        """(ids, each token's byte start or None when tokens tile the bytes, byte length).

        `allowed`: the specials split out as their ids. The ids may be a view of this thread's
        taken output buffer: convert or copy them, then `_give_back("out", ids)`.
        """
        text, data = utf8(text)
        if self._scan_code is not None:
            return self._encode_scanned(data, allowed), None, len(data)
        data, starts, ends, special_ids = self._pieces(text, allowed, data)
        buf = np.frombuffer(data, dtype=np.uint8)
        out_ids = np.empty(len(data) + 1, dtype=np.int32)
        out_starts = np.empty(len(data) + 1 if want_starts else 0, dtype=np.int64)
        count = kernels.encode_pieces(
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

    def _encode_scanned(self, data: bytes, specials: tuple[str, ...]) -> np.ndarray:
        """The fast path: segments around the special tokens, then one kernel call."""
        return self._scan_segments(data, *self._segments(data, specials))

    def _scan_segments(
        self,
        data: bytes | np.ndarray,
        seg_starts: np.ndarray,
        seg_ends: np.ndarray,
        seg_ids: np.ndarray,
    ) -> np.ndarray:
        """The ids of `data`'s segments (a special's id, or ordinary text when -1): a view of
        this thread's output buffer, taken until the caller gives it back (`_out_buffer`)."""
        flags, fold_cps, fold_letters = scanner.kernel_tables()
        out_ids = self._out_buffer(len(data) + len(seg_ids) + 1)  # a segment may be empty
        text = np.frombuffer(data, dtype=np.uint8)
        # Read-only whatever `data` is (bytes from `encode`, encode_batch's reused buffer): a
        # writable array is another type to Numba, a second compilation of the whole encoder
        # (5 s of CPU a preset) that the warm-up, which encodes bytes, does not make.
        text.flags.writeable = False
        count = kernels.ENCODE_SCANNED[self._scan_code](
            text,
            seg_starts,
            seg_ends,
            seg_ids,
            flags,
            fold_cps,
            fold_letters,
            np.int32(self._max_rank),
            self._core.tables,
            self._piece_cache(len(data)),
            out_ids,
        )
        return out_ids[:count]

    def _out_buffer(self, size: int) -> np.ndarray:
        """Room for `size` ids: this thread's buffer, taken until `_give_back` (callers convert
        or copy the ids first), for texts up to _REUSED_OUT ids."""
        return self._taken("out", size)

    def _text_buffer(self, size: int) -> np.ndarray:
        """Room for `size` bytes of text: this thread's buffer, taken likewise (the bytes are
        read by one kernel call and never handed out)."""
        return self._taken("text", size)

    def _taken(self, name: str, size: int) -> np.ndarray:
        """This thread's buffer `name` of at least `size` items, out of the thread's keeping
        until `_give_back` (up to its limit in `_REUSED`; a larger one is made for the call
        alone).

        A fresh megabyte buffer a call is mapped and unmapped by the system each time, and
        unmapping stops every thread of the process (TLB shootdown): `encode_batch` would
        serialise on it. Larger texts get their own buffer (pages never written cost nothing).
        Taken, not lent: an encode nested in this one on the same thread (a finalizer run by
        the garbage collector at an allocation) finds no buffer and makes its own, instead of
        overwriting text or ids this call has not read yet. A call that fails gives nothing
        back; the next one makes a new buffer.
        """
        dtype, least, limit = _REUSED[name]
        if size > limit:
            return np.empty(size, dtype=dtype)
        buffer = self._local.__dict__.pop(name, None)
        if buffer is None or buffer.shape[0] < size:
            buffer = np.empty(max(size, least), dtype=dtype)
        return buffer

    def _handed_out(self, ids: np.ndarray, lists: bool) -> list[int] | np.ndarray:
        """`ids` (`_encode`'s, maybe a view of the taken output buffer) as a list, straight from
        the view, or as an array of their own (the caller does not keep the worst-case buffer,
        one id a byte, alive); the buffer is then given back."""
        found = self._core.ready_ints.one_list(ids) if lists else ids.copy()
        self._give_back("out", ids)
        return found

    def _give_back(self, name: str, used: np.ndarray) -> None:
        """Keep the buffer behind `used` (a `_taken` buffer or a view of one: int32 ids or
        uint8 text) for this thread's next call, once nothing reads it any more. A buffer made
        for one call (over the limit, or the regex path's own) is kept only if it is small
        enough to have been taken."""
        buffer = used if used.base is None else used.base
        if buffer.shape[0] <= _REUSED[name][2]:
            setattr(self._local, name, buffer)

    def _piece_cache(self, size: int) -> tuple:
        """This thread's piece cache, grown (afresh) when a larger text wants more rows."""
        bits = _cache_bits(size)
        cache = getattr(self._local, "piece_cache", None)
        if cache is None or cache[0].shape[0] < 1 << bits:
            cache = kernels.new_piece_cache(bits)
            self._local.piece_cache = cache
        return cache

    def _segments(
        self, data: bytes, specials: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, ends, ids) covering `data`: a special token (its id) or ordinary text (-1)."""
        matcher = specials_bytes_regex(tuple(sorted(specials))) if specials else None
        rows: list[tuple[int, int, int]] = []
        position = 0
        if matcher is not None:
            id_of = {name.encode("utf-8"): self.special_tokens[name] for name in specials}
            for match in matcher.finditer(data):
                if match.start() > position:
                    rows.append((position, match.start(), -1))
                rows.append((match.start(), match.end(), id_of[match.group()]))
                position = match.end()
        if position < len(data):
            rows.append((position, len(data), -1))
        table = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()

    def _pieces(
        self, text: str, specials: tuple[str, ...], data: bytes
    ) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
        """Bytes of `text` (given as `data`) and its pieces (byte spans); specials are pieces
        with their id."""
        assert self._splitter is not None
        matcher = specials_regex(tuple(sorted(specials))) if specials else None
        found = list(matcher.finditer(text)) if matcher is not None else []
        if not found:
            starts, ends = self._splitter(text, data)
            return data, starts, ends, np.full(len(starts), -1, dtype=np.int32)
        splitter = self._splitter
        chunks: list[bytes] = []
        spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        offset = 0
        position = 0

        def ordinary(segment: str) -> None:
            nonlocal offset
            if not segment:
                return
            seg_data = segment.encode("utf-8")
            s, e = splitter(segment, seg_data)
            spans.append((s + offset, e + offset, np.full(len(s), -1, dtype=np.int32)))
            chunks.append(seg_data)
            offset += len(seg_data)

        for match in found:
            ordinary(text[position : match.start()])
            raw = match.group().encode("utf-8")
            one = np.array([offset], dtype=np.int64)
            tid = np.array([self.special_tokens[match.group()]], dtype=np.int32)
            spans.append((one, one + len(raw), tid))
            chunks.append(raw)
            offset += len(raw)
            position = match.end()
        ordinary(text[position:])
        starts = np.concatenate([s for s, _, _ in spans]).astype(np.int64)
        ends = np.concatenate([e for _, e, _ in spans]).astype(np.int64)
        special_ids = np.concatenate([t for _, _, t in spans])
        return b"".join(chunks), starts, ends, special_ids


class DisallowedSpecialError(TokenizerError, ValueError):
    """The text holds a special token that was not allowed (tiktoken raises ValueError too)."""

    def __init__(self, token: str, position: int) -> None:
        self.token = token
        self.position = position
        super().__init__(
            f"the text contains the special token {token!r} (at character {position}); pass"
            f" allowed_special={{{token!r}}} (or 'all') to encode it as that special token, or"
            " disallowed_special=() to encode it as ordinary text"
        )


def _refuse(refused: regex.Pattern | None, text: str) -> None:
    """Raise `DisallowedSpecialError` for the first refused special in `text`, if any."""
    # `concurrent`: the GIL is released while it looks (encode_batch's threads go on meanwhile)
    found = refused.search(text, concurrent=True) if refused is not None else None
    if found is not None:
        raise DisallowedSpecialError(found.group(), found.start())


def check_specials(specials: dict[str, int]) -> None:
    """Names are non-empty strings, ids valid and distinct (`ids.check_id`).

    An empty special would match at every position; an id past 32 bits would be cut short.
    """
    owner: dict[int, str] = {}
    for name, tid in specials.items():
        if not isinstance(name, str):
            raise TokenizerError(f"special token {name!r} is not a string")
        if not name:
            raise TokenizerError("a special token cannot be empty")
        check_id(tid, f"special token {name!r}")
        if tid in owner:
            raise TokenizerError(f"special tokens {owner[tid]!r} and {name!r} share id {tid}")
        owner[tid] = name


def _checked_pattern(pattern: str) -> str:
    resolved = resolve(pattern)
    compile_pattern(resolved)
    return resolved


def _number_specials(names: Sequence[str], first_id: int) -> dict[str, int]:
    specials: dict[str, int] = {}
    for name in names:
        if not name:
            raise TokenizerError("a special token cannot be empty")
        if name in specials:
            raise TokenizerError(f"special token {name!r} is listed twice")
        specials[name] = first_id + len(specials)
    return specials


def _check_vocab_merges(
    vocab: dict[int, bytes],
    merges: Sequence[tuple[int, int]],
    specials: dict[str, int],
    orphans_ok: bool = False,
) -> list[int]:
    """The id each merge makes; raises TokenizerError naming the first inconsistency.

    `orphans_ok` skips the "every token is made by a merge" check (ranks-only files).
    """
    check_specials(specials)
    id_of: dict[bytes, int] = {}
    for tid, token in vocab.items():
        if not isinstance(token, bytes):
            raise TokenizerError(f"token {token!r} is not bytes")
        check_id(tid, f"token {token[:40]!r}")
        if not token:
            raise TokenizerError(f"token id {tid} is empty")
        if token in id_of:
            raise TokenizerError(f"ids {id_of[token]} and {tid} are the same bytes {token!r}")
        id_of[token] = tid
    for b in range(256):
        if bytes([b]) not in id_of:
            raise TokenizerError(f"the single byte 0x{b:02X} is missing from the vocabulary")
    check_dense(vocab, len(vocab))
    made = {tid for token, tid in id_of.items() if len(token) == 1}
    results: list[int] = []
    seen: set[tuple[int, int]] = set()
    for rank, merge in enumerate(merges):
        if not isinstance(merge, tuple | list) or len(merge) != 2:
            raise TokenizerError(f"merge {rank} is not a pair of ids: {merge!r}")
        left, right = merge
        if (left, right) in seen:
            raise TokenizerError(f"merge {rank} ({left}, {right}) is listed twice")
        seen.add((left, right))
        for part in (left, right):
            if isinstance(part, bool) or not isinstance(part, int):
                raise TokenizerError(f"merge {rank}: {part!r} is not a token id")
            if part not in vocab:
                raise TokenizerError(f"merge {rank}: token id {part} is not in the vocabulary")
            if part not in made:
                raise TokenizerError(
                    f"merge {rank}: token {vocab[part]!r} is used before any merge makes it"
                )
        merged = vocab[left] + vocab[right]
        if merged not in id_of:
            raise TokenizerError(f"merge {rank}: the result {merged!r} is not in the vocabulary")
        results.append(id_of[merged])
        made.add(id_of[merged])
    for tid, token in vocab.items():
        if tid not in made and not orphans_ok:
            raise TokenizerError(f"token id {tid} ({token!r}) is not a byte and no merge makes it")
    for name, tid in specials.items():
        if tid in vocab:
            raise TokenizerError(f"special token {name!r} has id {tid}, already a token's id")
    if len(set(specials.values())) != len(specials):
        raise TokenizerError("two special tokens share an id")
    return results
