r"""A hand-written pre-tokenizer ("scanner") for the three preset patterns, over UTF-8 bytes.

It splits exactly like `regex.findall(pattern, text)` for `gpt2`, `cl100k` and `o200k`, about ten
times faster than the regex engine, and counts pieces without making a Python object per piece.
Custom patterns are not handled here: `can_scan` says when the scanner may stand in for `regex`.

How the regex semantics map onto the code (each alternative is tried in pattern order at the
current position, as `regex` does; the first that matches wins, not the longest):

- `\s+(?!\S)`: take the whole whitespace run; if a non-space follows and the run has two or more
  characters, give the last one back (it becomes the ` ?` prefix of the next piece); a run of one
  character falls through to `\s+`. At the end of the text the whole run is one piece.
- `\s*[\r\n]+`: the run up to and including its last `\r`/`\n` (backtracking of `\s*`).
- o200k's `[Up]*[Lo]+` (Lm, Lo and M are in both classes): the greedy upper run, then the last
  lower-class character at or before its end (backtracking); `[Up]+[Lo]*` only when that fails.
- Contractions use case-insensitive letter tables asked of `regex` (`'ſ` matches `'s`).

Invalid UTF-8 (the corpus reader rejects it, but kernels must never crash or loop): a byte that
does not start a well-formed sequence is one character, U+DC00 + byte, of class "other" -- exactly
what `bytes.decode("utf-8", "surrogateescape")` produces, so the pieces equal `regex.findall` on
that decoding. Every byte is covered and each step advances at least one byte.
"""

from __future__ import annotations

import numpy as np

from workbench.engine import unicode_classes as uc
from workbench.engine.numba_config import njit
from workbench.engine.patterns import CL100K, GPT2, O200K

PRESETS_SCANNABLE = ("gpt2", "cl100k", "o200k")
_PRESET_STRINGS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}
_PRESET_CODES = {"gpt2": 0, "cl100k": 1, "o200k": 2}

# Class bits, frozen into the kernels as compile-time constants. They are repeated here (not read
# from unicode_classes inside kernels) so that Numba's on-disk cache, keyed on this file, can never
# hold kernels built with other values; the check below keeps the two files in step.
_L, _N, _S, _UP, _LO = 1, 2, 4, 8, 16
_END = 128  # past the end of the data: no class, and not "other" either
_NOT_OTHER = _L | _N | _S | _END
assert (_L, _N, _S, _UP, _LO) == (uc.L, uc.N, uc.S, uc.UPPERISH, uc.LOWERISH)

_APOSTROPHE, _SPACE, _LF, _CR, _SLASH = 39, 32, 10, 13, 47


def can_scan(pattern: str) -> bool:
    """True when `pattern` is exactly one of the preset strings the scanner reproduces."""
    return pattern in _PRESET_STRINGS.values()


# --- characters -------------------------------------------------------------------------------


@njit
def _decode(data, i, n):
    r"""(code point, next offset) of the multi-byte or invalid sequence starting at `i`.

    Example: b"\xc3\xa9" at 0 -> (0xE9, 2); a stray b"\x80" -> (0xDC80, 1).
    """
    b0 = np.int64(data[i])
    if b0 < 0xC2 or b0 > 0xF4:
        return 0xDC00 + b0, i + 1
    length = 2 if b0 < 0xE0 else (3 if b0 < 0xF0 else 4)
    if i + length > n:
        return 0xDC00 + b0, i + 1
    cp = b0 & (0x7F >> length)
    for k in range(1, length):
        b = np.int64(data[i + k])
        if (b & 0xC0) != 0x80:
            return 0xDC00 + b0, i + 1
        cp = (cp << 6) | (b & 0x3F)
    too_small = (length == 3 and cp < 0x800) or (length == 4 and cp < 0x10000)
    if too_small or cp > 0x10FFFF or (0xD800 <= cp <= 0xDFFF):
        return 0xDC00 + b0, i + 1
    return cp, i + length


@njit
def _at(data, i, n, flags):
    """(code point, next offset, class bits) at byte `i`; (-1, n, _END) past the end."""
    if i >= n:
        return np.int64(-1), n, np.int64(_END)
    b0 = np.int64(data[i])
    if b0 < 0x80:  # ASCII fast path: most English text never leaves it
        return b0, i + 1, np.int64(flags[b0])
    cp, nxt = _decode(data, i, n)
    return cp, nxt, np.int64(flags[cp])


