r"""A hand-written pre-tokenizer ("scanner") for the three preset patterns, over UTF-8 bytes.

It splits exactly like `regex.findall(pattern, text)` for `gpt2`, `cl100k` and `o200k` with code
points classified as Unicode 16.0 does (tiktoken's version: `unicode_classes`), over ten
times faster than the regex engine (see bench_scanner.py), and counts pieces without making a
Python object per piece. It is single-threaded; kernels release the GIL.
Custom patterns are not handled here: `can_scan` says when the scanner may stand in for `regex`.

How the regex semantics map onto the code (each alternative is tried in pattern order at the
current position, as `regex` does; the first that matches wins, not the longest):

- `\s+(?!\S)`: take the whole whitespace run; if a non-space follows and the run has two or more
  characters, give the last one back (it becomes the ` ?` prefix of the next piece); a run of one
  character falls through to `\s+`. At the end of the text the whole run is one piece.
- `\s*[\r\n]+`: the run up to and including its last `\r`/`\n` (backtracking of `\s*`).
- o200k's `[Up]*[Lo]+` (Lm, Lo and M are in both classes): the greedy upper run, then the last
  lower-class character at or before its end (backtracking); `[Up]+[Lo]*` only when that fails.
- Contractions use case-insensitive letter tables (`'ſ` matches `'s`), generated with the classes.

Invalid UTF-8 (the corpus reader rejects it, but kernels must never crash or loop): a byte that
does not start a well-formed sequence is one character, U+DC00 + byte, of class "other" -- exactly
what `bytes.decode("utf-8", "surrogateescape")` produces, so the pieces equal `regex.findall` on
that decoding. Every byte is covered and each step advances at least one byte.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import literally, types
from numba.core import errors
from numba.extending import intrinsic, overload

from workbench.engine._native.numba_config import OPTIONS, njit
from workbench.engine.patterns import unicode_classes as uc
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K

PRESETS_SCANNABLE = ("gpt2", "cl100k", "o200k")
_PRESET_STRINGS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}
_PRESET_CODES = {"gpt2": 0, "cl100k": 1, "o200k": 2}

# Class bits, frozen into the kernels as compile-time constants. They are repeated here (not read
# from unicode_classes inside kernels) so that Numba's on-disk cache, keyed on this file, can never
# hold kernels built with other values; the check below keeps the two files in step.
_L, _N, _S, _UP, _LO = 1, 2, 4, 8, 16
_CONT = 32  # a continuation byte of a well-formed multi-byte character
_NL = 64  # \r or \n (literal in the patterns, so not a regex class)
_LNS = _L | _N | _S  # a character with none of these is "other": [^\s\p{L}\p{N}]
assert (_L, _N, _S, _UP, _LO) == (uc.L, uc.N, uc.S, uc.UPPERISH, uc.LOWERISH)

_APOSTROPHE, _SPACE, _LF, _CR, _SLASH = 39, 32, 10, 13, 47


def can_scan(pattern: str) -> bool:
    """True when `pattern` is exactly one of the preset strings the scanner reproduces."""
    return pattern in _PRESET_STRINGS.values()


@intrinsic
def _borrowed(typingctx, array):
    """A view of `array` without its reference count (kernels only; valid while `array` is).

    Numba frees an array right after its variable's last use, so the owner must be used after
    the view's last use too: an argument, an array returned, or one passed to `_kept`.
    Numba increments and decrements the count of every array argument of an inlined helper each
    time it runs -- atomic operations, eight per piece in the scan loop, which LLVM cannot prune
    when the helper has many exits. A view without a count makes those a null check.
    """

    def codegen(context, builder, signature, args):
        source = context.make_array(array)(context, builder, value=args[0])
        view = context.make_array(array)(context, builder)
        context.populate_array(
            view,
            data=source.data,
            shape=source.shape,
            strides=source.strides,
            itemsize=source.itemsize,
            meminfo=None,
        )
        return view._getvalue()

    return array(array), codegen


@intrinsic
def _kept(typingctx, array):
    """Nothing, but a use of `array`: keeps it alive up to here, past its `_borrowed` views."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(array), codegen


# Design: one pass classifies every byte (`cls[i]` = class bits of the character starting at byte
# i, or _CONT inside a character); the scan then works on bytes, and a run of a class is a search
# over `cls[i] & (mask | _CONT)`, eight bytes at a time (`_run_end_intrinsic`). Numba optimises
# each function before linking, so a call is never inlined by LLVM and a call with array
# arguments also pays reference counting: the small helpers are inlined at the Numba level
# (inline="always"), each at few call sites to keep the compile time short. Rare paths
# (contractions) stay calls.

# --- classifying bytes -------------------------------------------------------------------------


@intrinsic
def _load_u64(typingctx, array, index):
    """The 8 bytes array[index:index+8] as one uint64, byte k in bits 8k..8k+7 (all of Numba's
    targets are little-endian). Kernels only: the caller checks index + 8 <= len(array) (there
    is no bounds check). One unaligned load, not eight."""
    if not isinstance(array, types.Array) or array.dtype != types.uint8:
        raise errors.TypingError("_load_u64 reads a uint8 array")

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, value=args[0])
        pointer = builder.gep(source.data, [args[1]])
        return builder.load(builder.bitcast(pointer, ir.IntType(64).as_pointer()), align=1)

    return types.uint64(array, types.intp), codegen


@intrinsic
def _trailing_zero_bytes(typingctx, word):
    """The number of zero bytes below the lowest set bit of a nonzero uint64 (one instruction)."""

    def codegen(context, builder, signature, args):
        zeros = builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
        return builder.lshr(zeros, ir.Constant(ir.IntType(64), 3))

    return types.int64(types.uint64), codegen


@intrinsic
def _get(typingctx, array, index):
    """array[index] without Numba's negative-index wraparound (kernels only: 0 <= index <
    len(array), which the scan's `i < n` tests already ensure). The scan reads a class or text
    byte several times per piece; the wraparound was three more instructions for each."""
    if not isinstance(array, types.Array):
        raise errors.TypingError("_get reads an array")

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, value=args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        return builder.load(builder.gep(source.data, [index]))

    return array.dtype(array, index), codegen


