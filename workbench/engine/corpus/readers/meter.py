"""Progress inside one file: how far the readers have got through the file on disk.

Counting reports `progress(done, total)` in bytes on disk. Between files that is each file's
size; inside a large file the readers say how far they are, so one big shard does not jump from
0 to 100%: text, JSONL and compressed files by the bytes of the file on disk read so far (for a
compressed file, its compressed bytes), Parquet and Arrow files by the share of rows or batches
read. The counter wraps one file's reading in `metering(...)`; the readers call `advance(...)`.

A context variable rather than a parameter: the readers sit several generators deep under the
counters, and each thread (the window's worker, a test) keeps its own meter.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator


class ReadMeter:
    """Reports `report(base + position, total)` as a file of `size` bytes is read; positions
    only go up and never past `size`, so `done` stays monotonic and within `total`."""

    def __init__(self, report: Callable[[int, int], None], base: int, size: int, total: int):
        self.report = report
        self.base = base
        self.size = size
        self.total = total
        self.position = 0

    def at(self, position: int) -> None:
        position = min(max(position, 0), self.size)
        if position > self.position:
            self.position = position
            self.report(self.base + position, self.total)

    def share(self, done: int, whole: int) -> None:
        """`done` of `whole` parts (rows, batches) read: that share of the file's size."""
        if whole > 0:
            self.at(self.size * min(done, whole) // whole)


_current: contextvars.ContextVar[ReadMeter | None] = contextvars.ContextVar(
    "read_meter", default=None
)


@contextlib.contextmanager
def metering(
    report: Callable[[int, int], None] | None, base: int, size: int, total: int
) -> Iterator[None]:
    """Reading inside the block reports progress from `base` to `base + size` of `total`."""
    if report is None:
        yield
        return
    token = _current.set(ReadMeter(report, base, size, total))
    try:
        yield
    finally:
        # a reader generator closed late may end in another context: its meter goes with it
        with contextlib.suppress(ValueError):
            _current.reset(token)


def advance(position: int) -> None:
    """The file being read has been read up to byte `position` on disk."""
    meter = _current.get()
    if meter is not None:
        meter.at(position)


def advance_share(done: int, whole: int) -> None:
    """`done` of the file's `whole` rows (or batches) have been read."""
    meter = _current.get()
    if meter is not None:
        meter.share(done, whole)
