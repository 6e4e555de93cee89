"""The LLVM IR of the scanner's 32-byte windows: the piece starts of gpt2, cl100k and o200k among
32 bytes at once, as vector compares of class and text bytes and scalar bit rules.

`_window_rules` states the cl100k/o200k rules with operators only, so the intrinsic builds them
as IR (through `_IRWord`) and a test can run them on ints. How the starts found are written out
and handed to the piece-by-piece scan is `pretokenize.scan.windows`; the scan's other intrinsics
are in `scan_ir`.
"""

from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic

from workbench.engine._native.scan_layout import (
    _APOSTROPHE,
    _CONT,
    _L,
    _LNS,
    _LO,
    _N,
    _NL,
    _S,
    _SLASH,
    _SPACE,
    _UP,
    _WINDOW,
)

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
