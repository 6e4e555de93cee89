"""How long until a new user sees the first merge? Opens the real window (offscreen unless
QT_QPA_PLATFORM says otherwise) on the demo corpus, presses Train at once, and prints the time
from the start of this script to the window being shown and to the first merge batch.

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/first_merge_window.py   # a first start
    python benchmarks/first_merge_window.py                                # a later start

On a first start the demo corpus (small) is counted with `regex` and trained in Python while
helper processes compile the kernels (see `session/first_start.py`), so the cold figure is the
first-start experience end to end. Not a test: timings depend on the machine's load.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

START = time.perf_counter()
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from workbench.gui.main_window import MainWindow

    folder = tempfile.mkdtemp()
    settings = QSettings(f"{folder}/settings.ini", QSettings.Format.IniFormat)
    window = MainWindow(settings, f"{folder}/runs.db")
    window.show()
    shown = time.perf_counter() - START
    seen: list[float] = []

    def on_batch(_batch: object) -> None:
        if seen:
            return
        seen.append(time.perf_counter() - START)
        print(f"window shown after {shown:.1f} s; first merge after {seen[0]:.1f} s")
        window.stop()
        QTimer.singleShot(200, window.close)

    window.worker.sigBatch.connect(on_batch)
    window.sigClosed.connect(app.quit)
    QTimer.singleShot(0, window.train)
    QTimer.singleShot(600_000, app.quit)  # give up after ten minutes
    app.exec()
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
