"""Restart where you left off: the open run, the tab, the Tokens text and the Evaluate choices
come back; what is gone since (a deleted run, a moved file) is dropped without a word."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    close_window,
    db_path,  # noqa: F401
    make_window,
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
)


def test_a_restart_comes_back_where_it_was_left(qtbot, settings_path, db_path, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"w{i % 89}y{i % 11}" for i in range(3000)), encoding="utf-8")
    held_out = tmp_path / "held.txt"
    held_out.write_text("w1y2 w3y4 unseen text\n", encoding="utf-8")
    gone = tmp_path / "gone.txt"
    gone.write_text("soon deleted\n", encoding="utf-8")

    first = make_window(settings_path, db_path)
    first.show()
    first.load_corpus([corpus])
    train_to(qtbot, first, 256 + 30)
    run_id = first.run_id
    first.tokens.panel.set_text("w7y3 hello ünïcode")
    first.evaluate.refresh_runs()
    first.evaluate.tokenizers.pick_run(run_id, 12)
    first.evaluate.text.add_path(held_out)
    first.evaluate.text.add_path(gone)
    first.evaluate.text.pasted.setPlainText("pasted held-out text")
    first.evaluate.text.group_by.setCurrentText("file")
    first.tabs.setCurrentWidget(first.tokens.panel)
    close_window(qtbot, first)
    gone.unlink()

    second = make_window(settings_path, db_path)
    second.show()
    try:
        assert second.run_id == run_id and second.mode == "finished"
        assert second.merge_list.model.total == 30
        assert second.tabs.currentWidget() is second.tokens.panel
        assert second.tokens.panel.view.text() == "w7y3 hello ünïcode"
        assert second.evaluate.tokenizers.specs() == [f"run:{run_id}@12"]
        assert second.evaluate.text.path_list() == [str(held_out)]
        assert second.evaluate.text.pasted.toPlainText() == "pasted held-out text"
        assert second.evaluate.text.group_by.currentText() == "file"
        assert second.actions_by_name["step1"].isEnabled()  # and it can grow, as opened
        qtbot.waitUntil(lambda: second.corpus_panel.top_model.rowCount() > 0, timeout=60_000)
        qtbot.wait(100)
        # the corpus counted at start does not cover the open run's line
        assert second.status.stage.full_text().startswith("Finished: 30 merges")
        second.runs.refresh()
        second.runs.select_run(run_id)
        second.runs.delete_selected(confirm=False)
    finally:
        close_window(qtbot, second)

    third = make_window(settings_path, db_path)
    third.show()
    try:
        assert third.run_id is None and third.mode == "idle"
        assert third.evaluate.tokenizers.specs() == []
    finally:
        close_window(qtbot, third)


def test_held_out_files_and_tokenizer_files_are_listed_once(qapp, tmp_path):
    from workbench.gui.evaluate.picker import TextPicker, TokenizerPicker

    text, tokenizers = TextPicker(), TokenizerPicker()
    for _ in range(2):
        text.add_path(tmp_path / "held.txt")
        tokenizers.add_file(tmp_path / "tok.json")
    assert text.path_list() == [str(tmp_path / "held.txt")]
    assert tokenizers.specs() == [str(tmp_path / "tok.json")]
