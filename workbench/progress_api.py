"""Progress bars for the Python API: `tqdm.auto`, shown only where someone can see them.

    with bar(total=None, unit="B", desc="counting", wanted=True) as update:
        update(done=1_000_000, total=30_000_000)   # absolute figures: the bar follows them

A bar is drawn when `wanted` and the output is a terminal (stderr) or a Jupyter kernel (a
widget there when ipywidgets is installed, else text); otherwise every update is a no-op, so a
script in a pipe or a batch job prints nothing. `tqdm.auto` is the project's one progress
library (the command line's `workbench/progress.py` draws with it too, where that exists).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from typing import Any

Update = Callable[..., None]


def visible() -> bool:
    """True when a bar would be seen: stderr is a terminal, or this is a Jupyter kernel."""
    if _in_notebook():
        return True
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    ip = shell.get_ipython()  # type: ignore[attr-defined]
    return ip is not None and getattr(ip, "kernel", None) is not None


def _tqdm_class() -> Any:
    # tqdm.auto in a kernel without ipywidgets warns and falls back to text: choose text ourselves
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


@contextlib.contextmanager
def bar(
    total: int | None, unit: str, desc: str, wanted: bool, scale: bool = False
) -> Iterator[Update]:
    """An `update(done, total=None)` that moves a bar to `done` (or does nothing when hidden);
    the bar is closed on leaving. `scale`: show 1.2M rather than 1234567 (bytes)."""
    if not (wanted and visible()):
        yield lambda done, total=None: None
        return
    progress = _tqdm_class()(
        total=total, unit=unit, desc=desc, unit_scale=scale, unit_divisor=1024 if scale else 1000,
        leave=True, dynamic_ncols=True,
    )  # fmt: skip

    def update(done: int, total: int | None = None) -> None:
        if total is not None and total != progress.total:
            progress.total = total
        progress.update(done - progress.n)

    try:
        yield update
        # Finished: the bar ends full even if the work ended short of its estimate (a corpus
        # with fewer pairs than merges asked for); an exception leaves it where it stopped.
        progress.total = progress.n
        progress.refresh()
    finally:
        progress.close()
