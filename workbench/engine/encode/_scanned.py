"""The fused encoder for the preset patterns: one call per text classifies, scans (the Numba
scanner) and merges every piece, through a piece cache of the pieces already seen.

Private to `encode/`: `tokenizer.py` calls `ENCODE_SCANNED[preset]` with the tables and this
thread's piece cache (`new_piece_cache`). Not here: merging a piece (`_merge.py`), the scanner
itself (`pretokenize/scan/`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import literally

from workbench.engine._native import prefetch as _prefetch_module
from workbench.engine._native import unchecked
from workbench.engine._native.cache_keys import key_caches_on
from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine._native.prefetch import prefetch
from workbench.engine._native.scan_ir import _load_u64
from workbench.engine._native.unchecked import get as _get
from workbench.engine._native.unchecked import put as _put
from workbench.engine.encode import _chars, _merge, _tables
from workbench.engine.encode._merge import PART_ROOM, SHORT, merge_piece, merge_short_piece
from workbench.engine.encode._tables import MEMO_BITS, NEVER, _same_bytes, whole_lookup
from workbench.engine.pretokenize.scan import KERNEL_SOURCES, classify, scan_starts
from workbench.engine.pretokenize.scan import piece_hash as _piece_key

# Natural text repeats its pieces heavily (the 1.9 MB of ../shared/corpora: 520k pieces, 37k
# distinct, 95% of them at most 8 bytes), and merging a new piece costs cache misses in the
# megabyte tables (~100 ns a byte), so a piece cache maps piece -> ids: an open-addressing table
# of uint64 rows `(word, info)` where `word` is the piece's first 8 bytes packed (`_piece_key`,
# the scanner's piece hash) and info = length | n_ids << 8 | 16 hash bits << 16 | value << 32;
# info 0 marks an empty row. A piece of <= 8 bytes is identified by (word, length) alone, and
# when it is one token (the common case) `value` is the id: a hit reads one 16-byte row.
# Otherwise `value` is an offset into `arena` (int32): [the last 8 bytes as two int32, if longer
# than 8; the offset in `keys` of bytes 8 to length - 8, if longer than 16] then the ids: a piece
# of up to 16 bytes is compared in two words (a byte loop whose end depends on the length
# mispredicts; with `_copy_hit`'s block copy, a warm 2 MB of English took 10.2 ns a piece beyond
# the scan, 11.6 before). The cache outlives a call (the tokenizer keeps one per
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
# cached; the bytes between their first and last 8 fill `keys`, and when that is full they are
# merged anew.
CACHE_MAX_LEN = 255
_CACHE_MAX_IDS = 255  # n_ids must fit 8 bits
_U8 = np.uint64(8)
_U16 = np.uint64(16)
_U32 = np.uint64(32)
_B8 = np.uint64(0xFF)
_B16 = np.uint64(0xFFFF)
_B32 = np.uint64(0xFFFFFFFF)
_COPIED = 4  # a cached piece of up to this many ids has them copied as a block (`_copy_hit`)
_LEN_AND_CHECK = np.uint64(0xFFFF00FF)


class PieceCache(NamedTuple):
    """One thread's piece cache for `encode_scanned` (see above), with its pair memo."""

    cache: np.ndarray  # rows (word, info), uint64; info 0: empty
    arena: np.ndarray  # int32: [offset in keys, if longer than 8] then the ids
    keys: np.ndarray  # uint8: bytes 9.. of long pieces
    state: np.ndarray  # int64 [used, arena top, keys top, turned away]
    memo: np.ndarray  # the pair memo (`_tables.pair_memo`)


def new_piece_cache(bits: int) -> PieceCache:
    """An empty piece cache of 2**bits rows for `encode_scanned`, with its pair memo:
    `turned away` counts the new pieces not cached since the cache was full. Owned by one
    thread at a time. At least 2**8 rows: then any cacheable piece fits an emptied arena (2 ids
    a row) and keys (4 bytes a row), which the kernel relies on when it starts a full cache
    afresh.
    """
    if not 8 <= bits <= 30:
        raise ValueError(f"a piece cache has 2**8 to 2**30 rows, not 2**{bits}")
    rows = 1 << bits
    return PieceCache(
        np.zeros((rows, 2), dtype=np.uint64),
        np.empty(2 * rows, dtype=np.int32),
        np.empty(4 * rows, dtype=np.uint8),  # bytes 9.. of long pieces; usually far less needed
        np.zeros(4, dtype=np.int64),
        np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64),
    )


