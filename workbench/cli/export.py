"""`bpe-workbench export --tokenizer SPEC --format F --out-dir DIR`: write another format.

For `--format hf`, `--bos/--eos/--pad` name the special tokens transformers gives those roles
(default: chosen by name from the special tokens; an empty value for none); the choice is
printed on stderr, beside the files written on stdout.
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli._common import add_tokenizer_options, hidden_alias, load_tokenizer, shown

# engine.formats.FORMATS (a test keeps them equal): importing it here costs --help 0.2 s.
FORMATS = ("gpt2", "hf", "minbpe", "tiktoken")
_ROLES = ("bos", "eos", "pad")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="write the tokenizer in another format")
    add_tokenizer_options(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="the format to write")
    p.add_argument("--out-dir", metavar="DIR", default=None, help="output folder")
    hidden_alias(p, "--out", dest="out_dir")
    for role in _ROLES:
        p.add_argument(
            f"--{role}",
            metavar="TOKEN",
            help=f"hf: the special token transformers uses as {role} (default: chosen by name;"
            " '' for none)",
        )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.cli._common import UsageError
    from workbench.engine import formats
    from workbench.engine.encode.special_roles import choose_roles
    from workbench.engine.errors import TokenizerError

    if args.out_dir is None:
        raise UsageError("export needs --out-dir DIR, the folder for the tokenizer files")
    given = {
        role: getattr(args, role) or None for role in _ROLES if getattr(args, role) is not None
    }
    if given and args.format != "hf":
        raise UsageError(f"--{', --'.join(given)}: only for --format hf")
    tokenizer = load_tokenizer(args)
    if args.format == "hf":
        try:
            roles = choose_roles(tokenizer.special_tokens, **given)
        except TokenizerError as exc:  # a role that names no special token: the option's fault
            raise UsageError(str(exc)) from None
        print(roles.note, file=sys.stderr)
    for path in formats.export(tokenizer, args.format, args.out_dir, **given):
        print(shown(path))
    return 0
