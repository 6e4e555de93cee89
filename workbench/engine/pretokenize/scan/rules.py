r"""The preset rules, piece by piece: where the gpt2, cl100k, o200k or SuperBPE stage-2 piece
starting at a byte ends (`_piece_at`, chosen while compiling for a literal preset), over
classified bytes.

Runs of a class, whitespace with `\s+(?!\S)`, digits in threes, contractions and o200k's case
runs each have a helper here. The 32-byte windows that find most starts without going piece by
piece are `windows`; classifying is `byte_classes`; the counting table is `table`.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload

from workbench.engine._native.numba_config import OPTIONS, njit
from workbench.engine._native.scan_ir import _get, _run_end_in, _run_end_out
from workbench.engine._native.scan_layout import (
    _APOSTROPHE,
    _CONT,
    _CR,
    _L,
    _LF,
    _LNS,
    _LO,
    _N,
    _NL,
    _S,
    _SLASH,
    _SPACE,
    _UP,
)
from workbench.engine.pretokenize.scan.byte_classes import _decode_at

# Design: one pass classifies every byte (`cls[i]` = class bits of the character starting at byte
# i, or _CONT inside a character); the scan then works on bytes, and a run of a class is a search
# over `cls[i] & (mask | _CONT)`, eight bytes at a time (`_run_end_intrinsic`). Numba optimises
# each function before linking, so a call is never inlined by LLVM and a call with array
# arguments also pays reference counting: the small helpers are inlined at the Numba level
# (inline="always"), each at few call sites to keep the compile time short. Rare paths
# (contractions) stay calls.


@njit(inline="always")
def _skip(cls, i, n, mask):
    """End of the run of characters with a bit of `mask` (their continuation bytes ride along)."""
    m = mask | _CONT
    i = _run_end_in(cls, i, n, m)
    while i < n and (_get(cls, i) & m) != 0:
        i += 1
    return i


@njit(inline="always")
def _skip_other(cls, i, n):
    r"""End of the run of `[^\s\p{L}\p{N}]` characters (continuation bytes have no such bit)."""
    i = _run_end_out(cls, i, n, _LNS)
    while i < n and (_get(cls, i) & _LNS) == 0:
        i += 1
    return i


@njit(inline="always")
def _next_char(cls, i, n):
    """Byte offset of the character after the one starting at `i`."""
    i += 1
    while i < n and _get(cls, i) == _CONT:
        i += 1
    return i


@njit(inline="always")
def _digits(cls, i, n):
    r"""`\p{N}{1,3}` after its first digit, which ends at `i`: at most two more digits."""
    for _ in range(2):
        if i >= n or (_get(cls, i) & _N) == 0:
            break
        i = _next_char(cls, i, n)
    return i


@njit(inline="always")
def _newlines(data, i, n, slash):
    r"""End of `[\r\n]*` (or `[\r\n/]*` when `slash`); ASCII, so bytes can be compared."""
    while i < n and (
        _get(data, i) == _LF or _get(data, i) == _CR or (slash and _get(data, i) == _SLASH)
    ):
        i += 1
    return i


@njit(inline="always")
def _whitespace(cls, i, n, newline_rule):
    r"""The piece for a whitespace run at `i`: `\s*[\r\n]+` (if `newline_rule`), `\s+(?!\S)`, `\s+`.

    Example: "a   b" at 1 -> 3 (two spaces; the third goes with "b"); "  \n x" at 0 -> 3.
    """
    j = _skip(cls, i, n, _S)  # the run, eight class bytes at a time
    if newline_rule:  # back to its last \r or \n (single bytes: the piece ends right after it)
        k = j - 1
        while k >= i and (_get(cls, k) & _NL) == 0:
            k -= 1
        if k >= i:
            return k + 1
    last = j - 1  # the start of the run's last character
    while _get(cls, last) == _CONT:
        last -= 1
    if j < n and last > i:  # a non-space follows: give the last whitespace character back
        return last
    return j


# --- contractions (after an apostrophe only, so they may be calls) -----------------------------


@njit
def _contraction(data, i, n, fold_cps, fold_letters, ignore_case):
    """End of `'s|'t|'re|'ve|'m|'ll|'d` at `i`, or -1; case-insensitive per `regex` if asked.

    Example: "'ll" -> 3; "'LL" -> 3 only when `ignore_case`; "'x" -> -1.
    """
    if i >= n or _get(data, i) != _APOSTROPHE:
        return -1
    c1, j = _letter(data, i + 1, n, fold_cps, fold_letters, ignore_case)
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:  # s t m d
        return j
    if c1 == 114 or c1 == 118 or c1 == 108:  # r v l
        c2, k = _letter(data, j, n, fold_cps, fold_letters, ignore_case)
        if (c2 == 101 and c1 != 108) or (c2 == 108 and c1 == 108):  # 're 've 'll
            return k
    return -1


@njit
def _letter(data, i, n, fold_cps, fold_letters, ignore_case):
    """(lowercase ASCII contraction letter or 0, next offset) for the character at `i`."""
    if i >= n:
        return 0, n
    cp, length = _decode_at(data, i, n)
    if not ignore_case:
        return (cp if cp < 0x80 else 0), i + length
    for k in range(fold_cps.shape[0]):
        if fold_cps[k] == cp:
            return np.int64(fold_letters[k]), i + length
    return 0, i + length


@njit(inline="always")
def _optional_contraction(data, i, n, fold_cps, fold_letters):
    """`(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: its end if present, else `i`."""
    if i >= n or _get(data, i) != _APOSTROPHE:  # the common case, without a call
        return i
    end = _contraction(data, i, n, fold_cps, fold_letters, True)
    return end if end > 0 else i


# --- the three presets -------------------------------------------------------------------------


@njit(inline="always")
def _piece_gpt2(data, cls, i, n, fold_cps, fold_letters):
    """End of the gpt2 piece at `i`: contraction, ` ?` + letters/digits/other, whitespace."""
    c = _get(cls, i)
    if _get(data, i) == _APOSTROPHE:
        end = _contraction(data, i, n, fold_cps, fold_letters, False)
        if end > 0:
            return end
    if _get(data, i) == _SPACE and i + 1 < n:  # ` ?` then a letter, digit or "other" run
        c2 = _get(cls, i + 1)
        if (c2 & _L) != 0:
            return _skip(cls, i + 2, n, _L)
        if (c2 & _N) != 0:
            return _skip(cls, i + 2, n, _N)
        if (c2 & _LNS) == 0:
            return _skip_other(cls, i + 2, n)
    if (c & _L) != 0:
        return _skip(cls, i + 1, n, _L)
    if (c & _N) != 0:
        return _skip(cls, i + 1, n, _N)
    if (c & _LNS) == 0:
        return _skip_other(cls, i + 1, n)
    return _whitespace(cls, i, n, False)


@njit(inline="always")
def _punct_or_space(data, cls, i, n, slash):
    r"""cl100k/o200k tail: ` ?[^\s\p{L}\p{N}]+[\r\n]*` (`/` too in o200k), then whitespace."""
    if _get(data, i) == _SPACE and i + 1 < n and (_get(cls, i + 1) & _LNS) == 0:
        return _newlines(data, _skip_other(cls, i + 2, n), n, slash)
    if (_get(cls, i) & _LNS) == 0:
        return _newlines(data, _skip_other(cls, i + 1, n), n, slash)
    return _whitespace(cls, i, n, True)


@njit(inline="always")
def _piece_cl100k(data, cls, i, n, fold_cps, fold_letters):
    """End of the cl100k piece at `i` (see `patterns.CL100K` for the alternatives, in order)."""
    c = _get(cls, i)
    if _get(data, i) == _APOSTROPHE:
        end = _contraction(data, i, n, fold_cps, fold_letters, True)
        if end > 0:
            return end
    if (c & _L) != 0:
        return _skip(cls, i + 1, n, _L)
    j = _next_char(cls, i, n)
    if (
        (c & (_L | _N | _NL)) == 0 and j < n and (_get(cls, j) & _L) != 0
    ):  # `[^\r\n\p{L}\p{N}]?\p{L}+`
        return _skip(cls, j + 1, n, _L)
    if (c & _N) != 0:
        return _digits(cls, j, n)
    return _punct_or_space(data, cls, i, n, False)


@njit(inline="always")
def _upper_then_lower(data, cls, s, n, fold_cps, fold_letters):
    """`[Up]*[Lo]+(?i:contraction)?` at `s`, or -1.

    `[Up]*` takes the longest run, then backtracks to the last character that can start `[Lo]+`:
    the one just after the run if it is lower-class, else the last lower-class character inside
    the run (Lm, Lo and M are in both classes). Example: "ABc" -> 3, "ǅ" (Lt only) -> -1.
    """
    j = _skip(cls, s, n, _UP)
    if j < n and (_get(cls, j) & _LO) != 0:
        end = _skip(cls, j + 1, n, _LO)
    else:  # back to the run's last lower-class character (continuation bytes are not)
        k = j - 1
        while k >= s and (_get(cls, k) & _LO) == 0:
            k -= 1
        if k < s:
            return -1
        end = _next_char(cls, k, n)  # what follows it is upper-only or not a letter
    return _optional_contraction(data, end, n, fold_cps, fold_letters)


@njit(inline="always")
def _upper_only(data, cls, s, n, fold_cps, fold_letters):
    """`[Up]+[Lo]*(?i:contraction)?` at `s`, or -1. Example: "ABC" -> 3, "ABC's" -> 5."""
    j = _skip(cls, s, n, _UP) if s < n and (_get(cls, s) & _UP) != 0 else s
    if j == s:
        return -1
    end = _skip(cls, j, n, _LO)
    return _optional_contraction(data, end, n, fold_cps, fold_letters)


@njit(inline="always")
def _piece_o200k(data, cls, i, n, fold_cps, fold_letters):
    """End of the o200k piece at `i`: each case alternative is tried with, then without, prefix."""
    c = _get(cls, i)
    j = _next_char(cls, i, n)
    prefix = (c & (_L | _N | _NL)) == 0  # `[^\r\n\p{L}\p{N}]?` may take the character at i
    # `regex` tries all of the first alternative (with, then without, the prefix) before the second.
    # A start that is not a cased letter or mark fails at once, which keeps punctuation cheap.
    prefix_ok = prefix and j < n and (_get(cls, j) & (_UP | _LO)) != 0
    here_ok = (c & (_UP | _LO)) != 0
    # Fast path, same result: a lowercase-only (Ll) start makes `[Up]*` empty and `[Lo]+` greedy.
    if prefix_ok and (_get(cls, j) & (_UP | _LO)) == _LO:
        return _optional_contraction(data, _skip(cls, j + 1, n, _LO), n, fold_cps, fold_letters)
    if (c & (_UP | _LO)) == _LO:  # Ll is a letter, so no prefix was possible
        return _optional_contraction(data, _skip(cls, i + 1, n, _LO), n, fold_cps, fold_letters)
    for attempt in range(4 if prefix_ok or here_ok else 0):  # none for punctuation, spaces
        first_alternative = attempt < 2
        start = j if attempt % 2 == 0 else i
        if not (prefix_ok if attempt % 2 == 0 else here_ok):
            continue
        if first_alternative:
            end = _upper_then_lower(data, cls, start, n, fold_cps, fold_letters)
        else:
            end = _upper_only(data, cls, start, n, fold_cps, fold_letters)
        if end >= 0:
            return end
    if (c & _N) != 0:
        return _digits(cls, j, n)
    return _punct_or_space(data, cls, i, n, True)


# --- SuperBPE's stage 2 (`patterns.superbpe.STAGE2_PATTERN`) ----------------------------------


@njit(inline="always")
def _stage2_split(data, cls, i, n):
    r"""End of the authors' split `\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S)` at `i`,
    or -1 where none of its alternatives matches (tried in that order, as `regex` does).

    Example: "12345" -> 3; " !!/\r\n" -> 6; "   a" -> 2 (the last space goes with "a"); " a" -> -1.
    """
    if (_get(cls, i) & _N) != 0:
        return _digits(cls, _next_char(cls, i, n), n)
    s = i + 1 if _get(data, i) == _SPACE else i  # ` ?` (if the rest fails, so does it without)
    if s < n and (_get(cls, s) & _LNS) == 0:
        j = _next_char(cls, s, n)
        if j < n and (_get(cls, j) & _LNS) == 0:  # two or more "other" characters
            e = _skip_other(cls, j + 1, n)  # greedy: `[\r/]*\n?` after it cannot fail
            while e < n and (_get(data, e) == _CR or _get(data, e) == _SLASH):
                e += 1
            return e + 1 if e < n and _get(data, e) == _LF else e
    if _get(data, i) != _SPACE:
        return -1
    j = i + 1
    while j < n and _get(data, j) == _SPACE:
        j += 1
    if j == n or (_get(cls, j) & _S) != 0:  # `(?!\S)` holds after the whole run
        return j
    return j - 1 if j - i >= 2 else -1  # else give the last space back, if one is left


@njit(inline="always")
def _piece_stage2(data, cls, i, n):
    r"""End of the stage-2 piece at `i`: a split match, else the stretch up to the next place
    where one starts or the line's end (`(?:(?!split)[^\n])+\n?`), else a lone `\n`.

    A letter never starts a split, so runs of letters are skipped eight class bytes at a time.
    Example: "a b, c\nd" at 0 -> 7 (the whole line and its newline); "ab 12" at 0 -> 3.
    """
    e = _stage2_split(data, cls, i, n)
    if e >= 0:
        return e
    if _get(data, i) == _LF:
        return i + 1
    j = _next_char(cls, i, n)
    while j < n:
        if _get(data, j) == _LF:
            return j + 1
        if (_get(cls, j) & _L) != 0:
            j = _skip(cls, j + 1, n, _L)
            continue
        if _stage2_split(data, cls, j, n) >= 0:
            return j
        j = _next_char(cls, j, n)
    return j


# --- drivers -----------------------------------------------------------------------------------


def _piece_at(data, cls, i, n, preset, fold_cps, fold_letters):
    """End of the piece at `i` for `preset`, a compile-time constant (kernels only)."""
    raise NotImplementedError("a Numba kernel helper: call it from jitted code")


@overload(_piece_at, prefer_literal=True, inline="always", jit_options=OPTIONS)
def _piece_at_for_preset(data, cls, i, n, preset, fold_cps, fold_letters):
    """Choose the preset's piece function while compiling, so a kernel built for one preset
    holds (and compiles) that preset's code only: a third of the scanner per first start."""
    if not isinstance(preset, types.IntegerLiteral):
        raise errors.TypingError("the scanner's preset must be a compile-time constant")
    if preset.literal_value == 3:  # SuperBPE's stage 2: no contractions, so no fold tables

        def stage2(data, cls, i, n, preset, fold_cps, fold_letters):
            return _piece_stage2(data, cls, i, n)

        return stage2
    piece = (_piece_gpt2, _piece_cl100k, _piece_o200k)[preset.literal_value]

    def impl(data, cls, i, n, preset, fold_cps, fold_letters):
        return piece(data, cls, i, n, fold_cps, fold_letters)

    return impl
