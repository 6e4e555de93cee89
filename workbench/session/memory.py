"""Running out of memory, said in one line: `out of memory while merging (after 1,200 merges,
kept in run 3)` rather than a MemoryError traceback.

A `MemoryError` (Python's, numpy's or a Numba kernel's failed allocation, as an address-space
limit such as `ulimit -v` or a container's cap gives) becomes `OutOfMemory` naming the stage.
By the time it is built, the allocation that failed is gone, so the message itself can be made.
What it leaves out: the run's own record (the session marks it failed, its merges kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from workbench.engine.errors import WorkbenchError


class OutOfMemory(WorkbenchError):
    """Work that failed for want of memory (exit status 1, not a usage error)."""

    exit_code = 1


@contextlib.contextmanager
def stage(what: str) -> Iterator[None]:
    """Turn a MemoryError inside the block into OutOfMemory("out of memory while <what>")."""
    try:
        yield
    except MemoryError:
        raise OutOfMemory(f"out of memory while {what}") from None
