"""Byte-pair merging within pieces, tiktoken's way: after looking the whole piece up, repeatedly
merge the adjacent pair whose concatenated bytes form the token of lowest rank (leftmost on
ties).

`merge_piece` merges one piece (a linear scan for short pieces, a heap for long ones);
`encode_pieces` encodes pre-cut pieces (the regex path); `recover_merges` rebuilds a tiktoken
file's merges. The tables arrive as one tuple (`_core.Core.tables`). Not here: building the
tables (`_tables.py`, `_chars.py`), the scanner's fused encoder and its piece cache
(`_scanned.py`).

Why the concatenation (tiktoken) and not the listed `(left, right)` merge (Hugging Face): the two
differ only when some bytes can be made in two ways. With merges `b+c`, `a+b`, `ab+c` (-> abc),
`bc+d`, `a+bc` (-> abc again), the text `abcd` becomes `a bc d`; tiktoken then merges `a+bc` at the
rank of `abc` (2) -> `abc d`, while Hugging Face ranks `a+bc` by its own line (4) and merges
`bc+d` first -> `a bcd`. We follow tiktoken because its ids are the contract; the Hugging Face
exporter lists merges in result-rank order (see `formats/hf_json.py`) so the two agree on real text.
"""

from __future__ import annotations

import sys

import numpy as np

from workbench.engine._native import scan_ir, unchecked
from workbench.engine._native.cache_keys import kernels_of, key_caches_on
from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine._native.unchecked import get, put
from workbench.engine.encode import _chars, _tables
from workbench.engine.encode._chars import char_token
from workbench.engine.encode._tables import (
    LOW32,
    MEMO_BITS,
    NEVER,
    byte_pair,
    pair_memo,
    whole_lookup,
)

SHORT = 128  # pieces up to this many bytes use the linear scan; longer ones the heap
PART_ROOM = 3 * SHORT  # the `part` scratch: a short piece's parts, then `_merge_linked`'s links
# From this many parts a short piece merges in a linked list (`_merge_linked`) instead of
# shifting its arrays after each merge: pieces of 17-64 bytes (C's long names, paths) merged in
# 0.70-0.78x the time, shorter ones in 1.2-1.5x (the links cost more than the shifts they save);
# pieces of 65-255 bytes (a CJK sentence without spaces) in 0.70x the heap's time, so pieces of
# up to 128 bytes take it (O(n^2): the heap stays for longer ones).
LINKED_FROM = 17
_INDEX_BITS = 7  # `_merge_linked` ranks a pair as rank << 7 | index: room for `SHORT` parts
_NO_PAIR = np.int64(NEVER) << _INDEX_BITS  # `_merge_linked`'s value of a missing pair


@njit_borrowing  # one copy to compile (inlined twice it cost seconds of first start)
def _first_parts(
    buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, memo, part,
    prank, pid,
):  # fmt: skip
    """BPE's starting point for buf[start:end]: bytes, or whole characters where `char_token`
    allows, into `part`, and each adjacent pair's (rank, merged id) into `prank`/`pid` (pairs
    of two bytes from the dense table). Returns the number of parts."""
    m = 0
    raw = np.int64(-1)  # the previous part's byte, or -1 when it is a whole character
    i = start
    while i < end:
        tid, step = np.int64(-1), 1
        lead = get(buf, i)
        if lead >= 0xC0:  # a lead byte: maybe a whole character
            tid, step = char_token(buf, i, start, end, max_rank, char_tables)
        byte = np.int64(-1) if tid >= 0 else np.int64(lead)
        put(part, m, tid if tid >= 0 else byte_id[byte])
        if m > 0:
            if raw >= 0 and byte >= 0:
                rank, merged = byte_pair(raw, byte, max_rank, byte_pairs)
            else:
                rank, merged = pair_memo(
                    get(part, m - 1), get(part, m), max_rank, pairs, pair_bits, memo
                )
            put(prank, m - 1, rank)
            put(pid, m - 1, merged)
        raw = byte
        m += 1
        i += step
    return m


