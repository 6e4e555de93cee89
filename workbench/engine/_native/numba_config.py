"""The one place where Numba options live.

Every kernel in the engine is compiled with `njit` from here, so caching and GIL release are
uniform: `cache=True` keeps compiled code on disk between processes, `nogil=True` lets the Qt
window (and a second pre-tokenizing thread) run while a kernel works.
"""

from __future__ import annotations

import functools

import numba
from numba.core import caching
from numba.core.runtime import rtsys

from workbench.engine._native import portable

OPTIONS = {"cache": True, "nogil": True}

njit = functools.partial(numba.njit, **OPTIONS)

# For the rare kernel that calls CPython's C API (reference counts, lists): it must hold the GIL.
njit_holding_gil = functools.partial(numba.njit, cache=True, nogil=False)

# For hot loops that allocate nothing and only read and write the arrays they are given: compiled
# without Numba's reference counting. A loop that calls helpers (even inlined ones) or may rebind
# an array otherwise pays an atomic incref/decref per array per iteration: a third of the merge
# loop's time. Numba refuses to compile an allocation in such a function, so it cannot leak.
# `_nrt` is Numba's own (private) option: were a later Numba to drop it, the same loops compile
# with reference counting (slower, same results) rather than fail.
# Under BPE_WORKBENCH_PORTABLE=1 the stock options are used.
_HAS_NRT_OPTION = hasattr(numba.core.options.DefaultOptions, "_nrt")
_WITHOUT_REFCOUNTS = {"_nrt": False} if _HAS_NRT_OPTION and not portable() else {}
njit_borrowing = functools.partial(numba.njit, **_WITHOUT_REFCOUNTS, **OPTIONS)


def _load_without_refresh(cache, sig, target_context):
    """Numba's `Cache.load_overload` without its `target_context.refresh()`.

    Numba refreshes the compiler's context before loading every cached kernel. The first refresh
    imports and registers every lowering Numba has (linear algebra, random numbers, typed
    containers, ...): 0.3 s and about 13 MB on this machine, half of a small run's fixed cost, and
    none of it is needed to load machine code that is already compiled. Loading needs only Numba's
    runtime (the allocator the kernels call), which `rtsys.initialize` sets up. A kernel that is not
    in the cache is compiled as before, and Numba's compiler refreshes the context itself first.
    """
    rtsys.initialize(target_context)
    with cache._guard_against_spurious_io_errors():
        return cache._load_overload(sig, target_context)


def _install_light_cache_loading() -> bool:
    """Use `_load_without_refresh` if this Numba has the pieces it relies on (private ones).

    With another Numba the stock loader stays: slower to start, same results.
    """
    cache_class = getattr(caching, "Cache", None)
    needed = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if cache_class is None or not all(hasattr(cache_class, name) for name in needed):
        return False
    if not hasattr(rtsys, "initialize"):
        return False
    cache_class.load_overload = _load_without_refresh
    return True


LIGHT_CACHE_LOADING = not portable() and _install_light_cache_loading()
