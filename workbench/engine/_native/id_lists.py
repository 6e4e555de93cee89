"""Python lists of token ids from int32 arrays, in one pass over the ids.

`encode` and `encode_batch` hand out lists of Python ints, as tiktoken does. Making them is all
GIL-held work, and in `encode_batch` it was half of a call's time: the part its threads cannot
share. `ids.tolist()` makes a new int object per id. Taking ready-made ints (one per id, made
once per process) through numpy (`objects.take(ids).tolist()`) avoids that, but touches every
int's reference count three times (the object array, the list, freeing the object array).

Here the ready ints are kept for the life of the process (`_keep_forever`): their reference
counts are raised so far that no list dropping them can bring one to zero (3.11: by 2**60), or
(3.12+) they are made immortal as CPython makes its own small ints (`Py_INCREF`/`Py_DECREF`
leave them alone). A list then holds them without counting a reference each: counting the uses
of every id and raising each used int's count (1.6-2.2 ms of the 2.7-3.6 ms a list of 0.6-1.1
million ids took) is gone. They are never freed, which costs nothing: the process keeps one set
of them anyway (`shared_ready_ints`), grown with the same ints when a larger vocabulary comes.

Small kernels make each list through CPython's own C API (`PyList_New`, items not yet set) and
store the ints straight into its item array, in steps so that only the short ones hold the GIL:
- `_whole` (no GIL) checks every id of a list against the ready-made ints (an id without one, a
  special token's above the ordinary ids, leaves that list to `tolist()`);
- `_new_lists` (GIL) makes the lists, out of the garbage collector's sight;
- `_fill_items` (no GIL) stores the ints' addresses (`id()` in CPython, kept in an array beside
  the objects) into the items. No other code can see these lists yet (not returned, and kept
  out of the garbage collector's sight until `_track_lists`), and the ints need no new
  references, so it runs while another thread holds the GIL.
On a call that fails between the steps (out of memory, an interrupt) the half-made lists are
dropped unseen.

Where this cannot work (not a CPython whose reference counts are laid out as above, or the
kernel fails to compile or link) the lists come from `take().tolist()`, the same lists, and the
ints are kept as ordinary objects; `fast_lists()` says which way is in use (tried on first use,
not at import: loading the kernel is start-up time a tokenizer that never encodes need not pay).
"""

from __future__ import annotations

import ctypes
import functools
import platform
import struct
import sys
import sysconfig
import threading

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from workbench.engine._native import portable
from workbench.engine._native.numba_config import njit, njit_holding_gil

# Below this many ids a single list is made by numpy: the kernels' four calls cost about 20 us,
# as much as numpy takes for 4,000 ids (of 200,000 ready ints, measured).
_SHORTEST = 4096

_OBJECT = ir.IntType(8).as_pointer()


def _object_call(name: str):
    """An intrinsic f(address) calling CPython's `void name(PyObject *)` on the object there."""

    def typing(typingctx, address):
        def codegen(context, builder, signature, args):
            function = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [_OBJECT]), name
            )
            builder.call(function, [builder.inttoptr(args[0], _OBJECT)])
            return context.get_dummy_value()

        return types.none(types.int64), codegen

    typing.__name__ = f"_{name}"
    return intrinsic(typing)


# The garbage collector's list of objects it looks into: a list whose items are not all set yet
# is kept out of it (`gc.get_objects()` in another thread must never hand it to Python code).
_gc_untrack = _object_call("PyObject_GC_UnTrack")
_gc_track = _object_call("PyObject_GC_Track")


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


@njit
def _whole(ids, starts, ends, bound, whole):
    """Without the GIL: whole[j] = 1 if every id of list j (`ids[starts[j]:ends[j]]`) has a
    ready-made int (is below `bound`), else 0."""
    bound = np.uint32(bound)
    for j in range(starts.shape[0]):
        outside = False  # no exit in the loop: it compiles to vector compares
        for k in range(starts[j], ends[j]):
            outside |= np.uint32(ids[k]) >= bound  # a negative id is a huge unsigned one
        whole[j] = 0 if outside else 1


@njit_holding_gil
def _new_lists(outer, whole, starts, ends, made, items, at):
    """With the GIL: for each whole list j a new list of its length, items not yet set, as item
    j of the list at `outer`, out of the garbage collector's sight (`_track_lists` brings it back
    once filled), its address in made[j] and its item array's in items[j] (the word at `at`
    bytes into the list). Returns 0, or -1 if memory ran out."""
    for j in range(starts.shape[0]):
        if whole[j] == 0:
            continue
        lst = _py_list_new(ends[j] - starts[j])
        if lst == 0:
            _py_err_clear()
            return -1
        _gc_untrack(lst)
        _py_list_setitem(outer, j, lst)
        made[j] = lst
        items[j] = _load_word(lst + at)  # `ob_item`, the item array's address
    return 0


