"""Where the app finds its icon and demo corpus, in a checkout, an install or a frozen build.

They are package data of `workbench.resources` (see `resources/__init__.py`).

The demo corpus is text that ships with the project (`resources/demo/about_bpe.txt`) plus a few
megabytes of the running Python's own standard-library sources, so nothing is downloaded and the
first start has enough text for a few thousand merges. A PyInstaller build has no stdlib
sources, so its spec copies the same files to `demo/python-stdlib/` among the resources.
"""

from __future__ import annotations

import importlib.resources
import sys
import sysconfig
from pathlib import Path

DEMO_STDLIB_BYTES = 3_000_000  # enough for ~5k merges in seconds; small enough to count fast


def resource_dir() -> Path:
    """The resources folder: the installed package `workbench.resources`, else the repo's top.

    A wheel, `pip install --user` and an editable install map `resources/` into the package
    (pyproject's `package-dir`); a frozen app carries it at `workbench/resources` beside its
    modules; a checkout run through `PYTHONPATH` has it at the top of the repository.
    """
    candidates = []
    packaged = _packaged_resources()
    if packaged is not None:
        candidates.append(packaged)
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        candidates.append(Path(frozen) / "workbench" / "resources")
    candidates.append(Path(__file__).resolve().parents[2] / "resources")  # a checkout
    for candidate in candidates:
        if (candidate / "icons").is_dir():
            return candidate
    return candidates[-1]


def _packaged_resources() -> Path | None:
    """`workbench.resources` as a folder on disk, or None when absent or inside an archive.

    Qt and the corpus reader need real paths, and every supported install (wheel, editable,
    frozen folder) unpacks the package to files, so a zipped install simply falls through.
    """
    try:
        root = importlib.resources.files("workbench.resources")
    except ModuleNotFoundError:  # a checkout on PYTHONPATH: no package of that name
        return None
    return root if isinstance(root, Path) else None


def icon_path() -> Path:
    return resource_dir() / "icons" / "bpe-workbench.svg"


def stdlib_demo_files(budget: int = DEMO_STDLIB_BYTES) -> list[Path]:
    """The first stdlib modules in name order whose sizes add up to about `budget` bytes.

    Name order keeps the demo identical between runs of the same Python, so two demo runs
    give the same merges.
    """
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chosen: list[Path] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        if total >= budget:
            break
        chosen.append(path)
        total += path.stat().st_size
    return chosen


def demo_corpus() -> list[Path]:
    """The files of the demo corpus (never empty: the shipped prose is always there)."""
    demo = resource_dir() / "demo"
    files = [demo / "about_bpe.txt"]
    bundled = demo / "python-stdlib"
    if bundled.is_dir():
        files += sorted(bundled.glob("*.py"))
    else:
        files += stdlib_demo_files()
    return [f for f in files if f.is_file()]
