"""Reading many small plain files as one pack: per file an open, one read straight into a
reused buffer and a close (a Numba kernel calling libc for a run of files, or Python), then the
NUL, BOM and UTF-8 checks over the whole pack, file by file only when it fails one.

Larger and compressed files are left to the streaming readers (`opening`, `documents`)."""

from __future__ import annotations

import codecs
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.engine.corpus.opening import NONBLOCK, read_whole
from workbench.engine.corpus.problems import not_regular, os_problem, read_problem
from workbench.engine.corpus.text_checks import check_not_binary, check_utf8
from workbench.engine.errors import CorpusError

# Reading flags of a small file: O_NONBLOCK so a FIFO put in a file's place never blocks the open.
_PACK_FLAGS = os.O_RDONLY | NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass
class TextPack:
    """Small plain files read and checked together, from the first file asked for: the good
    ones' text end to end (BOMs removed), `offsets[k]:offsets[k+1]` the k-th good file's, the
    bad ones' errors (each left out whole, in file order).

    `read`: the files read (or found bad); fewer than asked when their bytes reached the limit
    or the next file is larger than the limit (`big`: the caller streams it)."""

    data: bytes
    offsets: np.ndarray
    errors: list[CorpusError]
    read: int
    big: bool
    disk_bytes: int  # bytes read from disk, BOMs and bad files included (for progress)


def read_text_pack(
    names: Sequence[str], start: int, end: int, limit: int, kernel: bool = True
) -> TextPack:
    """Read the plain files `names[start:end]` until their bytes reach `limit`, and check them
    as text. Per file only open, one read straight into the pack's buffer and close (a read
    shorter than the room left is the file's end), done for a run of files by one Numba kernel
    calling libc (`_libc_read`: no Python and no GIL per file) or, where it cannot work or
    `kernel` is False, in Python (the same packs and errors). An empty file, a read error or a
    file larger than the room takes the careful way (fstat: a FIFO, device or folder put in a
    file's place is refused as `opening` does). The NUL, BOM and UTF-8 checks run over the
    whole pack; only a pack that fails one is checked file by file to name the bad file."""
    room_end = 2 * limit + 2  # a file that fills the room from any start < limit is > limit
    buffer = _pack_buffer(room_end)
    view = memoryview(buffer)
    ends = [0]
    good: list[int] = []  # index of each good file
    bad: list[tuple[int, CorpusError]] = []
    at = 0
    big = False
    k = start
    quick = _quick_names(names, start, end, kernel)
    if quick is not None:
        from workbench.engine._native.libc_read import FOLDER_FLAGS, read_files  # noqa: PLC0415
    open_, readv, close = os.open, os.readv, os.close
    while k < end and at < limit:
        if quick is not None:  # the kernel reads on until a file it leaves to the careful way
            encoded, name_starts, quick_ends = quick
            stop = start + read_files(
                encoded,
                name_starts,
                k - start,
                _PACK_FLAGS,
                FOLDER_FLAGS,
                buffer,
                at,
                limit,
                quick_ends,
            )
            if stop > k:
                read_ends = quick_ends[k - start : stop - start]
                ends += read_ends.tolist()
                good += range(k, stop)
                at = int(read_ends[-1])
                k = stop
                if k == end or at >= limit:
                    break
        name = names[k]
        try:
            fd = open_(name, _PACK_FLAGS)
        except OSError as exc:
            bad.append((k, CorpusError(name, os_problem(Path(name), exc, "read"))))
            k += 1
            continue
        except ValueError:  # a NUL byte in the name
            bad.append((k, CorpusError(repr(name), "not a valid file name")))
            k += 1
            continue
        room = room_end - at
        try:
            n = readv(fd, (view[at:],))
        except OSError:
            n = -1
        if 0 < n < room:  # the common case: the whole file in one read
            close(fd)
        elif n == room:
            close(fd)
            big = True
            break
        else:
            try:
                data = _read_carefully(fd, name)
            except CorpusError as exc:
                bad.append((k, exc))
                k += 1
                continue
            n = len(data)
            if n >= room:
                big = True
                break
            view[at : at + n] = data
        at += n
        ends.append(at)
        good.append(k)
        k += 1
    data = view[:at].tobytes()
    pack = TextPack(data, np.array(ends, np.int64), [], k - start, big, at)
    if b"\0" in data or codecs.BOM_UTF8 in data or not _utf8_files(data, pack.offsets):
        _check_one_by_one(pack, names, good, bad)
    pack.errors = [exc for _, exc in sorted(bad, key=_first)]
    return pack


