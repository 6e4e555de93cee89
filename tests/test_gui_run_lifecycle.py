"""The run lifecycle in the window: delete while live, quit after a finished run, continue a
stored run after a restart. Each drives the real window and checks the store."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    click,
    close_window,
    db_path,  # noqa: F401
    make_window,
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

from workbench.store import RunStore  # noqa: E402

WAIT_MS = COLD_START_MS


def test_deleting_the_live_run_leaves_a_working_window(qtbot, window):
    train_to(qtbot, window, 256 + 40)
    run_id = window.run_id
    window.runs.refresh()
    window.runs.select_run(run_id)
    window.runs.delete_selected(confirm=False)
    assert window.store.list_runs() == []
    assert not window.controls.buttons["step1"].isEnabled()  # nothing left to grow
    assert "deleted" in window.status.stage.text()
    assert window.mode == "idle"
    train_to(qtbot, window, 256 + 20)  # and the window trains again
    (run,) = window.store.list_runs()
    assert run.state == "done" and run.merge_count == 20


def test_deleting_a_training_run_is_refused_with_a_reason(qtbot, window):
    window.controls.vocab.setValue(60_000)
    click(qtbot, window, "train")
    qtbot.waitUntil(lambda: window.merges_done > 0, timeout=WAIT_MS)
    click(qtbot, window, "pause")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    window.runs.refresh()
    window.runs.select_run(window.run_id)
    window.runs.delete_selected(confirm=False)
    assert "stop it before deleting" in window.runs.message.text()
    assert [r.id for r in window.store.list_runs()] == [window.run_id]
    click(qtbot, window, "step1")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)


def test_a_finished_run_is_done_after_quitting(qtbot, settings_path, db_path):
    win = make_window(settings_path, db_path)
    win.show()
    train_to(qtbot, win, 256 + 30)
    close_window(qtbot, win)
    with RunStore(db_path) as store:
        (run,) = store.list_runs()
    assert (run.state, run.stop_reason) == ("done", "vocab_size")


def test_a_stored_run_continues_after_a_restart(qtbot, settings_path, db_path, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"w{i % 89}y{i % 11}" for i in range(3000)), encoding="utf-8")
    first = make_window(settings_path, db_path)
    first.show()
    first.load_corpus([corpus])
    train_to(qtbot, first, 256 + 30)
    run_id = first.run_id
    close_window(qtbot, first)

    second = make_window(settings_path, db_path)
    second.show()
    try:
        second.runs.refresh()
        second.runs.select_run(run_id)
        second.runs.open_selected()
        assert "Resume" in second.status.stage.text()
        second.controls.vocab.setValue(256 + 70)
        click(qtbot, second, "resume")
        qtbot.waitUntil(lambda: second.mode == "finished", timeout=WAIT_MS)
        assert second.merges_done == 70
    finally:
        close_window(qtbot, second)
    import workbench

    direct = workbench.train(corpus, vocab_size=256 + 70)
    with RunStore(db_path) as store:
        (run,) = store.list_runs()
        assert store.merges_as_pairs(run_id) == direct.merges
    assert (run.state, run.merge_count) == ("done", 70)


def test_a_sweep_is_one_action_and_stores_tagged_runs(qtbot, window, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"q{i % 101}v{i % 7}" for i in range(4000)), encoding="utf-8")
    window.load_corpus([corpus])
    window.train_sweep("300, 280,320")
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=WAIT_MS)
    assert "Sweep of 3 runs finished" in window.status.stage.text()
    runs = sorted(window.store.list_runs(), key=lambda r: r.id)
    assert [r.vocab_size for r in runs] == [280, 300, 320]
    assert len({r.settings["sweep"]["id"] for r in runs}) == 1
    assert all(r.state == "done" for r in runs)
    assert window.merges_done == 320 - 256
    window.train_sweep("300,abc")
    assert "not a whole number" in window.status.stage.text()
