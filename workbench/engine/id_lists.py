"""Python lists of token ids from int32 arrays, in one pass over the ids.

`encode` and `encode_batch` hand out lists of Python ints, as tiktoken does. Making them is all
GIL-held work, and in `encode_batch` it was half of a call's time: the part its threads cannot
share. `ids.tolist()` makes a new int object per id. Taking ready-made ints (one per id, made
once per tokenizer) through numpy (`objects.take(ids).tolist()`) avoids that, but touches every
int's reference count three times (the object array, the list, freeing the object array).

Here a small kernel makes each list itself through CPython's own C API (`PyList_New`, items not
yet set) and stores the ints straight into its item array: for each id one new reference and
one store, about four times faster than `take().tolist()`. The new reference is `Py_IncRef`,
or, where the layout is known (a CPython 3.11-3.14 build with the GIL and without reference
debugging) and the int is an ordinary object (not immortal: a reference count far below 2**30
when the ints are made), the same increment of its reference count done inline, which is what
`Py_INCREF` compiles to there: half the time again. The kernel holds the GIL, as any code that
changes reference counts must. It gets the objects' addresses (`id()` in CPython) in an array
kept with the objects, and it checks every id of a list against that array before making the
list: an id without a ready-made int (a special token's, above the ordinary ids) stops it, and
that list is made by `tolist()` instead.

Where this cannot work (not CPython, or the kernel fails to compile or link) the lists come from
`take().tolist()`, the same lists; `fast_lists()` says which way is in use (tried on first use,
not at import: loading the kernel is start-up time a tokenizer that never encodes need not pay).
"""

from __future__ import annotations

import functools
import platform
import struct
import sys
import sysconfig

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from workbench.engine.numba_config import njit_holding_gil

# Below this many ids a list is made by numpy: the kernel's call costs more than it saves.
_SHORTEST = 64

_OBJECT = ir.IntType(8).as_pointer()


@intrinsic
def _py_incref(typingctx, address):
    """`Py_IncRef((PyObject *) address)`: a new reference to the object at `address`."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [_OBJECT]), "Py_IncRef"
        )
        builder.call(function, [builder.inttoptr(args[0], _OBJECT)])
        return context.get_dummy_value()

    return types.none(types.int64), codegen


@intrinsic
def _py_list_setitem(typingctx, list_address, index, address):
    """`PyList_SetItem(list, index, object)`: stores the object, taking the caller's reference to
    it and releasing the item it replaces; 0, or -1 (index out of range: never, see `_fill`)."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.IntType(32), [_OBJECT, ir.IntType(64), _OBJECT]),
            "PyList_SetItem",
        )
        lst, index_, item = args
        return builder.call(
            function, [builder.inttoptr(lst, _OBJECT), index_, builder.inttoptr(item, _OBJECT)]
        )

    return types.int32(types.int64, types.int64, types.int64), codegen


@intrinsic
def _prefetch(typingctx, address):
    """A hint to load the cache line at `address` for writing (its object's reference count):
    the ints are spread over megabytes that the encoder's tables have just pushed out of cache."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(
                ir.VoidType(), [_OBJECT, ir.IntType(32), ir.IntType(32), ir.IntType(32)]
            ),
            "llvm.prefetch.p0i8",
        )
        i32 = ir.IntType(32)
        pointer = builder.inttoptr(args[0], _OBJECT)
        builder.call(function, [pointer, i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(types.int64), codegen


@intrinsic
def _py_list_new(typingctx, size):
    """`PyList_New(size)`: the address of a new list of `size` items not yet set (NULL), or 0
    if memory ran out (the exception is then pending: see `_py_err_clear`)."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_OBJECT, [ir.IntType(64)]), "PyList_New"
        )
        return builder.ptrtoint(builder.call(function, [args[0]]), ir.IntType(64))

    return types.int64(types.int64), codegen


