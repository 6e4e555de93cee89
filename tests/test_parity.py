"""Parity-aware BPE (`engine.train.parity`): exact against the slow reference that recounts
everything per merge, on hand-made ties, random text and real multilingual text."""

from __future__ import annotations

import gzip
import json
import random
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from _parity_reference import parity_reference

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.groups import grouped_texts
from workbench.engine.errors import ConfigError, CorpusError
from workbench.engine.patterns.scripts import dominant_script
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.char_count import utf8_chars
from workbench.engine.train.parity import (
    GroupWords,
    ParityTrainer,
    count_groups,
    split_held_out,
)
from workbench.engine.train.parity_kernels import KernelParityTrainer
from workbench.engine.train.py_trainer import PyTrainer

MAN = Path("/usr/share/man")
# The Python trainer, the kernel one, and the kernel one from one-row tables (every table regrows)
TRAINERS = pytest.mark.parametrize(
    "trainer",
    [ParityTrainer, KernelParityTrainer, partial(KernelParityTrainer, start_rows=1)],
    ids=["python", "kernels", "kernels-regrown"],
)


def _table(words: dict[bytes, int]) -> WordTable:
    return WordTable.from_counts(words)


def _train(
    groups: list[tuple[dict, dict]],
    merges: int,
    min_frequency: int = 0,
    trainer=ParityTrainer,
    **window,
):
    config = TrainConfig(
        vocab_size=100_000, min_frequency=min_frequency, parity_by="lang", **window
    )
    trainer = trainer(
        [GroupWords(f"g{i}", _table(t), _table(d)) for i, (t, d) in enumerate(groups)], config
    )
    batches = list(trainer.batches(max_merges=merges, batch_seconds=None))
    return trainer, batches


def _check(
    groups: list[tuple[dict, dict]],
    merges: int,
    min_frequency: int = 0,
    window: int = 0,
    alpha: int = 2,
    cap: int = 0,
    trainer=ParityTrainer,
    chars: int = 0,
) -> int:
    """Trainer == reference, merge by merge; returns how many merges were compared."""
    expected = parity_reference(groups, merges, min_frequency, window, alpha, cap, chars)
    trainer, batches = _train(
        groups,
        merges,
        min_frequency,
        trainer,
        parity_window=window,
        parity_alpha=alpha,
        max_token_length=cap,
        max_token_chars=chars,
    )
    got_pairs = trainer.merge_pairs()
    assert got_pairs == [(a, b) for a, b, *_ in expected]
    assert trainer.chosen == [g for _, _, g, _, _ in expected]
    counts = np.concatenate([b.count for b in batches]) if batches else np.zeros(0)
    assert counts.tolist() == [c for *_, c, _ in expected]
    dev = np.concatenate([b.parity.dev_tokens for b in batches]) if batches else np.zeros((0,))
    assert dev.tolist() == [after for *_, after in expected]
    return len(expected)


def _counts(text: str) -> dict[bytes, int]:
    words: dict[bytes, int] = {}
    for piece in text.split(" "):
        if piece:
            key = piece.encode()
            words[key] = words.get(key, 0) + 1
    return words


@TRAINERS
def test_hand_made_ties_between_groups_and_pairs(trainer):
    # Both groups compress equally at first (group order decides), and every pair in each group
    # ties at first (the greatest bytes decide); the dev parts make the groups diverge.
    a = ({b"ab": 2, b"cd": 2, b"ba": 2}, {b"abab": 1})
    b = ({b"xy": 3, b"yx": 3}, {b"xyxy": 1, b"yxz": 1})
    assert _check([a, b], 8, trainer=trainer) == 5  # every pair merged: the last merges leave none


@TRAINERS
@pytest.mark.parametrize(("cap", "chars"), [(0, 0), (3, 0), (0, 2), (5, 2)])
def test_one_group_is_the_classic_trainer(cap, chars, trainer):
    text = "the cat sat on the mat with the hat that the bat had " * 3
    words = _counts(text + "aaaa aaa abab baba ééé éaé жжжж")
    caps = {"max_token_length": cap, "max_token_chars": chars}
    config = TrainConfig(vocab_size=100_000, parity_by="lang", **caps)
    parity = trainer([GroupWords("only", _table(words), _table({b"the": 1}))], config)
    batches = list(parity.batches(max_merges=40, batch_seconds=None))
    classic = PyTrainer(_table(words), TrainConfig(vocab_size=100_000, **caps), 100)
    expected = classic.step(40)
    assert parity.merge_pairs() == classic.merge_pairs()
    assert parity.merge_ids == classic.merge_ids
    assert parity.stop_reason == classic.stop_reason
    assert np.concatenate([b.ties for b in batches]).tolist() == expected.ties.tolist()


