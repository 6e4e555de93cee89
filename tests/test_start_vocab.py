"""The trainer started from a vocabulary (extending a tokenizer): the words as ids of starting
tokens, new merges on top, exactly as the slow reference makes them from the same segmentation."""

from __future__ import annotations

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference_from

from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.start_vocab import StartVocab
from workbench.engine.train.trainer import BpeTrainer

BYTES = [bytes([b]) for b in range(256)]


def start_of(tokens: list[bytes], words: dict[tuple[bytes, ...], int]) -> StartVocab:
    ids = {t: i for i, t in enumerate(tokens)}
    symbols = [ids[t] for word in words for t in word]
    offsets = np.cumsum([0, *map(len, words)])
    return StartVocab(tokens, np.array(symbols), offsets, np.array(list(words.values())))


def test_bytes_only_start_is_plain_training():
    words = {b"aaabdaaabac": 3, b"abab": 2, b"\xc3\xa9t\xc3\xa9": 4}
    start = start_of(BYTES, {tuple(bytes([b]) for b in w): c for w, c in words.items()})
    assert np.array_equal(start.as_table().data, WordTable.from_counts(words).data)
    config = TrainConfig(vocab_size=290)
    plain, started = BpeTrainer(WordTable.from_counts(words), config), BpeTrainer(start, config)
    plain.run()
    started.run()
    assert started.merges == plain.merges and started.vocab == plain.vocab


# Segmentations of small-alphabet words into starting tokens (some multi-byte, some not used).
_STARTING = [b"ab", b"ba", b"aab", b"cd", b"abc"]


def _segment(word: bytes, tokens: set[bytes], cuts: list[int]) -> tuple[bytes, ...]:
    """Cut `word` greedily into starting tokens where `cuts` says so, else into bytes."""
    out, i, k = [], 0, 0
    while i < len(word):
        for size in (3, 2):
            piece = word[i : i + size]
            if len(piece) == size and piece in tokens and cuts[k % len(cuts)]:
                out.append(piece)
                i += size
                break
        else:
            out.append(word[i : i + 1])
            i += 1
        k += 1
    return tuple(out)


@settings(max_examples=examples(1.5), deadline=None)
@given(
    words=st.dictionaries(
        st.binary(min_size=1, max_size=12).map(lambda b: bytes(x % 4 + 97 for x in b)),
        st.integers(1, 5),
        min_size=1,
        max_size=12,
    ),
    cuts=st.lists(st.booleans(), min_size=1, max_size=5),
    extra=st.integers(0, 40),
    cap=st.sampled_from([0, 0, 3, 4]),
)
def test_started_trainer_matches_the_reference(words, cuts, extra, cap):
    tokens = BYTES + _STARTING
    table: dict[tuple[bytes, ...], int] = {}
    for word, count in words.items():
        key = _segment(word, set(_STARTING), cuts)
        table[key] = table.get(key, 0) + count
    vocab = len(tokens) + extra
    expected, counts, reason = train_reference_from(table, set(tokens), vocab, max_token_length=cap)
    trainer = BpeTrainer(
        start_of(tokens, table), TrainConfig(vocab_size=vocab, max_token_length=cap)
    )
    got = [int(c) for batch in trainer.batches(batch_seconds=0.0001) for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts
    assert trainer.stop_reason == reason
    assert trainer.vocab[: len(tokens)] == tokens  # the starting ids keep their bytes
    # A merge whose bytes are a starting token reuses that id.
    for (left, right), new in zip(trainer.merges, trainer.merge_ids, strict=True):
        whole = trainer.vocab[left] + trainer.vocab[right]
        assert trainer.vocab[new] == whole
        if whole in _STARTING:
            assert new == tokens.index(whole)


def test_a_bad_start_is_refused():
    with pytest.raises(ConfigError, match="single bytes"):
        StartVocab([b"a"] * 256, np.array([0]), np.array([0, 1]), np.array([1]))
    with pytest.raises(ConfigError, match="outside"):
        StartVocab(BYTES + [b"ab"], np.array([257]), np.array([0, 1]), np.array([1]))
    with pytest.raises(ConfigError, match="distinct"):
        StartVocab(BYTES + [b"a"], np.array([0]), np.array([0, 1]), np.array([1]))


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_a_long_word_of_starting_tokens(tie_break):
    # Over LONG_WORD symbols: the linked-list path (`_long`) from a starting vocabulary.
    tokens = BYTES + _STARTING
    word = (b"ab", b"c", b"aab", b"d", b"ba", b"cd") * 300
    table = {word: 2, (b"ab", b"cd", b"ab"): 5}
    trainer = BpeTrainer(start_of(tokens, table), TrainConfig(vocab_size=len(tokens) + 30,
                                                              tie_break=tie_break))  # fmt: skip
    trainer.run()
    if tie_break == "lexicographic":
        expected, _, _ = train_reference_from(table, set(tokens), len(tokens) + 30)
        assert trainer.merge_pairs() == expected
    # Either way: the words, merged as the trainer says, still spell their bytes.
    assert trainer.corpus_tokens < 2 * len(word) + 15
    assert all(trainer.vocab[m] == trainer.vocab[a] + trainer.vocab[b]
               for (a, b), m in zip(trainer.merges, trainer.merge_ids, strict=True))  # fmt: skip