@njit_borrowing
def _merge_short(
    buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, part, prank,
    pid, memo, out, pos,
):  # fmt: skip
    """Linear-scan BPE (tiktoken's loop) for short pieces: O(n^2) but tiny n."""
    m = end - start
    plain = True  # no lead byte: bytes it is, without the call (most pieces of English and code)
    for i in range(start, end):
        if get(buf, i) >= 0xC0:
            plain = False
            break
    if plain:
        for i in range(m):
            put(part, i, get(byte_id, get(buf, start + i)))
        for i in range(m - 1):
            rank, merged = byte_pair(
                get(buf, start + i), get(buf, start + i + 1), max_rank, byte_pairs
            )
            put(prank, i, rank)
            put(pid, i, merged)
    else:
        m = _first_parts(
            buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, memo,
            part, prank, pid,
        )  # fmt: skip
    if m >= LINKED_FROM:
        return _merge_linked(m, max_rank, pairs, pair_bits, part, prank, pid, memo, out, pos)
    return _merge_shifting(m, max_rank, pairs, pair_bits, part, prank, pid, memo, out, pos)


@njit_borrowing
def _merge_shifting(m, max_rank, pairs, pair_bits, part, prank, pid, memo, out, pos):
    """`_merge_short`'s loop for the `m` parts in `part` (their pairs in `prank`/`pid`): merge
    the lowest rank's pair, leftmost on ties, and shift the arrays after it left by one."""
    while m > 1:
        best = NEVER
        at = -1
        for i in range(m - 1):
            rank = get(prank, i)
            if rank < best:
                best = rank
                at = i
        if at < 0:
            break
        put(part, at, get(pid, at))
        for j in range(at + 1, m - 1):
            put(part, j, get(part, j + 1))
        for j in range(at + 1, m - 2):
            put(prank, j, get(prank, j + 1))
            put(pid, j, get(pid, j + 1))
        m -= 1
        if at > 0:
            rank, merged = pair_memo(
                get(part, at - 1), get(part, at), max_rank, pairs, pair_bits, memo
            )
            put(prank, at - 1, rank)
            put(pid, at - 1, merged)
        if at < m - 1:
            rank, merged = pair_memo(
                get(part, at), get(part, at + 1), max_rank, pairs, pair_bits, memo
            )
            put(prank, at, rank)
            put(pid, at, merged)
    for i in range(m):
        put(out, pos + i, get(part, i))
    return pos + m


@njit_borrowing
def _merge_linked(m, max_rank, pairs, pair_bits, part, prank, pid, memo, out, pos):
    """`_merge_short`'s loop for the `m` parts in `part` (their pairs in `prank`/`pid`) kept in a
    linked list, in `part`'s room after `SHORT`: a merged-away part is unlinked and its pair
    ranked `NEVER`, nothing shifts. Each round takes the lowest (rank << 7 | index), branch-free:
    the lowest rank, leftmost on ties, since the list keeps the parts' order (m <= `SHORT`)."""
    nxt = part[SHORT : 2 * SHORT]
    prv = part[2 * SHORT : 3 * SHORT]
    for i in range(m):
        nxt[i] = i + 1
        prv[i] = i - 1
    prank[m - 1] = NEVER  # the last part has no pair: the scan may read its slot
    for _ in range(m - 1):
        best = _NO_PAIR
        for i in range(m - 1):
            best = min(best, (np.int64(prank[i]) << _INDEX_BITS) | i)
        if best >= _NO_PAIR:
            break
        at = best & (SHORT - 1)
        gone = nxt[at]
        part[at] = pid[at]
        prank[gone] = NEVER
        after = nxt[gone]
        nxt[at] = after
        if after < m:
            prv[after] = at
            prank[at], pid[at] = pair_memo(part[at], part[after], max_rank, pairs, pair_bits, memo)
        else:
            prank[at] = NEVER
        before = prv[at]
        if before >= 0:
            prank[before], pid[before] = pair_memo(
                part[before], part[at], max_rank, pairs, pair_bits, memo
            )
    return _write_linked(part, nxt, m, out, pos)


@njit_borrowing
def _write_linked(parts, nxt, n, out, pos):
    """Write the live parts of a linked list (the first at 0, `nxt` links, `n` its end) to
    `out` from `pos`; returns the new end."""
    i = 0
    while i < n:
        out[pos] = parts[i]
        pos += 1
        i = nxt[i]
    return pos


