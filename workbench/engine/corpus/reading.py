"""Reading a corpus: files and folders (recursing), plain text of any extension, `.jsonl` (the
`text` field of each line) and the `.gz` forms of both; `.zst`/`.xz`/`.bz2`, Parquet, Arrow files
and saved Hugging Face datasets come from `readers/` (hooked in here where marked).

A file, or a JSONL record, is a document. Text comes out as *segments*: stretches between
special tokens, cut where the pre-tokenizer must break anyway, so a large file streams in
bounded memory and pre-tokenizing the segments gives exactly the pieces of the whole document.
The cut rule: right after a letter that a space, tab or newline follows (no preset pattern
matches across that point: the letter's piece ends there and the whitespace starts anew), or at
a special token. A custom pattern gives no such promise, so there a document is cut only at its
special tokens.

Bad input raises `CorpusError` naming the file (and line): a binary file, invalid UTF-8, an
unreadable path, a JSONL line that is not JSON or has no text.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import hashlib
import itertools
import json
import operator
import os
import stat
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AnyStr, BinaryIO

import numpy as np
import regex

from workbench.engine.corpus.readers import columnar, compressed, datasets, meter, urls
from workbench.engine.errors import CorpusError
from workbench.engine.patterns.specials import specials_regex, split_on_specials

CHUNK_CHARS = 1 << 22  # ~4 MB of text per segment at most (when a cut point exists)
READ_BYTES = 1 << 22  # bytes per read from a file (decompressed)
_SAFE_CUT = regex.compile(r"(?r)\p{L}(?=[ \t\n])")
# Without it, opening a FIFO waits for a writer for ever; regular files ignore the flag.
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


# -- finding the files -------------------------------------------------------------------------


@dataclass
class CorpusListing:
    """The files to read (in order, by name, with their sizes when listed) and what was left out.

    `sizes[i]` is -1 when the listing was asked not to size the files it knows are regular
    (`list_corpus(..., sized=False)`): a stat costs as much as reading a small file.
    `problems`: entries inside folders that cannot be read (a broken or looping symbolic link,
    an unreadable folder): an error when bad files stop the run, else skipped and reported.
    `passed_over`: entries inside folders that are not corpus files (FIFOs, sockets, devices,
    a folder reached a second time through a link): always left out, always reported."""

    names: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    problems: list[CorpusError] = field(default_factory=list)
    passed_over: list[CorpusError] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        return [Path(name) for name in self.names]


class PathList(Sequence[Path]):
    """Paths made from file names only when first asked for: counting needs the names alone,
    and 50,000 Path objects cost a tenth of a second."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._paths: list[Path] | None = None

    def _all(self) -> list[Path]:
        if self._paths is None:
            self._paths = [Path(name) for name in self.names]
        return self._paths

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):  # type: ignore[override]
        return self._all()[index]

    def __iter__(self) -> Iterator[Path]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return f"PathList({self.names!r})"


def list_corpus(paths: Iterable[str | os.PathLike], sized: bool = True) -> CorpusListing:
    """The files named or under the folders named, folders walked depth-first in sorted order.

    Hidden entries (a leading dot) inside a folder are passed over. Symbolic links are followed,
    folders included; a folder is read once however many links lead to it (by device and
    inode), so a link loop ends. A path named on the command line that is missing or not a
    file or folder raises CorpusError at once: the user asked for it by name. `sized=False`:
    files a folder listing shows are regular keep size -1 (no stat: their reader sizes them)."""
    walk = CorpusWalk(paths, sized)
    walk.run()
    return walk.listing


class _Stopped(Exception):
    """The walk was told to stop (its reader gave up)."""


