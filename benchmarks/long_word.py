"""Hand-run benchmark: one long word (a single pre-token) trains in time proportional to its size.

Run `python benchmarks/long_word.py [--sizes 3,12,50] [--vocab 2000] [--prose FILE --prose-mb 28]`.
For each size (MB) a file of random lowercase letters without a space is counted (one pre-token),
indexed and merged to `--vocab`; with `--prose`, the first `--prose-mb` MB of FILE go through the
same stages. Each stage prints seconds and seconds per MB: merging inside one word should cost
about what prose costs per MB, and not grow with the word's size. Run with a warm Numba cache.
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
from pathlib import Path

from long_runs import train_stages  # the same stages, timed the same way (run from benchmarks/)

from workbench.engine.warmup import warm_up


def stages(path: Path, vocab: int) -> list[tuple[str, float]]:
    """(stage, seconds) of counting, indexing and merging one file."""
    times, trainer = train_stages(path, vocab)
    times.append((f"({trainer.n_merges} merges)", 0.0))
    return times


def report(label: str, path: Path, vocab: int) -> None:
    megabytes = path.stat().st_size / (1 << 20)
    for stage, seconds in stages(path, vocab):
        print(f"{label:>10} {megabytes:6.1f} {stage:16} {seconds:8.3f} {seconds / megabytes:7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="3,12,50", help="megabytes, comma-separated")
    parser.add_argument("--vocab", type=int, default=2000, help="vocabulary size")
    parser.add_argument("--prose", type=Path, help="a prose file to compare with")
    parser.add_argument("--prose-mb", type=int, default=28, help="megabytes of --prose used")
    args = parser.parse_args()
    warm_up("gpt2")
    print(f"{'input':>10} {'MB':>6} {'stage':16} {'seconds':>8} {'s/MB':>7}")
    rng = random.Random(33)
    with tempfile.TemporaryDirectory() as folder:
        if args.prose is not None:
            prose = Path(folder) / "prose.txt"
            with args.prose.open("rb") as f:
                data = f.read(args.prose_mb << 20)
            prose.write_bytes(data[: data.rfind(b"\n") + 1])  # whole lines
            report("prose", prose, args.vocab)
            prose.unlink()
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(folder) / f"word{size}.txt"
            path.write_bytes(rng.randbytes(size << 20).translate(LETTERS))
            report("one word", path, args.vocab)
            path.unlink()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MB")


# Every byte to one of the 26 lowercase letters (256 = 9 * 26 + 22: the first 22 letters are a
# little more frequent, which only makes the pair counts less tied).
LETTERS = bytes(ord("a") + b % 26 for b in range(256))


if __name__ == "__main__":
    main()
