"""The encoder's lookup tables, built from a tokenizer's byte arena, and the probes that read them.

Private to `encode/`: `tokenizer.py` builds the tables once (`_core.Core.tables`); the merging
kernels (`_merge.py`) read them. Kernels hold no globals; every table arrives as an argument.

A token's rank is the index of the first merge that makes it; single bytes have rank -1 and ids
that must never be produced (specials, holes) have `NEVER`. Tables (all numpy arrays):
- `tok_bytes`/`tok_off`: byte arena; id `i` is `tok_bytes[tok_off[i]:tok_off[i + 1]]`.
- `whole`: open-addressing rows `(key, id)` of ids of length >= 2: up to 7 bytes the key is the
  bytes themselves (`_packed`, negative), longer ones a hash of them (non-negative).
- `pairs`: open-addressing rows `(left << 32 | right, rank << 32 | merged id)`. It holds every
  split `(left, right)` of every token whose halves are both tokens, not only the listed merges
  (tiktoken merges by the concatenated bytes: `a`+`bc` makes `abc` even if only `ab`+`c` was
  listed).
- `byte_pairs`: `pairs`' values for two single bytes, dense (`byte_pair_table`).
- `pair_bits`, `whole_bits`: filters of `pairs`' and `whole`'s keys (`key_filter`), last in
  the tuple.

Not here: the whole-character tables (`_chars.py`), merging (`_merge.py`).
"""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine._native.unchecked import get, put

NEVER = np.int32(2**31 - 1)

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_POLY = np.uint64(0x100000001B3)  # odd: multiplying by it loses no bits mod 2**64
_S33 = np.uint64(33)
LOW32 = np.int64(0xFFFFFFFF)


@njit_borrowing
def _mix(x):
    """The murmur3/splitmix finalizer: a strong hash so linear probing stays short."""
    x ^= x >> _S33
    x *= _M1
    x ^= x >> _S33
    x *= _M2
    x ^= x >> _S33
    return x


@njit_borrowing
def _poly(buf, start, end):
    """A polynomial hash of buf[start:end] (mod 2**64): the hash of any slice of a token follows
    from its prefix hashes in O(1) (see `collect_splits`), so long tokens cost linear time."""
    h = np.uint64(0)
    for i in range(start, end):
        h = h * _POLY + np.uint64(buf[i]) + np.uint64(1)
    return h


@njit_borrowing
def _key(poly):
    """The table key of a polynomial hash: mixed (so probes stay short), non-negative."""
    return np.int64(_mix(poly) >> np.uint64(1))


@njit_borrowing
def _same_bytes(buf, start, end, tok_bytes, tok_start, tok_end):
    if end - start != tok_end - tok_start:
        return False
    for i in range(end - start):  # noqa: SIM110 -- a plain loop is what Numba compiles best
        if buf[start + i] != tok_bytes[tok_start + i]:
            return False
    return True


PACKED = 7  # tokens up to this many bytes are keyed by their bytes (`_packed`), not a hash
_U56 = np.uint64(56)
_U63 = np.uint64(63)
_U8 = np.uint64(8)


@njit(inline="always")
def _packed(buf, start, end):
    """The key of buf[start:end] (2..`PACKED` bytes): its bytes, its length in bits 56-58 and
    bit 63 set (negative: never a hashed key, never the empty row's -1).

    A key that is the bytes needs no byte compare: a hit is the token. Most pieces of text are
    that short, and the compare reads the token's offsets and bytes, two more cache misses in
    arrays of megabytes for every piece that is one token."""
    k = (np.uint64(1) << _U63) | (np.uint64(end - start) << _U56)
    for i in range(end - start):
        k |= np.uint64(buf[start + i]) << (_U8 * np.uint64(i))
    return np.int64(k)


@njit(inline="always")
def _home(key, whole):
    """The first row a key probes in `whole`."""
    return np.int64(_mix(np.uint64(key)) & np.uint64(whole.shape[0] - 1))


@njit_borrowing
def whole_lookup(buf, start, end, tok_bytes, tok_off, whole, whole_bits):
    """The id whose bytes are `buf[start:end]` (length >= 2), or -1; `whole_bits` is the
    table's `key_filter`."""
    if end - start <= PACKED:
        key = _packed(buf, start, end)
        if not in_filter(whole_bits, _spread(key)):
            return -1
        return _packed_lookup(key, whole)
    h = _key(_poly(buf, start, end))
    if not in_filter(whole_bits, _spread(h)):
        return -1
    return _whole_lookup_key(h, buf, start, end, tok_bytes, tok_off, whole)


