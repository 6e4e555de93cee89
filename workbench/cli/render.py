"""`bpe-workbench render --tokenizer PATH --text-file T --out F.html|F.png`: draw a token split.

The text is read as bytes and must be UTF-8 (as `encode`); special tokens in it are refused
unless `--allow-special` or `--no-special`, as for `encode`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.cli._common import (
    add_special_options,
    add_tokenizer_options,
    load_tokenizer,
    read_text,
    special_choice,
    special_refusal,
)
from workbench.engine.errors import WorkbenchError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("render", help="draw the token split as .html or .png")
    add_tokenizer_options(p)
    p.add_argument("--text-file", required=True)
    p.add_argument("--out", required=True, help="FILE.html or FILE.png")
    p.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        metavar="N",
        help="draw at most N bytes of text (default 1 MB); a longer text is refused",
    )
    add_special_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine.encode.validation import DisallowedSpecialError
    from workbench.render import MAX_BYTES, render_file, size_refusal

    out = Path(args.out)
    if out.suffix.lower() not in {".html", ".htm", ".png"}:
        raise WorkbenchError(f"{out}: the output must end in .html or .png")
    limit = MAX_BYTES if args.max_bytes is None else args.max_bytes
    if limit < 1:
        raise WorkbenchError(f"--max-bytes must be 1 or more, not {args.max_bytes}")
    name = "standard input" if args.text_file == "-" else args.text_file
    if args.text_file != "-" and (refusal := size_refusal(name, _file_size(args.text_file), limit)):
        return _refuse(refusal)  # before reading a byte of it
    tokenizer = load_tokenizer(args)
    text = read_text(args.text_file)
    if refusal := size_refusal(name, len(text.encode("utf-8")), limit):
        return _refuse(refusal)
    try:
        render_file(tokenizer, text, out, **special_choice(args))
    except DisallowedSpecialError as exc:
        raise special_refusal(args.text_file, exc) from None
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot write: {exc}") from None
    print(out)
    return 0


def _file_size(path: str) -> int:
    """The size on disk, 0 when it cannot be told (read_text then says why it cannot read)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _refuse(message: str) -> int:
    """Too much text is failed work, not a usage error: one line and exit status 1."""
    print(f"bpe-workbench: {message}", file=sys.stderr)
    return 1
