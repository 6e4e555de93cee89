"""Python lists of token ids from int32 arrays, in one pass over the ids.

`encode` and `encode_batch` hand out lists of Python ints, as tiktoken does. Making them is all
GIL-held work, and in `encode_batch` it was half of a call's time: the part its threads cannot
share. `ids.tolist()` makes a new int object per id. Taking ready-made ints (one per id, made
once per tokenizer) through numpy (`objects.take(ids).tolist()`) avoids that, but touches every
int's reference count three times (the object array, the list, freeing the object array).

Here small kernels make each list themselves through CPython's own C API (`PyList_New`, items
not yet set) and store the ints straight into its item array, in three steps so that only the
middle one holds the GIL, the part of `encode_batch` its threads cannot share:
- `_tally` (no GIL) checks every id of a list against the ready-made ints (an id without one, a
  special token's above the ordinary ids, leaves that list to `tolist()`) and counts each id's
  uses;
- `_new_lists` (GIL) makes the lists and raises each used int's reference count once by all its
  uses: a few thousand ints a call rather than an increment per id. Where the layout is known (a
  CPython 3.11-3.14 build with the GIL and without reference debugging) it adds to the count
  inline, as `Py_INCREF` compiles there, leaving an immortal int of 3.12+ alone (its count is
  2**30 and more when the ints are made); elsewhere it calls `Py_IncRef`;
- `_fill_items` (no GIL) stores the ints' addresses (`id()` in CPython, kept in an array beside
  the objects) into the items. No other code can see these lists yet (not returned, and kept
  out of the garbage collector's sight until `_track_lists`), and the references they take are
  already counted, so it runs while another thread holds the GIL.
On a call that fails between the steps (out of memory, an interrupt) the half-made lists are
dropped unseen.

Where this cannot work (not CPython, or the kernel fails to compile or link) the lists come from
`take().tolist()`, the same lists; `fast_lists()` says which way is in use (tried on first use,
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


_py_incref = _object_call("Py_IncRef")  # a new reference to the object
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


_AHEAD = 16  # ints between a prefetch and the count it prepares


@njit
def _tally(ids, starts, ends, counts, seen, whole):
    """Without the GIL: whole[j] = 1 if every id of list j (`ids[starts[j]:ends[j]]`) has a
    ready-made int (is below `bound`), else 0; for the whole lists, counts[t] += the uses of id
    t and each id used is listed once in `seen`. Returns how many `seen` holds. `counts` (one
    per ready int) is all zeros on entry (`_new_lists` zeroes what it used)."""
    bound = np.uint32(counts.shape[0])
    listed = 0
    for j in range(starts.shape[0]):
        start = starts[j]
        end = ends[j]
        outside = False  # no exit in the loop: it compiles to vector compares
        for k in range(start, end):
            outside |= np.uint32(ids[k]) >= bound  # a negative id is a huge unsigned one
        whole[j] = 0 if outside else 1
        if outside:
            continue
        for k in range(start, end):
            tid = np.uint32(ids[k])  # unsigned: no negative-index wraparound code
            if counts[tid] == 0:
                seen[listed] = tid
                listed += 1
            counts[tid] += 1
    return listed


@njit_holding_gil
def _new_lists(
    outer, whole, starts, ends, made, items, seen, listed, counts, addresses, adds, inline, at
):
    """With the GIL: for each whole list j a new list of its length, items not yet set, as item
    j of the list at `outer`, out of the garbage collector's sight (`_track_lists` brings it back
    once filled), its address in made[j] and its item array's in items[j]; then each used int's
    count
    raised by its uses (`counts`, zeroed again here), the references the lists will hold once
    `_fill_items` sets them. Returns 0, or -1 if memory ran out (no count raised then).

    A new reference to int t: `adds[t]` (1, or 0 for an immortal int) added to its count if
    `inline` (see `_inline_counts`), else `Py_IncRef`. A new list's item array is the word at
    `at` bytes into it."""
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
    for s in range(listed):
        if s + _AHEAD < listed:
            _prefetch(addresses[seen[s + _AHEAD]])
        tid = seen[s]
        uses = counts[tid]
        counts[tid] = 0
        item = addresses[tid]
        if inline:  # Py_INCREF, as it compiles on these builds, once for all uses
            _store_word(item, _load_word(item) + uses * adds[tid])
        else:
            for _ in range(uses):
                _py_incref(item)
    return 0


@njit
def _fill_items(whole, starts, ends, items, ids, addresses):
    """Without the GIL: set the items of each whole list j, made by `_new_lists` and seen by no
    other code yet, to the ints of its ids (their references are already counted)."""
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
        # numpy makes the ints in C: a third faster than np.array(range(count), dtype=object)
        self._hold(np.arange(count, dtype=np.int64).astype(object))

    def _hold(self, objects: np.ndarray) -> None:
        """Keep `objects` (ints, an object array) and what the kernel needs of them: each one's
        address (its way in; `objects` keeps the ints alive as long as this) and what a new
        reference adds to its count."""
        self.objects = objects
        self.addresses = _addresses(objects)
        self.adds = _adds(objects)
        self._local = threading.local()

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
        whole = self._set_lists(out, ids, starts, ends, _INLINE)
        for j in np.flatnonzero(whole == 0).tolist():  # a special's id: numpy's way
            out[j] = self._taken(ids[starts[j] : ends[j]])
        return out

    def _set_lists(
        self, out: list, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, inline: bool
    ) -> np.ndarray:
        """Set out[j] to list j for each j whose ids all have ready ints (`whole[j]` 1; returned).

        Four kernels, so that the longest ones need no GIL: counting each id's uses; making the
        lists and raising each used int's count once by all its uses (a few thousand ints, not
        an increment per id); setting the items; showing the lists to the garbage collector.
        The third writes only into lists no other code can see yet (not returned, not tracked),
        and the references they take are already counted, so it runs while another thread
        holds the GIL."""
        # This thread's scratch, taken for the call: a nested call (a finalizer that the
        # allocator's garbage collection runs, encoding) makes its own rather than share it.
        counts, seen = getattr(self._local, "scratch", None) or self._new_scratch()
        self._local.scratch = None
        whole = np.empty(starts.shape[0], dtype=np.uint8)
        made, items = np.zeros((2, starts.shape[0]), dtype=np.int64)
        try:
            listed = _tally(ids, starts, ends, counts, seen, whole)
            status = _new_lists(
                id(out), whole, starts, ends, made, items, seen, listed, counts,
                self.addresses, self.adds, inline, _ITEMS_AT,
            )  # fmt: skip
            if status < 0:
                raise MemoryError("out of memory making the lists of token ids")
            _fill_items(whole, starts, ends, items, ids, self.addresses)
            _track_lists(whole, made)
        except BaseException:
            # Lists with unset items must never be seen (an interrupt between the kernels
            # leaves the counts of their ints raised: ints the tokenizer keeps anyway), and
            # the scratch goes back all zeros.
            out.clear()
            counts.fill(0)
            raise
        finally:
            self._local.scratch = counts, seen
        return whole

    def _new_scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """A use count per ready int (all zero between calls) and room to list the ids used."""
        size = self.objects.shape[0]
        return np.zeros(size, dtype=np.int64), np.empty(size, dtype=np.int32)

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
    never shrunk: a larger count replaces the set (lists already made keep their ints)."""
    global _shared  # noqa: PLW0603 -- the process's one set, replaced whole under the lock
    with _SHARED_LOCK:
        if _shared is None or _shared.objects.shape[0] < count:
            _shared = ReadyInts(count)
        return _shared


@functools.cache
def fast_lists() -> bool:
    """Whether the lists' kernels compile, link and give the right lists and reference counts here
    (checked once, on ints made for the check)."""
    if portable():
        return False
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
            whole = ready._set_lists(out, ids, one, one + 3, inline)
            made = int(whole.sum())
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


def kernels() -> list:
    """The lists' kernels, where they are in use (for `warmup`, which compiles them with the
    encoder); none under the portable switch."""
    return [_tally, _new_lists, _fill_items, _track_lists] if not portable() else []
