"""Merge-list pages are read off the UI thread: a row whose page is not cached shows a
placeholder at once and its real merge when the page arrives; a sort or search made meanwhile
never shows rows of the old order; the reader's thread ends with the panel."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import no_qthread_left  # noqa: E402, F401  (autouse fixture)
from PySide6.QtCore import Qt  # noqa: E402

from workbench.display import readable  # noqa: E402
from workbench.gui.merge_list import MergeListPanel  # noqa: E402
from workbench.gui.merge_table import (  # noqa: E402
    COUNT,
    PAGE,
    PENDING,
    RANK,
    TOKEN,
    MergeTableModel,
    parse_search,
)
from workbench.store import RunStore  # noqa: E402
from workbench.store.synthetic import synthetic_batches  # noqa: E402

N = 20_000
USER = Qt.ItemDataRole.UserRole


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("pages") / "runs.db"
    with RunStore(path) as store:
        run_id = store.create_run("synthetic")
        with store.writer(run_id) as writer:
            for batch in synthetic_batches(N, batch_size=5000, seed=3):
                writer.write(batch)
    return path, run_id


@pytest.fixture
def run(db):
    path, run_id = db
    store = RunStore(path)
    yield store, run_id
    store.close()


@pytest.fixture
def model(run):
    store, run_id = run
    m = MergeTableModel()
    m.read_in_background()
    m.set_run(store, run_id, N)
    yield m
    m.shutdown()
    assert not m.pages_pending()


def settle(qtbot, model: MergeTableModel) -> None:
    qtbot.waitUntil(lambda: not model.pages_pending(), timeout=30_000)


def test_the_last_row_under_a_token_sort_is_a_placeholder_then_the_stores_row(qtbot, run, model):
    store, run_id = run
    model.sort(TOKEN, Qt.SortOrder.AscendingOrder)
    last = model.index(N - 1, TOKEN)
    assert model.data(last) == PENDING  # answered at once, nothing read on this thread
    assert model.data(model.index(N - 1, RANK)) is None
    with qtbot.waitSignal(model.dataChanged, timeout=30_000):
        pass
    expected = store.search(run_id, order="token", limit=1, offset=N - 1)[0]
    assert model.data(last) == readable(expected.token)
    assert model.data(model.index(N - 1, RANK)) == str(expected.rank)
    assert model.data(last, USER) == expected.rank
    assert model.merge_at(N - 1) == expected


def test_a_page_in_flight_is_asked_for_once(qtbot, model):
    model.sort(TOKEN, Qt.SortOrder.DescendingOrder)
    arrived = []
    model.sigPageArrived.connect(lambda first, last: arrived.append((first, last)))
    last_page = (N - 1) // PAGE * PAGE
    for row in range(last_page, N, 7):  # rows of the last page, two cells each
        model.data(model.index(row, TOKEN))
        model.data(model.index(row, COUNT))
    settle(qtbot, model)
    assert arrived == [(last_page, N - 1)]


@pytest.mark.parametrize("change", ["sort", "search"])
def test_a_change_while_a_page_is_in_flight_never_shows_the_old_order(qtbot, run, model, change):
    store, run_id = run
    model.sort(TOKEN, Qt.SortOrder.AscendingOrder)
    rows = [N - 1, N // 2, 0]
    for row in rows:
        assert model.data(model.index(row, TOKEN)) == PENDING
    # No event is handled between the request and the change: the pages are still in flight.
    if change == "sort":
        model.sort(COUNT, Qt.SortOrder.DescendingOrder)
        expected = store.search(run_id, order="-count", limit=N)
    else:
        model.set_filter(parse_search("e"))
        expected = store.search(run_id, order="token", text="e", limit=N)
    assert model.rowCount() == len(expected)
    shown: list[tuple[int, int]] = []

    def record(top, bottom, _roles=()) -> None:
        for row in range(top.row(), bottom.row() + 1):
            rank = model.data(model.index(row, 0), USER)
            if rank is not None:
                shown.append((row, rank))

    model.dataChanged.connect(record)
    settle(qtbot, model)
    wanted = [r for r in rows if r < model.rowCount()]
    for row in wanted:
        model.data(model.index(row, TOKEN))
    settle(qtbot, model)
    assert shown  # the pages asked for after the change arrived ...
    assert all(rank == expected[row].rank for row, rank in shown)  # ... in the new order only
    for row in wanted:
        assert model.data(model.index(row, TOKEN)) == readable(expected[row].token)


def test_model_tester_passes_with_background_pages(qtbot, qtmodeltester, run, model):
    store, run_id = run
    model.set_run(store, run_id, 3 * PAGE + 5)  # the tester visits every cell: keep it short
    qtmodeltester.check(model)
    settle(qtbot, model)
    model.sort(TOKEN, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(model)
    settle(qtbot, model)
    qtmodeltester.check(model)


def test_the_panel_stops_its_reader_when_closed(qtbot, run):
    store, run_id = run
    panel = MergeListPanel()
    qtbot.addWidget(panel)
    panel.resize(700, 500)
    panel.show()
    panel.set_run(store, run_id, N)
    panel.view.sortByColumn(TOKEN, Qt.SortOrder.AscendingOrder)
    panel.view.scrollToBottom()
    expected = store.search(run_id, order="token", limit=1, offset=N - 1)[0]
    qtbot.waitUntil(lambda: panel.model.cached_merge(N - 1) == expected, timeout=30_000)
    panel.close()
    assert not panel.model.pages_pending()


def test_a_sorted_list_that_grows_keeps_its_rows_on_show_until_read_again(qtbot, run, model):
    store, run_id = run
    model.set_run(store, run_id, N // 2)
    model.sort(COUNT, Qt.SortOrder.DescendingOrder)
    assert model.data(model.index(0, TOKEN)) == PENDING
    settle(qtbot, model)
    model.note_total(N)  # training went on: the sort may have moved every row
    # The page read before stays on show (same order, a moment old), never a placeholder ...
    assert model.data(model.index(0, TOKEN)) != PENDING
    assert model.pages_pending()  # ... while it is read again
    settle(qtbot, model)
    expected = store.search(run_id, order="-count", limit=PAGE)
    assert [model.data(model.index(row, 0), USER) for row in range(PAGE)] == [
        m.rank for m in expected
    ]


def _cell(model: MergeTableModel, row: int, column: int) -> dict[int, object]:
    """What a Qt 6 delegate gets for a cell through `multiData` (one call for every role)."""
    from PySide6.QtCore import QModelRoleData

    roles = [int(r) for r in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.FontRole)] + [
        int(r)
        for r in (
            Qt.ItemDataRole.TextAlignmentRole,
            Qt.ItemDataRole.BackgroundRole,
            Qt.ItemDataRole.ForegroundRole,
            Qt.ItemDataRole.DecorationRole,
        )
    ]
    span = [QModelRoleData(role) for role in roles]
    model.multiData(model.index(row, column), span)
    return {rd.role(): rd.data() for rd in span}


def test_cached_cells_follow_every_change_and_match_data(qtbot, run, model):
    """A row's cells are formatted once and cached: what a paint gets (multiData) is what
    data() answers, and a replay's k, a tint, a sort or a base's rank offset shows at once."""
    store, run_id = run
    rows = range(0, 40)
    for row in rows:
        model.data(model.index(row, TOKEN))
    settle(qtbot, model)
    expected = store.merges(run_id, limit=40)
    display = int(Qt.ItemDataRole.DisplayRole)
    background = int(Qt.ItemDataRole.BackgroundRole)
    foreground = int(Qt.ItemDataRole.ForegroundRole)

    def check() -> None:
        for row in rows:
            for column in range(7):
                cell = _cell(model, row, column)
                for role, value in cell.items():
                    assert value == model.data(model.index(row, column), role), (row, column)
                assert cell[display] == model.text(row, column)

    check()
    assert _cell(model, 5, TOKEN)[display] == readable(expected[5].token)
    model.set_replay(10)  # merges from rank 10 greyed
    assert _cell(model, 9, TOKEN)[foreground] is None
    assert _cell(model, 10, TOKEN)[foreground] is not None
    model.set_replay(None)
    assert _cell(model, 10, TOKEN)[foreground] is None
    model.set_highlight(N - 5)
    assert model.data(model.index(N - 1, RANK), background) is not None
    model.set_highlight(None)
    model.set_start_tokens(None, base_merges=1000)  # an extension run's ranks follow its base's
    assert _cell(model, 3, RANK)[display] == str(expected[3].rank + 1000)
    check()
    model.sort(COUNT, Qt.SortOrder.DescendingOrder)
    assert _cell(model, 0, TOKEN)[display] == PENDING  # the old order's cells are gone
    for row in rows:
        model.data(model.index(row, TOKEN))
    settle(qtbot, model)
    by_count = store.search(run_id, order="-count", limit=40)
    assert [_cell(model, row, TOKEN)[display] for row in rows] == [
        readable(m.token) for m in by_count
    ]
    check()
