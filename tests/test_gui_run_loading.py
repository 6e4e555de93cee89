"""Opening a stored run: its merges are read off the UI thread and reach the charts a few pages
per event-loop turn; the charts say what they wait for; teaching explains the run's last merge
(or says that an older run did not record the runner-up)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    record_axis_moves,
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

from workbench.gui import history_loader  # noqa: E402


def test_a_stored_run_is_read_off_the_ui_thread_in_pages(qtbot, window, monkeypatch):
    train_to(qtbot, window, 256 + 300)
    run_id = window.run_id
    monkeypatch.setattr(history_loader, "PAGE", 64)  # several pages from a small run
    on_main: list[bool] = []
    real = history_loader.read_pages

    def recorded(*args):
        on_main.append(threading.current_thread() is threading.main_thread())
        return real(*args)

    monkeypatch.setattr(history_loader, "read_pages", recorded)
    window.open_run(run_id)
    assert window.history.loading
    assert "reading its 300 merges" in window.charts.caption.full_text()
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    assert on_main == [False]
    data = window.charts.data
    assert data.n == 300 and data.rank.view()[-1] == 299
    stored = window.store.merges(run_id, limit=300)
    assert data.count.view().tolist() == [m.count for m in stored]
    assert "reading" not in window.charts.caption.full_text()
    assert window.charts.caption.full_text().startswith(f"Stored run {run_id}")


def test_opening_another_run_meanwhile_drops_the_first_read(qtbot, window):
    train_to(qtbot, window, 256 + 50)
    first = window.run_id
    train_to(qtbot, window, 256 + 80)
    second = window.run_id
    assert first != second
    window.open_run(first)
    window.open_run(second)  # before the first read answers
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    qtbot.wait(200)  # a late answer for the first run would land now
    assert window.charts.data.n == 80


def test_an_opened_run_explains_its_last_merge(qtbot, window):
    qtbot.waitUntil(window.warmer.encoder.is_set, timeout=COLD_START_MS)
    train_to(qtbot, window, 256 + 30)
    run_id = window.run_id
    with window.store.conn:  # as a run stored before runner-ups were recorded
        window.store.conn.execute("UPDATE merges SET runner_up = NULL WHERE run_id = ?", [run_id])
    window.open_run(run_id)
    qtbot.waitUntil(
        lambda: "did not record the runner-up" in window.teaching.why.text(), timeout=10_000
    )
    assert window.teaching.newest.full_text().startswith("Merge 30:")


def test_opening_a_run_moves_no_axis_until_its_merges_are_in(qtbot, window, monkeypatch):
    """The turn that opens a run repainted all eight axes (empty ranges) only to move them
    again when the merges arrived: the axes stay until the data moves them, then fit it."""
    train_to(qtbot, window, 256 + 80)
    run_id = window.run_id
    qtbot.waitUntil(lambda: not window.charts._exact_pending, timeout=5000)
    moves = record_axis_moves(monkeypatch)
    plots = (window.charts.count_plot, window.charts.bpt_plot, window.charts.rate_plot)
    before = [plot.vb.viewRange() for plot in plots]
    window.open_run(run_id)
    assert moves == [] and window.charts.data.n == 0
    assert [plot.vb.viewRange() for plot in plots] == before
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    qtbot.waitUntil(lambda: not window.charts._exact_pending, timeout=5000)
    assert window.charts.data.n == 80
    (x_low, x_high), _ = window.charts.count_plot.vb.viewRange()
    assert x_low == 0 and 80 <= x_high <= 80 * 1.05  # spans the run's merges, as at its end


def test_the_group_chart_looks_for_the_parity_record_where_the_session_keeps_it():
    from workbench.gui.group_chart import PARITY_STATS_KEY
    from workbench.session.parity import STATS_KEY

    assert PARITY_STATS_KEY == STATS_KEY


def test_an_opened_runs_tokenizer_waits_for_its_charts_and_for_the_tokens_tab(
    qtbot, window, monkeypatch
):
    """Building a stored run's tokenizer holds the GIL in long C calls that stretched the turns
    in which its charts and merge list first paint: teaching's is built once the charts have
    the run, the Tokens tab's only when the tab is shown (one build for both), each wait said."""
    from workbench.gui import tokens_tab

    qtbot.waitUntil(window.warmer.encoder.is_set, timeout=COLD_START_MS)
    train_to(qtbot, window, 256 + 60)
    run_id = window.run_id
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == run_id and not panel.busy(), timeout=COLD_START_MS)
    # Teaching's sample at the run's end is in (else its answer would come after the opening).
    qtbot.waitUntil(lambda: not window.sample_lane.busy(), timeout=COLD_START_MS)
    qtbot.waitUntil(lambda: "Merge 60:" in window.teaching.newest.full_text(), timeout=10_000)
    cache = tokens_tab.RunTokenizers()
    monkeypatch.setattr(tokens_tab, "RUN_TOKENIZERS", cache)
    events: list[str] = []
    real = tokens_tab.stored_tokenizer

    def recorded(store, info):
        events.append("build")
        return real(store, info)

    monkeypatch.setattr(tokens_tab, "stored_tokenizer", recorded)
    window.history.sigLoaded.connect(lambda _run: events.append("charts"))
    window.open_run(run_id)
    assert "sample is cut once its merges are read" in window.teaching.newest.full_text()
    qtbot.waitUntil(
        lambda: window.teaching.newest.full_text().startswith("Merge 60:"), timeout=10_000
    )
    assert events == ["charts", "build"]
    assert not window.tokens.lane.busy() and window.tokens.pending is not None
    window.tabs.setCurrentWidget(panel)
    assert f"Building the tokenizer for run {run_id}" in panel.source.text()
    qtbot.waitUntil(lambda: "60 merges" in panel.source.text(), timeout=10_000)
    assert cache.builds == 1 and events == ["charts", "build"]  # the one teaching built


