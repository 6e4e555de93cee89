"""Exports load in the library that owns the format and encode like us; bad files fail clearly."""

from __future__ import annotations

import base64
import json

import pytest
from _bpe_helpers import EXAMPLES, naive_merges
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError, WorkbenchError
from workbench.engine.patterns.regexes import CL100K, GPT2

FORMATS = ["hf", "gpt2", "tiktoken", "minbpe"]
SAMPLE = "Hello world! It's 2024: 12345678 cafés, 日本語, 👩‍👩‍👧\r\n\n  trailing   <|endoftext|> x"


@pytest.fixture(scope="module")
def gpt2(corpora):
    return formats.load(corpora / "gpt2_vocab.json")


@pytest.fixture(scope="module")
def trained(corpora):
    text = (corpora / "taylorswift.txt").read_text("utf-8")[:20000]
    return Tokenizer.from_merges(naive_merges(text, 150, CL100K), CL100K, ["<|endoftext|>"])


@pytest.fixture(scope="module")
def real_text(corpora):
    return (corpora / "corpus.en").read_text("utf-8")[:40000] + SAMPLE


def hf_ids(path, text):
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(path)).encode(text).ids


def tiktoken_ids(folder, tok, text):
    import tiktoken
    import tiktoken.load

    ranks = tiktoken.load.load_tiktoken_bpe(str(folder / "tokenizer.tiktoken"))
    side = json.loads((folder / "tokenizer.tiktoken.json").read_text("utf-8"))
    enc = tiktoken.Encoding(
        "x", pat_str=side["pattern"], mergeable_ranks=ranks, special_tokens=side["special_tokens"]
    )
    return enc.encode(text, allowed_special="all")


@pytest.mark.parametrize("which", ["gpt2", "trained"])
def test_exports_round_trip(which, request, tmp_path, real_text, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    tok = request.getfixturevalue(which)
    ours = tok.encode(real_text, allowed_special="all")
    for fmt in FORMATS:
        folder = tmp_path / fmt
        if fmt == "minbpe" and which == "gpt2":
            with pytest.raises(TokenizerError, match="minbpe needs ids 0..255"):
                formats.export(tok, fmt, folder)
            continue
        written = formats.export(tok, fmt, folder)
        assert all(p.is_file() for p in written)
        assert not list(folder.glob("*.tmp"))
        back = formats.load(folder, tok.pattern)  # GPT-2 files carry no pattern
        assert back == tok, fmt
        assert back.encode(real_text, allowed_special="all") == ours
        again = formats.export(back, fmt, tmp_path / f"{fmt}2")[0]
        assert formats.load(again, tok.pattern) == tok
    assert hf_ids(tmp_path / "hf" / "tokenizer.json", real_text) == ours
    assert tiktoken_ids(tmp_path / "tiktoken", tok, real_text) == ours


def test_gpt2_export_passes_data_gym(gpt2, tmp_path):
    import tiktoken.load

    formats.export(gpt2, "gpt2", tmp_path)
    lines = (tmp_path / "merges.txt").read_text("utf-8").split("\n")
    assert lines[0] == "#version: 0.2" and lines[-1] == "" and "" not in lines[1:-1]
    ranks = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        str(tmp_path / "merges.txt"), str(tmp_path / "vocab.json")
    )
    assert len(ranks) == 50256


def test_gpt2_files_load_in_hugging_face(trained, tmp_path, real_text):
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers

    formats.export(trained, "gpt2", tmp_path)
    hf = HF(models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(__import__("tokenizers").Regex(CL100K), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    text = real_text.replace("<|endoftext|>", "")
    assert hf.encode(text).ids == trained.encode(text, allowed_special="all")


def test_transformers_loads_the_hf_export(gpt2, tmp_path, real_text):
    transformers = pytest.importorskip("transformers")
    formats.export(gpt2, "hf", tmp_path)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    assert fast(real_text)["input_ids"] == gpt2.encode(real_text, allowed_special="all")
    assert fast.decode(gpt2.encode(real_text, allowed_special="all")) == real_text


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=40) | st.sampled_from([SAMPLE, "1" * 50, " \r\n \t\u00a0\u3000 "]))
def test_hf_export_matches_on_generated_text(gpt2, tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / "hf_gen" / "tokenizer.json"
    if not path.is_file():
        formats.export(gpt2, "hf", path.parent)
    import tokenizers

    hf = _HF_CACHE.setdefault(str(path), tokenizers.Tokenizer.from_file(str(path)))
    assert hf.encode(text).ids == gpt2.encode(text, allowed_special="all")
    assert hf.decode(gpt2.encode(text, allowed_special="all"), skip_special_tokens=False) == text


_HF_CACHE: dict = {}


def test_reused_id_exports(tmp_path):
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"bc", b"d"), (b"a", b"bc")]
    tok = Tokenizer.from_merges(merges, GPT2)
    with pytest.raises(TokenizerError, match="minbpe needs merge 4"):
        formats.export(tok, "minbpe", tmp_path)
    formats.export(tok, "hf", tmp_path / "hf")
    assert hf_ids(tmp_path / "hf" / "tokenizer.json", "abcd xabcd") == tok.encode("abcd xabcd")
    back = formats.load(tmp_path / "hf")
    assert back.vocab == tok.vocab and back.encode("abcd abc") == tok.encode("abcd abc")


