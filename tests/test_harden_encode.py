"""Encoding untrusted text (issue 11: items 7, 8, 14): special tokens only when allowed, as
tiktoken; text read as bytes, CRLF kept, invalid UTF-8 an error, never U+FFFD."""

from __future__ import annotations

import io
import re
import sys

import pytest
import tiktoken
from workbench.engine.encode.validation import DisallowedSpecialError, Tokenizer
from workbench.engine.patterns.regexes import PRESETS

from workbench.cli import main
from workbench.engine import formats

MERGES = [(b"a", b"b"), (b"\r", b"\n"), (b" ", b"ab"), (b"h", b"e"), (b"<", b"|")]
EOT = "<|endoftext|>"
TEXT = "he ab\r\nab <|endoftext|> he\r\n"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_merges(MERGES, "gpt2", [EOT, "<|fim|>"])


@pytest.fixture(scope="module")
def reference(tok: Tokenizer) -> tiktoken.Encoding:
    """tiktoken with the same ranks (trainer ids are ranks), pattern and specials."""
    ranks = {token: tid for tid, token in tok.vocab.items()}
    return tiktoken.Encoding(
        "small", pat_str=PRESETS["gpt2"], mergeable_ranks=ranks, special_tokens=tok.special_tokens
    )


def test_specials_in_text_follow_tiktoken(tok, reference):
    with pytest.raises(DisallowedSpecialError, match=r"'<\|endoftext\|>' \(at character 10\)"):
        tok.encode(TEXT)
    with pytest.raises(ValueError):  # tiktoken raises ValueError: so may callers catch ours
        reference.encode(TEXT)
    for kwargs in [
        {"allowed_special": "all"},
        {"allowed_special": {EOT}},
        {"allowed_special": set(), "disallowed_special": ()},
        {"allowed_special": {"<|fim|>"}, "disallowed_special": ()},
    ]:
        assert tok.encode(TEXT, **kwargs) == reference.encode(TEXT, **kwargs), kwargs
    assert tok.encode_ordinary(TEXT) == reference.encode_ordinary(TEXT)
    assert 256 + len(MERGES) in tok.encode(TEXT, allowed_special="all")
    assert 256 + len(MERGES) not in tok.encode_ordinary(TEXT)
    # Only the disallowed ones count: an allowed special elsewhere is fine.
    with pytest.raises(DisallowedSpecialError, match="fim"):
        tok.encode(f"{EOT} <|fim|>", allowed_special={EOT})
    # Every encode method follows the same rule.
    for method in (tok.encode_array, tok.encode_with_spans):
        with pytest.raises(DisallowedSpecialError):
            method(TEXT)
    with pytest.raises(DisallowedSpecialError):
        tok.encode_batch([TEXT, "ab"])
    assert tok.encode_batch([TEXT], disallowed_special=()) == [tok.encode_ordinary(TEXT)]


def test_loading_gpt2_files_does_not_invent_specials(tmp_path, tok):
    tok.export("gpt2", tmp_path)
    back = formats.load(tmp_path)
    assert back.special_tokens == tok.special_tokens
    assert back.encode_ordinary("<s> [CLS]") == tok.encode_ordinary("<s> [CLS]")


def cli_encode(capsys, tok_dir, *args: str) -> tuple[int, str, str]:
    code = main(["encode", "--tokenizer", str(tok_dir), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tok_dir(tmp_path, tok):
    tok.export("gpt2", tmp_path / "tok")
    return tmp_path / "tok"


def test_cli_encode_refuses_specials_unless_asked(tmp_path, tok, tok_dir, capsys):
    source = tmp_path / "in.txt"
    source.write_bytes(TEXT.encode())
    code, out, err = cli_encode(capsys, tok_dir, str(source))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(source) in err and "--allow-special" in err and "--no-special" in err
    code, out, _ = cli_encode(capsys, tok_dir, "--allow-special", str(source))
    assert code == 0 and [int(x) for x in out.split()] == tok.encode(TEXT, allowed_special="all")
    code, out, _ = cli_encode(capsys, tok_dir, "--no-special", str(source))
    assert code == 0 and [int(x) for x in out.split()] == tok.encode_ordinary(TEXT)
    with pytest.raises(SystemExit):  # argparse: the two options exclude each other
        main(["encode", "--tokenizer", str(tok_dir), "--allow-special", "--no-special"])


def stdin_bytes(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_crlf_file_and_stdin_give_tiktokens_ids(
    tmp_path, tok, reference, tok_dir, capsys, monkeypatch
):
    data = TEXT.encode()
    assert b"\r\n" in data
    source = tmp_path / "crlf.txt"
    source.write_bytes(data)
    want = reference.encode(TEXT, allowed_special="all")
    _, from_file, _ = cli_encode(capsys, tok_dir, "--allow-special", str(source))
    stdin_bytes(monkeypatch, data)
    _, from_stdin, _ = cli_encode(capsys, tok_dir, "--allow-special", "-")
    assert [int(x) for x in from_file.split()] == want
    assert from_stdin == from_file
    assert tok.encode_ordinary("\r\n")[0] == 257  # the CR LF merge, lost if CRs were dropped


def test_render_reads_bytes_too(tmp_path, tok, tok_dir):
    source = tmp_path / "crlf.txt"
    source.write_bytes(b"ab\r\r\nab")
    out = tmp_path / "view.html"
    argv = ["render", "--tokenizer", str(tok_dir), "--text-file", str(source), "--out", str(out)]
    assert main(argv) == 0
    groups = re.findall(r'data-ids="([\d ]+)"', out.read_text("utf-8"))
    assert [int(x) for g in groups for x in g.split()] == tok.encode("ab\r\r\nab")
    assert tok.encode("ab\r\r\nab").count(13) == 2  # both CRs kept


@pytest.mark.parametrize("data", [b"ab\xff", b"\xc3", b"ok \xed\xa0\x80", b"\x80abc"])
def test_invalid_utf8_is_an_error_not_replacement(tmp_path, tok_dir, capsys, monkeypatch, data):
    source = tmp_path / "bad.txt"
    source.write_bytes(data)
    code, out, err = cli_encode(capsys, tok_dir, str(source))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(source) in err and "not UTF-8" in err and "at byte" in err
    stdin_bytes(monkeypatch, data)
    code, out, err = cli_encode(capsys, tok_dir, "-")
    assert code == 2 and "standard input: is not UTF-8" in err
    out_html = tmp_path / "x.html"
    args = ["--tokenizer", str(tok_dir), "--text-file", str(source), "--out", str(out_html)]
    assert main(["render", *args]) == 2
    assert "not UTF-8" in capsys.readouterr().err and not out_html.exists()
