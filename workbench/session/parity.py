"""Parity-aware runs in a session: counting a corpus in groups, and each group's held-out
compression after every merge, kept with the run (in its statistics, so databases written
before this feature open unchanged and runs without it simply have none).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.listing import list_files
from workbench.engine.errors import ConfigError
from workbench.engine.events import MergeBatch
from workbench.engine.patterns.scripts import dominant_script
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.engine.train.parity import (
    HELD_OUT_EVERY,
    GroupWords,
    count_group_files,
    count_groups,
    gini,
    pooled_words,
)
from workbench.session import memory
from workbench.session.run import Counted

STATS_KEY = "parity"
WRITE_EVERY = 2.0  # seconds between rewrites of the stored curves while a run trains


def count_parity_paths(
    paths: Iterable[str | os.PathLike],
    config: TrainConfig,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Counted:
    """Count the files under `paths` in groups (`config.parity_by`), a document at a time;
    `progress(bytes done, bytes in all)` as the classic count reports it."""
    paths = tuple(str(p) for p in paths)
    started = time.perf_counter()
    skipped: list[str] | None = [] if config.on_bad_file == "skip" else None
    with memory.stage("counting each group"):
        groups, documents = count_group_files(paths, config, skipped, cancel, progress)
        files = list_files(paths)
    counted = _counted(groups, config, documents, paths, files, started)
    counted.stats.skipped = list(skipped or ())
    return counted


def count_parity_documents(
    documents: Any,
    config: TrainConfig,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Counted:
    """Documents in memory: a mapping of group name -> documents, or an iterable of strings
    grouped by their dominant script (`parity_by` `lang` or `script`); `progress(documents
    done)` as they are counted."""
    started = time.perf_counter()
    if isinstance(documents, Mapping):
        grouped = {str(k): _texts(v) for k, v in documents.items()}
    elif config.parity_by == "folder":
        raise ConfigError(
            "parity-by folder needs files in folders; give documents in memory as"
            " {group: [texts]} or use parity-by lang or script"
        )
    else:
        grouped = {}
        for text in _texts(documents):
            grouped.setdefault(dominant_script(text), []).append(text)
    with memory.stage("counting each group"):
        groups = count_groups(grouped, config, cancel, progress)
    total = sum(len(texts) for texts in grouped.values())
    return _counted(groups, config, total, (), [], started)


def _texts(documents: Any) -> list[str]:
    if isinstance(documents, str):
        return [documents]
    texts = list(documents)
    if not all(isinstance(t, str) for t in texts):
        raise ConfigError("parity-aware documents in memory must be strings")
    return texts


def _counted(
    groups: list[GroupWords],
    config: TrainConfig,
    documents: int,
    paths: tuple[str, ...],
    files: list,
    started: float,
) -> Counted:
    words = pooled_words(groups, config)
    stats = CorpusStats(
        files=len(files),
        documents=documents,
        bytes=sum(g.train.total_bytes + g.dev.total_bytes for g in groups),
        pieces=sum(g.train.total_pieces + g.dev.total_pieces for g in groups),
        unique_pieces=len(words),
        seconds=round(time.perf_counter() - started, 3),
    )
    counted = Counted(PretokenizeResult(words, stats, files), paths)
    counted.parity = groups
    return counted


class ParityLog:
    """Each group's held-out tokens after every merge of a run, as the run stats hold them:
    `{"parity": {"groups", "held_out_every", "dev_bytes", "train_bytes", "chosen",
    "dev_tokens"}}` (one row of group figures per merge)."""

    def __init__(self, counted: Counted) -> None:
        groups = counted.parity
        self.base = asdict(counted.stats)
        self.record: dict[str, Any] = {
            "groups": [g.name for g in groups],
            "held_out_every": HELD_OUT_EVERY,
            "dev_bytes": [g.dev.total_bytes for g in groups],
            "train_bytes": [g.train.total_bytes for g in groups],
            "chosen": [],
            "dev_tokens": [],
        }
        self._written = 0.0

    def add(self, batch: MergeBatch) -> bool:
        """Take a batch's figures; True when the stored copy is due a rewrite."""
        record = batch.parity
        if record is None:
            return False
        self.record["chosen"] += record.chosen.tolist()
        self.record["dev_tokens"] += record.dev_tokens.tolist()
        now = time.monotonic()
        # The whole record is rewritten each time: a long run's (a row per merge) less often,
        # about a second between rewrites per 100,000 figures.
        cells = len(self.record["dev_tokens"]) * len(self.record["groups"])
        if now - self._written >= max(WRITE_EVERY, cells / 100_000):
            self._written = now
            return True
        return False

    def stats(self) -> dict[str, Any]:
        return {**self.base, STATS_KEY: self.record}

    def matches(self, stats: Any) -> bool:
        """Whether a stored run's record (`stats`) agrees with this one, made again: the same
        groups and held-out bytes, and its figures a prefix of these (a run whose process died
        may have stored fewer than its merges)."""
        stored = group_curves(stats)
        if stored is None:
            return False
        mine = self.record
        done = len(stored["chosen"])
        return (
            stored["groups"] == mine["groups"]
            and stored["dev_bytes"] == mine["dev_bytes"]
            and stored["chosen"] == mine["chosen"][:done]
            and stored["dev_tokens"] == mine["dev_tokens"][:done]
        )


