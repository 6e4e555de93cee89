"""Counting pieces: an open-addressing hash table of byte slices (`_add_piece`, `piece_hash`),
grown and refiled as it fills (`_reserved`, `_rehashed`), filled by `_count_table` straight from
the scan, and merged into another table by `fold_table`.

The scan that finds the pieces is `windows.scan_starts`; the per-preset entry kernels and the
Python calls that return the tables are `entry`.
"""

from __future__ import annotations

import numpy as np
from numba import literally

from workbench.engine._native.numba_config import njit
from workbench.engine._native.scan_ir import _borrowed, _load_u64
from workbench.engine.pretokenize.scan.byte_classes import _smaller
from workbench.engine.pretokenize.scan.windows import scan_starts

# --- counting: an open-addressing table of byte slices ------------------------------------------


# A slot is two uint64 of a flat array (slot j at 2j, 2j + 1), 16 bytes, so the table of a corpus's
# unique pieces mostly stays in L2: the piece's key and its count, so that counting a piece seen
# before touches this one cache line (and the arena's, for a long piece). Key 0 is an empty slot.
# - A piece of up to 7 bytes (nine in ten): the key is the piece itself, its bytes packed (byte k
#   << 8k) | (length + 1) << 56 (top byte 1..8), so a hit is one compare. Home slot: the top bits
#   of key * golden ratio (Fibonacci hashing).
# - A longer piece: 0xFF << 56 | length (capped at 255) << 48 | 8 check bits of its hash << 40 |
#   its place in the arena of unique pieces (40 bits), where its bytes are compared on a match of
#   the top 24 bits. Home slot: the top bits of its 64-bit hash (`_long_hash`).
# The entry number of slot j (order of first occurrence) is `entries[j]`, read only when the
# counts are gathered into `counts[entry]` and for pieces of 255 bytes or more. Slots are flat,
# not rows of a 2-D array, and indexed by uint64: a row's stride is then a constant and Numba adds
# no negative-index wraparound.
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U32 = np.uint64(32)
_U40 = np.uint64(40)
_U48 = np.uint64(48)
_U56 = np.uint64(56)
_SHORT = 7  # the longest piece whose key is the piece itself
_LONG_TAG = np.uint64(0xFF) << _U56  # a long piece's key: never a short one's (top byte 1..8)
_PLACE = (_U1 << _U40) - _U1  # a long piece's place in the arena: the key's low 40 bits
_ABOVE_PLACE = ~_PLACE
_ARENA_LIMIT = 1 << 40  # bytes of unique pieces: a place fits in the key's 40 bits
_CHECK_BITS = np.uint64(0xFF)


_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd, so multiplying by it loses no bits mod 2**64
_U29 = np.uint64(29)


@njit(inline="always")
def piece_hash(data, s, e):
    """(first 8 bytes packed, strong 64-bit hash) of data[s:e], fast for short pieces.

    The word is byte k << 8k for the first min(e - s, 8) bytes, zeros above: one unaligned load
    and a mask (away from the array's end; most pieces are under 8 bytes and a byte loop whose
    exit depends on the length mispredicts). Longer pieces fold in their other bytes 8 at a time
    (the last 8 may overlap the ones before: still a function of the bytes alone); a final
    multiply by the golden-ratio constant spreads every bit into the high bits, which index the
    table (Fibonacci hashing). Example: b"ab" -> word 0x6261.
    """
    length = e - s
    if s + 8 <= data.shape[0]:
        word = _load_u64(data, s)
    else:
        word = np.uint64(0)
        for k in range(_smaller(length, 8)):
            word |= np.uint64(data[s + k]) << np.uint64(8 * k)
    word &= _ALL_BITS >> np.uint64(64 - 8 * _smaller(length, 8))
    h = word ^ (np.uint64(length) << _U56)
    if length > 8:
        k = s + 8
        while k < e:
            h = (h ^ _load_u64(data, _smaller(k, e - 8))) * _GOLDEN
            h ^= h >> _U29
            k += 8
    return word, h * _GOLDEN


@njit(inline="always")
def _short_key(data, s, length):
    """The key of data[s:s+length], 0 <= length <= 7: its bytes packed | (length + 1) << 56.
    Example: b"ab" -> 0x0300000000006261, b"" -> 1 << 56 (never 0, the empty slot)."""
    if s + 8 <= data.shape[0]:
        word = _load_u64(data, s)
    else:  # the array's last 7 bytes: no load past its end
        word = np.uint64(0)
        for k in range(length):
            word |= np.uint64(data[s + k]) << np.uint64(8 * k)
    # (1 << 8 * length) - 1 keeps the piece's bytes; the shift stays below 64 for length <= 7
    return (word & ((_U1 << np.uint64(8 * length)) - _U1)) | (np.uint64(length + 1) << _U56)


