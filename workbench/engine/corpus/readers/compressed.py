"""Compressed corpus files: `.zst` (the `zstandard` package), `.xz` and `.bz2` (the standard
library), beside `.gz` which `corpus.py` opens itself.

`open_compressed(path)` gives a binary stream of the decompressed bytes whose decoding errors
come out as `OSError` with a short reason, so the corpus reader reports a corrupt archive the
same way as an unreadable file. Compression nests with the format: `docs.jsonl.zst` is JSONL.
"""

from __future__ import annotations

import bz2
import io
import lzma
from pathlib import Path

SUFFIXES = (".gz", ".zst", ".xz", ".bz2")
_OPENED_HERE = (".zst", ".xz", ".bz2")


def is_compressed(path: Path) -> bool:
    return path.name.lower().endswith(SUFFIXES)


def opens_here(path: Path) -> bool:
    """Compressed in a form this module decompresses (all but gzip)."""
    return path.name.lower().endswith(_OPENED_HERE)


def plain_name(name: str) -> str:
    """The name without its compression suffix: "a.jsonl.zst" -> "a.jsonl"."""
    lower = name.lower()
    for suffix in SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


class _Decompressed(io.RawIOBase):
    """A read-only stream that turns the decompressor's own errors into OSError."""

    def __init__(
        self, inner: io.IOBase, errors: tuple[type[BaseException], ...], kind: str, raw
    ) -> None:
        self.inner = inner
        self.errors = errors
        self.kind = kind
        self.raw = raw  # the compressed file itself, for progress

    def disk_position(self) -> int:
        """Bytes of the compressed file read so far."""
        return self.raw.tell()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self.inner.read(size)
        except self.errors as exc:
            raise OSError(f"corrupt {self.kind} data ({exc})") from None
        except EOFError:
            raise OSError(f"truncated {self.kind} data") from None

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        self.raw.close()
        super().close()


def open_compressed(path: Path) -> io.RawIOBase:
    """The decompressed bytes of a `.zst`, `.xz` or `.bz2` file (raises OSError if unreadable)."""
    lower = path.name.lower()
    if lower.endswith(".xz"):
        raw = open(path, "rb")  # noqa: SIM115 - closed with the stream
        return _Decompressed(lzma.open(raw, "rb"), (lzma.LZMAError,), "xz", raw)
    if lower.endswith(".bz2"):
        raw = open(path, "rb")  # noqa: SIM115 - closed with the stream
        return _Decompressed(bz2.open(raw, "rb"), (OSError, ValueError), "bz2", raw)
    import zstandard  # a core dependency, imported only when a .zst file is read

    frames = _ZstdFrames(path, zstandard)
    return _Decompressed(frames, (zstandard.ZstdError,), "zstd", frames.raw)


# Never more decompressed bytes at once than asked for, and never more than this per read: a
# 48 KB .zst can hold 512 MB (zstd's RLE blocks expand 4 bytes to 128 KB), so what one read
# of compressed input makes must not be what bounds memory.
MAX_READ = 1 << 22


class _ZstdFrames(io.RawIOBase):
    """The frames of a .zst file, one after another, decompressed in bounded pieces (zstandard's
    `stream_reader`: each `read(size)` makes at most `size` bytes, whatever the expansion).
    Unlike that reader alone it notices a file that ends inside a frame (a truncated
    download): at the end, `zstd_frames_end_cleanly` walks the frame headers."""

    def __init__(self, path: Path, zstandard) -> None:
        self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.path = path
        self.reader = zstandard.ZstdDecompressor().stream_reader(
            self.raw, read_size=1 << 17, read_across_frames=True, closefd=False
        )
        self.checked = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = MAX_READ if size is None or size < 0 else min(size, MAX_READ)
        out = self.reader.read(size)
        if not out and size and not self.checked:
            self.checked = True
            if not zstd_frames_end_cleanly(self.path):
                raise EOFError("the file ends inside a frame")
        return out

    def close(self) -> None:
        self.reader.close()
        self.raw.close()
        super().close()


_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # ... through 0x184D2A5F
_FCS_BYTES = (0, 2, 4, 8)
_DICT_BYTES = (0, 1, 2, 4)


def zstd_frames_end_cleanly(path: Path) -> bool:
    """Whether `path` is whole zstd frames end to end (by their headers; nothing decompressed).

    A frame: magic, a descriptor byte (sizes of the fields that follow), then blocks, each a
    3-byte header (last-block bit, type, size) and its content (`size` bytes, one for an RLE
    block), then a 4-byte checksum when the descriptor says so. Skippable frames carry their
    length. One seek per block: a 512 MB bomb of 4,096 blocks is walked in milliseconds."""
    with open(path, "rb") as f:
        end = f.seek(0, io.SEEK_END)
        f.seek(0)
        while True:
            head = f.read(4)
            if not head:
                return True
            if len(head) < 4:
                return False
            magic = int.from_bytes(head, "little")
            if magic & 0xFFFFFFF0 == _SKIPPABLE:
                length = f.read(4)
                if len(length) < 4:
                    return False
                f.seek(int.from_bytes(length, "little"), io.SEEK_CUR)
            elif magic == _ZSTD_MAGIC:
                if not _walk_frame(f):
                    return False
            else:
                return False  # the decompressor reports garbage itself; this is a late guard
            if f.tell() > end:
                return False


def _walk_frame(f: io.BufferedReader) -> bool:
    descriptor = f.read(1)
    if not descriptor:
        return False
    d = descriptor[0]
    single_segment = bool(d & 0x20)
    fcs = _FCS_BYTES[d >> 6] or (1 if single_segment else 0)
    f.seek((0 if single_segment else 1) + _DICT_BYTES[d & 3] + fcs, io.SEEK_CUR)
    while True:
        header = f.read(3)
        if len(header) < 3:
            return False
        value = int.from_bytes(header, "little")
        kind, size = (value >> 1) & 3, value >> 3
        f.seek(1 if kind == 1 else size, io.SEEK_CUR)
        if value & 1:  # the last block
            if d & 0x04:
                f.seek(4, io.SEEK_CUR)  # content checksum
            return True