@TRAINERS
@pytest.mark.parametrize("seed", range(6))
def test_random_groups_with_many_ties(seed, trainer):
    rng = random.Random(seed)
    groups = []
    for _ in range(rng.randint(2, 4)):
        alphabet = rng.choice(["ab", "abc", "xyz", "aé", "日本"])

        def words(n: int, alphabet: str = alphabet) -> dict[bytes, int]:
            text = " ".join(
                "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(n)
            )
            return _counts(text)

        groups.append((words(rng.randint(5, 40)), words(rng.randint(1, 10))))
    assert _check(groups, 60, min_frequency=rng.choice([0, 0, 2]), trainer=trainer) > 0
    # the moving-window variant, with windows short enough to bind
    window, alpha = rng.choice([3, 5, 10]), rng.choice([1, 2])
    assert _check(groups, 60, window=window, alpha=alpha, trainer=trainer) > 0
    # a max token length (in bytes: 日 is 3), in characters, and both
    assert _check(groups, 60, cap=rng.choice([2, 3, 4]), trainer=trainer) > 0
    assert _check(groups, 60, chars=rng.choice([1, 2, 3]), trainer=trainer) > 0
    assert _check(groups, 60, cap=4, chars=2, trainer=trainer) > 0


@TRAINERS
def test_a_max_token_length_ends_training_with_its_reason(trainer):
    trainer, _ = _train([({b"abcd": 3}, {b"abcd": 1}), ({b"xy": 1}, {b"xy": 1})], 10,
                        trainer=trainer, max_token_length=2)  # fmt: skip
    assert all(len(a + b) <= 2 for a, b in trainer.merge_pairs())
    assert trainer.stop_reason == "max_token_length"


@TRAINERS
def test_a_max_token_length_in_characters_ends_training_with_its_reason(trainer):
    words = {"中文字".encode(): 3, "éa".encode(): 2}
    trainer, _ = _train([(words, words), ({b"xy": 1}, {b"xy": 1})], 30, trainer=trainer,
                        max_token_chars=2)  # fmt: skip
    made = [a + b for a, b in trainer.merge_pairs()]
    assert max(map(utf8_chars, made)) == 2 and max(map(len, made)) == 6  # two 3-byte characters
    assert trainer.stop_reason == "max_token_length"


@TRAINERS
def test_the_window_spreads_the_merges_over_groups(trainer):
    # group 0's held-out text holds no pair it trains on, so it stays at 1.0 bytes/token, the
    # worst (ties: group 0): the greedy rule takes it every time. With a window of 4 and alpha 1
    # (2 groups) a group may be chosen while it has at most 2 of the last 4, so at most 3 in 4
    a = ({b"abcdefgh": 5, b"ijklmnop": 5}, {b"qz": 3})
    b = ({b"stuvwxyz": 1}, {b"xyz": 1})
    greedy, _ = _train([a, b], 8, trainer=trainer)
    windowed, _ = _train([a, b], 8, trainer=trainer, parity_window=4, parity_alpha=1)
    assert greedy.chosen == [0] * 8
    assert windowed.chosen == [0, 0, 0, 1, 1, 0, 0, 0]
    assert all(windowed.chosen[i : i + 4].count(0) <= 3 for i in range(len(windowed.chosen) - 3))
    assert _check([a, b], 8, window=4, alpha=1, trainer=trainer) == 8


@TRAINERS
def test_stops_when_no_group_has_a_pair(trainer):
    trainer, _ = _train([({b"ab": 1}, {b"ab": 1}), ({b"c": 4}, {b"cc": 1})], 10, trainer=trainer)
    assert trainer.merge_pairs() == [(b"a", b"b")]
    assert trainer.stop_reason == "no_pairs"
    # the worst group (c: 1 byte per token) has no pair: the other group's pair is taken
    assert trainer.chosen == [0]


def _man_pages(lang: str, most_bytes: int) -> list[str]:
    folder = MAN / lang / "man1"
    if not folder.is_dir():
        pytest.skip(f"no {lang} man pages at {folder}")
    texts, size = [], 0
    for path in sorted(folder.glob("*.gz")):
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        texts.append(text)
        size += len(text.encode())
        if size >= most_bytes:
            break
    return texts


