"""API misuse (issue 33): an empty string is a document, never the current folder; a bare
string of special tokens is one special; wrong types give TypeError naming the parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import WorkbenchError

SECRET = "planted secret zqxjkv zqxjkv zqxjkv zqxjkv"


@pytest.fixture
def in_a_folder_with_a_secret(tmp_path, monkeypatch) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET * 50, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_empty_strings_are_documents_not_the_current_folder(in_a_folder_with_a_secret):
    with pytest.raises(WorkbenchError, match="no text to train on"):
        workbench.train(["", ""], 300)
    with pytest.raises(WorkbenchError, match="empty path"):
        workbench.train("", 300)


def test_a_first_document_that_is_empty(in_a_folder_with_a_secret):
    # wikitext's first line is empty: the list is still documents
    result = workbench.train(["", " = Valkyria Chronicles = ", "", "the game the game"], 262)
    merged = b"".join(a + b for a, b in result.merges)
    assert b"zqx" not in merged and result.stats.documents == 4
    assert result.stats.files == 0


def test_paths_still_work_as_path_objects_and_existing_names(in_a_folder_with_a_secret):
    secret = in_a_folder_with_a_secret / "secret.txt"
    by_path = workbench.train([secret], 262)
    by_name = workbench.train(["secret.txt"], 262)
    assert by_path.merges == by_name.merges and by_path.stats.files == 1
    with pytest.raises(WorkbenchError, match="mixes paths and documents"):
        workbench.train(["some text", secret], 262)
    with pytest.raises(WorkbenchError, match="mixes paths and documents"):
        workbench.train([secret, ""], 262)


def test_a_bare_special_token_string_is_one_special():
    docs = ["hello world <|endoftext|> hello there"] * 20
    result = workbench.train(docs, 270, special_tokens="<|endoftext|>")
    tok = result.tokenizer
    assert tok.special_tokens == {"<|endoftext|>": tok.vocab_size - 1}
    ids = tok.encode("hello", allowed_special="all")
    assert tok.decode(ids) == "hello"
    with pytest.raises(TypeError, match="special_tokens"):
        workbench.train(docs, 270, special_tokens=[b"<s>"])
    with pytest.raises(TypeError, match="special_tokens"):
        workbench.train(docs, 270, special_tokens=5)


@pytest.mark.parametrize("corpus", [5, None, b"bytes"])
def test_a_corpus_of_the_wrong_type(corpus):
    with pytest.raises(TypeError, match="corpus"):
        workbench.train(corpus, 270)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_merges([(b"h", b"e")], "gpt2", ["<s>"])


@pytest.mark.parametrize("value", [None, b"hello", 5, ["a"], 1.5])
@pytest.mark.parametrize(
    "method", ["encode", "encode_ordinary", "encode_array", "encode_with_spans"]
)
def test_encode_of_the_wrong_type_names_the_parameter(tok, method, value):
    with pytest.raises(TypeError, match="^text must be str"):
        getattr(tok, method)(value)


@pytest.mark.parametrize("texts", ["hello", b"hello", 5, None, ["a", None], [b"a"]])
@pytest.mark.parametrize("method", ["encode_batch", "encode_batch_arrays"])
def test_encode_batch_of_the_wrong_type_names_the_parameter(tok, method, texts):
    with pytest.raises(TypeError, match="texts"):
        getattr(tok, method)(texts)


def test_right_types_still_encode(tok):
    assert tok.decode(tok.encode("hello")) == "hello"
    assert tok.encode_batch(["he", "hehe"]) == [tok.encode("he"), tok.encode("hehe")]
