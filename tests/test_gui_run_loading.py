"""Opening a stored run: its merges are read off the UI thread and reach the charts a few pages
per event-loop turn; the charts say what they wait for; teaching explains the run's last merge
(or says that an older run did not record the runner-up)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import threading

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

from workbench.gui import charts as charts_module  # noqa: E402
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
    moves: list[int] = []
    real_apply = charts_module._Range._apply

    def apply(self, low: float, high: float) -> None:
        moves.append(id(self))
        real_apply(self, low, high)

    monkeypatch.setattr(charts_module._Range, "_apply", apply)
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