@njit
def _fill_items(whole, starts, ends, items, ids, addresses):
    """Without the GIL: set the items of each whole list j, made by `_new_lists` and seen by no
    other code yet, to the ints of its ids (kept forever: they take no new reference)."""
    for j in range(starts.shape[0]):
        if whole[j] == 0:
            continue
        start = starts[j]
        at = items[j]
        for k in range(start, ends[j]):
            _store_word(at + 8 * (k - start), addresses[np.uint32(ids[k])])


@njit_holding_gil
def _track_lists(whole, made):
    """With the GIL: the filled lists back in the garbage collector's sight."""
    for j in range(whole.shape[0]):
        if whole[j] != 0:
            _gc_track(made[j])


_LOW = np.int64(0xFFFFFFFF)
_IMMORTAL_LOW = np.int64(3 << 30)  # 3.14's starting count of an immortal object: its low 32 bits
_SIGN = np.int64(1 << 31)  # 32-bit counts from here are immortal (3.12+)
_RAISED_BY = np.int64(1 << 60)  # 3.11: 10**18 lists of one int would have to be dropped


@njit_holding_gil
def _keep_forever(addresses, immortal):
    """With the GIL (the small ints among them are everyone's): make each object at `addresses`
    one that no dropped reference can free. `immortal` (3.12-3.14): the low 32 bits of its count
    (the count itself on 3.12-3.13, the high half being zero; 3.14 keeps flags there, left
    alone) set to 3 << 30, negative as a 32-bit number, which is what `Py_DECREF` takes for
    immortal; an object immortal already is left alone. Else (3.11, a plain 64-bit count) its
    count raised by 2**60."""
    for k in range(addresses.shape[0]):
        word = _load_word(addresses[k])
        if immortal:
            if (word & _LOW) < _SIGN:  # not immortal yet
                _store_word(addresses[k], (word & ~_LOW) | _IMMORTAL_LOW)
        else:
            _store_word(addresses[k], word + _RAISED_BY)


def _known_counts() -> bool:
    """Whether `_keep_forever` knows this Python's reference counts: a 64-bit CPython 3.11-3.14
    with the GIL and no reference debugging, whose objects start with their 8-byte count."""
    return (
        platform.python_implementation() == "CPython"
        and (3, 11) <= sys.version_info[:2] <= (3, 14)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
        and not hasattr(sys, "gettotalrefcount")  # a debug build keeps a total of all counts
        and struct.calcsize("P") == 8
    )


_IMMORTAL_KIND = sys.version_info >= (3, 12)
_KEPT = 1 << 30  # every kept int's count is at least this (sys.getrefcount)
# `ob_item`, the item array's address, is the second-last field of a list (`allocated` is last).
_WORD = struct.calcsize("P")
_ITEMS_AT = list.__basicsize__ - 2 * _WORD
# ...right after the three-word header of a variable-size object (reference count, type, size):
# any other layout (a debug build's longer header) gets numpy's way.
_KNOWN_LAYOUT = list.__basicsize__ == 5 * _WORD


