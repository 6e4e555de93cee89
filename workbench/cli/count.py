"""`bpe-workbench count`: count a corpus's pre-tokens into a counts file, locally or on Dask.

    bpe-workbench count corpus/ --out counts.parquet --special "<|endoftext|>"
    bpe-workbench count shards/ --out counts.parquet --dask tcp://scheduler:8786
    bpe-workbench count shards/ --out counts.parquet --dask local:4
    bpe-workbench count --merge a.parquet b.parquet --out all.parquet
    bpe-workbench train --from-counts counts.parquet --vocab-size 32000 --out-dir tok/ ...

The counts file (see `workbench/engine/counts_file.py`) holds every unique piece and its count
with the pattern and special tokens it was counted with; `train --from-counts` refuses one whose
pattern or specials differ from the ones asked for. `--out -` writes it to standard output (the
summary then goes to stderr); an existing file is replaced only once the new one is whole.
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli._common import (
    UsageError,
    add_quiet_option,
    add_threads_option,
    check_threads,
    prepare_kernels,
    print_json,
    shown,
)
from workbench.cli.train import add_reading_options, corpus_size, skipped_lines

JSON_HELP = (
    "print the summary as one JSON object: {documents, files, bytes, pre_tokens, "
    "unique_pieces, seconds, skipped: [MESSAGE], wrote: PATH}"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("count", help="count pre-tokens into a counts file (Parquet)")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="corpus files/folders (or counts files)"
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the counts file to write (.parquet; - for standard output)",
    )
    p.add_argument("--merge", action="store_true", help="sum the counts files named as PATHs")
    p.add_argument("--pattern", default="gpt2", help="gpt2, cl100k, o200k or a custom regex")
    p.add_argument(
        "--special",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a special token: text is cut at it and it is not counted (repeatable)",
    )
    add_reading_options(p)
    add_threads_option(p, "threads/processes for a local count")
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
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine.config import TrainConfig
    from workbench.engine.pretokenize import counts_file
    from workbench.output_file import check_output, is_stdout, write_output_with
    from workbench.progress import ProgressBars

    check_threads(args)
    to_stdout = is_stdout(args.out)
    if to_stdout and args.json:
        raise UsageError("--out - and --json both write to standard output; choose one")
    check_output(args.out, binary=True)  # a bad --out fails now, not after counting
    if args.merge:
        merged: list = []
        write_output_with(
            args.out, lambda path: merged.append(counts_file.merge_counts(args.paths, path))
        )
        _report(args, merged[0], to_stdout)
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
        raise UsageError(f"{args.paths[0]} is a counts file already (use --merge to sum some)")
    if not (args.regex_pretokenizer or args.dask):  # the scanner (Dask's workers: their own)
        prepare_kernels(args, "count", [config.pattern_string])
    with ProgressBars(quiet=args.quiet) as bars:
        progress = bars.bytes("count", corpus_size(args.paths) if bars.enabled else None)
        if args.dask:
            from workbench.engine.pretokenize.dask_count import TASK_BYTES, count_on_dask

            task_bytes = args.dask_task_bytes or TASK_BYTES
            result = count_on_dask(args.paths, config, args.dask, progress, task_bytes=task_bytes)
        else:
            from workbench.engine.pretokenize.counting import count_corpus

            result = count_corpus(args.paths, config, progress=progress, workers=args.threads)
    write_output_with(
        args.out, lambda path: counts_file.write_counts(result, config, path, args.paths)
    )
    _report(args, result, to_stdout)
    return 0


def _report(args: argparse.Namespace, result, to_stderr: bool) -> None:
    s = result.stats
    summary = {
        "documents": s.documents,
        "files": s.files,
        "bytes": s.bytes,
        "pre_tokens": s.pieces,
        "unique_pieces": s.unique_pieces,
        "seconds": s.seconds,
        "skipped": list(s.skipped),
        "wrote": "-" if to_stderr else str(args.out),
    }
    if args.json:
        print_json(summary)
        return
    lines = [
        f"documents        {s.documents:,} in {s.files:,} files",
        f"bytes            {s.bytes:,}",
        f"pre-tokens       {s.pieces:,}",
        f"unique           {s.unique_pieces:,}",
    ]
    if s.seconds:
        lines.append(f"time             {s.seconds:.3f} s")
    lines += skipped_lines(list(s.skipped), args.verbose)
    lines.append(f"wrote            {'standard output' if to_stderr else shown(args.out)}")
    print("\n".join(lines), file=sys.stderr if to_stderr else sys.stdout)
