"""The trainer against the slow reference, golden cases, the CS336 reference and its API."""

from __future__ import annotations

import json

import pytest
from _bpe_helpers import examples, trained
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.trainer import BpeTrainer

from workbench.engine.byte_mapping import from_mapped, to_mapped
from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError, PatternError

EXAMPLES = examples(1.5)


def train_words(words: dict[bytes, int], vocab_size: int, **kw) -> BpeTrainer:
    trainer = BpeTrainer(WordTable.from_counts(words), TrainConfig(vocab_size=vocab_size, **kw))
    trainer.run()
    return trainer


def test_golden_aaabdaaabac():
    trainer = train_words({b"aaabdaaabac": 1}, 256 + 4)
    # (a,a) 4x; then (aa,a) ties (a,b) at 2 and has the greater left bytes; then (aaa,b);
    # then four pairs at 1, of which (d, aaab) has the greatest left bytes.
    assert trainer.merge_pairs() == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b"), (b"d", b"aaab")]
    assert trainer.merge_ids == [256, 257, 258, 259]


@pytest.mark.parametrize(
    "word, expected",
    [
        (b"aaa", [(b"a", b"a"), (b"aa", b"a")]),
        (b"aaaa", [(b"a", b"a"), (b"aa", b"aa")]),
        (b"abab", [(b"a", b"b"), (b"ab", b"ab")]),
        (b"ababab", [(b"a", b"b"), (b"ab", b"ab"), (b"abab", b"ab")]),
    ],
)
def test_overlapping_runs(word, expected):
    trainer = train_words({word: 1}, 256 + len(expected) + 5)
    assert trainer.merge_pairs() == expected
    assert trainer.stop_reason == "no_pairs"


def test_counts_at_merge_and_corpus_tokens():
    trainer = BpeTrainer(WordTable.from_counts({b"aaaa": 3, b"ab": 2}), TrainConfig(vocab_size=300))
    batch = trainer.step(2)
    # (a,a): 3 per word x 3 = 9; after `aa aa`, (aa,aa) has 3.
    assert list(batch.count) == [9, 3]
    assert list(batch.corpus_tokens) == [3 * 2 + 2 * 2, 3 * 1 + 2 * 2]
    assert batch.tokens == (b"aa", b"aaaa")


def test_every_merge_makes_new_bytes(corpora):
    # The trainer would reuse an id if two merge paths made the same bytes (as HF does), but in
    # byte-level BPE a token's bytes evolve the same way wherever they occur, so merge i makes
    # id 256 + i. Checked here on real text, at a vocabulary where counts are small.
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")
    result = trained([text], TrainConfig(vocab_size=6000))
    made = [a + b for a, b in result.merges()]
    assert len(set(made)) == len(made)
    assert result.trainer.merge_ids == list(range(256, 256 + len(made)))


def test_min_frequency_and_stop_reasons():
    words = {b"hello": 5, b"help": 2, b"xyz": 1}
    trainer = train_words(words, 1000, min_frequency=3)
    assert all(c >= 3 for c in train_reference(words, 1000, min_frequency=3)[1])
    assert trainer.merge_pairs() == train_reference(words, 1000, min_frequency=3)[0]
    assert trainer.stop_reason == "min_frequency"
    trainer = train_words(words, 1000)
    assert trainer.stop_reason == "no_pairs"


def test_vocab_size_counts_specials():
    config = TrainConfig(vocab_size=256 + 3 + 2, special_tokens=("<a>", "<b>"))
    result = trained(["hello hello hello world"], config)
    assert result.trainer.vocab_size == config.vocab_size
    assert result.trainer.n_merges == 3
    assert result.trainer.special_ids == {"<a>": 259, "<b>": 260}


def test_specials_are_split_out_and_never_merged():
    config = TrainConfig(vocab_size=400, special_tokens=("<|eot|>",))
    result = trained(["ab<|eot|>ab<|eot|>ab"], config)
    for left, right in result.merges():
        assert b"<|" not in left + right and b"eot" not in left + right
    words = count_texts(["xx<|eot|>yy<|eot|><|eot|>"], config)
    assert words.to_dict() == {b"xx": 1, b"yy": 1}


