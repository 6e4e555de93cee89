"""A SuperBPE run in the window as a person makes one: the setting in Settings, the superwords
marked in the merge list, the transition line on the charts, and the same after a restart."""

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
    window,  # noqa: F401
)
from PySide6.QtCore import Qt  # noqa: E402

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
