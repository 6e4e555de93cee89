"""Helpers every format shares: atomic writes, JSON reading, mapped-token decoding."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from workbench.engine.byte_mapping import unicode_to_bytes
from workbench.engine.errors import TokenizerError, TokenizerFileError


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write to a temp file in the same folder, then `os.replace`: readers never see half a file.

    The file is created with mode 0666 less the umask (0644 usually), as an editor would make
    it; `mkstemp` would make it 0600, unreadable to anyone else."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenizerFileError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TokenizerFileError(str(path), "is not UTF-8 text") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise TokenizerFileError(
            str(path), f"bad JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


def unmapped(path: Path, token: str) -> bytes:
    """'Ġthe' -> b' the', or a file error for a character outside the byte-level alphabet."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in token)
    except KeyError:
        raise TokenizerFileError(
            str(path), f"token {token!r} is not in the byte-level alphabet (not byte-level BPE?)"
        ) from None
    except TypeError:
        raise TokenizerFileError(str(path), f"token {token!r} is not a string") from None


def as_file_error(path: Path, exc: TokenizerError) -> TokenizerFileError:
    """A consistency error from the tokenizer, reported against the file it came from."""
    return TokenizerFileError(str(path), str(exc))
