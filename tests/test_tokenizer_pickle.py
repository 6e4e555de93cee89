"""Pickling: a tokenizer (and a training result) crosses copies and process boundaries whole.

The idea of tiktoken's `test_pickle`, for ours: a tokenizer loaded from real files and one with
a custom pattern and specials encode alike after a pickle round trip. Then what notebooks and
data loaders do: `copy.deepcopy`, a `spawn` and a `fork` pool mapping `tok.encode`, and
`datasets`' fingerprint of `tok.encode` being the same for two loads of the same files.
"""

from __future__ import annotations

import copy
import gc
import multiprocessing
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench.engine.encode.tokenizer import Tokenizer

TEXT = "Hello world! It's 2024, naïve café 東京 🙂\n\n  <|endoftext|> the end  "


@pytest.fixture(scope="module")
def gpt2(gpt2_with_eot: Tokenizer) -> Tokenizer:
    return gpt2_with_eot


@pytest.fixture(scope="module")
def custom() -> Tokenizer:
    merges = [(b"a", b"b"), (b"ab", b"c"), (b" ", b"t"), (b" t", b"h")]
    return Tokenizer.from_merges(merges, r"\p{L}+|\s+|[^\s\p{L}]+", ["<|endoftext|>", "<|pad|>"])


def test_a_pickled_tokenizer_encodes_as_the_original(gpt2: Tokenizer, custom: Tokenizer) -> None:
    for tok in (gpt2, custom, gpt2.prefix(1000), custom.with_splitter("regex")):
        tok.encode_batch([TEXT] * 3, allowed_special="all")  # thread buffers and caches in use
        back = pickle.loads(pickle.dumps(tok))
        assert type(back) is Tokenizer and back == tok
        assert back.splitter == tok.splitter
        for allowed in ("all", "none"):
            assert back.encode(TEXT, allowed_special=allowed) == tok.encode(
                TEXT, allowed_special=allowed
            )
        assert back.encode_batch([TEXT, "abc"], allowed_special="all") == tok.encode_batch(
            [TEXT, "abc"], allowed_special="all"
        )
        assert back.decode(back.encode_ordinary(TEXT)) == TEXT


def test_a_prefix_keeps_its_ids_and_specials(gpt2: Tokenizer) -> None:
    prefix = gpt2.prefix(300)
    back = pickle.loads(pickle.dumps(prefix))
    assert len(back.merges) == 300 and back.special_tokens == prefix.special_tokens
    assert back.vocab == prefix.vocab


def test_pickles_to_the_same_bytes_every_time(gpt2: Tokenizer) -> None:
    first = pickle.dumps(gpt2)
    assert pickle.dumps(pickle.loads(first)) == first
    assert pickle.dumps(copy.deepcopy(gpt2)) == first
    # only the defining data travels: no thread-local, pool or encoder table
    assert len(first) < sum(map(len, gpt2.vocab.values())) + 24 * len(gpt2.vocab)


def test_deepcopy_and_copy_are_independent(custom: Tokenizer) -> None:
    for twin in (copy.deepcopy(custom), copy.copy(custom)):
        assert twin == custom and twin._local is not custom._local
        assert twin.encode(TEXT, allowed_special="all") == custom.encode(
            TEXT, allowed_special="all"
        )
        twin.special_tokens["<|new|>"] = 999
        assert "<|new|>" not in custom.special_tokens


def test_an_unknown_layout_is_refused_in_one_line(custom: Tokenizer) -> None:
    state = custom.__getstate__()
    state["version"] = 99
    fresh = Tokenizer.__new__(Tokenizer)
    with pytest.raises(ValueError, match="layout 99.*export it to a file"):
        fresh.__setstate__(state)


def test_a_train_result_pickles_with_its_tokenizer() -> None:
    result = workbench.train(["low lower lowest " * 40, "newer newest " * 30], 280, progress=False)
    back = pickle.loads(pickle.dumps(result))
    assert back.tokenizer == result.tokenizer and back.merges == result.merges
    assert back.stats == result.stats and back.stop_reason == result.stop_reason
    assert copy.deepcopy(result).tokenizer.encode("lowest newer") == result.tokenizer.encode(
        "lowest newer"
    )


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_process_pool_maps_encode(gpt2: Tokenizer, method: str) -> None:
    texts = [TEXT.replace("<|endoftext|>", str(n)) * (n + 1) for n in range(6)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        found = pool.map(gpt2.encode, texts, chunksize=2)
        batches = pool.map(gpt2.encode_batch, [texts[:3], texts[3:]])
    assert found == [gpt2.encode(text) for text in texts]
    assert batches == [gpt2.encode_batch(texts[:3]), gpt2.encode_batch(texts[3:])]


def test_datasets_fingerprints_encode_alike_for_two_loads(corpora: Path, tmp_path: Path) -> None:
    fingerprint = pytest.importorskip("datasets.fingerprint")
    first = workbench.load(corpora / "gpt2_vocab.json")
    first.export("hf", tmp_path)
    again = [workbench.load(tmp_path), workbench.load(tmp_path)]
    hashes = {fingerprint.Hasher.hash(tok) for tok in again}
    assert len(hashes) == 1
    assert fingerprint.Hasher.hash(again[0].encode) == fingerprint.Hasher.hash(again[1].encode)
    assert fingerprint.Hasher.hash(again[0].prefix(10)) not in hashes  # not a constant
    code = (
        "import sys, workbench\nfrom datasets.fingerprint import Hasher\n"
        "print(Hasher.hash(workbench.load(sys.argv[1])))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert other.stdout.split()[-1] in hashes  # and in another session


def test_loads_in_one_process_share_the_core_while_it_is_used(custom: Tokenizer) -> None:
    from workbench.engine.encode import state as tokenizer_state

    data = pickle.dumps(custom)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first._core is second._core is custom._core  # a worker's second chunk: no rebuild
    other = Tokenizer.from_merges([(b"a", b"b")], custom.pattern, list(custom.special_tokens))
    assert pickle.loads(pickle.dumps(other))._core is not custom._core
    fresh = Tokenizer.from_merges([(b"q", b"z")], "gpt2")
    key = tokenizer_state._digest(fresh.__getstate__())
    assert key in tokenizer_state._built
    del fresh
    gc.collect()
    assert key not in tokenizer_state._built  # kept only while a tokenizer uses it
