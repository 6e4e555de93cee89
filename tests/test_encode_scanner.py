"""The fused scanner encoder against the regex path: identical ids, spans and specials."""

from __future__ import annotations

import itertools

import numpy as np
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


def _same_row_and_check(template: str, bits: int) -> tuple[str, str]:
    """Two pieces `template` with different 4 letters in its `{}` whose hashes give the same
    home row in a cache of 2**bits rows and the same 16 check bits: with the same first 8 bytes
    and length, only their bytes can tell their rows apart."""
    seen: dict[tuple[int, int], str] = {}
    for letters in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=4):
        piece = template.format("".join(letters))
        data = np.frombuffer(piece.encode(), dtype=np.uint8)
        h = int(scan.piece_hash(data, 0, data.shape[0])[1])
        key = (h >> (64 - bits), (h >> 32) & 0xFFFF)
        if key in seen:
            return seen[key], piece
        seen[key] = piece
    raise AssertionError("no two pieces share a row and check bits")


@pytest.mark.parametrize(
    "template", [" headword{}", " headword{}tailpart", " headword{}" + "m" * 20]
)
def test_cached_pieces_alike_but_for_bytes_after_the_first_8(pairs, monkeypatch, template):
    """A cached piece of 9-16 bytes is told from another by its last 8 bytes, a longer one also
    by the bytes between its first and last 8 (compared apart): two pieces of the same length
    and first 8 bytes whose hashes share the home row and check bits of a small cache must not
    be taken for one another."""
    monkeypatch.setattr(_core, "cache_bits", lambda size: 8)
    first, second = _same_row_and_check(template, 8)
    fast, slow = pairs["gpt2"]
    fast = fast.with_splitter("scanner")
    text = " ".join([first, second] * 3)
    assert fast.encode(text) == slow.encode(text)


def test_ids_copied_as_a_block_stay_in_the_buffer(pairs, monkeypatch):
    """A cached piece of up to four ids has four copied whatever its count; a text that ends in
    a cached piece of two bytes and two ids is written within the buffer's room (one id a byte,
    a segment, and one): the ids after it are untouched (the kernel checks no bounds)."""
    from workbench.engine.encode import tokenizer as tokenizer_module

    fast, slow = pairs["gpt2"]
    fast = fast.with_splitter("scanner")
    loose = [w for w in ("zq", "Qx", "vq", "jqz") if len(slow.encode(w)) == len(w.encode())]
    assert loose, "no piece of separate bytes among the candidates"
    sizes: list[int] = []
    seen: list[np.ndarray] = []

    def guarded(local, name, size):
        sizes.append(size)
        return np.full(size + 16, -7, dtype=np.int32)

    monkeypatch.setattr(tokenizer_module, "taken", guarded)
    monkeypatch.setattr(tokenizer_module, "give_back", lambda *args: None)
    monkeypatch.setattr(fast, "_handed_out", lambda ids, lists: seen.append(ids) or ids.tolist())
    for word in loose:
        text = f"{word}.{word}"  # the second a cache hit, the text's last bytes
        assert fast.encode(text) == slow.encode(text)
        assert (seen[-1].base[sizes[-1] :] == -7).all()


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
    and so is the block loop's, which compiles in the merging kernels, the prefetch and the
    unchecked reads."""
    want = sources_digest(
        (
            *scan.KERNEL_SOURCES,
            _scanned._merge,
            _scanned._tables,
            _scanned._chars,
            _scanned._prefetch_module,
            _scanned.unchecked,
        )
    )
    for kernel in (_scanned.encode_scanned, _scanned._encode_block, _scanned._long_piece):
        cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
        if cache_file is None:
            pytest.skip("Numba caching is off")
        stamp = cache_file._source_stamp
        assert isinstance(stamp, tuple) and len(stamp) == 2
        assert stamp[1] == want
