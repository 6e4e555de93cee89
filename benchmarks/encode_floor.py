"""Hand-run census of what merging a new piece costs, by the count (the VM this was written on
exposes no hardware counters to `perf stat`: cycles and cache misses are "not supported").

For every distinct piece of a text (what a cold call merges), an instrumented replica of
`_merge.merge_piece`'s short path counts: whether the piece is one whole token, its bytes and
merges when it is not, and each pair lookup's fate: the dense byte-pair table, turned away by
the pair filter, answered by the pair memo, or probed in the pair table (rows read, hit or
miss). Its ids are checked against `merge_piece`'s, so the counts are of what the kernel does.

Run `python benchmarks/encode_floor.py [--text A.txt en-2 cjk-1] [--data DIR] [--mb 2] [--ranks gpt2
cl100k o200k]`: the texts as for `encode_matrix.py` (`_texts.py`); the distinct pieces, the plain
merging kernel and the one-token test are `merge_micro.py`'s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _texts import add_text_options, chosen_texts
from encode_matrix import tokenizers
from merge_micro import _merge_distinct, distinct_pieces, one_token

from workbench.engine._native.cache_keys import key_caches_on
from workbench.engine._native.numba_config import njit
from workbench.engine.encode import _chars, _merge, _tables
from workbench.engine.encode._merge import PART_ROOM, SHORT, _first_parts, merge_piece
from workbench.engine.encode._tables import (
    LOW32,
    MEMO_BITS,
    NEVER,
    _mix,
    _spread,
    in_filter,
    whole_lookup,
)

# counters: 0 whole, 1 merged pieces, 2 their bytes, 3 their merges, 4 dense lookups,
# 5 filtered away, 6 memo hits, 7 table lookups, 8 table rows read, 9 table hits,
# 10 long pieces (heap path, not counted further), 11 initial parts of merged pieces
_N = 12


@njit
def _lookup(left, right, max_rank, pairs, pair_bits, memo, counts):
    """`pair_memo`, counting where the answer came from."""
    key = (np.int64(left) << 32) | np.int64(right)
    g = _spread(key)
    if not in_filter(pair_bits, g):
        counts[5] += 1
        return NEVER, np.int32(-1)
    slot = np.int64(g >> np.uint64(64 - MEMO_BITS))
    if memo[slot, 0] == key:
        counts[6] += 1
        value = memo[slot, 1]
    else:
        counts[7] += 1
        value = np.int64(-1)
        mask = np.int64(pairs.shape[0] - 1)
        probe = np.int64(_mix(np.uint64(key)) & np.uint64(mask))
        while True:
            counts[8] += 1
            k = pairs[probe, 0]
            if k == key:
                value = pairs[probe, 1]
                counts[9] += 1
                break
            if k == -1:
                break
            probe = (probe + 1) & mask
        memo[slot, 0] = key
        memo[slot, 1] = value
    if value >= 0:
        rank = np.int32(value >> 32)
        if rank < max_rank:
            return rank, np.int32(value & LOW32)
    return NEVER, np.int32(-1)


@njit
def _census(buf, offsets, max_rank, tables, out, counts):
    """Merge each piece buf[offsets[k]:offsets[k+1]] once, counting; returns the id count."""
    tok_bytes, tok_off, tok_rank, byte_id, whole = (
        tables[0], tables[1], tables[2], tables[3], tables[4]
    )  # fmt: skip
    pairs, byte_pairs, char_tables, pair_bits, whole_bits = (
        tables[5], tables[6], tables[7], tables[8], tables[9]
    )  # fmt: skip
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    spare = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    pos = 0
    for k in range(offsets.shape[0] - 1):
        s, e = offsets[k], offsets[k + 1]
        tid = whole_lookup(buf, s, e, tok_bytes, tok_off, whole, whole_bits)
        if tid >= 0 and tok_rank[tid] < max_rank:
            counts[0] += 1
            out[pos] = tid
            pos += 1
            continue
        if e - s > SHORT:
            counts[10] += 1
            pos = merge_piece(buf, s, e, max_rank, tables, part, prank, pid, spare, out, pos)
            continue
        counts[1] += 1
        counts[2] += e - s
        # the starting parts as the kernel makes them (their lookups counted as dense when
        # both sides are bytes, else through `_lookup` again)
        m = _first_parts(
            buf, s, e, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, spare,
            part, prank, pid,
        )  # fmt: skip
        counts[11] += m
        for i in range(m - 1):
            if tok_off[part[i] + 1] - tok_off[part[i]] == 1 and (
                tok_off[part[i + 1] + 1] - tok_off[part[i + 1]] == 1
            ):
                counts[4] += 1
            else:
                prank[i], pid[i] = _lookup(
                    part[i], part[i + 1], max_rank, pairs, pair_bits, memo, counts
                )
        start_m = m
        while m > 1:
            best = NEVER
            at = -1
            for i in range(m - 1):
                if prank[i] < best:
                    best = prank[i]
                    at = i
            if at < 0:
                break
            part[at] = pid[at]
            for j in range(at + 1, m - 1):
                part[j] = part[j + 1]
            for j in range(at + 1, m - 2):
                prank[j] = prank[j + 1]
                pid[j] = pid[j + 1]
            m -= 1
            if at > 0:
                prank[at - 1], pid[at - 1] = _lookup(
                    part[at - 1], part[at], max_rank, pairs, pair_bits, memo, counts
                )
            if at < m - 1:
                prank[at], pid[at] = _lookup(
                    part[at], part[at + 1], max_rank, pairs, pair_bits, memo, counts
                )
        counts[3] += start_m - m
        for i in range(m):
            out[pos + i] = part[i]
        pos += m
    return pos


key_caches_on([_census, _lookup], (_merge, _tables, _chars))


def _subset(array: np.ndarray, offs: np.ndarray, keep: np.ndarray) -> tuple:
    starts, ends = offs[:-1][keep], offs[1:][keep]
    sub = np.concatenate([array[s:e] for s, e in zip(starts, ends, strict=True)] or [array[:0]])
    return sub, np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)


def _ns_per_piece(array, offs, max_rank, tables, out, runs: int) -> float:
    """Median thread-CPU ns per piece of `merge_piece` over the pieces, fresh memo each run."""
    times = []
    for _ in range(runs):
        start = time.thread_time()
        _merge_distinct(array, offs, max_rank, tables, out)
        times.append(time.thread_time() - start)
    return statistics.median(times) / max(offs.shape[0] - 1, 1) * 1e9


def census(tok, preset: str, text: str, runs: int = 5) -> dict[str, float]:
    array, offs = distinct_pieces(text, preset)
    tables, max_rank = tok._core.tables, np.int32(tok._max_rank)
    out = np.empty(array.shape[0] + 1, dtype=np.int32)
    counts = np.zeros(_N, dtype=np.int64)
    n = _census(array, offs, max_rank, tables, out, counts)
    check = np.empty_like(out)
    plain = _merge_distinct(array, offs, max_rank, tables, check)
    if plain != n or not np.array_equal(out[:n], check[:n]):
        raise SystemExit(f"{preset}: the replica's ids differ from merge_piece's")
    single = one_token(tables, out[:n], offs)
    whole_ns = _ns_per_piece(*_subset(array, offs, single), max_rank, tables, out, runs)
    merged_ns = _ns_per_piece(*_subset(array, offs, ~single), max_rank, tables, out, runs)
    c = counts.tolist()
    merged = max(c[1], 1)
    looked = c[4] + c[5] + c[6] + c[7]
    return {
        "pieces": len(offs) - 1,
        "whole %": 100 * c[0] / (len(offs) - 1),
        "bytes": c[2] / merged,
        "parts": c[11] / merged,
        "merges": c[3] / merged,
        "lookups": looked / merged,
        "dense %": 100 * c[4] / max(looked, 1),
        "filtered %": 100 * c[5] / max(looked, 1),
        "memo %": 100 * c[6] / max(looked, 1),
        "table %": 100 * c[7] / max(looked, 1),
        "rows/probe": c[8] / max(c[7], 1),
        "table hit %": 100 * c[9] / max(c[7], 1),
        "long": c[10],
        "ns whole": whole_ns,
        "ns merged": merged_ns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser, mb=2.0)
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    args = parser.parse_args()
    texts = chosen_texts(args)
    built = tokenizers()
    header = None
    for name in args.ranks:
        for label, text in texts.items():
            row = census(built[name][0], name, text)
            if header is None:
                header = f"{'ranks x text':20}" + "".join(f"{k:>12}" for k in row)
                print(header)
            cells = "".join(
                f"{v:12d}" if isinstance(v, int) else f"{v:12.2f}" for v in row.values()
            )
            print(f"{name + ' x ' + label:20}{cells}")


if __name__ == "__main__":
    main()
