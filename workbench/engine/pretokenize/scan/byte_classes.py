"""Classifying bytes: `classify` writes each character's class bits at its first byte and
`_CONT` at its continuation bytes, 32 bytes a step where it can, with the UTF-8 decoding the
scan's other helpers share (`_decode_at`, `_smaller`).

The vector steps themselves are LLVM IR in `_native.scan_ir`; the class tables the kernels take
are made by `entry.kernel_tables`. Splitting text into pieces is `rules` and `windows`.
"""

from __future__ import annotations

import numpy as np

from workbench.engine._native.numba_config import njit
from workbench.engine._native.scan_ir import (
    _classify_ascii_step,
    _classify_step,
    _get,
    _load_u64,
    _lowest_bit,
    _put,
    _store_u64,
    _trailing_zero_bytes,
)
from workbench.engine._native.scan_layout import _AFTER, _BEFORE, _CONT, _L, _LO, _N, _S, _STEP, _UP
from workbench.engine.patterns import unicode_classes as uc

assert (_L, _N, _S, _UP, _LO) == (uc.L, uc.N, uc.S, uc.UPPERISH, uc.LOWERISH)


@njit(inline="always")
def _smaller(a, b):
    """min(a, b) for two integers, inline: Numba compiles the builtin `min` as a function of its
    own that every use calls (a call per 8 bytes of a long piece compared, hashed or keyed)."""
    return a if a < b else b


_HIGH_BITS = np.uint64(0x8080808080808080)  # a non-ASCII byte among eight has its bit set
_LOW_BYTE = np.uint64(0xFF)


@njit(inline="always")
def _decode(b0, b1, b2, b3, avail):
    r"""(code point, length) of the sequence b0 b1 b2 b3 (of which `avail` exist), per RFC 3629.

    An invalid lead byte b0 is (0xDC00 + b0, 1): Python's "surrogateescape" code point, which
    `regex` classes as "other". Example: (0xC3, 0xA9, 0, 0, 2) -> (0xE9, 2).
    """
    if b0 < 0xC2 or b0 > 0xF4:
        return 0xDC00 + b0, 1
    length = 2 if b0 < 0xE0 else (3 if b0 < 0xF0 else 4)
    if length > avail:
        return 0xDC00 + b0, 1
    cp = b0 & (0x7F >> length)
    for k in range(length - 1):
        b = b1 if k == 0 else (b2 if k == 1 else b3)
        if (b & 0xC0) != 0x80:
            return 0xDC00 + b0, 1
        cp = (cp << 6) | (b & 0x3F)
    too_small = (length == 3 and cp < 0x800) or (length == 4 and cp < 0x10000)
    if too_small or cp > 0x10FFFF or (0xD800 <= cp <= 0xDFFF):
        return 0xDC00 + b0, 1
    return cp, length


@njit(inline="always")
def _decode_at(data, i, n):
    """(code point, length) of the character at byte `i` (ASCII or not)."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1
    avail = _smaller(n - i, 4)
    b1 = np.int64(data[i + 1]) if avail > 1 else 0
    b2 = np.int64(data[i + 2]) if avail > 2 else 0
    b3 = np.int64(data[i + 3]) if avail > 3 else 0
    return _decode(b0, b1, b2, b3, avail)


@njit(inline="always")
def _ascii_classes(flags, word):
    """The class bytes of eight bytes packed in `word`, packed the same way (byte k's class in
    bits 8k..8k+7). A non-ASCII byte gets flags[byte], a wrong class the caller overwrites."""
    out = np.uint64(0)
    for k in range(8):
        out |= np.uint64(flags[(word >> np.uint64(8 * k)) & _LOW_BYTE]) << np.uint64(8 * k)
    return out


@njit(inline="always")
def _classify_char(data, flags, cls, i, n):
    """Classify the character at `i` (ASCII or not); returns the next offset."""
    cp, length = _decode_at(data, i, n)
    cls[i] = flags[cp]
    for k in range(i + 1, i + length):
        cls[k] = _CONT
    return i + length


@njit(inline="always")
def _classify_leads(flags, cls, i, leads, code_points):
    """cls[i + j] = flags[code_points[j]] for each set bit j of `leads` (after `_classify_step`)."""
    while leads != 0:
        j = _lowest_bit(leads)
        _put(cls, i + j, _get(flags, _get(code_points, j)))
        leads &= leads - np.uint64(1)


@njit
def classify(data, flags, cls):
    """Fill `cls` for `data`: class bits at each character's first byte, _CONT at the others.

    `flags` already carries _NL on \r and \n, and its ASCII part is `ascii_classes_by_ranges()`.
    Example: "é!" (C3 A9 21) -> [L|LO, _CONT, 0].
    """
    n = data.shape[0]
    code_points = np.empty(_STEP, dtype=np.uint16)
    i = 0
    vector_from = _BEFORE  # where the next 32-byte step may start (later after a failed one)
    while i < n:
        if i >= vector_from and i + _STEP + _AFTER <= n:
            leads, carry, ok = _classify_step(data, cls, i, code_points)
            if ok:
                # the last character's continuation bytes past the step (rewritten if none)
                _put(cls, i + _STEP, _CONT)
                _put(cls, i + _STEP + 1, _CONT)
                i += _STEP + carry
                if leads != 0:
                    _classify_leads(flags, cls, i - _STEP - carry, leads, code_points)
                else:  # all ASCII: ASCII-only steps for as long as they last (tried at every
                    # step, their branch mispredicts on mixed text: classify 0.7x there)
                    while i + _STEP <= n and _classify_ascii_step(data, cls, i):
                        i += _STEP
                continue
            vector_from = i + _STEP  # byte by byte past what made it fail
        if i + 8 <= n:
            # Eight bytes at once: one load, eight table lookups, one store. Bytes after the
            # first non-ASCII one get wrong classes here and are written again (everything from
            # the resume point on is), so mixed text pays no byte loop for its ASCII.
            word = _load_u64(data, i)
            _store_u64(cls, i, _ascii_classes(flags, word))
            high = word & _HIGH_BITS
            if high == 0:
                i += 8
                continue
            i += _trailing_zero_bytes(high)
        while True:  # a run of non-ASCII characters, or the last bytes (one call site: compiling)
            i = _classify_char(data, flags, cls, i, n)
            if i >= n or (i + 8 <= n and data[i] < 0x80) or i >= vector_from:
                break
