"""Lookup tables in memory backed by 2 MB pages, where the system gives them.

The encoder's tables are read at random (o200k's pair table: 16 MB, its whole-token table and
seed: 8 MB each): with 4 KB pages each of those reads wants one of ~8,000 page translations,
more than the core's translation cache holds, so a new piece's few lookups each also wait for a
page-table walk. Arrays made in Numba kernels come from malloc, which Linux backs with 4 KB pages;
NumPy asks for huge pages only for its own allocations of 4 MB or more, and not aligned. Here a
table is copied into an anonymous mapping aligned to 2 MB and marked `MADV_HUGEPAGE` before its
first write: with transparent huge pages in `madvise` or `always` mode, 2 MB pages back it.

Elsewhere than Linux, under `BPE_WORKBENCH_PORTABLE=1` or when the mapping fails, the table is
returned as it is: only the speed differs.
"""

from __future__ import annotations

import mmap

import numpy as np

from workbench.engine._native import portable

HUGE_PAGE = 1 << 21
_WORTH_IT = HUGE_PAGE  # smaller tables fit the translation cache with 4 KB pages


def huge_page_copy(table: np.ndarray) -> np.ndarray:
    """`table` (C-contiguous) copied into memory marked for 2 MB pages, or `table` itself when
    that is not available or not worth it (under 2 MB)."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if portable() or advice is None or table.nbytes < _WORTH_IT or not table.flags.c_contiguous:
        return table
    size = -(-table.nbytes // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE  # room to align the start
    try:
        mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mapping.madvise(advice)
    except (OSError, ValueError):
        return table
    raw = np.frombuffer(mapping, dtype=np.uint8)  # keeps the mapping alive through `.base`
    skip = -raw.__array_interface__["data"][0] % HUGE_PAGE
    out = raw[skip : skip + table.nbytes].view(table.dtype).reshape(table.shape)
    out[...] = table
    out.flags.writeable = table.flags.writeable
    return out
