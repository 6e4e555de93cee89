"""`bpe-workbench extend BASE PATH... --vocab-size N --out-dir DIR`: grow a tokenizer.

BASE is what `--tokenizer` takes elsewhere (`gpt2`, `cl100k`, `o200k`, `run:ID`, a tokenizer
file or folder). The corpus is cut by the base's pattern, each piece encoded by the base (its
merges replayed exactly) and new merges learned until the vocabulary has N tokens, the base's
specials counted. Every old id, token, special and merge is kept; the check that proves it is
printed, and the files are written only when it passes (exit 1 otherwise).

The extension is a run like `train`'s: recorded in the run store (`--db`, or `--no-db`), its
base and check kept with it (`runs show`), its tokenizer the base's merges then its own.
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
        "--max-token-chars",
        type=int,
        default=0,
        metavar="N",
        help="no new token of more than N characters, as for train (default 0: no cap)",
    )
    p.add_argument(
        "--min-frequency", type=int, default=0, metavar="N", help="as for train (default 0)"
    )
    add_db_option(p)
    p.add_argument("--no-db", action="store_true", help="do not record the run")
    p.add_argument("--name", default=None, help="name of the run in the store")
    p.add_argument("--json", action="store_true", help="the summary and the check as JSON")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.cli._common import UsageError, prepare_kernels
    from workbench.engine.formats import check_can_hold
    from workbench.engine.formats.outputs import check_output_folder
    from workbench.progress import ProgressBars
    from workbench.session.extension import load_base
    from workbench.session.interrupts import stop_on_signals

    if args.out_dir is None and args.no_db:
        raise UsageError("extend --no-db needs --out-dir DIR (or -o DIR): nothing else is kept")
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    if args.out_dir is not None:
        check_output_folder(args.out_dir)
    store_path = None if args.no_db else (args.db or _default_db())
    prepare_kernels(args, "encode", [args.base if args.base in ("cl100k", "o200k") else "gpt2"])
    base = load_base(args.base, args.db or store_path)
    check_can_hold(formats, base.tokenizer.pattern, base.tokenizer.special_tokens)
    prepare_kernels(args, "train", [base.tokenizer.pattern])
    with stop_on_signals() as interrupted, ProgressBars(quiet=args.quiet) as bars:
        session, check, written = _extend(args, base, store_path, formats, bars, interrupted)
    ext = session.trainer.extension()
    tokenizer = ext.tokenizer
    old = base.tokenizer
    summary = {
        "base": base.spec,
        "base_tokens": len(old.vocab),
        "tokens": len(tokenizer.vocab),
        "new_merges": len(ext.new_merges),
        "first_new_id": ext.first_new_id,
        "stop_reason": ext.stop_reason,
        "corpus_tokens_before": ext.tokens_before,
        "corpus_tokens_after": ext.tokens_after,
        "check_ok": check.ok,
        "check": check.lines(),
        "files": [str(p) for p in written],
        "run_id": session.run_id,
    }
    if args.json:
        print_json(summary)
    else:
        saved = 1 - ext.tokens_after / max(ext.tokens_before, 1)
        print(f"base             {len(old.vocab):,} tokens, {len(old.merges):,} merges")
        print(f"new merges       {len(ext.new_merges):,} (ids from {ext.first_new_id:,})")
        print(f"stopped          {ext.stop_reason.replace('_', ' ')}")
        print(f"corpus tokens    {ext.tokens_before:,} → {ext.tokens_after:,} ({saved:.1%} fewer)")
        if session.run_id is not None:
            print(f"run              {session.run_id} in {shown(store_path)}")
        print("check:")
        for line in check.lines():
            print(f"  {line}")
        for path in written:
            print(shown(path))
    if not check.ok:
        print("bpe-workbench: the extension check failed: no files written", file=sys.stderr)
        return 1
    return 0


def _extend(args, base, store_path, formats, bars, interrupted):
    """Count the corpus with the base's pattern, train the extension as a run (stored unless
    --no-db), check it, and write the files when the check passes."""
    from workbench.cli.train import corpus_size
    from workbench.engine.config import TrainConfig
    from workbench.session.counting import count_paths
    from workbench.session.extension import extension_config
    from workbench.session.run import RunSession, run_name
    from workbench.session.states import StopReason

    config = extension_config(
        base.tokenizer,
        TrainConfig(
            vocab_size=args.vocab_size,
            tie_break=args.tie_break,
            max_token_length=args.max_token_length,
            max_token_chars=args.max_token_chars,
            min_frequency=args.min_frequency,
        ),
    )
    paths = [str(p) for p in args.paths]
    total = corpus_size(paths) if bars.enabled else None
    counted = count_paths(
        paths, config, bars.bytes("pre-tokenize", total), cancel=lambda: interrupted.is_set
    )
    bars.close()
    show = bars.merges("merge", config.merged_token_target, len(config.special_tokens))
    name = args.name or f"{run_name(paths, args.vocab_size)} from {Path(base.spec).name}"
    written: list[Path] = []
    with RunSession.start(
        counted, config, store_path, name, [show], count_ties=store_path is not None,
        extends=base,
    ) as session:  # fmt: skip
        reason = session.advance(should_stop=interrupted.check)
        bars.close()
        if reason is StopReason.INTERRUPTED:
            raise KeyboardInterrupt
        check = session.check_extension()  # kept in the run's stats
        session.release_trainer()
        if check.ok and args.out_dir is not None:
            written = session.export(formats, args.out_dir)
    return session, check, written


def _default_db():
    from workbench.store.connection import default_db_path

    return default_db_path()
