"""The one place where Numba options live.

Every kernel in the engine is compiled with `njit` from here, so caching and GIL release are
uniform: `cache=True` keeps compiled code on disk between processes, `nogil=True` lets the Qt
window (and a second pre-tokenizing thread) run while a kernel works.
"""

from __future__ import annotations

import functools

import numba

OPTIONS = {"cache": True, "nogil": True}

njit = functools.partial(numba.njit, **OPTIONS)

# For hot loops that allocate nothing and only read and write the arrays they are given: compiled
# without Numba's reference counting. A loop that calls helpers (even inlined ones) or may rebind
# an array otherwise pays an atomic incref/decref per array per iteration: a third of the merge
# loop's time. Numba refuses to compile an allocation in such a function, so it cannot leak.
# `_nrt` is Numba's own (private) option: were a later Numba to drop it, the same loops compile
# with reference counting (slower, same results) rather than fail.
_WITHOUT_REFCOUNTS = {"_nrt": False} if hasattr(numba.core.options.DefaultOptions, "_nrt") else {}
njit_borrowing = functools.partial(numba.njit, **_WITHOUT_REFCOUNTS, **OPTIONS)