@njit_borrowing
def _heap_push(heap, size, value):
    i = size
    heap[i] = value
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return size + 1


@njit_borrowing
def _heap_pop(heap, size):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[i] <= heap[child]:
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return top, size


@njit
def _merge_long(
    buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, memo, out, pos
):
    """Heap + linked-list BPE: O(n log n), so a 1 MB piece without spaces stays fast.

    Heap entries are `rank << 32 | node` (lowest rank, then leftmost, as tiktoken). `rank_at[i]`
    and `merged_at[i]` are kept those of node i's pair with its right neighbour; an entry is
    stale when its node died or its rank is no longer `rank_at[i]`, and is then skipped (subtle:
    a stale entry can never match a live pair's rank, since the live pair's result is strictly
    longer: another token, another rank). Nodes start as bytes, or whole characters where
    `char_token` allows. Two allocations a piece (the int64 and the int32 arrays each in one).
    """
    room = end - start
    wide = np.empty(6 * room, dtype=np.int64)
    narrow = np.empty(2 * room, dtype=np.int32)
    tok, nxt, prv, heap = (
        wide[:room],
        wide[room : 2 * room],
        wide[2 * room : 3 * room],
        wide[3 * room :],
    )
    rank_at, merged_at = narrow[:room], narrow[room:]
    n = _first_parts(
        buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, memo, tok,
        rank_at, merged_at,
    )  # fmt: skip
    size = 0
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
    for i in range(n - 1):
        if rank_at[i] != NEVER:
            size = _heap_push(heap, size, (np.int64(rank_at[i]) << 32) | i)
    while size > 0:
        entry, size = _heap_pop(heap, size)
        i = entry & LOW32
        j = nxt[i]
        if tok[i] < 0 or j >= n or np.int64(rank_at[i]) != entry >> 32:
            continue
        tok[i] = merged_at[i]
        tok[j] = -1
        nxt[i] = nxt[j]
        if nxt[j] < n:
            prv[nxt[j]] = i
        p = prv[i]
        if p >= 0:
            rank_at[p], merged_at[p] = pair_memo(tok[p], tok[i], max_rank, pairs, pair_bits, memo)
            if rank_at[p] != NEVER:
                size = _heap_push(heap, size, (np.int64(rank_at[p]) << 32) | p)
        k = nxt[i]
        if k < n:
            rank_at[i], merged_at[i] = pair_memo(tok[i], tok[k], max_rank, pairs, pair_bits, memo)
            if rank_at[i] != NEVER:
                size = _heap_push(heap, size, (np.int64(rank_at[i]) << 32) | i)
        else:
            rank_at[i] = NEVER
    return _write_linked(tok, nxt, n, out, pos)


@njit_borrowing
def merge_short_piece(
    buf, start, end, max_rank, tables, part, prank, pid, memo, out, pos, not_whole=False
):
    """`merge_piece` of a piece of up to `SHORT` bytes (it allocates nothing); `not_whole`: the
    caller knows the piece is no token below `max_rank` (the fused encoder's seed said so, or it
    is the token being rebuilt at its own rank). Compiled without reference counting, as are the
    helpers it calls: in a counted function, unpacking `tables` and passing arrays on cost an
    atomic increment and decrement per array, per piece and per pair lookup. The fused encoder's
    block loop (`_scanned`) calls it directly."""
    (
        tok_bytes,
        tok_off,
        tok_rank,
        byte_id,
        whole,
        pairs,
        byte_pairs,
        char_tables,
        pair_bits,
        whole_bits,
    ) = tables
    if end - start == 1:
        out[pos] = byte_id[buf[start]]
        return pos + 1
    if not not_whole:
        tid = whole_lookup(buf, start, end, tok_bytes, tok_off, whole, whole_bits)
        if tid >= 0 and tok_rank[tid] < max_rank:
            out[pos] = tid
            return pos + 1
    return _merge_short(
        buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, part,
        prank, pid, memo, out, pos,
    )  # fmt: skip


