"""Kernels for a merge loop driven from outside one state: parity-aware BPE keeps a trainer
state per group (and per held-out part) and decides in Python which pair every state merges.

- `best_pair`: the state's best pair now (its heap's live top, the classic LEX rule), without
  merging it; with `ties`, how many other pairs tie with it (`_count_ties`, as `run_merges`).
- `apply_merge`: merge a given pair (left, right) into a given id in every word of the state
  that holds it, exactly as `run_merges` merges its own best pair. The caller assigns the ids,
  the same in every state, and keeps the table of which pair made each token; a state files
  the tokens it lacks from that table when it is next called, so it need not be called for
  the merges that cannot touch its words (the pair may still not occur: nothing changes then).
  A state whose `S_MAXLEN` is 0 keeps no heap (a held-out part: only its token total is read).
- `apply_merge_all`, `best_pair_at`: the same over a typed list of every state, one call per
  merge (a call per state cost as much as the merges); the list is made and read only through
  the cached kernels here (`state_list`, `add_state`, `state_at`). Every state in it has one
  Numba type (`parity_kernels._uniform`).

Private: `parity_kernels.py` owns the states and validates every id before a kernel sees it.
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np
from numba.typed import List

from workbench.engine._native.cache_keys import kernels_of, key_caches_on
from workbench.engine._native.numba_config import njit
from workbench.engine.train._heap import _count_ties, _heap_top
from workbench.engine.train._kernels import KERNEL_SOURCES, _merge_pair, _push_touched
from workbench.engine.train._state import (
    H_CNT,
    H_REF,
    P_CNT,
    P_KEY,
    P_LIST,
    S_MAXLEN,
    S_NHEAP,
    S_NTOK,
    S_STEP,
    S_TOKENS,
    TrainState,
)
from workbench.engine.train._tables import (
    _add_token,
    _empty_list,
    _grow_rows,
    _pair_find,
    _pow_base,
)


@njit
def best_pair(state, mode, tie_limit):
    """(count, left, right, ties) of the state's best pair, a live entry brought to the heap's
    top first; count 0 when no pair is left. `tie_limit` 0: ties not counted (0)."""
    hp, scal, pr = state.hp, state.scal, state.pr
    _heap_top(hp, scal, mode, pr, state.tok_off, state.tok_len, state.arena, False)
    if scal[S_NHEAP] == 0 or hp[0, H_CNT] < 1:
        return np.int64(0), np.int64(-1), np.int64(-1), np.int64(0)
    count = hp[0, H_CNT]
    key = pr[hp[0, H_REF] >> 32, P_KEY]
    ties = np.int64(0)
    if tie_limit > 0:  # a stamp no count of ties used before (states skip merges: see above)
        scal[S_STEP] += 1
        stamp = scal[S_STEP] + 1
        ties = _count_ties(hp, pr, scal, state.tie_stamp, stamp, tie_limit, state.tie_stack)
    return count, key >> 32, key & 0xFFFFFFFF, ties


@njit(inline="always")  # one call site
def _file_tokens(upto, made, tok_off, tok_len, tok_hash, tok_key, arena, tt, scal):
    """File tokens S_NTOK, S_NTOK + 1, ... up to `upto`: token t is the bytes of made[t, 0] +
    made[t, 1], both below t. Returns the arrays that grew."""
    while scal[S_NTOK] <= upto:
        left = made[scal[S_NTOK], 0]
        right = made[scal[S_NTOK], 1]
        h = tok_hash[left] * _pow_base(tok_len[right]) + tok_hash[right]
        tok_off, tok_len, tok_hash, tok_key, arena, tt = _add_token(
            left, right, h, tok_off, tok_len, tok_hash, tok_key, arena, tt, scal
        )
    return tok_off, tok_len, tok_hash, tok_key, arena, tt


@njit
def apply_merge(state, left, right, new, made, mode):
    """Merge (left, right) into token `new` in every word of the state holding it. Tokens the
    state has not filed yet, up to `new`, are filed first from `made` (row t: the pair whose
    bytes make token t; a state is only called for the merges that may touch its words).
    Returns (weighted replacements, whether a table grew, the state with every array that
    grew)."""
    wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt = state[:8]
    pr, tie_stamp, ph, lst, blk, hp, touched, tie_stack, scal, hf_order = state[8:18]
    lcache, pp, pblk, scr = state[18:]
    rows = pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0] + pblk.shape[0]
    tok_off, tok_len, tok_hash, tok_key, arena, tt = _file_tokens(
        new, made, tok_off, tok_len, tok_hash, tok_key, arena, tt, scal
    )
    scal[S_STEP] += 1  # the stamp of the pairs this merge touches (`_add_pair`)
    touched[0] = 0
    merged_weighted = 0
    p = _pair_find((np.int64(left) << 32) | np.int64(right), ph, pr)
    if p != -1 and pr[p, P_LIST] != -1:
        lid = pr[p, P_LIST]
        merged_weighted, pr, tie_stamp, ph, lst, blk, touched, pp, pblk, scr = _merge_pair(
            p, lid, left, right, new, mode, wsym, wrec, lcache, scr, ph, pr, tie_stamp, touched,
            lst, blk, pp, pblk, scal,
        )  # fmt: skip
        pr[p, P_CNT] = 0  # every occurrence is gone (LEX bookkeeping, as `run_merges`)
        _empty_list(lid, lst, blk, scal)
        if scal[S_MAXLEN] > 0:  # a held-out part keeps no heap
            hp = _grow_rows(hp, scal[S_NHEAP], scal[S_NHEAP] + touched[0])
            _push_touched(hp, touched, pr, scal, mode, tok_key, hf_order, tok_off, tok_len, arena)
        scal[S_TOKENS] -= merged_weighted
    grown = pr.shape[0] + ph.shape[0] + lst.shape[0] + blk.shape[0] + hp.shape[0]
    return merged_weighted, grown + pblk.shape[0] != rows, TrainState(
        wsym, wrec, tok_off, tok_len, tok_hash, tok_key, arena, tt, pr, tie_stamp, ph, lst, blk,
        hp, touched, tie_stack, scal, hf_order, lcache, pp, pblk, scr,
    )  # fmt: skip


@njit
def apply_merge_all(states, present, left, right, new, made, mode):
    """`apply_merge` on every state i of the typed list `states` whose row `present[i]` marks
    both `left` and `right` (tokens that may occur in its words), in one call: a call per state
    cost about as much as the merges themselves. A state that merged marks `new`; each state is
    stored back (any of its arrays may have grown). Returns whether any table grew."""
    grew = False
    for i in range(len(states)):
        if present[i, left] == 0 or present[i, right] == 0:
            continue  # one of them cannot occur: no word of this state holds the pair
        merged, grown, states[i] = apply_merge(states[i], left, right, new, made, mode)
        grew = grew or grown  # (any array may be new: the state is always stored back)
        if merged:
            present[i, new] = 1
    return grew


# The typed list of states is made, filled and read through these cached kernels only: the
# typed list's own methods, called from Python, compile for the state's type in every process
# (about 0.6 s and 27 MB more for every parity-aware run).


@njit
def state_list(state):
    """A typed list holding `state` (the others are added with `add_state`)."""
    states = List()
    states.append(state)
    return states


@njit
def add_state(states, state):
    states.append(state)


@njit
def state_at(states, i):
    return states[i]


@njit
def best_pair_at(states, i, mode, tie_limit):
    """`best_pair` of the typed list's state i (no state boxed to Python and back)."""
    return best_pair(states[i], mode, tie_limit)


# What parity-aware training calls (the warm-up compiles them, and is ready when they are cached)
ENTRIES = (state_list, add_state, state_at, best_pair_at, apply_merge_all)

# These kernels compile in the merge loop's helpers: keyed on all of their sources (see
# `_kernels.KERNEL_SOURCES`).
SOURCES: tuple[ModuleType, ...] = (*KERNEL_SOURCES, sys.modules[__name__])
key_caches_on(kernels_of(sys.modules[__name__]), SOURCES)