class CorpusWalk:
    """Listing a corpus (as `list_corpus`), here or in a thread of its own while the files
    already listed are read: `listing` grows folder by folder, in order; `more` waits for it.

    The paths named are checked at once (a bad one raises CorpusError here, before anything is
    walked); the folders are walked by `run` or by the thread `start` starts."""

    def __init__(self, paths: Iterable[str | os.PathLike], sized: bool = False) -> None:
        self.listing = CorpusListing()
        self.sized = sized
        self.roots: list[tuple[str, os.stat_result]] = []
        for raw in urls.local_paths(paths):  # readers hook: fsspec URLs
            path = Path(raw)
            st = _stat_named(path)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                message = f"{_not_regular(st.st_mode)}: name text files or folders"
                raise CorpusError(str(path), message)
            self.roots.append((str(path), st))
        self._changed = threading.Condition()
        self._finished = False
        self._stop = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        seen: set[tuple[int, int]] = set()
        for root, st in self.roots:
            if stat.S_ISDIR(st.st_mode):
                _walk_folder(root, st, self.listing, seen, self.sized, self._add)
            else:
                self._add([root], [st.st_size])

    def _add(self, names: list[str], sizes: list[int]) -> None:
        """One folder's files (or a file named), less saved datasets' metadata."""
        if self._stop:
            raise _Stopped
        names, sizes = _without_dataset_metadata(names, sizes)
        with self._changed:  # sizes first: a reader takes the names' length as the bound
            self.listing.sizes += sizes
            self.listing.names += names
            self._changed.notify_all()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._background, name="corpus walk", daemon=True)
        self._thread.start()

    def _background(self) -> None:
        try:
            self.run()
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the reader by `more`/`finish`
            self._error = exc
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def more(self, have: int) -> bool:
        """Whether the listing holds more than `have` files, waiting for the walk to list them
        or to end (then False)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.listing.names) > have or self._finished)
        if self._error is not None:
            raise self._error
        return len(self.listing.names) > have

    def finish(self) -> CorpusListing:
        """The whole listing, once the walk has ended."""
        while self.more(len(self.listing.names)):
            pass
        return self.listing

    def stop(self) -> None:
        """End the walk early (its reader failed or was cancelled) and wait for its thread."""
        self._stop = True
        if self._thread is not None:
            self._thread.join()


def _without_dataset_metadata(names: list[str], sizes: list[int]) -> tuple[list[str], list[int]]:
    """`names` (and their sizes) less saved datasets' JSON metadata (readers hook), asking only
    about the files whose names end like metadata (a C-speed scan): the hook keeps the rest."""
    suspects = (*datasets.METADATA, datasets.DICT_METADATA)
    joined = "\0".join(names) + "\0"  # "name NUL" found: a name ends so (no name holds a NUL)
    if not any(suspect + "\0" in joined for suspect in suspects):  # most folders: C speed
        return names, sizes
    ends = operator.methodcaller("endswith", suspects)
    maybe = list(itertools.compress(range(len(names)), map(ends, names)))
    if not maybe:
        return names, sizes
    kept = {str(p) for p in datasets.without_dataset_metadata([Path(names[k]) for k in maybe])}
    drop = {k for k in maybe if names[k] not in kept}
    if not drop:
        return names, sizes
    pairs = [p for k, p in enumerate(zip(names, sizes, strict=True)) if k not in drop]
    return [n for n, _ in pairs], [s for _, s in pairs]


def list_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """`list_corpus(paths).files`, raising the first problem found inside a folder."""
    listing = list_corpus(paths)
    if listing.problems:
        raise listing.problems[0]
    return listing.files


def _walk_folder(
    root: str,
    root_stat: os.stat_result,
    listing: CorpusListing,
    seen: set[tuple[int, int]],
    sized: bool,
    emit: Callable[[list[str], list[int]], None],
) -> None:
    """Walk one folder named: each folder's files go to `emit` (which adds them to `listing`),
    its problems and passed-over entries straight to `listing`."""
    # An explicit stack, not recursion: a folder tree may be deeper than Python's stack. Names
    # are plain strings (a Path per file costs more than reading a small file).
    stack = [(root, root_stat)]
    # Files known regular from the folder listing alone: sized at the end, in one batch.
    unsized: list[int] = []
    while stack:
        folder, st = stack.pop()
        key = (st.st_dev, st.st_ino)
        if key in seen:
            listing.passed_over.append(CorpusError(folder, "folder already read (linked)"))
            continue
        seen.add(key)
        try:
            with os.scandir(folder) as it:
                entries = [e for e in it if e.name[0] != "."]
        except OSError as exc:
            problem = _os_problem(Path(folder), exc, "list the folder")
            listing.problems.append(CorpusError(folder, problem))
            continue
        prefix = "" if folder == "." else os.path.join(folder, "")  # as pathlib joins them
        before = len(listing.names)
        if _all_plain(entries):  # a folder of plain files only: no loop of ours
            # `entry.path` is the folder and the name joined as `prefix` does, but for "."
            names = sorted(map(_PATH if prefix else _NAME, entries))
            emit(names, [-1] * len(names))
        else:
            folders = _folder_entries(prefix, entries, listing, emit)
            stack.extend(reversed(folders))
        if sized:
            sizes = listing.sizes
            unsized.extend(k for k in range(before, len(sizes)) if sizes[k] < 0)
    if unsized:
        _add_sizes(listing, unsized)


def _folder_entries(
    prefix: str,
    entries: list[os.DirEntry],
    listing: CorpusListing,
    emit: Callable[[list[str], list[int]], None],
) -> list[tuple[str, os.stat_result]]:
    """The files of a folder that holds more than plain files (to `emit`), its problems and
    passed-over entries (to `listing`), and its folders to walk, in sorted order."""
    names: list[str] = []
    sizes: list[int] = []
    folders = []
    # (name, entry): names are unique, so entries are never compared
    for name, entry in sorted([(e.name, e) for e in entries]):
        try:
            # A plain file (not a link) is known from the folder listing, with no system
            # call: its size comes later in one batch (`_add_sizes`), or from its reader.
            if entry.is_file(follow_symlinks=False):
                names.append(prefix + name)
                sizes.append(-1)
                continue
            est = entry.stat()  # follows symbolic links
        except OSError as exc:
            path = Path(prefix + name)
            listing.problems.append(CorpusError(str(path), _os_problem(path, exc, "read")))
            continue
        if stat.S_ISDIR(est.st_mode):
            folders.append((prefix + name, est))
        elif stat.S_ISREG(est.st_mode):
            names.append(prefix + name)
            sizes.append(est.st_size)
        else:
            listing.passed_over.append(CorpusError(prefix + name, _not_regular(est.st_mode)))
    emit(names, sizes)
    return folders


# Whether an entry is a regular file, not a link: known from the folder listing, no system call.
_PATH = operator.attrgetter("path")
_NAME = operator.attrgetter("name")


def _all_plain(entries: list[os.DirEntry]) -> bool:
    """Whether every entry is a regular file, not a link. Asked as "no link, and all files":
    with no link, `is_file()` is `is_file(follow_symlinks=False)`, and the calls without a
    keyword cost a third as much (the largest part of the walk's Python per file)."""
    try:
        return not any(map(os.DirEntry.is_symlink, entries)) and all(
            map(os.DirEntry.is_file, entries)
        )
    except OSError:  # the listing did not say (some file systems): the entry-by-entry way
        return False


def _add_sizes(listing: CorpusListing, unsized: list[int]) -> None:
    """Fill in the sizes of `listing.names[i]` for i in `unsized`, dropping (as problems) files
    gone since the listing. Two threads from a few thousand files: a stat is a system call that
    releases the GIL, and the calls are most of a walk over many small files."""
    names = [listing.names[i] for i in unsized]
    if len(names) < 4096:
        sizes = _sizes(names)
    else:
        half = len(names) // 2
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(_sizes, names[:half])
            sizes = _sizes(names[half:])
            sizes = first.result() + sizes
    gone = set()
    for i, size in zip(unsized, sizes, strict=True):
        if isinstance(size, OSError):
            path = Path(listing.names[i])
            listing.problems.append(CorpusError(str(path), _os_problem(path, size, "read")))
            gone.add(i)
        else:
            listing.sizes[i] = size
    if gone:
        pairs = [
            p for i, p in enumerate(zip(listing.names, listing.sizes, strict=True)) if i not in gone
        ]
        listing.names, listing.sizes = [f for f, _ in pairs], [n for _, n in pairs]


def _sizes(names: list[str]) -> list[int | OSError]:
    out: list[int | OSError] = []
    for name in names:
        try:
            out.append(os.stat(name).st_size)
        except OSError as exc:
            out.append(exc)
    return out


def _stat_named(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        raise CorpusError(str(path), _os_problem(path, exc, "read")) from None
    except ValueError:  # a NUL byte in the name
        raise CorpusError(repr(str(path)), "not a valid file name") from None


def _os_problem(path: Path, exc: OSError, verb: str) -> str:
    """The words for a failed stat, open or listing: 'broken symbolic link', ..."""
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "broken symbolic link" if path.is_symlink() else "no such file or folder"
    return f"cannot {verb}: {exc.strerror or exc}"


def _not_regular(mode: int) -> str:
    kinds = {
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFSOCK: "a socket",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
    }
    return f"not a regular file: {kinds.get(stat.S_IFMT(mode), 'a special file')}"


def fingerprint(files: Iterable[str | os.PathLike]) -> str:
    """A cheap identity of a corpus: paths, sizes and modification times, hashed."""
    return _fingerprint(_resolved_stats(files))


def _fingerprint(stats: Iterable[tuple[str, os.stat_result]]) -> str:
    h = hashlib.sha256()
    for real, st in stats:
        h.update(f"{real}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def _resolved_stats(files: Iterable[str | os.PathLike]) -> list[tuple[str, os.stat_result]]:
    """Each file's resolved path (as `Path.resolve`) and status, at two system calls a file:
    the folder part is resolved once per folder, only a file that is itself a link in full
    (resolving each of 50,000 files took seconds, more than counting them)."""
    folders: dict[str, str] = {}
    out = []
    for f in files:
        name = os.fspath(f)
        head, tail = os.path.split(name)
        real_head = folders.get(head)
        if real_head is None:
            real_head = folders[head] = os.path.realpath(head or os.curdir)
        st = os.lstat(name)
        if stat.S_ISLNK(st.st_mode):
            out.append((os.path.realpath(name), os.stat(name)))
        else:
            out.append((os.path.join(real_head, tail), st))
    return out


# -- opening a file: one opener per kind ----------------------------------------------------


def _open_gzip(raw: BinaryIO) -> BinaryIO:
    return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]


# Compression by name ending -> a function that wraps the raw file in a decompressing stream.
DECOMPRESSORS: dict[str, Callable[[BinaryIO], BinaryIO]] = {".gz": _open_gzip}
# What a decompressor may raise on bad data (besides OSError): a truncated or corrupt file.
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)


def is_jsonl(path: Path) -> bool:
    return compressed.plain_name(path.name).lower().endswith(".jsonl")  # any compression


def _open_fd(path: Path) -> tuple[int, int]:
    """(file descriptor, size) of a regular file opened for reading. Anything else is refused,
    and a FIFO never blocks the open (O_NONBLOCK), even one put in a file's place after the
    folder was listed."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK)
    except OSError as exc:
        raise CorpusError(str(path), _os_problem(path, exc, "read")) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorpusError(str(path), _not_regular(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def _open_regular(path: Path) -> BinaryIO:
    fd, _ = _open_fd(path)
    try:
        return open(fd, "rb")  # noqa: SIM115 - closed by the caller's with-block
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed by its name ending."""
    if compressed.opens_here(path):  # readers hook: .zst, .xz, .bz2
        try:
            stream = compressed.open_compressed(path)
        except OSError as exc:
            raise CorpusError(str(path), _os_problem(path, exc, "read")) from None
        with stream:
            yield stream  # type: ignore[misc]
        return
    with _open_regular(path) as raw:
        opener = next((f for ext, f in DECOMPRESSORS.items() if _ends(path, ext)), None)
        if opener is None:
            yield raw
            return
        try:
            stream = opener(raw)
        except READ_ERRORS as exc:
            raise CorpusError(str(path), f"cannot read: {exc}") from None
        with stream:
            yield stream


def _ends(path: Path, ext: str) -> bool:
    return path.name.lower().endswith(ext)


def read_chunks(path: Path, size: int | None = None) -> Iterator[bytes]:
    """The file's bytes in chunks (decompressed), with read errors as CorpusError."""
    size = READ_BYTES if size is None else size
    with open_binary(path) as stream:
        on_disk = _disk_position(stream)
        while True:
            try:
                chunk = stream.read(size)
            except READ_ERRORS as exc:
                raise CorpusError(str(path), f"cannot read: {_read_problem(exc)}") from None
            if not chunk:
                return
            meter.advance(on_disk())
            yield chunk


def _disk_position(stream: BinaryIO) -> Callable[[], int]:
    """How many bytes of the file on disk a stream has read (the compressed bytes of a
    compressed file), for progress inside a file."""
    if (position := getattr(stream, "disk_position", None)) is not None:  # .zst .xz .bz2
        return position
    if isinstance(stream, gzip.GzipFile):
        return stream.fileobj.tell  # type: ignore[union-attr]
    return stream.tell


def read_whole(path: Path) -> bytes:
    """All the bytes of a plain (uncompressed) file: the quick way for the many small files of
    a folder corpus (plain system calls: no file object, no chunking, no decompressor)."""
    fd, size = _open_fd(path)
    try:
        parts = []
        while True:  # usually two reads: the file, then the end (it may have grown)
            part = os.read(fd, max(size + 1, 1 << 16))
            if not part:
                return b"".join(parts)
            parts.append(part)
    except OSError as exc:
        raise CorpusError(str(path), f"cannot read: {_read_problem(exc)}") from None
    finally:
        os.close(fd)


def read_small_text(path: Path) -> bytes:
    """A plain file's bytes, checked as text (no NULs, UTF-8) and without a BOM: a whole small
    file is known good or bad before any of it is counted."""
    data = read_whole(path)
    check_not_binary(path, data)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    check_utf8(path, data, 0)
    return data


# Reading flags of a small file: O_NONBLOCK so a FIFO put in a file's place never blocks the open.
_PACK_FLAGS = os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


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
    file's place is refused as `_open_fd` does). The NUL, BOM and UTF-8 checks run over the whole pack; only a pack that
    fails one is checked file by file to name the bad file."""
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
            bad.append((k, CorpusError(name, _os_problem(Path(name), exc, "read"))))
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
        raise CorpusError(name, f"cannot read: {_read_problem(exc)}") from None
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise CorpusError(name, _not_regular(st.st_mode))
    if st.st_size == 0:
        return b""
    return read_whole(Path(name))  # an error, or changed since the quick read: the careful way


def _utf8_files(data: bytes, offsets: np.ndarray) -> bool:
    """Whether every file is UTF-8, from one check of them end to end: valid UTF-8 whose files
    each start at a character (not a continuation byte), so none ends inside one either."""
    if data.isascii():  # UTF-8 however it is cut (a quick scan: no text made)
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
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


def check_utf8(path: Path, data: bytes, lines_before: int) -> None:
    """CorpusError naming the line of the first byte that is not UTF-8 (`lines_before`: the
    newlines of the file before `data`)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + data.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            str(path), f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", line
        ) from None


