"""`RunWriter`: the training thread's side of the run database.

One writer per run, on its own connection, used from the thread that trains. Each `MergeBatch`
is one short transaction (insert the merges, bump the run's counters), so a crash keeps every
batch committed before it and a reader sees whole batches only. Readers on other connections
never wait for it: WAL lets them read the last commit while a batch is being written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from workbench.engine.events import MergeBatch
from workbench.store.checks import CraftedRow
from workbench.store.connection import as_store_error, connect, naming, transaction
from workbench.store.errors import RunNotFound, StoreError
from workbench.store.liveness import owner_token
from workbench.store.readable import readable
from workbench.store.runs import now_iso, to_json
from workbench.store.schema import RUN_STATES, fts_rowid, has_fts, init_db

_INSERT = (
    "INSERT INTO merges (run_id, rank, new_id, left_id, right_id, token, readable, count, "
    "length, is_new, ties, corpus_tokens, runner_up) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _column(batch: MergeBatch, name: str, n: int) -> list[Any]:
    """An optional batch column as a list (all None when this engine version lacks it)."""
    values = getattr(batch, name, None)
    return [None] * n if values is None else values.tolist()


def _runner_ups(batch: MergeBatch, n: int) -> list[int | None]:
    """The runner-up column, None where the trainer did not compute it (-1 or no column)."""
    values = getattr(batch, "runner_up", None)
    if values is None:
        return [None] * n
    return [None if v < 0 else v for v in values.tolist()]


_INSERT_FTS = "INSERT INTO merges_fts (rowid, readable) VALUES (?, ?)"


def _identity(path: Path) -> tuple[int, int, bool] | None:
    """(device, inode, writable) of the file at `path`, None when there is none. Writable
    means a write bit is set and this user may write (root passes `access` whatever the mode,
    so a `chmod a-w` is read from the bits)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    writable = bool(info.st_mode & 0o222) and os.access(path, os.W_OK)
    return info.st_dev, info.st_ino, writable


