"""`bpe-workbench encode --tokenizer SPEC [FILE ...|-]`: print the token ids of texts.

SPEC is a tokenizer file or folder, `run:ID` / `run:ID@k` (a stored run), or gpt2/cl100k/o200k.

Ids are separated by spaces; `--pieces` prints one token per line as `id<TAB>bytes`, the bytes of
a split character shown as `<E2>`. Each text is read as bytes (a CRLF file keeps its CRs) and
must be UTF-8. A special token in the text is refused unless `--allow-special` (encode it as the
special) or `--no-special` (encode it as ordinary text), as tiktoken's `encode` does.

Files are streamed: each is read once first to check it (a bad one stops everything before
anything is printed), then read again and encoded in parts cut where no pre-token or special token
can span the cut, on `--threads` threads, its ids printed as they come: memory does not grow with
the file. Standard input is read once, so a problem there is reported after the ids before it.
Each file's output follows a `==> FILE <==` line, as `head` prints several files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator

from workbench.cli._common import (
    UsageError,
    add_special_options,
    add_threads_option,
    add_tokenizer_options,
    check_threads,
    load_tokenizer,
    prepare_kernels,
    shown,
    special_choice,
    special_refusal,
)
from workbench.cli._text_stream import source_name, text_chunks

# Parts (about 64K characters each, `stream_parts`) encoded per `encode_batch` call: enough to
# keep --threads busy, and what is held at once (ids included) stays a few megabytes.
GROUP_PARTS = 16


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
    check_threads(args)
    if args.files.count("-") > 1:
        raise UsageError("standard input (-) can be read only once")
    tokenizer = load_tokenizer(args)
    prepare_kernels(args, "encode", [tokenizer.pattern])
    rules = special_choice(args)
    for source in args.files:  # a bad file stops everything before anything is printed
        if source != "-":
            _check(tokenizer, source, rules)
    several = len(args.files) > 1
    for source in args.files:
        if several:
            sys.stdout.write(f"==> {shown(source_name(source))} <==\n")
        _encode_source(tokenizer, source, rules, args)
    return 0


def _check(tokenizer, source: str, rules: dict) -> None:
    """Read FILE once without encoding: invalid UTF-8 or a refused special token is an error
    before anything is printed (standard input, read once, is checked as it is encoded)."""
    from workbench.engine.encode.stream import stream_parts

    refused = _refused(tokenizer, rules)
    if refused is None:
        for _ in text_chunks(source):  # only the decoding can fail
            pass
        return
    _refuse_in(source, refused, stream_parts(tokenizer, text_chunks(source), **rules), 0)


def _refused(tokenizer, rules: dict):
    """The matcher of the special tokens `rules` refuse, or None."""
    from workbench.engine.encode.validation import special_rules

    allowed = rules.get("allowed_special", frozenset())
    return special_rules(tokenizer.special_tokens, allowed, rules.get("disallowed_special", "all"))[
        1
    ]


def _refuse_in(source: str, refused, parts: Iterable[str], offset: int) -> None:
    """Raise the CLI's refusal for the first refused special in `parts`, which start at
    character `offset` of the source; a special never spans two parts (`stream_parts`)."""
    from workbench.engine.encode.validation import DisallowedSpecialError, refuse

    for part in parts:
        try:
            refuse(refused, part)
        except DisallowedSpecialError as exc:
            moved = DisallowedSpecialError(exc.token, exc.position + offset)
            raise special_refusal(source, moved) from None
        offset += len(part)


def _encode_source(tokenizer, source: str, rules: dict, args: argparse.Namespace) -> None:
    """Print the ids of one source as its parts are read: memory does not grow with its size."""
    from workbench.engine.encode.stream import stream_parts
    from workbench.engine.encode.validation import DisallowedSpecialError

    parts = stream_parts(tokenizer, text_chunks(source), **rules)
    out = sys.stdout
    first = True
    offset = 0  # characters before the group being encoded
    for group in _groups(parts, GROUP_PARTS):
        try:
            encoded = tokenizer.encode_batch(group, num_threads=args.threads, **rules)
        except DisallowedSpecialError:  # standard input only: files were checked first
            _refuse_in(source, _refused(tokenizer, rules), group, offset)
            raise
        offset += sum(map(len, group))
        for ids in encoded:
            if args.pieces:
                _write_pieces(tokenizer, ids)
            elif ids:
                out.write(("" if first else " ") + " ".join(map(str, ids)))
                first = False
    if not args.pieces:
        out.write("\n")


def _write_pieces(tokenizer, ids: list[int]) -> None:
    from workbench.display import show_bytes

    pieces = tokenizer.decode_tokens_bytes(ids)
    sys.stdout.write(
        "".join(f"{tid}\t{show_bytes(p)!r}\n" for tid, p in zip(ids, pieces, strict=True))
    )


def _groups(parts: Iterable[str], size: int) -> Iterator[list[str]]:
    group: list[str] = []
    for part in parts:
        group.append(part)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group
