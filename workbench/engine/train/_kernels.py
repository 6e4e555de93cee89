"""The merge loop's entry points (`init_pairs`, `run_merges`) and merging inside one word.

Private: `trainer.py` owns the state (`_state.TrainState`) and calls these. How the data is laid
out, why the helpers are inlined and why some loops run without reference counts: `_state`."""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np

from workbench.engine._native import prefetch as _prefetch_module
from workbench.engine._native.cache_keys import kernels_of, key_caches_on
from workbench.engine._native.numba_config import njit, njit_borrowing
from workbench.engine._native.prefetch import prefetch as _prefetch
from workbench.engine.train import _heap, _long, _state, _tables
from workbench.engine.train._heap import (
    _count_ties,
    _heap_push,
    _heap_top,
    _runner_up,
)
from workbench.engine.train._long import (
    gather_positions,
    index_long,
    merge_long_word,
    settle_positions,
)
from workbench.engine.train._state import (
    B_FILL,
    B_NEXT,
    B_WORDS,
    BELOW_MIN_FREQUENCY,
    H_CNT,
    H_REF,
    HF,
    L_HEAD,
    NO_PAIRS,
    P_CNT,
    P_KEY,
    P_LIST,
    RUNNING,
    S_LONG,
    S_MAXCHARS,
    S_MAXLEN,
    S_MAXWORDS,
    S_NHEAP,
    S_NTOK,
    S_STEP,
    S_TOKENS,
    SPAN,
    TABLES_GREW,
    VOCAB_REACHED,
    W_COUNT,
    W_LEN,
    W_LONG,
    W_OFF,
    TrainState,
)
from workbench.engine.train._tables import (
    _add_pair,
    _add_token,
    _drop_pair,
    _empty_list,
    _find_concat,
    _grow_rows,
    _lex_key,
    _needs_room,
    _pow_base,
    _reserve,
    _tt_insert,
)

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
def _merge_words(b, k, r, o, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched, lst,
                 blk, pp, pblk, scal):  # fmt: skip
    """Merge (left, right) into `new` in the words of a word list, from item k of block b (and
    symbol r of that word, written up to o; in a long word, r is an index into the gathered
    positions `scr` and o is 1 once the word is started). Returns (b, k, r, o, weighted replacements, room):
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
            if wrec[w, W_LONG]:  # a long word: only the pair's positions inside it
                r, o, m, room = merge_long_word(
                    w, r, o, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched, lst,
                    blk, pp, pblk, scal,
                )  # fmt: skip
                merged_weighted += m
                if room:
                    return b, k, r, o, merged_weighted, room
            else:
                while r < n:  # one span of a long word at a time: capacity grows with use
                    stop = min(r + SPAN, n)
                    if _needs_room(stop - r, pr, ph, lst, blk, touched, pp, pblk, scal):
                        return b, k, r, o, merged_weighted, stop - r
                    r, o, m = _merge_span(
                        w, r, o, stop, left, right, new, mode, wsym, wrec, ph, pr, touched, lst,
                        blk, scal,
                    )  # fmt: skip
                    merged_weighted += m * wrec[w, W_COUNT]
                wrec[w, W_LEN] = o
            r = 0
            o = 0
            k += 1
        b = blk[b, B_NEXT]
        k = 0
    return b, k, r, o, merged_weighted, 0


# Shared by `run_merges` and `_given_merges.apply_merge`, inlined into both: called, its array
# arguments' and results' reference counts made classic training about 3% slower.
@njit(inline="always")
def _merge_pair(p, lid, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, tie_stamp,
                touched, lst, blk, pp, pblk, scal):  # fmt: skip
    """Merge pair `p` (left, right; word list `lid`) into token `new` in every word that holds
    it, the pairs it touches added to `touched`. Returns (weighted replacements, and the arrays
    that may have grown: pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scr)."""
    merged_weighted = 0
    if scal[S_LONG] != 0:  # where the pair is in long words (see `_long`)
        scr = gather_positions(p, mode, pp, pblk, scr, scal)
    b = lst[lid, L_HEAD]
    k = r = o = np.int64(0)
    while True:  # a pass stops early only when an array must grow: grow it, go on
        b, k, r, o, m, room = _merge_words(
            b, k, r, o, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, touched, lst,
            blk, pp, pblk, scal,
        )  # fmt: skip
        merged_weighted += m
        if room == 0:
            break
        pr, tie_stamp, ph, lst, blk, touched, pp, pblk = _reserve(
            room, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scal
        )
    if scal[S_LONG] != 0:
        settle_positions(p, mode, pp, pblk, scr, scal)
    return merged_weighted, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scr


@njit(inline="always")
def _superword_allowed(left, right, max_words, tok_off, tok_len, arena):
    """SuperBPE's stage-2 rules for the token left + right (the authors' trainer fork): it holds
    no `: ` (colon, space) and at most `max_words` words (runs of non-space bytes)."""
    words = 0
    prev = 32  # as if a space came first: the first non-space byte starts a word
    for side in range(2):
        t = left if side == 0 else right
        o = tok_off[t]
        for i in range(tok_len[t]):
            b = arena[o + i]
            if b == 32 and prev == 58:
                return False
            if b != 32 and prev == 32:
                words += 1
            prev = b
    return words <= max_words


@njit(inline="always")
def _chars_within(left, right, cap, tok_off, tok_len, arena):
    """Whether the token left + right holds at most `cap` characters, counted as
    `char_count.utf8_chars` counts them (that module states the rule). Stops once over the cap,
    so it reads at most about 4 x cap bytes; called only when the bytes alone exceed the cap."""
    chars = 0
    room = 0  # continuation bytes the current character may still take
    first = True
    for side in range(2):
        t = left if side == 0 else right
        o = tok_off[t]
        for i in range(tok_len[t]):
            b = arena[o + i]
            if (b & 0xC0) == 0x80 and room > 0:
                room -= 1
                continue
            chars += 1
            if chars > cap:
                return False
            if (b & 0xC0) == 0x80:
                room = 2 if first else 0  # a token's leading part: up to 3 continuation bytes
            elif b < 0xC0 or b >= 0xF8:
                room = 0
            elif b < 0xE0:
                room = 1
            elif b < 0xF0:
                room = 2
            else:
                room = 3
            first = False
    return True


# ---------------------------------------------------------------------------------------------
# the two entry points


@njit_borrowing  # no refcounts in the loop, as `_merge_words`
def _index_words(w, first, wsym, wrec, mode, ph, pr, touched, lst, blk, pp, pblk, lcache, scal):
    """Count and index the pairs of words w, w + 1, ... from symbol `first` of word w. Returns
    (w, first, room): room 0 when every word is done; else the pass stopped where an array must
    first grow by `_reserve(room, ...)`, and a call with the returned w, first goes on."""
    while w < wrec.shape[0]:
        base = wrec[w, W_OFF]
        n = wrec[w, W_LEN]
        c = wrec[w, W_COUNT]
        is_long = wrec[w, W_LONG] != 0
        while first < n - 1:  # a span at a time, as the merge pass
            last = min(first + SPAN, n - 1)
            if _needs_room(last - first, pr, ph, lst, blk, touched, pp, pblk, scal):
                return w, first, last - first
            if is_long:  # and where each pair is, so that merges skip the rest
                index_long(
                    w, first, last, wsym, wrec, mode, ph, pr, touched, lst, blk, pp, pblk, lcache,
                    scal,
                )  # fmt: skip
            else:
                for i in range(first, last):
                    _add_pair(
                        wsym[base + i], wsym[base + i + 1], c, w, mode, ph, pr, touched, lst,
                        blk, scal,
                    )  # fmt: skip
            first = last
        w += 1
        first = 0
    return w, first, 0


@njit_borrowing
def _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena):
    """An entry for every pair the step gave count, with its live count (`hp` has room for
    touched[0] more); a pair whose token would be longer than S_MAXLEN bytes or S_MAXCHARS
    characters, or that the stage-2 rules refuse (S_MAXWORDS > 0), gets none."""
    cap = scal[S_MAXLEN]
    cap_chars = scal[S_MAXCHARS]  # characters <= bytes: counted only when the bytes exceed it
    max_words = scal[S_MAXWORDS]
    for i in range(1, touched[0] + 1):
        q = touched[i]
        c = pr[q, P_CNT]
        key = pr[q, P_KEY]
        left = key >> 32
        right = key & 0xFFFFFFFF
        if (
            c > 0
            and tok_len[left] + tok_len[right] <= cap
            and (tok_len[left] + tok_len[right] <= cap_chars
                 or _chars_within(left, right, cap_chars, tok_off, tok_len, arena))
            and (max_words == 0 or _superword_allowed(left, right, max_words, tok_off, tok_len,
                                                      arena))
        ):  # fmt: skip
            ref = (np.int64(q) << 32) | pr[q, P_LIST]
            _heap_push(
                c, key, ref, hp, scal, mode, pr, tok_key, hf_order, tok_off, tok_len, arena,
            )  # fmt: skip


@njit
def init_pairs(state, mode):
    """Count every adjacent pair of every word (weighted by the word's count), index the words
    that hold each pair, and push one heap entry per pair. Also files the starting tokens (the
    256 single bytes, or a base tokenizer's) in the token table `tt` and gives them their tie
    keys. Returns the state with grown arrays."""
    wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt = state[:8]
    pr, tie_stamp, ph, lst, blk, hp, touched, tie_stack, scal, hf_order = state[8:18]
    lcache, pp, pblk, scr = state[18:]
    # Every token there is so far: the 256 bytes, and those of a vocabulary the trainer starts
    # from (a base tokenizer when extending, stage 1's when SuperBPE: S_NTOK counts them).
    for t in range(scal[S_NTOK]):
        _tt_insert(tt, t, tok_hash[t])
        tok_key[t] = _lex_key(t, tok_off, tok_len, arena)
    scal[S_STEP] = 0
    touched[0] = 0
    w = first = np.int64(0)
    while True:  # a pass stops early only when an array must grow: grow it, go on
        w, first, room = _index_words(
            w, first, wsym, wrec, mode, ph, pr, touched, lst, blk, pp, pblk, lcache, scal
        )
        if room == 0:
            break
        pr, tie_stamp, ph, lst, blk, touched, pp, pblk = _reserve(
            room, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scal
        )
    hp = _grow_rows(hp, scal[S_NHEAP], scal[S_NHEAP] + touched[0])
    _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena)
    return TrainState(
        wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt, pr, tie_stamp, ph, lst, blk,
        hp, touched, tie_stack, scal, hf_order, lcache, pp, pblk, scr,
    )  # fmt: skip


# One loop over merges whose steps are already calls: splitting the loop itself would pass the
# whole state through one more call per merge.
@njit
def run_merges(state, events, max_merges, target_tokens, min_frequency, mode, tie_limit):  # noqa: C901
    """Make up to `max_merges` merges, stopping early when the vocabulary has `target_tokens`
    tokens, no pair is left, or the best count is below `min_frequency`; merge i is row i of
    `events`. Pairs the length cap or SuperBPE's stage-2 rules refuse are not in the heap
    (`_push_touched`), so each merge's `ties` and `runner_up` count only pairs it could make.

    Returns (status, merges made, the state with every array that grew). Status TABLES_GREW:
    it returned after a merge that grew the pair tables, so their old copies can be freed.
    """
    wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt = state[:8]
    pr, tie_stamp, ph, lst, blk, hp, touched, tie_stack, scal, hf_order = state[8:18]
    lcache, pp, pblk, scr = state[18:]
    ev_left, ev_right, ev_new, ev_count, ev_isnew, ev_ties, ev_tokens, ev_runner = events
    status = RUNNING
    done = 0
    rows = pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0] + pblk.shape[0]
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
        runner = -1  # explanations off (tie_limit 0): neither figure is computed
        if tie_limit > 0:
            ties = _count_ties(hp, pr, scal, tie_stamp, scal[S_STEP] + 1, tie_limit, tie_stack)
            runner = count if ties > 0 else _runner_up(hp, pr, scal, tie_stack)
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
            new = scal[S_NTOK]
            tok_off, tok_len, tok_hash, tok_key, arena, tt = _add_token(
                left, right, h, tok_off, tok_len, tok_hash, tok_key, arena, tt, scal
            )

        scal[S_STEP] += 1
        touched[0] = 0
        merged_weighted, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scr = _merge_pair(
            p, lid, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, tie_stamp, touched,
            lst, blk, pp, pblk, scal,
        )  # fmt: skip
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
        ev_runner[done] = runner
        ev_tokens[done] = scal[S_TOKENS]
        done += 1
        grown = pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0]
        if grown + pblk.shape[0] != rows:  # (tables only grow)
            status = TABLES_GREW
            break

    return status, done, TrainState(
        wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt, pr, tie_stamp, ph, lst, blk,
        hp, touched, tie_stack, scal, hf_order, lcache, pp, pblk, scr,
    )  # fmt: skip


# A kernel here compiles in `_tables`, `_heap` and the prefetch intrinsic: Numba keys its disk
# cache on this file alone, so every kernel of the loop is keyed on all of their sources (an edit
# to `_heap.py` must not load the old machine code of `run_merges`).
KERNEL_SOURCES: tuple[ModuleType, ...] = (
    _state,
    _tables,
    _heap,
    _long,
    _prefetch_module,
    sys.modules[__name__],
)
key_caches_on((k for m in KERNEL_SOURCES for k in kernels_of(m)), KERNEL_SOURCES)
