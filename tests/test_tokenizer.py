"""The encoder against tiktoken (GPT-2 ranks), round trips, prefixes, corner cases."""

from __future__ import annotations

import pytest
from _bpe_helpers import EXAMPLES, HARD_PARTS, gpt2_tiktoken, naive_merges
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K

from workbench.engine import formats
from workbench.engine.errors import TokenizerError

TEXTS = [
    "corpus.en",
    "german.txt",
    "address.txt",
    "tinyshakespeare.txt",
    "taylorswift.txt",
    "tinystories_sample.txt",
]

PARTS = [*HARD_PARTS, "don't I'll WE'VE"]

texts = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(PARTS) | st.text(max_size=8), max_size=8).map("".join),
)


@pytest.fixture(scope="module")
def gpt2(corpora):
    return formats.load(corpora / "gpt2_vocab.json")


@pytest.fixture(scope="module")
def reference(corpora, tmp_path_factory):
    return gpt2_tiktoken(corpora, tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(scope="module")
def small(corpora):
    text = (corpora / "tinystories_sample.txt").read_text("utf-8")
    merges = naive_merges(text.replace("<|endoftext|>", ""), 120)
    return Tokenizer.from_merges(merges, GPT2, ["<|endoftext|>", "<|pad|>"])


@pytest.mark.parametrize("name", TEXTS)
def test_gpt2_ids_equal_tiktoken_on_corpora(gpt2, reference, corpora, name):
    text = (corpora / name).read_text("utf-8")
    ids = gpt2.encode(text, allowed_special="all")
    assert ids == reference.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_gpt2_ids_equal_tiktoken_on_generated_text(gpt2, reference, text):
    assert gpt2.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == reference.encode_ordinary(text)
    assert gpt2.decode(gpt2.encode(text, allowed_special="all")) == text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_small_tokenizer_equals_tiktoken_with_its_ranks(small, text):
    import tiktoken

    for pattern in (GPT2, CL100K, O200K):
        ours = Tokenizer.from_merges(small.merge_bytes, pattern, ["<|endoftext|>"])
        ranks = {token: tid for tid, token in ours.vocab.items()}
        enc = tiktoken.Encoding(
            "t", pat_str=pattern, mergeable_ranks=ranks, special_tokens=ours.special_tokens
        )
        assert ours.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
        assert ours.decode(ours.encode(text, allowed_special="all")) == text


def test_reused_id_follows_tiktoken():
    """b+c, a+b, ab+c (abc), bc+d, a+bc (abc again): `abcd` -> `a bc d` -> `abc d`."""
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"bc", b"d"), (b"a", b"bc")]
    tok = Tokenizer.from_merges(merges, GPT2)
    assert tok.merge_results == [256, 257, 258, 259, 258]
    abc, d = 258, ord("d")
    assert tok.encode("abcd") == [abc, d]


def test_special_tokens_longest_wins_and_can_be_disabled():
    tok = Tokenizer.from_merges([], GPT2, ["<|x|>", "<|x|>>"])
    assert tok.special_tokens == {"<|x|>": 256, "<|x|>>": 257}
    assert tok.encode("a<|x|>>b", allowed_special="all") == [ord("a"), 257, ord("b")]
    assert tok.encode_ordinary("<|x|>") == list(b"<|x|>")
    assert tok.encode("<|x|>>", allowed_special={"<|x|>"}, disallowed_special=())[0] == 256
    with pytest.raises(TokenizerError, match="not special tokens"):
        tok.encode("x", allowed_special={"<|y|>"})


def test_prefix_encodes_like_the_first_k_merges(small, corpora):
    text = (corpora / "tinystories_sample.txt").read_text("utf-8")
    for k in (0, 1, 17, 60, len(small.merges)):
        expected = Tokenizer.from_merges(small.merge_bytes[:k], GPT2, ["<|endoftext|>", "<|pad|>"])
        got = small.prefix(k)
        assert got.encode(text, allowed_special="all") == expected.encode(
            text, allowed_special="all"
        )
        assert got == expected
        assert got.decode(got.encode(text, allowed_special="all")) == text
    with pytest.raises(TokenizerError):
        small.prefix(len(small.merges) + 1)


def test_spans_mark_split_characters(gpt2):
    text = "a👩‍👧é"
    spans = gpt2.encode_with_spans(text, allowed_special="all")
    assert [s.id for s in spans] == gpt2.encode(text, allowed_special="all")
    assert spans[0].byte_start == 0 and spans[-1].byte_end == len(text.encode())
    for span in spans:
        assert 0 <= span.char_start < span.char_end <= len(text)
    assert any(s.splits_char for s in spans)
    whole = [s for s in spans if not s.splits_char]
    for span in whole:
        piece = text.encode()[span.byte_start : span.byte_end]
        assert piece.decode() == text[span.char_start : span.char_end]


def test_long_piece_without_spaces(gpt2, reference):
    text = "ab1" * 10 + "x" * 1_000_000
    assert gpt2.encode(text) == reference.encode_ordinary(text)
    digits = "7" * 300_000
    assert gpt2.encode(digits) == reference.encode_ordinary(digits)


def test_bad_merges_and_ids():
    with pytest.raises(TokenizerError, match="not a token"):
        Tokenizer.from_merges([(b"ab", b"c")], GPT2)
    with pytest.raises(TokenizerError, match="not in this tokenizer"):
        Tokenizer.from_merges([], GPT2).decode([999])
    vocab = {i: bytes([i]) for i in range(255)}
    with pytest.raises(TokenizerError, match="0xFF is missing"):
        Tokenizer.from_vocab_merges(vocab, [], GPT2)
