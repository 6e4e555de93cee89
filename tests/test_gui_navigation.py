"""Merge list and chart navigation as a new user meets it: a sort shows the top of the sorted
list, double-click goes to a merge, a new run clears the search, the bytes column says bytes,
parts are not cut to a bare "…", axes fit the data at the end, and the Tokens chart says what
it waits for."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

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
from PySide6.QtCore import Qt  # noqa: E402

from workbench.gui import charts as charts_module  # noqa: E402
from workbench.gui.merge_list import MergeListPanel  # noqa: E402
from workbench.gui.merge_table import COUNT, HEADERS, LEFT, LENGTH, RIGHT  # noqa: E402
from workbench.gui.merge_tree import ID_ROLE, RANK_ROLE, later_merges  # noqa: E402
from workbench.gui.tokens.scrubber import Scrubber  # noqa: E402
from workbench.store import RunStore  # noqa: E402
from workbench.store.synthetic import synthetic_batches  # noqa: E402

N = 3000


@pytest.fixture
def run(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    run_id = store.create_run("synthetic")
    with store.writer(run_id) as writer:
        for batch in synthetic_batches(N, batch_size=700, seed=5):
            writer.write(batch)
    yield store, run_id
    store.close()


@pytest.fixture
def panel(qtbot) -> MergeListPanel:
    widget = MergeListPanel()
    qtbot.addWidget(widget)
    widget.resize(700, 500)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_sorting_with_follow_newest_shows_the_top_of_the_sorted_list(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, N)
    panel.follow.setChecked(True)
    panel.poke()
    bar = panel.view.verticalScrollBar()
    assert bar.value() == bar.maximum() > 0  # following: at the newest merge
    panel.view.horizontalHeader().setSortIndicator(COUNT, Qt.SortOrder.DescendingOrder)
    panel.poke()  # the window's timer: following must not pull the view back down
    assert not panel.follow.isChecked()
    assert bar.value() == 0
    top = panel.model.merge_at(0)
    assert top.count == max(m.count for m in store.merges(run_id, limit=N))


def test_double_click_goes_to_a_later_merge_and_a_tree_node(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, N)
    panel.follow.setChecked(False)
    merge = next(m for m in store.merges(run_id, limit=N) if later_merges(store, run_id, m.new_id))
    assert panel.select_rank(merge.rank)
    later = panel.tree.later_model.index(0, 0)
    target = later.data(RANK_ROLE)
    assert target > merge.rank
    panel.tree.later.doubleClicked.emit(later)
    current = panel.model.merge_at(panel.view.currentIndex().row())
    assert current.rank == target
    # In the tree of the merge shown now, a part that is itself a merge is a node to go to.
    root = panel.tree.tree_model.index(0, 0)
    parts = [panel.tree.tree_model.index(i, 0, root) for i in range(2)]
    assert all(p.data(ID_ROLE) is not None for p in parts), [p.data() for p in parts]
    node = next((p for p in parts if p.data(ID_ROLE) >= 256), None)
    byte = next((p for p in parts if p.data(ID_ROLE) < 256), None)
    if byte is not None:  # a byte is no merge: nothing moves
        before = panel.view.currentIndex().row()
        panel.tree.tree.doubleClicked.emit(byte)
        assert panel.view.currentIndex().row() == before
    if node is not None:
        part = store.merge_by_id(run_id, node.data(ID_ROLE))
        panel.tree.tree.doubleClicked.emit(node)
        assert panel.model.merge_at(panel.view.currentIndex().row()).rank == part.rank


def test_the_bytes_column_says_bytes_and_parts_are_readable(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, N)
    assert HEADERS[LENGTH] == "bytes"
    header = panel.view.horizontalHeader()
    mono = panel.view.fontMetrics().horizontalAdvance("m")
    for column in (LEFT, RIGHT):
        assert header.sectionSize(column) > 8 * mono, column  # "id 1234 tok", not "…"
    assert header.sectionSize(LENGTH) < header.sectionSize(LEFT)


def test_a_new_run_clears_the_search_and_the_axes_fit_at_the_end(qtbot, window):
    train_to(qtbot, window, 256 + 60)
    panel = window.merge_list
    panel.search.setText("zzzzqqq")
    panel.apply_search()
    assert panel.count_label.text() == "No matches"
    train_to(qtbot, window, 256 + 70)
    assert panel.search.text() == "" and panel.count_label.text() == "70 merges"
    # The fit takes a few turns (two axes each, after the curves): `paint_turns`.
    qtbot.waitUntil(lambda: not window.charts._exact_pending, timeout=5000)
    (x_low, x_high), _ = window.charts.count_plot.vb.viewRange()
    assert 70 <= x_high <= 70 * 1.05  # not the growing room of 1.5x and a round number
    (b_low, b_high), _ = window.charts.bpt_plot.vb.viewRange()
    assert 70 <= b_high <= 70 * 1.05


def test_scrubber_says_what_its_chart_waits_for(qtbot):
    scrubber = Scrubber()
    qtbot.addWidget(scrubber)
    assert "no tokenizer" in scrubber.empty.toPlainText()
    assert scrubber.plot.getAxis("left").labelText == "bytes/token"
    scrubber.show_compression(44, 0, 0, 300)
    assert scrubber.label.text().endswith("no text to cut yet")
    scrubber.show_compression(44, 10, 25, 300)
    assert scrubber.label.text().endswith("10 tokens · 2.50 bytes/token")
    scrubber.shutdown()


def test_scrubber_chart_paints_in_turns_of_its_own(qtbot):
    """Its chart (4-7 ms a paint) is not painted in the turn that shows the tab, nor in the
    turn its curve arrives (often the text's cut's): each comes in a later turn, unchanged."""
    import numpy as np

    scrubber = Scrubber()
    qtbot.addWidget(scrubber)
    scrubber.show()
    assert not scrubber.plot.viewport().isVisible()  # the rest of the tab paints first
    qtbot.waitUntil(lambda: scrubber.plot.viewport().isVisible(), timeout=2000)
    scrubber._on_curve((np.array([0, 5, 10]), np.array([1.0, 1.5, np.nan])))
    assert scrubber.busy() and scrubber.curve.xData is None  # drawn in a later turn
    qtbot.waitUntil(lambda: not scrubber.busy(), timeout=2000)
    assert scrubber.curve.xData.tolist() == [0, 5] and scrubber.curve.yData.tolist() == [1, 1.5]
    scrubber._on_curve((np.array([0, 1]), np.array([1.0, 2.0])))
    scrubber.set_text("another text")  # no tokenizer: an empty chart, and it stays empty
    assert not scrubber.busy()
    qtbot.wait(150)  # longer than any job is put off (`paint_turns.MAX_DEFER_S`)
    assert scrubber.curve.xData is None  # pyqtgraph keeps no array for an empty curve
    scrubber.shutdown()


def test_stored_run_reopened_plus_100_draws_no_speed_spike(qtbot, window):
    train_to(qtbot, window, 256 + 200)
    run_id = window.run_id
    assert window.charts.rate_plot.titleLabel.text == "Speed"  # a live run has timings
    window.open_run(run_id)
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    # A stored run keeps no timings: its Speed chart says so rather than stay blank.
    assert window.charts.rate_plot.titleLabel.text == charts_module.UNTIMED_TITLE
    window.step(100)
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=COLD_START_MS)
    assert window.merges_done == 300
    qtbot.waitUntil(lambda: window.charts.rate_plot.titleLabel.text == "Speed", timeout=2000)
    rates = window.charts.data.rate.view()
    # a hundred merges on a tiny corpus take a millisecond: no point, rather than 90,000/s
    assert len(rates) == 0 or rates.max() < 50_000
    with RunStore(window.db_path) as store:
        assert store.merge_count(run_id) == 300


def test_charts_say_rank_from_zero_and_merges_made(window):
    charts = window.charts
    assert charts.count_plot.getAxis("bottom").labelText == "rank (first merge = 0)"
    assert charts.bpt_plot.getAxis("bottom").labelText == "merges made"
    assert "0 is the first merge" in charts.count_plot.toolTip()


def test_the_fit_at_a_runs_end_moves_a_few_axes_per_redraw(qtbot, window, monkeypatch):
    """Spanning all eight axes in one turn repainted every chart at once (~45 ms at 32k
    merges): the merge charts' x axes move first, the rest on the next redraws."""
    train_to(qtbot, window, 256 + 60)
    charts = window.charts
    qtbot.waitUntil(lambda: not charts._exact_pending and not charts._dirty, timeout=5000)
    moves = record_axis_moves(monkeypatch)
    # Redraws here are never put off for another costly job (`paint_turns`, tested there).
    monkeypatch.setattr(charts, "defer_redraw", lambda: 0.0)
    charts.fit_to_data()
    assert 0 < len(moves) <= charts_module.MOVES_PER_FRAME
    assert charts.ranges[0].high is not None and charts.ranges[0].high <= 60 * 1.05
    first = len(moves)
    charts.redraw_if_dirty()  # the redraw timer's next tick
    assert first < len(moves) <= first + charts_module.MOVES_PER_FRAME
    qtbot.waitUntil(lambda: not charts._exact_pending, timeout=5000)
    assert len(set(moves)) == len(moves) >= 6  # each axis once, none left out


