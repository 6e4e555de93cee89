"""The Evaluate tab's "Compare runs" and "Vocabulary size" driven as a user would: pick two runs,
Compare, read the divergence, the overlap curve and the lists; tick runs, Plan, read the cheapest
k. Results equal the CLI's (`diff`, `eval --plan`); names are escaped; every test ends with no
QThread running (gui_fixtures)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import COLD_START_MS, no_qthread_left  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402

from workbench.cli import main as cli  # noqa: E402
from workbench.evaluate.diff import diff  # noqa: E402
from workbench.evaluate.specs import resolve  # noqa: E402
from workbench.gui.evaluate_tab import EvaluateTab  # noqa: E402
from workbench.store import RunStore  # noqa: E402


@pytest.fixture(scope="module")
def two_runs(corpora, tmp_path_factory) -> Path:
    """Run 1 on Taylor Swift's page; run 2 (a name with a terminal escape) on Shakespeare."""
    folder = tmp_path_factory.mktemp("compare")
    db = folder / "runs.db"
    for i, (name, run_name) in enumerate(
        (("taylorswift.txt", "swift"), ("tinyshakespeare.txt", "bard\x1b[31m\u202e")), 1
    ):
        code = cli(["train", str(corpora / name), "--vocab-size", "400", "--db", str(db),
                    "--out-dir", str(folder / f"out{i}"), "--name", run_name, "--quiet"])  # fmt: skip
        assert code == 0
    return db


@pytest.fixture
def tab(qtbot, two_runs):
    store = RunStore(two_runs)
    widget = EvaluateTab(two_runs, store)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    yield widget
    widget.shutdown()
    store.close()


def test_compare_two_runs(qtbot, tab, two_runs, corpora):
    panel = tab.compare
    assert panel.a.findData("run:1") >= 0 and panel.b.findData("run:2") >= 0
    assert "\x1b" not in panel.b.itemText(panel.b.findData("run:2"))  # escaped in the list
    tab.text.add_path(corpora / "tinystories_sample.txt")
    panel.choose("run:1", "run:2")
    with qtbot.waitSignal(panel.runner.sigIdle, timeout=COLD_START_MS):
        qtbot.mouseClick(panel.compare_button, Qt.MouseButton.LeftButton)
    assert panel.status.text() == "done", panel.status.text()
    (pair,) = panel.result["pairs"]
    text = (corpora / "tinystories_sample.txt").read_text("utf-8")
    cands = [resolve(s, two_runs) for s in ("run:1", "run:2")]
    (want,) = diff(cands, [text])["pairs"]
    assert pair == want  # what `bpe-workbench diff run:1 run:2 --text …` says
    summary = panel.summary.text()
    assert "First divergent rank" in summary and "Held-out text" in summary
    assert "\x1b" not in summary and "\\x1b[31m\\u202e" in summary
    assert panel.plot.line is not None and panel.plot.divergence is not None
    assert panel.only_a.rowCount() == len(pair["only_in_a"])
    assert panel.credits.rowCount() > 0 and panel.cuts.rowCount() > 0
    assert panel.credits.item(0, 0).text()  # the largest saving first
    saves = [float(panel.credits.item(r, 0).text().replace(",", "")) for r in range(5)]
    assert saves == sorted(saves, reverse=True)


def test_compare_needs_two_different(qtbot, tab):
    panel = tab.compare
    panel.choose("run:1", "run:1")
    assert not panel.start() and "two different" in panel.status.text()
    assert not panel.busy()


def test_compare_at_k_a_bad_k_and_cancel(qtbot, tab):
    panel = tab.compare
    panel.choose("run:1", "run:2", k=40)
    with qtbot.waitSignal(panel.runner.sigIdle, timeout=COLD_START_MS):
        assert panel.start()
        assert not panel.compare_button.isEnabled()
    (pair,) = panel.result["pairs"]
    assert pair["a"]["merges"] == pair["b"]["merges"] == 40
    assert pair["text"] is None and "Add held-out text" in panel.summary.text()
    panel.choose("run:1", "run:2", k=10_000)  # past both runs' ends: one line, no traceback
    with qtbot.waitSignal(panel.runner.sigIdle, timeout=COLD_START_MS):
        panel.start()
    assert panel.status.text().startswith("failed: --k 10000: run:1 has")
    panel.choose("run:1", "run:2")
    with qtbot.waitSignal(panel.runner.sigIdle, timeout=COLD_START_MS):
        assert panel.start()
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)  # before it compares
    assert panel.status.text() == "cancelled" and panel.compare_button.isEnabled()


def test_plan_ticked_runs(qtbot, tab, corpora, two_runs, tmp_path):
    panel = tab.plan
    assert not panel.start() and "tick at least one run" in panel.status.text()
    tab.tokenizers.pick_run(1)
    tab.tokenizers.pick_run(2)
    assert not panel.start() and "held-out text" in panel.status.text()
    held = corpora / "tinystories_sample.txt"
    tab.text.add_path(held)
    panel.params_box.setText("12x")
    assert not panel.start() and "not a whole number" in panel.status.text()
    panel.params_box.setText("")
    panel.width_box.setValue(64)
    panel.layers_box.setValue(2)
    panel.context_box.setValue(256)
    with qtbot.waitSignal(panel.runner.sigIdle, timeout=COLD_START_MS):
        qtbot.mouseClick(panel.plan_button, Qt.MouseButton.LeftButton)
    assert panel.status.text() == "done", panel.status.text()
    plan = panel.result
    assert plan["model"]["n"] == 12 * 2 * 64 * 64
    assert len(panel.plot.lines) == 2 and len(panel.plot.stars) == 2
    assert "cheapest at k = " in panel.findings.text() and "\x1b" not in panel.findings.text()
    # the same figures as the command line's
    out = tmp_path / "plan.json"
    code = cli(["eval", "--db", str(two_runs), "--tokenizer", "run:2", "--tokenizer", "run:1",
                str(held), "--plan", "--width", "64", "--layers", "2", "--context", "256",
                "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    import json

    want = json.loads(out.read_text("utf-8"))["plan"]
    got = {t["name"]: t["best"] for t in plan["tokenizers"]}
    assert got == {t["name"]: t["best"] for t in want["tokenizers"]}


def test_closing_the_window_mid_compare_leaves_no_thread(qtbot, two_runs, tmp_path, corpora):
    """The window's Evaluate tab holds both panels; closing it while one works stops it."""
    from gui_fixtures import close_window, make_window

    window = make_window(tmp_path / "settings.ini", two_runs)
    window.show()
    qtbot.waitExposed(window)
    titles = [window.evaluate.results.tabText(i) for i in range(window.evaluate.results.count())]
    assert {"Compare runs", "Vocabulary size"} <= set(titles)
    panel = window.evaluate.compare
    window.evaluate.text.add_path(corpora / "tinyshakespeare.txt")
    panel.choose("run:1", "run:2")
    assert panel.start() and window.evaluate.busy()
    close_window(qtbot, window)
    assert not panel.busy()  # shut down with the window (the autouse check: no QThread left)
