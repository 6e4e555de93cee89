"""The merge loop's state and constants: the arrays the kernels share, and what each column holds.

(Private to `train/`: `trainer.py` owns the state; `_tables`, `_heap` and `_kernels` work on it.)

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

Long words (`LONG_WORD` symbols or more: a file without spaces can be one 50 MB pre-token) are
not walked whole per merge: see `_long`. Their symbols stay in place (`wrec[w, W_LONG]` is 1; a
merged token's emptied slots hold negative numbers that lead to its neighbours), and each pair
keeps the `wsym` positions where it formed in a long word (`pp`, chained blocks `pblk`), so a
merge visits only those. Stale positions are fine: each is checked.

`scal` holds the mutable scalars (see the S_* indices) so the kernels can update them in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


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
    lcache: np.ndarray | None  # int64 rows: pair ids met in one visit of a long word
    pp: np.ndarray  # int32 rows (head, tail): per pair, its positions in long words
    pblk: np.ndarray  # int32 rows (next, fill, positions...)
    scr: np.ndarray | None  # int64: the merged pair's positions, sorted (see `_long`)
    # (lcache and scr are None when no word is long: see `_long.merge_long_word`)


class MergeEvents(NamedTuple):
    """Output rows of `run_merges`, one per merge made (sized by the caller)."""

    left: np.ndarray  # int32
    right: np.ndarray  # int32
    new: np.ndarray  # int32
    count: np.ndarray  # int64
    is_new: np.ndarray  # bool
    ties: np.ndarray  # int64
    tokens: np.ndarray  # int64
    runner_up: np.ndarray  # int64: the best losing pair's count (-1: not computed)


LEX = 0
HF = 1

BLOCK = 6  # words per word-list block; most pairs live in one or two words
# Symbols of one word handled per capacity check. Room is reserved for what a span can add, so
# a long word (a run of one character: 16 MB of `a` is one 16M-symbol word) must not reserve
# for all of its symbols at once: that took gigabytes for pairs it never makes.
SPAN = 1 << 16

# columns of the 2-D state arrays
W_OFF, W_LEN, W_COUNT, W_LONG = 0, 1, 2, 3  # wrec (int64, 4 columns: 32-byte rows)
P_KEY, P_CNT, P_LIST, P_STAMP = 0, 1, 2, 3  # pr (int64)
H_CNT, H_K1, H_K2, H_REF = 0, 1, 2, 3  # hp (int64)
L_HEAD, L_TAIL, L_LAST = 0, 1, 2  # lst (int32, 4 columns)
B_NEXT, B_FILL, B_WORDS = 0, 1, 2  # blk (int32, 2 + BLOCK = 8 columns: 32-byte rows)
PP_HEAD, PP_TAIL = 0, 1  # pp (int32): first and last block of a pair's positions, or -1
PB_NEXT, PB_FILL, PB_POS = 0, 1, 2  # pblk (int32, 2 + PBLOCK = 16 columns: 64-byte rows)
PBLOCK = 14  # positions per block
# Symbols from which a word is long. Below it, walking the word per merge costs less than the
# position lists (at least 4 bytes of positions per symbol) and stays the path
# every prose word takes.
LONG_WORD = 1 << 10
ARITY = 4  # heap fan-out: half the depth of a binary heap, children in one or two cache lines
TIE_STACK = 256  # DFS stack of _count_ties and _runner_up: 3 per level of a 4-ary heap

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
S_LONG = 9  # 1 when some word is long (`pp` and `pblk` are in use)
S_NPBLK = 10  # position blocks used
S_PFREE = 11  # first free position block (-1: none)
S_NSCR = 12  # positions in `scr` for the merge being made
# The longest token a merge may make, in bytes (max_token_length; no cap: the int64 maximum). A
# pair over it never enters the heap: its tokens' lengths never change, so it can never win.
S_MAXLEN = 13
# > 0: SuperBPE's stage-2 rules, a token holding at most this many words and no `: `
# (`_kernels._superword_allowed`). Like the length cap, a refused pair never enters the heap: its
# tokens' bytes never change, so it could never be merged, and the heap holds only pairs that
# can be (the ties and runner-up of each merge count those alone). 0: no rules.
S_MAXWORDS = 14
# The most characters a merge's token may hold (max_token_chars, counted as `char_count` says; no
# cap: the int64 maximum). As with S_MAXLEN a pair over it never enters the heap.
S_MAXCHARS = 15
N_SCAL = 16

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
