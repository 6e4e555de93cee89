"""The window driven as a user would: demo corpus, train, pause, resume, step, stop, search.

Every test runs on its own database and settings file (tmp_path) and ends with no QThread
running (see gui_fixtures). Buttons are clicked and shortcuts typed, not slots called, so the
wiring between actions, buttons and the worker is what is tested.
"""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

from pathlib import Path

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
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402

from workbench.gui.main_window import RECOUNT_DELAY_MS  # noqa: E402
from workbench.gui.resources import demo_corpus  # noqa: E402
from workbench.store import RunStore  # noqa: E402

WAIT_MS = COLD_START_MS


def shown_rows(model) -> list[tuple]:
    return [
        (m.rank, m.new_id, m.left_id, m.right_id, m.token, m.count, m.length)
        for m in (model.merge_at(r) for r in range(model.rowCount()))
    ]


def stored_rows(store: RunStore, run_id: int, **search) -> list[tuple]:
    merges = (
        store.search(run_id, limit=10**6, **search) if search else store.merges(run_id, limit=10**6)
    )
    return [(m.rank, m.new_id, m.left_id, m.right_id, m.token, m.count, m.length) for m in merges]


def test_first_start_loads_the_demo_corpus_and_counts_it(qtbot, window):
    assert window.corpus_paths == demo_corpus()
    assert "Demo corpus" in window.corpus_panel.title.text()
    qtbot.waitUntil(lambda: window.corpus_panel.top_model.rowCount() > 0, timeout=WAIT_MS)
    assert window.corpus_panel.stats["documents"].text() != "–"
    assert "span" in window.corpus_panel.preview.toHtml()


def test_train_to_a_small_vocab_and_the_list_equals_the_store(qtbot, window):
    train_to(qtbot, window, 256 + 60)
    assert window.merges_done == 60
    assert window.status.stage.text().startswith("Finished: 60 merges")
    store = window.store
    run_id = window.run_id
    assert store.get_run(run_id).state == "done"
    assert shown_rows(window.merge_list.model) == stored_rows(store, run_id)
    assert len(window.charts.data.rank) == 60


def test_kernels_ready_after_a_finished_first_run_keep_its_status(qtbot, window):
    """On a first start a small run can finish (in Python) before the kernels are compiled;
    the warm-up's "Trainer ready" must not replace the run's "Finished: ..." line."""
    train_to(qtbot, window, 256 + 20)
    done = window.status.stage.text()
    assert done.startswith("Finished")
    window.warmer.sigProgress.emit(2, 3, "trainer", True)  # its progress, late too
    qtbot.wait(50)
    assert window.status.stage.text() == done
    window.warmer.sigWarm.emit(12.5)  # the warm-up finishing late, as on a first start
    qtbot.wait(50)
    assert window.status.stage.text() == done


def test_a_recount_pending_when_train_is_pressed_leaves_the_done_line(qtbot, window):
    """An edit's debounced recount still pending when Train is pressed is dropped: the run
    counts the corpus itself, and a late "Corpus read" would cover its "Finished" line."""
    window.recount_timer.setInterval(600_000)  # still pending when the quick run is done
    window._pattern_changed()  # as typing in the pattern box does: a recount is pending
    assert window.recount_timer.isActive()
    train_to(qtbot, window, 256 + 20)
    done = window.status.stage.text()
    assert done.startswith("Finished")
    assert not window.recount_timer.isActive()
    window.recount_timer.setInterval(RECOUNT_DELAY_MS)
    qtbot.wait(RECOUNT_DELAY_MS + 300)
    assert window.status.stage.text() == done


def test_pause_resume_step_and_stop(qtbot, window):
    window.controls.vocab.setValue(60_000)
    click(qtbot, window, "train")
    click(qtbot, window, "pause")  # pressed at once: honoured after the first batch
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    paused_at = window.merges_done
    assert paused_at > 0
    for name, n in (("step1", 1), ("step10", 10), ("step100", 100)):
        before = window.merges_done
        click(qtbot, window, name)
        qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
        assert window.merges_done == before + n
    click(qtbot, window, "resume")
    qtbot.waitUntil(lambda: window.merges_done > paused_at + 111, timeout=WAIT_MS)
    click(qtbot, window, "stop")
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=WAIT_MS)
    qtbot.wait(200)  # the worker's finish request closes the run
    run = window.store.get_run(window.run_id)
    assert run.merge_count == window.merges_done == window.store.merge_count(window.run_id)
    assert run.stop_reason == "stopped"
    assert window.status.stage.text().startswith(f"Stopped at {window.merges_done:,} merges")
    # A stopped run goes on as the same run opened from the Runs tab would (a replay first).
    assert window.actions_by_name["step1"].isEnabled()
    assert not window.actions_by_name["stop"].isEnabled()


def test_keyboard_shortcuts_drive_training(qtbot, window):
    window.controls.vocab.setValue(60_000)
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    before = window.merges_done
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)  # +10
    qtbot.waitUntil(lambda: window.merges_done == before + 10, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)  # stop
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=WAIT_MS)


def test_continue_a_finished_run_to_a_larger_vocab(qtbot, window):
    train_to(qtbot, window, 256 + 30)
    window.controls.vocab.setValue(256 + 80)
    click(qtbot, window, "resume")
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=WAIT_MS)
    assert window.merges_done == 80
    assert window.store.merge_count(window.run_id) == 80


