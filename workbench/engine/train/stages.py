"""Training in stages: a trainer that starts from a vocabulary, and SuperBPE built on it.

SuperBPE (Liu et al., 2025; the rules and their sources: `patterns.superbpe`):

    trainer = SuperBpeTrainer(words, stage2_words, config)   # config.superbpe_transition = t
    for batch in trainer.batches(): ...                      # as a BpeTrainer's

Stage 1 is an ordinary `BpeTrainer` over the run's word table up to the transition vocab size
t. Then each stage-2 piece (counted with `patterns.superbpe.STAGE2_PATTERN`) is encoded with
stage 1's merges, as the authors' code applies the inherited merges to the stage-2 words, and
a trainer started from those id sequences and stage 1's vocabulary (`trainer_from_ids`) makes
the rest, passing over merges the stage-2 rules refuse. Merge ranks and ids go on from stage 1's:
the first stage-2 merge makes token id t (less the specials), as if one trainer had made all.

One difference from the authors' code, on purpose: their trainer leaves out an inherited merge
whose pair no stage-2 word holds; here every stage-1 merge is kept, so stage 1's ids stay valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from workbench.engine._native.memory import give_back_freed_memory
from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.patterns.regexes import NO_SPLIT
from workbench.engine.patterns.superbpe import MAX_WORDS
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train import _kernels as k
from workbench.engine.train import _state as st
from workbench.engine.train._long import mark_long_words, new_cache
from workbench.engine.train.trainer import NO_CAP, START_ROWS, TIE_LIMIT, BpeTrainer


def encode_pieces(
    words: WordTable, tokens: Sequence[bytes], merges: Sequence[tuple[int, int]],
    results: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each word's bytes as token ids under the merges (ranked BPE, which makes what applying
    the merges one after another to the word makes). Returns (ids int32, offsets int64)."""
    from workbench.engine.encode.tokenizer import Tokenizer  # encode loads its kernels here

    tokenizer = Tokenizer.from_trainer(tokens, merges, results, NO_SPLIT)
    data = words.data.tobytes()
    offsets = words.offsets.tolist()
    texts = [data[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(words))]
    with tokenizer:
        arrays = tokenizer.encode_batch_arrays(texts)
    del texts
    lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
    out_offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    ids = np.concatenate(arrays).astype(np.int32) if arrays else np.zeros(0, np.int32)
    return ids, out_offsets


# -- a trainer that starts from a vocabulary ----------------------------------------------------


def _rolling_hash(token: bytes) -> int:
    """The trainer's hash of a token's bytes (`_state.HASH_BASE`, wrapping at 64 bits):
    h(b) = b + 1 for one byte, h(x + y) = h(x) * BASE^len(y) + h(y)."""
    h = 0
    for b in token:
        h = (h * st.HASH_BASE + b + 1) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >= 1 << 63 else h


