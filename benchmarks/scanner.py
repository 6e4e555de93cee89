"""Hand-run benchmark: scanner MB/s against `regex.findall` + `Counter` on the same text.

Run `python benchmarks/scanner.py [corpus ...] [--mb 30] [--runs 3]`. Each corpus (default
`$BPE_WORKBENCH_CORPORA/tinyshakespeare.txt`; for English docs / multilingual / C code, give the
files `benchmarks/encode_matrix.py` assembles in /work/bench-data) is repeated to about `--mb`
megabytes; each step reports the median of `--runs` runs, as MB/s of wall time and of this
thread's CPU time (the second is steadier on a shared machine), per preset x text, and a last
table of counting MB/s (CPU) per preset x text. Not a test: timings depend on the machine.

`--stages` splits counting into its stages, per preset x text, best of `--runs` (thread CPU):
classify alone, the scan alone (`piece_bounds` minus classify) and the count table alone
(scan + table over classes made beforehand, minus the scan), as MB/s and ns per piece.

`--against OTHER.py` also times another version of the scanner module (for example
`git show main:workbench/engine/scanner.py > /tmp/main_scanner.py`) against this one, in this
process, runs alternating, and prints the best of `--runs` for each with their ratio: on a
shared machine the steadiest comparison (others' load only ever adds time).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import regex
from _paths import corpora  # noqa: E402
from workbench.engine.patterns.regexes import PRESETS

from workbench.engine.pretokenize import scan as scanner

DEFAULT_CORPUS = corpora() / "tinyshakespeare.txt"


def median_seconds(step: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median (wall, thread CPU) seconds of `runs` calls; warm up first (JIT loading)."""
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.thread_time()
        step()
        wall.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def load(corpus: Path, megabytes: float) -> bytes:
    """The corpus repeated to about `megabytes` MB (whole copies, so pieces stay natural)."""
    raw = corpus.read_bytes()
    copies = max(1, round(megabytes * 1e6 / len(raw)))
    return raw * copies


def bench(data: bytes, preset: str, runs: int, with_regex: bool) -> dict[str, tuple[float, float]]:
    """MB/s of piece_bounds, count_pieces_arrays, count_pieces and (optionally) regex + Counter."""
    text = data.decode("utf-8")
    pattern = regex.compile(PRESETS[preset])
    steps: dict[str, Callable[[], object]] = {
        "piece_bounds": lambda: scanner.piece_bounds(data, preset),
        "count_pieces_arrays": lambda: scanner.count_pieces_arrays(data, preset),
        "count_pieces (dict)": lambda: scanner.count_pieces(data, preset),
    }
    if with_regex:
        steps["regex.findall + Counter"] = lambda: Counter(pattern.findall(text))
    scanner.count_pieces(data[:10_000], preset)  # load the compiled kernels before timing
    megabytes = len(data) / 1e6
    rates = {}
    for name, step in steps.items():
        wall, cpu = median_seconds(step, runs)
        rates[name] = (megabytes / wall, megabytes / cpu)
    return rates


def best_seconds(step: Callable[[], object], runs: int) -> float:
    """The least thread CPU seconds of `runs` calls (others' load only ever adds time)."""
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        step()
        best = min(best, time.thread_time() - start)
    return best


def stages(data: bytes, preset: str, runs: int) -> str:
    """One line: MB/s and ns per piece of classify, the scan and the count table, each alone."""
    array = np.frombuffer(data, dtype=np.uint8)
    flags, fold_cps, fold_letters = scanner.kernel_tables()
    count_table, classify, _ = scanner.counting_kernels(preset)
    cls = np.empty(array.shape[0], dtype=np.uint8)
    starts, ends = np.zeros(1, dtype=np.int64), np.full(1, array.shape[0], dtype=np.int64)
    scanner.count_pieces_arrays(data[:10_000], preset)  # load the compiled kernels first
    classify(array, flags, cls)
    pieces = scanner.piece_bounds(array, preset).shape[0] - 1
    seconds = {
        "classify": best_seconds(lambda: classify(array, flags, cls), runs),
        "bounds": best_seconds(lambda: scanner.piece_bounds(array, preset), runs),
        "counted": best_seconds(
            lambda: count_table(array, cls, starts, ends, fold_cps, fold_letters), runs
        ),
    }
    parts = {
        "classify": seconds["classify"],
        "scan": seconds["bounds"] - seconds["classify"],
        "table": seconds["counted"] - (seconds["bounds"] - seconds["classify"]),
    }
    megabytes = len(data) / 1e6
    cells = "  ".join(
        f"{name} {megabytes / t:6.0f} MB/s {t / pieces * 1e9:5.1f} ns" for name, t in parts.items()
    )
    return f"{preset:7s} {cells}  ({len(data) / pieces:.2f} bytes/piece)"


