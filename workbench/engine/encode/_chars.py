"""Whole characters: the tables that let BPE start a 2- or 3-byte character as one token, and
the probe that reads them (`char_token`).

Private to `encode/`: built once with the other tables (`_core.Core.tables`), read by the
merging kernels' starting point (`_merge.py`). Not here: the pair and whole-piece tables.
"""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit
from workbench.engine.encode._tables import LOW32, NEVER

# A piece of CJK text is mostly 3-byte characters, and BPE spends two merges (and four pair
# lookups) per character just rebuilding it. A character `c` may be one token at once when BPE
# would make it before any merge touches its bytes otherwise: its own merges have ranks up to
# `R` (its "making rank"), and every token holding part of `c` and a byte beside it ("a
# straddler") has a rank above `R`. Then, in rank order, `c` is whole before a straddler could
# form, and once whole none can; the other merges keep their order (one of equal rank would be
# the same token overlapping `c`: a straddler). Straddlers are found by the byte just outside
# `c`: `S1[next << 6 | z]`, `S2[next << 12 | y << 6 | z]` hold the lowest rank of a token that
# starts with `c`'s last one or two bytes (continuation bytes, kept to their low 6 bits) and goes
# on with `next`; `E1[x << 8 | prev]`, `E2[(x << 6 | y) << 8 | prev]` that of a token ending with
# `c`'s first byte or two, preceded by `prev`. Only bytes matter, so invalid UTF-8 is no harm: a
# unit is a lead byte C0..EF with its continuation bytes, not followed by another one.
CHAR_ROWS = (1 << 16) + (1 << 11)  # 3-byte units by their 16 low bits, then 2-byte units
_S2_AT = 256 << 6  # where S2, E1 and E2 start in the one straddlers array
_E1_AT = _S2_AT + (256 << 12)
_E2_AT = _E1_AT + (256 << 8)


@njit
def _char_row(x, y, z, length):
    """Row of a 2- or 3-byte unit in the characters table (`z` unused for 2 bytes)."""
    if length == 2:
        return (1 << 16) + (((x & 31) << 6) | (y & 63))
    return ((x & 15) << 12) | ((y & 63) << 6) | (z & 63)


def build_char_tables(tok_bytes, tok_off, tok_rank) -> tuple:
    """(chars, S1 + S2 + E1 + E2 in one array) for `char_token`; `chars[row]` = making rank
    << 32 | id, or -1.

    The making rank of `xyz` is the larger of its first merge (`xy` or `yz`, the lower) and its
    own rank: what BPE of `xyz` alone goes through. NumPy over all tokens at once (a few ms for
    o200k): no kernel to compile.
    """
    never = np.int64(NEVER)
    lengths = tok_off[1:] - tok_off[:-1]
    ids = np.flatnonzero((lengths >= 2) & (tok_rank != NEVER))
    rank = tok_rank[ids].astype(np.int64)
    first, last, length = tok_off[ids], tok_off[ids + 1] - 1, lengths[ids]

    def at(offsets: np.ndarray) -> np.ndarray:
        return tok_bytes[offsets].astype(np.int64)

    def cont(values: np.ndarray) -> np.ndarray:
        return (values & 0xC0) == 0x80

    def table(size: int, rows: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        out = np.full(size, never, dtype=np.int64)
        np.minimum.at(out, rows, ranks)
        return out.astype(np.int32)

    b0, b1 = at(first), at(first + 1)
    b2 = at(np.minimum(first + 2, last))
    # Tokens starting with one or two continuation bytes, then `next`.
    one = cont(b0) & ~cont(b1)
    two = cont(b0) & cont(b1) & (length > 2) & ~cont(b2)
    s1 = table(256 << 6, (b1[one] << 6) | (b0[one] & 63), rank[one])
    s2 = table(256 << 12, (b2[two] << 12) | ((b0[two] & 63) << 6) | (b1[two] & 63), rank[two])
    # Tokens ending with a lead byte (2 or 3 bytes), or a 3-byte lead and one continuation byte.
    z, y, x = at(last), at(last - 1), at(np.maximum(last - 2, first))
    lead = (z >= 0xC0) & (z < 0xF0)
    half = cont(z) & (y >= 0xE0) & (y < 0xF0) & (length > 2)
    e1 = table(256 << 8, (z[lead] << 8) | y[lead], rank[lead])
    e2 = table(1 << 18, ((((y[half] & 15) << 6) | (z[half] & 63)) << 8) | x[half], rank[half])
    # The characters: 2- and 3-byte tokens that are a lead byte and its continuation bytes.
    rank_of_pair = np.full(1 << 16, never, dtype=np.int64)
    pair = length == 2
    rank_of_pair[(b0[pair] << 8) | b1[pair]] = rank[pair]
    chars = np.full(CHAR_ROWS, -1, dtype=np.int64)
    double = pair & (b0 >= 0xC0) & (b0 < 0xE0) & cont(b1)
    # Rows as the kernel finds them: `_char_row`'s Python body works on whole arrays too.
    rows = _char_row.py_func(b0[double], b1[double], 0, 2)
    chars[rows] = (rank[double] << 32) | ids[double]
    triple = (length == 3) & (b0 >= 0xE0) & (b0 < 0xF0) & cont(b1) & cont(b2)
    x3, y3, z3 = b0[triple], b1[triple], b2[triple]
    first_merge = np.minimum(rank_of_pair[(x3 << 8) | y3], rank_of_pair[(y3 << 8) | z3])
    making = np.maximum(rank[triple], first_merge)
    made = first_merge != never  # else BPE cannot build it from its bytes
    rows = _char_row.py_func(x3, y3, z3, 3)
    chars[rows[made]] = (making[made] << 32) | ids[triple][made]
    return chars, np.concatenate([s1, s2, e1, e2])  # two arrays: fewer to count per call


@njit(inline="always")  # a call would count references to the five tables per character
def char_token(buf, i, start, end, max_rank, char_tables):
    """(id, length) of the character at buf[i] when BPE provably makes it whole before anything
    else touches its bytes (see above), else (-1, 1). `start`/`end` bound the piece."""
    chars, straddlers = char_tables
    x = np.int64(buf[i])
    if x < 0xC0 or x >= 0xF0:
        return np.int64(-1), 1
    length = 2 if x < 0xE0 else 3
    stop = i + length
    if stop > end:
        return np.int64(-1), 1
    y = np.int64(buf[i + 1])
    z = np.int64(buf[i + 2]) if length == 3 else np.int64(0x80)
    if (y & 0xC0) != 0x80 or (z & 0xC0) != 0x80:
        return np.int64(-1), 1
    nxt = np.int64(buf[stop]) if stop < end else np.int64(-1)
    if (nxt & 0xC0) == 0x80:
        return np.int64(-1), 1
    info = chars[_char_row(x, y, z, length)]
    making = info >> 32
    if info < 0 or making >= max_rank:
        return np.int64(-1), 1
    last = np.int64(buf[stop - 1]) & 63
    if nxt >= 0:
        if straddlers[(nxt << 6) | last] <= making:
            return np.int64(-1), 1
        if length == 3 and straddlers[_S2_AT + ((nxt << 12) | ((y & 63) << 6) | last)] <= making:
            return np.int64(-1), 1
    if i > start:
        prev = np.int64(buf[i - 1])
        if straddlers[_E1_AT + ((x << 8) | prev)] <= making:
            return np.int64(-1), 1
        row = _E2_AT + (((((x & 15) << 6) | (y & 63)) << 8) | prev)
        if length == 3 and straddlers[row] <= making:
            return np.int64(-1), 1
    return info & LOW32, length
