"""The merge list as a new user meets it: sorting by the query, the newest merges at Ctrl+End,
a count for every search and "No matches", regex on the real text, follow newest, the tint on
merges just made, and nothing stale from an earlier run."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import Qt  # noqa: E402

from workbench.gui.merge_list import MergeListPanel  # noqa: E402
from workbench.gui.merge_table import (  # noqa: E402
    COUNT,
    LENGTH,
    RANK,
    TOKEN,
    MergeTableModel,
    parse_search,
)
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


def every_row(model: MergeTableModel) -> list:
    return [model.merge_at(row) for row in range(model.rowCount())]


def test_header_sorts_are_the_stores_and_keep_every_row(qtmodeltester, run):
    store, run_id = run
    everything = store.merges(run_id, limit=N)
    # SQLite compares BLOBs as Python compares bytes; descending needs a number to negate.
    position = {t: i for i, t in enumerate(sorted({m.token for m in everything}))}
    model = MergeTableModel()
    model.set_run(store, run_id, N)
    for column, key in ((COUNT, "count"), (LENGTH, "length"), (TOKEN, "token")):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            model.sort(column, order)
            qtmodeltester.check(model)
            sign = -1 if order == Qt.SortOrder.DescendingOrder else 1

            def value(m, key=key, sign=sign):
                v = getattr(m, key)
                return (sign * (position[v] if key == "token" else v), m.rank)  # ties: by rank

            expected = [m.rank for m in sorted(everything, key=value)]
            assert [m.rank for m in every_row(model)] == expected, (key, order)
    model.sort(RANK, Qt.SortOrder.DescendingOrder)
    assert [m.rank for m in every_row(model)] == list(range(N - 1, -1, -1))


def test_sorting_a_search_and_its_count(run):
    store, run_id = run
    model = MergeTableModel()
    model.set_run(store, run_id, N)
    model.set_filter(parse_search("e"))
    matches = store.search(run_id, text="e", limit=N)
    assert model.matches == model.rowCount() == len(matches) > 0
    model.sort(COUNT, Qt.SortOrder.DescendingOrder)
    counts = [m.count for m in every_row(model)]
    assert counts == sorted(counts, reverse=True) and len(counts) == len(matches)
    # Three characters go through the trigram index: sorted the same way, page by page.
    everything = store.search(run_id, text="<99", limit=N)
    assert len(everything) > 14
    expected = [m.rank for m in sorted(everything, key=lambda m: (-m.count, m.rank))]
    pages = [store.search(run_id, text="<99", order="-count", limit=7, offset=o) for o in (0, 7)]
    assert [m.rank for page in pages for m in page] == expected[:14]


def test_regex_runs_on_the_real_text_not_the_display_form(run):
    store, run_id = run
    everything = store.merges(run_id, limit=N)
    with_space = [m.rank for m in everything if m.token.startswith(b" ")]
    assert with_space
    assert [m.rank for m in store.search(run_id, regex=r"^\s", limit=N)] == [
        m.rank for m in everything if m.token[:1].isspace()
    ]
    assert [m.rank for m in store.search(run_id, regex="^ ", limit=N)] == with_space
    # The display glyph is not in the text: `·` finds only tokens that really hold one.
    assert all("·" in m.token.decode("utf-8", "replace") for m in store.search(run_id, regex="·"))


@pytest.fixture
def panel(qtbot) -> MergeListPanel:
    widget = MergeListPanel()
    qtbot.addWidget(widget)
    widget.resize(700, 500)
    widget.show()
    return widget


def test_panel_counts_says_no_matches_and_jumps_to_the_newest(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, N)
    assert panel.count_label.text() == f"{N:,} merges"
    panel.view.scrollToBottom()  # scrolling moves the viewport's children along
    panel.search.setText("zzzzqqq")
    panel.apply_search()
    assert panel.count_label.text() == "No matches"
    assert panel.no_matches.isVisible()
    assert panel.view.viewport().rect().contains(panel.no_matches.geometry())
    panel.search.setText("/^ /")
    panel.apply_search()
    n = store.search_count(run_id, regex="^ ")
    assert panel.count_label.text() == f"{n:,} matches" and not panel.no_matches.isVisible()
    panel.search.clear()
    panel.apply_search()
    # Ctrl+End: straight to the newest merge, whatever the run's length.
    panel.view.setFocus()
    panel.view.setCurrentIndex(panel.model.index(0, 0))
    qtbot.keyClick(panel.view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert panel.view.currentIndex().row() == N - 1
    assert panel.model.merge_at(N - 1).rank == N - 1


def test_follow_newest_and_the_tint_of_a_step(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, 1000)
    panel.follow.setChecked(True)
    panel.model.set_highlight(990)
    panel.model.note_total(1200)  # training went on
    panel.poke()
    bar = panel.view.verticalScrollBar()
    assert panel.model.rowCount() == 1200 and bar.value() == bar.maximum()
    model = panel.model
    assert model.data(model.index(1199, 0), Qt.ItemDataRole.BackgroundRole) is not None
    assert model.data(model.index(995, 0), Qt.ItemDataRole.BackgroundRole) is not None
    assert model.data(model.index(10, 0), Qt.ItemDataRole.BackgroundRole) is None


def test_a_new_run_forgets_the_last_runs_details(qtbot, window):
    window.controls.vocab.setValue(256 + 120)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    panel = window.merge_list
    panel.select_rank(5)
    assert "(" in panel.tree.later_title.text()  # "Later merges that use it (N)"
    window.charts.hover_label.setText("rank 7 · stale")
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    assert panel.tree.later_title.text() == "Later merges that use it"
    assert "stale" not in window.charts.hover_label.full_text()


def test_a_new_corpus_clears_the_last_runs_charts(qtbot, window, tmp_path):
    window.controls.vocab.setValue(256 + 50)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    assert window.charts.data.n == 50
    corpus = tmp_path / "other.txt"
    corpus.write_text("another corpus, another run " * 50, encoding="utf-8")
    window.load_corpus([corpus])
    assert window.charts.data.n == 0
    assert "New corpus" in window.charts.caption.full_text()
    assert window.merge_list.model.rowCount() == 0
    qtbot.waitUntil(
        lambda: window.status.stage.full_text().startswith("Corpus read"), timeout=COLD_START_MS
    )


def test_status_after_a_load_and_stop_reasons_in_words(qtbot, window):
    qtbot.waitUntil(
        lambda: window.status.stage.full_text().startswith(("Corpus read", "Trainer ready")),
        timeout=COLD_START_MS,
    )
    qtbot.waitUntil(lambda: window.corpus_panel.top_model.rowCount() > 0, timeout=COLD_START_MS)
    assert "Reading the corpus" not in window.status.stage.full_text()
    window.controls.vocab.setValue(256 + 40)
    window.train()
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)
    assert "reached vocabulary size" in window.status.stage.full_text()
    assert "vocab_size" not in window.status.stage.full_text()
    runs = window.runs.model
    # The Runs tab refreshes in a turn after the run's end (not inside it): wait for it.
    finished = "finished (reached vocabulary size)"
    qtbot.waitUntil(lambda: runs.data(runs.index(0, 2)) == finished, timeout=5000)


def test_a_vocab_size_under_the_minimum_is_named_not_reverted(qtbot, window):
    window.controls.vocab.setValue(100)
    assert window.controls.vocab.value() == 100
    assert window.controls.vocab_error.isVisible()
    assert "at least 257" in window.controls.vocab_error.text()
    assert not window.actions_by_name["train"].isEnabled()
    window.controls.specials.setText("<|endoftext|>")
    window.controls.vocab.setValue(257)
    assert "at least 258" in window.controls.vocab_error.text()
    window.controls.vocab.setValue(300)
    assert not window.controls.vocab_error.isVisible()


def test_a_merge_the_user_picks_stays_in_view_while_the_run_goes_on(qtbot, run, panel):
    store, run_id = run
    panel.set_run(store, run_id, 1000)
    panel.follow.setChecked(True)
    panel.view.scrollToTop()
    panel.view.setFocus()
    qtbot.waitUntil(panel.view.hasFocus, timeout=2000)
    rect = panel.view.visualRect(panel.model.index(2, 0))
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert panel.view.currentIndex().row() == 2
    assert not panel.follow.isChecked()
    panel.model.note_total(1200)  # training went on
    panel.poke()
    assert panel.view.rowAt(0) <= 2 <= panel.view.rowAt(panel.view.viewport().height() - 1)
