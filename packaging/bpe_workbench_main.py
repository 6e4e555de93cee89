"""Entry point of the frozen app: the same `main()` as the `bpe-workbench` command.

Numba caches compiled kernels beside their source files; a frozen app's folder may be
read-only, so the cache goes to the user's cache folder (set before numba is imported).
"""

import multiprocessing
import os
import sys

import platformdirs

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the corpus counter spawns worker processes
    cache = platformdirs.user_cache_path("bpe-workbench", appauthor=False)  # ~/.cache/... on Linux
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache / "numba"))
    from workbench.cli import main

    sys.exit(main())
