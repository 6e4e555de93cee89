"""The names people type (tiktoken's, Hugging Face's) and `encode_iterable`.

Each alias is checked against the library whose name it borrows, on the same tokenizer
(GPT-2's files); `encode_iterable` against `encode` of the whole text, however it is cut.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from _bpe_helpers import HARD_PARTS, examples, gpt2_tiktoken
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.engine.encode.interop import NoEndOfTextError
from workbench.engine.encode.stream import StreamCutter, encode_iterable
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError

TEXTS = ["Hello world", "naïve café 🙂", "", "<|endoftext|> as text", " \n\n  x"]


@pytest.fixture(scope="module")
def gpt2(gpt2_with_eot: Tokenizer) -> Tokenizer:
    return gpt2_with_eot


@pytest.fixture(scope="module")
def small() -> Tokenizer:
    merges = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"a", b"b"), (b"ab", b"c")]
    return Tokenizer.from_merges(merges, "gpt2", ["<|endoftext|>", "<|sep|>", "<|sep|>>"])


def test_tiktoken_names_agree_with_tiktoken(gpt2: Tokenizer, corpora: Path, tmp_path) -> None:
    enc = gpt2_tiktoken(corpora, tmp_path)
    assert gpt2.n_vocab == enc.n_vocab == 50257
    assert gpt2.max_token_value == enc.max_token_value
    assert gpt2.eot_token == enc.eot_token
    assert gpt2.special_tokens_set == enc.special_tokens_set
    assert gpt2.encode_ordinary_batch(TEXTS) == enc.encode_ordinary_batch(TEXTS)
    found = gpt2.encode_to_numpy("Hello <|endoftext|>", allowed_special="all")
    expected = enc.encode_to_numpy("Hello <|endoftext|>", allowed_special="all")
    assert found.dtype == expected.dtype == np.uint32
    assert found.tolist() == expected.tolist()
    batches = enc.encode_batch(TEXTS, disallowed_special=())
    assert gpt2.decode_batch(batches) == enc.decode_batch(batches) == TEXTS
    cut = [[batches[1][0]], batches[1][:3]]  # may end inside a character
    for errors in ("replace", "ignore"):
        assert gpt2.decode_batch(cut, errors=errors) == enc.decode_batch(cut, errors=errors)
    assert gpt2.decode_bytes_batch(batches) == enc.decode_bytes_batch(batches)


def test_huggingface_names_agree_with_tokenizers(gpt2: Tokenizer) -> None:
    hf = gpt2.to_tokenizers()
    for token in ("Ġthe", "hello", "Ċ", "<|endoftext|>", "not-a-token-at-all"):
        assert gpt2.token_to_id(token) == hf.token_to_id(token)
    for tid in (0, 262, 50255, 50256, 50257, 10**6):
        assert gpt2.id_to_token(tid) == hf.id_to_token(tid)
    assert gpt2.get_vocab_size() == hf.get_vocab_size() == 50257
    assert gpt2.get_vocab_size(with_added_tokens=False) == hf.get_vocab_size(False)
    assert gpt2.get_vocab() == hf.get_vocab()


def test_eot_token_is_missing_in_one_line(small: Tokenizer) -> None:
    bare = Tokenizer.from_merges([(b"a", b"b")], "gpt2", ["<s>"])
    with pytest.raises(NoEndOfTextError, match=r"no <\|endoftext\|> special token .*'<s>'"):
        bare.eot_token  # noqa: B018
    with pytest.raises(KeyError):  # what tiktoken raises
        bare.eot_token  # noqa: B018
    assert small.eot_token == small.special_tokens["<|endoftext|>"]


def _chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    return [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]


TEXT_PARTS = [*HARD_PARTS, "<|sep|>", "<|sep|>>", "the", " abc", "a\tb", "x <|sep", "|> y"]


@settings(max_examples=examples(1), deadline=None)
@given(
    parts=st.lists(st.sampled_from(TEXT_PARTS) | st.text(max_size=8), max_size=12),
    cuts=st.lists(st.integers(0, 200), max_size=10),
    hold=st.integers(1, 40),
    specials=st.sampled_from(["all", "none", "sep"]),
)
# a special that more text lengthens (<|sep|> then <|sep|>>), cut right after the shorter one
@example(parts=["ab <|sep|>", ">", " x"], cuts=[10], hold=1, specials="all")
@example(parts=["ab <|sep|>", "> x"], cuts=[10], hold=1, specials="sep")
def test_encode_iterable_is_encode_of_the_whole(small, parts, cuts, hold, specials) -> None:
    text = "".join(parts)
    allowed = {"all": "all", "none": "none", "sep": {"<|sep|>", "<|sep|>>"}}[specials]
    rules = {"allowed_special": allowed, "disallowed_special": ()}
    pieces = _chunked(text, cuts)
    found = list(encode_iterable(small, pieces, hold_chars=hold, **rules))
    assert found == small.encode(text, **rules)
    regex_small = small.with_splitter("regex")  # the same cuts hold for the regex path
    assert list(encode_iterable(regex_small, pieces, hold_chars=hold, **rules)) == found


def test_encode_iterable_refuses_specials_as_encode_does(small: Tokenizer) -> None:
    stream = small.encode_iterable(["safe text " * 10, "then <|endof", "text|> here"])
    with pytest.raises(TokenizerError, match="special token '<\\|endoftext\\|>'"):
        list(stream)
    with pytest.raises(TokenizerError, match="item 2 is bytes, not str"):
        list(small.encode_iterable(["ok", b"bytes"]))


def test_encode_iterable_holds_a_bounded_stretch(gpt2: Tokenizer, corpora: Path) -> None:
    """A stream of lines never joined: each part handed to `encode` stays near the hold size."""
    lines = (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8").splitlines(True)
    cutter = StreamCutter(("<|endoftext|>",), (), cut_inside=True)
    parts = list(cutter.parts(iter(lines), hold_chars=4096))
    assert "".join(parts) == "".join(lines) and len(parts) > 200
    assert max(map(len, parts)) < 4096 + max(map(len, lines))
    streamed = np.fromiter(gpt2.encode_iterable(iter(lines)), dtype=np.int64)
    assert streamed.tolist() == gpt2.encode("".join(lines))


def test_a_custom_pattern_is_cut_only_after_allowed_specials() -> None:
    cutter = StreamCutter(("<|e|>",), ("<|e|>",), cut_inside=False)
    assert cutter.cut("one two three four") == 0
    assert cutter.cut("one <|e|> two three") == len("one <|e|>")
    assert cutter.cut("one two <|e|>") == 0  # a longer special could still begin there
    assert StreamCutter(("<|e|>",), (), cut_inside=True).cut("one two <|e|> xy") == 7


def test_encode_iterable_memory_stays_flat(small: Tokenizer) -> None:
    """3 MB streamed (generated line by line) with a peak near 1 MB: nothing joins the whole
    text or keeps its ids (joined, the text alone would take 6 MB: it holds CJK)."""
    import tracemalloc

    line = "the abc then <|sep|> ab thé 東京 abc abc\n"
    count = (3 << 20) // len(line)
    expected = small.encode(line * 5000, allowed_special="all")  # kernels loaded before measuring
    tracemalloc.start()
    try:
        ids = small.encode_iterable((line for _ in range(count)), allowed_special="all")
        total = sum(1 for _ in ids)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == count * len(expected) // 5000
    assert peak < 3 << 20, f"peak {peak / 2**20:.1f} MB"
