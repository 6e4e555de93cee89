"""A SuperBPE run in the window as a person makes one: the setting in Settings, the superwords
marked in the merge list, the transition line on the charts, and the same after a restart."""

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
from PySide6.QtCore import Qt  # noqa: E402
from test_superbpe_continue import BOUND, _corpus, small_bound  # noqa: E402, F401

from workbench.engine.patterns.superbpe import is_superword  # noqa: E402
from workbench.gui.merge_table import SUPERWORD, TOKEN  # noqa: E402

TEXT = "".join(
    f"{w} of the day and the {w} of the night\nin the end of the {w}\n"
    for w in ("cat", "dog", "bird", "fish", "cow", "hen") * 6
)


def test_a_superbpe_run_marks_superwords_and_its_transition(qtbot, window, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, "utf-8")
    window.load_corpus([corpus])
    window.controls.superbpe.setValue(300)
    assert window.controls.config().superbpe_transition == 300
    stages: list[str] = []
    window.worker.sigStage.connect(stages.append)
    train_to(qtbot, window, 340)
    # every wait is named: reading twice, then the start of stage 2, then stage 2 itself
    assert any("twice" in s for s in stages)
    assert any("starting SuperBPE's stage 2" in s for s in stages)
    assert any("SuperBPE stage 2" in s for s in stages)
    model = window.merge_list.model
    merges = [model.merge_at(row) for row in range(model.rowCount())]
    run = window.store.get_run(window.run_id)
    rank = run.stats["superbpe"]["transition_rank"]  # stage 1 may run out before 300
    assert 0 < rank <= 300 - 256
    supers = [row for row, m in enumerate(merges) if is_superword(m.token)]
    assert supers and min(supers) >= rank  # none before the transition
    cell = model.index(supers[0], TOKEN)
    assert model.data(cell, Qt.ItemDataRole.BackgroundRole) == SUPERWORD
    assert "superword" in model.data(cell, Qt.ItemDataRole.ToolTipRole)
    plain = model.index(0, TOKEN)
    assert model.data(plain, Qt.ItemDataRole.BackgroundRole) is None
    charts = window.charts
    assert charts.transition_rank == rank
    assert all(line.isVisible() for line in charts.transition_lines)
    assert charts.describe(supers[0]).endswith("superword · SuperBPE stage 2")
    assert charts.describe(0).endswith("SuperBPE stage 1")
    assert run.settings["superbpe_transition"] == 300


def test_the_setting_and_the_line_survive_a_restart(qtbot, settings_path, db_path, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, "utf-8")
    win = make_window(settings_path, db_path)
    win.show()
    try:
        win.load_corpus([corpus])
        win.controls.superbpe.setValue(290)
        train_to(qtbot, win, 320)
        run_id = win.run_id
        rank = win.charts.transition_rank
        assert rank is not None
    finally:
        close_window(qtbot, win)
    again = make_window(settings_path, db_path)
    again.show()
    try:
        assert again.controls.superbpe.value() == 290
        again.open_run(run_id)
        qtbot.waitUntil(lambda: again.charts.transition_rank is not None, timeout=10_000)
        assert again.charts.transition_rank == rank
        again.controls.superbpe.setValue(0)
        assert again.controls.superbpe.text().startswith("off")
    finally:
        close_window(qtbot, again)


def test_a_reopened_run_whose_bound_filled_resumes_exactly(
    qtbot, settings_path, db_path, tmp_path, small_bound
):
    """Resume on a reopened SuperBPE run counts stage 2 within the run's bound while counting
    (here it fills, a large file on the scanner): the merges of a run never stopped."""
    from workbench.engine.config import TrainConfig
    from workbench.session.counting import count_paths
    from workbench.session.run import RunSession
    from workbench.store import RunStore

    corpus = _corpus(tmp_path / "corpus")
    win = make_window(settings_path, db_path)
    win.show()
    try:
        win.load_corpus([corpus])
        win.controls.superbpe.setValue(300)
        train_to(qtbot, win, 330)
        run_id = win.run_id
    finally:
        close_window(qtbot, win)
    again = make_window(settings_path, db_path)
    again.show()
    try:
        again.runs.refresh()
        again.runs.select_run(run_id)
        again.runs.open_selected()
        again.controls.vocab.setValue(380)
        click(qtbot, again, "resume")
        qtbot.waitUntil(lambda: again.mode == "finished", timeout=COLD_START_MS)
        assert again.merges_done == 380 - 256
    finally:
        close_window(qtbot, again)
    config = TrainConfig(vocab_size=380, superbpe_transition=300)
    whole = RunSession.start(count_paths([corpus], config), config)
    whole.advance()
    with RunStore(db_path) as store:
        assert store.merges_as_pairs(run_id) == whole.merges()
        stats = store.get_run(run_id).stats["superbpe"]
    assert stats["dropped_pieces"] > 0 and stats["max_distinct_bytes"] == BOUND


def test_runs_list_and_stored_runs_old_and_crafted(tmp_path):
    from workbench.gui.history_loader import transition_rank
    from workbench.gui.run_history import RunHistoryModel
    from workbench.session.run import stored_config
    from workbench.store import RunStore

    # A database written before SuperBPE: no setting, no statistics for it.
    assert stored_config({"vocab_size": 300, "pattern": "gpt2"}, 300).superbpe_transition == 0
    assert transition_rank({"bytes": 10}) is None
    for crafted in (
        {"superbpe": 5},
        {"superbpe": {"transition_rank": "3"}},
        {"superbpe": {"transition_rank": True}},
        {"superbpe": {"transition_rank": -1}},
    ):
        assert transition_rank(crafted) is None
    assert transition_rank({"superbpe": {"transition_rank": 44}}) == 44
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run("classic", settings={"pattern": "gpt2"})
        store.create_run("super", settings={"pattern": "gpt2", "superbpe_transition": 25600})
        model = RunHistoryModel()
        model.set_runs(store.list_runs())
        shown = {model.data(model.index(row, 5)) for row in range(model.rowCount())}
    assert shown == {"gpt2", "gpt2 · SuperBPE t=25,600"}
