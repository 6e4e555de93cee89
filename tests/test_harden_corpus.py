"""Bad corpus inputs get one clear line naming the file (or the correct result), never a
traceback or a hang: special tokens across the reader's chunk ends, broken compressed files,
links, FIFOs, unreadable folders, hostile JSONL, and many small files read like one."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from workbench.engine._native import libc_read as _libc_read
from workbench.engine.pretokenize.counting import count_corpus, count_texts
from workbench.engine.pretokenize.scan import count as scan_count

from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import reading as corpus
from workbench.engine.errors import CorpusError
from workbench.engine.pretokenize import counting as pre

SPECIAL = "<|end of text|>"


@pytest.fixture(params=["auto", "regex"])
def pretokenizer(request) -> str:
    """Both paths: the Numba scanner (presets) and the regex package."""
    return request.param


def counted(paths, pretokenizer: str, **settings) -> dict[bytes, int]:
    return count_corpus(paths, TrainConfig(pretokenizer=pretokenizer, **settings)).words.to_dict()


def expected(texts: list[str], **settings) -> dict[bytes, int]:
    return count_texts(texts, TrainConfig(**settings)).to_dict()


# -- item 5: a special token across the reader's chunk end ------------------------------------


def test_special_across_the_4mib_read_boundary(tmp_path, pretokenizer):
    text = "x" * (4 * 2**20 - 6) + SPECIAL + " tail\n"
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8")
    settings = {"special_tokens": (SPECIAL,)}
    got = counted([path], pretokenizer, **settings)
    assert got == expected([text], **settings)
    assert b"<|" not in got and b"end" not in got


@pytest.mark.parametrize("shift", range(0, 24, 3))
def test_special_across_small_chunks(tmp_path, monkeypatch, pretokenizer, shift):
    """Chunks forced small: the special sits across a chunk end at many offsets."""
    monkeypatch.setattr(corpus, "CHUNK_CHARS", 64)
    monkeypatch.setattr(corpus, "READ_BYTES", 64)
    monkeypatch.setattr(scan_count, "UNIT_BYTES", 64)
    monkeypatch.setattr(pre, "BATCH_CHARS", 64)
    text = ("ab " * 7 + "y" * shift + SPECIAL + " more words\n") * 20
    path = tmp_path / "chunks.txt"
    path.write_text(text, encoding="utf-8")
    settings = {"special_tokens": (SPECIAL, "<|end")}
    assert counted([path], pretokenizer, **settings) == expected([text], **settings)


# -- item 10: compressed files, links, FIFOs, folders ------------------------------------------


def _gzip_bytes(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"))


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: _gzip_bytes("hello " * 500)[:40], "truncated"),  # ends early
        (lambda: b"\x1f\x8b\x08\x00" + b"\0" * 6 + b"\xff" * 64, "corrupt"),  # zlib.error
        (lambda: b"\x1f\x8b" + b"not gzip at all", "cannot read"),
    ],
    ids=["truncated", "corrupt-deflate", "bad-header"],
)
def test_broken_gzip(tmp_path, pretokenizer, make, words):
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(make())
    with pytest.raises(CorpusError, match=words) as info:
        counted([bad], pretokenizer)
    assert "bad.txt.gz" in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "good.txt").write_text("good words", encoding="utf-8")
    result = count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer, on_bad_file="skip"))
    assert result.words.to_dict() == expected(["good words"])
    assert len(result.stats.skipped) == 1 and "bad.txt.gz" in result.stats.skipped[0]


def test_corrupt_gzip_on_the_command_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"\0" * 6 + b"\xff" * 64)
    code, _, err = run_cli(capsys, "train", str(bad), "--vocab-size", "300", "--out",
                           str(tmp_path / "out"), "--no-db")  # fmt: skip
    assert_one_line_error(code, err, "bad.jsonl.gz")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_bad_link_inside_a_folder(tmp_path, pretokenizer, kind):
    (tmp_path / "good.txt").write_text("good words", encoding="utf-8")
    link = tmp_path / "link.txt"
    if kind == "dangling":
        link.symlink_to(tmp_path / "gone.txt")
    else:
        link.symlink_to(link)
    with pytest.raises(CorpusError, match="link") as info:
        counted([tmp_path], pretokenizer)
    assert "link.txt" in str(info.value)
    result = count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer, on_bad_file="skip"))
    assert result.words.to_dict() == expected(["good words"])
    assert any("link.txt" in s for s in result.stats.skipped)


def test_dangling_link_named_directly(tmp_path, capsys):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "gone.txt")
    code, _, err = run_cli(capsys, "train", str(link), "--vocab-size", "300", "--out",
                           str(tmp_path / "out"), "--no-db")  # fmt: skip
    assert_one_line_error(code, err, "link.txt", "broken symbolic link")


def test_linked_folders_are_followed_and_loops_end(tmp_path, pretokenizer):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("linked words", encoding="utf-8")
    top = tmp_path / "top"
    top.mkdir()
    (top / "b.txt").write_text("top words", encoding="utf-8")
    (top / "via").symlink_to(real, target_is_directory=True)
    (real / "back").symlink_to(top, target_is_directory=True)  # a loop: top/via/back -> top
    result = count_corpus([top], TrainConfig(pretokenizer=pretokenizer))
    assert result.words.to_dict() == expected(["top words", "linked words"])
    assert result.stats.files == 2
    assert any("already read" in s for s in result.stats.skipped)


def _cli_in_subprocess(*args: str) -> subprocess.CompletedProcess:
    # A FIFO that were opened for reading would block for ever: a subprocess with a time limit
    # turns a regression into a failure instead of a hung test run.
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_named_directly_is_a_clear_error(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    proc = _cli_in_subprocess("train", str(fifo), "--vocab-size", "300", "--out",
                              str(tmp_path / "out"), "--no-db")  # fmt: skip
    assert_one_line_error(proc.returncode, proc.stderr, "pipe.txt", "FIFO")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_inside_a_folder_is_passed_over_with_a_note(tmp_path, pretokenizer):
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "good.txt").write_text("good words", encoding="utf-8")
    proc = _cli_in_subprocess(
        "train", str(tmp_path), "--vocab-size", "260", "--out", str(tmp_path / "out"),
        "--no-db", *(["--regex-pretokenizer"] if pretokenizer == "regex" else []),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pipe.txt" in proc.stdout and "FIFO" in proc.stdout


def test_fifo_put_in_a_files_place_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(CorpusError, match="FIFO"):
        corpus.read_whole(fifo)
    with pytest.raises(CorpusError, match="FIFO"):
        list(corpus.read_chunks(fifo))


def test_unreadable_folder_inside_a_folder(tmp_path, monkeypatch, pretokenizer):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "secret.txt").write_text("hidden words", encoding="utf-8")
    (tmp_path / "good.txt").write_text("good words", encoding="utf-8")
    real_scandir = os.scandir

    def scandir(path):  # root reads every folder: refuse this one as a user's would be
        if os.fspath(path) == os.fspath(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(corpus.os, "scandir", scandir)
    with pytest.raises(CorpusError, match="cannot list the folder: Permission denied"):
        counted([tmp_path], pretokenizer)
    result = count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer, on_bad_file="skip"))
    assert result.words.to_dict() == expected(["good words"])
    assert any("locked" in s for s in result.stats.skipped)


def test_unreadable_file(tmp_path, monkeypatch, pretokenizer):
    path = tmp_path / "locked.txt"
    path.write_text("words", encoding="utf-8")
    real_open = os.open

    def refuse(p, flags, *args, **kwargs):
        if os.fspath(p) == os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real_open(p, flags, *args, **kwargs)

    monkeypatch.setattr(corpus.os, "open", refuse)
    # The packs' libc kernel opens files without os.open: read in Python, where the refusal is
    # met (a file the kernel cannot open is read again in Python, so the message is the same).
    monkeypatch.setattr(_libc_read, "available", lambda: False)
    with pytest.raises(CorpusError, match="locked.txt: cannot read: Permission denied"):
        counted([path], pretokenizer)


# -- item 10: hostile JSONL -----------------------------------------------------------------


def _jsonl(tmp_path, *lines: str):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"text": "a\\ud800b"}', ":2: the text holds a lone surrogate (\\ud800)"),
        ('{"text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", ":2: JSON nested"),
        ("[" * 100_000, ":2:"),
    ],
    ids=["surrogate", "nested", "nested-unclosed"],
)
def test_hostile_jsonl_lines(tmp_path, pretokenizer, line, words):
    path = _jsonl(tmp_path, json.dumps({"text": "fine words"}), line)
    with pytest.raises(CorpusError) as info:
        counted([path], pretokenizer)
    assert words in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "good.txt").write_text("good words", encoding="utf-8")
    result = count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer, on_bad_file="skip"))
    assert result.words.to_dict() == expected(["good words"])  # the bad file is left out whole
    assert result.stats.skipped and "d.jsonl:2" in result.stats.skipped[0]


def test_surrogate_pair_escapes_are_fine(tmp_path, pretokenizer):
    path = _jsonl(tmp_path, '{"text": "smile \\ud83d\\ude00 now"}')
    assert counted([path], pretokenizer) == expected(["smile \U0001f600 now"])


def test_a_number_of_5000_digits_beside_the_text_is_fine(tmp_path, pretokenizer):
    path = _jsonl(tmp_path, '{"id": ' + "7" * 5000 + ', "score": 1e999, "text": "some words"}')
    assert counted([path], pretokenizer) == expected(["some words"])


def test_jsonl_on_the_command_line(tmp_path, capsys):
    path = _jsonl(tmp_path, '{"text": "\\udfff"}')
    code, _, err = run_cli(capsys, "train", str(path), "--vocab-size", "300", "--out",
                           str(tmp_path / "out"), "--no-db", "--skip-bad-files")  # fmt: skip
    assert_one_line_error(code, err, "d.jsonl:1", "surrogate")


# -- item 10: a lone bad file says why ------------------------------------------------------


@pytest.mark.parametrize(
    "content, words",
    [(b"\x00\x01binary", "binary"), (b"fine\nbad \xff\n", "bad.txt:2: invalid UTF-8")],
)
def test_a_lone_skipped_file_keeps_its_reason(tmp_path, pretokenizer, content, words):
    """The window skips bad files; with nothing left the message must still say why."""
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    with pytest.raises(CorpusError, match="no text to train on") as info:
        counted([bad], pretokenizer, on_bad_file="skip")
    assert words in str(info.value) and "\n" not in str(info.value)


def test_truncated_utf8_at_the_end_of_a_file(tmp_path, pretokenizer, monkeypatch):
    monkeypatch.setattr(pre, "BATCH_CHARS", 4)  # the streaming reader, not the whole-file one
    monkeypatch.setattr(scan_count, "UNIT_BYTES", 4)
    path = tmp_path / "cut.txt"
    path.write_bytes(b"words and more\n\xc3")
    with pytest.raises(CorpusError, match="cut.txt:2: invalid UTF-8"):
        counted([path], pretokenizer)


# -- item 10: many small files ----------------------------------------------------------------


def test_many_small_files_count_as_separate_documents(tmp_path, pretokenizer, monkeypatch):
    """Small files are packed into shared units: documents must stay apart, specials too."""
    monkeypatch.setattr(scan_count, "UNIT_BYTES", 200)
    monkeypatch.setattr(pre, "BATCH_CHARS", 200)
    texts = [f"doc{i} ends with a letter{'<s>' if i % 3 else ''}x{i % 7}" for i in range(300)]
    texts += ["", "\ufeffbom text", "  spaces  "]
    for i, text in enumerate(texts):
        (tmp_path / f"{i:04d}.txt").write_text(text, encoding="utf-8")
    (tmp_path / "0150.txt").write_bytes(b"bad \xff")
    result = count_corpus(
        [tmp_path],
        TrainConfig(pretokenizer=pretokenizer, special_tokens=("<s>",), on_bad_file="skip"),
    )
    kept = [t.removeprefix("\ufeff") for i, t in enumerate(texts) if i != 150]
    assert result.words.to_dict() == expected(kept, special_tokens=("<s>",))
    assert result.stats.documents == len(kept)
    assert [s.split(":")[0].endswith("0150.txt") for s in result.stats.skipped] == [True]


def test_counts_equal_a_counter_of_regex_pieces(tmp_path):
    """A guard on `expected` itself: count_texts is regex.findall per stretch."""
    assert expected(["a b a"]) == dict(Counter({b"a": 1, b" b": 1, b" a": 1}))