# The helpers below run once or more a piece: inline, and given plain arrays (a tuple argument
# costs reference counting of every array in it, each piece).


@njit(inline="always")
def _row_check(length, h):
    """The part of a row's `info` that identifies a piece beside its first 8 bytes: its length
    and 16 bits of its hash `h`."""
    return np.uint64(length) | (((h >> _U32) & _B16) << _U16)


@njit(inline="always")
def _down(table):
    """The shift that turns a hash into a row of `table` (a power of 2 of rows): Fibonacci
    hashing, the top bits index the table."""
    bits = 0
    while (1 << bits) < table.shape[0]:
        bits += 1
    return np.uint64(64 - bits)


@njit(inline="always")
def _probe(cache, arena, keys, seg, s, length, word, want, slot):
    """(slot, info) of the row holding the piece seg[s:s + length], or of the empty row where it
    would go (info 0), probing from its home `slot`. `want`: its length and 16 hash bits."""
    mask = cache.shape[0] - 1
    while True:
        info = _get(cache, 2 * slot + 1)
        if info == 0:
            return slot, info
        if _get(cache, 2 * slot) == word and (info & _LEN_AND_CHECK) == want:
            if length <= 8:
                return slot, info
            # its last 8 bytes in one compare: with the first 8, all of a piece of up to 16
            tail = _arena_word(arena, np.int64(info >> _U32))
            if tail == _load_u64(seg, s + length - 8) and (
                length <= 16 or _same_middle(arena, keys, seg, s, length, info)
            ):
                return slot, info
        slot = (slot + 1) & mask


@njit(inline="always")
def _arena_word(arena, at):
    """The uint64 stored as two int32 at arena[at], arena[at + 1] (low half first)."""
    return np.uint64(np.uint32(_get(arena, at))) | (
        np.uint64(np.uint32(_get(arena, at + 1))) << _U32
    )


@njit_borrowing
def _same_middle(arena, keys, seg, s, length, info):
    """Whether the cached piece of more than 16 bytes (its row's `info`) has the bytes 8 to
    length - 8 of seg[s:s + length] (its first and last 8 were compared already)."""
    at = np.int64(arena[np.int64(info >> _U32) + 2])
    for k in range(length - 16):  # noqa: SIM110 -- a plain loop is what Numba compiles best
        if keys[at + k] != seg[s + 8 + k]:
            return False
    return True


@njit(inline="always")
def _before_ids(length):
    """The arena items a cached piece of `length` bytes keeps before its ids: its last 8 bytes
    (two int32) when longer than 8, and the offset of its middle bytes when longer than 16."""
    return 2 * np.int64(length > 8) + np.int64(length > 16)


@njit(inline="always")
def _ids_at(info, length):
    """Where a cached piece's ids start in `arena` (its row's `info`, not an inline id)."""
    return np.int64(info >> _U32) + _before_ids(length)


@njit(inline="always")
def _copy_hit(info, length, arena, out_ids, pos):
    """Write the ids of a cached piece (its row's `info`) from `pos`; returns the new end. Up to
    `_COPIED` ids are copied as that many, whatever their count: a loop whose end depends on the
    count mispredicts, and one piece in five of English is more than one id. The ids written
    past the piece's stay in `out_ids`: its ids start at most at its first byte (an id has a
    byte or more), it has two bytes or more, and `out_ids` has room for one id a byte, one a
    segment and one more (`encode_scanned`)."""
    n_ids = np.int64((info >> _U8) & _B8)
    if n_ids == 1 and length <= 8:
        _put(out_ids, pos, info >> _U32)
        return pos + 1
    at = _ids_at(info, length)
    if n_ids <= _COPIED:
        _put(out_ids, pos, _get(arena, at))
        _put(out_ids, pos + 1, _get(arena, at + 1))
        _put(out_ids, pos + 2, _get(arena, at + 2))
        _put(out_ids, pos + 3, _get(arena, at + 3))
        return pos + n_ids
    for k in range(n_ids):
        out_ids[pos + k] = arena[at + k]
    return pos + n_ids


