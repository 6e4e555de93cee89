"""Extending a tokenizer: its merges replayed exactly on a new corpus, then new merges learned.

    words = count_texts(documents, TrainConfig(pattern=base.pattern, special_tokens=...))
    ext = extend_tokenizer(base, words, vocab_size=base.vocab_size + 2000)
    ext.tokenizer.export("hf", "out/")

How the replay is exact: each unique pre-token of the new corpus (cut by the base's own
pattern, its specials split out) is encoded by the base tokenizer, with tiktoken's semantics,
which is what the base gives for that text. The trainer then starts from those id sequences and
the base's whole vocabulary (`train.start_vocab`), so every pair it counts is a pair the base
leaves side by side, and its merges come after all of the base's.

Ids: every old id, token, special token and merge stays as it was; new tokens take the ids after
the largest old id (specials included). A new merge whose bytes are an old token makes that
token (`is_new` False) and keeps its old id and rank. One that repeats an old merge's pair (it
can arise only next to such a token) adds nothing the encoder lacks and is left out of the list
(`repeated`). Ranks with no merge list (cl100k, o200k from tiktoken files) use the merges the
loader rebuilt from the ranks (`_merge.recover_merges`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.start_vocab import StartVocab


@dataclass(frozen=True)
class Extension:
    """An extended tokenizer and what was added to its base."""

    tokenizer: Tokenizer
    base: Tokenizer
    new_merges: list[tuple[bytes, bytes]]  # in rank order, after the base's
    new_ids: list[int]  # the id each new merge makes
    is_new: list[bool]  # False: its bytes were already a token (an old or an earlier new one)
    counts: list[int]  # the pair count when each was merged
    first_new_id: int  # new tokens take this id and the ones after it
    stop_reason: str
    repeated: int  # merges left out: their pair was already an old merge
    tokens_before: int  # tokens the new corpus takes with the base (its pieces, counted)
    tokens_after: int  # ... and with the extended tokenizer (as the trainer counts them)

    @property
    def added_tokens(self) -> dict[int, bytes]:
        """The new tokens, id -> bytes."""
        return {i: self.tokenizer.vocab[i] for i in range(self.first_new_id, self._id_end)}

    @property
    def _id_end(self) -> int:
        return max([*self.tokenizer.vocab, self.first_new_id - 1]) + 1


def replay(base: Tokenizer, words: WordTable) -> tuple[StartVocab, np.ndarray]:
    """The new corpus's words as ids of the base tokenizer, in the trainer's id space (0..255
    the single bytes, then the base's other tokens in id order), and the base id of each
    trainer id."""
    vocab = base.vocab
    byte_ids = {token[0]: tid for tid, token in vocab.items() if len(token) == 1}
    if len(byte_ids) != 256:
        raise ConfigError("the base tokenizer must have a token for each of the 256 bytes")
    others = sorted(tid for tid, token in vocab.items() if len(token) > 1)
    base_of = np.array([byte_ids[b] for b in range(256)] + others, dtype=np.int64)
    trainer_of = np.full(int(base_of.max()) + 1, -1, dtype=np.int32)
    trainer_of[base_of] = np.arange(base_of.size, dtype=np.int32)
    ids, id_offsets = base.encode_pieces(words.data, words.offsets)
    tokens = [vocab[int(tid)] for tid in base_of.tolist()]
    start = StartVocab(tokens, trainer_of[ids], id_offsets, words.counts)
    return start, base_of


def extend_tokenizer(
    base: Tokenizer,
    words: WordTable,
    vocab_size: int,
    tie_break: str = "lexicographic",
    max_token_length: int = 0,
    min_frequency: int = 0,
) -> Extension:
    """`base` with new merges learned on `words` (pieces cut by the base's pattern, its special
    tokens split out) until it has `vocab_size` tokens, its specials counted."""
    from workbench.engine.train.trainer import BpeTrainer

    old_size = len(base.vocab) + len(base.special_tokens)
    if vocab_size < old_size:
        raise ConfigError(
            f"vocab size {vocab_size:,} is below the base tokenizer's {old_size:,} tokens"
        )
    if len(words) == 0:
        raise ConfigError("the corpus has no text to learn merges from")
    config = TrainConfig(
        vocab_size=vocab_size,
        pattern=base.pattern,
        special_tokens=tuple(base.special_tokens),
        tie_break=tie_break,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    start, base_of = replay(base, words)
    trainer = BpeTrainer(start, config)
    tokens_before = trainer.corpus_tokens
    counts: list[int] = []
    fresh: list[bool] = []
    for batch in trainer.batches(batch_seconds=None):
        counts += batch.count.tolist()
        fresh += batch.is_new.tolist()
    first_new = max([*base.vocab, *base.special_tokens.values()]) + 1
    n_start = len(start.tokens)

    def outside(tid: int) -> int:
        return int(base_of[tid]) if tid < n_start else first_new + tid - n_start

    vocab = dict(base.vocab)
    for tid in range(n_start, len(trainer.vocab)):
        vocab[outside(tid)] = trainer.vocab[tid]
    merges = list(base.merges)
    seen = set(merges)
    kept: list[int] = []
    for rank, (left, right) in enumerate(trainer.merges):
        pair = (outside(left), outside(right))
        if pair not in seen:
            seen.add(pair)
            merges.append(pair)
            kept.append(rank)
    tokenizer = Tokenizer.from_vocab_merges(vocab, merges, base.pattern, base.special_tokens)
    made = trainer.merge_ids
    pairs = trainer.merge_pairs()
    return Extension(
        tokenizer=tokenizer,
        base=base,
        new_merges=[pairs[r] for r in kept],
        new_ids=[outside(made[r]) for r in kept],
        is_new=[fresh[r] for r in kept],
        counts=[counts[r] for r in kept],
        first_new_id=first_new,
        stop_reason=trainer.stop_reason or "vocab_size",
        repeated=len(trainer.merges) - len(kept),
        tokens_before=tokens_before,
        tokens_after=trainer.corpus_tokens,
    )
