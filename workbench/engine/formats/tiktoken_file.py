"""tiktoken `tokenizer.tiktoken` (`base64(token) rank` lines) + sidecar `tokenizer.tiktoken.json`.

tiktoken's ids are its ranks, so we write rank = id; that is faithful only when merged tokens'
ids grow in merge order (true for trained tokenizers, GPT-2, and Hugging Face-trained files),
and the exporter refuses otherwise. The file lists no merges: the loader rebuilds them (the merge
of rank r is the two parts BPE leaves when only ranks below r may merge). The sidecar holds what
the file cannot: `{"pattern": ..., "special_tokens": {token: id}}`; without it the loader uses
the given pattern (default the gpt2 preset) and no specials.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

from workbench.engine.encode.ids import MAX_ID
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats._common import (
    as_file_error,
    read_sidecar,
    read_text,
    text_id,
    write_atomic,
    write_sidecar,
)
from workbench.engine.patterns.regexes import resolve

FILE = "tokenizer.tiktoken"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _check_exportable(tokenizer: Tokenizer) -> None:
    last = -1
    for tid in sorted(set(tokenizer.merge_results), key=tokenizer.token_rank):
        if tid <= last:
            raise TokenizerError(
                "tiktoken ranks are token ids, but these ids are not in merge order "
                f"(id {tid} is made after id {last}); export to hf or gpt2 instead"
            )
        last = tid


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    _check_exportable(tokenizer)
    lines = [
        f"{base64.b64encode(token).decode('ascii')} {tid}"
        for tid, token in sorted(tokenizer.vocab.items())
    ]
    path = out_dir / FILE
    return [
        write_atomic(path, "\n".join(lines) + "\n"),
        write_sidecar(sidecar_path(path), tokenizer),
    ]


# A file of nothing but `base64 rank` lines (what tiktoken and we write): read at once, not line
# by line (o200k: 0.05 s instead of 0.33). Anything else, or any line that would fail, goes
# through the line-by-line reader, which names the line.
_PLAIN_FILE = re.compile(
    r"(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,10}\n)*(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,10})?"
)


def _plain_ranks(text: str) -> dict[int, bytes] | None:
    """`read_ranks` of a file of plain lines (`_PLAIN_FILE`) that all read well, else None."""
    if not text or _PLAIN_FILE.fullmatch(text) is None:
        return None
    # One flat list of strings: a list per line would be 200,000 containers for the collector.
    words = text.replace("\n", " ").split(" ")
    if not words[-1]:
        words.pop()
    try:
        tokens = [binascii.a2b_base64(token) for token in words[0::2]]
    except binascii.Error:  # bad padding: the reader names the line
        return None
    ranks = [int(rank) for rank in words[1::2]]
    if max(ranks) > MAX_ID or any(a >= b for a, b in zip(ranks, ranks[1:], strict=False)):
        return None
    return dict(zip(ranks, tokens, strict=True))


def read_ranks(path: Path) -> dict[int, bytes]:
    """rank -> token bytes; ranks must increase line by line. Gaps are allowed, as tiktoken
    allows them: an extended cl100k's new tokens follow its specials, which sit in a gap of the
    ranks (how sparse the ids may be is checked with the vocabulary, `ids.check_dense`)."""
    text = read_text(path)
    plain = _plain_ranks(text)
    if plain is not None:
        return plain
    ranks: dict[int, bytes] = {}
    last = -1
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(where, f"is not 'base64 rank': {line[:40]!r}")
        rank = text_id(where, parts[1], "rank")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            raise TokenizerFileError(where, f"bad base64 {parts[0][:40]!r}") from None
        if rank <= last:
            what = "repeats" if rank in ranks else "goes back"
            raise TokenizerFileError(where, f"rank {rank} {what}: ranks must increase")
        ranks[rank] = token
        last = rank
    if not ranks:
        raise TokenizerFileError(str(path), "is empty")
    return ranks


def load(path: Path, pattern: str | None = None) -> Tokenizer:
    ranks = read_ranks(path)
    specials: dict[str, int] = {}
    side_path = sidecar_path(path)
    if side_path.is_file():
        side_pattern, specials = read_sidecar(side_path)
        pattern = side_pattern or pattern
    try:
        return Tokenizer.from_ranks(ranks, resolve(pattern), specials)
    except TokenizerError as exc:
        raise as_file_error(path, exc) from None
