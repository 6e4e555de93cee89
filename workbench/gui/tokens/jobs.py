"""One background lane for encode-like work: the newest request wins, older answers are dropped.

A `QThreadPool` of one thread per lane (not the global pool, so `shutdown()` waits only for our
own jobs and never for another widget's). Each request carries a generation number; an answer
that arrives after a newer request is discarded, so typing fast never shows a stale split. Small
jobs may run inline (`inline=True`) where a thread hop would only add latency.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from workbench.engine.warmup import encoder_open, wait_for_encoder


class _Relay(QObject):
    """Lives in the GUI thread; worker threads emit on it, Qt queues the call across."""

    sigDone = Signal(int, object)
    sigFailed = Signal(int, str)


class _Job(QRunnable):
    def __init__(
        self,
        fn: Callable[[], Any],
        generation: int,
        relay: _Relay,
        cancel: threading.Event | None = None,
    ) -> None:
        super().__init__()
        self._fn = fn
        self._generation = generation
        self._relay = relay
        self._cancel = cancel  # set: wait while a first start's helper compiles the encoder

    def run(self) -> None:
        if self._cancel is not None and not wait_for_encoder(self._cancel):
            return  # closing or superseded while waiting: nobody wants the answer
        try:
            result = self._fn()
        except Exception as exc:  # reported to the view, never swallowed
            self._relay.sigFailed.emit(self._generation, f"{type(exc).__name__}: {exc}")
        else:
            self._relay.sigDone.emit(self._generation, result)


class JobLane(QObject):
    """Run `fn` off the UI thread; `sigResult(result)` for the latest request only."""

    sigResult = Signal(object)
    sigError = Signal(str)

    def __init__(self, parent: QObject | None = None, encodes: bool = True) -> None:
        """`encodes`: jobs may run the encoder's kernels, so on a first start they wait for
        the helper process that compiles them (compiling them here too would double the
        work and hold the app open when it closes)."""
        super().__init__(parent)
        self._encodes = encodes
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._generation = 0
        self.cancel_event = threading.Event()
        self._relay = _Relay(self)
        self._relay.sigDone.connect(self._on_done)
        self._relay.sigFailed.connect(self._on_failed)

    def submit(
        self, fn: Callable[..., Any], inline: bool = False, cancellable: bool = False
    ) -> None:
        """Queue `fn`; a job already queued but not started is dropped (it would be stale).

        `cancellable`: `fn(event)` gets a `threading.Event` that is set when a newer request
        or `shutdown()` makes its answer useless; long jobs poll it and return early.
        """
        self._generation += 1
        self.cancel_event.set()
        self.cancel_event = threading.Event()
        if cancellable:
            fn = functools.partial(fn, self.cancel_event)
        if inline and (not self._encodes or encoder_open()):
            try:
                result = fn()
            except Exception as exc:
                self.sigError.emit(f"{type(exc).__name__}: {exc}")
            else:
                self.sigResult.emit(result)
            return
        self._pool.clear()
        cancel = self.cancel_event if self._encodes else None
        self._pool.start(_Job(fn, self._generation, self._relay, cancel))

    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    def wait(self, msecs: int = -1) -> bool:
        """Block until the running job ends (tests, shutdown); True when idle."""
        return self._pool.waitForDone(msecs)

    def shutdown(self) -> None:
        """Drop queued work, ask the running job to stop, wait for it: nothing outlives us."""
        self._generation += 1
        self.cancel_event.set()
        self._pool.clear()
        self._pool.waitForDone()

    def _on_done(self, generation: int, result: object) -> None:
        if generation == self._generation:
            self.sigResult.emit(result)

    def _on_failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.sigError.emit(message)