@pytest.fixture(scope="module")
def multilingual(corpora) -> dict[str, list[str]]:
    # german.txt is one paragraph, too short to hold lines out: German man pages instead
    groups = {lang: _man_pages(lang, 12_000) for lang in ("ja", "ko", "ru", "zh_CN", "de")}
    groups["en"] = [(corpora / "tinyshakespeare.txt").read_text()[:12_000]]
    return groups


@TRAINERS
def test_real_multilingual_text_against_the_reference(multilingual, trainer):
    config = TrainConfig(vocab_size=100_000, parity_by="lang")
    counted = count_groups(multilingual, config)
    groups = [
        (
            {g.train.word(i): int(g.train.counts[i]) for i in range(len(g.train))},
            {g.dev.word(i): int(g.dev.counts[i]) for i in range(len(g.dev))},
        )
        for g in counted
    ]
    assert _check(groups, 120, trainer=trainer) == 120


def test_parity_narrows_the_gap_that_classic_bpe_leaves(multilingual):
    config = TrainConfig(vocab_size=100_000, parity_by="lang")
    counted = count_groups(multilingual, config)
    parity = ParityTrainer(counted, config)
    list(parity.batches(max_merges=300, batch_seconds=None))
    # classic BPE on the pooled training text, measured on the same held-out parts
    pooled: dict[bytes, int] = {}
    for g in counted:
        for i in range(len(g.train)):
            pooled[g.train.word(i)] = pooled.get(g.train.word(i), 0) + int(g.train.counts[i])
    one = ParityTrainer([GroupWords("all", _table(pooled), counted[0].dev)], config)
    list(one.batches(max_merges=300, batch_seconds=None))
    classic = _replay(counted, one.merge_pairs())
    assert min(parity.compression()) > min(classic)
    assert len(set(parity.chosen)) == len(counted)  # every group drove some merges


def _replay(groups: list[GroupWords], merges: list[tuple[bytes, bytes]]) -> list[float]:
    """Each group's held-out bytes per token under `merges` (naively)."""
    out = []
    for g in groups:
        tokens = 0
        for i in range(len(g.dev)):
            word = [bytes([b]) for b in g.dev.word(i)]
            for left, right in merges:
                j, merged = 0, []
                while j < len(word):
                    if j + 1 < len(word) and word[j] == left and word[j + 1] == right:
                        merged.append(left + right)
                        j += 2
                    else:
                        merged.append(word[j])
                        j += 1
                word = merged
            tokens += len(word) * int(g.dev.counts[i])
        out.append(g.dev.total_bytes / tokens)
    return out


def test_held_out_lines_are_every_tenth_across_documents():
    docs = ["".join(f"{d}-{i}\n" for i in range(7)) for d in range(3)]
    train, dev = split_held_out(docs)
    assert dev == ["1-2\n", "2-5\n"]  # lines 10 and 20 of 21
    assert sum(t.count("\n") for t in train) == 19


def test_a_group_too_small_to_hold_out_is_named():
    with pytest.raises(ConfigError, match="'tiny'"):
        count_groups({"tiny": ["one line\n"]}, TrainConfig(parity_by="lang"))


def test_dominant_script():
    assert dominant_script("Привет, world") == "Cyrillic"
    assert dominant_script("これは日本語です") == "Japanese"
    assert dominant_script("这是中文") == "Han"
    assert dominant_script("한국어 텍스트") == "Korean"
    assert dominant_script("Straße") == "Latin"
    assert dominant_script("123 !?") == "Unknown"


def test_groups_from_a_field_a_folder_and_the_script(tmp_path):
    records = [{"text": "hello there", "lang": "en"}, {"text": "Привет"}, {"text": "x", "lang": ""}]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert grouped_texts([jsonl], "lang") == {
        "Cyrillic": ["Привет"],
        "Latin": ["x"],
        "en": ["hello there"],
    }
    for lang, text in (("de", "Guten Tag"), ("ru", "Добрый день")):
        (tmp_path / "by" / lang).mkdir(parents=True)
        (tmp_path / "by" / lang / "a.txt").write_text(text)
    assert grouped_texts([tmp_path / "by"], "folder") == {
        "de": ["Guten Tag"],
        "ru": ["Добрый день"],
    }
    assert grouped_texts([tmp_path / "by"], "script") == {
        "Cyrillic": ["Добрый день"],
        "Latin": ["Guten Tag"],
    }