class RunWriter:
    """Appends merges to run `run_id` and records its state; claims the run for this process.

    Opening takes over the run (pid/owner = this process, state `running`) and continues after
    the last stored rank, so a batch must start exactly there: ranks stay gap-free.
    """

    def __init__(self, path: str | os.PathLike[str], run_id: int) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.conn: sqlite3.Connection = connect(self.path)
        self._identity = _identity(self.path)
        try:
            init_db(self.conn)
            row = self.conn.execute(
                "SELECT merge_count FROM runs WHERE id = ?", [run_id]
            ).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            self._fts = has_fts(self.conn)
            self.next_rank = self._stored_count()
            self._commit(
                "UPDATE runs SET state = 'running', pid = ?, owner = ?, updated = ?, "
                "merge_count = ? WHERE id = ?",
                [os.getpid(), owner_token(), now_iso(), self.next_rank, run_id],
            )
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            self.conn.close()
            raise as_store_error(self.path, exc) from None
        except RunNotFound:
            self.conn.close()
            raise
        except StoreError as exc:
            self.conn.close()
            raise naming(self.path, exc) from None
        except CraftedRow as exc:
            self.conn.close()
            raise StoreError(f"{self.path}: {exc}") from None
        except BaseException:
            self.conn.close()
            raise

    def check_file(self) -> None:
        """Raise StoreError if the database file was deleted, replaced or made read-only since
        this writer opened it. SQLite keeps writing to a deleted file's open inode without a
        word, so without this a run would "succeed" into a file nobody can open again."""
        if self._identity is None:  # no file to watch (a special path)
            return
        now = _identity(self.path)
        if now is None or now[:2] != self._identity[:2]:
            raise StoreError(
                f"{self.path}: the run database was deleted or replaced while run "
                f"{self.run_id} trained; its merges are lost"
            )
        if self._identity[2] and not now[2]:
            raise StoreError(
                f"{self.path}: the run database was made read-only while run {self.run_id} trained"
            )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction; a SQLite failure (a full disk) surfaces as a one-line StoreError
        with SQLite's own reason, never as the failed ROLLBACK that may follow it. The file
        is checked first (`check_file`)."""
        self.check_file()
        try:
            with transaction(self.conn) as conn:
                yield conn
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise as_store_error(self.path, exc) from None

    def _stored_count(self) -> int:
        row = self.conn.execute(
            "SELECT max(rank) FROM merges WHERE run_id = ?", [self.run_id]
        ).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def _commit(self, sql: str, params: Iterable[Any]) -> None:
        with self._transaction() as conn:
            conn.execute(sql, list(params))

    def write(self, batch: MergeBatch) -> None:
        """Store one batch in one transaction; it must start at `next_rank`."""
        if batch.start_rank != self.next_rank:
            raise ValueError(
                f"batch starts at rank {batch.start_rank}, expected {self.next_rank} "
                "(merges must arrive in order without gaps)"
            )
        n = len(batch)
        if n == 0:
            return
        # .tolist() turns the numpy columns into Python ints in one C loop each.
        texts = [readable(t) for t in batch.tokens]
        ranks = range(batch.start_rank, batch.start_rank + n)
        rows = zip(
            [self.run_id] * n,
            ranks,
            batch.new_id.tolist(),
            batch.left.tolist(),
            batch.right.tolist(),
            batch.tokens,
            texts,
            batch.count.tolist(),
            [len(t) for t in batch.tokens],
            [int(x) for x in batch.is_new.tolist()],
            batch.ties.tolist(),
            _column(batch, "corpus_tokens", n),
            _runner_ups(batch, n),
            strict=True,
        )
        with self._transaction() as conn:
            # Plain executemany, not sqlite-utils insert_all: this is the hot path, and
            # insert_all would commit on its own (we want the run counters in the same commit).
            conn.executemany(_INSERT, rows)
            if self._fts:
                base = fts_rowid(self.run_id, 0)
                conn.executemany(_INSERT_FTS, zip([base + r for r in ranks], texts, strict=True))
            updated = conn.execute(
                "UPDATE runs SET merge_count = ?, vocab_size = ?, updated = ? WHERE id = ?",
                [batch.end_rank, batch.vocab_size, now_iso(), self.run_id],
            )
            if updated.rowcount == 0:  # deleted meanwhile: keep no orphan merges
                raise RunNotFound(self.run_id)
        self.next_rank = batch.end_rank

    def set_state(
        self,
        state: str,
        stop_reason: str | None = None,
        error: str | None = None,
        timings: Mapping[str, float] | None = None,
    ) -> None:
        """Record a state change; `timings` are merged into those already stored."""
        if state not in RUN_STATES:
            raise ValueError(f"unknown run state {state!r}; expected one of {RUN_STATES}")
        with self._transaction() as conn:
            row = conn.execute("SELECT timings FROM runs WHERE id = ?", [self.run_id]).fetchone()
            if row is None:  # deleted meanwhile
                raise RunNotFound(self.run_id)
            merged = {**json.loads(row[0]), **dict(timings or {})}
            conn.execute(
                "UPDATE runs SET state = ?, stop_reason = ?, error = ?, timings = ?, updated = ? "
                "WHERE id = ?",
                [state, stop_reason, error, to_json(merged), now_iso(), self.run_id],
            )

    def set_stats(self, stats: Any) -> None:
        """Corpus statistics, once pre-tokenizing has produced them."""
        self._commit(
            "UPDATE runs SET stats = ?, updated = ? WHERE id = ?",
            [to_json(stats), now_iso(), self.run_id],
        )

    def write_top_pieces(self, pieces: Iterable[tuple[bytes, int]]) -> None:
        """Replace the run's most frequent pre-tokens (for the corpus panel)."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM top_pieces WHERE run_id = ?", [self.run_id])
            conn.executemany(
                "INSERT INTO top_pieces (run_id, piece, count) VALUES (?, ?, ?)",
                [(self.run_id, bytes(p), int(c)) for p, c in pieces],
            )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close()
