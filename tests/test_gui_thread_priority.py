"""The window's background threads run at a lower priority than the UI thread (Linux: a nice
value per thread), and so do the threads they start; the UI thread keeps its own."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import sys
import threading

import pytest

pytest.importorskip("pytestqt")
if not sys.platform.startswith("linux"):
    pytest.skip("a nice value per thread is Linux's", allow_module_level=True)

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    window,  # noqa: F401
)
from PySide6.QtCore import QTimer  # noqa: E402

from workbench.gui.thread_priority import (  # noqa: E402
    WORKER_NICENESS,
    lower_current_thread,
    thread_niceness,
)
from workbench.gui.tokens.jobs import JobLane  # noqa: E402


def _in_thread(fn):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def test_a_lowered_thread_and_the_threads_it_starts_run_nicer_the_caller_does_not():
    ours = thread_niceness()
    assert ours is not None and ours < WORKER_NICENESS  # else the test proves nothing

    def lowered_twice_then_child() -> tuple[int | None, int | None]:
        assert lower_current_thread() and lower_current_thread()  # no second step down
        return thread_niceness(), _in_thread(thread_niceness)

    assert _in_thread(lowered_twice_then_child) == (WORKER_NICENESS, WORKER_NICENESS)
    assert thread_niceness() == ours


def test_a_lane_job_runs_lowered_while_the_ui_thread_keeps_its_priority(qtbot):
    ours = thread_niceness()
    lane = JobLane(encodes=False)
    answers: list = []
    lane.sigResult.connect(answers.append)
    lane.submit(lambda: (thread_niceness(), threading.current_thread() is threading.main_thread()))
    qtbot.waitUntil(lambda: bool(answers), timeout=COLD_START_MS)
    lane.shutdown()
    assert answers == [(WORKER_NICENESS, False)]
    assert thread_niceness() == ours


def test_the_window_trains_in_a_lowered_thread(qtbot, window):
    seen: list = []
    # A call queued to the worker runs in the training thread.
    QTimer.singleShot(0, window.worker, lambda: seen.append(thread_niceness()))
    qtbot.waitUntil(lambda: bool(seen), timeout=COLD_START_MS)
    assert seen == [WORKER_NICENESS]
    assert thread_niceness() < WORKER_NICENESS


def test_the_window_hands_the_gil_over_within_a_fraction_of_a_millisecond():
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    from workbench.gui.app import SWITCH_INTERVAL_S, configure_application

    names = (
        QCoreApplication.organizationName(),
        QCoreApplication.applicationName(),
        QCoreApplication.applicationVersion(),
        QApplication.desktopFileName(),
    )
    before = sys.getswitchinterval()
    try:
        configure_application()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        assert SWITCH_INTERVAL_S <= 0.0005
    finally:  # the other tests' application keeps its names and interval
        sys.setswitchinterval(before)
        QCoreApplication.setOrganizationName(names[0])
        QCoreApplication.setApplicationName(names[1])
        QCoreApplication.setApplicationVersion(names[2])
        QApplication.setDesktopFileName(names[3])
