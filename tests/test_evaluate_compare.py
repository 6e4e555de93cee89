"""Comparing two merge lists: first divergence, overlap@k against a set-by-set reference, the
only-in lists, and the token-count attribution (exact: its parts sum to the difference, on
hand-made cases and on real text with the trainer's runs)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.evaluate import compare

M = [(b"t", b"h"), (b"th", b"e"), (b"e", b"r"), (b" ", b"the")]


def tok(merges) -> Tokenizer:
    return Tokenizer.from_merges(merges, "gpt2")


def test_first_divergence():
    assert compare.first_divergence(M, M) is None
    assert compare.first_divergence(M, M[:2]) is None  # a prefix: they agree where both have
    assert compare.first_divergence(M, [M[0], M[2], M[1]]) == 1
    assert compare.first_divergence([], M) is None


def test_overlap_counts_against_sets():
    rng = random.Random(7)
    pool = [(bytes([rng.randrange(97, 105)]), bytes([rng.randrange(97, 105)])) for _ in range(40)]
    for _ in range(30):
        a = rng.sample(pool, 25) + [pool[0]]  # a merge listed twice counts once
        b = rng.sample(pool, 20)
        got = compare.overlap_counts(a, b)
        want = [len(set(a[:k]) & set(b[:k])) for k in range(1, 21)]
        assert got.tolist() == want
    assert compare.overlap_counts(M, [M[1], M[0], M[3]]).tolist() == [0, 2, 2]
    assert compare.overlap_curve(M, M, [1, 4]) == [1.0, 1.0]


def test_overlap_grid():
    assert compare.overlap_grid(5) == [1, 2, 3, 4, 5]
    grid = compare.overlap_grid(100_000, 50)
    assert grid[0] == 1 and grid[-1] == 100_000 and grid == sorted(set(grid))
    assert 40 <= len(grid) <= 51


def test_only_in_by_bytes_in_merge_order():
    a = tok(M)
    b = tok([M[0], (b"e", b"r"), (b"h", b"e")])
    assert [raw for _, raw in compare.only_in(a, b)] == [b"the", b" the"]
    assert [raw for _, raw in compare.only_in(b, a)] == [b"he"]
    assert compare.only_in(a, a) == []


def test_segments():
    seg_a, seg_b = compare.segments(np.array([2, 5]), np.array([1, 2, 5]))
    assert seg_a.tolist() == [0, 1] and seg_b.tolist() == [0, 0, 1]


def test_attribution_golden():
    a = tok(M)  # makes " the"
    b = tok(M[:1])  # only "th"
    found = compare.attribute(a, b, ["the the"])
    # A: the| the (2)   B: th|e| |th|e (5): two segments, saved by the A token B lacks in each
    assert (found.tokens_a, found.tokens_b, found.difference) == (2, 5, 3)
    assert found.saved_by_a == 3 and found.saved_by_b == 0
    assert found.credit_a == {b"the": 1, b" the": 2}
    assert found.cuts[((b"the",), (b"th", b"e"))] == 1
    assert found.cuts[((b" the",), (b" ", b"th", b"e"))] == 1


def test_attribution_merge_order():
    """Both have every token of the winner's cut: the saving goes to "merge order"."""
    a = tok([(b"a", b"b"), (b"c", b"d"), (b"ab", b"cd"), (b"b", b"c")])  # xabcd -> x|abcd
    b = tok([(b"b", b"c"), (b"a", b"b"), (b"c", b"d"), (b"ab", b"cd")])  # -> x|a|bc|d
    # B has "abcd" but its merges never reach it ("xabcd", not "abcd": a whole piece that is a
    # token is looked up, not merged)
    found = compare.attribute(a, b, ["xabcd"])
    assert (found.tokens_a, found.tokens_b) == (2, 4)
    assert found.cuts == {((b"abcd",), (b"a", b"bc", b"d")): 1}
    assert found.credit_a == {compare.MERGE_ORDER: 2}


def _check_exact(found: compare.Attribution) -> None:
    assert found.saved_by_a - found.saved_by_b == found.difference
    assert sum(found.credit_a.values()) == pytest.approx(found.saved_by_a)
    assert sum(found.credit_b.values()) == pytest.approx(found.saved_by_b)
    net = sum((len(cb) - len(ca)) * n for (ca, cb), n in found.cuts.items())
    assert net == found.difference


def test_attribution_exact_on_real_runs(corpora):
    """Two tokenizers trained apart on real text: parts sum to the whole; counts are encode's."""
    from workbench import api

    text = (corpora / "taylorswift.txt").read_text("utf-8")
    held = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:60_000]
    a = api.train([text[: len(text) // 2]], vocab_size=400, progress=False).tokenizer
    b = api.train([text[len(text) // 2 :]], vocab_size=400, progress=False).tokenizer
    found = compare.attribute(a, b, [held, "ok", ""])
    assert found.tokens_a == len(a.encode(held, "all")) + len(a.encode("ok"))
    assert found.tokens_b == len(b.encode(held, "all")) + len(b.encode("ok"))
    assert found.bytes == len(held.encode()) + 2
    assert found.segments_differing > 0
    _check_exact(found)
