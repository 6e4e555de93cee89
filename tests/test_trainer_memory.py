"""The trainer's memory handling changes no merge: tables that start tiny and grow in the
middle of a batch (the merge loop returns to free their old copies, then goes on), and a
trainer released before its files are written."""

from __future__ import annotations

import pytest
from _bpe_helpers import examples, trained
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.trainer import BpeTrainer

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError

EXAMPLES = examples(2)

# Many distinct pairs from few documents: tables of a few rows regrow many times per batch.
_parts = st.sampled_from(["ab", "ba", "aaa", "xyz", "zy", "é", "日本", "q", "  ", "\n", "1"])
_texts = st.lists(_parts, min_size=1, max_size=60).map("".join)


def _run(trainer: BpeTrainer) -> list[tuple[int, int, int, int]]:
    """(count, ties, corpus tokens, new id) of every merge, trained in one batch."""
    return [
        (int(b.count[i]), int(b.ties[i]), int(b.corpus_tokens[i]), int(b.new_id[i]))
        for b in trainer.batches(batch_seconds=None)
        for i in range(len(b))
    ]


@settings(max_examples=EXAMPLES, deadline=None)
@given(docs=st.lists(_texts, min_size=1, max_size=8), extra=st.integers(1, 120))
@pytest.mark.parametrize("start_rows", [1, 3, 16])
def test_growing_tables_match_the_reference(start_rows, docs, extra):
    config = TrainConfig(vocab_size=256 + extra)
    words = count_texts(docs, config)
    expected, counts = train_reference(words.to_dict(), config.vocab_size)
    trainer = BpeTrainer(words, config, start_rows=start_rows)
    got = _run(trainer)
    assert trainer.merge_pairs() == expected
    assert [g[0] for g in got] == counts


@settings(max_examples=EXAMPLES, deadline=None)
@given(docs=st.lists(_texts, min_size=1, max_size=8), extra=st.integers(1, 120))
@pytest.mark.parametrize("tie_break", ["hf", "lexicographic"])
def test_growing_tables_change_nothing(tie_break, docs, extra):
    # HF mode has no slow reference here: the default capacities (no growth in a batch this
    # small) are the yardstick, down to the tie figures and corpus token counts.
    config = TrainConfig(vocab_size=256 + extra, tie_break=tie_break)
    words = count_texts(docs, config)
    roomy = BpeTrainer(words, config)
    tiny = BpeTrainer(words, config, start_rows=1)
    assert _run(tiny) == _run(roomy)
    assert tiny.merges == roomy.merges
    assert tiny.vocab == roomy.vocab


def test_tables_grow_mid_batch_on_real_text(corpora):
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")
    config = TrainConfig(vocab_size=256 + 600)
    words = count_texts([text], config)
    tiny = BpeTrainer(words, config, start_rows=2)
    before = tiny.state_bytes()["pr"]
    got = _run(tiny)
    assert tiny.state_bytes()["pr"] > 4 * before  # it grew, more than once
    assert tiny.merge_pairs() == train_reference(words.to_dict(), config.vocab_size)[0]
    assert got == _run(BpeTrainer(words, config))


def test_start_rows_is_checked():
    with pytest.raises(ValueError, match="start_rows"):
        BpeTrainer(WordTable.from_counts({b"ab": 1}), TrainConfig(vocab_size=260), start_rows=0)


def test_released_trainer_keeps_its_results_and_refuses_more():
    words = WordTable.from_counts({b"hello": 5, b"world": 3, b"help": 2})
    trainer = BpeTrainer(words, TrainConfig(vocab_size=300))
    trainer.step(4)
    merges, vocab = trainer.merge_pairs(), trainer.vocab_bytes()
    figures = (trainer.n_tokens, trainer.vocab_size, trainer.corpus_tokens)
    trainer.release()
    assert trainer.state_bytes() == {}
    assert trainer.merge_pairs() == merges
    assert trainer.vocab_bytes() == vocab
    assert (trainer.n_tokens, trainer.vocab_size, trainer.corpus_tokens) == figures
    with pytest.raises(WorkbenchError, match="released"):
        trainer.step(1)


def test_files_written_after_release_are_the_same(tmp_path):
    # The command line releases the trainer before it writes the files.
    config = TrainConfig(vocab_size=256 + 80)
    docs = ["the cat sat on the mat; the hat sat on the cat. " * 5, "mat hat cat 123 456"]
    kept, released = trained(docs, config), trained(docs, config)
    released.release_trainer()
    for name, session in (("kept", kept), ("released", released)):
        session.export(["gpt2"], tmp_path / name)
    for file in ("vocab.json", "merges.txt"):
        assert (tmp_path / "released" / file).read_bytes() == (
            tmp_path / "kept" / file
        ).read_bytes()
    assert released.trainer.vocab_size == kept.trainer.vocab_size > 256
