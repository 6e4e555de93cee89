"""Numba's on-disk cache of a kernel keyed on more source files than its own.

Numba keys a cached kernel on the file that defines it only, but a kernel compiles in the code of
every kernel it calls or inlines: a kernel whose callees live in other modules would load its old
machine code after one of those modules changed. `key_caches_on` joins their sources to
the stamp Numba compares when it loads its index. It reaches into Numba's private cache objects,
which is why it lives in this fenced package; with another Numba layout it does nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from numba.core.dispatcher import Dispatcher

from workbench.engine._native import portable


def sources_digest(modules: Iterable[ModuleType]) -> str:
    """The SHA-256 (hex) of the modules' source files, in the given order."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()


def key_caches_on(dispatchers: Iterable[object], modules: Iterable[ModuleType]) -> None:
    """Make each dispatcher's on-disk cache depend on the sources of `modules` too (read once).
    Under the portable switch Numba's own key stays (a cache of its own is then advised)."""
    if portable():
        return
    digest = sources_digest(modules)
    for dispatcher in dispatchers:
        cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
        if cache_file is None or not hasattr(cache_file, "_source_stamp"):
            continue  # another Numba layout, or caching off: nothing stale can be loaded then
        cache_file._source_stamp = (cache_file._source_stamp, digest)


def kernels_of(module: ModuleType) -> list[Dispatcher]:
    """The Numba dispatchers a module defines at its top level (not the ones it imports)."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__
    ]