@intrinsic
def _py_err_clear(typingctx):
    """`PyErr_Clear()`: drop the pending exception (the caller raises its own)."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), []), "PyErr_Clear"
        )
        builder.call(function, [])
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _load_word(typingctx, address):
    """The 8-byte word at `address`."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))

    return types.int64(types.int64), codegen


@intrinsic
def _store_word(typingctx, address, value):
    """Write the 8-byte word `value` at `address`."""

    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], ir.IntType(64).as_pointer()))
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


_AHEAD = 16  # ids between a prefetch and the increment it prepares


@njit_holding_gil
def _fill(outer, first, starts, ends, ids, object_addresses, adds, inline, items_at):
    """Make list j of `ids[starts[j]:ends[j]]`'s ints and set it as item j of the list at
    `outer`, for each j from `first`; returns where it stopped: len(starts), or j if list j
    holds an id with no ready-made int (item j is left as it was), or -1 if memory ran out.

    A new reference to int t: `adds[t]` (1, or 0 for an immortal int) added to its count here
    if `inline` (see `_inline_counts`), else `Py_IncRef`. A new list's item array is the word
    at `items_at` bytes into it (`ob_item`)."""
    bound = np.uint32(object_addresses.shape[0])
    for j in range(first, starts.shape[0]):
        start = starts[j]
        end = ends[j]
        outside = False  # checked first, or a list would be left with unset items
        for k in range(start, end):  # no exit in the loop: it compiles to vector compares
            outside |= np.uint32(ids[k]) >= bound  # a negative id is a huge unsigned one
        if outside:
            return j
        lst = _py_list_new(end - start)
        if lst == 0:
            _py_err_clear()
            return -1
        _py_list_setitem(outer, j, lst)
        items = _load_word(lst + items_at)
        for k in range(start, end):
            if k + _AHEAD < end:
                _prefetch(object_addresses[ids[k + _AHEAD]])
            tid = ids[k]
            item = object_addresses[tid]
            if inline:  # Py_INCREF, as it compiles on these builds: no branch per id
                _store_word(item, _load_word(item) + adds[tid])
            else:
                _py_incref(item)
            _store_word(items + 8 * (k - start), item)
    return starts.shape[0]


def _inline_counts() -> bool:
    """Whether a reference count can be incremented inline: a 64-bit CPython 3.11-3.14 with the
    GIL and no reference debugging, whose objects start with their 8-byte count and whose
    `Py_INCREF` adds one to it, or (3.12+) leaves an immortal object's alone. Elsewhere:
    `Py_IncRef`."""
    return (
        platform.python_implementation() == "CPython"
        and (3, 11) <= sys.version_info[:2] <= (3, 14)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
        and not hasattr(sys, "gettotalrefcount")  # a debug build keeps a total of all counts
        and struct.calcsize("P") == 8
    )


def _adds(objects: np.ndarray) -> np.ndarray:
    """What a new reference adds to each object's count: 1, or 0 for an immortal object (3.12+:
    the small ints; their counts are 2**30 and more, an ordinary object's a handful; 3.11's
    small ints start at 10**9 but count as any other object)."""
    if sys.version_info < (3, 12):
        return np.ones(objects.shape[0], dtype=np.uint8)
    counts = np.fromiter(map(sys.getrefcount, objects), dtype=np.int64, count=objects.shape[0])
    return (counts < _IMMORTAL).astype(np.uint8)


_IMMORTAL = 1 << 30
_INLINE = _inline_counts()
# `ob_item`, the item array's address, is the second-last field of a list (`allocated` is last).
_WORD = struct.calcsize("P")
_ITEMS_AT = list.__basicsize__ - 2 * _WORD
# ...right after the three-word header of a variable-size object (reference count, type, size):
# any other layout (a debug build's longer header) gets numpy's way.
_KNOWN_LAYOUT = list.__basicsize__ == 5 * _WORD


