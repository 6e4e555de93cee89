"""The words for why a corpus file cannot be read: a failed stat, open or listing, a special
file where a regular one was expected, a read that failed (a truncated or corrupt archive).

Only the wording: raising the CorpusError is left to the callers."""

from __future__ import annotations

import errno
import stat
import zlib
from pathlib import Path


def os_problem(path: Path, exc: OSError, verb: str) -> str:
    """The words for a failed stat, open or listing: 'broken symbolic link', ..."""
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "broken symbolic link" if path.is_symlink() else "no such file or folder"
    return f"cannot {verb}: {exc.strerror or exc}"


def not_regular(mode: int) -> str:
    kinds = {
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFSOCK: "a socket",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
    }
    return f"not a regular file: {kinds.get(stat.S_IFMT(mode), 'a special file')}"


def read_problem(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the compressed data ends too early (truncated file?)"
    if isinstance(exc, zlib.error):
        return f"corrupt compressed data ({exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
