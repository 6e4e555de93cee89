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
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from sqlite_utils import Database

from workbench.store import search as _search
from workbench.store.checks import MAX_ID, CraftedRow
from workbench.store.connection import (
    as_store_error,
    connect,
    default_db_path,
    naming,
    transaction,
)
from workbench.store.errors import RunNotFound, StoreError
from workbench.store.liveness import owner_alive, owner_token
from workbench.store.models import MERGE_COLUMNS, RunInfo, StoredMerge
from workbench.store.readable import real_text
from workbench.store.schema import SCHEMA_VERSION, check_schema, has_fts, init_db

if TYPE_CHECKING:
    from workbench.store.writer import RunWriter

DEFAULT_PAGE = 500
# A stored token longer than this is compared in SQL rather than read: a crafted 1 GB blob is
# refused without holding it (real tokens are pieces of words, rarely past a few hundred bytes).
_READ_TOKEN_UP_TO = 1 << 16

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _refusing(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """SQLite's errors and crafted values as one `StoreError` line naming the database file.

    A foreign table (no such column), a damaged page, a text where an id goes: whichever read
    meets it, the caller gets `runs.db: <reason>`, never a traceback."""

    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        store = args[0]
        try:
            return method(*args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise as_store_error(store.path, exc) from None  # type: ignore[attr-defined]
        except (CraftedRow, OverflowError) as exc:
            raise StoreError(f"{store.path or 'run database'}: {exc}") from None  # type: ignore[attr-defined]

    checked.__name__ = method.__name__
    checked.__doc__ = method.__doc__
    return checked


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
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            conn.close()
            raise as_store_error(self.path, exc) from None
        except StoreError as exc:
            conn.close()
            raise naming(self.path, exc) from None
        except CraftedRow as exc:
            conn.close()
            raise StoreError(f"{self.path}: {exc}") from None
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

    @_refusing
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

    @_refusing
    def rename(self, run_id: int, name: str) -> None:
        self._update_run(run_id, {"name": name})

    @_refusing
    def set_stats(self, run_id: int, stats: Any) -> None:
        """Corpus statistics often arrive after the run is created (pre-tokenizing is a stage)."""
        self._update_run(run_id, {"stats": to_json(stats)})

    @_refusing
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

    @_refusing
    def list_runs(self) -> list[RunInfo]:
        """All runs, newest first."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs ORDER BY id DESC"))
        return [self._info(row) for row in rows]

    @_refusing
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
            and row.get("state") in ("running", "paused")
            and not owner_alive(row.get("owner"), row.get("pid"))
        ):
            row = {**row, "state": "interrupted"}
            row["stop_reason"] = row.get("stop_reason") or "process ended"
        return RunInfo.from_row(row)

    @_refusing
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

    @_refusing
    def merge_count(self, run_id: int) -> int:
        """Merges stored for a run (ranks are gap-free from 0, so max + 1; an index lookup)."""
        with self._lock:
            row = self.conn.execute(
                "SELECT max(rank) FROM merges WHERE run_id = ?", [run_id]
            ).fetchone()
        if row[0] is None:
            return 0
        if type(row[0]) is not int or not 0 <= row[0] < MAX_ID:
            raise CraftedRow(
                f"run {run_id}: the last merge's rank {str(row[0])[:40]!r} is not a rank"
            )
        return row[0] + 1

    @_refusing
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

    @_refusing
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

    @_refusing
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

    @_refusing
    def merges_as_pairs(
        self, run_id: int, start: dict[int, bytes] | None = None
    ) -> list[tuple[bytes, bytes]]:
        """(left bytes, right bytes) in rank order: what `Tokenizer.from_merges` takes.

        Checked as it is read, since the file may be crafted: ranks gap-free from 0, ids known
        when used, each token the bytes of its two parts, one id never two different tokens.
        `start`: the tokens before the first merge (an extension run's base vocabulary), by
        default the 256 single bytes.
        """
        if not is_row_id(run_id):
            return []
        token_of = dict(start) if start is not None else {i: bytes([i]) for i in range(256)}
        pairs: list[tuple[bytes, bytes]] = []
        with self._lock:
            cursor = self.conn.execute(
                "SELECT rank, left_id, right_id, new_id, length(token), typeof(token), "
                f"CASE WHEN length(token) <= {_READ_TOKEN_UP_TO} THEN token END "
                "FROM merges WHERE run_id = ? ORDER BY rank",
                [run_id],
            )
            for rank, left, right, new_id, length, kind, token in cursor:
                pair = self._checked_pair(run_id, len(pairs), token_of, rank, left, right, new_id)
                made = pair[0] + pair[1]
                if kind != "blob" or length != len(made):
                    raise CraftedRow(
                        f"run {run_id}: merge {rank}'s token is not its two parts joined"
                    )
                if token is None:  # too long to read: let SQLite compare it
                    token = self._long_token(run_id, rank, made)
                if token != made:
                    raise CraftedRow(
                        f"run {run_id}: merge {rank}'s token is not its two parts joined"
                    )
                if token_of.setdefault(new_id, made) != made:
                    raise CraftedRow(
                        f"run {run_id}: merge {rank} reuses id {new_id} for other bytes"
                    )
                pairs.append(pair)
        return pairs

    @staticmethod
    def _checked_pair(
        run_id: int,
        expected: int,
        token_of: dict[int, bytes],
        rank: object,
        left: object,
        right: object,
        new_id: object,
    ) -> tuple[bytes, bytes]:
        """The parts' bytes of the merge at `rank`, which must be the next rank, its ids
        integers in range, its parts tokens made earlier."""
        if rank != expected or type(rank) is not int:
            raise CraftedRow(f"run {run_id}: merge {expected} is missing (found rank {rank!r})")
        for name, value in (("left_id", left), ("right_id", right), ("new_id", new_id)):
            if type(value) is not int or not 0 <= value <= MAX_ID:
                raise CraftedRow(f"run {run_id}: merge {rank}: {name} {value!r} is not a token id")
        try:
            return token_of[left], token_of[right]  # type: ignore[index]
        except KeyError:
            raise CraftedRow(
                f"run {run_id}: merge {rank} uses a token no earlier merge made"
            ) from None

    def _long_token(self, run_id: int, rank: int, made: bytes) -> bytes:
        """`made` if the stored token of merge `rank` equals it, else b"" (never equal)."""
        row = self.conn.execute(
            "SELECT token = ? FROM merges WHERE run_id = ? AND rank = ?", [made, run_id, rank]
        ).fetchone()
        return made if row and row[0] == 1 else b""

    @_refusing
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

    @_refusing
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
        for (token,) in rows:
            if type(token) is not bytes:
                raise CraftedRow(f"run {run_id}: merge {len(texts)}: a token is not bytes")
            texts.append(real_text(token))
        return texts

    @_refusing
    def top_pieces(self, run_id: int, limit: int = 100) -> list[tuple[bytes, int]]:
        """The corpus's most frequent pre-tokens, most frequent first."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT piece, count FROM top_pieces WHERE run_id = ? "
                "ORDER BY count DESC, piece LIMIT ?",
                [run_id, limit],
            ).fetchall()
        for piece, count in rows:
            if type(piece) is not bytes or type(count) is not int:
                raise CraftedRow(f"run {run_id}: a top piece is not bytes with an integer count")
        return [(piece, count) for piece, count in rows]
