"""Hand-run benchmark: the first start, from an empty Numba cache, against a warm start.

Run `python benchmarks/first_start.py [corpus] [--vocab-size 500] [--runs 1]`. Each run is a whole
`bpe-workbench train CORPUS --vocab-size N --no-db` process, first with a fresh, empty
`NUMBA_CACHE_DIR` (a small corpus starts at once: `regex` counts it and the Python trainer makes
its merges while a helper process compiles; see `session/first_start.py`), then again after a
whole warm-up has filled that cache (every kernel loads).
It prints wall seconds and CPU seconds (user + system of the child): on a shared machine the CPU
figure is the steadier one, since compiling is single-threaded work that others' load only
stretches in wall time. Also `--warm-up` times `workbench.engine.warmup.warm_up` cold, stage by
stage, as the window sees it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _paths import corpora  # noqa: E402

WARM_UP = """
import sys, time
from workbench.engine.warmup import warm_up
last = [time.perf_counter()]
def progress(done, total, stage):
    now = time.perf_counter()
    print(f"  {done} of {total} {stage:28s} {now - last[0]:6.2f} s", flush=True)
    last[0] = now
warm_up(sys.argv[1], progress)
"""


def run(argv: list[str], cache: str) -> tuple[float, float, str]:
    """(wall seconds, child CPU seconds, stdout) of one process with NUMBA_CACHE_DIR=cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{argv[:3]} failed: {proc.stderr.strip()[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", nargs="?", type=Path, default=corpora() / "corpus.en")
    parser.add_argument("--vocab-size", type=int, default=500)
    parser.add_argument("--pattern", default="gpt2")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--warm-up", action="store_true", help="time warm_up() cold instead")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]} (2 cores here; >2 means shared)")
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            if args.warm_up:
                argv = [sys.executable, "-c", WARM_UP, args.pattern]
                wall, cpu, stdout = run(argv, cache)
                print(stdout, end="")
                print(f"warm_up cold: {wall:6.2f} s wall {cpu:6.2f} s CPU")
                continue
            argv = [
                sys.executable, "-m", "workbench", "train", str(args.corpus),
                "--vocab-size", str(args.vocab_size), "--pattern", args.pattern,
                "--no-db", "--out", out,
            ]  # fmt: skip
            # cold: a first start (a small corpus trains at once while a helper compiles);
            # then the cache is filled by a whole warm-up (not timed) and the run timed again.
            for label in ("cold", "warm"):
                if label == "warm":
                    run([sys.executable, "-c", WARM_UP, args.pattern], cache)
                wall, cpu, stdout = run(argv, cache)
                stages = [line for line in stdout.splitlines() if line.startswith("time ")]
                print(f"{label}: {wall:6.2f} s wall {cpu:6.2f} s CPU | " + " | ".join(stages))


if __name__ == "__main__":
    main()