@njit(inline="always")
def _store(cache, arena, keys, used, arena_top, keys_top, turned_away, slot, home, word, want,
           seg, s, length, ids, first, n_ids):  # fmt: skip
    """Cache the piece seg[s:s + length] and its ids ids[first:first + n_ids] in the empty row
    `slot` unless the cache is full: then it is turned away, or once many were, the cache starts
    afresh (see above) and the piece goes to its `home` row. Returns the four counters."""
    room = cache.shape[0] // 2  # entries allowed: keeps probes short
    extra = _before_ids(length)
    middle = length - 16 if length > 16 else 0
    if n_ids > _CACHE_MAX_IDS:
        return used, arena_top, keys_top, turned_away
    inline = n_ids == 1 and length <= 8  # the id in the row, nothing in the arena
    if (
        used >= room
        or (not inline and arena_top + extra + max(n_ids, _COPIED) > arena.shape[0])
        or keys_top + middle > keys.shape[0]
    ):
        turned_away += 1
        if turned_away < room // 4:
            return used, arena_top, keys_top, turned_away
        cache[:] = 0
        used, arena_top, keys_top, turned_away = 0, 0, 0, 0
        slot = home  # the piece now fits, and its home slot is free
    if inline:
        value = np.int64(ids[first])
    else:
        value = arena_top
        if length > 8:
            tail = _load_u64(seg, s + length - 8)
            arena[arena_top] = np.int32(tail & _B32)
            arena[arena_top + 1] = np.int32(tail >> _U32)
            arena_top += 2
        if length > 16:
            arena[arena_top] = keys_top
            arena_top += 1
            for k in range(middle):
                keys[keys_top + k] = seg[s + 8 + k]
            keys_top += middle
        for k in range(n_ids):
            arena[arena_top + k] = ids[first + k]
        arena_top += n_ids
    cache[slot, 0] = word
    cache[slot, 1] = want | (np.uint64(n_ids) << _U8) | (np.uint64(value) << _U32)
    return used + 1, arena_top, keys_top, turned_away


# A new cache is empty, so the first time a call meets a piece that is one whole token (most
# new pieces of English: " the", "ation"; a sixth to a half of the new pieces in C and CJK text)
# it went through `merge_short_piece`'s whole-token lookup: a filter, the table, the token's
# bytes and its rank, four dependent cache misses (150-280 ns a piece, o200k's 8 MB table
# mostly in memory). The seed is a read-only table of every token of 2 to `SHORT` bytes in the
# piece cache's own row format (the id inline), built once per set of tables and shared by every
# thread: a new piece is looked up there with the hash it already has, one row (prefetched with
# its cache row while pieces are new), before it is merged.


_SEED_MIX = np.uint64(0xD6E8FEB86659FD93)  # odd


@njit(inline="always")
def _seed_home(h, down):
    """A piece's first row in the seed: other bits of its hash than its cache row's, so the two
    rows of a piece do not fall in the same set of the memory caches (with tables of as many
    rows, the same offset: both evicted by each other's neighbours)."""
    return np.int64((h * _SEED_MIX) >> down)


@njit
def build_seed(tables, bits):
    """The seed (see above) of 2**bits rows for `tables` (`_core.Core.tables`): each token of 2
    to `SHORT` bytes that `merge_short_piece` gives as itself at every rank it is made by, that
    is each token the whole-token lookup finds (a token with a duplicate's bytes is left out)."""
    tok_bytes, tok_off, tok_rank = tables[0], tables[1], tables[2]
    whole, whole_bits = tables[4], tables[9]
    rows = 1 << bits
    seed = np.zeros((rows, 2), dtype=np.uint64)
    down = np.uint64(64 - bits)
    mask = rows - 1
    for tid in range(tok_off.shape[0] - 1):
        s, e = tok_off[tid], tok_off[tid + 1]
        if not 2 <= e - s <= SHORT or not 0 <= tok_rank[tid] < NEVER:
            continue
        if whole_lookup(tok_bytes, s, e, tok_bytes, tok_off, whole, whole_bits) != tid:
            continue
        word, h = _piece_key(tok_bytes, s, e)
        slot = _seed_home(h, down)
        while seed[slot, 1] != 0:
            slot = (slot + 1) & mask
        seed[slot, 0] = word
        want = _row_check(e - s, h)
        seed[slot, 1] = want | (np.uint64(1) << _U8) | (np.uint64(tid) << _U32)
    return seed


NO_SEED = np.zeros((2, 2), dtype=np.uint64)
"""An empty seed, for a tokenizer that stops short of its tables' last merge (`prefix(k)`):
the seed holds tokens it may not make."""


