"""The BPE trainer: owns the merge loop's state and hands out batches of merges.

    trainer = BpeTrainer(words, TrainConfig(vocab_size=1000))
    for batch in trainer.batches():      # stop iterating at any batch boundary ...
        show(batch)
    trainer.batches(target_vocab_size=2000)  # ... and continue later, exactly where it stopped

Training in pieces gives the same merges as training straight through: the state lives here
between calls and the kernel is deterministic. Ids 0-255 are the bytes; each merge whose bytes
are new takes the next id; the special tokens come after all merged tokens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from workbench.engine._native.memory import give_back_freed_memory
from workbench.engine.byte_mapping import hf_byte_order
from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train import _kernels as k
from workbench.engine.train import _state as st
from workbench.engine.train._long import mark_long_words, new_cache
from workbench.engine.train.char_count import utf8_chars
from workbench.engine.train.start_vocab import StartVocab

STOP_REASONS = {
    st.VOCAB_REACHED: "vocab_size",
    st.NO_PAIRS: "no_pairs",
    st.BELOW_MIN_FREQUENCY: "min_frequency",
}
# Pairs are left, but every one would make a token over the configured max_token_length (or
# max_token_chars).
CAPPED = "max_token_length"
NO_CAP = np.iinfo(np.int64).max

# Ties are counted up to this many (a figure of TIE_LIMIT reads "that many or more"): counting
# them all costs as much as the merge itself late in training, when thousands of pairs tie.
TIE_LIMIT = 100

# Starting capacity (rows) of the pair tables and the heap; everything doubles on demand, so
# this only saves early regrowth.
START_ROWS = 1 << 14


def chars_capped_pairs_left(state: st.TrainState, cap: int) -> bool:
    """Whether the state has a pair with count whose token would hold more than `cap`
    characters (as `char_count` counts them)."""
    pairs = state.pr[: int(state.scal[st.S_NPAIRS])]
    keys = pairs[pairs[:, st.P_CNT] > 0, st.P_KEY]
    tok_len = state.tok_len
    lengths = tok_len[keys >> 32].astype(np.int64) + tok_len[keys & 0xFFFFFFFF]

    def token(t: int) -> bytes:
        start = int(state.tok_off[t])
        return state.arena[start : start + int(state.tok_len[t])].tobytes()

    # Characters are never more than bytes: only pairs over the cap in bytes may be over it.
    return any(
        utf8_chars(token(key >> 32) + token(key & 0xFFFFFFFF)) > cap
        for key in keys[lengths > cap].tolist()
    )


def _padded(values: np.ndarray, size: int, dtype: type) -> np.ndarray:
    """`values` at the start of a zeroed array of `size` items."""
    out = np.zeros(size, dtype=dtype)
    out[: values.size] = values
    return out


def capped_pairs_left(state: st.TrainState, cap: int) -> bool:
    """Whether the state has a pair with count whose token would be longer than `cap` bytes."""
    pairs = state.pr[: int(state.scal[st.S_NPAIRS])]
    keys = pairs[pairs[:, st.P_CNT] > 0, st.P_KEY]
    lengths = state.tok_len[keys >> 32].astype(np.int64) + state.tok_len[keys & 0xFFFFFFFF]
    return bool((lengths > cap).any())


class BpeTrainer:
    """Byte-level BPE over a word table, in the tie-break mode of `config`."""

    def __init__(
        self,
        words: WordTable | StartVocab,
        config: TrainConfig,
        tie_limit: int = TIE_LIMIT,
        start_rows: int = START_ROWS,
        max_words: int = 0,
        held_out: bool = False,
    ) -> None:
        """`words`: the word table, or a `StartVocab` (words as ids of a starting vocabulary,
        to extend a tokenizer or go on from SuperBPE's stage 1). `start_rows`: first capacity
        of the pair tables and the heap (rounded up to a power of two); the same merges whatever
        it is (small ones make tests regrow them). `max_words` > 0: SuperBPE's stage-2 rules,
        with at most this many words a token (`stages`); pairs they refuse are never merged.
        `held_out`: words only merged into from outside (`_given_merges.apply_merge`: the
        held-out parts of parity-aware BPE): no heap, only the token total is read."""
        if start_rows < 1:
            raise ValueError(f"start_rows must be at least 1, not {start_rows}")
        if max_words < 0:
            raise ValueError(f"max_words must be at least 0, not {max_words}")
        self.config = config
        self.mode = st.HF if config.tie_break == "hf" else st.LEX
        self.tie_limit = tie_limit
        start = words if isinstance(words, StartVocab) else None
        # A start's merges (SuperBPE's stage 1) are reported as this trainer's first ones.
        self.merges: list[tuple[int, int]] = list(start.merges) if start else []
        self.merge_ids: list[int] = list(start.merge_ids) if start else []
        self.vocab: list[bytes] = list(start.tokens) if start else [bytes([b]) for b in range(256)]
        self.stop_reason: str | None = None
        self.kernel_seconds = 0.0
        self._batch_size = 1
        self._init_state(words, 1 << (start_rows - 1).bit_length(), max_words, held_out)

    # -- state ---------------------------------------------------------------------------------

    def _init_state(
        self, words: WordTable | StartVocab, pairs: int, max_words: int, held_out: bool = False
    ) -> None:
        lengths = np.diff(words.offsets)
        wrec = np.zeros((lengths.size, 4), dtype=np.int64)  # (offset, length, count, long)
        wrec[:, st.W_OFF] = words.offsets[:-1]
        wrec[:, st.W_LEN] = lengths
        wrec[:, st.W_COUNT] = words.counts
        symbols = int(lengths.sum())
        # Long words' positions are int32 `wsym` indices (see `_long`): past 2^31 symbols every
        # word takes the walk (slower on one huge word, the same merges).
        long_word = st.LONG_WORD if symbols < 1 << 31 else symbols + 1
        wrec[:, st.W_LONG], longs = mark_long_words(lengths, long_word)

        scal = np.zeros(st.N_SCAL, dtype=np.int64)
        if isinstance(words, StartVocab):  # the starting vocabulary's tokens, filed as merged
            tok_off, tok_len, tok_hash, arena = words.token_arrays()
            wsym = words.symbols
        else:  # each byte is its own token id; h(single byte b) = b + 1
            tok_off, tok_len = np.arange(256, dtype=np.int64), np.ones(256, dtype=np.int64)
            tok_hash, arena = np.arange(1, 257, dtype=np.int64), np.arange(256, dtype=np.uint8)
            wsym = words.data.astype(np.int32)
        ntok = tok_off.size
        room = max(1024, 1 << ntok.bit_length())  # the token arrays double from here
        scal[st.S_NTOK] = ntok
        scal[st.S_ARENA] = arena.size
        scal[st.S_FREE] = -1
        scal[st.S_PFREE] = -1
        scal[st.S_LONG] = longs > 0
        scal[st.S_TOKENS] = int((lengths * words.counts).sum())
        # 0 for held-out words: no pair is pushed (`_given_merges` reads it as "keep no heap")
        scal[st.S_MAXLEN] = 0 if held_out else self.config.max_token_length or NO_CAP
        scal[st.S_MAXWORDS] = max_words  # read as the pairs are first pushed: fixed from here
        scal[st.S_MAXCHARS] = self.config.max_token_chars or NO_CAP
        state = st.TrainState(
            wsym=wsym,
            wrec=wrec,
            tok_off=_padded(tok_off, room, np.int64),
            tok_len=_padded(tok_len, room, np.int32),
            tok_hash=_padded(tok_hash, room, np.int64),
            tok_key=np.zeros(room, dtype=np.int64),
            arena=_padded(arena, max(64 * 1024, 2 * arena.size), np.uint8),
            tt=np.full(4 * room, -1, dtype=np.int32),  # at most half full (see run_merges)
            pr=np.empty((pairs, 4), dtype=np.int64),
            tie_stamp=np.full(pairs, -1, dtype=np.int32),
            ph=np.full((2 * pairs, 2), -1, dtype=np.int32),
            lst=np.empty((pairs, 4), dtype=np.int32),
            # Every word-pair occurrence may need a block slot; a sixth of the symbols is a start
            # (not counting long words': a word is listed once per pair, however often it holds it).
            blk=np.empty((max((symbols - longs) // st.BLOCK, pairs), 2 + st.BLOCK), np.int32),
            hp=np.empty((pairs, 4), dtype=np.int64),
            touched=np.zeros(pairs + 1, dtype=np.int32),
            tie_stack=np.empty(st.TIE_STACK, dtype=np.int64),
            scal=scal,
            hf_order=np.array(hf_byte_order(), dtype=np.int64),
            lcache=new_cache() if longs else None,  # None: the long-word code is not compiled
            # Position lists only with long words: no bytes per pair otherwise.
            pp=np.full((pairs if longs else 0, 2), -1, dtype=np.int32),
            # Room for every symbol's position, a part-filled block per pair and the span the
            # index checks for: no regrowth while indexing.
            pblk=np.empty(
                (longs // st.PBLOCK + pairs + st.SPAN if longs else 0, 2 + st.PBLOCK), np.int32
            ),
            scr=np.empty(1024, dtype=np.int64) if longs else None,
        )
        self.state: st.TrainState | None = k.init_pairs(state, self.mode)
        if held_out:  # the index grew the heap's rows for pairs it never pushed
            self.state = self.state._replace(hp=np.empty((16, 4), dtype=np.int64))
        give_back_freed_memory()  # what the index's growing tables left behind
        self._scal = self.state.scal

    def state_bytes(self) -> dict[str, int]:
        """Bytes held by each state array (capacity, not use): for memory reports."""
        if self.state is None:
            return {}
        arrays = self.state._asdict().items()
        return {name: array.nbytes for name, array in arrays if array is not None}

    def release(self) -> None:
        """Free the merge loop's arrays (most of the trainer's memory) when no more merges will
        be made, before writing files: the merges, the vocabulary and the figures stay, and
        `step` refuses from then on."""
        self.state = None  # `_scal` keeps the figures

    # -- what it has made ----------------------------------------------------------------------

    @property
    def max_words(self) -> int:
        """SuperBPE's stage-2 word limit a token (0: no stage-2 rules), as set at the start."""
        return int(self._scal[st.S_MAXWORDS])

    @property
    def n_merges(self) -> int:
        return len(self.merges)

    @property
    def n_tokens(self) -> int:
        """Distinct tokens: 256 bytes + merged tokens (no specials)."""
        return int(self._scal[st.S_NTOK])

    @property
    def vocab_size(self) -> int:
        """Tokens including the special tokens, as `--vocab-size` counts them."""
        return self.n_tokens + len(self.config.special_tokens)

    @property
    def corpus_tokens(self) -> int:
        """Tokens the training corpus takes with the merges so far (specials not counted)."""
        return int(self._scal[st.S_TOKENS])

    @property
    def special_ids(self) -> dict[str, int]:
        return {s: self.n_tokens + i for i, s in enumerate(self.config.special_tokens)}

    def merge_pairs(self) -> list[tuple[bytes, bytes]]:
        """The merges as byte pairs, in rank order."""
        return [(self.vocab[a], self.vocab[b]) for a, b in self.merges]

    def vocab_bytes(self) -> dict[int, bytes]:
        """id -> bytes for every token, special tokens included."""
        vocab = dict(enumerate(self.vocab))
        for token, i in self.special_ids.items():
            vocab[i] = token.encode("utf-8")
        return vocab

    @property
    def done(self) -> bool:
        """Whether training reached the configured vocab size or can go no further."""
        return self.stop_reason in ("no_pairs", "min_frequency", CAPPED) or (
            self.vocab_size >= self.config.vocab_size
        )

    # -- training ------------------------------------------------------------------------------

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        """Make up to n more merges (fewer if training ends) and return them as one batch."""
        if self.state is None:
            raise WorkbenchError("this trainer was released: it makes no more merges")
        target = self.config.vocab_size if target_vocab_size is None else target_vocab_size
        target_tokens = target - len(self.config.special_tokens)
        n = max(int(n), 0)
        events = st.MergeEvents(
            left=np.empty(n, dtype=np.int32),
            right=np.empty(n, dtype=np.int32),
            new=np.empty(n, dtype=np.int32),
            count=np.empty(n, dtype=np.int64),
            is_new=np.empty(n, dtype=np.bool_),
            ties=np.empty(n, dtype=np.int64),
            tokens=np.empty(n, dtype=np.int64),
            runner_up=np.empty(n, dtype=np.int64),
        )
        start = time.perf_counter()
        done = 0
        while True:
            rows = events if done == 0 else st.MergeEvents(*(a[done:] for a in events))
            status, made, self.state = k.run_merges(
                self.state, rows, n - done, target_tokens, self.config.min_frequency, self.mode,
                self.tie_limit,
            )  # fmt: skip
            done += int(made)
            if status != st.TABLES_GREW:
                break
            # The tables' old copies are free now; glibc keeps most of them resident (a 1 GB
            # run's peak held 40 MB of them) unless asked.
            give_back_freed_memory()
        seconds = time.perf_counter() - start
        self.kernel_seconds += seconds
        self.stop_reason = STOP_REASONS.get(int(status))
        if self.stop_reason == "no_pairs" and (
            self._capped_pairs_left() or self._chars_capped_pairs_left()
        ):
            self.stop_reason = CAPPED

        start_rank = len(self.merges)
        # Whole batches through tolist(): per-merge numpy scalars cost a tenth of the loop.
        lefts = events.left[:done].tolist()
        rights = events.right[:done].tolist()
        news = events.new[:done].tolist()
        first = len(self.vocab)
        fresh = int(np.count_nonzero(events.is_new[:done]))
        if fresh:  # the batch's new tokens took the next ids and the next bytes of the arena
            offsets = self.state.tok_off[first : first + fresh].tolist()
            lengths = self.state.tok_len[first : first + fresh].tolist()
            base = offsets[0]
            blob = self.state.arena[base : offsets[-1] + lengths[-1]].tobytes()
            self.vocab.extend(
                blob[o - base : o - base + n] for o, n in zip(offsets, lengths, strict=True)
            )
        tokens = [self.vocab[new] for new in news]
        self.merges.extend(zip(lefts, rights, strict=True))
        self.merge_ids.extend(news)
        return MergeBatch(
            start_rank=start_rank,
            left=events.left[:done],
            right=events.right[:done],
            new_id=events.new[:done],
            count=events.count[:done],
            is_new=events.is_new[:done],
            ties=events.ties[:done],
            corpus_tokens=events.tokens[:done],
            tokens=tuple(tokens),
            vocab_size=self.vocab_size,
            seconds=seconds,
            runner_up=events.runner_up[:done],
        )

    def batches(
        self,
        target_vocab_size: int | None = None,
        max_merges: int | None = None,
        batch_seconds: float | None = 0.05,
    ) -> Iterator[MergeBatch]:
        """Merge until the target vocab size (default: the config's), `max_merges` more merges,
        or the end, yielding a batch about every `batch_seconds` of kernel time (None: one
        batch). Stopping the iteration between batches loses nothing."""
        made = 0
        while max_merges is None or made < max_merges:
            if batch_seconds is None:
                # Each merge adds at most one token; merges that reuse bytes need a few more.
                target = self.config.vocab_size if target_vocab_size is None else target_vocab_size
                n = max(target - self.vocab_size, 0) + 64
                if max_merges is not None:
                    n = min(n, max_merges - made)
            else:
                n = self._batch_size
                if max_merges is not None:
                    n = min(n, max_merges - made)
            batch = self.step(n, target_vocab_size)
            made += len(batch)
            if batch_seconds is not None:
                self._adapt_batch_size(len(batch), batch.seconds, batch_seconds)
            if len(batch):
                yield batch
            if self.stop_reason is not None:
                return

    def _capped_pairs_left(self) -> bool:
        """Whether a pair with count is left that only the max token length keeps from merging
        (read once, when training ends: so the stop reason says why)."""
        if not self.config.max_token_length or self.state is None:
            return False
        return capped_pairs_left(self.state, self.config.max_token_length)

    def _chars_capped_pairs_left(self) -> bool:
        """The same for the max token length in characters."""
        cap = self.config.max_token_chars
        if not cap or self.state is None:
            return False
        return chars_capped_pairs_left(self.state, cap)

    def _adapt_batch_size(self, made: int, seconds: float, wanted: float) -> None:
        """Aim the next batch at `wanted` seconds: merges get cheaper as counts fall."""
        if made == 0:
            return
        rate = made / max(seconds, 1e-6)
        self._batch_size = int(min(max(rate * wanted, 1), 2 * self._batch_size + 16))

    def run(self, target_vocab_size: int | None = None) -> None:
        """Train to the target (or the end) in one go."""
        for _ in self.batches(target_vocab_size, batch_seconds=None):
            pass
