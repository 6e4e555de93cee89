"""`build_core` converts and joins the vocabulary a piece at a time: the same arrays as in one
piece, whatever the piece size and however the ids are spread."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.engine.encode import _core
from workbench.engine.encode.tokenizer import Tokenizer


def vocab_of(rng: random.Random, n: int, gaps: bool) -> tuple[dict[int, bytes], list[int]]:
    vocab = {b: bytes([b]) for b in range(256)}
    next_id = 256
    results = []
    for _ in range(n):
        next_id += rng.randrange(1, 4) if gaps else 1
        vocab[next_id] = bytes(rng.randrange(256) for _ in range(rng.randrange(2, 7)))
        results.append(next_id)
    if gaps:  # ids not in increasing order in the dict either
        items = list(vocab.items())
        rng.shuffle(items)
        vocab = dict(items)
    return vocab, results


@pytest.mark.parametrize("gaps", [False, True])
@pytest.mark.parametrize("piece", [1, 3, 1000])
def test_pieces_give_the_arrays_of_one_piece(monkeypatch, gaps: bool, piece: int) -> None:
    vocab, results = vocab_of(random.Random(piece), 700, gaps)
    whole = _core.build_core(vocab, [], results, trainer_ids=False)
    monkeypatch.setattr(_core, "PIECE", piece)
    cut = _core.build_core(vocab, [], results, trainer_ids=False)
    assert np.array_equal(whole.tok_rank, cut.tok_rank)
    for a, b in zip(whole.arrays, cut.arrays, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # the arena holds each token's bytes at its id's offsets
    tok_bytes, tok_off, _ = cut.arrays
    for tid, token in vocab.items():
        assert tok_bytes[tok_off[tid] : tok_off[tid + 1]].tobytes() == token


def test_no_merges_still_gives_the_byte_tokens() -> None:
    core = _core.build_core({b: bytes([b]) for b in range(256)}, [], [], trainer_ids=True)
    assert core.id_bound == 256 and (core.tok_rank == -1).all()


def test_from_merges_fills_its_vocabulary_in_pieces_alike(monkeypatch) -> None:
    rng = random.Random(5)
    tokens = [bytes([b]) for b in range(256)]
    merges = []
    for _ in range(400):  # some merges make a token an earlier merge made: its id is reused
        left, right = rng.choice(tokens[:300]), rng.choice(tokens[:300])
        merges.append((left, right))
        tokens.append(left + right)
    whole = Tokenizer.from_merges(merges, "gpt2", ["<|end|>"])
    monkeypatch.setattr(_core, "PIECE", 7)
    cut = Tokenizer.from_merges(merges, "gpt2", ["<|end|>"])
    assert list(cut.vocab.items()) == list(whole.vocab.items())  # the same ids, in id order
    assert cut.merges == whole.merges and cut.merge_results == whole.merge_results
    assert cut.special_tokens == whole.special_tokens == {"<|end|>": len(whole.vocab)}
    assert len(whole.vocab) < 256 + 400  # the reuse happened
