"""Entry point of the frozen app: the same `main()` as the `bpe-workbench` command.

Numba caches compiled kernels beside their source files; a frozen app's folder may be
read-only, so the cache goes to the user's cache folder (set before numba is imported).
"""

import multiprocessing
import os
import sys
from pathlib import Path

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the corpus counter spawns worker processes
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bpe-workbench"
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache / "numba"))
    from workbench.cli import main

    sys.exit(main())
