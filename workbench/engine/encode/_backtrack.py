"""BPE of a short piece by backtracking over whole tokens, instead of merging pair by pair.

The idea is Van Antwerpen and Neubeck's (GitHub, "So many tokens, so little time", 2024); this is
our own formulation of it, written from the description. Two facts make it exact:

- A pair of tokens `a b` is *compatible* when BPE of their bytes together gives `a b` back. BPE
  of a text is the one tokenization of it whose every adjacent pair is compatible. So a search
  that tries the longest token first at each position, keeps it when it is compatible with the
  token before, and otherwise tries the next shorter one (backing up a token when none fits)
  finds exactly BPE's answer. Greedy longest match alone is not BPE: `abc` with `bc` ranked
  before `ab` is `a bc`, and the check is what turns `ab c` away (tests/test_encode_backtrack.py).
- Each prefix of the text has one such tokenization, so the search reaches a position in one
  state only; a position it once failed from is marked dead and never tried again (linear time).

Whether `a b` is compatible (`_fits`): in BPE of `a b` alone, `a`'s bytes evolve as in BPE of `a`
until some merge crosses the boundary. Only tokens on `a`'s right spine (a, its right half, that
one's right half, ... a byte) ever touch the boundary from the left, each alive from its rank
(when it is made) until its parent's rank (when it is merged away); likewise `b`'s left spine.
A crossing merge `x y` happens iff some such pair is a token whose rank falls while both live.
Walking both spines back in time (always stepping past the later-made of the two) visits every
pair that lives at the same time, one table probe each.

The halves are each token's *last* merge in BPE of its own bytes (`canonical_splits`), not the
listed merge: they differ when bytes can be made in two ways (see `_merge.py`). A token that BPE
of its own bytes does not make (`splits` -1) is only ever a whole piece and is skipped here.

Not on the encode path: merging pair by pair (`_merge.merge_piece`) measured faster on every
text but Indic (1.1-3x; the figures in docs/engineering-notes.md), since its lookups mostly hit
the dense byte-pair table and the pair memo near the core while these probe megabyte tables by
token. `benchmarks/merge_micro.py --backtrack` races the two on any text.
"""

from __future__ import annotations

import sys

import numpy as np

from workbench.engine._native.cache_keys import kernels_of, key_caches_on
from workbench.engine._native.numba_config import njit
from workbench.engine.encode import _tables
from workbench.engine.encode._merge import recover_merges
from workbench.engine.encode._tables import (
    _MEMO_DOWN,
    NEVER,
    _spread,
    pair_memo,
    whole_lookup,
)


@njit
def _fits(a, b, max_rank, tok_rank, splits, pairs, pair_bits, memo):
    """True when BPE of the bytes of tokens `a` then `b` is `a b` (no merge crosses them)."""
    x, y = np.int64(a), np.int64(b)
    x_end, y_end = NEVER, NEVER  # each one lives until its parent is made: a and b for ever
    while True:
        rx, ry = tok_rank[x], tok_rank[y]
        rank, _ = pair_memo(x, y, max_rank, pairs, pair_bits, memo)
        # `x y` merges while both live; its rank is above both its parts' when it is their own
        # merge (a token also splits into halves it is not made of: those never meet in time).
        # At a tie with a parent's rank the two merges make the same token and the leftmost
        # goes first: x's parent (left of `x y`) wins, `x y` wins over y's parent.
        if rank != NEVER and rank > rx and rank > ry and rank < x_end and rank <= y_end:
            return False
        if rx > ry:  # x was made later: before that, its right half stood at the boundary
            x_end = rx
            x = np.int64(splits[x, 1])
        elif ry >= 0:  # y made later, or x and y the same token: x, on the left, was first
            y_end = ry
            y = np.int64(splits[y, 0])
        else:  # two bytes (rank -1): nothing older to meet
            return True


_TAG = np.int64(-(2**63))  # a fits entry's key bit in the pair memo (pair keys are >= 0)