def test_the_fit_and_new_curves_take_turns_of_their_own(qtbot, window, monkeypatch):
    """A stored run's merges drawn and its axes grown, then fitted, made one turn of 15-25 ms
    at 200k merges: the curves take the new data first, with no axis moved, then each axis
    moves once, to its fit, a few per turn."""
    train_to(qtbot, window, 256 + 60)
    charts = window.charts
    qtbot.waitUntil(lambda: not charts._exact_pending and not charts._dirty, timeout=5000)
    moves = record_axis_moves(monkeypatch)
    monkeypatch.setattr(charts, "defer_redraw", lambda: 0.0)
    for axis_range in charts.ranges:
        axis_range.reset()  # as a run just loaded: no axis spans its data yet
    charts.mark_dirty()  # and its merges not drawn yet
    drawn_at = charts.drawn_at
    charts.fit_to_data()
    assert charts.drawn_at > drawn_at and not moves  # the curves now, the axes later
    assert charts._exact_pending
    qtbot.waitUntil(lambda: not charts._exact_pending and not charts._dirty, timeout=5000)
    assert len(set(moves)) == len(moves) >= 6  # each axis once, to its fit
    (x_low, x_high), _ = charts.count_plot.vb.viewRange()
    assert x_low == 0 and 60 <= x_high <= 60 * 1.05


