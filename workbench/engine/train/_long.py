"""Merging inside long words in time proportional to the occurrences merged.

A short word is walked whole and rewritten in place on each merge that lists it: cheap for
prose, but a file without spaces is one pre-token, and walking 50 MB per merge took 200 s for
1,700 merges. A long word (`LONG_WORD` symbols or more) instead keeps its symbols in place, and
every pair the positions where it formed in a long word (`pp`/`pblk`, in `wsym` indices): a
merge gathers the pair's positions once, sorted (`gather_positions`), then each long word on the
pair's word list takes the slice of them that falls inside it, left to right (`merge_long`).
The sequence of pair-count changes and word-list appends is exactly the one the walk makes (the
same occurrences, in the same order, with the same neighbours), so the heap, the word lists and
the merges are identical in both tie modes.

A long word needs no links between its symbols: each of its symbols starts as one byte, so a
token spans as many `wsym` slots as it has bytes. The slots a merge empties hold negative
numbers: the slot after a token's start and its last slot hold -(its length) (one slot for a
token of two bytes), the rest any negative number. The next token starts at `g + 1` when that
slot is a symbol, else at `g - wsym[g + 1]`; the previous one ends at `g - 1` and starts there
when that slot is a symbol, else at `g + wsym[g - 1]` (`_next_start`, `_prev_start`). That is 4
bytes a symbol where links took 12, and a neighbour sits in the cache line already read.

Why left to right matters: in `aaa` the pair (a, a) merges once, at the first position; the
second position's left symbol is gone by then, which the check of each position sees.

A position is appended when a pair forms there and never removed when a neighbour's merge
breaks the pair: it is checked when visited (a token start still `left`, the next token still
`right`). A merged pair's positions are visited once per merge and dropped (LEX); in HF mode a
merge covers only the words of the popped entry, so the positions in other words are kept for
the pair's later entries (`settle_positions`).

The pair tables are not searched per occurrence: in one visit of one word (a merge's slice of
its positions, or indexing it), the pairs an occurrence drops and forms are fixed by the
neighbour's symbol, so `lcache` remembers their ids per neighbour (a small direct-mapped table,
keyed by the visit and the symbol). A pair met again in the same visit only changes count: the
first meeting made every other change `_add_pair` makes (stamp, touched, word list), which is
why the cache lives no longer than a visit. Without it an occurrence cost a dozen cache misses
in tables of millions of pairs.
"""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine._native.prefetch import prefetch as _prefetch
from workbench.engine.train._state import (
    HF,
    P_CNT,
    PB_FILL,
    PB_NEXT,
    PB_POS,
    PBLOCK,
    PP_HEAD,
    PP_TAIL,
    S_NPBLK,
    S_NSCR,
    S_PFREE,
    SPAN,
    W_COUNT,
    W_LEN,
    W_OFF,
)
from workbench.engine.train._tables import _add_pair, _needs_room, _pair_find

# `lcache`: CACHE_ROWS rows (visit key, ids) for each side of a merge, then one row whose
# first cell counts the visits. Direct-mapped on the neighbour's symbol: 8,192 rows of 32 bytes
# stay in the L2 cache; two symbols on one row only cost a search of the pair table.
CACHE_ROWS = 1 << 13
C_KEY, C_IDS = 0, 1  # + 2 * side
PREFETCH = 16  # positions ahead whose symbols are asked for
VISIT_SHIFT = 31  # key = visit << 31 | symbol: symbols are int32 (indexing: a << 8 | b)


# ---------------------------------------------------------------------------------------------
# position lists


@njit(inline="always")
def _new_pblock(pblk, scal):
    """An empty position block: a freed one if any, else the next unused row (`_reserve` counts
    every block as a new row, so there is room either way)."""
    b = scal[S_PFREE]
    if b != -1:
        scal[S_PFREE] = pblk[b, PB_NEXT]
    else:
        b = scal[S_NPBLK]
        scal[S_NPBLK] += 1
    pblk[b, PB_NEXT] = -1
    pblk[b, PB_FILL] = 0
    return b


