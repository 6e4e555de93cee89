"""Numba kernels of the BPE merge loop (private: `trainer.py` owns the state and calls them).

The data, all numpy arrays:
- words: unique pre-tokens as token ids in `wsym`; word w is `wsym[woff[w]:woff[w] + wlen[w]]`
  and shrinks in place as merges happen; `wcount[w]` is how often it occurs (int64).
- tokens: bytes in one arena (`tok_off`, `tok_len`), a rolling hash per token and an
  open-addressing table `tt` so a merge whose bytes already exist reuses that token's id.
- pairs: dense pair ids with packed keys `left << 32 | right` (`pkey`), live counts (`pcnt`) and
  an open-addressing table `ph` from key to pair id. Pair ids never move, so heap entries may
  hold them across a table resize.
- word lists: which words hold a pair, as chained blocks of `BLOCK` ints. Stale entries are fine:
  merging a word that no longer holds the pair changes nothing.
- a lazy max-heap of (count, pair, list) entries. An entry whose count is not the pair's live
  count is stale: it is re-pushed with the live count when it reaches the top, never trusted.

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

import numpy as np

from workbench.engine.numba_config import njit

LEX = 0
HF = 1

BLOCK = 6  # ints per word-list block; most pairs live in one or two words

# scal indices
S_NTOK = 0  # tokens so far (256 bytes + distinct merged tokens)
S_NPAIRS = 1
S_NLISTS = 2
S_NBLOCKS = 3
S_NHEAP = 4
S_STEP = 5  # merge steps so far; stamps which pairs a step touched
S_TOKENS = 6  # tokens the corpus takes now (count-weighted)
S_ARENA = 7  # bytes used in the token arena
N_SCAL = 8

# status codes of _run_merges
RUNNING = 0
VOCAB_REACHED = 1
NO_PAIRS = 2
BELOW_MIN_FREQUENCY = 3

HASH_BASE = 1099511628211  # FNV prime: rolling hash of token bytes
MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: spreads keys over the tables


# ---------------------------------------------------------------------------------------------
# small helpers


@njit
def _grow_i64(a, need):
    if need <= a.size:
        return a
    size = max(need, 2 * a.size)
    out = np.empty(size, dtype=np.int64)
    out[: a.size] = a
    return out


@njit
def _grow_i32(a, need):
    if need <= a.size:
        return a
    size = max(need, 2 * a.size)
    out = np.empty(size, dtype=np.int32)
    out[: a.size] = a
    return out


@njit
def _grow_u8(a, need):
    if need <= a.size:
        return a
    size = max(need, 2 * a.size)
    out = np.empty(size, dtype=np.uint8)
    out[: a.size] = a
    return out


@njit
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


# ---------------------------------------------------------------------------------------------
# tokens


@njit
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


# ---------------------------------------------------------------------------------------------
# pairs and word lists


@njit
def _pair_find(key, ph, pkey):
    mask = ph.size - 1
    i = _slot(key, mask)
    while True:
        p = ph[i]
        if p == -1 or pkey[p] == key:
            return p
        i = (i + 1) & mask


@njit
def _pair_insert(key, ph, pkey, pcnt, plist, pstamp, pstep_list, scal):
    """Id of the pair `key`, adding it (count 0, no list) if new. Capacity is the caller's job."""
    mask = ph.size - 1
    i = _slot(key, mask)
    while True:
        p = ph[i]
        if p == -1:
            p = scal[S_NPAIRS]
            scal[S_NPAIRS] += 1
            ph[i] = p
            pkey[p] = key
            pcnt[p] = 0
            plist[p] = -1
            pstamp[p] = -1
            pstep_list[p] = -1
            return p
        if pkey[p] == key:
            return p
        i = (i + 1) & mask


@njit
def _rehash_pairs(npairs, pkey, size):
    ph = np.full(size, -1, dtype=np.int32)
    mask = size - 1
    for p in range(npairs):
        i = _slot(pkey[p], mask)
        while ph[i] != -1:
            i = (i + 1) & mask
        ph[i] = p
    return ph


@njit
def _new_list(lst_head, lst_tail, lst_last, blk_next, blk_fill, scal):
    b = scal[S_NBLOCKS]
    scal[S_NBLOCKS] += 1
    blk_next[b] = -1
    blk_fill[b] = 0
    lid = scal[S_NLISTS]
    scal[S_NLISTS] += 1
    lst_head[lid] = b
    lst_tail[lid] = b
    lst_last[lid] = -1
    return lid


