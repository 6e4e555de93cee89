"""Merging a piece pair by pair (`_merge.merge_piece`) gives tiktoken's ids where greedy longest
match does not, at ties between a merge across two tokens and one inside them, and on
vocabularies trained across every boundary. (These cases were written for a backtracking merger,
measured slower and removed: docs/engineering-notes.md, issue 31.)"""

from __future__ import annotations

import numpy as np
import pytest
import tiktoken
from _bpe_helpers import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference

from workbench.engine.encode._merge import LINKED_FROM, PART_ROOM, SHORT, merge_piece
from workbench.engine.encode._tables import MEMO_BITS
from workbench.engine.encode.tokenizer import Tokenizer

WHOLE = r"[\s\S]+"  # a pattern that leaves the whole text one piece: BPE of it, nothing else


def _scratch() -> tuple[np.ndarray, ...]:
    return (
        np.empty(PART_ROOM, dtype=np.int64),
        np.empty(SHORT, dtype=np.int32),
        np.empty(SHORT, dtype=np.int32),
        np.full((1 << MEMO_BITS, 2), -1, dtype=np.int64),
    )


class Merger:
    """One tokenizer's pieces merged pair by pair (`merge_piece`), as the encoder does."""

    def __init__(self, tok: Tokenizer) -> None:
        self.tok = tok
        self.tables = tok._core.tables
        self.max_rank = np.int32(tok._max_rank)

    def pairwise(self, piece: bytes) -> list[int]:
        buf = np.frombuffer(piece, dtype=np.uint8)
        part, prank, pid, memo = _scratch()
        out = np.empty(len(piece), dtype=np.int32)
        n = merge_piece(buf, 0, len(piece), self.max_rank, self.tables, part, prank, pid, memo,
                        out, 0)  # fmt: skip
        return out[:n].tolist()


def _greedy(tok: Tokenizer, piece: bytes) -> list[int]:
    """Longest match first: not BPE (the cases below show where it differs)."""
    ids = {token: tid for tid, token in tok.vocab.items()}
    out, at = [], 0
    while at < len(piece):
        length = max(n for n in range(1, len(piece) - at + 1) if piece[at : at + n] in ids)
        out.append(ids[piece[at : at + length]])
        at += length
    return out


def _tiktoken(tok: Tokenizer) -> tiktoken.Encoding:
    ranks = {token: tid for tid, token in tok.vocab.items()}
    return tiktoken.Encoding("t", pat_str=WHOLE, mergeable_ranks=ranks, special_tokens={})


def _from_ranks(extra: list[bytes]) -> Tokenizer:
    ranks = {i: bytes([i]) for i in range(256)}
    ranks.update({256 + i: token for i, token in enumerate(extra)})
    return Tokenizer.from_ranks(ranks, WHOLE)


def test_greedy_longest_match_is_not_bpe_merging_is() -> None:
    # `bc` is made before `ab`: BPE of `abc` is `a bc`, greedy takes `ab` and is left with `c`.
    tok = _from_ranks([b"bc", b"ab"])
    merger, enc = Merger(tok), _tiktoken(tok)
    for text in (b"abc", b"abcabc", b"xabcab", b"ababcbc"):
        want = enc.encode_ordinary(text.decode())
        assert merger.pairwise(text) == want
    assert _greedy(tok, b"abc") != enc.encode_ordinary("abc")  # the case has teeth


def test_ties_between_a_crossing_merge_and_a_parent() -> None:
    # `--` ... `----` and `ta`/`at`: the merge across two tokens has the rank of one side's own
    # parent (the same token), and the leftmost goes first. Two equal tokens side by side too.
    # Lengths from 2 to past `SHORT`: the shifting loop, the linked list (`LINKED_FROM` parts
    # on) and the heap break ties alike.
    tok = _from_ranks([b"--", b"at", b"---", b"----", b"ta", b"ata", b"88", b"78", b"888"])
    merger, enc = Merger(tok), _tiktoken(tok)
    for text in ("-" * n for n in range(2, SHORT + 3)):
        assert merger.pairwise(text.encode()) == enc.encode_ordinary(text), text
    for text in ("tata", "tatata", "atata", "7888", "78888", "878788", "ta" * 20, "878" * 15):
        assert merger.pairwise(text.encode()) == enc.encode_ordinary(text), text


def _raw_tokenizer(alphabet: str, merges: int) -> Tokenizer:
    """BPE trained on whole lines (no pre-tokenizer): tokens across every kind of boundary."""
    lines = [alphabet * 3, alphabet[::-1] * 2, alphabet[::2] * 4, "aaaa bbb aab abab" * 3]
    words: dict[bytes, int] = {}
    for line in lines:
        words[line.encode()] = words.get(line.encode(), 0) + 1
    return Tokenizer.from_merges(train_reference(words, 256 + merges)[0], WHOLE)


@pytest.fixture(scope="module")
def raw() -> tuple[Merger, tiktoken.Encoding]:
    tok = _raw_tokenizer("ab -.é中", 90)
    return Merger(tok), _tiktoken(tok)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab -.é中", min_size=2, max_size=21))
def test_random_pieces_equal_tiktoken(raw, text: str) -> None:
    merger, enc = raw
    piece = text.encode()
    want = enc.encode_ordinary(text)
    if len(want) > 1:  # a piece that is one token never reaches a merger
        assert merger.pairwise(piece) == want


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab -.", min_size=LINKED_FROM - 1, max_size=SHORT))
def test_long_pieces_merged_in_a_linked_list_equal_tiktoken(raw, text: str) -> None:
    # From `LINKED_FROM` parts a short piece merges in a linked list instead of shifting arrays;
    # one part fewer still shifts.
    merger, enc = raw
    want = enc.encode_ordinary(text)
    if len(want) > 1:
        assert merger.pairwise(text.encode()) == want
