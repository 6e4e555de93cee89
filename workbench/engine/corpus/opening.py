"""Opening one corpus file for its bytes: plain files and every compression, from one table of
openers by name ending (`.gz` here, `.zst`/`.xz`/`.bz2` from `readers.compressed`); reading it
in chunks with progress inside the file, or a small plain file whole.

Only bytes: the text checks are in `text_checks`, documents and segments in `documents`."""

from __future__ import annotations

import codecs
import contextlib
import gzip
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from workbench.engine.corpus.problems import not_regular, os_problem, read_problem
from workbench.engine.corpus.readers import compressed, meter
from workbench.engine.corpus.text_checks import check_not_binary, check_utf8
from workbench.engine.errors import CorpusError

READ_BYTES = 1 << 22  # bytes per read from a file (decompressed)
# Without it, opening a FIFO waits for a writer for ever; regular files ignore the flag.
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# What a decompressor may raise on bad data (besides OSError): a truncated or corrupt file.
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)


def is_jsonl(path: Path) -> bool:
    return compressed.plain_name(path.name).lower().endswith(".jsonl")  # any compression


def _open_fd(path: Path) -> tuple[int, int]:
    """(file descriptor, size) of a regular file opened for reading. Anything else is refused,
    and a FIFO never blocks the open (O_NONBLOCK), even one put in a file's place after the
    folder was listed."""
    try:
        fd = os.open(path, os.O_RDONLY | NONBLOCK)
    except OSError as exc:
        raise CorpusError(str(path), os_problem(path, exc, "read")) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorpusError(str(path), not_regular(st.st_mode))
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
def _open_gzip(path: Path) -> Iterator[BinaryIO]:
    with _open_regular(path) as raw:
        try:
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        except READ_ERRORS as exc:
            raise CorpusError(str(path), f"cannot read: {exc}") from None
        with stream:
            yield stream  # type: ignore[misc]


@contextlib.contextmanager
def _open_compressed(path: Path) -> Iterator[BinaryIO]:
    """A `.zst`, `.xz` or `.bz2` file, decompressed by `readers.compressed`."""
    try:
        stream = compressed.open_compressed(path)
    except OSError as exc:
        raise CorpusError(str(path), os_problem(path, exc, "read")) from None
    with stream:
        yield stream  # type: ignore[misc]


# Every compression, by name ending (lowercase) -> its opener: a context manager giving the
# decompressed bytes and raising CorpusError for a file it cannot open.
OPENERS: dict[str, Callable[[Path], contextlib.AbstractContextManager[BinaryIO]]] = {
    ".gz": _open_gzip,
    ".zst": _open_compressed,
    ".xz": _open_compressed,
    ".bz2": _open_compressed,
}


@contextlib.contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed by its name ending."""
    lower = path.name.lower()
    opener = next((f for ext, f in OPENERS.items() if lower.endswith(ext)), None)
    if opener is not None:
        with opener(path) as stream:
            yield stream
        return
    with _open_regular(path) as raw:
        yield raw


def read_chunks(path: Path, size: int | None = None) -> Iterator[bytes]:
    """The file's bytes in chunks (decompressed), with read errors as CorpusError."""
    size = READ_BYTES if size is None else size
    with open_binary(path) as stream:
        on_disk = _disk_position(stream)
        while True:
            try:
                chunk = stream.read(size)
            except READ_ERRORS as exc:
                raise CorpusError(str(path), f"cannot read: {read_problem(exc)}") from None
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
        raise CorpusError(str(path), f"cannot read: {read_problem(exc)}") from None
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
