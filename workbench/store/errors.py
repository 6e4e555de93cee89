"""Store errors a user can act on (a missing run, a bad search, a database from a newer app)."""

from __future__ import annotations

from workbench.engine.errors import WorkbenchError


class StoreError(WorkbenchError):
    """A run store problem with a message fit to show as is."""


class RunNotFound(StoreError):
    """No run with the asked id (typo on the command line, or deleted in another window)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id}")


class StoreOutOfMemory(StoreError, MemoryError):
    """SQLite could not get the memory it asked for: under an address-space cap (`ulimit -v`, a
    container's limit) the first to fail may be its mapping of the write-ahead log's shared
    memory, which it reports as "disk I/O error". A MemoryError too, so the session's
    "out of memory while ..." handling names it for what it is."""