@njit(inline="always")
def pos_append(p, g, pp, pblk, scal):
    """Remember that pair p formed at `wsym` index g (of a long word)."""
    t = pp[p, PP_TAIL]
    if t == -1 or pblk[t, PB_FILL] == PBLOCK:
        nb = _new_pblock(pblk, scal)
        if t == -1:
            pp[p, PP_HEAD] = nb
        else:
            pblk[t, PB_NEXT] = nb
        pp[p, PP_TAIL] = nb
        t = nb
    f = pblk[t, PB_FILL]
    pblk[t, PB_POS + f] = g
    pblk[t, PB_FILL] = f + 1


@njit(inline="always")
def _merge_runs(src, dst, n):
    """One pass of a natural merge sort: the ascending runs of src[:n] merged two by two into
    dst[:n]. Returns how many runs src held (at most 2: dst is sorted)."""
    runs = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and src[j] >= src[j - 1]:
            j += 1
        k = j
        if j < n:
            k = j + 1
            while k < n and src[k] >= src[k - 1]:
                k += 1
            runs += 1
        runs += 1
        a, b, o = i, j, i
        while a < j and b < k:
            if src[b] < src[a]:
                dst[o] = src[b]
                b += 1
            else:
                dst[o] = src[a]
                a += 1
            o += 1
        while a < j:
            dst[o] = src[a]
            a += 1
            o += 1
        while b < k:
            dst[o] = src[b]
            b += 1
            o += 1
        i = k
    return runs


@njit
def gather_positions(p, mode, pp, pblk, scr, scal):
    """Pair p's positions into `scr`, sorted, each as `index << 1` (the low bit marks it
    visited); their number in scal[S_NSCR]. In LEX mode its blocks go back to the free list at
    once, for the positions the merge adds (see `settle_positions`). Returns `scr`, grown if it
    was too small (None without long words: Numba then drops the body, see `merge_long_word`)."""
    if scr is None:
        return scr
    n = 0
    b = pp[p, PP_HEAD]
    while b != -1:
        n += pblk[b, PB_FILL]
        b = pblk[b, PB_NEXT]
    if n > scr.size:
        scr = np.empty(max(n, 2 * scr.size), dtype=np.int64)
    k = 0
    ascending = True
    b = pp[p, PP_HEAD]
    while b != -1:
        nb = pblk[b, PB_NEXT]
        if nb != -1:  # the chain's next block loads while this one is copied
            _prefetch(pblk, nb * pblk.shape[1])
        for j in range(pblk[b, PB_FILL]):
            scr[k] = np.int64(pblk[b, PB_POS + j]) << 1
            if k > 0 and scr[k] < scr[k - 1]:
                ascending = False
            k += 1
        b = nb
    if mode != HF:
        _free_positions(p, pp, pblk, scal)
    if not ascending:
        scr = _sort_runs(scr, n)
    scal[S_NSCR] = n
    return scr


@njit(inline="always")
def _free_positions(p, pp, pblk, scal):
    """Pair p's position blocks to the free list; its list is empty."""
    head = pp[p, PP_HEAD]
    if head != -1:
        pblk[pp[p, PP_TAIL], PB_NEXT] = scal[S_PFREE]
        scal[S_PFREE] = head
        pp[p, PP_HEAD] = -1
        pp[p, PP_TAIL] = -1


@njit
def _sort_runs(scr, n):
    """scr[:n] sorted, through the upper half of `scr` (grown to 2n when smaller). The
    positions are ascending runs, one per step that formed the pair (its index, then each merge
    that made one of its tokens beside the other appends positions left to right, words in
    index order): merged in a pass or two, where a general sort of two runs took 20-35 ns a
    position."""
    if 2 * n > scr.size:
        wider = np.empty(2 * n, dtype=np.int64)
        for j in range(n):  # loops: slice assignment takes seconds to compile
            wider[j] = scr[j]
        scr = wider
    low = scr[:n]
    high = scr[n : 2 * n]
    in_low = True
    while True:
        runs = _merge_runs(low if in_low else high, high if in_low else low, n)
        in_low = not in_low
        if runs <= 2:
            break
    if not in_low:
        for j in range(n):
            low[j] = high[j]
    return scr


