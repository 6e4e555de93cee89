"""Token counts at every prefix k from one pass over the pieces, checked against encoding with
`prefix(k)` (the slow, obviously correct way): a trained run with special tokens in the text,
a run cut to a prefix, GPT-2 from its files, hand-made merge orders with whole-piece lookups."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.evaluate import plan
from workbench.evaluate.prefix_counts import count_pieces, merge_ranks, tokens_at_every_k


def _check(tok: Tokenizer, texts: list[str], samples: int = 20, seed: int = 0) -> np.ndarray:
    counts = tokens_at_every_k(tok, texts)
    merges = len(tok.merges)
    assert counts.shape == (merges + 1,)
    rng = random.Random(seed)
    ks = {0, 1, merges} | set(rng.sample(range(merges + 1), min(samples, merges + 1)))
    for k in sorted(ks):
        prefix = tok.prefix(k)
        want = sum(len(prefix.encode(text, "all")) for text in texts)
        assert counts[k] == want, k
    return counts


def test_merge_ranks():
    assert merge_ranks(b"abc", {b"ab": 0, b"bc": 1}) == [0]
    assert merge_ranks(b"abc", {b"ab": 0, b"bc": 1, b"abc": 2}) == [0, 2]
    assert merge_ranks(b"aaaa", {b"aa": 0, b"aaaa": 1}) == [0, 0, 1]  # leftmost of equals first
    assert merge_ranks(b"x", {}) == [] and merge_ranks(b"", {}) == []


def test_hand_made_orders():
    """Ranks that go down along the way, and tokens made only by a whole-piece lookup."""
    tok = Tokenizer.from_merges(
        [(b"c", b"d"), (b"a", b"b"), (b"b", b"c"), (b"ab", b"cd"), (b"a", b"bc"), (b"x", b"a")],
        "gpt2",
    )
    texts = ["abcd xabcd abc bcd abcdabcd aaaa", "cdab xa"]
    counts = tokens_at_every_k(tok, texts)
    for k in range(len(tok.merges) + 1):
        assert counts[k] == sum(len(tok.prefix(k).encode(t)) for t in texts), k


def test_a_trained_run_with_specials(corpora):
    from workbench import api

    text = (corpora / "taylorswift.txt").read_text("utf-8")
    tok = api.train(
        [text], vocab_size=600, special_tokens=["<|endoftext|>"], progress=False
    ).tokenizer
    held = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:150_000]
    texts = [held, "a<|endoftext|>b<|endoftext|>", (corpora / "german.txt").read_text("utf-8")]
    counts = _check(tok, texts)
    pieces, specials = count_pieces(tok, texts)
    assert specials == 2 and counts[0] == specials + sum(len(p) * n for p, n in pieces.items())
    _check(tok.prefix(100), texts, seed=1)  # a run cut to its first 100 merges


def test_gpt2_from_its_files(gpt2_with_eot, corpora):
    text = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:60_000] + " <|endoftext|> é"
    _check(gpt2_with_eot, [text], samples=8)


def test_plan_every_k_is_the_argmin_of_every_k(corpora):
    from workbench import api

    text = (corpora / "taylorswift.txt").read_text("utf-8")
    tok = api.train([text], vocab_size=420, special_tokens=["<|s|>"], progress=False).tokenizer
    held = [(corpora / "tinystories_sample.txt").read_text("utf-8")]
    vocab = plan.vocab_sizes(tok)
    assert [int(v) for v in vocab[::40]] == [tok.prefix(k).vocab_size for k in range(0, 165, 40)]
    model = plan.ServingModel(width=32, layers=1, context=64)
    total = sum(len(t.encode()) for t in held)
    tokens = tokens_at_every_k(tok, held)
    result = plan.plan_every_k(tok, model, tokens, total, points=10)
    cost = [model.flops_per_token(tok.prefix(k).vocab_size) * int(tokens[k]) / total
            for k in range(len(tok.merges) + 1)]  # fmt: skip
    want = min(range(len(cost)), key=lambda k: (cost[k], k))
    assert result["best"]["k"] == want and result["method"] == "every k"
    assert result["best"]["flops_per_byte"] == pytest.approx(cost[want])
    assert want in result["grid"] and result["grid"][0] == 0


@pytest.mark.parametrize("seed", range(4))
def test_random_text_with_many_ties(seed):
    """Runs on random words over three letters (many equal counts, long repeats like "aaaa"),
    each k checked."""
    from workbench import api

    rng = random.Random(seed)
    words = ["".join(rng.choice("ab c") for _ in range(rng.randrange(1, 12))) for _ in range(400)]
    text = " ".join(words)
    tok = api.train([text], vocab_size=256 + 60, progress=False).tokenizer
    held = [" ".join(rng.choice(words) + rng.choice(["", "a", "cc"]) for _ in range(300)), "aaaa"]
    counts = tokens_at_every_k(tok, held)
    for k in range(len(tok.merges) + 1):
        assert counts[k] == sum(len(tok.prefix(k).encode(t)) for t in held), k
