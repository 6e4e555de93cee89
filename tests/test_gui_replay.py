"""Replay a run: the clock's arithmetic, and the timeline driving every view of the open run
(charts marked, later merges greyed, the Tokens text cut with the first k merges)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    click,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)
from PySide6.QtCore import Qt  # noqa: E402

from workbench.gui.merge_table import LATER  # noqa: E402
from workbench.gui.replay import ReplayClock  # noqa: E402


def test_the_clock_carries_fractions_and_stops_at_the_end():
    clock = ReplayClock(total=100, speed=10)
    assert clock.k == 100 and clock.done
    clock.rewind_if_done()
    assert clock.k == 0
    for _ in range(30):  # a second at 30 frames: 10 merges, not 0 (each frame is 1/3 merge)
        clock.advance(1 / 30)
    assert clock.k == 10
    clock.speed = 1000
    assert clock.advance(5.0) == 100 and clock.done
    clock.seek(-5)
    assert clock.k == 0
    clock.seek(500)
    assert clock.k == 100


def _grey(window, rank: int) -> bool:
    model = window.merge_list.model
    row = model.row_of_rank(rank)
    return model.data(model.index(row, 0), Qt.ItemDataRole.ForegroundRole) == LATER


def test_replay_shows_the_run_at_merge_k_everywhere(qtbot, window):
    train_to(qtbot, window, 256 + 200)
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == window.run_id, timeout=COLD_START_MS)
    panel.set_text("the quick brown fox jumps over the lazy dog, def main(): return 0")
    qtbot.waitUntil(lambda: window.merge_list.model.rowCount() == 200, timeout=5000)
    replay = window.replay
    assert replay.isEnabled() and replay.clock.total == 200
    replay.seek(50)
    assert _grey(window, 120) and _grey(window, 50) and not _grey(window, 49)
    assert window.charts.markers[0].isVisible() and window.charts.markers[0].value() == 49
    assert "after 50 merges" in window.charts.hover_label.full_text()
    qtbot.waitUntil(
        lambda: panel.view.tokenizer is not None and len(panel.view.tokenizer.merges) == 50,
        timeout=10_000,
    )
    # Teaching follows the timeline: merge 50 (rank 49) is explained at once, and the sample
    # is cut with the first 50 merges in the background.
    (merge_50,) = window.store.merges(window.run_id, after_rank=48, limit=1)
    assert f"occurred {merge_50.count:,} time" in window.teaching.why.text()
    qtbot.waitUntil(
        lambda: window.teaching.newest.full_text().startswith("Merge 50:"), timeout=10_000
    )
    # Play from where it is to the end, at the fastest speed: the views come back whole.
    replay.speed.setCurrentIndex(replay.speed.count() - 1)
    qtbot.mouseClick(replay.play_button, Qt.MouseButton.LeftButton)
    assert replay.playing
    qtbot.waitUntil(lambda: not replay.playing, timeout=10_000)
    assert replay.k == 200
    assert not _grey(window, 199) and not window.charts.markers[0].isVisible()
    qtbot.waitUntil(lambda: len(panel.view.tokenizer.merges) == 200, timeout=10_000)
    qtbot.waitUntil(
        lambda: window.teaching.newest.full_text().startswith("Merge 200:"), timeout=10_000
    )


def test_training_ends_a_replay_and_a_new_run_is_replayable(qtbot, window):
    train_to(qtbot, window, 256 + 60)
    qtbot.waitUntil(lambda: window.merge_list.model.rowCount() == 60, timeout=5000)
    window.replay.seek(10)
    # The list greys in a turn of its own (one costly view per turn), within 0.1 s.
    qtbot.waitUntil(lambda: _grey(window, 30), timeout=2000)
    window.controls.vocab.setValue(60_000)
    click(qtbot, window, "train")
    assert not window.replay.isEnabled()  # training: nothing to replay yet
    click(qtbot, window, "pause")
    qtbot.waitUntil(lambda: window.mode == "paused", timeout=COLD_START_MS)
    assert window.replay.isEnabled()
    assert window.replay.clock.total == window.merges_done
    assert window.merge_list.model.replay_at is None
    click(qtbot, window, "stop")


def test_a_playing_replay_moves_one_costly_view_per_frame(qtbot, window, monkeypatch):
    """Each view of a playing replay costs the UI thread a turn, so a frame moves at most one
    of the Tokens cut, teaching and the merge list (the charts' markers every frame); each
    still follows, a few times a second."""
    train_to(qtbot, window, 256 + 200)
    panel = window.tokens.panel
    qtbot.waitUntil(lambda: panel._run_id == window.run_id, timeout=COLD_START_MS)
    panel.set_text("the quick brown fox jumps over the lazy dog")
    qtbot.waitUntil(lambda: window.merge_list.model.rowCount() == 200, timeout=5000)
    frames: list[set[str]] = []
    moved: set[str] = set()

    def spy(name, original):
        def call(*args):
            moved.add(name)
            return original(*args)

        return call

    monkeypatch.setattr(panel, "show_rank", spy("tokens", panel.show_rank))
    monkeypatch.setattr(window, "_teach_replayed", spy("teaching", window._teach_replayed))
    monkeypatch.setattr(
        window.merge_list, "show_replay", spy("list", window.merge_list.show_replay)
    )

    def frame(_k: int) -> None:
        if window.replay.playing:
            frames.append(set(moved))
        moved.clear()

    # Connected after the window's slot, so it sees what that frame moved.
    window.replay.sigRank.connect(frame)
    replay = window.replay
    replay.speed.setCurrentIndex(0)  # 10 merges a second: 200 merges last 20 s
    replay.seek(0)
    replay.play()
    qtbot.wait(1800)
    window.replay.sigRank.disconnect(frame)
    qtbot.mouseClick(replay.play_button, Qt.MouseButton.LeftButton)  # pause: all catch up
    assert not replay.playing and 0 < replay.k < 200
    assert window.merge_list.model.replay_at == replay.k
    qtbot.waitUntil(lambda: len(panel.view.tokenizer.merges) == replay.k, timeout=10_000)
    assert len(frames) > 20
    assert all(len(views) <= 1 for views in frames), frames
    counts = {
        name: sum(name in views for views in frames) for name in ("tokens", "teaching", "list")
    }
    assert counts["tokens"] >= 2 and counts["teaching"] >= 2 and counts["list"] >= 4, counts
    assert window.merge_list.model.replay_at is not None