@njit
def _fits_memo(a, b, max_rank, tok_rank, splits, pairs, pair_bits, memo):
    """`_fits`, remembered in the pair memo under a key no pair has (with `max_rank` in the
    value, as a memo outlives a call): text repeats token pairs more than spines differ."""
    key = _TAG | (np.int64(a) << 32) | np.int64(b)
    slot = np.int64(_spread(key) >> _MEMO_DOWN)
    if memo[slot, 0] == key and memo[slot, 1] >> 1 == max_rank:
        return memo[slot, 1] & 1 == 1
    fits = _fits(a, b, max_rank, tok_rank, splits, pairs, pair_bits, memo)
    memo[slot, 0] = key
    memo[slot, 1] = (np.int64(max_rank) << 1) | np.int64(fits)
    return fits


@njit
def merge_backtrack(buf, start, end, max_rank, tables, back, stack, starts, dead, memo, out, pos):
    """The ids of the piece buf[start:end] (2..len(stack) bytes, not itself a token) written to
    `out` from `pos`; returns the new end. `stack`/`starts`/`dead` are scratch of at least
    `end - start` items; `back` as `backtrack_tables`."""
    splits, reach = back[0], back[1]
    tok_bytes, tok_off, tok_rank, byte_id, whole = (
        tables[0],
        tables[1],
        tables[2],
        tables[3],
        tables[4],
    )
    pairs, pair_bits, whole_bits = tables[5], tables[8], tables[9]
    n = end - start
    for i in range(n):
        dead[i] = 0
    top = 0
    at = start
    below = n + 1  # try only tokens shorter than this at `at` (after backing up)
    while at < end:
        # the candidates at `at`, longest first (a token's length is the loop's: no table read)
        length = min(end - at, below - 1)
        if length >= 2:  # no token starting with these two bytes is longer than `reach` says
            length = min(length, np.int64(reach[(np.int64(buf[at]) << 8) | buf[at + 1]]))
        tid = np.int64(-1)
        while length >= 1:
            if length == 1:
                tid = np.int64(byte_id[buf[at]])
            else:
                tid = whole_lookup(buf, at, at + length, tok_bytes, tok_off, whole, whole_bits)
                if tid < 0 or tok_rank[tid] >= max_rank or splits[tid, 0] < 0:
                    length -= 1
                    continue
            if (at + length == end or dead[at + length - start] == 0) and (
                top == 0
                or _fits_memo(stack[top - 1], tid, max_rank, tok_rank, splits, pairs, pair_bits,
                              memo)
            ):  # fmt: skip
                break
            length -= 1
        if length >= 1:
            stack[top] = tid
            starts[top] = at - start
            top += 1
            at += length
            below = n + 1
        else:  # nothing fits here after what stands before: back up one token
            dead[at - start] = 1
            top -= 1
            below = at - start - starts[top]
            at = start + starts[top]
    for i in range(top):
        out[pos + i] = stack[i]
    return pos + top


def backtrack_tables(tables: tuple, tok_rank: np.ndarray, results: list[int]) -> tuple:
    """(splits, reach) of a tokenizer (`Core.tables`, `.tok_rank`, `.results`):
    `canonical_splits`, and per first two bytes (row `first << 8 | second`) the length of the
    longest token BPE makes that starts with them (at least 1), so the search tries no longer
    candidate than one that may exist."""
    splits = canonical_splits(tables, tok_rank, results)
    tok_bytes, tok_off = tables[0], tables[1]
    lengths = np.diff(tok_off)
    made = np.flatnonzero(splits[:, 0] >= 0)
    reach = np.ones(1 << 16, dtype=np.int32)
    rows = (tok_bytes[tok_off[made]].astype(np.int64) << 8) | tok_bytes[tok_off[made] + 1]
    np.maximum.at(reach, rows, lengths[made].astype(np.int32))
    return splits, reach


def canonical_splits(tables: tuple, tok_rank: np.ndarray, results: list[int]) -> np.ndarray:
    """(id bound, 2) int32: each multi-byte token's last merge in BPE of its own bytes (left,
    right) with the merges before its first one (`recover_merges`); -1 for bytes and for tokens
    BPE never makes from their bytes."""
    made = np.asarray(results, dtype=np.int64)
    found = recover_merges(made, tables)
    first = tok_rank[made] == np.arange(made.shape[0])  # the merge that makes it first
    splits = np.full((tables[1].shape[0] - 1, 2), -1, dtype=np.int32)
    splits[made[first]] = found[first]
    return splits


key_caches_on(kernels_of(sys.modules[__name__]), (_tables,))
