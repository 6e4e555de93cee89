"""What the tokenizer commands share: reading a text argument and loading `--tokenizer`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.engine.errors import WorkbenchError


def read_text(source: str) -> str:
    """The text of FILE, or of standard input for `-`, read as bytes and decoded strictly.

    No newline translation (a CRLF file keeps its CRs, as tiktoken would see them) and no
    U+FFFD: invalid UTF-8 is an error naming the byte offset.
    """
    name = "standard input" if source == "-" else source
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise WorkbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            f"{name}: is not UTF-8 text (invalid byte 0x{data[exc.start]:02X} at byte {exc.start})"
        ) from None


def special_choice(args: argparse.Namespace) -> dict:
    """`encode`'s keyword arguments for `--allow-special` / `--no-special` (neither: error on a
    special token in the text, as tiktoken)."""
    if getattr(args, "allow_special", False):
        return {"allowed_special": "all"}
    if getattr(args, "no_special", False):
        return {"allowed_special": (), "disallowed_special": ()}
    return {"allowed_special": (), "disallowed_special": "all"}


def add_special_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--allow-special",
        action="store_true",
        help="encode special tokens found in the text as specials (default: refuse such text)",
    )
    group.add_argument(
        "--no-special", action="store_true", help="encode special tokens as plain text"
    )


def special_refusal(source: str, exc: Exception) -> WorkbenchError:
    """The CLI wording for `DisallowedSpecialError`: name the file and the options."""
    token, position = exc.token, exc.position  # type: ignore[attr-defined]
    name = "standard input" if source == "-" else source
    return WorkbenchError(
        f"{name}: contains the special token {token!r} (at character {position}); pass"
        " --allow-special to encode it as that special token or --no-special to encode it as text"
    )


def add_tokenizer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenizer", required=True, help="tokenizer file or folder")
    parser.add_argument(
        "--pattern", default=None, help="pattern for files without one (default: gpt2 preset)"
    )


def load_tokenizer(args: argparse.Namespace):
    from workbench.engine import formats

    return formats.load(args.tokenizer, getattr(args, "pattern", None))