@njit_borrowing
def _packed_lookup(key, whole):
    """The id of the `_packed` key, or -1."""
    mask = np.int64(whole.shape[0] - 1)
    slot = _home(key, whole)
    while True:
        tid = whole[slot, 1]
        if tid < 0 or whole[slot, 0] == key:
            return tid
        slot = (slot + 1) & mask


@njit_borrowing
def _whole_lookup_key(h, buf, start, end, tok_bytes, tok_off, whole):
    """`whole_lookup` of more than `PACKED` bytes with their hashed key `h` already known."""
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
    """Rows `(key, id)` of every producible id of length >= 2; `capacity` is a power of 2.

    The key sits next to the id so a probe that misses costs one cache line, not a byte compare.
    """
    whole = np.full((capacity, 2), -1, dtype=np.int64)
    mask = np.int64(capacity - 1)
    for tid in range(tok_off.shape[0] - 1):
        start, end = tok_off[tid], tok_off[tid + 1]
        if end - start < 2 or tok_rank[tid] == NEVER:
            continue
        if end - start <= PACKED:
            h = _packed(tok_bytes, start, end)
            slot = _home(h, whole)
        else:
            h = _key(_poly(tok_bytes, start, end))
            slot = h & mask
        while whole[slot, 1] >= 0:
            slot = (slot + 1) & mask
        whole[slot, 0] = h
        whole[slot, 1] = tid
    return whole


@njit(inline="always")
def _part_id(poly, start, end, tok_bytes, tok_off, byte_id, whole):
    """The id of tok_bytes[start:end] (a part of a token, `poly` its `_poly` hash), or -1."""
    if end - start == 1:
        return np.int64(byte_id[tok_bytes[start]])
    if end - start <= PACKED:
        return _packed_lookup(_packed(tok_bytes, start, end), whole)
    return _whole_lookup_key(_key(poly), tok_bytes, start, end, tok_bytes, tok_off, whole)


@njit
def collect_splits(tok_bytes, tok_off, tok_rank, byte_id, whole):
    """Every `(left, right, result)` where `left + right` are the bytes of token `result`.

    `abc` -> (a, bc) and (ab, c) when `bc` and `ab` are tokens: both pairs merge to `abc`.
    Linear in the tokens' bytes: each cut's two halves are hashed from the token's prefix
    hashes, and bytes are compared only where a hash matches (a token of 1 MB of `a`, after
    training on a long run, would otherwise cost 10**12 steps). One pass into room for every
    cut (int32, 12 bytes a cut: o200k's 1.2 million cuts, 14 MB for a moment), cut to the splits
    found: counting them first cost a second pass of the same lookups (o200k: 0.32 -> 0.17 s).
    """
    longest = 1
    cuts = 0
    for tid in range(tok_off.shape[0] - 1):
        length = tok_off[tid + 1] - tok_off[tid]
        longest = max(longest, length)
        if length >= 2 and tok_rank[tid] != NEVER:
            cuts += length - 1
    prefix = np.empty(longest + 1, dtype=np.uint64)
    power = np.empty(longest + 1, dtype=np.uint64)
    power[0] = np.uint64(1)
    for i in range(longest):
        power[i + 1] = power[i] * _POLY
    found = np.empty((3, cuts), dtype=np.int32)  # ids are int32 everywhere (`ids.MAX_ID`)
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
            left = _part_id(prefix[cut], start, start + cut, tok_bytes, tok_off, byte_id, whole)
            if left < 0:
                continue
            poly = prefix[length] - prefix[cut] * power[length - cut]
            right = _part_id(poly, start + cut, end, tok_bytes, tok_off, byte_id, whole)
            if right < 0:
                continue
            found[0, n], found[1, n], found[2, n] = left, right, tid
            n += 1
    return (
        found[0, :n].astype(np.int64),
        found[1, :n].astype(np.int64),
        found[2, :n].astype(np.int64),
    )


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


