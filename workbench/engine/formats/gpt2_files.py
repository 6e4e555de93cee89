"""GPT-2 `vocab.json` (mapped token -> id) + `merges.txt` (`#version: 0.2`, then `left right`),
with the sidecar `bpe-workbench.json` (pattern and special tokens; see `_common`).

The two files have no place for a pattern or for special tokens. We write the specials into
`vocab.json` too (Hugging Face reads them there) and both into the sidecar, which the loader
reads first. Without a sidecar the pattern is the one given (default: the gpt2 preset), and a
vocabulary entry that is neither a byte nor made by a merge is a special only if it is a
well-known one (`KNOWN_SPECIALS`, e.g. GPT-2's `<|endoftext|>`): any other such entry means a
truncated or mismatched `merges.txt`, an error (a `<...>`-shaped string is not proof).

tiktoken's `data_gym_to_mergeable_bpe_ranks` accepts what we write only when the ids follow
GPT-2's own layout (bytes 0..255 in its printable-first order, merge i -> 256 + i); Hugging Face
accepts any consistent ids.
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats._common import (
    as_file_error,
    file_id,
    flat_json_object,
    mapped_vocab,
    read_json,
    read_sidecar,
    read_text,
    unmapped,
    write_atomic,
    write_sidecar,
)
from workbench.engine.patterns.regexes import resolve

VOCAB = "vocab.json"
MERGES = "merges.txt"
SIDECAR = "bpe-workbench.json"
HEADER = "#version: 0.2"
# Specials of well-known models, recognised in a vocab.json that comes without a sidecar.
KNOWN_SPECIALS = frozenset(
    {
        "<|endoftext|>", "<|startoftext|>", "<|endofprompt|>", "<|padding|>", "<|im_start|>",
        "<|im_end|>", "<|im_sep|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
        "<s>", "</s>", "<pad>", "<unk>", "<mask>", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]",
    }
)  # fmt: skip


def sidecar_path(vocab_path: Path) -> Path:
    """`out/vocab.json` -> `out/bpe-workbench.json`; `x-vocab.json` -> `x-bpe-workbench.json`."""
    return vocab_path.with_name(vocab_path.name[: -len(VOCAB)] + SIDECAR)


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    mapped = mapped_vocab(tokenizer)
    vocab = {token: tid for tid, token in mapped.items()}
    # Hugging Face reads specials from vocab.json; one spelled like a token (`x`, `é`) can only
    # live in the sidecar.
    vocab.update((name, tid) for name, tid in tokenizer.special_tokens.items() if name not in vocab)
    lines = [HEADER] + [f"{mapped[a]} {mapped[b]}" for a, b in tokenizer.merges]
    return [
        write_atomic(out_dir / VOCAB, flat_json_object(vocab.items()) + "\n"),
        write_atomic(out_dir / MERGES, "\n".join(lines) + "\n"),
        write_sidecar(sidecar_path(out_dir / VOCAB), tokenizer),
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
    if not isinstance(raw, dict):
        raise TokenizerFileError(str(vocab_path), "is not a JSON object of token -> id")
    for token, tid in raw.items():
        file_id(vocab_path, tid, f"token {token[:40]!r}")
    side = sidecar_path(vocab_path)
    side_specials: dict[str, int] | None = None
    if side.is_file():
        side_pattern, side_specials = read_sidecar(side)
        pattern = side_pattern or pattern
    pairs = read_merges(merges_path)
    made = {a + b for a, b in pairs}
    vocab: dict[int, bytes] = {}
    specials: dict[str, int] = dict(side_specials or {})
    by_mapped: dict[str, int] = {}
    for token, tid in raw.items():
        if specials.get(token) == tid:  # the sidecar's special, also listed for Hugging Face
            continue
        if len(token) > 1 and token not in made:
            if side_specials is not None or token not in KNOWN_SPECIALS:
                raise TokenizerFileError(
                    str(vocab_path),
                    f"token {token[:40]!r} (id {tid}) is not a byte and no merge in {MERGES}"
                    f" makes it (truncated or mismatched files? a special token must be listed"
                    f" in {side.name})",
                )
            specials[token] = tid
        else:
            if tid in vocab:
                raise TokenizerFileError(str(vocab_path), f"two tokens share id {tid}")
            vocab[tid] = unmapped(vocab_path, token)
            by_mapped[token] = tid
    merges: list[tuple[int, int]] = []
    for number, (left, right) in enumerate(pairs, start=1):
        for part in (left, right):
            if part not in by_mapped:
                raise TokenizerFileError(
                    f"{merges_path}:{number}", f"merge part {part[:40]!r} is not in {VOCAB}"
                )
        merges.append((by_mapped[left], by_mapped[right]))
    try:
        return Tokenizer.from_vocab_merges(vocab, merges, resolve(pattern), specials)
    except TokenizerError as exc:
        raise as_file_error(vocab_path, exc) from None