def trainer_from_ids(
    ids: np.ndarray,
    offsets: np.ndarray,
    counts: np.ndarray,
    vocab: Sequence[bytes],
    merges: Sequence[tuple[int, int]],
    merge_ids: Sequence[int],
    config: TrainConfig,
    tie_limit: int = TIE_LIMIT,
) -> BpeTrainer:
    """A BpeTrainer whose words are already the token ids `ids[offsets[i]:offsets[i + 1]]`
    (word i occurring counts[i] times) over the tokens `vocab` (ids 0-255 the bytes, then
    distinct merged tokens), made by `merges` (their results `merge_ids`), which it reports as
    its own first merges. Its next merge takes rank len(merges) and, if new, id len(vocab)."""
    if any(vocab[b] != bytes([b]) for b in range(256)):
        raise WorkbenchError("a starting vocabulary begins with the 256 single bytes")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= len(vocab)):
        raise WorkbenchError("a starting word holds an id outside the vocabulary")
    if len(merges) != len(merge_ids):
        raise WorkbenchError("a starting vocabulary needs each merge's result")
    # A BpeTrainer around a state made here rather than by its __init__ (which starts from the
    # bytes): the attributes its __init__ sets, the same way.
    trainer = BpeTrainer.__new__(BpeTrainer)
    trainer.config = config
    trainer.mode = st.HF if config.tie_break == "hf" else st.LEX
    trainer.tie_limit = tie_limit
    trainer.merges = list(merges)
    trainer.merge_ids = list(merge_ids)
    trainer.vocab = list(vocab)
    trainer.stop_reason = None
    trainer.kernel_seconds = 0.0
    trainer._batch_size = 1  # noqa: SLF001 (as __init__ sets it)
    trainer.max_words = 0

    lengths = np.diff(offsets)
    wrec = np.zeros((lengths.size, 4), dtype=np.int64)
    wrec[:, st.W_OFF] = offsets[:-1]
    wrec[:, st.W_LEN] = lengths
    wrec[:, st.W_COUNT] = counts
    symbols = int(lengths.sum())
    long_word = st.LONG_WORD if symbols < 1 << 31 else symbols + 1
    wrec[:, st.W_LONG], longs = mark_long_words(lengths, long_word)

    ntok = len(vocab)
    tok_len = np.array([len(t) for t in vocab], dtype=np.int32)
    tok_off = np.zeros(ntok, dtype=np.int64)
    np.cumsum(tok_len[:-1], out=tok_off[1:])
    blob = b"".join(vocab)
    arena = np.zeros(max(64 * 1024, 2 * len(blob)), dtype=np.uint8)
    arena[: len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    tok_hash = np.array([_rolling_hash(t) for t in vocab], dtype=np.int64)
    room = max(1024, 2 * ntok)
    pairs = 1 << (START_ROWS - 1).bit_length()
    scal = np.zeros(st.N_SCAL, dtype=np.int64)
    scal[st.S_NTOK] = ntok
    scal[st.S_MAXLEN] = config.max_token_length or NO_CAP  # 0 in the config: no cap
    scal[st.S_ARENA] = len(blob)
    scal[st.S_FREE] = -1
    scal[st.S_PFREE] = -1
    scal[st.S_LONG] = longs > 0
    scal[st.S_TOKENS] = int((lengths * counts).sum())
    state = st.TrainState(
        wsym=np.ascontiguousarray(ids, dtype=np.int32),
        wrec=wrec,
        tok_off=_padded(tok_off, room),
        tok_len=_padded(tok_len, room),
        tok_hash=_padded(tok_hash, room),
        tok_key=np.zeros(room, dtype=np.int64),
        arena=arena,
        # A power of two at least twice the tokens, as `run_merges` keeps it.
        tt=np.full(1 << max(12, (2 * ntok - 1).bit_length()), -1, dtype=np.int32),
        pr=np.empty((pairs, 4), dtype=np.int64),
        tie_stamp=np.full(pairs, -1, dtype=np.int32),
        ph=np.full((2 * pairs, 2), -1, dtype=np.int32),
        lst=np.empty((pairs, 4), dtype=np.int32),
        blk=np.empty((max((symbols - longs) // st.BLOCK, pairs), 2 + st.BLOCK), np.int32),
        hp=np.empty((pairs, 4), dtype=np.int64),
        touched=np.zeros(pairs + 1, dtype=np.int32),
        tie_stack=np.empty(st.TIE_STACK, dtype=np.int64),
        scal=scal,
        hf_order=np.array(_hf_order(), dtype=np.int64),
        lcache=new_cache() if longs else None,
        pp=np.full((pairs if longs else 0, 2), -1, dtype=np.int32),
        pblk=np.empty(
            (longs // st.PBLOCK + pairs + st.SPAN if longs else 0, 2 + st.PBLOCK), np.int32
        ),
        scr=np.empty(1024, dtype=np.int64) if longs else None,
    )
    trainer.state = k.init_pairs(state, trainer.mode)
    give_back_freed_memory()
    trainer._scal = trainer.state.scal  # noqa: SLF001 (as _init_state sets it)
    return trainer


def _padded(a: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(max(size, a.size), dtype=a.dtype)
    out[: a.size] = a
    return out


def _hf_order() -> list[int]:
    from workbench.engine.byte_mapping import hf_byte_order

    return hf_byte_order()


# -- SuperBPE ------------------------------------------------------------------------------------


class SuperBpeTrainer:
    """Stage 1 to `config.superbpe_transition`, then stage 2 from its merges; the interface of
    `BpeTrainer` (the batches are the same code). `stage2_words`: the corpus counted with
    `STAGE2_PATTERN` (capped, see `cap_pieces`)."""

    def __init__(
        self,
        words: WordTable,
        stage2_words: WordTable,
        config: TrainConfig,
        tie_limit: int = TIE_LIMIT,
    ) -> None:
        if not config.superbpe_transition:
            raise WorkbenchError("a SuperBPE trainer needs a transition vocab size")
        self.config = config
        self.transition = config.superbpe_transition
        self.current: Any = BpeTrainer(words, config, tie_limit)
        self._stage2_words: WordTable | None = stage2_words
        self._batch_size = 1
        self.stop_reason: str | None = None
        # The rank of the first stage-2 merge, once stage 2 started (the charts' line).
        self.transition_rank: int | None = None

    @property
    def stage(self) -> int:
        return 1 if self.transition_rank is None else 2

    @property
    def starting_stage_two(self) -> bool:
        """Stage 1 is over and the next step builds stage 2 (encoding its pieces: a wait)."""
        first = self.current
        return self.stage == 1 and (
            first.vocab_size >= self.transition
            or first.stop_reason in ("no_pairs", "min_frequency")
        )

    def __getattr__(self, name: str) -> Any:
        # merges, vocab, vocab_size, corpus_tokens, ...: the current stage's trainer's.
        if name in ("current", "_stage2_words", "config", "_batch_size", "transition"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def release(self) -> None:
        """Free the merge loop's arrays and the stage-2 pieces not used yet (no more merges)."""
        self._stage2_words = None
        self.current.release()

    @property
    def done(self) -> bool:
        return self.stop_reason in ("no_pairs", "min_frequency") or (
            self.current.vocab_size >= self.config.vocab_size
        )

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        target = self.config.vocab_size if target_vocab_size is None else target_vocab_size
        if self.stage == 1:
            first = self.current
            ended = first.stop_reason in ("no_pairs", "min_frequency")
            if first.vocab_size < self.transition and not ended:
                batch = first.step(n, min(target, self.transition))
                self.stop_reason = first.stop_reason
                if first.stop_reason is not None and target > first.vocab_size:
                    # At the transition, or stage 1 ran out of pairs: stage 2 goes on.
                    self.stop_reason = None
                return batch
            if target <= first.vocab_size:
                return first.step(n, target)  # nothing to do: an empty batch, as BpeTrainer's
            self._start_stage_two()
        batch = self.current.step(n, target)
        self.stop_reason = self.current.stop_reason
        return replace(batch, stage_start=self.transition_rank)

    def _start_stage_two(self) -> None:
        """Encode the stage-2 pieces with stage 1's merges and train on from there."""
        first = self.current
        words = self._stage2_words
        if words is None:
            raise WorkbenchError("internal error: stage 2 started twice")
        first.release()  # its arrays go before stage 2's are built (the merges stay)
        ids, offsets = encode_pieces(words, first.vocab, first.merges, first.merge_ids)
        counts = words.counts
        self._stage2_words = None
        second = trainer_from_ids(
            ids, offsets, counts, first.vocab, first.merges, first.merge_ids, self.config,
            first.tie_limit,
        )  # fmt: skip
        second.max_words = MAX_WORDS
        second.kernel_seconds = first.kernel_seconds
        self.transition_rank = len(first.merges)
        self.current = second
        self.stop_reason = None


def _share_batching() -> None:
    """`SuperBpeTrainer` batches exactly as `BpeTrainer` does (same code, on its `step`)."""
    for name in ("batches", "_adapt_batch_size", "run"):
        setattr(SuperBpeTrainer, name, getattr(BpeTrainer, name))


_share_batching()