@intrinsic
def _put(typingctx, array, index, value):
    """array[index] = value without the negative-index wraparound (kernels only: 0 <= index <
    len(array)); see `_get`."""
    if not isinstance(array, types.Array):
        raise errors.TypingError("_put writes an array")

    def codegen(context, builder, signature, args):
        target = context.make_array(signature.args[0])(context, builder, value=args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        value = context.cast(builder, args[2], signature.args[2], signature.args[0].dtype)
        builder.store(value, builder.gep(target.data, [index]))
        return context.get_dummy_value()

    return types.none(array, index, value), codegen


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


@intrinsic
def _store_u64(typingctx, array, index, value):
    """array[index:index+8] = the 8 bytes of `value` (byte k from bits 8k..8k+7), one unaligned
    store. Kernels only: the caller checks index + 8 <= len(array)."""
    if not isinstance(array, types.Array) or array.dtype != types.uint8:
        raise errors.TypingError("_store_u64 writes a uint8 array")

    def codegen(context, builder, signature, args):
        target = context.make_array(signature.args[0])(context, builder, value=args[0])
        pointer = builder.bitcast(builder.gep(target.data, [args[1]]), ir.IntType(64).as_pointer())
        value = context.cast(builder, args[2], signature.args[2], types.uint64)
        builder.store(value, pointer, align=1)
        return context.get_dummy_value()

    return types.none(array, index, value), codegen


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


_STEP = 32  # bytes `classify` takes at once (one AVX2 register; two SSE2 ones elsewhere)
_BEFORE, _AFTER = 2, 2  # bytes a step reads before and after its 32: the neighbouring characters'

# The classes of ASCII bytes, as the vector step computes them (by compares, not lookups: LLVM IR
# has no portable byte shuffle); `kernel_tables` checks them against the generated table.
_ASCII_RANGES = (  # (first byte, last byte, class bits)
    (ord("A"), ord("Z"), _L | _UP),
    (ord("a"), ord("z"), _L | _LO),
    (ord("0"), ord("9"), _N),
    (0x09, 0x0D, _S),  # \t \n \v \f \r
    (_SPACE, _SPACE, _S),
    (_LF, _LF, _NL),
    (_CR, _CR, _NL),
)


def ascii_classes_by_ranges() -> np.ndarray:
    """The class byte of each ASCII byte as the vector step makes it (for the table check)."""
    out = np.zeros(128, dtype=np.uint8)
    for first, last, bits in _ASCII_RANGES:
        out[first : last + 1] |= bits
    return out


_LANES = ir.VectorType(ir.IntType(8), _STEP)


def _each(value: int, kind: ir.VectorType = _LANES) -> ir.Constant:
    """A vector constant with `value` in every lane."""
    return ir.Constant(kind, [value] * _STEP)


def _within(builder: ir.IRBuilder, v: ir.Value, first: int, last: int) -> ir.Value:
    """first <= v <= last, lane by lane (unsigned bytes)."""
    return builder.icmp_unsigned("<=", builder.sub(v, _each(first)), _each(last - first))


def _ascii_kinds(builder: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The class bytes of the ASCII bytes of `v` (0 for the others), from `_ASCII_RANGES`."""
    kinds = [
        builder.select(_within(builder, v, a, b), _each(k), _each(0)) for a, b, k in _ASCII_RANGES
    ]
    return functools.reduce(builder.or_, kinds)


def _step_pointer(context, builder, array_type, array, index, offset=0):
    """A pointer to the 32 bytes of `array` from index + offset, as one vector."""
    data = context.make_array(array_type)(context, builder, value=array).data
    at = builder.add(context.cast(builder, index, types.intp, types.int64), ir.IntType(64)(offset))
    return builder.bitcast(builder.gep(data, [at]), _LANES.as_pointer())


@intrinsic
def _classify_ascii_step(typingctx, data, cls, i):
    """If bytes i..i+31 are all ASCII, write their classes and return True; else write nothing and
    return False (kernels only: i + 32 <= len(data)). What `_classify_step` does for ASCII, with
    none of its UTF-8 checks: `classify` uses it after an all-ASCII step, for as long as it
    lasts (English text and code: classify 3.5-4x faster than with `_classify_step` alone)."""
    for array in (data, cls):
        if not isinstance(array, types.Array) or array.dtype != types.uint8:
            raise errors.TypingError("classes are written for uint8 arrays")

    def codegen(context, builder, signature, args):
        index = context.cast(builder, args[2], signature.args[2], types.intp)
        source = _step_pointer(context, builder, signature.args[0], args[0], index)
        v = builder.load(source, align=1)
        high = builder.icmp_signed("<", v, _each(0))  # bytes 0x80-0xFF
        ascii_ = builder.icmp_unsigned(
            "==", builder.bitcast(high, ir.IntType(_STEP)), ir.IntType(_STEP)(0)
        )
        with builder.if_then(ascii_):
            target = _step_pointer(context, builder, signature.args[1], args[1], index)
            builder.store(_ascii_kinds(builder, v), target, align=1)
        return ascii_

    return types.boolean(data, cls, i), codegen


@intrinsic
def _classify_step(typingctx, data, cls, i, code_points):
    r"""Classify the characters starting at bytes i..i+31 when they are all ASCII or well-formed
    2- and 3-byte UTF-8 (kernels only: 2 <= i, i + 34 <= len(data), and byte i starts a character
    of the byte-by-byte decoding: the bytes before it are never read as its lead). Returns
    (leads, carry, ok):
    if `ok`, cls[i:i+32] holds _CONT at continuation bytes, the class of each ASCII byte and 0 at
    each multi-byte lead, whose lane bits are `leads` and whose code points are in
    `code_points[lane]` (uint16: BMP only), for the caller to look up; `carry` (0-2) bytes after
    i+32 continue the last character. If not `ok` (a 4-byte character, an invalid or cut-off
    sequence, an overlong form, a surrogate), nothing is written but `code_points`.

    As LLVM vectors of 32 bytes, each loaded at offsets -2..2: a continuation byte must follow a
    lead (a 2- or 3-byte one just before, or a 3-byte one two before with a continuation byte
    between), and every lead must have its continuation bytes (E0 then A0-BF, ED then 80-9F).
    Anything else sends the bytes to the byte-by-byte decoder. Example: "é!" + 30 spaces ->
    leads 0b1, carry 0, cls [0, _CONT, 0, _S, ...], code_points[0] = 0xE9."""
    for array in (data, cls):
        if not isinstance(array, types.Array) or array.dtype != types.uint8:
            raise errors.TypingError("classes are written for uint8 arrays")
    if not isinstance(code_points, types.Array) or code_points.dtype != types.uint16:
        raise errors.TypingError("code points are written to a uint16 array")

    def codegen(context, builder, signature, args):
        i64, wide = ir.IntType(64), ir.VectorType(ir.IntType(16), _STEP)
        points = context.make_array(signature.args[3])(context, builder, value=args[3])
        index = context.cast(builder, args[2], signature.args[2], types.intp)
        each, within = _each, functools.partial(_within, builder)

        def load(offset):  # lane j holds byte i + offset + j
            pointer = _step_pointer(context, builder, signature.args[0], args[0], index, offset)
            return builder.load(pointer, align=1)

        def masked(v, mask, value):
            return builder.icmp_unsigned("==", builder.and_(v, each(mask)), each(value))

        def any_of(*masks):
            return functools.reduce(builder.or_, masks)

        v = {o: load(o) for o in range(-_BEFORE, _AFTER + 1)}
        cont = {o: masked(v[o], 0xC0, 0x80) for o in (-1, 0, 1, 2)}
        lead2 = {o: within(v[o], 0xC2, 0xDF) for o in (-1, 0)}
        lead3 = {o: masked(v[o], 0xF0, 0xE0) for o in (-2, -1, 0)}
        ascii_ = builder.icmp_unsigned("<", v[0], each(0x80))
        claimed = any_of(lead2[-1], lead3[-1], builder.and_(lead3[-2], cont[-1]))
        # a step starts at a character (the one before ends before it): lane 0 is never claimed
        # (the bytes before may be an invalid lead and its continuation byte)
        after_first = ir.Constant(ir.VectorType(ir.IntType(1), _STEP), [0] + [1] * (_STEP - 1))
        claimed = builder.and_(claimed, after_first)
        lead = builder.or_(lead2[0], lead3[0])
        bad = any_of(
            builder.xor(cont[0], claimed),  # a stray continuation byte, or a lead missing one
            builder.not_(any_of(ascii_, cont[0], lead)),  # C0, C1, F0-FF: 4 bytes or invalid
            builder.and_(lead, builder.not_(cont[1])),
            builder.and_(lead3[0], builder.not_(cont[2])),
            builder.and_(  # E0 80-9F: overlong
                builder.icmp_unsigned("==", v[0], each(0xE0)), within(v[1], 0x80, 0x9F)
            ),
            builder.and_(  # ED A0-BF: a surrogate
                builder.icmp_unsigned("==", v[0], each(0xED)), within(v[1], 0xA0, 0xBF)
            ),
        )
        bits = ir.IntType(_STEP)

        def as_int(mask):
            return builder.zext(builder.bitcast(mask, bits), i64)

        ok = builder.icmp_unsigned("==", as_int(bad), i64(0))
        # code points of the leads: ((b0 & 0x1F) << 6 | b1 & 0x3F, or with 3 bytes
        # (b0 & 0x0F) << 12 | (b1 & 0x3F) << 6 | b2 & 0x3F), 16 bits a lane
        b = {o: builder.zext(v[o], wide) for o in (0, 1, 2)}
        three = builder.sext(lead3[0], wide)  # all ones in a 3-byte lead's lane
        top = builder.and_(builder.shl(b[0], each(12, wide)), three)
        middle = builder.select(
            lead3[0], builder.and_(b[1], each(0x3F, wide)), builder.and_(b[0], each(0x1F, wide))
        )
        low = builder.and_(builder.select(lead3[0], b[2], b[1]), each(0x3F, wide))
        code = builder.or_(builder.or_(top, builder.shl(middle, each(6, wide))), low)
        builder.store(code, builder.bitcast(points.data, wide.as_pointer()), align=1)
        out = builder.select(cont[0], each(_CONT), _ascii_kinds(builder, v[0]))
        with builder.if_then(ok):
            target = _step_pointer(context, builder, signature.args[1], args[1], index)
            builder.store(out, target, align=1)
        leads = as_int(lead)
        threes = as_int(lead3[0])
        # bytes past the step: 1 for a lead in lane 31, 1 more if it has 3 bytes, 1 for a 3-byte
        # lead in lane 30
        carry = builder.add(
            builder.lshr(leads, i64(_STEP - 1)), builder.lshr(threes, i64(_STEP - 1))
        )
        carry = builder.add(carry, builder.and_(builder.lshr(threes, i64(_STEP - 2)), i64(1)))
        result = signature.return_type
        return context.make_tuple(builder, result, (leads, carry, ok))

    result = types.Tuple((types.uint64, types.int64, types.boolean))
    return result(data, cls, i, code_points), codegen


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


# --- runs over classified bytes ----------------------------------------------------------------


_ONES = 0x0101010101010101
_SEVENS = 0x7F7F7F7F7F7F7F7F  # + a byte below 0x80 sets its high bit iff it is not 0
_HIGHS = 0x8080808080808080


def _run_end_intrinsic(inside: bool):
    """An intrinsic f(cls, i, n, bits) -> where the run at `i` of class bytes that have (if
    `inside`) or lack (if not) a bit of `bits` ends, or the first i' >= i with i' + 8 > n if it
    goes on that far (the caller finishes with a byte loop).

    Eight class bytes at a time: class bytes are below 0x80, so (x & bits) + 0x7F has its high
    bit set exactly where x has a bit of `bits`, with no carry into the next byte; the first
    byte that ends the run is found by counting trailing zeros. Runs are short and of every
    length, so a byte loop mispredicts its exit once per piece; this one rarely does. Written
    as LLVM IR, not inlined Numba code: it is used at a dozen places and each Numba inlining
    costs compile time (typing and lowering again), an intrinsic next to none."""

    @intrinsic
    def run_end(typingctx, cls, i, n, bits):
        if not isinstance(cls, types.Array) or cls.dtype != types.uint8:
            raise errors.TypingError("a run end is found in a uint8 array")

        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            array = context.make_array(signature.args[0])(context, builder, value=args[0])
            start, end = args[1], args[2]
            start = context.cast(builder, start, signature.args[1], types.int64)
            end = context.cast(builder, end, signature.args[2], types.int64)
            bits = context.cast(builder, args[3], signature.args[3], types.int64)
            spread = builder.mul(bits, i64(_ONES))
            head = builder.block
            check = builder.append_basic_block("run.check")
            body = builder.append_basic_block("run.body")
            found = builder.append_basic_block("run.found")
            done = builder.append_basic_block("run.done")
            builder.branch(check)
            builder.position_at_end(check)
            at = builder.phi(i64)
            at.add_incoming(start, head)
            builder.cbranch(builder.icmp_signed("<=", builder.add(at, i64(8)), end), body, done)
            builder.position_at_end(body)
            pointer = builder.bitcast(builder.gep(array.data, [at]), i64.as_pointer())
            word = builder.and_(builder.load(pointer, align=1), spread)
            has = builder.and_(builder.add(word, i64(_SEVENS)), i64(_HIGHS))
            ends = builder.xor(has, i64(_HIGHS)) if inside else has
            at.add_incoming(builder.add(at, i64(8)), body)
            builder.cbranch(builder.icmp_unsigned("!=", ends, i64(0)), found, check)
            builder.position_at_end(found)
            zeros = builder.cttz(ends, ir.Constant(ir.IntType(1), 1))
            hit = builder.add(at, builder.lshr(zeros, i64(3)))
            builder.branch(done)
            builder.position_at_end(done)
            result = builder.phi(i64)
            result.add_incoming(at, check)
            result.add_incoming(hit, found)
            return result

        return types.int64(cls, i, n, bits), codegen

    return run_end


_run_end_in = _run_end_intrinsic(inside=True)
_run_end_out = _run_end_intrinsic(inside=False)


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
    piece = (_piece_gpt2, _piece_cl100k, _piece_o200k)[preset.literal_value]

    def impl(data, cls, i, n, preset, fold_cps, fold_letters):
        return piece(data, cls, i, n, fold_cps, fold_letters)

    return impl


# --- gpt2: piece starts 32 bytes at a time --------------------------------------------------------
# For gpt2 whether a piece starts at character q depends only on the characters before, at and
# after it (their kinds: letter, digit, other, whitespace; and whether the one before is the space
# " "), except after an apostrophe that starts a piece (a contraction ends where it ends). Given a
# piece start before q:
# - a non-whitespace character starts a piece iff its kind differs from the one before and that
#   one is not " " (a single space joins the letters, digits or others that follow);
# - a whitespace character starts one iff the one before is not whitespace, or q is the last of a
#   run that a non-whitespace character follows (`\s+(?!\S)` leaves it: " " then joins what
#   follows, any other whitespace is a piece of its own and the next starts by the first rule).
# So the starts of 32 bytes are vector compares of their class bytes, without the branch on
# each piece's kind that the piece-by-piece scan mispredicts; an apostrophe at a start goes to
# that scan for one piece (contractions), which then hands back (pieces depend only on where they
# start). tests/test_scanner_windows.py checks the rules against `regex.findall`.


_WINDOW = 32  # bytes whose starts are found at once (one AVX2 register; two SSE2 ones elsewhere)


def _check_window_args(data, cls) -> None:
    """The typing check of a window intrinsic's (data, cls, b)."""
    for array in (data, cls):
        if not isinstance(array, types.Array) or array.dtype != types.uint8:
            raise errors.TypingError("piece starts are found in uint8 arrays")


def _window_args(context, builder, signature, args) -> tuple:
    """A window intrinsic's (text array, class array, b as int64) in its codegen."""
    text = context.make_array(signature.args[0])(context, builder, value=args[0])
    classes = context.make_array(signature.args[1])(context, builder, value=args[1])
    return text, classes, context.cast(builder, args[2], signature.args[2], types.int64)


@intrinsic
def _gpt2_starts(typingctx, data, cls, b):
    """The piece starts among bytes b+1..b+32, given a piece start at or before b (3 <= b and
    b + 36 <= len(data)): bit j set if byte b+1+j starts one, bit 32+j if that start is an
    apostrophe. Kernels only (no checks).

    The rules apply to characters: the kind before a lead byte is that of the character holding
    the byte before it (its lead is up to three bytes back; continuation bytes are _CONT), the
    kind after a whitespace character that of the byte after its last (up to three bytes on: no
    whitespace character is longer), and continuation bytes start nothing. 32 bytes a step
    as LLVM vectors: each rule is a byte-wise compare or select, and a vector of compare results
    cast to an integer is one bit per byte (`vpmovmskb` on x86)."""
    _check_window_args(data, cls)

    def codegen(context, builder, signature, args):
        i64, lanes = ir.IntType(64), ir.VectorType(ir.IntType(8), _WINDOW)
        text, classes, at = _window_args(context, builder, signature, args)

        def load(array, offset):  # lane j holds byte b + offset + j
            pointer = builder.gep(array.data, [builder.add(at, i64(offset))])
            return builder.load(builder.bitcast(pointer, lanes.as_pointer()), align=1)

        def each(value):
            return ir.Constant(lanes, [value] * _WINDOW)

        def is_white(kind):
            return builder.icmp_unsigned("!=", builder.and_(kind, each(_S)), each(0))

        cls_at = {o: load(classes, o) for o in range(-3, 5)}
        kinds = {o: builder.and_(c, each(_LNS)) for o, c in cls_at.items()}  # 0 is "other"
        cont = {o: builder.icmp_unsigned("==", cls_at[o], each(_CONT)) for o in range(-2, 4)}
        prev = builder.select(cont[-2], kinds[-3], kinds[-2])
        prev = builder.select(cont[-1], prev, kinds[-1])
        prev = builder.select(cont[0], prev, kinds[0])
        follow = builder.select(cont[3], kinds[4], kinds[3])
        follow = builder.select(cont[2], follow, kinds[2])
        after_space = builder.icmp_unsigned("==", load(text, 0), each(_SPACE))
        white_here = is_white(kinds[1])
        changed = builder.icmp_unsigned("!=", prev, kinds[1])
        word_start = builder.and_(changed, builder.not_(builder.or_(white_here, after_space)))
        inside_run = builder.and_(is_white(prev), is_white(follow))
        white_start = builder.and_(white_here, builder.not_(inside_run))
        starts = builder.and_(builder.not_(cont[1]), builder.or_(word_start, white_start))
        quote = builder.icmp_unsigned("==", load(text, 1), each(_APOSTROPHE))
        quotes = builder.and_(starts, quote)
        bits = ir.IntType(_WINDOW)

        def as_int(mask, shift):
            return builder.shl(builder.zext(builder.bitcast(mask, bits), i64), i64(shift))

        return builder.or_(as_int(starts, 0), as_int(quotes, _WINDOW))

    return types.uint64(data, cls, b), codegen


@intrinsic
def _bits_set(typingctx, word):
    """The number of set bits of a uint64 (one instruction)."""

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.int64(types.uint64), codegen


@intrinsic
def _lowest_bit(typingctx, word):
    """The index of the lowest set bit of a uint64, 64 for 0 (defined: no branch)."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(types.uint64), codegen


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


# --- cl100k and o200k: piece starts 32 bytes at a time ------------------------------------------
# Kinds: L letter, N digit, P other ([^\s\p{L}\p{N}]), W whitespace but \r \n, R \r or \n; p is the
# character before q, p2 the one before p, "next" the one after q. A piece starts at q iff
# - q in L: p in N or R, or p in P and p starts no piece (p2 in P or p2 == " "): a P that starts a
#   piece takes the letters after it (`[^\r\n\p{L}\p{N}]?\p{L}+`), and so does a W (always a start);
# - q in P: p not in P and p != " " (a single space joins `[^\s\p{L}\p{N}]+`); an apostrophe that
#   starts a piece may be a contraction (case-insensitive): the piece-by-piece scan takes it;
# - q in N: p not in N, or (`\p{N}{1,3}` counts from the run's start) q is a multiple of three
#   digits after the run's first one;
# - q in R: p neither whitespace nor P (`[\r\n]*` after P, `\s*[\r\n]+` in a whitespace run);
# - q in W: p not whitespace; or p in W and next is not whitespace (`\s+(?!\S)` gives the run's
#   last character back); or p in R and either no R comes later in q's whitespace run (the piece
#   before ended at p) or the R run ending at p directly follows a P (`[\r\n]*` ended it there;
#   otherwise `\s*[\r\n]+` goes on to the run's last R).
# Each kind is a bit mask over 64 bytes (16 before the window, its 32, 16 after); "the character
# before" is a mask carried over continuation bytes and shifted, "an R later in the run" a
# segmented suffix-OR (Kogge-Stone: four shift/and/or steps, 16 bytes), "the R run follows a P"
# one add (the carry runs through the run). What the masks cannot settle (a whitespace run past
# the lookahead, an R run past the lookback, digits after one of several bytes) hands over to
# the piece-by-piece scan at the last start found before it. o200k's differences: see
# `_window_rules`. In o200k a letter of both case classes (Lm, Lo: CJK, kana, Hangul) never
# starts a piece inside a letter run, nor does a lower-only one; an upper-only one does after a
# lower-only one, and after one of both classes it depends on what follows its upper-only run
# (`[Up]*` backtracks to the last lower-class letter when no lower-only one follows: "中A " splits
# before A, "中Ab" does not), so it hands over; marks are letters to the case classes and "other"
# to the rest: one right after a letter (or after such marks) is inside that letter's run, as an
# Lo is, and windows hand over from the first other one on (rare outside some scripts).
# tests/test_scanner_windows.py checks this against `regex`.

_BEHIND = 16  # bytes of lookback in the masks: bit t is byte b - 15 + t, the window bits 16..47
_MARK_CHAIN = 3  # o200k: marks in a row after a letter that the windows take (Thai, Indic: 1-2)


def _window_rules(
    cont, letter, digit, white, newline, space, apostrophe, contraction_letters, case=None
):
    """(starts, hand-overs, (quotes, contractions), (pending, after_newline), (long_digits,
    digit_groups)) over the 64 bits of the masks (bit t: byte b - 15 + t), written with operators
    only, so that the kernel builds it as LLVM IR and a test can run it on ints. `pending` are
    the W right after an R, `long_digits` the digits after three digits (or a digit of several
    bytes), `quotes` the apostrophes that may begin a contraction, which `starts` and
    `hand-overs` leave out: `after_newline()`, `digit_groups()` and `contractions()` give their
    (starts, hand-overs); the kernel computes them only when the window has such bytes.

    cont: continuation bytes; letter, digit, white (\\s, \\r \\n too), newline: first bytes of
    characters of that kind; space, apostrophe: the bytes " " and "'"; contraction_letters(): the
    mask `_contraction_letters` describes (called only when needed). cl100k's rules, or with
    `case` = (upper, lower, slash, multibyte) o200k's (upper, lower: the case class bits; if not
    `multibyte`, cont must be 0 and no letter has both): a letter run splits before an
    upper-only letter (Lu, Lt) that follows a lower-only one (Ll), and hands over at one that
    follows a letter of both classes (Lm, Lo, or a mark after a letter) and from the first mark
    that does not follow a letter on; a contraction ends a
    letter piece (an apostrophe after a letter hands over if a contraction's letter follows);
    the tail after a P run is `[\\r\\n/]*`, so a P after a "/" of a tail starts a piece."""
    lead = ~cont

    def spread(x):  # from each character's first byte onto its continuation bytes: the carry
        # of an add runs from the first continuation byte through the others (as many as follow)
        return x | (((cont + ((x << 1) & cont)) ^ cont) & cont)

    if case is not None and case[3]:  # o200k over multi-byte text
        # Lm, Lo (CJK, kana, Hangul) and marks are in both case classes. A mark (M: both
        # classes, not a letter) right after a letter, or after up to _MARK_CHAIN - 1 such marks,
        # is inside that letter's run exactly as an Lo would be: the letter is in a letter
        # piece, which goes on through every character of either class. So it counts as a
        # letter here; the other marks (`loose`) hand over (below).
        both = case[0] & case[1]
        mark = both & ~letter
        joined = mark & (spread(letter) << 1)
        for _ in range(_MARK_CHAIN - 1):
            joined = mark & (spread(letter | joined) << 1)
        letter = letter | joined
        loose = mark & ~joined
    other = ~(letter | digit | white | cont)
    blank = white & ~newline  # W
    # continuation bytes from bit 0 on whose lead is before the masks: their kind is unknown, so
    # a digit or \r \n run right after them is treated as reaching back past the lookback
    orphans = ((cont + (cont & 1)) ^ cont) & cont

    s_digit, s_white, s_other = spread(digit), spread(white), spread(other)
    p_digit, p_white, p_other = s_digit << 1, s_white << 1, s_other << 1
    p_newline, p_blank, p_space = newline << 1, spread(blank) << 1, space << 1

    def before_p(x):  # at q: the character before p has x (p's first byte, shifted once more)
        return spread((spread(x) << 1) & lead) << 1

    def tail_of(tail_bits):
        # at q: p is in the tail after a P run (`[\r\n]*`, o200k `[\r\n/]*`: the bits of
        # `tail_bits` from an R right after a P on; the carry of an add runs through them, and
        # flips back a second such R in the run, hence the | after_other), and p is in a run of
        # `tail_bits` reaching bit 0 (what precedes it is unknown)
        after_other = newline & (s_other << 1)
        tail = (((tail_bits + after_other) ^ tail_bits) & tail_bits) | after_other
        reaching_back = (tail_bits & 1) | (tail_bits & (orphans << 1))
        unknown = ((tail_bits + reaching_back) ^ tail_bits) & tail_bits
        return tail << 1, unknown << 1

    if case is None:  # cl100k
        p_starts_none = p_other & (before_p(other) | before_p(space))
        other_starts = other & ~p_other & ~p_space
        quotes = apostrophe & other_starts  # apostrophes that start pieces
        hand, tail_bits, word_split = 0, newline, 0
    else:  # o200k
        upper, lower, slash, multibyte = case
        tail_bits = newline | slash
        p_tail, p_unknown = tail_of(tail_bits)
        # a P at q starts a piece after the tail of a P run (unless q, a "/", goes on with it) or
        # after neither a P nor " "
        other_starts = other & ((p_tail & ~slash) | (~p_tail & ~p_other & ~p_space))
        p_starts_none = p_other & ~(spread(other_starts) << 1)
        quotes = apostrophe & (spread(letter) << 1)  # a contraction may end the letter piece
        hand = lead & (p_unknown | (spread(p_unknown) << 1))
        if multibyte:
            # only Lu and Lt are upper-only, only Ll lower-only (`both` above). A letter run
            # splits before an upper-only letter after a lower-only one ("aB"); after one of both
            # classes it is not local ("中A " splits before A: `[Up]*` backtracks to the last
            # lower-class letter; "中Ab" does not)
            upper, lower = upper & ~lower, lower & ~upper
            # a loose mark is inside letter runs but "other" to the prefix and to P runs: every
            # decision from the first one on hands over (the ones before it look at it only as
            # "not whitespace", which it is)
            from_mark = ~((loose ^ (loose + -1)) >> 1)  # the lowest one's bit and all above it
            hand = hand | (lead & from_mark) | (upper & (spread(both) << 1))
        word_split = upper & (spread(lower) << 1)
    # next not whitespace: the first byte after q's continuation bytes is not white
    solid = lead & ~white
    v = solid | ((solid >> 1) & cont)
    v = solid | ((v >> 1) & cont)
    v = solid | ((v >> 1) & cont)
    next_solid = v >> 1
    pending = blank & p_newline

    starts = (
        (letter & (p_digit | p_newline | p_starts_none | word_split))
        | (digit & ~p_digit)
        | other_starts
        | (newline & ~p_white & ~p_other)
        | (blank & (~p_white | (p_blank & next_solid)))
    )

    def contractions():
        # a contraction may follow (s t m d r v l in either case, or a non-ASCII letter that
        # folds to one): hand over; otherwise the apostrophe is a P as any other
        return 0, quotes & (contraction_letters() >> 1)

    # digits with three before them in their run, or after a digit of several bytes
    long_digits = (
        digit & p_digit & ((cont << 1) | ((s_digit << 2) & ((cont << 2) | (s_digit << 3))))
    )

    def digit_groups():
        # `\p{N}{1,3}` from the run's start: in a run of one-byte digits that starts after bit 0,
        # every third one starts a piece (doubling: 3, 6, 12, 24, 48 digits on); the others
        # hand over
        single = digit & ~(cont >> 1)
        first = single & ~(s_digit << 1) & ~1 & ~(orphans << 1)
        settled = (((single + first) ^ single) & single) << 1  # at q: p and all before, single
        groups, chain = first, digit & (digit << 1) & (digit << 2) & (digit << 3)
        for step in (3, 6, 12, 24, 48):
            groups = groups | ((groups << step) & chain)
            chain = chain & (chain << step)
        return long_digits & settled & groups, long_digits & ~settled

    def after_newline():
        # an R in the 16 bytes after each byte, reached through whitespace (later), and whether
        # those 16 bytes are all whitespace (run: the run may go on past them)
        later, run = newline, s_white
        for step in (1, 2, 4, 8):
            later = later | (run & (later >> step))
            run = run & (run >> step)
        later, run = later >> 1, run >> 1  # at q: from the byte after q
        p_tail, p_unknown = tail_of(tail_bits)
        starts = pending & (p_tail | (~later & ~run))
        hand = pending & ((~p_tail & ~later & run) | (p_unknown & (later | run)))
        return starts, hand

    rare = (quotes, contractions), (pending, after_newline), (long_digits, digit_groups)
    return (starts, hand, *rare)


class _IRWord:
    """An LLVM i64 value with Python's bit operators, so `_window_rules` builds IR."""

    def __init__(self, builder: ir.IRBuilder, value: ir.Value) -> None:
        self.builder, self.value = builder, value

    def _of(self, other: _IRWord | int) -> ir.Value:
        return other.value if isinstance(other, _IRWord) else ir.Constant(ir.IntType(64), other)

    def _new(self, value: ir.Value) -> _IRWord:
        return _IRWord(self.builder, value)

    def __and__(self, other: _IRWord | int) -> _IRWord:
        return self._new(self.builder.and_(self.value, self._of(other)))

    def __or__(self, other: _IRWord | int) -> _IRWord:
        return self._new(self.builder.or_(self.value, self._of(other)))

    __rand__, __ror__ = __and__, __or__

    def __xor__(self, other: _IRWord | int) -> _IRWord:
        return self._new(self.builder.xor(self.value, self._of(other)))

    def __add__(self, other: _IRWord | int) -> _IRWord:
        return self._new(self.builder.add(self.value, self._of(other)))

    def __invert__(self) -> _IRWord:
        return self._new(self.builder.not_(self.value))

    def __lshift__(self, shift: int) -> _IRWord:
        return self._new(self.builder.shl(self.value, self._of(shift)))

    def __rshift__(self, shift: int) -> _IRWord:
        return self._new(self.builder.lshr(self.value, self._of(shift)))


_MASK_LANES = 64
_REACH = _MASK_LANES - _BEHIND + 1  # b + _REACH <= n: the masks' last byte is in the data


def _contraction_letters(builder: ir.IRBuilder, text: list, word) -> _IRWord:
    """The mask of bytes that may begin a contraction's letters: s t m d r v l in either case,
    or a byte of a non-ASCII character (it may fold to one)."""
    lanes = text[0].type
    low = [builder.or_(half, ir.Constant(lanes, [0x20] * _WINDOW)) for half in text]
    found = [builder.icmp_signed("<", half, ir.Constant(lanes, [0] * _WINDOW)) for half in text]
    for letter in b"stmdrvl":
        letters = ir.Constant(lanes, [letter] * _WINDOW)
        found = [
            builder.or_(was, builder.icmp_unsigned("==", half, letters))
            for was, half in zip(found, low, strict=True)
        ]
    return word(found)


def _window_starts_intrinsic(o200k: bool):
    """An intrinsic f(data, cls, b) -> the piece starts of cl100k (or o200k) among bytes
    b+1..b+32 (15 <= b, b + 49 <= len(data)): bit j set if byte b+1+j starts one, bit 32+j if
    the piece-by-piece scan must decide from byte b+1+j on (see `_window_rules`). Kernels only
    (no checks). The
    kind masks are byte-wise compares of 64 class and text bytes, each cast to one bit a byte
    (`vpmovmskb` on x86); the rules are scalar."""
    return intrinsic(functools.partial(_window_starts_typing, o200k))


def _window_starts_typing(o200k, typingctx, data, cls, b):
    """The typing and codegen of `_window_starts_intrinsic`."""
    _check_window_args(data, cls)

    def codegen(context, builder, signature, args):
        i64, lanes = ir.IntType(64), ir.VectorType(ir.IntType(8), _WINDOW)
        text, classes, at = _window_args(context, builder, signature, args)
        first = builder.sub(at, i64(_BEHIND - 1))

        # Two halves of 32 lanes: a compare of 64 lanes cast to i64 is not one instruction
        # a half on AVX2 but a byte-by-byte extraction (hundreds of instructions).
        def load(array):  # half h, lane t holds byte b - 15 + 32h + t
            return [
                builder.load(
                    builder.bitcast(
                        builder.gep(array.data, [builder.add(first, i64(_WINDOW * h))]),
                        lanes.as_pointer(),
                    ),
                    align=1,
                )
                for h in (0, 1)
            ]

        def each(value):
            return ir.Constant(lanes, [value] * _WINDOW)

        def word(compare):  # the halves' compare results, bit t of the i64 for byte b - 15 + t
            low, high = (
                builder.zext(builder.bitcast(half, ir.IntType(_WINDOW)), i64) for half in compare
            )
            bits = builder.or_(low, builder.shl(high, i64(_WINDOW)))
            # An empty asm statement hides that the word came from compares; otherwise LLVM folds
            # the rules' shifts and ands back into 64-lane vector code (one lane at a time).
            barrier = ir.FunctionType(i64, [i64])
            return _IRWord(builder, builder.asm(barrier, "", "=r,0", [bits], False))

        def equal(vector, value):
            return word([builder.icmp_unsigned("==", half, each(value)) for half in vector])

        def masked(vector, bits):
            return [builder.and_(half, each(bits)) for half in vector]

        def has(vector, bits):
            return word(
                [builder.icmp_unsigned("!=", half, each(0)) for half in masked(vector, bits)]
            )

        c, t = load(classes), load(text)
        kinds = dict(
            letter=has(c, _L),
            digit=has(c, _N),
            white=has(c, _S),
            newline=has(c, _NL),
            space=equal(t, _SPACE),
            apostrophe=equal(t, _APOSTROPHE),
            contraction_letters=lambda: _contraction_letters(builder, t, word),
        )
        cont = equal(c, _CONT)
        window = ((1 << _WINDOW) - 1) << _BEHIND

        def branch(condition, taken, other):  # the value of taken() or other(), as a phi
            with builder.if_else(condition, likely=True) as (then, otherwise):
                with then:
                    first, first_block = taken(), builder.block
                with otherwise:
                    second, second_block = other(), builder.block
            result = builder.phi(first.type)
            result.add_incoming(first, first_block)
            result.add_incoming(second, second_block)
            return result

        def found(cont, multibyte):
            case = (has(c, _UP), has(c, _LO), equal(t, _SLASH), multibyte) if o200k else None
            starts, hand, *rare = _window_rules(cont=cont, case=case, **kinds)

            def packed(starts, hand):
                starts, hand = (starts & window) >> _BEHIND, (hand & window) >> _BEHIND
                return (starts | (hand << _WINDOW)).value

            result = packed(starts, hand)
            for where, rule in rare:  # OR in each rare rule's result if the window needs it
                none = builder.icmp_unsigned("==", (where & window).value, i64(0))
                result = builder.or_(
                    result, branch(none, lambda: i64(0), lambda rule=rule: packed(*rule()))
                )
            return result

        # 64 bytes of ASCII (most windows of English and code): with no continuation bytes the
        # rules lose their carrying over them (LLVM folds the constant 0), a third of their work
        ascii_bytes = builder.icmp_unsigned("==", cont.value, i64(0))
        return branch(
            ascii_bytes,
            lambda: found(_IRWord(builder, i64(0)), multibyte=False),
            lambda: found(cont, multibyte=True),
        )

    return types.uint64(data, cls, b), codegen


_cl100k_starts = _window_starts_intrinsic(o200k=False)
_o200k_starts = _window_starts_intrinsic(o200k=True)


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


# --- counting: an open-addressing table of byte slices ------------------------------------------


# A slot is two uint64 of a flat array (slot j at 2j, 2j + 1), 16 bytes, so the table of a corpus's
# unique pieces mostly stays in L2: the piece's key and its count, so that counting a piece seen
# before touches this one cache line (and the arena's, for a long piece). Key 0 is an empty slot.
# - A piece of up to 7 bytes (nine in ten): the key is the piece itself, its bytes packed (byte k
#   << 8k) | (length + 1) << 56 (top byte 1..8), so a hit is one compare. Home slot: the top bits
#   of key * golden ratio (Fibonacci hashing).
# - A longer piece: 0xFF << 56 | length (capped at 255) << 48 | 8 check bits of its hash << 40 |
#   its place in the arena of unique pieces (40 bits), where its bytes are compared on a match of
#   the top 24 bits. Home slot: the top bits of its 64-bit hash (`_long_hash`).
# The entry number of slot j (order of first occurrence) is `entries[j]`, read only when the
# counts are gathered into `counts[entry]` and for pieces of 255 bytes or more. Slots are flat,
# not rows of a 2-D array, and indexed by uint64: a row's stride is then a constant and Numba adds
# no negative-index wraparound.
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U32 = np.uint64(32)
_U40 = np.uint64(40)
_U48 = np.uint64(48)
_U56 = np.uint64(56)
_SHORT = 7  # the longest piece whose key is the piece itself
_LONG_TAG = np.uint64(0xFF) << _U56  # a long piece's key: never a short one's (top byte 1..8)
_PLACE = (_U1 << _U40) - _U1  # a long piece's place in the arena: the key's low 40 bits
_ABOVE_PLACE = ~_PLACE
_ARENA_LIMIT = 1 << 40  # bytes of unique pieces: a place fits in the key's 40 bits
_CHECK_BITS = np.uint64(0xFF)


_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd, so multiplying by it loses no bits mod 2**64
_U29 = np.uint64(29)


@njit(inline="always")
def piece_hash(data, s, e):
    """(first 8 bytes packed, strong 64-bit hash) of data[s:e], fast for short pieces.

    The word is byte k << 8k for the first min(e - s, 8) bytes, zeros above: one unaligned load
    and a mask (away from the array's end; most pieces are under 8 bytes and a byte loop whose
    exit depends on the length mispredicts). Longer pieces fold in their other bytes 8 at a time
    (the last 8 may overlap the ones before: still a function of the bytes alone); a final
    multiply by the golden-ratio constant spreads every bit into the high bits, which index the
    table (Fibonacci hashing). Example: b"ab" -> word 0x6261.
    """
    length = e - s
    if s + 8 <= data.shape[0]:
        word = _load_u64(data, s)
    else:
        word = np.uint64(0)
        for k in range(_smaller(length, 8)):
            word |= np.uint64(data[s + k]) << np.uint64(8 * k)
    word &= _ALL_BITS >> np.uint64(64 - 8 * _smaller(length, 8))
    h = word ^ (np.uint64(length) << _U56)
    if length > 8:
        k = s + 8
        while k < e:
            h = (h ^ _load_u64(data, _smaller(k, e - 8))) * _GOLDEN
            h ^= h >> _U29
            k += 8
    return word, h * _GOLDEN


@njit(inline="always")
def _short_key(data, s, length):
    """The key of data[s:s+length], 0 <= length <= 7: its bytes packed | (length + 1) << 56.
    Example: b"ab" -> 0x0300000000006261, b"" -> 1 << 56 (never 0, the empty slot)."""
    if s + 8 <= data.shape[0]:
        word = _load_u64(data, s)
    else:  # the array's last 7 bytes: no load past its end
        word = np.uint64(0)
        for k in range(length):
            word |= np.uint64(data[s + k]) << np.uint64(8 * k)
    # (1 << 8 * length) - 1 keeps the piece's bytes; the shift stays below 64 for length <= 7
    return (word & ((_U1 << np.uint64(8 * length)) - _U1)) | (np.uint64(length + 1) << _U56)


@njit(inline="always")
def _home(key, shift):
    """The index of the word of the slot where probing for a short piece's key starts."""
    return ((key * _GOLDEN) >> np.uint64(shift)) << _U1


@njit(inline="always")
def _words_hash(first, last, length):
    """The hash of a piece of 8 to 16 bytes whose first and last 8 bytes (overlapping below 16
    bytes) are `first` and `last`."""
    return (((first ^ (np.uint64(length) << _U56)) * _GOLDEN) ^ last) * _GOLDEN


@njit(inline="always")
def _long_hash(data, s, length):
    """The 64-bit hash of data[s:s+length], length >= 8."""
    if length <= 16:
        return _words_hash(_load_u64(data, s), _load_u64(data, s + length - 8), length)
    return piece_hash(data, s, s + length)[1]


@njit(inline="always")
def _long_top(h, length):
    """The top 24 bits of a long piece's key (all but its place in the arena)."""
    check = ((h >> _U32) & _CHECK_BITS) << _U40
    return _LONG_TAG | (np.uint64(_smaller(length, 255)) << _U48) | check


@njit(inline="always")
def _same_bytes(arena, a, data, b, length):
    """arena[a:a+length] == data[b:b+length] for length >= 8, without making slices: 8 bytes
    at a time, the last 8 overlapping the ones before (both ranges lie inside their arrays)."""
    k = 0
    while k < length:
        at = _smaller(k, length - 8)
        if _load_u64(arena, a + at) != _load_u64(data, b + at):
            return False
        k += 8
    return True


@njit(inline="always")
def _filed(data, s, length, weight, table, used, at, key):
    """File the new piece data[s:s+length] with count `weight` in the empty slot `at` as entry
    `used`; returns the new `used`."""
    slots, entries, arena, offsets = table
    top = offsets[used]
    for k in range(length):
        arena[top + k] = data[s + k]
    offsets[used + 1] = top + length
    slots[at] = key
    slots[at + _U1] = np.uint64(weight)
    entries[at >> _U1] = used
    return used + 1


@njit(inline="always")
def _add_piece(data, s, length, weight, shift, table, used):
    """Count data[s:s+length] `weight` more times, filing it if new; returns (the slot's word
    index, the new `used`).

    `table` = (slots, entries, arena, offsets), `_borrowed` in the count loop (see there), with
    room made for the piece by `_reserved`: no array is replaced here, so the caller's loop keeps
    borrowed views. Short and long pieces probe in loops of their own: the short one compares a
    word, with no test of the length inside.
    """
    slots, entries, arena, offsets = table
    mask = np.uint64(slots.shape[0] - 1)
    if length <= _SHORT:
        key = _short_key(data, s, length)
        at = _home(key, shift)
        while True:
            found = slots[at]
            if found == key:
                slots[at + _U1] += np.uint64(weight)
                return at, used
            if found == 0:
                break
            at = (at + _U2) & mask
    else:
        h = _long_hash(data, s, length)
        top = _long_top(h, length)
        at = (h >> np.uint64(shift)) << _U1
        while True:
            found = slots[at]
            if (found & _ABOVE_PLACE) == top:  # same length (if under 255) and check bits
                a = np.int64(found & _PLACE)
                same_length = length < 255 or offsets[entries[at >> _U1] + 1] - a == length
                if same_length and _same_bytes(arena, a, data, s, length):
                    slots[at + _U1] += np.uint64(weight)
                    return at, used
            elif found == 0:
                key = top | np.uint64(offsets[used])
                break
            at = (at + _U2) & mask
    # one place files new pieces (inlined once: shorter to compile)
    return at, _filed(data, s, length, weight, table, used, at, key)


@njit
def _rehashed(slots, entries, arena, offsets, capacity, shift):
    """(slots, entries) of a table of `capacity` = 2**(64 - shift) slots holding the same keys,
    counts and entry numbers as the given ones."""
    new = np.zeros(2 * capacity, dtype=np.uint64)
    new_entries = np.zeros(capacity, dtype=np.uint32)
    mask = np.uint64(2 * capacity - 1)
    for j in range(entries.shape[0]):
        key = slots[2 * j]
        if key == 0:
            continue
        if key < _LONG_TAG:
            at = _home(key, shift)
        else:
            entry = entries[j]
            a = offsets[entry]
            at = (_long_hash(arena, a, offsets[entry + 1] - a) >> np.uint64(shift)) << _U1
        while new[at] != 0:
            at = (at + _U2) & mask
        new[at] = key
        new[at + _U1] = slots[2 * j + 1]
        new_entries[at >> _U1] = entries[j]
    return new, new_entries


@njit
def _grown(values, keep, capacity):
    """The first `keep` of `values` copied into a new array of `capacity`."""
    out = np.empty(capacity, dtype=values.dtype)
    for k in range(keep):  # a loop: slice assignment costs seconds of compiling
        out[k] = values[k]
    return out


@njit
def _gathered(slots, entries, counts):
    """`counts[entry]` set from the count in each filled slot (counts live in the slots while
    pieces are counted); returns `counts`."""
    for j in range(entries.shape[0]):
        if slots[2 * j] != 0:
            counts[entries[j]] = np.int64(slots[2 * j + 1])
    return counts


@njit
def _reserved(slots, entries, shift, arena, offsets, counts, used, pieces, size):
    """The table's parts (slots, entries, shift, arena, offsets, counts), grown if needed so that
    `pieces` more pieces of `size` bytes in all fit with the slots at most half full."""
    capacity = entries.shape[0]
    if (used + pieces) * 2 > capacity:
        while (used + pieces) * 2 > capacity:
            capacity, shift = capacity * 2, shift - 1
        offsets, counts = (
            _grown(offsets, used + 1, capacity // 2 + 1),
            _grown(counts, used, capacity // 2),
        )
        slots, entries = _rehashed(slots, entries, arena, offsets, capacity, shift)
    top = offsets[used]
    if top + size > _ARENA_LIMIT:  # a long piece's key holds its place in the arena in 40 bits
        raise ValueError("the count table holds at most 2**40 bytes of unique pieces")
    if top + size > arena.shape[0]:
        arena = _grown(arena, top, 2 * (top + size))
    return slots, entries, shift, arena, offsets, counts


@njit
def _empty_table():
    """(slots, entries, shift, arena, offsets, counts) of an empty table (see the slots' note)."""
    # Typed int64, not literals: Numba compiles a callee once more for each literal argument.
    shift = np.int64(64 - 12)  # 4096 slots, grown by `_reserved`
    capacity = np.int64(1) << (64 - shift)
    slots = np.zeros(2 * capacity, dtype=np.uint64)
    entries = np.zeros(capacity, dtype=np.uint32)  # entry numbers below 2**32, as before
    offsets = np.zeros(capacity // 2 + 1, dtype=np.int64)
    counts = np.zeros(capacity // 2, dtype=np.int64)
    arena = np.empty(1 << 16, dtype=np.uint8)
    return slots, entries, shift, arena, offsets, counts


@njit
def _count_table(data, cls, seg_starts, seg_ends, preset, fold_cps, fold_letters):
    """Scan and count every piece of every segment data[seg_starts[j]:seg_ends[j]] (pieces
    never cross a segment's ends); unique pieces are kept in order of first occurrence.

    Returns (arena, offsets, counts, used): unique piece k is arena[offsets[k]:offsets[k+1]], seen
    counts[k] times. Pieces are scanned a block at a time into `bounds` (small: it stays in L1
    and leaves L2 to the table), then counted.
    """
    literally(preset)
    bounds = np.empty(1 << 10, dtype=np.int64)
    starts = bounds[:-1]  # room for the end of the block's last piece after its starts
    slots, entries, shift, arena, offsets, counts = _empty_table()
    used = np.int64(0)  # never a literal: see `_empty_table`
    size = np.int64(0)
    for j in range(seg_starts.shape[0]):
        size += seg_ends[j] - seg_starts[j]
    # Room at once for a guess of the unique pieces (one per 200 bytes, at most 2**16), so the
    # table seldom regrows (refiling hashes every long piece's bytes again)
    slots, entries, shift, arena, offsets, counts = _reserved(
        slots, entries, shift, arena, offsets, counts, used, min(size // 200, 1 << 16), size // 64
    )
    for j in range(seg_starts.shape[0]):
        a = seg_starts[j]
        seg = data[a : seg_ends[j]]
        seg_cls = cls[a : seg_ends[j]]
        n = seg.shape[0]
        i = np.int64(0)  # not a literal 0: Numba would compile scan_starts for it as well
        while i < n:
            k, resume = scan_starts(seg, seg_cls, i, preset, fold_cps, fold_letters, starts)
            bounds[k] = resume
            slots, entries, shift, arena, offsets, counts = _reserved(
                slots, entries, shift, arena, offsets, counts, used, k, resume - i
            )
            # the table's arrays are replaced only between blocks: borrow them for the block (the
            # owners stay alive: they are used after the loop)
            table = _borrowed(slots), _borrowed(entries), _borrowed(arena), _borrowed(offsets)
            text = _borrowed(seg)
            for p in range(k):
                at = np.uint64(p)  # unsigned: no negative-index wraparound, seven instructions
                s = bounds[at]
                used = _add_piece(text, s, bounds[at + _U1] - s, 1, shift, table, used)[1]
            i = resume
    counts = _gathered(slots, entries, counts)
    return arena, offsets, counts, used


@njit
def fold_table(slots, entries, shift, arena, offsets, counts, used, buf, t_offsets, t_counts):
    """File each piece of the table (buf, t_offsets, t_counts) into the table (slots, entries,
    shift, arena, offsets, counts) holding `used` pieces; returns its (possibly regrown) parts and
    the new count of unique pieces. Room for every piece is made first (`_reserved`), so no array
    is replaced while pieces are filed. `counts` is kept up to date piece by piece (a gather over
    all slots would cost the whole table per fold). Example: folding (b"ab", [0, 1, 2], [1, 1])
    twice into an empty table gives the pieces b"a", b"b" with counts [2, 2]."""
    slots, entries, shift, arena, offsets, counts = _reserved(
        slots, entries, shift, arena, offsets, counts, used, t_counts.shape[0], buf.shape[0]
    )
    # Owned arrays, not `_borrowed` views: this files unique pieces only, so the reference
    # counts cost little.
    table = slots, entries, arena, offsets
    for k in range(t_counts.shape[0]):
        s = t_offsets[k]
        at, used = _add_piece(buf, s, t_offsets[k + 1] - s, t_counts[k], shift, table, used)
        counts[entries[at >> _U1]] = np.int64(slots[at + _U1])
    return slots, entries, shift, arena, offsets, counts, used


# --- one entry point per preset ------------------------------------------------------------------
# Python cannot pass a literal, so each preset gets thin entry kernels that call the shared ones
# with a constant: the first use of a preset compiles that preset's code only.


@njit
def _scan_starts_gpt2(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 0, fold_cps, fold_letters, out)


@njit
def _scan_starts_cl100k(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 1, fold_cps, fold_letters, out)


@njit
def _scan_starts_o200k(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 2, fold_cps, fold_letters, out)


@njit
def _count_table_gpt2(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 0, fold_cps, fold_letters)


@njit
def _count_table_cl100k(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 1, fold_cps, fold_letters)


@njit
def _count_table_o200k(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 2, fold_cps, fold_letters)


_SCAN_STARTS = (_scan_starts_gpt2, _scan_starts_cl100k, _scan_starts_o200k)
_COUNT_TABLE = (_count_table_gpt2, _count_table_cl100k, _count_table_o200k)


def counting_kernels(preset: str) -> tuple:
    """The compiled kernels that counting with `preset` runs (`warmup` asks their cache)."""
    return (_COUNT_TABLE[preset_code(preset)], classify, fold_table)


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


def preset_code(preset: str) -> int:
    """The kernel's code for a preset name (or the preset's pattern string itself)."""
    for name, pattern in _PRESET_STRINGS.items():
        if preset in (name, pattern):
            return _PRESET_CODES[name]
    raise ValueError(f"the scanner knows the presets {PRESETS_SCANNABLE}, not {preset!r}")


@functools.cache
def kernel_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The class tables as the kernels take them: `flags` with _NL added on \r and \n."""
    t = uc.tables()
    flags = t.flags.copy()
    flags[[_LF, _CR]] |= _NL
    if not np.array_equal(flags[:128], ascii_classes_by_ranges()):  # `classify` computes these
        raise RuntimeError("the generated ASCII classes differ from the scanner's _ASCII_RANGES")
    return flags, t.fold_cps, t.fold_letters


def _classified(data: BytesLike) -> tuple[np.ndarray, np.ndarray]:
    """The input as a uint8 view and its per-byte class array."""
    array = _as_uint8(data)
    cls = np.empty(array.shape[0], dtype=np.uint8)
    classify(array, kernel_tables()[0], cls)
    return array, cls


def piece_bounds(data: BytesLike, preset: str) -> np.ndarray:
    """Byte offsets of the pieces: piece i is data[b[i]:b[i+1]], b[0] = 0, b[-1] = len(data).

    Example: piece_bounds(b"a   b", "gpt2") -> [0, 1, 3, 5] ("a", "  ", " b"). The result may be
    a view into a larger, mostly untouched buffer (saves a copy of the biggest array).
    """
    code = preset_code(preset)
    array, cls = _classified(data)
    _, fold_cps, fold_letters = kernel_tables()
    n = array.shape[0]
    # Room for English (~4 bytes per piece) plus the final offset. Pages never written are never
    # committed, so the unused tail costs no memory and the common case returns a view, no copy.
    # A short text gets a block of at least 4,096 starts: the scan takes 32 bytes a step only
    # while its block has room for a window's 32 more (tests of short texts then reach it too).
    out = np.empty(max(n // 3, 4096) + 2, dtype=np.int64)
    scan_starts = _SCAN_STARTS[code]
    k, i = scan_starts(array, cls, 0, fold_cps, fold_letters, out[:-1])
    if i == n:
        out[k] = n
        return out[: k + 1]
    parts = [out[:k]]
    while i < n:  # text with many short pieces: continue in more blocks
        block = np.empty(max(1 << 16, (n - i) // 2), dtype=np.int64)
        k, i = scan_starts(array, cls, i, fold_cps, fold_letters, block)
        parts.append(block[:k])
    parts.append(np.array([n], dtype=np.int64))
    return np.concatenate(parts)


def pieces(data: BytesLike, preset: str) -> list[bytes]:
    """The pieces as bytes objects (for tests and small inputs; slow on a whole corpus)."""
    raw = bytes(_as_uint8(data))
    bounds = piece_bounds(raw, preset).tolist()
    return [raw[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def count_pieces_arrays(
    data: BytesLike, preset: str, segments: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buf, offsets, counts): unique piece k is buf[offsets[k]:offsets[k+1]], seen counts[k] times.

    Pieces are in order of first occurrence. This is the trainer's word table, built without a
    Python object per piece. `segments` = (starts, ends) byte offsets limits the scan to those
    stretches, each scanned on its own (the text between special tokens); default: all of it.
    Example: b"a a a" (gpt2) -> buf b"a a", offsets [0, 1, 3], counts [1, 2].
    """
    code = preset_code(preset)
    array, cls = _classified(data)
    _, fold_cps, fold_letters = kernel_tables()
    if segments is None:
        segments = (np.zeros(1, dtype=np.int64), np.full(1, array.shape[0], dtype=np.int64))
    starts = np.ascontiguousarray(segments[0], dtype=np.int64)
    ends = np.ascontiguousarray(segments[1], dtype=np.int64)
    arena, offsets, counts, used = _COUNT_TABLE[code](
        array, cls, starts, ends, fold_cps, fold_letters
    )
    return arena[: offsets[used]].copy(), offsets[: used + 1].copy(), counts[:used].copy()


def merge_count_tables(
    tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several (buf, offsets, counts) tables as one, counts of the same piece summed."""
    if len(tables) == 1:
        return tables[0]
    buf = np.concatenate([t[0] for t in tables]) if tables else np.empty(0, np.uint8)
    shifted, base = [], 0
    for t_buf, t_offsets, _ in tables:
        shifted.append(t_offsets[:-1] + base)
        base += t_buf.shape[0]
    offsets = np.concatenate([*shifted, np.array([base], dtype=np.int64)])
    counts = np.concatenate([t[2] for t in tables]) if tables else np.empty(0, np.int64)
    *_, arena, out_offsets, out_counts, used = fold_table(
        *_empty_table(), np.int64(0), buf, offsets, counts
    )
    return (
        arena[: out_offsets[used]].copy(),
        out_offsets[: used + 1].copy(),
        out_counts[:used].copy(),
    )


def count_pieces(data: BytesLike, preset: str) -> dict[bytes, int]:
    """Unique piece bytes -> count, equal to `Counter(p.encode() for p in regex.findall(...))`."""
    buf, offsets, counts = count_pieces_arrays(data, preset)
    raw = buf.tobytes()
    edges = offsets.tolist()
    return {raw[edges[k] : edges[k + 1]]: count for k, count in enumerate(counts.tolist())}
