"""Every item model of the window passes pytest-qt's `qtmodeltester`, empty and filled."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import no_qthread_left  # noqa: E402, F401  (autouse fixture)

from workbench.engine.events import MergeBatch  # noqa: E402
from workbench.gui.corpus_panel import TopPiecesModel  # noqa: E402
from workbench.gui.merge_table import MergeFilter, MergeTableModel, parse_search  # noqa: E402
from workbench.gui.run_history import RunHistoryModel  # noqa: E402
from workbench.store import RunStore  # noqa: E402


def fake_run(store: RunStore, n: int) -> int:
    """A run of n merges over bytes a, b, c...: rank i makes id 256 + i (left: the previous
    token, right: a byte), so the ids and bytes are easy to check."""
    run_id = store.create_run("fake", settings={"vocab_size": 256 + n})
    tokens, left = [], []
    previous = ord("a")
    text = b"a"
    for i in range(n):
        text = text + bytes([ord("a") + (i % 26)])
        tokens.append(text)
        left.append(previous)
        previous = 256 + i
    batch = MergeBatch(
        start_rank=0,
        left=np.array(left, dtype=np.int32),
        right=np.array([ord("a") + (i % 26) for i in range(n)], dtype=np.int32),
        new_id=np.arange(256, 256 + n, dtype=np.int32),
        count=np.arange(n, 0, -1, dtype=np.int64) * 10,
        is_new=np.ones(n, dtype=np.bool_),
        ties=np.zeros(n, dtype=np.int64),
        corpus_tokens=np.arange(10_000, 10_000 - n, -1, dtype=np.int64),
        tokens=tuple(tokens),
        vocab_size=256 + n,
        seconds=0.0,
    )
    with store.writer(run_id) as writer:
        writer.write(batch)
        writer.set_state("done", stop_reason="vocab_size")
    return run_id


@pytest.fixture
def store(tmp_path):
    s = RunStore(tmp_path / "runs.db")
    yield s
    s.close()


def test_merge_table_model(qtmodeltester, store):
    model = MergeTableModel()
    qtmodeltester.check(model)
    run_id = fake_run(store, 700)
    model.set_run(store, run_id, 700)
    qtmodeltester.check(model)
    assert model.rowCount() == 700  # every row at once; pages are read as rows are shown
    assert [model.merge_at(r).rank for r in range(700)] == list(range(700))
    model.set_filter(parse_search("abc"))
    qtmodeltester.check(model)
    assert model.rowCount() > 0
    model.set_filter(MergeFilter())
    qtmodeltester.check(model)


def test_merge_table_shows_readable_parts(store):
    run_id = fake_run(store, 3)
    model = MergeTableModel()
    model.set_run(store, run_id, 3)
    assert model.data(model.index(1, 2)) == "aab"
    assert model.data(model.index(1, 3)) == "256 aa"  # left: id and readable token
    assert model.data(model.index(1, 4)) == "98 b"


def test_top_pieces_model(qtmodeltester):
    model = TopPiecesModel()
    qtmodeltester.check(model)
    model.set_pieces([(b" the", 120), (b"\n", 40), (b"\xe2\x80", 3)])
    qtmodeltester.check(model)
    assert model.data(model.index(0, 1)) == "·the"
    assert model.data(model.index(2, 1)) == "<E2><80>"


def test_run_history_model(qtmodeltester, store):
    model = RunHistoryModel()
    qtmodeltester.check(model)
    fake_run(store, 5)
    fake_run(store, 9)
    model.set_runs(store.list_runs())
    qtmodeltester.check(model)
    assert model.rowCount() == 2
    assert model.data(model.index(0, 3)) == "9"
