"""The fused encoder's seed of whole tokens (issue 31): a new piece that is one token is found in a
read-only table built with the tokenizer's tables instead of going through the whole-token
lookup. It must answer exactly as that lookup does (every token, and nothing that is not one),
and a prefix tokenizer, which may not make every token, must not use it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from reference_bpe import train_reference
from test_unicode_tables import openai_ranks

from workbench.engine.encode import _core, _scanned
from workbench.engine.encode._merge import SHORT
from workbench.engine.encode._tables import whole_lookup
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, GPT2
from workbench.engine.pretokenize.scan import piece_hash


@njit  # not cached on disk: a cached copy would keep the `_scanned` code it inlined
def _answers(seed, tables, buf, starts, ends):
    """(the seed's answer, the whole-token lookup's) for each span of `buf`."""
    tok_bytes, tok_off, whole, whole_bits = tables[0], tables[1], tables[4], tables[9]
    down = _scanned._down(seed)
    found = np.empty((starts.shape[0], 2), dtype=np.int64)
    for i in range(starts.shape[0]):
        s, e = starts[i], ends[i]
        word, h = piece_hash(buf, s, e)
        want = _scanned._row_check(e - s, h)
        found[i, 0] = _scanned._seed_probe(
            seed, down, tok_bytes, tok_off, buf, s, e - s, word, want, h
        )
        found[i, 1] = whole_lookup(buf, s, e, tok_bytes, tok_off, whole, whole_bits)
    return found


@pytest.fixture(scope="module")
def cl100k() -> Tokenizer:
    return Tokenizer.from_ranks(openai_ranks("cl100k_base"), CL100K)


def _spans(pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    ends = np.cumsum(lengths)
    # Room after the last piece: the hash loads 8 bytes at a time, as it does inside a text.
    return np.frombuffer(b"".join(pieces) + bytes(8), dtype=np.uint8), ends - lengths, ends


def test_the_seed_finds_every_token_of_2_to_short_bytes_as_the_whole_lookup_does(cl100k) -> None:
    core = cl100k._core
    tokens = [t for t in core.vocab.values() if 2 <= len(t) <= SHORT]
    assert len(tokens) > 99_000
    found = _answers(core.seed, core.tables, *_spans(tokens))
    assert (found[:, 1] >= 0).all()
    assert (found[:, 0] == found[:, 1]).all()


def test_the_seed_finds_nothing_that_is_not_a_token(cl100k) -> None:
    core = cl100k._core
    near = [t + b"\xff" for t in list(core.vocab.values())[1000:3000]]  # a byte longer
    near += [t[:-1] + bytes([t[-1] ^ 1]) for t in list(core.vocab.values())[5000:7000]]
    near = [p for p in near if p not in set(core.vocab.values()) and len(p) <= SHORT]
    found = _answers(core.seed, core.tables, *_spans(near))
    assert (found[:, 1] == -1).all()
    assert (found[:, 0] == -1).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=2, max_size=SHORT), min_size=1, max_size=40))
def test_the_seed_agrees_with_the_whole_lookup_on_any_bytes(cl100k, pieces) -> None:
    core = cl100k._core
    common = [t for t in list(core.vocab.values())[256:20000:97] if len(t) >= 2]
    found = _answers(core.seed, core.tables, *_spans(pieces + common))
    assert (found[:, 0] == found[:, 1]).all()


def test_a_prefix_tokenizer_does_not_make_tokens_past_its_merges(cl100k) -> None:
    """The seed holds every token; a prefix's fused path must merge its later tokens' bytes."""
    text = " understanding the configuration of international organizations" * 3
    full = cl100k.encode(text)
    short = cl100k.prefix(2000)
    got = short.encode(text)
    assert got == short.with_splitter("regex").encode(text)
    assert max(got) < 256 + 2000 <= max(full)  # ids are ranks: 256 bytes, then the merges
    assert cl100k.decode(got) == text


def test_a_trained_tokenizer_gets_its_seed_at_first_encode_and_the_same_ids() -> None:
    text = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 50
    words = Counter(piece.encode() for piece in regex.findall(GPT2, text))
    merges, _ = train_reference(dict(words), 300)
    tok = Tokenizer.from_merges(merges, GPT2)
    assert "seed" not in tok._core.__dict__
    got = tok.encode(text)
    assert "seed" in tok._core.__dict__
    assert got == tok.with_splitter("regex").encode(text)
    assert len(got) < len(text) // 3
    assert _core.capacity(len(tok.vocab)) == tok._core.seed.shape[0]