@njit(inline="always")
def _home(key, shift):
    """The index of the word of the slot where probing for a short piece's key starts."""
    return ((key * _GOLDEN) >> np.uint64(shift)) << _U1


@njit(inline="always")
def _words_hash(first, last, length):
    """The hash of a piece of 8 to 16 bytes whose first and last 8 bytes (overlapping below 16
    bytes) are `first` and `last`."""
    return (((first ^ (np.uint64(length) << _U56)) * _GOLDEN) ^ last) * _GOLDEN


@njit(inline="always")
def _long_hash(data, s, length):
    """The 64-bit hash of data[s:s+length], length >= 8."""
    if length <= 16:
        return _words_hash(_load_u64(data, s), _load_u64(data, s + length - 8), length)
    return piece_hash(data, s, s + length)[1]


@njit(inline="always")
def _long_top(h, length):
    """The top 24 bits of a long piece's key (all but its place in the arena)."""
    check = ((h >> _U32) & _CHECK_BITS) << _U40
    return _LONG_TAG | (np.uint64(_smaller(length, 255)) << _U48) | check


@njit(inline="always")
def _same_bytes(arena, a, data, b, length):
    """arena[a:a+length] == data[b:b+length] for length >= 8, without making slices: 8 bytes
    at a time, the last 8 overlapping the ones before (both ranges lie inside their arrays)."""
    k = 0
    while k < length:
        at = _smaller(k, length - 8)
        if _load_u64(arena, a + at) != _load_u64(data, b + at):
            return False
        k += 8
    return True


@njit(inline="always")
def _filed(data, s, length, weight, table, used, at, key):
    """File the new piece data[s:s+length] with count `weight` in the empty slot `at` as entry
    `used`; returns the new `used`."""
    slots, entries, arena, offsets = table
    top = offsets[used]
    for k in range(length):
        arena[top + k] = data[s + k]
    offsets[used + 1] = top + length
    slots[at] = key
    slots[at + _U1] = np.uint64(weight)
    entries[at >> _U1] = used
    return used + 1


@njit(inline="always")
def _add_piece(data, s, length, weight, shift, table, used):
    """Count data[s:s+length] `weight` more times, filing it if new; returns (the slot's word
    index, the new `used`).

    `table` = (slots, entries, arena, offsets), `_borrowed` in the count loop (see there), with
    room made for the piece by `_reserved`: no array is replaced here, so the caller's loop keeps
    borrowed views. Short and long pieces probe in loops of their own: the short one compares a
    word, with no test of the length inside.
    """
    slots, entries, arena, offsets = table
    mask = np.uint64(slots.shape[0] - 1)
    if length <= _SHORT:
        key = _short_key(data, s, length)
        at = _home(key, shift)
        while True:
            found = slots[at]
            if found == key:
                slots[at + _U1] += np.uint64(weight)
                return at, used
            if found == 0:
                break
            at = (at + _U2) & mask
    else:
        h = _long_hash(data, s, length)
        top = _long_top(h, length)
        at = (h >> np.uint64(shift)) << _U1
        while True:
            found = slots[at]
            if (found & _ABOVE_PLACE) == top:  # same length (if under 255) and check bits
                a = np.int64(found & _PLACE)
                same_length = length < 255 or offsets[entries[at >> _U1] + 1] - a == length
                if same_length and _same_bytes(arena, a, data, s, length):
                    slots[at + _U1] += np.uint64(weight)
                    return at, used
            elif found == 0:
                key = top | np.uint64(offsets[used])
                break
            at = (at + _U2) & mask
    # one place files new pieces (inlined once: shorter to compile)
    return at, _filed(data, s, length, weight, table, used, at, key)


@njit
def _rehashed(slots, entries, arena, offsets, capacity, shift):
    """(slots, entries) of a table of `capacity` = 2**(64 - shift) slots holding the same keys,
    counts and entry numbers as the given ones."""
    new = np.zeros(2 * capacity, dtype=np.uint64)
    new_entries = np.zeros(capacity, dtype=np.uint32)
    mask = np.uint64(2 * capacity - 1)
    for j in range(entries.shape[0]):
        key = slots[2 * j]
        if key == 0:
            continue
        if key < _LONG_TAG:
            at = _home(key, shift)
        else:
            entry = entries[j]
            a = offsets[entry]
            at = (_long_hash(arena, a, offsets[entry + 1] - a) >> np.uint64(shift)) << _U1
        while new[at] != 0:
            at = (at + _U2) & mask
        new[at] = key
        new[at + _U1] = slots[2 * j + 1]
        new_entries[at >> _U1] = entries[j]
    return new, new_entries


