"""Counting many small files against the same text in one file: throughput of each and the ratio.

    python benchmarks/small_files.py [--text /work/bench-data/en-2.txt] [--files 50000]
        [--bytes 220] [--dir /tmp/small-files] [--runs 3] [--workers 2] [--profile] [--threads]
        [--reading]

The text is cut at line ends into `--files` pieces of about `--bytes` bytes (repeated when it is
shorter), written once under `--dir` (kept for the next run; made again when the options differ)
together with `whole.txt`, the same pieces end to end. Each count goes through the public
`count_corpus` (walk, read, check, count) with the GPT-2 preset; the figure is the median of
`--runs` runs, as MB/s of wall time and of process CPU time (steadier on a shared machine). The
first run of each warms the page cache and the kernels and is not counted. `--profile` prints the
top functions of one small-files count under cProfile (the main thread's), `--threads` the CPU
time of each stage's threads over `--runs` small-files counts (the reader threads' system calls,
the walk, the counting), `--reading` the packs' reading alone, by the libc kernel and by the
Python fallback, on one and on two threads. The last line is the ceiling this machine sets: the
files' reading alone (libc kernel, `--workers` threads) plus the one file's CPU time spread over
`--workers` cores, against the one file's wall time. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from workbench.engine.pretokenize.counting import count_corpus

from workbench.engine.config import TrainConfig


def pieces(text: bytes, files: int, size: int) -> list[bytes]:
    """`files` pieces of `text` (repeated as needed) of about `size` bytes, cut after a newline."""
    out: list[bytes] = []
    at = 0
    while len(out) < files:
        if at >= len(text):
            at = 0
        cut = text.find(b"\n", at + size - 1)
        cut = len(text) if cut < 0 else cut + 1
        out.append(text[at:cut])
        at = cut
    return out


def make_corpus(text_path: Path, folder: Path, files: int, size: int) -> tuple[Path, Path]:
    """(folder of small files, the one file): written unless an earlier run left them."""
    stamp = f"{text_path.resolve()} {text_path.stat().st_size} {files} {size}\n"
    small, whole = folder / "files", folder / "whole.txt"
    marker = folder / "made-from"
    if marker.is_file() and marker.read_text() == stamp:
        return small, whole
    parts = pieces(text_path.read_bytes(), files, size)
    small.mkdir(parents=True, exist_ok=True)
    for old in small.rglob("*.txt"):
        old.unlink()
    for k, part in enumerate(parts):  # 100 files a folder, as a real tree of documents
        sub = small / f"{k // 100:04d}"
        if k % 100 == 0:
            sub.mkdir(exist_ok=True)
        (sub / f"{k:06d}.txt").write_bytes(part)
    whole.write_bytes(b"".join(parts))
    marker.write_text(stamp)
    return small, whole


def timed(path: Path, config: TrainConfig, workers: int, runs: int) -> tuple[float, float, int]:
    """Median (wall, process CPU) seconds of counting `path`, and its bytes of text."""
    result = count_corpus([path], config, workers=workers)  # warm-up: kernels, page cache
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = count_corpus([path], config, workers=workers)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), result.stats.bytes


def thread_cpu(small: Path, config: TrainConfig, workers: int, runs: int, files: int) -> None:
    """Print the thread CPU time spent in each stage of counting `small`, per run and per file,
    by wrapping the stages' functions (a benchmark may reach into the engine; a test may not)."""
    from workbench.engine._native import libc_read as _libc_read
    from workbench.engine.pretokenize.scan import count as scan_count  # noqa: PLC0415
    from workbench.engine.pretokenize.scan import fold as count_fold

    from workbench.engine.corpus import reading as corpus

    spent: dict[str, float] = collections.defaultdict(float)
    lock = threading.Lock()

    def timed_call(owner: object, name: str, label: str) -> None:
        inner: Callable = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                with lock:
                    spent[label] += time.thread_time() - start

        setattr(owner, name, wrapper)

    timed_call(scan_count, "read_text_pack", "readers: the packs, in all")
    timed_call(_libc_read, "read_files", "readers: in the libc kernel")
    timed_call(scan_count, "_count_unit", "counters: scanning")
    timed_call(corpus.CorpusWalk, "run", "walk thread")
    timed_call(count_fold, "fold_table", "main: folding the tables")
    count_corpus([small], config, workers=workers)  # warm-up
    spent.clear()
    start, main = time.process_time(), time.thread_time()
    for _ in range(runs):
        count_corpus([small], config, workers=workers)
    spent["main thread, in all"] = time.thread_time() - main
    spent["process"] = time.process_time() - start
    for label, seconds in sorted(spent.items()):
        print(
            f"{label:>30}: {seconds / runs * 1e3:7.1f} ms  {seconds / runs / files * 1e6:5.2f} us/file"
        )