@njit
def _run(data, i, n, flags, mask):
    """End of the run of characters with any bit of `mask`, starting at `i`."""
    while i < n:
        _, nxt, f = _at(data, i, n, flags)
        if (f & mask) == 0:
            break
        i = nxt
    return i


@njit
def _run_other(data, i, n, flags):
    r"""End of the run of `[^\s\p{L}\p{N}]` characters starting at `i`."""
    while i < n:
        _, nxt, f = _at(data, i, n, flags)
        if (f & _NOT_OTHER) != 0:
            break
        i = nxt
    return i


@njit
def _run_digits(data, i, n, flags):
    r"""`\p{N}{1,3}` after its first digit, which ends at `i`: at most two more digits."""
    for _ in range(2):
        _, nxt, f = _at(data, i, n, flags)
        if (f & _N) == 0:
            break
        i = nxt
    return i


@njit
def _run_newlines(data, i, n, slash):
    r"""End of `[\r\n]*` (or `[\r\n/]*` when `slash`); ASCII, so bytes can be compared."""
    while i < n:
        b = data[i]
        if not (b in (_LF, _CR) or (slash and b == _SLASH)):
            break
        i += 1
    return i


# --- whitespace and contractions ---------------------------------------------------------------


@njit
def _whitespace(data, i, n, flags, newline_rule):
    r"""The piece for a whitespace run at `i`: `\s*[\r\n]+` (if `newline_rule`), `\s+(?!\S)`, `\s+`.

    Example: "a   b" at 1 -> 3 (two spaces; the third goes with "b"); "  \n x" at 0 -> 3.
    """
    last = i
    after_newline = -1
    j = i
    while j < n:
        cp, nxt, f = _at(data, j, n, flags)
        if (f & _S) == 0:
            break
        if cp in (_LF, _CR):
            after_newline = nxt
        last = j
        j = nxt
    if newline_rule and after_newline >= 0:
        return after_newline
    if j < n and last > i:  # a non-space follows: give the last whitespace character back
        return last
    return j


@njit
def _contraction(data, i, n, fold_cps, fold_letters, ignore_case):
    """End of `'s|'t|'re|'ve|'m|'ll|'d` at `i`, or -1; case-insensitive per `regex` if asked.

    Example: "'ll" -> 3; "'LL" -> 3 only when `ignore_case`; "'x" -> -1.
    """
    if i >= n or data[i] != _APOSTROPHE:
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
    b0 = np.int64(data[i])
    if b0 < 0x80:
        cp, nxt = b0, i + 1
    else:
        cp, nxt = _decode(data, i, n)
    if not ignore_case:
        return (cp if cp < 0x80 else 0), nxt
    for k in range(fold_cps.shape[0]):
        if fold_cps[k] == cp:
            return np.int64(fold_letters[k]), nxt
    return 0, nxt


# --- the three presets -------------------------------------------------------------------------


@njit
def _piece_gpt2(data, i, n, flags, fold_cps, fold_letters):
    r"""End of the gpt2 piece at `i`: contraction, ` ?` + letters/digits/other, whitespace."""
    cp, j, f = _at(data, i, n, flags)
    if cp == _APOSTROPHE:
        end = _contraction(data, i, n, fold_cps, fold_letters, False)
        if end > 0:
            return end
    if cp == _SPACE:  # ` ?` then a letter, digit or "other" run
        _, k, f2 = _at(data, j, n, flags)
        if (f2 & _L) != 0:
            return _run(data, k, n, flags, _L)
        if (f2 & _N) != 0:
            return _run(data, k, n, flags, _N)
        if (f2 & _NOT_OTHER) == 0:
            return _run_other(data, k, n, flags)
    if (f & _L) != 0:
        return _run(data, j, n, flags, _L)
    if (f & _N) != 0:
        return _run(data, j, n, flags, _N)
    if (f & _NOT_OTHER) == 0:
        return _run_other(data, j, n, flags)
    return _whitespace(data, i, n, flags, False)


