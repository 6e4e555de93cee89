"""Hand-run microbenchmark of BPE merging alone: every distinct piece of a text merged once
(what a cold call merges), fresh pair memo, CPU seconds of this thread (`time.thread_time`),
median of `--runs`. Prints ns per distinct piece (all, and those that are not one whole token)
and a digest of the ids, so two checkouts can be compared run against run on the same texts.

Run `python benchmarks/merge_micro.py [--text A.txt en-2 cjk-1] [--data DIR] [--mb 8] [--ranks
gpt2 cl100k o200k]`: the texts as for `encode_matrix.py` (UTF-8 files, or names of texts in
`--data`; without `--text` the three assembled ones: `_texts.py`).
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
from workbench.engine.encode import _chars, _merge, _tables
from workbench.engine.encode._merge import PART_ROOM, SHORT, merge_piece
from workbench.engine.encode._tables import MEMO_BITS
from workbench.engine.pretokenize.scan import count_pieces_arrays


@njit
def _merge_distinct(buf, offsets, max_rank, tables, out):
    """Merge each piece buf[offsets[k]:offsets[k+1]] once into `out`; returns the id count."""
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    pos = 0
    for k in range(offsets.shape[0] - 1):
        pos = merge_piece(
            buf, offsets[k], offsets[k + 1], max_rank, tables, part, prank, pid, memo, out, pos
        )
    return pos


# The kernel compiles in `merge_piece` and its probes: keyed on their sources, or an edit to them
# would be measured with the old machine code.
key_caches_on([_merge_distinct], (_merge, _tables, _chars))


def distinct_pieces(text: str, preset: str) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of the distinct pieces of `text` of two bytes or more (one byte is one
    token, no merging), one after another."""
    buf, offsets, _ = count_pieces_arrays(text.encode("utf-8"), preset)
    keep = np.diff(offsets) >= 2
    starts, ends = offsets[:-1][keep], offsets[1:][keep]
    array = np.frombuffer(
        b"".join(buf[s:e].tobytes() for s, e in zip(starts, ends, strict=True)), np.uint8
    )
    return array, np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)


def one_token(tables: tuple, ids: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """Per piece, whether it merged to one token: the ids tile the pieces, so a piece is one
    token when one token ends inside it."""
    tok_off = tables[1]
    token_ends = np.cumsum(tok_off[ids + 1] - tok_off[ids])
    inside = np.searchsorted(token_ends, offs, side="right")
    return np.diff(inside) == 1


def measure(tok, preset: str, text: str, runs: int) -> tuple[int, int, float, str]:
    """(distinct pieces, those not one token, ns per distinct piece, ids digest)."""
    array, offs = distinct_pieces(text, preset)
    tables, max_rank = tok._core.tables, np.int32(tok._max_rank)
    out = np.empty(array.shape[0] + 1, dtype=np.int32)
    n = _merge_distinct(array, offs, max_rank, tables, out)
    ids = out[:n].copy()
    times = []
    for _ in range(runs):
        start = time.thread_time()
        _merge_distinct(array, offs, max_rank, tables, out)
        times.append(time.thread_time() - start)
    pieces = len(offs) - 1
    single = int(np.count_nonzero(one_token(tables, ids, offs)))
    digest = hashlib.blake2b(ids.tobytes(), digest_size=6).hexdigest()
    ns = statistics.median(times) / pieces * 1e9
    return pieces, pieces - single, ns, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser)
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    texts = chosen_texts(args)
    built = tokenizers()
    print(f"{'ranks x text':24}{'pieces':>9}{'merged':>9}{'ns/piece':>10}  ids")
    for name in args.ranks:
        tok = built[name][0]
        for label, text in texts.items():
            pieces, merged, ns, digest = measure(tok, name, text, args.runs)
            print(f"{name + ' x ' + label:24}{pieces:9d}{merged:9d}{ns:10.0f}  {digest}")


if __name__ == "__main__":
    main()
