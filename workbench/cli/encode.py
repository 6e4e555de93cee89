"""`bpe-workbench encode --tokenizer PATH [FILE|-]`: print the token ids of a text.

Ids are separated by spaces; `--pieces` prints one token per line as `id<TAB>bytes`, the bytes of
a split character shown as `<E2>`. The text is read as bytes (a CRLF file keeps its CRs) and must
be UTF-8. A special token in the text is refused unless `--allow-special` (encode it as the
special) or `--no-special` (encode it as ordinary text), as tiktoken's `encode` does.
"""

from __future__ import annotations

import argparse

from workbench.cli._common import (
    add_special_options,
    add_tokenizer_options,
    load_tokenizer,
    read_text,
    special_choice,
    special_refusal,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("encode", help="print the token ids of a text")
    add_tokenizer_options(p)
    p.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    p.add_argument("--pieces", action="store_true", help="one token per line with its bytes")
    add_special_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.display import show_bytes
    from workbench.engine.tokenizer import DisallowedSpecialError

    tokenizer = load_tokenizer(args)
    text = read_text(args.file)
    try:
        ids = tokenizer.encode(text, **special_choice(args))
    except DisallowedSpecialError as exc:
        raise special_refusal(args.file, exc) from None
    if args.pieces:
        pieces = tokenizer.decode_tokens_bytes(ids)
        for tid, piece in zip(ids, pieces, strict=True):
            print(f"{tid}\t{show_bytes(piece)!r}")
    else:
        print(" ".join(map(str, ids)))
    return 0
