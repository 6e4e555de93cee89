"""Runs one evaluation at a time off the UI thread, with progress and Cancel.

A plain worker object in a QThread of its own (the job is a Qt-free function); the cancel flag
is a `threading.Event` the job polls between chunks. `shutdown()` cancels and waits, so nothing
outlives the tab.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import QAbstractButton, QLabel, QProgressBar

from workbench.engine.errors import CancelledError, WorkbenchError
from workbench.gui.thread_priority import lower_current_thread

Job = Callable[[Callable[[str, float], None], threading.Event], object]


class _Worker(QObject):
    sigProgress = Signal(str, float)
    sigDone = Signal(object)
    sigFailed = Signal(str)
    sigCancelled = Signal()

    def __init__(self, job: Job, cancel: threading.Event) -> None:
        super().__init__()
        self._job = job
        self._cancel = cancel

    @Slot()
    def run(self) -> None:
        try:
            result = self._job(self.sigProgress.emit, self._cancel)
        except CancelledError:
            self.sigCancelled.emit()
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
        except Exception as exc:  # shown to the user, never swallowed
            self.sigFailed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.sigDone.emit(result)


class EvalRunner(QObject):
    """`start(job)`; `sigProgress(text, fraction or -1)`, then one of `sigDone(result)`,
    `sigFailed(message)`, `sigCancelled()`; `sigIdle` once the thread has ended."""

    sigProgress = Signal(str, float)
    sigDone = Signal(object)
    sigFailed = Signal(str)
    sigCancelled = Signal()
    sigIdle = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: _Worker | None = None
        self._cancel = threading.Event()

    def busy(self) -> bool:
        return self._thread is not None and self._thread.isRunning()

    def start(self, job: Job) -> bool:
        """Start `job(progress, cancel_event)` unless one is running (then False)."""
        if self.busy():
            return False
        self._cancel = threading.Event()
        thread = QThread(self)
        thread.setObjectName("evaluate")
        worker = _Worker(job, self._cancel)
        worker.moveToThread(thread)
        thread.started.connect(lower_current_thread, Qt.ConnectionType.DirectConnection)
        thread.started.connect(worker.run)
        worker.sigProgress.connect(self.sigProgress)
        worker.sigDone.connect(self.sigDone)
        worker.sigFailed.connect(self.sigFailed)
        worker.sigCancelled.connect(self.sigCancelled)
        for signal in (worker.sigDone, worker.sigFailed, worker.sigCancelled):
            signal.connect(thread.quit)
        thread.finished.connect(self._finished)
        self._thread, self._worker = thread, worker
        thread.start()
        return True

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self, msecs: int = -1) -> bool:
        """Block until the thread ends (tests, shutdown); True when idle."""
        thread = self._thread
        if thread is None:
            return True
        return thread.wait() if msecs < 0 else thread.wait(msecs)

    def shutdown(self) -> None:
        """Cancel the running job and wait for its thread: nothing outlives us."""
        self._cancel.set()
        thread = self._thread
        if thread is not None:
            thread.quit()
            thread.wait()
            self._finished()

    def _finished(self) -> None:
        if self._thread is not None and not self._thread.isRunning():
            self._thread.deleteLater()
            if self._worker is not None:
                self._worker.deleteLater()
            self._thread = self._worker = None
            self.sigIdle.emit()


def prepare_encoders(patterns: list[str], progress, cancel: threading.Event) -> None:
    """The encoders ready before encoding starts, through `session.startup` (as `bpe-workbench
    eval` does): each compile named with a busy bar, instead of minutes of an empty one. Says
    nothing when they are cached."""
    from workbench.session import startup

    def report(event: startup.StartupEvent) -> None:
        if event.need is not None:
            line = event.line()
            progress(line[:1].upper() + line[1:], -1.0)

    startup.ensure("eval", patterns, report, cancel)


def show_running(
    go: QAbstractButton, cancel: QAbstractButton, progress: QProgressBar, status: QLabel, text: str
) -> None:
    """A panel's controls while its job runs: the start button off, Cancel on, a busy bar."""
    go.setEnabled(False)
    cancel.setEnabled(True)
    progress.setRange(0, 0)
    status.setText(text)


def show_finished(
    go: QAbstractButton, cancel: QAbstractButton, progress: QProgressBar, status: QLabel, text: str
) -> None:
    """A panel's controls once its job ended with `text` ("done", "cancelled", "failed: ...")."""
    go.setEnabled(True)
    cancel.setEnabled(False)
    progress.setRange(0, 1000)
    progress.setValue(1000 if text == "done" else 0)
    status.setText(text)
