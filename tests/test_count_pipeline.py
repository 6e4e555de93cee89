"""The counting pipeline: packs of small files read and checked together, a bad file among them
dropped whole and named, and each unit's count table folded into one growing table."""

from __future__ import annotations

import os

import numpy as np
import pytest
from workbench.engine.pretokenize.counting import count_corpus, count_texts
from workbench.engine.pretokenize.scan import count as scan_count
from workbench.engine.pretokenize.scan.fold import CountTable

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import reading as corpus
from workbench.engine.errors import CorpusError
from workbench.engine.pretokenize import scan as scanner

SPECIAL = "<|end of text|>"


def _folder(tmp_path, files: dict[str, bytes]):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _count(folder, **settings) -> tuple[dict[bytes, int], list[str], int]:
    result = count_corpus([folder], TrainConfig(on_bad_file="skip", **settings))
    return result.words.to_dict(), result.stats.skipped, result.stats.documents


@pytest.fixture
def small_packs(monkeypatch):
    """Packs of three files, so bad files fall at a pack's start, middle and end."""
    monkeypatch.setattr(scan_count, "PACK_FILES", 3)


GOOD = {
    "a.txt": b"Hello world, it's a test.\n",
    "b.txt": "café naïve — 東京\n".encode(),
    "c.txt": b"",
    "d.txt": b"\xef\xbb\xbfbom at the start\n",
    "e.txt": "über ".encode() * 40,
    "f.txt": b"tail without newline",
}


@pytest.mark.parametrize("specials", [(), (SPECIAL,)])
def test_packed_small_files_count_as_separate_documents(tmp_path, small_packs, specials):
    files = dict(GOOD)
    files["g.txt"] = f"one{SPECIAL} two {SPECIAL}".encode()
    counts, skipped, documents = _count(_folder(tmp_path, files), special_tokens=specials)
    texts = [data.decode("utf-8-sig") for _, data in sorted(files.items())]
    assert counts == count_texts(texts, TrainConfig(special_tokens=specials)).to_dict()
    assert skipped == [] and documents == len(files)


def test_character_split_across_two_files_is_invalid_in_both(tmp_path, small_packs):
    """End to end the two files hold a valid "é"; each alone is not UTF-8."""
    files = {"a.txt": b"ok\n", "b.txt": b"ends in half \xc3", "c.txt": b"\xa9 starts in half"}
    counts, skipped, documents = _count(_folder(tmp_path, files))
    assert counts == count_texts(["ok\n"], TrainConfig()).to_dict()
    assert documents == 1
    assert len(skipped) == 2
    assert "b.txt:1: invalid UTF-8 (byte 0xC3)" in skipped[0]
    assert "c.txt:1: invalid UTF-8 (byte 0xA9)" in skipped[1]


@pytest.mark.parametrize("where", [0, 1, 2, 4])
def test_a_bad_file_anywhere_in_a_pack_is_dropped_whole_and_named(tmp_path, small_packs, where):
    names = sorted(GOOD)
    bad_name = names[where].replace(".txt", "-bad.txt")
    files = dict(GOOD)
    files[bad_name] = b"fine line\nsecond line \xff here\n"
    files["z-binary.txt"] = b"text\0more"
    counts, skipped, documents = _count(_folder(tmp_path, files))
    texts = [data.decode("utf-8-sig") for _, data in sorted(GOOD.items())]
    assert counts == count_texts(texts, TrainConfig()).to_dict()
    assert documents == len(GOOD)
    assert len(skipped) == 2
    assert f"{bad_name}:2: invalid UTF-8 (byte 0xFF)" in skipped[0]
    assert "z-binary.txt" in skipped[1] and "binary" in skipped[1]


def test_bad_file_stops_the_run_when_asked(tmp_path, small_packs):
    files = dict(GOOD)
    files["b2.txt"] = b"\xfe"
    with pytest.raises(CorpusError, match=r"b2\.txt:1: invalid UTF-8"):
        count_corpus([_folder(tmp_path, files)], TrainConfig(on_bad_file="stop"))


