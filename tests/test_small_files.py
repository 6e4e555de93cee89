"""A folder of many small files counted through the scanner's packs (files listed without a
stat, read straight into a pack, sized by reading) gives the same words, stats and messages as
the regex path, which lists, sizes and reads every file one by one; however the packs fall."""

from __future__ import annotations

import gzip
import os

import pytest
from workbench.engine.pretokenize.counting import count_corpus, count_texts
from workbench.engine.pretokenize.scan import count as scan_count

from workbench.engine.config import TrainConfig

SPECIAL = "<|end of text|>"


def _tree(root):
    """~600 small files in nested folders, with every kind of file a pack may meet."""
    good: dict[str, bytes] = {}
    for k in range(600):
        name = f"d{k // 100}/sub{k % 3}/{k:04d}.txt"
        good[name] = (f"doc {k}: naïve café {'word ' * (k % 9)}" + "\n" * (k % 2)).encode()
    good["d0/big.txt"] = ("a long document, " * 400).encode()  # larger than the small packs
    good["d1/empty.txt"] = b""
    good["d1/bom.txt"] = b"\xef\xbb\xbfstarts with a BOM\n"
    good["d1/special.txt"] = f"one{SPECIAL}two {SPECIAL}".encode()
    good["d2/noext"] = "東京 no suffix\n".encode()
    good["d2/UPPER.TXT"] = b"upper case suffix\n"
    bad = {
        "d0/0050-bad.txt": b"fine line\nsecond line \xff here\n",
        "d3/binary.txt": b"text\0more",
    }
    for name, data in {**good, **bad}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    with gzip.open(root / "d1/packed.txt.gz", "wb") as out:  # streamed, in its place
        out.write(b"compressed text\n")
    good["d1/packed.txt.gz"] = b"compressed text\n"
    (root / "d2/.hidden.txt").write_bytes(b"never read")
    os.symlink(root / "d0/sub1/0001.txt", root / "d3/link.txt")  # a link to a file is read
    good["d3/link.txt"] = good["d0/sub1/0001.txt"]
    return good, bad


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    good, bad = _tree(root)
    return root, good, bad


def _run(root, pretokenizer: str, specials=(SPECIAL,)):
    seen: list[tuple[int, int]] = []
    config = TrainConfig(on_bad_file="skip", pretokenizer=pretokenizer, special_tokens=specials)
    result = count_corpus([root], config, progress=lambda d, t: seen.append((d, t)), workers=2)
    return result, seen


@pytest.mark.parametrize("unit_bytes", [scan_count.UNIT_BYTES, 300, 4096])
@pytest.mark.parametrize("specials", [(), (SPECIAL,)])
def test_many_small_files_count_as_the_one_by_one_path(tree, monkeypatch, unit_bytes, specials):
    root, good, bad = tree
    monkeypatch.setattr(scan_count, "UNIT_BYTES", unit_bytes)
    monkeypatch.setattr(scan_count, "FIRST_PACK_FILES", 7)
    fast, seen = _run(root, "auto", specials)
    slow, _ = _run(root, "regex", specials)
    texts = [good[k].decode("utf-8-sig") for k in sorted(good)]
    want = count_texts(texts, TrainConfig(special_tokens=specials)).to_dict()
    assert fast.words.to_dict() == slow.words.to_dict() == want
    assert fast.stats.skipped == slow.stats.skipped
    assert [s.split(": ", 1)[1] for s in fast.stats.skipped] == [
        "invalid UTF-8 (byte 0xFF)",
        "looks like a binary file (it holds NUL bytes)",
    ]
    assert "0050-bad.txt:2:" in fast.stats.skipped[0]
    for field in ("files", "documents", "bytes", "pieces", "unique_pieces"):
        assert getattr(fast.stats, field) == getattr(slow.stats, field), field
    assert fast.stats.files == len(good) + len(bad)
    assert [str(p) for p in fast.files] == [str(p) for p in slow.files]
    on_disk = sum(os.stat(p).st_size for p in slow.files)
    done = [d for d, _ in seen]
    assert done == sorted(done) and seen[-1] == (on_disk, on_disk)


def test_pieces_in_the_same_order_however_the_packs_fall(tree, monkeypatch):
    root, _, _ = tree
    first, _ = _run(root, "auto")
    monkeypatch.setattr(scan_count, "UNIT_BYTES", 300)
    monkeypatch.setattr(scan_count, "FIRST_PACK_FILES", 3)
    again, _ = _run(root, "auto")
    assert list(first.words.to_dict().items()) == list(again.words.to_dict().items())


def test_bad_file_among_many_stops_the_run_when_asked(tree):
    root, _, _ = tree
    with pytest.raises(Exception, match=r"0050-bad\.txt:2: invalid UTF-8"):
        count_corpus([root], TrainConfig(on_bad_file="stop"))


@pytest.mark.parametrize("pretokenizer", ["auto", "regex"])
def test_listing_problems_come_before_bad_files(tmp_path, pretokenizer):
    """The folders are walked while the files listed are read, yet a problem of the listing
    (here a broken link, listed after a bad file) still stops the run first, and is reported
    first when bad files are skipped."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a/bad.txt").write_bytes(b"\xff")
    (tmp_path / "a/good.txt").write_bytes(b"good text\n")
    (tmp_path / "z").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "z/broken.txt")
    with pytest.raises(Exception, match=r"broken\.txt: broken symbolic link"):
        count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer))
    config = TrainConfig(pretokenizer=pretokenizer, on_bad_file="skip")
    result = count_corpus([tmp_path], config)
    assert [s.rsplit(": ", 1)[1] for s in result.stats.skipped] == [
        "broken symbolic link",
        "invalid UTF-8 (byte 0xFF)",
    ]
    assert result.stats.files == 2 and result.stats.documents == 1


def test_nothing_listed(tmp_path):
    with pytest.raises(Exception, match="no files to read"):
        count_corpus([tmp_path], TrainConfig())