@njit(inline="always")
def _seed_probe(seed, seed_down, tok_bytes, tok_off, seg, s, length, word, want, h):
    """The id of the token whose bytes are seg[s:s + length] if the seed holds it, else -1."""
    mask = seed.shape[0] - 1
    slot = _seed_home(h, seed_down)
    while True:
        info = _get(seed, 2 * slot + 1)
        if info == 0:
            return np.int64(-1)
        if _get(seed, 2 * slot) == word and (info & _LEN_AND_CHECK) == want:
            tid = np.int64(info >> _U32)
            if length <= 8 or _same_bytes(
                seg, s + 8, s + length, tok_bytes, tok_off[tid] + 8, tok_off[tid + 1]
            ):
                return tid
        slot = (slot + 1) & mask


_BLOCK = 1 << 12  # piece starts `scan_starts` finds a call (a block)
_MISS_RATE = 32  # a block prefetches when one piece in this many of the last block was new


@njit(inline="always")
def _ahead(seg, bounds, count, resume, q, down, cache, seed, seed_down, words, hashes):
    """Hash piece `q` of the block into `words` and `hashes` and start loading its cache row and
    its seed row, if it is a piece the cache holds (2 to `CACHE_MAX_LEN` bytes)."""
    s = _get(bounds, q)
    e = _get(bounds, q + 1) if q + 1 < count else resume
    if 2 <= e - s <= CACHE_MAX_LEN:
        word, h = _piece_key(seg, s, e)
        _put(words, q, word)
        _put(hashes, q, h)
        prefetch(cache, np.int64(h >> down) * 2)
        prefetch(seed, _seed_home(h, seed_down) * 2)


@njit(inline="always")
def _key_of(seg, s, e, p, ahead, words, hashes):
    """(first 8 bytes, hash) of piece `p`, seg[s:e]: from `words`/`hashes` when `_ahead` made
    them for the block, else computed."""
    if ahead:
        return _get(words, p), _get(hashes, p)
    return _piece_key(seg, s, e)


@njit_borrowing
def _hits(
    seg, bounds, p, count, resume, cache, arena, keys, byte_id, down, ahead, words, hashes,
    out_ids, pos,
):  # fmt: skip
    """`_encode_block`'s loop from piece `p` while every piece is one byte or a cache hit (its
    hash from `words`/`hashes` when `ahead`): returns (the piece it stopped at, the new `pos`),
    the piece `count` when done, else one that is new or too long to cache. A function of its
    own, with nothing else in its loop and its array reads unchecked (`_get`), so that its
    values stay in registers: inside the block loop, beside a new piece's work, they were
    spilled to the stack (2 MB of English, warm: 7.5 ns a piece beyond the scan here, 8.7 with
    the hits in the block loop, 10.2 before either, one run each; with the merging's unchecked
    reads, whole calls of arrays 0.78-0.85x the time warm, 0.91-0.94x cold)."""
    while p < count:
        s = _get(bounds, p)
        e = _get(bounds, p + 1) if p + 1 < count else resume
        length = e - s
        if length == 1:
            _put(out_ids, pos, _get(byte_id, _get(seg, s)))
            pos += 1
        else:
            if length > CACHE_MAX_LEN:
                break
            word, h = _key_of(seg, s, e, p, ahead, words, hashes)
            want = _row_check(length, h)
            slot, info = _probe(cache, arena, keys, seg, s, length, word, want, np.int64(h >> down))
            if info == 0:
                break
            pos = _copy_hit(info, length, arena, out_ids, pos)
        p += 1
    return p, pos


