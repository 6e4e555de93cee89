"""The Qt binding must survive thousands of void calls and cross-thread signals.

PySide6 6.12.0 drops a reference to None on every call of a void Qt method and to True on every
`Signal.emit`, so a busy window aborts (exit code 134, "none_dealloc"/"bool_dealloc"); 6.11.x
does not. pyproject pins around it; this test keeps the pin honest.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot
from PySide6.QtWidgets import QApplication, QLabel

app = QApplication([])
label = QLabel()
for _ in range(20000):
    label.setText("x")  # a void method

class Emitter(QObject):
    sigValue = Signal(int)
    sigDone = Signal()

    @Slot()
    def run(self):
        for i in range(20000):
            self.sigValue.emit(i)
        self.sigDone.emit()

received = []
thread = QThread()
emitter = Emitter()
emitter.moveToThread(thread)
emitter.sigValue.connect(received.append)
emitter.sigDone.connect(thread.quit)
thread.started.connect(emitter.run)
thread.finished.connect(app.quit)
thread.start()
app.exec()
thread.wait()
assert len(received) == 20000, len(received)
print("ok")
"""


def test_thousands_of_void_calls_and_cross_thread_signals_exit_cleanly():
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"
