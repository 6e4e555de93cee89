"""Two variants beside classic BPE on one corpus: the trainer with a maximum token length, and
extending GPT-2 with new merges (replay on the corpus + training + the extension check).

Each row runs in its own process (its peak RSS is its own, helper processes' not counted):
every row pays for pre-tokenizing the corpus. CPU seconds are the process's and its helpers'
(user + system); wall is noisy on a shared machine.

    python benchmarks/cap_and_extend.py --corpus FILE [--vocab-size 32000] [--cap 16]
        [--gpt2 DIR] [--new-merges 4000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _paths import corpora

CHILD = """
import json, resource, sys, time
from pathlib import Path
import workbench
kind, corpus, vocab, cap, gpt2, new = sys.argv[1:7]
start = time.perf_counter()
if kind == "extend":
    base = workbench.load(gpt2)
    result = workbench.extend(base, [Path(corpus)], base.vocab_size + int(new), progress=False)
    note = f"check {'ok' if result.check.ok else 'FAILED'}, {len(result.new_merges):,} merges"
else:
    result = workbench.train(Path(corpus), int(vocab), max_token_length=int(cap), progress=False)
    longest = max(map(len, result.tokenizer.vocab.values()))
    note = f"{len(result.merges):,} merges, longest token {longest} bytes"
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
helpers = resource.getrusage(resource.RUSAGE_CHILDREN)  # counting's worker processes, if any
cpu = usage.ru_utime + usage.ru_stime + helpers.ru_utime + helpers.ru_stime
print(json.dumps({"wall": wall, "cpu": cpu, "peak_mb": usage.ru_maxrss / 1024, "note": note}))
"""


def run(kind: str, args: argparse.Namespace, cap: int) -> dict:
    argv = [kind, args.corpus, str(args.vocab_size), str(cap), args.gpt2, str(args.new_merges)]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"{kind} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a text file (~100 MB for the issue)")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--cap", type=int, default=16, help="max token length in bytes")
    parser.add_argument("--gpt2", default=None, help="GPT-2 vocab.json + merges.txt folder")
    parser.add_argument("--new-merges", type=int, default=4000)
    args = parser.parse_args()
    if args.gpt2 is None:  # the reference corpora hold GPT-2's files under other names
        import shutil
        import tempfile
        from pathlib import Path

        folder = Path(tempfile.mkdtemp(prefix="gpt2-"))
        for name in ("vocab.json", "merges.txt"):
            shutil.copy(corpora() / f"gpt2_{name}", folder / name)
        args.gpt2 = str(folder)
    rows = [
        ("classic", run("train", args, 0)),
        (f"cap {args.cap} B", run("train", args, args.cap)),
        (f"extend gpt2 +{args.new_merges:,}", run("extend", args, 0)),
    ]
    print(f"{'variant':<22} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}  note")
    for name, row in rows:
        print(
            f"{name:<22} {row['wall']:>8.2f} {row['cpu']:>8.2f} {row['peak_mb']:>8.0f}  {row['note']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