@njit
def _piece_cl100k(data, i, n, flags, fold_cps, fold_letters):
    """End of the cl100k piece at `i` (see `patterns.CL100K` for the alternatives, in order)."""
    cp, j, f = _at(data, i, n, flags)
    if cp == _APOSTROPHE:
        end = _contraction(data, i, n, fold_cps, fold_letters, True)
        if end > 0:
            return end
    if (f & _L) != 0:
        return _run(data, j, n, flags, _L)
    if cp != _LF and cp != _CR and (f & _N) == 0:  # `[^\r\n\p{L}\p{N}]?\p{L}+`
        _, k, f2 = _at(data, j, n, flags)
        if (f2 & _L) != 0:
            return _run(data, k, n, flags, _L)
    if (f & _N) != 0:
        return _run_digits(data, j, n, flags)
    return _punct_or_space(data, i, n, flags, False)


@njit
def _punct_or_space(data, i, n, flags, slash):
    r"""cl100k/o200k tail: ` ?[^\s\p{L}\p{N}]+[\r\n]*` (`/` too in o200k), then whitespace."""
    cp, j, f = _at(data, i, n, flags)
    if cp == _SPACE:
        _, k, f2 = _at(data, j, n, flags)
        if (f2 & _NOT_OTHER) == 0:
            return _run_newlines(data, _run_other(data, k, n, flags), n, slash)
    if (f & _NOT_OTHER) == 0:
        return _run_newlines(data, _run_other(data, j, n, flags), n, slash)
    return _whitespace(data, i, n, flags, True)


@njit
def _upper_then_lower(data, s, n, flags, fold_cps, fold_letters):
    """`[Up]*[Lo]+(?i:contraction)?` at `s`, or -1.

    `[Up]*` takes the longest run, then backtracks to the last character that can start `[Lo]+`:
    the one just after the run if it is lower-class, else the last lower-class character inside
    the run (Lm, Lo and M are in both classes). Example: "ABc" -> 3, "ǅ" (Lt only) -> -1.
    """
    j = s
    last_lower_end = -1
    while j < n:
        _, nxt, f = _at(data, j, n, flags)
        if (f & _UP) == 0:
            break
        if (f & _LO) != 0:
            last_lower_end = nxt
        j = nxt
    _, nxt, f = _at(data, j, n, flags)
    if (f & _LO) != 0:
        end = _run(data, nxt, n, flags, _LO)
    elif last_lower_end >= 0:
        end = last_lower_end  # what follows it is upper-only or not a letter: the run ends here
    else:
        return -1
    return _optional_contraction(data, end, n, fold_cps, fold_letters)


@njit
def _upper_only(data, s, n, flags, fold_cps, fold_letters):
    """`[Up]+[Lo]*(?i:contraction)?` at `s`, or -1. Example: "ABC" -> 3, "ABC's" -> 5."""
    j = _run(data, s, n, flags, _UP)
    if j == s:
        return -1
    end = _run(data, j, n, flags, _LO)
    return _optional_contraction(data, end, n, fold_cps, fold_letters)


@njit
def _optional_contraction(data, i, n, fold_cps, fold_letters):
    """`(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: its end if present, else `i`."""
    end = _contraction(data, i, n, fold_cps, fold_letters, True)
    return end if end > 0 else i


@njit
def _piece_o200k(data, i, n, flags, fold_cps, fold_letters):
    """End of the o200k piece at `i`: each case alternative is tried with, then without, prefix."""
    cp, j, f = _at(data, i, n, flags)
    prefix = cp != _LF and cp != _CR and (f & (_L | _N)) == 0  # `[^\r\n\p{L}\p{N}]?`
    if prefix:
        end = _upper_then_lower(data, j, n, flags, fold_cps, fold_letters)
        if end >= 0:
            return end
    end = _upper_then_lower(data, i, n, flags, fold_cps, fold_letters)
    if end >= 0:
        return end
    if prefix:
        end = _upper_only(data, j, n, flags, fold_cps, fold_letters)
        if end >= 0:
            return end
    end = _upper_only(data, i, n, flags, fold_cps, fold_letters)
    if end >= 0:
        return end
    if (f & _N) != 0:
        return _run_digits(data, j, n, flags)
    return _punct_or_space(data, i, n, flags, True)


