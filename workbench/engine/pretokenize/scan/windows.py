"""Piece starts 32 bytes at a time, and `scan_starts`, the scan that writes them: the windows
find most starts at once (`_native.window_ir` builds their rules), the piece-by-piece rules
(`rules`) take over where a window cannot decide, then hand back.

Counting the pieces found is `table`; the Python calls are `entry`.
"""

from __future__ import annotations

import numpy as np
from numba import literally, types
from numba.core import errors
from numba.extending import overload

from workbench.engine._native.numba_config import OPTIONS, njit
from workbench.engine._native.scan_ir import _bits_set, _borrowed, _get, _lowest_bit, _put
from workbench.engine._native.scan_layout import _APOSTROPHE, _WINDOW
from workbench.engine._native.window_ir import (
    _BEHIND,
    _REACH,
    _cl100k_starts,
    _gpt2_starts,
    _o200k_starts,
)
from workbench.engine.pretokenize.scan.rules import _piece_at

_STARTS = np.uint64((1 << _WINDOW) - 1)
_U_WINDOW = np.uint64(_WINDOW)


@njit(inline="always")
def _write_starts(out, k, base, starts):
    """out[k:] = base + the index of each set bit of `starts`, in order; returns the new k.
    Sixteen are written whatever their number (most windows of 32 bytes have fewer: no branch on
    it); the caller leaves room for 32."""
    count = _bits_set(starts)
    for r in range(_WINDOW // 2):
        _put(out, k + r, base + _lowest_bit(starts))
        starts &= starts - np.uint64(1)
    for r in range(_WINDOW // 2, count):  # rare: 17 or more pieces start in 32 bytes
        _put(out, k + r, base + _lowest_bit(starts))
        starts &= starts - np.uint64(1)
    return k + count


@njit(inline="always")
def _scan_gpt2_windows(text, cls, i, n, out, k, cap):
    """From the piece start `i` (written at out[k]), write starts 32 bytes at a time until an
    apostrophe starts a piece, the data's end is near or `out` is nearly full. Returns (k, i,
    full): pieces written, a piece start (not yet written) where the piece-by-piece scan takes
    over, and whether `out` has no room for another window (the caller then returns, rather
    than fill the last slots piece by piece: it resumes at `i` with an empty block)."""
    out[k] = i
    k += 1
    b = i
    while b + _WINDOW + 4 <= n and k + _WINDOW <= cap:
        found = _gpt2_starts(text, cls, b)
        starts = found & _STARTS
        quotes = (found >> _U_WINDOW) & _STARTS
        if quotes != 0:  # up to the apostrophe, which the piece-by-piece scan takes
            first = _lowest_bit(quotes)
            k = _write_starts(
                out, k, b + 1, starts & ((np.uint64(1) << np.uint64(first)) - np.uint64(1))
            )
            return k, b + 1 + first, False
        k = _write_starts(out, k, b + 1, starts)
        b += _WINDOW
    k -= 1  # hand over at the last start written
    return k, out[k], k + 1 + _WINDOW > cap


def _windows_scan(find_starts, quote_starts: bool):
    """`_scan_gpt2_windows` for cl100k or o200k, with `find_starts` one of the intrinsics above:
    from the piece start `i` (written at out[k]), starts 32 bytes at a time; at a byte the masks
    cannot settle, it hands over at an apostrophe that starts a piece (if `quote_starts`: cl100k),
    or else at the last start written (the piece-by-piece scan finds the rest)."""

    @njit(inline="always")
    def scan(text, cls, i, n, out, k, cap):
        out[k] = i
        k += 1
        b = i
        while b + _REACH <= n and k + _WINDOW <= cap:
            found = find_starts(text, cls, b)
            starts = found & _STARTS
            hand = (found >> _U_WINDOW) & _STARTS
            if hand != 0:
                first = _lowest_bit(hand)
                k = _write_starts(
                    out, k, b + 1, starts & ((np.uint64(1) << np.uint64(first)) - np.uint64(1))
                )
                if quote_starts and _get(text, b + 1 + first) == _APOSTROPHE:  # a piece's start
                    return k, b + 1 + first, False
                k -= 1
                return k, out[k], False
            k = _write_starts(out, k, b + 1, starts)
            b += _WINDOW
        k -= 1  # hand over at the last start written
        return k, out[k], k + 1 + _WINDOW > cap

    return scan


_scan_cl100k_windows = _windows_scan(_cl100k_starts, quote_starts=True)
_scan_o200k_windows = _windows_scan(_o200k_starts, quote_starts=False)


def _fast_starts(text, cls, i, n, preset, out, k, cap):
    """(k, i, full) after the starts a preset finds without going piece by piece (kernels only)."""
    raise NotImplementedError("a Numba kernel helper: call it from jitted code")


@overload(_fast_starts, prefer_literal=True, inline="always", jit_options=OPTIONS)
def _fast_starts_for_preset(text, cls, i, n, preset, out, k, cap):
    """gpt2 takes text 32 bytes at a time from the piece start `i` (see
    `_scan_gpt2_windows`); the other presets have nothing here, and their kernels hold no code
    of it."""
    if not isinstance(preset, types.IntegerLiteral):
        raise errors.TypingError("the scanner's preset must be a compile-time constant")
    if preset.literal_value == 1:
        return _cl100k_fast_starts
    if preset.literal_value == 2:
        return _o200k_fast_starts
    if preset.literal_value != 0:
        return lambda text, cls, i, n, preset, out, k, cap: (k, i, False)

    def impl(text, cls, i, n, preset, out, k, cap):
        room = i >= 3 and i + _WINDOW + 4 <= n and k + _WINDOW < cap
        if room and _get(text, i) != _APOSTROPHE:
            return _scan_gpt2_windows(text, cls, i, n, out, k, cap)
        return k, i, False

    return impl


def _cl100k_fast_starts(text, cls, i, n, preset, out, k, cap):
    room = i >= _BEHIND - 1 and i + _REACH <= n and k + _WINDOW < cap
    if room and _get(text, i) != _APOSTROPHE:
        return _scan_cl100k_windows(text, cls, i, n, out, k, cap)
    return k, i, False


def _o200k_fast_starts(text, cls, i, n, preset, out, k, cap):
    # at any piece start: a contraction is never a piece of its own in o200k
    if i >= _BEHIND - 1 and i + _REACH <= n and k + _WINDOW < cap:
        return _scan_o200k_windows(text, cls, i, n, out, k, cap)
    return k, i, False


@njit
def scan_starts(data, cls, start, preset, fold_cps, fold_letters, out):
    """Write piece starts from byte `start` into `out` until it is (nearly) full or the data ends.

    Returns (pieces written, where to resume). Pieces depend only on where they start, so a
    resumed scan continues exactly where `regex.findall` would. Preset 0 gpt2, 1 cl100k, 2 o200k,
    a constant (see `_piece_at`): callers pass a literal, or one they were given as a literal.
    """
    literally(preset)
    text, classes = _borrowed(data), _borrowed(cls)
    fold_from, fold_to = _borrowed(fold_cps), _borrowed(fold_letters)
    starts = _borrowed(out)  # written by inlined helpers: see `_borrowed`
    n = data.shape[0]
    i = start
    k = 0
    cap = out.shape[0]
    while i < n and k < cap:
        k, i, full = _fast_starts(text, classes, i, n, preset, starts, k, cap)
        if full:
            break
        starts[k] = i
        i = _piece_at(text, classes, i, n, preset, fold_from, fold_to)
        k += 1
    return k, i
