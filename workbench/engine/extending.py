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

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError
from workbench.engine.events import MergeBatch
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
    first_new = first_new_id(base)
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


def first_new_id(base: Tokenizer) -> int:
    """The id the first new token of an extension of `base` takes: after every old id."""
    return max([*base.vocab, *base.special_tokens.values()]) + 1


def extended_tokenizer(base: Tokenizer, pairs: Sequence[tuple[bytes, bytes]]) -> Tokenizer:
    """`base` with the new merges `pairs` (bytes, in rank order, as the trainer made them from
    the base's vocabulary) after its own: the tokenizer `extend_tokenizer` makes, rebuilt from
    the merges alone (a stored extension run). Ids as there: a merge whose bytes are already a
    token keeps that token's id, a new token the next id after `first_new_id`, and a merge
    repeating an old merge's pair is left out. A pair whose parts are not tokens yet is a
    ConfigError (the merges are not an extension of this base)."""
    vocab = dict(base.vocab)
    id_of = {token: tid for tid, token in vocab.items()}
    merges = list(base.merges)
    seen = set(merges)
    next_id = first_new_id(base)
    for rank, (left, right) in enumerate(pairs):
        if left not in id_of or right not in id_of:
            raise ConfigError(f"new merge {rank} joins bytes that are not a token of the base")
        pair = (id_of[left], id_of[right])
        made = left + right
        if made not in id_of:
            id_of[made] = next_id
            vocab[next_id] = made
            next_id += 1
        if pair not in seen:
            seen.add(pair)
            merges.append(pair)
    return Tokenizer.from_vocab_merges(vocab, merges, base.pattern, base.special_tokens)


def tokenizer_digest(tok: Tokenizer) -> str:
    """A fingerprint of what a tokenizer encodes with (ids, tokens, merges, specials, pattern):
    an extension run records its base's, so a base file changed since is found, not used."""
    h = hashlib.sha256()
    h.update(tok.pattern.encode())
    for tid, token in sorted(tok.vocab.items()):
        h.update(b"%d:%d:" % (tid, len(token)) + token)
    h.update(np.asarray(tok.merges, dtype=np.int64).tobytes())
    for name, tid in sorted(tok.special_tokens.items()):
        h.update(b"%d:" % tid + name.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:32]


class ExtendingTrainer:
    """A trainer started from `base`'s vocabulary (`replay`) whose batches carry the extended
    tokenizer's ids (the base's for old tokens, `first_new_id` on for new ones), so a stored
    run, the window and the command line see the ids the exported tokenizer has.

    Everything else is the inner `BpeTrainer`'s (its `merges`, `merge_ids`, `vocab` stay in
    the trainer's own id space); `tokenizer()` and `extension()` give the result."""

    def __init__(self, base: Tokenizer, words: WordTable, config: TrainConfig, **kwargs: Any):
        from workbench.engine.train.trainer import BpeTrainer  # Numba loads here

        if config.vocab_size < base.vocab_size:
            raise ConfigError(
                f"vocab size {config.vocab_size:,} is below the base tokenizer's "
                f"{base.vocab_size:,} tokens"
            )
        if len(words) == 0:
            raise ConfigError("the corpus has no text to learn merges from")
        start, self.base_of = replay(base, words)
        self.base = base
        self.words = words
        self.trainer = BpeTrainer(start, config, **kwargs)
        self.n_start = len(start.tokens)
        self.first_new_id = first_new_id(base)
        self.tokens_before = self.trainer.corpus_tokens
        self.counts: list[int] = []
        self.fresh: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.trainer, name)

    def outside(self, ids: np.ndarray) -> np.ndarray:
        """Trainer ids as the extended tokenizer's ids."""
        ids = np.asarray(ids, dtype=np.int64)
        old = self.base_of[np.minimum(ids, self.n_start - 1)]
        return np.where(ids < self.n_start, old, self.first_new_id + ids - self.n_start).astype(
            np.int32
        )

    def _outside_batch(self, batch: MergeBatch) -> MergeBatch:
        self.counts += batch.count.tolist()
        self.fresh += batch.is_new.tolist()
        return replace(
            batch,
            left=self.outside(batch.left),
            right=self.outside(batch.right),
            new_id=self.outside(batch.new_id),
        )

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        return self._outside_batch(self.trainer.step(n, target_vocab_size))

    def batches(self, *args: Any, **kwargs: Any) -> Iterator[MergeBatch]:
        for batch in self.trainer.batches(*args, **kwargs):
            yield self._outside_batch(batch)

    def tokenizer(self) -> Tokenizer:
        """The base with the merges made so far."""
        return extended_tokenizer(self.base, self.trainer.merge_pairs())

    def extension(self) -> Extension:
        """What was added so far, for `evaluate.extension_check`."""
        trainer = self.trainer
        ids = self.outside(np.asarray(trainer.merges, dtype=np.int64).reshape(-1, 2))
        old_pairs = set(self.base.merges)
        kept = [r for r, (a, b) in enumerate(ids.tolist()) if (a, b) not in old_pairs]
        made = self.outside(np.asarray(trainer.merge_ids, dtype=np.int64)).tolist()
        pairs = trainer.merge_pairs()
        return Extension(
            tokenizer=self.tokenizer(),
            base=self.base,
            new_merges=[pairs[r] for r in kept],
            new_ids=[made[r] for r in kept],
            is_new=[self.fresh[r] for r in kept],
            counts=[self.counts[r] for r in kept],
            first_new_id=self.first_new_id,
            stop_reason=trainer.stop_reason or "vocab_size",
            repeated=len(trainer.merges) - len(kept),
            tokens_before=self.tokens_before,
            tokens_after=trainer.corpus_tokens,
        )
