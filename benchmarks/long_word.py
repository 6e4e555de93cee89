"""Hand-run benchmark: one long word (a single pre-token) against prose of the same size.

Run `python benchmarks/long_word.py [--sizes 50] [--vocab 2000] [--kinds prose,letters,dna]
[--prose FILE] [--data DIR] [--runs N]`. Each case is one whole `workbench.train(path, vocab)`
(warm kernels: a small run of the same kind first) in a fresh process of its own, so that its
peak memory is its own, then its stages alone. It prints, a line per case: seconds per MB of the
whole call (wall, and CPU of the process and its counting workers), CPU seconds per MB of each
stage (counting, indexing, merging), the merges made, the unique pieces and the peak memory
(VmHWM of the process). Wall time is only fair on an idle machine; CPU time less noisy.

Inputs of each size (MB), written to a temporary folder:
- `prose`: English documentation from /usr/share/doc (`workbench.bench.train.make_corpus`, the
  text of the project's trainer benchmarks), or the first MB of `--prose FILE`: many short words.
- `letters`: random lowercase letters, and `dna`: random A, C, G, T: each one pre-token.
- `base64`: random bytes in base64, one line. The GPT-2 pattern splits it at every digit, `+`
  and `/`: millions of short distinct pieces, not one long word.
- `text`: the same English documentation with every space and line break taken out: runs of
  letters cut at punctuation and digits, a few of them long words.
Run from benchmarks/ or the repository root, with a warm Numba cache.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("prose", "letters", "base64", "text", "dna")
STAGES = ("count", "index", "merge")


def make_input(kind: str, megabytes: float, out: Path, prose: Path | None, seed: int) -> None:
    """About `megabytes` MB of `kind` in `out`."""
    size = int(megabytes * (1 << 20))
    rng = random.Random(seed)
    if kind in ("prose", "text"):
        if prose is not None:
            with prose.open("rb") as f:
                data = f.read(2 * size if kind == "text" else size)
            data = data[: data.rfind(b"\n") + 1]  # whole lines
        else:
            from workbench.bench.train import make_corpus

            # Taking the spaces out leaves about 5/6 of the text: gather more for `text`.
            make_corpus(
                out, size * (1.3 if kind == "text" else 1.0) / 1e6, [Path("/usr/share/doc")]
            )
            data = out.read_bytes()
        if kind == "text":
            data = re.sub(rb"\s+", b"", data)[:size]
            data = data[: len(data.decode("utf-8", "ignore").encode())]  # whole characters
        out.write_bytes(data)
    elif kind == "letters":
        out.write_bytes(rng.randbytes(size).translate(LETTERS))
    elif kind == "base64":
        out.write_bytes(base64.b64encode(rng.randbytes(size * 3 // 4)))
    elif kind == "dna":
        out.write_bytes(rng.randbytes(size).translate(DNA))
    else:
        raise SystemExit(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the counting workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _peak_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited through
    the fork and exec that started it)."""
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path, warm: Path, vocab: int) -> dict:
    """One case, in this process: a warm-up run on `warm`, the timed `workbench.train` on
    `path`, then its stages one by one (CPU seconds each)."""
    import workbench
    from workbench.engine.config import TrainConfig
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.engine.train.trainer import BpeTrainer

    workbench.train(warm, vocab, progress=False)
    wall, cpu = time.perf_counter(), _cpu()
    result = workbench.train(path, vocab, progress=False)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    peak = _peak_mb()
    del result
    config = TrainConfig(vocab_size=vocab)
    stages = {}
    start = _cpu()
    counted = count_corpus([path], config)
    stages["count"] = _cpu() - start
    start = _cpu()
    trainer = BpeTrainer(counted.words, config)
    stages["index"] = _cpu() - start
    start = _cpu()
    trainer.run()
    stages["merge"] = _cpu() - start
    return {
        "mb": path.stat().st_size / (1 << 20),
        "wall": wall,
        "cpu": cpu,
        "stages": stages,
        "merges": trainer.n_merges,
        "unique": len(counted.words),
        "peak_mb": peak,
    }


def run_case(path: Path, warm: Path, vocab: int) -> dict:
    """`measure` in a fresh process: its peak memory is this case's alone."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), str(warm), str(vocab)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{path.name}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(kind: str, case: dict, prose: dict | None) -> str:
    """One case's row; its whole CPU per MB against prose's last, when measured."""
    mb = case["mb"]
    ratio = f"{case['cpu'] / mb / (prose['cpu'] / prose['mb']):8.1f}" if prose else ""
    stages = " ".join(f"{case['stages'][name] / mb:7.4f}" for name in STAGES)
    return (
        f"{kind:>8} {mb:6.1f} {case['wall'] / mb:7.4f} {case['cpu'] / mb:7.4f} {stages} "
        f"{case['merges']:7,d} {case['unique']:9,d} {case['peak_mb']:8.0f}{ratio}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="50", help="megabytes, comma-separated")
    parser.add_argument("--vocab", type=int, default=2000, help="vocabulary size")
    parser.add_argument("--kinds", default="prose,letters,dna", help="of " + ",".join(KINDS))
    parser.add_argument("--prose", type=Path, help="prose file (default: /usr/share/doc's text)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each case (alternating)")
    parser.add_argument("--data", type=Path, help="keep the inputs in this folder (and reuse them)")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        path, warm, vocab = args.measure
        print(json.dumps(measure(Path(path), Path(warm), int(vocab))))
        return
    kinds = args.kinds.split(",")
    print(
        f"vocab {args.vocab}; seconds per MB: the whole workbench.train (wall; CPU of the process "
        "and its counting workers), then CPU of each stage run alone; x prose: the whole call's "
        "CPU per MB over prose's (list prose first)"
    )
    header = " ".join(f"{name:>7}" for name in STAGES)
    print(f"{'input':>8} {'MB':>6} {'wall':>7} {'cpu':>7} {header} {'merges':>7} {'pieces':>9} "
          f"{'peak MB':>8} {'x prose':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.data or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for size in (float(s) for s in args.sizes.split(",")):
            paths = {}
            for kind in kinds:
                paths[kind] = folder / f"{kind}-{size:g}.txt"
                warm = folder / f"{kind}-warm.txt"
                for path, megabytes, seed in ((paths[kind], size, 33), (warm, 0.05, 34)):
                    if args.data is None or not path.exists():
                        make_input(kind, megabytes, path, args.prose, seed)
            prose = None
            for _ in range(args.runs):
                for kind in kinds:
                    case = run_case(paths[kind], folder / f"{kind}-warm.txt", args.vocab)
                    prose = case if kind == "prose" else prose
                    print(line(kind, case, prose), flush=True)


# Every byte to one of the 26 lowercase letters (256 = 9 * 26 + 22: the first 22 letters are a
# little more frequent, which only makes the pair counts less tied).
LETTERS = bytes(ord("a") + b % 26 for b in range(256))
DNA = bytes(b"ACGT"[b % 4] for b in range(256))


if __name__ == "__main__":
    main()