# 8192 rows of 16 bytes (128 KB), filled afresh by every new tokenizer (`np.full`): 2**15 rows
# answered a few more lookups but cost more in a new instance's call than they saved (whole cold
# calls 0.89-0.98x the time at 2**13 beside 2**15, same run; docs/engineering-notes.md)
MEMO_BITS = 13
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MEMO_DOWN = np.uint64(64 - MEMO_BITS)
_U32 = np.uint64(32)
_U52 = np.uint64(52)
_U58 = np.uint64(58)
_B6 = np.uint64(63)


@njit(inline="always")
def _spread(key):
    """Fibonacci hashing of a table key: one multiplication, whose high bits depend on all of
    the key's; the filters and the pair memo share it (the tables' own `_mix` costs two)."""
    return np.uint64(key) * _GOLDEN


@njit(inline="always")
def _filter_bits(g):
    """The two bits of a key's `_spread` value `g` in its filter word (bits 52..63 of `g`; the
    word is chosen by bits 32 on)."""
    return (np.uint64(1) << (g >> _U58)) | (np.uint64(1) << ((g >> _U52) & _B6))


def key_filter(keys: np.ndarray) -> np.ndarray:
    """A filter of a table's keys (int64, -1 = an empty row skipped): 8 bits a key or more, in
    64-bit words (a power of 2 of them, at most 2**20), two bits a key in one word, all chosen
    by the key's `_spread` (`in_filter`). A key whose two bits are not both set is in no row.

    Most lookups of new text find nothing (two CJK characters side by side are rarely a token:
    6 of 9 pair lookups a piece; a new piece is rarely one token), and each costs a cache miss
    in the table's megabytes; the filter (o200k's pairs: 512 KB) answers almost all of them from
    cache, and is wrong (the table then answers) for a few percent. NumPy: no kernel to compile.
    """
    keys = keys[keys != -1].astype(np.uint64)
    words = 64
    while words * 8 < keys.shape[0] and words < 1 << 20:
        words *= 2
    with np.errstate(over="ignore"):
        g = keys * _GOLDEN  # `_spread`, on the whole array at once
    bits = np.zeros(words, dtype=np.uint64)
    rows = ((g >> _U32) & np.uint64(words - 1)).astype(np.int64)
    np.bitwise_or.at(bits, rows, _filter_bits.py_func(g))
    return bits


@njit(inline="always")
def in_filter(bits, g):
    """False when the key whose `_spread` is `g` is surely not in the table `bits` filters."""
    want = _filter_bits(g)
    return bits[np.int64((g >> _U32) & np.uint64(bits.shape[0] - 1))] & want == want


@njit_borrowing
def pair_memo(left, right, max_rank, pairs, pair_bits, memo):
    """(rank, merged id) of the pair, or (NEVER, -1) if it is not a token below `max_rank`.

    `pair_bits` (`key_filter` of the table) turns most absent pairs away; the others go
    through a small direct-mapped memo of the last lookups, misses included. The pair table is
    megabytes (o200k: 16 MB), so each lookup is a cache miss; text reuses few pairs (a CJK run:
    the same lead and continuation bytes), and the memo answers those from L2. It stores the
    table's raw value, so one memo serves every `max_rank`.
    """
    key = (np.int64(left) << 32) | np.int64(right)
    g = _spread(key)
    if not in_filter(pair_bits, g):
        return NEVER, np.int32(-1)
    slot = np.int64(g >> _MEMO_DOWN)  # rows of two: (key, value) at 2 * row, 2 * row + 1
    if get(memo, 2 * slot) == key:
        value = get(memo, 2 * slot + 1)
    else:
        value = np.int64(-1)
        mask = np.int64(pairs.shape[0] - 1)
        probe = np.int64(_mix(np.uint64(key)) & np.uint64(mask))
        while True:
            k = get(pairs, 2 * probe)
            if k == key:
                value = get(pairs, 2 * probe + 1)
                break
            if k == -1:
                break
            probe = (probe + 1) & mask
        put(memo, 2 * slot, key)
        put(memo, 2 * slot + 1, value)
    if value >= 0:
        rank = np.int32(value >> 32)
        if rank < max_rank:
            return rank, np.int32(value & LOW32)
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


@njit_borrowing
def byte_pair(first, second, max_rank, byte_pairs):
    """`pair_memo` for two single bytes, from `byte_pair_table`."""
    value = get(byte_pairs, (np.int64(first) << 8) | np.int64(second))
    if value >= 0:
        rank = np.int32(value >> 32)
        if rank < max_rank:
            return rank, np.int32(value & LOW32)
    return NEVER, np.int32(-1)
