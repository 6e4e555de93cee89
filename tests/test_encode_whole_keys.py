"""The whole-token table keys short tokens by their bytes (`_tables._packed`) and longer ones by a
hash: a lookup must find every token by its bytes, at every length around the switch, and nothing
that differs only in length or in padding zero bytes (the packed key includes the length)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.engine.encode import _tables
from workbench.engine.encode.tokenizer import Tokenizer

LETTERS = b"abcdefghijk"  # tokens a..k of every length 2..11 (PACKED is 7)


def _tokenizer() -> Tokenizer:
    merges = [(LETTERS[:n], LETTERS[n : n + 1]) for n in range(1, len(LETTERS))]
    zeros = [(b"\x00", b"\x00"), (b"\x00" * 2, b"\x00" * 2), (b"\x00" * 4, b"\x00" * 4)]
    ff = [b"\xff" * n for n in range(5)]
    high = [(ff[1], ff[1]), (ff[2], ff[1]), (ff[2], ff[2]), (ff[4], ff[3])]
    return Tokenizer.from_merges([*merges, *zeros, *high], r"[^\n]+|\n")


def _lookup(tok: Tokenizer, data: bytes) -> int:
    tables = tok._core.tables
    buf = np.frombuffer(data, dtype=np.uint8)
    tok_bytes, tok_off, whole, whole_bits = tables[0], tables[1], tables[4], tables[9]
    return int(_tables.whole_lookup(buf, 0, len(data), tok_bytes, tok_off, whole, whole_bits))


def test_every_token_is_found_by_its_bytes() -> None:
    tok = _tokenizer()
    lengths = {len(token) for token in tok.vocab.values()}
    assert {2, _tables.PACKED, _tables.PACKED + 1, 11} <= lengths  # both kinds of key
    for tid, token in tok.vocab.items():
        if len(token) >= 2:
            assert _lookup(tok, token) == tid, token


@pytest.mark.parametrize(
    "data",
    [b"ab\x00", b"\x00" * 3, b"\x00" * 7, b"abcdefgi", b"abcdefh", b"\xff" * 5, b"\xff" * 8],
)
def test_bytes_that_are_no_token_are_not_found(data: bytes) -> None:
    assert _lookup(_tokenizer(), data) == -1


def test_pieces_of_packed_and_hashed_tokens_encode_whole() -> None:
    tok = _tokenizer()
    id_of = {token: tid for tid, token in tok.vocab.items()}
    assert tok.encode("abcdefg\nabcdefgh\nabcdefghijk") == [
        id_of[b"abcdefg"], id_of[b"\n"], id_of[b"abcdefgh"], id_of[b"\n"], id_of[b"abcdefghijk"]
    ]  # fmt: skip
    assert tok.encode("\x00" * 9) == [id_of[b"\x00" * 8], id_of[b"\x00"]]


def test_lowest_rank_first_not_longest_prefix() -> None:
    """BPE is not greedy longest-match: with bc before ab, `abc` is a + bc, not ab + c."""
    tok = Tokenizer.from_merges([(b"b", b"c"), (b"a", b"b")], r"[^\n]+|\n")
    id_of = {token: tid for tid, token in tok.vocab.items()}
    assert tok.encode("abc") == [id_of[b"a"], id_of[b"bc"]]
    assert tok.encode("abcabc\nab") == [
        id_of[b"a"], id_of[b"bc"], id_of[b"a"], id_of[b"bc"], id_of[b"\n"], id_of[b"ab"]
    ]  # fmt: skip
