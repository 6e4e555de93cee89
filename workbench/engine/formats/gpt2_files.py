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
    file_ids,
    flat_json_object,
    mapped_vocab,
    read_json,
    read_sidecar,
    read_text,
    split_pairs,
    unmapped_all,
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


def _pairs_at_once(text: str, lines: list[str]) -> list[tuple[str, str]] | None:
    """`read_merges`' pairs when every line is `left right` (o200k's 200k lines: 0.05 s, not
    0.2), else None: the lines are then read one by one, which names the first at fault."""
    body = lines[1:] if lines and lines[0].startswith("#version") else lines
    split = None if "\r" in text else split_pairs(body)
    return None if split is None else list(zip(*split, strict=True))


def read_merges(path: Path) -> list[tuple[str, str]]:
    """`left right` pairs; the `#version` header is optional, blank lines are an error."""
    text = read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    at_once = _pairs_at_once(text, lines)
    if at_once is not None:
        return at_once
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


def _merge_ids(
    path: Path, pairs: list[tuple[str, str]], ids: dict[str, int]
) -> list[tuple[int, int]]:
    """The merges as pairs of ids, at once; a part not in the vocabulary is then found line by
    line and named."""
    of = ids.__getitem__
    try:
        return [(of(left), of(right)) for left, right in pairs]
    except KeyError:
        pass
    for number, (left, right) in enumerate(pairs, start=1):
        for part in (left, right):
            if part not in ids:
                raise TokenizerFileError(
                    f"{path}:{number}", f"merge part {part[:40]!r} is not in {VOCAB}"
                )
    raise AssertionError("unreachable: a part was missing")


def _ordinary_one_by_one(
    raw: dict[str, int], made: set[str], specials: dict[str, int], sidecar: bool, path: Path
) -> dict[str, int]:
    """The ordinary tokens of `raw` (mapped token -> id), each a byte or made by a merge (in
    `made`); a token that is neither is a special when known (added to `specials`) and no
    sidecar lists the specials, else a file error, as is an id listed twice."""
    kept: dict[str, int] = {}
    kept_ids: set[int] = set()
    for token, tid in raw.items():
        if specials.get(token) == tid:  # the sidecar's special, also listed for Hugging Face
            continue
        if len(token) > 1 and token not in made:
            if sidecar or token not in KNOWN_SPECIALS:
                raise TokenizerFileError(
                    str(path),
                    f"token {token[:40]!r} (id {tid}) is not a byte and no merge in {MERGES}"
                    f" makes it (truncated or mismatched files? a special token must be listed"
                    f" in {sidecar_path(path).name})",
                )
            specials[token] = tid
        else:
            if tid in kept_ids:
                raise TokenizerFileError(str(path), f"two tokens share id {tid}")
            kept_ids.add(tid)
            kept[token] = tid
    return kept


def _ordinary_at_once(
    raw: dict[str, int], made: set[str], specials: dict[str, int]
) -> dict[str, int] | None:
    """`_ordinary_one_by_one` without a step per token (o200k: 0.05 s, not 0.2) when no token
    is left to it: every token a byte, made by a merge or one of `specials` with its id, and
    no id listed twice; else None."""
    listed = {token for token, tid in specials.items() if raw.get(token) == tid}
    if any(len(token) > 1 for token in set(raw).difference(made, listed)):
        return None
    kept = dict(raw)
    for token in listed:
        del kept[token]
    return kept if len(set(kept.values())) == len(kept) else None


def load(vocab_path: Path, merges_path: Path, pattern: str | None = None) -> Tokenizer:
    raw = read_json(vocab_path)
    if not isinstance(raw, dict):
        raise TokenizerFileError(str(vocab_path), "is not a JSON object of token -> id")
    file_ids(vocab_path, raw)
    side = sidecar_path(vocab_path)
    side_specials: dict[str, int] | None = None
    if side.is_file():
        side_pattern, side_specials = read_sidecar(side)
        pattern = side_pattern or pattern
    pairs = read_merges(merges_path)
    made = {a + b for a, b in pairs}
    specials: dict[str, int] = dict(side_specials or {})
    kept = _ordinary_at_once(raw, made, specials)
    if kept is None:
        kept = _ordinary_one_by_one(raw, made, specials, side_specials is not None, vocab_path)
    vocab = dict(zip(kept.values(), unmapped_all(vocab_path, list(kept)), strict=True))
    merges = _merge_ids(merges_path, pairs, kept)
    try:
        return Tokenizer.from_vocab_merges(vocab, merges, resolve(pattern), specials)
    except TokenizerError as exc:
        raise as_file_error(vocab_path, exc) from None
