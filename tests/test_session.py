"""The run session with no Qt: train, pause, step, stop, continue, delete while live, Ctrl-C.

Each path must end the run in the right state with a gap-free prefix of the full run's merges in
the store, which is what a person reopening the run later relies on.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workbench.engine.pretokenize.counting import count_corpus

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.session import RunState, StopReason, describe
from workbench.session.counting import count_documents, count_paths
from workbench.session.run import RunDeleted, RunSession
from workbench.store import RunStore


def _text() -> str:
    """Varied enough words that 420 tokens are reachable: about 2,000 pseudo-words."""
    rng = random.Random(7)
    words = ["".join(rng.choices("etaoinshrdlucmfwyp", k=rng.randint(2, 9))) for _ in range(400)]
    lines = [" ".join(rng.choices(words, k=12)) + ", naïve café 東京 12345.\n" for _ in range(160)]
    return "".join(lines)


TEXT = _text()
CONFIG = TrainConfig(vocab_size=420)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def full_merges(corpus: Path) -> list[tuple[bytes, bytes]]:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG)
    session.advance()
    return session.merges()


def stored(db: Path, run_id: int):
    with RunStore(db) as store:
        return store.get_run(run_id), store.merges_as_pairs(run_id)


def after(n: int):
    """A stop check that asks to pause once `n` batches have been announced."""
    seen = []

    def listener(batch) -> None:
        seen.append(batch)

    def check():
        return StopReason.PAUSED if len(seen) >= n else None

    return listener, check


def test_train_to_the_end_is_done_with_every_merge(corpus: Path, db: Path) -> None:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    assert session.advance() is StopReason.VOCAB_SIZE
    session.end()
    run, merges = stored(db, session.run_id)
    assert run.state == RunState.DONE and run.stop_reason == StopReason.VOCAB_SIZE
    assert merges == full_merges(corpus)
    assert run.vocab_size == CONFIG.vocab_size
    assert set(run.timings) >= {"pretokenize", "index", "merge"}
    assert describe(run.stop_reason) == "reached vocabulary size"


def test_pause_step_resume_gives_the_same_merges(corpus: Path, db: Path) -> None:
    listener, check = after(1)
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db, listeners=[listener])
    assert session.advance(should_stop=check, batch_seconds=None, max_merges=30) in (
        StopReason.PAUSED,
        StopReason.STEPPED,
    )
    run, merges = stored(db, session.run_id)
    assert run.state == RunState.PAUSED
    assert merges == full_merges(corpus)[: len(merges)] and len(merges) == 30
    assert session.advance(max_merges=5) is StopReason.STEPPED
    assert stored(db, session.run_id)[0].merge_count == 35
    assert session.advance() is StopReason.VOCAB_SIZE
    session.end()
    run, merges = stored(db, session.run_id)
    assert run.state == RunState.DONE and merges == full_merges(corpus)


def test_stop_while_paused_is_done_stopped(corpus: Path, db: Path) -> None:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    session.advance(max_merges=10)
    session.stop()
    run, merges = stored(db, session.run_id)
    assert (run.state, run.stop_reason) == (RunState.DONE, StopReason.STOPPED)
    assert merges == full_merges(corpus)[:10]
    assert not session.can_continue
    with pytest.raises(WorkbenchError, match="has ended"):
        session.advance()


def test_stop_check_ends_the_run_as_stopped(corpus: Path, db: Path) -> None:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    reason = session.advance(should_stop=lambda: StopReason.STOPPED, batch_seconds=None)
    assert reason is StopReason.STOPPED
    run, merges = stored(db, session.run_id)
    assert (run.state, run.stop_reason) == (RunState.DONE, StopReason.STOPPED)
    assert merges == full_merges(corpus)[: len(merges)]


def test_ending_a_paused_run_records_it_interrupted(corpus: Path, db: Path) -> None:
    with RunSession.start(count_paths([corpus], CONFIG), CONFIG, db) as session:
        session.advance(max_merges=7)
    run, merges = stored(db, session.run_id)
    assert run.state == RunState.INTERRUPTED and len(merges) == 7


def test_a_finished_run_stays_done_when_ended(corpus: Path, db: Path) -> None:
    """The window's Ctrl+Q after a run reached its size: done, not interrupted."""
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    session.advance()
    session.end()
    session.end()  # twice is harmless
    assert stored(db, session.run_id)[0].state == RunState.DONE


