"""`encode` streams its files (issue 33, item 1): ids are printed as the file is read, in parts
cut where no pre-token or special token spans the cut, so memory does not grow with the file;
the ids, errors and "nothing printed before a bad file" stay as when it read files whole."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.cli import _text_stream, main
from workbench.engine import formats
from workbench.engine.errors import WorkbenchError

EOT = "<|endoftext|>"
# Multi-byte characters, CRLF, digits and specials: every kind of cut and split character.
UNIT = "Hello wörld 👩‍👧 naïve 日本語 42, 1999.\r\n  the<|endoftext|>fox\tjumps\n"


@pytest.fixture(scope="module")
def gpt2_path(corpora) -> str:
    return str(corpora / "gpt2_vocab.json")


@pytest.fixture(scope="module")
def tokenizer(gpt2_path):
    return formats.load(gpt2_path)


def test_chunks_decode_split_characters_and_name_the_byte(tmp_path):
    text = UNIT * 50
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())
    for size in (1, 2, 3, 5, 7, 4096):  # every way a character can be split between reads
        assert "".join(_text_stream.text_chunks(str(path), size)) == text
    bad = text.encode() + b"ok \xe9t\xc3"
    path.write_bytes(bad)
    with pytest.raises(WorkbenchError, match=rf"invalid byte 0xE9 at byte {len(bad) - 3}\)"):
        "".join(_text_stream.text_chunks(str(path), 5))
    path.write_bytes(text.encode() + b"\xf0\x9f")  # cut short at the end
    with pytest.raises(WorkbenchError, match=rf"0xF0 at byte {len(text.encode())}\)"):
        "".join(_text_stream.text_chunks(str(path), 5))


def test_streamed_ids_are_the_whole_texts(gpt2_path, tokenizer, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_text_stream, "CHUNK_BYTES", 4096)  # many parts from a small file
    text = UNIT * 400  # ~28 KB: seven reads
    path = tmp_path / "in.txt"
    path.write_bytes(text.encode())
    assert main(["encode", "--tokenizer", gpt2_path, "--allow-special", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert [int(x) for x in out.split()] == tokenizer.encode(text, allowed_special="all")
    assert main(["encode", "--tokenizer", gpt2_path, "--no-special", str(path)]) == 0
    assert [int(x) for x in capsys.readouterr().out.split()] == tokenizer.encode(
        text, disallowed_special=()
    )
    args = ["encode", "--tokenizer", gpt2_path, "--pieces", "--allow-special", str(path)]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == tokenizer.encode(
        text, allowed_special="all"
    )


def test_empty_file_prints_an_empty_line(gpt2_path, tmp_path, capsys):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert main(["encode", "--tokenizer", gpt2_path, str(path)]) == 0
    assert capsys.readouterr().out == "\n"


def test_bad_second_file_prints_nothing(gpt2_path, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_text_stream, "CHUNK_BYTES", 4096)
    good = tmp_path / "good.txt"
    good.write_text("plain words\n", "utf-8")
    clean = UNIT.replace(EOT, "") * 300
    refused = tmp_path / "special.txt"
    refused.write_bytes((clean + EOT + " tail").encode())
    assert main(["encode", "--tokenizer", gpt2_path, str(good), str(refused)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"special.txt: contains the special token {EOT!r} (at character {len(clean)})" in (
        captured.err
    )
    invalid = tmp_path / "invalid.txt"
    invalid.write_bytes(clean.encode() + b"\xff rest")
    assert main(["encode", "--tokenizer", gpt2_path, str(good), str(invalid)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"invalid byte 0xFF at byte {len(clean.encode())})" in captured.err
    assert captured.err.count("\n") == 1


def test_standard_input_streams(gpt2_path, tokenizer, capsys, monkeypatch):
    monkeypatch.setattr(_text_stream, "CHUNK_BYTES", 4096)
    text = UNIT * 200
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["encode", "--tokenizer", gpt2_path, "--allow-special", "-"]) == 0
    assert [int(x) for x in capsys.readouterr().out.split()] == tokenizer.encode(
        text, allowed_special="all"
    )
    clean = UNIT.replace(EOT, "") * 200
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((clean + EOT).encode())))
    assert main(["encode", "--tokenizer", gpt2_path, "-"]) == 1
    assert f"(at character {len(clean)})" in capsys.readouterr().err


# The child warms up on a small text (tokenizer tables, compiled kernels: Numba reserves far more
# address space than it uses, so no fixed cap fits every machine), then caps its address space
# at what it has reserved so far plus EXTRA and encodes a file that reading whole would need
# several times EXTRA for (the text, its str, the id list: ~30x the file).
EXTRA_MB = 300
FILE_MB = 24
CHILD = textwrap.dedent(
    """
    import os, resource, sys
    from workbench.cli import main
    tokenizer, small, big = sys.argv[1:4]
    out = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the ids: only their count is checked
    assert main(["encode", "--threads", "1", "--tokenizer", tokenizer, small]) == 0
    size = next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith("VmPeak:")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + {extra} * 2**20, resource.RLIM_INFINITY))
    code = main(["encode", "--threads", "1", "--tokenizer", tokenizer, big])
    sys.stdout.flush()
    os.write(out, str(code).encode())
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_encode_memory_does_not_grow_with_the_file(gpt2_path, tmp_path):
    block = (UNIT.replace(EOT, "") * 2000).encode()
    small = tmp_path / "small.txt"
    small.write_bytes(block)
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        for _ in range((FILE_MB << 20) // len(block) + 1):
            f.write(block)
    child = CHILD.replace("{extra}", str(EXTRA_MB))
    done = subprocess.run(
        [sys.executable, "-c", child, gpt2_path, str(small), str(big)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout == "0", done.stderr[-2000:]