def _read_problem(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the compressed data ends too early (truncated file?)"
    if isinstance(exc, zlib.error):
        return f"corrupt compressed data ({exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class _Decoder:
    """Strict incremental UTF-8 that reports the line of the first bad byte."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.lines = 1
        self.first = True

    def decode(self, chunk: bytes, final: bool = False) -> str:
        if self.first and chunk:
            self.first = False
            check_not_binary(self.path, chunk)
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[3:]
        held = self.decoder.getstate()[0]  # the start of a character cut by the last chunk
        try:
            text = self.decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            data = held + chunk  # what exc.start counts in (`held` holds no newline)
            line = self.lines + data.count(b"\n", 0, max(exc.start, 0))
            raise CorpusError(
                str(self.path), f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", line
            ) from None
        self.lines += chunk.count(b"\n")
        return text


@dataclass
class Segmenter:
    """Cuts document text into segments between special tokens, at safe points."""

    specials: tuple[str, ...]
    cut_inside: bool  # whether the pattern allows cuts at letter-whitespace points

    def split(self, text: str) -> list[str]:
        """All segments of a whole text."""
        return split_on_specials(text, self.specials)

    def cut(self, buffer: str) -> int:
        """A position where `buffer` may be cut before more text is appended (0: nowhere)."""
        pattern = specials_regex(self.specials)
        if pattern is not None:
            # after the last special token that cannot grow into a longer one with more text
            longest = max(len(s) for s in self.specials)
            last = None
            for m in pattern.finditer(buffer):
                last = m
            if last is not None and last.end() <= len(buffer) - longest:
                return last.end()
        if not self.cut_inside:
            return 0
        reach = max((len(t) for t in self.specials), default=0)
        return safe_cut(buffer, _SAFE_CUT, pattern, reach)


def safe_cut(
    buffer: AnyStr,
    boundary: regex.Pattern,
    specials: regex.Pattern | None,
    reach: int,
    start: int = 0,
) -> int:
    """The last end of a `boundary` match (a reverse pattern) in `buffer` (text or bytes) that
    no special token spans, or 0. `reach`: the longest special token, in the buffer's units.

    Subtle: a special token may start near the end of the buffer and finish in text not read
    yet, where no search can see it; so never cut later than `len(buffer) - reach + 1`: any
    special starting before that point lies wholly inside the buffer.
    `start`: where to stop looking back. A caller that found no cut in a shorter buffer passes
    that buffer's length minus 2 (a match and its lookahead), so a long stretch without a
    cut point is searched once, not once per chunk appended to it (quadratic)."""
    end = min(len(buffer), len(buffer) - reach + 1)
    while True:
        m = boundary.search(buffer, start, end)
        if m is None:
            return 0
        cut = m.end()
        if specials is None or not any(
            t.start() < cut < t.end()
            for t in specials.finditer(buffer, max(0, cut - reach), cut + reach, overlapped=True)
        ):
            return cut
        end = m.start()


def check_not_binary(path: Path, head: bytes) -> None:
    """A NUL byte near the start of a file means it is not text."""
    if b"\0" in head[:8192]:
        raise CorpusError(str(path), "looks like a binary file (it holds NUL bytes)")


def _stream_text(
    chunks: Iterable[str], segmenter: Segmenter, chunk_chars: int | None = None
) -> Iterator[str]:
    """Segments of one document given as successive text chunks."""
    chunk_chars = CHUNK_CHARS if chunk_chars is None else chunk_chars
    buffer = ""
    for text in chunks:
        buffer += text
        if len(buffer) >= chunk_chars:
            cut = segmenter.cut(buffer)
            if cut > 0:
                yield from segmenter.split(buffer[:cut])
                buffer = buffer[cut:]
    if buffer:
        yield from segmenter.split(buffer)


@dataclass
class Document:
    """One document's segments (a generator: read it once) and where it came from."""

    path: Path
    line: int | None  # the JSONL line, or None for a whole file
    segments: Iterator[str]
    # A record-based reader's (JSONL, Parquet) other fields, so documents can be grouped by one.
    record: dict[str, Any] | None = None


def read_documents(
    path: Path, segmenter: Segmenter, text_column: str = "text", jsonl_field: str = "text"
) -> Iterator[Document]:
    """The documents of one file. Errors surface as CorpusError while iterating."""
    if columnar.is_columnar(path):  # readers hook: Parquet / Arrow records
        for text in columnar.record_texts(path, text_column):
            yield Document(path, None, iter(segmenter.split(text)))
        return
    if is_jsonl(path):
        yield from _jsonl_documents(path, segmenter, jsonl_field)
        return
    decoder = _Decoder(path)

    def texts() -> Iterator[str]:
        for chunk in read_chunks(path):
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)

    yield Document(path, None, _stream_text(texts(), segmenter))