def test_search_the_merge_list_while_typing(qtbot, window):
    train_to(qtbot, window, 256 + 400)
    panel = window.merge_list
    store, run_id = window.store, window.run_id
    qtbot.keyClicks(panel.search, "in")
    qtbot.waitUntil(lambda: panel.model.filter.kwargs.get("text") == "in", timeout=5000)
    assert shown_rows(panel.model) == stored_rows(store, run_id, text="in")
    assert panel.model.rowCount() > 0
    panel.search.setText("/^ /")
    qtbot.waitUntil(lambda: panel.model.filter.kwargs.get("regex") == "^ ", timeout=5000)
    rows = shown_rows(panel.model)
    assert rows == stored_rows(store, run_id, regex="^ ")
    assert all(token.startswith(b" ") for _, _, _, _, token, _, _ in rows)
    panel.search.setText("id:300")
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=5000)
    assert panel.model.merge_at(0).new_id == 300
    panel.search.setText("/[/")
    qtbot.waitUntil(lambda: "regex" in panel.message.text(), timeout=5000)
    panel.search.clear()
    qtbot.waitUntil(lambda: not panel.model.filter, timeout=5000)
    assert shown_rows(panel.model) == stored_rows(store, run_id)


def test_selecting_a_merge_shows_its_tree(qtbot, window):
    train_to(qtbot, window, 256 + 200)
    view = window.merge_list.view
    last = window.merge_list.model.rowCount() - 1
    view.selectRow(last)
    root = window.merge_list.tree.tree_model.item(0)
    merge = window.merge_list.model.merge_at(last)
    assert root is not None and f"id {merge.new_id}" in root.text()
    assert root.rowCount() == 2
    view.selectRow(0)  # the first merge is built from two bytes
    root = window.merge_list.tree.tree_model.item(0)
    assert all("byte 0x" in root.child(i).text() for i in range(2))


def test_run_history_open_rename_delete(qtbot, window):
    train_to(qtbot, window, 256 + 50)
    run_id = window.run_id
    assert not window.actions_by_name["stop"].isEnabled()  # a finished run: nothing to stop
    runs = window.runs
    runs.refresh()
    runs.select_run(run_id)
    runs.rename_selected("my run")
    assert window.store.get_run(run_id).name == "my run"
    runs.select_run(run_id)
    runs.open_selected()
    assert window.merge_list.model.total == 50
    assert shown_rows(window.merge_list.model) == stored_rows(window.store, run_id)
    qtbot.waitUntil(lambda: len(window.charts.data.rank) == 50, timeout=5000)
    qtbot.wait(300)  # let the worker close the run it had open
    runs.refresh()
    runs.select_run(run_id)
    runs.delete_selected(confirm=False)
    assert [r.id for r in window.store.list_runs()] == []


def test_a_bad_custom_pattern_is_shown_as_typed(qtbot, window):
    controls = window.controls
    controls.preset.setCurrentText("custom regex")
    controls.regex.clear()
    qtbot.keyClicks(controls.regex, "(ab")
    assert "does not compile" in controls.pattern_error.text()
    assert not window.actions_by_name["train"].isEnabled()
    controls.regex.setText(r"\w+|\s+|[^\w\s]+")
    assert controls.pattern_error.text() == ""
    assert window.actions_by_name["train"].isEnabled()


def test_dropping_files_opens_them_and_remembers_them(qtbot, window, tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("hello hello world, hello there\n" * 50, encoding="utf-8")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(corpus))])
    event = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)
    assert window.corpus_paths == [corpus]
    assert window.values.recent[0] == [str(corpus)]
    assert window.recent_menu.actions()[0].text() == "tiny.txt"
    qtbot.waitUntil(lambda: window.corpus_panel.stats["documents"].text() != "–", timeout=WAIT_MS)


def test_an_unreadable_corpus_gets_a_message(qtbot, window, tmp_path):
    bad = tmp_path / "binary.bin"
    bad.write_bytes(bytes(range(256)) * 64)
    window.load_corpus([bad])
    qtbot.waitUntil(lambda: "binary.bin" in window.status.stage.text(), timeout=WAIT_MS)


def test_settings_survive_a_restart(qtbot, settings_path, db_path, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text to count\n", encoding="utf-8")
    first = make_window(settings_path, db_path)
    first.controls.vocab.setValue(777)
    first.controls.preset.setCurrentText("cl100k")
    first.controls.specials.setText("<|endoftext|>")
    first.load_corpus([corpus])
    close_window(qtbot, first)
    second = make_window(settings_path, db_path)
    try:
        assert second.controls.vocab.value() == 777
        assert second.controls.pattern_spec() == "cl100k"
        assert second.controls.specials.text() == "<|endoftext|>"
        assert second.corpus_paths == [Path(corpus)]
    finally:
        close_window(qtbot, second)


def test_closing_while_training_keeps_every_merge(qtbot, settings_path, db_path):
    win = make_window(settings_path, db_path)
    win.show()
    win.controls.vocab.setValue(60_000)
    click(qtbot, win, "train")
    qtbot.waitUntil(lambda: win.merges_done > 0, timeout=WAIT_MS)
    close_window(qtbot, win)
    store = RunStore(db_path)
    try:
        (run,) = store.list_runs()
        assert run.state in ("interrupted", "done")
        assert store.merge_count(run.id) == run.merge_count == win.merges_done
    finally:
        store.close()


def test_the_tokens_tab_gets_the_trained_tokenizer_and_jumps_back(qtbot, window):
    train_to(qtbot, window, 256 + 120)
    panel = window.tokens.panel
    qtbot.waitUntil(panel.export_button.isEnabled, timeout=WAIT_MS)
    assert "120 merges" in panel.source.text()
    panel.sigJumpToRank.emit(100)
    selected = window.merge_list.view.selectionModel().selectedRows()
    assert [window.merge_list.model.merge_at(i.row()).rank for i in selected] == [100]
    assert window.tabs.currentIndex() == 0