class ReadyInts:
    """The ints 0..count-1, made once, and lists of them for arrays of ids."""

    def __init__(self, count: int) -> None:
        self._hold(np.array(range(count), dtype=object))

    def _hold(self, objects: np.ndarray) -> None:
        """Keep `objects` (ints, an object array) and what the kernel needs of them: each one's
        address (its way in; `objects` keeps the ints alive as long as this) and what a new
        reference adds to its count."""
        self.objects = objects
        self.addresses = np.fromiter(map(id, objects), dtype=np.int64, count=objects.shape[0])
        self.adds = _adds(objects)

    def lists(self, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[list[int]]:
        """`[ids[a:b].tolist() for a, b in zip(starts, ends)]`, the ints taken ready-made.

        `ids` is int32; `starts` and `ends` int64 with 0 <= start <= end <= len(ids) (checked)."""
        if starts.shape != ends.shape or ids.dtype != np.int32 or ids.ndim != 1:
            raise ValueError(
                "ReadyInts.lists takes an int32 array of ids and equal starts and ends"
            )
        # One layout and type for the kernel: any other would compile it again (seconds).
        ids = np.ascontiguousarray(ids)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        if starts.size and (starts.min() < 0 or ends.max() > ids.shape[0] or np.any(ends < starts)):
            raise ValueError("ReadyInts.lists: a list's bounds lie outside the ids")
        if not fast_lists():
            pairs = zip(starts.tolist(), ends.tolist(), strict=True)
            return [self._taken(ids[a:b]) for a, b in pairs]
        out: list = [None] * starts.shape[0]
        done = 0
        while done < len(out):  # a list with a special's id: that one by numpy, then go on
            done = _fill(
                id(out), done, starts, ends, ids, self.addresses, self.adds, _INLINE, _ITEMS_AT
            )
            if done < 0:
                raise MemoryError("out of memory making the lists of token ids")
            if done < len(out):
                out[done] = self._taken(ids[starts[done] : ends[done]])
                done += 1
        return out

    def one_list(self, ids: np.ndarray) -> list[int]:
        """`ids.tolist()` (int32, one dimension), the ints taken ready-made."""
        if ids.shape[0] < _SHORTEST or not fast_lists():
            return self._taken(ids)
        bounds = np.array([0], dtype=np.int64), np.array([ids.shape[0]], dtype=np.int64)
        return self.lists(ids, *bounds)[0]

    def _taken(self, ids: np.ndarray) -> list[int]:
        try:
            return self.objects.take(ids).tolist()
        except IndexError:  # a special's id past the ordinary ids: make its ints after all
            return ids.tolist()


@functools.cache
def fast_lists() -> bool:
    """Whether `_fill` compiles, links and gives the right lists and reference counts here
    (checked once, on ints made for the check)."""
    if platform.python_implementation() != "CPython":  # `id()` is an address only in CPython
        return False
    if not _KNOWN_LAYOUT:
        return False
    out: list = [None]
    # Ints made at run time, not shared with any other code: their counts are exactly ours (and
    # never immortal, so `adds` is 1 for each on every version).
    ints = [int(x) + 10**9 for x in "012"]
    try:
        ready = ReadyInts(0)
        ready._hold(np.array(ints, dtype=object))
        before = [sys.getrefcount(x) for x in ints]
        ids = np.array([2, 0, 2], dtype=np.int32)
        one = np.zeros(1, np.int64)
        for inline in {_INLINE, False}:
            made = _fill(
                id(out), 0, one, one + 3, ids, ready.addresses, ready.adds, inline, _ITEMS_AT
            )
            counts = [sys.getrefcount(x) for x in ints]
            if made != 1 or out[0] != [ints[2], ints[0], ints[2]]:
                raise ValueError("wrong list")
            if counts != [before[0] + 1, before[1], before[2] + 2]:
                raise ValueError("wrong reference counts")
            out[0] = None
            if [sys.getrefcount(x) for x in ints] != before:
                return False
    except Exception:  # noqa: BLE001 - any failure means: use numpy's way
        # A list whose references the kernel got wrong must never be released, nor the ints'
        # owners: their counts would fall to zero while the list still holds them.
        _NEVER_RELEASED.append((out, ints))
        return False
    return True


_NEVER_RELEASED: list = []
