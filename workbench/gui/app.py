"""`run_app()`: what `bpe-workbench` with no arguments and `python -m workbench` open."""

from __future__ import annotations

import gc
import multiprocessing
import signal
import sys

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

import workbench
from workbench.gui.resources import icon_path

ORGANIZATION = "bpe-workbench"
APPLICATION = "BPE Workbench"
# The UI thread shares the GIL with the training worker and the background lanes (reading a
# stored run, building its tokenizer). Each time it wants the GIL back it waits up to the
# switch interval (5 ms by default), and a turn of the event loop wants it many times: opening
# a run of 32k merges showed gaps of 200-400 ms between turns with under 20 ms of the UI
# thread's own CPU time. A shorter interval hands the GIL over sooner. 1 ms was not short
# enough: a repaint of the merge list calls the model's `data()` ~1,000 times, each taking the
# GIL again, and with two threads running Python its wall time went from 6 ms of CPU to a
# median of 23 ms (max 240); at 0.2 ms, 14 ms (max 22), the threads' own Python no slower
# (`benchmarks/ui_latency.py`; a worker's switches cost microseconds each).
SWITCH_INTERVAL_S = 0.0002


def configure_application() -> None:
    """Names QSettings and the desktop entry use (settings land in ~/.config/bpe-workbench/),
    and the GIL's switch interval for a responsive UI thread (`SWITCH_INTERVAL_S`)."""
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QCoreApplication.setApplicationVersion(workbench.__version__)
    QApplication.setDesktopFileName("io.github.bpe_workbench.BpeWorkbench")
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def freeze_long_lived() -> None:
    """Move every object alive now out of the cyclic collector's reach (`gc.freeze`).

    Modules, Qt wrappers, pyqtgraph's items and Numba's loaded kernels are some hundreds of
    thousands of objects that live as long as the app. Reading a run of 32k merges makes enough
    new objects to trigger a full collection, which walked all of them: ~100 ms with the GIL
    held, a stall of the UI thread whichever thread collected. Frozen, they are skipped (still
    freed by reference counting; only a reference cycle among them would stay)."""
    gc.freeze()


def run_app(argv: list[str] | None = None) -> int:
    """Open the window and run the event loop; returns the exit code."""
    # The corpus counter uses spawned processes; a frozen build must route them here.
    multiprocessing.freeze_support()
    import pyqtgraph as pg

    from workbench.gui.main_window import MainWindow

    configure_application()
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setWindowIcon(QIcon(str(icon_path())))
    pg.setConfigOptions(antialias=False, background="#12161f", foreground="#d0d4dc")
    window = MainWindow()
    window.sigClosed.connect(app.quit)
    window.show()
    # Ctrl+C in the terminal closes the window the clean way (the run keeps its merges).
    # Python runs signal handlers only between bytecodes, so a timer gives it a chance.
    signal.signal(signal.SIGINT, lambda *_: window.close())
    signal.signal(signal.SIGTERM, lambda *_: window.close())
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(200)
    code = app.exec()
    # exec returns when the window closed, which it does only after its threads finished;
    # on any other exit (a signal, app.quit()) wind them down here, no UI left to freeze.
    window.worker.request_stop()
    for thread in (window.train_thread, window.warm_thread):
        thread.quit()
        thread.wait(5000)
    return int(code)
