"""`bpe-workbench completion bash|zsh|fish`: print a shell completion script (made by shtab).

    bpe-workbench completion bash > ~/.local/share/bash-completion/completions/bpe-workbench
    bpe-workbench completion zsh > ~/.zfunc/_bpe-workbench      # with fpath+=(~/.zfunc)
    bpe-workbench completion fish > ~/.config/fish/completions/bpe-workbench.fish

The script is built from the same parser the command uses, so it offers every command and
option (hidden old names left out).
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import shtab

    from workbench.cli import build_parser

    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return 0
