"""`bpe-workbench export --tokenizer PATH --format F --out DIR`: write another format."""

from __future__ import annotations

import argparse

from workbench.cli._common import add_tokenizer_options, load_tokenizer


def register(subparsers: argparse._SubParsersAction) -> None:
    from workbench.engine import formats

    p = subparsers.add_parser("export", help="write the tokenizer in another format")
    add_tokenizer_options(p)
    p.add_argument("--format", required=True, choices=sorted(formats.FORMATS))
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine import formats

    for path in formats.export(load_tokenizer(args), args.format, args.out):
        print(path)
    return 0
