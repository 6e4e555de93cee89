"""Training in stages: SuperBPE, its stage 2 a trainer that starts from stage 1's vocabulary.

SuperBPE (Liu et al., 2025; the rules and their sources: `patterns.superbpe`):

    trainer = SuperBpeTrainer(words, stage2_words, config)   # config.superbpe_transition = t
    for batch in trainer.batches(): ...                      # as a BpeTrainer's

Stage 1 is an ordinary `BpeTrainer` over the run's word table up to the transition vocab size
t. Then each stage-2 piece (counted with `patterns.superbpe.STAGE2_PATTERN`) is encoded with
stage 1's merges, as the authors' code applies the inherited merges to the stage-2 words, and
a trainer started from those id sequences and stage 1's vocabulary and merges (a `StartVocab`,
built by `BpeTrainer`'s own set-up as when extending a tokenizer) makes the rest, never merging
a pair the stage-2 rules refuse. Merge ranks and ids go on from stage 1's:
the first stage-2 merge makes token id t (less the specials), as if one trainer had made all.

One difference from the authors' code, on purpose: their trainer leaves out an inherited merge
whose pair no stage-2 word holds; here every stage-1 merge is kept, so stage 1's ids stay valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.patterns.regexes import NO_SPLIT
from workbench.engine.patterns.superbpe import MAX_WORDS
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.start_vocab import StartVocab
from workbench.engine.train.trainer import TIE_LIMIT, BpeTrainer


def encode_pieces(
    words: WordTable, tokens: Sequence[bytes], merges: Sequence[tuple[int, int]],
    results: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each word's bytes as token ids under the merges (ranked BPE, which makes what applying
    the merges one after another to the word makes). Returns (ids int32, offsets int64)."""
    from workbench.engine.encode.tokenizer import Tokenizer  # encode loads its kernels here

    tokenizer = Tokenizer.from_trainer(tokens, merges, results, NO_SPLIT)
    with tokenizer:
        return tokenizer.encode_pieces(words.data, words.offsets)


# -- SuperBPE ------------------------------------------------------------------------------------


class SuperBpeTrainer:
    """Stage 1 to `config.superbpe_transition`, then stage 2 from its merges; the interface of
    `BpeTrainer` (the batches are the same code). `stage2_words`: the corpus counted with
    `STAGE2_PATTERN` (within the memory bound, see `pretokenize.stage_two`)."""

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
        start = StartVocab(first.vocab, ids, offsets, counts, first.merges, first.merge_ids)
        second = BpeTrainer(start, self.config, first.tie_limit, max_words=MAX_WORDS)
        second.kernel_seconds = first.kernel_seconds
        self.transition_rank = len(first.merges)
        self.current = second
        self.stop_reason = None


def _share_batching() -> None:
    """`SuperBpeTrainer` batches exactly as `BpeTrainer` does (same code, on its `step`)."""
    for name in ("batches", "_adapt_batch_size", "run"):
        setattr(SuperBpeTrainer, name, getattr(BpeTrainer, name))


_share_batching()
