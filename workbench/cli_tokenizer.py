"""`encode`, `export` and `render`: the tokenizer on the command line.

`encode --tokenizer PATH [FILE|-]` prints ids separated by spaces (`--pieces`: one token per line
as `id<TAB>bytes`, bytes of a split character shown as `<E2>`); `export` writes another format;
`render` writes an HTML page or a PNG of the token split.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.engine import formats
from workbench.engine.errors import WorkbenchError
from workbench.engine.tokenizer import Tokenizer


def _read_text(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise WorkbenchError(f"{source}: is not UTF-8 text") from None


def _load(args: argparse.Namespace) -> Tokenizer:
    return formats.load(args.tokenizer, getattr(args, "pattern", None))


def run_encode(args: argparse.Namespace) -> int:
    from workbench.render import show_bytes

    tokenizer = _load(args)
    text = _read_text(args.file)
    allowed = "none" if args.no_special else "all"
    ids = tokenizer.encode(text, allowed_special=allowed)
    if args.pieces:
        table = tokenizer._decode_table()
        for tid in ids:
            print(f"{tid}\t{show_bytes(table[tid])!r}")
    else:
        print(" ".join(map(str, ids)))
    return 0


def run_export(args: argparse.Namespace) -> int:
    tokenizer = _load(args)
    for path in formats.export(tokenizer, args.format, args.out):
        print(path)
    return 0


def run_render(args: argparse.Namespace) -> int:
    from workbench.render import render_file

    out = Path(args.out)
    if out.suffix.lower() not in {".html", ".htm", ".png"}:
        raise WorkbenchError(f"{out}: the output must end in .html or .png")
    tokenizer = _load(args)
    text = _read_text(args.text_file)
    try:
        render_file(tokenizer, text, out)
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot write: {exc}") from None
    print(out)
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenizer", required=True, help="tokenizer file or folder")
    parser.add_argument(
        "--pattern", default=None, help="pattern for files without one (default: gpt2 preset)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    encode = subparsers.add_parser("encode", help="print the token ids of a text")
    _common(encode)
    encode.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    encode.add_argument("--pieces", action="store_true", help="one token per line with its bytes")
    encode.add_argument(
        "--no-special", action="store_true", help="encode special tokens as plain text"
    )
    encode.set_defaults(func=run_encode)

    export = subparsers.add_parser("export", help="write the tokenizer in another format")
    _common(export)
    export.add_argument("--format", required=True, choices=sorted(formats.FORMATS))
    export.add_argument("--out", required=True, help="output folder")
    export.set_defaults(func=run_export)

    render = subparsers.add_parser("render", help="draw the token split as .html or .png")
    _common(render)
    render.add_argument("--text-file", required=True)
    render.add_argument("--out", required=True, help="FILE.html or FILE.png")
    render.set_defaults(func=run_render)
