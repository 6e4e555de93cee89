"""Where our encoder's time goes on one text, stage by stage (`encode_matrix.py --stages`).

Thread CPU seconds, median of the runs, each stage measured apart on the same text:
- instance: what a new tokenizer costs on its first call before any text is read: its piece
  cache (`_core.piece_cache`) and, for lists, the ready-made ints (`ReadyInts`);
- scan: classifying the bytes and finding every piece start (the fused kernel's scanner alone,
  in a kernel here that only counts the pieces);
- probe: the fused kernel on a warm cache (every piece a hit) minus the scan: hashing each
  piece, probing the cache, copying the ids out;
- merge: the fused kernel on a new instance's empty cache minus the warm kernel: merging each
  new piece and storing it;
- array out / list out: `encode_array` / `encode` on a new instance minus the fused kernel
  inside it: UTF-8, the segments, the copy out, or making the list of Python ints.
Pieces per MB, the share of pieces that missed the cache and the merge cost per new piece come
from the same calls.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from encode_peers import RankFile

from workbench.engine._native.id_lists import ReadyInts
from workbench.engine._native.numba_config import njit
from workbench.engine.encode import _core, _scanned
from workbench.engine.formats import tiktoken_file
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.pretokenize.scan import classify, scan_starts


@njit
def _count_pieces(data, preset, flags, fold_cps, fold_letters):
    """The pieces of `data` as the fused kernel's scan finds them (classify + scan_starts)."""
    cls = np.empty(data.shape[0], dtype=np.uint8)
    classify(data, flags, cls)
    bounds = np.empty(1 << 12, dtype=np.int64)
    total = 0
    i = np.int64(0)
    while i < data.shape[0]:
        count, resume = scan_starts(data, cls, i, preset, fold_cps, fold_letters, bounds)
        total += count
        i = resume
    return total


@njit
def _count_gpt2(data, flags, fold_cps, fold_letters):
    return _count_pieces(data, 0, flags, fold_cps, fold_letters)


@njit
def _count_cl100k(data, flags, fold_cps, fold_letters):
    return _count_pieces(data, 1, flags, fold_cps, fold_letters)


@njit
def _count_o200k(data, flags, fold_cps, fold_letters):
    return _count_pieces(data, 2, flags, fold_cps, fold_letters)


_COUNT = (_count_gpt2, _count_cl100k, _count_o200k)


class _KernelClock:
    """Wraps the fused kernels to add up their thread CPU time while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original = _scanned.ENCODE_SCANNED

    def __enter__(self) -> _KernelClock:
        def timed(kernel):
            def call(*args):
                start = time.thread_time()
                try:
                    return kernel(*args)
                finally:
                    self.seconds += time.thread_time() - start

            return call

        _scanned.ENCODE_SCANNED = tuple(timed(k) for k in self.original)
        return self

    def __exit__(self, *exc: object) -> None:
        _scanned.ENCODE_SCANNED = self.original


def _clock(call, *args) -> tuple[float, object]:
    start = time.thread_time()
    result = call(*args)
    return time.thread_time() - start, result


def stages(rank_file: RankFile, text: str, runs: int) -> dict[str, float]:
    """Median thread CPU seconds of each stage (see the module doc) and the piece counts."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    base = tiktoken_file.load(rank_file.path, rank_file.pattern)
    code = base._scan_code
    flags, fold_cps, fold_letters = scanner.kernel_tables()
    _COUNT[code](data[:100], flags, fold_cps, fold_letters)  # compiled before any timing
    found: dict[str, list[float]] = {}
    pieces = missed = 0
    for _ in range(runs):
        seconds, pieces = _clock(_COUNT[code], data, flags, fold_cps, fold_letters)
        found.setdefault("scan", []).append(seconds)
        found.setdefault("cache alloc", []).append(
            _clock(_scanned.new_piece_cache, _core.cache_bits(data.shape[0]))[0]
        )
        if "ready ints" not in found:  # once: a set made is kept for the process (`id_lists`)
            found["ready ints"] = [_clock(ReadyInts, base._core.id_bound)[0]]
        for kind in ("array", "list"):
            tok = base.with_splitter("auto")  # a new instance: its own empty piece cache
            if kind == "list":
                tok._core.__dict__.pop("ready_ints", None)  # as a new instance makes them
            call = tok.encode_array if kind == "array" else tok.encode_ordinary
            with _KernelClock() as kernel:
                total, _ = _clock(call, text)
            found.setdefault(f"cold {kind}", []).append(total)
            found.setdefault(f"cold kernel {kind}", []).append(kernel.seconds)
            if kind == "array":
                missed = int(tok._local.piece_cache.state[0])
                with _KernelClock() as kernel:
                    total, _ = _clock(call, text)
                found.setdefault("warm array", []).append(total)
                found.setdefault("warm kernel", []).append(kernel.seconds)
    med = {name: statistics.median(values) for name, values in found.items()}
    return {
        "instance": med["cache alloc"],
        "ready ints": med["ready ints"],
        "scan": med["scan"],
        "probe": med["warm kernel"] - med["scan"],
        "merge": med["cold kernel array"] - med["warm kernel"],
        "array out": med["cold array"] - med["cold kernel array"] - med["cache alloc"],
        "list out": med["cold list"] - med["cold kernel list"] - med["cache alloc"],
        "cold array": med["cold array"],
        "cold list": med["cold list"],
        "pieces": float(pieces),
        "cached pieces": float(missed),
    }


def print_stages(rank_file: RankFile, label: str, text: str, runs: int) -> None:
    size = len(text.encode("utf-8")) / 1e6
    s = stages(rank_file, text, runs)
    ms = {k: v * 1e3 for k, v in s.items()}
    per_new = s["merge"] / s["cached pieces"] * 1e9 if s["cached pieces"] else 0.0
    print(
        f"stages {label:26} ms: instance {ms['instance']:5.1f} + ready ints {ms['ready ints']:5.1f}"
        f" | scan {ms['scan']:6.1f} ({size / s['scan']:5.0f} MB/s) probe {ms['probe']:6.1f}"
        f" merge {ms['merge']:6.1f} | array out {ms['array out']:5.1f} list out {ms['list out']:6.1f}"
        f" | cold array {ms['cold array']:6.1f} cold list {ms['cold list']:6.1f}"
        f" | {s['pieces'] / size / 1e3:4.0f}k pieces/MB, {s['cached pieces'] / s['pieces']:.1%}"
        f" new, {per_new:5.0f} ns a new piece"
    )
