"""The merge loop's lazy 4-ary max-heap of pair counts, with the tie-break rules (`_beats`) and
the count of tied pairs at the top (`_count_ties`) and the best losing count (`_runner_up`).
See `_state` for the rows."""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine.train._state import (
    ARITY,
    H_CNT,
    H_K1,
    H_K2,
    H_REF,
    HF,
    LEX,
    P_CNT,
    P_KEY,
    S_NHEAP,
)
from workbench.engine.train._tables import (
    _token_cmp,
)

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


@njit_borrowing  # once per merge, and only when ties are counted: a call costs nothing there
def _runner_up(hp, pr, scal, stack):
    """The highest live count among pairs other than the top's (0: no other pair), with a live
    entry on top and no tie with it (a tie makes the answer the top's count).

    The heap is lazy, so an entry's count may be stale, but every live pair has an entry at
    least as high as its live count (a rise pushes one; a fall leaves the old one above). So a
    walk from the root that reads each entry's pair's *live* count and skips subtrees whose
    entry is not above the best so far sees every pair that could beat it. The entries it
    visits are the stale ones between the top and the runner-up, which the next merges settle.
    """
    n = scal[S_NHEAP]
    winner = hp[0, H_REF] >> 32
    found = 0
    depth = _stack_children(0, hp, n, found, stack, 0)
    while depth > 0:  # at most 3 siblings a level + 4 children wait: TIE_STACK is plenty
        depth -= 1
        i = stack[depth]
        if hp[i, H_CNT] <= found:  # found grew since this entry was stacked
            continue
        p = hp[i, H_REF] >> 32
        if p != winner:
            live = pr[p, P_CNT]
            if live > found:
                found = live
        depth = _stack_children(i, hp, n, found, stack, depth)
    return found


@njit(inline="always")
def _stack_children(i, hp, n, found, stack, depth):
    """Stack the children of row i above `found`, the highest last (it is visited first: when
    it is live, the entries below its count need no look at their pairs)."""
    first = ARITY * i + 1
    best = -1
    for ch in range(first, min(first + ARITY, n)):
        if hp[ch, H_CNT] > found:
            if best >= 0 and hp[ch, H_CNT] > hp[best, H_CNT]:
                stack[depth] = best
                depth += 1
                best = ch
            elif best >= 0:
                stack[depth] = ch
                depth += 1
            else:
                best = ch
    if best >= 0:
        stack[depth] = best
        depth += 1
    return depth