@njit
def _list_append(lid, w, lst_tail, lst_last, blk, blk_next, blk_fill, scal):
    if lst_last[lid] == w:  # the same word twice in a row: once is enough
        return
    lst_last[lid] = w
    b = lst_tail[lid]
    f = blk_fill[b]
    if f == BLOCK:
        nb = scal[S_NBLOCKS]
        scal[S_NBLOCKS] += 1
        blk_next[nb] = -1
        blk_fill[nb] = 0
        blk_next[b] = nb
        lst_tail[lid] = nb
        b = nb
        f = 0
    blk[b * BLOCK + f] = w
    blk_fill[b] = f + 1


@njit
def _add_pair(
    a, b, delta, w, mode, ph, pkey, pcnt, plist, pstamp, pstep_list, touched,
    lst_head, lst_tail, lst_last, blk, blk_next, blk_fill, scal,
):  # fmt: skip
    """Add `delta` to the count of (a, b); on a gain, remember word w under the pair."""
    key = (np.int64(a) << 32) | np.int64(b)
    if delta < 0:
        p = _pair_find(key, ph, pkey)
        pcnt[p] += delta
        return
    p = _pair_insert(key, ph, pkey, pcnt, plist, pstamp, pstep_list, scal)
    pcnt[p] += delta
    step = scal[S_STEP]
    if pstamp[p] != step:
        pstamp[p] = step
        touched[0] += 1
        touched[touched[0]] = p
        if mode == HF:  # HF: a fresh word set for every step in which the pair gains
            pstep_list[p] = _new_list(lst_head, lst_tail, lst_last, blk_next, blk_fill, scal)
    if mode == HF:
        lid = pstep_list[p]
    else:
        lid = plist[p]
        if lid == -1:
            lid = _new_list(lst_head, lst_tail, lst_last, blk_next, blk_fill, scal)
            plist[p] = lid
    _list_append(lid, w, lst_tail, lst_last, blk, blk_next, blk_fill, scal)


# ---------------------------------------------------------------------------------------------
# the heap


@njit
def _above(i, j, hcnt, hpair, pkey, mode, tok_off, tok_len, arena, hf_order):
    """Whether heap entry i belongs above entry j."""
    ci = hcnt[i]
    cj = hcnt[j]
    if ci != cj:
        return ci > cj
    pi = hpair[i]
    pj = hpair[j]
    if pi == pj:
        return False
    ki = pkey[pi]
    kj = pkey[pj]
    li = ki >> 32
    ri = ki & 0xFFFFFFFF
    lj = kj >> 32
    rj = kj & 0xFFFFFFFF
    if mode == HF:
        ai = hf_order[li] if li < 256 else li
        aj = hf_order[lj] if lj < 256 else lj
        if ai != aj:
            return ai < aj
        bi = hf_order[ri] if ri < 256 else ri
        bj = hf_order[rj] if rj < 256 else rj
        return bi < bj
    c = _token_cmp(li, lj, tok_off, tok_len, arena)
    if c != 0:
        return c > 0
    return _token_cmp(ri, rj, tok_off, tok_len, arena) > 0


@njit
def _heap_swap(i, j, hcnt, hpair, hlist):
    hcnt[i], hcnt[j] = hcnt[j], hcnt[i]
    hpair[i], hpair[j] = hpair[j], hpair[i]
    hlist[i], hlist[j] = hlist[j], hlist[i]


@njit
def _heap_push(c, p, lid, hcnt, hpair, hlist, scal, pkey, mode, tok_off, tok_len, arena, hf_order):
    i = scal[S_NHEAP]
    scal[S_NHEAP] += 1
    hcnt[i] = c
    hpair[i] = p
    hlist[i] = lid
    while i > 0:
        parent = (i - 1) >> 1
        if not _above(i, parent, hcnt, hpair, pkey, mode, tok_off, tok_len, arena, hf_order):
            break
        _heap_swap(i, parent, hcnt, hpair, hlist)
        i = parent


@njit
def _heap_pop(hcnt, hpair, hlist, scal, pkey, mode, tok_off, tok_len, arena, hf_order):
    """Remove the top entry (read it from index 0 first)."""
    n = scal[S_NHEAP] - 1
    scal[S_NHEAP] = n
    if n == 0:
        return
    hcnt[0] = hcnt[n]
    hpair[0] = hpair[n]
    hlist[0] = hlist[n]
    i = 0
    while True:
        best = i
        a = 2 * i + 1
        if a < n and _above(a, best, hcnt, hpair, pkey, mode, tok_off, tok_len, arena, hf_order):
            best = a
        b = a + 1
        if b < n and _above(b, best, hcnt, hpair, pkey, mode, tok_off, tok_len, arena, hf_order):
            best = b
        if best == i:
            return
        _heap_swap(i, best, hcnt, hpair, hlist)
        i = best


