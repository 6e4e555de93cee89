"""Numba's on-disk cache keyed on more source files than the kernel's own.

Numba keys a cached kernel on its own file only, but a kernel compiles in the code of every
kernel it calls: when the callee's module changes, the cached caller would still hold the old
callee. `cache_also_keyed_on` joins the other modules' digest to the stamp Numba compares when
it loads its index. It reaches into Numba's private cache objects (`_cache`, `_cache_file`,
`_source_stamp`); under another Numba layout, or with caching off, it does nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType


def cache_also_keyed_on(dispatcher: object, *modules: ModuleType) -> None:
    """Make `dispatcher`'s on-disk cache depend on `modules`' sources too."""
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_source_stamp"):
        return  # another Numba layout, or caching off: nothing stale can be loaded then
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__ or "").read_bytes())
    stamp = cache_file._source_stamp  # noqa: SLF001 -- Numba's only hook for this
    cache_file._source_stamp = (stamp, digest.hexdigest())  # noqa: SLF001
