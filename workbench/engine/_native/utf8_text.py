"""The UTF-8 of many Python strs, one after another in one array, written without the GIL.

`encode_batch` encodes runs of texts: each run's bytes joined, then one kernel call. Encoding
each text (`str.encode`) and joining the bytes hold the GIL, a tenth of a call's time, which two
threads cannot share. Here a kernel reads a str's own characters (Numba hands a jitted function
a str without copying it: its data, kind and length) and writes their UTF-8 into the array, with
the GIL released. Texts shorter than `KERNEL_FROM` characters are encoded by Python, joined and
copied in together: a kernel call costs a few microseconds, more than encoding a short text.

A str with a surrogate (a lone one cannot be UTF-8) makes the kernel stop; that text is then
encoded as `utf8` does, lone surrogates replaced as tiktoken does.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.cpython.unicode import deref_uint8, deref_uint16, deref_uint32
from numba.extending import intrinsic

from workbench.engine._native import portable
from workbench.engine._native.numba_config import njit

KERNEL_FROM = 2048  # characters: a text at least this long is written by the kernel


def utf8(text: str) -> tuple[str, bytes]:
    """(text with lone surrogates replaced, as tiktoken does; its UTF-8), encoding only once."""
    try:
        return text, text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return text, text.encode("utf-8")


def most_bytes(text: str) -> int:
    """An upper bound of the UTF-8 length of `text` as `utf8` encodes it (4 bytes a character
    at most; ASCII, known without looking at the characters, 1)."""
    return len(text) if text.isascii() else 4 * len(text)


def joined_utf8(
    texts: Sequence[str], room: Callable[[int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, sizes): each text's UTF-8 as `utf8` gives it, one after another in a uint8 array
    that `room(n)` returns (at least n bytes: a caller may reuse one), and each one's length."""
    for text in texts:  # the kernel is compiled for str alone
        if not isinstance(text, str):
            raise TypeError(f"texts must be str, not {type(text).__name__}")
    bound = sum(map(most_bytes, texts))
    out = room(bound)
    if out.dtype != np.uint8 or out.ndim != 1 or not out.flags.c_contiguous:
        raise ValueError("joined_utf8 writes into a contiguous uint8 array")
    if out.shape[0] < bound:
        raise ValueError(f"joined_utf8 needs room for {bound} bytes, got {out.shape[0]}")
    sizes = np.empty(len(texts), dtype=np.int64)
    at = 0
    short: list[bytes] = []  # short texts' bytes, copied in at once before the next long text

    def copy_short() -> int:
        if not short:
            return at
        joined = b"".join(short)
        short.clear()
        out[at : at + len(joined)] = np.frombuffer(joined, dtype=np.uint8)
        return at + len(joined)

    kernel_from = math.inf if portable() else KERNEL_FROM  # the switch: Python's way alone
    for j, text in enumerate(texts):
        if len(text) < kernel_from:
            encoded = utf8(text)[1]
            short.append(encoded)
            sizes[j] = len(encoded)
            continue
        at = copy_short()
        # The room asked for covers most_bytes(text) from here, the most the kernel writes.
        end = _utf8_into(text, out, at)
        if end < 0:  # a surrogate: Python's way, lone ones replaced
            encoded = utf8(text)[1]
            out[at : at + len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
            end = at + len(encoded)
        sizes[j] = end - at
        at = end
    at = copy_short()
    return out[:at], sizes


def warm_up() -> None:
    """Compile (or load) the kernel: a long text takes it."""
    joined_utf8(["é" * KERNEL_FROM], lambda size: np.empty(size, dtype=np.uint8))


@intrinsic
def _copy_bytes(typingctx, out, at, source, count):
    """memcpy(&out[at], source, count): `source` a str's data (a void pointer). Kernels only."""
    if not (isinstance(out, types.Array) and out.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):
        array, offset, pointer, size = args
        data = context.make_array(signature.args[0])(context, builder, array).data
        target = builder.gep(data, [offset])
        cgutils.raw_memcpy(builder, target, pointer, size, 1)
        return context.get_dummy_value()

    return types.none(out, types.intp, types.voidptr, types.intp), codegen


@njit(inline="always")
def _put(out, at, c):
    """Write code point `c` (not ASCII) as UTF-8 at out[at]; the next place, or -1 for a
    surrogate (U+D800..U+DFFF: not encodable)."""
    if c < 0x800:
        out[at] = 0xC0 | (c >> 6)
        out[at + 1] = 0x80 | (c & 0x3F)
        return at + 2
    if c < 0x10000:
        if 0xD800 <= c < 0xE000:
            return -1
        out[at] = 0xE0 | (c >> 12)
        out[at + 1] = 0x80 | ((c >> 6) & 0x3F)
        out[at + 2] = 0x80 | (c & 0x3F)
        return at + 3
    out[at] = 0xF0 | (c >> 18)
    out[at + 1] = 0x80 | ((c >> 12) & 0x3F)
    out[at + 2] = 0x80 | ((c >> 6) & 0x3F)
    out[at + 3] = 0x80 | (c & 0x3F)
    return at + 4


@intrinsic
def _word_at(typingctx, source, offset):
    """The 8 bytes at `source` (a str's data, a void pointer) + `offset` bytes, unaligned."""

    def codegen(context, builder, signature, args):
        pointer, at = args
        byte = builder.gep(builder.bitcast(pointer, cgutils.voidptr_t), [at])
        word = builder.bitcast(byte, ir.IntType(64).as_pointer())
        return builder.load(word, align=1)

    return types.uint64(types.voidptr, types.intp), codegen


@intrinsic
def _put_bytes(typingctx, out, at, value, count):
    """Store the low `count` (a constant: 2, 4 or 8) bytes of `value` at out[at], unaligned."""
    if not (isinstance(out, types.Array) and out.dtype == types.uint8):
        return None
    if not isinstance(count, types.IntegerLiteral):
        return None
    bits = 8 * count.literal_value

    def codegen(context, builder, signature, args):
        array, offset, word, _ = args
        data = context.make_array(signature.args[0])(context, builder, array).data
        target = builder.bitcast(builder.gep(data, [offset]), ir.IntType(bits).as_pointer())
        builder.store(builder.trunc(word, ir.IntType(bits)) if bits < 64 else word, target, align=1)
        return context.get_dummy_value()

    return types.none(out, types.intp, types.uint64, count), codegen


def _pack(width):
    """The low bytes of the characters in a word of `width`-byte ASCII characters, packed."""
    if width == 1:
        return njit(inline="always")(lambda word: word)
    if width == 2:

        @njit(inline="always")
        def pack2(word):
            word = (word | (word >> np.uint64(8))) & np.uint64(0x0000FFFF0000FFFF)
            return (word | (word >> np.uint64(16))) & np.uint64(0xFFFFFFFF)

        return pack2

    @njit(inline="always")
    def pack4(word):
        return (word | (word >> np.uint64(24))) & np.uint64(0xFFFF)

    return pack4


def _characters(read, width):
    """A loop writing the UTF-8 of `n` characters read by `read(data, i)` (one of Numba's
    readers of a str's 1-, 2- or 4-byte characters of `width` bytes): the end, or -1 at a
    surrogate. Text that is mostly ASCII with a few other characters (English with a dash or an
    accent is stored 2 bytes a character) goes 8 bytes of characters at a time while they are all
    ASCII: one load, one test and one store instead of a branch a character (2.2 MB of English
    docs: 0.6 ms, not 1.4; `str.encode` 2.1). Little-endian machines only (the packing assumes
    the first character in the low bytes); elsewhere a character at a time."""
    per_word = 8 // width if sys.byteorder == "little" else 0
    high = np.uint64({1: 0x8080808080808080, 2: 0xFF80FF80FF80FF80, 4: 0xFFFFFF80FFFFFF80}[width])
    pack = _pack(width)

    @njit(inline="always")
    def write(data, n, out, at):
        i = 0
        while i < n:
            if per_word and i + per_word <= n:
                word = _word_at(data, i * width)
                if word & high == 0:  # all ASCII: each character's low byte is its UTF-8
                    _put_bytes(out, at, pack(word), per_word)
                    at += per_word
                    i += per_word
                    continue
            c = read(data, i)
            if c < 0x80:
                out[at] = c
                at += 1
            else:
                at = _put(out, at, c)
                if at < 0:
                    return -1
            i += 1
        return at

    return write


# One loop for each way CPython stores a str's characters: a branch on the width inside a
# single loop stays in it, and costs half the speed.
_one_byte = _characters(deref_uint8, 1)
_two_bytes = _characters(deref_uint16, 2)
_four_bytes = _characters(deref_uint32, 4)


@njit
def _utf8_into(text, out, at):
    """Write the UTF-8 of `text` at out[at] (room for `most_bytes(text)` checked by the caller);
    the end, or -1 if `text` holds a surrogate. ASCII is a plain copy."""
    n = len(text)
    data = text._data
    kind = text._kind
    if kind == 1:
        if text._is_ascii:
            _copy_bytes(out, at, data, n)
            return at + n
        return _one_byte(data, n, out, at)
    if kind == 2:
        return _two_bytes(data, n, out, at)
    return _four_bytes(data, n, out, at)


def kernels() -> list:
    """The kernel, where it is in use (for `warmup`); none under the portable switch."""
    return [_utf8_into] if not portable() else []
