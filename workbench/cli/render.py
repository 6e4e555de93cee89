"""`bpe-workbench render --tokenizer PATH --text-file T --out F.html|F.png`: draw a token split.

The text is read as bytes and must be UTF-8 (as `encode`); special tokens in it are refused
unless `--allow-special` or `--no-special`, as for `encode`.
"""

from __future__ import annotations

import argparse
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
    add_special_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine.encode.validation import DisallowedSpecialError
    from workbench.render import render_file

    out = Path(args.out)
    if out.suffix.lower() not in {".html", ".htm", ".png"}:
        raise WorkbenchError(f"{out}: the output must end in .html or .png")
    tokenizer = load_tokenizer(args)
    text = read_text(args.text_file)
    try:
        render_file(tokenizer, text, out, **special_choice(args))
    except DisallowedSpecialError as exc:
        raise special_refusal(args.text_file, exc) from None
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot write: {exc}") from None
    print(out)
    return 0
