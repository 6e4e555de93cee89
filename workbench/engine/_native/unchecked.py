"""`get(array, i)` and `put(array, i, value)`: array[i] in a kernel without Numba's negative-index
wraparound, for loops that index small arrays many times a piece (the merging of a new piece:
each read of a signed index was three more instructions and a register for the length).

Kernels only, C-contiguous arrays, `i` counted over all their items in C order (row r of a
table of 2 columns is 2r, 2r + 1), and only where 0 <= i < array.size is already certain: nothing
is checked. They are `scan_ir`'s hand-built IR loads and stores; under `BPE_WORKBENCH_PORTABLE=1`
(decided at import) plain indexing, with the same results.
"""

from __future__ import annotations

from workbench.engine._native import portable
from workbench.engine._native.numba_config import njit
from workbench.engine._native.scan_ir import _get, _put


@njit(inline="always")
def _plain_get(array, index):
    return array.reshape(-1)[index]


@njit(inline="always")
def _plain_put(array, index, value):
    array.reshape(-1)[index] = value


get, put = (_plain_get, _plain_put) if portable() else (_get, _put)
