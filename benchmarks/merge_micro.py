"""Hand-run microbenchmark of BPE merging alone: every distinct piece of a text merged once
(what a cold call merges), fresh pair memo, CPU seconds of this thread (`time.thread_time`),
median of `--runs`. Prints ns per distinct piece (all, and those that are not one whole token)
and a digest of the ids, so two checkouts can be compared run against run on the same texts.

Run `python benchmarks/merge_micro.py [--text A.txt en-2 cjk-1] [--data DIR] [--mb 8] [--ranks
gpt2 cl100k o200k] [--backtrack]`: the texts as for `encode_matrix.py` (UTF-8 files, or names of
texts in `--data`; without `--text` the three assembled ones: `_texts.py`). `--backtrack` also
races the backtracking merger (`encode/_backtrack.py`) on the same pieces (pieces of up to
`SHORT` bytes; longer ones merge as before), interleaved run by run, its ns per piece and whether
its ids are the same.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import numpy as np
from _texts import add_text_options, chosen_texts
from encode_matrix import tokenizers

from workbench.engine._native.cache_keys import key_caches_on
from workbench.engine._native.numba_config import njit
from workbench.engine.encode import _backtrack, _chars, _merge, _tables
from workbench.engine.encode._merge import SHORT, merge_piece
from workbench.engine.encode._tables import MEMO_BITS, whole_lookup
from workbench.engine.pretokenize.scan import count_pieces_arrays


@njit
def _merge_distinct(buf, offsets, max_rank, tables, out):
    """Merge each piece buf[offsets[k]:offsets[k+1]] once into `out`; returns the id count."""
    part = np.empty(SHORT, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    pos = 0
    for k in range(offsets.shape[0] - 1):
        pos = merge_piece(
            buf, offsets[k], offsets[k + 1], max_rank, tables, part, prank, pid, memo, out, pos
        )
    return pos


@njit
def _backtrack_distinct(buf, offsets, max_rank, tables, back, out):
    """`_merge_distinct` with the backtracking merger for pieces of up to `SHORT` bytes."""
    stack = np.empty(SHORT, dtype=np.int64)
    starts = np.empty(SHORT, dtype=np.int32)
    dead = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    tok_bytes, tok_off, tok_rank, whole, whole_bits = (
        tables[0], tables[1], tables[2], tables[4], tables[9]
    )  # fmt: skip
    pos = 0
    for k in range(offsets.shape[0] - 1):
        s, e = offsets[k], offsets[k + 1]
        if e - s > SHORT:
            pos = merge_piece(buf, s, e, max_rank, tables, stack, dead, starts, memo, out, pos)
            continue
        tid = whole_lookup(buf, s, e, tok_bytes, tok_off, whole, whole_bits)
        if tid >= 0 and tok_rank[tid] < max_rank:
            out[pos] = tid
            pos += 1
        else:
            pos = _backtrack.merge_backtrack(
                buf, s, e, max_rank, tables, back, stack, starts, dead, memo, out, pos
            )
    return pos


# The kernels compile in `merge_piece`, the backtracking merger and their probes: keyed on their
# sources, or an edit to them would be measured with the old machine code.
key_caches_on([_merge_distinct, _backtrack_distinct], (_merge, _backtrack, _tables, _chars))


def measure(
    tok, preset: str, text: str, runs: int, back: tuple | None = None
) -> tuple[int, int, float, str, float | None, bool]:
    """(distinct pieces, those not one token, ns per distinct piece, ids digest, the
    backtracking merger's ns per piece and whether its ids are the same; None, True without
    `back`)."""
    buf, offsets, _ = count_pieces_arrays(text.encode("utf-8"), preset)
    keep = np.diff(offsets) >= 2  # one byte is one token, no merging
    starts, ends = offsets[:-1][keep], offsets[1:][keep]
    array = np.frombuffer(
        b"".join(buf[s:e].tobytes() for s, e in zip(starts, ends, strict=True)), np.uint8
    )
    offs = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    tables, max_rank = tok._core.tables, np.int32(tok._max_rank)
    out = np.empty(array.shape[0] + 1, dtype=np.int32)
    n = _merge_distinct(array, offs, max_rank, tables, out)
    ids = out[:n].copy()
    times, back_times, same = [], [], True
    if back is not None:
        out2 = np.empty_like(out)
        n2 = _backtrack_distinct(array, offs, max_rank, tables, back, out2)
        same = bool(np.array_equal(out2[:n2], ids))
    for _ in range(runs):
        start = time.thread_time()
        _merge_distinct(array, offs, max_rank, tables, out)
        times.append(time.thread_time() - start)
        if back is not None:
            start = time.thread_time()
            _backtrack_distinct(array, offs, max_rank, tables, back, out2)
            back_times.append(time.thread_time() - start)
    pieces = len(offs) - 1
    back_ns = statistics.median(back_times) / pieces * 1e9 if back_times else None
    # the ids tile the pieces: a piece is one token when one token ends inside it
    tok_off = tables[1]
    token_ends = np.cumsum(tok_off[ids + 1] - tok_off[ids])
    inside = np.searchsorted(token_ends, offs, side="right")
    single = int(np.count_nonzero(np.diff(inside) == 1))
    digest = hashlib.blake2b(ids.tobytes(), digest_size=6).hexdigest()
    ns = statistics.median(times) / pieces * 1e9
    return pieces, pieces - single, ns, digest, back_ns, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser)
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--backtrack", action="store_true", help="also race the backtracking merger"
    )
    args = parser.parse_args()
    texts = chosen_texts(args)
    built = tokenizers()
    extra = f"{'backtrack':>10}  same" if args.backtrack else ""
    print(f"{'ranks x text':24}{'pieces':>9}{'merged':>9}{'ns/piece':>10}  ids{' ' * 11}{extra}")
    for name in args.ranks:
        tok = built[name][0]
        back = (
            _backtrack.backtrack_tables(tok._core.tables, tok._core.tok_rank, tok._core.results)
            if args.backtrack
            else None
        )
        for label, text in texts.items():
            pieces, merged, ns, digest, back_ns, same = measure(tok, name, text, args.runs, back)
            row = f"{name + ' x ' + label:24}{pieces:9d}{merged:9d}{ns:10.0f}  {digest}"
            if back_ns is not None:
                row += f"{back_ns:10.0f}  {'yes' if same else 'NO'}"
            print(row)


if __name__ == "__main__":
    main()
