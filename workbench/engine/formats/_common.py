"""Helpers every format shares: atomic writes, JSON reading, mapped-token decoding, the sidecar.

The sidecar is a small JSON file beside files that cannot hold a pattern or special tokens
(GPT-2's `vocab.json` + `merges.txt`: `bpe-workbench.json`; tiktoken: `tokenizer.tiktoken.json`):
`{"pattern": "...", "special_tokens": {"<|endoftext|>": 50256}, "unicode_version": "16.0.0"}`.
Every loader reads it, so a run trained with `--pattern o200k` or a special such as `###` reloads
as it was trained.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any

import numpy as np

from workbench.engine.byte_mapping import bytes_to_unicode, unicode_to_bytes
from workbench.engine.encode.ids import MAX_ID, check_id, parse_id
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.encode.validation import check_specials
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.patterns.unicode_classes import UNICODE_VERSION

_json_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses (C)
# Code point b (0..255) -> the mapped character of byte b: a `str.translate` table.
_MAPPED_CHARS = "".join(bytes_to_unicode()[b] for b in range(256))


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


def mapped_vocab(tokenizer: Tokenizer) -> dict[int, str]:
    """id -> mapped token (`to_mapped`) for every ordinary token, in id order, mapped in one
    pass: all tokens joined, decoded as Latin-1 (byte b -> code point b) and translated, then
    cut apart again. A per-token `to_mapped` took a third of an export's time."""
    items = sorted(tokenizer.vocab.items())
    text = b"".join(token for _, token in items).decode("latin-1").translate(_MAPPED_CHARS)
    mapped: dict[int, str] = {}
    start = 0
    for tid, token in items:
        end = start + len(token)
        mapped[tid] = text[start:end]
        start = end
    return mapped


def flat_json_object(items: Iterable[tuple[str, int]]) -> str:
    """`json.dumps(dict(items), ensure_ascii=False, indent=1)` for string keys and int values,
    byte for byte, without the pure-Python encoder that `indent` forces (several times slower
    on a 100k-token vocab.json). Later keys win, as in a dict."""
    body = ",\n".join(f" {_json_string(key)}: {int(value)}" for key, value in dict(items).items())
    return "{\n" + body + "\n}" if body else "{}"


def read_text(path: Path) -> str:
    """The file as UTF-8 text, or a one-line file error."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenizerFileError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TokenizerFileError(str(path), "is not UTF-8 text") from None


def read_json(path: Path) -> Any:
    """The file's JSON value; bad JSON, nesting too deep and giant numbers are file errors."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise TokenizerFileError(
            str(path), f"bad JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise TokenizerFileError(str(path), "JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise TokenizerFileError(str(path), f"bad JSON: {str(exc)[:80]}") from None


def write_sidecar(path: Path, tokenizer: Tokenizer) -> Path:
    """Write the pattern and specials of `tokenizer` to the sidecar at `path`."""
    side = {
        "pattern": tokenizer.pattern,
        "special_tokens": tokenizer.special_tokens,
        "unicode_version": UNICODE_VERSION,
    }
    return write_atomic(path, json.dumps(side, ensure_ascii=False, indent=1) + "\n")


def read_sidecar(path: Path) -> tuple[str | None, dict[str, int]]:
    """(pattern or None, specials) from a sidecar; types and ids checked."""
    side = read_json(path)
    if not isinstance(side, dict):
        raise TokenizerFileError(str(path), "is not a JSON object {pattern, special_tokens}")
    pattern = side.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise TokenizerFileError(str(path), "'pattern' is not a string")
    specials = side.get("special_tokens", {})
    if not isinstance(specials, dict):
        raise TokenizerFileError(str(path), "'special_tokens' is not an object of name -> id")
    try:
        check_specials(specials)
    except TokenizerError as exc:
        raise as_file_error(path, exc) from None
    return pattern, dict(specials)


def file_id(path: Path | str, value: object, what: str) -> int:
    """`ids.check_id` reported against the file."""
    try:
        return check_id(value, what)
    except TokenizerError as exc:
        raise TokenizerFileError(str(path), str(exc)) from None


def text_id(path: Path | str, text: str, what: str) -> int:
    """`ids.parse_id` (ASCII digits only) reported against the file and line."""
    try:
        return parse_id(text, what)
    except TokenizerError as exc:
        raise TokenizerFileError(str(path), str(exc)) from None


def plain_ids(values: list[object]) -> bool:
    """Whether every value is a plain `int` id (not bool, 0..MAX_ID): `file_id` of each passes."""
    return {type(v) for v in values} <= {int} and (
        not values or 0 <= min(values) <= max(values) <= MAX_ID  # type: ignore[type-var]
    )


def file_ids(path: Path | str, items: dict[str, object]) -> None:
    """`file_id` of every value of `items` (token -> id), all at once where each is a plain int
    (o200k: 10 ms, not 0.2 s); else one by one, which names the first at fault."""
    if plain_ids(list(items.values())):
        return
    for token, tid in items.items():
        file_id(path, tid, f"token {token[:40]!r}")


def split_pairs(lines: list[str]) -> tuple[list[str], list[str]] | None:
    """(lefts, rights) of `left right` lines, all at once (o200k's 200k merges: 0.05 s, not
    0.2), when every line holds exactly one space between two non-empty parts; else None, for
    the caller's line-by-line reader to name the line at fault."""
    if set(map(str.count, lines, repeat(" "))) != {1}:
        return None
    parts = " ".join(lines).split(" ")
    return None if "" in parts else (parts[0::2], parts[1::2])


def _byte_of_code_point() -> np.ndarray:
    """Code point -> byte of the byte-level alphabet (`unicode_to_bytes`), -1 elsewhere."""
    table = unicode_to_bytes()
    found = np.full(max(map(ord, table)) + 1, -1, dtype=np.int16)
    for char, byte in table.items():
        found[ord(char)] = byte
    return found


_BYTE_OF = _byte_of_code_point()


def unmapped_all(path: Path, tokens: list[str]) -> list[bytes]:
    """`unmapped` of each token, all at once (o200k: 30 ms, not 0.5 s): the tokens joined,
    their code points looked up in one array, the bytes cut apart again. A token that is not a
    string or holds a character outside the alphabet is then found one by one, by name."""
    if {type(t) for t in tokens} <= {str}:
        points = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype=np.uint32)
        if not points.size or points.max() < _BYTE_OF.shape[0]:
            found = _BYTE_OF[points]
            if not found.size or found.min() >= 0:
                raw = found.astype(np.uint8).tobytes()
                ends = list(accumulate(map(len, tokens)))
                return [raw[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    return [unmapped(path, token) for token in tokens]


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
