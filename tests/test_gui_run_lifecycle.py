"""The run lifecycle in the window: delete while live, quit after a finished run, continue a
stored run after a restart, open a stored run (its own settings fill the Settings panel, so
Train repeats it). Each drives the real window and checks the store."""

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

from workbench.gui.controls import parse_specials  # noqa: E402
from workbench.session.run import stored_config  # noqa: E402
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
        assert "Resume" in second.status.stage.full_text()
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


def _paused_big_run(qtbot, window) -> int:
    window.controls.vocab.setValue(60_000)
    click(qtbot, window, "train")
    click(qtbot, window, "pause")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    return window.merges_done


def test_stop_while_paused_finishes_and_plus_n_goes_on_by_replaying(qtbot, window, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(" ".join(f"k{i % 97}z{i % 13}" for i in range(20_000)), encoding="utf-8")
    window.load_corpus([corpus])
    paused_at = _paused_big_run(qtbot, window)
    run_id = window.run_id
    click(qtbot, window, "stop")
    assert window.mode == "finished"
    text = window.status.stage.text()
    assert "Paused" not in text and text.startswith(f"Stopped at {paused_at:,} merge")
    for name in ("step1", "step10", "step100", "resume"):
        assert window.actions_by_name[name].isEnabled(), name
    assert not window.actions_by_name["stop"].isEnabled()
    click(qtbot, window, "step10")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    assert window.run_id == run_id and window.merges_done == paused_at + 10
    assert window.store.merge_count(run_id) == paused_at + 10
    click(qtbot, window, "stop")
    qtbot.waitUntil(lambda: window.store.get_run(run_id).state == "done", timeout=WAIT_MS)


def test_a_finished_run_has_buttons_that_agree(qtbot, window):
    train_to(qtbot, window, 256 + 30)
    enabled = {name: a.isEnabled() for name, a in window.actions_by_name.items()}
    assert enabled == {
        "train": True,
        "pause": False,
        "resume": False,  # to the size it has: nothing to do
        "stop": False,  # nothing runs
        "step1": True,
        "step10": True,
        "step100": True,
    }
    assert "Raise Vocab size above 286" in window.actions_by_name["resume"].toolTip()
    window.controls.vocab.setValue(256 + 31)
    assert window.actions_by_name["resume"].isEnabled()
    # The Runs tab refreshes in a turn after the run's end (not inside it): wait for it.
    finished = "finished (reached vocabulary size)"
    qtbot.waitUntil(lambda: window.runs.model.index(0, 2).data() == finished, timeout=5000)


def test_delete_refuses_a_paused_run_without_asking_first(qtbot, window, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or 0)
    _paused_big_run(qtbot, window)
    window.runs.refresh()
    window.runs.select_run(window.run_id)
    assert window.runs.model.index(0, 2).data() == "paused"
    window.runs.delete_selected()
    assert asked == []
    assert "stop it before deleting" in window.runs.message.text()
    click(qtbot, window, "stop")


def test_a_deleted_run_leaves_tokens_compare_and_evaluate(qtbot, window):
    train_to(qtbot, window, 256 + 25)
    run_id = window.run_id
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == run_id, timeout=WAIT_MS)
    compare = panel.compare
    assert run_id in [compare.runs.itemData(i) for i in range(compare.runs.count())]
    compare.add_run(run_id)
    window.evaluate.refresh_runs()
    assert window.evaluate.tokenizers.runs.rowCount() == 1
    window.runs.refresh()
    window.runs.select_run(run_id)
    window.runs.delete_selected(confirm=False)
    assert panel._run_id is None and not panel.export_button.isEnabled()
    assert f"run {run_id} was deleted" in panel.source.text()
    assert compare.rows == []
    assert run_id not in [compare.runs.itemData(i) for i in range(compare.runs.count())]
    assert window.evaluate.tokenizers.runs.rowCount() == 0
    assert not window.export_action.isEnabled()


def test_a_continued_run_name_follows_its_size(qtbot, window, tmp_path):
    corpus = tmp_path / "named.txt"
    corpus.write_text(" ".join(f"w{i % 89}y{i % 11}" for i in range(3000)), encoding="utf-8")
    window.load_corpus([corpus])
    train_to(qtbot, window, 256 + 30)
    run_id = window.run_id
    assert window.store.get_run(run_id).name == "named.txt · 286"
    window.controls.vocab.setValue(256 + 50)
    click(qtbot, window, "resume")
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=WAIT_MS)
    assert window.store.get_run(run_id).name == "named.txt · 306"
    window.runs.refresh()
    window.runs.select_run(run_id)
    window.runs.rename_selected("mine")
    click(qtbot, window, "step10")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    assert window.store.get_run(run_id).name == "mine"  # the user's name stays


def _set(controls, min_frequency: int, cap: int, tie_break: str, specials: str) -> None:
    controls.min_frequency.setValue(min_frequency)
    controls.max_token_length.setValue(cap)
    controls.tie_break.setCurrentText(tie_break)
    controls.specials.setText(specials)


def test_an_opened_run_shows_its_own_settings_and_train_repeats_it(qtbot, window):
    controls = window.controls
    _set(controls, 2, 5, "hf", "<|endoftext|>")
    train_to(qtbot, window, 256 + 1 + 40)
    first = window.store.get_run(window.run_id)
    _set(controls, 0, 0, "lexicographic", "")  # the window's settings move on
    train_to(qtbot, window, 256 + 60)

    window.open_run(first.id)
    assert controls.vocab.value() == first.vocab_size == 256 + 1 + 40
    assert controls.min_frequency.value() == 2
    assert controls.max_token_length.value() == 5
    assert controls.tie_break.currentText() == "hf"
    assert parse_specials(controls.specials.text()) == ("<|endoftext|>",)
    assert controls.config() == stored_config(first.settings, first.vocab_size)

    train_to(qtbot, window, controls.vocab.value())  # Train, the form as the run filled it
    again = window.store.get_run(window.run_id)
    assert again.id != first.id
    assert stored_config(again.settings, 300) == stored_config(first.settings, 300)
    pairs = window.store.merges_as_pairs
    assert pairs(again.id) == pairs(first.id) and len(pairs(first.id)) == 40


def test_settings_the_panel_cannot_show_leave_it_as_it_is(qtbot, window):
    train_to(qtbot, window, 256 + 20)
    run_id = window.run_id
    with window.store.conn:  # as a crafted or newer database might hold
        window.store.conn.execute(
            "UPDATE runs SET settings = ? WHERE id = ?",
            ['{"tie_break": "sideways", "min_frequency": 3}', run_id],
        )
    window.controls.min_frequency.setValue(1)
    window.open_run(run_id)
    assert window.run_id == run_id  # opened all the same
    assert window.controls.min_frequency.value() == 1
    assert window.controls.tie_break.currentText() == "lexicographic"
