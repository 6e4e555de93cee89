"""The runner-up count of each merge (the best pair that lost) against a slow recount, for the
kernels in both tie-breaks and for the Python trainer of a first start."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import runner_ups_reference

from workbench.engine.config import TrainConfig
from workbench.engine.patterns.regexes import GPT2, compile_pattern
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.py_trainer import PyTrainer
from workbench.engine.train.trainer import TIE_LIMIT, BpeTrainer

EXAMPLES = examples(0.5)


def explained(words: dict[bytes, int], vocab_size: int, tie_break: str, python: bool = False):
    """(merges as byte pairs, counts, ties, runner-ups) from a trainer counting ties."""
    config = TrainConfig(vocab_size=vocab_size, tie_break=tie_break)
    table = WordTable.from_counts(words)
    trainer = PyTrainer(table, config, TIE_LIMIT) if python else BpeTrainer(table, config)
    batches = []
    while True:
        batch = trainer.step(7)  # several batches: the column is carried across them
        batches.append(batch)
        if len(batch) < 7:
            break
    column = lambda name: np.concatenate([getattr(b, name) for b in batches]).tolist()  # noqa: E731
    return trainer.merge_pairs(), column("count"), column("ties"), column("runner_up")


def check(words: dict[bytes, int], vocab_size: int, tie_break: str, python: bool = False) -> int:
    """Checks every merge's runner-up against the recount; returns how many merges it checked."""
    merges, counts, ties, runner_ups = explained(words, vocab_size, tie_break, python)
    assert runner_ups == runner_ups_reference(words, merges, counts)
    for count, tied, runner_up in zip(counts, ties, runner_ups, strict=True):
        assert (runner_up == count) == (tied > 0)
    return len(merges)


def pieces(text: str) -> dict[bytes, int]:
    words: dict[bytes, int] = {}
    for piece in compile_pattern(GPT2).findall(text):
        words[piece.encode()] = words.get(piece.encode(), 0) + 1
    return words


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_runner_up_on_real_text(corpora, tie_break):
    text = (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8")[:6000]
    assert check(pieces(text), 256 + 150, tie_break) == 150


def test_python_trainer_gives_the_kernels_runner_ups(corpora):
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")[:5000]
    words = pieces(text)
    assert explained(words, 256 + 150, "lexicographic", python=True) == explained(
        words, 256 + 150, "lexicographic"
    )
    assert check(words, 256 + 150, "lexicographic", python=True) == 150


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_runner_up_on_random_text(tie_break):
    rng = random.Random(30)
    text = "".join(rng.choice("aab  ba\nab") for _ in range(3000))
    assert check(pieces(text), 256 + 120, tie_break) > 60  # the alphabet runs out of pairs


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    words=st.dictionaries(
        st.binary(min_size=1, max_size=12).map(lambda b: bytes(x % 4 + 97 for x in b)),
        st.integers(1, 5),
        min_size=1,
        max_size=12,
    ),
    extra=st.integers(1, 60),
    tie_break=st.sampled_from(["lexicographic", "hf"]),
)
def test_runner_up_small_alphabet(words, extra, tie_break):
    # Four letters: ties, overlaps (`aaa`) and stale heap entries on almost every merge.
    check(words, 256 + extra, tie_break)
    if tie_break == "lexicographic":
        check(words, 256 + extra, tie_break, python=True)


def test_without_explanations_the_runner_up_is_not_computed():
    trainer = BpeTrainer(WordTable.from_counts({b"abcabc": 3}), TrainConfig(vocab_size=260), 0)
    batch = trainer.step(10)
    assert len(batch) and batch.runner_up.tolist() == [-1] * len(batch)
    python = PyTrainer(WordTable.from_counts({b"abcabc": 3}), TrainConfig(vocab_size=260), 0)
    assert python.step(10).runner_up.tolist() == [-1] * len(batch)


def test_golden_runner_ups():
    # aaabdaaabac: (a,a) 4 beats (a,b) 2; (aa,a) 2 ties (a,b) 2; (aaa,b) 2 beats the pairs at 1;
    # then four pairs tie at 1.
    merges, counts, ties, runner_ups = explained({b"aaabdaaabac": 1}, 256 + 4, "lexicographic")
    assert counts == [4, 2, 2, 1]
    assert runner_ups == [2, 2, 1, 1]
