"""Continuing a stored run to a larger vocabulary (headless: the CLI and the window share it).

The trainer's state is not stored; it is rebuilt by training the same corpus with the same
settings, which gives the stored merges again (the trainer is deterministic, and a test checks
the replay against the store before anything new is written). That only holds for the same
corpus, so the corpus fingerprint (paths, sizes, modification times) must match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import fingerprint, list_files
from workbench.engine.errors import CorpusError, WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize import count_corpus
from workbench.engine.trainer import BpeTrainer
from workbench.store import RunStore


def stored_config(settings: dict, vocab_size: int) -> TrainConfig:
    """The run's settings as a TrainConfig, with a new vocab size."""
    known = {f.name for f in fields(TrainConfig)}
    values = {k: v for k, v in settings.items() if k in known}
    values["special_tokens"] = tuple(values.get("special_tokens") or ())
    values["vocab_size"] = vocab_size
    return TrainConfig(**values)


def continue_run(
    store: RunStore,
    run_id: int,
    vocab_size: int,
    on_batch: Callable[[MergeBatch], None] | None = None,
) -> BpeTrainer:
    """Train run `run_id` on to `vocab_size`, appending the new merges to the store."""
    run = store.get_run(run_id)
    if run.state == "running":
        raise WorkbenchError(f"run {run_id} is being trained right now")
    paths = run.corpus.get("paths")
    recorded = run.corpus.get("fingerprint")
    if not paths or not recorded:
        raise WorkbenchError(f"run {run_id} did not record its corpus, so it cannot be continued")
    try:
        files = list_files(paths)
    except CorpusError as exc:
        raise WorkbenchError(f"run {run_id}: its corpus is not there any more ({exc})") from None
    if fingerprint(files) != recorded:
        raise WorkbenchError(
            f"run {run_id}: its corpus changed since it was trained (files, sizes or times"
            " differ); train a new run on it instead"
        )
    config = stored_config(run.settings, vocab_size)
    stored = store.merges_as_pairs(run_id)
    if vocab_size <= 256 + len(stored) + len(config.special_tokens):
        raise WorkbenchError(f"run {run_id} already has {run.vocab_size} tokens; ask for more")
    trainer = BpeTrainer(count_corpus(paths, config).words, config)
    trainer.step(len(stored))
    if trainer.merge_pairs() != stored:
        raise WorkbenchError(f"run {run_id}: replaying its corpus did not give the stored merges")
    with store.writer(run_id) as writer:
        try:
            for batch in trainer.batches():
                writer.write(batch)
                if on_batch is not None:
                    on_batch(batch)
        except BaseException as exc:
            writer.set_state("failed", error=str(exc) or type(exc).__name__)
            raise
        writer.set_state("done", stop_reason=trainer.stop_reason or "vocab_size")
    return trainer
