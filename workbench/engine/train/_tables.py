"""The merge loop's tables: growing arrays, tokens (bytes, hashes, byte-order keys), the pair
table and the word lists of each pair. Small kernels, most inlined into `_kernels`; see `_state`
for the layout."""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit
from workbench.engine.train._state import (
    B_FILL,
    B_NEXT,
    B_WORDS,
    BLOCK,
    HASH_BASE,
    HF,
    L_HEAD,
    L_LAST,
    L_TAIL,
    MIX,
    P_CNT,
    P_KEY,
    P_LIST,
    P_STAMP,
    S_ARENA,
    S_FREE,
    S_LONG,
    S_NBLOCKS,
    S_NLISTS,
    S_NPAIRS,
    S_NPBLK,
    S_NTOK,
    S_STEP,
    SIGN,
    TAG_MIX,
)

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
def _grow_rows(a, used, need, factor=2.0):
    """`a` with room for `need` rows (times `factor` its rows at least), keeping the first
    `used`."""
    if need <= a.shape[0]:
        return a
    out = np.empty((max(need, int(factor * a.shape[0])), a.shape[1]), dtype=a.dtype)
    for i in range(used):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]
    return out


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


@njit(inline="always")  # in `run_merges` and `_given_merges._file_tokens`, as `_merge_pair`
def _add_token(left, right, h, tok_off, tok_len, tok_hash, tok_key, arena, tt, scal):
    """File token S_NTOK as the bytes of `left` + `right` (hash `h`) in every token table.
    Returns the arrays that may have grown (tok_off, tok_len, tok_hash, tok_key, arena, tt)."""
    new = scal[S_NTOK]
    size = tok_len[left] + tok_len[right]
    tok_off = _grow(tok_off, new + 1)
    tok_hash = _grow(tok_hash, new + 1)
    tok_key = _grow(tok_key, new + 1)
    tok_len = _grow(tok_len, new + 1)
    arena = _grow(arena, scal[S_ARENA] + size)
    start = scal[S_ARENA]
    for i in range(tok_len[left]):
        arena[start + i] = arena[tok_off[left] + i]
    for i in range(tok_len[right]):
        arena[start + tok_len[left] + i] = arena[tok_off[right] + i]
    tok_off[new] = start
    tok_len[new] = size
    tok_hash[new] = h
    tok_key[new] = _lex_key(new, tok_off, tok_len, arena)
    scal[S_ARENA] = start + size
    scal[S_NTOK] = new + 1
    if 2 * (new + 1) > tt.size:  # the token table stays at most half full
        tt = np.empty(2 * tt.size, dtype=np.int32)
        for t in range(tt.size):
            tt[t] = -1
        for t in range(new + 1):
            _tt_insert(tt, t, tok_hash[t])
    else:
        _tt_insert(tt, new, h)
    return tok_off, tok_len, tok_hash, tok_key, arena, tt


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
def _reserve(n, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scal):
    """Room for what merging (or counting) one word of n symbols can add: at most n pairs
    gain count (two per occurrence, at most n/2 occurrences), so at most n new pairs, n new
    lists, 2n new blocks (a list's first block, an overflow block per append) and n touched;
    with long words, a position-list row per pair and n position blocks (one per gain)."""
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
    if scal[S_LONG] != 0:
        old = pp.shape[0]
        if old < pr.shape[0]:
            pp = _grow_rows(pp, old, pr.shape[0])
            for i in range(old, pp.shape[0]):
                pp[i, 0] = -1
                pp[i, 1] = -1
        # By half, not double: position blocks are most of a long word's memory, and the old
        # copy is alive while the new one fills (at 50 MB of one word, 245 + 490 MB).
        pblk = _grow_rows(pblk, scal[S_NPBLK], scal[S_NPBLK] + n, 1.5)
    return pr, tie_stamp, ph, lst, blk, touched, pp, pblk


@njit(inline="always")
def _needs_room(n, pr, ph, lst, blk, touched, pp, pblk, scal):
    """Whether `_reserve(n, ...)` would grow anything: the cheap check made per word."""
    need = scal[S_NPAIRS] + n
    return (
        need > pr.shape[0]
        or 3 * need > 2 * ph.shape[0]
        or scal[S_NLISTS] + n > lst.shape[0]
        or scal[S_NBLOCKS] + 2 * n > blk.shape[0]
        or touched[0] + n + 1 > touched.size
        or (scal[S_LONG] != 0 and (need > pp.shape[0] or scal[S_NPBLK] + n > pblk.shape[0]))
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
    """Add `delta` > 0 to the count of (a, b) and remember word w under the pair; its id."""
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
    return p
