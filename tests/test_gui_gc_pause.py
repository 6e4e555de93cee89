"""The cyclic collector is off while a background job builds a large structure (a stored run's
tokenizer, its merges for the charts) and comes back, with what was built frozen, when the last
job ends; opening a run leaves it on afterwards."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import gc

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

from workbench.gui import gc_pause  # noqa: E402


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_nested_pauses_turn_it_back_on_once_and_freeze_what_was_built(collector_on):
    frozen = gc.get_freeze_count()
    with gc_pause.collector_paused():
        assert not gc.isenabled()
        gc_pause.pause_collector()
        built = [[i] for i in range(1000)]  # tracked containers made meanwhile
        gc_pause.resume_collector()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(built)
    gc_pause.resume_collector()  # one too many: nothing happens
    assert gc.isenabled()


def test_a_pause_ends_when_the_job_fails(collector_on):
    with pytest.raises(ValueError), gc_pause.collector_paused():
        raise ValueError("the job failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on):
    gc.disable()
    with gc_pause.collector_paused():
        pass
    assert not gc.isenabled()


def test_opening_a_run_pauses_the_collector_until_its_charts_have_it(qtbot, window, collector_on):
    train_to(qtbot, window, 256 + 120)
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    # The run's end builds its tokenizer (Tokens tab, teaching) with the collector paused: a
    # build still going would keep the pause below from turning off the collector enabled here.
    qtbot.waitUntil(
        lambda: not window.tokens.lane.busy() and not window.sample_lane.busy(),
        timeout=COLD_START_MS,
    )
    gc.enable()  # whatever the run's end did
    window.open_run(window.run_id)
    assert not gc.isenabled()
    qtbot.waitUntil(lambda: not window.history.loading, timeout=COLD_START_MS)
    qtbot.waitUntil(lambda: not window.tokens.lane.busy(), timeout=COLD_START_MS)
    qtbot.waitUntil(gc.isenabled, timeout=COLD_START_MS)
