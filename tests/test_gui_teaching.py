"""Teaching mode: the run advances a few merges per tick, the newest merge is highlighted in the
list and shown in the sample, and Pause and the step buttons work in between."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

from workbench.gui.teaching import tick_plan  # noqa: E402


def test_tick_plan_from_one_merge_a_second_upwards():
    assert tick_plan(1) == (1000, 1)
    assert tick_plan(5) == (200, 1)
    assert tick_plan(20) == (50, 1)
    assert tick_plan(200) == (50, 10)
    assert tick_plan(0) == (1000, 1)  # never zero merges or a zero interval


def test_teaching_mode_paces_highlights_and_pauses(qtbot, window):
    window.teaching.enabled_box.setChecked(True)
    window.teaching.speed.setValue(200)  # 10 merges per 50 ms tick: quick for a test
    window.controls.vocab.setValue(256 + 80)
    window.train()
    qtbot.waitUntil(lambda: window.merges_done >= 21, timeout=COLD_START_MS)
    # The run went in steps: it is paused between ticks, never one long run.
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=5000)
    assert window.teacher.running
    model = window.merge_list.model
    newest = window.merges_done - 1
    assert model.highlight_from is not None and model.highlight_from <= newest
    selected = window.merge_list.view.selectionModel().selectedRows()
    assert [model.merge_at(i.row()).rank for i in selected] == [newest]
    # The sample's tokenizer is built in the background (after the encoder is ready).
    qtbot.waitUntil(lambda: "Merge" in window.teaching.newest.full_text(), timeout=COLD_START_MS)
    assert "background-color" in window.teaching.sample.toHtml()

    # Pause stops the ticks; a step by hand still works; Resume goes on to the target.
    window.pause()
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=5000)
    assert not window.teacher.running
    stopped_at = window.merges_done
    qtbot.wait(300)
    assert window.merges_done == stopped_at
    window.step(1)
    qtbot.waitUntil(lambda: window.merges_done == stopped_at + 1, timeout=5000)
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=5000)
    window.resume()
    assert window.teacher.running
    qtbot.waitUntil(lambda: window.merges_done == 80, timeout=COLD_START_MS)
    qtbot.waitUntil(lambda: not window.teacher.running, timeout=5000)
    assert window.store.merge_count(window.run_id) == 80


def test_teaching_draws_its_pace_in_the_speed_chart(qtbot, window):
    window.teaching.enabled_box.setChecked(True)
    window.teaching.speed.setValue(20)  # one merge per 50 ms tick
    window.controls.vocab.setValue(256 + 30)
    window.train()
    qtbot.waitUntil(lambda: window.merges_done >= 12, timeout=COLD_START_MS)
    rates = window.charts.data.rate.view()
    assert len(rates) >= 5, "teaching's ticks drew no merges/s"
    # The pace, not a tick's burst (one merge in a millisecond reads as 1,000 merges/s).
    assert 1 <= float(rates[-1]) <= 40
    window.pause()
    qtbot.waitUntil(lambda: window.mode == "paused" and not window.teacher.running, timeout=5000)


def test_full_speed_trains_in_one_go(qtbot, window):
    window.teaching.enabled_box.setChecked(True)
    window.teaching.full_speed.setChecked(True)
    window.controls.vocab.setValue(256 + 60)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    assert window.merges_done == 60
    assert "reached vocabulary size" in window.status.stage.full_text()


def test_why_a_merge_was_chosen_in_words():
    from workbench.gui.teaching import why_chosen
    from workbench.store import StoredMerge

    def merge(rank: int, token: bytes, count: int, ties: int, runner_up=None) -> StoredMerge:
        return StoredMerge(
            rank, 256 + rank, 116, 104, token, token.decode(), count, len(token), True, ties, None,
            runner_up if runner_up is not None else (count if ties else 100),
        )  # fmt: skip

    alone = why_chosen(merge(0, b"th", 1234, 0, 1198), None, "lexicographic")
    assert alone == (
        "Why: its pair occurred 1,234 times when it was merged, more than any other:"
        " the runner-up had 1,198."
    )
    last = why_chosen(merge(0, b"th", 3, 0, 0), None, "lexicographic")
    assert last.endswith("more than any other: no other pair was left.")
    old = replace(merge(0, b"th", 120, 0), runner_up=None)  # a run stored before schema 3
    assert why_chosen(old, None, "lexicographic") == (
        "Why: its pair occurred 120 times when it was merged, more than any other"
        " (this run did not record the runner-up's count)."
    )
    tied = why_chosen(merge(5, b"er", 7, 3), merge(6, b"in", 6, 0), "lexicographic")
    assert "3 other pairs occurred as often" in tied
    assert "greatest (left, right) bytes" in tied
    assert tied.endswith("Next: “in” (6 times once this merge was made).")
    assert "Hugging Face" in why_chosen(merge(5, b"er", 7, 1), None, "hf")


def test_the_newest_merge_is_explained_in_the_window(qtbot, window):
    qtbot.waitUntil(window.warmer.encoder.is_set, timeout=COLD_START_MS)
    train_to(qtbot, window, 256 + 40)
    qtbot.waitUntil(lambda: window.teaching.why.text().startswith("Why:"), timeout=10_000)
    (last,) = window.store.merges(window.run_id, after_rank=38, limit=1)
    assert f"occurred {last.count:,} time" in window.teaching.why.text()
    assert last.runner_up is not None  # the window's runs record it
    if not last.ties:
        assert f"the runner-up had {last.runner_up:,}." in window.teaching.why.text()


def test_the_sample_follows_the_newest_merge_unless_it_is_yours(qtbot):
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.gui.teaching import TeachingPanel, sample_around

    pool = ["aaa bbb ccc " * 10, "first line\nthe zebra crossing, zebra again", "more zebra"]
    assert sample_around(pool, b"zeb").startswith("the zebra crossing")
    assert sample_around(pool, b"qqq") is None and sample_around(pool, b" ") is None
    panel = TeachingPanel()
    qtbot.addWidget(panel)
    panel.set_sample(pool[0])
    panel.set_pool(pool)
    tok = Tokenizer.from_merges([(b"z", b"e")], "gpt2")
    panel.show_tokenizer(tok, (b"z", b"e"))
    assert "zebra" in panel.sample.toPlainText()
    assert "2 places in the sample" in panel.newest.full_text()
    panel.use_text("my own words, no such pair")  # pinned: never swapped for the corpus
    assert panel.corpus_sample.isEnabled()
    panel.show_tokenizer(tok, (b"z", b"e"))
    assert panel.sample.toPlainText().startswith("my own words")
    assert "not in this sample" in panel.newest.full_text()
    panel.unpin()
    assert not panel.pinned and "zebra" in panel.sample.toPlainText()


def test_the_sample_tokenizer_is_built_off_the_ui_thread(qtbot, window, monkeypatch):
    import threading

    from workbench.gui import window_teaching_replay

    on_main: list[bool] = []
    real = window_teaching_replay.stored_tokenizer

    def recorded(db_path, run_id):
        on_main.append(threading.current_thread() is threading.main_thread())
        return real(db_path, run_id)

    monkeypatch.setattr(window_teaching_replay, "stored_tokenizer", recorded)
    qtbot.waitUntil(window.warmer.encoder.is_set, timeout=COLD_START_MS)
    train_to(qtbot, window, 256 + 40)  # the run's end cuts the sample with all 40 merges
    qtbot.waitUntil(
        lambda: window.teaching.newest.full_text().startswith("Merge 40:"), timeout=10_000
    )
    assert on_main and not any(on_main)


def test_the_corpus_sample_is_read_off_the_ui_thread(qtbot, window, monkeypatch):
    import threading

    from workbench.gui import window_corpus

    on_main: list[bool] = []
    real = window_corpus.corpus_paragraphs

    def recorded(paths):
        on_main.append(threading.current_thread() is threading.main_thread())
        return real(paths)

    monkeypatch.setattr(window_corpus, "corpus_paragraphs", recorded)
    window.teaching.set_sample("")
    window.load_demo()
    qtbot.waitUntil(lambda: bool(window.teaching.sample_text()), timeout=10_000)
    assert on_main == [False]
