"""`bpe-workbench extend BASE PATH... --vocab-size N --out-dir DIR`: grow a tokenizer.

BASE is what `--tokenizer` takes elsewhere (`gpt2`, `cl100k`, `o200k`, `run:ID`, a tokenizer
file or folder). The corpus is cut by the base's pattern, each piece encoded by the base (its
merges replayed exactly) and new merges learned until the vocabulary has N tokens, the base's
specials counted. Every old id, token, special and merge is kept; the check that proves it is
printed, and the files are written only when it passes (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli._common import (
    add_db_option,
    add_quiet_option,
    hidden_alias,
    print_json,
    shown,
)

# engine.formats.FORMATS (a test keeps them equal): importing it here costs --help 0.2 s.
FORMATS = ("gpt2", "hf", "minbpe", "tiktoken")
TIE_BREAKS = ("lexicographic", "hf")  # engine.config.TIE_BREAKS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extend",
        help="add merges learned on a new corpus to a tokenizer, keeping every old id",
        description="Extend a tokenizer: its merges replayed on the corpus, new merges learned "
        "after them, every old id, token, special and merge kept (checked).",
    )
    p.add_argument("base", metavar="BASE", help="gpt2, cl100k, o200k, run:ID or a tokenizer path")
    p.add_argument("paths", nargs="+", metavar="PATH", help="corpus files or folders")
    p.add_argument(
        "--vocab-size", type=int, required=True, metavar="N", help="the vocabulary size to reach"
    )
    p.add_argument("-o", "--out-dir", metavar="DIR", type=Path, default=None, help="output folder")
    hidden_alias(p, "--out", dest="out_dir", type=Path)
    p.add_argument("--format", default="gpt2", help=f"comma-separated: {','.join(FORMATS)}")
    p.add_argument("--tie-break", choices=TIE_BREAKS, default="lexicographic", help="as for train")
    p.add_argument(
        "--max-token-length",
        type=int,
        default=0,
        metavar="N",
        help="no new token longer than N bytes (default 0: no cap)",
    )
    p.add_argument(
        "--min-frequency", type=int, default=0, metavar="N", help="as for train (default 0)"
    )
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="the summary and the check as JSON")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.cli._common import UsageError, prepare_kernels
    from workbench.engine.formats import check_can_hold
    from workbench.engine.formats.outputs import check_output_folder, write_formats_atomically
    from workbench.extend_api import extend, resolve_base

    if args.out_dir is None:
        raise UsageError("extend needs --out-dir DIR (or -o DIR), the folder for the files")
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    check_output_folder(args.out_dir)
    prepare_kernels(args, "encode", [args.base if args.base in ("cl100k", "o200k") else "gpt2"])
    base = resolve_base(args.base, args.db)
    check_can_hold(formats, base.pattern, base.special_tokens)
    prepare_kernels(args, "train", [base.pattern])
    result = extend(
        base,
        [Path(p) for p in args.paths],
        args.vocab_size,
        tie_break=args.tie_break,
        max_token_length=args.max_token_length,
        min_frequency=args.min_frequency,
        progress=not args.quiet,
    )
    ext, check = result.extension, result.check
    written = write_formats_atomically(result.tokenizer, formats, args.out_dir) if check.ok else []
    summary = {
        "base_tokens": len(base.vocab),
        "tokens": len(result.tokenizer.vocab),
        "new_merges": len(ext.new_merges),
        "first_new_id": ext.first_new_id,
        "stop_reason": ext.stop_reason,
        "corpus_tokens_before": ext.tokens_before,
        "corpus_tokens_after": ext.tokens_after,
        "check_ok": check.ok,
        "check": check.lines(),
        "files": [str(p) for p in written],
    }
    if args.json:
        print_json(summary)
    else:
        saved = 1 - ext.tokens_after / max(ext.tokens_before, 1)
        print(f"base             {len(base.vocab):,} tokens, {len(base.merges):,} merges")
        print(f"new merges       {len(ext.new_merges):,} (ids from {ext.first_new_id:,})")
        print(f"stopped          {ext.stop_reason.replace('_', ' ')}")
        print(f"corpus tokens    {ext.tokens_before:,} → {ext.tokens_after:,} ({saved:.1%} fewer)")
        print("check:")
        for line in check.lines():
            print(f"  {line}")
        for path in written:
            print(shown(path))
    if not check.ok:
        print("bpe-workbench: the extension check failed: no files written", file=sys.stderr)
        return 1
    return 0