class ReadyInts:
    """The ints 0..count-1, made once and kept for the process (where the lists' kernels are in
    use), and lists of them for arrays of ids."""

    def __init__(self, count: int, grown: ReadyInts | None = None) -> None:
        """The ints 0..count-1; those of `grown` (a smaller set) are taken, not made again."""
        have = 0 if grown is None else min(grown.objects.shape[0], count)
        objects = np.empty(count, dtype=object)
        if have:
            objects[:have] = grown.objects[:have]
        # numpy makes the ints in C: a third faster than np.array(range(count), dtype=object)
        objects[have:] = np.arange(have, count, dtype=np.int64).astype(object)
        self._hold(objects, have)

    def _hold(self, objects: np.ndarray, kept: int = 0) -> None:
        """Keep `objects` (ints, an object array) and each one's address (the kernel's way in),
        and with the fast lists keep those after the first `kept` (kept already) forever."""
        self.objects = objects
        self.addresses = _addresses(objects)
        if fast_lists():
            _keep_forever(self.addresses[kept:], _IMMORTAL_KIND)

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
        whole = self._set_lists(out, ids, starts, ends)
        for j in np.flatnonzero(whole == 0).tolist():  # a special's id: numpy's way
            out[j] = self._taken(ids[starts[j] : ends[j]])
        return out

    def _set_lists(
        self, out: list, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> np.ndarray:
        """Set out[j] to list j for each j whose ids all have ready ints (`whole[j]` 1; returned).

        Four kernels, so that the longest ones need no GIL: checking the ids; making the lists;
        setting the items; showing the lists to the garbage collector. The third writes only
        into lists no other code can see yet (not returned, not tracked), and the ints it
        stores are kept forever, so it runs while another thread holds the GIL."""
        whole = np.empty(starts.shape[0], dtype=np.uint8)
        made, items = np.zeros((2, starts.shape[0]), dtype=np.int64)
        try:
            bound = self.objects.shape[0]
            if starts.shape[0] == 1:  # numpy's max is vectorized, the kernel's loop not: 0.1x
                span = ids[starts[0] : ends[0]].view(np.uint32)
                whole[0] = span.max(initial=0) < bound
            else:
                _whole(ids, starts, ends, bound, whole)
            if _new_lists(id(out), whole, starts, ends, made, items, _ITEMS_AT) < 0:
                raise MemoryError("out of memory making the lists of token ids")
            _fill_items(whole, starts, ends, items, ids, self.addresses)
            _track_lists(whole, made)
        except BaseException:
            # Lists with unset items must never be seen (an interrupt between the kernels).
            out.clear()
            raise
        return whole

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


def _addresses(objects: np.ndarray) -> np.ndarray:
    """`id()` of each object of an object array: in CPython (where `id()` is the address) read
    straight from the array's items, which are those addresses, 4x faster than `map(id, ...)`
    (200,000 ints: 2 ms, not 8); elsewhere `id()` of each."""
    count = objects.shape[0]
    if (
        platform.python_implementation() != "CPython"
        or count == 0
        or not objects.flags.c_contiguous
        or objects.itemsize != 8
    ):
        return np.fromiter(map(id, objects), dtype=np.int64, count=count)
    items = (ctypes.c_int64 * count).from_address(objects.ctypes.data)
    return np.ctypeslib.as_array(items).copy()


_SHARED_LOCK = threading.Lock()
_shared: ReadyInts | None = None


def shared_ready_ints(count: int) -> ReadyInts:
    """Ready ints for ids below `count`, one set for the whole process: the ints 0..n-1 are the
    same whatever the tokenizer, so a new tokenizer of the same (or a smaller) vocabulary makes
    none (o200k's 200,000 cost 9-19 ms a tokenizer, a third of a cold 2 MB `encode`). Grown,
    never shrunk: a larger count replaces the set by one holding the same ints and new ones
    after them (the ints are kept forever: a set made afresh would keep a second copy)."""
    global _shared  # noqa: PLW0603 -- the process's one set, replaced whole under the lock
    with _SHARED_LOCK:
        if _shared is None or _shared.objects.shape[0] < count:
            _shared = ReadyInts(count, _shared)
        return _shared


@functools.cache
def fast_lists() -> bool:
    """Whether the lists' kernels compile, link and give the right lists here, on ints whose
    counts `_keep_forever` raised as it should (checked once, on ints made for the check)."""
    if portable() or not _KNOWN_LAYOUT or not _known_counts():
        return False
    # Ints made at run time, not shared with any other code (they are kept, whatever happens).
    ints = [int(x) + 10**9 for x in "012"]
    _NEVER_RELEASED.append(ints)
    try:
        addresses = np.array([id(x) for x in ints], dtype=np.int64)
        _keep_forever(addresses, _IMMORTAL_KIND)
        if min(map(sys.getrefcount, ints)) < _KEPT:
            return False
        ready = ReadyInts.__new__(ReadyInts)  # not __init__: it asks this function
        ready.objects = np.array(ints, dtype=object)
        ready.addresses = addresses
        out: list = [None]
        one = np.zeros(1, np.int64)
        whole = ready._set_lists(out, np.array([2, 0, 2], dtype=np.int32), one, one + 3)
        if int(whole.sum()) != 1 or out[0] != [ints[2], ints[0], ints[2]]:
            return False
        out.clear()
        return min(map(sys.getrefcount, ints)) >= _KEPT
    except Exception:  # noqa: BLE001 - any failure means: use numpy's way
        return False


_NEVER_RELEASED: list = []


def kernels() -> list:
    """The lists' kernels, where they are in use (for `warmup`, which compiles them with the
    encoder); none under the portable switch."""
    return [_whole, _new_lists, _fill_items, _track_lists, _keep_forever] if not portable() else []
