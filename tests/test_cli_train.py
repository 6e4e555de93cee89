"""`bpe-workbench train` as a user runs it: files written, run recorded, bad input, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from _bpe_helpers import trained

from workbench.engine.byte_mapping import to_mapped
from workbench.engine.config import TrainConfig
from workbench.store import RunStore


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, **kw
    )


def read_merges_txt(path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#version: 0.2" and all(lines)
    return [tuple(line.split(" ")) for line in lines[1:]]


def test_train_writes_gpt2_files_and_records_every_merge(corpora, tmp_path):
    out, db = tmp_path / "out", tmp_path / "runs.db"
    proc = cli(
        "train", str(corpora / "taylorswift.txt"), "--vocab-size", "700", "--out", str(out),
        "--special", "<|endoftext|>", "--db", str(db),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for word in ("documents", "pre-tokens", "unique", "merges", "time merge"):
        assert word in proc.stdout
    merges = read_merges_txt(out / "merges.txt")
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    assert len(merges) == 700 - 256 - 1 and len(vocab) == 700
    assert vocab["<|endoftext|>"] == 699
    with RunStore(db) as store:
        (run,) = store.list_runs()
        assert run.state == "done"
        stored = store.merges(run.id, after_rank=-1, limit=10_000)
        assert [m.rank for m in stored] == list(range(len(merges)))
        assert [(to_mapped(a), to_mapped(b)) for a, b in store.merges_as_pairs(run.id)] == merges


@pytest.mark.parametrize(
    "content, message", [(b"\x00\x00binary", "binary"), (b"fine\n\xff", "invalid UTF-8")]
)
def test_bad_input_is_one_line_and_exit_1(tmp_path, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    proc = cli("train", str(bad), "--vocab-size", "300", "--out", str(tmp_path / "o"), "--no-db")
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr
    # One line for the error; with a cold kernel cache a first start's notice may come first.
    lines = proc.stderr.strip().splitlines()
    assert len([line for line in lines if not line.startswith("preparing the fast kernels")]) == 1


def test_vocab_below_alphabet_is_refused(tmp_path, corpora):
    proc = cli("train", str(corpora / "german.txt"), "--vocab-size", "100", "--out", str(tmp_path))
    assert proc.returncode == 2 and "below the alphabet" in proc.stderr


def test_sigkill_mid_training_leaves_a_consistent_prefix(corpora, tmp_path):
    corpus = corpora / "tinyshakespeare.txt"
    db = tmp_path / "runs.db"
    vocab = 20_000
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "train", str(corpus), "--vocab-size", str(vocab),
         "--out", str(tmp_path / "out"), "--db", str(db), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    stored = 0
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=0.1) as conn:
                        stored = conn.execute("select count(*) from merges").fetchone()[0]
                except sqlite3.OperationalError:
                    stored = 0
            if stored > 200:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "training finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
    with RunStore(db) as store:
        (run,) = store.list_runs()
        assert run.state == "interrupted"
        pairs = store.merges_as_pairs(run.id)
        ranks = [m.rank for m in store.merges(run.id, after_rank=-1, limit=100_000)]
    assert 200 < len(pairs) < vocab - 256
    assert ranks == list(range(len(pairs)))
    full = trained([corpus], TrainConfig(vocab_size=256 + len(pairs)))
    assert pairs == full.merges()
    listing = cli("runs", "list", "--db", str(db))
    assert "interrupted" in listing.stdout


def test_continue_a_stored_run_to_a_larger_vocabulary(corpora, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes((corpora / "taylorswift.txt").read_bytes())
    db = tmp_path / "runs.db"
    out = str(tmp_path / "o")
    assert (
        cli("train", str(corpus), "--vocab-size", "400", "--out", out, "--db", str(db)).returncode
        == 0
    )
    proc = cli("runs", "continue", "1", "--vocab-size", "600", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    with RunStore(db) as store:
        pairs = store.merges_as_pairs(1)
        assert store.get_run(1).state == "done"
    assert pairs == trained([corpus], TrainConfig(vocab_size=600)).merges()
    corpus.write_text("changed", encoding="utf-8")
    proc = cli("runs", "continue", "1", "--vocab-size", "800", "--db", str(db))
    assert proc.returncode == 1 and "corpus changed" in proc.stderr


def test_bench_compares_with_the_peers_asked_for(tmp_path):
    from workbench.bench.train import bench_train

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 300, encoding="utf-8")
    results = bench_train(corpus, 300, repeat=1, peers=())
    assert [r.name for r in results] == ["bpe-workbench"] and results[0].median > 0
    proc = cli("bench", str(corpus), "--peers", "hf,nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "bpe-workbench: --peers: unknown trainer nope; choose from hf, rustbpe, ffbpe"
    ]
