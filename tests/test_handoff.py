"""Hand-off in memory: tiktoken, tokenizers and transformers objects give our ids on every text.

Differential: tokenizers trained on the shared corpora with each preset pattern, every line of
those corpora, the hard cases and Hypothesis text, encoded by us and by each library's object;
then each object loaded back with `workbench.load` is the tokenizer we started from.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from _bpe_helpers import HARD_PARTS, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench
from workbench.engine.corpus.readers.optional import MissingPackageError
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError, TokenizerError

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

FILES = ("tinystories_sample.txt", "german.txt", "taylorswift.txt", "corpus.en", "address.txt")
SPECIALS = ["<|endoftext|>", "<|pad|>"]


def _texts(corpora: Path) -> list[str]:
    return [(corpora / name).read_text(encoding="utf-8") for name in FILES]


@pytest.fixture(scope="module", params=["gpt2", "cl100k", "o200k"])
def trained(request, corpora: Path) -> Tokenizer:
    docs = [text[:60_000] for text in _texts(corpora)]
    result = workbench.train(
        docs, 900, pattern=request.param, special_tokens=SPECIALS, progress=False
    )
    return result.tokenizer


@pytest.fixture(scope="module")
def real_lines(corpora: Path) -> list[str]:
    lines = [line for text in _texts(corpora) for line in text.splitlines(keepends=True)]
    return lines[:3000] + HARD_PARTS + ["".join(HARD_PARTS), "<|endoftext|>x<|pad|>"]


@pytest.fixture(scope="module")
def others(trained: Tokenizer):
    return trained.to_tiktoken(), trained.to_tokenizers(), trained.to_transformers()


def test_every_object_gives_our_ids_on_real_text(trained, others, real_lines) -> None:
    enc, hf, fast = others
    ours = trained.encode_batch(real_lines, allowed_special="all")
    assert enc.encode_batch(real_lines, allowed_special="all") == ours
    assert [e.ids for e in hf.encode_batch(real_lines)] == ours
    assert fast(real_lines)["input_ids"] == ours
    plain = trained.encode_ordinary_batch(real_lines)
    assert enc.encode_ordinary_batch(real_lines) == plain
    whole = "".join(real_lines)
    assert enc.encode(whole, allowed_special="all") == trained.encode(whole, allowed_special="all")
    assert fast.decode(ours[-1]) == real_lines[-1]


@settings(max_examples=examples(0.5), deadline=None)
@given(text=st.text(max_size=60) | st.lists(st.sampled_from(HARD_PARTS), max_size=6).map("".join))
def test_every_object_gives_our_ids_on_any_text(trained, others, text: str) -> None:
    enc, hf, fast = others
    ours = trained.encode(text, allowed_special="all")
    assert enc.encode(text, allowed_special="all") == ours
    assert hf.encode(text).ids == ours
    assert fast.encode(text) == ours
    assert trained.decode(ours) == enc.decode(ours) == hf.decode(ours, skip_special_tokens=False)


def test_each_object_loads_back_as_the_same_tokenizer(trained, others) -> None:
    for obj in others:
        back = workbench.load(obj)
        assert back == trained
        assert back.encode("Hello there <|pad|>", allowed_special="all") == trained.encode(
            "Hello there <|pad|>", allowed_special="all"
        )
    assert workbench.load(trained) is trained


def test_a_real_tiktoken_encoding_loads(corpora: Path, tmp_path: Path) -> None:
    from _bpe_helpers import gpt2_tiktoken

    enc = gpt2_tiktoken(corpora, tmp_path)
    tok = workbench.load(enc)
    text = (corpora / "taylorswift.txt").read_text(encoding="utf-8")[:20_000]
    assert tok.encode(text) == enc.encode(text)
    assert tok.eot_token == enc.eot_token == 50256


def test_other_objects_are_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="cannot load a dict: give a path"):
        workbench.load({"model": {}})


def test_transformers_roles_are_chosen_and_checked(trained, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="workbench"):
        fast = trained.to_transformers(model_max_length=64)
    assert (fast.eos_token, fast.bos_token, fast.pad_token) == (
        "<|endoftext|>",
        "<|endoftext|>",
        "<|pad|>",
    )
    assert fast.unk_token is None and fast.model_max_length == 64
    assert "defaulted" in caplog.text and "pad=<|pad|>" in caplog.text
    batch = fast(["a", "a longer text here"], padding=True)
    pad = trained.special_tokens["<|pad|>"]
    assert batch["input_ids"][0][-1] == pad and batch["attention_mask"][0][-1] == 0
    assert fast.vocab_size == len(trained.vocab) and len(fast) == trained.vocab_size
    none = trained.to_transformers(bos=None, pad="<|endoftext|>")
    assert none.bos_token is None and none.pad_token == "<|endoftext|>"
    with pytest.raises(TokenizerError, match=r"pad token '<pad>' is not a special token"):
        trained.to_transformers(pad="<pad>")


def test_tiktoken_refuses_ids_out_of_merge_order() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {257: b"ab", 256: b"abc"}
    tok = Tokenizer.from_vocab_merges(vocab, [(97, 98), (257, 99)], "gpt2")
    with pytest.raises(TokenizerError, match="not in merge order"):
        tok.to_tiktoken()
    assert tok.to_tokenizers().encode("abc ab").ids == tok.encode("abc ab")


@pytest.mark.parametrize(
    ("module", "method"),
    [
        ("tiktoken", "to_tiktoken"),
        ("tokenizers", "to_tokenizers"),
        ("transformers", "to_transformers"),
    ],
)
def test_a_missing_library_is_one_line(monkeypatch, module: str, method: str) -> None:
    tok = Tokenizer.from_merges([(b"a", b"b")], "gpt2")
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(MissingPackageError) as info:
        getattr(tok, method)()
    message = str(info.value)
    assert "\n" not in message and f"{module} is not installed" in message
    assert "pip install" in message
