"""`bpe-workbench render --tokenizer SPEC TEXT --out F.html|F.png|-`: draw a token split.

The text is read as bytes and must be UTF-8 (as `encode`); special tokens in it are refused
unless `--allow-special` or `--no-special`, as for `encode`. `--out -` writes the HTML page to
standard output; a PNG needs the window's extra (`pip install "bpe-workbench[gui]"`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.cli._common import (
    UsageError,
    add_special_options,
    add_tokenizer_options,
    has_qt,
    hidden_alias,
    load_tokenizer,
    prepare_kernels,
    read_text,
    shown,
    special_choice,
    special_refusal,
)

SUFFIXES = {".html": False, ".htm": False, ".png": True}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("render", help="draw the token split as .html or .png")
    add_tokenizer_options(p)
    p.add_argument(
        "text", nargs="?", default=None, metavar="PATH", help="the UTF-8 text file (- for stdin)"
    )
    hidden_alias(p, "--text-file", dest="text_file")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="FILE.html or FILE.png (- for the HTML on standard output)",
    )
    p.add_argument(
        "--format",
        choices=("html", "png"),
        default=None,
        help="html or png (default: from the suffix of --out)",
    )
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
    from workbench.output_file import Kind, check_output
    from workbench.render import MAX_BYTES, render_file, size_refusal

    source = args.text if args.text is not None else args.text_file
    if source is None or (args.text is not None and args.text_file is not None):
        raise UsageError("render needs one text: PATH (or - for standard input)")
    limit = MAX_BYTES if args.max_bytes is None else args.max_bytes
    if limit < 1:
        raise UsageError(f"--max-bytes must be 1 or more, not {args.max_bytes}")
    png = _is_png(args)
    kind = check_output(args.out, binary=png)  # a bad --out fails now, not after the work
    if png and not has_qt():
        raise UsageError('a PNG is drawn with Qt: pip install "bpe-workbench[gui]" (or .html)')
    name = "standard input" if source == "-" else shown(source)
    if source != "-" and (refusal := size_refusal(name, _file_size(source), limit)):
        return _refuse(refusal)  # before reading a byte of it
    tokenizer = load_tokenizer(args)
    prepare_kernels(args, "render", [tokenizer.pattern])
    text = read_text(source)
    if refusal := size_refusal(name, len(text.encode("utf-8")), limit):
        return _refuse(refusal)
    try:
        render_file(tokenizer, text, args.out, png=png, **special_choice(args))
    except DisallowedSpecialError as exc:
        raise special_refusal(source, exc) from None
    if kind is Kind.FILE:  # on a stream, the page is the output: nothing else goes there
        print(shown(args.out))
    return 0


def _is_png(args: argparse.Namespace) -> bool:
    """PNG or HTML: --format, else the suffix; `-` and special files (/dev/stdout, a FIFO)
    have no suffix to go by and get HTML."""
    from workbench.output_file import Kind, is_stdout, kind_of

    if args.format is not None:
        return args.format == "png"
    suffix = Path(args.out).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if is_stdout(args.out) or kind_of(args.out) is not Kind.FILE:
        return False
    raise UsageError(f"{shown(args.out)}: the output must end in .html or .png (or --format)")


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
