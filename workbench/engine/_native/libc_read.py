"""Reading many small files whole in one Numba kernel that calls libc's `open` (`openat`),
`read` and `close` itself: no Python and no GIL per file, so two reader threads read at once.

The C functions are declared by name in the kernel's LLVM module (an `@intrinsic`), and the JIT
resolves them from the process as it does Numba's own calls into libc. Unlike a ctypes
function pointer, that leaves no address in the code, so the kernel is cached on disk.

This module only reads. Every file the kernel does not read whole and cleanly (an open or read
that failed, an empty file, one that fills the room, a folder or FIFO in a file's place) stops
it; the caller (`corpus.read_text_pack`) handles that file the careful way, with its messages,
and calls again from the next one. Where the kernel cannot work (not POSIX, the symbols not in
the process) `available()` is False and the caller reads in Python.

    names, starts = encode_names(["a.txt", "b.txt"])  # b"a.txt\\0b.txt\\0", [0, 6]
    done = read_files(names, starts, 0, flags, FOLDER_FLAGS, buffer, 0, limit, ends)
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.registry import cpu_target
from numba.extending import intrinsic

from workbench.engine._native import portable
from workbench.engine._native.numba_config import njit

_SYMBOLS = ("open", "openat", "read", "close")
# A folder is opened only to open its files from (O_PATH where there is one: no read right needed).
FOLDER_FLAGS = (
    getattr(os, "O_RDONLY", 0)
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_PATH", 0)
)


@functools.cache
def available() -> bool:
    """Whether the kernel can work here: a POSIX system whose process offers the three
    functions to the JIT (they come with libc). Asked once, when the first pack is read: the
    JIT's symbol search is open only once Numba's CPU target is set up."""
    if os.name != "posix" or portable():
        return False
    try:
        cpu_target.target_context  # noqa: B018 -- sets up the JIT (loading a kernel would too)
        return all(llvm.address_of_symbol(name) for name in _SYMBOLS)
    except Exception:  # noqa: BLE001 -- an llvmlite or Numba unlike ours: read in Python
        return False


def _data_at(context, builder, array_type, array, index):
    """An `i8*` to `array[index]` of a 1-D uint8 array."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), ir.IntType(8).as_pointer())


def _int(builder, value):
    """An `int` (i32) of a Numba integer, however wide it was made."""
    int_t = ir.IntType(32)
    if value.type.width > 32:
        return builder.trunc(value, int_t)
    if value.type.width < 32:
        return builder.sext(value, int_t)
    return value


@intrinsic
def _open(typingctx, names, at, flags):
    """libc `open(names + at, flags)` (the name NUL-terminated in `names`): a descriptor or -1."""

    def codegen(context, builder, signature, args):
        names_value, at_value, flags_value = args
        int_t = ir.IntType(32)
        # open is variadic (the mode after the flags): declared so, or some ABIs call it wrong
        fnty = ir.FunctionType(int_t, [ir.IntType(8).as_pointer(), int_t], var_arg=True)
        fn = cgutils.get_or_insert_function(builder.module, fnty, "open")
        path = _data_at(context, builder, signature.args[0], names_value, at_value)
        return builder.call(fn, [path, _int(builder, flags_value)])

    return types.int32(names, at, flags), codegen


@intrinsic
def _openat(typingctx, folder, names, at, flags):
    """libc `openat(folder, names + at, flags)`: `open` with the name read from the folder
    open as descriptor `folder` (no walk along the folders of a full path)."""

    def codegen(context, builder, signature, args):
        folder_value, names_value, at_value, flags_value = args
        int_t = ir.IntType(32)
        fnty = ir.FunctionType(int_t, [int_t, ir.IntType(8).as_pointer(), int_t], var_arg=True)
        fn = cgutils.get_or_insert_function(builder.module, fnty, "openat")
        path = _data_at(context, builder, signature.args[1], names_value, at_value)
        return builder.call(fn, [_int(builder, folder_value), path, _int(builder, flags_value)])

    return types.int32(folder, names, at, flags), codegen


