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


class _ZstdFrames(io.RawIOBase):
    """The frames of a .zst file, one after another, decompressed. Unlike zstandard's own
    stream reader it notices a file that ends inside a frame (a truncated download)."""

    def __init__(self, path: Path, zstandard) -> None:
        self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.context = zstandard.ZstdDecompressor()
        self.frame = self.context.decompressobj()
        self.in_frame = False  # whether input of an unfinished frame has been fed
        self.ready = bytearray()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.ready) < size:
            chunk = self.raw.read(1 << 20)
            if not chunk:
                if self.in_frame:
                    raise EOFError("the file ends inside a frame")
                break
            self._feed(chunk)
        size = len(self.ready) if size < 0 else min(size, len(self.ready))
        out = bytes(self.ready[:size])
        del self.ready[:size]
        return out

    def _feed(self, chunk: bytes) -> None:
        while chunk:
            self.ready += self.frame.decompress(chunk)
            self.in_frame = True
            if not self.frame.eof:
                return
            chunk = self.frame.unused_data  # the next frame's start, if any
            self.frame = self.context.decompressobj()
            self.in_frame = False

    def close(self) -> None:
        self.raw.close()
        super().close()
