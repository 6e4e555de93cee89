"""Hand-run check that `encode_matrix.py`'s "new instance per call" is cold for every encoder:
does a peer keep a piece cache (or any other table filled by encoding) across instances within
one process?

For each encoder, ranks and text, one fresh process (`--child`) times, in CPU seconds of the
whole process (`time.process_time`), each text cut into halves A and B:

- fresh: a new instance's first call on A, in a process where only a throwaway instance has
  encoded a few words (what a process that encodes this text once pays);
- same: that instance's second call on A (its caches warm);
- new+A: a second new instance's first call on A, after the first encoded A. Near `same`
  means something filled by encoding outlives the instance: the matrix's "cold" is then warm;
- new+B: a third new instance's first call on B, which nothing in the process has encoded
  yet; against a fresh process's first call on B (the child run with the halves swapped) it
  tells process warmth (allocator, page faults) from cached pieces.

Run `python benchmarks/encode_fairness.py [--data /work/bench-data/em] [--ranks gpt2 cl100k
o200k] [--peers ours tiktoken gigatoken fastokens] [--runs 3]`; medians of `--runs` processes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from encode_peers import PEERS, RankFile

_TEXTS = {"English docs": "en-2.txt", "multilingual": "multi-2.txt", "C code": "c-2.txt"}


def _halves(text: str) -> tuple[str, str]:
    cut = text.find("\n", len(text) // 2)
    return text[:cut], text[cut:]


def child(peer_name: str, rank_path: Path, pattern: str, text_path: Path, swap: bool) -> None:
    """Time the four calls in this process and print them as JSON."""
    peer = PEERS[peer_name]()
    rank_file = RankFile(rank_path.stem, rank_path, pattern, {})
    call = peer.as_array if peer_name in ("gigatoken", "ours") else peer.as_list
    first, second = _halves(text_path.read_text("utf-8"))
    if swap:
        first, second = second, first
    warm = peer.build(rank_file)  # code loaded (our kernels from the disk cache), a few words
    call(warm, "load the code before any timing: a few words only")
    del warm

    def timed(instance: object, text: str) -> float:
        start = time.process_time()
        call(instance, text)
        return time.process_time() - start

    a = peer.build(rank_file)
    out = {"fresh": timed(a, first), "same": timed(a, first)}
    b = peer.build(rank_file)
    out["new+A"] = timed(b, first)
    c = peer.build(rank_file)
    out["new+B"] = timed(c, second)
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("/work/bench-data/em"))
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument(
        "--peers", nargs="+", default=["ours", "tiktoken", "gigatoken", "fastokens"]
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        peer, rank_path, pattern_path, text_path, swap = args.child
        pattern = Path(pattern_path).read_text("utf-8")
        child(peer, Path(rank_path), pattern, Path(text_path), swap == "1")
        return
    from encode_matrix import rank_files  # noqa: PLC0415 -- builds every preset once

    with tempfile.TemporaryDirectory(prefix="encode-fair-") as folder:
        files = rank_files(Path(folder))
        print(f"{'encoder':10}{'ranks x text':26}{'fresh':>8}{'same':>8}{'new+A':>8}"
              f"{'new+B':>8}{'fresh B':>8}  new+A/fresh  (CPU ms, median of {args.runs})")  # fmt: skip
        for name in args.ranks:
            pattern_path = Path(folder) / f"{name}.pattern"
            pattern_path.write_text(files[name].pattern, "utf-8")
            for kind, file_name in _TEXTS.items():
                for peer in args.peers:
                    runs: dict[str, list[float]] = {}
                    for _ in range(args.runs):
                        for swap in ("0", "1"):
                            line = subprocess.run(
                                [sys.executable, __file__, "--child", peer, str(files[name].path),
                                 str(pattern_path), str(args.data / file_name), swap],
                                capture_output=True, text=True, check=True,
                            ).stdout.strip().splitlines()[-1]  # fmt: skip
                            for key, value in json.loads(line).items():
                                runs.setdefault(f"{key}/{swap}", []).append(value * 1e3)
                    m = {key: statistics.median(values) for key, values in runs.items()}
                    print(f"{peer:10}{name + ' x ' + kind:26}{m['fresh/0']:8.1f}{m['same/0']:8.1f}"
                          f"{m['new+A/0']:8.1f}{m['new+B/0']:8.1f}{m['fresh/1']:8.1f}"
                          f"  {m['new+A/0'] / m['fresh/0']:5.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
