"""`bpe-workbench encode --tokenizer PATH [FILE|-]`: print the token ids of a text.

Ids are separated by spaces; `--pieces` prints one token per line as `id<TAB>bytes`, the bytes of
a split character shown as `<E2>`.
"""

from __future__ import annotations

import argparse

from workbench.cli._common import add_tokenizer_options, load_tokenizer, read_text


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("encode", help="print the token ids of a text")
    add_tokenizer_options(p)
    p.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    p.add_argument("--pieces", action="store_true", help="one token per line with its bytes")
    p.add_argument("--no-special", action="store_true", help="encode special tokens as plain text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.display import show_bytes

    tokenizer = load_tokenizer(args)
    text = read_text(args.file)
    allowed = "none" if args.no_special else "all"
    ids = tokenizer.encode(text, allowed_special=allowed)
    if args.pieces:
        pieces = tokenizer.decode_tokens_bytes(ids)
        for tid, piece in zip(ids, pieces, strict=True):
            print(f"{tid}\t{show_bytes(piece)!r}")
    else:
        print(" ".join(map(str, ids)))
    return 0
