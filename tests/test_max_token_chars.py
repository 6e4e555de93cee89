"""A maximum token length in characters: the count's rule (whole and cut characters), the kernels
in both tie-break modes, the Python trainer and the slow reference alike, with and without the
cap in bytes, parity-aware BPE and `extend`. What it shares with the cap in bytes (refused values,
the clean end, the API, the CLI, stored settings) is tested for both in `test_max_token_length.py`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import reference_chars, train_reference_why

from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.char_count import utf8_chars
from workbench.engine.train.py_trainer import PyTrainer
from workbench.engine.train.trainer import TIE_LIMIT, BpeTrainer

FIELDS = ("left", "right", "new_id", "count", "is_new", "ties", "corpus_tokens")

# Characters of 1 to 4 bytes, so that merges cut them and the cap in characters differs from
# the cap in bytes; few of them, so that ties, overlaps and reused bytes are common.
ALPHABET = "aé中😀"
small_words = st.dictionaries(
    st.text(alphabet=ALPHABET, min_size=1, max_size=6).map(lambda s: s.encode("utf-8")),
    st.integers(1, 5),
    min_size=1,
    max_size=12,
)


def test_the_rule_on_whole_and_cut_characters():
    assert utf8_chars("héllo".encode()) == 5
    assert utf8_chars("中".encode()) == 1
    assert utf8_chars("中".encode()[:2]) == 1  # a lead byte and one of its two: one, cut short
    assert utf8_chars("中".encode()[1:]) == 1  # a token starting inside a character
    assert utf8_chars("中".encode()[2:] + "中".encode()) == 2
    assert utf8_chars("😀".encode()[1:] + b"a") == 2
    assert utf8_chars(b"a\x80\x80") == 3  # continuation bytes no lead allows: one each
    assert utf8_chars(b"\x80\x80\x80\x80") == 2  # a leading part holds three at most
    assert utf8_chars(b"\xff\xfe") == 2
    assert utf8_chars(b"") == 0


@settings(max_examples=examples(3), deadline=None)
@given(token=st.binary(max_size=24))
def test_the_count_matches_the_reference_spelling(token):
    assert utf8_chars(token) == reference_chars(token)
    assert len(token) / 4 <= utf8_chars(token) <= len(token)  # so N characters are <= 4N bytes


@settings(max_examples=examples(3), deadline=None)
@given(text=st.text(max_size=12))
def test_on_text_it_counts_the_characters(text):
    data = text.encode("utf-8")
    assert utf8_chars(data) == len(text)
    # any cut piece counts the characters whose bytes it holds, whole or in part
    starts = np.cumsum([0] + [len(ch.encode()) for ch in text])
    for i in range(len(data)):
        for j in range(i + 1, len(data) + 1):
            touched = sum(1 for k in range(len(text)) if starts[k] < j and starts[k + 1] > i)
            assert utf8_chars(data[i:j]) == touched


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(1, 60), chars=st.integers(1, 4),
       cap=st.sampled_from([0, 0, 3, 6, 9]))  # fmt: skip
def test_kernels_match_the_reference_with_a_cap_in_characters(words, extra, chars, cap):
    config = TrainConfig(vocab_size=256 + extra, max_token_length=cap, max_token_chars=chars)
    expected, counts, reason = train_reference_why(
        words, config.vocab_size, max_token_length=cap, max_token_chars=chars
    )
    trainer = BpeTrainer(WordTable.from_counts(words), config)
    got = [int(c) for batch in trainer.batches(batch_seconds=0.0001) for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts
    assert min(got, default=1) >= 1  # never a merge of a pair seen zero times
    assert trainer.stop_reason == reason
    assert max(map(utf8_chars, trainer.vocab)) <= chars


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(0, 60), chars=st.integers(1, 4))
def test_python_trainer_matches_the_kernels_with_a_cap_in_characters(words, extra, chars):
    table = WordTable.from_counts(words)
    config = TrainConfig(vocab_size=256 + extra, max_token_chars=chars)
    fast, slow = BpeTrainer(table, config), PyTrainer(table, config, TIE_LIMIT)
    for n in [3, 1, 5] * 100:
        a, b = fast.step(n), slow.step(n)
        for name in FIELDS:  # ties too: a capped pair is no tie in either
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert fast.stop_reason == slow.stop_reason
        if fast.stop_reason is not None:
            return
    raise AssertionError("training did not end")


def _hf(words: dict[bytes, int], vocab_size: int, chars: int = 0, cap: int = 0) -> BpeTrainer:
    config = TrainConfig(
        vocab_size=vocab_size, tie_break="hf", max_token_chars=chars, max_token_length=cap
    )
    trainer = BpeTrainer(WordTable.from_counts(words), config)
    trainer.run()
    return trainer


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(1, 60), chars=st.integers(1, 4))
def test_hf_mode_with_a_cap_in_characters(words, extra, chars):
    # Beside the slow HF reference below: an allowed pair wins exactly when it would win
    # uncapped, since a refused pair only ever lacks a heap entry. The capped run is the
    # uncapped one up to the uncapped run's first merge over the cap, and never makes a token
    # over it.
    capped = _hf(words, 256 + extra, chars=chars)
    free = _hf(words, 256 + extra)
    over = [utf8_chars(a + b) > chars for a, b in free.merge_pairs()]
    k = over.index(True) if True in over else len(over)
    assert capped.merge_pairs()[:k] == free.merge_pairs()[:k]
    if k == len(over):
        assert capped.merge_pairs() == free.merge_pairs()
    assert max(map(utf8_chars, capped.vocab)) <= chars
    assert min(capped.merge_ids, default=257) >= 256


def hf_reference(words: dict[bytes, int], vocab_size: int, chars: int) -> list[tuple[bytes, bytes]]:
    """The slow HF-order trainer (`reference_superbpe._train_hf`: every pair recounted per
    merge, the smallest HF ids among equal counts) with tokens over `chars` characters refused."""
    from reference_superbpe import _train_hf

    from workbench.engine.byte_mapping import hf_byte_order

    order = hf_byte_order()
    ids = {bytes([b]): order[b] for b in range(256)}
    table = {tuple(bytes([b]) for b in word): count for word, count in words.items()}
    merges: list[tuple[bytes, bytes]] = []
    _train_hf(table, ids, merges, vocab_size, lambda token: reference_chars(token) <= chars, None)
    return merges


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(1, 60), chars=st.integers(1, 4))
def test_hf_mode_matches_the_slow_hf_reference_with_a_cap_in_characters(words, extra, chars):
    assert _hf(words, 256 + extra, chars=chars).merge_pairs() == hf_reference(
        words, 256 + extra, chars
    )


def test_hf_mode_on_real_multilingual_text_against_the_slow_hf_reference(corpora):
    texts = [(corpora / "german.txt").read_text(encoding="utf-8")]
    texts += ["Ελληνικά και русский текст, 日本語のテキストと中文文本。" * 3]
    words = count_texts(texts, TrainConfig()).to_dict()
    for chars in (1, 2, 3):
        assert _hf(words, 420, chars=chars).merge_pairs() == hf_reference(words, 420, chars)


def test_hf_mode_on_ascii_is_the_cap_in_bytes(corpora):
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")[:60_000]
    words = count_texts([text.encode("ascii", "ignore").decode()], TrainConfig()).to_dict()
    for mode in ("hf", "lexicographic"):
        by_chars = BpeTrainer(
            WordTable.from_counts(words),
            TrainConfig(vocab_size=700, tie_break=mode, max_token_chars=4),
        )
        by_bytes = BpeTrainer(
            WordTable.from_counts(words),
            TrainConfig(vocab_size=700, tie_break=mode, max_token_length=4),
        )
        by_chars.run()
        by_bytes.run()
        assert by_chars.merge_pairs() == by_bytes.merge_pairs()


def test_real_multilingual_text_against_the_reference(corpora):
    text = (corpora / "corpus.en").read_text(encoding="utf-8")[:15_000]
    text += "съешь же ещё этих мягких французских булок, да выпей чаю " * 30
    text += "いろはにほへと ちりぬるを わかよたれそ つねならむ " * 30
    words = count_texts([text], TrainConfig()).to_dict()
    config = TrainConfig(vocab_size=256 + 200, max_token_chars=3)
    expected, _, _ = train_reference_why(words, config.vocab_size, max_token_chars=3)
    trainer = BpeTrainer(WordTable.from_counts(words), config)
    trainer.run()
    assert trainer.merge_pairs() == expected
    assert max(map(utf8_chars, trainer.vocab)) == 3
    assert max(map(len, trainer.vocab)) > 3  # the cap is in characters, not bytes


def test_parity_aware_bpe_takes_it_too():
    """Exact against the slow reference in `test_parity.py`; here, from the API."""
    import workbench

    groups = {"ru": ["ёлки-палки ёлки\n" * 30], "en": ["hello there friend\n" * 30]}
    result = workbench.train(groups, 400, parity_by="lang", max_token_chars=3, progress=False)
    merged = [t for i, t in result.tokenizer.vocab.items() if i >= 256]
    assert max(map(utf8_chars, merged)) == 3 and max(map(len, merged)) == 6
    assert result.stop_reason == "max_token_length"


def test_cli_extend_takes_it(tmp_path):
    import workbench
    from workbench.store import RunStore
    from workbench.store.tokenizer_of_run import tokenizer_of_run

    base = workbench.train(["plain english words " * 40], 280, progress=False).tokenizer
    base.export("hf", tmp_path / "base")
    corpus, db = tmp_path / "c.txt", tmp_path / "runs.db"
    corpus.write_text("длинные слова, длиннее слова\n" * 40, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "extend", str(tmp_path / "base" / "tokenizer.json"),
         str(corpus), "--vocab-size", "400", "--max-token-chars", "2", "--db", str(db), "-q"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with RunStore(db) as store:
        (run,) = store.list_runs()
        assert run.settings["max_token_chars"] == 2
        added = tokenizer_of_run(store, run.id).vocab
    new = [added[i] for i in added if i >= len(base.vocab)]
    assert new and max(map(utf8_chars, new)) == 2 and max(map(len, new)) == 4
