"""Progress moves inside one large file (text, compressed, Parquet, Arrow) on both counting
paths, stays monotonic and ends at the total; cancel still stops counting mid-file."""

from __future__ import annotations

import bz2
import lzma
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from workbench.engine.pretokenize.counting import count_corpus

from workbench.engine.config import TrainConfig
from workbench.engine.errors import CancelledError

PATHS = ("auto", "regex")


def _text(megabytes: float, seed: int = 1) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "iota"]
    parts, size = [], 0
    while size < megabytes * (1 << 20):
        line = " ".join(rng.choice(words) for _ in range(12)) + ".\n"
        parts.append(line)
        size += len(line)
    return "".join(parts)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big")
    text = _text(10)
    (folder / "big.txt").write_text(text, encoding="utf-8")
    lines = text.splitlines()
    (folder / "big.xz").write_bytes(lzma.compress(text.encode("utf-8"), preset=0))
    (folder / "big.bz2").write_bytes(bz2.compress(text.encode("utf-8"), 1))
    table = pa.table({"text": lines})
    pq.write_table(table, folder / "big.parquet", row_group_size=len(lines) // 6 + 1)
    with (
        pa.OSFile(str(folder / "big.arrow"), "wb") as sink,
        pa.ipc.new_stream(sink, table.schema) as writer,
    ):
        for batch in table.to_batches(max_chunksize=len(lines) // 6 + 1):
            writer.write_batch(batch)
    return folder


def _progress_of(path, pretokenizer):
    seen: list[tuple[int, int]] = []
    config = TrainConfig(vocab_size=300, pretokenizer=pretokenizer)
    count_corpus([path], config, progress=lambda d, t: seen.append((d, t)), workers=1)
    return seen


@pytest.mark.parametrize("pretokenizer", PATHS)
@pytest.mark.parametrize("name", ["big.txt", "big.xz", "big.bz2", "big.parquet", "big.arrow"])
def test_progress_moves_inside_one_file(big, name, pretokenizer):
    seen = _progress_of(big / name, pretokenizer)
    total = (big / name).stat().st_size
    assert {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == total
    inside = {d for d in done if 0 < d < total}
    assert len(inside) >= 2, done  # the regex path reads 4 MB at a time


@pytest.mark.parametrize("pretokenizer", PATHS)
def test_cancel_stops_mid_file(big, pretokenizer):
    seen: list[int] = []
    total = (big / "big.txt").stat().st_size
    config = TrainConfig(vocab_size=300, pretokenizer=pretokenizer)
    with pytest.raises(CancelledError):
        count_corpus(
            [big / "big.txt"],
            config,
            progress=lambda d, t: seen.append(d),
            cancel=lambda: bool(seen),  # cancel once the file is partly read
            workers=1,
        )
    assert seen and max(seen) < total
