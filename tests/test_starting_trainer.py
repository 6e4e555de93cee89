"""A first start trains at once: the Python trainer makes the kernels' merges, and a run moves
to the kernels mid-way without a visible seam (same merges, ids, counts, ties, stored rows)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.py_trainer import PyTrainer
from workbench.engine.train.starting import StartingTrainer, python_can_start, trainer_for
from workbench.engine.train.trainer import TIE_LIMIT, BpeTrainer

FIELDS = ("left", "right", "new_id", "count", "is_new", "ties", "corpus_tokens")


def assert_same_batches(fast, slow, sizes) -> None:
    """Step both trainers by the same batch sizes; every column of every batch must agree."""
    for n in sizes:
        a, b = fast.step(n), slow.step(n)
        for name in FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), (name, a.start_rank)
        assert a.tokens == b.tokens and a.vocab_size == b.vocab_size
        assert fast.stop_reason == slow.stop_reason
        assert fast.corpus_tokens == slow.corpus_tokens
        if fast.stop_reason is not None:
            return
    raise AssertionError("training did not end")


words_strategy = st.dictionaries(
    st.binary(min_size=1, max_size=10).map(lambda b: bytes(x % 5 + 97 for x in b)),
    st.integers(1, 6),
    min_size=1,
    max_size=30,
)


@settings(max_examples=examples(3), deadline=None)
@given(words=words_strategy, extra=st.integers(0, 120), min_frequency=st.sampled_from([0, 2, 4]))
def test_python_and_numba_trainers_agree_on_random_words(words, extra, min_frequency):
    table = WordTable.from_counts(words)
    config = TrainConfig(vocab_size=256 + extra, min_frequency=min_frequency)
    sizes = [random.Random(extra).randint(1, 9) for _ in range(10_000)]
    assert_same_batches(BpeTrainer(table, config), PyTrainer(table, config, TIE_LIMIT), sizes)


@pytest.mark.parametrize(("name", "vocab"), [("corpus.en", 500), ("tinyshakespeare.txt", 1500)])
def test_python_and_numba_trainers_agree_on_real_text(name, vocab, corpora):
    path = corpora / name
    words = WordTable.from_counts(scanner.count_pieces(path.read_bytes(), "gpt2"))
    config = TrainConfig(vocab_size=vocab, special_tokens=("<|endoftext|>",))
    fast, slow = BpeTrainer(words, config), PyTrainer(words, config, TIE_LIMIT)
    assert_same_batches(fast, slow, [1, 7, 64] + [200] * 100)
    assert slow.merge_pairs() == fast.merge_pairs()


def test_a_run_moves_to_the_kernels_at_a_batch_boundary_with_the_same_merges():
    words = WordTable.from_counts(
        scanner.count_pieces(b"the cat sat on the mat; the rat ate the hat " * 50, "gpt2")
    )
    config = TrainConfig(vocab_size=300)
    ready = threading.Event()
    trainer = trainer_for(words, config, ready.is_set)
    assert isinstance(trainer, StartingTrainer) and trainer.in_python
    first = list(trainer.step(5).tokens)
    assert trainer.in_python and trainer.n_merges == 5
    ready.set()  # the kernels are compiled now
    rest = [token for batch in trainer.batches() for token in batch.tokens]
    assert not trainer.in_python and isinstance(trainer.current, BpeTrainer)
    straight = BpeTrainer(words, config)
    straight.run()
    assert first + rest == [straight.vocab[i] for i in straight.merge_ids]
    assert trainer.merge_pairs() == straight.merge_pairs()
    assert trainer.stop_reason == straight.stop_reason and len(rest) > 5


def test_who_starts_a_run():
    small = WordTable.from_counts({b"hello": 3, b"world": 2})
    lex, hf = TrainConfig(vocab_size=300), TrainConfig(vocab_size=300, tie_break="hf")
    assert python_can_start(small, lex) and not python_can_start(small, hf)
    assert isinstance(trainer_for(small, lex, lambda: False), StartingTrainer)
    assert isinstance(trainer_for(small, lex, lambda: True), BpeTrainer)  # compiled already
    assert isinstance(trainer_for(small, lex, None), BpeTrainer)  # nobody compiles meanwhile
    assert isinstance(trainer_for(small, hf, lambda: False), BpeTrainer)  # HF: kernels only
    with pytest.raises(ValueError, match="LEX"):
        PyTrainer(small, hf, TIE_LIMIT)


def test_a_first_start_trains_at_once_on_the_command_line(tmp_path, corpora):
    """From an empty Numba cache, `train` does not wait for the compiler on a small corpus and
    writes the same files as a warm run; the compile it started goes on, detached from it."""
    corpus = corpora / "corpus.en"
    argv = [sys.executable, "-m", "workbench", "train", str(corpus), "--vocab-size", "400"]
    cold = subprocess.run(
        [*argv, "--no-db", "--out", str(tmp_path / "cold")],
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache")),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert cold.returncode == 0, cold.stderr[-2000:]
    assert "training starts at once in Python" in cold.stderr
    warm = subprocess.run(
        [*argv, "--no-db", "--out", str(tmp_path / "warm")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert "first use" not in warm.stderr
    for name in ("merges.txt", "vocab.json"):
        assert (tmp_path / "cold" / name).read_bytes() == (tmp_path / "warm" / name).read_bytes()
    helpers = _processes_with(f"NUMBA_CACHE_DIR={tmp_path / 'cache'}".encode())
    for pid in helpers:  # still compiling: detached (their own session), so they outlive `train`
        assert os.getsid(int(pid)) == int(pid)
        os.kill(int(pid), signal.SIGTERM)  # this test's own helpers: spare the shared machine


def _processes_with(setting: bytes) -> list[str]:
    """Processes whose environment holds `setting` (the cold run's helper would)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if setting + b"\0" in environ.read_bytes() + b"\0":
                found.append(environ.parent.name)
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def test_the_window_worker_trains_in_python_then_moves_to_the_kernels(qapp, tmp_path, monkeypatch):
    """A first start in the window: nobody has compiled yet (both events unset, nothing in the
    cache), so a small corpus is counted with `regex` and trained in Python at once; when the
    kernels are ready the status says "Training" again, and the stored merges equal a warm
    run's."""
    from workbench.gui.worker import TRAINING_IN_PYTHON, TrainWorker
    from workbench.session import startup
    from workbench.store import RunStore

    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))  # a first start

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat; the rat ate the hat\n" * 200, encoding="utf-8")
    config = TrainConfig(vocab_size=320)
    db = tmp_path / "runs.db"
    warm = threading.Event()
    worker = TrainWorker(db, warm, threading.Event())
    stages: list[str] = []
    worker.sigStage.connect(stages.append)
    worker.sigBatch.connect(lambda _batch: warm.set())  # compiled after the first batch
    worker.train((str(corpus),), config)
    assert stages.index("Reading the corpus") < stages.index(TRAINING_IN_PYTHON)
    assert stages.index(TRAINING_IN_PYTHON) < stages.index("Training")
    run_id = worker.run_id
    worker.finish()
    straight = BpeTrainer(
        WordTable.from_counts(scanner.count_pieces(corpus.read_bytes(), "gpt2")), config
    )
    straight.run()
    with RunStore(db) as store:
        stored = [(m.left_id, m.right_id, m.new_id) for m in store.merges(run_id, limit=10_000)]
    assert stored == [
        (a, b, i) for (a, b), i in zip(straight.merges, straight.merge_ids, strict=True)
    ]