@intrinsic
def _read(typingctx, fd, buffer, at, count):
    """libc `read(fd, buffer + at, count)`: the bytes read, 0 at the end, or -1."""

    def codegen(context, builder, signature, args):
        fd_value, buffer_value, at_value, count_value = args
        size_t = context.get_value_type(types.intp)
        fnty = ir.FunctionType(size_t, [ir.IntType(32), ir.IntType(8).as_pointer(), size_t])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "read")
        into = _data_at(context, builder, signature.args[1], buffer_value, at_value)
        return builder.call(fn, [_int(builder, fd_value), into, count_value])

    return types.intp(fd, buffer, at, count), codegen


@intrinsic
def _close(typingctx, fd):
    """libc `close(fd)`."""

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "close")
        return builder.call(fn, [_int(builder, args[0])])

    return types.int32(fd), codegen


@njit
def read_files(names, starts, first, flags, folder_flags, buffer, at, limit, ends):
    """Read files `first`, `first + 1`, ... (file k's name at `names[starts[k]:]`, NUL-ended)
    whole into `buffer` from `at`, one after another, while `at < limit`; `ends[k]`: where file
    k's bytes end. Returns the file it stopped at: the end of the list, the limit reached, or
    a file not read cleanly in one read shorter than the room left (the caller's to handle).

    Files in the same folder as the one before open from that folder's descriptor (`openat`:
    the path's folders are not walked again for each file: about 8% of the system calls' time
    here); a folder that does not open (`folder_flags`) leaves its files opened by full name.
    Never writes past `buffer`: each read asks for the room left and no more."""
    room_end = buffer.shape[0]
    folder = -1  # the folder open now, or -1; its name is names[folder_at:folder_at + folder_len]
    folder_at = 0
    folder_len = -1
    k = first
    while k < starts.shape[0] and at < limit:
        s = starts[k]
        slash = (starts[k + 1] if k + 1 < starts.shape[0] else names.shape[0]) - 2
        while slash > s and names[slash] != 47:  # the last "/" (not a leading one)
            slash -= 1
        if slash > s:
            length = slash - s
            same = 0  # how far this file's folder name is the open folder's
            if length == folder_len:
                while same < length and names[s + same] == names[folder_at + same]:
                    same += 1
            if same < length or length != folder_len:
                if folder >= 0:
                    _close(folder)
                folder = -1
                folder_at = s
                folder_len = length
                if length < room_end - at:  # its name, NUL-ended, where the next file goes
                    for i in range(length):
                        buffer[at + i] = names[s + i]
                    buffer[at + length] = 0
                    folder = _open(buffer, at, folder_flags)
        if slash > s and folder >= 0:
            fd = _openat(folder, names, slash + 1, flags)
        else:
            fd = _open(names, s, flags)
        if fd < 0:
            break
        room = room_end - at
        n = _read(fd, buffer, at, room)
        _close(fd)
        if n <= 0 or n >= room:  # failed, empty, or maybe more to read: the careful way
            break
        at += n
        ends[k] = at
        k += 1
    if folder >= 0:
        _close(folder)
    return k


def encode_names(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The names as the system spells them (`os.fsencode`), each NUL-ended, end to end, and
    where each starts; None when one holds a NUL (no such file: the caller's careful way names
    it) or is not a str."""
    try:
        joined = "\0".join(names)
        if not names or joined.count("\0") != len(names) - 1:
            return None
        raw = (joined + "\0").encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    except (TypeError, UnicodeEncodeError):  # bytes names, or a lone surrogate
        return None
    data = np.frombuffer(raw, np.uint8)
    nuls = np.flatnonzero(data == 0)
    starts = np.empty(len(names), np.int64)
    starts[0:1] = 0
    starts[1:] = nuls[:-1] + 1
    return data, starts


def kernels() -> list:
    """The kernel, where it can work (for `warmup`, which compiles it with the pre-tokenizer)."""
    return [read_files] if available() else []


def compile_reader() -> None:
    """Compile (or load) the kernel for the types `read_text_pack` gives it, reading nothing."""
    if available():
        names, starts = np.frombuffer(b"\0", np.uint8), np.zeros(0, np.int64)
        buffer, ends = np.empty(1, np.uint8), np.empty(0, np.int64)
        read_files(names, starts, 0, 0, FOLDER_FLAGS, buffer, 0, 0, ends)
