"""Hand-run profile of the fused encoder by stage, per text (meant for one script per file, see
`script_texts.py`): pieces per MB, distinct pieces, piece-cache hit rate, mean piece length,
merge cost per new piece, and where a cold call's CPU time goes (scan, cache, merge, output).

Numba kernels cannot read a clock, so the stages are timed apart and the rest is inferred:
- scan: the scanner alone (`piece_bounds`: classify and cut, the same kernels the encoder runs);
- merge: `merge_piece` of each distinct piece once (what a cold call merges: the cache holds
  pieces up to `CACHE_MAX_LEN` bytes) plus every occurrence of a longer piece, fresh pair memo;
- cache: a cold `encode_array` minus scan and merge (probe, store, copying hits);
- output: `encode` (a list) minus `encode_array`.
CPU seconds of this thread (`time.thread_time`), median of `--runs`; a new tokenizer instance
per timed call, sharing the tables, as `encode_matrix.py` does.

Run `python benchmarks/encode_stages.py [--text A.txt en-2 cjk-1] [--data DIR] [--mb 8] [--ranks
gpt2 cl100k o200k]`: the texts as for `encode_matrix.py` (UTF-8 files, or names of texts in
`--data`; without `--text` the three assembled ones: `_texts.py`).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _texts import add_text_options, chosen_texts
from encode_matrix import tokenizers

from workbench.engine._native.numba_config import njit
from workbench.engine.encode._merge import PART_ROOM, SHORT, merge_piece
from workbench.engine.encode._scanned import CACHE_MAX_LEN
from workbench.engine.encode._tables import MEMO_BITS
from workbench.engine.pretokenize.scan import count_pieces_arrays, piece_bounds


@njit
def _merge_all(buf, offsets, repeats, max_rank, tables):
    """Merge piece k (buf[offsets[k]:offsets[k+1]]) `repeats[k]` times; returns the id count."""
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    out = np.empty(buf.shape[0] + 1, dtype=np.int32)
    total = 0
    for k in range(offsets.shape[0] - 1):
        for _ in range(repeats[k]):
            total += merge_piece(
                buf, offsets[k], offsets[k + 1], max_rank, tables, part, prank, pid, memo, out, 0
            )
    return total


def _median_time(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.thread_time()
        call()
        times.append(time.thread_time() - start)
    return statistics.median(times)


def profile(tok, preset: str, text: str, runs: int) -> dict[str, float]:
    data = text.encode("utf-8")
    mb = len(data) / 1e6
    bounds = piece_bounds(data, preset)
    lengths = np.diff(bounds)
    buf, offsets, counts = count_pieces_arrays(data, preset)
    ulen = np.diff(offsets)
    cached = (ulen >= 2) & (ulen <= CACHE_MAX_LEN)
    occurrences = int(counts[cached].sum())
    distinct = int(cached.sum())
    repeats = np.where(ulen > CACHE_MAX_LEN, counts, np.where(ulen >= 2, 1, 0)).astype(np.int64)
    tables, max_rank = tok._core.tables, np.int32(tok._max_rank)
    array = np.frombuffer(buf, dtype=np.uint8)
    new_pieces = int(repeats.sum())
    _merge_all(array, offsets, repeats, max_rank, tables)  # compiled outside the timing
    t_scan = _median_time(lambda: piece_bounds(data, preset), runs)
    t_merge = _median_time(lambda: _merge_all(array, offsets, repeats, max_rank, tables), runs)
    t_array = _median_time(lambda: tok.with_splitter("auto").encode_array(text, "none"), runs)
    t_list = _median_time(lambda: tok.with_splitter("auto").encode(text, "none"), runs)
    return {
        "pieces/MB": len(lengths) / mb,
        "distinct": distinct,
        "hit rate": 1 - distinct / max(occurrences, 1),
        "mean bytes": float(lengths.mean()),
        "long share": float(lengths[lengths > SHORT].sum()) / len(data),
        "merge ns/new": t_merge / max(new_pieces, 1) * 1e9,
        "scan": t_scan / t_list,
        "cache": max(t_array - t_scan - t_merge, 0.0) / t_list,
        "merge": t_merge / t_list,
        "output": max(t_list - t_array, 0.0) / t_list,
        "array MB/s": mb / t_array,
        "list MB/s": mb / t_list,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser)
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    texts = chosen_texts(args)
    built = tokenizers()
    header = (
        f"{'ranks x text':24}{'pieces/MB':>10}{'distinct':>9}{'hit':>6}{'bytes':>6}{'>64B':>6}"
        f"{'ns/new':>8}{'scan':>6}{'cache':>6}{'merge':>6}{'out':>6}{'array':>7}{'list':>7}"
    )
    print(header + "   (shares of a cold encode's CPU; MB per CPU second)")
    for name in args.ranks:
        tok = built[name][0]
        tok.encode("warm up the kernels")
        for label, text in texts.items():
            r = profile(tok, name, text, args.runs)
            print(
                f"{name + ' x ' + label:24}{r['pieces/MB']:10.0f}{r['distinct']:9d}"
                f"{r['hit rate']:6.2f}{r['mean bytes']:6.1f}{r['long share']:6.2f}"
                f"{r['merge ns/new']:8.0f}{r['scan']:6.2f}{r['cache']:6.2f}{r['merge']:6.2f}"
                f"{r['output']:6.2f}{r['array MB/s']:7.1f}{r['list MB/s']:7.1f}"
            )


if __name__ == "__main__":
    main()
