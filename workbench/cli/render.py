"""`bpe-workbench render --tokenizer PATH --text-file T --out F.html|F.png`: draw a token split."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli._common import add_tokenizer_options, load_tokenizer, read_text
from workbench.engine.errors import WorkbenchError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("render", help="draw the token split as .html or .png")
    add_tokenizer_options(p)
    p.add_argument("--text-file", required=True)
    p.add_argument("--out", required=True, help="FILE.html or FILE.png")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.render import render_file

    out = Path(args.out)
    if out.suffix.lower() not in {".html", ".htm", ".png"}:
        raise WorkbenchError(f"{out}: the output must end in .html or .png")
    tokenizer = load_tokenizer(args)
    text = read_text(args.text_file)
    try:
        render_file(tokenizer, text, out)
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot write: {exc}") from None
    print(out)
    return 0
