"""Costly UI-thread jobs take event-loop turns of their own (Qt would paint or run them all in
one turn): the merge list does not paint in the turn in which the charts take new data, the
charts and the Tokens tab's answers and colouring wait while the list paints (`paint_turns`)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import time

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import QEvent, QObject  # noqa: E402

from workbench.gui.main_window import LIST_AFTER_CHARTS_S  # noqa: E402


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def test_a_charts_redraw_puts_the_lists_paint_off_then_it_paints_whole(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.tabs.setCurrentIndex(0)
    viewport = window.merge_list.view.viewport()
    qtbot.waitUntil(viewport.isVisible)
    counter = PaintCounter()
    viewport.installEventFilter(counter)
    window.charts.sigRedrawn.emit()  # what redraw_if_dirty says before it sets the curves
    assert not viewport.updatesEnabled()
    viewport.update()  # a page arriving now: its rows wait
    qtbot.wait(int(LIST_AFTER_CHARTS_S * 1000 / 3))
    assert counter.paints == 0
    qtbot.waitUntil(viewport.updatesEnabled, timeout=2000)
    qtbot.waitUntil(lambda: counter.paints >= 1, timeout=2000)


def test_the_charts_redraw_after_the_list_painted_not_in_its_turn(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.tabs.setCurrentIndex(0)
    table = window.merge_list.view
    qtbot.waitUntil(table.viewport().isVisible)
    table.viewport().repaint()  # the list paints now
    assert window.charts.defer_redraw() > 0
    redrawn: list[bool] = []
    window.charts.sigRedrawn.connect(lambda: redrawn.append(True))
    window.charts.mark_dirty()
    window.charts.redraw_if_dirty()
    assert redrawn == []  # put off, still to do
    qtbot.waitUntil(lambda: redrawn == [True], timeout=2000)


def test_a_redraw_is_put_off_for_a_bounded_time_only(qtbot):
    from workbench.gui import charts as charts_module
    from workbench.gui import paint_turns

    charts = charts_module.ChartsPanel()
    qtbot.addWidget(charts)
    charts.show()
    qtbot.waitExposed(charts)
    charts.defer_redraw = lambda: 0.05  # a neighbour that paints all the time
    redrawn: list[bool] = []
    charts.sigRedrawn.connect(lambda: redrawn.append(True))
    charts.mark_dirty()
    charts.redraw_if_dirty()
    assert redrawn == []
    qtbot.waitUntil(lambda: redrawn == [True], timeout=int(paint_turns.MAX_DEFER_S * 1000) + 2000)


# --- paint_turns: one costly job per event-loop turn ------------------------------------------


def test_a_turn_job_waits_until_the_turn_after_another_costly_job(qtbot):
    from workbench.gui.paint_turns import AFTER_S, PaintTurns, TurnJob

    turns = PaintTurns()
    ran: list[float] = []
    job = TurnJob(lambda: ran.append(time.perf_counter()), turns=turns)
    job.request()
    assert ran == []  # never inside the caller's event: what is queued after it may paint
    qtbot.waitUntil(lambda: len(ran) == 1, timeout=2000)  # a free turn: at the next pass
    turns.spent()  # the merge list painted, say (a long paint)
    free_at = turns.free_at
    assert free_at - time.perf_counter() > AFTER_S / 2
    job.request()
    assert len(ran) == 1 and job.pending()
    qtbot.waitUntil(lambda: len(ran) == 2, timeout=2000)
    assert ran[1] >= free_at
    assert not job.pending()


def test_a_watched_paint_on_its_way_puts_a_job_off_until_it_has_painted(qtbot, monkeypatch):
    from workbench.gui import paint_turns

    monkeypatch.setattr(paint_turns, "MAX_DEFER_S", 10.0)
    turns = paint_turns.PaintTurns()
    owner = QObject()
    painting = [True]
    turns.watch(owner, lambda: painting[0])
    ran: list[bool] = []
    job = paint_turns.TurnJob(lambda: ran.append(True), turns=turns)
    job.request()
    qtbot.wait(50)
    assert ran == [] and job.pending()
    painting[0] = False
    qtbot.waitUntil(lambda: ran == [True], timeout=2000)
    del owner  # its watch goes with it
    import gc

    gc.collect()
    qtbot.waitUntil(lambda: turns.wait() == 0.0, timeout=2000)


def test_a_turn_job_is_put_off_for_a_bounded_time_only(qtbot):
    from workbench.gui.paint_turns import MAX_DEFER_S, PaintTurns, TurnJob

    turns = PaintTurns()
    owner = QObject()
    turns.watch(owner, lambda: True)  # a neighbour that is always about to paint
    ran: list[float] = []
    job = TurnJob(lambda: ran.append(time.perf_counter()), turns=turns)
    asked = time.perf_counter()
    job.request()
    assert ran == []
    qtbot.waitUntil(lambda: len(ran) == 1, timeout=int(MAX_DEFER_S * 1000) + 2000)
    assert ran[0] - asked >= MAX_DEFER_S * 0.9


def test_a_job_asked_for_while_it_runs_runs_again_in_a_later_turn(qtbot):
    from workbench.gui.paint_turns import MIN_GAP_S, PaintTurns, TurnJob

    turns = PaintTurns()
    ran: list[float] = []

    def fn() -> None:
        ran.append(time.perf_counter())
        if len(ran) == 1:
            job.request()  # a highlighter with blocks left to colour

    job = TurnJob(fn, turns=turns)
    job.request()
    qtbot.waitUntil(lambda: len(ran) == 2, timeout=2000)
    assert ran[1] - ran[0] >= MIN_GAP_S * 0.9  # a cheap job: the shortest gap
    assert not job.pending()


def test_waiting_jobs_take_turns_first_asked_first_run(qtbot):
    """A job that asks again at once (a highlighter with blocks left) does not starve another
    (the charts' redraw): they alternate, a gap apart."""
    from workbench.gui.paint_turns import MIN_GAP_S, PaintTurns, TurnJob

    turns = PaintTurns()
    order: list[tuple[str, float]] = []

    def slice_() -> None:
        order.append(("slice", time.perf_counter()))
        if sum(name == "slice" for name, _ in order) < 3:
            slices.request()

    slices = TurnJob(slice_, turns=turns)
    redraw = TurnJob(lambda: order.append(("redraw", time.perf_counter())), turns=turns)
    slices.request()
    redraw.request()
    qtbot.waitUntil(lambda: len(order) == 4, timeout=2000)
    assert [name for name, _ in order] == ["slice", "redraw", "slice", "slice"]
    times = [t for _, t in order]
    assert all(b - a >= MIN_GAP_S * 0.9 for a, b in zip(times, times[1:], strict=False))


def test_the_merge_list_says_its_paint_is_on_its_way_until_it_painted(qtbot, window):
    from workbench.gui.paint_turns import TURNS

    window.show()
    qtbot.waitExposed(window)
    window.tabs.setCurrentIndex(0)
    table = window.merge_list.view
    qtbot.waitUntil(table.viewport().isVisible)
    table.viewport().repaint()
    assert not table.paint_pending()
    table.note_change()  # rows in view changed: a replay's step, a page arriving
    assert table.paint_pending() and TURNS.wait() > 0
    table.viewport().repaint()
    assert not table.paint_pending()


def test_a_tokens_answer_waits_while_the_merge_list_is_about_to_paint(qtbot, monkeypatch):
    """The text's cut, made in the lane's thread, is shown in a turn of its own: not while a
    watched list's paint is on its way (Qt would paint both in one turn)."""
    from _bpe_helpers import trained

    from workbench.engine.config import TrainConfig
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.gui import paint_turns
    from workbench.gui.tokens.encoded import TokenTable
    from workbench.gui.tokens.tokens_view import INLINE_CHARS, TokensView

    monkeypatch.setattr(paint_turns, "MAX_DEFER_S", 10.0)
    config = TrainConfig(vocab_size=300)
    tok = Tokenizer.from_merges(
        trained(["the cat sat on the mat " * 50], config).merges(), config.pattern_string
    )
    view = TokensView()
    qtbot.addWidget(view)
    view.set_tokenizer(tok, TokenTable(tok))
    owner = QObject()
    painting = [True]
    paint_turns.TURNS.watch(owner, lambda: painting[0])
    try:
        text = "the cat sat on the mat\n" * (INLINE_CHARS // 20)
        view.editor.blockSignals(True)
        view.set_text(text)
        view.editor.blockSignals(False)
        before = view.encoded  # the empty text's, shown when the tokenizer came
        view.refresh()  # long: cut in the lane's thread
        qtbot.waitUntil(lambda: view._result_to_show is not None, timeout=10_000)
        qtbot.wait(30)
        assert view.encoded is before and view.busy()  # waiting for its turn
        painting[0] = False
        qtbot.waitUntil(lambda: view.encoded is not before, timeout=2000)
        assert view.encoded.text == text
    finally:
        painting[0] = False
        view.shutdown()
    assert not view.busy()


def test_the_chart_grid_keeps_its_layout_as_the_numbers_grow(qtbot):
    """Tick labels of any width the charts show fit the room kept for them: when a run's
    counts grow from tens to hundreds of thousands no axis changes size, so the four charts
    are not laid out (and every axis painted) again."""
    from workbench.gui.charts import ChartsPanel
    from workbench.store.synthetic import synthetic_batches

    charts = ChartsPanel()
    qtbot.addWidget(charts)
    charts.resize(700, 600)
    charts.show()
    qtbot.waitExposed(charts)
    plots = (charts.count_plot, charts.bpt_plot, charts.rate_plot, charts.length_plot)
    axes = [plot.getAxis(name) for plot in plots for name in ("left", "bottom")]

    def sizes() -> list[tuple[float, float]]:
        return [(axis.geometry().width(), axis.geometry().height()) for axis in axes]

    charts.reset(corpus_bytes=1_000)
    for batch in synthetic_batches(40, batch_size=40, seed=1):
        charts.add_batch(batch)
    charts.fit_to_data()
    qtbot.waitUntil(lambda: not charts._exact_pending, timeout=5000)
    charts.graphics.grab()  # paint: tick labels are measured as they are laid out
    before = sizes()
    charts.reset(corpus_bytes=10**9)
    for batch in synthetic_batches(300_000, batch_size=100_000, seed=2):
        charts.add_batch(batch)
    charts.fit_to_data()
    qtbot.waitUntil(lambda: not charts._exact_pending, timeout=5000)
    charts.graphics.grab()
    assert sizes() == before


def test_a_built_tokenizer_is_taken_in_a_turn_of_its_own(qtbot, window):
    """The Tokens tab takes a run's tokenizer (its views, scrubber and details) in a free turn:
    not in the one where another costly paint just ran, yet soon after."""
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.gui.paint_turns import TURNS

    tab = window.tokens
    tok = Tokenizer.from_merges([(b"a", b"b")], "gpt2")
    TURNS.spent()  # the merge list painted in this turn, say
    tab._on_tokenizer((tok, "run 1 “t”", 1))  # the lane's answer arrives in the same turn
    assert tab.panel.base_tokenizer is not tok
    qtbot.waitUntil(lambda: tab.panel.base_tokenizer is tok, timeout=2000)
