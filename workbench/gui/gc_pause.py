"""The cyclic garbage collector paused while a background job builds a large structure.

Building a stored run's tokenizer or reading its 200k merges makes millions of references in
lists, dicts and tuples. Each full collection meanwhile walks all of them with the GIL held:
12-70 ms, in whichever thread allocated last, the UI thread included (measured while opening a
run of 200,000 merges). With the collector off for the job and what is alive at its end frozen
(`gc.freeze`: never walked again, still freed by reference counting), those walks do not
happen. The window already freezes what lives long (`app.freeze_long_lived`); a reference
cycle made meanwhile waits for the thaw at a run's end, as there.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # jobs inside `collector_paused` now
_was_enabled = False  # the collector's state when the first of them began


def pause_collector() -> None:
    """Turn the collector off until a matching `resume_collector` (calls nest)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def resume_collector() -> None:
    """End one `pause_collector`; the last one freezes what is alive, then collects again."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0:
            gc.freeze()  # what the jobs built is never walked by a later collection
            if _was_enabled:
                gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the block runs (in any thread: the collector is the
    process's); at the end of the last such block or pause, freeze what is alive, then
    collect again."""
    pause_collector()
    try:
        yield
    finally:
        resume_collector()