def _gpt2_pair(tmp_path, vocab, merges_text):
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), "utf-8")
    (tmp_path / "merges.txt").write_text(merges_text, "utf-8")
    return tmp_path


BYTES = {chr(c): c for c in range(33, 127)}  # not a full alphabet: used to trip the checks


def _full_vocab():
    from workbench.engine.byte_mapping import bytes_to_unicode

    return {ch: b for b, ch in bytes_to_unicode().items()}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            lambda p: _gpt2_pair(p, {**_full_vocab(), "ab": 256}, "#version: 0.2\na b\nx yz\n"),
            "'yz'",
        ),
        (lambda p: _gpt2_pair(p, BYTES, "#version: 0.2\n"), "single byte 0x00 is missing"),
        (lambda p: _gpt2_pair(p, {**_full_vocab(), "ab": 256}, "#version: 0.2\n"), "no merge"),
        (lambda p: _gpt2_pair(p, _full_vocab(), "#version: 0.2\na\n"), "is not 'left right'"),
        (lambda p: _gpt2_pair(p, _full_vocab(), "#version: 0.2\n\na b\n"), "is blank"),
        (lambda p: (p / "tokenizer.json").write_text('{"model": {', "utf-8"), "bad JSON"),
        (
            lambda p: (p / "tokenizer.json").write_text(
                json.dumps({"model": {"type": "Unigram", "vocab": []}}), "utf-8"
            ),
            "not BPE",
        ),
        (lambda p: (p / "x.tiktoken").write_text("YQ== 0\nYg== 0\n", "utf-8"), "rank 0 repeats"),
        (lambda p: (p / "x.tiktoken").write_text("YQ== 3\nYg== 2\n", "utf-8"), "rank 2 goes back"),
        (lambda p: (p / "x.tiktoken").write_text("YQ== 0\n!!!! 1\n", "utf-8"), "bad base64"),
        (lambda p: (p / "x.tiktoken").write_text("YQ== 0\nYg==\n", "utf-8"), "base64 rank"),
        (lambda p: (p / "tokenizer.model").write_text("\x00sentencepiece", "utf-8"), "minbpe"),
        (lambda p: (p / "tokenizer.model").write_text("minbpe v1\nx\n0\n300 1\n", "utf-8"), "300"),
    ],
)
def test_bad_files_give_clear_errors(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(WorkbenchError, match=message) as info:
        formats.load(tmp_path)
    assert "\n" not in str(info.value)


def test_hf_file_with_missing_merge_part(gpt2, tmp_path):
    formats.export(gpt2, "hf", tmp_path)
    doc = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    del doc["model"]["vocab"]["Ġthe"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), "utf-8")
    with pytest.raises(TokenizerFileError, match="'Ġthe' is not in the vocab"):
        formats.load(tmp_path)


def test_tiktoken_file_without_single_bytes(tmp_path):
    line = base64.b64encode(b"ab").decode()
    (tmp_path / "t.tiktoken").write_text(f"{line} 0\n", "utf-8")
    with pytest.raises(TokenizerFileError, match="single byte 0x00 is missing"):
        formats.load(tmp_path / "t.tiktoken")


def test_unknown_format_and_path(tmp_path, gpt2):
    with pytest.raises(TokenizerError, match="unknown format"):
        formats.export(gpt2, "sentencepiece", tmp_path)
    with pytest.raises(TokenizerFileError, match="no such file"):
        formats.load(tmp_path / "missing")
    with pytest.raises(TokenizerFileError, match="holds no tokenizer"):
        formats.load(tmp_path)
