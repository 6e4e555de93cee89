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

# One letter makes tokens of many bytes (a merged token's emptied slots span them); all 256
# bytes make more byte pairs than the index's cache has rows.
ALPHABETS = [b"a", b"ab", b"abc", b"abcdefgh", bytes(range(97, 123)), bytes(range(256))]


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
@pytest.mark.parametrize("seed", range(8))
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


@pytest.mark.parametrize("mode", ["lexicographic", "hf"])
@pytest.mark.parametrize(
    "words",
    [
        {b"a" * 5000: 1, b"a" * 1100: 3},  # tokens of up to 2,048 bytes inside both words
        {b"ab" * 700: 2, b"ba" * 700: 1, b"ab": 5},  # two long words share every pair
        {bytes(random.Random(5).randbytes(4000)): 1, b"\x00\xff" * 600: 2},  # 65,536 byte pairs
        {b"xyz" * 400 + b"a" * 300 + b"xyz" * 400: 1, b"axyz" * 8: 40},  # a short word's merges
    ],
    ids=["runs", "shared-pairs", "all-bytes", "short-words-lead"],
)
def test_long_words_merge_like_the_walk_in_both_modes(words, mode, monkeypatch):
    walked = _train(words, mode, 256 + 300, 1 << 62, monkeypatch)
    listed = _train(words, mode, 256 + 300, 1024, monkeypatch)
    assert listed == walked
    assert len(walked[0]) >= 10  # merges to compare (the runs make 19)


def test_one_long_random_word_against_the_reference(monkeypatch):
    rng = random.Random(33)
    for alphabet in (b"abcdef", b"ACGT", bytes(range(256))):
        word = bytes(rng.choice(alphabet) for _ in range(6000))
        expected, expected_counts = train_reference({word: 1}, 256 + 120)
        merges, _, counts, _ = _train({word: 1}, "lexicographic", 256 + 120, 1024, monkeypatch)
        assert merges == expected
        assert counts == expected_counts
