"""Where the run database lives and how a connection to it is set up.

Every connection gets the same pragmas: WAL (readers never wait for the training writer),
`synchronous=NORMAL` (safe with WAL: a crash loses at most the last commits, never consistency),
a busy timeout (the rare writer-writer overlap, e.g. a rename during training, waits instead of
failing) and foreign keys on. Transactions are explicit (`isolation_level=None`), so nothing
holds a read or write lock longer than the statement or `BEGIN ... COMMIT` that needs it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import platformdirs

from workbench.store.checks import CraftedRow
from workbench.store.errors import StoreError, StoreOutOfMemory

ENV_DB = "BPE_WORKBENCH_DB"
APP_DIR = "bpe-workbench"
BUSY_TIMEOUT_MS = 5000


def default_db_path() -> Path:
    """`$BPE_WORKBENCH_DB`, else `runs.db` in the platform's per-user data folder (platformdirs).

    Linux: `$XDG_DATA_HOME/bpe-workbench/runs.db` (default `~/.local/share/...`); macOS:
    `~/Library/Application Support/...`; Windows: `%APPDATA%\\...` (roaming, as before
    platformdirs chose it: existing databases stay where they are).
    """
    override = os.environ.get(ENV_DB)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_data_path(APP_DIR, appauthor=False, roaming=True) / "runs.db"


def utf8_text(data: bytes) -> str:
    """SQLite hands back what a TEXT value holds, UTF-8 or not: a crafted file's bad bytes are
    refused (`CraftedRow`, one line naming the file) rather than a UnicodeDecodeError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CraftedRow(f"a text value is not UTF-8: {data[:40]!r}") from None


def configure(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Apply the store's pragmas to a connection (also to one a test injects)."""
    conn.text_factory = utf8_text
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    # An in-memory database answers "memory" here; WAL only applies to files.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def connect(path: str | os.PathLike[str], read_only: bool = False) -> sqlite3.Connection:
    """Open (creating folders as needed) and configure a connection to the run database.

    `read_only`: open with SQLite's `mode=ro`, for commands that only read (listing a database
    on a read-only disk or owned by someone else works; nothing is created or migrated).
    `check_same_thread=False` because the window hands its store to a query thread; each owner
    still uses a connection from one thread at a time (RunStore serialises with a lock).
    """
    path = Path(path)
    memory = str(path) == ":memory:"
    if read_only and not memory and not path.is_file():
        raise StoreError(f"{path}: no run database here")
    if not memory and not read_only:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{path}: cannot make the run database's folder: {exc.strerror or exc}"
            ) from None
    try:
        if read_only and not memory:
            return _connect_read_only(path)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        return configure(conn)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the run database ({exc})") from None
    except (CraftedRow, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot open the run database ({_reason(exc)})") from None


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """`mode=ro`; where even that cannot start (a WAL database in a folder this user cannot
    write holds no -shm file to share), `immutable=1`: no writer can be at work there."""
    last: Exception | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        uri = f"{path.resolve().as_uri()}?{options}"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.text_factory = utf8_text
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # bad files fail here
            return conn
        except (sqlite3.OperationalError, UnicodeDecodeError) as exc:
            # UnicodeDecodeError: SQLite's own message quoting a damaged schema's bytes
            conn.close()
            last = exc
        except BaseException:
            conn.close()
            raise
    assert last is not None
    raise last


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open. SQLite ends some transactions itself (a full
    disk, an I/O error): a second ROLLBACK would then fail with "no transaction is active" and
    hide the error that matters, so it is only tried when needed and never raises."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE ... COMMIT`, rolled back (see `rollback`) if anything fails."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


# SQLite's codes for a failed allocation or memory mapping (`sqlite3` names them, Python 3.11+):
# its messages for the mapping ones say "disk I/O error", which would send a user to the disk.
_OUT_OF_MEMORY = frozenset(
    {"SQLITE_NOMEM", "SQLITE_IOERR_NOMEM", "SQLITE_IOERR_SHMMAP", "SQLITE_IOERR_MMAP"}
)


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):  # SQLite quoting bytes of a damaged schema
        return "database disk image is malformed (text that is not UTF-8)"
    return str(exc) or type(exc).__name__


def as_store_error(
    where: str | os.PathLike[str] | None, exc: sqlite3.Error | UnicodeDecodeError
) -> StoreError:
    """A SQLite error as a one-line StoreError naming the database (StoreOutOfMemory when
    SQLite ran out of memory, whatever its message says)."""
    if getattr(exc, "sqlite_errorname", "") in _OUT_OF_MEMORY:
        return StoreOutOfMemory(f"{where or 'run database'}: out of memory")
    reason = _reason(exc)
    if "malformed" in reason or "not a database" in reason:
        reason += " (the file is damaged; restore a copy or point --db at another file)"
    return StoreError(f"{where or 'run database'}: {reason}")


def naming(where: str | os.PathLike[str] | None, exc: StoreError) -> StoreError:
    """`exc` with the database's name in front, unless its message names it already."""
    if where is None or str(where) in str(exc):
        return exc
    return StoreError(f"{where}: {exc}")
