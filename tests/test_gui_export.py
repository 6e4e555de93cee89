"""Export in plain sight: File ▸ Export tokenizer… (Ctrl+E), the Runs tab's Export (button and
right-click), the guide's step, and the dialog's Close; each writes files that read back."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QKeySequence  # noqa: E402

from workbench.engine import formats  # noqa: E402

EXPORT_MS = 120_000


def _file_menu(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    return menus["File"]


def _export_and_wait(qtbot, dialog, folder) -> None:
    dialog.folder.setText(str(folder))
    with qtbot.waitSignal(dialog.sigFinished, timeout=EXPORT_MS):
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)


def test_export_without_a_run_says_what_to_do(window):
    action = next(a for a in _file_menu(window).actions() if a.objectName() == "export")
    assert action.text() == "Export tokenizer…"
    assert action.shortcut() == QKeySequence("Ctrl+E")
    assert not action.isEnabled()  # no run open
    assert window.export_tokenizer() is None
    assert window.export_dialogs == []
    assert "No run to export" in window.statusBar().currentMessage()


def test_file_menu_exports_the_open_run_and_checks_it(qtbot, window, tmp_path):
    train_to(qtbot, window, 256 + 40)
    action = next(a for a in _file_menu(window).actions() if a.objectName() == "export")
    action.trigger()
    (dialog,) = window.export_dialogs
    qtbot.waitExposed(dialog)
    assert f"run {window.run_id}" in dialog.windowTitle()
    _export_and_wait(qtbot, dialog, tmp_path / "out")
    assert [r.fmt for r in dialog.results] == ["hf", "gpt2"]
    assert all(r.ok for r in dialog.results), dialog.log.toPlainText()
    back = formats.load(tmp_path / "out" / "hf")
    assert len(back.merges) == 40
    close = dialog.close_buttons.button(dialog.close_buttons.StandardButton.Close)
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()


def test_runs_tab_exports_the_chosen_run_in_several_formats(qtbot, window, tmp_path):
    train_to(qtbot, window, 256 + 30)
    first = window.run_id
    train_to(qtbot, window, 256 + 12)
    window.runs.refresh()
    window.runs.select_run(first)
    menu_items = [a.text() for a in window.runs.context_menu().actions()]
    assert menu_items == ["Open", "Export…", "Rename…", "Delete"]
    qtbot.mouseClick(window.runs.buttons["export"], Qt.MouseButton.LeftButton)
    dialog = window.export_dialogs[-1]
    assert f"run {first} " in dialog.windowTitle()  # the selected run, not the open one
    for box in dialog.boxes.values():
        box.setChecked(True)
    _export_and_wait(qtbot, dialog, tmp_path / "all")
    assert {r.fmt for r in dialog.results} == set(formats.FORMATS)
    assert all(r.ok for r in dialog.results), dialog.log.toPlainText()
    assert len(formats.load(tmp_path / "all" / "gpt2").merges) == 30
    dialog.close()


def test_the_guide_shows_export_and_escape_closes_it(qtbot, window):
    dialog = window.guide()
    qtbot.waitExposed(dialog)
    text = dialog.browser.toPlainText()
    assert "Export tokenizer… (Ctrl+E)" in text and "Export and check" in text
    dialog.browser.setFocus()
    qtbot.keyClick(dialog.browser, Qt.Key.Key_Escape)
    assert not dialog.isVisible()
