"""Python lists of token ids from int32 arrays, in one pass over the ids.

`encode` and `encode_batch` hand out lists of Python ints, as tiktoken does. Making them is all
GIL-held work, and in `encode_batch` it was half of a call's time: the part its threads cannot
share. `ids.tolist()` makes a new int object per id. Taking ready-made ints (one per id, made
once per tokenizer) through numpy (`objects.take(ids).tolist()`) avoids that, but touches every
int's reference count three times (the object array, the list, freeing the object array).

Here a small kernel fills a list of `None`s (made by Python at memory speed) in place through
CPython's own C API: for each id, `Py_IncRef(int)` and `PyList_SetItem(list, k, int)` (which
takes that reference and releases the `None`). One touch per id, three to four times faster than
`take().tolist()`. The kernel holds the GIL, as any code that changes reference counts must.
It gets the objects' addresses (`id()` in CPython) in an array kept with the objects, and it
checks every id against that array: an id without a ready-made int (a special token's, above
the ordinary ids) stops it, and that list is made by `tolist()` instead.

Where this cannot work (not CPython, or the kernel fails to compile or link) the lists come from
`take().tolist()`, the same lists; `fast_lists()` says which way is in use (tried on first use,
not at import: loading the kernel is start-up time a tokenizer that never encodes need not pay).
"""

from __future__ import annotations

import functools
import platform

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


_AHEAD = 16  # ids between a prefetch and the increment it prepares


@njit_holding_gil
def _fill(list_addresses, starts, ends, ids, object_addresses):
    """Fill list j (of `ends[j] - starts[j]` Nones, at `list_addresses[j]`) with the ints of
    `ids[starts[j]:ends[j]]`; the number of lists filled: j < len(starts) if list j holds an id
    with no ready-made int (that list is left part filled)."""
    bound = object_addresses.shape[0]
    for j in range(starts.shape[0]):
        lst = list_addresses[j]
        start = starts[j]
        end = ends[j]
        for k in range(start, end):
            if k + _AHEAD < end:
                ahead = ids[k + _AHEAD]
                if 0 <= ahead < bound:
                    _prefetch(object_addresses[ahead])
            tid = ids[k]
            if tid < 0 or tid >= bound:
                return j
            item = object_addresses[tid]
            _py_incref(item)
            _py_list_setitem(lst, k - start, item)
    return starts.shape[0]


class ReadyInts:
    """The ints 0..count-1, made once, and lists of them for arrays of ids."""

    def __init__(self, count: int) -> None:
        self.objects = np.array(range(count), dtype=object)
        # The kernel's way in: each int's address. `objects` keeps the ints alive as long as this.
        self.addresses = np.fromiter(map(id, self.objects), dtype=np.int64, count=count)

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
        out = [[None] * n for n in (ends - starts).tolist()]
        addresses = np.fromiter(map(id, out), dtype=np.int64, count=len(out))
        done = 0
        while done < len(out):  # a list with a special's id: that one by numpy, then go on
            done += _fill(addresses[done:], starts[done:], ends[done:], ids, self.addresses)
            if done < len(out):
                out[done] = self._taken(ids[starts[done] : ends[done]])
                done += 1
        return out  # type: ignore[return-value]

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
    """Whether `_fill` compiles, links and gives the right lists here (checked once)."""
    if platform.python_implementation() != "CPython":  # `id()` is an address only in CPython
        return False
    try:
        ints = np.array(range(3), dtype=object)
        out = [None, None, None]
        ids = np.array([2, 0, 1], dtype=np.int32)
        one = np.zeros(1, np.int64)
        addresses = np.fromiter(map(id, ints), dtype=np.int64, count=3)
        done = _fill(np.array([id(out)], np.int64), one, one + 3, ids, addresses)
    except Exception:  # noqa: BLE001 - any failure means: use numpy's way
        return False
    return done == 1 and out == [2, 0, 1]
