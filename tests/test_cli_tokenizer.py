"""The encode / export / render commands, run through `workbench.cli.main`."""

from __future__ import annotations

import re

import pytest

from workbench.cli import main
from workbench.engine import formats


@pytest.fixture
def gpt2_path(corpora):
    return str(corpora / "gpt2_vocab.json")


TEXT = "Hello wörld 👩‍👧 <|endoftext|>\n"


def test_encode_prints_ids(gpt2_path, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text(TEXT, "utf-8")
    assert main(["encode", "--tokenizer", gpt2_path, "--allow-special", str(source)]) == 0
    ids = [int(x) for x in capsys.readouterr().out.split()]
    assert ids == formats.load(gpt2_path).encode(TEXT, allowed_special="all")
    assert 50256 in ids
    assert main(["encode", "--tokenizer", gpt2_path, "--no-special", str(source)]) == 0
    assert "50256" not in capsys.readouterr().out.split()
    assert (
        main(["encode", "--tokenizer", gpt2_path, "--pieces", "--allow-special", str(source)]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(ids) and "<F0><9F>" in "".join(lines)


def test_encode_bad_input_is_one_line(tmp_path, capsys):
    (tmp_path / "tokenizer.json").write_text("{oops", "utf-8")
    # a bad tokenizer file is failed work (exit 1), not a usage error (2)
    assert main(["encode", "--tokenizer", str(tmp_path), str(tmp_path / "none.txt")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad JSON" in err


def test_export_then_encode(gpt2_path, tmp_path, capsys):
    out = tmp_path / "hf"
    assert main(["export", "--tokenizer", gpt2_path, "--format", "hf", "--out", str(out)]) == 0
    assert (out / "tokenizer.json").is_file()
    capsys.readouterr()
    assert main(["export", "--tokenizer", gpt2_path, "--format", "minbpe", "--out", str(out)]) == 1
    assert "minbpe needs" in capsys.readouterr().err


def test_render_html_groups_split_characters(gpt2_path, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(TEXT, "utf-8")
    out = tmp_path / "view.html"
    assert (
        main(
            ["render", "--tokenizer", gpt2_path, "--text-file", str(source), "--out", str(out)]
            + ["--allow-special"]
        )
        == 0
    )
    page = out.read_text("utf-8")
    groups = re.findall(r'data-ids="([\d ]+)"', page)
    ids = [int(x) for group in groups for x in group.split()]
    assert ids == formats.load(gpt2_path).encode(TEXT, allowed_special="all")
    assert any(" " in group for group in groups)  # the emoji: tokens sharing a character
    assert "\ufffd" not in page


def test_render_png(gpt2_path, tmp_path):
    pytest.importorskip("PySide6")
    source = tmp_path / "in.txt"
    source.write_text(TEXT * 3, "utf-8")
    out = tmp_path / "view.png"
    args = ["--tokenizer", gpt2_path, "--text-file", str(source), "--out", str(out)]
    assert main(["render", *args, "--allow-special"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    colours = {image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(image.height())}
    # The tokens' background colours, the text and the page: a blank or one-colour image fails.
    assert image.width() > 100 and len(colours) > 8


def test_render_refuses_other_suffix(gpt2_path, tmp_path, capsys):
    args = [
        "render",
        "--tokenizer",
        gpt2_path,
        "--text-file",
        "x",
        "--out",
        str(tmp_path / "a.gif"),
    ]
    assert main(args) == 2
    assert ".html or .png" in capsys.readouterr().err
