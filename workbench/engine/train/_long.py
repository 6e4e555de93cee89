"""Merging inside long words in time proportional to the occurrences merged.

A short word is walked whole and rewritten in place on each merge that lists it: cheap for
prose, but a file without spaces is one pre-token, and walking 50 MB per merge took 200 s for
1,700 merges. A long word (`LONG_WORD` symbols or more) instead keeps its symbols in place as a
doubly linked list (`lnk`), and every pair the positions where it formed in a long word
(`pp`/`pblk`, in `wsym` indices): a merge gathers the pair's positions once, sorted
(`gather_positions`), then each long word on the pair's word list takes the slice of them that
falls inside it, left to right (`merge_long`). The sequence of pair-count changes and word-list
appends is exactly the one the walk makes (the same occurrences, in the same order, with the
same neighbours), so the heap, the word lists and the merges are identical in both tie modes.

Why left to right matters: in `aaa` the pair (a, a) merges once, at the first position; the
second position's left symbol is gone by then, which the check of each position sees.

A position is appended when a pair forms there and never removed when a neighbour's merge
breaks the pair: it is checked when visited (the symbol still `left`, the next live one still
`right`). A merged pair's positions are visited once per merge and dropped (LEX); in HF mode a
merge covers only the words of the popped entry, so the positions in other words are kept for
the pair's later entries (`settle_positions`). A symbol merged away is -1 in `wsym`; a merged
symbol stays at the left one's index, so index order is the word's order.
"""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine.train._state import (
    HF,
    LK_NEXT,
    LK_PREV,
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
    W_LINK,
    W_OFF,
)
from workbench.engine.train._tables import _add_pair, _drop_pair, _needs_room

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


@njit
def gather_positions(p, pp, pblk, scr, scal):
    """Pair p's positions into `scr`, sorted, each as `index << 1` (the low bit marks it
    visited); their number in scal[S_NSCR]. Returns `scr`, grown if it was too small (None
    without long words: Numba then drops the body, see `merge_long_word`)."""
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
    b = pp[p, PP_HEAD]
    while b != -1:
        for j in range(pblk[b, PB_FILL]):
            scr[k] = np.int64(pblk[b, PB_POS + j]) << 1
            k += 1
        b = pblk[b, PB_NEXT]
    # Already in order but where one token's bytes were made twice (a pair's positions then
    # come from two merge steps): each step appends them left to right, words in index order.
    for i in range(1, n):
        if scr[i] < scr[i - 1]:
            scr[:n].sort()
            break
    scal[S_NSCR] = n
    return scr


@njit
def settle_positions(p, mode, pp, pblk, scr, scal):
    """After merging pair p: its position blocks go back to the free list; in HF mode the
    positions in words this merge did not visit are kept (into as many blocks or fewer)."""
    if scr is None:
        return
    head = pp[p, PP_HEAD]
    if head != -1:
        pblk[pp[p, PP_TAIL], PB_NEXT] = scal[S_PFREE]
        scal[S_PFREE] = head
        pp[p, PP_HEAD] = -1
        pp[p, PP_TAIL] = -1
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
# merging


