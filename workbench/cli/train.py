"""`bpe-workbench train`: pre-tokenize a corpus, train, write the tokenizer files, record the run.

    bpe-workbench train corpus/ --vocab-size 32000 --out out/ --special "<|endoftext|>"

Writes `DIR/vocab.json` + `DIR/merges.txt` (and the `--format`s asked for), records the run and
every merge in the run store as they stream (`--db FILE`, default the user's database;
`--no-db` to skip), and prints a summary of each stage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from workbench.engine.config import TIE_BREAKS, TrainConfig
from workbench.engine.errors import WorkbenchError

FORMATS = ("gpt2", "hf", "tiktoken", "minbpe")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a byte-level BPE tokenizer on files/folders")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files and folders of text/.jsonl(.gz)")
    p.add_argument("--vocab-size", type=int, required=True, help="bytes + merges + specials")
    p.add_argument("--out", type=Path, required=True, help="folder for the tokenizer files")
    p.add_argument("--pattern", default="gpt2", help="gpt2, cl100k, o200k or a custom regex")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN")
    p.add_argument("--tie-break", choices=TIE_BREAKS, default="lexicographic")
    p.add_argument("--min-frequency", type=int, default=0)
    p.add_argument("--format", default="gpt2", help=f"comma-separated: {','.join(FORMATS)}")
    p.add_argument("--skip-bad-files", action="store_true", help="skip unreadable files, report")
    p.add_argument("--workers", type=int, default=None, help="pre-tokenizing threads/processes")
    p.add_argument(
        "--regex-pretokenizer",
        action="store_true",
        help="pre-tokenize with the regex package even for a preset (same pieces, slower)",
    )
    p.add_argument("--db", type=Path, default=None, help="run store (default: user database)")
    p.add_argument("--no-db", action="store_true", help="do not record the run")
    p.add_argument("--name", default=None, help="name of the run in the store")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


class _Bar:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last = 0.0

    def show(self, stage: str, done: int, total: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.1 and not force):
            return
        self.last = now
        share = done / total if total else 1.0
        bar = "#" * int(30 * share)
        print(f"\r{stage:<12} [{bar:<30}] {done:,}/{total:,}", end="", file=sys.stderr)

    def end(self) -> None:
        if self.enabled:
            print(file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from workbench.session.counting import count_paths
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise WorkbenchError(
            f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}"
        )
    config = TrainConfig(
        vocab_size=args.vocab_size,
        pattern=args.pattern,
        special_tokens=tuple(args.special),
        tie_break=args.tie_break,
        min_frequency=args.min_frequency,
        on_bad_file="skip" if args.skip_bad_files else "stop",
        pretokenizer="regex" if args.regex_pretokenizer else "auto",
    )
    bar = _Bar(enabled=not args.quiet and sys.stderr.isatty())
    started = time.perf_counter()
    store_path = None if args.no_db else (args.db or _default_db())
    with stop_on_signals() as interrupted:
        counted = count_paths(
            args.paths,
            config,
            progress=lambda d, t: bar.show("pre-tokenize", d, t),
            cancel=lambda: interrupted.is_set,
            workers=args.workers,
        )
        bar.end()
        target = config.merged_token_target

        def show(batch) -> None:
            bar.show("merge", batch.vocab_size - len(config.special_tokens) - 256, target)

        with RunSession.start(counted, config, store_path, args.name, [show]) as session:
            reason = session.advance(should_stop=interrupted.check)
            bar.end()
            if reason is StopReason.INTERRUPTED:
                raise KeyboardInterrupt
            written = session.export(["gpt2", *formats], args.out)
    _summary(counted.stats, session, time.perf_counter() - started, written)
    return 0


def _default_db():
    from workbench.store.connection import default_db_path

    return default_db_path()


def _summary(stats, session, total, written) -> None:
    trainer = session.trainer
    lines = [
        f"documents        {stats.documents:,} in {stats.files:,} files",
        f"bytes            {stats.bytes:,}",
        f"pre-tokens       {stats.pieces:,}",
        f"unique           {stats.unique_pieces:,}",
        f"merges           {trainer.n_merges:,} -> vocab {trainer.vocab_size:,}"
        f" ({session.stop_reason.words})",
        f"compression      {stats.bytes / max(trainer.corpus_tokens, 1):.3f} bytes/token",
    ]
    for stage, seconds in session.timings.items():
        lines.append(f"time {stage:<11} {seconds:.3f} s")
    lines.append(f"time total       {total:.3f} s")
    for message in stats.skipped:
        lines.append(f"skipped          {message}")
    lines.extend(f"wrote            {p}" for p in written)
    if session.run_id is not None:
        lines.append(
            f"run              #{session.run_id} (bpe-workbench runs show {session.run_id})"
        )
    print("\n".join(lines))
