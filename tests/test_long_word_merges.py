"""Merging inside long words through position lists (issue 33, item 2): the same merges, counts
and token ids as walking every word, in both tie modes, whatever mix of long and short words
(no timing here: `benchmarks/long_word.py` shows the scaling)."""

from __future__ import annotations

import random

import pytest
from reference_bpe import train_reference

from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train import _state
from workbench.engine.train.trainer import BpeTrainer

ALPHABETS = [b"a", b"ab", b"abc", b"abcdefgh", bytes(range(97, 123))]


def _train(words: dict[bytes, int], mode: str, vocab: int, long_word: int, monkeypatch):
    """(merged byte pairs, merge ids, pair count of each merge, corpus tokens) with words of `long_word`
    symbols or more taking the position lists. Small starting tables: every array regrows."""
    monkeypatch.setattr(_state, "LONG_WORD", long_word)
    config = TrainConfig(vocab_size=vocab, tie_break=mode)
    trainer = BpeTrainer(WordTable.from_counts(words), config, start_rows=8)
    counts = [c for batch in trainer.batches(batch_seconds=None) for c in batch.count.tolist()]
    return trainer.merge_pairs(), trainer.merge_ids, counts, trainer.corpus_tokens


def _random_words(rng: random.Random) -> dict[bytes, int]:
    alphabet = rng.choice(ALPHABETS)
    words: dict[bytes, int] = {}
    for i in range(rng.randint(1, 5)):
        n = (
            rng.randint(40, 2500)
            if i == 0
            else rng.choice([rng.randint(1, 30), rng.randint(40, 2500)])
        )
        words[bytes(rng.choice(alphabet) for _ in range(n))] = rng.randint(1, 3)
    return words


@pytest.mark.parametrize("mode", ["lexicographic", "hf"])
@pytest.mark.parametrize("seed", range(6))
def test_position_lists_merge_like_the_walk(mode, seed, monkeypatch):
    rng = random.Random(seed * 7 + (mode == "hf"))
    words = _random_words(rng)
    vocab = rng.choice([300, 700, 1500])
    walked = _train(words, mode, vocab, 1 << 62, monkeypatch)
    listed = _train(words, mode, vocab, 8, monkeypatch)  # every word of 8 symbols or more
    assert listed == walked
    assert walked[0]  # the case made merges to compare


@pytest.mark.parametrize(
    "words",
    [
        {b"a" * 3001: 1, b"a" * 7: 2},  # (a, a) overlaps: left to right, as the walk
        {b"ab" * 1500 + b"a" * 999: 1, b"ba" * 600: 2},  # two long words sharing pairs
    ],
    ids=["runs", "two-long-words"],
)
def test_long_words_against_the_reference(words, monkeypatch):
    expected, expected_counts = train_reference(words, 256 + 40)
    merges, _, counts, _ = _train(words, "lexicographic", 256 + 40, 64, monkeypatch)
    assert merges == expected
    assert counts == expected_counts


def test_one_long_random_word_against_the_reference(monkeypatch):
    rng = random.Random(33)
    word = bytes(rng.choice(b"abcdef") for _ in range(6000))
    expected, expected_counts = train_reference({word: 1}, 256 + 120)
    merges, _, counts, _ = _train({word: 1}, "lexicographic", 256 + 120, 1024, monkeypatch)
    assert merges == expected
    assert counts == expected_counts
