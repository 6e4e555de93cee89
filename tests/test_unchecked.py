"""`_native.unchecked`: reads and writes without the negative-index wraparound give what plain
indexing gives, on a 1-d array and on a table of two columns indexed over all its items, in both
its forms (the hand-built IR, and the portable fallback)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.engine._native import unchecked
from workbench.engine._native.numba_config import njit
from workbench.engine._native.scan_ir import _get, _put

FORMS = {
    "ir": (_get, _put),
    "portable": (unchecked._plain_get, unchecked._plain_put),
}


def _kernel(get, put):
    @njit
    def swap_rows(table, flat, a, b):
        """Swap rows a and b of a (n, 2) table item by item, then copy `flat`'s items reversed
        into its own second half; returns the sum of the table's first column read back."""
        for k in range(2):
            x, y = get(table, 2 * a + k), get(table, 2 * b + k)
            put(table, 2 * a + k, y)
            put(table, 2 * b + k, x)
        n = flat.shape[0]
        for i in range(n // 2):
            put(flat, n - 1 - i, get(flat, i))
        total = 0
        for r in range(table.shape[0]):
            total += get(table, 2 * r)
        return total

    return swap_rows


@pytest.mark.parametrize("form", FORMS)
def test_get_and_put_index_items_in_c_order(form):
    table = np.arange(20, dtype=np.int64).reshape(10, 2)
    flat = np.arange(9, dtype=np.int32)
    expected_table = table.copy()
    expected_table[[2, 7]] = expected_table[[7, 2]]
    expected_flat = flat.copy()
    expected_flat[5:] = flat[:4][::-1]
    total = _kernel(*FORMS[form])(table, flat, 2, 7)
    assert (table == expected_table).all()
    assert (flat == expected_flat).all()
    assert total == expected_table[:, 0].sum()