def load_peer(path: Path) -> ModuleType:
    """Another version of scanner.py as a module of its own, from a copy in a fresh folder
    (Numba's disk cache keys kernels by file and module name: a cache of that file under
    another name would link the two versions' kernels together)."""
    copy = Path(tempfile.mkdtemp(prefix="scanner-peer-")) / "scanner_peer.py"
    shutil.copyfile(path, copy)
    spec = importlib.util.spec_from_file_location("scanner_peer", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["scanner_peer"] = module  # Numba's cache finds a kernel's module by name
    spec.loader.exec_module(module)
    return module


def against(data: bytes, preset: str, peer: ModuleType, runs: int) -> tuple[float, float]:
    """Best MB/s (thread CPU) of this scanner's count_pieces_arrays and the peer's, alternating."""
    best = {scanner: float("inf"), peer: float("inf")}
    for module in best:
        module.count_pieces_arrays(data[:10_000], preset)  # compile or load the kernels first
    for _ in range(runs):
        for module in best:
            start = time.thread_time()
            module.count_pieces_arrays(data, preset)
            best[module] = min(best[module], time.thread_time() - start)
    megabytes = len(data) / 1e6
    return megabytes / best[scanner], megabytes / best[peer]


def main() -> None:
    """Parse the arguments, run the benchmark per preset, print MB/s."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", nargs="*", type=Path, default=[DEFAULT_CORPUS])
    parser.add_argument("--mb", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--presets", default=",".join(scanner.PRESETS_SCANNABLE))
    parser.add_argument("--no-regex", action="store_true", help="skip the slow regex baseline")
    parser.add_argument("--stages", action="store_true", help="time classify, scan, table apart")
    parser.add_argument("--against", type=Path, help="another scanner.py to compare counting with")
    args = parser.parse_args()
    presets = args.presets.split(",")
    counting: dict[tuple[str, str], float] = {}
    peer = load_peer(args.against) if args.against else None
    compared: dict[tuple[str, str], tuple[float, float]] = {}
    for corpus in args.corpus:
        data = load(corpus, args.mb)
        print(f"{corpus.name} x{len(data) // corpus.stat().st_size}: {len(data) / 1e6:.1f} MB")
        for preset in presets:
            rates = bench(data, preset, args.runs, not args.no_regex)
            for name, (wall, cpu) in rates.items():
                print(f"{preset:7s} {name:26s} {wall:8.1f} MB/s wall {cpu:8.1f} MB/s CPU")
            counting[preset, corpus.name] = rates["count_pieces_arrays"][1]
            if args.stages:
                print(stages(data, preset, args.runs))
            if peer is not None:
                compared[preset, corpus.name] = against(data, preset, peer, args.runs)
    print("\ncounting (count_pieces_arrays), MB/s of CPU time, one thread")
    print(f"{'preset':8s}" + "".join(f"{c.name[:18]:>20s}" for c in args.corpus))
    for preset in presets:
        cells = "".join(f"{counting[preset, c.name]:20.1f}" for c in args.corpus)
        print(f"{preset:8s}{cells}")
    if peer is not None:
        print(
            f"\ncounting, best of {args.runs} alternating runs, MB/s CPU: this / {args.against.name}"
        )
        print(f"{'preset':8s}" + "".join(f"{c.name[:22]:>24s}" for c in args.corpus))
        for preset in presets:
            pairs = [compared[preset, c.name] for c in args.corpus]
            cells = "".join(f"{f'{a:.0f} / {b:.0f} = {a / b:.2f}x':>24s}" for a, b in pairs)
            print(f"{preset:8s}{cells}")


if __name__ == "__main__":
    main()
