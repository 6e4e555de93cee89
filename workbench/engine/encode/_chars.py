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
# unit is a lead byte C0..EF with its continuation bytes, not followed by another one. The kernel
# reads the four straddler tables folded per character into two bit masks (bytes after it,
# bytes before it) beside its id: one cache line a character (`build_char_tables`).
CHAR_ROWS = (1 << 16) + (1 << 11)  # 3-byte units by their 16 low bits, then 2-byte units


@njit
def _char_row(x, y, z, length):
    """Row of a 2- or 3-byte unit in the characters table (`z` unused for 2 bytes)."""
    if length == 2:
        return (1 << 16) + (((x & 31) << 6) | (y & 63))
    return ((x & 15) << 12) | ((y & 63) << 6) | (z & 63)


def build_char_tables(tok_bytes, tok_off, tok_rank) -> tuple:
    """(chars, info) for `char_token`: `chars[row]` is -1 or the character's row `k` of `info`,
    whose eight int64 words (one cache line) are its straddler masks and making rank << 32 | id.

    Words 0-2: bit `nxt` (`nxt - 64` from C0 on) set when a byte `nxt` after it completes a
    straddler of rank <= its making rank (192 bits: a continuation byte never follows a whole
    character); words 3-6: bit `prev` set when a byte before it does. The masks fold the four dense
    straddler tables (5 MB, a cache miss each, up to four a character) into the 64 bytes of the
    character itself, so a CJK character costs two reads near the core: its row and its line.

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
        return out

    b0, b1 = at(first), at(first + 1)
    b2 = at(np.minimum(first + 2, last))
    # Straddlers by the byte outside: S1[next << 6 | z], S2[next << 12 | y << 6 | z] start with
    # the character's last one or two bytes; E1[x << 8 | prev], E2[(x << 6 | y) << 8 | prev]
    # end with its first one or two.
    one = cont(b0) & ~cont(b1)
    two = cont(b0) & cont(b1) & (length > 2) & ~cont(b2)
    s1 = table(256 << 6, (b1[one] << 6) | (b0[one] & 63), rank[one])
    s2 = table(256 << 12, (b2[two] << 12) | ((b0[two] & 63) << 6) | (b1[two] & 63), rank[two])
    z, y, x = at(last), at(last - 1), at(np.maximum(last - 2, first))
    lead = (z >= 0xC0) & (z < 0xF0)
    half = cont(z) & (y >= 0xE0) & (y < 0xF0) & (length > 2)
    e1 = table(256 << 8, (z[lead] << 8) | y[lead], rank[lead])
    e2 = table(1 << 18, ((((y[half] & 15) << 6) | (z[half] & 63)) << 8) | x[half], rank[half])
    # The characters: 2- and 3-byte tokens that are a lead byte and its continuation bytes.
    rank_of_pair = np.full(1 << 16, never, dtype=np.int64)
    pair = length == 2
    rank_of_pair[(b0[pair] << 8) | b1[pair]] = rank[pair]
    double = pair & (b0 >= 0xC0) & (b0 < 0xE0) & cont(b1)
    triple = (length == 3) & (b0 >= 0xE0) & (b0 < 0xF0) & cont(b1) & cont(b2)
    x3, y3, z3 = b0[triple], b1[triple], b2[triple]
    first_merge = np.minimum(rank_of_pair[(x3 << 8) | y3], rank_of_pair[(y3 << 8) | z3])
    made = first_merge != never  # else BPE cannot build it from its bytes
    cx = np.concatenate([b0[double], x3[made]])
    cy = np.concatenate([b1[double], y3[made]])
    cz = np.concatenate([np.zeros(int(double.sum()), dtype=np.int64), z3[made]])
    three = np.concatenate([np.zeros(int(double.sum()), bool), np.ones(int(made.sum()), bool)])
    making = np.concatenate([rank[double], np.maximum(rank[triple], first_merge)[made]])
    char_ids = np.concatenate([ids[double], ids[triple][made]])
    # Rows as the kernel finds them: `_char_row`'s Python body works on whole arrays too.
    rows = np.where(three, _char_row.py_func(cx, cy, cz, 3), _char_row.py_func(cx, cy, cz, 2))
    low = np.where(three, cz, cy) & 63  # the last byte's low bits
    mid = (cy & 63) << 6
    nxt = np.concatenate([np.arange(0x80), np.arange(0xC0, 0x100)])[None, :]
    bad_next = s1[(nxt << 6) | low[:, None]] <= making[:, None]
    bad_next |= three[:, None] & (s2[(nxt << 12) | (mid | low)[:, None]] <= making[:, None])
    prev = np.arange(256)[None, :]
    bad_prev = e1[(cx[:, None] << 8) | prev] <= making[:, None]
    inner = ((cx & 15) << 6) | (cy & 63)
    bad_prev |= three[:, None] & (e2[(inner[:, None] << 8) | prev] <= making[:, None])
    info = _lines(len(rows))
    info[:, 0:3] = np.packbits(bad_next, axis=1, bitorder="little").view("<i8")
    info[:, 3:7] = np.packbits(bad_prev, axis=1, bitorder="little").view("<i8")
    info[:, 7] = (making << 32) | char_ids
    chars = np.full(CHAR_ROWS, -1, dtype=np.int32)
    chars[rows] = np.arange(len(rows), dtype=np.int32)
    return chars, info  # two arrays: fewer to count per call


def _lines(count: int) -> np.ndarray:
    """A zeroed (count, 8) int64 array whose rows are 64-byte cache lines (aligned)."""
    raw = np.zeros(8 * count + 8, dtype=np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip : skip + 8 * count].reshape(count, 8)


@njit(inline="always")  # a call would count references to the tables per character
def char_token(buf, i, start, end, max_rank, char_tables):
    """(id, length) of the character at buf[i] when BPE provably makes it whole before anything
    else touches its bytes (see above), else (-1, 1). `start`/`end` bound the piece."""
    chars, info = char_tables
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
    k = np.int64(chars[_char_row(x, y, z, length)])
    if k < 0:
        return np.int64(-1), 1
    made = info[k, 7]
    if (made >> 32) >= max_rank:
        return np.int64(-1), 1
    if nxt >= 0:
        bit = nxt if nxt < 0x80 else nxt - 64  # 00..7F, then C0..FF
        if (info[k, bit >> 6] >> (bit & 63)) & 1:
            return np.int64(-1), 1
    if i > start:
        prev = np.int64(buf[i - 1])
        if (info[k, 3 + (prev >> 6)] >> (prev & 63)) & 1:
            return np.int64(-1), 1
    return made & LOW32, length
