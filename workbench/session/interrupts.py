"""Ctrl-C and SIGTERM as requests to stop between batches, not exceptions inside a kernel.

Python raises KeyboardInterrupt wherever the main thread happens to be; inside a Numba call
that surfaces as `SystemError: CPUDispatcher(...) returned a result with an exception set`,
and the run is recorded as failed. While training, the handlers only set a flag that the
session checks between batches (every ~50 ms), so the run ends as interrupted, cleanly.
A second Ctrl-C while a batch is still running is taken as "now": the usual KeyboardInterrupt.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from workbench.session.states import StopReason


class Interrupted:
    """The flag the handlers set; `check()` is a session's stop check."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __call__(self, signum: int, frame: object) -> None:
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signum

    def check(self) -> StopReason | None:
        return StopReason.INTERRUPTED if self.signal is not None else None

    @property
    def is_set(self) -> bool:
        return self.signal is not None


@contextmanager
def stop_on_signals() -> Iterator[Interrupted]:
    """Within the block, SIGINT and SIGTERM set the flag (main thread only; elsewhere the
    flag just never sets, and the caller's own stop check decides)."""
    flag = Interrupted()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = {sig: signal.signal(sig, flag) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
