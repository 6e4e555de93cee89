"""Loading cached kernels without Numba's full context refresh (`numba_config`).

Each case runs in a fresh Python process with its own empty Numba cache, because what is tested
is what a process imports and loads at start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from workbench.engine._native import numba_config

KERNEL = textwrap.dedent(
    """
    import numpy as np
    from workbench.engine._native.numba_config import njit

    @njit
    def doubled_sum(values):
        out = np.empty(len(values), dtype=np.int64)  # allocates: needs Numba's runtime
        total = 0
        for i in range(len(values)):
            out[i] = 2 * values[i]
            total += out[i]
        return out, total
    """
)

RUN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kernel_module
    out, total = kernel_module.doubled_sum(np.arange(5, dtype=np.int64))
    print(out.tolist(), total, "numba.np.random.legacy" in sys.modules)
    if len(sys.argv) > 1:  # then compile something new that needs the lowerings a load skipped
        import math
        from numba import njit
        @njit
        def sorted_copy(values):
            np.random.seed(7)
            return np.sort(values), math.gamma(5.0), np.random.randint(0, 1)
        result, gamma, zero = sorted_copy(np.array([3, 1, 2]))
        print(result.tolist(), gamma, zero)
    """
)


def _run(folder: Path, *args: str) -> list[str]:
    # the kernel's folder first, then whatever made `workbench` importable here (an install, or
    # a PYTHONPATH that points at a checkout)
    paths = [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(folder / "cache"), PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_this_numba_gets_the_light_loader():
    # The project pins a Numba that has the private pieces; a silent fallback would only cost time.
    assert numba_config.LIGHT_CACHE_LOADING


def test_a_cached_kernel_loads_without_the_unneeded_lowerings(tmp_path):
    (tmp_path / "kernel_module.py").write_text(KERNEL)
    first = _run(tmp_path)  # compiles, so Numba's compiler refreshes everything
    assert first == ["[0, 2, 4, 6, 8] 20 True"]
    # From the cache: the same result, and the random numbers' lowerings were never imported.
    second = _run(tmp_path)
    assert second == ["[0, 2, 4, 6, 8] 20 False"]


def test_compiling_after_a_light_load_still_has_every_lowering(tmp_path):
    (tmp_path / "kernel_module.py").write_text(KERNEL)
    _run(tmp_path)
    lines = _run(tmp_path, "compile")
    assert lines == ["[0, 2, 4, 6, 8] 20 False", "[1, 2, 3] 24.0 0"]