@njit
def settle_positions(p, mode, pp, pblk, scr, scal):
    """After merging pair p in HF mode: its position blocks go back to the free list, and the
    positions in words this merge did not visit are kept, into as many blocks or fewer. (Not
    freed when gathered, as in LEX mode: the merge could take those blocks, and these
    positions would need rows that no `_reserve` made room for.)"""
    if scr is None:
        return
    _free_positions(p, pp, pblk, scal)
    if mode == HF:
        for k in range(scal[S_NSCR]):
            if scr[k] & 1 == 0:
                pos_append(p, scr[k] >> 1, pp, pblk, scal)
    scal[S_NSCR] = 0


@njit(inline="always")
def first_at_least(scr, n, value):
    """The first k < n with scr[k] >= value, or n (scr[:n] is sorted)."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if scr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------------------------
# walking a long word


@njit(inline="always")
def _next_start(wsym, g, end):
    """Where the token after the one starting at g starts (`end` when it is the last)."""
    if g + 1 >= end:
        return end
    x = wsym[g + 1]
    return g + 1 if x >= 0 else g - x


@njit(inline="always")
def _prev_start(wsym, g, base):
    """Where the token before the one starting at g starts (-1 when it is the first)."""
    if g == base:
        return -1
    x = wsym[g - 1]
    return g - 1 if x >= 0 else g + x


@njit(inline="always")
def new_visit(lcache):
    """A fresh visit key base: ids remembered in earlier visits no longer match."""
    lcache[CACHE_ROWS, 0] += 1
    return lcache[CACHE_ROWS, 0] << VISIT_SHIFT


def new_cache() -> np.ndarray:
    """An empty `lcache` (no key matches: keys are at least 1 << VISIT_SHIFT)."""
    lcache = np.full((CACHE_ROWS + 1, 4), -1, dtype=np.int64)
    lcache[CACHE_ROWS, 0] = 0
    return lcache


# ---------------------------------------------------------------------------------------------
# indexing and merging


# A call per span, not inlined: without long words `lcache` is None and the body is pruned, as
# in `merge_long_word` below.
@njit_borrowing
def index_long(w, first, last, wsym, wrec, mode, ph, pr, touched, lst, blk, pp, pblk, lcache,
               scal):  # fmt: skip
    """`_index_words`' step for long word w: count and index its pairs from symbol `first` up
    to `last`, and remember where each formed. Byte pairs seen before in this word take their
    id from `lcache` (a word's symbols are bytes until its first merge)."""
    if lcache is None:
        return
    base = wrec[w, W_OFF]
    c = wrec[w, W_COUNT]
    key_base = (lcache[CACHE_ROWS, 0] << VISIT_SHIFT) if first > 0 else new_visit(lcache)
    for i in range(first, last):
        a = wsym[base + i]
        b = wsym[base + i + 1]
        code = (a << 8) | b
        row = code & (CACHE_ROWS - 1)
        if a < 256 and b < 256 and lcache[row, C_KEY] == key_base | code:
            p = lcache[row, C_IDS]
            pr[p, P_CNT] += c
        else:
            p = _add_pair(a, b, c, w, mode, ph, pr, touched, lst, blk, scal)
            if a < 256 and b < 256:
                lcache[row, C_KEY] = key_base | code
                lcache[row, C_IDS] = p
        pos_append(p, base + i, pp, pblk, scal)


@njit(inline="always")
def merge_long(w, r, stop, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched,
               lst, blk, pp, pblk, scal):  # fmt: skip
    """Merge (left, right) into `new` at the gathered positions scr[r:stop], all inside long
    word w, in order; mark them visited. Returns the replacements made. Room: as for a span of
    2 * (stop - r) symbols (each replacement adds at most two pairs, lists and positions)."""
    base = wrec[w, W_OFF]
    end = base + wrec[w, W_LEN]
    c = wrec[w, W_COUNT]
    key_base = lcache[CACHE_ROWS, 0] << VISIT_SHIFT
    merged = 0
    for q in range(r, stop):
        if q + PREFETCH < stop:  # positions are known ahead: overlap their cache misses
            _prefetch(wsym, scr[q + PREFETCH] >> 1)
        g = scr[q] >> 1
        scr[q] |= 1
        if wsym[g] != left:  # merged away, or grown into another token since
            continue
        j = _next_start(wsym, g, end)
        if j == end or wsym[j] != right:
            continue
        after = _next_start(wsym, j, end)
        # The left neighbour's pair, then the right one's, as the walk of a short word does.
        for side in range(2):
            if side == 0:
                at = _prev_start(wsym, g, base)
                if at == -1:
                    continue
                x = wsym[at]
                a0, b0, a1, b1 = x, left, x, new
            else:
                if after == end:
                    continue
                x = wsym[after]
                a0, b0, a1, b1, at = right, x, new, x, g
            row = x & (CACHE_ROWS - 1)
            col = 2 * side
            if lcache[row, col + C_KEY] == key_base | x:  # met in this visit: counts only
                ids = lcache[row, col + C_IDS]
                pr[ids >> 32, P_CNT] -= c
                formed = ids & 0xFFFFFFFF
                pr[formed, P_CNT] += c
            else:
                dropped = _pair_find((np.int64(a0) << 32) | np.int64(b0), ph, pr)
                pr[dropped, P_CNT] -= c
                formed = _add_pair(a1, b1, c, w, mode, ph, pr, touched, lst, blk, scal)
                lcache[row, col + C_KEY] = key_base | x
                lcache[row, col + C_IDS] = (np.int64(dropped) << 32) | formed
            pos_append(formed, at, pp, pblk, scal)
        # The merged token spans both: its second and last slots hold -(its length).
        t = after - g
        wsym[j] = -1
        wsym[g + 1] = -t
        wsym[after - 1] = -t
        wsym[g] = new
        merged += 1
    return merged


def mark_long_words(lengths: np.ndarray, long_word: int) -> tuple[np.ndarray, int]:
    """(1 for each word of `long_word` symbols or more, else 0; their symbols in all)."""
    is_long = lengths >= long_word
    return is_long.astype(np.int64), int(lengths[is_long].sum())


# A call, not inlined, once per long word (or span of its positions) a merge visits. Without long
# words `lcache` is None: Numba prunes the body of that specialization (`if lcache is None` on an
# argument is settled at compile time), so a trainer without long words compiles none of this
# (it added 5 s to a first start, half of the merge loop's compile time).
@njit_borrowing
def merge_long_word(w, r, o, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched,
                    lst, blk, pp, pblk, scal):  # fmt: skip
    """`_merge_words`' step for long word w: its slice of the gathered positions, from index r
    (o is 1 once the word is started). Returns (r, o, weighted replacements, room): room 0 when
    the word is done, else call again from (r, o) after `_reserve(room, ...)`."""
    if lcache is None:
        return r, o, 0, 0
    nscr = scal[S_NSCR]
    start = wrec[w, W_OFF] << 1
    if o == 0:
        r = first_at_least(scr, nscr, start)
        o = 1
        new_visit(lcache)
        if r < nscr and scr[r] & 1:  # listed twice (LEX): visited whole already
            r = nscr
    end = first_at_least(scr, nscr, start + (wrec[w, W_LEN] << 1))
    merged_weighted = 0
    while r < end:  # half a span of positions at a time: each adds up to two pairs
        stop = min(r + SPAN // 2, end)
        if _needs_room(2 * (stop - r), pr, ph, lst, blk, touched, pp, pblk, scal):
            return r, o, merged_weighted, 2 * (stop - r)
        m = merge_long(
            w, r, stop, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched, lst,
            blk, pp, pblk, scal,
        )  # fmt: skip
        merged_weighted += m * wrec[w, W_COUNT]
        r = stop
    return r, o, merged_weighted, 0
