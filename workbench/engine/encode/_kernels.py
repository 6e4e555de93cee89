"""Numba kernels behind `Tokenizer`: lookup tables and byte-pair merging within pieces.

Private module: `tokenizer.py` validates input, builds contiguous arrays and calls these. The
kernels hold no globals; every table arrives as an argument.

Semantics are tiktoken's: within a piece, repeatedly merge the adjacent pair whose *concatenated
bytes* form the token of lowest rank (leftmost on ties), after first looking the whole piece up.
So the pair table holds every split `(left, right)` of every token whose halves are both tokens,
not only the listed merges (tiktoken would merge `a`+`bc` into `abc` even if only `ab`+`c` was
listed). A token's rank is the index of the first merge that makes it; single bytes have rank -1
and ids that must never be produced (specials, holes) have `NEVER`.

Tables (all numpy arrays):
- `tok_bytes`/`tok_off`: byte arena; id `i` is `tok_bytes[tok_off[i]:tok_off[i + 1]]`.
- `whole`: open-addressing rows `(hash, id)` of ids of length >= 2, keyed by their bytes' hash.
- `pairs`: open-addressing rows `(left << 32 | right, rank << 32 | merged id)`.
- `byte_pairs`: `pairs`' values for two single bytes, dense (`byte_pair_table`).
- `char_tables`: the characters that may start whole, and why (`build_char_tables`).

`encode_scanned` is the fast path for the preset patterns: one call classifies, scans (the Numba
scanner) and merges every piece of a text, with a cache of the pieces already seen in that call.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

import numpy as np
from numba import literally

from workbench.engine._native.numba_config import njit
from workbench.engine.pretokenize.scan import KERNEL_SOURCES, classify, scan_starts
from workbench.engine.pretokenize.scan import piece_hash as _piece_key

NEVER = np.int32(2**31 - 1)
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
SHORT = 64  # pieces up to this many bytes use the linear scan; longer ones the heap

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_POLY = np.uint64(0x100000001B3)  # odd: multiplying by it loses no bits mod 2**64
_S33 = np.uint64(33)
_LOW32 = np.int64(0xFFFFFFFF)


@njit
def _mix(x):
    """The murmur3/splitmix finalizer: a strong hash so linear probing stays short."""
    x ^= x >> _S33
    x *= _M1
    x ^= x >> _S33
    x *= _M2
    x ^= x >> _S33
    return x


@njit
def _poly(buf, start, end):
    """A polynomial hash of buf[start:end] (mod 2**64): the hash of any slice of a token follows
    from its prefix hashes in O(1) (see `collect_splits`), so long tokens cost linear time."""
    h = np.uint64(0)
    for i in range(start, end):
        h = h * _POLY + np.uint64(buf[i]) + np.uint64(1)
    return h


@njit
def _key(poly):
    """The table key of a polynomial hash: mixed (so probes stay short), non-negative."""
    return np.int64(_mix(poly) >> np.uint64(1))


@njit
def _same_bytes(buf, start, end, tok_bytes, tok_start, tok_end):
    if end - start != tok_end - tok_start:
        return False
    for i in range(end - start):  # noqa: SIM110 -- a plain loop is what Numba compiles best
        if buf[start + i] != tok_bytes[tok_start + i]:
            return False
    return True


@njit
def _whole_lookup(buf, start, end, tok_bytes, tok_off, whole):
    """The id whose bytes are `buf[start:end]` (length >= 2), or -1."""
    return _whole_lookup_key(
        _key(_poly(buf, start, end)), buf, start, end, tok_bytes, tok_off, whole
    )


@njit
def _whole_lookup_key(h, buf, start, end, tok_bytes, tok_off, whole):
    """`_whole_lookup` with the key of buf[start:end] already known."""
    mask = np.int64(whole.shape[0] - 1)
    slot = h & mask
    while True:
        tid = whole[slot, 1]
        if tid < 0:
            return -1
        if whole[slot, 0] == h and _same_bytes(
            buf, start, end, tok_bytes, tok_off[tid], tok_off[tid + 1]
        ):
            return tid
        slot = (slot + 1) & mask


@njit
def build_whole_table(tok_bytes, tok_off, tok_rank, capacity):
    """Rows `(hash, id)` of every producible id of length >= 2; `capacity` is a power of 2.

    The hash sits next to the id so a probe that misses costs one cache line, not a byte compare.
    """
    whole = np.full((capacity, 2), -1, dtype=np.int64)
    mask = np.int64(capacity - 1)
    for tid in range(tok_off.shape[0] - 1):
        start, end = tok_off[tid], tok_off[tid + 1]
        if end - start < 2 or tok_rank[tid] == NEVER:
            continue
        h = _key(_poly(tok_bytes, start, end))
        slot = h & mask
        while whole[slot, 1] >= 0:
            slot = (slot + 1) & mask
        whole[slot, 0] = h
        whole[slot, 1] = tid
    return whole


@njit
def collect_splits(tok_bytes, tok_off, tok_rank, byte_id, whole):
    """Every `(left, right, result)` where `left + right` are the bytes of token `result`.

    `abc` -> (a, bc) and (ab, c) when `bc` and `ab` are tokens: both pairs merge to `abc`.
    Linear in the tokens' bytes: each cut's two halves are hashed from the token's prefix
    hashes, and bytes are compared only where a hash matches (a token of 1 MB of `a`, after
    training on a long run, would otherwise cost 10**12 steps). Two passes: count, then fill.
    """
    longest = 1
    for tid in range(tok_off.shape[0] - 1):
        longest = max(longest, tok_off[tid + 1] - tok_off[tid])
    prefix = np.empty(longest + 1, dtype=np.uint64)
    power = np.empty(longest + 1, dtype=np.uint64)
    power[0] = np.uint64(1)
    for i in range(longest):
        power[i + 1] = power[i] * _POLY
    n = 0
    lefts = np.empty(0, dtype=np.int64)
    rights = np.empty(0, dtype=np.int64)
    results = np.empty(0, dtype=np.int64)
    for write in range(2):
        if write == 1:
            lefts = np.empty(n, dtype=np.int64)
            rights = np.empty(n, dtype=np.int64)
            results = np.empty(n, dtype=np.int64)
            n = 0
        for tid in range(tok_off.shape[0] - 1):
            start, end = tok_off[tid], tok_off[tid + 1]
            length = end - start
            if length < 2 or tok_rank[tid] == NEVER:
                continue
            prefix[0] = np.uint64(0)
            for i in range(length):
                prefix[i + 1] = prefix[i] * _POLY + np.uint64(tok_bytes[start + i]) + np.uint64(1)
            for cut in range(1, length):
                if cut == 1:
                    left = np.int64(byte_id[tok_bytes[start]])
                else:
                    h = _key(prefix[cut])
                    left = _whole_lookup_key(
                        h, tok_bytes, start, start + cut, tok_bytes, tok_off, whole
                    )
                if left < 0:
                    continue
                if cut == length - 1:
                    right = np.int64(byte_id[tok_bytes[end - 1]])
                else:
                    h = _key(prefix[length] - prefix[cut] * power[length - cut])
                    right = _whole_lookup_key(
                        h, tok_bytes, start + cut, end, tok_bytes, tok_off, whole
                    )
                if right < 0:
                    continue
                if write == 1:
                    lefts[n], rights[n], results[n] = left, right, tid
                n += 1
    return lefts, rights, results


@njit
def build_pair_table(lefts, rights, results, tok_rank, capacity):
    """Rows `(left << 32 | right, rank of result << 32 | result id)`, key -1 = empty.

    Key and value share a cache line, so a lookup costs one miss.
    """
    pairs = np.full((capacity, 2), -1, dtype=np.int64)
    mask = np.uint64(capacity - 1)
    for i in range(lefts.shape[0]):
        key = (lefts[i] << 32) | rights[i]
        slot = np.int64(_mix(np.uint64(key)) & mask)
        while pairs[slot, 0] != -1:
            slot = (slot + 1) & np.int64(mask)
        pairs[slot, 0] = key
        pairs[slot, 1] = (np.int64(tok_rank[results[i]]) << 32) | results[i]
    return pairs


MEMO_BITS = 15  # 32768 rows of 16 bytes (512 KB): over 80% of o200k's lookups in new CJK text
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MEMO_DOWN = np.uint64(64 - MEMO_BITS)


@njit
def _pair_memo(left, right, max_rank, pairs, memo):
    """(rank, merged id) of the pair, or (NEVER, -1) if it is not a token below `max_rank`,
    looked up through a small direct-mapped memo of the last lookups, misses included.

    The pair table is megabytes (o200k: 16 MB), so each lookup is a cache miss; text reuses few
    pairs (a CJK run: the same lead and continuation bytes), and the memo answers those from L2.
    It stores the table's raw value, so one memo serves every `max_rank`.
    """
    key = (np.int64(left) << 32) | np.int64(right)
    slot = np.int64((np.uint64(key) * _GOLDEN) >> _MEMO_DOWN)
    if memo[slot, 0] == key:
        value = memo[slot, 1]
    else:
        value = np.int64(-1)
        mask = np.int64(pairs.shape[0] - 1)
        probe = np.int64(_mix(np.uint64(key)) & np.uint64(mask))
        while True:
            k = pairs[probe, 0]
            if k == key:
                value = pairs[probe, 1]
                break
            if k == -1:
                break
            probe = (probe + 1) & mask
        memo[slot, 0] = key
        memo[slot, 1] = value
    if value >= 0:
        rank = np.int32(value >> 32)
        if rank < max_rank:
            return rank, np.int32(value & _LOW32)
    return NEVER, np.int32(-1)


def byte_pair_table(lefts, rights, results, tok_bytes, tok_off, tok_rank) -> np.ndarray:
    """`pairs`' values for the pairs of two single bytes, dense: row `256 * first + second`
    (-1: no token). A piece starts as bytes, so its first lookups need no hashing and hit L2."""
    lengths = tok_off[1:] - tok_off[:-1]
    single = (lengths[lefts] == 1) & (lengths[rights] == 1)
    row = tok_bytes[tok_off[lefts[single]]].astype(np.int64) * 256
    row += tok_bytes[tok_off[rights[single]]]
    made = results[single]
    table = np.full(1 << 16, -1, dtype=np.int64)
    table[row] = (tok_rank[made].astype(np.int64) << 32) | made
    return table


@njit
def _byte_pair(first, second, max_rank, byte_pairs):
    """`_pair_memo` for two single bytes, from `byte_pair_table`."""
    value = byte_pairs[(np.int64(first) << 8) | np.int64(second)]
    if value >= 0:
        rank = np.int32(value >> 32)
        if rank < max_rank:
            return rank, np.int32(value & _LOW32)
    return NEVER, np.int32(-1)


# --- whole characters: merged before BPE where that provably changes nothing -------------------

# A piece of CJK text is mostly 3-byte characters, and BPE spends two merges (and four pair
# lookups) per character just rebuilding it. A character `c` may be one token at once when BPE
# would make it before any merge touches its bytes otherwise: its own merges have ranks up to
# `R` (its "making rank"), and every token holding part of `c` and a byte beside it ("a
# straddler") has a rank above `R`. Then, in rank order, `c` is whole before a straddler could
# form, and once whole none can; the other merges keep their order (one of equal rank would be
# the same token overlapping `c`: a straddler). Straddlers are found by the byte just outside
# `c`: `S1[next << 6 | z]`, `S2[next << 12 | y << 6 | z]` hold the lowest rank of a token that
# starts with `c`'s last one or two bytes (continuation bytes, kept to their low 6 bits) and goes
# on with `next`; `E1[x << 8 | prev]`, `E2[(x << 6 | y) << 8 | prev]` that of a token ending with
# `c`'s first byte or two, preceded by `prev`. Only bytes matter, so invalid UTF-8 is no harm: a
# unit is a lead byte C0..EF with its continuation bytes, not followed by another one.
CHAR_ROWS = (1 << 16) + (1 << 11)  # 3-byte units by their 16 low bits, then 2-byte units
_S2_AT = 256 << 6  # where S2, E1 and E2 start in the one straddlers array
_E1_AT = _S2_AT + (256 << 12)
_E2_AT = _E1_AT + (256 << 8)


@njit
def _char_row(x, y, z, length):
    """Row of a 2- or 3-byte unit in the characters table (`z` unused for 2 bytes)."""
    if length == 2:
        return (1 << 16) + (((x & 31) << 6) | (y & 63))
    return ((x & 15) << 12) | ((y & 63) << 6) | (z & 63)


def build_char_tables(tok_bytes, tok_off, tok_rank) -> tuple:
    """(chars, S1 + S2 + E1 + E2 in one array) for `_char_token`; `chars[row]` = making rank
    << 32 | id, or -1.

    The making rank of `xyz` is the larger of its first merge (`xy` or `yz`, the lower) and its
    own rank: what BPE of `xyz` alone goes through. NumPy over all tokens at once (a few ms for
    o200k): no kernel to compile.
    """
    never = np.int64(NEVER)
    lengths = tok_off[1:] - tok_off[:-1]
    ids = np.flatnonzero((lengths >= 2) & (tok_rank != NEVER))
    rank = tok_rank[ids].astype(np.int64)
    first, last, length = tok_off[ids], tok_off[ids + 1] - 1, lengths[ids]

    def at(offsets: np.ndarray) -> np.ndarray:
        return tok_bytes[offsets].astype(np.int64)

    def cont(values: np.ndarray) -> np.ndarray:
        return (values & 0xC0) == 0x80

    def table(size: int, rows: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        out = np.full(size, never, dtype=np.int64)
        np.minimum.at(out, rows, ranks)
        return out.astype(np.int32)

    b0, b1 = at(first), at(first + 1)
    b2 = at(np.minimum(first + 2, last))
    # Tokens starting with one or two continuation bytes, then `next`.
    one = cont(b0) & ~cont(b1)
    two = cont(b0) & cont(b1) & (length > 2) & ~cont(b2)
    s1 = table(256 << 6, (b1[one] << 6) | (b0[one] & 63), rank[one])
    s2 = table(256 << 12, (b2[two] << 12) | ((b0[two] & 63) << 6) | (b1[two] & 63), rank[two])
    # Tokens ending with a lead byte (2 or 3 bytes), or a 3-byte lead and one continuation byte.
    z, y, x = at(last), at(last - 1), at(np.maximum(last - 2, first))
    lead = (z >= 0xC0) & (z < 0xF0)
    half = cont(z) & (y >= 0xE0) & (y < 0xF0) & (length > 2)
    e1 = table(256 << 8, (z[lead] << 8) | y[lead], rank[lead])
    e2 = table(1 << 18, ((((y[half] & 15) << 6) | (z[half] & 63)) << 8) | x[half], rank[half])
    # The characters: 2- and 3-byte tokens that are a lead byte and its continuation bytes.
    rank_of_pair = np.full(1 << 16, never, dtype=np.int64)
    pair = length == 2
    rank_of_pair[(b0[pair] << 8) | b1[pair]] = rank[pair]
    chars = np.full(CHAR_ROWS, -1, dtype=np.int64)
    double = pair & (b0 >= 0xC0) & (b0 < 0xE0) & cont(b1)
    # Rows as the kernel finds them: `_char_row`'s Python body works on whole arrays too.
    rows = _char_row.py_func(b0[double], b1[double], 0, 2)
    chars[rows] = (rank[double] << 32) | ids[double]
    triple = (length == 3) & (b0 >= 0xE0) & (b0 < 0xF0) & cont(b1) & cont(b2)
    x3, y3, z3 = b0[triple], b1[triple], b2[triple]
    first_merge = np.minimum(rank_of_pair[(x3 << 8) | y3], rank_of_pair[(y3 << 8) | z3])
    making = np.maximum(rank[triple], first_merge)
    made = first_merge != never  # else BPE cannot build it from its bytes
    rows = _char_row.py_func(x3, y3, z3, 3)
    chars[rows[made]] = (making[made] << 32) | ids[triple][made]
    return chars, np.concatenate([s1, s2, e1, e2])  # two arrays: fewer to count per call


@njit(inline="always")  # a call would count references to the five tables per character
def _char_token(buf, i, start, end, max_rank, char_tables):
    """(id, length) of the character at buf[i] when BPE provably makes it whole before anything
    else touches its bytes (see above), else (-1, 1). `start`/`end` bound the piece."""
    chars, straddlers = char_tables
    x = np.int64(buf[i])
    if x < 0xC0 or x >= 0xF0:
        return np.int64(-1), 1
    length = 2 if x < 0xE0 else 3
    stop = i + length
    if stop > end:
        return np.int64(-1), 1
    y = np.int64(buf[i + 1])
    z = np.int64(buf[i + 2]) if length == 3 else np.int64(0x80)
    if (y & 0xC0) != 0x80 or (z & 0xC0) != 0x80:
        return np.int64(-1), 1
    nxt = np.int64(buf[stop]) if stop < end else np.int64(-1)
    if (nxt & 0xC0) == 0x80:
        return np.int64(-1), 1
    info = chars[_char_row(x, y, z, length)]
    making = info >> 32
    if info < 0 or making >= max_rank:
        return np.int64(-1), 1
    last = np.int64(buf[stop - 1]) & 63
    if nxt >= 0:
        if straddlers[(nxt << 6) | last] <= making:
            return np.int64(-1), 1
        if length == 3 and straddlers[_S2_AT + ((nxt << 12) | ((y & 63) << 6) | last)] <= making:
            return np.int64(-1), 1
    if i > start:
        prev = np.int64(buf[i - 1])
        if straddlers[_E1_AT + ((x << 8) | prev)] <= making:
            return np.int64(-1), 1
        row = _E2_AT + (((((x & 15) << 6) | (y & 63)) << 8) | prev)
        if length == 3 and straddlers[row] <= making:
            return np.int64(-1), 1
    return info & _LOW32, length


@njit  # one copy to compile (inlined twice it cost seconds of first start)
def _first_parts(
    buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, memo, part, prank, pid
):  # fmt: skip
    """BPE's starting point for buf[start:end]: bytes, or whole characters where `_char_token`
    allows, into `part`, and each adjacent pair's (rank, merged id) into `prank`/`pid` (pairs
    of two bytes from the dense table). Returns the number of parts."""
    m = 0
    raw = np.int64(-1)  # the previous part's byte, or -1 when it is a whole character
    i = start
    while i < end:
        tid, step = np.int64(-1), 1
        if buf[i] >= 0xC0:  # a lead byte: maybe a whole character
            tid, step = _char_token(buf, i, start, end, max_rank, char_tables)
        byte = np.int64(-1) if tid >= 0 else np.int64(buf[i])
        part[m] = tid if tid >= 0 else byte_id[byte]
        if m > 0:
            if raw >= 0 and byte >= 0:
                prank[m - 1], pid[m - 1] = _byte_pair(raw, byte, max_rank, byte_pairs)
            else:
                prank[m - 1], pid[m - 1] = _pair_memo(part[m - 1], part[m], max_rank, pairs, memo)
        raw = byte
        m += 1
        i += step
    return m


@njit
def _merge_short(
    buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, part, prank, pid, memo,
    out, pos,
):  # fmt: skip
    """Linear-scan BPE (tiktoken's loop) for short pieces: O(n^2) but tiny n."""
    m = end - start
    plain = True  # no lead byte: bytes it is, without the call (most pieces of English and code)
    for i in range(start, end):
        if buf[i] >= 0xC0:
            plain = False
            break
    if plain:
        for i in range(m):
            part[i] = byte_id[buf[start + i]]
        for i in range(m - 1):
            prank[i], pid[i] = _byte_pair(buf[start + i], buf[start + i + 1], max_rank, byte_pairs)
    else:
        m = _first_parts(
            buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, memo, part, prank,
            pid,
        )  # fmt: skip
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
            prank[at - 1], pid[at - 1] = _pair_memo(part[at - 1], part[at], max_rank, pairs, memo)
        if at < m - 1:
            prank[at], pid[at] = _pair_memo(part[at], part[at + 1], max_rank, pairs, memo)
    for i in range(m):
        out[pos + i] = part[i]
    return pos + m


@njit
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


@njit
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
def _merge_long(buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, memo, out, pos):
    """Heap + linked-list BPE: O(n log n), so a 1 MB piece without spaces stays fast.

    Heap entries are `rank << 32 | node` (lowest rank, then leftmost, as tiktoken). An entry is
    stale when its node died or its pair's rank changed; it is then skipped (subtle: a stale
    entry can never match a live pair's rank, since the live pair's result is strictly longer).
    Nodes start as bytes, or whole characters where `_char_token` allows.
    """
    room = end - start
    tok = np.empty(room, dtype=np.int64)
    rank_at = np.empty(room, dtype=np.int32)
    merged_at = np.empty(room, dtype=np.int32)
    n = _first_parts(
        buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, memo, tok, rank_at,
        merged_at,
    )  # fmt: skip
    nxt = np.empty(n, dtype=np.int64)
    prv = np.empty(n, dtype=np.int64)
    heap = np.empty(3 * n, dtype=np.int64)
    size = 0
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
    for i in range(n - 1):
        if rank_at[i] != NEVER:
            size = _heap_push(heap, size, (np.int64(rank_at[i]) << 32) | i)
    while size > 0:
        entry, size = _heap_pop(heap, size)
        i = entry & _LOW32
        j = nxt[i]
        if tok[i] < 0 or j >= n:
            continue
        rank, merged = _pair_memo(tok[i], tok[j], max_rank, pairs, memo)
        if np.int64(rank) != entry >> 32:
            continue
        tok[i] = merged
        tok[j] = -1
        nxt[i] = nxt[j]
        if nxt[j] < n:
            prv[nxt[j]] = i
        p = prv[i]
        if p >= 0:
            rank, _ = _pair_memo(tok[p], tok[i], max_rank, pairs, memo)
            if rank != NEVER:
                size = _heap_push(heap, size, (np.int64(rank) << 32) | p)
        k = nxt[i]
        if k < n:
            rank, _ = _pair_memo(tok[i], tok[k], max_rank, pairs, memo)
            if rank != NEVER:
                size = _heap_push(heap, size, (np.int64(rank) << 32) | i)
    i = 0
    while i < n:
        out[pos] = tok[i]
        pos += 1
        i = nxt[i]
    return pos


@njit
def _merge_piece(
    buf, start, end, max_rank, tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs,
    char_tables, part, prank, pid, memo, out, pos,
):  # fmt: skip
    if end - start == 1:
        out[pos] = byte_id[buf[start]]
        return pos + 1
    tid = _whole_lookup(buf, start, end, tok_bytes, tok_off, whole)
    if tid >= 0 and tok_rank[tid] < max_rank:
        out[pos] = tid
        return pos + 1
    if end - start <= SHORT:
        return _merge_short(
            buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, part, prank, pid,
            memo, out, pos,
        )  # fmt: skip
    return _merge_long(
        buf, start, end, max_rank, byte_id, pairs, byte_pairs, char_tables, memo, out, pos
    )


@njit
def encode_pieces(buf, starts, ends, special_ids, max_rank, tables, out_ids, out_starts):
    """Encode every piece of `buf`; a piece with `special_ids[i] >= 0` is that one token.

    Writes ids to `out_ids` and, unless `out_starts` is empty, each token's byte start to
    `out_starts` (both sized for the worst case, one token per byte); returns the token count.
    """
    tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs, char_tables = tables
    want_starts = out_starts.shape[0] > 0
    part = np.empty(SHORT, dtype=np.int64)
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
        pos = _merge_piece(
            buf, start, end, max_rank, tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs,
            char_tables, part, prank, pid, memo, out_ids, pos,
        )  # fmt: skip
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
    tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs, char_tables = tables
    found = np.full((order.shape[0], 2), -1, dtype=np.int64)
    longest = 1
    for r in range(order.shape[0]):
        tid = order[r]
        longest = max(longest, tok_off[tid + 1] - tok_off[tid])
    out = np.empty(longest, dtype=np.int64)
    part = np.empty(SHORT, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    memo = np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64)
    for r in range(order.shape[0]):
        tid = order[r]
        start, end = tok_off[tid], tok_off[tid + 1]
        count = _merge_piece(
            tok_bytes, start, end, np.int32(r), tok_bytes, tok_off, tok_rank, byte_id, whole,
            pairs, byte_pairs, char_tables, part, prank, pid, memo, out, 0,
        )  # fmt: skip
        if count == 2:
            found[r, 0], found[r, 1] = out[0], out[1]
    return found


# --- the fused encoder: classify + scan + cached BPE, one call per text ---------------------------

# Natural text repeats its pieces heavily (the 1.9 MB of ../shared/corpora: 520k pieces, 37k
# distinct, 95% of them at most 8 bytes), and merging a new piece costs cache misses in the
# megabyte tables (~100 ns a byte), so a piece cache maps piece -> ids: an open-addressing table
# of uint64 rows `(word, info)` where `word` is the piece's first 8 bytes packed (`_piece_key`,
# the scanner's piece hash) and info = length | n_ids << 8 | 16 hash bits << 16 | value << 32;
# info 0 marks an empty row. A piece of <= 8 bytes is identified by (word, length) alone, and
# when it is one token (the common case) `value` is the id: a hit reads one 16-byte row.
# Otherwise `value` is an offset into `arena` (int32): [offset of the bytes after the first 8 in
# `keys`, if longer than 8] then the ids. The cache outlives a call (the tokenizer keeps one per
# thread, see `new_piece_cache`), so many small texts share what the first ones merged. Once it
# is full (half its rows, or its arena or keys), new pieces are turned away, since by Zipf the
# first pieces are mostly the frequent ones; but after a quarter of its entries' worth has been
# turned away it starts afresh, since then they were not the frequent ones of what follows (text
# of another kind, a large text's rarer pieces). With the old rule (full: no more pieces until
# the next call) 32 MB texts of English docs and C encoded 1.5-2.1x slower; at 8 MB, where the
# cache seldom fills, both rules are equally fast. Starting afresh as soon as the cache is full
# churned on C code, whose long names fill the keys early (o200k, 8 MB of C: 1.5x slower).
# Long pieces repeat too (a CJK sentence without spaces is one piece; manual pages repeat their
# option texts) and cost the most to merge, so every piece whose length fits info's 8 bits is
# cached; their bytes after the first 8 fill `keys`, and when that is full they are merged anew.
CACHE_MAX_LEN = 255
_CACHE_MAX_IDS = 255  # n_ids must fit 8 bits
_U8 = np.uint64(8)
_U16 = np.uint64(16)
_U32 = np.uint64(32)
_B8 = np.uint64(0xFF)
_B16 = np.uint64(0xFFFF)
_LEN_AND_CHECK = np.uint64(0xFFFF00FF)


def new_piece_cache(bits: int) -> tuple:
    """An empty piece cache of 2**bits rows for `encode_scanned`, with its pair memo:
    (rows, arena, keys, state [used, arena top, keys top, turned away], memo): `turned away`
    counts the new pieces not cached since the cache was full. Owned by one thread at a time.
    At least 2**8 rows: then any cacheable piece fits an emptied arena (2 ids a row) and keys
    (4 bytes a row), which the kernel relies on when it starts a full cache afresh.
    """
    if not 8 <= bits <= 30:
        raise ValueError(f"a piece cache has 2**8 to 2**30 rows, not 2**{bits}")
    rows = 1 << bits
    return (
        np.zeros((rows, 2), dtype=np.uint64),
        np.empty(2 * rows, dtype=np.int32),
        np.empty(4 * rows, dtype=np.uint8),  # bytes 9.. of long pieces; usually far less needed
        np.zeros(4, dtype=np.int64),
        np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64),
    )


