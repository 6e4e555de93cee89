"""Where the run database lives and how a connection to it is set up.

Every connection gets the same pragmas: WAL (readers never wait for the training writer),
`synchronous=NORMAL` (safe with WAL: a crash loses at most the last commits, never consistency),
a busy timeout (the rare writer-writer overlap, e.g. a rename during training, waits instead of
failing) and foreign keys on. Transactions are explicit (`isolation_level=None`), so nothing
holds a read or write lock longer than the statement or `BEGIN ... COMMIT` that needs it.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

from workbench.store.errors import StoreError

ENV_DB = "BPE_WORKBENCH_DB"
APP_DIR = "bpe-workbench"
BUSY_TIMEOUT_MS = 5000


def default_db_path() -> Path:
    """`$BPE_WORKBENCH_DB`, else `runs.db` in the platform's per-user data folder.

    Linux: `$XDG_DATA_HOME/bpe-workbench/runs.db` (default `~/.local/share/...`); macOS:
    `~/Library/Application Support/...`; Windows: `%APPDATA%\\...`.
    """
    override = os.environ.get(ENV_DB)
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_DIR / "runs.db"


def configure(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Apply the store's pragmas to a connection (also to one a test injects)."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    # An in-memory database answers "memory" here; WAL only applies to files.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open (creating folders as needed) and configure a connection to the run database.

    `check_same_thread=False` because the window hands its store to a query thread; each owner
    still uses a connection from one thread at a time (RunStore serialises with a lock).
    """
    path = Path(path)
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        return configure(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open the run database ({exc})") from None