@njit_borrowing
def _encode_block(
    seg, bounds, p, count, resume, max_rank, tables, seed, seed_down, cache, arena, keys, state,
    memo, part, prank, pid, words, hashes, ahead, down, out_ids, pos,
):  # fmt: skip
    """Encode the pieces p.. of a block of `scan_starts` (`count` starts in `bounds`, the last
    piece ending at `resume`) into `out_ids` from `pos`, through the piece cache, whose counters
    `state` holds. Returns (the new `pos`, the piece it stopped at, the pieces not found in the
    cache): the piece is `count` when done, else one of more than `SHORT` bytes not in the
    cache, which the caller merges (merging it allocates: this function counts no references,
    so it must not).

    A new piece's cost is mostly waiting on memory (its cache row in megabytes, then the tables),
    so with `ahead` every piece of the block is hashed first and its cache and seed rows
    prefetched (`_ahead`), then the loop probes (`_hits`, and `_new_piece` for each piece it
    stops at): the waits overlap each other. (Hashing each
    piece 6 pieces ahead inside the loop instead: cold calls 1.02-1.04x the time on English and
    C, the same on multilingual text, alternated in one process.) When nearly every piece is a
    hit (a warm cache) that costs more than it saves (the hashing pass and the prefetches, ~3 ns
    a piece), so the caller sets `ahead` by the last block's misses. Compiled without reference
    counting: a counted loop pays atomic increments and decrements for the arrays it passes to
    its helpers.
    """
    byte_id = tables[3]
    misses = 0
    if p == 0 and ahead:
        for q in range(count):
            _ahead(seg, bounds, count, resume, q, down, cache, seed, seed_down, words, hashes)
    while p < count:
        p, pos = _hits(seg, bounds, p, count, resume, cache, arena, keys, byte_id, down, ahead,
                       words, hashes, out_ids, pos)  # fmt: skip
        if p >= count:
            break
        s = _get(bounds, p)
        e = _get(bounds, p + 1) if p + 1 < count else resume
        length = e - s
        if length > CACHE_MAX_LEN:
            break
        # a new piece of 2 to `CACHE_MAX_LEN` bytes: its empty row, found again
        word, h = _key_of(seg, s, e, p, ahead, words, hashes)
        want = _row_check(length, h)
        home = np.int64(h >> down)
        slot, _ = _probe(cache, arena, keys, seg, s, length, word, want, home)
        misses += 1
        if length > SHORT:
            break
        pos = _new_piece(
            seg, s, e, slot, home, word, want, h, max_rank, tables, seed, seed_down, cache, arena,
            keys, state, memo, part, prank, pid, out_ids, pos,
        )  # fmt: skip
        p += 1
    return pos, p, misses


@njit_borrowing
def _new_piece(
    seg, s, e, slot, home, word, want, h, max_rank, tables, seed, seed_down, cache, arena, keys,
    state, memo, part, prank, pid, out_ids, pos,
):  # fmt: skip
    """`_encode_block`'s new piece seg[s:e] of up to `SHORT` bytes (its hash `h`, its empty
    row `slot` of its `home`): its ids from the seed or merged, written from `pos` and cached;
    returns the new `pos`. Out of the block loop's body, as are the cache's counters (in
    `state`, not locals): the loop over hits, most pieces, keeps its values in registers."""
    tok_bytes, tok_off = tables[0], tables[1]
    length = e - s
    first = pos
    tid = _seed_probe(seed, seed_down, tok_bytes, tok_off, seg, s, length, word, want, h)
    if tid >= 0:
        _put(out_ids, pos, tid)
        pos += 1
    else:
        seeded = seed.shape[0] > NO_SEED.shape[0]  # the seed holds every token: none is missed
        pos = merge_short_piece(
            seg, s, e, max_rank, tables, part, prank, pid, memo, out_ids, pos, seeded
        )
    state[0], state[1], state[2], state[3] = _store(
        cache, arena, keys, state[0], state[1], state[2], state[3], slot, home, word, want, seg,
        s, length, out_ids, first, pos - first,
    )  # fmt: skip
    return pos


@njit
def _long_piece(seg, s, e, max_rank, tables, cache, arena, keys, state, memo, part, prank, pid,
                down, out_ids, pos):  # fmt: skip
    """A piece of more than `SHORT` bytes: through the cache when it fits, else merged."""
    length = e - s
    if length > CACHE_MAX_LEN:
        return merge_piece(seg, s, e, max_rank, tables, part, prank, pid, memo, out_ids, pos)
    word, h = _piece_key(seg, s, e)
    want = _row_check(length, h)
    home = np.int64(h >> down)
    slot, info = _probe(cache, arena, keys, seg, s, length, word, want, home)
    if info != 0:
        return _copy_hit(info, length, arena, out_ids, pos)
    first = pos
    pos = merge_piece(seg, s, e, max_rank, tables, part, prank, pid, memo, out_ids, pos)
    state[0], state[1], state[2], state[3] = _store(
        cache, arena, keys, state[0], state[1], state[2], state[3], slot, home, word, want, seg,
        s, length, out_ids, first, pos - first,
    )  # fmt: skip
    return pos


@njit
def encode_scanned(
    data, seg_starts, seg_ends, seg_ids, preset, flags, fold_cps, fold_letters, max_rank,
    tables, seed, piece_cache, out_ids,
):  # fmt: skip
    """Encode UTF-8 `data` made of segments: `seg_ids[j] >= 0` is a special token spanning
    data[seg_starts[j]:seg_ends[j]], -1 is ordinary text, scanned with `preset` (0 gpt2, 1 cl100k,
    2 o200k; pieces never cross a segment's ends). Writes ids to `out_ids` (room for one per
    byte and segment, and one more: `_copy_hit` writes past the ids it gives) and returns
    their count. `piece_cache` (`new_piece_cache`) is read and extended; it must have been
    filled by this same tokenizer (tables and `max_rank`) only.
    """
    literally(preset)
    cache, arena, keys, state, memo = piece_cache
    cls = np.empty(data.shape[0], dtype=np.uint8)
    classify(data, flags, cls)
    down = _down(cache)
    seed_down = _down(seed)
    bounds = np.empty(_BLOCK, dtype=np.int64)  # a block of piece starts stays in L1
    words = np.empty(_BLOCK, dtype=np.uint64)  # their keys, hashed before the block's probes
    hashes = np.empty(_BLOCK, dtype=np.uint64)
    part = np.empty(PART_ROOM, dtype=np.int64)
    prank = np.empty(SHORT, dtype=np.int32)
    pid = np.empty(SHORT, dtype=np.int32)
    pos = 0
    ahead = True  # a call's first block prefetches: its pieces are new if any are
    for j in range(seg_starts.shape[0]):
        a, b = seg_starts[j], seg_ends[j]
        if seg_ids[j] >= 0:
            out_ids[pos] = seg_ids[j]
            pos += 1
            continue
        seg = data[a:b]
        seg_cls = cls[a:b]
        i = np.int64(0)  # not a literal: Numba would compile scan_starts for it as well
        while i < b - a:
            count, resume = scan_starts(seg, seg_cls, i, preset, fold_cps, fold_letters, bounds)
            p = 0
            misses = 0
            while True:
                pos, p, missed = _encode_block(
                    seg, bounds, p, count, resume, max_rank, tables, seed, seed_down, cache, arena,
                    keys, state, memo, part, prank, pid, words, hashes, ahead, down,
                    out_ids, pos,
                )  # fmt: skip
                misses += missed
                if p >= count:
                    break
                e = bounds[p + 1] if p + 1 < count else resume
                pos = _long_piece(
                    seg, bounds[p], e, max_rank, tables, cache, arena, keys, state, memo, part,
                    prank, pid, down, out_ids, pos,
                )  # fmt: skip
                p += 1
            ahead = misses * _MISS_RATE >= count  # prefetch while pieces are new
            i = resume
    return pos


# One entry kernel per preset (Python cannot pass a literal): the first use of a preset compiles
# that preset's scanner only.


@njit
def _encode_scanned_gpt2(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables, seed,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 0, flags, fold_cps, fold_letters, max_rank, tables,
        seed, piece_cache, out_ids,
    )  # fmt: skip


@njit
def _encode_scanned_cl100k(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables, seed,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 1, flags, fold_cps, fold_letters, max_rank, tables,
        seed, piece_cache, out_ids,
    )  # fmt: skip


@njit
def _encode_scanned_o200k(
    data, seg_starts, seg_ends, seg_ids, flags, fold_cps, fold_letters, max_rank, tables, seed,
    piece_cache, out_ids,
):  # fmt: skip
    return encode_scanned(
        data, seg_starts, seg_ends, seg_ids, 2, flags, fold_cps, fold_letters, max_rank, tables,
        seed, piece_cache, out_ids,
    )  # fmt: skip


ENCODE_SCANNED = (_encode_scanned_gpt2, _encode_scanned_cl100k, _encode_scanned_o200k)
"""The fused encoder per preset code (0 gpt2, 1 cl100k, 2 o200k), called without `preset`."""


# The fused encoder compiles in the scanner's code and the merging kernels (with their table
# probes): a change to any of them must recompile it, not load the cached one.
key_caches_on(
    (encode_scanned, _encode_block, _long_piece, build_seed, *ENCODE_SCANNED),
    (*KERNEL_SOURCES, _merge, _tables, _chars, _prefetch_module, unchecked),
)
