"""Every module of the `workbench` package, for the PyInstaller spec's `hiddenimports`.

PyInstaller follows `import` statements, but the command line loads each command's module by
name (`importlib.import_module`), and helper processes start modules by name too, so those are
invisible to its analysis: a build once shipped without `count` and `eval`. Listing every module
from the source tree means a new command, or a module moved by a reorganization, is never left
out. The file tree is read, nothing is imported, so the spec and the tests can call this without
the app's dependencies.

    hidden_imports(Path("."))[:2] -> ["workbench", "workbench.__main__"]
"""

from __future__ import annotations

from pathlib import Path


def hidden_imports(root: Path) -> list[str]:
    """The dotted names of `root/workbench/**/*.py`, sorted (a package by its `__init__`)."""
    names = []
    for path in sorted((root / "workbench").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if "__pycache__" not in parts:
            names.append(".".join(parts))
    return sorted(names)
