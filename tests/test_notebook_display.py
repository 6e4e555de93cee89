"""Notebook display: short reprs, the HTML repr (summary + coloured sample), progress bars that
show only where someone looks."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import workbench
from workbench import notebook_html, progress_api
from workbench.engine.encode.tokenizer import Tokenizer

DOCS = ["the cat sat on the mat, the end. " * 30, "a <b>bold</b> claim & more " * 20]


@pytest.fixture(scope="module")
def result():
    return workbench.train(DOCS, 300, special_tokens=["<b>&</b>"], progress=False)


def test_reprs_are_short(result) -> None:
    shown = repr(result)
    assert len(shown) < 200
    assert shown.startswith("TrainResult(") and f"{len(result.merges)} merges" in shown
    assert "documents" in shown and "stopped:" in shown
    assert repr(result.tokenizer).startswith("Tokenizer(") and len(repr(result.tokenizer)) < 100


def test_html_repr_shows_the_summary_and_the_sample_escaped(result) -> None:
    tok: Tokenizer = result.tokenizer
    page = tok._repr_html_()
    assert "<b>&</b>" not in page and html.escape("<b>&</b>") in page
    assert "gpt2" in page and f"{len(tok.merges):,}" in page
    ids = re.search(r"data-all-ids='([0-9 ]*)'", page)
    assert ids is not None
    expected = tok.encode(notebook_html.SAMPLE, allowed_special="all")
    assert list(map(int, ids.group(1).split())) == expected
    assert page.count("<span") >= len(notebook_html.SAMPLE.split())
    assert "border-radius" in page  # the spans' look travels with them (no <style> in a cell)
    full = result._repr_html_()
    assert "TrainResult" in full and "documents" in full and "stopped" in full
    assert len(full) < 40_000


def test_a_custom_pattern_is_shown_escaped_and_short() -> None:
    tok = Tokenizer.from_merges([(b"a", b"b")], r"<x>|\p{L}+|\s+|\S" + "|a" * 40)
    page = tok._repr_html_()
    assert "&lt;x&gt;" in page and "<x>" not in page and "…" in page


def test_progress_is_silent_where_nobody_looks(capsys) -> None:
    workbench.train(DOCS, 280, progress=True)  # pytest's captured stderr is no terminal
    assert capsys.readouterr().err == ""


def test_progress_bars_count_and_merge(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(progress_api, "visible", lambda: True)
    seen = []
    done = workbench.train(DOCS, 290, progress=True, on_merge_batch=seen.append)
    err = capsys.readouterr().err
    assert "counting" in err and "2/2" in err and "docs" in err
    made = len(done.merges)  # fewer than the 34 asked: the corpus ran out of pairs
    assert made < 34 and " 0/34 " in err  # the estimate at the start
    assert re.search(rf"merging: 100%.* {made}/{made} ", err), err[-300:]  # full at the end
    assert sum(map(len, seen)) == made  # the listener still gets every batch
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(DOCS), encoding="utf-8")
    workbench.train(corpus, 270, progress=True)
    assert re.search(r"counting: .*B", capsys.readouterr().err)
    workbench.train(DOCS, 270, progress=False)
    assert capsys.readouterr().err == ""
