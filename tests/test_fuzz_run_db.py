"""Fuzzing run databases (issue 33): set columns to odd values, delete rows, drop or recreate
tables, flip bytes and truncate the file; then every read path must give a valid answer or the
store's one-line error naming the file (`StoreError`), never another exception. What `runs export`
writes must load with the project's own loader.

Profiles: `ci` (the default, 100 cases) and `long` (`HYPOTHESIS_PROFILE=long` or
`BPE_WORKBENCH_FUZZ=long`, 20 times as many). The cases tried are printed with `-s`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._bpe_helpers import examples
from tests._crafted_db import fresh_db, read_everything
from workbench.engine import formats
from workbench.store import StoreError

LONG = "long" in (os.environ.get("BPE_WORKBENCH_FUZZ"), os.environ.get("HYPOTHESIS_PROFILE"))
EXAMPLES = examples(1) * (20 if LONG and settings.default.max_examples < 1000 else 1)

COLUMNS = {
    "runs": ["id", "name", "created", "updated", "state", "pid", "owner", "corpus", "settings",
             "timings", "stats", "merge_count", "vocab_size", "stop_reason", "error"],
    "merges": ["run_id", "rank", "new_id", "left_id", "right_id", "token", "readable", "count",
               "length", "is_new", "ties", "corpus_tokens"],
    "top_pieces": ["run_id", "piece", "count"],
}  # fmt: skip
ODD = [
    None, 0, -1, 1, 255, 256, 2**31, 2**63 - 1, -(2**63), 0.5, 1e308, "", "x", "running",
    "[]", "{}", '{"pattern": 5}', '{"special_tokens": "abc"}', '{"special_tokens": ["", "a"]}',
    '{"pattern": "("}', '{"pattern": "\\\\p{Zz}"}', "[" * 5000, b"", b"\x00", b"ab", b"\xff" * 70_000,
]  # fmt: skip

odd_values = st.one_of(
    st.sampled_from(ODD),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.binary(max_size=40),
    st.text(max_size=40),
)
edits = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(sorted(COLUMNS)), st.integers(0, 25), odd_values),
    st.tuples(st.just("delete"), st.sampled_from(sorted(COLUMNS)), st.integers(0, 25)),
    st.tuples(st.just("drop"), st.sampled_from(sorted(COLUMNS))),
    st.tuples(st.just("version"), st.integers(-5, 10)),
)
byte_edits = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, 1 << 20)),
)
SEEN: Counter[str] = Counter()


def _apply(db: Path, changes: list[tuple], damage: list[tuple]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA ignore_check_constraints = 1")
    for change in changes:
        kind, *rest = change
        try:
            if kind == "set":
                table, row, value = rest
                column = COLUMNS[table][row % len(COLUMNS[table])]
                conn.execute(
                    f"UPDATE {table} SET {column} = ? WHERE rowid = "
                    f"(SELECT rowid FROM {table} LIMIT 1 OFFSET ?)",
                    [value, row % 7],
                )
            elif kind == "delete":
                table, row = rest
                conn.execute(
                    f"DELETE FROM {table} WHERE rowid = (SELECT rowid FROM {table} LIMIT 1 OFFSET ?)",
                    [row],
                )
            elif kind == "drop":
                conn.execute(f"DROP TABLE {rest[0]}")
                conn.execute(f"CREATE TABLE {rest[0]} (run_id, rank, x)")
            else:
                conn.execute(f"PRAGMA user_version = {rest[0]}")
        except sqlite3.Error:  # a constraint said no: that change is simply not made
            pass
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    if damage:
        data = bytearray(db.read_bytes())
        for kind, where, *value in damage:
            if kind == "flip" and len(data) > 100:  # past the header: SQLite's own checks
                data[100 + where % (len(data) - 100)] ^= value[0]
            elif kind == "cut":
                del data[where % max(1, len(data)) :]
        db.write_bytes(bytes(data))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(changes=st.lists(edits, max_size=4), damage=st.lists(byte_edits, max_size=2))
def test_crafted_databases_read_or_refuse_in_one_line(changes, damage):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-db-"))
    try:
        db = fresh_db(folder)
        _apply(db, changes, damage)
        out = folder / "out"
        try:
            read_everything(db, out)
            SEEN["read"] += 1
        except StoreError as exc:
            message = str(exc)
            assert "\n" not in message, message
            assert "runs.db" in message or message.startswith("no run with id"), message
            SEEN["refused"] += 1
        if (out / "tokenizer.json").exists():
            formats.load(out / "tokenizer.json")  # what was exported, the loader reads
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print(f"\nrun databases fuzzed: {dict(SEEN)}")
