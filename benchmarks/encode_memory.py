"""Hand-run benchmark: `bpe-workbench encode` of a file holds memory independent of its size.

Run `python benchmarks/encode_memory.py [--sizes 100,1024] [--tokenizer SPEC]`. For each size
(MB) a text file is written (varied English-like lines, repeated), then `encode` runs on it as a
whole process with its ids sent to /dev/null; its wall time and peak RSS are printed. Peak RSS
should stay flat across sizes (it read files whole before: 15 GB at 500 MB). The tokenizer is
`$BPE_WORKBENCH_GPT2` or the reference corpora's `gpt2_vocab.json` unless `--tokenizer`.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from workbench.bench import run_measured

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import corpora  # noqa: E402

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
]
WORDS += ["naïve", "café", "日本語", "2026", "1,024", "(x)", "—", "don't", "it's", "€5", "résumé"]


def write_text(path: Path, megabytes: int) -> None:
    """`megabytes` MB of lines drawn from WORDS: a 1 MB block written over and over."""
    rng = random.Random(7)
    lines = []
    size = 0
    while size < 1 << 20:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 20))) + ".\n"
        lines.append(line)
        size += len(line.encode())
    block = "".join(lines).encode()
    with path.open("wb") as f:
        written = 0
        while written < megabytes << 20:
            f.write(block)
            written += len(block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,1024", help="megabytes, comma-separated")
    parser.add_argument("--tokenizer", default=None, help="a tokenizer SPEC for encode")
    args = parser.parse_args()
    tokenizer = args.tokenizer or _default_tokenizer()
    print(f"{'MB':>6} {'seconds':>8} {'MB/s':>6} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(folder) / f"text{size}.txt"
            write_text(path, size)
            argv = [sys.executable, "-m", "workbench", "encode", "--tokenizer", tokenizer]
            seconds, peak = run_measured([*argv, str(path)])
            print(f"{size:6d} {seconds:8.1f} {size / seconds:6.1f} {peak:12.0f}")
            path.unlink()


def _default_tokenizer() -> str:
    return os.environ.get("BPE_WORKBENCH_GPT2") or str(corpora() / "gpt2_vocab.json")


if __name__ == "__main__":
    main()
