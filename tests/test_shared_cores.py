"""Tokenizers made from the same ranks share one set of tables while any of them lives
(`_shared_cores`); every check still applies, and nothing learned from text is shared."""

from __future__ import annotations

import gc

import pytest

from workbench.engine.encode import _shared_cores
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError

PATTERN = r"\S+|\s+"


def _ranks(extra: bytes = b"ab") -> dict[int, bytes]:
    ranks = {i: bytes([i]) for i in range(256)}
    ranks[256] = extra
    return ranks


def test_the_same_ranks_share_tables_and_encode_alike():
    first = Tokenizer.from_ranks(_ranks(), PATTERN)
    second = Tokenizer.from_ranks(_ranks(), PATTERN, {"<|end|>": 300})
    assert second._core is first._core
    assert second.encode("abab ab") == first.encode("abab ab") == [256, 256, 32, 256]
    assert second.encode("<|end|>", allowed_special="all") == [300]
    assert second._local is not first._local  # piece caches stay each tokenizer's own
    other = Tokenizer.from_ranks(_ranks(b"ba"), PATTERN)
    assert other._core is not first._core
    assert other.encode("abab") == [97, 256, 98]


def test_specials_are_checked_on_shared_tables():
    keep = Tokenizer.from_ranks(_ranks(), PATTERN)
    with pytest.raises(TokenizerError, match="already a token's id"):
        Tokenizer.from_ranks(_ranks(), PATTERN, {"<|end|>": 256})
    with pytest.raises(TokenizerError, match="share id"):
        Tokenizer.from_ranks(_ranks(), PATTERN, {"<|a|>": 300, "<|b|>": 300})
    assert keep.encode("ab") == [256]


def test_bad_ranks_are_refused_even_when_good_ones_are_alive():
    keep = Tokenizer.from_ranks(_ranks(), PATTERN)
    bad = _ranks()
    bad[256] = bytearray(b"ab")  # not bytes: never looked up, refused by the checks
    with pytest.raises(TokenizerError, match="not bytes"):
        Tokenizer.from_ranks(bad, PATTERN)  # type: ignore[arg-type]
    assert _shared_cores.ranks_digest(bad) is None  # type: ignore[arg-type]
    missing = _ranks()
    del missing[7]
    with pytest.raises(TokenizerError, match="0x07"):
        Tokenizer.from_ranks(missing, PATTERN)
    assert keep.encode("ab") == [256]


def test_tables_go_with_the_last_tokenizer():
    ranks = _ranks(b"zz")
    key = _shared_cores.ranks_digest(ranks)
    tok = Tokenizer.from_ranks(ranks, PATTERN)
    assert _shared_cores._CORES.get(key) is tok._core
    del tok
    gc.collect()
    assert _shared_cores._CORES.get(key) is None