def test_settle_draws_every_axis_even_when_redraws_wait_their_turn(qtbot, window, monkeypatch):
    """A screenshot settles the charts: with every redraw put off (`paint_turns`), settling
    only queued one, and the picture showed the axes a frame or more behind the data."""
    train_to(qtbot, window, 256 + 60)
    charts = window.charts
    qtbot.waitUntil(lambda: not charts._exact_pending and not charts._dirty, timeout=5000)
    monkeypatch.setattr(charts, "defer_redraw", lambda: 1.0)  # the turn is always taken
    for axis_range in charts.ranges:
        axis_range.reset()  # as a run just loaded: no axis spans its data yet
    charts.fit_to_data()
    assert charts._exact_pending  # the fit waits for redraws that are put off
    charts.settle()
    assert not charts._exact_pending and not charts._dirty
    (x_low, x_high), _ = charts.count_plot.vb.viewRange()
    assert x_low == 0 and 60 <= x_high <= 60 * 1.05
    assert len(charts.count_curve.getData()[0]) == 60


def test_the_curves_take_the_last_batches_when_redraws_wait_their_turn(qtbot, window, monkeypatch):
    """At a run's end the axes are fitted a few at a time; a redraw put off to a turn of its own
    (`paint_turns`) must still give the curves the batches that came last, not only move the
    axes (the curves once stopped at the batch before the run's end)."""
    monkeypatch.setattr(window.charts, "defer_redraw", lambda: 0.005)  # every redraw waits
    train_to(qtbot, window, 256 + 600)
    merges = len(window.charts.data.rank)
    assert merges > 300

    def drawn() -> int:
        xs, _ = window.charts.count_curve.getData()
        return 0 if xs is None else len(xs)

    qtbot.waitUntil(lambda: drawn() == merges, timeout=5000)
    qtbot.waitUntil(lambda: not window.charts._exact_pending, timeout=5000)
    assert drawn() == merges
