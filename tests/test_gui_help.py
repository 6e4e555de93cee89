"""Help: the guide in the window with its picture, About with versions, and words on every
chart (tooltip and "What's this?")."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import platform

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import QUrl  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402

from workbench.gui.help import CHART_HELP, COLUMN_HELP, about_html, versions  # noqa: E402


def test_help_menu_has_guide_whats_this_and_about(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert "Help" in menus
    items = [a.text() for a in menus["Help"].actions() if a.text()]
    assert items == ["Guide", "What's this?", "About BPE Workbench"]


def test_the_guide_explains_charts_columns_and_shortcuts_with_a_picture(qtbot, window):
    dialog = window.guide()
    qtbot.waitExposed(dialog)
    text = dialog.browser.toPlainText()
    for name in (*CHART_HELP, *COLUMN_HELP, "What BPE does", "Shortcuts", "Ctrl+Enter"):
        assert name in text, name
    picture = dialog.browser.document().resource(
        QTextDocument.ResourceType.ImageResource, QUrl("guide:merges")
    )
    assert picture is not None and not picture.isNull() and picture.width() > 100
    dialog.close()


def test_about_names_the_versions(qapp):
    found = versions()
    for name in ("BPE Workbench", "Python", "PySide6", "Qt", "pyqtgraph", "numba", "numpy"):
        assert found[name] and found[name] != "not installed", name
    assert {"regex", "SQLite"} <= found.keys()
    assert platform.python_version() in about_html()


def test_every_chart_says_what_it_shows(window):
    charts = window.charts
    plots = (charts.count_plot, charts.bpt_plot, charts.rate_plot, charts.length_plot)
    for plot, (name, words) in zip(plots, CHART_HELP.items(), strict=True):
        assert name in plot.toolTip() and words in plot.toolTip()
    for name in CHART_HELP:
        assert name in charts.graphics.whatsThis()


def test_the_guide_covers_every_tab_and_continuing(qtbot, window):
    dialog = window.guide()
    qtbot.waitExposed(dialog)
    text = dialog.browser.toPlainText()
    for section in ("Continuing a run", "The Tokens tab", "Compare", "Evaluate", "Export"):
        assert section in text, section
    assert "Runs tab" in text and "replayed" in text
    dialog.close()


def test_whats_this_on_every_control(window):
    from PySide6.QtWidgets import QPushButton

    from workbench.gui.whats_this import controls, controls_without_help

    assert controls_without_help(window) == []
    found = controls(window)
    assert len(found) > 60  # the pass saw the whole window, every tab
    by_text = {b.text(): b for b in found if isinstance(b, QPushButton)}
    assert "held-out" in by_text["Add files…"].whatsThis()
    assert "Ctrl" in window.controls.buttons["train"].toolTip()
    assert window.controls.buttons["stop"].whatsThis().startswith("End the run")
