"""The scanner's LLVM IR built by hand: Numba intrinsics for loads and stores without checks,
bit counts, the 32-byte classify steps and the eight-bytes-at-a-time run search.

Kernels only: none of these checks its indices (the callers do). What the scan does with them
(the preset rules, the piece table) is in `pretokenize.scan`; the window rules' IR is in
`window_ir`. `_borrowed` reaches Numba's private `_getvalue`, which stays in this fenced package.
"""

from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic

from workbench.engine._native.scan_layout import _AFTER, _ASCII_RANGES, _BEFORE, _CONT, _STEP


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
