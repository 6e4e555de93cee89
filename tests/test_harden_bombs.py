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

# Counting a small text and a small Parquet file first starts every thread (ours, pyarrow's
# CPU and I/O pools, each with a stack and an allocator arena) before the cap is set.
PREPARE = """
import pyarrow as pa, pyarrow.parquet as pq
from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize.counting import count_corpus
pq.write_table(pa.table({{"text": ["warm up"] * 10}}), "{warm}.parquet")
count_corpus(["{warm}", "{warm}.parquet"], TrainConfig(vocab_size=300), workers=1)
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


# -- Parquet and Arrow: batches bounded by bytes -----------------------------------------------

VALUE = "words in a very long record " * 3700  # ~100 KB, one dictionary value


def test_a_parquet_dictionary_bomb_counts_under_a_memory_cap(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 2500  # 250 MB once decoded, from a file of a few KB
    path = tmp_path / "bomb.parquet"
    table = pa.table({"text": pa.array([VALUE] * rows)})
    pq.write_table(table, path, compression="zstd", row_group_size=rows)
    assert path.stat().st_size < 64 * 1024
    answer = _count_capped(tmp_path, path)
    assert answer["kind"] == "ok", answer
    assert answer["bytes"] == rows * len(VALUE)


def test_a_compressed_arrow_batch_counts_under_a_memory_cap(tmp_path):
    import pyarrow as pa

    rows = 1300  # one record batch of 130 MB, compressed to a few hundred KB
    path = tmp_path / "bomb.arrow"
    table = pa.table({"text": pa.array([VALUE] * rows)})
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_stream(sink, table.schema, options=options) as w,
    ):
        w.write_table(table, max_chunksize=rows)
    warm = tmp_path / "warm.txt"
    warm.write_bytes(LINE)
    # the batch itself (130 MB) must be decompressed whole: the cap leaves room for it, not
    # for the three copies a reader without slicing made
    answer = run_capped(PREPARE.format(warm=warm), WORK.format(path=path), 256 * MB)
    assert answer["kind"] == "ok", answer
    assert answer["bytes"] == rows * len(VALUE)


def test_a_dictionary_encoded_arrow_column_is_text(tmp_path):
    import pyarrow as pa

    from workbench.engine.corpus.readers.columnar import BATCH_BYTES, text_blocks
    from workbench.engine.errors import CorpusError

    path = tmp_path / "dict.arrow"
    indices = pa.array([0, 1, 1, 2, 0] * 400, pa.int32())
    column = pa.DictionaryArray.from_arrays(indices, pa.array(["ab", VALUE, "c"]))
    table = pa.table({"text": column})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    blocks = list(text_blocks(path, "text", block_bytes=1 << 20))
    text = b"".join(data for data, _ in blocks)
    assert text == ("ab" + VALUE + VALUE + "c" + "ab").encode() * 400
    assert sum(len(offsets) - 1 for _, offsets in blocks) == 2000
    # a block is whole slices up to block_bytes: at most one slice (BATCH_BYTES) past it
    assert max(len(data) for data, _ in blocks) <= (1 << 20) + BATCH_BYTES
    nulls = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.int32()), pa.array(["ab"]))
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(pa.table({"text": nulls}))
    with pytest.raises(CorpusError, match="row 1: the text is null"):
        list(text_blocks(path, "text"))


def test_slices_cut_by_bytes_and_keep_records_whole():
    import pyarrow as pa

    from workbench.engine.corpus.readers.columnar import _bounded

    array = pa.array(["x" * 10, "y" * 10, "z" * 10, "w" * 50, "v"])
    cuts = [(first, piece.to_pylist()) for first, piece in _bounded(array, budget=20)]
    assert cuts == [(0, ["x" * 10, "y" * 10]), (2, ["z" * 10]), (3, ["w" * 50]), (4, ["v"])]