def test_longest_special_wins():
    config = TrainConfig(vocab_size=300, special_tokens=("<s>", "<s>>"))
    assert count_texts(["a<s>>b"], config).to_dict() == {b"a": 1, b"b": 1}


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError, match="below the alphabet"):
        TrainConfig(vocab_size=257, special_tokens=("<a>", "<b>"))
    with pytest.raises(PatternError, match="does not compile"):
        TrainConfig(pattern="(unclosed")
    with pytest.raises(PatternError, match="empty string"):
        TrainConfig(pattern=r"\w*")
    with pytest.raises(ConfigError):
        TrainConfig(tie_break="random")


def test_batches_stop_and_resume_equal_straight_run(corpora):
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")
    words = count_texts([text], TrainConfig())
    config = TrainConfig(vocab_size=1200)
    straight = BpeTrainer(words, config)
    straight.run()
    pieces = BpeTrainer(words, config)
    ranks = []
    for batch in pieces.batches(max_merges=100, batch_seconds=0.001):
        ranks.extend(range(batch.start_rank, batch.end_rank))
    assert pieces.n_merges == 100
    for _ in range(7):
        pieces.step(1)
    for batch in pieces.batches(target_vocab_size=900):
        assert batch.vocab_size <= 900
    assert pieces.vocab_size == 900 and pieces.stop_reason == "vocab_size"
    pieces.run()
    assert pieces.merges == straight.merges
    assert ranks == list(range(100))


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_first_k_merges_are_a_prefix(corpora, tie_break):
    text = (corpora / "tinystories_sample.txt").read_text(encoding="utf-8")
    small = trained([text], TrainConfig(vocab_size=400, tie_break=tie_break))
    large = trained([text], TrainConfig(vocab_size=700, tie_break=tie_break))
    assert large.merges()[: small.trainer.n_merges] == small.merges()


def test_cs336_reference_merges(corpora):
    config = TrainConfig(vocab_size=500, special_tokens=("<|endoftext|>",))
    result = trained([corpora / "corpus.en"], config)
    expected = [
        tuple(line.rstrip("\n").split(" "))
        for line in (corpora / "train-bpe-reference-merges.txt").read_text("utf-8").splitlines()
        if line
    ]
    ours = [(to_mapped(a), to_mapped(b)) for a, b in result.merges()]
    assert len(expected) == 243
    assert ours == expected
    reference_vocab = json.loads((corpora / "train-bpe-reference-vocab.json").read_text("utf-8"))
    assert {from_mapped(k) for k in reference_vocab} == set(result.trainer.vocab_bytes().values())


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["taylorswift.txt", "german.txt", "address.txt", "tinystories_sample.txt"]
)
def test_matches_reference_on_real_text(corpora, name):
    text = (corpora / name).read_text(encoding="utf-8")
    words = count_texts([text], TrainConfig()).to_dict()
    vocab = 256 + 300
    expected, counts = train_reference(words, vocab)
    trainer = BpeTrainer(WordTable.from_counts(words), TrainConfig(vocab_size=vocab))
    got = [int(c) for batch in trainer.batches() for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts


# Hypothesis: texts built to make overlapping runs, ties, repeats and mixed scripts.
_alphabet = st.sampled_from(list("aab ab  \n\t") + ["ab", "ba", "aaa", "é", "日本", "😀", "ّ", "1"])
_texts = st.lists(_alphabet, min_size=1, max_size=40).map("".join)


@settings(max_examples=EXAMPLES, deadline=None)
@given(docs=st.lists(_texts, min_size=1, max_size=6), extra=st.integers(1, 40))
def test_differential_against_reference(docs, extra):
    config = TrainConfig(vocab_size=256 + extra)
    words = count_texts(docs, config)
    expected, counts = train_reference(words.to_dict(), config.vocab_size)
    trainer = BpeTrainer(words, config)
    got = [int(c) for batch in trainer.batches() for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    words=st.dictionaries(
        st.binary(min_size=1, max_size=12).map(lambda b: bytes(x % 4 + 97 for x in b)),
        st.integers(1, 5),
        min_size=1,
        max_size=12,
    ),
    extra=st.integers(1, 60),
)
def test_differential_small_alphabet_words(words, extra):
    # A four-letter alphabet makes ties, overlaps and two merge paths to the same bytes common.
    expected, counts = train_reference(words, 256 + extra)
    trainer = BpeTrainer(WordTable.from_counts(words), TrainConfig(vocab_size=256 + extra))
    got = [int(c) for batch in trainer.batches(batch_seconds=0.0001) for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts
