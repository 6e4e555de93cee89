"""Numba kernels of the BPE merge loop (private: `trainer.py` owns the state and calls them).

The data, all numpy arrays. Whatever one step reads about one thing sits in one row of a 2-D
array, so a random access costs one cache miss rather than one per field: late in training the
loop is bound by memory latency, not arithmetic.
- words: unique pre-tokens as token ids in `wsym`; row w of `wrec` is (offset, length, count):
  word w is `wsym[off:off + len]`, shrinks in place as merges happen, and occurs `count` times.
- tokens: bytes in one arena (`tok_off`, `tok_len`), a rolling hash per token, an
  open-addressing table `tt` so a merge whose bytes already exist reuses that token's id, and
  `tok_key`, a 64-bit key per token that orders tokens like their bytes (see `_lex_key`).
- pairs: dense pair ids; row p of `pr` is (packed key `left << 32 | right`, live count, word
  list, step stamp). `ph` is an open-addressing table of (tag, pair id) rows, 8 bytes each: the
  tag (32 other bits of the key's hash) settles a probe without reading the pair's row but
  once in 4 billion; the row is read on a match, where the caller reads it anyway. (Keys in
  the table took 16-byte rows: 17 MB of a 1 GB run's peak.) Pair ids never move, so heap
  entries may hold them across a resize.
- word lists: which words hold a pair, as chained blocks: row b of `blk` is (next block, fill,
  up to `BLOCK` words); row l of `lst` is (head block, tail block, last word appended). Stale
  entries are fine: merging a word that no longer holds the pair changes nothing.
- a lazy 4-ary max-heap: row i of `hp` is (count, tie key 1, tie key 2, pair << 32 | list). An
  entry whose count is not the pair's live count is stale: it is re-pushed with the live count
  when it reaches the top, never trusted. The tie keys are fixed when an entry is pushed, so a
  comparison reads nothing outside the heap but in rare cases (see `_beats`).

Capacities grow as needed, checked once per word against what that word can add, so nothing is
allocated per merge and nothing is sized for the worst case up front.

Helpers on the hot path are `inline="always"` (inlined in Numba's IR): called as functions,
each array argument costs an atomic incref/decref pair per call, which took a third of the
merge loop's time before. For the same reason the loops that run per word or per heap entry
are functions compiled without reference counting (`njit_borrowing`): they allocate nothing, and
when an array must grow they return where they stopped; the entry points grow it and call again.

Tie-breaks (`mode`): LEX takes the greatest (left bytes, right bytes) among equal counts (the
CS336 reference); HF takes the smallest (left id, right id) in Hugging Face's id order, where
bytes are ordered by their GPT-2 mapped character and merged tokens by creation.

HF mode reproduces Hugging Face's BpeTrainer bookkeeping, quirks included, so its merges are
identical even when two merge paths make the same bytes: every merge step gives each pair that
gained count a new entry holding only that step's words, the merged pair's own count is not
cleared, and stale entries are re-pushed even at count 0. LEX mode keeps one word list per pair
and exact live counts (the merged pair drops to 0), which is what a naive recount would give.

`scal` holds the mutable scalars (see the S_* indices) so the kernels can update them in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from workbench.engine._native.numba_config import njit, njit_borrowing


class TrainState(NamedTuple):
    """Every array of the merge loop, passed to the kernels as one value. A kernel that grows an
    array returns a new TrainState holding the grown one (tuples are immutable)."""

    wsym: np.ndarray  # int32: word symbols
    wrec: np.ndarray  # int64 rows (offset, length, count, -)
    tok_off: np.ndarray  # int64: token -> arena offset
    tok_len: np.ndarray  # int32: token -> byte length
    tok_hash: np.ndarray  # int64: rolling hash of the token's bytes
    tok_key: np.ndarray  # int64: byte-order key (see _lex_key)
    arena: np.ndarray  # uint8: token bytes
    tt: np.ndarray  # int32: open-addressing table of tokens by hash
    pr: np.ndarray  # int64 rows (key, count, list, stamp)
    tie_stamp: np.ndarray  # int32: per pair, last tie count that saw it
    ph: np.ndarray  # int32 rows (key tag, pair id)
    lst: np.ndarray  # int32 rows (head, tail, last word)
    blk: np.ndarray  # int32 rows (next, fill, words...)
    hp: np.ndarray  # int64 rows (count, tie key 1, tie key 2, pair << 32 | list)
    touched: np.ndarray  # int32: [count, pair ids...] touched by this step
    tie_stack: np.ndarray  # int64: DFS stack of _count_ties
    scal: np.ndarray  # int64: the S_* scalars
    hf_order: np.ndarray  # int64: HF's order of the 256 bytes


class MergeEvents(NamedTuple):
    """Output rows of `run_merges`, one per merge made (sized by the caller)."""

    left: np.ndarray  # int32
    right: np.ndarray  # int32
    new: np.ndarray  # int32
    count: np.ndarray  # int64
    is_new: np.ndarray  # bool
    ties: np.ndarray  # int64
    tokens: np.ndarray  # int64


LEX = 0
HF = 1

BLOCK = 6  # words per word-list block; most pairs live in one or two words
# Symbols of one word handled per capacity check. Room is reserved for what a span can add, so
# a long word (a run of one character: 16 MB of `a` is one 16M-symbol word) must not reserve
# for all of its symbols at once: that took gigabytes for pairs it never makes.
SPAN = 1 << 16

# columns of the 2-D state arrays
W_OFF, W_LEN, W_COUNT = 0, 1, 2  # wrec (int64, 4 columns: 32-byte rows)
P_KEY, P_CNT, P_LIST, P_STAMP = 0, 1, 2, 3  # pr (int64)
H_CNT, H_K1, H_K2, H_REF = 0, 1, 2, 3  # hp (int64)
L_HEAD, L_TAIL, L_LAST = 0, 1, 2  # lst (int32, 4 columns)
B_NEXT, B_FILL, B_WORDS = 0, 1, 2  # blk (int32, 2 + BLOCK = 8 columns: 32-byte rows)
ARITY = 4  # heap fan-out: half the depth of a binary heap, children in one or two cache lines
TIE_STACK = 256  # DFS stack of _count_ties: 3 per level of a 4-ary heap, 2^64 entries fit

# scal indices
S_NTOK = 0  # tokens so far (256 bytes + distinct merged tokens)
S_NPAIRS = 1
S_NLISTS = 2
S_NBLOCKS = 3
S_NHEAP = 4
S_STEP = 5  # merge steps so far; stamps which pairs a step touched
S_TOKENS = 6  # tokens the corpus takes now (count-weighted)
S_ARENA = 7  # bytes used in the token arena
S_FREE = 8  # first block of the free list (-1: none): blocks of merged pairs' word lists
N_SCAL = 9

# status codes of run_merges
RUNNING = 0
VOCAB_REACHED = 1
NO_PAIRS = 2
BELOW_MIN_FREQUENCY = 3
# Not a stop: tables grew in the last merge, and the caller hands the memory their old copies
# held back to the system (see `native_memory`) before it calls again.
TABLES_GREW = 4

HASH_BASE = 1099511628211  # FNV prime: rolling hash of token bytes
MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: spreads keys over the tables
TAG_MIX = -4658895280553007687  # 0xBF58476D1CE4E5B9 as int64: the key tags in `ph` (`_tag`)
SIGN = -9223372036854775808  # flips the top bit: unsigned order as signed int64 order


# ---------------------------------------------------------------------------------------------
# small helpers


@njit
def _grow(a, need):
    """`a`, or a copy with room for at least `need` items (doubling) when it is too small."""
    if need <= a.size:
        return a
    out = np.empty(max(need, 2 * a.size), dtype=a.dtype)
    for i in range(a.size):  # loops, not slice assignment: those take seconds to compile
        out[i] = a[i]
    return out


@njit
def _grow_rows(a, used, need):
    """`a` with room for `need` rows (doubling), keeping the first `used`."""
    if need <= a.shape[0]:
        return a
    out = np.empty((max(need, 2 * a.shape[0]), a.shape[1]), dtype=a.dtype)
    for i in range(used):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]
    return out


@intrinsic
def _prefetch(typingctx, array, index):
    """Start loading the cache line of `array`'s item `index` (in C order) into the cache; a
    hint that changes no result. The word pass visits words in list order, scattered over the
    word table: asking for the next words while merging this one overlaps their cache misses,
    which were a third of the pass."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0"
        )
        address = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        builder.call(fn, [address, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.none(array, index), codegen


@njit(inline="always")
def _slot(key, mask):
    return ((key * MIX) >> 24) & mask


@njit
def _pow_base(n):
    result = np.int64(1)
    base = np.int64(HASH_BASE)
    while n > 0:
        if n & 1:
            result = result * base
        base = base * base
        n >>= 1
    return result


@njit
def _next_pow2(n):
    size = 1024
    while size < n:
        size *= 2
    return size


# ---------------------------------------------------------------------------------------------
# tokens


@njit(inline="always")
def _token_cmp(a, b, tok_off, tok_len, arena):
    """-1, 0, 1 as bytes(a) <, ==, > bytes(b) (a shorter prefix is smaller, as Python's bytes)."""
    if a == b:
        return 0
    oa = tok_off[a]
    ob = tok_off[b]
    la = tok_len[a]
    lb = tok_len[b]
    for i in range(min(la, lb)):
        x = arena[oa + i]
        y = arena[ob + i]
        if x != y:
            return 1 if x > y else -1
    if la == lb:
        return 0
    return 1 if la > lb else -1


@njit
def _find_concat(left, right, h, tt, tok_off, tok_len, tok_hash, arena):
    """The token whose bytes are bytes(left) + bytes(right), or -1."""
    mask = tt.size - 1
    total = tok_len[left] + tok_len[right]
    i = _slot(h, mask)
    while tt[i] != -1:
        t = tt[i]
        if tok_hash[t] == h and tok_len[t] == total:
            o = tok_off[t]
            same = True
            ol = tok_off[left]
            nl = tok_len[left]
            for k in range(nl):
                if arena[o + k] != arena[ol + k]:
                    same = False
                    break
            if same:
                orr = tok_off[right]
                for k in range(tok_len[right]):
                    if arena[o + nl + k] != arena[orr + k]:
                        same = False
                        break
            if same:
                return t
        i = (i + 1) & mask
    return -1


@njit
def _tt_insert(tt, t, h):
    mask = tt.size - 1
    i = _slot(h, mask)
    while tt[i] != -1:
        i = (i + 1) & mask
    tt[i] = t


@njit
def _lex_key(t, tok_off, tok_len, arena):
    """A 64-bit key ordered like token t's bytes: the first 7 bytes (zero-padded), then
    min(length, 8). Keys differ -> the bytes compare the same way (a shorter prefix is
    smaller, the length byte settles it); keys equal and length byte < 8 -> the same bytes,
    so the same token; both 8 -> at least 8 bytes each, same first 7: compare the bytes."""
    n = tok_len[t]
    o = tok_off[t]
    key = np.int64(0)
    for i in range(7):
        key = key << 8
        if i < n:
            key |= np.int64(arena[o + i])
    key = (key << 8) | min(n, 8)
    return key ^ SIGN


# ---------------------------------------------------------------------------------------------
# pairs and word lists


@njit(inline="always")
def _tag(key):
    """32 bits of a second hash of the pair key (independent of the bits `_slot` takes): a slot
    of `ph` holds the tag, not the key, and the key is read from the pair's row only when the
    tag matches. Pair ids are int32 already (`touched`, heap references), so 8 bytes a slot."""
    return np.int32((key * TAG_MIX) >> 32)


@njit(inline="always")
def _pair_find(key, ph, pr):
    mask = ph.shape[0] - 1
    i = _slot(key, mask)
    tag = _tag(key)
    while True:
        p = ph[i, 1]
        if p == -1:
            return -1
        # The caller reads this pair's row next anyway: checking its key costs no cache miss.
        if ph[i, 0] == tag and pr[p, P_KEY] == key:
            return p
        i = (i + 1) & mask


@njit(inline="always")
def _pair_insert(key, ph, pr, scal):
    """Id of the pair `key`, adding it (count 0, no list) if new. Capacity is the caller's job."""
    mask = ph.shape[0] - 1
    i = _slot(key, mask)
    tag = _tag(key)
    while True:
        p = ph[i, 1]
        if p == -1:
            p = scal[S_NPAIRS]
            scal[S_NPAIRS] += 1
            ph[i, 0] = tag
            ph[i, 1] = p
            pr[p, P_KEY] = key
            pr[p, P_CNT] = 0
            pr[p, P_LIST] = -1
            pr[p, P_STAMP] = -1
            return p
        if ph[i, 0] == tag and pr[p, P_KEY] == key:
            return p
        i = (i + 1) & mask


@njit
def _rehash_pairs(npairs, pr, size):
    ph = np.empty((size, 2), dtype=np.int32)
    for i in range(size):
        ph[i, 1] = -1
    mask = size - 1
    for p in range(npairs):
        key = pr[p, P_KEY]
        i = _slot(key, mask)
        while ph[i, 1] != -1:
            i = (i + 1) & mask
        ph[i, 0] = _tag(key)
        ph[i, 1] = p
    return ph


@njit
def _reserve(n, pr, tie_stamp, ph, lst, blk, touched, scal):
    """Room for what merging (or counting) one word of n symbols can add: at most n pairs
    gain count (two per occurrence, at most n/2 occurrences), so at most n new pairs, n new
    lists, 2n new blocks (a list's first block, an overflow block per append) and n touched."""
    npairs = scal[S_NPAIRS]
    need = npairs + n
    if need > pr.shape[0]:
        pr = _grow_rows(pr, npairs, need)
        old = tie_stamp.size
        tie_stamp = _grow(tie_stamp, pr.shape[0])
        for i in range(old, tie_stamp.size):  # here, not in _add_pair: one array fewer there
            tie_stamp[i] = -1
    # Load factor at most 2/3: at 1/2 the table was a tenth of a 1 GB run's peak memory, and
    # a probe still reads one or two cache lines (four rows each); no slower, measured.
    if 3 * need > 2 * ph.shape[0]:
        ph = _rehash_pairs(npairs, pr, _next_pow2(2 * need + 1))  # 1/4 to 1/2 full
    lst = _grow_rows(lst, scal[S_NLISTS], scal[S_NLISTS] + n)
    blk = _grow_rows(blk, scal[S_NBLOCKS], scal[S_NBLOCKS] + 2 * n)
    touched = _grow(touched, touched[0] + n + 1)
    return pr, tie_stamp, ph, lst, blk, touched


@njit(inline="always")
def _needs_room(n, pr, ph, lst, blk, touched, scal):
    """Whether `_reserve(n, ...)` would grow anything: the cheap check made per word."""
    need = scal[S_NPAIRS] + n
    return (
        need > pr.shape[0]
        or 3 * need > 2 * ph.shape[0]
        or scal[S_NLISTS] + n > lst.shape[0]
        or scal[S_NBLOCKS] + 2 * n > blk.shape[0]
        or touched[0] + n + 1 > touched.size
    )


@njit(inline="always")
def _new_block(blk, scal):
    """An empty block, last of its list: a freed one if any (see `_empty_list`), else the next
    unused row. `_reserve` counts every block as a new row, so there is room either way."""
    b = scal[S_FREE]
    if b != -1:
        scal[S_FREE] = blk[b, B_NEXT]
    else:
        b = scal[S_NBLOCKS]
        scal[S_NBLOCKS] += 1
    blk[b, B_NEXT] = -1
    blk[b, B_FILL] = 0
    return b


@njit(inline="always")
def _empty_list(lid, lst, blk, scal):
    """Empty a merged pair's word list, its blocks but the first to the free list: none of its
    words holds the pair any more. The pair can still form anew (a later merge may rebuild
    `right` from other parts, after a `left`), and then its list starts again from empty."""
    head = lst[lid, L_HEAD]
    rest = blk[head, B_NEXT]
    if rest != -1:
        blk[lst[lid, L_TAIL], B_NEXT] = scal[S_FREE]
        scal[S_FREE] = rest
    blk[head, B_NEXT] = -1
    blk[head, B_FILL] = 0
    lst[lid, L_TAIL] = head
    lst[lid, L_LAST] = -1


@njit(inline="always")
def _new_list(lst, blk, scal):
    b = _new_block(blk, scal)
    lid = scal[S_NLISTS]
    scal[S_NLISTS] += 1
    lst[lid, L_HEAD] = b
    lst[lid, L_TAIL] = b
    lst[lid, L_LAST] = -1
    return lid


@njit(inline="always")
def _list_append(lid, w, lst, blk, scal):
    if lst[lid, L_LAST] == w:  # the same word twice in a row: once is enough
        return
    lst[lid, L_LAST] = w
    b = lst[lid, L_TAIL]
    f = blk[b, B_FILL]
    if f == BLOCK:
        nb = _new_block(blk, scal)
        blk[b, B_NEXT] = nb
        lst[lid, L_TAIL] = nb
        b = nb
        f = 0
    blk[b, B_WORDS + f] = w
    blk[b, B_FILL] = f + 1


@njit(inline="always")
def _drop_pair(a, b, c, ph, pr):
    """Take c from the count of the pair (a, b), which exists."""
    pr[_pair_find((np.int64(a) << 32) | np.int64(b), ph, pr), P_CNT] -= c


@njit(inline="always")
def _add_pair(a, b, delta, w, mode, ph, pr, touched, lst, blk, scal):
    """Add `delta` > 0 to the count of (a, b) and remember word w under the pair."""
    key = (np.int64(a) << 32) | np.int64(b)
    p = _pair_insert(key, ph, pr, scal)
    pr[p, P_CNT] += delta
    step = scal[S_STEP]
    fresh = False
    if pr[p, P_STAMP] != step:
        pr[p, P_STAMP] = step
        touched[0] += 1
        touched[touched[0]] = p
        fresh = mode == HF  # HF: a fresh word set for every step in which the pair gains
    if fresh or pr[p, P_LIST] == -1:  # LEX: one list per pair, made on its first gain
        pr[p, P_LIST] = _new_list(lst, blk, scal)  # one inlined copy, not two
    _list_append(pr[p, P_LIST], w, lst, blk, scal)


# ---------------------------------------------------------------------------------------------
# the heap


@njit(inline="always")
def _tie_keys(key, mode, tok_key, hf_order):
    """The two tie keys of pair `key`: the greater wins among equal counts. LEX: the tokens'
    byte-order keys. HF: the smallest (left, right) in HF's id order wins, so one key, negated."""
    left = key >> 32
    right = key & 0xFFFFFFFF
    if mode == HF:
        a = hf_order[left] if left < 256 else left
        b = hf_order[right] if right < 256 else right
        return -((a << 32) | b), np.int64(0)
    return tok_key[left], tok_key[right]


@njit(inline="always")
def _beats(c, k1, k2, ref, hp, j, mode, pr, tok_off, tok_len, arena):
    """Whether the entry (c, k1, k2, ref) belongs above heap row j."""
    cj = hp[j, H_CNT]
    if c != cj:
        return c > cj
    kj = hp[j, H_K1]
    if k1 != kj:
        return k1 > kj
    if mode == LEX and (k1 & 0xFF) == 8:  # both lefts long, same first 7 bytes: look further
        ki = pr[ref >> 32, P_KEY]
        kk = pr[hp[j, H_REF] >> 32, P_KEY]
        d = _token_cmp(ki >> 32, kk >> 32, tok_off, tok_len, arena)
        if d != 0:
            return d > 0
    kj = hp[j, H_K2]
    if k2 != kj:
        return k2 > kj
    if mode == LEX and (k2 & 0xFF) == 8:
        ki = pr[ref >> 32, P_KEY]
        kk = pr[hp[j, H_REF] >> 32, P_KEY]
        return _token_cmp(ki & 0xFFFFFFFF, kk & 0xFFFFFFFF, tok_off, tok_len, arena) > 0
    return False


@njit(inline="always")  # one copy, in `_heap_top`
def _sift_down(i, hp, n, mode, pr, tok_off, tok_len, arena):
    """Move heap row i down to its place in a heap of n rows."""
    while True:
        first = ARITY * i + 1
        if first >= n:
            return
        best = i
        for ch in range(first, min(first + ARITY, n)):
            if _beats(
                hp[ch, H_CNT], hp[ch, H_K1], hp[ch, H_K2], hp[ch, H_REF], hp, best, mode, pr,
                tok_off, tok_len, arena,
            ):  # fmt: skip
                best = ch
        if best == i:
            return
        for col in range(4):
            hp[i, col], hp[best, col] = hp[best, col], hp[i, col]
        i = best


@njit(inline="always")
def _heap_push(c, key, ref, hp, scal, mode, pr, tok_key, hf_order, tok_off, tok_len, arena):
    """Push an entry for pair `key` with count c (capacity is the caller's job)."""
    k1, k2 = _tie_keys(key, mode, tok_key, hf_order)
    i = scal[S_NHEAP]
    scal[S_NHEAP] = i + 1
    while i > 0:  # move parents down into the hole until the new entry fits
        parent = (i - 1) // ARITY
        if not _beats(c, k1, k2, ref, hp, parent, mode, pr, tok_off, tok_len, arena):
            break
        for col in range(4):
            hp[i, col] = hp[parent, col]
        i = parent
    hp[i, H_CNT] = c
    hp[i, H_K1] = k1
    hp[i, H_K2] = k2
    hp[i, H_REF] = ref


@njit_borrowing  # a call, twice per merge: inlined, its copies took seconds to compile
def _heap_top(hp, scal, mode, pr, tok_off, tok_len, arena, pop):
    """`pop`: remove the top entry (read it from row 0 first). Else bring a live entry to the
    top, or empty the heap: a stale entry gets its live count and sinks (the same as popping it
    and pushing it back, in one pass), or is dropped when the pair is gone (LEX). One function
    with one copy of `_sift_down` for both jobs keeps the compile time down."""
    settle = not pop
    while scal[S_NHEAP] > 0:
        if pop:  # the last entry moves up and sinks
            n = scal[S_NHEAP] - 1
            scal[S_NHEAP] = n
            if n == 0:
                return
            for col in range(4):
                hp[0, col] = hp[n, col]
        else:
            live = pr[hp[0, H_REF] >> 32, P_CNT]
            if hp[0, H_CNT] == live:
                return
            if mode != HF and live <= 0:  # HF re-pushes even at 0; the result is the same
                pop = True
                continue
            hp[0, H_CNT] = live
        _sift_down(0, hp, scal[S_NHEAP], mode, pr, tok_off, tok_len, arena)
        if not settle:
            return
        pop = False


@njit_borrowing  # once per merge: a call costs nothing there
def _count_ties(hp, pr, scal, tie_stamp, stamp, limit, stack):
    """Other pairs whose live count equals the top's: they sit in the subtree of equal counts
    hanging from the root, since no entry is above a smaller count. The figure is
    min(such pairs, limit) whatever the heap's shape or the order of the walk."""
    n = scal[S_NHEAP]
    top = hp[0, H_CNT]
    stack[0] = 0
    depth = 1
    found = 0
    while depth > 0 and found <= limit:  # past the limit the figure reads "limit or more"
        depth -= 1
        i = stack[depth]
        p = hp[i, H_REF] >> 32
        if pr[p, P_CNT] == top and tie_stamp[p] != stamp:
            tie_stamp[p] = stamp
            found += 1
        first = ARITY * i + 1
        for ch in range(first, min(first + ARITY, n)):
            if hp[ch, H_CNT] == top:  # at most ARITY - 1 more per level: TIE_STACK is plenty
                stack[depth] = ch
                depth += 1
    return min(max(found - 1, 0), limit)


# ---------------------------------------------------------------------------------------------
# merging in one word


@njit(inline="always")
def _merge_span(w, r, o, stop, left, right, new, mode, wsym, wrec, ph, pr, touched, lst, blk, scal):
    """Replace every (left, right) in word w, left to right, by `new`, reading from symbol r
    (writing at o <= r) until r reaches `stop`; update the neighbours' pair counts. Returns
    (r, o, replacements): call again from there until r reaches the word's length, then store
    o as its new length. A span of k symbols adds at most k pairs (see `_reserve`).

    Subtle: `aaa` holds the pair (a, a) twice but merges once, to `aa a`: the second (a, a) is
    lost as the right neighbour of the first replacement, which the -c below accounts for.
    """
    base = wrec[w, W_OFF]
    n = wrec[w, W_LEN]
    c = wrec[w, W_COUNT]
    merged = 0
    while r < stop:
        s = wsym[base + r]
        if s == left and r + 1 < n and wsym[base + r + 1] == right:
            # The left neighbour's pair, then the right one's, through one call site each:
            # every inlined copy of the helpers costs compile time on a first start.
            for side in range(2):
                if side == 0:
                    if o == 0:
                        continue
                    a = wsym[base + o - 1]
                    a0, b0, a1, b1 = a, left, a, new
                else:
                    if r + 2 >= n:
                        continue
                    b = wsym[base + r + 2]
                    a0, b0, a1, b1 = right, b, new, b
                _drop_pair(a0, b0, c, ph, pr)
                _add_pair(a1, b1, c, w, mode, ph, pr, touched, lst, blk, scal)
            wsym[base + o] = new
            o += 1
            r += 2
            merged += 1
        else:
            wsym[base + o] = s
            o += 1
            r += 1
    return r, o, merged


@njit_borrowing  # a call, once per merge
def _merge_words(b, k, r, o, left, right, new, mode, wsym, wrec, ph, pr, touched, lst, blk, scal):
    """Merge (left, right) into `new` in the words of a word list, from item k of block b (and
    symbol r of that word, written up to o). Returns (b, k, r, o, weighted replacements, room):
    room 0 when the list is done; else the pass stopped where an array must first grow by
    `_reserve(room, ...)`, and a call with the returned position goes on from there.

    The capacity check is per span of a word (see SPAN): the arrays grow with what merges make,
    never for the worst case. Growing rebinds arrays, which only the caller does: here the arrays
    are borrowed (`njit_borrowing`), so the loop pays no atomic reference counting per word.
    The words of a list lie scattered over the word table: rows are asked for a block ahead and
    symbols a word ahead (`_prefetch`), so their cache misses overlap."""
    merged_weighted = 0
    if b != -1:  # the first block's rows; later blocks' are asked for a block ahead
        for j in range(k, blk[b, B_FILL]):
            _prefetch(wrec, blk[b, B_WORDS + j] * wrec.shape[1])
    while b != -1:
        # This list never gains words here (no new pair is (left, right): `new` is longer than
        # both), so its fill is read once per block.
        fill = blk[b, B_FILL]
        nb = blk[b, B_NEXT]
        if nb != -1:  # a block ahead: its words' rows, and the row of the block after it
            for j in range(blk[nb, B_FILL]):
                _prefetch(wrec, blk[nb, B_WORDS + j] * wrec.shape[1])
            nnb = blk[nb, B_NEXT]
            if nnb != -1:
                _prefetch(blk, nnb * blk.shape[1])
        while k < fill:
            w = blk[b, B_WORDS + k]
            if k + 1 < fill:  # the next word's symbols load while this one merges
                _prefetch(wsym, wrec[blk[b, B_WORDS + k + 1], W_OFF])
            elif nb != -1 and blk[nb, B_FILL] > 0:  # (blocks are filled as made: a guard)
                _prefetch(wsym, wrec[blk[nb, B_WORDS], W_OFF])
            n = wrec[w, W_LEN]
            while r < n:  # one span of a long word at a time: capacity grows with use
                stop = min(r + SPAN, n)
                if _needs_room(stop - r, pr, ph, lst, blk, touched, scal):
                    return b, k, r, o, merged_weighted, stop - r
                r, o, m = _merge_span(
                    w, r, o, stop, left, right, new, mode, wsym, wrec, ph, pr, touched, lst, blk,
                    scal,
                )  # fmt: skip
                merged_weighted += m * wrec[w, W_COUNT]
            wrec[w, W_LEN] = o
            r = 0
            o = 0
            k += 1
        b = blk[b, B_NEXT]
        k = 0
    return b, k, r, o, merged_weighted, 0


# ---------------------------------------------------------------------------------------------
# the two entry points


@njit_borrowing  # no refcounts in the loop, as `_merge_words`
def _index_words(w, first, wsym, wrec, mode, ph, pr, touched, lst, blk, scal):
    """Count and index the pairs of words w, w + 1, ... from symbol `first` of word w. Returns
    (w, first, room): room 0 when every word is done; else the pass stopped where an array must
    first grow by `_reserve(room, ...)`, and a call with the returned w, first goes on."""
    while w < wrec.shape[0]:
        base = wrec[w, W_OFF]
        n = wrec[w, W_LEN]
        c = wrec[w, W_COUNT]
        while first < n - 1:  # a span at a time, as the merge pass
            last = min(first + SPAN, n - 1)
            if _needs_room(last - first, pr, ph, lst, blk, touched, scal):
                return w, first, last - first
            for i in range(first, last):
                _add_pair(
                    wsym[base + i], wsym[base + i + 1], c, w, mode, ph, pr, touched, lst, blk,
                    scal,
                )  # fmt: skip
            first = last
        w += 1
        first = 0
    return w, first, 0


@njit_borrowing
def _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena):
    """An entry for every pair the step gave count, with its live count (`hp` has room for
    touched[0] more)."""
    for i in range(1, touched[0] + 1):
        q = touched[i]
        c = pr[q, P_CNT]
        if c > 0:
            ref = (np.int64(q) << 32) | pr[q, P_LIST]
            _heap_push(
                c, pr[q, P_KEY], ref, hp, scal, mode, pr, tok_key, hf_order, tok_off, tok_len,
                arena,
            )  # fmt: skip


@njit
def init_pairs(state, mode):
    """Count every adjacent pair of every word (weighted by the word's count), index the words
    that hold each pair, and push one heap entry per pair. Also files the 256 single bytes in
    the token table `tt` and gives them their tie keys. Returns the state with grown arrays."""
    wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt = state[:8]
    pr, tie_stamp, ph, lst, blk, hp, touched, tie_stack, scal, hf_order = state[8:]
    for t in range(256):
        _tt_insert(tt, t, tok_hash[t])
        tok_key[t] = _lex_key(t, tok_off, tok_len, arena)
    scal[S_STEP] = 0
    touched[0] = 0
    w = first = np.int64(0)
    while True:  # a pass stops early only when an array must grow: grow it, go on
        w, first, room = _index_words(w, first, wsym, wrec, mode, ph, pr, touched, lst, blk, scal)
        if room == 0:
            break
        pr, tie_stamp, ph, lst, blk, touched = _reserve(
            room, pr, tie_stamp, ph, lst, blk, touched, scal
        )
    hp = _grow_rows(hp, scal[S_NHEAP], scal[S_NHEAP] + touched[0])
    _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena)
    return TrainState(
        wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt, pr, tie_stamp, ph, lst, blk,
        hp, touched, tie_stack, scal, hf_order,
    )  # fmt: skip


@njit
def run_merges(state, events, max_merges, target_tokens, min_frequency, mode, tie_limit):
    """Make up to `max_merges` merges, stopping early when the vocabulary has `target_tokens`
    tokens, no pair is left, or the best count is below `min_frequency`; merge i is row i of
    `events`.

    Returns (status, merges made, the state with every array that grew). Status TABLES_GREW:
    it returned after a merge that grew the pair tables, so their old copies can be freed.
    """
    wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt = state[:8]
    pr, tie_stamp, ph, lst, blk, hp, touched, tie_stack, scal, hf_order = state[8:]
    ev_left, ev_right, ev_new, ev_count, ev_isnew, ev_ties, ev_tokens = events
    status = RUNNING
    done = 0
    rows = pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0]  # only grow
    while done < max_merges:
        if scal[S_NTOK] >= target_tokens:
            status = VOCAB_REACHED
            break
        _heap_top(hp, scal, mode, pr, tok_off, tok_len, arena, False)  # a live entry on top
        if scal[S_NHEAP] == 0:
            status = NO_PAIRS
            break
        count = hp[0, H_CNT]
        if count < 1:
            status = NO_PAIRS
            break
        if count < min_frequency:
            status = BELOW_MIN_FREQUENCY
            break
        ties = 0
        if tie_limit > 0:
            ties = _count_ties(hp, pr, scal, tie_stamp, scal[S_STEP] + 1, tie_limit, tie_stack)
        ref = hp[0, H_REF]
        p = ref >> 32
        lid = ref & 0xFFFFFFFF
        _heap_top(hp, scal, mode, pr, tok_off, tok_len, arena, True)
        key = pr[p, P_KEY]
        left = key >> 32
        right = key & 0xFFFFFFFF

        # The merged token: an existing one with the same bytes, or a new id.
        h = tok_hash[left] * _pow_base(tok_len[right]) + tok_hash[right]
        new = _find_concat(left, right, h, tt, tok_off, tok_len, tok_hash, arena)
        is_new = new == -1
        if is_new:
            ntok = scal[S_NTOK]
            size = tok_len[left] + tok_len[right]
            tok_off = _grow(tok_off, ntok + 1)
            tok_hash = _grow(tok_hash, ntok + 1)
            tok_key = _grow(tok_key, ntok + 1)
            tok_len = _grow(tok_len, ntok + 1)
            arena = _grow(arena, scal[S_ARENA] + size)
            start = scal[S_ARENA]
            for i in range(tok_len[left]):
                arena[start + i] = arena[tok_off[left] + i]
            for i in range(tok_len[right]):
                arena[start + tok_len[left] + i] = arena[tok_off[right] + i]
            new = ntok
            tok_off[new] = start
            tok_len[new] = size
            tok_hash[new] = h
            tok_key[new] = _lex_key(new, tok_off, tok_len, arena)
            scal[S_ARENA] = start + size
            scal[S_NTOK] = ntok + 1
            if 2 * (ntok + 1) > tt.size:
                tt = np.empty(2 * tt.size, dtype=np.int32)
                for t in range(tt.size):
                    tt[t] = -1
                for t in range(ntok + 1):
                    _tt_insert(tt, t, tok_hash[t])
            else:
                _tt_insert(tt, new, h)

        scal[S_STEP] += 1
        touched[0] = 0
        merged_weighted = 0
        b = lst[lid, L_HEAD]
        k = r = o = np.int64(0)
        while True:  # a pass stops early only when an array must grow: grow it, go on
            b, k, r, o, m, room = _merge_words(
                b, k, r, o, left, right, new, mode, wsym, wrec, ph, pr, touched, lst, blk, scal
            )
            merged_weighted += m
            if room == 0:
                break
            pr, tie_stamp, ph, lst, blk, touched = _reserve(
                room, pr, tie_stamp, ph, lst, blk, touched, scal
            )
        if mode != HF:
            pr[p, P_CNT] = 0  # every occurrence is gone: merged, or lost to an overlapping one
            # HF mode may pop a merged pair again (its count is not cleared): keep its list.
            _empty_list(lid, lst, blk, scal)
        hp = _grow_rows(hp, scal[S_NHEAP], scal[S_NHEAP] + touched[0])
        _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena)
        scal[S_TOKENS] -= merged_weighted

        ev_left[done] = left
        ev_right[done] = right
        ev_new[done] = new
        ev_count[done] = count
        ev_isnew[done] = is_new
        ev_ties[done] = ties
        ev_tokens[done] = scal[S_TOKENS]
        done += 1
        if pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0] != rows:
            status = TABLES_GREW
            break

    return status, done, TrainState(
        wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt, pr, tie_stamp, ph, lst, blk,
        hp, touched, tie_stack, scal, hf_order,
    )  # fmt: skip
