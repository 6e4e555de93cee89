"""`bpe-workbench count`: count a corpus's pre-tokens into a counts file, locally or on Dask.

    bpe-workbench count corpus/ --out counts.parquet --special "<|endoftext|>"
    bpe-workbench count shards/ --out counts.parquet --dask tcp://scheduler:8786
    bpe-workbench count shards/ --out counts.parquet --dask local:4
    bpe-workbench count --merge a.parquet b.parquet --out all.parquet
    bpe-workbench train --from-counts counts.parquet --vocab-size 32000 --out tok/ ...

The counts file (see `workbench/engine/counts_file.py`) holds every unique piece and its count
with the pattern and special tokens it was counted with; `train --from-counts` refuses one whose
pattern or specials differ from the ones asked for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("count", help="count pre-tokens into a counts file (Parquet)")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="corpus files/folders (or counts files)"
    )
    p.add_argument("--out", type=Path, required=True, help="the counts file to write")
    p.add_argument("--merge", action="store_true", help="sum the counts files named as PATHs")
    p.add_argument("--pattern", default="gpt2", help="gpt2, cl100k, o200k or a custom regex")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN")
    add_reading_options(p)
    p.add_argument("--workers", type=int, default=None, help="threads/processes (local count)")
    p.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS",
        help="count on a Dask cluster: a scheduler address, or local:N for N local processes",
    )
    p.add_argument(
        "--dask-task-bytes",
        type=int,
        default=None,
        metavar="N",
        help="input bytes per Dask task (default 64 MiB)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """How to read the corpus (`train` has the same options, defined in its own module)."""
    p.add_argument("--skip-bad-files", action="store_true", help="skip unreadable files, report")
    p.add_argument("--text-column", default="text", help="Parquet/Arrow column of the text")
    p.add_argument("--jsonl-field", default="text", help="JSONL field of the text")
    p.add_argument(
        "--regex-pretokenizer",
        action="store_true",
        help="pre-tokenize with the regex package even for a preset (same pieces, slower)",
    )


def run(args: argparse.Namespace) -> int:
    from workbench.cli.train import _Bar
    from workbench.engine.pretokenize import counts_file

    if args.merge:
        result = counts_file.merge_counts(args.paths, args.out)
        _summary(result, args.out)
        return 0
    config = TrainConfig(
        vocab_size=256 + len(set(args.special)),  # counting does not depend on it
        pattern=args.pattern,
        special_tokens=tuple(args.special),
        on_bad_file="skip" if args.skip_bad_files else "stop",
        pretokenizer="regex" if args.regex_pretokenizer else "auto",
        text_column=args.text_column,
        jsonl_field=args.jsonl_field,
    )
    if counts_file.counts_path(args.paths) is not None:
        raise WorkbenchError(f"{args.paths[0]} is a counts file already (use --merge to sum some)")
    bar = _Bar(enabled=not args.quiet and sys.stderr.isatty())
    progress = lambda d, t: bar.show("count", d, t)  # noqa: E731
    if args.dask:
        from workbench.engine.pretokenize.dask_count import TASK_BYTES, count_on_dask

        task_bytes = args.dask_task_bytes or TASK_BYTES
        result = count_on_dask(args.paths, config, args.dask, progress, task_bytes=task_bytes)
    else:
        from workbench.engine.pretokenize.counting import count_corpus

        result = count_corpus(args.paths, config, progress=progress, workers=args.workers)
    bar.end()
    counts_file.write_counts(result, config, args.out, args.paths)
    _summary(result, args.out)
    return 0


def _summary(result, out: Path) -> None:
    s = result.stats
    lines = [
        f"documents        {s.documents:,} in {s.files:,} files",
        f"bytes            {s.bytes:,}",
        f"pre-tokens       {s.pieces:,}",
        f"unique           {s.unique_pieces:,}",
    ]
    if s.seconds:
        lines.append(f"time             {s.seconds:.3f} s")
    lines.extend(f"skipped          {message}" for message in s.skipped)
    lines.append(f"wrote            {out}")
    print("\n".join(lines))
