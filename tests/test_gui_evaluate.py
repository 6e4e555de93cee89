"""The Evaluate tab driven as a user would: tick runs (one at a smaller k), add held-out text,
Evaluate, read the table, the curves and the health lists, click a token, export, cancel.

Every test ends with no QThread running (see gui_fixtures)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    close_window,
    make_window,
    no_qthread_left,  # noqa: F401  (autouse fixture)
)
from PySide6.QtCore import Qt  # noqa: E402

from workbench.cli import main as cli  # noqa: E402
from workbench.engine.errors import CancelledError  # noqa: E402
from workbench.gui.evaluate.runner import EvalRunner  # noqa: E402
from workbench.gui.evaluate_tab import EvaluateTab, show_token_in_window  # noqa: E402
from workbench.store import RunStore  # noqa: E402


@pytest.fixture
def sweep_db(corpora, tmp_path) -> Path:
    """A run store with two runs of one corpus (vocab 300 and 400)."""
    db = tmp_path / "runs.db"
    for size in (300, 400):
        code = cli(["train", str(corpora / "taylorswift.txt"), "--vocab-size", str(size),
                    "--out", str(tmp_path / f"out{size}"), "--db", str(db), "--quiet"])  # fmt: skip
        assert code == 0
    return db


@pytest.fixture
def tab(qtbot, sweep_db):
    store = RunStore(sweep_db)
    widget = EvaluateTab(sweep_db, store)
    qtbot.addWidget(widget)
    yield widget
    widget.shutdown()
    store.close()


def _evaluate(qtbot, tab: EvaluateTab) -> None:
    with qtbot.waitSignal(tab.runner.sigIdle, timeout=COLD_START_MS):
        qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
    assert tab.status.text() == "done", tab.status.text()


def test_evaluate_two_runs_and_a_prefix(qtbot, tab, corpora, tmp_path):
    assert tab.tokenizers.runs.rowCount() == 2
    tab.tokenizers.pick_run(1)
    tab.tokenizers.pick_run(2, k=60)
    tab.tokenizers.add_file(tmp_path / "out400")
    assert tab.tokenizers.specs() == ["run:2@60", "run:1", str(tmp_path / "out400")]
    tab.text.add_path(corpora / "german.txt")
    tab.text.add_path(corpora / "tinystories_sample.txt")
    tab.text.group_by.setCurrentText("file")
    _evaluate(qtbot, tab)

    model = tab.metrics
    assert model.rowCount() == 3
    tokens = {model.value(r, 0): model.value(r, 2) for r in range(3)}
    fewest = min(tokens.values())
    for row in range(3):  # the best (fewest) tokens are marked, and only those
        assert model.is_best(row, 2) == (model.value(row, 2) == fewest)
    assert "2 documents" in tab.text_counts.text()
    assert tab.group_choice.count() == 3  # all text + two files
    tab.group_choice.setCurrentIndex(1)
    assert "1 documents" in tab.text_counts.text()

    tab.metrics_view.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # sorted by the raw numbers
    shown = [tab.metrics_proxy.index(r, 2).data(Qt.ItemDataRole.UserRole + 1) for r in range(3)]
    assert shown == sorted(shown)

    assert len(tab.curves.lines) == 3  # three tokenizers with merges, no reference
    assert "smallest k within 1%" in tab.findings.text()
    assert len(tab.bars.bars) == 3

    out = tab.export_html(tmp_path / "report.html")
    assert "<table>" in out.read_text("utf-8")


def test_health_lists_and_a_click_shows_the_token(qtbot, tab, corpora):
    tab.tokenizers.pick_run(2)
    tab.text.add_path(corpora / "german.txt")
    _evaluate(qtbot, tab)
    kinds = [tab.health_list.itemData(i) for i in range(tab.health_list.count())]
    assert {"unreachable", "never_emitted", "rare", "residues"} <= set(kinds)
    tab.health_list.setCurrentIndex(kinds.index("never_emitted"))
    assert tab.health.rowCount() > 0
    first = tab.health.token_at(0)
    with qtbot.waitSignal(tab.sigShowToken) as blocker:
        index = tab.health_proxy.index(0, 0)
        rect = tab.health_view.visualRect(index)
        tab.show()
        qtbot.mouseClick(tab.health_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    cand, tid = blocker.args
    assert cand.name == "run:2" and tid == first.id  # the list's own order until a sort


def test_cancel_leaves_no_thread_and_says_so(qtbot):
    runner = EvalRunner()
    started = threading.Event()

    def job(progress, cancel: threading.Event):
        started.set()
        progress("working", -1.0)
        while not cancel.wait(0.01):
            pass
        raise CancelledError("evaluation cancelled")

    idle = qtbot.waitSignal(runner.sigIdle, timeout=10_000)
    with idle, qtbot.waitSignal(runner.sigCancelled, timeout=10_000):
        assert runner.start(job)
        assert not runner.start(job)  # one at a time
        started.wait(5)
        runner.cancel()
    assert not runner.busy()


def test_cancel_button_during_a_real_evaluation(qtbot, tab, corpora):
    tab.tokenizers.pick_run(1)
    tab.tokenizers.pick_run(2)
    tab.text.add_path(corpora / "tinyshakespeare.txt")
    with qtbot.waitSignal(tab.runner.sigIdle, timeout=COLD_START_MS):
        assert tab.start()
        assert tab.cancel_button.isEnabled()
        qtbot.mouseClick(tab.cancel_button, Qt.MouseButton.LeftButton)
    assert tab.status.text() in ("cancelled", "done")  # a fast machine may finish first
    assert tab.run_button.isEnabled() and not tab.busy()


def test_nothing_picked_says_what_is_missing(tab):
    assert not tab.start()
    assert "tokenizer" in tab.status.text()
    tab.tokenizers.pick_run(1)
    tab.health_box.setChecked(False)
    assert not tab.start()
    assert "held-out text" in tab.status.text()


def test_the_window_shows_a_clicked_token_and_its_merge(qtbot, tmp_path, sweep_db):
    window = make_window(tmp_path / "settings.ini", sweep_db)
    window.show()
    qtbot.waitExposed(window)
    try:
        tab = window.evaluate
        tab.tokenizers.pick_run(1)
        tab.text.pasted.setPlainText("The quick brown fox jumps over the lazy dog.")
        _evaluate(qtbot, tab)
        cand = tab.candidate("run:1")
        tid = cand.tokenizer.merge_results[10]
        show_token_in_window(window, cand, tid)
        panel = window.tokens.panel
        assert window.tabs.currentWidget() is panel
        assert panel.details.token_id == tid
        selected = window.merge_list.view.selectionModel().selectedRows()
        assert [window.merge_list.model.merge_at(i.row()).rank for i in selected] == [10]
    finally:
        close_window(qtbot, window)


def test_a_sweep_is_one_pick(qtbot, corpora, tmp_path):
    db = tmp_path / "sweep.db"
    code = cli(["train", str(corpora / "taylorswift.txt"), "--vocab-size", "280,300",
                "--out", str(tmp_path / "o"), "--db", str(db), "--quiet"])  # fmt: skip
    assert code == 0
    store = RunStore(db)
    tab = EvaluateTab(db, store)
    qtbot.addWidget(tab)
    try:
        assert tab.tokenizers.sweeps.count() == 2  # the prompt, then the one sweep
        tab.tokenizers.sweeps.activated.emit(1)
        assert tab.tokenizers.specs() == ["run:2", "run:1"]  # newest first, as listed
    finally:
        tab.shutdown()
        store.close()
