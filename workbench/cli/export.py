"""`bpe-workbench export --tokenizer SPEC --format F --out-dir DIR`: write another format."""

from __future__ import annotations

import argparse

from workbench.cli._common import add_tokenizer_options, hidden_alias, load_tokenizer, shown

# engine.formats.FORMATS (a test keeps them equal): importing it here costs --help 0.2 s.
FORMATS = ("gpt2", "hf", "minbpe", "tiktoken")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="write the tokenizer in another format")
    add_tokenizer_options(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="the format to write")
    p.add_argument("--out-dir", metavar="DIR", default=None, help="output folder")
    hidden_alias(p, "--out", dest="out_dir")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.cli._common import UsageError
    from workbench.engine import formats

    if args.out_dir is None:
        raise UsageError("export needs --out-dir DIR, the folder for the tokenizer files")
    for path in formats.export(load_tokenizer(args), args.format, args.out_dir):
        print(shown(path))
    return 0