def _names(small: Path) -> list[str]:
    from workbench.engine.corpus import list_corpus  # noqa: PLC0415

    return list_corpus([small], sized=False).names


def _read_part(names: list[str], kernel: bool, start: int, end: int) -> None:
    """Read files start..end in packs, as the counting's reader threads do."""
    from workbench.engine.corpus import read_text_pack  # noqa: PLC0415

    while start < end:
        pack = read_text_pack(names, start, min(end, start + 6000), 2 << 20, kernel=kernel)
        start += pack.read + pack.big


def _read_all(names: list[str], kernel: bool, threads: int) -> tuple[float, float]:
    """(wall, process CPU) seconds of reading every file on `threads` threads, split evenly."""
    cuts = [k * len(names) // threads for k in range(threads + 1)]
    start, start_cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(_read_part, [names] * threads, [kernel] * threads, cuts[:-1], cuts[1:]))
    return time.perf_counter() - start, time.process_time() - start_cpu


def reading_alone(small: Path, runs: int) -> None:
    """Print the CPU per file and the wall time of reading every file of `small` in packs (as
    the counting's reader threads do), kernel and Python alternating, on 1 and 2 threads."""
    names = _names(small)
    _read_all(names, True, 1), _read_all(names, False, 1)  # warm-up: the kernel, the page cache
    for threads in (1, 2):
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(runs):
            for kernel in (True, False):
                times[kernel].append(_read_all(names, kernel, threads))
        for kernel, label in ((True, "libc kernel"), (False, "Python")):
            wall = statistics.median(t[0] for t in times[kernel])
            cpu = statistics.median(t[1] for t in times[kernel])
            print(
                f"reading alone, {threads} thread(s), {label:>11}: {wall:6.3f} s wall"
                f"  {cpu:6.3f} s CPU  {cpu / len(names) * 1e6:5.2f} us CPU/file"
            )


def ceiling(small: Path, workers: int, runs: int, one_wall: float, one_cpu: float) -> None:
    """Print the best ratio this machine allows: counting the small files must at least read
    each one (timed here alone, no counting, on `workers` threads) and count the same bytes (the
    one file's whole CPU time), so its wall time is at least the larger of the reading's wall
    time and both CPU times shared perfectly by `workers` cores."""
    names = _names(small)
    _read_all(names, True, workers)  # warm-up
    times = [_read_all(names, True, workers) for _ in range(runs)]
    wall = statistics.median(t[0] for t in times)
    cpu = statistics.median(t[1] for t in times)
    floor = max(wall, (cpu + one_cpu) / workers)
    print(
        f"reading alone ({workers} threads, no counting): {wall:6.3f} s wall  {cpu:6.3f} s CPU;"
        f" + one file's CPU over {workers} cores: at least {floor:6.3f} s wall,"
        f" so a ratio of at most {one_wall / floor:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=Path("/work/bench-data/en-2.txt"))
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--bytes", type=int, default=220)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/small-files"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", action="store_true")
    parser.add_argument("--reading", action="store_true")
    args = parser.parse_args()
    small, whole = make_corpus(args.text, args.dir, args.files, args.bytes)
    config = TrainConfig(vocab_size=1000, pattern="gpt2")
    if args.profile:
        count_corpus([small], config, workers=args.workers)
        profile = cProfile.Profile()
        profile.runcall(count_corpus, [small], config, workers=args.workers)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    if args.threads:
        thread_cpu(small, config, args.workers, args.runs, args.files)
    if args.reading:
        reading_alone(small, args.runs)
    rows, times = {}, {}
    for name, path in (("one file", whole), (f"{args.files} files", small)):
        wall, cpu, size = timed(path, config, args.workers, args.runs)
        rows[name], times[name] = size / wall / 1e6, (wall, cpu)
        per_file = f"  {cpu / args.files * 1e6:6.1f} us CPU/file" if path == small else ""
        print(
            f"{name:>12}: {size / 1e6:6.1f} MB  {wall:6.3f} s wall ({size / wall / 1e6:6.1f} MB/s)"
            f"  {cpu:6.3f} s CPU ({size / cpu / 1e6:6.1f} MB/s){per_file}"
        )
    one, many = rows.values()
    print(f"small files / one file throughput (wall): {many / one:.2f}")
    ceiling(small, args.workers, args.runs, *times["one file"])


if __name__ == "__main__":
    main()