@njit
def _long_piece(buf, start, end, max_rank, tables, memo, out, pos, not_whole=False):
    """`merge_piece` of a piece of more than `SHORT` bytes (it allocates: counted)."""
    (
        tok_bytes,
        tok_off,
        tok_rank,
        byte_id,
        whole,
        pairs,
        byte_pairs,
        char_tables,
        pair_bits,
        whole_bits,
    ) = tables
    if not not_whole:
        tid = whole_lookup(buf, start, end, tok_bytes, tok_off, whole, whole_bits)
        if tid >= 0 and tok_rank[tid] < max_rank:
            out[pos] = tid
            return pos + 1
    return _merge_long(
        buf, start, end, max_rank, byte_id, pairs, pair_bits, byte_pairs, char_tables, memo,
        out, pos,
    )  # fmt: skip


@njit
def merge_piece(
    buf, start, end, max_rank, tables, part, prank, pid, memo, out, pos, not_whole=False
):
    """The ids of the piece buf[start:end], written to `out` from `pos`; returns the new end.

    `tables` as `_core.Core.tables`; `part` is scratch of `PART_ROOM` items, `prank`/`pid` of
    `SHORT`, and `memo` the pair memo (`_tables.pair_memo`), all the caller's so they are made
    once a call (no bounds are checked: smaller scratch is written past its end). `not_whole`:
    the caller knows the piece is no token below `max_rank`, so its whole-token lookup is skipped.
    It only passes `tables` on (no array of it is bound here, so none is counted).
    """
    if end - start <= SHORT:
        return merge_short_piece(
            buf, start, end, max_rank, tables, part, prank, pid, memo, out, pos, not_whole
        )
    return _long_piece(buf, start, end, max_rank, tables, memo, out, pos, not_whole)


@njit
def encode_pieces(buf, starts, ends, special_ids, max_rank, tables, out_ids, out_starts):
    """Encode every piece of `buf`; a piece with `special_ids[i] >= 0` is that one token.

    Writes ids to `out_ids` and, unless `out_starts` is empty, each token's byte start to
    `out_starts` (both sized for the worst case, one token per byte); returns the token count.
    """
    tok_off = tables[1]
    want_starts = out_starts.shape[0] > 0
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    pos = 0
    for p in range(starts.shape[0]):
        start, end = starts[p], ends[p]
        if special_ids[p] >= 0:
            out_ids[pos] = special_ids[p]
            if want_starts:
                out_starts[pos] = start
            pos += 1
            continue
        first = pos
        pos = merge_piece(buf, start, end, max_rank, tables, part, prank, pid, memo, out_ids, pos)
        if not want_starts:
            continue
        offset = start
        for k in range(first, pos):
            out_starts[k] = offset
            tid = out_ids[k]
            offset += tok_off[tid + 1] - tok_off[tid]
    return pos


@njit
def recover_merges(order, tables):
    """For each token id in `order` (rank order), the pair BPE makes it from, or (-1, -1).

    Token `order[r]` has rank `r`: merging its bytes with ranks below `r` must leave exactly two
    parts, which are its merge. Used to rebuild merges from a tiktoken file, which lists ranks only.
    """
    tok_bytes, tok_off = tables[0], tables[1]
    found = np.full((order.shape[0], 2), -1, dtype=np.int64)
    longest = 1
    for r in range(order.shape[0]):
        tid = order[r]
        longest = max(longest, tok_off[tid + 1] - tok_off[tid])
    out = np.empty(longest, dtype=np.int64)
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    for r in range(order.shape[0]):
        tid = order[r]
        start, end = tok_off[tid], tok_off[tid + 1]
        # not_whole: the whole-token lookup would only find the token itself, at rank r
        count = merge_piece(
            tok_bytes, start, end, np.int32(r), tables, part, prank, pid, memo, out, 0, True
        )
        if count == 2:
            found[r, 0], found[r, 1] = out[0], out[1]
    return found


# Every merging kernel compiles in the probes of `_tables` and `_chars` and the unchecked reads of
# `unchecked` (`scan_ir`'s IR) -- `merge_piece` too, which the fused encoder and `encode_pieces`
# call: a stale copy of it would be loaded when they recompile. A change there must recompile
# them, not load the cached ones.
key_caches_on(kernels_of(sys.modules[__name__]), (_tables, _chars, unchecked, scan_ir))