def parity_summary(trainer: Any) -> dict[str, Any] | None:
    """A parity-aware trainer's groups now: held-out bytes/token each, the worst, their Gini
    (None for another trainer)."""
    if not hasattr(trainer, "group_names"):
        return None
    rates = trainer.compression()
    return {
        "groups": dict(zip(trainer.group_names, rates, strict=True)),
        "worst": trainer.group_names[trainer.worst_order()[0]],
        "gini": gini(rates),
    }


def group_curves(stats: Any) -> dict[str, Any] | None:
    """A stored run's parity record, checked (a crafted database may hold anything), or None."""
    record = stats.get(STATS_KEY) if isinstance(stats, dict) else None
    if not isinstance(record, dict):
        return None
    groups, dev_bytes = record.get("groups"), record.get("dev_bytes")
    chosen, dev_tokens = record.get("chosen"), record.get("dev_tokens")
    if not (
        isinstance(groups, list)
        and all(isinstance(g, str) for g in groups)
        and isinstance(dev_bytes, list)
        and len(dev_bytes) == len(groups)
        and all(isinstance(b, int) and b > 0 for b in dev_bytes)
        and isinstance(chosen, list)
        and isinstance(dev_tokens, list)
        and len(chosen) == len(dev_tokens)
        and all(isinstance(c, int) and 0 <= c < len(groups) for c in chosen)
        and all(
            isinstance(row, list)
            and len(row) == len(groups)
            and all(isinstance(t, int) and t > 0 for t in row)
            for row in dev_tokens
        )
    ):
        return None
    return record


def brief_stats(stats: Any) -> Any:
    """A run's stats with the parity record summed up (each group's held-out bytes/token after
    the last merge, the worst) instead of a row per merge: what `runs show` prints."""
    record = group_curves(stats)
    if record is None:
        return stats
    names, dev_bytes = record["groups"], record["dev_bytes"]
    last = record["dev_tokens"][-1] if record["dev_tokens"] else dev_bytes
    rates = {n: b / t for n, b, t in zip(names, dev_bytes, last, strict=True)}
    brief = {k: v for k, v in record.items() if k not in ("chosen", "dev_tokens")}
    brief["merges_recorded"] = len(record["chosen"])
    brief["bytes_per_token"] = rates
    brief["worst"] = min(names, key=lambda n: (rates[n], names.index(n)))
    brief["gini"] = gini(list(rates.values()))
    return {**stats, STATS_KEY: brief}
