"""Layering: the engine imports neither Qt nor SQLite; the store imports no Qt."""

from __future__ import annotations

import subprocess
import sys


def _modules_after_import(packages: list[str]) -> set[str]:
    code = (
        "import importlib, pkgutil, sys\n"
        f"for name in {packages!r}:\n"
        "    package = importlib.import_module(name)\n"
        "    for info in pkgutil.walk_packages(package.__path__, name + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_engine_imports_no_qt_and_no_sqlite():
    loaded = _modules_after_import(["workbench.engine"])
    assert not {m for m in loaded if m.startswith(("PySide6", "pyqtgraph", "shiboken6"))}
    assert "sqlite3" not in loaded and "sqlite_utils" not in loaded
    assert not {m for m in loaded if m.startswith("workbench.store")}


def test_store_imports_no_qt():
    loaded = _modules_after_import(["workbench.store"])
    assert not {m for m in loaded if m.startswith(("PySide6", "pyqtgraph", "shiboken6"))}
