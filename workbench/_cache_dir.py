"""Where compiled kernels are kept: one folder per user, outside the virtual environment.

Numba's default cache sits in `__pycache__` next to the sources, so re-creating a virtual
environment (or installing the wheel again) throws away tens of seconds of compiling. Before
Numba is imported, `use_user_cache()` points `NUMBA_CACHE_DIR` at the platform's user cache
(`~/.cache/bpe-workbench/numba-py3.12-numba0.68.1` on Linux), keyed on Python's and Numba's
versions because their machine code is not interchangeable. A `NUMBA_CACHE_DIR` the user (or
a test) set is honoured as it is. Imports nothing heavy: `import workbench` stays instant.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "bpe-workbench"


def user_cache_root() -> Path:
    """The platform's per-user cache folder for this app (not created here)."""
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # a dependency, but a missing one must not stop the app
        return Path.home() / ".cache" / APP_NAME
    return Path(user_cache_dir(APP_NAME, appauthor=False))


def numba_folder_name() -> str:
    """`numba-py3.12-numba0.68.1`: compiled code is valid for one Python and one Numba."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"numba-py{python}-numba{_numba_version()}"


def _numba_version() -> str:
    """Numba's version without importing Numba (or `importlib.metadata`, 40 ms here): the name
    of its `dist-info` folder beside the package."""
    from importlib.util import find_spec

    spec = find_spec("numba")
    if spec is None or spec.origin is None:
        return "none"
    site = Path(spec.origin).parent.parent
    found = sorted(site.glob("numba-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len("numba-") : -len(".dist-info")]
    from importlib import metadata  # several or none (an egg, a source tree): ask properly

    try:
        return metadata.version("numba")
    except metadata.PackageNotFoundError:
        return "unknown"


def use_user_cache() -> None:
    """Set `NUMBA_CACHE_DIR` to the user cache unless it is set already (the user's choice).
    Must run before Numba is imported: Numba reads it once, on import."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    os.environ["NUMBA_CACHE_DIR"] = str(user_cache_root() / numba_folder_name())


def kernel_cache_dir() -> Path:
    """The folder compiled kernels go to (and the start-up's locks and log beside them)."""
    use_user_cache()
    return Path(os.environ["NUMBA_CACHE_DIR"])
