"""`bpe-workbench train`: pre-tokenize a corpus, train, write the tokenizer files, record the run.

    bpe-workbench train corpus/ --vocab-size 32000 --out out/ --special "<|endoftext|>"

Writes `DIR/vocab.json` + `DIR/merges.txt` (and the `--format`s asked for), records the run and
every merge in the run store as they stream (`--db FILE`, default the user's database;
`--no-db` to skip), and prints a summary of each stage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from workbench.engine.config import TIE_BREAKS, TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.pretokenize import count_corpus
from workbench.engine.warmup import prepare_training

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

    t0 = time.perf_counter()
    prepare_training(  # first start only: compile the kernels, and say so (not corpus time)
        config.pattern_string,
        scanner_path=config.pretokenizer == "auto",
        notice=None if args.quiet else lambda line: print(line, file=sys.stderr),
    )
    timings = {"kernels": time.perf_counter() - t0}

    t0 = time.perf_counter()
    counted = count_corpus(
        args.paths,
        config,
        progress=lambda d, t: bar.show("pre-tokenize", d, t),
        workers=args.workers,
    )
    bar.end()
    timings["pretokenize"] = time.perf_counter() - t0
    stats = counted.stats

    from workbench.engine.trainer import BpeTrainer  # Numba loads here, after the cheap checks

    t0 = time.perf_counter()
    trainer = BpeTrainer(counted.words, config)
    timings["index"] = time.perf_counter() - t0

    writer, run_id = _open_run(args, config, counted)
    target = config.merged_token_target
    t0 = time.perf_counter()
    try:
        for batch in trainer.batches(batch_seconds=0.1):
            if writer is not None:
                writer.write(batch)
            bar.show("merge", trainer.n_tokens - 256, target)
        bar.show("merge", trainer.n_tokens - 256, target, force=True)
        bar.end()
        timings["merge"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        written = _write_files(trainer, config, formats, args.out)
        timings["export"] = time.perf_counter() - t0
    except BaseException as exc:
        if writer is not None:
            writer.set_state("failed", error=str(exc) or type(exc).__name__, timings=timings)
            writer.close()
        raise
    if writer is not None:
        writer.set_state("done", stop_reason=trainer.stop_reason or "vocab_size", timings=timings)
        writer.close()

    total = time.perf_counter() - started
    _summary(stats, trainer, timings, total, written, run_id, args)
    return 0


def _open_run(args, config, counted):
    """The store writer for this run and its id, or (None, None) with --no-db. The writer has
    its own connection, so the store that created the run is closed here."""
    if args.no_db:
        return None, None
    from workbench.engine.corpus import corpus_record
    from workbench.store import RunStore

    corpus = corpus_record(args.paths, counted.files)
    stats = asdict(counted.stats)
    name = args.name or f"{Path(args.paths[0]).name} · {config.vocab_size:,}"
    with RunStore(args.db) as store:
        run_id = store.create_run(name, settings=asdict(config), corpus=corpus, stats=stats)
        writer = store.writer(run_id)
    writer.write_top_pieces(counted.words.most_common(200))
    return writer, run_id


def _write_files(trainer, config, formats, out: Path) -> list[Path]:
    from workbench.engine.formats import export
    from workbench.engine.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_merges(
        trainer.merge_pairs(), config.pattern_string, list(config.special_tokens)
    )
    os.makedirs(out, exist_ok=True)
    written: list[Path] = []
    for fmt in dict.fromkeys(["gpt2", *formats]):
        written.extend(export(tokenizer, fmt, out))
    return written


def _summary(stats, trainer, timings, total, written, run_id, args) -> None:
    lines = [
        f"documents        {stats.documents:,} in {stats.files:,} files",
        f"bytes            {stats.bytes:,}",
        f"pre-tokens       {stats.pieces:,}",
        f"unique           {stats.unique_pieces:,}",
        f"merges           {trainer.n_merges:,} -> vocab {trainer.vocab_size:,}"
        f" (stopped: {trainer.stop_reason or 'vocab_size'})",
        f"compression      {stats.bytes / max(trainer.corpus_tokens, 1):.3f} bytes/token",
    ]
    for stage, seconds in timings.items():
        lines.append(f"time {stage:<11} {seconds:.3f} s")
    lines.append(f"time total       {total:.3f} s")
    for message in stats.skipped:
        lines.append(f"skipped          {message}")
    lines.extend(f"wrote            {p}" for p in written)
    if run_id is not None:
        lines.append(f"run              #{run_id} (bpe-workbench runs show {run_id})")
    print("\n".join(lines))
