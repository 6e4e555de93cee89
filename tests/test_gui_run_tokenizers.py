"""A stored run's tokenizer is built once for every lane that asks at the same time (opening a
run asks twice: the Tokens tab and teaching's sample), and built again when the run changed."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("PySide6")

from workbench.gui import tokens_tab  # noqa: E402
from workbench.store import RunStore  # noqa: E402
from workbench.store.synthetic import synthetic_batches  # noqa: E402
from workbench.store.tokenizer_of_run import stored_tokenizer  # noqa: E402


@pytest.fixture
def run(tmp_path):
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        run_id = store.create_run("synthetic")
        writer = store.writer(run_id)
    batches = synthetic_batches(600, batch_size=300, seed=5)
    writer.write(next(batches))
    yield path, run_id, writer, batches
    writer.close()


def test_asks_at_the_same_time_share_one_build_and_a_changed_run_is_built_again(run, monkeypatch):
    path, run_id, writer, batches = run
    cache = tokens_tab.RunTokenizers()
    monkeypatch.setattr(tokens_tab, "RUN_TOKENIZERS", cache)
    real = tokens_tab.stored_tokenizer

    def slow(store, info):  # long enough for every asker to arrive during the build
        time.sleep(0.3)
        return real(store, info)

    monkeypatch.setattr(tokens_tab, "stored_tokenizer", slow)
    answers: list = []
    askers = [
        threading.Thread(target=lambda: answers.append(tokens_tab.tokenizer_of_run(path, run_id)))
        for _ in range(3)
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert cache.builds == 1
    toks = [tok for tok, _label, _id in answers]
    assert all(tok is toks[0] for tok in toks)
    with RunStore(path) as store:
        direct = stored_tokenizer(store, store.get_run(run_id))
    assert toks[0].merges == direct.merges and len(direct.merges) == 300

    assert tokens_tab.tokenizer_of_run(path, run_id)[0] is toks[0]  # unchanged: kept
    assert cache.builds == 1
    writer.write(next(batches))  # the run grows: its tokenizer is built again
    grown = tokens_tab.tokenizer_of_run(path, run_id)[0]
    assert cache.builds == 2 and len(grown.merges) == 600


def test_a_failed_build_is_not_kept_and_the_next_ask_tries_again(run, monkeypatch):
    path, run_id, _writer, _batches = run
    cache = tokens_tab.RunTokenizers()
    monkeypatch.setattr(tokens_tab, "RUN_TOKENIZERS", cache)
    real = tokens_tab.stored_tokenizer
    monkeypatch.setattr(
        tokens_tab, "stored_tokenizer", lambda store, info: (_ for _ in ()).throw(OSError("gone"))
    )
    with pytest.raises(OSError):
        tokens_tab.tokenizer_of_run(path, run_id)
    monkeypatch.setattr(tokens_tab, "stored_tokenizer", real)
    assert len(tokens_tab.tokenizer_of_run(path, run_id)[0].merges) == 300
    assert cache.builds == 1
