"""`render` beyond its stated size (issue 33): more than 1 MB of text by default, or than
`--max-bytes N`, is refused in one line with exit status 1 before any drawing (24 MB once took
10 GB and 115 s), and nothing is written."""

from __future__ import annotations

import io
import sys

import pytest

from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.render import MAX_BYTES, size_refusal


@pytest.fixture
def tok_dir(tmp_path):
    Tokenizer.from_merges([(b"h", b"e")], "gpt2").export("gpt2", tmp_path / "tok")
    return tmp_path / "tok"


def _render(capsys, tok_dir, source, out, *extra) -> tuple[int, str, str]:
    return run_cli(capsys, "render", "--tokenizer", str(tok_dir), "--text-file", str(source),
                   "--out", str(out), *extra)  # fmt: skip


def test_a_text_over_the_default_size_is_refused(tmp_path, tok_dir, capsys):
    source = tmp_path / "big.txt"
    source.write_bytes(b"hello world\n" * (MAX_BYTES // 12 + 1))
    out = tmp_path / "view.html"
    code, _, err = _render(capsys, tok_dir, source, out)
    assert_one_line_error(code, err, "big.txt", "--max-bytes")
    assert code == 1 and not out.exists()


def test_max_bytes_sets_the_limit_both_ways(tmp_path, tok_dir, capsys):
    source = tmp_path / "t.txt"
    source.write_text("hello there " * 500, encoding="utf-8")  # 6,000 bytes
    out = tmp_path / "view.html"
    code, _, err = _render(capsys, tok_dir, source, out, "--max-bytes", "5000")
    assert_one_line_error(code, err, "6,000 bytes", "5,000")
    assert code == 1 and not out.exists()
    code, _, err = _render(capsys, tok_dir, source, out, "--max-bytes", "6000")
    assert code == 0 and err == "" and out.exists()
    code, _, err = _render(capsys, tok_dir, source, out, "--max-bytes", "0")
    assert_one_line_error(code, err, "--max-bytes must be 1 or more")


def test_standard_input_is_measured_too(tmp_path, tok_dir, capsys, monkeypatch):
    data = ("héllo " * 1000).encode()  # 7,000 bytes, 6,000 characters
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    out = tmp_path / "view.html"
    code, _, err = _render(capsys, tok_dir, "-", out, "--max-bytes", "6500")
    assert_one_line_error(code, err, "standard input", "7,000 bytes")
    assert code == 1 and not out.exists()


def test_size_refusal_says_when_and_why():
    assert size_refusal("a.txt", MAX_BYTES) is None
    assert size_refusal("a.txt", MAX_BYTES + 1).startswith("a.txt: 1,048,577 bytes of text")
