"""The encoder's large tables are copied into memory marked for 2 MB pages (`_native.huge_pages`):
the copy holds the same values with the same type (a kernel compiled for the table takes it
without compiling again), starts on a 2 MB boundary, and small tables are left as they are."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.engine._native import portable
from workbench.engine._native.huge_pages import HUGE_PAGE, huge_page_copy

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or portable(),
    reason="2 MB pages are asked for on Linux only, not under the portable switch",
)


def _huge_kb(table: np.ndarray) -> int:
    """The kB of 2 MB pages behind the mapping that holds `table`'s first byte."""
    address = table.__array_interface__["data"][0]
    inside = False
    with Path("/proc/self/smaps").open() as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and ":" not in fields[0]:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                inside = low <= address < high
            elif inside and fields[0] == "AnonHugePages:":
                return int(fields[1])
    return 0


def test_a_large_table_is_copied_whole_onto_a_2_mb_boundary() -> None:
    table = np.arange(3 * (1 << 20) + 5, dtype=np.int64).reshape(-1, 1)  # 24 MB and a bit
    copy = huge_page_copy(table)
    assert copy is not table
    assert copy.dtype == table.dtype and copy.shape == table.shape
    assert copy.flags.c_contiguous and copy.flags.writeable
    assert copy.__array_interface__["data"][0] % HUGE_PAGE == 0
    assert np.array_equal(copy, table)
    copy[0, 0] = -1  # its own memory
    assert table[0, 0] == 0


def test_the_system_backs_the_copy_with_2_mb_pages_when_it_has_them() -> None:
    mode = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not mode.is_file() or "[never]" in mode.read_text():
        pytest.skip("transparent huge pages are off on this machine")
    copy = huge_page_copy(np.ones((1 << 20, 2), dtype=np.uint64))  # 16 MB
    assert _huge_kb(copy) >= 8 * 1024


def test_a_small_table_or_a_strided_view_is_left_as_it_is() -> None:
    small = np.zeros(1000, dtype=np.int64)
    assert huge_page_copy(small) is small
    strided = np.zeros((1 << 20, 2), dtype=np.int64)[:, 0]
    assert huge_page_copy(strided) is strided


def test_a_read_only_table_stays_read_only() -> None:
    table = np.zeros(1 << 19, dtype=np.int64)
    table.flags.writeable = False
    assert not huge_page_copy(table).flags.writeable
