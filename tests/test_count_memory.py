"""Counting in bounded memory: a corpus twice as large (same unique pieces) must not raise the
counting process's peak resident memory (`ru_maxrss`, measured in a fresh subprocess), for plain
text streamed by chunks and for Parquet streamed by row group.

Why RSS and not `RLIMIT_AS`: Numba and LLVM reserve far more virtual address space than they
touch, so an address-space cap says little about the reader; the peak resident set does.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

MB = 1 << 20
GROWTH_LIMIT = 12 * MB  # the larger corpus adds 32 MB of text: streaming keeps well under this

SCRIPT = """
import json, resource, sys
from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize.counting import count_corpus
result = count_corpus([sys.argv[1]], TrainConfig(vocab_size=300), workers=2)
print(json.dumps({"unique": len(result.words), "pieces": result.stats.pieces,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def _block(seed: int = 1) -> str:
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(3000)
    ]
    lines = [" ".join(rng.choice(vocab) for _ in range(14)) for _ in range(8000)]
    return "\n".join(lines) + "\n"  # ~ 1 MB: every word of the vocabulary many times


def _peak(path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _text(path, megabytes: int) -> None:
    block = _block()
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(megabytes * MB // len(block)):
            handle.write(block)


def _parquet(path, megabytes: int) -> None:
    lines = _block().splitlines()
    table = pa.table({"text": lines})
    with pq.ParquetWriter(path, table.schema) as writer:
        for _ in range(megabytes * MB // sum(map(len, lines))):
            writer.write_table(table, row_group_size=2000)


@pytest.mark.parametrize("write", [_text, _parquet], ids=["text", "parquet"])
def test_peak_memory_does_not_grow_with_the_corpus(tmp_path, write):
    small, large = tmp_path / "small", tmp_path / "large"
    suffix = ".parquet" if write is _parquet else ".txt"
    small, large = small.with_suffix(suffix), large.with_suffix(suffix)
    write(small, 32)
    write(large, 64)
    a, b = _peak(small), _peak(large)
    print(f"peak RSS {a['rss'] / MB:.0f} MB at 32 MB, {b['rss'] / MB:.0f} MB at 64 MB")
    assert a["unique"] == b["unique"] and b["pieces"] > 1.9 * a["pieces"]
    assert b["rss"] - a["rss"] < GROWTH_LIMIT, (a, b)
