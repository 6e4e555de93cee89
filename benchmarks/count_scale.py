"""Counting a corpus of a gigabyte or more: locally and on a Dask LocalCluster, throughput and
peak memory of each, and a check that both write the same counts file.

    python benchmarks/count_scale.py /work/bench-data/1g.txt --make-megabytes 1000
    python benchmarks/count_scale.py big.txt --dask local:2 --dask-task-mb 64

With `--make-megabytes N` a missing corpus is first assembled from this machine's text
(`/usr/share/doc`, `/usr/share/man`, `/usr/include`, Python's library and site-packages, as
`bpe-workbench bench --make-corpus` does); when those hold less than N MB the text is repeated
until it is N MB (the unique-piece table then stops growing, which is what a larger real corpus
does slowly anyway; the counting work per byte is the same).

Each count is one `bpe-workbench count` process; memory is the peak of the summed resident sets
of that process and all its children (Dask's scheduler, nannies and workers), sampled every
0.1 s, so the Dask figure includes every worker.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import psutil

from workbench.bench.train import make_corpus

SOURCES = ("/usr/share/doc", "/usr/share/man", "/usr/include")


def assemble(out: Path, megabytes: float) -> None:
    sources = [Path(s) for s in SOURCES]
    sources += [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    written = make_corpus(out, megabytes, [s for s in sources if s.is_dir()])
    want = int(megabytes * 1_000_000)
    print(f"assembled {written / 1e6:.0f} MB of distinct text from {', '.join(map(str, sources))}")
    if written < want:
        original = out.with_suffix(".part")
        out.rename(original)
        with open(out, "wb") as sink:
            while sink.tell() < want:
                with open(original, "rb") as source:
                    shutil.copyfileobj(source, sink, 16 << 20)
        original.unlink()
        print(f"repeated to {out.stat().st_size / 1e6:.0f} MB")


def tree_rss(process: psutil.Process) -> int:
    total = 0
    for p in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a process may end while we look
            total += p.memory_info().rss
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak summed RSS in MB) of one command and its process tree.
    CPU time is what the tree used, however busy the machine: the fair figure on a shared one
    (it counts every reaped descendant: Dask's nannies and workers are joined by their parents)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, tree_rss(watched))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    out, err = child.communicate()
    if child.returncode != 0:
        sys.exit(f"{' '.join(argv[:6])} failed: {err.strip()[-800:]}")
    print(out.strip())
    return seconds, _children_cpu() - cpu, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--make-megabytes", type=float, default=None)
    parser.add_argument("--dask", default="local:2")
    parser.add_argument("--dask-task-mb", type=float, default=64)
    parser.add_argument("--special", default="<|endoftext|>")
    args = parser.parse_args()
    if not args.corpus.exists():
        if args.make_megabytes is None:
            sys.exit(f"{args.corpus} does not exist: add --make-megabytes N to assemble it")
        args.corpus.parent.mkdir(parents=True, exist_ok=True)
        assemble(args.corpus, args.make_megabytes)
    size = args.corpus.stat().st_size
    exe = [sys.executable, "-m", "workbench", "count", str(args.corpus), "--quiet"]
    exe += ["--special", args.special]
    print(f"corpus {args.corpus}: {size / 1e6:,.0f} MB; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        local, remote = Path(folder) / "local.parquet", Path(folder) / "dask.parquet"
        warm = [sys.executable, "-m", "workbench", "count", "--help"]
        subprocess.run(warm, capture_output=True, check=True)  # warm the file cache of imports
        rows = []
        print("\n-- local")
        rows.append(("local (threads)", *measured([*exe, "--out", str(local)])))
        print(f"\n-- dask {args.dask}")
        task = str(int(args.dask_task_mb * 2**20))
        argv = [*exe, "--out", str(remote), "--dask", args.dask, "--dask-task-bytes", task]
        rows.append((f"dask {args.dask}", *measured(argv)))
        same = local.read_bytes() == remote.read_bytes()
        table_mb = local.stat().st_size / 1e6
    print(f"\n{'count':<18}{'wall s':>9}{'MB/s':>9}{'CPU s':>9}{'MB/CPU s':>10}{'peak MB':>10}")
    for name, seconds, cpu, peak in rows:
        rate, per_cpu = size / 1e6 / seconds, size / 1e6 / cpu
        print(f"{name:<18}{seconds:>9.1f}{rate:>9.1f}{cpu:>9.1f}{per_cpu:>10.1f}{peak:>10.0f}")
    print(f"counts files identical: {same}; counts file {table_mb:.1f} MB")
    print("wall time is of the whole process (start-up, cluster start and file writing included)")


if __name__ == "__main__":
    main()
