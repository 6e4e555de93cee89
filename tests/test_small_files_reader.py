"""Packs of small files read by the libc kernel (`_libc_read`) and by the Python fallback: the
same packs and the same errors whatever lies in a file's place, the same counts as the files
read one by one, and the kernel loaded from Numba's disk cache in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from workbench.engine._native import libc_read as _libc_read
from workbench.engine.pretokenize.counting import count_corpus, count_texts

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import reading as corpus

pytestmark = pytest.mark.skipif(not _libc_read.available(), reason="no libc kernel here")

LIMIT = 400  # bytes a pack: room for 802, so the 1,000-byte file below is too big for it


def _files(tmp_path) -> list[str]:
    """Names in the order a listing gives them, with every kind of trouble a pack can meet."""
    folder = tmp_path / "docs"
    folder.mkdir()
    names: list[str] = []

    def add(name: str, data: bytes | None) -> None:
        path = os.path.join(folder, name)
        if data is not None:
            with open(path, "wb") as out:
                out.write(data)
        names.append(path)

    for k in range(12):
        add(f"a{k:02d}.txt", f"doc {k}: naïve café {'word ' * k}\n".encode())
    add("b-empty.txt", b"")
    add("c-missing.txt", None)
    os.mkdir(folder / "d-folder.txt")
    names.append(str(folder / "d-folder.txt"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "e-fifo.txt")
        names.append(str(folder / "e-fifo.txt"))
    add("f-bom.txt", b"\xef\xbb\xbfstarts with a BOM\n")
    add("g-nul.txt", b"text\0more")
    add("h-bad.txt", b"fine\nthen \xff bad\n")
    add("i-big.txt", b"x" * 1000)
    raw = os.path.join(os.fsencode(folder), b"j-caf\xe9.txt")  # not UTF-8: a surrogate in str
    with open(raw, "wb") as out:
        out.write(b"latin-1 name\n")
    names.append(os.fsdecode(raw))
    for k in range(12, 20):
        add(f"k{k:02d}.txt", f"more {k}\n".encode())
    add("l-empty.txt", b"")
    add("m-last.txt", b"last one\n")
    # folders changing from file to file (the kernel opens files from their folder), one of
    # them a file, and names relative to the working folder
    (tmp_path / "other").mkdir()
    for k in range(3):
        (tmp_path / "other" / f"n{k}.txt").write_bytes(f"other {k}\n".encode())
        names.append(str(tmp_path / "other" / f"n{k}.txt"))
        names.append(os.path.join(folder, f"a{k:02d}.txt"))
    names.append(os.path.join(folder, "a00.txt", "inside.txt"))
    names += ["docs/a01.txt", "./other/n1.txt", "docs//a02.txt", "docs/"]
    return names


def _packs(names: list[str], kernel: bool) -> list[tuple]:
    """Every pack the caller would read, the big file skipped as the caller streams it."""
    out = []
    k = 0
    while k < len(names):
        pack = corpus.read_text_pack(names, k, len(names), LIMIT, kernel=kernel)
        out.append(
            (
                bytes(pack.data),
                pack.offsets.tolist(),
                [str(e) for e in pack.errors],
                pack.read,
                pack.big,
                pack.disk_bytes,
            )
        )
        k += pack.read + pack.big
    return out


def test_kernel_and_python_read_the_same_packs_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = _files(tmp_path)
    quick = _packs(names, kernel=True)
    assert quick == _packs(names, kernel=False)
    errors = [e for pack in quick for e in pack[2]]
    assert any("c-missing.txt: no such file or folder" in e for e in errors)
    assert any("d-folder.txt" in e and "not a regular file" in e for e in errors)
    assert any("g-nul.txt" in e and "binary" in e for e in errors)
    assert any("h-bad.txt:2: invalid UTF-8 (byte 0xFF)" in e for e in errors)
    if hasattr(os, "mkfifo"):
        assert any("e-fifo.txt" in e and "FIFO" in e for e in errors)
    texts = b"".join(pack[0] for pack in quick)
    assert b"starts with a BOM" in texts and b"\xef\xbb\xbf" not in texts
    assert b"latin-1 name\n" in texts and b"last one\n" in texts
    assert any(pack[4] for pack in quick)  # the 1,000-byte file: left to the caller
    assert any("inside.txt" in e for e in errors) and errors[-1].startswith("docs/:")
    tail = "doc 1: naïve café word \nother 1\ndoc 2: naïve café word word \n"
    assert texts.endswith(tail.encode())


@pytest.mark.parametrize("kernel", [True, False])
def test_a_name_holding_a_nul_is_named_not_raised(tmp_path, kernel):
    good = tmp_path / "a.txt"
    good.write_bytes(b"fine\n")
    names = [str(good), str(tmp_path / "b\0.txt"), str(good)]
    pack = corpus.read_text_pack(names, 0, 3, 1 << 20, kernel=kernel)
    assert bytes(pack.data) == b"fine\nfine\n" and pack.read == 3
    assert [str(e) for e in pack.errors] == [f"{names[1]!r}: not a valid file name"]


def test_names_are_encoded_as_the_system_spells_them():
    names = ["a.txt", os.fsdecode(b"caf\xe9"), "東京"]
    encoded, starts = _libc_read.encode_names(names)
    assert encoded.tobytes() == b"a.txt\0caf\xe9\0" + "東京".encode() + b"\0"
    assert starts.tolist() == [0, 6, 11]
    assert _libc_read.encode_names(["a", "b\0c"]) is None
    assert _libc_read.encode_names([]) is None


def _many(tmp_path) -> tuple[object, list[bytes]]:
    folder = tmp_path / "many"
    texts = []
    for k in range(300):
        sub = folder / f"{k // 50:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        data = f"file {k}: the quick brown fox, naïve café {'ab ' * (k % 7)}\n".encode()
        (sub / f"{k:04d}.txt").write_bytes(data)
        texts.append(data)
    (folder / "00" / "0000.txt").write_bytes(b"\xef\xbb\xbfBOM " + texts[0])
    texts[0] = b"BOM " + texts[0]
    return folder, texts


def test_many_small_files_count_as_the_files_one_by_one(tmp_path, monkeypatch):
    folder, texts = _many(tmp_path)
    expected = count_texts([t.decode() for t in texts], TrainConfig()).to_dict()
    result = count_corpus([folder], TrainConfig(), workers=2)
    assert result.words.to_dict() == expected
    assert result.stats.documents == len(texts) and result.stats.skipped == []
    monkeypatch.setattr(_libc_read, "available", lambda: False)  # the Python fallback
    assert count_corpus([folder], TrainConfig(), workers=2).words.to_dict() == expected


LOAD = textwrap.dedent(
    """
    import os, sys
    from workbench.engine._native import libc_read as _libc_read
    from workbench.engine.corpus import reading as corpus
    names = sys.argv[1:]
    pack = corpus.read_text_pack(names, 0, len(names), 1 << 20)
    stats = _libc_read.read_files.stats
    print(bytes(pack.data).decode(), len(stats.cache_hits), len(stats.cache_misses))
    """
)


def test_the_kernel_loads_from_the_disk_cache_in_a_fresh_process(tmp_path):
    names = []
    for k in range(3):
        (tmp_path / f"{k}.txt").write_text(f"<{k}>")
        names.append(str(tmp_path / f"{k}.txt"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run() -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-W", "error", "-c", LOAD, *names],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip(), done.stderr

    assert run() == ("<0><1><2> 0 1", "")  # compiled, and written to the cache
    assert run() == ("<0><1><2> 1 0", "")  # loaded: nothing compiled, no "cannot cache"