@njit(inline="always")
def merge_long(w, r, stop, left, right, new, mode, wsym, wrec, lnk, scr, ph, pr, touched, lst,
               blk, pp, pblk, scal):  # fmt: skip
    """Merge (left, right) into `new` at the gathered positions scr[r:stop], all inside long
    word w, in order; mark them visited. Returns the replacements made. Room: as for a span of
    2 * (stop - r) symbols (each replacement adds at most two pairs, lists and positions)."""
    base = wrec[w, W_OFF]
    lb = wrec[w, W_LINK]
    c = wrec[w, W_COUNT]
    merged = 0
    for q in range(r, stop):
        g = scr[q] >> 1
        scr[q] |= 1
        if wsym[g] != left:  # merged away, or grown into another token since
            continue
        i = g - base
        j = lnk[lb + i, LK_NEXT]
        if j == -1 or wsym[base + j] != right:
            continue
        before = lnk[lb + i, LK_PREV]
        after = lnk[lb + j, LK_NEXT]
        # The left neighbour's pair, then the right one's, as the walk of a short word does.
        for side in range(2):
            if side == 0:
                if before == -1:
                    continue
                a = wsym[base + before]
                a0, b0, a1, b1, at = a, left, a, new, base + before
            else:
                if after == -1:
                    continue
                b = wsym[base + after]
                a0, b0, a1, b1, at = right, b, new, b, g
            _drop_pair(a0, b0, c, ph, pr)
            formed = _add_pair(a1, b1, c, w, mode, ph, pr, touched, lst, blk, scal)
            pos_append(formed, at, pp, pblk, scal)
        wsym[g] = new
        wsym[base + j] = -1
        lnk[lb + i, LK_NEXT] = after
        if after != -1:
            lnk[lb + after, LK_PREV] = i
        merged += 1
    return merged


def link_words(lengths: np.ndarray, long_word: int) -> tuple[np.ndarray, np.ndarray]:
    """(link row of each word or -1, `lnk` for the long ones): word i is long when it has
    `long_word` symbols or more; its symbols' (prev, next) start at its link row."""
    is_long = lengths >= long_word
    sizes = np.where(is_long, lengths, 0)
    starts = np.cumsum(sizes) - sizes
    link = np.where(is_long, starts, -1).astype(np.int64)
    lnk = np.empty((int(sizes.sum()), 2), dtype=np.int32)
    # Word by word: a temporary of 4 bytes per symbol of one word, not of all of them.
    for start, n in zip(starts[is_long].tolist(), lengths[is_long].tolist(), strict=True):
        rows = lnk[start : start + n]
        inside = np.arange(n, dtype=np.int32)
        rows[:, LK_PREV] = inside
        rows[:, LK_PREV] -= 1  # -1 at the word's first symbol
        rows[:, LK_NEXT] = inside
        rows[:, LK_NEXT] += 1
        rows[n - 1, LK_NEXT] = -1
    return link, lnk


# A call, not inlined, once per long word (or span of its positions) a merge visits. Without long
# words `lnk` is None: Numba prunes the body of that specialization (`if lnk is None` on an
# argument is settled at compile time), so a trainer without long words compiles none of this
# (it added 5 s to a first start, half of the merge loop's compile time).
@njit_borrowing
def merge_long_word(w, r, o, left, right, new, mode, wsym, wrec, lnk, scr, ph, pr, touched, lst,
                    blk, pp, pblk, scal):  # fmt: skip
    """`_merge_words`' step for long word w: its slice of the gathered positions, from index r
    (o is 1 once the word is started). Returns (r, o, weighted replacements, room): room 0 when
    the word is done, else call again from (r, o) after `_reserve(room, ...)`."""
    if lnk is None:
        return r, o, 0, 0
    nscr = scal[S_NSCR]
    start = wrec[w, W_OFF] << 1
    if o == 0:
        r = first_at_least(scr, nscr, start)
        o = 1
        if r < nscr and scr[r] & 1:  # listed twice (LEX): visited whole already
            r = nscr
    end = first_at_least(scr, nscr, start + (wrec[w, W_LEN] << 1))
    merged_weighted = 0
    while r < end:  # half a span of positions at a time: each adds up to two pairs
        stop = min(r + SPAN // 2, end)
        if _needs_room(2 * (stop - r), pr, ph, lst, blk, touched, pp, pblk, scal):
            return r, o, merged_weighted, 2 * (stop - r)
        m = merge_long(
            w, r, stop, left, right, new, mode, wsym, wrec, lnk, scr, ph, pr, touched, lst, blk,
            pp, pblk, scal,
        )  # fmt: skip
        merged_weighted += m * wrec[w, W_COUNT]
        r = stop
    return r, o, merged_weighted, 0
