"""Background threads of the window yield the CPU to the UI thread.

On a machine with two cores the window's background work (counting on every core, training,
reading a stored run, building a tokenizer) keeps both cores busy, and the UI thread, waking
for a turn of the event loop, shares a core with them: a turn of 18 ms of its own CPU took
40-65 ms of wall time. A higher nice value for the worker threads lets the scheduler hand the
UI thread a core when it wakes and keep it for the turn; when the window is idle the workers
still get every core, so their own speed is the same.

Nice alone left the UI thread waiting: a turn hands the GIL to a worker and back hundreds of
times, and each worker woken for it was placed on the UI thread's core and preempted it, the
UI thread then runnable but off its core while the other core idled (`benchmarks/ui_latency.py
--why-gaps`: 300-750 involuntary switches and 10-20 ms runnable in one 40-50 ms gap, the machine
1.2 cores busy). The workers are therefore also `SCHED_BATCH`: a batch thread never preempts the
running thread when it wakes, and otherwise shares the CPU by its nice value as before, so a
busy machine trains no slower.

Linux keeps a nice value and a scheduling policy per thread (`setpriority` on a thread id), and threads a worker starts
(the counter's pool) inherit it. Elsewhere this does nothing: Qt's `QThread.setPriority` has no
level between "normal" and "only when idle" there either.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

# Nice 10 weighs a tenth of nice 0 for the scheduler: a UI turn gets ~90% of a shared core.
WORKER_NICENESS = 10


def lower_current_thread(niceness: int = WORKER_NICENESS) -> bool:
    """Give the calling thread (and the threads it starts later) nice value `niceness`, or
    leave it if it is already that low, and the batch policy (no preemption on wakeup); True
    if the thread now runs at least that nice."""
    if not sys.platform.startswith("linux"):
        return False
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < niceness:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError:  # a sandbox that forbids it: the thread runs as before
        return False
    # Kept nice value; only a thread of the normal policy changes (not one made idle already).
    with contextlib.suppress(OSError, AttributeError):
        if os.sched_getscheduler(thread) == os.SCHED_OTHER:
            os.sched_setscheduler(thread, os.SCHED_BATCH, os.sched_param(0))
    return True


def thread_policy(native_id: int | None = None) -> int | None:
    """The scheduling policy of a thread (`os.SCHED_*`; the caller's by default); None where
    there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return os.sched_getscheduler(native_id or threading.get_native_id())
    except OSError:
        return None


def thread_niceness(native_id: int | None = None) -> int | None:
    """The nice value of a thread (the caller's by default); None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return os.getpriority(os.PRIO_PROCESS, native_id or threading.get_native_id())
    except OSError:
        return None
