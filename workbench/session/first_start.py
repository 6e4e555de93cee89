"""A run on a first start (an empty Numba cache) that does not wait for the compiler.

`quick_start(paths, config)` decides, for a corpus on disk, whether a run can start at once: a
small corpus is counted with `regex` while the scanner is not compiled, and a small LEX run
trains in Python while a helper process compiles the trainer's kernels, then moves to them
(`engine.starting_trainer`). Used by `bpe-workbench train` and `workbench.train`; the window
does the same with its own warm-up thread (`gui.worker.KernelWarmer`).

    quick = quick_start(paths, config)          # None: the usual path (compile, then count)
    try:
        counted = count_paths(paths, counting_config(config, quick))
        session = RunSession.start(counted, config, kernels_ready=ready(quick))
    finally:
        close(quick)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.warmup import QuickStart


def quick_start(
    paths: Iterable[str | os.PathLike], config: TrainConfig, scanner_path: bool = True
) -> QuickStart | None:
    """A quick start for this corpus and config, or None (see the module docstring). The
    corpus is listed only on a first start, when its size decides."""
    from workbench.engine.warmup import quick_start as plan

    scanner_path = scanner_path and config.pretokenizer == "auto"
    return plan(config.pattern_string, config.tie_break, lambda: corpus_bytes(paths), scanner_path)


def corpus_bytes(paths: Iterable[str | os.PathLike]) -> int | None:
    """The listed size of the corpus under `paths`; None when it cannot be listed (counting
    then reports why, in its own words)."""
    from workbench.engine.corpus.listing import list_corpus

    try:
        return sum(list_corpus(paths).sizes)
    except (WorkbenchError, OSError, ValueError):
        return None


def small_corpus(paths: Iterable[str | os.PathLike]) -> bool:
    """Whether `regex` counts this corpus sooner than the scanner would compile."""
    from workbench.engine.warmup import QUICK_COUNT_BYTES

    size = corpus_bytes(paths)
    return size is not None and size <= QUICK_COUNT_BYTES


def counting_config(config: TrainConfig, quick: QuickStart | None) -> TrainConfig:
    """The config to count with: `regex` when the scanner is not compiled (same pieces)."""
    if quick is None or quick.use_scanner:
        return config
    return dataclasses.replace(config, pretokenizer="regex")


def ready(quick: QuickStart | None) -> Callable[[], bool] | None:
    return None if quick is None else quick.kernels_ready


def close(quick: QuickStart | None) -> None:
    if quick is not None:
        quick.close()
