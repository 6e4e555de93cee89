"""Fixtures for the window tests: a window on a temporary database and settings file, and the
check that no QThread is left running after a test.

Imported by the `test_gui_*` modules (pytest puts `tests/` on sys.path), so the shared
conftest stays free of Qt.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

import sys  # noqa: E402

import PySide6  # noqa: E402
from PySide6.QtCore import QSettings, QThread  # noqa: E402

if PySide6.__version__ == "6.12.0" and sys.version_info < (3, 12):
    # Every emit drops a reference to True; the process aborts mid-session and takes every
    # other test with it. test_gui_signal_exit.py fails on its own to say why: pin PySide6.
    pytest.skip(
        "PySide6 6.12.0 aborts after a few hundred signal emits on Python 3.11; "
        "pin PySide6-Essentials<6.12 (see test_gui_signal_exit.py)",
        allow_module_level=True,
    )

# A cold Numba cache (a fresh checkout, CI) compiles the trainer first: minutes on a busy box.
COLD_START_MS = 300_000


def running_qthreads() -> list[QThread]:
    """Every live QThread object Python knows of that is still running."""
    found = []
    for obj in gc.get_objects():
        try:
            if isinstance(obj, QThread) and obj.isRunning():
                found.append(obj)
        except RuntimeError:  # the C++ object is already gone
            continue
    return found


@pytest.fixture(autouse=True)
def no_qthread_left() -> Iterator[None]:
    yield
    left = running_qthreads()
    assert not left, f"QThreads still running after the test: {[t.objectName() for t in left]}"


@pytest.fixture
def settings_path(tmp_path: Path) -> Path:
    return tmp_path / "settings.ini"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def make_window(settings_path: Path, db_path: Path):
    from workbench.gui.main_window import MainWindow

    return MainWindow(QSettings(str(settings_path), QSettings.Format.IniFormat), db_path)


def close_window(qtbot, window) -> None:
    """Close as a user would, then wait (in the test, never in the window) for the threads."""
    window.close()
    qtbot.waitUntil(lambda: not window.threads_running(), timeout=COLD_START_MS)
    qtbot.waitUntil(lambda: window.closed, timeout=5000)


@pytest.fixture
def window(qtbot, settings_path: Path, db_path: Path):
    win = make_window(settings_path, db_path)
    win.show()
    qtbot.waitExposed(win)
    yield win
    close_window(qtbot, win)


def train_in_window(qtbot, db_path: Path, paths: list[Path], vocab: int) -> None:
    """Open a window on `db_path`, train `paths` to `vocab` with the Train button, close it."""
    settings = db_path.with_suffix(".ini")
    win = make_window(settings, db_path)
    win.show()
    try:
        win.load_corpus(list(paths))
        train_to(qtbot, win, vocab)
    finally:
        close_window(qtbot, win)


def click(qtbot, window, name: str) -> None:
    """Click a training button as a user would; it must be enabled."""
    from PySide6.QtCore import Qt

    button = window.controls.buttons[name]
    assert button.isEnabled(), f"{name} is disabled in mode {window.mode}"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def train_to(qtbot, window, vocab: int) -> None:
    """Set the vocab size, press Train and wait for the run to finish."""
    window.controls.vocab.setValue(vocab)
    click(qtbot, window, "train")
    qtbot.waitUntil(lambda: window.mode == "finished", timeout=COLD_START_MS)


def record_axis_moves(monkeypatch) -> list[int]:
    """From now on, each axis the charts move is appended (as its `_Range`'s id) to the list
    returned; the moves still happen."""
    from workbench.gui import charts

    moves: list[int] = []
    real_apply = charts._Range._apply

    def apply(self, low: float, high: float) -> None:
        moves.append(id(self))
        real_apply(self, low, high)

    monkeypatch.setattr(charts._Range, "_apply", apply)
    return moves