@njit
def _next_piece(data, i, n, preset, flags, fold_cps, fold_letters):
    """End of the piece starting at `i` (always > i) for preset code 0 gpt2, 1 cl100k, 2 o200k."""
    if preset == 0:
        return _piece_gpt2(data, i, n, flags, fold_cps, fold_letters)
    if preset == 1:
        return _piece_cl100k(data, i, n, flags, fold_cps, fold_letters)
    return _piece_o200k(data, i, n, flags, fold_cps, fold_letters)


# --- drivers -----------------------------------------------------------------------------------


@njit
def _scan_starts(data, start, preset, flags, fold_cps, fold_letters, out):
    """Write piece starts from byte `start` into `out` until it is full or the data ends.

    Returns (pieces written, where to resume). Pieces depend only on where they start, so a
    resumed scan continues exactly where `regex.findall` would.
    """
    n = data.shape[0]
    i = start
    k = 0
    while i < n and k < out.shape[0]:
        out[k] = i
        i = _next_piece(data, i, n, preset, flags, fold_cps, fold_letters)
        k += 1
    return k, i


# --- counting: an open-addressing table of byte slices ------------------------------------------


@njit
def _hash_bytes(data, s, e):
    """A strong 64-bit hash of data[s:e]: FNV-1a over the bytes, then the murmur3 finalizer.

    The finalizer matters: the table indexes with the low bits, which FNV alone mixes poorly.
    """
    h = np.uint64(0xCBF29CE484222325) ^ np.uint64(e - s)
    prime = np.uint64(0x100000001B3)
    for k in range(s, e):
        h = (h ^ np.uint64(data[k])) * prime
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@njit
def _same_bytes(data, a, b, length):
    """data[a:a+length] == data[b:b+length], without making slices."""
    for k in range(length):  # noqa: SIM110 -- a Numba kernel: no generators
        if data[a + k] != data[b + k]:
            return False
    return True


@njit
def _slots_for(hashes, used, capacity):
    """A fresh slot array (entry index + 1; 0 = empty) for the first `used` entries."""
    slots = np.zeros(capacity, dtype=np.int64)
    mask = np.uint64(capacity - 1)
    for idx in range(used):
        slot = np.int64(hashes[idx] & mask)
        while slots[slot] != 0:
            slot = (slot + 1) & (capacity - 1)
        slots[slot] = idx + 1
    return slots


@njit
def _grown(values, capacity):
    """`values` copied into a new array of `capacity` (entries grow by doubling)."""
    out = np.empty(capacity, dtype=values.dtype)
    out[: values.shape[0]] = values
    return out


