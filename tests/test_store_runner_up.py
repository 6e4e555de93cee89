"""The merges table keeps each merge's runner-up count; databases from before it migrate, and
their runs read "not recorded" (None), never a count of 0."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_store import SMALL, make_batch

from workbench.store import SCHEMA_VERSION, RunStore, StoreError
from workbench.store.schema import MIGRATIONS, schema_version


def stored_runner_ups(db: Path, run_id: int) -> list[int | None]:
    with RunStore(db) as store:
        return [m.runner_up for m in store.merges(run_id, limit=100)]


def test_runner_ups_round_trip_and_not_computed_is_none(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    batch = replace(make_batch(0, SMALL[:4]), runner_up=np.array([990, 5, -1, 0], np.int64))
    with RunStore(db) as store:
        run_id = store.create_run("r")
        writer = store.writer(run_id)
        writer.write(batch)
        writer.write(make_batch(4, SMALL[4:6]))  # a source without the column
        writer.close()
    assert stored_runner_ups(db, run_id) == [990, 5, None, 0, None, None]


def test_old_database_migrates_and_its_runs_say_not_recorded(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for version, migrate in enumerate(MIGRATIONS[:2], start=1):  # the schema before runner_up
        migrate(conn)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute(
        "INSERT INTO runs (id, name, created, updated, state) VALUES (1, 'old', '', '', 'done')"
    )
    conn.execute(
        "INSERT INTO merges (run_id, rank, new_id, left_id, right_id, token, readable, count,"
        " length, is_new, ties) VALUES (1, 0, 256, 97, 98, x'6162', 'ab', 7, 2, 1, 0)"
    )
    conn.close()
    assert stored_runner_ups(db, 1) == [None]
    with sqlite3.connect(db) as conn:
        assert schema_version(conn) == SCHEMA_VERSION == 3


def test_a_current_database_without_the_column_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "crafted.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migrate in MIGRATIONS[:2]:
        migrate(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # says 3, lacks the column
    conn.close()
    with pytest.raises(StoreError, match="no column runner_up"):
        RunStore(db)
