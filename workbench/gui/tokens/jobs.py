"""One background lane for encode-like work: the newest request wins, older answers are dropped.

A `QThreadPool` of one thread per lane (not the global pool, so `shutdown()` waits only for our
own jobs and never for another widget's). Each request carries a generation number; an answer
that arrives after a newer request is discarded, so typing fast never shows a stale split. Small
jobs may run inline (`inline=True`) where a thread hop would only add latency.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from workbench.engine.warmup import encoder_open, wait_for_encoder
from workbench.gui.thread_priority import lower_current_thread

# The patterns a job encodes with, or a function giving them in the job's thread.
Patterns = Sequence[str] | Callable[[], Sequence[str]]


class _Relay(QObject):
    """Lives in the GUI thread; worker threads emit on it, Qt queues the call across."""

    sigDone = Signal(int, object)
    sigFailed = Signal(int, str)
    sigWaiting = Signal(int, str)


# The Tokens tab's encodes (its view's cut, Compare's, the scrubber's curve, a cut at merge k)
# take this in turn: a new tokenizer or text started them all at once, and with three threads
# running Python beside it the UI thread got the GIL a third of the time it wanted it (gaps of
# 30-35 ms while a run opened, most of them spent waiting for the GIL). One at a time, they
# finish about as soon (the GIL ran them one at a time anyway) and the UI thread shares the GIL
# with one of them. Teaching's cut at a replay's k stays out: in turn with these, opening a
# stored run waited behind it (loading's largest gap, 8 full runs: median 28.8 -> 31.9 ms).
TOKENS_GATE = threading.Lock()


class _Job(QRunnable):
    def __init__(
        self,
        fn: Callable[[], Any],
        generation: int,
        relay: _Relay,
        cancel: threading.Event | None = None,
        patterns: Patterns = (),
        gate: tuple[threading.Lock, threading.Event] | None = None,
    ) -> None:
        """`gate`: the lock to run `fn` under and the event a newer request sets."""
        super().__init__()
        self._fn = fn
        self._gate = gate
        self._generation = generation
        self._relay = relay
        self._cancel = cancel  # set: wait while a first start's helper compiles the encoder
        self._patterns = patterns if callable(patterns) else tuple(patterns)

    def run(self) -> None:
        lower_current_thread()  # the lane's thread yields the CPU to the UI thread
        if callable(self._patterns):  # known only here, off the UI thread (a stored run's)
            try:
                self._patterns = tuple(self._patterns())
            except Exception as exc:  # reported to the view, never swallowed
                self._relay.sigFailed.emit(self._generation, f"{type(exc).__name__}: {exc}")
                return
        if self._patterns and self._cancel is not None:
            if not self._prepare(self._cancel):
                return
        elif self._cancel is not None and not wait_for_encoder(self._cancel):
            return  # closing or superseded while waiting: nobody wants the answer
        lock, superseded = self._gate or (contextlib.nullcontext(), threading.Event())
        try:
            with lock:
                if superseded.is_set():
                    return  # a newer request came while it waited for the gate
                result = self._fn()
        except Exception as exc:  # reported to the view, never swallowed
            self._relay.sigFailed.emit(self._generation, f"{type(exc).__name__}: {exc}")
        else:
            self._relay.sigDone.emit(self._generation, result)

    def _prepare(self, cancel: threading.Event) -> bool:
        """The encoders of `patterns` ready through `session.startup` (detached helpers, locks,
        the per-user cache), each wait named to the view; False if cancelled meanwhile."""
        from workbench.engine.errors import CancelledError
        from workbench.session import startup

        def report(event: startup.StartupEvent) -> None:
            if event.need is not None:
                line = event.line()
                self._relay.sigWaiting.emit(self._generation, line[:1].upper() + line[1:])

        try:
            startup.ensure("encode", self._patterns, report, cancel)
        except CancelledError:
            return False
        return not cancel.is_set()


class JobLane(QObject):
    """Run `fn` off the UI thread; `sigResult(result)` for the latest request only."""

    sigResult = Signal(object)
    sigError = Signal(str)
    sigWaiting = Signal(str)  # "Preparing the o200k encoder (first use) — 1 of 1, about 15 s"

    def __init__(
        self,
        parent: QObject | None = None,
        encodes: bool = True,
        gate: threading.Lock | None = None,
    ) -> None:
        """`encodes`: jobs may run the encoder's kernels, so on a first start they wait for
        the helper process that compiles them (compiling them here too would double the
        work and hold the app open when it closes). `gate`: a lock the jobs run under, shared
        with other lanes whose jobs should take turns (`TOKENS_GATE`); never held by a job
        run inline."""
        super().__init__(parent)
        self._encodes = encodes
        self._gate = gate
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._generation = 0
        self.cancel_event = threading.Event()
        self._relay = _Relay(self)
        self._relay.sigDone.connect(self._on_done)
        self._relay.sigFailed.connect(self._on_failed)
        self._relay.sigWaiting.connect(self._on_waiting)

    def submit(
        self,
        fn: Callable[..., Any],
        inline: bool = False,
        cancellable: bool = False,
        patterns: Patterns = (),
    ) -> None:
        """Queue `fn`; a job already queued but not started is dropped (it would be stale).

        `cancellable`: `fn(event)` gets a `threading.Event` that is set when a newer request
        or `shutdown()` makes its answer useless; long jobs poll it and return early.
        `patterns`: the job encodes with these patterns; their encoders are made ready first
        through `session.startup`, and `sigWaiting` names the wait (only when one compiles),
        counting down as it goes. A function giving them is called in the job's thread (for a
        tokenizer that is itself built there); such a job never runs inline.
        """
        self._generation += 1
        self.cancel_event.set()
        self.cancel_event = threading.Event()
        if cancellable:
            fn = functools.partial(fn, self.cancel_event)
        if callable(patterns):
            inline = False
        elif patterns and self._encodes:
            inline = inline and not _encoders_missing(patterns)
        if inline and (not self._encodes or encoder_open() or patterns):
            try:
                result = fn()
            except Exception as exc:
                self.sigError.emit(f"{type(exc).__name__}: {exc}")
            else:
                self.sigResult.emit(result)
            return
        self._pool.clear()
        cancel = self.cancel_event if self._encodes else None
        gate = (self._gate, self.cancel_event) if self._gate is not None else None
        self._pool.start(_Job(fn, self._generation, self._relay, cancel, patterns, gate))

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

    def _on_waiting(self, generation: int, line: str) -> None:
        if generation == self._generation:
            self.sigWaiting.emit(line)


def _encoders_missing(patterns: Sequence[str]) -> bool:
    from workbench.session import startup

    return bool(startup.missing(startup.needs("encode", patterns)))
