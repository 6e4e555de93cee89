"""The run database schema: a numbered list of migrations and `init_db` to apply them.

`PRAGMA user_version` holds how many migrations a file has had. Each migration runs in its own
`BEGIN IMMEDIATE ... COMMIT` together with the version bump, so a crash mid-upgrade leaves the
old schema, never half of the new one. Add a migration by appending to `MIGRATIONS`; never edit
one that has shipped.

Substring search uses an FTS5 trigram index over the readable form of each token. It is
contentless: its rowid is `run_id * 2**32 + rank` (see `fts_rowid`), which stays valid through
VACUUM, unlike the implicit rowid of `merges` an external-content index would rely on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from workbench.store.connection import transaction
from workbench.store.errors import StoreError

RUN_STATES = ("running", "paused", "done", "failed", "interrupted")
FTS_RANK_BITS = 32


def fts_rowid(run_id: int, rank: int) -> int:
    """The trigram index's rowid for a merge: fts_rowid(3, 5) == 3 * 2**32 + 5."""
    return (run_id << FTS_RANK_BITS) + rank


def trigram_supported(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 with the trigram tokenizer (3.34+, FTS5 compiled in)."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._probe USING fts5(x, tokenize='trigram')")
    except sqlite3.OperationalError:
        return False
    conn.execute("DROP TABLE temp._probe")
    return True


_STATES_SQL = ", ".join(f"'{s}'" for s in RUN_STATES)

_V1_TABLES = [
    f"""
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: caches key on it
        name TEXT NOT NULL,
        created TEXT NOT NULL,          -- ISO 8601, UTC
        updated TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ({_STATES_SQL})),
        pid INTEGER,                    -- process running it (see liveness.py)
        owner TEXT,                     -- host/pid/start-time: tells a reused pid apart
        corpus TEXT NOT NULL DEFAULT '{{}}',    -- JSON: paths, sizes, fingerprint
        settings TEXT NOT NULL DEFAULT '{{}}',  -- JSON: vocab_size, pattern, special_tokens, ...
        timings TEXT NOT NULL DEFAULT '{{}}',   -- JSON: seconds per stage
        stats TEXT NOT NULL DEFAULT '{{}}',     -- JSON: corpus statistics
        merge_count INTEGER NOT NULL DEFAULT 0,
        vocab_size INTEGER NOT NULL DEFAULT 256,
        stop_reason TEXT,
        error TEXT
    )
    """,
    """
    CREATE TABLE merges (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        rank INTEGER NOT NULL,
        new_id INTEGER NOT NULL,
        left_id INTEGER NOT NULL,
        right_id INTEGER NOT NULL,
        token BLOB NOT NULL,
        readable TEXT NOT NULL,
        count INTEGER NOT NULL,         -- pair count at the moment of the merge
        length INTEGER NOT NULL,        -- bytes in token
        is_new INTEGER NOT NULL DEFAULT 1,
        ties INTEGER NOT NULL DEFAULT 0,
        corpus_tokens INTEGER,          -- tokens the whole corpus takes after this merge
        PRIMARY KEY (run_id, rank)
    )
    """,
    # The merge tree looks tokens up by id.
    "CREATE INDEX merges_by_id ON merges (run_id, new_id)",
    """
    CREATE TABLE top_pieces (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        piece BLOB NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (run_id, piece)
    )
    """,
    "CREATE INDEX top_pieces_by_count ON top_pieces (run_id, count DESC)",
]

_V1_FTS = [
    # case_sensitive 0: typing "the" finds "The" too; search() filters again when asked to be
    # exact. Contentless, so deletes must hand back the old text (the trigger does). RunWriter
    # fills it in the batch's transaction: an AFTER INSERT trigger did the same 3x slower.
    "CREATE VIRTUAL TABLE merges_fts USING fts5("
    "readable, content='', tokenize='trigram case_sensitive 0')",
    f"""
    CREATE TRIGGER merges_fts_delete AFTER DELETE ON merges BEGIN
        INSERT INTO merges_fts (merges_fts, rowid, readable)
        VALUES ('delete', (old.run_id << {FTS_RANK_BITS}) + old.rank, old.readable);
    END
    """,
]


def _v1(conn: sqlite3.Connection) -> None:
    """Runs, merges, top pieces; the trigram index where this SQLite has one."""
    statements = list(_V1_TABLES)
    if trigram_supported(conn):
        statements += _V1_FTS
    for sql in statements:
        conn.execute(sql)


def _v2(conn: sqlite3.Connection) -> None:
    """Indexes on a merge's parts, for "later merges that use this token"."""
    conn.execute("CREATE INDEX merges_by_left ON merges (run_id, left_id)")
    conn.execute("CREATE INDEX merges_by_right ON merges (run_id, right_id)")


def _v3(conn: sqlite3.Connection) -> None:
    """Each merge's runner-up count (the best pair that lost), for teaching's "why". Runs
    stored before keep NULL there: "not recorded", not a count of 0."""
    conn.execute("ALTER TABLE merges ADD COLUMN runner_up INTEGER")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3]
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def init_db(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Bring a connection's database up to `SCHEMA_VERSION`; a no-op when it is current.

    Works on any connection (a test may inject `sqlite3.connect(":memory:")`). A database from
    a newer app, or another program's database, is refused rather than guessed at.
    """
    current = check_schema(conn)
    for version in range(current + 1, SCHEMA_VERSION + 1):
        with transaction(conn):
            # Another process may have migrated while we waited for the lock.
            if schema_version(conn) < version:
                MIGRATIONS[version - 1](conn)
                conn.execute(f"PRAGMA user_version = {version}")
    return conn


def check_schema(conn: sqlite3.Connection) -> int:
    """The database's schema version, after checking that this app can use it: not newer than
    this app, and not some other program's SQLite file (which may well have a `runs` table)."""
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"the run database has schema {current}, newer than this app's {SCHEMA_VERSION}; "
            "update BPE Workbench or point BPE_WORKBENCH_DB at another file"
        )
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    ours = current > 0 and {"runs", "merges", "top_pieces"} <= tables
    if (current == 0 and tables) or (current > 0 and not ours):
        shown = ", ".join(sorted(tables)[:5]) or "none of its own"
        raise StoreError(
            "this SQLite file is not a BPE Workbench run database (it holds other tables: "
            f"{shown}); point --db or BPE_WORKBENCH_DB at another file"
        )
    if current > 0:
        _check_columns(conn, current)
    return current


# The columns each of our tables must have (a foreign file may have tables of our names).
_COLUMNS = {
    "runs": {"id", "name", "created", "updated", "state", "pid", "owner", "corpus", "settings",
             "timings", "stats", "merge_count", "vocab_size", "stop_reason", "error"},
    "merges": {"run_id", "rank", "new_id", "left_id", "right_id", "token", "readable", "count",
               "length", "is_new", "ties", "corpus_tokens"},
    "top_pieces": {"run_id", "piece", "count"},
}  # fmt: skip


# Columns a later migration added: a file at that version must have them.
_ADDED_COLUMNS = {3: ("merges", "runner_up")}


def _check_columns(conn: sqlite3.Connection, version: int) -> None:
    for table, wanted in _COLUMNS.items():
        wanted = wanted | {c for v, (t, c) in _ADDED_COLUMNS.items() if t == table and v <= version}
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing = sorted(wanted - have)
        if missing:
            raise StoreError(
                f"this SQLite file is not a BPE Workbench run database (its {table} table has "
                f"no column {missing[0]}); point --db or BPE_WORKBENCH_DB at another file"
            )


def has_fts(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'merges_fts'"
    ).fetchone()
    return row is not None
