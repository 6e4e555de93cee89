"""The run store: schema, round trips, search, concurrent reads, and surviving a SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.engine.events import MergeBatch
from workbench.store import (
    SCHEMA_VERSION,
    RunNotFound,
    RunStore,
    RunWriter,
    StoreError,
    default_db_path,
    init_db,
    readable,
)
from workbench.store.schema import schema_version
from workbench.store.synthetic import synthetic_batches

REPO = Path(__file__).resolve().parents[1]


def make_batch(start: int, pairs: list[tuple[int, int, int, bytes]], count0: int = 1000):
    """A MergeBatch from (left, right, new_id, token) rows; counts fall from count0."""
    n = len(pairs)
    return MergeBatch(
        start_rank=start,
        left=np.array([p[0] for p in pairs], dtype=np.int32),
        right=np.array([p[1] for p in pairs], dtype=np.int32),
        new_id=np.array([p[2] for p in pairs], dtype=np.int32),
        count=np.arange(count0, count0 - n, -1, dtype=np.int64),
        is_new=np.ones(n, dtype=bool),
        ties=np.zeros(n, dtype=np.int64),
        corpus_tokens=np.arange(5000, 5000 - n, -1, dtype=np.int64),
        tokens=tuple(p[3] for p in pairs),
        vocab_size=256 + start + n,
        seconds=0.01,
    )


# Hand-made merges: " t" " th" " the" "in" "ing" "e\xe2" ... ids 256.. in order.
SMALL = [
    (32, 116, 256, b" t"),
    (256, 104, 257, b" th"),
    (257, 101, 258, b" the"),
    (105, 110, 259, b"in"),
    (259, 103, 260, b"ing"),
    (10, 10, 261, b"\n\n"),
    (101, 0xE2, 262, b"e\xe2"),
    (84, 104, 263, b"Th"),
    (258, 114, 264, b" ther"),
    (9, 9, 265, b"\t\t"),
]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(db_path: Path):
    with RunStore(db_path) as s:
        yield s


def filled(store: RunStore, rows=SMALL, batch: int = 4) -> int:
    run_id = store.create_run("small", settings={"vocab_size": 300, "pattern": "gpt2"})
    with store.writer(run_id) as w:
        for start in range(0, len(rows), batch):
            w.write(make_batch(start, rows[start : start + batch]))
    return run_id


# -- readable ----------------------------------------------------------------------------------


def test_readable_shows_whitespace_and_partial_characters() -> None:
    assert readable(b" the") == "·the"
    assert readable(b"\n\t\r") == "⏎→⇤"
    assert readable(b"\xe2\x80") == "<E2><80>"
    assert readable("’s".encode()) == "’s"
    assert readable(b"a\x00") == "a<00>"


# -- schema ------------------------------------------------------------------------------------


def test_init_db_migrates_once_and_sets_pragmas(db_path: Path) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    init_db(conn)
    assert schema_version(conn) == SCHEMA_VERSION
    init_db(conn)  # idempotent
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "merges", "top_pieces"} <= tables

    with RunStore(db_path) as s:
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_newer_schema_is_refused() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        init_db(conn)


def test_store_on_injected_connection() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    s = RunStore(conn=conn)
    run_id = s.create_run("mem", settings={"vocab_size": 1000})
    assert s.get_run(run_id).settings == {"vocab_size": 1000}
    assert s.merge_count(run_id) == 0


def test_default_db_path_honours_env(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BPE_WORKBENCH_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("BPE_WORKBENCH_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if sys.platform.startswith("linux"):
        assert default_db_path() == tmp_path / "data" / "bpe-workbench" / "runs.db"


# -- runs and merges ---------------------------------------------------------------------------


def test_run_lifecycle(store: RunStore) -> None:
    run_id = store.create_run(
        "first",
        settings={"vocab_size": 512, "pattern": "gpt2", "special_tokens": ["<|endoftext|>"]},
        corpus={"paths": ["a.txt"], "sizes": [10], "fingerprint": "abc"},
        stats={"documents": 1},
    )
    run = store.get_run(run_id)
    assert (run.name, run.state, run.pid) == ("first", "running", os.getpid())
    assert run.corpus["fingerprint"] == "abc"
    store.rename(run_id, "renamed")
    assert [r.name for r in store.list_runs()] == ["renamed"]
    with store.writer(run_id) as w:
        w.set_state("done", stop_reason="vocab size reached", timings={"train": 1.5})
        w.set_state("done", stop_reason="vocab size reached", timings={"export": 0.1})
    run = store.get_run(run_id)
    assert run.state == "done" and run.stop_reason == "vocab size reached"
    assert run.timings == {"train": 1.5, "export": 0.1}
    store.delete(run_id)
    assert store.list_runs() == []
    with pytest.raises(RunNotFound):
        store.get_run(run_id)


def test_delete_refuses_a_live_run(store: RunStore) -> None:
    run_id = store.create_run("live")
    with pytest.raises(StoreError, match="still running"):
        store.delete(run_id)


def test_batches_read_back_in_rank_order_gap_free(store: RunStore) -> None:
    run_id = filled(store)
    assert store.merge_count(run_id) == len(SMALL)
    got = store.merges(run_id, limit=100)
    assert [m.rank for m in got] == list(range(len(SMALL)))
    for m, (left, right, new_id, token) in zip(got, SMALL, strict=True):
        assert (m.left_id, m.right_id, m.new_id, m.token) == (left, right, new_id, token)
        assert m.readable == readable(token) and m.length == len(token)
    assert got[0].count == 1000 and got[4].count == 1000  # first of the second batch
    # keyset pages join up exactly
    pages, after = [], -1
    while page := store.merges(run_id, after_rank=after, limit=3):
        pages += page
        after = page[-1].rank
    assert pages == got
    run = store.get_run(run_id)
    assert run.merge_count == len(SMALL) and run.vocab_size == 256 + len(SMALL)


def test_writer_refuses_a_gap(store: RunStore) -> None:
    run_id = store.create_run("gap")
    with store.writer(run_id) as w:
        w.write(make_batch(0, SMALL[:2]))
        with pytest.raises(ValueError, match="expected 2"):
            w.write(make_batch(3, SMALL[3:5]))
    # a new writer continues after the stored prefix
    with RunWriter(store.path, run_id) as w:
        assert w.next_rank == 2
        w.write(make_batch(2, SMALL[2:5]))
    assert store.merge_count(run_id) == 5


def test_merges_as_pairs_rebuilds_bytes(store: RunStore) -> None:
    run_id = filled(store)
    pairs = store.merges_as_pairs(run_id)
    assert pairs[:3] == [(b" ", b"t"), (b" t", b"h"), (b" th", b"e")]
    assert all(
        left + right == token for (left, right), (*_, token) in zip(pairs, SMALL, strict=True)
    )


def test_top_pieces(store: RunStore) -> None:
    run_id = store.create_run("pieces")
    with store.writer(run_id) as w:
        w.write_top_pieces([(b" the", 50), (b",", 70), (b" a", 20)])
    assert store.top_pieces(run_id, limit=2) == [(b",", 70), (b" the", 50)]


# -- search ------------------------------------------------------------------------------------


def tokens_of(merges) -> list[bytes]:
    return [m.token for m in merges]


def test_search_substring_inside_space_tokens(store: RunStore) -> None:
    run_id = filled(store)
    assert tokens_of(store.search(run_id, text="the")) == [b" the", b" ther"]
    assert tokens_of(store.search(run_id, text="th")) == [b" th", b" the", b"Th", b" ther"]
    assert tokens_of(store.search(run_id, text=" th")) == [b" th", b" the", b" ther"]
    assert tokens_of(store.search(run_id, text="·the")) == [b" the", b" ther"]
    assert tokens_of(store.search(run_id, text="Th", case_sensitive=True)) == [b"Th"]
    assert tokens_of(store.search(run_id, text="THE")) == [b" the", b" ther"]
    assert store.search(run_id, text="THE", case_sensitive=True) == []
    assert tokens_of(store.search(run_id, text="\n")) == [b"\n\n"]
    assert tokens_of(store.search(run_id, text="the", order="newest")) == [b" ther", b" the"]
    assert store.search_count(run_id, text="th") == 4


def test_search_regex_hex_and_ranges(store: RunStore) -> None:
    run_id = filled(store)
    assert tokens_of(store.search(run_id, regex=r"^in")) == [b"in", b"ing"]
    assert tokens_of(store.search(run_id, regex=r"^ \p{L}+$")) == [b" t", b" th", b" the", b" ther"]
    assert tokens_of(store.search(run_id, hex="e2")) == [b"e\xe2"]
    assert tokens_of(store.search(run_id, hex="0a 0A")) == [b"\n\n"]
    assert [m.rank for m in store.search(run_id, rank_range=(2, 4))] == [2, 3, 4]
    assert [m.new_id for m in store.search(run_id, id_range=(263, None))] == [263, 264, 265]
    assert tokens_of(store.search(run_id, length_range=(4, None))) == [b" the", b" ther"]
    # counts are 1000, 999, ... within each batch of 4
    assert [m.rank for m in store.search(run_id, count_range=(None, 998))] == [2, 3, 6, 7]
    combined = store.search(run_id, text="th", length_range=(3, 4), order="newest")
    assert tokens_of(combined) == [b" the", b" th"]
    assert store.search_count(run_id, regex="^ ") == 4
    assert (
        store.search_count(run_id, regex=r"^\s") == 6
    )  # and the tokens that start with a line break
    with pytest.raises(StoreError):
        store.search(run_id, regex="(")
    with pytest.raises(StoreError):
        store.search(run_id, hex="xyz")


def test_search_pages_match_one_big_query(store: RunStore) -> None:
    run_id = store.create_run("synthetic")
    with store.writer(run_id) as w:
        for batch in synthetic_batches(5000, batch_size=700, seed=3):
            w.write(batch)
    for filters in ({"text": "e"}, {"text": "the"}, {"regex": "a.$"}, {"hex": "e2"}):
        for order in ("rank", "newest"):
            everything = store.search(run_id, order=order, limit=10_000, **filters)
            assert everything, filters
            assert len(everything) == store.search_count(run_id, **filters)
            keyset, after = [], None
            while page := store.search(run_id, order=order, limit=37, after_rank=after, **filters):
                keyset += page
                after = page[-1].rank
            assert keyset == everything
            offset_page = store.search(run_id, order=order, limit=25, offset=50, **filters)
            assert offset_page == everything[50:75]
    # a slow, obviously correct reference for substring search
    every = store.merges(run_id, limit=10_000)
    for needle in ("e", "th", "the", "·a", "<E2>"):
        expected = [m.rank for m in every if needle.lower() in m.readable.lower()]
        assert [m.rank for m in store.search(run_id, text=needle, limit=10_000)] == expected


# -- concurrency and crashes -------------------------------------------------------------------


def test_reader_is_not_blocked_by_a_streaming_writer(db_path: Path) -> None:
    store = RunStore(db_path)
    run_id = store.create_run("stream")
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with RunWriter(db_path, run_id) as w:
                for batch in synthetic_batches(30_000, batch_size=500, seed=1):
                    w.write(batch)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    seen = []
    with RunStore(db_path) as reader:
        while not done.is_set():
            count = reader.merge_count(run_id)
            reader.search(run_id, text="the", limit=50)
            tail = reader.merges(run_id, after_rank=max(-1, count - 100), limit=100)
            ranks = [m.rank for m in tail]
            assert count % 500 == 0 and ranks == list(
                range(ranks[0], ranks[0] + len(ranks)) if ranks else []
            )
            seen.append(count)
    thread.join()
    store.close()
    # Not a timing test (benchmarks/store_search.py measures latency): the reader got answers
    # many times while the writer streamed, and only ever saw whole batches, never going back.
    assert not errors
    assert len(seen) > 10 and seen[-1] > seen[0]
    assert seen == sorted(seen)


CHILD = textwrap.dedent(
    """
    import sys
    from workbench.store import RunWriter
    from workbench.store.synthetic import synthetic_batches
    with RunWriter(sys.argv[1], int(sys.argv[2])) as w:
        for i, batch in enumerate(synthetic_batches(None, batch_size=300)):
            w.write(batch)
            if i == 3:
                print("writing", flush=True)
    """
)


def test_sigkill_mid_write_keeps_a_consistent_prefix(db_path: Path) -> None:
    with RunStore(db_path) as store:
        run_id = store.create_run("doomed")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path), str(run_id)],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"writing"
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stdout:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with RunStore(db_path) as store:  # opening marks the dead writer's run
        run = store.get_run(run_id)
        assert run.state == "interrupted"
        count = store.merge_count(run_id)
        assert count >= 4 * 300 and count % 300 == 0  # whole batches only
        ranks = [m.rank for m in store.merges(run_id, limit=count + 10)]
        assert ranks == list(range(count)) == list(range(run.merge_count))
        assert len(store.merges_as_pairs(run_id)) == count
        assert store.search_count(run_id, text="e") == sum(
            "e" in m.readable.lower() for m in store.merges(run_id, limit=count)
        )


def test_stale_runs_marked_but_own_runs_kept(store: RunStore) -> None:
    mine = store.create_run("mine")
    dead = store.create_run("dead")
    store.conn.execute("UPDATE runs SET pid = 999999999, owner = NULL WHERE id = ?", [dead])
    assert store.mark_interrupted_stale() == [dead]
    assert store.get_run(dead).state == "interrupted"
    assert store.get_run(mine).state == "running"


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_runs_list_show_delete(store: RunStore, db_path: Path, capsys) -> None:
    from workbench.cli import main

    run_id = filled(store)
    with store.writer(run_id) as w:
        w.set_state("done")
    assert main(["runs", "list", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert "finished" in out and "small" in out
    assert main(["runs", "show", str(run_id), "--db", str(db_path)]) == 0
    assert "·the" in capsys.readouterr().out
    assert main(["runs", "show", "999", "--db", str(db_path)]) == 1
    assert "no run with id 999" in capsys.readouterr().err
    assert main(["runs", "delete", str(run_id), "-y", "--db", str(db_path)]) == 0
    assert store.list_runs() == []


def test_cli_runs_export(store: RunStore, db_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("workbench.engine.encode.tokenizer")
    formats = pytest.importorskip("workbench.engine.formats")
    if not hasattr(formats, "export"):
        pytest.skip("workbench.engine.formats.export not written yet")
    from workbench.cli import main

    run_id = filled(store)
    out = tmp_path / "out"
    assert (
        main(
            [
                "runs",
                "export",
                str(run_id),
                "--format",
                "hf",
                "--out",
                str(out),
                "--db",
                str(db_path),
            ]
        )
        == 0
    )
    assert any(out.iterdir())