def _jsonl_documents(path: Path, segmenter: Segmenter, field: str) -> Iterator[Document]:
    for number, record, text in jsonl_records(path, field):
        yield Document(path, number, iter(segmenter.split(text)), record)


def jsonl_texts(path: Path, field: str = "text") -> Iterator[tuple[int, str]]:
    """(line number, text) of each record of a JSONL file, streamed; blank lines are skipped.

    A line that is not UTF-8, not JSON, or has no `field` string raises CorpusError naming it."""
    for number, _, text in jsonl_records(path, field):
        yield number, text


def jsonl_records(path: Path, field: str = "text") -> Iterator[tuple[int, dict[str, Any], str]]:
    """(line number, record, its text) of each record of a JSONL file, as `jsonl_texts`."""
    pending = b""
    number = 0
    chunks = read_chunks(path)
    while True:
        chunk = next(chunks, b"")
        pending += chunk
        lines = pending.split(b"\n")
        pending = lines.pop() if chunk else b""
        for raw in lines:
            number += 1
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if raw.strip():
                record, text = _record_text(path, number, raw, field)
                yield number, record, text
        if not chunk:
            return


def _record_text(
    path: Path, number: int, raw: bytes, field: str = "text"
) -> tuple[dict[str, Any], str]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"invalid UTF-8 (byte 0x{raw[exc.start]:02X})"
        raise CorpusError(str(path), message, number) from None
    try:
        # Integers are kept as their digits: the record's other fields may hold numbers longer
        # than int() accepts (4,300 digits), and only "text" is read.
        record = json.loads(line, parse_int=str)
    except json.JSONDecodeError as exc:
        raise CorpusError(str(path), f"not valid JSON ({exc.msg})", number) from None
    except RecursionError:
        raise CorpusError(str(path), "JSON nested too deeply", number) from None
    text = record.get(field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        raise CorpusError(str(path), f'no "{field}" string in this record', number)
    # A \ud800-style escape can give a lone surrogate, which is not a character and has no
    # UTF-8; only escapes can, so the check runs only on lines that hold one.
    if "\\u" in line:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(text[exc.start])
            message = f"the text holds a lone surrogate (\\u{code:04x}), not a character"
            raise CorpusError(str(path), message, number) from None
    return record, text


def corpus_record(paths: Iterable[str | os.PathLike], files: Sequence[Path]) -> dict:
    """What a run store keeps of a corpus, so the run can be continued later if it is unchanged."""
    stats = _resolved_stats(files)
    return {
        "paths": [str(Path(p).resolve()) for p in paths],
        "files": len(files),
        "sizes": sum(st.st_size for _, st in stats),
        "fingerprint": _fingerprint(stats),
    }
