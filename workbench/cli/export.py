"""`bpe-workbench export --tokenizer PATH --format F --out DIR`: write another format.

For `--format hf`, `--bos/--eos/--pad` name the special tokens transformers gives those roles
(default: chosen by name from the special tokens; an empty value for none); the choice is
printed on stderr, beside the files written on stdout.
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli._common import add_tokenizer_options, load_tokenizer
from workbench.engine.errors import WorkbenchError

_ROLES = ("bos", "eos", "pad")


def register(subparsers: argparse._SubParsersAction) -> None:
    from workbench.engine import formats

    p = subparsers.add_parser("export", help="write the tokenizer in another format")
    add_tokenizer_options(p)
    p.add_argument("--format", required=True, choices=sorted(formats.FORMATS))
    p.add_argument("--out", required=True, help="output folder")
    for role in _ROLES:
        p.add_argument(
            f"--{role}",
            metavar="TOKEN",
            help=f"hf: the special token transformers uses as {role} (default: chosen by name;"
            " '' for none)",
        )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine import formats
    from workbench.engine.encode.special_roles import choose_roles

    given = {
        role: getattr(args, role) or None for role in _ROLES if getattr(args, role) is not None
    }
    if given and args.format != "hf":
        raise WorkbenchError(f"--{', --'.join(given)}: only for --format hf")
    tokenizer = load_tokenizer(args)
    if args.format == "hf":
        print(choose_roles(tokenizer.special_tokens, **given).note, file=sys.stderr)
    for path in formats.export(tokenizer, args.format, args.out, **given):
        print(path)
    return 0
