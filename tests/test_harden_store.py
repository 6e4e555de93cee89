"""Run store errors become one line naming the database, never a traceback: another program's
SQLite file, a folder that cannot be made, a damaged file, ids SQLite cannot hold, negative
counts, read-only databases, and a full disk whose real reason must not be lost."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.store import RunStore, StoreError
from workbench.store import connection as store_connection
from workbench.store import writer as store_writer
from workbench.store.synthetic import synthetic_batches


def _store_with_runs(db: Path, merges: int = 0, runs: int = 1) -> list[int]:
    ids = []
    with RunStore(db) as store:
        for i in range(runs):
            run_id = store.create_run(f"run {i}", settings={"vocab_size": 300})
            ids.append(run_id)
            if merges:
                with store.writer(run_id) as writer:
                    for batch in synthetic_batches(merges, batch_size=500, seed=i):
                        writer.write(batch)
                    writer.set_state("done")
    return ids


def test_another_programs_database_with_a_runs_table(tmp_path, capsys):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (when_ TEXT, km REAL)")
        conn.execute("INSERT INTO runs VALUES ('today', 5.2)")
    for args in (["runs", "list"], ["runs", "show", "1"], ["runs", "delete", "1"]):
        code, _, err = run_cli(capsys, *args, "--db", str(db))
        assert_one_line_error(code, err, "not a BPE Workbench run database", "runs")
    with pytest.raises(StoreError, match="not a BPE Workbench"):
        RunStore(db)
    with sqlite3.connect(db) as conn:  # left as it was
        assert conn.execute("SELECT * FROM runs").fetchall() == [("today", 5.2)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0


def test_a_file_that_is_not_sqlite(tmp_path, capsys):
    db = tmp_path / "notes.db"
    db.write_text("just some notes, not a database\n" * 100)
    for args in (["runs", "list"], ["runs", "delete", "1"]):
        code, _, err = run_cli(capsys, *args, "--db", str(db))
        assert_one_line_error(code, err, "notes.db")


def test_a_database_whose_folder_cannot_be_made(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    db = tmp_path / "file" / "sub" / "runs.db"
    code, _, err = run_cli(capsys, "runs", "delete", "1", "--db", str(db))
    assert_one_line_error(code, err, "cannot make the run database's folder")
    with pytest.raises(StoreError, match="cannot make"):
        RunStore(db)
    code, out, err = run_cli(capsys, "runs", "list", "--db", str(db))
    assert (code, out.strip(), err) == (0, "no runs yet", "")


def test_train_into_a_database_whose_folder_cannot_be_made(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words some words", encoding="utf-8")
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "260", "--out",
                           str(tmp_path / "out"), "--db", str(tmp_path / "file" / "runs.db"))  # fmt: skip
    assert_one_line_error(code, err, "runs.db")


def _damage(db: Path) -> None:
    """Overwrite every page but the first (the header and schema) with garbage."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for start in range(2 * page, len(data), page):
        data[start : start + page] = b"\xa5" * page
    db.write_bytes(bytes(data))


def test_delete_and_show_on_a_damaged_database(tmp_path, capsys):
    db = tmp_path / "runs.db"
    _store_with_runs(db, merges=3000, runs=2)
    _damage(db)
    for args in (["delete", "1", "-y"], ["show", "2"], ["export", "1", "--format", "hf",
                 "--out", str(tmp_path / "out")]):  # fmt: skip
        code, _, err = run_cli(capsys, "runs", *args, "--db", str(db))
        assert_one_line_error(code, err, "runs.db")
    code, _, err = run_cli(capsys, "runs", "list", "--db", str(db))
    assert code == 0 or (code == 1 and len(err.splitlines()) == 1)  # the runs table may be whole


@pytest.mark.parametrize("run_id", [str(2**63), str(2**64 + 1), "0", "-1", str(-(2**63) - 1)])
def test_ids_sqlite_cannot_hold(tmp_path, capsys, run_id):
    db = tmp_path / "runs.db"
    _store_with_runs(db)
    for action in ("show", "delete", "export"):
        extra = ["--format", "hf", "--out", str(tmp_path / "o")] if action == "export" else []
        code, _, err = run_cli(capsys, "runs", action, run_id, "--db", str(db), *extra)
        assert_one_line_error(code, err, f"no run with id {run_id}")


