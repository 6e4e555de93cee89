"""Out of memory while training (issue 33): under an address-space cap (RLIMIT_AS) or any
MemoryError, the command says `out of memory while <stage>` in one line with exit status 1, and
a run already recorded is marked failed with the merges it had stored."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from tests._capped import MB, run_capped
from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.cli import train as cli_train
from workbench.session.run import RunSession
from workbench.store import RunStore

WARMUP = "preparing the fast kernels"


def _corpus(path: Path, words: int, seed: int = 3) -> Path:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(words)]
    path.write_text(" ".join(vocab * 3), encoding="utf-8")
    return path


def test_memory_error_while_merging_keeps_the_stored_merges(tmp_path, capsys, monkeypatch):
    corpus = _corpus(tmp_path / "c.txt", 3000)
    db = tmp_path / "runs.db"
    real_write = RunSession._write

    def write(self, batch):
        real_write(self, batch)  # the first batch is stored, then memory runs out
        raise MemoryError

    monkeypatch.setattr(RunSession, "_write", write)
    code, out, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "5000", "--out",
                             str(tmp_path / "out"), "--db", str(db))  # fmt: skip
    err = "\n".join(x for x in err.splitlines() if not x.startswith(WARMUP))
    assert_one_line_error(code, err, "out of memory while merging", "kept in run 1")
    assert code == 1 and "run #" not in out
    with RunStore(db) as store:
        (run,) = store.list_runs()
        assert run.state == "failed" and "out of memory while merging" in (run.error or "")
        kept = store.merge_count(run.id)
        assert kept > 0 and f"after {kept:,} merges" in err


def test_sqlite_out_of_memory_while_merging_is_said_as_such(tmp_path, capsys, monkeypatch):
    """Under an address-space cap SQLite may be the first to fail: mapping the write-ahead log's
    shared memory, which it reports as "disk I/O error" (SQLITE_IOERR_SHMMAP). The user is told
    memory ran out, and the run keeps its stored merges, as for any MemoryError."""
    from workbench.store.connection import as_store_error

    corpus = _corpus(tmp_path / "c.txt", 3000)
    db = tmp_path / "runs.db"
    real_write = RunSession._write

    def write(self, batch):
        real_write(self, batch)
        error = sqlite3.OperationalError("disk I/O error")
        error.sqlite_errorname = "SQLITE_IOERR_SHMMAP"
        raise as_store_error(db, error)

    monkeypatch.setattr(RunSession, "_write", write)
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "5000", "--out",
                           str(tmp_path / "out"), "--db", str(db))  # fmt: skip
    err = "\n".join(x for x in err.splitlines() if not x.startswith(WARMUP))
    assert_one_line_error(code, err, "out of memory while merging", "kept in run 1")
    assert "disk I/O" not in err
    with RunStore(db) as store:
        (run,) = store.list_runs()
        assert run.state == "failed" and "out of memory while merging" in (run.error or "")


def test_other_sqlite_errors_keep_their_words():
    from workbench.store.connection import as_store_error
    from workbench.store.errors import StoreOutOfMemory

    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_WRITE"
    said = as_store_error("runs.db", error)
    assert not isinstance(said, MemoryError) and str(said) == "runs.db: disk I/O error"
    error.sqlite_errorname = "SQLITE_NOMEM"
    assert isinstance(as_store_error("runs.db", error), StoreOutOfMemory)


def test_a_memory_error_no_stage_names_is_still_one_line(tmp_path, capsys, monkeypatch):
    corpus = _corpus(tmp_path / "c.txt", 100)

    def broken(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cli_train, "_summary", broken)
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "300", "--out",
                           str(tmp_path / "out"), "--no-db", "--quiet")  # fmt: skip
    assert_one_line_error(code, err, "out of memory while running train")
    assert code == 1


PREPARE = """
import os
from workbench.cli import main
main(["train", r"{warm}", "--vocab-size", "270", "--out", r"{out}", "--no-db", "--quiet"])
"""
WORK = """
import contextlib, io
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    answer["code"] = main(["train", r"{corpus}", "--vocab-size", "60000", "--out", r"{out}",
                           "--db", r"{db}", "--quiet", "--workers", "1"])
answer["err"] = err.getvalue()
"""


def _capped_run(tmp_path: Path, extra: int) -> tuple[dict, Path]:
    warm = _corpus(tmp_path / "warm.txt", 200, seed=1)
    corpus = _corpus(tmp_path / "big.txt", 400_000)  # ~3 MB of unique words, many pairs
    db = tmp_path / f"runs{extra}.db"
    answer = run_capped(
        PREPARE.format(warm=warm, out=tmp_path / "w"),
        WORK.format(corpus=corpus, out=tmp_path / "out", db=db),
        extra,
    )
    return answer, db


def _train_capped(tmp_path: Path, extra: int) -> tuple[dict, Path]:
    answer, db = _train_capped_checked(*_capped_run(tmp_path, extra))
    print(answer["err"].strip(), f"(peak rss {answer['rss'] / MB:.0f} MB)")
    return answer, db


def _ran_out_early(answer: dict) -> bool:
    """An attempt that ran out before merging: while opening the run database (one line, as
    it should be), or inside the interpreter itself (CPython's "error return without exception
    set", a SystemError from a C call that failed to allocate)."""
    if answer["kind"] == "error":
        return answer.get("type") == "SystemError"
    return answer["kind"] == "ok" and "while recording the run" in answer.get("err", "")


def test_training_under_an_address_space_cap_keeps_its_merges(tmp_path):
    # 160 MB more than a warmed-up process: counting fits, the merge loop's tables do not. How
    # much address space the counting's threads leave reserved (glibc arenas) varies run to
    # run, so now and then memory runs out a step early (`_ran_out_early`): at 160 MB that was
    # 2-3 tries in 4 on a loaded machine (at 082987c as after it), so up to six tries to merging.
    for attempt in range(6):
        (tmp_path / str(attempt)).mkdir()
        answer, db = _capped_run(tmp_path / str(attempt), 160 * MB)
        if not _ran_out_early(answer):
            break
    answer, db = _train_capped_checked(answer, db)
    assert "out of memory while merging (after " in answer["err"]
    with sqlite3.connect(db) as conn:
        ((state, error, merges),) = conn.execute("SELECT state, error, merge_count FROM runs")
        stored = conn.execute("SELECT count(*) FROM merges").fetchone()[0]
    assert state == "failed" and "out of memory while merging" in error
    assert merges == stored > 0 and f"after {stored:,} merges" in answer["err"]


def _train_capped_checked(answer: dict, db: Path) -> tuple[dict, Path]:
    """The command's answer under the cap: no MemoryError escaped it, one line, exit status 1."""
    assert answer["kind"] == "ok", answer
    lines = answer["err"].strip().splitlines()
    assert answer["code"] == 1 and len(lines) == 1, answer
    assert lines[0].startswith("bpe-workbench: out of memory while"), answer
    return answer, db


def test_counting_under_a_tighter_cap_ends_in_one_line(tmp_path):
    answer, db = _train_capped(tmp_path, 48 * MB)
    assert "out of memory while counting the corpus" in answer["err"]
