"""One growing count table that the scanner's per-unit tables are folded into as they come.

Folding a unit's (buf, offsets, counts) costs only that unit's unique pieces: the table's hash
slots live on between calls. Merging a pile of tables at the end instead keeps every unit's
table alive until then (hundreds of megabytes for a gigabyte of text) and re-files the whole
result once per fold when folded in rounds. The kernel releases the GIL, so the thread that
folds runs beside the threads that count.
"""

from __future__ import annotations

import numpy as np

from workbench.engine.pretokenize.scan.table import _empty_table, fold_table

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


fold_kernel = fold_table  # for `warmup`, which asks the kernel's cache whether it is compiled


class CountTable:
    """Unique pieces and their summed counts, in order of first occurrence over the tables
    added (the same order `scanner.merge_count_tables` gives for the same tables)."""

    def __init__(self) -> None:
        self._parts: tuple | None = None  # (slots, entries, shift, arena, offsets, counts)
        self._used = 0

    def __len__(self) -> int:
        return self._used

    def add(self, table: Table) -> None:
        buf, offsets, counts = table
        if counts.shape[0] == 0:
            return
        if self._parts is None:
            self._parts = _empty_table()
        *parts, used = fold_table(*self._parts, np.int64(self._used), buf, offsets, counts)
        self._parts, self._used = tuple(parts), int(used)

    def add_all(self, other: CountTable) -> None:
        """Fold another growing table in (a whole file, once it is known good)."""
        if other._parts is None:
            return
        if self._parts is None:  # nothing here yet: take the other's table as it is
            self._parts, self._used = other._parts, other._used
        else:
            self.add(other.table())
        other._parts, other._used = None, 0

    def table(self) -> Table:
        """(buf, offsets, counts), compact copies (the hash slots are let go with this object)."""
        if self._parts is None:
            return np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64)
        *_, arena, offsets, counts = self._parts
        used = self._used
        return arena[: offsets[used]].copy(), offsets[: used + 1].copy(), counts[:used].copy()
