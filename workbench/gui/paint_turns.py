"""One costly UI-thread job per event-loop turn: paints and re-colourings take turns.

Qt paints every widget waiting for it in one turn, and runs every timer that is due in one
turn: the merge list's paint (~4-12 ms), the charts' redraw (~5-15 ms), a Tokens cut shown
(~8 ms) and its highlighters' slices (~3 ms each) landed two or three at a time in one turn,
which made 20-37 ms of the UI thread's CPU between two frames. So each of them tells `TURNS`
when it ran and for how long (`spent`), which keeps the next one off for `AFTER_S` (a cheap
one, for twice its time); and the ones that can wait are `TurnJob`s, queued in `TURNS` and run one
at a time, first asked first run, each once the turn is free: no other costly job in its gap,
and no watched widget (the merge list) with a paint on its way. A job is never put off for
longer than `MAX_DEFER_S` (should the list paint all the time). One budget for the whole
application: the jobs share one thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

AFTER_S = 0.015  # a costly job keeps the next one off this long: a 10 ms frame gets between
CHEAP_S = 0.004  # a job shorter than this (a highlighter's slice) is cheap ...
MIN_GAP_S = 0.004  # ... and keeps the next one off for twice its time, at least this long
MAX_DEFER_S = 0.1  # the longest a job is put off, however busy the others keep the turns
PENDING_WAIT_S = 0.004  # a watched paint on its way: look again after it (it is this turn's)


class PaintTurns:
    """When the UI thread may next do a costly job, whose paints are on their way, and the
    jobs waiting for a turn."""

    def __init__(self) -> None:
        self.free_at = -math.inf
        self._pending: dict[int, Callable[[], bool]] = {}
        self._queue: list[TurnJob] = []
        self._timer: QTimer | None = None  # made on first use (in the UI thread)

    def spent(self, seconds: float | None = None) -> None:
        """A costly job ran just now, for `seconds` (None: a long one): the next waits."""
        gap = AFTER_S if seconds is None or seconds >= CHEAP_S else max(MIN_GAP_S, 2 * seconds)
        self.free_at = max(self.free_at, time.perf_counter() + gap)

    def watch(self, owner: QObject, pending: Callable[[], bool]) -> None:
        """`pending()` says that `owner` will paint in the coming turn; forgotten with it."""
        key = id(owner)
        self._pending[key] = pending
        owner.destroyed.connect(lambda *_: self._pending.pop(key, None))

    def wait(self) -> float:
        """Seconds until a costly job may run (0: now)."""
        left = self.free_at - time.perf_counter()
        if left > 0:
            return left
        for key, pending in list(self._pending.items()):
            try:
                if pending():
                    return PENDING_WAIT_S
            except RuntimeError:  # its widget was deleted before `destroyed` told us
                self._pending.pop(key, None)
        return 0.0

    # --- the queue of jobs ---------------------------------------------------------------------
    def enqueue(self, job: TurnJob) -> None:
        if job not in self._queue:
            self._queue.append(job)
        self._schedule(0.0)

    def remove(self, job: TurnJob) -> None:
        if job in self._queue:
            self._queue.remove(job)

    def forget(self, key: int) -> None:
        """Drop the job whose id() is `key` (its Qt object is being destroyed)."""
        self._queue = [job for job in self._queue if id(job) != key]

    def queued(self, job: TurnJob) -> bool:
        return job in self._queue

    def _schedule(self, seconds: float) -> None:
        if self._timer is None:
            self._timer = QTimer()
            self._timer.setSingleShot(True)
            self._timer.timeout.connect(self._run_next)
        msecs = max(0, math.ceil(seconds * 1000))
        if not self._timer.isActive() or self._timer.remainingTime() > msecs:
            self._timer.start(msecs)

    def _run_next(self) -> None:
        if not self._queue:
            return
        job = self._queue[0]
        wait = self.wait()
        if wait > 0 and time.perf_counter() - job.asked_at < MAX_DEFER_S:
            self._schedule(wait)
            return
        self._queue.pop(0)
        try:
            job.run()
        except RuntimeError as exc:  # its owner was deleted before `destroyed` told us
            if "already deleted" not in str(exc):
                raise
        if self._queue:
            self._schedule(self.wait())


TURNS = PaintTurns()


class TurnJob(QObject):
    """`fn` run in a turn of its own: `request()` queues it in `turns`, which runs it from the
    event loop once the turn is free (a request while it waits changes nothing: `fn` reads
    the newest state when it runs); never later than `MAX_DEFER_S` after the first request.
    Never inside the caller's event: what is still queued in that turn may paint (a page
    arriving after this answer), and the job runs after it, when it sees whether it did."""

    def __init__(
        self, fn: Callable[[], None], parent: QObject | None = None, turns: PaintTurns = TURNS
    ) -> None:
        super().__init__(parent)
        self._fn = fn
        self._turns = turns
        self.asked_at = math.inf
        self._running = False
        self._again = False  # requested while it ran: it runs again in a later turn
        key = id(self)
        self.destroyed.connect(lambda *_: turns.forget(key))  # its owner is gone: never run

    def pending(self) -> bool:
        return self._again or self._turns.queued(self)

    def request(self) -> None:
        self.asked_at = min(self.asked_at, time.perf_counter())
        if self._running:
            self._again = True
        else:
            self._turns.enqueue(self)

    def cancel(self) -> None:
        self._turns.remove(self)
        self.asked_at = math.inf
        self._again = False

    def run_now(self) -> None:
        """Run a waiting job at once (tests, exports, closing)."""
        if self.pending():
            self._turns.remove(self)
            self.run()

    def run(self) -> None:
        """Run `fn` now (the queue calls this when the job's turn comes)."""
        self.asked_at = math.inf
        self._running, self._again = True, False
        started, free_at = time.perf_counter(), self._turns.free_at
        self._turns.spent()  # its turn is taken: what it asks for meanwhile waits for another
        try:
            self._fn()
        finally:
            self._running = False
            self._turns.free_at = free_at  # the gap is counted from its end, by its cost
            self._turns.spent(time.perf_counter() - started)
        if self._again:
            self._again = False
            self.request()
