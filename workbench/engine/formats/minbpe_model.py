"""minbpe `tokenizer.model`: `minbpe v1`, the pattern, the special count, `special id` lines, then
`left right` per merge, where ids 0..255 are the bytes and merge i makes id 256 + i.

Only tokenizers with exactly that id layout can be written (no reused ids, since minbpe would
give the repeat a new id); specials must not contain whitespace (minbpe splits lines on it).
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats._common import as_file_error, read_text, write_atomic
from workbench.engine.tokenizer import Tokenizer

FILE = "tokenizer.model"
VERSION = "minbpe v1"


def _check_exportable(tokenizer: Tokenizer) -> None:
    vocab = tokenizer.vocab
    if any(vocab.get(b) != bytes([b]) for b in range(256)):
        raise TokenizerError("minbpe needs ids 0..255 to be the single bytes; these are not")
    for rank, tid in enumerate(tokenizer.merge_results):
        if tid != 256 + rank:
            raise TokenizerError(
                f"minbpe needs merge {rank} to make id {256 + rank}, but it makes id {tid}"
                " (a reused id or another layout); export to hf, gpt2 or tiktoken instead"
            )
    for name in tokenizer.special_tokens:
        if not name or any(c.isspace() for c in name):
            raise TokenizerError(f"minbpe cannot store the special token {name!r} (whitespace)")
    if "\n" in tokenizer.pattern or "\r" in tokenizer.pattern:
        raise TokenizerError("minbpe cannot store a pattern with a line break")


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    _check_exportable(tokenizer)
    lines = [VERSION, tokenizer.pattern, str(len(tokenizer.special_tokens))]
    lines += [f"{name} {tid}" for name, tid in tokenizer.special_tokens.items()]
    lines += [f"{left} {right}" for left, right in tokenizer.merges]
    return [write_atomic(out_dir / FILE, "\n".join(lines) + "\n")]


def is_minbpe(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.readline().strip() == VERSION.encode()
    except OSError:
        return False


def load(path: Path, pattern: str | None = None) -> Tokenizer:
    lines = read_text(path).split("\n")
    if lines[0].strip() != VERSION:
        raise TokenizerFileError(str(path), f"does not start with {VERSION!r} (not a minbpe model)")
    if len(lines) < 3 or not lines[2].strip().isdigit():
        raise TokenizerFileError(f"{path}:3", "expected the number of special tokens")
    file_pattern, count = lines[1], int(lines[2])
    specials: dict[str, int] = {}
    merges: list[tuple[int, int]] = []
    for number, line in enumerate(lines[3:], start=4):
        if not line.strip():
            continue
        parts = line.split()
        if len(specials) < count:
            if len(parts) != 2 or not parts[1].isdigit():
                raise TokenizerFileError(f"{path}:{number}", "expected 'special id'")
            specials[parts[0]] = int(parts[1])
        elif len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise TokenizerFileError(f"{path}:{number}", f"expected 'id id', got {line[:40]!r}")
        else:
            merges.append((int(parts[0]), int(parts[1])))
    if len(specials) < count:
        raise TokenizerFileError(str(path), f"lists {len(specials)} of {count} special tokens")
    vocab = {b: bytes([b]) for b in range(256)}
    for rank, (left, right) in enumerate(merges):
        if left not in vocab or right not in vocab:
            missing = left if left not in vocab else right
            raise TokenizerFileError(
                str(path), f"merge {rank} uses id {missing} before any merge makes it"
            )
        vocab[256 + rank] = vocab[left] + vocab[right]
    try:
        return Tokenizer.from_vocab_merges(vocab, merges, file_pattern or pattern or "", specials)
    except TokenizerError as exc:
        raise as_file_error(path, exc) from None
