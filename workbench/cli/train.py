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
from workbench.engine.formats.outputs import check_output_folder

FORMATS = ("gpt2", "hf", "tiktoken", "minbpe")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a byte-level BPE tokenizer on files/folders")
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help="files/folders: text, .jsonl, .parquet, .arrow"
    )
    p.add_argument(
        "--from-counts", type=Path, default=None, metavar="FILE", help="a `count` counts file"
    )
    p.add_argument("--text-column", default="text", help="Parquet/Arrow column of the text")
    p.add_argument("--jsonl-field", default="text", help="JSONL field of the text")
    p.add_argument(
        "--vocab-size",
        required=True,
        help="bytes + merges + specials; several (8000,16000,32000) train a sweep",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for the tokenizer files")
    p.add_argument(
        "--pattern",
        action="append",
        default=None,
        help="gpt2 (default), cl100k, o200k or a custom regex; give it again to sweep patterns",
    )
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
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.sweep import parse_vocab_sizes, plan_sweep

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise WorkbenchError(
            f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}"
        )
    sizes = parse_vocab_sizes(args.vocab_size)
    patterns = args.pattern or ["gpt2"]
    config = TrainConfig(
        vocab_size=max(sizes),
        pattern=patterns[0],
        special_tokens=tuple(args.special),
        tie_break=args.tie_break,
        min_frequency=args.min_frequency,
        on_bad_file="skip" if args.skip_bad_files else "stop",
        pretokenizer="regex" if args.regex_pretokenizer else "auto",
        text_column=args.text_column,
        jsonl_field=args.jsonl_field,
    )
    if bool(args.paths) == bool(args.from_counts):
        raise WorkbenchError("give the corpus PATHs or --from-counts FILE (one of the two)")
    steps = plan_sweep(config, sizes, patterns)  # checks every pattern before any counting
    check_output_folder(args.out)  # a bad --out fails now, not after training
    from workbench.engine.formats import check_can_hold

    for step in steps:  # refuse before counting what a chosen format cannot store
        check_can_hold(["gpt2", *formats], step.config.pattern_string, step.config.special_tokens)
    bar = _Bar(enabled=not args.quiet and sys.stderr.isatty())
    store_path = None if args.no_db else (args.db or _default_db())
    with stop_on_signals() as interrupted:
        if len(steps) == 1:
            _train_one(args, steps[0].config, store_path, formats, bar, interrupted)
        else:
            _train_sweep(args, steps, store_path, formats, bar, interrupted)
    return 0


def _quick_start(args, config):
    """On a first start, a small run starts at once (see `session.first_start`), or None."""
    if args.from_counts:
        return None
    from workbench.session.first_start import quick_start

    quick = quick_start(args.paths, config)
    if quick is not None and not args.quiet:
        print(
            "preparing the fast kernels in the background (first start only); "
            "training starts at once and moves to them when they are ready",
            file=sys.stderr,
        )
    return quick


def _count(args, config, bar, interrupted, quick=None):
    from workbench.engine.warmup import prepare_training
    from workbench.session.counting import count_paths
    from workbench.session.first_start import counting_config

    if quick is None:
        prepare_training(  # first start only: compile the kernels, and say so (not corpus time)
            config.pattern_string,
            scanner_path=config.pretokenizer == "auto" and not args.from_counts,
            notice=None if args.quiet else lambda line: print(line, file=sys.stderr),
        )
    else:  # the same pieces, without waiting for the scanner to compile
        config = counting_config(config, quick)
    if args.from_counts:  # counts made by `bpe-workbench count` replace the counting
        from workbench.engine.pretokenize.counts_file import read_counts
        from workbench.session.run import Counted

        result = read_counts(args.from_counts, config.pattern_string, config.special_tokens)
        return Counted(result, (str(args.from_counts),))
    counted = count_paths(
        args.paths,
        config,
        progress=lambda d, t: bar.show("pre-tokenize", d, t),
        cancel=lambda: interrupted.is_set,
        workers=args.workers,
    )
    bar.end()
    return counted


def _train(
    counted, config, store_path, name, bar, interrupted, out, formats, sweep=None, quick=None
):
    """One run on counted text: train, export, end. Returns the ended session and files."""
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    target = config.merged_token_target

    def show(batch) -> None:
        bar.show("merge", batch.vocab_size - len(config.special_tokens) - 256, target)

    from workbench.session.first_start import ready

    # Ties are only worth counting for the store (the window shows them from there).
    count_ties = store_path is not None
    with RunSession.start(
        counted,
        config,
        store_path,
        name,
        [show],
        sweep=sweep,
        kernels_ready=ready(quick),
        count_ties=count_ties,
    ) as session:
        reason = session.advance(should_stop=interrupted.check)
        bar.end()
        if reason is StopReason.INTERRUPTED:
            raise KeyboardInterrupt
        session.release_trainer()  # writing the files then takes memory the merges gave back
        written = session.export(["gpt2", *formats], out)
    return session, written


def _train_one(args, config, store_path, formats, bar, interrupted) -> None:
    from workbench.session.first_start import close

    started = time.perf_counter()
    quick = _quick_start(args, config)
    try:
        counted = _count(args, config, bar, interrupted, quick)
        session, written = _train(
            counted, config, store_path, args.name, bar, interrupted, args.out, formats,
            quick=quick,
        )  # fmt: skip
    finally:
        close(quick)
    _summary(counted.stats, session, time.perf_counter() - started, written)


def _train_sweep(args, steps, store_path, formats, bar, interrupted) -> None:
    """Count once per pattern, train each size; files go to OUT/<pattern>-<size>/."""
    from workbench.session.run import run_name

    counted_for: dict[str, object] = {}
    lines = [f"sweep {steps[0].sweep_id}: {len(steps)} runs"]
    for step in steps:
        config = step.config
        if config.pattern not in counted_for:
            counted_for[config.pattern] = _count(args, config, bar, interrupted)
        counted = counted_for[config.pattern]
        name = f"{args.name or run_name(counted.paths, config.vocab_size)} · sweep {step.index}/{step.of}"
        out = args.out / step.label
        session, _ = _train(
            counted, config, store_path, name, bar, interrupted, out, formats, step.tag
        )
        trainer = session.trainer
        bytes_per_token = counted.stats.bytes / max(trainer.corpus_tokens, 1)
        run = f"run #{session.run_id}" if session.run_id is not None else "not recorded"
        lines.append(
            f"  {step.label:<22} vocab {trainer.vocab_size:>7,}  {bytes_per_token:6.3f} bytes/token"
            f"  {session.stop_reason.words:<26} {run}  -> {out}"
        )
    print("\n".join(lines))


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
