"""Rows read from a run database are checked before anyone uses them: the file may be crafted.

SQLite keeps whatever a column is given (a text `token`, a float `rank`, a 100 MB `name`), so a
database written by another program, or edited by hand, can hold values our own writer never
would. Every reader goes through these checks and a bad value becomes `CraftedRow`, which
`RunStore` turns into one line naming the file (`runs.db: run 3: settings is not a JSON object`).

    run_row({"id": 1, "name": 5, ...})     -> CraftedRow("run 1: name is integer, not text")
    merge_row((0, 256, 97, 98, "ab", ...)) -> CraftedRow("merge 0: token is text, not bytes")

What it leaves out: whether merges agree with each other (`RunStore.merges_as_pairs` checks
that) and whether the tokenizer they make can be written and read back (`tokenizer_of_run`).
"""

from __future__ import annotations

import json
from typing import Any

# Far above anything the app writes (a name is typed, settings are a few KB), far below what
# would hurt to hold: a crafted 1 GB column is refused instead of decoded.
MAX_TEXT = 1 << 20
MAX_JSON = 16 << 20
MAX_ID = 2**31 - 1  # token ids are int32 in the encoder
STATES = ("running", "paused", "done", "failed", "interrupted")
_JSON_COLUMNS = ("settings", "corpus", "stats", "timings")


class CraftedRow(ValueError):  # noqa: N818 -- named for what it is, not as "...Error"
    """A stored value this app never writes; the message names the run or merge and column."""


def _kind(value: object) -> str:
    return {
        int: "integer",
        float: "real",
        str: "text",
        bytes: "bytes",
        type(None): "empty",
    }.get(type(value), type(value).__name__)


def _int(where: str, column: str, value: object, low: int, high: int) -> int:
    """An integer within [low, high]: _int("run 1", "pid", 5, 0, 9) -> 5."""
    if type(value) is not int:
        raise CraftedRow(f"{where}: {column} is {_kind(value)}, not an integer")
    if not low <= value <= high:
        raise CraftedRow(f"{where}: {column} {value} is outside {low}..{high}")
    return value


def _text(where: str, column: str, value: object, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if type(value) is not str:
        raise CraftedRow(f"{where}: {column} is {_kind(value)}, not text")
    if len(value) > MAX_TEXT:
        raise CraftedRow(f"{where}: {column} is {len(value):,} characters long")
    return value


def _object(where: str, column: str, value: object) -> dict[str, Any]:
    """A JSON object column decoded: '{"a": 1}' -> {"a": 1}; '[1]', 'x', 5 are refused."""
    if type(value) is not str:
        raise CraftedRow(f"{where}: {column} is {_kind(value)}, not JSON text")
    if len(value) > MAX_JSON:
        raise CraftedRow(f"{where}: {column} is {len(value):,} characters of JSON")
    try:
        decoded = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: '[[[[...' nested 100k deep
        raise CraftedRow(f"{where}: {column} is not valid JSON") from None
    if not isinstance(decoded, dict):
        raise CraftedRow(f"{where}: {column} is not a JSON object")
    return decoded


def run_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row with its JSON columns decoded, every column of the expected type."""
    run_id = row.get("id")
    where = f"run {run_id!r}"
    _int(where, "id", run_id, 1, 2**63 - 1)
    missing = [c for c in ("name", "created", "updated", "state", "merge_count") if c not in row]
    if missing:
        raise CraftedRow(f"the runs table has no column {missing[0]}")
    out = dict(row)
    for column in ("name", "created", "updated"):
        _text(where, column, row[column])
    if row["state"] not in STATES:
        raise CraftedRow(f"{where}: state {str(row['state'])[:40]!r} is not a run state")
    if row.get("pid") is not None:
        _int(where, "pid", row["pid"], 0, 2**63 - 1)
    _int(where, "merge_count", row["merge_count"], 0, MAX_ID)
    _int(where, "vocab_size", row.get("vocab_size", 256), 0, MAX_ID)
    for column in ("stop_reason", "error", "owner"):
        _text(where, column, row.get(column), optional=True)
    for column in _JSON_COLUMNS:
        out[column] = _object(where, column, row.get(column, "{}"))
    return out


def merge_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row selected as `MERGE_COLUMNS`, checked: integers where ids and counts go, bytes for
    the token, text for its readable form. The merge list reads pages of 500 and `eval`
    every merge of a run, so a good row passes one expression (~1 us); a bad one is then
    looked at field by field for the message."""
    rank, new_id, left, right, token, text, count, length, is_new, ties, tokens, runner = row
    if (
        type(rank) is type(new_id) is type(left) is type(right) is int
        and type(count) is type(length) is type(is_new) is type(ties) is int
        and (tokens is None or type(tokens) is int)
        and (runner is None or type(runner) is int)
        and type(token) is bytes
        and type(text) is str
        and 0 <= rank <= MAX_ID
        and 0 <= new_id <= MAX_ID
        and 0 <= left <= MAX_ID
        and 0 <= right <= MAX_ID
        and token
        and len(text) <= MAX_TEXT
        and length >= 0
        and 0 <= is_new <= 1
        and ties >= 0
        and (tokens is None or tokens >= 0)
        and (runner is None or runner >= 0)
    ):
        return row
    return _merge_row_fields(row)


def _merge_row_fields(row: tuple[Any, ...]) -> tuple[Any, ...]:
    rank, new_id, left, right, token, text, count, length, is_new, ties, tokens, runner = row
    where = f"merge {rank!r}"
    _int(where, "rank", rank, 0, MAX_ID)
    for column, value in (("new_id", new_id), ("left_id", left), ("right_id", right)):
        _int(where, column, value, 0, MAX_ID)
    if type(token) is not bytes or not token:
        raise CraftedRow(f"{where}: token is {_kind(token) if token else 'empty'}, not bytes")
    _text(where, "readable", text)
    _int(where, "count", count, -(2**63), 2**63 - 1)
    _int(where, "length", length, 0, 2**63 - 1)
    _int(where, "is_new", is_new, 0, 1)
    _int(where, "ties", ties, 0, 2**63 - 1)
    if tokens is not None:
        _int(where, "corpus_tokens", tokens, 0, 2**63 - 1)
    if runner is not None:
        _int(where, "runner_up", runner, 0, 2**63 - 1)
    return row


def special_names(where: str, value: object) -> tuple[str, ...]:
    """A run's `special_tokens` setting: a list of distinct, non-empty strings (a bare string
    would be read as its characters, each a special)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(type(v) is str and v for v in value):
        raise CraftedRow(f"{where}: special_tokens is not a list of non-empty strings")
    if len(set(value)) != len(value):
        raise CraftedRow(f"{where}: special_tokens lists a token twice")
    return tuple(value)


def pattern_setting(where: str, value: object) -> str | None:
    if value is not None and type(value) is not str:
        raise CraftedRow(f"{where}: pattern is {_kind(value)}, not text")
    return value
