"""A maximum token length: no merge makes a longer token, in both tie-break modes, in the kernels,
the Python trainer and the slow reference alike; training ends with its own reason when only
too-long pairs are left, and never with a merge of a pair seen zero times (HF issue #2320). What
it shares with the cap in characters (`test_max_token_chars.py`) is tested here for both units:
the refused values, the clean end, the API, the CLI and the stored settings."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference_why

from workbench.engine.byte_mapping import from_mapped, to_mapped
from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.char_count import utf8_chars
from workbench.engine.train.py_trainer import PyTrainer
from workbench.engine.train.trainer import TIE_LIMIT, BpeTrainer

FIELDS = ("left", "right", "new_id", "count", "is_new", "ties", "corpus_tokens")

small_words = st.dictionaries(
    st.binary(min_size=1, max_size=12).map(lambda b: bytes(x % 4 + 97 for x in b)),
    st.integers(1, 5),
    min_size=1,
    max_size=14,
)


def kernel_run(words: dict[bytes, int], config: TrainConfig) -> BpeTrainer:
    trainer = BpeTrainer(WordTable.from_counts(words), config)
    trainer.run()
    return trainer


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(1, 80), cap=st.integers(1, 6))
def test_kernels_match_the_reference_with_a_cap(words, extra, cap):
    # A four-letter alphabet: ties, overlaps, reused bytes and capped pairs are all common.
    config = TrainConfig(vocab_size=256 + extra, max_token_length=cap)
    expected, counts, reason = train_reference_why(words, config.vocab_size, max_token_length=cap)
    trainer = BpeTrainer(WordTable.from_counts(words), config)
    got = [int(c) for batch in trainer.batches(batch_seconds=0.0001) for c in batch.count]
    assert trainer.merge_pairs() == expected
    assert got == counts
    assert min(got, default=1) >= 1  # never a merge of a pair seen zero times
    assert trainer.stop_reason == reason
    assert max(map(len, trainer.vocab)) <= max(cap, 1)


@settings(max_examples=examples(1.5), deadline=None)
@given(words=small_words, extra=st.integers(0, 80), cap=st.integers(2, 7))
def test_python_trainer_matches_the_kernels_with_a_cap(words, extra, cap):
    table = WordTable.from_counts(words)
    config = TrainConfig(vocab_size=256 + extra, max_token_length=cap)
    fast, slow = BpeTrainer(table, config), PyTrainer(table, config, TIE_LIMIT)
    for n in [3, 1, 5] * 100:
        a, b = fast.step(n), slow.step(n)
        for name in FIELDS:  # ties too: a capped pair is no tie in either
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert fast.stop_reason == slow.stop_reason
        if fast.stop_reason is not None:
            return
    raise AssertionError("training did not end")


def test_real_text_against_the_reference(corpora):
    text = (corpora / "corpus.en").read_text(encoding="utf-8")[:40_000]
    words = count_texts([text], TrainConfig()).to_dict()
    config = TrainConfig(vocab_size=256 + 250, max_token_length=4)
    expected, counts, _ = train_reference_why(words, config.vocab_size, max_token_length=4)
    trainer = kernel_run(words, config)
    assert trainer.merge_pairs() == expected
    uncapped = kernel_run(words, TrainConfig(vocab_size=config.vocab_size))
    assert max(map(len, uncapped.vocab)) > 4  # the cap changed something
    assert max(map(len, trainer.vocab)) == 4


# -- HF tie-break against Hugging Face tokenizers' own max_token_length -------------------------
#
# HF's cap is not a clean one: a pair formed by a merge is counted only when its two symbols'
# UTF-8 lengths in the byte-level alphabet sum to LESS than max_token_length (word.rs), while
# the popped pair is refused only when its token has MORE characters. On text of printable ASCII
# without whitespace (mapped to itself: one character, one byte) HF's max_token_length = cap + 1
# is exactly our cap, so there the merges must be identical, HF's other quirks included.


def hf_merges(documents: list[str], vocab_size: int, cap: int) -> list[tuple[str, str]]:
    pytest.importorskip("tokenizers")  # (these tests only: the rest of the file runs without it)
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        max_token_length=cap + 1,  # see above
    )
    tokenizer.train_from_iterator(documents, trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def our_hf_merges(documents: list[str], vocab_size: int, cap: int) -> list[tuple[str, str]]:
    config = TrainConfig(vocab_size=vocab_size, tie_break="hf", max_token_length=cap)
    trainer = BpeTrainer(count_texts(documents, config), config)
    trainer.run()
    assert max(map(len, trainer.vocab)) <= cap
    return [(to_mapped(a), to_mapped(b)) for a, b in trainer.merge_pairs()]


_pieces = st.sampled_from(list("abcab.,'!019") + ["'s", "ab", "aaa", "abab", "cc"])
_texts = st.lists(_pieces, min_size=1, max_size=50).map("".join)


@settings(max_examples=examples(1.0), deadline=None)
@given(documents=st.lists(_texts, min_size=1, max_size=8), extra=st.integers(1, 80),
       cap=st.integers(2, 6))  # fmt: skip
def test_hf_mode_matches_hugging_face_with_a_cap(documents, extra, cap):
    assert our_hf_merges(documents, 256 + extra, cap) == hf_merges(documents, 256 + extra, cap)


def test_hf_mode_matches_hugging_face_on_real_words(corpora):
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")[:150_000]
    words = [w for w in text.split() if w.isascii() and w.isprintable()]
    assert our_hf_merges(words, 900, 5) == hf_merges(words, 900, 5)


# -- what both caps share: bytes (`max_token_length`) and characters (`max_token_chars`) ----------
#
# Each behaviour once per unit; what only the cap in characters does (the count's rule, cut
# characters, parity-aware BPE, `extend`) is in `test_max_token_chars.py`.


class Unit(NamedTuple):
    setting: str  # TrainConfig's field, the API's keyword and the stored setting's key
    option: str  # the CLI's
    says: str  # what an error names
    measure: Callable[[bytes], int]  # a token's length in this unit
    text: str  # the API's corpus, where the cap is reached


BYTES = Unit("max_token_length", "--max-token-length", "max token length", len, "lengthy words ")
CHARS = Unit(
    "max_token_chars", "--max-token-chars", "max token chars", utf8_chars, "ёлки-палки ёлки "
)
UNITS = [pytest.param(BYTES, id="bytes"), pytest.param(CHARS, id="characters")]


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, 2**31])
def test_bad_caps_are_refused(unit, bad):
    with pytest.raises(ConfigError, match=unit.says):
        TrainConfig(**{unit.setting: bad})


@pytest.mark.parametrize(
    ("unit", "words", "cap"),
    [
        pytest.param(BYTES, {b"abcdef": 3, b"xy": 1}, 3, id="bytes"),
        pytest.param(CHARS, {"中文字".encode(): 3, b"xy": 1}, 2, id="characters"),
    ],
)
def test_training_ends_cleanly_when_only_too_long_pairs_are_left(unit, words, cap):
    trainer = kernel_run(words, TrainConfig(vocab_size=1000, **{unit.setting: cap}))
    assert trainer.stop_reason == "max_token_length" and trainer.done
    assert max(map(unit.measure, trainer.vocab)) == cap
    assert all(c >= 1 for c in trainer.merge_ids)  # (ids; counts are checked above)


def test_a_cap_in_bytes_with_nothing_left_or_nothing_allowed():
    # Nothing left at all is still "no_pairs", cap or not.
    assert kernel_run({b"ab": 2}, TrainConfig(vocab_size=1000, max_token_length=3)).stop_reason == (
        "no_pairs"
    )
    # A cap of 1 allows no merge: it ends at once, saying why.
    none = kernel_run({b"ab": 2}, TrainConfig(vocab_size=1000, max_token_length=1))
    assert none.n_merges == 0 and none.stop_reason == "max_token_length"


@pytest.mark.parametrize(
    ("unit", "most_bytes"), [(BYTES, 3), (CHARS, 6)], ids=["bytes", "characters"]
)
def test_api_trains_with_a_cap(unit, most_bytes):
    import workbench

    result = workbench.train([unit.text * 50], 400, progress=False, **{unit.setting: 3})
    merged = [t for i, t in result.tokenizer.vocab.items() if i >= 256]
    assert max(map(utf8_chars, merged)) == 3 and max(map(len, merged)) == most_bytes
    assert result.stop_reason == "max_token_length"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("unit", "line_of_text"),
    [
        pytest.param(BYTES, "lengthy words, longer words\n", id="bytes"),
        pytest.param(CHARS, "длинные слова, длиннее слова\n", id="characters"),
    ],
)
def test_cli_trains_with_a_cap_stores_it_and_shows_it(tmp_path, unit, line_of_text):
    corpus, db = tmp_path / "c.txt", tmp_path / "runs.db"
    corpus.write_text(line_of_text * 40, encoding="utf-8")
    proc = _cli("train", str(corpus), "--vocab-size", "400", unit.option, "4",
                "--out-dir", str(tmp_path / "out"), "--db", str(db), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    merges = (tmp_path / "out" / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert max(unit.measure(from_mapped(line.replace(" ", ""))) for line in merges) == 4
    shown = _cli("runs", "show", "1", "--json", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    assert described["settings"][unit.setting] == 4
    assert described["stop_reason"] == "max_token_length"
    bad = _cli("train", str(corpus), "--vocab-size", "400", unit.option, "-2",
               "--out-dir", str(tmp_path / "out2"), "--no-db")  # fmt: skip
    assert bad.returncode in (1, 2) and unit.says in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("unit", UNITS)
def test_stored_settings_old_and_new(unit):
    from workbench.session.run import stored_config

    old = {"vocab_size": 300, "pattern": "gpt2", "special_tokens": [], "tie_break": "hf"}
    assert getattr(stored_config(old, 400), unit.setting) == 0  # a run stored before the setting
    stored = stored_config({**old, unit.setting: 5}, 400)
    assert getattr(stored, unit.setting) == 5


def test_a_continued_run_keeps_its_cap(tmp_path, corpora):
    import workbench
    from workbench.store import RunStore

    db = tmp_path / "runs.db"
    corpus = tmp_path / "c.txt"
    corpus.write_text((corpora / "corpus.en").read_text(encoding="utf-8")[:20_000], "utf-8")
    first = workbench.train(corpus, 270, max_token_length=4, db=db, progress=False)
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "runs", "continue", str(first.run_id),
         "--vocab-size", "330", "--db", str(db), "-q"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with RunStore(db) as store:
        pairs = store.merges_as_pairs(first.run_id)
        run = store.get_run(first.run_id)
    assert len(pairs) == 330 - 256 and max(len(a + b) for a, b in pairs) == 4
    uncapped = workbench.train(corpus, 330, progress=False).merges
    assert max(len(a + b) for a, b in uncapped) > 4  # so the cap held past the first run
    assert run.settings["max_token_length"] == 4