def test_keyboard_interrupt_mid_merge_is_interrupted_with_a_prefix(corpus: Path, db: Path) -> None:
    def interrupt(batch) -> None:
        if batch.end_rank >= 20:
            raise KeyboardInterrupt

    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db, listeners=[interrupt])
    with pytest.raises(KeyboardInterrupt):
        session.advance(batch_seconds=None, max_merges=20)
        session.advance(max_merges=1)
    run, merges = stored(db, session.run_id)
    assert (run.state, run.stop_reason) == (RunState.INTERRUPTED, StopReason.INTERRUPTED)
    assert merges == full_merges(corpus)[: len(merges)] and len(merges) >= 20


def test_an_error_mid_run_is_failed_with_its_message(corpus: Path, db: Path) -> None:
    def explode(batch) -> None:
        raise RuntimeError("disk on fire")

    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db, listeners=[explode])
    with pytest.raises(RuntimeError):
        session.advance()
    run, merges = stored(db, session.run_id)
    assert run.state == RunState.FAILED and run.error == "disk on fire"
    assert merges == full_merges(corpus)[: len(merges)] and merges


def test_deleting_a_live_run_is_refused_while_it_trains(corpus: Path, db: Path) -> None:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    session.advance(max_merges=5)  # paused: still live
    with RunStore(db) as store, pytest.raises(WorkbenchError, match="still paused"):
        store.delete(session.run_id)
    session.end()


def test_deleting_a_finished_run_then_growing_it_ends_cleanly(corpus: Path, db: Path) -> None:
    """The window's repro: run done, delete it in the Runs tab, press +1."""
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    session.advance()
    with RunStore(db) as store:
        store.delete(session.run_id)
    with pytest.raises(RunDeleted):
        session.advance(target_vocab_size=CONFIG.vocab_size + 1, max_merges=1)
    assert session.ended and not session.can_continue
    session.end()  # nothing left to record, and no error
    with RunStore(db) as store:
        assert store.list_runs() == []
        orphans = store.conn.execute("SELECT count(*) FROM merges").fetchone()[0]
    assert orphans == 0


def test_resume_a_stored_run_continues_exactly(corpus: Path, db: Path) -> None:
    small = TrainConfig(vocab_size=330)
    session = RunSession.start(count_paths([corpus], small), small, db)
    session.advance()
    session.end()
    resumed = RunSession.resume(db, session.run_id, count_corpus, CONFIG.vocab_size)
    assert resumed.advance() is StopReason.VOCAB_SIZE
    resumed.end()
    run, merges = stored(db, session.run_id)
    assert merges == full_merges(corpus)
    assert run.state == RunState.DONE and run.vocab_size == CONFIG.vocab_size


def test_resume_refuses_a_changed_corpus_and_a_smaller_vocab(corpus: Path, db: Path) -> None:
    session = RunSession.start(count_paths([corpus], CONFIG), CONFIG, db)
    session.advance()
    session.end()
    with pytest.raises(WorkbenchError, match="already has"):
        RunSession.resume(db, session.run_id, count_corpus, 300)
    corpus.write_text(TEXT + "more", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="changed"):
        RunSession.resume(db, session.run_id, count_corpus, 500)


def test_documents_and_files_count_alike(corpus: Path) -> None:
    from_files = count_paths([corpus], CONFIG)
    from_texts = count_documents([TEXT], CONFIG)
    for key in ("documents", "bytes", "pieces", "unique_pieces"):
        assert getattr(from_files.stats, key) == getattr(from_texts.stats, key)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_cli_train_ends_interrupted_without_traceback(
    tmp_path: Path, db: Path, sig: int
) -> None:
    big = tmp_path / "big.txt"
    # Unique words keep the merge loop busy long enough for the signal to land mid-run.
    big.write_text(
        " ".join(f"w{i:x}q{i * 7919 % 100003:x}" for i in range(200_000)), encoding="utf-8"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "train", str(big), "--vocab-size", "60000",
         "--out", str(tmp_path / "out"), "--db", str(db), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    run = None
    while time.monotonic() < deadline:  # wait until merges are being stored
        if db.exists():
            with RunStore(db) as store:
                runs = store.list_runs()
            if runs and runs[0].merge_count > 0:
                run = runs[0]
                break
        time.sleep(0.05)
    assert run is not None, "the run never started storing merges"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "Traceback" not in err and "SystemError" not in err
    assert err.strip() == "bpe-workbench: interrupted"
    with RunStore(db) as store:
        final = store.get_run(run.id)
        merges = store.merges_as_pairs(run.id)
    assert (final.state, final.stop_reason) == (RunState.INTERRUPTED, StopReason.INTERRUPTED)
    assert len(merges) == final.merge_count > 0