def _quick_names(
    names: Sequence[str], start: int, end: int, kernel: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """What the kernel reads `names[start:end]` from (the names encoded, where each starts, an
    array for the ends of the files it reads), or None: the Python way (asked, a name holding
    a NUL, or no kernel here)."""
    if not kernel or end <= start:
        return None
    from workbench.engine._native import libc_read as _libc_read  # noqa: PLC0415 -- Numba: not for a mere listing

    if not _libc_read.available():
        return None
    encoded = _libc_read.encode_names(names[start:end])
    if encoded is None:
        return None
    return encoded[0], encoded[1], np.empty(end - start, np.int64)


_BUFFERS = threading.local()


def _pack_buffer(size: int) -> np.ndarray:
    """The reading thread's own buffer of `size` bytes, kept for its next pack: a new one would
    be zero-filled and its pages faulted in for every pack."""
    buffer = getattr(_BUFFERS, "buffer", None)
    if buffer is None or len(buffer) != size:
        buffer = _BUFFERS.buffer = np.empty(size, np.uint8)
    return buffer


def _first(pair: tuple[int, CorpusError]) -> int:
    return pair[0]


def _read_carefully(fd: int, name: str) -> bytes:
    """The bytes of a file the quick read did not take (empty, unreadable, larger than the room
    or not a regular file), as `read_whole` gives them; closes `fd`."""
    try:
        st = os.fstat(fd)
    except OSError as exc:
        raise CorpusError(name, f"cannot read: {read_problem(exc)}") from None
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise CorpusError(name, not_regular(st.st_mode))
    if st.st_size == 0:
        return b""
    return read_whole(Path(name))  # an error, or changed since the quick read: the careful way


# Decoded a piece at a time: one `decode` of a whole pack (2 MB or more) held the GIL for
# 3-7 ms, a pause of the window's UI thread; between pieces other threads get their turn.
_UTF8_PIECE = 1 << 18


def _is_utf8(data: bytes) -> bool:
    """`data.decode("utf-8")` succeeds (strict: the same bytes rejected), piece by piece."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for at in range(0, len(data), _UTF8_PIECE):
            decoder.decode(view[at : at + _UTF8_PIECE])
        decoder.decode(b"", final=True)  # a character cut off at the end
    except UnicodeDecodeError:
        return False
    return True


def _utf8_files(data: bytes, offsets: np.ndarray) -> bool:
    """Whether every file is UTF-8, from one check of them end to end: valid UTF-8 whose files
    each start at a character (not a continuation byte), so none ends inside one either."""
    if data.isascii():  # UTF-8 however it is cut (a quick scan: no text made)
        return True
    if not _is_utf8(data):
        return False
    if offsets.shape[0] < 3:
        return True
    starts = offsets[1:-1]
    starts = starts[starts < len(data)]  # empty files at the end start nowhere
    firsts = np.frombuffer(data, np.uint8)[starts]
    return not bool(np.any((firsts & 0xC0) == 0x80))


def _check_one_by_one(
    pack: TextPack, names: Sequence[str], good: list[int], bad: list[tuple[int, CorpusError]]
) -> None:
    """The pack's good files (`names[k]` for k in `good`, in the order of `pack.offsets`)
    checked one at a time: bad ones move to `bad`, BOMs go."""
    data, edges = pack.data, pack.offsets.tolist()
    parts: list[bytes] = []
    ends = [0]
    for j, k in enumerate(good):
        part = bytes(data[edges[j] : edges[j + 1]])
        path = Path(names[k])
        try:
            check_not_binary(path, part)
            if part.startswith(codecs.BOM_UTF8):
                part = part[len(codecs.BOM_UTF8) :]
            check_utf8(path, part, 0)
        except CorpusError as exc:
            bad.append((k, exc))
            continue
        parts.append(part)
        ends.append(ends[-1] + len(part))
    pack.data = b"".join(parts)
    pack.offsets = np.array(ends, np.int64)
