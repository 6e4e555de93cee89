"""Tokenizer files: `export(tokenizer, fmt, out_dir)` and `load(path)` with format detection
(see the package's docstring for the rules every format follows)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from workbench.engine.encode import special_roles
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError, WorkbenchError
from workbench.engine.formats import (
    gpt2_files,
    hf_json,
    minbpe_model,
    tiktoken_file,
    token_bytes,
)
from workbench.engine.formats.outputs import write_staged

FORMATS = {
    "hf": hf_json.export,
    "gpt2": gpt2_files.export,
    "tiktoken": tiktoken_file.export,
    "minbpe": minbpe_model.export,
}


def exporter(fmt: str) -> Callable[[Tokenizer, Path], list[Path]]:
    """The function that writes format `fmt`, or TokenizerError naming the formats there are."""
    if fmt not in FORMATS:
        raise TokenizerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt]


def export(tokenizer: Tokenizer, fmt: str, out_dir: str | Path, **options: Any) -> list[Path]:
    """Write `tokenizer` in format `fmt` into `out_dir` (created if needed); the files written.
    `options`: only hf takes some (the special tokens' roles, see `special_roles`).

    `token_bytes.npy` (each id's byte length, for bits per byte: `token_bytes.py`) comes with
    every format. The format's files are staged and renamed into place together (see outputs.py): a failed
    write replaces nothing, and an older set is never left half-replaced."""
    write = exporter(fmt)
    if options and fmt != "hf":
        raise TokenizerError(f"format {fmt!r} takes no options ({', '.join(options)})")
    if fmt == "hf":  # checked before anything is staged: a bad role is a one-line error
        special_roles.choose_roles(tokenizer.special_tokens, **_roles_only(options))
    return write_staged(
        out_dir,
        lambda stage: write(tokenizer, stage, **options) + token_bytes.export(tokenizer, stage),
    )


def _roles_only(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - {*special_roles.ROLES, "model_max_length"}
    if unknown:
        raise TokenizerError(f"unknown hf export options: {', '.join(sorted(unknown))}")
    return {k: v for k, v in options.items() if k in special_roles.ROLES}


def check_can_hold(formats: Iterable[str], pattern: str, special_tokens: Iterable[str]) -> None:
    """Raise TokenizerError if one of `formats` cannot store `pattern` or a special token.

    Called before training starts, so a run is never lost to an export that must fail.
    Today only minbpe has limits (one line per field, split on whitespace); the other formats
    keep what their files cannot in a sidecar.
    """
    specials = tuple(special_tokens)
    for fmt in formats:
        if fmt not in FORMATS:
            raise TokenizerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
        if fmt == "minbpe":
            minbpe_model.check_can_hold(pattern, specials)


def _load_file(path: Path, pattern: str | None) -> Tokenizer:
    try:
        return _load_by_name(path, pattern)
    except TokenizerFileError:
        raise
    except WorkbenchError as exc:  # a bad pattern, say: still name the file
        raise TokenizerFileError(str(path), str(exc)) from None


def _load_by_name(path: Path, pattern: str | None) -> Tokenizer:
    name = path.name
    if name.endswith(".tiktoken"):
        return tiktoken_file.load(path, pattern)
    if name.endswith(".model"):
        if not minbpe_model.is_minbpe(path):
            raise TokenizerFileError(
                str(path), "is not a minbpe model (SentencePiece models are not supported)"
            )
        return minbpe_model.load(path, pattern)
    pair = gpt2_files.find_pair(path)
    if pair is not None:
        return gpt2_files.load(*pair, pattern)
    if name.endswith((gpt2_files.VOCAB, gpt2_files.MERGES)):
        raise TokenizerFileError(str(path), "the matching vocab.json / merges.txt is missing")
    if name.endswith(".json"):
        return hf_json.load(path, pattern)
    raise TokenizerFileError(str(path), "cannot tell the tokenizer format from the file name")


def load(path: str | Path, pattern: str | None = None) -> Tokenizer:
    """A tokenizer from a file or a folder holding one (tokenizer.json, vocab.json + merges.txt,
    *.tiktoken, tokenizer.model, in that order of preference)."""
    path = Path(path)
    if path.is_file():
        return _load_file(path, pattern)
    if not path.is_dir():
        raise TokenizerFileError(str(path), "no such file or folder")
    for candidate in (
        path / hf_json.FILE,
        path / gpt2_files.VOCAB,
        *sorted(path.glob("*vocab.json")),
        path / tiktoken_file.FILE,
        *sorted(path.glob("*.tiktoken")),
        path / minbpe_model.FILE,
    ):
        if candidate.is_file():
            return _load_file(candidate, pattern)
    raise TokenizerFileError(str(path), "holds no tokenizer file this workbench can read")
