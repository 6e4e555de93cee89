"""GPT-2 `vocab.json` (mapped token -> id) + `merges.txt` (`#version: 0.2`, then `left right`).

Vocabulary entries that are neither single bytes nor made by a merge and look like specials
(`<...>` or `[...]`, e.g. GPT-2's `<|endoftext|>`) are special tokens: the files have no other
place for them. Any other such entry means a truncated or mismatched `merges.txt`: an error.
The files carry no pattern, so the loader takes one (default: the gpt2 preset).

tiktoken's `data_gym_to_mergeable_bpe_ranks` accepts what we write only when the ids follow
GPT-2's own layout (bytes 0..255 in its printable-first order, merge i -> 256 + i); Hugging Face
accepts any consistent ids.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.engine.byte_mapping import to_mapped
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats._common import (
    as_file_error,
    read_json,
    read_text,
    unmapped,
    write_atomic,
)
from workbench.engine.patterns import resolve
from workbench.engine.tokenizer import Tokenizer

VOCAB = "vocab.json"
MERGES = "merges.txt"
HEADER = "#version: 0.2"


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    vocab = {to_mapped(token): tid for tid, token in sorted(tokenizer.vocab.items())}
    vocab.update(tokenizer.special_tokens)
    lines = [HEADER] + [f"{to_mapped(a)} {to_mapped(b)}" for a, b in tokenizer.merge_bytes]
    return [
        write_atomic(out_dir / VOCAB, json.dumps(vocab, ensure_ascii=False, indent=1) + "\n"),
        write_atomic(out_dir / MERGES, "\n".join(lines) + "\n"),
    ]


def read_merges(path: Path) -> list[tuple[str, str]]:
    """`left right` pairs; the `#version` header is optional, blank lines are an error."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    merges: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=1):
        if number == 1 and line.startswith("#version"):
            continue
        parts = line.rstrip("\r").split(" ")
        if len(parts) != 2 or not all(parts):
            what = "is blank" if not line.strip() else f"is not 'left right': {line[:40]!r}"
            raise TokenizerFileError(f"{path}:{number}", what)
        merges.append((parts[0], parts[1]))
    return merges


def _looks_special(token: str) -> bool:
    return (token[0], token[-1]) in {("<", ">"), ("[", "]")}


def find_pair(path: Path) -> tuple[Path, Path] | None:
    """(vocab, merges) for a folder or either file: `vocab.json`/`merges.txt`, also prefixed
    (`gpt2_vocab.json` + `gpt2_merges.txt`, `x-vocab.json` + `x-merges.txt`)."""
    if path.is_dir():
        candidates = [path / VOCAB] + sorted(path.glob(f"*{VOCAB}"))
    elif path.name.endswith(VOCAB):
        candidates = [path]
    elif path.name.endswith(MERGES):
        candidates = [path.with_name(path.name[: -len(MERGES)] + VOCAB)]
    else:
        return None
    for vocab in candidates:
        merges = vocab.with_name(vocab.name[: -len(VOCAB)] + MERGES)
        if vocab.is_file() and merges.is_file():
            return vocab, merges
    return None


def load(vocab_path: Path, merges_path: Path, pattern: str | None = None) -> Tokenizer:
    raw = read_json(vocab_path)
    if not isinstance(raw, dict) or not all(isinstance(v, int) for v in raw.values()):
        raise TokenizerFileError(str(vocab_path), "is not a JSON object of token -> integer id")
    pairs = read_merges(merges_path)
    by_mapped = raw
    made = {f"{a}{b}" for a, b in pairs}
    vocab: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    for token, tid in by_mapped.items():
        if len(token) > 1 and token not in made:
            if not _looks_special(token):
                raise TokenizerFileError(
                    str(vocab_path),
                    f"token {token!r} (id {tid}) is not a byte and no merge in {MERGES} makes it"
                    " (truncated or mismatched files?)",
                )
            specials[token] = tid
        else:
            vocab[tid] = unmapped(vocab_path, token)
    merges: list[tuple[int, int]] = []
    for number, (left, right) in enumerate(pairs, start=1):
        for part in (left, right):
            if part not in by_mapped:
                raise TokenizerFileError(
                    f"{merges_path}:{number}", f"merge part {part!r} is not in {VOCAB}"
                )
        merges.append((by_mapped[left], by_mapped[right]))
    try:
        return Tokenizer.from_vocab_merges(vocab, merges, resolve(pattern), specials)
    except TokenizerError as exc:
        raise as_file_error(vocab_path, exc) from None
