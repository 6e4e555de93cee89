"""`token_bytes.npy`: each id's byte length, taken from its bytes (never through `str`), written
beside every export; specials count 0 bytes (the bits-per-byte convention)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.engine.formats import token_bytes
from workbench.engine.formats.token_bytes import token_byte_lengths


def check_against_decode_bytes(tok) -> int:
    """Every entry against `decode_bytes([id])`; returns how many ids a str round trip gets
    wrong (the nanochat bug this table must not have)."""
    lengths = token_byte_lengths(tok)
    specials = set(tok.special_tokens.values())
    assert lengths.dtype == np.int32 and lengths.shape == (tok.n_vocab,)
    wrong_via_str = 0
    for tid in range(tok.n_vocab):
        if tid in specials or tid not in tok.vocab:
            assert lengths[tid] == 0, tid
            continue
        raw = tok.decode_bytes([tid])
        assert lengths[tid] == len(raw), tid
        wrong_via_str += len(raw.decode("utf-8", errors="replace").encode("utf-8")) != len(raw)
    return wrong_via_str


def test_gpt2_table_is_each_ids_bytes(gpt2_with_eot):
    # Byte tokens and pieces of characters: a str round trip would miscount hundreds of them.
    assert check_against_decode_bytes(gpt2_with_eot) > 100


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_openai_tables_are_each_ids_bytes(name):
    from workbench.evaluate.references import available, load_reference

    if not available(name):
        pytest.skip(f"{name} ranks are not on this machine")
    tok = load_reference(name)
    assert check_against_decode_bytes(tok) > 100
    lengths = token_byte_lengths(tok)
    assert lengths[max(tok.special_tokens.values())] == 0


@pytest.mark.parametrize("fmt", ["gpt2", "hf", "tiktoken", "minbpe"])
def test_every_export_carries_the_table(tmp_path, fmt):
    from workbench import Tokenizer

    # "é" is two bytes: its first byte alone is a token that `str` would count as three.
    tok = Tokenizer.from_merges(
        [(b"\xc3", b"\xa9"), (b" ", b"\xc3"), (b"a", b"b")], "gpt2", ["<|endoftext|>"]
    )
    written = tok.export(fmt, tmp_path)
    assert tmp_path / token_bytes.FILE in written
    saved = np.load(tmp_path / token_bytes.FILE, allow_pickle=False)
    assert saved.tolist() == [1] * 256 + [2, 2, 2, 0]
    check_against_decode_bytes(tok)


def test_train_output_carries_the_table(tmp_path):
    import workbench

    result = workbench.train(["ab ab é é"] * 5, 260, special_tokens="<|endoftext|>", progress=False)
    result.tokenizer.export("gpt2", tmp_path)
    saved = np.load(tmp_path / token_bytes.FILE)
    assert np.array_equal(saved, token_byte_lengths(result.tokenizer)) and saved[-1] == 0
