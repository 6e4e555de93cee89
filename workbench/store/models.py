"""Plain records the store hands out: a run's header and one stored merge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.store import checks


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One row of `runs`, with its JSON columns decoded."""

    id: int
    name: str
    created: str
    updated: str
    state: str
    pid: int | None
    merge_count: int
    vocab_size: int
    settings: dict[str, Any] = field(default_factory=dict)
    corpus: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    error: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> RunInfo:
        """Raises `checks.CraftedRow` for a value this app never writes."""
        row = checks.run_row(row)
        return cls(
            id=row["id"],
            name=row["name"],
            created=row["created"],
            updated=row["updated"],
            state=row["state"],
            pid=row.get("pid"),
            merge_count=row["merge_count"],
            vocab_size=row["vocab_size"],
            settings=row["settings"],
            corpus=row["corpus"],
            stats=row["stats"],
            timings=row["timings"],
            stop_reason=row.get("stop_reason"),
            error=row.get("error"),
        )


MERGE_COLUMNS = (
    "rank, new_id, left_id, right_id, token, readable, count, length, is_new, ties, corpus_tokens,"
    " runner_up"
)


@dataclass(frozen=True, slots=True)
class StoredMerge:
    """One merge as stored: `left_id` + `right_id` -> `new_id`, whose bytes are `token`."""

    rank: int
    new_id: int
    left_id: int
    right_id: int
    token: bytes
    readable: str
    count: int
    length: int
    is_new: bool
    ties: int
    corpus_tokens: int | None = None  # tokens the whole corpus took after this merge
    # the best losing pair's count (None: not recorded, as in runs stored before schema 3)
    runner_up: int | None = None

    @classmethod
    def from_tuple(cls, row: tuple[Any, ...]) -> StoredMerge:
        """From a row selected as `MERGE_COLUMNS`; raises `checks.CraftedRow` for a value this
        app never writes (a text token, a float id)."""
        (
            rank,
            new_id,
            left_id,
            right_id,
            token,
            text,
            count,
            length,
            is_new,
            ties,
            tokens,
            runner,
        ) = checks.merge_row(row)
        return cls(
            rank, new_id, left_id, right_id, bytes(token), text, count, length, bool(is_new), ties,
            tokens, runner,
        )  # fmt: skip
