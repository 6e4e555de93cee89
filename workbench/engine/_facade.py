"""Facades that import on first use: a stage's `__init__` names its public objects without
loading the modules behind them.

Importing any module of a package runs the package's `__init__` first, so an `__init__` that
imported its stage eagerly would load Numba (about half a second) for code that only wants, say,
the pure-Python trainer of a first start, or `bpe-workbench --help`. With `lazy_exports` the
facade resolves `workbench.engine.train.BpeTrainer` on first access (PEP 562) and keeps it.

    __getattr__, __dir__ = lazy_exports(__name__, {"BpeTrainer": "trainer"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(
    package: str, homes: dict[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """(`__getattr__`, `__dir__`) for `package`, where `homes` maps each public name to the
    submodule (relative to the package) that defines it."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__
