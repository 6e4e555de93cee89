"""`bpe-workbench bench`: the workbench against its peers on the same corpus, same run.

bpe-workbench bench corpus.txt --vocab-size 32000          # training, whole processes
bpe-workbench bench --encode --gpt2 DIR text.txt          # single-thread encoding
bpe-workbench bench --make-corpus big.txt --megabytes 28   # real text from this machine
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from workbench.cli._common import UsageError, prepare_kernels, shown


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="compare speed and memory with the peers")
    p.add_argument("path", nargs="?", type=Path, metavar="PATH", help="the corpus (one text file)")
    p.add_argument(
        "--vocab-size", type=int, default=32000, metavar="N", help="vocabulary to train to"
    )
    p.add_argument("--repeat", type=int, default=3, help="runs of each (the median is shown)")
    p.add_argument("--encode", action="store_true", help="encode throughput vs tiktoken/HF")
    p.add_argument(
        "--gpt2",
        type=Path,
        default=None,
        metavar="PATH",
        help="tokenizer for --encode: GPT-2's folder (vocab.json + merges.txt) or any tokenizer"
        " file (default: $BPE_WORKBENCH_GPT2)",
    )
    p.add_argument(
        "--peers",
        default="hf,rustbpe,ffbpe",
        help="trainers to compare with, comma-separated from hf, rustbpe, ffbpe (default: all)",
    )
    p.add_argument(
        "--make-corpus", metavar="FILE", help="assemble a corpus file (- for standard output)"
    )
    p.add_argument(
        "--megabytes", type=float, default=28.0, help="size of the --make-corpus file (default 28)"
    )
    p.add_argument(
        "--source",
        type=Path,
        action="append",
        help="folders to take text from for --make-corpus (default: /usr/share/doc)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.bench import train as bench

    if args.make_corpus:
        import sys

        from workbench.output_file import Kind, write_output_with

        sources = args.source or [Path("/usr/share/doc")]
        made: list[int] = []
        kind = write_output_with(
            args.make_corpus,
            lambda path: made.append(bench.make_corpus(path, args.megabytes, sources)),
        )
        where = sys.stdout if kind is Kind.FILE else sys.stderr  # stdout may carry the corpus
        name = "standard output" if args.make_corpus == "-" else shown(args.make_corpus)
        print(f"wrote {made[0]:,} bytes to {name}", file=where)
        return 0
    if args.path is None or not args.path.is_file():
        raise UsageError("bench needs a corpus file (or --make-corpus OUT)")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, not {args.repeat}")
    if args.encode:
        from workbench.bench.encode import bench_encode

        tokenizer = args.gpt2 or os.environ.get("BPE_WORKBENCH_GPT2")
        if not tokenizer:
            raise UsageError(
                "bench --encode needs a tokenizer: --gpt2 DIR (GPT-2's vocab.json and merges.txt)"
                " or any tokenizer file, or $BPE_WORKBENCH_GPT2"
            )
        prepare_kernels(args, "encode", ["gpt2"])  # a benchmark never times the compiler
        results = bench_encode(args.path, tokenizer)
        print(
            f"single-thread encode of {args.path.name} ({results['mb']} MB), {tokenizer} ranks, "
            f"median of 3 whole-text runs; our pre-tokenizer: {results['splitter']}"
        )
        for name in ("ours", "tiktoken", "riptoken", "hf"):
            if name in results:
                print(f"  {name:<14}{results[name]:>8.2f} MB/s")
        for name in ("ours/tiktoken", "ours/riptoken", "ours/hf"):
            if name in results:
                print(f"  {name:<14}{results[name]:>8.2f}x")
        print(f"  {'same ids':<14}{'yes' if results['same_ids'] else 'NO'}")
        return 0
    names = {"hf": "hf tokenizers", "rustbpe": "rustbpe", "ffbpe": "ffbpe"}
    asked = [name.strip() for name in args.peers.split(",") if name.strip()]
    unknown = [name for name in asked if name not in names]
    if unknown:
        raise UsageError(
            f"--peers: unknown trainer {', '.join(unknown)}; choose from hf, rustbpe, ffbpe"
        )
    size = args.path.stat().st_size / 1e6
    peers = tuple(names[name] for name in asked)
    prepare_kernels(args, "train", ["gpt2"])  # a benchmark never times the compiler
    results = bench.bench_train(args.path, args.vocab_size, args.repeat, peers)
    title = f"train {args.path.name} ({size:.1f} MB) to vocab {args.vocab_size:,}, {args.repeat} runs each"
    print(bench.format_table(results, title))
    return 0
