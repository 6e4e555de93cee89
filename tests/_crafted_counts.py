"""Counts files written the way a crafted one would be: any rows, any metadata (shared by the
counts-file hardening tests and their fuzzer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from workbench.engine.patterns.regexes import resolve
from workbench.engine.pretokenize.counts_file import KEY, unicode_version

GOOD_META: dict[str, Any] = {
    "format": "bpe-workbench counts",
    "version": 1,
    "pattern": resolve("gpt2"),
    "specials": ["<|endoftext|>"],
    "text_column": "text",
    "jsonl_field": "text",
    "stats": {"files": 1, "documents": 2, "bytes": 0, "pieces": 0, "unique_pieces": 0,
              "skipped": []},
    "fingerprint": "0123456789abcdef0123456789abcdef",
    "inputs": ["c.txt"],
    "unicode": unicode_version(),
}  # fmt: skip
GOOD_ROWS = [(b" the", 40), (b"hello", 3), (b" world", 7)]


def write_crafted(
    path: Path,
    rows: list[tuple[Any, Any]] = GOOD_ROWS,
    meta: Any = None,
    types: tuple[Any, Any] | None = None,
    raw_meta: bytes | None = None,
) -> Path:
    """A counts file holding exactly `rows` and `meta` (default: good ones), unsorted and
    unchecked, with column types `types` (default large_binary, int64)."""
    piece_type, count_type = types or (pa.large_binary(), pa.int64())
    table = pa.table(
        {
            "piece": pa.array([r[0] for r in rows], piece_type),
            "count": pa.array([r[1] for r in rows], count_type),
        }
    )
    if raw_meta is None:
        raw_meta = json.dumps(GOOD_META if meta is None else meta).encode()
    pq.write_table(table.replace_schema_metadata({KEY: raw_meta}), path)
    return path


def meta_with(**changes: Any) -> dict[str, Any]:
    """GOOD_META with keys changed (a value of `...` deletes the key)."""
    meta = json.loads(json.dumps(GOOD_META))
    for key, value in changes.items():
        if value is ...:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta
