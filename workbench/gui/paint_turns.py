"""One costly UI-thread job per event-loop turn: paints and re-colourings take turns.

Qt paints every widget waiting for it in one turn, and runs every timer that is due in one
turn: the merge list's paint (~4-12 ms), the charts' redraw (~5-15 ms), a Tokens cut shown
(~8 ms) and its highlighters' slices (~3 ms each) landed two or three at a time in one turn,
which made 20-37 ms of the UI thread's CPU between two frames. So each of them tells `TURNS`
when it ran (`spent`), and the ones that can wait ask it first (`wait`, or a `TurnJob`): while
another costly job ran in the last `AFTER_S`, or a watched widget (the merge list) has a paint
on its way, they come back after it, never put off for longer than `MAX_DEFER_S` (should the
others run all the time). One budget for the whole application: the jobs share one thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

AFTER_S = 0.015  # a costly job keeps the next one off for this long (a 60 Hz frame)
MAX_DEFER_S = 0.1  # the longest a job is put off, however busy the others keep the turns
PENDING_WAIT_S = 0.004  # a watched paint on its way: look again after it (it is this turn's)


class PaintTurns:
    """When the UI thread last did a costly job, and whose paints are on their way."""

    def __init__(self) -> None:
        self.spent_at = -math.inf
        self._pending: dict[int, Callable[[], bool]] = {}

    def spent(self) -> None:
        """A costly job ran just now (its turn is used up)."""
        self.spent_at = time.perf_counter()

    def watch(self, owner: QObject, pending: Callable[[], bool]) -> None:
        """`pending()` says that `owner` will paint in the coming turn; forgotten with it."""
        key = id(owner)
        self._pending[key] = pending
        owner.destroyed.connect(lambda *_: self._pending.pop(key, None))

    def wait(self) -> float:
        """Seconds until a costly job may run (0: now)."""
        left = self.spent_at + AFTER_S - time.perf_counter()
        if left > 0:
            return left
        if any(pending() for pending in list(self._pending.values())):
            return PENDING_WAIT_S
        return 0.0


TURNS = PaintTurns()


class TurnJob(QObject):
    """`fn` run in a turn of its own: `request()` runs it now when the turn is free, else from
    a timer once it is (a request while one waits changes nothing: `fn` reads the newest state
    when it runs); never later than `MAX_DEFER_S` after the first request."""

    def __init__(
        self, fn: Callable[[], None], parent: QObject | None = None, turns: PaintTurns = TURNS
    ) -> None:
        super().__init__(parent)
        self._fn = fn
        self._turns = turns
        self._asked_at = math.inf
        self._running = False
        self._again = False  # requested while it ran: it runs again in a later turn
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._try)

    def pending(self) -> bool:
        return self._timer.isActive()

    def request(self) -> None:
        self._asked_at = min(self._asked_at, time.perf_counter())
        if self._running:
            self._again = True
        elif not self._timer.isActive():
            self._try()

    def cancel(self) -> None:
        self._timer.stop()
        self._asked_at = math.inf
        self._again = False

    def run_now(self) -> None:
        """Run a waiting job at once (tests, exports, closing)."""
        if self._timer.isActive():
            self._timer.stop()
            self._run()

    def _try(self) -> None:
        wait = self._turns.wait()
        if wait > 0 and time.perf_counter() - self._asked_at < MAX_DEFER_S:
            self._timer.start(max(1, math.ceil(wait * 1000)))
            return
        self._run()

    def _run(self) -> None:
        self._asked_at = math.inf
        self._running, self._again = True, False
        self._turns.spent()  # its turn is taken: what it asks for meanwhile waits for another
        try:
            self._fn()
        finally:
            self._running = False
            self._turns.spent()
        if self._again:  # not in this turn, which it has just used
            self._asked_at = time.perf_counter()
            self._timer.start(max(1, math.ceil(self._turns.wait() * 1000)))