@njit
def _grown(values, keep, capacity):
    """The first `keep` of `values` copied into a new array of `capacity`."""
    out = np.empty(capacity, dtype=values.dtype)
    for k in range(keep):  # a loop: slice assignment costs seconds of compiling
        out[k] = values[k]
    return out


@njit
def _gathered(slots, entries, counts):
    """`counts[entry]` set from the count in each filled slot (counts live in the slots while
    pieces are counted); returns `counts`."""
    for j in range(entries.shape[0]):
        if slots[2 * j] != 0:
            counts[entries[j]] = np.int64(slots[2 * j + 1])
    return counts


@njit
def _reserved(slots, entries, shift, arena, offsets, counts, used, pieces, size):
    """The table's parts (slots, entries, shift, arena, offsets, counts), grown if needed so that
    `pieces` more pieces of `size` bytes in all fit with the slots at most half full."""
    capacity = entries.shape[0]
    if (used + pieces) * 2 > capacity:
        while (used + pieces) * 2 > capacity:
            capacity, shift = capacity * 2, shift - 1
        offsets, counts = (
            _grown(offsets, used + 1, capacity // 2 + 1),
            _grown(counts, used, capacity // 2),
        )
        slots, entries = _rehashed(slots, entries, arena, offsets, capacity, shift)
    top = offsets[used]
    if top + size > _ARENA_LIMIT:  # a long piece's key holds its place in the arena in 40 bits
        raise ValueError("the count table holds at most 2**40 bytes of unique pieces")
    if top + size > arena.shape[0]:
        arena = _grown(arena, top, 2 * (top + size))
    return slots, entries, shift, arena, offsets, counts


@njit
def _empty_table():
    """(slots, entries, shift, arena, offsets, counts) of an empty table (see the slots' note)."""
    # Typed int64, not literals: Numba compiles a callee once more for each literal argument.
    shift = np.int64(64 - 12)  # 4096 slots, grown by `_reserved`
    capacity = np.int64(1) << (64 - shift)
    slots = np.zeros(2 * capacity, dtype=np.uint64)
    entries = np.zeros(capacity, dtype=np.uint32)  # entry numbers below 2**32, as before
    offsets = np.zeros(capacity // 2 + 1, dtype=np.int64)
    counts = np.zeros(capacity // 2, dtype=np.int64)
    arena = np.empty(1 << 16, dtype=np.uint8)
    return slots, entries, shift, arena, offsets, counts


@njit
def _count_table(data, cls, seg_starts, seg_ends, preset, fold_cps, fold_letters):
    """Scan and count every piece of every segment data[seg_starts[j]:seg_ends[j]] (pieces
    never cross a segment's ends); unique pieces are kept in order of first occurrence.

    Returns (arena, offsets, counts, used): unique piece k is arena[offsets[k]:offsets[k+1]], seen
    counts[k] times. Pieces are scanned a block at a time into `bounds` (small: it stays in L1
    and leaves L2 to the table), then counted.
    """
    literally(preset)
    bounds = np.empty(1 << 10, dtype=np.int64)
    starts = bounds[:-1]  # room for the end of the block's last piece after its starts
    slots, entries, shift, arena, offsets, counts = _empty_table()
    used = np.int64(0)  # never a literal: see `_empty_table`
    size = np.int64(0)
    for j in range(seg_starts.shape[0]):
        size += seg_ends[j] - seg_starts[j]
    # Room at once for a guess of the unique pieces (one per 200 bytes, at most 2**16), so the
    # table seldom regrows (refiling hashes every long piece's bytes again)
    slots, entries, shift, arena, offsets, counts = _reserved(
        slots, entries, shift, arena, offsets, counts, used, min(size // 200, 1 << 16), size // 64
    )
    for j in range(seg_starts.shape[0]):
        a = seg_starts[j]
        seg = data[a : seg_ends[j]]
        seg_cls = cls[a : seg_ends[j]]
        n = seg.shape[0]
        i = np.int64(0)  # not a literal 0: Numba would compile scan_starts for it as well
        while i < n:
            k, resume = scan_starts(seg, seg_cls, i, preset, fold_cps, fold_letters, starts)
            bounds[k] = resume
            slots, entries, shift, arena, offsets, counts = _reserved(
                slots, entries, shift, arena, offsets, counts, used, k, resume - i
            )
            # the table's arrays are replaced only between blocks: borrow them for the block (the
            # owners stay alive: they are used after the loop)
            table = _borrowed(slots), _borrowed(entries), _borrowed(arena), _borrowed(offsets)
            text = _borrowed(seg)
            for p in range(k):
                at = np.uint64(p)  # unsigned: no negative-index wraparound, seven instructions
                s = bounds[at]
                used = _add_piece(text, s, bounds[at + _U1] - s, 1, shift, table, used)[1]
            i = resume
    counts = _gathered(slots, entries, counts)
    return arena, offsets, counts, used


@njit
def fold_table(slots, entries, shift, arena, offsets, counts, used, buf, t_offsets, t_counts):
    """File each piece of the table (buf, t_offsets, t_counts) into the table (slots, entries,
    shift, arena, offsets, counts) holding `used` pieces; returns its (possibly regrown) parts and
    the new count of unique pieces. Room for every piece is made first (`_reserved`), so no array
    is replaced while pieces are filed. `counts` is kept up to date piece by piece (a gather over
    all slots would cost the whole table per fold). Example: folding (b"ab", [0, 1, 2], [1, 1])
    twice into an empty table gives the pieces b"a", b"b" with counts [2, 2]."""
    slots, entries, shift, arena, offsets, counts = _reserved(
        slots, entries, shift, arena, offsets, counts, used, t_counts.shape[0], buf.shape[0]
    )
    # Owned arrays, not `_borrowed` views: this files unique pieces only, so the reference
    # counts cost little.
    table = slots, entries, arena, offsets
    for k in range(t_counts.shape[0]):
        s = t_offsets[k]
        at, used = _add_piece(buf, s, t_offsets[k + 1] - s, t_counts[k], shift, table, used)
        counts[entries[at >> _U1]] = np.int64(slots[at + _U1])
    return slots, entries, shift, arena, offsets, counts, used


# --- folding under a bound on the unique pieces' bytes (SuperBPE's stage 2) ---------------------


@njit(inline="always")
def _slot_of(data, s, length, shift, table):
    """The word index of the slot holding data[s:s+length], or -1 if the table lacks it: the
    probe of `_add_piece` without filing (a copy, so the counting loop's code stays as it is)."""
    slots, entries, arena, offsets = table
    mask = np.uint64(slots.shape[0] - 1)
    if length <= _SHORT:
        key = _short_key(data, s, length)
        at = _home(key, shift)
        while slots[at] != 0:
            if slots[at] == key:
                return np.int64(at)
            at = (at + _U2) & mask
        return np.int64(-1)
    h = _long_hash(data, s, length)
    top = _long_top(h, length)
    at = (h >> np.uint64(shift)) << _U1
    while slots[at] != 0:
        found = slots[at]
        if (found & _ABOVE_PLACE) == top:
            a = np.int64(found & _PLACE)
            same_length = length < 255 or offsets[entries[at >> _U1] + 1] - a == length
            if same_length and _same_bytes(arena, a, data, s, length):
                return np.int64(at)
        at = (at + _U2) & mask
    return np.int64(-1)


@njit
def fold_table_capped(
    slots, entries, shift, arena, offsets, counts, used, buf, t_offsets, t_counts, max_bytes
):
    """`fold_table`, admitting a new piece only while the unique pieces' bytes stay within
    `max_bytes`; pieces already in the table are counted whatever the bound. Returns the parts,
    the new count of unique pieces, and the piece occurrences and bytes (count-weighted) left
    out. The table's arrays grow with the admitted pieces only (and a unit's worth of slots)."""
    room = max(np.int64(0), max_bytes - offsets[used])
    slots, entries, shift, arena, offsets, counts = _reserved(
        slots, entries, shift, arena, offsets, counts, used, t_counts.shape[0],
        min(buf.shape[0], room),
    )  # fmt: skip
    table = slots, entries, arena, offsets
    dropped = np.int64(0)
    dropped_bytes = np.int64(0)
    for k in range(t_counts.shape[0]):
        s = t_offsets[k]
        length = t_offsets[k + 1] - s
        if offsets[used] + length <= max_bytes:  # room for it, should it be new
            at, used = _add_piece(buf, s, length, t_counts[k], shift, table, used)
        else:
            found = _slot_of(buf, s, length, shift, table)
            if found < 0:
                dropped += t_counts[k]
                dropped_bytes += length * t_counts[k]
                continue
            at = np.uint64(found)
            slots[at + _U1] += np.uint64(t_counts[k])
        counts[entries[at >> _U1]] = np.int64(slots[at + _U1])
    return slots, entries, shift, arena, offsets, counts, used, dropped, dropped_bytes
