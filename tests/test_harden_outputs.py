"""Output folders: a bad `--out` fails before any work with one line; a format's files are
replaced together or not at all; files are created 0666 less the umask."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.formats import gpt2_files, outputs
from workbench.engine.formats.outputs import (
    OutputError,
    check_output_folder,
    write_formats_atomically,
)
from workbench.engine.patterns.regexes import resolve


def tokenizer(*pairs: tuple[bytes, bytes]) -> Tokenizer:
    return Tokenizer.from_merges(list(pairs), resolve("gpt2"), [])


A = tokenizer((b"a", b"b"), (b"ab", b"c"))
B = tokenizer((b"x", b"y"), (b"q", b"r"), (b"xy", b"z"))


@pytest.fixture
def corpus_file(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("some words to train on, some words\n", encoding="utf-8")
    return path


def _train(capsys, corpus: Path, out: Path, *more: str) -> tuple[int, str, str]:
    return run_cli(capsys, "train", str(corpus), "--vocab-size", "260", "--out", str(out),
                   "--no-db", *more)  # fmt: skip


# -- check_output_folder: before counting ------------------------------------------------------


def test_out_that_is_a_file(tmp_path, capsys):
    out = tmp_path / "taken"
    out.write_text("not a folder")
    # the corpus does not exist either: the out check comes first, before any reading
    code, _, err = _train(capsys, tmp_path / "missing.txt", out)
    assert_one_line_error(code, err, "taken", "is a file, not a folder")


def test_out_under_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code, _, err = _train(capsys, tmp_path / "missing.txt", tmp_path / "file" / "sub" / "out")
    assert_one_line_error(code, err, "cannot make this folder", "file is a file")


def test_out_not_writable(tmp_path, capsys, monkeypatch, corpus_file):
    def refuse(*args, **kwargs):  # root writes anywhere: refuse as for a user
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(outputs.tempfile, "mkdtemp", refuse)
    code, _, err = _train(capsys, corpus_file, tmp_path / "out")
    assert_one_line_error(code, err, "cannot write here", "Permission denied")


def test_check_output_folder_creates_nothing(tmp_path):
    out = tmp_path / "a" / "b"
    assert check_output_folder(out) == out
    assert list(tmp_path.iterdir()) == []
    out.mkdir(parents=True)
    check_output_folder(out)
    assert list(out.iterdir()) == []


def test_train_still_writes_every_format(tmp_path, capsys, corpus_file):
    code, out, err = _train(capsys, corpus_file, tmp_path / "out", "--format", "hf,tiktoken")
    assert code == 0, err
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        "bpe-workbench.json", "merges.txt", "special_tokens_map.json", "token_bytes.npy",
        "tokenizer.json", "tokenizer.tiktoken", "tokenizer.tiktoken.json",
        "tokenizer_config.json", "vocab.json",
    ]  # fmt: skip
    assert (
        formats.load(tmp_path / "out").merges
        == formats.load(tmp_path / "out" / "tokenizer.json").merges
    )


# -- staged writes ------------------------------------------------------------------------------


def _disk_full_on(name: str, monkeypatch) -> None:
    real = gpt2_files.write_atomic

    def write(path: Path, data):
        if path.name == name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(gpt2_files, "write_atomic", write)


@pytest.mark.parametrize("how", ["write_formats_atomically", "formats.export", "Tokenizer.export"])
def test_full_disk_replaces_nothing(tmp_path, monkeypatch, how):
    out = tmp_path / "out"
    write_formats_atomically(A, ["gpt2"], out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _disk_full_on(gpt2_files.MERGES, monkeypatch)  # vocab.json is written, merges.txt fails
    with pytest.raises(OutputError, match="disk is full.*nothing was replaced"):
        if how == "write_formats_atomically":
            write_formats_atomically(B, ["gpt2"], out)
        elif how == "formats.export":
            formats.export(B, "gpt2", out)
        else:
            B.export("gpt2", out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging folder left


def test_a_failing_format_leaves_the_others_untouched(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(Exception, match="unknown format"):
        write_formats_atomically(A, ["gpt2", "nope"], out)
    assert not out.exists() or list(out.iterdir()) == []


def test_two_writers_never_mix_their_files(tmp_path):
    out = tmp_path / "out"
    errors: list[BaseException] = []

    def keep_writing(tok: Tokenizer) -> None:
        try:
            for _ in range(25):
                write_formats_atomically(tok, ["gpt2", "hf"], out)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=keep_writing, args=(t,)) for t in (A, B)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    gpt2 = formats.load(out / "vocab.json").merges
    assert gpt2 in (A.merges, B.merges)
    assert formats.load(out / "tokenizer.json").merges in (A.merges, B.merges)
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "bpe-workbench.json", "merges.txt", "special_tokens_map.json", "token_bytes.npy",
        "tokenizer.json", "tokenizer_config.json", "vocab.json",
    ]  # fmt: skip


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_files_are_created_with_the_usual_mode(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        written = write_formats_atomically(A, ["gpt2", "hf", "tiktoken", "minbpe"], tmp_path)
    finally:
        os.umask(old)
    assert written and {p.stat().st_mode & 0o777 for p in written} == {mode}


def test_runs_export_to_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "taken").write_text("x")
    code, _, err = run_cli(capsys, "runs", "export", "1", "--format", "hf", "--out",
                           str(tmp_path / "taken"), "--db", str(tmp_path / "runs.db"))  # fmt: skip
    assert_one_line_error(code, err, "taken")
