"""`RunStore`: the reading side of the run database (plus create, rename, delete).

The window, the CLI and tests use it; the training thread writes through its own `RunWriter`.
Each call is its own short transaction on this store's connection, so a reader never holds a
snapshot open between calls and the writer's WAL can always be checkpointed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from workbench.store import search as _search
from workbench.store.connection import as_store_error, connect, default_db_path, transaction
from workbench.store.errors import RunNotFound, StoreError
from workbench.store.liveness import owner_alive, owner_token
from workbench.store.models import MERGE_COLUMNS, RunInfo, StoredMerge
from workbench.store.readable import real_text
from workbench.store.schema import SCHEMA_VERSION, check_schema, has_fts, init_db

if TYPE_CHECKING:
    from workbench.store.writer import RunWriter

DEFAULT_PAGE = 500


def is_row_id(value: int) -> bool:
    """Whether SQLite can hold `value` as an INTEGER (signed 64-bit)."""
    return -(2**63) <= value < 2**63


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def to_json(value: Any) -> str:
    """Settings may arrive as a dataclass (the trainer's config) or a mapping; paths as Path."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif value is None:
        value = {}
    elif isinstance(value, Mapping):
        value = dict(value)
    return json.dumps(value, default=str, ensure_ascii=False)


class RunStore:
    """Runs and their merges in one SQLite file (default: `default_db_path()`).

    `RunStore()` opens the user's database, `RunStore(path)` another file, `RunStore(conn=c)`
    an injected connection (tests). Opening migrates the schema and marks runs whose process
    died as `interrupted`. Safe to share between threads: calls are serialised by a lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        conn: sqlite3.Connection | None = None,
        read_only: bool = False,
    ) -> None:
        """`read_only`: open with SQLite's `mode=ro` for commands that only read; nothing is
        migrated or written, and runs whose process died are shown `interrupted` unsaved."""
        if conn is None:
            self.path: Path | None = Path(path) if path is not None else default_db_path()
            conn = connect(self.path, read_only=read_only)
        else:
            self.path = Path(path) if path is not None else None
        self.read_only = read_only
        try:
            if read_only:
                if check_schema(conn) < SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: the run database needs an upgrade; open it once with "
                        "write access (any command that writes, or the window)"
                    )
            else:
                init_db(conn)
            self.conn = conn
            self.db = Database(conn)
            self._lock = threading.RLock()
            self._fts = has_fts(conn)
            self._texts: dict[int, list[str]] = {}  # run id -> token text by rank (regex)
            if not read_only:
                self.mark_interrupted_stale()
        except sqlite3.Error as exc:
            conn.close()
            raise as_store_error(self.path, exc) from None
        except BaseException:
            conn.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def writer(self, run_id: int) -> RunWriter:
        """A `RunWriter` for `run_id` on its own connection to this store's file."""
        from workbench.store.writer import RunWriter  # writer.py imports this module

        if self.path is None:
            raise StoreError("a store on an injected connection has no file to open a writer on")
        return RunWriter(self.path, run_id)

    # -- runs ------------------------------------------------------------------------------

    def create_run(
        self,
        name: str,
        settings: Any = None,
        corpus: Any = None,
        stats: Any = None,
    ) -> int:
        """Record a new run, `running` and owned by this process; returns its id."""
        stamp = now_iso()
        with self._lock:
            # One INSERT is its own transaction (sqlite-utils commits on its own, so no BEGIN).
            table = self.db.table("runs")
            table.insert(
                {
                    "name": name,
                    "created": stamp,
                    "updated": stamp,
                    "state": "running",
                    "pid": os.getpid(),
                    "owner": owner_token(),
                    "settings": to_json(settings),
                    "corpus": to_json(corpus),
                    "stats": to_json(stats),
                }
            )
            run_id = int(table.last_pk)
        return run_id

    def _update_run(self, run_id: int, values: dict[str, Any]) -> None:
        self.get_run(run_id)  # RunNotFound rather than a silent no-op
        with self._lock:
            self.db.table("runs").update(run_id, {**values, "updated": now_iso()})

    def rename(self, run_id: int, name: str) -> None:
        self._update_run(run_id, {"name": name})

    def set_stats(self, run_id: int, stats: Any) -> None:
        """Corpus statistics often arrive after the run is created (pre-tokenizing is a stage)."""
        self._update_run(run_id, {"stats": to_json(stats)})

    def delete(self, run_id: int) -> None:
        """Delete a run and all it holds; refused while its process is still training it."""
        with self._lock:
            run = self.get_run(run_id)
            row = self.conn.execute("SELECT owner FROM runs WHERE id = ?", [run_id]).fetchone()
            if run.state in ("running", "paused") and owner_alive(row[0], run.pid):
                raise StoreError(f"run {run_id} is still {run.state}; stop it before deleting")
            with transaction(self.conn):
                for table in ("merges", "top_pieces"):
                    self.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
                self.conn.execute("DELETE FROM runs WHERE id = ?", [run_id])
            self._texts.pop(run_id, None)

    def list_runs(self) -> list[RunInfo]:
        """All runs, newest first."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs ORDER BY id DESC"))
        return [self._info(row) for row in rows]

    def get_run(self, run_id: int) -> RunInfo:
        if not 1 <= run_id < 2**63:  # ids are positive SQLite INTEGERs (signed 64-bit)
            raise RunNotFound(run_id)
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            raise RunNotFound(run_id)
        return self._info(rows[0])

    def _info(self, row: dict[str, Any]) -> RunInfo:
        # A read-only store cannot mark a dead process's run; it shows it as marked.
        if (
            self.read_only
            and row["state"] in ("running", "paused")
            and not owner_alive(row.get("owner"), row.get("pid"))
        ):
            row = {**row, "state": "interrupted"}
            row["stop_reason"] = row.get("stop_reason") or "process ended"
        return RunInfo.from_row(row)

    def mark_interrupted_stale(self) -> list[int]:
        """Mark `running`/`paused` runs whose process is gone as `interrupted`; returns their ids.

        A paused run counts too: its trainer state lived in the dead process, so it cannot be
        resumed. Merges already written stay (a crash keeps what it had).
        """
        with self._lock:
            rows = self.conn.execute(
                "SELECT id, pid, owner FROM runs WHERE state IN ('running', 'paused')"
            ).fetchall()
            stale = [rid for rid, pid, owner in rows if not owner_alive(owner, pid)]
            if stale:
                with transaction(self.conn):
                    self.conn.executemany(
                        "UPDATE runs SET state = 'interrupted', updated = ?, "
                        "stop_reason = coalesce(stop_reason, 'process ended') "
                        "WHERE id = ? AND state IN ('running', 'paused')",
                        [(now_iso(), rid) for rid in stale],
                    )
        return stale

    # -- merges ----------------------------------------------------------------------------

    def merge_count(self, run_id: int) -> int:
        """Merges stored for a run (ranks are gap-free from 0, so max + 1; an index lookup)."""
        with self._lock:
            row = self.conn.execute(
                "SELECT max(rank) FROM merges WHERE run_id = ?", [run_id]
            ).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def merges(
        self, run_id: int, after_rank: int = -1, limit: int = DEFAULT_PAGE
    ) -> list[StoredMerge]:
        """The next page in rank order after `after_rank` (keyset: cost is the page, not the
        offset, so a list model can fetch page 400 as fast as page 1)."""
        if limit < 0:  # SQLite reads LIMIT -5 as "no limit"
            raise StoreError(f"cannot list {limit} merges: the number must be 0 or more")
        if not is_row_id(run_id):
            return []
        with self._lock:
            rows = self.conn.execute(
                f"SELECT {MERGE_COLUMNS} FROM merges WHERE run_id = ? AND rank > ? "
                "ORDER BY rank LIMIT ?",
                [run_id, after_rank, limit],
            ).fetchall()
        return [StoredMerge.from_tuple(row) for row in rows]

    def merge_by_id(self, run_id: int, token_id: int) -> StoredMerge | None:
        """The merge that first made token `token_id` (None for a byte or unknown id)."""
        # `+rank`: left to itself the planner walks the primary key in rank order to satisfy
        # ORDER BY ... LIMIT 1, a scan up to the token (16 ms for a late id at 200k merges);
        # through `merges_by_id` it is one lookup (0.01 ms).
        with self._lock:
            row = self.conn.execute(
                f"SELECT {MERGE_COLUMNS} FROM merges WHERE run_id = ? AND new_id = ? "
                "ORDER BY +rank LIMIT 1",
                [run_id, token_id],
            ).fetchone()
        return None if row is None else StoredMerge.from_tuple(row)

    def merges_using(self, run_id: int, token_id: int, limit: int = 200) -> list[StoredMerge]:
        """Merges that take `token_id` as a part (left or right), in rank order."""
        with self._lock:
            rows = self.conn.execute(
                f"SELECT {MERGE_COLUMNS} FROM ("
                f" SELECT {MERGE_COLUMNS} FROM merges WHERE run_id = ? AND left_id = ?"
                f" UNION SELECT {MERGE_COLUMNS} FROM merges WHERE run_id = ? AND right_id = ?"
                ") ORDER BY rank LIMIT ?",
                [run_id, token_id, run_id, token_id, limit],
            ).fetchall()
        return [StoredMerge.from_tuple(row) for row in rows]

    def merges_as_pairs(self, run_id: int) -> list[tuple[bytes, bytes]]:
        """(left bytes, right bytes) in rank order: what `Tokenizer.from_merges` takes."""
        token_of = {i: bytes([i]) for i in range(256)}
        pairs: list[tuple[bytes, bytes]] = []
        with self._lock:
            cursor = self.conn.execute(
                "SELECT rank, left_id, right_id, new_id, token FROM merges "
                "WHERE run_id = ? ORDER BY rank",
                [run_id],
            )
            for rank, left, right, new_id, token in cursor:
                try:
                    pair = (token_of[left], token_of[right])
                except KeyError:
                    raise StoreError(
                        f"run {run_id}: merge {rank} uses a token no earlier merge made"
                    ) from None
                pairs.append(pair)
                token_of[new_id] = bytes(token)
        return pairs

    def search(
        self,
        run_id: int,
        text: str | None = None,
        regex: str | None = None,
        hex: str | None = None,
        rank_range: _search.Range | None = None,
        id_range: _search.Range | None = None,
        count_range: _search.Range | None = None,
        length_range: _search.Range | None = None,
        order: str = "rank",
        limit: int = DEFAULT_PAGE,
        offset: int = 0,
        after_rank: int | None = None,
        case_sensitive: bool = False,
    ) -> list[StoredMerge]:
        """Merges matching every given filter, in rank order or newest first (see search.py).

        Page with `after_rank=<last rank shown>` (keyset, preferred) or `offset`.
        """
        q = _search.SearchQuery(
            text,
            regex,
            hex,
            rank_range,
            id_range,
            count_range,
            length_range,
            case_sensitive,
            order,
        )
        sql = _search.build(run_id, q, use_fts=self._fts, after_rank=after_rank)
        if not q.regex:
            statement, params = _search.select_sql(sql, order, limit, offset)
            with self._lock:
                rows = self.conn.execute(statement, params).fetchall()
            return [StoredMerge.from_tuple(row) for row in rows]
        found: list[StoredMerge] = []
        with self._lock:
            texts = self._real_texts(run_id)
            if order not in _search.KEYSET_ORDERS:
                # A sort: every match first, then one sorted, offset page from SQLite.
                span = _search.rank_span(q, after_rank, len(texts))
                ranks = [r for c in _search.regex_candidates(texts, q.regex, span) for r in c]
                statement, params = _search.select_sql(
                    _search.restrict_to(sql, ranks), order, limit, offset
                )
                return [StoredMerge.from_tuple(row) for row in self.conn.execute(statement, params)]
            # Rank order: walk candidate chunks in order; SQL applies the other filters to each.
            span = _search.rank_span(q, after_rank, len(texts))
            for ranks in _search.regex_candidates(texts, q.regex, span):
                statement, params = _search.select_sql(
                    _search.restrict_to(sql, ranks), order, limit + offset - len(found), 0
                )
                found += map(StoredMerge.from_tuple, self.conn.execute(statement, params))
                if len(found) >= limit + offset:
                    break
        return found[offset : offset + limit]

    def search_count(self, run_id: int, **filters: Any) -> int:
        """How many merges `search(run_id, **filters)` would find over all pages."""
        for paging in ("limit", "offset", "after_rank"):
            filters.pop(paging, None)
        q = _search.SearchQuery(**filters)
        sql = _search.build(run_id, q, use_fts=self._fts)
        with self._lock:
            if not q.regex:
                statement, params = _search.count_sql(sql)
                return int(self.conn.execute(statement, params).fetchone()[0])
            texts = self._real_texts(run_id)
            span = _search.rank_span(q, None, len(texts))
            total = 0
            for ranks in _search.regex_candidates(texts, q.regex, span, chunk=len(span) or 1):
                statement, params = _search.count_sql(_search.restrict_to(sql, ranks))
                total += int(self.conn.execute(statement, params).fetchone()[0])
            return total

    def _real_texts(self, run_id: int) -> list[str]:
        """Every stored merge's token as text (`display.real_text`), indexed by rank; cached
        and topped up. Merges are write-once and gap-free and run ids are never reused, so
        what is cached stays true; only merges added since (a run still training) are read.
        """
        texts = self._texts.setdefault(run_id, [])
        rows = self.conn.execute(
            "SELECT token FROM merges WHERE run_id = ? AND rank >= ? ORDER BY rank",
            [run_id, len(texts)],
        ).fetchall()
        texts.extend(real_text(bytes(row[0])) for row in rows)
        return texts

    def top_pieces(self, run_id: int, limit: int = 100) -> list[tuple[bytes, int]]:
        """The corpus's most frequent pre-tokens, most frequent first."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT piece, count FROM top_pieces WHERE run_id = ? "
                "ORDER BY count DESC, piece LIMIT ?",
                [run_id, limit],
            ).fetchall()
        return [(bytes(piece), int(count)) for piece, count in rows]
