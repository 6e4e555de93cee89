"""Counting a corpus for a run: files and folders on disk, or documents given as strings.

Both give a `Counted` with the same statistics, so a run trained from a notebook's strings and
one trained from the same text in files are recorded alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.counting import count_corpus, count_in_memory
from workbench.engine.pretokenize.stage_two import count_stage_two, count_stage_two_documents
from workbench.session import memory
from workbench.session.run import Counted


def count_paths(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    workers: int | None = None,
) -> Counted:
    """Count the files and folders under `paths` (see `engine.pretokenize.count_corpus`)."""
    paths = tuple(str(p) for p in paths)
    if config.parity_by:
        from workbench.session.parity import count_parity_paths

        return count_parity_paths(paths, config, cancel, progress)
    with memory.stage("counting the corpus"):
        result = count_corpus(paths, config, progress=progress, cancel=cancel, workers=workers)
    if not config.superbpe_transition:
        return Counted(result, paths)
    if config.pretokenizer == "auto" and stage_two_compiles(paths):
        # `regex` counts a small corpus sooner than the stage-2 scanner compiles (same pieces)
        config = replace(config, pretokenizer="regex")
    with memory.stage("counting the corpus for SuperBPE's stage 2"):
        two, again = count_stage_two(paths, config, progress, cancel, workers)
        return Counted(result, paths, two, again.stats.seconds)


def stage_two_compiles(paths: Iterable[str | os.PathLike]) -> bool:
    """Whether counting stage 2 of a small corpus would wait for the stage-2 scanner to
    compile (its first use): `regex` counts such a corpus sooner."""
    from workbench.engine.warmup import stage_two_ready
    from workbench.session.startup import small_corpus

    return stage_two_ready() is False and small_corpus(paths)


def count_documents(
    documents: Any,
    config: TrainConfig,
    progress: Callable[[int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Counted:
    """Count documents given in memory: an iterable of strings (each one document) or of
    batches of them, a Dataset or an arrow table (see `engine.pretokenize.count_in_memory`)."""
    if config.superbpe_transition and not _reusable(documents):
        raise ConfigError(
            "SuperBPE reads the documents twice (once per stage): give a list of strings, a"
            " Dataset, an arrow table or files, not an iterator that can be read once"
        )
    if config.parity_by:
        from workbench.session.parity import count_parity_documents

        return count_parity_documents(documents, config, cancel, progress)
    with memory.stage("counting the documents"):
        result = count_in_memory(documents, config, progress, cancel)
    if not config.superbpe_transition:
        return Counted(result, ())
    with memory.stage("counting the documents for SuperBPE's stage 2"):
        two, again = count_stage_two_documents(documents, config, progress, cancel)
        return Counted(result, (), two, again.stats.seconds)


def _reusable(documents: Any) -> bool:
    """Whether `documents` can be read twice: a list or tuple, a Dataset or an arrow table."""
    return isinstance(documents, list | tuple) or hasattr(documents, "num_rows")
