"""Handing memory freed by glibc's malloc back to the system, so the process's resident size
follows what its arrays hold.

glibc keeps freed blocks for reuse. Large requests are mapped on their own and unmapped when
freed, but each such free raises the size that counts as large (up to 32 MB): arrays that
double as they grow then come from the heap, and the halves they leave behind stay resident
between live blocks. `malloc_trim` returns the free pages; elsewhere than glibc this does
nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

from workbench.engine._native import portable


def give_back_freed_memory() -> None:
    """Return the free pages of every malloc arena to the system (a few milliseconds).

    Called after counting (its threads' heaps keep ~300 MB of freed blocks after a gigabyte,
    which training would pile on top of) and when the trainer's arrays have grown (the old
    halves of a gigabyte's tables were 40 MB of its peak)."""
    if not sys.platform.startswith("linux") or portable():
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc: musl has no malloc_trim
        ctypes.CDLL(None).malloc_trim(0)
