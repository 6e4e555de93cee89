"""The run database deleted, replaced or made read-only while a run trains (issue 33): the run
ends with one line naming the file and a nonzero status, never "run #1 (... runs show 1)" for a
run the store no longer holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import workbench
from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.session.run import RunSession
from workbench.store import RunStore, StoreError
from workbench.store import writer as store_writer

WARMUP = "preparing the fast kernels"  # a first start's notice, not an error line


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest newer newest wider widest\n" * 200, encoding="utf-8")
    return corpus


def _after_first_write(monkeypatch, action) -> None:
    """Run `action()` once, right after the first batch of merges is stored."""
    real = store_writer.RunWriter.write
    done: list[bool] = []

    def write(self, batch):
        real(self, batch)
        if not done:
            done.append(True)
            action()

    monkeypatch.setattr(store_writer.RunWriter, "write", write)


def _train(capsys, tmp_path: Path, db: Path) -> tuple[int, str, str]:
    code, out, err = run_cli(capsys, "train", str(_corpus(tmp_path)), "--vocab-size", "300",
                             "--out", str(tmp_path / "out"), "--db", str(db))  # fmt: skip
    err = "\n".join(line for line in err.splitlines() if not line.startswith(WARMUP))
    return code, out, err


def test_database_deleted_while_training(tmp_path, capsys, monkeypatch):
    db = tmp_path / "runs.db"
    _after_first_write(monkeypatch, lambda: [p.unlink() for p in tmp_path.glob("runs.db*")])
    code, out, err = _train(capsys, tmp_path, db)
    assert_one_line_error(code, err, "runs.db", "deleted or replaced")
    assert "run #" not in out and "runs show" not in out


def test_database_replaced_while_training(tmp_path, capsys, monkeypatch):
    db = tmp_path / "runs.db"

    def replace() -> None:
        for p in tmp_path.glob("runs.db*"):
            p.unlink()
        RunStore(db).close()  # a new, empty database under the same name

    _after_first_write(monkeypatch, replace)
    code, out, err = _train(capsys, tmp_path, db)
    assert_one_line_error(code, err, "runs.db", "deleted or replaced")
    assert "run #" not in out
    with RunStore(db, read_only=True) as store:
        assert store.list_runs() == []


def test_database_made_read_only_while_training(tmp_path, capsys, monkeypatch):
    db = tmp_path / "runs.db"
    _after_first_write(monkeypatch, lambda: db.chmod(0o444))
    code, out, err = _train(capsys, tmp_path, db)
    assert_one_line_error(code, err, "runs.db", "read-only")
    assert "run #" not in out
    db.chmod(0o644)
    with RunStore(db) as store:  # what was stored before stays, marked as it stood
        (run,) = store.list_runs()
        assert run.merge_count > 0


def test_database_deleted_after_the_last_merge(tmp_path, capsys, monkeypatch):
    db = tmp_path / "runs.db"
    real_export = RunSession.export

    def export(self, formats, out):
        for p in tmp_path.glob("runs.db*"):
            p.unlink()
        return real_export(self, formats, out)

    monkeypatch.setattr(RunSession, "export", export)
    code, out, err = _train(capsys, tmp_path, db)
    assert_one_line_error(code, err, "runs.db", "deleted or replaced")
    assert "run #" not in out


def test_api_raises_when_the_database_goes(tmp_path):
    db = tmp_path / "runs.db"

    def gone(_batch) -> None:
        if db.exists():
            os.unlink(db)

    with pytest.raises(StoreError, match="deleted or replaced"):
        workbench.train(["a b c d e f " * 50, "ab ab cd cd"], 280, db=db, on_merge_batch=gone)


def test_a_run_that_keeps_its_database_still_reports_it(tmp_path, capsys):
    code, out, err = _train(capsys, tmp_path, tmp_path / "runs.db")
    assert code == 0, err
    assert "run              #1 (bpe-workbench runs show 1)" in out