def test_config_refuses_hf_ties_and_unknown_grouping():
    with pytest.raises(ConfigError, match="lexicographically"):
        TrainConfig(parity_by="lang", tie_break="hf")
    with pytest.raises(ConfigError, match="parity-by"):
        TrainConfig(parity_by="country")
    with pytest.raises(ConfigError, match="SuperBPE"):
        TrainConfig(parity_by="lang", vocab_size=1000, superbpe_transition=500)
    with pytest.raises(ConfigError, match="parity window"):
        TrainConfig(parity_window=10)
    with pytest.raises(ConfigError, match="alpha"):
        TrainConfig(parity_by="lang", parity_window=10, parity_alpha=0)


def test_a_bad_file_stops_grouping_or_is_left_out_whole(tmp_path):
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "good.txt").write_text("hello\n")
    (tmp_path / "en" / "bad.jsonl").write_text('{"text": "kept?"}\nnot json\n')
    with pytest.raises(CorpusError, match="bad.jsonl"):
        grouped_texts([tmp_path], "folder")
    skipped: list[str] = []
    assert grouped_texts([tmp_path], "folder", skipped=skipped) == {"en": ["hello\n"]}
    assert len(skipped) == 1 and "bad.jsonl" in skipped[0]


@TRAINERS
def test_long_words_take_the_kernels_position_lists(trainer):
    # a word of LONG_WORD (1024) symbols or more is merged by its pairs' positions in the kernel
    rng = random.Random(7)
    long_word = "".join(rng.choice("abc") for _ in range(1500)).encode()
    a = ({long_word: 2, b"abcabc": 3}, {long_word[:1100]: 1, b"cab": 2})
    b = ({b"xyxyx": 4, b"abab": 1}, {b"xyab": 1})
    assert _check([a, b], 80, trainer=trainer) == 80


@pytest.mark.parametrize(
    "settings",
    [{}, {"parity_window": 40, "parity_alpha": 1}, {"max_token_length": 5, "min_frequency": 3}],
    ids=["greedy", "window", "cap-and-min-frequency"],
)
def test_kernels_make_the_python_trainers_merges_on_real_text(multilingual, settings):
    config = TrainConfig(vocab_size=256 + 1200, parity_by="lang", **settings)
    counted = count_groups(multilingual, config)
    python = ParityTrainer(counted, config)
    kernels = KernelParityTrainer(counted, config, start_rows=64)
    expected = list(python.batches(batch_seconds=None))
    got = list(kernels.batches(batch_seconds=0.002))  # many batches: state kept across calls
    assert kernels.merge_pairs() == python.merge_pairs()
    assert kernels.merge_ids == python.merge_ids
    assert kernels.chosen == python.chosen
    assert kernels.stop_reason == python.stop_reason
    assert kernels.dev_tokens == python.dev_tokens
    for column in ("count", "ties", "corpus_tokens", "is_new"):
        want = np.concatenate([getattr(b, column) for b in expected])
        assert np.concatenate([getattr(b, column) for b in got]).tolist() == want.tolist()
    dev = np.concatenate([b.parity.dev_tokens for b in got])
    assert dev.tolist() == np.concatenate([b.parity.dev_tokens for b in expected]).tolist()
    ties = np.concatenate([b.ties for b in got])
    assert (ties > 0).sum() > 100  # real ties were met and broken alike
    assert len(set(kernels.chosen)) > 1


def test_the_kernel_trainer_checks_ids_before_a_kernel_sees_them():
    words = _table({b"abab": 2, b"ba": 1})
    trainer = KernelParityTrainer([GroupWords("a", words, words)], TrainConfig(parity_by="lang"))
    for pair, new in (((300, 97), 256), ((97, 98), 5000), ((-1, 98), 256)):
        with pytest.raises(ValueError, match="outside"):
            trainer._merge_into(pair, new)
    list(trainer.batches(batch_seconds=None))
    python = ParityTrainer([GroupWords("a", words, words)], TrainConfig(parity_by="lang"))
    list(python.batches(batch_seconds=None))
    assert trainer.merge_pairs() == python.merge_pairs()  # the refused calls changed nothing
    assert trainer.dev_tokens == python.dev_tokens
    assert all(state.hp.shape[0] <= 16 for state in trainer._dev)  # held-out: no heap kept
    # the states read back from the kernels' list: the byte figures of every one of them
    sizes = trainer.state_bytes()
    assert sizes["hp"] == sum(s.hp.nbytes for s in (*trainer._train, *trainer._dev))