@njit
def _count_table(data, preset, flags, fold_cps, fold_letters):
    """Scan and count every piece; entries are kept in order of first occurrence.

    Returns (starts, lengths, counts, used): entry k is data[starts[k]:starts[k]+lengths[k]], seen
    counts[k] times. Keys are offsets into `data`, so no bytes are copied until the end.
    """
    n = data.shape[0]
    capacity = 1 << 12  # slots; entries never exceed half of it
    slots = np.zeros(capacity, dtype=np.int64)
    starts = np.empty(capacity // 2, dtype=np.int64)
    lengths = np.empty(capacity // 2, dtype=np.int64)
    hashes = np.empty(capacity // 2, dtype=np.uint64)
    counts = np.empty(capacity // 2, dtype=np.int64)
    used = 0
    i = 0
    while i < n:
        end = _next_piece(data, i, n, preset, flags, fold_cps, fold_letters)
        length = end - i
        h = _hash_bytes(data, i, end)
        slot = np.int64(h & np.uint64(capacity - 1))
        while True:
            idx = slots[slot] - 1
            if idx < 0:
                starts[used], lengths[used], hashes[used], counts[used] = i, length, h, 1
                used += 1
                slots[slot] = used
                break
            if (
                hashes[idx] == h
                and lengths[idx] == length
                and _same_bytes(data, starts[idx], i, length)
            ):
                counts[idx] += 1
                break
            slot = (slot + 1) & (capacity - 1)
        if used * 2 == capacity:  # keep the load at or below one half
            capacity *= 2
            starts, lengths = _grown(starts, capacity // 2), _grown(lengths, capacity // 2)
            hashes, counts = _grown(hashes, capacity // 2), _grown(counts, capacity // 2)
            slots = _slots_for(hashes, used, capacity)
        i = end
    return starts, lengths, counts, used


@njit
def _gather(data, starts, lengths, used):
    """The unique pieces as a flat buffer and offsets: piece k is buf[offsets[k]:offsets[k+1]]."""
    offsets = np.empty(used + 1, dtype=np.int64)
    offsets[0] = 0
    for k in range(used):
        offsets[k + 1] = offsets[k] + lengths[k]
    buf = np.empty(offsets[used], dtype=np.uint8)
    for k in range(used):
        buf[offsets[k] : offsets[k + 1]] = data[starts[k] : starts[k] + lengths[k]]
    return buf, offsets


# --- public wrappers ---------------------------------------------------------------------------

BytesLike = bytes | bytearray | memoryview | np.ndarray


def _as_uint8(data: BytesLike) -> np.ndarray:
    """A read-only, contiguous uint8 view (one array type, so Numba compiles each kernel once)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(f"expected a 1-D uint8 array, got {data.dtype} with {data.ndim} dims")
        array = np.ascontiguousarray(data).view()
    elif isinstance(data, bytes | bytearray | memoryview):
        array = np.frombuffer(data, dtype=np.uint8).view()
    else:
        raise TypeError(f"expected UTF-8 bytes or a uint8 array, got {type(data).__name__}")
    array.flags.writeable = False
    return array


def _preset_code(preset: str) -> int:
    """The kernel's code for a preset name (or the preset's pattern string itself)."""
    for name, pattern in _PRESET_STRINGS.items():
        if preset in (name, pattern):
            return _PRESET_CODES[name]
    raise ValueError(f"the scanner knows the presets {PRESETS_SCANNABLE}, not {preset!r}")


def _kernel_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The class tables as the kernels take them."""
    t = uc.tables()
    return t.flags, t.fold_cps, t.fold_letters


def piece_bounds(data: BytesLike, preset: str) -> np.ndarray:
    """Byte offsets of the pieces: piece i is data[b[i]:b[i+1]], b[0] = 0, b[-1] = len(data).

    Example: piece_bounds(b"a   b", "gpt2") -> [0, 1, 3, 5] ("a", "  ", " b").
    """
    array = _as_uint8(data)
    code = _preset_code(preset)
    flags, fold_cps, fold_letters = _kernel_tables()
    n = array.shape[0]
    out = np.empty(max(1024, n // 3), dtype=np.int64)  # English averages ~4.5 bytes per piece
    parts: list[np.ndarray] = []
    i = 0
    while i < n:
        k, i = _scan_starts(array, i, code, flags, fold_cps, fold_letters, out)
        parts.append(out[:k].copy())
    parts.append(np.array([n], dtype=np.int64))
    return np.concatenate(parts)


def pieces(data: BytesLike, preset: str) -> list[bytes]:
    """The pieces as bytes objects (for tests and small inputs; slow on a whole corpus)."""
    raw = bytes(_as_uint8(data))
    bounds = piece_bounds(raw, preset).tolist()
    return [raw[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def count_pieces_arrays(data: BytesLike, preset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buf, offsets, counts): unique piece k is buf[offsets[k]:offsets[k+1]], seen counts[k] times.

    Pieces are in order of first occurrence. This is the trainer's word table, built without a
    Python object per piece.
    Example: b"a a a" (gpt2) -> buf b"a a", offsets [0, 1, 3], counts [1, 2].
    """
    array = _as_uint8(data)
    code = _preset_code(preset)
    flags, fold_cps, fold_letters = _kernel_tables()
    starts, lengths, counts, used = _count_table(array, code, flags, fold_cps, fold_letters)
    buf, offsets = _gather(array, starts, lengths, used)
    return buf, offsets, counts[:used].copy()


def count_pieces(data: BytesLike, preset: str) -> dict[bytes, int]:
    """Unique piece bytes -> count, equal to `Counter(p.encode() for p in regex.findall(...))`."""
    buf, offsets, counts = count_pieces_arrays(data, preset)
    raw = buf.tobytes()
    edges = offsets.tolist()
    return {raw[edges[k] : edges[k + 1]]: count for k, count in enumerate(counts.tolist())}
