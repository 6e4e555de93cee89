"""minbpe `tokenizer.model`: `minbpe v1`, the pattern, the special count, `special id` lines, then
`left right` per merge, where ids 0..255 are the bytes and merge i makes id 256 + i.

Only tokenizers with exactly that id layout can be written (no reused ids, since minbpe would
give the repeat a new id); specials must not contain whitespace (minbpe splits lines on it).
An empty pattern line is minbpe's `BasicTokenizer`: no pre-tokenization (`patterns.NO_SPLIT`).
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats._common import as_file_error, read_text, text_id, write_atomic
from workbench.engine.patterns.regexes import NO_SPLIT

FILE = "tokenizer.model"
MAX_TOTAL_BYTES = 256 << 20
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
    check_can_hold(tokenizer.pattern, tuple(tokenizer.special_tokens))


def check_can_hold(pattern: str, specials: tuple[str, ...]) -> None:
    """Refuse what the file cannot store: a special with whitespace, a pattern with a line break
    (minbpe reads one line per field and splits them on whitespace)."""
    for name in specials:
        if not name or any(c.isspace() for c in name) or len(name.split()) != 1:
            raise TokenizerError(
                f"minbpe cannot store the special token {name!r} (empty or with whitespace)"
            )
    if any(c in pattern for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        raise TokenizerError("minbpe cannot store a pattern with a line break")


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    _check_exportable(tokenizer)
    pattern = "" if tokenizer.pattern == NO_SPLIT else tokenizer.pattern
    lines = [VERSION, pattern, str(len(tokenizer.special_tokens))]
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
    if len(lines) < 3:
        raise TokenizerFileError(f"{path}:3", "expected the number of special tokens")
    count = text_id(f"{path}:3", lines[2].strip(), "the number of special tokens")
    # An empty pattern line is a BasicTokenizer: the whole text is one piece.
    file_pattern = lines[1] or NO_SPLIT
    specials: dict[str, int] = {}
    merges: list[tuple[int, int]] = []
    for number, line in enumerate(lines[3:], start=4):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split()
        if len(parts) != 2:
            what = "'special id'" if len(specials) < count else "'id id'"
            raise TokenizerFileError(where, f"expected {what}, got {line[:40]!r}")
        if len(specials) < count:
            if parts[0] in specials:
                raise TokenizerFileError(where, f"special token {parts[0]!r} is listed twice")
            specials[parts[0]] = text_id(where, parts[1], f"special token {parts[0]!r}")
        else:
            merges.append((text_id(where, parts[0], "merge"), text_id(where, parts[1], "merge")))
    if len(specials) < count:
        raise TokenizerFileError(str(path), f"lists {len(specials)} of {count} special tokens")
    vocab = {b: bytes([b]) for b in range(256)}
    total = 256
    for rank, (left, right) in enumerate(merges):
        if left not in vocab or right not in vocab:
            missing = left if left not in vocab else right
            raise TokenizerFileError(
                str(path), f"merge {rank} uses id {missing} before any merge makes it"
            )
        # Tokens are made, not listed: 40 merges of a token with itself would ask for a TB.
        total += len(vocab[left]) + len(vocab[right])
        if total > MAX_TOTAL_BYTES:
            raise TokenizerFileError(
                str(path), f"its tokens would hold more than {MAX_TOTAL_BYTES >> 20} MiB"
            )
        vocab[256 + rank] = vocab[left] + vocab[right]
    try:
        return Tokenizer.from_vocab_merges(vocab, merges, file_pattern, specials)
    except TokenizerError as exc:
        raise as_file_error(path, exc) from None
