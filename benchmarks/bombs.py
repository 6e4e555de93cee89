"""Compression bombs and columnar files of huge values: `bpe-workbench count` on each, wall time
and peak memory of the whole process, beside the same text as a plain file.

    python benchmarks/bombs.py                 # 512 MB expanded (the issue-33 cases)
    python benchmarks/bombs.py --megabytes 128

Inputs are made in a temporary folder: a `.zst` and a `.gz` of repeated lines, a Parquet file
whose one 100 KB dictionary value fills every row (a few KB on disk), and an Arrow IPC stream of
the same rows compressed with zstd. Peak memory should not follow the expanded size.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from workbench.bench import run_measured

MB = 1 << 20
LINE = b"the quick brown fox jumps over the lazy dog 0123456789\n" * 64
VALUE = "words in a very long record " * 3700  # ~100 KB


def make(folder: Path, megabytes: int) -> list[Path]:
    chunk = LINE * (MB // len(LINE))
    count = megabytes * MB // len(chunk)
    plain, zst, gz = folder / "plain.txt", folder / "bomb.txt.zst", folder / "bomb.txt.gz"
    with open(plain, "wb") as out:
        for _ in range(count):
            out.write(chunk)
    with open(zst, "wb") as raw, zstandard.ZstdCompressor(level=9).stream_writer(raw) as w:
        for _ in range(count):
            w.write(chunk)
    with gzip.open(gz, "wb") as w:
        for _ in range(count):
            w.write(chunk)
    rows = megabytes * MB // len(VALUE)
    table = pa.table({"text": pa.array([VALUE] * rows)})
    parquet, arrow = folder / "bomb.parquet", folder / "bomb.arrow"
    pq.write_table(table, parquet, compression="zstd", row_group_size=rows)
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with (
        pa.OSFile(str(arrow), "wb") as sink,
        pa.ipc.new_stream(sink, table.schema, options=options) as w,
    ):
        w.write_table(table, max_chunksize=4096)
    return [plain, zst, gz, parquet, arrow]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=512, help="expanded size of each input")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bombs-") as tmp:
        folder = Path(tmp)
        paths = make(folder, args.megabytes)
        print(f"{'input':<16} {'on disk':>12} {'wall s':>8} {'peak MB':>8}")
        for path in paths:
            out = folder / f"{path.name}.counts.parquet"
            argv = [sys.executable, "-m", "workbench", "count", str(path), "--out", str(out)]
            seconds, peak = run_measured(argv)
            print(f"{path.name:<16} {path.stat().st_size:>12,} {seconds:>8.1f} {peak:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
