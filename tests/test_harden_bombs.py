"""Compression bombs and columnar files whose values are huge (issue 33): decompression makes
bounded pieces whatever the expansion ratio, and Parquet/Arrow batches are bounded by bytes, not
rows. Each is counted in a subprocess whose address space is capped (`RLIMIT_AS`) well below
what the whole expanded input would take."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest
import zstandard

from tests._capped import MB, run_capped

EXPANDED = 256 * MB
CAP = 160 * MB  # far below the 256 MB a reader holding the whole output would need
LINE = b"the quick brown fox jumps over the lazy dog 0123456789\n" * 64

PREPARE = """
import sys
from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize import count_corpus
count_corpus([sys.argv[1] if len(sys.argv) > 1 else "{warm}"], TrainConfig(vocab_size=300), workers=1)
"""
WORK = """
result = count_corpus([r"{path}"], TrainConfig(vocab_size=300), workers=1)
answer["pieces"] = result.stats.pieces
answer["bytes"] = result.stats.bytes
"""


def _bomb(path: Path, size: int = EXPANDED) -> Path:
    """`size` bytes of repeated lines, compressed by `path`'s suffix, written as it goes."""
    chunk = LINE * (MB // len(LINE))
    suffix = path.suffix
    if suffix == ".zst":
        with open(path, "wb") as raw, zstandard.ZstdCompressor(level=9).stream_writer(raw) as w:
            for _ in range(size // len(chunk)):
                w.write(chunk)
        return path
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}[suffix]
    with opener(path, "wb") as w:
        for _ in range(size // len(chunk)):
            w.write(chunk)
    return path


def _count_capped(tmp_path: Path, path: Path) -> dict:
    warm = tmp_path / "warm.txt"
    warm.write_bytes(LINE)
    return run_capped(PREPARE.format(warm=warm), WORK.format(path=path), CAP)


@pytest.mark.parametrize("suffix", [".zst", ".gz", ".xz", ".bz2"])
def test_a_compression_bomb_counts_under_a_memory_cap(tmp_path, suffix):
    # zstd is the one whose reader held a whole feed's output; the others are kept small (their
    # standard-library readers cap output already, and xz and bz2 compress slowly)
    size = EXPANDED if suffix == ".zst" else 48 * MB
    bomb = _bomb(tmp_path / f"bomb.txt{suffix}", size)
    answer = _count_capped(tmp_path, bomb)
    assert answer["kind"] == "ok", answer
    chunk_bytes = len(LINE) * (MB // len(LINE))
    assert answer["bytes"] == chunk_bytes * (size // chunk_bytes)
    print(
        f"{suffix}: {bomb.stat().st_size:,} bytes -> {answer['bytes']:,}, rss {answer['rss'] / MB:.0f} MB"
    )