def test_a_replay_of_an_opened_run_asks_for_its_tokenizer(qtbot, window):
    train_to(qtbot, window, 256 + 40)
    run_id = window.run_id
    window.open_run(run_id)
    assert window.tokens.pending is not None
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    window.replay.seek(20)
    assert window.tokens.pending is None
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == run_id and not panel.busy(), timeout=COLD_START_MS)


def test_an_opened_runs_rows_paint_after_the_turn_that_opened_it(qtbot, window):
    """Qt paints every widget waiting in one window update: the list's rows (~5 ms, more
    while a worker runs Python) joined the opening turn's work and the charts' reset."""
    train_to(qtbot, window, 256 + 40)
    view = window.merge_list.view
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    window.open_run(window.run_id)
    opened = time.perf_counter()
    assert not view.viewport().isVisible() and not window.merge_list.settled()
    qtbot.waitUntil(lambda: view.painted_at > opened, timeout=5000)
    assert view.viewport().isVisible()
    qtbot.waitUntil(window.merge_list.settled, timeout=5000)
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    assert window.charts.data.n == 40


def test_a_tokenizer_given_to_the_tokens_tab_meanwhile_is_kept(qtbot, window):
    """The Evaluate tab (or a file) gives the Tokens tab a tokenizer and shows the tab: the
    opened run's build put off until then does not replace it."""
    import workbench

    train_to(qtbot, window, 256 + 40)
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == window.run_id and not panel.busy(), timeout=5000)
    window.open_run(window.run_id)
    assert window.tokens.pending is not None
    other = workbench.train(["a tiny corpus of its own, a tiny corpus"], 262, progress=False)
    panel.set_tokenizer(other.tokenizer, "the other one")
    window.tabs.setCurrentWidget(panel)
    assert window.tokens.pending is None and not window.tokens.lane.busy()
    assert "the other one" in panel.source.text() and panel.base_tokenizer is other.tokenizer


def test_opening_a_run_of_the_same_pattern_leaves_the_preview_and_the_counts(
    qtbot, window, monkeypatch
):
    """The panel takes an opened run's settings; only a pattern that differs re-cuts the corpus
    preview and recounts the corpus (the same one cost ~10 ms of the opening turn, and a
    recount of counts the window had)."""
    train_to(qtbot, window, 256 + 20)
    run_id = window.run_id
    pattern = window.controls.pattern_spec()
    cuts: list[str] = []
    real = window.corpus_panel.update_preview
    monkeypatch.setattr(
        window.corpus_panel, "update_preview", lambda p, *a: (cuts.append(p), real(p, *a))
    )
    window.recount_timer.setInterval(600_000)  # a recount asked for stays pending to be seen
    window.open_run(run_id)
    assert cuts == [] and not window.recount_timer.isActive()
    assert window.controls.pattern_spec() == pattern and window.controls.pattern_ok()
    other = next(name for name in ("gpt2", "cl100k") if name != pattern)
    window.controls.preset.setCurrentText(other)  # edited meanwhile: announced as ever
    assert cuts == [other] and window.recount_timer.isActive()
    window.recount_timer.stop()
    window.open_run(run_id)  # back to the run's own pattern: announced
    assert cuts[-1] == pattern and window.recount_timer.isActive()
    assert window.controls.pattern_spec() == pattern
    window.recount_timer.stop()
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
