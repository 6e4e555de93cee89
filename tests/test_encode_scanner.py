"""The fused scanner encoder against the regex path: identical ids, spans and specials."""

from __future__ import annotations

import pytest
from _bpe_helpers import EXAMPLES, HARD_PARTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.engine import formats
from workbench.engine._native.cache_keys import sources_digest
from workbench.engine.encode import _core, _scanned
from workbench.engine.encode.pieces import RegexSplitter
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K
from workbench.engine.pretokenize import scan

PATTERNS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}

PARTS = [
    *HARD_PARTS,
    "don't I'll WE'VE 'ſ",
    " internationalization internationalizations",
    "x" * 40,
]

texts = st.one_of(
    st.text(max_size=80),
    st.lists(st.sampled_from(PARTS) | st.text(max_size=8), max_size=10).map("".join),
)


@pytest.fixture(scope="module")
def pairs(corpora) -> dict[str, tuple[Tokenizer, Tokenizer]]:
    """Per preset: (GPT-2 ranks with the scanner, the same with the regex path)."""
    out = {}
    for name, pattern in PATTERNS.items():
        fast = formats.load(corpora / "gpt2_vocab.json", pattern=pattern)
        assert fast.splitter == "scanner"
        slow = fast.with_splitter("regex")
        assert slow.splitter == "regex"
        out[name] = (fast, slow)
    return out


def _corpus_texts(corpora) -> list[str]:
    paths = sorted(corpora.glob("*.txt")) + [corpora / "corpus.en"]
    return [p.read_text("utf-8") for p in paths if "merges" not in p.name]


@pytest.mark.parametrize("preset", PATTERNS)
def test_scanner_equals_regex_on_corpora(pairs, corpora, preset):
    fast, slow = pairs[preset]
    for text in _corpus_texts(corpora):
        ids = fast.encode(text, "all")
        assert ids == slow.encode(text, "all")
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text)
        assert fast.decode(ids) == text


def test_tiny_cache_equals_regex_on_corpora(pairs, corpora, monkeypatch):
    """A full cache (256 rows, 128 entries) and long probe chains give the same ids; a full
    cache is started afresh by the next new piece, within a call or in the next one."""
    monkeypatch.setattr(_core, "cache_bits", lambda size: 8)
    fast, slow = pairs["o200k"]
    fast = fast.with_splitter("scanner")  # its own cache: one kept from other tests is larger
    for text in _corpus_texts(corpora) * 2:
        assert fast.encode(text, "all") == slow.encode(text, "all")


def test_a_full_cache_starts_afresh_and_keeps_later_pieces(pairs, monkeypatch):
    """A cache of 128 entries, full, turns away new pieces, and after 32 of them starts afresh
    within the call: after 600 new pieces it holds the `used` pieces met before the last
    `turned away` ones (encoding those again adds nothing), not the first 128 of the text."""
    monkeypatch.setattr(_core, "cache_bits", lambda size: 8)
    fast, slow = pairs["gpt2"]
    fast = fast.with_splitter("scanner")  # a cache of its own
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [f" q{letters[i // 26]}{letters[i % 26]}" for i in range(600)]  # 600 new pieces
    text = "".join(words)
    assert fast.encode(text) == slow.encode(text)
    state = fast._local.piece_cache[3]
    used, turned_away = int(state[0]), int(state[3])
    assert 0 < used < 128 or turned_away > 0
    cached = words[len(words) - turned_away - used : len(words) - turned_away]
    assert len(cached) == used and cached[0] != words[0]
    again = "".join(cached)
    assert fast.encode(again) == slow.encode(again)
    assert (int(state[0]), int(state[3])) == (used, turned_away)
    first = "".join(words[:50])  # long gone: new again, so the cache takes or turns them away
    assert fast.encode(first) == slow.encode(first)
    assert (int(state[0]), int(state[3])) != (used, turned_away)


@pytest.mark.parametrize("bits", [None, 8])
def test_cached_long_pieces_that_share_their_first_bytes(pairs, monkeypatch, bits):
    """Pieces of 9..255 bytes with the same first 8 bytes and length differ only in the tail;
    longer ones are merged without the cache. In a cache of 2**8 rows the long pieces' bytes
    fill its keys long before its rows: it starts afresh on that too."""
    if bits is not None:
        monkeypatch.setattr(_core, "cache_bits", lambda size: bits)
    fast, slow = pairs["gpt2"]
    fast = fast.with_splitter("scanner")
    for stem in ("abcdefg", "abcdefg" * 5, "abcdefg" * 30, "abcdefg" * 36):
        words = [f" {stem}{a}{b}{c}" for a in "xyz" for b in "klmn" for c in "pqrst"]
        text = " ".join(words * 3)
        assert fast.encode(text, "all") == slow.encode(text, "all")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_scanner_equals_regex_on_generated_text(pairs, text):
    for fast, slow in pairs.values():
        assert fast.encode(text, "all") == slow.encode(text, "all")
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text)
        assert fast.encode_with_spans(text, "all") == slow.encode_with_spans(text, "all")


def test_spans_and_specials_on_the_scanner_path(pairs):
    fast, slow = pairs["cl100k"]
    text = "a<|endoftext|>é<|endoftext|><|endoftext|>\ud800 x"  # a lone surrogate too
    assert fast.encode_with_spans(text, "all") == slow.encode_with_spans(text, "all")
    spans = fast.encode_with_spans(text, "all")
    assert spans[1].id == fast.special_tokens["<|endoftext|>"]
    assert (spans[1].char_start, spans[1].char_end) == (1, 14)
    assert fast.encode("") == [] and fast.encode_with_spans("") == []
    assert list(fast.encode_array("<|endoftext|>", "all")) == [fast.special_tokens["<|endoftext|>"]]


def test_splitter_choice(pairs, small_custom):
    fast, _ = pairs["gpt2"]
    assert fast.prefix(100).splitter == "scanner"
    assert fast.with_splitter("regex").prefix(100).splitter == "regex"
    assert fast.prefix(100).encode("hello there") == fast.with_splitter("regex").prefix(100).encode(
        "hello there"
    )
    regex_split = RegexSplitter(GPT2)
    custom = fast.with_splitter(lambda text, data: regex_split(text, data))
    assert custom.splitter == "custom"
    assert custom.encode("it's 2024!") == fast.encode("it's 2024!")
    assert small_custom.splitter == "regex"  # a custom pattern keeps regex
    with pytest.raises(TokenizerError, match="custom pattern"):
        small_custom.with_splitter("scanner")
    with pytest.raises(TokenizerError, match="unknown splitter"):
        fast.with_splitter("fast")  # type: ignore[arg-type]


@pytest.fixture
def small_custom() -> Tokenizer:
    return Tokenizer.from_merges([(b"a", b"b")], r"\w+|\W+")


def test_disk_cache_follows_the_scanner_source():
    """The fused kernel compiles in scanner code from several modules (and the merging kernels):
    its cache stamp is keyed on the sources of all of them (`scan.KERNEL_SOURCES` and more),
    and so is the block loop's, which compiles in the merging kernels and the prefetch."""
    want = sources_digest(
        (
            *scan.KERNEL_SOURCES,
            _scanned._merge,
            _scanned._tables,
            _scanned._chars,
            _scanned._prefetch_module,
        )
    )
    for kernel in (_scanned.encode_scanned, _scanned._encode_block, _scanned._long_piece):
        cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
        if cache_file is None:
            pytest.skip("Numba caching is off")
        stamp = cache_file._source_stamp
        assert isinstance(stamp, tuple) and len(stamp) == 2
        assert stamp[1] == want