def test_pack_stops_at_the_limit_and_before_a_larger_file(tmp_path):
    names = []
    for name, size in (("a", 10), ("b", 30), ("c", 500), ("d", 5)):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(b"x" * size)
        names.append(str(path))
    pack = corpus.read_text_pack(names, 0, 4, 100)
    assert (pack.read, pack.big, bytes(pack.data)) == (2, True, b"x" * 40)
    assert pack.offsets.tolist() == [0, 10, 40] and pack.disk_bytes == 40
    pack = corpus.read_text_pack(names, 0, 4, 20)  # the bytes reach the limit after b
    assert (pack.read, pack.big, pack.offsets.tolist()) == (2, False, [0, 10, 40])
    pack = corpus.read_text_pack(names, 3, 4, 20)
    assert (pack.read, pack.big, bytes(pack.data)) == (1, False, b"xxxxx")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_in_a_files_place_in_a_pack_is_refused_without_blocking(tmp_path):
    good, fifo = tmp_path / "a.txt", tmp_path / "pipe.txt"
    good.write_bytes(b"fine")
    os.mkfifo(fifo)
    pack = corpus.read_text_pack([str(good), str(fifo)], 0, 2, 1 << 20)
    assert bytes(pack.data) == b"fine" and pack.read == 2
    assert len(pack.errors) == 1 and "FIFO" in str(pack.errors[0])


def test_empty_and_unreadable_packs(tmp_path):
    gone = tmp_path / "gone.txt"
    pack = corpus.read_text_pack([str(gone)], 0, 1, 1 << 20)
    assert pack.data == b"" and pack.offsets.tolist() == [0]
    assert str(pack.errors[0]) == f"{gone}: no such file or folder"


def test_walker_sizes_match_the_files(tmp_path):
    folder = tmp_path / "tree"
    for k in range(5000):  # enough to size them in two threads
        sub = folder / f"{k // 1000}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{k:05d}.txt").write_bytes(b"x" * (k % 7))
    listing = corpus.list_corpus([folder])
    assert [f.name for f in listing.files] == [f"{k:05d}.txt" for k in range(5000)]
    assert listing.sizes == [k % 7 for k in range(5000)]
    assert listing.problems == []


def _random_table(rng, pieces: list[bytes]):
    chosen = list(dict.fromkeys(pieces[i] for i in rng.integers(0, len(pieces), 50)))
    counts = rng.integers(1, 1000, len(chosen))
    buf = np.frombuffer(b"".join(chosen), np.uint8).copy()
    offsets = np.zeros(len(chosen) + 1, np.int64)
    offsets[1:] = np.cumsum([len(p) for p in chosen])
    return buf, offsets, counts.astype(np.int64)


def test_count_table_equals_merging_the_tables_at_once():
    rng = np.random.default_rng(7)
    pieces = [bytes(rng.integers(0, 256, rng.integers(1, 9)).tolist()) for _ in range(3000)]
    tables = [_random_table(rng, pieces) for _ in range(40)]
    total = CountTable()
    other = CountTable()
    for k, table in enumerate(tables):
        (total if k < 25 else other).add(table)
    total.add_all(other)
    assert len(other) == 0
    merged = scanner.merge_count_tables(tables)
    for got, want in zip(total.table(), merged, strict=True):
        np.testing.assert_array_equal(got, want)


def test_count_table_adopts_a_table_when_empty():
    rng = np.random.default_rng(3)
    pieces = [bytes([b]) * 3 for b in range(200)]
    table = _random_table(rng, pieces)
    first, total = CountTable(), CountTable()
    first.add(table)
    total.add_all(first)
    total.add(table)
    buf, offsets, counts = total.table()
    np.testing.assert_array_equal(counts, 2 * table[2])
    assert CountTable().table()[1].tolist() == [0]
