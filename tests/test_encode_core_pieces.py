"""`build_core` converts and joins the vocabulary a piece at a time: the same arrays as in one
piece, whatever the piece size and however the ids are spread."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.engine.encode import _core


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
    monkeypatch.setattr(_core, "_PIECE", piece)
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
