"""BPE Workbench: train byte-level BPE tokenizers and watch every merge arrive.

The public API (see the README): `train`, `load`, `extend`, `Tokenizer`, `TrainResult`. They load Numba,
so they are imported on first use: `import workbench` alone stays instant (the command line and
the window start through it). Importing it points Numba's cache at a per-user folder
(`workbench._cache_dir`) unless `NUMBA_CACHE_DIR` is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench._cache_dir import use_user_cache
from workbench._version import version

# Before anything imports Numba: compiled kernels go to a per-user cache that outlives the
# virtual environment (unless NUMBA_CACHE_DIR is set: then that folder, as Numba does).
use_user_cache()

__version__ = version()  # from the package metadata: pyproject.toml is the one place it is written
__all__ = ["Tokenizer", "TrainResult", "extend", "load", "train"]

if TYPE_CHECKING:
    from workbench.api import TrainResult, load, train
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.extend_api import extend


def __getattr__(name: str) -> Any:
    if name in ("train", "load", "TrainResult"):
        from workbench import api

        return getattr(api, name)
    if name == "extend":
        from workbench.extend_api import extend

        return extend
    if name == "Tokenizer":
        from workbench.engine.encode.tokenizer import Tokenizer

        return Tokenizer
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
