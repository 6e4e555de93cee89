"""Crafted run databases (issue 33): a foreign schema, values of the wrong type, huge blobs,
missing rows, ids out of range. Every read path (`runs list/show/export`, `eval run:ID`, the
store calls the window makes) refuses in one line naming the file, and `runs export` never
writes a tokenizer file the project's own loader rejects."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests._crafted_db import fresh_db, read_everything
from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine import formats
from workbench.store import RunStore, StoreError

BIG = 20 << 20  # a 20 MB value

# (case, SQL run on a good database). Each leaves a file SQLite opens and our schema check
# passes, so the refusal must come from reading the values.
CASES = {
    "name is a blob": ["UPDATE runs SET name = x'00ff'"],
    "name is a 20 MB text": [f"UPDATE runs SET name = printf('%.{BIG}c', 'x')"],
    "state unknown": ["PRAGMA ignore_check_constraints = 1", "UPDATE runs SET state = 'zzz'"],
    "created is a blob": ["UPDATE runs SET created = x'00ff'"],
    "merge_count is text": ["UPDATE runs SET merge_count = 'many'"],
    "settings not JSON": ["UPDATE runs SET settings = '{not json'"],
    "settings a JSON list": ["UPDATE runs SET settings = '[1, 2]'"],
    "settings nested deep": [f"UPDATE runs SET settings = '{'[' * 100_000}'"],
    "specials a bare string": [
        "UPDATE runs SET settings = json_set(settings, '$.special_tokens', 'abc')"
    ],
    "specials of numbers": [
        "UPDATE runs SET settings = json_set(settings, '$.special_tokens', json('[1, 2]'))"
    ],  # fmt: skip
    "pattern a number": ["UPDATE runs SET settings = json_set(settings, '$.pattern', 7)"],
    "pattern not a regex": ["UPDATE runs SET settings = json_set(settings, '$.pattern', '(')"],
    "token is text": ["UPDATE merges SET token = 'ab' WHERE rank = 3"],
    "token is NULL": [
        "PRAGMA ignore_check_constraints = 1",
        "UPDATE merges SET token = x'' WHERE rank = 3",
    ],  # fmt: skip
    "token not its parts": ["UPDATE merges SET token = x'414243' WHERE rank = 3"],
    "token a 20 MB blob": [f"UPDATE merges SET token = zeroblob({BIG}) WHERE rank = 5"],
    "left_id text": ["UPDATE merges SET left_id = 'a' WHERE rank = 2"],
    "left_id out of range": ["UPDATE merges SET left_id = 1000000000000 WHERE rank = 2"],
    "new_id negative": ["UPDATE merges SET new_id = -1 WHERE rank = 0"],
    "rank a float": ["UPDATE merges SET rank = 2.5 WHERE rank = 2"],
    "a merge missing": ["DELETE FROM merges WHERE rank = 4"],
    "a pair twice": [
        "UPDATE merges SET left_id = (SELECT left_id FROM merges WHERE rank = 0), "
        "right_id = (SELECT right_id FROM merges WHERE rank = 0), "
        "token = (SELECT token FROM merges WHERE rank = 0) WHERE rank = 1"
    ],  # fmt: skip
    "one id two tokens": ["UPDATE merges SET new_id = 256 WHERE rank = 1"],
    "count is text": ["UPDATE merges SET count = 'lots' WHERE rank = 0"],
    "top piece text": ["UPDATE top_pieces SET piece = CAST(piece AS TEXT)"],
    "foreign merges table": [
        "DROP TABLE merges",
        "CREATE TABLE merges (run_id, rank, stuff)",
        "INSERT INTO merges VALUES (1, 0, 'x')",
    ],  # fmt: skip
    "runs without a column": ["ALTER TABLE runs DROP COLUMN stop_reason"],
    "foreign runs table": [
        "DROP TABLE runs",
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, what)",
        "INSERT INTO runs VALUES (1, 'x')",
    ],  # fmt: skip
}

WINDOW_ONLY = {"top piece text"}  # the corpus panel reads top pieces; no command does


def _craft(tmp_path: Path, statements: list[str]) -> Path:
    db = fresh_db(tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    for sql in statements:
        conn.execute(sql)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


def _hf_loads(out: Path) -> bool:
    """Whether `out` holds a tokenizer.json the project's own loader reads (absent: False)."""
    if not (out / "tokenizer.json").exists():
        return False
    formats.load(out / "tokenizer.json")  # raises if a bad one was written
    return True