@njit
def encode_scanned(
    data, seg_starts, seg_ends, seg_ids, preset, flags, fold_cps, fold_letters, max_rank,
    tables, piece_cache, out_ids,
):  # fmt: skip
    """Encode UTF-8 `data` made of segments: `seg_ids[j] >= 0` is a special token spanning
    data[seg_starts[j]:seg_ends[j]], -1 is ordinary text, scanned with `preset` (0 gpt2, 1 cl100k,
    2 o200k; pieces never cross a segment's ends). Writes ids to `out_ids` (room for one per
    byte) and returns their count. `piece_cache` (`new_piece_cache`) is read and extended; it
    must have been filled by this same tokenizer (tables and `max_rank`) only.
    """
    literally(preset)
    tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs, char_tables = tables
    cache, arena, keys, state, memo = piece_cache
    n = data.shape[0]
    cls = np.empty(n, dtype=np.uint8)
    classify(data, flags, cls)
    rows = cache.shape[0]
    room = rows // 2  # entries allowed: keeps probes short
    used, arena_top, keys_top, turned_away = state[0], state[1], state[2], state[3]
    bits = 0
    while (1 << bits) < rows:
        bits += 1
    down = np.uint64(64 - bits)  # Fibonacci hashing: the top bits index the table
    bounds = np.empty(1 << 12, dtype=np.int64)  # a block of piece starts stays in L1
    part = np.empty(SHORT, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    pos = 0
    for j in range(seg_starts.shape[0]):
        a, b = seg_starts[j], seg_ends[j]
        if seg_ids[j] >= 0:
            out_ids[pos] = seg_ids[j]
            pos += 1
            continue
        seg = data[a:b]
        seg_cls = cls[a:b]
        m = b - a
        i = np.int64(0)  # not a literal: Numba would compile scan_starts for it as well
        while i < m:
            count, resume = scan_starts(seg, seg_cls, i, preset, fold_cps, fold_letters, bounds)
            for p in range(count):
                s = bounds[p]
                e = bounds[p + 1] if p + 1 < count else resume
                length = e - s
                if length == 1:
                    out_ids[pos] = byte_id[seg[s]]
                    pos += 1
                    continue
                if length > CACHE_MAX_LEN:
                    pos = _merge_piece(
                        seg, s, e, max_rank, tok_bytes, tok_off, tok_rank, byte_id, whole,
                        pairs, byte_pairs, char_tables, part, prank, pid, memo, out_ids, pos,
                    )  # fmt: skip
                    continue
                word, h = _piece_key(seg, s, e)
                want = np.uint64(length) | (((h >> _U32) & _B16) << _U16)
                mask = rows - 1
                slot = np.int64(h >> down)
                while True:  # probe (inline: a call with array arguments costs refcounting)
                    info = cache[slot, 1]
                    if info == 0:
                        break
                    if cache[slot, 0] == word and (info & _LEN_AND_CHECK) == want:
                        if length <= 8:
                            break
                        at = np.int64(arena[np.int64(info >> _U32)])
                        same = True
                        for k in range(length - 8):
                            if keys[at + k] != seg[s + 8 + k]:
                                same = False
                                break
                        if same:
                            break
                    slot = (slot + 1) & mask
                if info != 0:  # hit
                    n_ids = np.int64((info >> _U8) & _B8)
                    value = np.int64(info >> _U32)
                    if n_ids == 1 and length <= 8:
                        out_ids[pos] = value
                        pos += 1
                        continue
                    if length > 8:
                        value += 1
                    for k in range(n_ids):
                        out_ids[pos + k] = arena[value + k]
                    pos += n_ids
                    continue
                first = pos
                pos = _merge_piece(
                    seg, s, e, max_rank, tok_bytes, tok_off, tok_rank, byte_id, whole, pairs, byte_pairs,
                    char_tables, part, prank, pid, memo, out_ids, pos,
                )  # fmt: skip
                n_ids = pos - first
                extra = 1 if length > 8 else 0
                if n_ids > _CACHE_MAX_IDS:
                    continue
                inline = n_ids == 1 and length <= 8  # the id in the row, nothing in the arena
                if (
                    used >= room
                    or (not inline and arena_top + extra + n_ids > arena.shape[0])
                    or (extra and keys_top + length - 8 > keys.shape[0])
                ):  # full: turned away, or once many were, the cache starts afresh (see above)
                    turned_away += 1
                    if turned_away < room // 4:
                        continue
                    cache[:] = 0
                    used, arena_top, keys_top, turned_away = 0, 0, 0, 0
                    slot = np.int64(h >> down)  # the piece now fits, and its home slot is free
                if inline:
                    value = np.int64(out_ids[first])
                else:
                    value = arena_top
                    if extra:
                        arena[arena_top] = keys_top
                        arena_top += 1
                        for k in range(length - 8):
                            keys[keys_top + k] = seg[s + 8 + k]
                        keys_top += length - 8
                    for k in range(n_ids):
                        arena[arena_top + k] = out_ids[first + k]
                    arena_top += n_ids
                cache[slot, 0] = word
                cache[slot, 1] = want | (np.uint64(n_ids) << _U8) | (np.uint64(value) << _U32)
                used += 1
            i = resume
    state[0], state[1], state[2], state[3] = used, arena_top, keys_top, turned_away
    return pos


# One entry kernel per preset (Python cannot pass a literal): the first use of a preset compiles
# that preset's scanner only.


@njit
def _encode_scanned_gpt2(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 0, flags, fold_cps, fold_letters, max_rank, tables,
        piece_cache, out_ids,
    )  # fmt: skip


@njit
def _encode_scanned_cl100k(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 1, flags, fold_cps, fold_letters, max_rank, tables,
        piece_cache, out_ids,
    )  # fmt: skip


@njit
def _encode_scanned_o200k(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 2, flags, fold_cps, fold_letters, max_rank, tables,
        piece_cache, out_ids,
    )  # fmt: skip


ENCODE_SCANNED = (_encode_scanned_gpt2, _encode_scanned_cl100k, _encode_scanned_o200k)
"""The fused encoder per preset code (0 gpt2, 1 cl100k, 2 o200k), called without `preset`."""


def _cache_also_keyed_on(dispatcher: object, *modules: ModuleType) -> None:
    """Make a kernel's on-disk cache depend on other modules' sources too.

    Numba keys a cached kernel on its own file only, but `encode_scanned` compiles in the
    scanner's code: without this, a changed scanner.py would leave the old scanner inside the
    cached encoder. The digest joins the stamp Numba compares when it loads its index.
    """
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_source_stamp"):
        return  # another Numba layout, or caching off: nothing stale can be loaded then
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__ or "").read_bytes())
    cache_file._source_stamp = (cache_file._source_stamp, digest.hexdigest())


for _kernel in (encode_scanned, *ENCODE_SCANNED):
    _cache_also_keyed_on(_kernel, *KERNEL_SOURCES)