def test_show_with_a_negative_merge_count(tmp_path, capsys):
    db = tmp_path / "runs.db"
    _store_with_runs(db, merges=50)
    code, out, err = run_cli(capsys, "runs", "show", "1", "--merges", "-5", "--db", str(db))
    assert_one_line_error(code, err, "--merges must be 0 or more")
    assert out == ""
    with RunStore(db) as store, pytest.raises(StoreError, match="0 or more"):
        store.merges(1, limit=-5)
    code, out, _ = run_cli(capsys, "runs", "show", "1", "--merges", "3", "--db", str(db))
    assert code == 0 and "first 3 merges" in out


def test_reading_commands_open_the_database_read_only(tmp_path, capsys):
    db = tmp_path / "runs.db"
    _store_with_runs(db, merges=20)
    with sqlite3.connect(db) as conn:  # a run whose process is long gone, never marked
        conn.execute(
            "INSERT INTO runs (name, created, updated, state, pid, owner) "
            "VALUES ('crashed', 'x', 'x', 'running', 999999999, ?)",
            [f"{socket.gethostname()}/999999999/0"],
        )
    before = db.read_bytes()
    code, out, err = run_cli(capsys, "runs", "list", "--db", str(db))
    assert code == 0, err
    assert "interrupted" in out.splitlines()[1]  # shown as interrupted ...
    code, out, err = run_cli(capsys, "runs", "show", "2", "--db", str(db))
    assert code == 0 and '"state": "interrupted"' in out
    assert db.read_bytes() == before  # ... without writing a byte
    with RunStore(db, read_only=True) as store, pytest.raises(StoreError, match="readonly"):
        store.rename(1, "new name")  # query_only: nothing can be written through it


def test_read_only_store_refuses_an_old_schema(tmp_path):
    db = tmp_path / "runs.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 0")
    with pytest.raises(StoreError, match="needs an upgrade"):
        # An empty file has schema 0: it must be migrated, which a reader cannot do.
        RunStore(db, read_only=True)
    with pytest.raises(StoreError, match="no run database here"):
        RunStore(tmp_path / "missing.db", read_only=True)


# -- a full disk ------------------------------------------------------------------------------


def test_full_disk_while_writing_merges(tmp_path):
    db = tmp_path / "runs.db"
    (run_id,) = _store_with_runs(db)
    writer = RunStore(db).writer(run_id)
    pages = writer.conn.execute("PRAGMA page_count").fetchone()[0]
    writer.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk fills up now
    batches = synthetic_batches(20_000, batch_size=5000)
    with pytest.raises(StoreError, match="full") as info:
        for batch in batches:
            writer.write(batch)
    assert "rollback" not in str(info.value) and "\n" not in str(info.value)
    writer.close()
    with RunStore(db) as store:  # what was committed is whole: a gap-free prefix
        count = store.merge_count(run_id)
        assert count % 5000 == 0
        assert [m.rank for m in store.merges(run_id, limit=10**6)] == list(range(count))


class _AutoRollback(sqlite3.Connection):
    """A connection whose inserts fail as on a full disk, after SQLite has already rolled the
    transaction back itself (so a second ROLLBACK fails with "no transaction is active")."""

    def executemany(self, sql, rows):  # type: ignore[override]
        if sql.lstrip().upper().startswith("INSERT INTO MERGES"):
            super().execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return super().executemany(sql, rows)


def test_the_real_error_survives_a_failed_rollback(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    (run_id,) = _store_with_runs(db)

    def connect(path, read_only=False):
        conn = sqlite3.connect(path, isolation_level=None, factory=_AutoRollback)
        return store_connection.configure(conn)

    monkeypatch.setattr(store_writer, "connect", connect)
    writer = store_writer.RunWriter(db, run_id)
    with pytest.raises(StoreError, match="database or disk is full"):
        writer.write(next(synthetic_batches(10)))
    writer.close()