@pytest.mark.parametrize("case", list(CASES))
def test_crafted_database_is_refused_in_one_line(tmp_path, capsys, case):
    db = _craft(tmp_path, CASES[case])
    refused = 0
    out = tmp_path / "out"
    for args in (
        ["runs", "list"],
        ["runs", "show", "1"],
        ["runs", "export", "1", "--format", "hf", "--out", str(out)],
        ["runs", "export", "1", "--format", "tiktoken", "--out", str(tmp_path / "tk")],
        ["runs", "continue", "1", "--vocab-size", "400"],
    ):
        code, _, err = run_cli(capsys, *args, "--db", str(db))
        if args[1] == "continue":  # a run trained on documents cannot go on: that may be why
            assert code == 0 or assert_one_line_error(code, err) is None
        elif code != 0:
            assert_one_line_error(code, err, "runs.db")
            refused += 1
    assert refused or case in WINDOW_ONLY, "every command accepted the crafted database"
    _hf_loads(out)  # whatever was exported, the loader reads it
    with pytest.raises(StoreError, match="runs.db"):
        read_everything(db, tmp_path / "again")


def test_eval_of_a_crafted_run_is_one_line(tmp_path, capsys):
    db = _craft(tmp_path, CASES["token not its parts"])
    text = tmp_path / "t.txt"
    text.write_text("lower newest\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", str(text), "--tokenizer", "run:1", "--db", str(db))
    assert_one_line_error(code, err, "runs.db", "run 1")


def test_eval_run_on_a_read_only_database(tmp_path, capsys):
    db = fresh_db(tmp_path)
    text = tmp_path / "t.txt"
    text.write_text("lower newest\n", encoding="utf-8")
    db.chmod(0o444)
    tmp_path.chmod(0o555)  # no -wal or -shm can be made beside it either
    try:
        code, out, err = run_cli(capsys, "eval", str(text), "--tokenizer", "run:1", "--db", str(db))
    finally:
        tmp_path.chmod(0o755)
    assert code == 0, err
    assert "bytes_per_token" in out and err == ""


def test_the_good_database_reads_and_exports(tmp_path, capsys):
    db = fresh_db(tmp_path)
    read_everything(db, tmp_path / "out")
    assert _hf_loads(tmp_path / "out")
    with RunStore(db, read_only=True) as store:
        assert store.merge_count(1) == 20


@pytest.mark.parametrize(
    "change",
    [
        "json_set(settings, '$.special_tokens', 'abc')",
        "json_set(settings, '$.tie_break', 5)",
        "json_set(settings, '$.min_frequency', 'lots')",
    ],
)
def test_continue_of_a_run_with_crafted_settings_is_one_line(tmp_path, capsys, change):
    import workbench

    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest newer newest\n" * 50, encoding="utf-8")
    db = tmp_path / "runs.db"
    workbench.train([corpus], 270, db=db)
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE runs SET settings = {change}")
    code, _, err = run_cli(capsys, "runs", "continue", "1", "--vocab-size", "400", "--db", str(db))
    assert_one_line_error(code, err, "run 1")


def test_eval_of_a_sweep_with_a_crafted_index(tmp_path, capsys):
    sweep = 'json_set(settings, \'$.sweep\', json(\'{"id": "s1", "index": %s}\'))'
    db = _craft(
        tmp_path,
        [
            f"UPDATE runs SET settings = {sweep % 1}",
            "INSERT INTO runs (name, created, updated, state, settings, merge_count, vocab_size) "
            "SELECT 'copy', created, updated, 'done', settings, 0, 256 FROM runs WHERE id = 1",
            "UPDATE runs SET settings = " + sweep % '"first"' + " WHERE id = 2",
        ],
    )
    text = tmp_path / "t.txt"
    text.write_text("lower newest\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", str(text), "--tokenizer", "sweep:s1", "--db", str(db))
    assert code == 0 and err == "", err
    assert "bytes_per_token" in out