@njit
def _count_ties(hcnt, hpair, pcnt, scal, tie_stamp, stamp, limit):
    """Other pairs whose live count equals the top's: they sit in the subtree of equal counts
    hanging from the root, since no entry is above a smaller count."""
    n = scal[S_NHEAP]
    top = hcnt[0]
    stack = np.empty(64, dtype=np.int64)
    stack[0] = 0
    depth = 1
    found = 0
    while depth > 0 and found <= limit:  # past the limit the figure reads "limit or more"
        depth -= 1
        i = stack[depth]
        p = hpair[i]
        if pcnt[p] == top and tie_stamp[p] != stamp:
            tie_stamp[p] = stamp
            found += 1
        for child in (2 * i + 1, 2 * i + 2):
            if child < n and hcnt[child] == top:
                if depth == stack.size:
                    bigger = np.empty(2 * stack.size, dtype=np.int64)
                    bigger[:depth] = stack
                    stack = bigger
                stack[depth] = child
                depth += 1
    return min(max(found - 1, 0), limit)


# ---------------------------------------------------------------------------------------------
# merging in one word


@njit
def _merge_word(
    w, left, right, new, mode, wsym, woff, wlen, wcount, ph, pkey, pcnt, plist, pstamp,
    pstep_list, touched, lst_head, lst_tail, lst_last, blk, blk_next, blk_fill, scal,
):  # fmt: skip
    """Replace every (left, right) in word w, left to right, by `new`; update the neighbours'
    pair counts. Returns the number of replacements.

    Subtle: `aaa` holds the pair (a, a) twice but merges once, to `aa a`: the second (a, a) is
    lost as the right neighbour of the first replacement, which the -c below accounts for.
    """
    base = woff[w]
    n = wlen[w]
    c = wcount[w]
    r = 0
    o = 0
    merged = 0
    while r < n:
        s = wsym[base + r]
        if s == left and r + 1 < n and wsym[base + r + 1] == right:
            if o > 0:
                prev = wsym[base + o - 1]
                _add_pair(
                    prev,
                    left,
                    -c,
                    w,
                    mode,
                    ph,
                    pkey,
                    pcnt,
                    plist,
                    pstamp,
                    pstep_list,
                    touched,
                    lst_head,
                    lst_tail,
                    lst_last,
                    blk,
                    blk_next,
                    blk_fill,
                    scal,
                )
                _add_pair(
                    prev,
                    new,
                    c,
                    w,
                    mode,
                    ph,
                    pkey,
                    pcnt,
                    plist,
                    pstamp,
                    pstep_list,
                    touched,
                    lst_head,
                    lst_tail,
                    lst_last,
                    blk,
                    blk_next,
                    blk_fill,
                    scal,
                )
            if r + 2 < n:
                nxt = wsym[base + r + 2]
                _add_pair(
                    right,
                    nxt,
                    -c,
                    w,
                    mode,
                    ph,
                    pkey,
                    pcnt,
                    plist,
                    pstamp,
                    pstep_list,
                    touched,
                    lst_head,
                    lst_tail,
                    lst_last,
                    blk,
                    blk_next,
                    blk_fill,
                    scal,
                )
                _add_pair(
                    new,
                    nxt,
                    c,
                    w,
                    mode,
                    ph,
                    pkey,
                    pcnt,
                    plist,
                    pstamp,
                    pstep_list,
                    touched,
                    lst_head,
                    lst_tail,
                    lst_last,
                    blk,
                    blk_next,
                    blk_fill,
                    scal,
                )
            wsym[base + o] = new
            o += 1
            r += 2
            merged += 1
        else:
            wsym[base + o] = s
            o += 1
            r += 1
    wlen[w] = o
    return merged


# ---------------------------------------------------------------------------------------------
# the two entry points


@njit
def _list_symbols(lid, lst_head, blk, blk_next, blk_fill, wlen):
    """Symbols in the words of a list: a bound on the pairs one merge there can create."""
    total = 0
    b = lst_head[lid]
    while b != -1:
        for k in range(blk_fill[b]):
            total += wlen[blk[b * BLOCK + k]]
        b = blk_next[b]
    return total


@njit
def _next_pow2(n):
    size = 1024
    while size < n:
        size *= 2
    return size


