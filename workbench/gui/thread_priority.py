"""Background threads of the window yield the CPU to the UI thread.

On a machine with two cores the window's background work (counting on every core, training,
reading a stored run, building a tokenizer) keeps both cores busy, and the UI thread, waking
for a turn of the event loop, shares a core with them: a turn of 18 ms of its own CPU took
40-65 ms of wall time. A higher nice value for the worker threads lets the scheduler hand the
UI thread a core when it wakes and keep it for the turn; when the window is idle the workers
still get every core, so their own speed is the same.

Linux keeps a nice value per thread (`setpriority` on a thread id), and threads a worker starts
(the counter's pool) inherit it. Elsewhere this does nothing: Qt's `QThread.setPriority` has no
level between "normal" and "only when idle" there either.
"""

from __future__ import annotations

import os
import sys
import threading

# Nice 10 weighs a tenth of nice 0 for the scheduler: a UI turn gets ~90% of a shared core.
WORKER_NICENESS = 10


def lower_current_thread(niceness: int = WORKER_NICENESS) -> bool:
    """Give the calling thread (and the threads it starts later) nice value `niceness`, or
    leave it if it is already that low; True if the thread now runs at least that nice."""
    if not sys.platform.startswith("linux"):
        return False
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < niceness:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError:  # a sandbox that forbids it: the thread runs as before
        return False
    return True


def thread_niceness(native_id: int | None = None) -> int | None:
    """The nice value of a thread (the caller's by default); None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return os.getpriority(os.PRIO_PROCESS, native_id or threading.get_native_id())
    except OSError:
        return None
