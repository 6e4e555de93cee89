"""`bpe-workbench encode --tokenizer SPEC [FILE ...|-]`: print the token ids of texts.

SPEC is a tokenizer file or folder, `run:ID` / `run:ID@k` (a stored run), or gpt2/cl100k/o200k.

Ids are separated by spaces; `--pieces` prints one token per line as `id<TAB>bytes`, the bytes of
a split character shown as `<E2>`. Each text is read as bytes (a CRLF file keeps its CRs) and
must be UTF-8. A special token in the text is refused unless `--allow-special` (encode it as the
special) or `--no-special` (encode it as ordinary text), as tiktoken's `encode` does.

Several files are read first (a bad one stops everything before anything is printed), then
encoded together with `encode_batch` on `--threads` threads; each file's output follows a
`==> FILE <==` line, as `head` prints several files.
"""

from __future__ import annotations

import argparse

from workbench.cli._common import (
    UsageError,
    add_special_options,
    add_threads_option,
    add_tokenizer_options,
    check_threads,
    load_tokenizer,
    prepare_kernels,
    read_text,
    shown,
    special_choice,
    special_refusal,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("encode", help="print the token ids of texts")
    add_tokenizer_options(p)
    p.add_argument(
        "files",
        nargs="*",
        default=["-"],
        metavar="PATH",
        help="UTF-8 text files, or - for standard input (the default)",
    )
    p.add_argument("--pieces", action="store_true", help="one token per line with its bytes")
    add_threads_option(p, "threads for several files")
    add_special_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.display import show_bytes
    from workbench.engine.encode.validation import DisallowedSpecialError

    check_threads(args)
    if args.files.count("-") > 1:
        raise UsageError("standard input (-) can be read only once")
    tokenizer = load_tokenizer(args)
    prepare_kernels(args, "encode", [tokenizer.pattern])
    texts = [read_text(source) for source in args.files]
    try:
        encoded = tokenizer.encode_batch(texts, num_threads=args.threads, **special_choice(args))
    except DisallowedSpecialError as exc:
        # The batch raises for the first file (in order) holding a refused special: the first
        # file that contains that token's text, since every file has the same allowed set.
        source = next(s for s, t in zip(args.files, texts, strict=True) if exc.token in t)
        raise special_refusal(source, exc) from None
    several = len(args.files) > 1
    for source, ids in zip(args.files, encoded, strict=True):
        if several:
            print(f"==> {'standard input' if source == '-' else shown(source)} <==")
        if args.pieces:
            pieces = tokenizer.decode_tokens_bytes(ids)
            for tid, piece in zip(ids, pieces, strict=True):
                print(f"{tid}\t{show_bytes(piece)!r}")
        else:
            print(" ".join(map(str, ids)))
    return 0