@njit
def _init_pairs(
    mode, wsym, woff, wlen, wcount, ph, pkey, pcnt, plist, pstamp, pstep_list, touched,
    lst_head, lst_tail, lst_last, blk, blk_next, blk_fill, hcnt, hpair, hlist, scal,
    tok_off, tok_len, tok_hash, tt, arena, hf_order,
):  # fmt: skip
    """Count every adjacent pair of every word (weighted by the word's count), index the words
    that hold each pair, and push one heap entry per pair. Capacities are the caller's job.
    Also files the 256 single bytes in the token table `tt`."""
    for t in range(256):
        _tt_insert(tt, t, tok_hash[t])
    scal[S_STEP] = 0
    touched[0] = 0
    for w in range(wlen.size):
        base = woff[w]
        c = wcount[w]
        for i in range(wlen[w] - 1):
            _add_pair(
                wsym[base + i],
                wsym[base + i + 1],
                c,
                w,
                mode,
                ph,
                pkey,
                pcnt,
                plist,
                pstamp,
                pstep_list,
                touched,
                lst_head,
                lst_tail,
                lst_last,
                blk,
                blk_next,
                blk_fill,
                scal,
            )
    for i in range(1, touched[0] + 1):
        p = touched[i]
        lid = pstep_list[p] if mode == HF else plist[p]
        _heap_push(
            pcnt[p], p, lid, hcnt, hpair, hlist, scal, pkey, mode, tok_off, tok_len, arena, hf_order
        )


