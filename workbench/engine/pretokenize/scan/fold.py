"""One growing count table that the scanner's per-unit tables are folded into as they come.

Folding a unit's (buf, offsets, counts) costs only that unit's unique pieces: the table's hash
slots live on between calls. Merging a pile of tables at the end instead keeps every unit's
table alive until then (hundreds of megabytes for a gigabyte of text) and re-files the whole
result once per fold when folded in rounds. The kernel releases the GIL, so the thread that
folds runs beside the threads that count.
"""

from __future__ import annotations

import numpy as np

from workbench.engine.pretokenize.scan.table import _empty_table, fold_table, fold_table_capped

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


fold_kernel = fold_table  # for `warmup`, which asks the kernel's cache whether it is compiled


class CountTable:
    """Unique pieces and their summed counts, in order of first occurrence over the tables
    added (the same order `scanner.merge_count_tables` gives for the same tables).

    `max_bytes` (SuperBPE's stage 2, whose pieces are mostly unique lines): a bound on the
    unique pieces' bytes, held while counting. A new piece is admitted only while it fits;
    admitted pieces go on being counted; what was left out is tallied in `dropped` (piece
    occurrences) and `dropped_bytes` (their bytes)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self._parts: tuple | None = None  # (slots, entries, shift, arena, offsets, counts)
        self._used = 0
        self.max_bytes = max_bytes
        self.dropped = 0
        self.dropped_bytes = 0

    def __len__(self) -> int:
        return self._used

    @property
    def unique_bytes(self) -> int:
        """Bytes of the unique pieces held (what `max_bytes` bounds)."""
        return 0 if self._parts is None else int(self._parts[4][self._used])

    @property
    def nbytes(self) -> int:
        """Bytes of the table's arrays (slots, entries, arena, offsets, counts)."""
        if self._parts is None:
            return 0
        return sum(int(a.nbytes) for a in self._parts if isinstance(a, np.ndarray))

    def add(self, table: Table) -> None:
        buf, offsets, counts = table
        if counts.shape[0] == 0:
            return
        if self._parts is None:
            self._parts = _empty_table()
        if self.max_bytes is None:
            *parts, used = fold_table(*self._parts, np.int64(self._used), buf, offsets, counts)
        else:
            *parts, used, dropped, dropped_bytes = fold_table_capped(
                *self._parts, np.int64(self._used), buf, offsets, counts,
                np.int64(self.max_bytes),
            )  # fmt: skip
            self.dropped += int(dropped)
            self.dropped_bytes += int(dropped_bytes)
        self._parts, self._used = tuple(parts), int(used)

    def add_all(self, other: CountTable) -> None:
        """Fold another growing table in (a whole file, once it is known good), with what it
        left out."""
        self.dropped += other.dropped
        self.dropped_bytes += other.dropped_bytes
        if other._parts is None:
            return
        if self._parts is None:  # nothing here yet: take the other's table as it is
            self._parts, self._used = other._parts, other._used
        else:
            self.add(other.table())
        other._parts, other._used = None, 0
        other.dropped = other.dropped_bytes = 0

    def table(self) -> Table:
        """(buf, offsets, counts), compact copies (the hash slots are let go with this object)."""
        if self._parts is None:
            return np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64)
        *_, arena, offsets, counts = self._parts
        used = self._used
        return arena[: offsets[used]].copy(), offsets[: used + 1].copy(), counts[:used].copy()
