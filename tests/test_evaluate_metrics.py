"""Evaluation metrics: every count exact against independent encoders (tiktoken for OpenAI's
ranks, Hugging Face `tokenizers` for a tokenizer.json), every ratio following from the counts."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from workbench.engine.encode.tokenizer import Tokenizer

from tests._bpe_helpers import gpt2_tiktoken, naive_merges
from tests.evaluate_fixtures import fill_gpt2_cache, tiktoken_encoding
from workbench.engine import formats
from workbench.evaluate import metrics, references, report
from workbench.evaluate.run import Options, evaluate
from workbench.evaluate.specs import Candidate, resolve
from workbench.evaluate.texts import Doc, iter_docs

pytest.importorskip("tiktoken")


def _docs(corpora):
    """Three groups of real text, special tokens and odd whitespace included."""
    return [
        Doc((corpora / "taylorswift.txt").read_text("utf-8")[:60000], "en"),
        Doc((corpora / "german.txt").read_text("utf-8"), "de"),
        Doc((corpora / "tinystories_sample.txt").read_text("utf-8"), "stories"),
        Doc("naïve café 😀\r\n\n  12345678 <|endoftext|> x   \t", "de"),
    ]


def _check_counts(row: dict, docs: list[Doc], ids_of) -> None:
    """Every count of `row` (one tokenizer) against `ids_of(text)`, every ratio from counts."""
    for group in [*row["groups"], row["total"]]:
        mine = [d for d in docs if group["name"] in (d.group, "total")]
        ids = [i for d in mine for i in ids_of(d.text)]
        text_bytes = sum(len(d.text.encode()) for d in mine)
        assert group["documents"] == len(mine)
        assert group["bytes"] == text_bytes
        assert group["chars"] == sum(len(d.text) for d in mine)
        assert group["words"] == sum(len(d.text.split()) for d in mine)
        assert group["tokens"] == len(ids)
        assert group["distinct_tokens"] == len(set(ids))
        assert group["bytes_per_token"] == group["bytes"] / group["tokens"]
        assert group["chars_per_token"] == group["chars"] / group["tokens"]
        assert group["tokens_per_word"] == group["tokens"] / group["words"]
        assert group["vocab_used"] == len(set(ids)) / row["vocab_size"]
        counts = np.unique(np.array(ids), return_counts=True)[1] / len(ids)
        expected = math.log(np.sum(counts**2.5)) / (1 - 2.5) / math.log(row["vocab_size"])
        assert group["renyi_2_5"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_openai_counts_match_tiktoken(corpora, name):
    pytest.importorskip("bpe_openai")
    docs = _docs(corpora)
    enc = tiktoken_encoding(name)
    result = evaluate([resolve(name)], docs, Options(threads=2))
    row = result["tokenizers"][0]
    # tokens that exist (tiktoken's n_vocab is the largest id + 1: the specials leave gaps)
    assert row["vocab_size"] == len(enc._mergeable_ranks) + len(enc._special_tokens)
    _check_counts(row, docs, lambda t: enc.encode(t, allowed_special="all"))


def test_gpt2_from_tiktoken_cache_matches_tiktoken(corpora, tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(fill_gpt2_cache(corpora, tmp_path / "cache")))
    docs = _docs(corpora)
    enc = gpt2_tiktoken(corpora, tmp_path)
    result = evaluate([resolve("gpt2")], docs, Options(threads=3))
    row = result["tokenizers"][0]
    assert row["vocab_size"] == 50257
    _check_counts(row, docs, lambda t: enc.encode(t, allowed_special="all"))


def test_hf_tokenizer_json_counts_match_tokenizers(corpora, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    text = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:30000]
    tok = Tokenizer.from_merges(naive_merges(text, 150), "gpt2", ["<|endoftext|>"])
    formats.export(tok, "hf", tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    docs = _docs(corpora)
    result = evaluate([resolve(str(tmp_path / "tokenizer.json"))], docs, Options(threads=2))
    _check_counts(
        result["tokenizers"][0], docs, lambda t: hf.encode(t, add_special_tokens=False).ids
    )


def test_ratio_to_best_and_parity_follow_from_counts(corpora):
    docs = _docs(corpora)
    a = Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e"), (b" ", b"the")], "gpt2")
    b = Tokenizer.from_merges([], "gpt2")
    cands = [Candidate("a", "a", a, "file"), Candidate("b", "b", b, "file")]
    result = evaluate(cands, docs, Options(threads=1))
    rows = result["tokenizers"]
    for i, _name in enumerate(result["group_names"]):
        fewest = min(r["groups"][i]["tokens"] for r in rows)
        for r in rows:
            assert r["groups"][i]["ratio_to_best"] == r["groups"][i]["tokens"] / fewest
    for r in rows:
        per_byte = [g["tokens"] / g["bytes"] for g in r["groups"]]
        assert r["parity"]["max_over_min"] == pytest.approx(max(per_byte) / min(per_byte))
        pairs = sum(abs(x - y) for x in per_byte for y in per_byte)
        expected = pairs / (2 * len(per_byte) ** 2 * np.mean(per_byte))
        assert r["parity"]["gini"] == pytest.approx(expected)
    # bytes-only tokenizer: one token per byte, exactly
    assert rows[1]["total"]["tokens"] == rows[1]["total"]["bytes"]


def test_renyi_and_gini_known_values():
    assert metrics.renyi_efficiency(np.array([5, 5, 5, 5]), 4) == pytest.approx(1.0)
    assert metrics.renyi_efficiency(np.array([7, 0, 0, 0]), 4) == pytest.approx(0.0)
    assert metrics.renyi_efficiency(np.zeros(4, dtype=np.int64), 4) is None
    assert metrics.gini([1, 1, 1]) == pytest.approx(0.0)
    assert metrics.gini([0, 1]) == pytest.approx(0.5)
    assert metrics.gini([1, 2, 3, 4]) == pytest.approx(0.25)


def test_group_by_jsonl_field_and_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_text(
        "\n".join(json.dumps(r) for r in [
            {"text": "hello world", "lang": "en"},
            {"text": "hallo Welt", "lang": "de"},
            {"text": "no language"},
            {"text": "good day", "lang": "en"},
        ]) + "\n", "utf-8")  # fmt: skip
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "y.txt").write_text("plain text file", "utf-8")
    by_field = list(iter_docs([tmp_path], "field:lang"))
    assert [(d.group, d.text) for d in by_field] == [
        ("en", "hello world"), ("de", "hallo Welt"), ("(no field)", "no language"),
        ("en", "good day"), ("(no field)", "plain text file"),
    ]  # fmt: skip
    by_folder = {d.group for d in iter_docs([tmp_path], "folder")}
    assert by_folder == {str(tmp_path / "a"), str(tmp_path / "b")}


def test_reports_are_written_whole(tmp_path, corpora):
    docs = _docs(corpora)
    a = Tokenizer.from_merges([(b"t", b"h")], "gpt2")
    result = evaluate([Candidate("a", "a", a, "file")], docs, Options(curves=True, health=True))
    report.write_json(result, tmp_path / "r.json")
    report.write_csv(result, tmp_path / "r.csv")
    report.write_html(result, tmp_path / "r.html")
    data = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert {"name", "vocab_size", "groups"} <= set(data["tokenizers"][0])
    lines = (tmp_path / "r.csv").read_text("utf-8").splitlines()
    assert len(lines) == 1 + len(result["group_names"]) + 1
    assert "<svg" in (tmp_path / "r.html").read_text("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.html", "r.json"]


def test_missing_reference_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(references.ReferenceUnavailable, match="tiktoken"):
        references.load_reference("gpt2")
    monkeypatch.setattr(references, "_wheel_data", lambda name: None)
    with pytest.raises(references.ReferenceUnavailable, match="bpe-openai"):
        references.load_reference("o200k")


def test_evaluate_package_imports_no_qt():
    code = (
        "import sys, importlib, pkgutil, workbench.evaluate as p\n"
        "for i in pkgutil.walk_packages(p.__path__, 'workbench.evaluate.'):\n"
        "    importlib.import_module(i.name)\n"
        "print(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