@njit
def _run_merges(
    max_merges, target_tokens, min_frequency, mode, tie_limit,
    wsym, woff, wlen, wcount,
    tok_off, tok_len, tok_hash, arena, tt,
    pkey, pcnt, plist, pstamp, pstep_list, tie_stamp, ph,
    lst_head, lst_tail, lst_last, blk, blk_next, blk_fill,
    hcnt, hpair, hlist, touched, scal, hf_order,
    ev_left, ev_right, ev_new, ev_count, ev_isnew, ev_ties, ev_tokens,
):  # fmt: skip
    """Make up to `max_merges` merges, stopping early when the vocabulary has `target_tokens`
    tokens, no pair is left, or the best count is below `min_frequency`.

    Returns (status, merges made, every array that may have been reallocated to grow)."""
    status = RUNNING
    done = 0
    while done < max_merges:
        if scal[S_NTOK] >= target_tokens:
            status = VOCAB_REACHED
            break
        # Bring a live entry to the top: stale ones go back with their live count.
        while scal[S_NHEAP] > 0:
            p = hpair[0]
            live = pcnt[p]
            if hcnt[0] == live:
                break
            lid = hlist[0]
            _heap_pop(hcnt, hpair, hlist, scal, pkey, mode, tok_off, tok_len, arena, hf_order)
            if mode == HF or live > 0:  # HF re-pushes even at 0; the result is the same
                _heap_push(
                    live,
                    p,
                    lid,
                    hcnt,
                    hpair,
                    hlist,
                    scal,
                    pkey,
                    mode,
                    tok_off,
                    tok_len,
                    arena,
                    hf_order,
                )
        if scal[S_NHEAP] == 0:
            status = NO_PAIRS
            break
        count = hcnt[0]
        if count < 1:
            status = NO_PAIRS
            break
        if count < min_frequency:
            status = BELOW_MIN_FREQUENCY
            break
        ties = 0
        if tie_limit > 0:
            ties = _count_ties(hcnt, hpair, pcnt, scal, tie_stamp, scal[S_STEP] + 1, tie_limit)
        p = hpair[0]
        lid = hlist[0]
        _heap_pop(hcnt, hpair, hlist, scal, pkey, mode, tok_off, tok_len, arena, hf_order)
        key = pkey[p]
        left = key >> 32
        right = key & 0xFFFFFFFF

        # The merged token: an existing one with the same bytes, or a new id.
        h = tok_hash[left] * _pow_base(tok_len[right]) + tok_hash[right]
        new = _find_concat(left, right, h, tt, tok_off, tok_len, tok_hash, arena)
        is_new = new == -1
        if is_new:
            ntok = scal[S_NTOK]
            size = tok_len[left] + tok_len[right]
            tok_off = _grow_i64(tok_off, ntok + 1)
            tok_hash = _grow_i64(tok_hash, ntok + 1)
            tok_len = _grow_i32(tok_len, ntok + 1)
            arena = _grow_u8(arena, scal[S_ARENA] + size)
            start = scal[S_ARENA]
            arena[start : start + tok_len[left]] = arena[
                tok_off[left] : tok_off[left] + tok_len[left]
            ]
            arena[start + tok_len[left] : start + size] = arena[
                tok_off[right] : tok_off[right] + tok_len[right]
            ]
            new = ntok
            tok_off[new] = start
            tok_len[new] = size
            tok_hash[new] = h
            scal[S_ARENA] = start + size
            scal[S_NTOK] = ntok + 1
            if 2 * (ntok + 1) > tt.size:
                tt = np.full(2 * tt.size, -1, dtype=np.int32)
                for t in range(ntok + 1):
                    _tt_insert(tt, t, tok_hash[t])
            else:
                _tt_insert(tt, new, h)

        # Room for everything this step can add, so nothing moves while words are merged.
        bound = _list_symbols(lid, lst_head, blk, blk_next, blk_fill, wlen) + 1
        need_pairs = scal[S_NPAIRS] + bound
        if need_pairs > pkey.size:
            pkey = _grow_i64(pkey, need_pairs)
            pcnt = _grow_i64(pcnt, need_pairs)
            plist = _grow_i32(plist, need_pairs)
            pstamp = _grow_i32(pstamp, need_pairs)
            pstep_list = _grow_i32(pstep_list, need_pairs)
            tie_stamp = _grow_i32(tie_stamp, need_pairs)
            tie_stamp[scal[S_NPAIRS] :] = -1
        if 2 * need_pairs > ph.size:
            ph = _rehash_pairs(scal[S_NPAIRS], pkey, _next_pow2(4 * need_pairs))
        need_lists = scal[S_NLISTS] + bound
        if need_lists > lst_head.size:
            lst_head = _grow_i32(lst_head, need_lists)
            lst_tail = _grow_i32(lst_tail, need_lists)
            lst_last = _grow_i32(lst_last, need_lists)
        need_blocks = scal[S_NBLOCKS] + 2 * bound
        if need_blocks > blk_next.size:
            blk_next = _grow_i32(blk_next, need_blocks)
            blk_fill = _grow_i32(blk_fill, need_blocks)
            blk = _grow_i32(blk, blk_next.size * BLOCK)
        need_heap = scal[S_NHEAP] + bound
        if need_heap > hcnt.size:
            hcnt = _grow_i64(hcnt, need_heap)
            hpair = _grow_i32(hpair, need_heap)
            hlist = _grow_i32(hlist, need_heap)
        touched = _grow_i32(touched, bound + 1)

        scal[S_STEP] += 1
        touched[0] = 0
        merged_weighted = 0
        b = lst_head[lid]
        while b != -1:
            for k in range(blk_fill[b]):
                w = blk[b * BLOCK + k]
                m = _merge_word(
                    w,
                    left,
                    right,
                    new,
                    mode,
                    wsym,
                    woff,
                    wlen,
                    wcount,
                    ph,
                    pkey,
                    pcnt,
                    plist,
                    pstamp,
                    pstep_list,
                    touched,
                    lst_head,
                    lst_tail,
                    lst_last,
                    blk,
                    blk_next,
                    blk_fill,
                    scal,
                )
                merged_weighted += m * wcount[w]
            b = blk_next[b]
        if mode != HF:
            pcnt[p] = 0  # every occurrence is gone: merged, or lost to an overlapping one
        for i in range(1, touched[0] + 1):
            q = touched[i]
            if pcnt[q] > 0:
                qlist = pstep_list[q] if mode == HF else plist[q]
                _heap_push(
                    pcnt[q],
                    q,
                    qlist,
                    hcnt,
                    hpair,
                    hlist,
                    scal,
                    pkey,
                    mode,
                    tok_off,
                    tok_len,
                    arena,
                    hf_order,
                )
        scal[S_TOKENS] -= merged_weighted

        ev_left[done] = left
        ev_right[done] = right
        ev_new[done] = new
        ev_count[done] = count
        ev_isnew[done] = is_new
        ev_ties[done] = ties
        ev_tokens[done] = scal[S_TOKENS]
        done += 1

    return (
        status,
        done,
        tok_off,
        tok_len,
        tok_hash,
        arena,
        tt,
        pkey,
        pcnt,
        plist,
        pstamp,
        pstep_list,
        tie_stamp,
        ph,
        lst_head,
        lst_tail,
        lst_last,
        blk,
        blk_next,
        blk_fill,
        hcnt,
        hpair,
        hlist,
        touched,
    )
